//! Output files against planted links, shared directories, pipes and kills. The tests
//! that need another user's files (`lchown` to uid 65534) run as root only.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use super::*;
use crate::platform::journal::FORMAT;

/// uid 65534 (nobody): "another user" without useradd.
const NOBODY: u32 = 65534;

fn is_root() -> bool {
    journal::effective_uid() == 0
}

fn skipped(test: &str) {
    eprintln!("{test}: skipped, it needs root to make files of another user");
}

fn lchown(path: &Path, uid: u32) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: lchown reads the NUL-terminated path.
    assert_eq!(unsafe { libc::lchown(c.as_ptr(), uid, uid) }, 0, "{path:?}");
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A directory of mode 1777, as /tmp is.
fn sticky_shared_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}

#[test]
fn writes_replace_files_whole_and_leave_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    let target = Target::parse(path.to_str().unwrap()).unwrap();
    target.write(b"first").unwrap();
    target.write(b"second").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"second");
    assert_eq!(names(dir.path()), ["report.json"]);
    // Created as File::create would: 0666 less the umask, so never more than 0644 here.
    let mode = fs::metadata(&path).unwrap().mode() & 0o777;
    assert_eq!(mode & 0o133, 0, "{mode:o}");
}

#[test]
fn a_pipe_is_written_in_place_not_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c_path = CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let target = Target::parse(fifo.to_str().unwrap()).unwrap();
    assert!(matches!(target, Target::Special(_)), "{target:?}");
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read(fifo).unwrap())
    };
    target.write(b"report").unwrap();
    assert_eq!(reader.join().unwrap(), b"report");
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_pipe_nobody_reads_is_refused_after_the_wait_not_hung_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c_path = CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let resolved = resolve(&fifo).unwrap();
    let error = write_in_place(&resolved, b"x", Duration::from_millis(50)).unwrap_err();
    assert!(
        error.to_string().contains("no process opened the pipe"),
        "{error}"
    );
}

#[test]
fn devices_and_the_standard_streams_are_written_in_place() {
    let null = Target::parse("/dev/null").unwrap();
    assert_eq!(null, Target::Special("/dev/null".into()));
    null.write(b"nothing").unwrap();
    // /dev/stderr is root's link to /proc/self/fd/2, the kernel's link to fd 2.
    if Path::new("/dev/stderr").exists() {
        let stderr = Target::parse("/dev/stderr").unwrap();
        assert!(matches!(stderr, Target::Special(_)), "{stderr:?}");
    }
}

#[test]
fn a_link_is_followed_and_kept() {
    // The rule: a link of this user in a directory nobody else can write to is followed.
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.json");
    fs::write(&real, "old").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    Target::parse(link.to_str().unwrap())
        .unwrap()
        .write(b"new")
        .unwrap();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(&real).unwrap(), b"new");
    // Through a chain of own links, into another private directory, by absolute path.
    let other = tempfile::tempdir().unwrap();
    let far = other.path().join("far.json");
    fs::write(&far, "old").unwrap();
    std::os::unix::fs::symlink(&far, dir.path().join("hop2")).unwrap();
    std::os::unix::fs::symlink("hop2", dir.path().join("hop1")).unwrap();
    write_to(&dir.path().join("hop1"), b"far").unwrap();
    assert_eq!(fs::read(&far).unwrap(), b"far");
    assert_eq!(names(other.path()), ["far.json"]);
}

