//! The test files of `files`: a fresh directory (`memscope-files-XXXXXX`) in the chosen
//! one, one file per size filled with data that neither compresses nor dedups to nothing,
//! written and synced before anything is timed. The directory is a
//! `platform::scratch::ScratchDir`: removed when the value drops (success or error) and on
//! SIGINT/SIGTERM/SIGHUP/SIGQUIT.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::platform::scratch::ScratchDir;

/// The test directory and its files, removed on drop.
pub struct TestFiles {
    dir: ScratchDir,
    /// (size in bytes, path), in the order of the sizes asked for.
    pub files: Vec<(u64, PathBuf)>,
}

impl TestFiles {
    /// Creates the directory inside `parent` and writes one file per size; an error names
    /// what failed (a read-only directory, a full disk).
    pub fn create(parent: &Path, sizes: &[u64]) -> Result<TestFiles, String> {
        let dir = ScratchDir::create_in(parent, "memscope-files-")
            .map_err(|e| format!("cannot create a directory in {}: {e}", parent.display()))?;
        let mut test = TestFiles {
            dir,
            files: Vec::new(),
        };
        let mut block = vec![0u8; 1 << 20];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for &size in sizes {
            let path = test.path().join(format!("file-{size}"));
            write_file(&path, size, &mut block, &mut state).map_err(|e| {
                format!(
                    "cannot write the {size}-byte test file {}: {e}",
                    path.display()
                )
            })?;
            test.files.push((size, path));
        }
        Ok(test)
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Writes `size` bytes of pseudo-random data and syncs them to the device.
fn write_file(path: &Path, size: u64, block: &mut [u8], state: &mut u64) -> std::io::Result<()> {
    let mut file = File::create(path)?;
    let mut left = size;
    while left > 0 {
        for chunk in block.chunks_exact_mut(8) {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            chunk.copy_from_slice(&state.to_le_bytes());
        }
        let n = left.min(block.len() as u64) as usize;
        file.write_all(&block[..n])?;
        left -= n as u64;
    }
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_written_at_their_sizes_and_removed_on_drop() {
        let parent = tempfile::tempdir().unwrap();
        let test = TestFiles::create(parent.path(), &[4096, 100_000]).unwrap();
        let dir = test.path().to_path_buf();
        for (size, path) in &test.files {
            assert_eq!(std::fs::metadata(path).unwrap().len(), *size);
        }
        drop(test);
        assert!(!dir.exists());
    }
}
