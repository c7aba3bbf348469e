//! Output files: checked for writability before any measurement starts, and written
//! atomically (a temporary file in the same directory, then a rename), so a run that
//! fails or is interrupted never leaves a half-written report behind. `-` is stdout.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::UsageError;

/// Where one exporter's bytes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Stdout,
    File(PathBuf),
}

impl Target {
    /// Parses a `--json`/`--csv`/`--html` value and checks that the file can be created.
    pub fn parse(value: &str) -> Result<Target, UsageError> {
        if value == "-" {
            return Ok(Target::Stdout);
        }
        let path = PathBuf::from(value);
        check_writable(&path)?;
        Ok(Target::File(path))
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
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Stdout => f.write_str("stdout"),
            Target::File(path) => write!(f, "{}", path.display()),
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

/// Fails with a `UsageError` naming the path when the file could not be written.
pub fn check_writable(path: &Path) -> Result<(), UsageError> {
    let fail = |reason: String| UsageError::OutputPath {
        path: path.display().to_string(),
        reason,
    };
    if path.is_dir() {
        return Err(fail("it is a directory; expected a file path".into()));
    }
    let dir = directory_of(path);
    if !dir.is_dir() {
        return Err(fail(format!(
            "directory '{}' does not exist",
            dir.display()
        )));
    }
    let probe = temporary_path(path);
    match fs::File::create(&probe) {
        Ok(_) => {
            let _ = fs::remove_file(&probe);
            Ok(())
        }
        Err(error) => Err(fail(error.to_string())),
    }
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