#[test]
fn a_link_owned_by_another_user_is_refused_and_its_target_unchanged() {
    if !is_root() {
        return skipped("a_link_owned_by_another_user_is_refused_and_its_target_unchanged");
    }
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    fs::write(&victim, "root's").unwrap();
    let link = dir.path().join("report.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    lchown(&link, NOBODY);
    let error = Target::parse(link.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(link.to_str().unwrap()) && error.contains("owned by uid 65534"),
        "{error}"
    );
    // Planted after the check: the write judges it again.
    let late = dir.path().join("late.json");
    let target = Target::parse(late.to_str().unwrap()).unwrap();
    std::os::unix::fs::symlink(&victim, &late).unwrap();
    lchown(&late, NOBODY);
    let error = target.write(b"report").unwrap_err();
    assert!(error.downcast_ref::<UsageError>().is_some(), "{error:#}");
    assert_eq!(fs::read(&victim).unwrap(), b"root's");
    assert!(fs::symlink_metadata(&late)
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn no_link_is_followed_in_a_world_writable_directory() {
    let shared = sticky_shared_dir();
    let private = tempfile::tempdir().unwrap();
    let victim = private.path().join("victim");
    fs::write(&victim, "kept").unwrap();
    // Even this user's own link: the name could be anyone's a moment later.
    let link = shared.path().join("report.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let error = Target::parse(link.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(error.contains("anyone can write to (mode 1777)"), "{error}");
    assert!(write_to(&link, b"x").is_err());
    assert_eq!(fs::read(&victim).unwrap(), b"kept");
    // A plain file there is written as usual.
    let plain = shared.path().join("plain.json");
    Target::parse(plain.to_str().unwrap())
        .unwrap()
        .write(b"ok")
        .unwrap();
    assert_eq!(fs::read(&plain).unwrap(), b"ok");
}

#[test]
fn a_dangling_link_is_never_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("absent");
    let link = dir.path().join("report.json");
    std::os::unix::fs::symlink(&absent, &link).unwrap();
    let error = Target::parse(link.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(error.contains("which does not exist"), "{error}");
    assert!(write_to(&link, b"x").is_err());
    assert!(!absent.exists());
    if is_root() {
        lchown(&link, NOBODY);
        assert!(write_to(&link, b"x").is_err());
        assert!(!absent.exists());
    }
    assert_eq!(names(dir.path()), ["report.json"]);
}

#[test]
fn parsing_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let new = dir.path().join("new.json");
    let old = dir.path().join("old.json");
    fs::write(&old, "as it was").unwrap();
    let before = fs::metadata(&old).unwrap();
    for path in [&new, &old] {
        assert!(matches!(
            Target::parse(path.to_str().unwrap()).unwrap(),
            Target::File(_)
        ));
    }
    check_writable(&new).unwrap();
    assert_eq!(names(dir.path()), ["old.json"]);
    let after = fs::metadata(&old).unwrap();
    assert_eq!(fs::read(&old).unwrap(), b"as it was");
    assert_eq!(
        (before.ino(), before.mtime_nsec(), before.ctime_nsec()),
        (after.ino(), after.mtime_nsec(), after.ctime_nsec())
    );
}

#[test]
fn an_unwritable_directory_is_refused_without_a_probe_file() {
    if is_root() {
        // Root may write anywhere: access(2) says yes, as the write would.
        return skipped("an_unwritable_directory_is_refused_without_a_probe_file (as non-root)");
    }
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o500)).unwrap();
    let error = Target::parse(dir.path().join("r.json").to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(error.contains("not writable"), "{error}");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
}

#[test]
fn unwritable_paths_are_refused_with_the_path_named() {
    let err = Target::parse("/nonexistent-dir/x.json")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/nonexistent-dir/x.json") && err.contains("does not exist"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let err = Target::parse(dir.path().to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.contains("directory"), "{err}");
    let err = Target::parse(&format!("{}/", dir.path().display()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected a file path"), "{err}");
    assert_eq!(Target::parse("-").unwrap(), Target::Stdout);
}

#[test]
fn temporary_names_are_unpredictable_and_created_exclusively() {
    let a = temporary_name(c"report.json");
    let b = temporary_name(c"report.json");
    assert_ne!(a, b);
    assert!(
        a.starts_with(".report.json.memscope-") && a.ends_with(".tmp"),
        "{a}"
    );
    assert!(is_temporary_name(&a) && is_temporary_name(&b));
    for other in [
        ".report.json.memscope-123.tmp",
        "report.json",
        ".x.memscope-abc/defghijkl.tmp",
    ] {
        assert!(!is_temporary_name(other), "{other}");
    }
    // A long name is cut so the temporary name stays within NAME_MAX.
    let long = CString::new("n".repeat(255)).unwrap();
    assert!(temporary_name(&long).len() <= 255);

    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    fs::write(&victim, "kept").unwrap();
    // The old predictable name, planted as a link, is not used.
    let path = dir.path().join("r.json");
    let predictable = dir
        .path()
        .join(format!(".r.json.memscope-{}.tmp", std::process::id()));
    std::os::unix::fs::symlink(&victim, &predictable).unwrap();
    Target::parse(path.to_str().unwrap())
        .unwrap()
        .write(b"report")
        .unwrap();
    assert_eq!(fs::read(&victim).unwrap(), b"kept");
    assert_eq!(fs::read(&path).unwrap(), b"report");
    // And whatever name a link is planted at, the exclusive create refuses it.
    let handle = Arc::new(crate::fs::open_dir_path(dir.path()).unwrap());
    let planted = temporary_name(c"r.json");
    std::os::unix::fs::symlink(&victim, dir.path().join(&planted)).unwrap();
    let flags = libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_WRONLY;
    let error = open_at(Some(&handle), &CString::new(planted).unwrap(), flags, 0o666).unwrap_err();
    assert_eq!(error.raw_os_error(), Some(libc::EEXIST));
    assert_eq!(fs::read(&victim).unwrap(), b"kept");
}

#[test]
fn a_temporary_file_is_registered_for_signals_and_gone_when_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let handle = Arc::new(crate::fs::open_dir_path(dir.path()).unwrap());
    let (temporary, _file) = Temporary::create(handle, c"r.json").unwrap();
    let name = temporary.name.to_str().unwrap().to_string();
    assert!(dir.path().join(&name).is_file());
    let action = format!("remove the temporary file {name}");
    assert!(cleanup::registered().contains(&action));
    assert!(matches!(&temporary.record, Some(r)
        if r.entry.change == Change::OutputTemp { dir: dir_path_of(&temporary.dir).unwrap(), name: name.clone() }));
    let record = temporary.record.clone().unwrap();
    drop(temporary);
    assert!(!dir.path().join(&name).exists());
    assert!(!cleanup::registered().contains(&action));
    assert!(
        !record.file().exists(),
        "the journal entry outlived the file"
    );
}

#[test]
fn restore_leaves_what_is_not_its_temporary_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let out = fs::canonicalize(dir.path()).unwrap();
    let victim = out.join("victim");
    fs::write(&victim, "kept").unwrap();
    let entry = |name: &str| Entry {
        format: FORMAT,
        pid: 4_000_000,
        start_time: 1,
        boot_id: String::new(),
        time: String::new(),
        change: Change::OutputTemp {
            dir: out.clone(),
            name: name.into(),
        },
    };
    // Not a name memscope gives.
    assert!(matches!(
        restore_stale(&entry("victim")),
        Outcome::LeftAlone(_)
    ));
    // A link at a temporary name: neither it nor its target goes.
    let link = temporary_name(c"a");
    std::os::unix::fs::symlink(&victim, out.join(&link)).unwrap();
    assert!(matches!(
        restore_stale(&entry(&link)),
        Outcome::LeftAlone(_)
    ));
    // A second name of another file.
    let hard = temporary_name(c"b");
    fs::hard_link(&victim, out.join(&hard)).unwrap();
    assert!(matches!(
        restore_stale(&entry(&hard)),
        Outcome::LeftAlone(_)
    ));
    // Gone already.
    assert_eq!(restore_stale(&entry(&temporary_name(c"c"))), Outcome::Clean);
    if is_root() {
        let foreign = temporary_name(c"d");
        fs::write(out.join(&foreign), "theirs").unwrap();
        lchown(&out.join(&foreign), NOBODY);
        assert!(matches!(
            restore_stale(&entry(&foreign)),
            Outcome::LeftAlone(_)
        ));
        assert!(out.join(&foreign).exists());
    }
    assert!(out.join(&link).exists() && out.join(&hard).exists());
    assert_eq!(fs::read(&victim).unwrap(), b"kept");
}
