//! Tests of `platform::scratch`.

use super::*;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;

#[test]
fn the_directory_goes_on_drop() {
    let parent = tempfile::tempdir().unwrap();
    let scratch = ScratchDir::create_in(parent.path(), "memscope-test-").unwrap();
    let path = scratch.path().to_path_buf();
    scratch.create_file("f").unwrap().write_all(b"x").unwrap();
    scratch.create_dirs(Path::new("a/b")).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("memscope-test-"), "{name}");
    assert_eq!(name.len(), "memscope-test-".len() + SUFFIX_LEN);
    let mode = std::fs::metadata(&path).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let record = scratch.record.clone().expect("journaled");
    assert!(record.file().exists());
    assert_eq!(
        record.entry.change,
        Change::ScratchDir {
            path: path.clone(),
            prefix: "memscope-test-".into()
        }
    );
    drop(scratch);
    assert!(!path.exists());
    assert!(!record.file().exists(), "the entry outlived the directory");
}

#[test]
fn a_relative_parent_is_journaled_as_an_absolute_path() {
    let scratch = ScratchDir::create_in(Path::new("."), "memscope-test-").unwrap();
    assert!(scratch.path().is_absolute());
    assert!(scratch.path().is_dir());
}

fn entry_for(path: &Path, prefix: &str) -> Entry {
    Entry {
        format: journal::FORMAT,
        pid: 4_000_000,
        start_time: 1,
        boot_id: String::new(),
        time: String::new(),
        change: Change::ScratchDir {
            path: path.to_path_buf(),
            prefix: prefix.into(),
        },
    }
}

#[test]
fn a_stale_directory_is_removed_only_when_it_looks_like_memscopes() {
    let parent = tempfile::tempdir().unwrap();
    let ours = parent.path().join("memscope-files-Ab3dE6gH9k");
    std::fs::create_dir_all(ours.join("deep")).unwrap();
    std::fs::write(ours.join("deep/file-4096"), b"x").unwrap();
    match restore_stale(&entry_for(&ours, "memscope-files-")) {
        Outcome::Restored(line) => assert_eq!(
            line,
            format!(
                "removed the scratch directory {} (memscope pid 4000000 was killed while \
                 it used it)",
                ours.display()
            )
        ),
        other => panic!("{other:?}"),
    }
    assert!(!ours.exists());
    // Gone already: nothing to do.
    assert_eq!(
        restore_stale(&entry_for(&ours, "memscope-files-")),
        Outcome::Clean
    );
    // Names memscope does not give are never removed.
    for (name, prefix) in [
        ("data", "memscope-files-"),
        ("memscope-files-short", "memscope-files-"),
        ("project-Ab3dE6gH9k", "project-"),
    ] {
        let other = parent.path().join(name);
        std::fs::create_dir(&other).unwrap();
        let outcome = restore_stale(&entry_for(&other, prefix));
        assert!(
            matches!(outcome, Outcome::LeftAlone(_)),
            "{name}: {outcome:?}"
        );
        assert!(other.exists());
    }
    // Nor a symlink by that name, nor what it points to.
    let target = parent.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let link = parent.path().join("memscope-files-Zz3dE6gH9k");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let outcome = restore_stale(&entry_for(&link, "memscope-files-"));
    assert!(matches!(outcome, Outcome::LeftAlone(_)), "{outcome:?}");
    assert!(target.exists() && link.exists());
}

#[test]
fn files_and_directories_are_made_relative_to_the_descriptor() {
    let parent = tempfile::tempdir().unwrap();
    let scratch = ScratchDir::create_in(parent.path(), "memscope-test-").unwrap();
    scratch
        .create_file("data")
        .unwrap()
        .write_all(b"abc")
        .unwrap();
    let mut text = String::new();
    scratch
        .open_file("data", libc::O_RDONLY)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "abc");
    let mode = std::fs::metadata(scratch.path().join("data"))
        .unwrap()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // Exclusive: an existing name is an error, whatever it is.
    assert_eq!(
        scratch.create_file("data").unwrap_err().kind(),
        io::ErrorKind::AlreadyExists
    );
    // Only plain names inside.
    for bad in ["", ".", "..", "../x", "a/b"] {
        let e = scratch.create_file(bad).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad}: {e}");
    }
    assert!(scratch.create_dirs(Path::new("a/../b")).is_err());
    assert!(scratch.create_dirs(Path::new("/etc")).is_err());
    // Subdirectories hand out their own handles.
    let sub = scratch.create_dirs(Path::new("v/lib")).unwrap();
    sub.create_file("libx.so").unwrap();
    assert!(scratch.path().join("v/lib/libx.so").is_file());
    let again = scratch.create_dirs(Path::new("v/lib")).unwrap();
    assert!(again.open_file("libx.so", libc::O_RDONLY).is_ok());
    scratch.create_dir("w").unwrap().create_file("f").unwrap();
    // A symlink inside is never followed, by open or by remove.
    let outside = parent.path().join("outside");
    std::fs::write(&outside, b"keep").unwrap();
    std::os::unix::fs::symlink(&outside, scratch.path().join("link")).unwrap();
    assert!(scratch.open_file("link", libc::O_RDONLY).is_err());
    assert!(scratch.create_file("link").is_err());
    assert!(scratch.create_dirs(Path::new("link/x")).is_err());
    scratch.remove("link").unwrap();
    scratch.remove("v").unwrap();
    assert!(!scratch.path().join("v").exists());
    assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
    scratch.check_in_place().unwrap();
}

