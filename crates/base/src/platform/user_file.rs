//! Files a user names on the command line and memscope reads (`compare`'s reports,
//! `footprint`'s binary and `--against`, `history --add`): opened without blocking
//! (`O_NONBLOCK`, so a FIFO with no writer cannot hang the open), checked on the opened
//! descriptor to be a regular file (a device, FIFO, socket or directory is refused,
//! naming what it is), then either read whole up to a cap counted on the bytes actually
//! read (a file that grows, or lies in its size, cannot make the read unbounded) or
//! mapped read-only, so a large binary costs page cache rather than a copy on the heap.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::units::Bytes;

/// What a path turned out to be when it was not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotRegular {
    Directory,
    Fifo,
    CharacterDevice,
    BlockDevice,
    Socket,
    Other,
}

impl fmt::Display for NotRegular {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NotRegular::Directory => "a directory",
            NotRegular::Fifo => "a FIFO",
            NotRegular::CharacterDevice => "a character device",
            NotRegular::BlockDevice => "a block device",
            NotRegular::Socket => "a socket",
            NotRegular::Other => "not a regular file",
        })
    }
}

/// Why a user's file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum UserFileError {
    #[error("cannot open {path}: {reason}")]
    Open {
        path: PathBuf,
        reason: std::io::Error,
    },
    #[error("{path} is {kind}; expected a regular file")]
    NotRegular { path: PathBuf, kind: NotRegular },
    #[error("{path} is larger than {cap}, the most memscope reads of such a file")]
    TooLarge { path: PathBuf, cap: Bytes },
    #[error("cannot read {path}: {reason}")]
    Read {
        path: PathBuf,
        reason: std::io::Error,
    },
    #[error("cannot map {path} into memory: {reason}")]
    Map {
        path: PathBuf,
        reason: std::io::Error,
    },
}

/// A regular file opened for reading.
#[derive(Debug)]
pub struct UserFile {
    file: File,
    path: PathBuf,
    len: u64,
}

/// Opens `path` for reading and checks, on the opened descriptor (so nothing can be
/// swapped between the check and the read), that it is a regular file.
pub fn open(path: &Path) -> Result<UserFile, UserFileError> {
    // O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer, for ever. On
    // the regular file that is kept, the flag has no effect on reads.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|reason| UserFileError::Open {
            path: path.to_path_buf(),
            reason,
        })?;
    let metadata = file.metadata().map_err(|reason| UserFileError::Read {
        path: path.to_path_buf(),
        reason,
    })?;
    let kind = metadata.file_type();
    if !kind.is_file() {
        let kind = if kind.is_dir() {
            NotRegular::Directory
        } else if kind.is_fifo() {
            NotRegular::Fifo
        } else if kind.is_char_device() {
            NotRegular::CharacterDevice
        } else if kind.is_block_device() {
            NotRegular::BlockDevice
        } else if kind.is_socket() {
            NotRegular::Socket
        } else {
            NotRegular::Other
        };
        return Err(UserFileError::NotRegular {
            path: path.to_path_buf(),
            kind,
        });
    }
    Ok(UserFile {
        file,
        path: path.to_path_buf(),
        len: metadata.len(),
    })
}

/// The whole of the regular file `path`, at most `cap` bytes (more is an error naming the
/// cap).
pub fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, UserFileError> {
    open(path)?.read_capped(cap)
}

impl UserFile {
    /// The size fstat gave when the file was opened.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads the file whole, at most `cap` bytes: the cap is checked on what the read
    /// returns, not on the size fstat gave, which a growing file would outrun.
    pub fn read_capped(self, cap: u64) -> Result<Vec<u8>, UserFileError> {
        let too_large = || UserFileError::TooLarge {
            path: self.path.clone(),
            cap: Bytes(cap),
        };
        if self.len > cap {
            return Err(too_large());
        }
        let mut bytes = Vec::with_capacity(usize::try_from(self.len).unwrap_or(0));
        (&self.file)
            .take(cap.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|reason| UserFileError::Read {
                path: self.path.clone(),
                reason,
            })?;
        if bytes.len() as u64 > cap {
            return Err(too_large());
        }
        Ok(bytes)
    }

