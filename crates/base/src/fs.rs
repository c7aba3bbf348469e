//! File-system calls relative to directory handles, for every place memscope creates,
//! opens or removes a file where other users may write (outputs, scratch directories,
//! the journal's files, resctrl groups): `openat`/`mkdirat`/`unlinkat`/`fstatat` with
//! `O_NOFOLLOW`, and `open_dir`, which opens a directory path one component at a time
//! and follows a symbolic link in it only by the link rule (`judge_link`): owned by this
//! user or root, and not in a directory anyone can write to. So `ln -s /root/dir
//! /tmp/x` by another user never makes a root memscope write into /root/dir through
//! `/tmp/x/report.json`.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// How many symbolic links one path may lead through.
pub const MAX_LINKS: usize = 8;

/// Opens the directory `path` (relative to `at`, or the working directory when `at` is
/// `AT_FDCWD`) component by component without following a link, except one the link rule
/// allows (whose text is then opened the same way); `hops` counts the links followed.
/// The error keeps the OS's kind (NotFound, PermissionDenied for a link refused) and
/// says which part of the path it is about.
pub fn open_dir(at: RawFd, path: &[u8], hops: &mut usize) -> io::Result<OwnedFd> {
    let shown = String::from_utf8_lossy(path).into_owned();
    let about = |e: io::Error, what: &str| io::Error::new(e.kind(), format!("{what} ({e})"));
    let start: &CStr = if path.starts_with(b"/") { c"/" } else { c"." };
    let mut dir = open_at(at, start, libc::O_PATH | libc::O_DIRECTORY, 0)?;
    for part in path
        .split(|&b| b == b'/')
        .filter(|p| !p.is_empty() && *p != b".")
    {
        let name = CString::new(part).map_err(|_| invalid_name(OsStr::from_bytes(path)))?;
        let shown_part = String::from_utf8_lossy(part);
        let handle = open_at(dir.as_raw_fd(), &name, libc::O_PATH, 0)
            .map_err(|e| about(e, &format!("cannot open '{shown_part}' in '{shown}'")))?;
        let meta = stat_fd(handle.as_raw_fd())?;
        dir = match meta.st_mode & libc::S_IFMT {
            libc::S_IFDIR => handle,
            libc::S_IFLNK => {
                judge_link(&meta, &stat_fd(dir.as_raw_fd())?).map_err(|why| {
                    io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        format!("'{shown_part}' in '{shown}': {why}"),
                    )
                })?;
                *hops += 1;
                if *hops > MAX_LINKS {
                    return Err(io::Error::other(format!(
                        "'{shown}' leads through more than {MAX_LINKS} symbolic links"
                    )));
                }
                open_dir(dir.as_raw_fd(), read_link(&handle)?.as_bytes(), hops)?
            }
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    format!("'{shown_part}' in '{shown}' is not a directory"),
                ))
            }
        };
    }
    // A handle that can be listed, not only a path.
    open_at(dir.as_raw_fd(), c".", libc::O_RDONLY | libc::O_DIRECTORY, 0)
}

/// Opens the directory `path` as `open_dir` does, first making (mode 0700) each missing
/// component of it, as `mkdir -p`: never through a link the link rule refuses.
pub fn create_dirs(path: &Path) -> io::Result<OwnedFd> {
    let bytes = path.as_os_str().as_bytes();
    let mut prefix = if bytes.starts_with(b"/") {
        b"/".to_vec()
    } else {
        Vec::new()
    };
    for part in bytes.split(|&b| b == b'/').filter(|p| !p.is_empty()) {
        let parent = open_dir(
            libc::AT_FDCWD,
            if prefix.is_empty() { b"." } else { &prefix },
            &mut 0,
        )?;
        let name = CString::new(part).map_err(|_| invalid_name(path.as_os_str()))?;
        match mkdir_at(parent.as_raw_fd(), &name) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
        if !prefix.is_empty() && !prefix.ends_with(b"/") {
            prefix.push(b'/');
        }
        prefix.extend_from_slice(part);
    }
    open_dir_path(path)
}

/// `open_dir` of a whole path from the working directory.
pub fn open_dir_path(path: &Path) -> io::Result<OwnedFd> {
    open_dir(libc::AT_FDCWD, path.as_os_str().as_bytes(), &mut 0)
}

