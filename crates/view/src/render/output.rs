//! Output files (`--json`, `--csv`, `--html`, `--prometheus`, `run --out DIR`'s reports)
//! and the path rules the history database shares (`resolve`). memscope often runs as
//! root in directories other users can write to, so a path is never written through a
//! link someone else could have planted:
//!
//! - The directory part of the path is opened once, a component at a time, and
//!   everything after happens relative to that handle.
//! - A final name that is a symbolic link is refused (exit 2) unless the link belongs to
//!   this user or to root *and* its directory is not world-writable; an accepted link is
//!   read through an `O_PATH` handle on the link itself (so the text judged is the text
//!   followed) and its target is judged the same way, hop by hop. A link to nothing is
//!   refused, as `cp` does. The directory parts (of the path given and of a link's text)
//!   are opened one component at a time by the same rule (`crate::fs::open_dir`).
//! - A regular file (or one to create) is written atomically: a temporary file with an
//!   unpredictable name `.NAME.memscope-RANDOM.tmp` created with `O_CREAT|O_EXCL|
//!   O_NOFOLLOW` in the target's directory, written, synced and `renameat` over the name,
//!   so a failed or interrupted run never leaves a half-written report, and a planted
//!   link at any name is never written through. The temporary file is journaled
//!   (`journal::Change::OutputTemp`) and registered with `cleanup` while it exists:
//!   SIGINT/SIGTERM remove it at once, after a SIGKILL the next start's restoration
//!   does (`restore_stale`).
//! - A device, pipe or socket (`/dev/null`, a FIFO, `/dev/stderr` through its links) is
//!   written in place: renaming over it would replace the device with a file. It is
//!   opened with `O_NOFOLLOW|O_NONBLOCK` (a `/proc/self/fd` link is the kernel's and is
//!   followed); a FIFO nobody reads yet is waited for up to `PIPE_WAIT`, then refused.
//! - `Target::parse` writes nothing: it resolves the path by the same rules and checks
//!   with `faccessat` that the directory (or the device) is writable.
//!
//! `-` is stdout.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::UsageError;
use crate::fs::{self, MAX_LINKS};
use crate::platform::journal::{self, Change, Entry, Outcome, Record};
use crate::platform::{cleanup, scratch};

/// Where one exporter's bytes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Stdout,
    /// A regular file (or one to create), replaced atomically; the path as given.
    File(PathBuf),
    /// An existing device, pipe or socket, opened and written directly.
    Special(PathBuf),
}

impl Target {
    /// Parses a `--json`/`--csv`/`--html`/`--prometheus` value and checks, without writing
    /// anything, that the file can be written.
    pub fn parse(value: &str) -> Result<Target, UsageError> {
        if value == "-" {
            return Ok(Target::Stdout);
        }
        let path = PathBuf::from(value);
        let resolved = resolve(&path).map_err(|reason| unwritable(&path, reason))?;
        resolved
            .check_writable()
            .map_err(|error| unwritable(&path, error.to_string()))?;
        Ok(match resolved.found {
            Found::Special { .. } => Target::Special(path),
            Found::Nothing | Found::Regular => Target::File(path),
        })
    }

    pub fn is_stdout(&self) -> bool {
        matches!(self, Target::Stdout)
    }

