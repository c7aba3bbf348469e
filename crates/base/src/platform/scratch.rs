//! A scratch directory memscope makes for a run (a sweep's kept builds, the test files of
//! `files`), safe where other users can write: made with `mkdirat` under a random name
//! (mode 0700) and held open by a directory descriptor checked to be the directory just
//! made (owned by us, same device and inode), so that every file and subdirectory inside
//! is created, opened and removed relative to that descriptor (`openat`/`unlinkat` with
//! `O_NOFOLLOW`), never through a path another user could have swapped. `check_in_place`
//! says when the directory was renamed or replaced under the run. It is removed when the
//! value drops (on success and on error), through `cleanup` when a signal stops the
//! process, and through the journal (`journal`, `restore_stale`) by the next start when a
//! SIGKILL stopped it; each removal empties the directory through its descriptor and
//! removes its name only while that name is still the same directory.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Component, Path, PathBuf};

use super::cleanup;
use super::journal::{self, Change, Entry, Outcome, Record};
pub use crate::fs::random_name;
use crate::fs::{
    component, component_os, cvt, invalid_name, mkdir_at, open_at, open_dir_at, open_dir_path,
    stat_at, stat_fd, unlink_at,
};

/// Every scratch directory's name starts with this (then the user's prefix goes on).
pub(crate) const NAME_START: &str = "memscope-";

/// Characters of the random part of a name.
const SUFFIX_LEN: usize = 10;

/// How deep a removal descends; memscope's own trees are a few levels deep, and a bound
/// keeps a pathological tree from exhausting the stack.
const MAX_DEPTH: usize = 64;

/// A directory held open by its descriptor: files and subdirectories inside are made and
/// opened relative to it, never by path.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    /// Where it was made, for messages only.
    path: PathBuf,
}

/// A directory removed on drop and on SIGINT/SIGTERM/SIGHUP/SIGQUIT.
pub struct ScratchDir {
    dir: Dir,
    /// The directory it was made in (`O_PATH`), and its name there.
    parent: OwnedFd,
    name: CString,
    /// Device and inode of the directory as made.
    id: (u64, u64),
    token: Option<cleanup::Token>,
    record: Option<Record>,
}

impl Dir {
    /// Where the directory was made (for messages; never opened by memscope).
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Creates `name` (one path component) exclusively, mode 0600, open for reading and
    /// writing; an existing entry of that name, a symlink included, is an error.
    pub fn create_file(&self, name: &str) -> io::Result<File> {
        let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL;
        let fd = open_at(self.as_raw_fd(), &component(name)?, flags, 0o600)?;
        Ok(File::from(fd))
    }

    /// Opens the regular file `name` with `flags` (`O_RDONLY`, `O_RDONLY | O_DIRECT`, …),
    /// `O_NOFOLLOW` added: a symlink of that name is refused.
    pub fn open_file(&self, name: &str, flags: libc::c_int) -> io::Result<File> {
        let fd = open_at(self.as_raw_fd(), &component(name)?, flags, 0)?;
        if stat_fd(fd.as_raw_fd())?.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(io::Error::other(format!(
                "{} is not a regular file",
                self.path.join(name).display()
            )));
        }
        Ok(File::from(fd))
    }

    /// Creates the subdirectory `name` (mode 0700) and returns it open.
    pub fn create_dir(&self, name: &str) -> io::Result<Dir> {
        let c = component(name)?;
        mkdir_at(self.as_raw_fd(), &c)?;
        self.open_own_dir(&c, name)
    }

    /// Creates each missing directory of the relative path `relative` (made only of
    /// plain names: no `..`, no root) and returns the last one open; existing ones must be
    /// real directories of ours, not symlinks.
    pub fn create_dirs(&self, relative: &Path) -> io::Result<Dir> {
        let mut at: Option<Dir> = None;
        for part in relative.components() {
            let Component::Normal(name) = part else {
                return Err(invalid_name(relative.as_os_str()));
            };
            let here = at.as_ref().unwrap_or(self);
            let c = component_os(name)?;
            match mkdir_at(here.as_raw_fd(), &c) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
                _ => {}
            }
            let next = here.open_own_dir(&c, &name.to_string_lossy())?;
            at = Some(next);
        }
        match at {
            Some(dir) => Ok(dir),
            None => Err(invalid_name(relative.as_os_str())),
        }
    }

    /// Removes the entry `name`: a file or symlink itself (never what a link points to),
    /// a directory with everything inside it, relative to descriptors.
    pub fn remove(&self, name: &str) -> io::Result<()> {
        remove_at(self.as_raw_fd(), &component(name)?, 0)
    }

    /// Opens the subdirectory `c` without following a symlink, checked to be a directory
    /// of this user.
    fn open_own_dir(&self, c: &CStr, name: &str) -> io::Result<Dir> {
        let path = self.path.join(name);
        let fd = open_dir_at(self.as_raw_fd(), c)?;
        let st = stat_fd(fd.as_raw_fd())?;
        if st.st_uid != journal::effective_uid() {
            return Err(io::Error::other(format!(
                "{} belongs to uid {}, not to memscope's uid {}",
                path.display(),
                st.st_uid,
                journal::effective_uid()
            )));
        }
        Ok(Dir { fd, path })
    }
}

