//! Files a user names for memscope to read (`compare`, `footprint` and its `--against`,
//! `history --add`, `pages apply --from`):
//! a device, a FIFO or a directory is refused at once with exit 2 naming it, a file
//! that only starts like ELF is refused naming its defect, and a 2 GiB sparse file is
//! not read into memory.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use crate::util::{temp_dir, BINARY};

fn memscope(args: &[&str]) -> Output {
    crate::util::memscope(args)
        // A FIFO that blocked the open would hang here; the timeout kills it.
        .timeout(Duration::from_secs(60))
        .output()
        .expect("memscope runs")
}

/// Asserts exit 2 and every `words` in stderr.
fn refused(output: &Output, words: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    for word in words {
        assert!(stderr.contains(word), "no {word:?} in: {stderr}");
    }
}

fn mkfifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo has no other preconditions.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0);
}

/// A report memscope wrote, for the first argument of `compare`.
fn a_report(dir: &Path) -> PathBuf {
    let report = dir.join("r.json");
    let out = memscope(&["info", "--json", report.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    report
}

#[test]
fn compare_refuses_a_device_a_fifo_and_a_directory_at_once() {
    let dir = temp_dir();
    let report = a_report(dir.path());
    let report = report.to_str().unwrap();
    let started = Instant::now();
    refused(
        &memscope(&["compare", report, "/dev/zero"]),
        &["/dev/zero", "character device", "expected a regular file"],
    );
    let fifo = dir.path().join("fifo.json");
    mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    refused(&memscope(&["compare", report, fifo]), &[fifo, "is a FIFO"]);
    refused(
        &memscope(&[
            "history",
            "--db",
            dir.path().join("h.db").to_str().unwrap(),
            "--add",
            fifo,
        ]),
        &[fifo, "is a FIFO"],
    );
    refused(
        &memscope(&["footprint", "/bin/true", "--against", fifo]),
        &[fifo, "is a FIFO"],
    );
    refused(&memscope(&["footprint", fifo]), &[fifo, "is a FIFO"]);
    refused(
        &memscope(&["pages", "apply", "--from", fifo, "--", "true"]),
        &[fifo, "is a FIFO"],
    );
    refused(
        &memscope(&["footprint", "/dev/zero"]),
        &["character device"],
    );
    // "At once": nothing waited for a writer or read a device to the end.
    assert!(started.elapsed() < Duration::from_secs(50));
}

/// Where `peak_rss_helper` finds its arguments and leaves its results.
const PEAK_RSS_DIR: &str = "MEMSCOPE_TEST_PEAK_RSS_DIR";

/// Runs memscope and returns its exit code, its stderr and its own peak RSS, measured
/// from a fresh process: this test binary again, running only `peak_rss_helper`. (A
/// child's peak RSS as wait4 gives it starts from its parent's at the exec, and this
/// process's peak is that of every test running in it.)
fn with_peak_rss(args: &[&str]) -> (i32, String, u64) {
    let dir = temp_dir();
    std::fs::write(dir.path().join("args"), args.join("\n")).unwrap();
    let helper = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "root_safety::user_files::peak_rss_helper",
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .env(PEAK_RSS_DIR, dir.path())
        .output()
        .unwrap();
    assert!(helper.status.success(), "{helper:?}");
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    let result = read("result");
    let (code, rss) = result.split_once(' ').unwrap();
    (
        code.parse().unwrap(),
        read("stderr"),
        rss.trim().parse().unwrap(),
    )
}

#[test]
#[ignore = "a helper, not a test: with_peak_rss runs it in a fresh process"]
fn peak_rss_helper() {
    let Some(dir) = std::env::var_os(PEAK_RSS_DIR) else {
        return eprintln!("peak_rss_helper: nothing to do without {PEAK_RSS_DIR}");
    };
    let dir = Path::new(&dir);
    let args = std::fs::read_to_string(dir.join("args")).unwrap();
    let (code, stderr, rss) = peak_rss_of_child(&args.split('\n').collect::<Vec<_>>());
    std::fs::write(dir.join("stderr"), stderr).unwrap();
    std::fs::write(dir.join("result"), format!("{code} {rss}\n")).unwrap();
}

/// Runs memscope and returns its output and its peak RSS (wait4 on its pid, so no other
/// child of this process counts).
#[allow(clippy::zombie_processes)] // reaped by the wait4 below, which also gives its rusage
fn peak_rss_of_child(args: &[&str]) -> (i32, String, u64) {
    let child = std::process::Command::new(BINARY)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.unwrap(), &mut stderr).unwrap();
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, writing into the two locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, stderr, usage.ru_maxrss as u64 * 1024)
}

#[test]
fn footprint_of_a_2_gib_file_of_zeros_is_refused_without_reading_it() {
    let dir = temp_dir();
    let sparse = dir.path().join("sparse");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let (code, stderr, rss) = with_peak_rss(&["footprint", sparse.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not an ELF file"), "{stderr}");
    assert!(rss < 512 << 20, "peak RSS {rss} bytes for a sparse file");
    // 7 bytes of ELF magic, then zeros: no header, no tables.
    let fake = dir.path().join("fake-elf");
    std::fs::write(&fake, b"\x7fELF\x02\x01\x01").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&fake)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let (code, stderr, rss) = with_peak_rss(&["footprint", fake.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("fake-elf") && stderr.contains("not a valid ELF file"),
        "{stderr}"
    );
    assert!(rss < 512 << 20, "peak RSS {rss} bytes for a fake ELF file");
}