    /// Writes `bytes` to the target, replacing a file atomically. The path is resolved
    /// again by the same rules: what changed since `parse` is judged as it is now.
    pub fn write(&self, bytes: &[u8]) -> anyhow::Result<()> {
        match self {
            Target::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(bytes)?;
                out.flush()?;
                Ok(())
            }
            Target::File(path) | Target::Special(path) => write_to(path, bytes),
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

/// The `UsageError` naming `path` and why it cannot be written.
fn unwritable(path: &Path, reason: impl Into<String>) -> UsageError {
    UsageError::OutputPath {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// Fails with a `UsageError` naming the path when the file could not be written. Writes
/// nothing.
pub fn check_writable(path: &Path) -> Result<(), UsageError> {
    let resolved = resolve(path).map_err(|reason| unwritable(path, reason))?;
    resolved
        .check_writable()
        .map_err(|error| unwritable(path, error.to_string()))
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

/// Writes `bytes` to the file at `path` (see the module's rules): a refused path is a
/// `UsageError`, a failed write an I/O error naming the path.
pub(crate) fn write_to(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use anyhow::Context;
    let resolved = resolve(path).map_err(|reason| unwritable(path, reason))?;
    match resolved.found {
        Found::Nothing | Found::Regular => write_atomically_in(resolved, bytes),
        Found::Special { .. } => write_in_place(&resolved, bytes, PIPE_WAIT),
    }
    .with_context(|| format!("writing {}", path.display()))
}

// ------------------------------------------------------------------------------------
// Resolving a path by the link rules.

/// How long a FIFO without a reader is waited for before the write is refused.
pub(crate) const PIPE_WAIT: Duration = Duration::from_secs(10);

/// procfs' `f_type` (statfs(2)): its `/proc/self/fd/N` links are the kernel's.
const PROC_SUPER_MAGIC: i64 = 0x9fa0;

/// A path resolved for writing: the directory that holds the final file, open, and the
/// file's name in it.
pub struct Resolved {
    pub dir: OwnedFd,
    pub name: CString,
    pub found: Found,
}

/// What is at the resolved name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Nothing yet: the file is created.
    Nothing,
    /// A regular file: replaced by a rename.
    Regular,
    /// A device, pipe or socket, written in place: `magic` for a procfs link (opened by
    /// following it), else the inode found, checked again once it is opened.
    Special { magic: bool, dev: u64, ino: u64 },
}

impl Resolved {
    /// The absolute path of the resolved file, with no symbolic link in it (from the
    /// directory handle's /proc/self/fd link); None without /proc.
    pub fn real_path(&self) -> Option<PathBuf> {
        Some(dir_path_of(&self.dir)?.join(std::ffi::OsStr::from_bytes(self.name.as_bytes())))
    }

    /// Creates the missing file exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`), empty, with
    /// `mode` less the umask: a name someone planted meanwhile is an `AlreadyExists`.
    pub fn create_new(&self, mode: libc::mode_t) -> io::Result<()> {
        let flags = libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_WRONLY;
        open_at(Some(&self.dir), &self.name, flags, mode).map(drop)
    }

    /// Whether this process may write there, asked with faccessat(AT_EACCESS): the
    /// directory for a file made by rename, the device itself for one written in place.
    pub fn check_writable(&self) -> io::Result<()> {
        let name: &CStr = match self.found {
            Found::Special { .. } => &self.name,
            Found::Nothing | Found::Regular => c".",
        };
        // SAFETY: faccessat reads the NUL-terminated name relative to a descriptor this
        // value owns.
        let ok = unsafe {
            libc::faccessat(
                self.dir.as_raw_fd(),
                name.as_ptr(),
                libc::W_OK,
                libc::AT_EACCESS,
            )
        };
        if ok == 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        Err(match self.found {
            Found::Special { .. } => error,
            _ => io::Error::new(
                error.kind(),
                format!("its directory is not writable ({error})"),
            ),
        })
    }
}

/// Opens the directory `path` gives (following links in it: the user named it) and
/// judges its final name by the link rules of the module. The error is the reason, for
/// the caller to put after the path.
pub fn resolve(path: &Path) -> Result<Resolved, String> {
    let (dir_part, mut name) = split(path.as_os_str().as_bytes())?;
    let mut hops = 0;
    let mut dir =
        fs::open_dir(libc::AT_FDCWD, dir_part.as_bytes(), &mut hops).map_err(|error| {
            let shown = String::from_utf8_lossy(dir_part.as_bytes());
            match error.kind() {
                io::ErrorKind::NotFound => format!("directory '{shown}' does not exist"),
                _ => format!("its directory cannot be used: {error}"),
            }
        })?;
    // The link last followed, for messages.
    let mut via: Option<String> = None;
    while hops <= MAX_LINKS {
        let handle = match open_at(Some(&dir), &name, libc::O_PATH | libc::O_NOFOLLOW, 0) {
            Ok(handle) => handle,
            Err(error) if error.raw_os_error() == Some(libc::ENOENT) => {
                if let Some(fs) = kernel_filesystem(&dir) {
                    return Err(format!(
                        "its directory is on {fs}, not a place for a report"
                    ));
                }
                return match via {
                    None => Ok(Resolved {
                        dir,
                        name,
                        found: Found::Nothing,
                    }),
                    Some(text) => Err(format!(
                        "it is a symbolic link to '{text}', which does not exist; memscope \
                         does not create a file through a link"
                    )),
                };
            }
            Err(error) => return Err(format!("cannot look at it ({error})")),
        };
        let meta = fs::stat_fd(handle.as_raw_fd())
            .map_err(|error| format!("cannot look at it ({error})"))?;
        match meta.st_mode & libc::S_IFMT {
            libc::S_IFLNK => {
                let dir_meta = fs::stat_fd(dir.as_raw_fd())
                    .map_err(|error| format!("cannot look at its directory ({error})"))?;
                fs::judge_link(&meta, &dir_meta)?;
                if on_procfs(&dir) {
                    return Ok(Resolved {
                        dir,
                        name,
                        found: Found::Special {
                            magic: true,
                            dev: 0,
                            ino: 0,
                        },
                    });
                }
                let text = fs::read_link(&handle)
                    .map_err(|error| format!("cannot read the symbolic link ({error})"))?;
                let shown = String::from_utf8_lossy(text.as_bytes()).into_owned();
                let (target_dir, target_name) = split(text.as_bytes())
                    .map_err(|why| format!("it is a symbolic link to '{shown}', and {why}"))?;
                // A relative link is read from the directory holding it; openat ignores
                // the handle for an absolute one.
                hops += 1;
                dir = fs::open_dir(dir.as_raw_fd(), target_dir.as_bytes(), &mut hops).map_err(
                    |error| format!("it is a symbolic link to '{shown}', whose directory cannot be used: {error}"),
                )?;
                name = target_name;
                via = Some(shown);
            }
            libc::S_IFREG => {
                if let Some(fs) = kernel_filesystem(&dir) {
                    return Err(format!("it is a file of {fs}, not a place for a report"));
                }
                return Ok(Resolved {
                    dir,
                    name,
                    found: Found::Regular,
                });
            }
            libc::S_IFDIR => {
                return Err(match via {
                    None => "it is a directory; expected a file path".into(),
                    Some(text) => format!(
                        "it is a symbolic link to the directory '{text}'; expected a file path"
                    ),
                })
            }
            _ => {
                special_allowed(&meta)?;
                return Ok(Resolved {
                    dir,
                    name,
                    found: Found::Special {
                        magic: false,
                        dev: meta.st_dev,
                        ino: meta.st_ino,
                    },
                });
            }
        }
    }
    Err(format!(
        "it leads through more than {MAX_LINKS} symbolic links"
    ))
}

/// `DIR/NAME` → (DIR, NAME); `NAME` → (".", NAME); `/NAME` → ("/", NAME). The name must
/// be a file's: not empty, not `.` or `..`, no trailing `/`.
fn split(path: &[u8]) -> Result<(CString, CString), String> {
    let shown = String::from_utf8_lossy(path);
    if path.is_empty() {
        return Err("the path is empty; expected a file path".into());
    }
    let (dir, name) = match path.iter().rposition(|&b| b == b'/') {
        Some(0) => (&b"/"[..], &path[1..]),
        Some(at) => (&path[..at], &path[at + 1..]),
        None => (&b"."[..], path),
    };
    if name.is_empty() || name == b"." || name == b".." {
        return Err(format!("'{shown}' names a directory; expected a file path"));
    }
    let c =
        |bytes: &[u8]| CString::new(bytes).map_err(|_| format!("'{shown}' contains a NUL byte"));
    Ok((c(dir)?, c(name)?))
}

/// `openat` with `O_CLOEXEC`; `dir` None is the working directory.
fn open_at(
    dir: Option<&OwnedFd>,
    path: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    let dirfd = dir.map_or(libc::AT_FDCWD, AsRawFd::as_raw_fd);
    // SAFETY: openat reads the NUL-terminated path; `dirfd` is AT_FDCWD or a descriptor
    // the caller owns for the call.
    let fd = unsafe {
        libc::openat(
            dirfd,
            path.as_ptr(),
            flags | libc::O_CLOEXEC,
            libc::c_uint::from(mode),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat, so it is open and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The kernel's own file systems, where a file is an interface, never a report:
/// (statfs f_type, name).
const KERNEL_FILESYSTEMS: [(i64, &str); 9] = [
    (PROC_SUPER_MAGIC, "procfs"),
    (0x6265_6572, "sysfs"),
    (0x0027_e0eb, "cgroupfs"),
    (0x6367_7270, "cgroup2"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x7363_6673, "securityfs"),
    (0xcafe_4a11, "bpffs"),
    (0x6e73_6673, "nsfs"),
];

/// Which kernel file system `dir` is on, if one (see `KERNEL_FILESYSTEMS`).
fn kernel_filesystem(dir: &OwnedFd) -> Option<&'static str> {
    // SAFETY: an all-zero statfs is a valid value of the plain C struct.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: fstatfs fills the struct it is given from a descriptor `dir` owns.
    if unsafe { libc::fstatfs(dir.as_raw_fd(), &mut fs) } != 0 {
        return None;
    }
    // f_type is i64 here, a 32-bit integer on other targets.
    #[allow(clippy::useless_conversion)]
    let kind = i64::from(fs.f_type);
    KERNEL_FILESYSTEMS
        .iter()
        .find(|(magic, _)| *magic == kind)
        .map(|(_, name)| *name)
}

/// A device written in place must be one that takes a report: /dev/null, /dev/zero or
/// a terminal (a pipe or socket always is); /dev/full, /dev/mem, a disk are refused
/// before anything is measured.
fn special_allowed(meta: &libc::stat) -> Result<(), String> {
    let (major, minor) = (libc::major(meta.st_rdev), libc::minor(meta.st_rdev));
    match meta.st_mode & libc::S_IFMT {
        libc::S_IFCHR if (major, minor) == (1, 3) || (major, minor) == (1, 5) => Ok(()),
        // Virtual consoles and serial lines, /dev/tty and /dev/console, pseudo-terminals.
        libc::S_IFCHR if matches!(major, 4 | 5 | 136..=143) => Ok(()),
        libc::S_IFCHR => Err(format!(
            "it is the character device {major}:{minor}; memscope writes a report to a file, \
             a pipe, /dev/null or a terminal"
        )),
        libc::S_IFBLK => Err(format!(
            "it is the block device {major}:{minor}; memscope writes a report to a file, a \
             pipe, /dev/null or a terminal"
        )),
        _ => Ok(()),
    }
}

fn on_procfs(dir: &OwnedFd) -> bool {
    // SAFETY: an all-zero statfs is a valid value of the plain C struct.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: fstatfs fills the struct it is given from a descriptor `dir` owns.
    let ok = unsafe { libc::fstatfs(dir.as_raw_fd(), &mut fs) } == 0;
    // f_type is i64 here, a 32-bit integer on other targets.
    #[allow(clippy::useless_conversion)]
    let kind = i64::from(fs.f_type);
    ok && kind == PROC_SUPER_MAGIC
}

/// The directory's absolute path from its /proc/self/fd link: no symbolic link in it.
fn dir_path_of(dir: &OwnedFd) -> Option<PathBuf> {
    let path = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd())).ok()?;
    (path.is_absolute() && !path.as_os_str().as_bytes().ends_with(b" (deleted)")).then_some(path)
}

// ------------------------------------------------------------------------------------
// Writing.

/// What a temporary file's name has between the target's name and the random part.
const TEMP_MARK: &str = ".memscope-";
const TEMP_END: &str = ".tmp";
/// Characters of the random part of a temporary file's name.
const TEMP_RANDOM_LEN: usize = 12;
/// At most this many characters of the target's name go into the temporary name, so it
/// stays within NAME_MAX.
const TEMP_BASE_MAX: usize = 100;

/// `.NAME.memscope-RANDOM.tmp` for the target `name`.
pub fn temporary_name(name: &CStr) -> String {
    let base: String = String::from_utf8_lossy(name.to_bytes())
        .chars()
        .take(TEMP_BASE_MAX)
        .collect();
    format!(
        ".{base}{TEMP_MARK}{}{TEMP_END}",
        scratch::random_name(TEMP_RANDOM_LEN)
    )
}

/// Whether `name` is one `temporary_name` gives.
fn is_temporary_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(TEMP_END) else {
        return false;
    };
    let Some(at) = stem.rfind(TEMP_MARK) else {
        return false;
    };
    let random = &stem[at + TEMP_MARK.len()..];
    name.starts_with('.')
        && !name.contains('/')
        && random.len() == TEMP_RANDOM_LEN
        && random.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// A temporary file while it exists: removed on drop unless renamed, on a signal by the
/// cleanup action, after a SIGKILL by the next start (its journal entry).
struct Temporary {
    dir: Arc<OwnedFd>,
    name: CString,
    record: Option<Record>,
    token: Option<cleanup::Token>,
    renamed: bool,
}

impl Temporary {
    /// Creates a new temporary file beside `name` in `dir`, journaled first.
    fn create(dir: Arc<OwnedFd>, target: &CStr) -> io::Result<(Temporary, File)> {
        let dir_path = dir_path_of(&dir);
        for _ in 0..16 {
            let name = temporary_name(target);
            let c_name = CString::new(name.clone()).map_err(io::Error::other)?;
            // Journaled before it exists, so a SIGKILL right after the create is covered.
            let record = dir_path.as_ref().and_then(|d| {
                journal::record(Change::OutputTemp {
                    dir: d.clone(),
                    name: name.clone(),
                })
            });
            let flags = libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_WRONLY;
            match open_at(Some(&dir), &c_name, flags, 0o666) {
                Ok(fd) => {
                    let token = cleanup::install().ok().map(|()| {
                        let (dir, c_name, record) =
                            (Arc::clone(&dir), c_name.clone(), record.clone());
                        cleanup::register(
                            &format!("remove the temporary file {name}"),
                            Box::new(move || {
                                if fs::unlink_at(dir.as_raw_fd(), &c_name, 0).is_ok() {
                                    if let Some(record) = &record {
                                        let _ = record.remove();
                                    }
                                }
                            }),
                        )
                    });
                    let temporary = Temporary {
                        dir,
                        name: c_name,
                        record,
                        token,
                        renamed: false,
                    };
                    return Ok((temporary, File::from(fd)));
                }
                Err(error) => {
                    if let Some(record) = &record {
                        let _ = record.remove();
                    }
                    if error.raw_os_error() != Some(libc::EEXIST) {
                        return Err(error);
                    }
                }
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "16 random temporary names were all taken",
        ))
    }

    /// Renames the temporary file over `target` in the same directory.
    fn rename_over(&mut self, target: &CStr) -> io::Result<()> {
        let fd = self.dir.as_raw_fd();
        // SAFETY: renameat reads two NUL-terminated names relative to a descriptor this
        // value owns.
        if unsafe { libc::renameat(fd, self.name.as_ptr(), fd, target.as_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        self.renamed = true;
        Ok(())
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        let gone = self.renamed
            || match fs::unlink_at(self.dir.as_raw_fd(), &self.name, 0) {
                Ok(()) => true,
                Err(error) => error.kind() == io::ErrorKind::NotFound,
            };
        if let Some(token) = self.token.take() {
            cleanup::unregister(token);
        }
        // A file that could not be removed keeps its entry: the next start tries.
        if let (true, Some(record)) = (gone, self.record.take()) {
            let _ = record.remove();
        }
    }
}

/// Writes `bytes` to a new temporary file in the resolved directory, syncs it and
/// renames it over the resolved name.
fn write_atomically_in(resolved: Resolved, bytes: &[u8]) -> io::Result<()> {
    let Resolved { dir, name, .. } = resolved;
    let (mut temporary, mut file) = Temporary::create(Arc::new(dir), &name)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    temporary.rename_over(&name)
}

/// Opens a device, pipe or socket without following a link (a procfs link excepted) and
/// without blocking on a pipe nobody reads (waited for up to `wait`), checks it is what
/// was resolved, and writes `bytes` to it.
fn write_in_place(resolved: &Resolved, bytes: &[u8], wait: Duration) -> io::Result<()> {
    let Found::Special { magic, dev, ino } = resolved.found else {
        return Err(io::Error::other("not a device, pipe or socket"));
    };
    let mut flags = libc::O_WRONLY | libc::O_NONBLOCK | libc::O_NOCTTY;
    if !magic {
        flags |= libc::O_NOFOLLOW;
    }
    let deadline = Instant::now() + wait;
    let fd = loop {
        match open_at(Some(&resolved.dir), &resolved.name, flags, 0) {
            Ok(fd) => break fd,
            // A FIFO with no reader (O_NONBLOCK makes the open fail instead of waiting).
            Err(error) if error.raw_os_error() == Some(libc::ENXIO) => {
                if Instant::now() >= deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::WouldBlock,
                        format!(
                            "no process opened the pipe for reading within {} ms",
                            wait.as_millis()
                        ),
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(error) => return Err(error),
        }
    };
    if !magic {
        let meta = fs::stat_fd(fd.as_raw_fd())?;
        if (meta.st_dev, meta.st_ino) != (dev, ino) {
            return Err(io::Error::other(
                "it was replaced while it was being opened",
            ));
        }
    }
    // Blocking writes from here: a reader that is slow is waited for, as by any writer.
    // SAFETY: fcntl on a descriptor `fd` owns.
    unsafe {
        let status = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if status >= 0 {
            libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, status & !libc::O_NONBLOCK);
        }
    }
    File::from(fd).write_all(bytes)
}

// ------------------------------------------------------------------------------------
// Restoring after a SIGKILL.

/// Removes a temporary output file a killed memscope left, when it still looks like one:
/// an absolute directory (opened without following its last component), a name
/// `temporary_name` gives, a regular file with one link owned by this user. It is removed
/// with unlinkat relative to the directory's handle: a name swapped in meanwhile loses
/// its name, nothing is written through it.
pub fn restore_stale(entry: &Entry) -> Outcome {
    let Change::OutputTemp { dir, name } = &entry.change else {
        return Outcome::Clean;
    };
    let shown = dir.join(name);
    if !dir.is_absolute() || !is_temporary_name(name) {
        return Outcome::LeftAlone(format!(
            "left {} alone: it is not a name memscope gives its temporary output files",
            shown.display()
        ));
    }
    let (Ok(c_dir), Ok(c_name)) = (
        CString::new(dir.as_os_str().as_bytes()),
        CString::new(name.as_bytes()),
    ) else {
        return Outcome::LeftAlone(format!("left {} alone: a NUL in its name", shown.display()));
    };
    let handle = match open_at(
        None,
        &c_dir,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        0,
    ) {
        Ok(handle) => handle,
        Err(error) if error.raw_os_error() == Some(libc::ENOENT) => return Outcome::Clean,
        Err(error) => {
            return Outcome::LeftAlone(format!(
                "left {} alone: its directory cannot be opened as one ({error})",
                shown.display()
            ))
        }
    };
    let meta = match fs::stat_at(handle.as_raw_fd(), &c_name) {
        Ok(meta) => meta,
        Err(error) if error.raw_os_error() == Some(libc::ENOENT) => return Outcome::Clean,
        Err(error) => {
            return Outcome::Failed(format!("could not look at {} ({error})", shown.display()))
        }
    };
    let euid = journal::effective_uid();
    if meta.st_mode & libc::S_IFMT != libc::S_IFREG || meta.st_uid != euid || meta.st_nlink != 1 {
        return Outcome::LeftAlone(format!(
            "left {} alone: it is not a regular file of uid {euid} with one name, as \
             memscope's temporary file was",
            shown.display()
        ));
    }
    let who = journal::killed(entry);
    match fs::unlink_at(handle.as_raw_fd(), &c_name, 0) {
        Ok(()) => Outcome::Restored(format!(
            "removed the temporary output file {} ({who} while writing it)",
            shown.display()
        )),
        Err(error) if error.raw_os_error() == Some(libc::ENOENT) => Outcome::Clean,
        Err(error) => Outcome::Failed(format!(
            "could not remove the temporary output file {} ({who} while writing it): {error}",
            shown.display()
        )),
    }
}

#[cfg(test)]
mod tests;
