//! Output files and the history database against links and files another user planted:
//! `--json`/`--csv` through a link of uid 65534 in a mode-1777 directory, a history
//! listing that must not write, `--save` into a bad database, and a killed write's
//! temporary file removed by the next start. Tests that need another user's files run as
//! root only (uid 65534 is made with `lchown`).

use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use assert_cmd::Command;

use crate::util::{is_root, temp_dir};

/// memscope with `args` and its own journal.
fn memscope(journal: &Path, args: &[&str]) -> Command {
    let mut command = crate::util::memscope(args);
    command.env("MEMSCOPE_JOURNAL_DIR", journal);
    command
}

fn lchown(path: &Path, uid: u32) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: lchown reads the NUL-terminated path.
    assert_eq!(unsafe { libc::lchown(c.as_ptr(), uid, uid) }, 0, "{path:?}");
}

/// A directory in /tmp of mode 1777, as /tmp itself.
fn shared_dir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("memscope-shared-")
        .tempdir_in("/tmp")
        .unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}

#[test]
fn reports_are_not_written_through_another_users_link_in_a_shared_directory() {
    if !is_root() {
        return eprintln!(
            "reports_are_not_written_through_another_users_link_in_a_shared_directory: \
             skipped, it needs root to make another user's link"
        );
    }
    let journal = temp_dir();
    let private = temp_dir();
    let victim = private.path().join("victim");
    fs::write(&victim, "root's own data\n").unwrap();
    let shared = shared_dir();
    for flag in ["--json", "--csv"] {
        let link = shared.path().join(format!("report{flag}"));
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        lchown(&link, 65534);
        let out = memscope(journal.path(), &["info", flag, link.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
        assert!(
            stderr.contains(link.to_str().unwrap()) && stderr.contains("symbolic link"),
            "{flag}: {stderr}"
        );
        assert_eq!(fs::read(&victim).unwrap(), b"root's own data\n", "{flag}");
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }
    // Nothing else appeared in the shared directory (no probe, no temporary file).
    assert_eq!(fs::read_dir(shared.path()).unwrap().count(), 2);
}

#[test]
fn an_own_link_in_a_shared_directory_is_refused_and_one_in_a_private_directory_followed() {
    let journal = temp_dir();
    let private = temp_dir();
    let real = private.path().join("real.json");
    fs::write(&real, "old").unwrap();
    let shared = shared_dir();
    let link = shared.path().join("report.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    memscope(journal.path(), &["info", "--json", link.to_str().unwrap()])
        .assert()
        .code(2);
    assert_eq!(fs::read(&real).unwrap(), b"old");
    let own = private.path().join("link.json");
    std::os::unix::fs::symlink("real.json", &own).unwrap();
    memscope(journal.path(), &["info", "--json", own.to_str().unwrap()])
        .assert()
        .success();
    let report: serde_json::Value = serde_json::from_slice(&fs::read(&real).unwrap()).unwrap();
    assert_eq!(report["tool"]["name"], "memscope");
    assert!(fs::symlink_metadata(&own).unwrap().file_type().is_symlink());
}

#[test]
fn a_history_listing_creates_and_changes_nothing() {
    let journal = temp_dir();
    let dir = temp_dir();
    let missing = dir.path().join("missing.sqlite3");
    let out = memscope(
        journal.path(),
        &["history", "--db", missing.to_str().unwrap()],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(missing.to_str().unwrap()), "{stderr}");
    assert!(!missing.exists());
    let empty = dir.path().join("empty");
    fs::write(&empty, "").unwrap();
    let link = dir.path().join("link.sqlite3");
    std::os::unix::fs::symlink(&empty, &link).unwrap();
    if is_root() {
        // Root-owned, behind another user's link: refused before anything is opened.
        lchown(&link, 65534);
    }
    for extra in [&[][..], &["--check"]] {
        let mut args = vec!["history", "--db", link.to_str().unwrap()];
        args.extend(extra);
        let out = memscope(journal.path(), &args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(link.to_str().unwrap()), "{stderr}");
    }
    assert_eq!(fs::metadata(&empty).unwrap().len(), 0);
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn save_into_a_file_that_is_not_a_history_fails_before_measuring() {
    let journal = temp_dir();
    let dir = temp_dir();
    let db = dir.path().join("notes.txt");
    let text = "my notes, not a database; long enough for SQLite to read a header. ".repeat(3);
    fs::write(&db, &text).unwrap();
    let json = dir.path().join("r.json");
    let out = memscope(
        journal.path(),
        &[
            "latency",
            "--quick",
            "--save",
            "--json",
            json.to_str().unwrap(),
        ],
    )
    .env("MEMSCOPE_HISTORY", &db)
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(db.to_str().unwrap()) && stderr.contains("not an SQLite database"),
        "{stderr}"
    );
    // Refused before the measuring: no report, no latency table.
    assert!(!json.exists());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("latency"));
    assert_eq!(fs::read_to_string(&db).unwrap(), text);
}

#[test]
fn a_killed_writes_temporary_file_is_removed_by_the_next_start() {
    let journal = temp_dir();
    let out_dir = temp_dir();
    let out_dir = fs::canonicalize(out_dir.path()).unwrap();
    let name = ".r.csv.memscope-Ab3dE6gH9kLm.tmp";
    fs::write(out_dir.join(name), "half a rep").unwrap();
    // The entry a memscope killed between create and rename left (pid 0 is never one).
    let entry = serde_json::json!({
        "format": 1, "pid": 0, "start_time": 5, "boot_id": "",
        "time": "2026-01-01T00:00:00.000Z",
        "change": {"kind": "output_temp", "dir": out_dir, "name": name},
    });
    fs::set_permissions(journal.path(), fs::Permissions::from_mode(0o700)).unwrap();
    fs::write(
        journal.path().join("0-5-0.json"),
        serde_json::to_vec(&entry).unwrap(),
    )
    .unwrap();
    let out = memscope(journal.path(), &["info"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("removed the temporary output file") && stderr.contains(name),
        "{stderr}"
    );
    assert!(!out_dir.join(name).exists());
    assert!(!journal.path().join("0-5-0.json").exists());
}
