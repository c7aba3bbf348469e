//! The test files of `files`: a fresh directory (`memscope-files-XXXXXXXXXX`) in the
//! chosen one, one file per size filled with data that neither compresses nor dedups to
//! nothing, written and synced before anything is timed. The directory is a
//! `platform::scratch::ScratchDir`: every file is created and opened relative to its
//! descriptor (`O_NOFOLLOW`), so a directory renamed or swapped for a symlink by another
//! user cannot send a write or a read anywhere else, and `check_in_place` before each
//! phase stops the run when that happened. It is removed when the value drops (success or
//! error) and on SIGINT/SIGTERM/SIGHUP/SIGQUIT.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use crate::platform::scratch::ScratchDir;

/// The test directory and its files, removed on drop.
pub(crate) struct TestFiles {
    dir: ScratchDir,
    /// (size in bytes, name inside the directory), in the order of the sizes asked for.
    pub files: Vec<(u64, String)>,
}

impl TestFiles {
    /// Creates the directory inside `parent` and writes one file per size; an error names
    /// what failed (a read-only directory, a full disk, a directory swapped meanwhile).
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
            test.check_in_place()?;
            let name = format!("file-{size}");
            write_file(&test.dir, &name, size, &mut block, &mut state).map_err(|e| {
                format!(
                    "cannot write the {size}-byte test file {}: {e}",
                    test.path().join(&name).display()
                )
            })?;
            test.files.push((size, name));
        }
        test.check_in_place()?;
        Ok(test)
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Opens the test file `name` for reading (with `O_DIRECT` when `direct`), relative to
    /// the directory's descriptor and without following a symlink.
    pub fn open(&self, name: &str, direct: bool) -> std::io::Result<File> {
        let direct = if direct { libc::O_DIRECT } else { 0 };
        self.dir.open_file(name, libc::O_RDONLY | direct)
    }

    /// An error naming the directory when it was renamed or replaced since it was made.
    pub fn check_in_place(&self) -> Result<(), String> {
        self.dir.check_in_place().map_err(|e| e.to_string())
    }
}

/// Writes `size` bytes of pseudo-random data into the new file `name` of `dir` and syncs
/// them to the device.
fn write_file(
    dir: &ScratchDir,
    name: &str,
    size: u64,
    block: &mut [u8],
    state: &mut u64,
) -> std::io::Result<()> {
    let mut file = dir.create_file(name)?;
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
        for (size, name) in &test.files {
            assert_eq!(std::fs::metadata(dir.join(name)).unwrap().len(), *size);
            assert_eq!(
                test.open(name, false).unwrap().metadata().unwrap().len(),
                *size
            );
        }
        drop(test);
        assert!(!dir.exists());
    }
}