    /// Maps the file read-only and private: its pages come from the page cache as they
    /// are touched, so a 2 GiB file costs no 2 GiB copy.
    pub fn map(self) -> Result<Mapped, UserFileError> {
        let map_error = |reason| UserFileError::Map {
            path: self.path.clone(),
            reason,
        };
        let Ok(len) = usize::try_from(self.len) else {
            return Err(map_error(std::io::Error::from_raw_os_error(libc::EFBIG)));
        };
        if len == 0 {
            // mmap refuses a length of 0; an empty file is an empty slice.
            return Ok(Mapped {
                address: std::ptr::NonNull::dangling(),
                len: 0,
            });
        }
        use std::os::fd::AsRawFd as _;
        // SAFETY: a fresh mapping chosen by the kernel (address null) of a descriptor we
        // own; the result is checked for MAP_FAILED before use.
        let address = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                self.file.as_raw_fd(),
                0,
            )
        };
        if address == libc::MAP_FAILED {
            return Err(map_error(std::io::Error::last_os_error()));
        }
        let address = std::ptr::NonNull::new(address.cast::<u8>())
            .ok_or_else(|| map_error(std::io::Error::from_raw_os_error(libc::EINVAL)))?;
        Ok(Mapped { address, len })
    }
}

/// A read-only private mapping of a whole regular file, unmapped on drop.
#[derive(Debug)]
pub struct Mapped {
    address: std::ptr::NonNull<u8>,
    len: usize,
}

impl std::ops::Deref for Mapped {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `address` is a PROT_READ mapping of `len` bytes that lives until drop
        // (or a dangling, aligned pointer with `len` 0). The mapping is MAP_PRIVATE and
        // nothing in this process writes to the file through it. Another process that
        // truncates the file under us makes a later access a SIGBUS (the process stops),
        // not a read of other memory; what it writes may show through, which the
        // parsers, written for hostile bytes, tolerate.
        unsafe { std::slice::from_raw_parts(self.address.as_ptr(), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: unmaps exactly the mapping made in `map`; no slice of it outlives
            // `self` (Deref borrows `self`).
            unsafe {
                libc::munmap(self.address.as_ptr().cast(), self.len);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_reads_up_to_its_cap_and_no_further() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_capped(&path, 10).unwrap(), b"0123456789");
        let e = read_capped(&path, 9).unwrap_err().to_string();
        assert!(e.contains("r.json") && e.contains("larger than 9 B"), "{e}");
        let mapped = open(&path).unwrap().map().unwrap();
        assert_eq!(&mapped[..], b"0123456789");
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert!(open(&empty).unwrap().map().unwrap().is_empty());
    }

    #[test]
    fn devices_fifos_and_directories_are_refused_at_once_naming_what_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_capped(Path::new("/dev/zero"), 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/dev/zero is a character device; expected a regular file"),
            "{e}"
        );
        let fifo = dir.path().join("fifo");
        let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; mkfifo has no other preconditions.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        // No writer: a blocking open would never return.
        let e = open(&fifo).unwrap_err().to_string();
        assert!(e.contains("is a FIFO; expected a regular file"), "{e}");
        let e = open(dir.path()).unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
        let e = open(&dir.path().join("missing")).unwrap_err().to_string();
        assert!(e.starts_with("cannot open") && e.contains("missing"), "{e}");
    }

    #[test]
    fn a_large_sparse_file_maps_without_being_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse");
        let file = File::create(&path).unwrap();
        file.set_len(1 << 30).unwrap();
        let opened = open(&path).unwrap();
        assert_eq!(opened.len(), 1 << 30);
        let mapped = opened.map().unwrap();
        assert_eq!(mapped.len(), 1 << 30);
        assert_eq!(mapped[(1 << 30) - 1], 0);
    }
}