impl ScratchDir {
    /// Creates `PREFIXxxxxxxxxxx` (mode 0700) inside `parent`, journaled first, and holds
    /// it open; `prefix` starts with "memscope-". The error is the OS's, or says that the
    /// new directory was replaced before it could be opened.
    pub fn create_in(parent: &Path, prefix: &str) -> io::Result<ScratchDir> {
        debug_assert!(prefix.starts_with(NAME_START) && !prefix.contains('/'));
        let parent_path = std::path::absolute(parent)?;
        // Links in the parent's path only by the link rule; everything after is relative
        // to this descriptor.
        let parent_fd = open_dir_path(&parent_path)?;
        let mut tries = 0;
        let (name, path, record) = loop {
            let name = format!("{prefix}{}", random_name(SUFFIX_LEN));
            let path = parent_path.join(&name);
            // The name is chosen first so the journal can say what to remove if memscope
            // is killed right after the directory is made.
            let record = journal::record(Change::ScratchDir {
                path: path.clone(),
                prefix: prefix.to_string(),
            });
            let c = component(&name)?;
            match mkdir_at(parent_fd.as_raw_fd(), &c) {
                Ok(()) => break (c, path, record),
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
        let opened = open_made(parent_fd.as_raw_fd(), &name, &path);
        let (fd, id) = match opened {
            Ok(made) => made,
            Err(error) => {
                // What has the name now is not ours to remove, and the journal must not
                // make the next start try.
                if let Some(record) = &record {
                    let _ = record.remove();
                }
                return Err(error);
            }
        };
        // Without the signal thread the directory is still removed on every other exit.
        let token = match (cleanup::install(), fd.try_clone(), parent_fd.try_clone()) {
            (Ok(()), Ok(dir_fd), Ok(parent_copy)) => {
                let (name, path, record) = (name.clone(), path.clone(), record.clone());
                Some(cleanup::register(
                    &format!("remove {}", path.display()),
                    Box::new(move || {
                        let removal =
                            remove_scratch(dir_fd.as_raw_fd(), parent_copy.as_raw_fd(), &name, id);
                        if removal.is_ok() {
                            if let Some(record) = &record {
                                let _ = record.remove();
                            }
                        }
                    }),
                ))
            }
            _ => None,
        };
        Ok(ScratchDir {
            dir: Dir { fd, path },
            parent: parent_fd,
            name,
            id,
            token,
            record,
        })
    }

    pub fn path(&self) -> &Path {
        &self.dir.path
    }

    /// The directory, to make and open files inside it.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Checks that the directory's name still leads to the directory memscope holds open
    /// (by its parent's descriptor and by its path): a directory renamed away, or a
    /// symlink or another directory put in its place, is an error saying so.
    pub fn check_in_place(&self) -> io::Result<()> {
        let by_parent = stat_at(self.parent.as_raw_fd(), &self.name);
        let by_path = std::fs::symlink_metadata(self.path());
        use std::os::unix::fs::MetadataExt;
        let now = match (&by_parent, &by_path) {
            (Ok(st), Ok(meta))
                if (st.st_dev, st.st_ino) == self.id && (meta.dev(), meta.ino()) == self.id =>
            {
                return Ok(())
            }
            (Ok(st), _) if (st.st_dev, st.st_ino) != self.id => describe(st),
            (Err(_), _) => "nothing is there by that name".to_string(),
            (_, Ok(meta)) if meta.file_type().is_symlink() => {
                "the path now leads through a symlink".into()
            }
            _ => "the path now leads elsewhere".to_string(),
        };
        Err(io::Error::other(format!(
            "the scratch directory {} was renamed or replaced while memscope used it ({now}): \
             stopped rather than work anywhere but in its own directory",
            self.path().display()
        )))
    }
}

impl std::ops::Deref for ScratchDir {
    type Target = Dir;

    fn deref(&self) -> &Dir {
        &self.dir
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let removal = remove_scratch(
            self.dir.as_raw_fd(),
            self.parent.as_raw_fd(),
            &self.name,
            self.id,
        );
        if let Some(token) = self.token.take() {
            cleanup::unregister(token);
        }
        match &removal {
            Ok(Removal::Removed) => {}
            Ok(Removal::Moved(now)) => eprintln!(
                "memscope: the scratch directory {} was renamed or replaced while in use ({now}): \
                 its files were removed through its descriptor, and nothing outside it was \
                 touched",
                self.path().display()
            ),
            Err(error) => eprintln!(
                "memscope: could not remove the scratch directory {}: {error}",
                self.path().display()
            ),
        }
        // A directory that could not be removed keeps its entry: the next start tries.
        if let (true, Some(record)) = (removal.is_ok(), self.record.take()) {
            let _ = record.remove();
        }
    }
}

/// What removing a scratch directory did.
#[derive(Debug, PartialEq)]
enum Removal {
    /// Emptied and its name removed.
    Removed,
    /// Emptied through its descriptor; its name no longer leads to it (what is there now),
    /// so the name was left alone.
    Moved(String),
}

/// Empties the directory open as `dir` and removes `name` from `parent` only while that
/// name is still the directory (`id`: device, inode).
fn remove_scratch(dir: RawFd, parent: RawFd, name: &CStr, id: (u64, u64)) -> io::Result<Removal> {
    empty_tree(dir, 0)?;
    match stat_at(parent, name) {
        Ok(st) if (st.st_dev, st.st_ino) == id => {
            unlink_at(parent, name, libc::AT_REMOVEDIR)?;
            Ok(Removal::Removed)
        }
        Ok(st) => Ok(Removal::Moved(describe(&st))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Ok(Removal::Moved("nothing is there by that name".to_string()))
        }
        Err(e) => Err(e),
    }
}

/// Opens the directory `name` just made in `parent`, checked to be what `mkdirat` made:
/// not a symlink, a directory of this user, empty, the same device and inode as the name
/// had right after it was made. Sets mode 0700 whatever the umask.
fn open_made(parent: RawFd, name: &CStr, path: &Path) -> io::Result<(OwnedFd, (u64, u64))> {
    let replaced = |why: &str| {
        io::Error::other(format!(
            "the new scratch directory {} was replaced before memscope could open it ({why})",
            path.display()
        ))
    };
    let made = stat_at(parent, name)?;
    let fd = open_dir_at(parent, name).map_err(|e| replaced(&e.to_string()))?;
    let st = stat_fd(fd.as_raw_fd())?;
    let id = (st.st_dev, st.st_ino);
    if id != (made.st_dev, made.st_ino) {
        return Err(replaced("another directory has its name"));
    }
    if st.st_uid != journal::effective_uid() {
        return Err(replaced(&format!("it belongs to uid {}", st.st_uid)));
    }
    if !list(fd.as_raw_fd())?.is_empty() {
        return Err(replaced("it is not empty"));
    }
    // SAFETY: fchmod on our own descriptor.
    cvt(unsafe { libc::fchmod(fd.as_raw_fd(), 0o700) })?;
    Ok((fd, id))
}

/// "a symlink", "another directory", … for what a name leads to now.
fn describe(st: &libc::stat) -> String {
    match st.st_mode & libc::S_IFMT {
        libc::S_IFLNK => "its name is now a symlink".to_string(),
        libc::S_IFDIR => format!("its name is now another directory, of uid {}", st.st_uid),
        _ => "its name is now something other than a directory".to_string(),
    }
}

/// Removes everything inside the directory open as `fd`, relative to descriptors.
fn empty_tree(fd: RawFd, depth: usize) -> io::Result<()> {
    if depth > MAX_DEPTH {
        return Err(io::Error::other(format!(
            "more than {MAX_DEPTH} levels of directories"
        )));
    }
    // Listed first, removed after: a directory stream need not show entries consistently
    // while they are removed.
    for name in list(fd)? {
        remove_at(fd, &name, depth)?;
    }
    Ok(())
}

/// Removes the entry `name` of the directory open as `fd`: unlinked when it is not a
/// directory (a symlink itself, never its target), else emptied through its own
/// descriptor (opened without following a symlink) and removed.
fn remove_at(fd: RawFd, name: &CStr, depth: usize) -> io::Result<()> {
    match unlink_at(fd, name, 0) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EISDIR) | Some(libc::EPERM)) => {
            let child = open_dir_at(fd, name)?;
            empty_tree(child.as_raw_fd(), depth + 1)?;
            drop(child);
            unlink_at(fd, name, libc::AT_REMOVEDIR)
        }
        Err(e) => Err(e),
    }
}

