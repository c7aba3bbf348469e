//! Output files: checked for writability before any measurement starts, and written
//! atomically (a temporary file in the same directory, then a rename), so a run that
//! fails or is interrupted never leaves a half-written report behind. `-` is stdout. A
//! path that is not a regular file (`/dev/null`, a named pipe, `/dev/stderr`) is written
//! in place: renaming over it would replace the device with a file. A symbolic link is
//! followed, so the file it points to is replaced, not the link.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::UsageError;

/// Where one exporter's bytes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Stdout,
    /// A regular file (or one to create), replaced atomically.
    File(PathBuf),
    /// An existing device, pipe or socket, opened and written directly.
    Special(PathBuf),
}

impl Target {
    /// Parses a `--json`/`--csv`/`--html` value and checks that the file can be created.
    pub fn parse(value: &str) -> Result<Target, UsageError> {
        if value == "-" {
            return Ok(Target::Stdout);
        }
        let given = PathBuf::from(value);
        // A link's target is what gets written (a dangling link: the link's own path).
        let path = match fs::symlink_metadata(&given) {
            Ok(m) if m.file_type().is_symlink() => fs::canonicalize(&given).unwrap_or(given),
            _ => given,
        };
        match fs::metadata(&path) {
            Ok(m) if !m.is_file() && !m.is_dir() => {
                check_special_writable(&path)?;
                Ok(Target::Special(path))
            }
            _ => {
                check_writable(&path)?;
                Ok(Target::File(path))
            }
        }
    }

    pub fn is_stdout(&self) -> bool {
        matches!(self, Target::Stdout)
    }

    /// Writes `bytes` to the target, replacing a file atomically.
    pub fn write(&self, bytes: &[u8]) -> anyhow::Result<()> {
        match self {
            Target::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(bytes)?;
                out.flush()?;
                Ok(())
            }
            Target::File(path) => write_atomically(path, bytes),
            Target::Special(path) => {
                use anyhow::Context;
                let mut file = fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .with_context(|| format!("opening {}", path.display()))?;
                file.write_all(bytes)
                    .with_context(|| format!("writing {}", path.display()))
            }
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Stdout => f.write_str("stdout"),
            Target::File(path) | Target::Special(path) => write!(f, "{}", path.display()),
        }
    }
}

fn directory_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn temporary_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    directory_of(path).join(format!(".{name}.memscope-{}.tmp", std::process::id()))
}

/// The `UsageError` naming `path` and why it cannot be written.
fn unwritable(path: &Path, reason: impl Into<String>) -> UsageError {
    UsageError::OutputPath {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// Fails with a `UsageError` naming the path when the file could not be written.
pub fn check_writable(path: &Path) -> Result<(), UsageError> {
    if path.is_dir() {
        return Err(unwritable(path, "it is a directory; expected a file path"));
    }
    let dir = directory_of(path);
    if !dir.is_dir() {
        return Err(unwritable(
            path,
            format!("directory '{}' does not exist", dir.display()),
        ));
    }
    let probe = temporary_path(path);
    match fs::File::create(&probe) {
        Ok(_) => {
            let _ = fs::remove_file(&probe);
            Ok(())
        }
        Err(error) => Err(unwritable(path, error.to_string())),
    }
}

/// Fails with a `UsageError` naming the path when this process may not write to the
/// device or pipe at `path` (checked with access(2), so a pipe is not opened early).
fn check_special_writable(path: &Path) -> Result<(), UsageError> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| unwritable(path, "the path contains a NUL byte"))?;
    // SAFETY: access reads the NUL-terminated path it is given.
    if unsafe { libc::access(c_path.as_ptr(), libc::W_OK) } == 0 {
        Ok(())
    } else {
        Err(unwritable(
            path,
            std::io::Error::last_os_error().to_string(),
        ))
    }
}

/// An output as asked for (`None`: not asked for) and what renders its bytes.
pub type Requested<'a> = (&'a Option<Target>, &'a dyn Fn() -> Vec<u8>);

/// Renders and writes every requested output, in order, and returns the files written
/// (stdout is not one): the "Wrote …" line's names.
pub fn write_requested(outputs: &[Requested]) -> anyhow::Result<Vec<String>> {
    let mut files = Vec::new();
    for (target, render) in outputs {
        let Some(target) = target else { continue };
        target.write(&render())?;
        if !target.is_stdout() {
            files.push(target.to_string());
        }
    }
    Ok(files)
}

/// Writes `bytes` to a temporary file beside `path` and renames it over `path`.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use anyhow::Context;
    let temporary = temporary_path(path);
    let result = (|| -> std::io::Result<()> {
        let mut file = fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temporary, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    result.with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replace_files_whole_and_leave_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        let target = Target::parse(path.to_str().unwrap()).unwrap();
        target.write(b"first").unwrap();
        target.write(b"second").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_pipe_is_written_in_place_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
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
    fn a_link_is_followed_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        fs::write(&real, "old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        Target::parse(link.to_str().unwrap())
            .unwrap()
            .write(b"new")
            .unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&real).unwrap(), b"new");
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
        assert_eq!(Target::parse("-").unwrap(), Target::Stdout);
    }
}
