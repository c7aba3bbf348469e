//! A scratch directory memscope makes for a run (a sweep's kept builds, the test files of
//! `files`): created with a unique name, removed when the value drops (on success and on
//! error) and, through `cleanup`, when a signal stops the process.

use std::path::Path;

use super::cleanup;

/// A directory removed on drop and on SIGINT/SIGTERM/SIGHUP/SIGQUIT.
pub struct ScratchDir {
    dir: Option<tempfile::TempDir>,
    token: Option<cleanup::Token>,
}

impl ScratchDir {
    /// Creates `PREFIXxxxxxx` inside `parent`; the error is the OS's.
    pub fn create_in(parent: &Path, prefix: &str) -> std::io::Result<ScratchDir> {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir_in(parent)?;
        let path = dir.path().to_path_buf();
        // Without the signal thread the directory is still removed on every other exit.
        let token = cleanup::install().ok().map(|()| {
            cleanup::register(
                &format!("remove {}", path.display()),
                Box::new(move || {
                    let _ = std::fs::remove_dir_all(&path);
                }),
            )
        });
        Ok(ScratchDir {
            dir: Some(dir),
            token,
        })
    }

    pub fn path(&self) -> &Path {
        self.dir.as_ref().expect("present until drop").path()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
        if let Some(token) = self.token.take() {
            cleanup::unregister(token);
        }
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
        assert!(path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("memscope-test-"));
        drop(scratch);
        assert!(!path.exists());
    }
}