/// The names in the directory open as `fd`, without "." and "..".
fn list(fd: RawFd) -> io::Result<Vec<CString>> {
    // A descriptor of its own: the stream takes it over and reads from the start.
    let own = open_at(fd, c".", libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
    let raw = std::os::fd::IntoRawFd::into_raw_fd(own);
    // SAFETY: `raw` is an open directory descriptor that the stream now owns.
    let stream = unsafe { libc::fdopendir(raw) };
    if stream.is_null() {
        let error = io::Error::last_os_error();
        // SAFETY: fdopendir failed, so `raw` is still ours to close.
        unsafe { libc::close(raw) };
        return Err(error);
    }
    let mut names = Vec::new();
    let result = loop {
        // SAFETY: resetting this thread's errno, so the end of the stream can be told
        // from an error.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: `stream` is open until closedir below.
        let entry = unsafe { libc::readdir(stream) };
        if entry.is_null() {
            let error = io::Error::last_os_error();
            break match error.raw_os_error() {
                Some(0) | None => Ok(()),
                Some(_) => Err(error),
            };
        }
        // SAFETY: readdir returned an entry whose d_name is NUL-terminated and valid until
        // the next readdir on this stream; it is copied at once.
        let name = unsafe { CStr::from_ptr((*entry).d_name.as_ptr()) };
        if name != c"." && name != c".." {
            names.push(name.to_owned());
        }
    };
    // SAFETY: closing the stream opened above (and its descriptor) once.
    unsafe { libc::closedir(stream) };
    result.map(|()| names)
}

/// Removes a scratch directory a killed memscope left, when it still looks like one: an
/// absolute path named PREFIX + the random letters, PREFIX starting with "memscope-", a
/// real directory (not a symlink) owned by this user. The parent is opened once and the
/// directory without following a symlink; it is emptied through its descriptor and its
/// name removed only while it still leads to the directory that was emptied.
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
    let (Some(parent), Ok(c_name), true) = (path.parent(), component(name), looks_like_ours) else {
        return Outcome::LeftAlone(format!(
            "left {} alone: it is not a name memscope gives its scratch directories",
            path.display()
        ));
    };
    let failed = |error: io::Error| {
        Outcome::Failed(format!("could not look at {} ({error})", path.display()))
    };
    let parent_fd = match open_dir_path(parent) {
        Ok(fd) => fd,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Outcome::Clean,
        Err(error) => return failed(error),
    };
    let st = match stat_at(parent_fd.as_raw_fd(), &c_name) {
        Ok(st) => st,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Outcome::Clean,
        Err(error) => return failed(error),
    };
    let euid = journal::effective_uid();
    let not_ours = || {
        Outcome::LeftAlone(format!(
            "left {} alone: it is not a directory of uid {euid}, as memscope's scratch \
             directory was",
            path.display()
        ))
    };
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR || st.st_uid != euid {
        return not_ours();
    }
    let fd = match open_dir_at(parent_fd.as_raw_fd(), &c_name) {
        Ok(fd) => fd,
        Err(_) => return not_ours(),
    };
    match stat_fd(fd.as_raw_fd()) {
        Ok(now) if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino) => {}
        _ => return not_ours(),
    }
    let who = journal::killed(entry);
    match remove_scratch(
        fd.as_raw_fd(),
        parent_fd.as_raw_fd(),
        &c_name,
        (st.st_dev, st.st_ino),
    ) {
        Ok(Removal::Removed) => Outcome::Restored(format!(
            "removed the scratch directory {} ({who} while it used it)",
            path.display()
        )),
        Ok(Removal::Moved(now)) => Outcome::LeftAlone(format!(
            "emptied the scratch directory {} ({who} while it used it) but left its name \
             alone: {now}",
            path.display()
        )),
        Err(error) => Outcome::Failed(format!(
            "could not remove the scratch directory {} ({who} while it used it): {error}",
            path.display()
        )),
    }
}

#[cfg(test)]
mod tests;
