//! A scratch directory memscope makes for a run (a sweep's kept builds, the test files of
//! `files`): created with a unique name, removed when the value drops (on success and on
//! error), through `cleanup` when a signal stops the process, and through the journal
//! (`journal`, `restore_stale`) by the next start when a SIGKILL stopped it.

use std::fs::DirBuilder;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::cleanup;
use super::journal::{self, Change, Entry, Outcome, Record};

/// Every scratch directory's name starts with this (then the user's prefix goes on).
pub const NAME_START: &str = "memscope-";

/// Characters of the random part of a name.
const SUFFIX_LEN: usize = 10;

/// A directory removed on drop and on SIGINT/SIGTERM/SIGHUP/SIGQUIT.
pub struct ScratchDir {
    path: PathBuf,
    token: Option<cleanup::Token>,
    record: Option<Record>,
}

impl ScratchDir {
    /// Creates `PREFIXxxxxxxxxxx` (mode 0700) inside `parent`, journaled first; `prefix`
    /// starts with "memscope-". The error is the OS's.
    pub fn create_in(parent: &Path, prefix: &str) -> io::Result<ScratchDir> {
        debug_assert!(prefix.starts_with(NAME_START) && !prefix.contains('/'));
        let parent = std::path::absolute(parent)?;
        let mut tries = 0;
        let (path, record) = loop {
            let path = parent.join(format!("{prefix}{}", random_suffix()));
            // The name is chosen first so the journal can say what to remove if memscope
            // is killed right after the directory is made.
            let record = journal::record(Change::ScratchDir {
                path: path.clone(),
                prefix: prefix.to_string(),
            });
            match DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => break (path, record),
                Err(error) => {
                    if let Some(record) = &record {
                        let _ = record.remove();
                    }
                    tries += 1;
                    if error.kind() != io::ErrorKind::AlreadyExists || tries >= 16 {
                        return Err(error);
                    }
                }
            }
        };
        // Without the signal thread the directory is still removed on every other exit.
        let token = cleanup::install().ok().map(|()| {
            let (path, record) = (path.clone(), record.clone());
            cleanup::register(
                &format!("remove {}", path.display()),
                Box::new(move || {
                    if std::fs::remove_dir_all(&path).is_ok() {
                        if let Some(record) = &record {
                            let _ = record.remove();
                        }
                    }
                }),
            )
        });
        Ok(ScratchDir {
            path,
            token,
            record,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let removed = std::fs::remove_dir_all(&self.path)
            .or_else(|error| match error.kind() {
                io::ErrorKind::NotFound => Ok(()),
                _ => Err(error),
            })
            .is_ok();
        if let Some(token) = self.token.take() {
            cleanup::unregister(token);
        }
        // A directory that could not be removed keeps its entry: the next start tries.
        if let (true, Some(record)) = (removed, self.record.take()) {
            let _ = record.remove();
        }
    }
}

/// Random letters and digits from getrandom, else from the clock, pid and a counter (a
/// name taken already is retried).
fn random_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut bytes = [0u8; SUFFIX_LEN];
    // SAFETY: getrandom writes at most `bytes.len()` bytes into the buffer it is given.
    let got = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if usize::try_from(got).ok() != Some(bytes.len()) {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let mut state = nanos
            ^ (u64::from(std::process::id()) << 32)
            ^ COUNTER
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for byte in &mut bytes {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *byte = state as u8;
        }
    }
    bytes
        .iter()
        .map(|&b| ALPHABET[usize::from(b) % ALPHABET.len()] as char)
        .collect()
}

/// Removes a scratch directory a killed memscope left, when it still looks like one: an
/// absolute path named PREFIX + the random letters, PREFIX starting with "memscope-", a
/// real directory (not a symlink) owned by this user.
pub fn restore_stale(entry: &Entry) -> Outcome {
    let Change::ScratchDir { path, prefix } = &entry.change else {
        return Outcome::Clean;
    };
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let looks_like_ours = path.is_absolute()
        && prefix.starts_with(NAME_START)
        && !prefix.contains('/')
        && name.strip_prefix(prefix.as_str()).is_some_and(|suffix| {
            suffix.len() == SUFFIX_LEN && suffix.bytes().all(|b| b.is_ascii_alphanumeric())
        });
    if !looks_like_ours {
        return Outcome::LeftAlone(format!(
            "left {} alone: it is not a name memscope gives its scratch directories",
            path.display()
        ));
    }
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Outcome::Clean,
        Err(error) => {
            return Outcome::Failed(format!("could not look at {} ({error})", path.display()))
        }
    };
    let euid = journal::effective_uid();
    if !meta.is_dir() || meta.uid() != euid {
        return Outcome::LeftAlone(format!(
            "left {} alone: it is not a directory of uid {euid}, as memscope's scratch \
             directory was",
            path.display()
        ));
    }
    let who = journal::killed(entry);
    match std::fs::remove_dir_all(path) {
        Ok(()) => Outcome::Restored(format!(
            "removed the scratch directory {} ({who} while it used it)",
            path.display()
        )),
        Err(error) => Outcome::Failed(format!(
            "could not remove the scratch directory {} ({who} while it used it): {error}",
            path.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_goes_on_drop() {
        let parent = tempfile::tempdir().unwrap();
        let scratch = ScratchDir::create_in(parent.path(), "memscope-test-").unwrap();
        let path = scratch.path().to_path_buf();
        std::fs::write(path.join("f"), b"x").unwrap();
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
}
