//! `memscope files` through the real binary: every figure measured on small files and
//! the test directory gone afterwards; none left after a failure or SIGTERM; a directory
//! that cannot take the files is exit 2 with the reason.

use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;
use serde_json::Value;

use crate::util::{exclusive, memscope, temp_dir, wait_for, ChildGuard, BINARY};

fn files(dir: &Path, extra: &[&str]) -> Command {
    let mut command = memscope(&["files", "--dir"]);
    command.arg(dir).args([
        "--sizes",
        "4K,1M",
        "--block",
        "4K,64K",
        "--depth",
        "1,8",
        "--reads",
        "200",
        "--repetitions",
        "2",
        "--quick",
    ]);
    command.args(extra);
    command
}

fn empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

#[test]
fn small_files_give_every_figure_and_leave_nothing_behind() {
    // A measurement: one at a time with the others.
    let _one_at_a_time = exclusive();
    let dir = temp_dir();
    let out = files(dir.path(), &["--json", "-"])
        .assert()
        .success()
        .get_output()
        .clone();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &report["experiments"]["files"];
    assert_eq!(f["sizes"].as_array().unwrap().len(), 2);
    for row in f["sizes"].as_array().unwrap() {
        for kind in ["warm", "mmap", "cold"] {
            assert!(row[kind]["gb_per_s"].as_f64().unwrap() > 0.0, "{row}");
        }
    }
    let random = f["random"].as_array().unwrap();
    assert_eq!(random[0]["engine"], "pread");
    assert!(random.iter().all(|r| r["reads"] == 200));
    assert_eq!(f["blocks"].as_array().unwrap().len(), 2);
    assert!(!f["storage"]["filesystem"].as_str().unwrap().is_empty());
    assert!(empty(dir.path()), "test files left behind");
}

#[test]
fn with_stderr_not_a_terminal_progress_comes_as_plain_lines() {
    let _one_at_a_time = exclusive();
    let dir = temp_dir();
    // stderr is captured (not a terminal); a 1 ms period makes every stage start print.
    let out = files(dir.path(), &[])
        .env("MEMSCOPE_PROGRESS_PERIOD_MS", "1")
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("memscope: files: "))
        .collect();
    assert!(
        lines.iter().any(|l| l.contains("sequential reads")),
        "{stderr}"
    );
    assert!(lines.iter().all(|l| l.ends_with(" s")), "{stderr}");
    // No bar's control characters in a log.
    assert!(
        !stderr.contains('\r') && !stderr.contains('\u{1b}'),
        "{stderr}"
    );
    // With the default period (10 s) this short run prints none.
    let quiet = files(dir.path(), &[])
        .assert()
        .success()
        .get_output()
        .clone();
    let quiet = String::from_utf8_lossy(&quiet.stderr);
    assert!(!quiet.contains("memscope: files: "), "{quiet}");
}

#[test]
fn a_failure_after_writing_leaves_no_file() {
    let dir = temp_dir();
    let out = files(dir.path(), &[])
        .env("MEMSCOPE_SIMULATE_FAILURE", "files-written")
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("simulated failure"));
    assert!(empty(dir.path()), "test files left behind");
}

#[test]
fn sigterm_leaves_no_file() {
    let dir = temp_dir();
    let mut child = ChildGuard::spawn(
        std::process::Command::new(BINARY)
            .args(["files", "--sizes", "4K,64M", "--reads", "100000", "--dir"])
            .arg(dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    // Wait until the test directory has its files, then stop memscope.
    let has_files = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| std::fs::read_dir(e.path()).is_ok_and(|mut d| d.next().is_some()))
    };
    assert!(
        wait_for(Duration::from_secs(60), has_files),
        "no test files appeared"
    );
    // SAFETY: signalling our own unreaped child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status:?}");
    assert!(empty(dir.path()), "test files left behind after SIGTERM");
}

#[test]
fn a_directory_that_cannot_take_the_files_is_exit_2() {
    // /proc has no space for files (and takes no new directories, even from root).
    let out = files(Path::new("/proc"), &[])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/proc"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let out = memscope(&["files", "--dir", "/nonexistent-memscope-dir"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("an existing directory"));
    // Sizes beyond a quarter of the free space are refused before anything is written.
    let dir = temp_dir();
    let out = memscope(&["files", "--sizes", "64G", "--dir"])
        .arg(dir.path())
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("of the") && stderr.contains("free in"),
        "{stderr}"
    );
    assert!(empty(dir.path()));
}