#[test]
fn a_directory_swapped_for_a_symlink_is_detected_and_nothing_outside_is_removed() {
    let parent = tempfile::tempdir().unwrap();
    let scratch = ScratchDir::create_in(parent.path(), "memscope-files-").unwrap();
    scratch.create_file("file-4096").unwrap();
    // What the attacker of issue 25 did: rename the fresh directory away and put a
    // symlink by its name to a directory of files that must not change.
    let moved = parent.path().join("moved");
    std::fs::rename(scratch.path(), &moved).unwrap();
    let victim = parent.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("file-4096"), b"victim").unwrap();
    std::os::unix::fs::symlink(&victim, scratch.path()).unwrap();
    let error = scratch.check_in_place().unwrap_err().to_string();
    assert!(error.contains("renamed or replaced"), "{error}");
    assert!(
        error.contains(&scratch.path().display().to_string()),
        "{error}"
    );
    assert!(error.contains("symlink"), "{error}");
    // Files still go where the descriptor is, never through the new name.
    scratch.create_file("file-8192").unwrap();
    assert!(moved.join("file-8192").exists());
    assert!(!victim.join("file-8192").exists());
    let record = scratch.record.clone().expect("journaled");
    let path = scratch.path().to_path_buf();
    drop(scratch);
    assert_eq!(std::fs::read(victim.join("file-4096")).unwrap(), b"victim");
    assert!(path.symlink_metadata().unwrap().file_type().is_symlink());
    // Our own directory was emptied through its descriptor, wherever it went.
    assert_eq!(std::fs::read_dir(&moved).unwrap().count(), 0);
    assert!(!record.file().exists());

    // Renamed away with nothing in its place, or replaced by another directory.
    let scratch = ScratchDir::create_in(parent.path(), "memscope-files-").unwrap();
    std::fs::rename(scratch.path(), parent.path().join("moved2")).unwrap();
    let error = scratch.check_in_place().unwrap_err().to_string();
    assert!(error.contains("nothing is there"), "{error}");
    std::fs::create_dir(scratch.path()).unwrap();
    std::fs::write(scratch.path().join("keep"), b"x").unwrap();
    let error = scratch.check_in_place().unwrap_err().to_string();
    assert!(error.contains("another directory"), "{error}");
    let path = scratch.path().to_path_buf();
    drop(scratch);
    assert!(path.join("keep").exists());
}

#[test]
fn removal_never_follows_a_symlink_inside() {
    let parent = tempfile::tempdir().unwrap();
    let victim = parent.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("precious"), b"x").unwrap();
    let scratch = ScratchDir::create_in(parent.path(), "memscope-test-").unwrap();
    let sub = scratch.create_dirs(Path::new("a/b")).unwrap();
    std::os::unix::fs::symlink(&victim, sub.path().join("to-victim")).unwrap();
    std::os::unix::fs::symlink(victim.join("precious"), scratch.path().join("f")).unwrap();
    let path = scratch.path().to_path_buf();
    drop(scratch);
    assert!(!path.exists());
    assert!(victim.join("precious").exists());
    // The same through the journal's restore.
    let stale = parent.path().join("memscope-files-Qq3dE6gH9k");
    std::fs::create_dir_all(stale.join("d")).unwrap();
    std::os::unix::fs::symlink(&victim, stale.join("d/link")).unwrap();
    let outcome = restore_stale(&entry_for(&stale, "memscope-files-"));
    assert!(matches!(outcome, Outcome::Restored(_)), "{outcome:?}");
    assert!(!stale.exists());
    assert!(victim.join("precious").exists());
}

#[test]
fn a_stale_directory_of_another_user_is_left_alone() {
    if journal::effective_uid() != 0 {
        eprintln!("skipped: needs root to give a directory to another uid");
        return;
    }
    let parent = tempfile::tempdir().unwrap();
    let theirs = parent.path().join("memscope-files-Ab3dE6gH9k");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("file-4096"), b"x").unwrap();
    std::os::unix::fs::lchown(&theirs, Some(65534), Some(65534)).unwrap();
    let outcome = restore_stale(&entry_for(&theirs, "memscope-files-"));
    assert!(matches!(outcome, Outcome::LeftAlone(_)), "{outcome:?}");
    assert!(theirs.join("file-4096").exists());
    // A symlink by the name, owned by that user, pointing at a directory of ours.
    let ours = parent.path().join("ours");
    std::fs::create_dir(&ours).unwrap();
    std::fs::write(ours.join("keep"), b"x").unwrap();
    let link = parent.path().join("memscope-files-Zz3dE6gH9k");
    std::os::unix::fs::symlink(&ours, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    let outcome = restore_stale(&entry_for(&link, "memscope-files-"));
    assert!(matches!(outcome, Outcome::LeftAlone(_)), "{outcome:?}");
    assert!(ours.join("keep").exists());
}