/// The link rule: a link is followed only when this user or root made it (root's links
/// are the system's, like /dev/stderr; nobody else can make one owned by root), and
/// never in a world-writable directory (/tmp and the like), where the name could be
/// anyone's a moment later. This is stricter than the kernel's protected_symlinks, which
/// also trusts a link of the directory's owner: for root writing into a user's directory,
/// that owner is the other user.
pub fn judge_link(link: &libc::stat, dir: &libc::stat) -> Result<(), String> {
    let euid = effective_uid();
    if dir.st_mode & libc::S_IWOTH != 0 {
        return Err(format!(
            "it is a symbolic link in a directory anyone can write to (mode {:o}); memscope \
             never follows a link there: give the path of the file itself",
            dir.st_mode & 0o7777
        ));
    }
    if link.st_uid != euid && link.st_uid != 0 {
        return Err(format!(
            "it is a symbolic link owned by uid {}, not by this user (uid {euid}) or root; \
             memscope does not write through another user's link: give the path of the file \
             itself, or remove the link",
            link.st_uid
        ));
    }
    Ok(())
}

/// The text of the link `handle` (an `O_PATH|O_NOFOLLOW` descriptor of the link itself),
/// so it is the very link that was judged.
pub fn read_link(handle: &OwnedFd) -> io::Result<CString> {
    let mut buffer = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: readlinkat writes at most `buffer.len()` bytes into the buffer; the empty
    // path with an O_PATH descriptor names the link itself.
    let n = unsafe {
        libc::readlinkat(
            handle.as_raw_fd(),
            c"".as_ptr(),
            buffer.as_mut_ptr().cast(),
            buffer.len(),
        )
    };
    let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
    if n >= buffer.len() {
        return Err(io::Error::other("the link's text is longer than PATH_MAX"));
    }
    buffer.truncate(n);
    CString::new(buffer).map_err(io::Error::other)
}

/// `name` as one path component: not empty, no '/', not "." or "..", no NUL.
pub fn component(name: &str) -> io::Result<CString> {
    component_os(OsStr::new(name))
}

pub(crate) fn component_os(name: &OsStr) -> io::Result<CString> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return Err(invalid_name(name));
    }
    CString::new(bytes).map_err(|_| invalid_name(name))
}

pub(crate) fn invalid_name(name: &OsStr) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "'{}' is not a name inside a directory (plain names, no '..')",
            name.to_string_lossy()
        ),
    )
}

pub fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC, mode)`, retried when interrupted.
pub fn open_at(
    dir: RawFd,
    name: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    let flags = flags | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    loop {
        // SAFETY: `name` is NUL-terminated; the descriptor returned is ours.
        let fd = unsafe { libc::openat(dir, name.as_ptr(), flags, libc::c_uint::from(mode)) };
        if fd >= 0 {
            // SAFETY: a fresh descriptor nobody else owns.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// A directory `name` in `dir`, opened for listing without following a symlink.
pub fn open_dir_at(dir: RawFd, name: &CStr) -> io::Result<OwnedFd> {
    open_at(dir, name, libc::O_RDONLY | libc::O_DIRECTORY, 0)
}

pub(crate) fn mkdir_at(dir: RawFd, name: &CStr) -> io::Result<()> {
    // SAFETY: `name` is NUL-terminated.
    cvt(unsafe { libc::mkdirat(dir, name.as_ptr(), 0o700) }).map(|_| ())
}

pub fn unlink_at(dir: RawFd, name: &CStr, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: `name` is NUL-terminated.
    cvt(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) }).map(|_| ())
}

pub fn stat_fd(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value for fstat to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid stat buffer.
    cvt(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(st)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: what the name itself is.
pub fn stat_at(dir: RawFd, name: &CStr) -> io::Result<libc::stat> {
    // SAFETY: an all-zero stat is a valid value for fstatat to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `name` is NUL-terminated and `st` is a valid stat buffer.
    cvt(unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok(st)
}

/// `len` random letters and digits from getrandom, else from the clock, pid and a
/// counter: names nobody can guess ahead (a name taken already is retried by the
/// exclusive create that uses it). Shared with the output files' temporary names.
pub fn random_name(len: usize) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut bytes = vec![0u8; len];
    // SAFETY: getrandom writes at most `bytes.len()` bytes into the buffer it is given.
    let got = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if usize::try_from(got).ok() != Some(bytes.len()) {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut state = nanos
            ^ (u64::from(std::process::id()) << 32)
            ^ COUNTER
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            | 1;
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

/// The effective user id: whose files a name must be to be trusted as memscope's own.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}
