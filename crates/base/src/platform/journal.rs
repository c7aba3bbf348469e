//! A journal of the changes memscope makes to the system (a grown hugetlbfs pool, its own
//! DAMON kdamond, a scratch directory, a resctrl group, weighted-interleave weights), written before each change and cleared once the
//! change is undone, so that what a SIGKILL, an OOM kill, a crash or a power loss left
//! changed can be undone by the next memscope start (`crate::restore`).
//!
//! One JSON file per entry, `PID-STARTTIME-N.json`, in one directory:
//! `$MEMSCOPE_JOURNAL_DIR` when set; else `/run/memscope/journal` when /run is writable
//! (root); else `$XDG_RUNTIME_DIR/memscope/journal`; else `/tmp/memscope-$UID/journal`.
//! The directories are made mode 0700 and an existing one is used only when it belongs to
//! this user and nobody else can write to it. Each file is written whole to a temporary
//! name, synced and renamed, so a reader sees an old entry or a new one, never half of
//! one; concurrent processes never write the same file. An entry names its process by pid,
//! start time (/proc/PID/stat field 22) and boot id, so a pid reused by another process,
//! or the same pid after a reboot, is not mistaken for the memscope that wrote it.
//!
//! `Journal::lock` (flock on `.lock`) is held by a process while it reads, journals and
//! makes a change that another process might be undoing (a pool, a kdamond) and by the
//! restoration while it runs, so the two never interleave.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Once, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

/// Overrides where the journal is kept (tests; systems without /run or /tmp).
pub(crate) const DIR_ENV: &str = "MEMSCOPE_JOURNAL_DIR";

/// The entry format written; a reader takes entries of this format only.
pub const FORMAT: u32 = 1;

/// How long a process waits for another one's hold on the journal lock.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// One change memscope made, and the process that made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub format: u32,
    pub pid: u32,
    /// The process's start time, in clock ticks after boot (/proc/PID/stat field 22).
    pub start_time: u64,
    /// /proc/sys/kernel/random/boot_id when the entry was written.
    pub boot_id: String,
    /// When the entry was first written (RFC 3339, UTC).
    pub time: String,
    pub change: Change,
}

/// What was changed, with what it takes to recognise it and undo it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// A hugetlbfs pool used by a run (grown by it or not): its `nr_hugepages` file, the
    /// persistent size to set it back to (the size before the first of several concurrent
    /// runs, handed on by each run that ends while others still use the pool), every
    /// value memscope wrote or read back after a write (oldest first; empty for a run that
    /// only used pages already there), and the pages the run uses. The pool is set back
    /// only by the last run using it, and only while it holds one of the values set.
    HugepagePool {
        path: PathBuf,
        page_bytes: u64,
        previous: u64,
        set: Vec<u64>,
        #[serde(default)]
        pages: u64,
    },
    /// A kdamond memscope created through DAMON's sysfs interface at `admin`: its index,
    /// the `nr_kdamonds` before, and the configuration it recognises it by.
    Kdamond {
        admin: PathBuf,
        index: u64,
        previous_count: u64,
        target_pid: u32,
        sample_us: u64,
        aggr_us: u64,
    },
    /// A scratch directory (absolute path) whose name starts with `prefix`.
    ScratchDir { path: PathBuf, prefix: String },
    /// A temporary output file `name` (`.NAME.memscope-RANDOM.tmp`) in the directory
    /// `dir` (absolute, no link in it), between its creation and its rename.
    OutputTemp { dir: PathBuf, name: String },
    /// A resctrl group memscope made (absolute path: the resctrl root and
    /// `memscope-PID-N`); undone by its rmdir, which hands its tasks back to the default
    /// group.
    ResctrlGroup { path: PathBuf },
    /// Weighted-interleave weights memscope wrote under `dir`: each file's name with what
    /// it held before and what memscope wrote (`platform::interleave_weights`).
    InterleaveWeights {
        dir: PathBuf,
        previous: Vec<(String, String)>,
        set: Vec<(String, String)>,
    },
}

/// An entry in the journal and its file; removing it says the change is undone.
#[derive(Debug, Clone)]
pub struct Record {
    file: PathBuf,
    pub entry: Entry,
}

impl Record {
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Changes the recorded change and rewrites the entry (atomically).
    pub fn update(&mut self, change: impl FnOnce(&mut Change)) -> io::Result<()> {
        change(&mut self.entry.change);
        write_entry(&self.file, &self.entry)
    }

    /// Reads the entry again: another process may have rewritten it (a memscope that ended
    /// hands its pool's base on to the runs still using the pool).
    pub fn reload(&mut self) -> io::Result<()> {
        self.entry = read_entry(&self.file).map_err(|why| {
            io::Error::other(format!("cannot read {} ({why})", self.file.display()))
        })?;
        Ok(())
    }

    /// Removes the entry; one already gone is fine.
    pub fn remove(&self) -> io::Result<()> {
        match fs::remove_file(&self.file) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => Err(io::Error::new(
                error.kind(),
                format!("cannot remove {} ({error})", self.file.display()),
            )),
            _ => Ok(()),
        }
    }
}

/// What a journal directory holds.
#[derive(Debug, Default)]
pub struct Listing {
    /// Entries, oldest first.
    pub records: Vec<Record>,
    /// Files that are not entries of this format, with why.
    pub unreadable: Vec<(PathBuf, String)>,
    /// Temporary files of writers that are gone (a kill between write and rename).
    pub leftovers: Vec<PathBuf>,
}

/// A journal directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Journal {
    dir: PathBuf,
}

impl Journal {
    pub fn at(dir: &Path) -> Journal {
        Journal {
            dir: dir.to_path_buf(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the directory (mode 0700) if needed; an existing one must be safe to use.
    pub fn prepare(&self) -> io::Result<()> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|error| {
                io::Error::new(
                    error.kind(),
                    format!("cannot create {} ({error})", self.dir.display()),
                )
            })?;
        // The `memscope` directory above (in /tmp, say) must be this user's too, or its
        // owner could swap the journal for another.
        if let Some(parent) = self.dir.parent().filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("memscope"))
        }) {
            check_private(parent)?;
        }
        check_private(&self.dir)
    }

    /// Writes an entry for `change` by this process, before the change is made.
    pub fn record(&self, change: Change) -> io::Result<Record> {
        self.record_as(this_process(), change)
    }

    /// Writes an entry for `change` by process `me` (this process, or a process the tests
    /// make up to stand for another memscope).
    pub(crate) fn record_as(&self, me: &Identity, change: Change) -> io::Result<Record> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        self.prepare()?;
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let record = Record {
            file: self
                .dir
                .join(format!("{}-{}-{n}.json", me.pid, me.start_time)),
            entry: Entry {
                format: FORMAT,
                pid: me.pid,
                start_time: me.start_time,
                boot_id: me.boot_id.clone(),
                time: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
                change,
            },
        };
        write_entry(&record.file, &record.entry)?;
        Ok(record)
    }

    /// Every entry, oldest first, and what else is there. A missing directory is empty.
    pub fn list(&self) -> io::Result<Listing> {
        let mut listing = Listing::default();
        let dir = match fs::read_dir(&self.dir) {
            Ok(dir) => dir,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(listing),
            Err(error) => {
                return Err(io::Error::new(
                    error.kind(),
                    format!("cannot list {} ({error})", self.dir.display()),
                ))
            }
        };
        for item in dir {
            let path = item?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if name == LOCK_FILE {
                continue;
            }
            if let Some(writer) = name.strip_prefix('.').and_then(temporary_writer) {
                if System::current().owner_of(writer.0, writer.1, "") != Owner::Running {
                    listing.leftovers.push(path);
                }
                continue;
            }
            if !name.ends_with(".json") {
                continue;
            }
            match read_entry(&path) {
                Ok(entry) => listing.records.push(Record { file: path, entry }),
                Err(why) => listing.unreadable.push((path, why)),
            }
        }
        listing
            .records
            .sort_by(|a, b| (&a.entry.time, &a.file).cmp(&(&b.entry.time, &b.file)));
        Ok(listing)
    }

    /// Takes the journal's lock, waiting up to `wait` for another process to let it go.
    pub fn lock(&self, wait: Duration) -> io::Result<Lock> {
        self.prepare()?;
        let path = self.dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|error| {
                io::Error::new(
                    error.kind(),
                    format!("cannot open {} ({error})", path.display()),
                )
            })?;
        let deadline = Instant::now() + wait;
        loop {
            // SAFETY: flock on a descriptor `file` owns and keeps open.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(Lock { _file: file });
            }
            let error = io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(io::Error::new(
                    error.kind(),
                    format!("cannot lock {} ({error})", path.display()),
                ));
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "{} is held by another memscope for more than {} s",
                        path.display(),
                        wait.as_secs()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

const LOCK_FILE: &str = ".lock";

/// The journal's lock, released when dropped (the file closes).
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

/// `PID-START-N.json.tmp` → (pid, start time).
fn temporary_writer(name: &str) -> Option<(u32, u64)> {
    let stem = name.strip_suffix(".json.tmp")?;
    let mut parts = stem.split('-');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Writes `entry` to a temporary file beside `file`, syncs it and renames it over `file`.
fn write_entry(file: &Path, entry: &Entry) -> io::Result<()> {
    let annotate = |error: io::Error| {
        io::Error::new(
            error.kind(),
            format!("cannot write {} ({error})", file.display()),
        )
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
    let temporary = dir.join(format!(".{name}.tmp"));
    let mut text = serde_json::to_vec_pretty(entry).map_err(io::Error::other)?;
    text.push(b'\n');
    let mut out = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(annotate)?;
    out.write_all(&text)
        .and_then(|()| out.sync_all())
        .and_then(|()| fs::rename(&temporary, file))
        .map_err(|error| {
            let _ = fs::remove_file(&temporary);
            annotate(error)
        })?;
    // The rename itself survives a power loss once the directory is synced.
    File::open(dir).and_then(|d| d.sync_all()).map_err(annotate)
}

fn read_entry(path: &Path) -> Result<Entry, String> {
    let text = fs::read(path).map_err(|error| error.to_string())?;
    let value: serde_json::Value =
        serde_json::from_slice(&text).map_err(|error| error.to_string())?;
    // The format first: another memscope version's entry may have other fields.
    match &value["format"] {
        serde_json::Value::Number(n) if n.as_u64() == Some(u64::from(FORMAT)) => {}
        other => {
            return Err(format!(
                "entry format {other}, this memscope reads format {FORMAT}"
            ))
        }
    }
    serde_json::from_value(value).map_err(|error| error.to_string())
}

/// Fails unless `dir` is a directory of this user that nobody else can write to: entries
/// in a directory someone else controls could make memscope remove or write anything.
fn check_private(dir: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(dir)?;
    let euid = effective_uid();
    let why = if !meta.is_dir() {
        Some("is not a directory".to_string())
    } else if meta.uid() != euid {
        Some(format!("belongs to uid {}, not {euid}", meta.uid()))
    } else if meta.mode() & 0o022 != 0 {
        Some(format!(
            "can be written by others (mode {:o})",
            meta.mode() & 0o777
        ))
    } else {
        None
    };
    match why {
        Some(why) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} {why}, so memscope keeps no journal there",
                dir.display()
            ),
        )),
        None => Ok(()),
    }
}

pub use crate::fs::effective_uid;

/// Where the journal is kept for this user (see the module's documentation); the
/// directory may not exist yet.
pub(crate) fn default_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if cfg!(test) {
        // Unit tests change fake pools and trees; their entries stay out of the real one.
        return std::env::temp_dir().join(format!("memscope-unit-tests-{}", effective_uid()));
    }
    let run = Path::new("/run");
    // SAFETY: access reads a NUL-terminated path and has no other preconditions.
    if unsafe { libc::access(c"/run".as_ptr(), libc::W_OK) } == 0 && run.is_dir() {
        return run.join("memscope").join("journal");
    }
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute() && d.is_dir())
    {
        return runtime.join("memscope").join("journal");
    }
    PathBuf::from(format!("/tmp/memscope-{}", effective_uid())).join("journal")
}

/// The process's journal, at `default_dir`.
pub fn journal() -> Journal {
    Journal::at(&default_dir())
}

/// Journals a change this process is about to make. Without a journal the change is
/// still made: the first failure is said once, as a warning naming what a SIGKILL would
/// leave changed.
pub fn record(change: Change) -> Option<Record> {
    let what = describe(&change);
    journal()
        .record(change)
        .map_err(|error| warn_once(&error, &what))
        .ok()
}

/// Holds the journal's lock while a change is read, journaled and made, so a restoring
/// memscope never undoes it halfway. None (after the once-only warning) without one.
pub fn lock_for_change(what: &str) -> Option<Lock> {
    journal()
        .lock(LOCK_WAIT)
        .map_err(|error| warn_once(&error, what))
        .ok()
}

/// Says once per process that changes go unjournaled, and what a SIGKILL would leave.
pub(crate) fn warn_once(error: &io::Error, what: &str) {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        eprintln!(
            "memscope: warning: no journal of the system changes ({error}); if memscope is \
             killed by SIGKILL now, {what} stays changed until set back by hand"
        );
    });
}

/// "the 2 MiB hugetlbfs pool", "DAMON kdamond 0", "the scratch directory /tmp/memscope-…".
pub fn describe(change: &Change) -> String {
    match change {
        Change::HugepagePool { page_bytes, .. } => {
            format!("the {} hugetlbfs pool", crate::units::Bytes(*page_bytes))
        }
        Change::Kdamond { index, .. } => format!("DAMON kdamond {index}"),
        Change::ScratchDir { path, .. } => format!("the scratch directory {}", path.display()),
        Change::OutputTemp { dir, name } => {
            format!("the temporary output file {}", dir.join(name).display())
        }
        Change::ResctrlGroup { path } => format!("the resctrl group {}", path.display()),
        Change::InterleaveWeights { dir, .. } => {
            format!("the weighted-interleave weights in {}", dir.display())
        }
    }
}

/// A process as the journal names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub pid: u32,
    pub start_time: u64,
    pub boot_id: String,
}

/// This process, read once.
pub fn this_process() -> &'static Identity {
    static ME: OnceLock<Identity> = OnceLock::new();
    ME.get_or_init(|| {
        let pid = std::process::id();
        Identity {
            pid,
            start_time: start_time(Path::new("/proc"), pid).unwrap_or(0),
            boot_id: boot_id(Path::new("/proc")),
        }
    })
}

/// Field 22 of /proc/PID/stat: when the process started, in clock ticks after boot; None
/// when there is no such process or it has exited and waits to be reaped (a zombie holds
/// nothing any more). The command name (field 2) may hold spaces and parentheses, so
/// fields are counted from after its last ')'.
pub fn start_time(proc_root: &Path, pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(proc_root.join(pid.to_string()).join("stat")).ok()?;
    parse_start_time(&stat)
}

fn parse_start_time(stat: &str) -> Option<u64> {
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    // Field 3 (state) is the first after the name, so field 22 is the 19th after it.
    if matches!(fields.next()?, "Z" | "X" | "x") {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

fn boot_id(proc_root: &Path) -> String {
    fs::read_to_string(proc_root.join("sys/kernel/random/boot_id"))
        .map(|id| id.trim().to_string())
        .unwrap_or_default()
}

/// Whether the process that wrote an entry is still there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The same pid with the same start time, in this boot.
    Running,
    /// Gone in this boot (killed, crashed): what it changed may still be changed.
    Gone,
    /// Written before the last boot: kernel state (pools, kdamonds) was reset since.
    EarlierBoot,
}

/// The running system as stale entries are judged against it.
#[derive(Debug, Clone)]
pub struct System {
    pub proc_root: PathBuf,
    pub boot_id: String,
}

impl System {
    pub fn current() -> System {
        System {
            proc_root: PathBuf::from("/proc"),
            boot_id: this_process().boot_id.clone(),
        }
    }

    pub fn owner(&self, entry: &Entry) -> Owner {
        self.owner_of(entry.pid, entry.start_time, &entry.boot_id)
    }

    fn owner_of(&self, pid: u32, started: u64, boot: &str) -> Owner {
        if !boot.is_empty() && !self.boot_id.is_empty() && boot != self.boot_id {
            return Owner::EarlierBoot;
        }
        match start_time(&self.proc_root, pid) {
            // A start time of 0 means the writer could not read its own: the pid decides.
            Some(now) if now == started || started == 0 => Owner::Running,
            _ => Owner::Gone,
        }
    }
}

/// What became of one stale entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The change was undone; the sentence says what was done.
    Restored(String),
    /// Nothing was left to undo (never made, undone already, reset by a reboot).
    Clean,
    /// Left as it is because it is no longer recognisably memscope's; why.
    LeftAlone(String),
    /// Undoing failed; why. The entry stays for the next start to try again.
    Failed(String),
    /// A running memscope holds the same thing; the entry waits until it is done.
    Deferred,
}

impl Outcome {
    /// Whether the entry is done with (and is removed).
    pub fn settles(&self) -> bool {
        !matches!(self, Outcome::Failed(_) | Outcome::Deferred)
    }
}

/// "memscope pid 1234 was killed": how a message names the process an entry outlived.
pub fn killed(entry: &Entry) -> String {
    format!("memscope pid {} was killed", entry.pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool_change(previous: u64, set: u64) -> Change {
        Change::HugepagePool {
            path: PathBuf::from("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"),
            page_bytes: 2 << 20,
            previous,
            set: vec![set],
            pages: 1,
        }
    }

    /// A fake /proc with process `pid` started at `start`.
    fn fake_proc(entries: &[(u32, u64)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for &(pid, start) in entries {
            let dir = root.path().join(pid.to_string());
            fs::create_dir_all(&dir).unwrap();
            let mut fields = vec!["0"; 18];
            let start = start.to_string();
            fields.push(&start);
            fields.push("0");
            fs::write(
                dir.join("stat"),
                format!("{pid} (a (weird) name) S {}\n", fields.join(" ")),
            )
            .unwrap();
        }
        root
    }

    #[test]
    fn the_start_time_is_field_22_even_after_a_name_with_parentheses() {
        let proc = fake_proc(&[(7, 123_456)]);
        assert_eq!(start_time(proc.path(), 7), Some(123_456));
        assert_eq!(start_time(proc.path(), 8), None);
        let me = this_process();
        assert_eq!(me.pid, std::process::id());
        assert!(me.start_time > 0, "{me:?}");
        // The test binary's name has no spaces, so a plain split finds field 22 too.
        let stat = fs::read_to_string("/proc/self/stat").unwrap();
        let plain: u64 = stat.split_whitespace().nth(21).unwrap().parse().unwrap();
        assert_eq!(me.start_time, plain);
        assert_eq!(parse_start_time("1 (x) S 1 2"), None);
        let zombie = fs::read_to_string(proc.path().join("7/stat"))
            .unwrap()
            .replace(") S ", ") Z ");
        assert_eq!(parse_start_time(&zombie), None);
    }

    #[test]
    fn entries_are_written_updated_listed_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::at(&dir.path().join("memscope/journal"));
        let mut first = journal.record(pool_change(0, 64)).unwrap();
        let second = journal
            .record(Change::ScratchDir {
                path: PathBuf::from("/tmp/memscope-files-abc"),
                prefix: "memscope-files-".into(),
            })
            .unwrap();
        assert_ne!(first.file(), second.file());
        let mode = fs::metadata(journal.dir()).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let text = fs::read_to_string(first.file()).unwrap();
        assert!(text.contains("\"kind\": \"hugepage_pool\""), "{text}");
        assert!(
            text.contains(&format!("\"pid\": {}", std::process::id())),
            "{text}"
        );

        first
            .update(|change| {
                if let Change::HugepagePool { set, .. } = change {
                    set.push(128);
                }
            })
            .unwrap();
        let listing = journal.list().unwrap();
        assert_eq!(listing.records.len(), 2);
        assert!(listing.unreadable.is_empty() && listing.leftovers.is_empty());
        let listed = listing
            .records
            .iter()
            .find(|r| r.file() == first.file())
            .unwrap();
        assert_eq!(listed.entry, first.entry);
        assert!(matches!(&listed.entry.change,
            Change::HugepagePool { set, .. } if set == &[64, 128]));
        // No temporary file is left by the atomic writes.
        let names: Vec<String> = fs::read_dir(journal.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");

        first.remove().unwrap();
        first.remove().unwrap();
        let listing = journal.list().unwrap();
        assert_eq!(listing.records.len(), 1);
        assert_eq!(listing.records[0].file(), second.file());
    }

    #[test]
    fn a_missing_journal_is_empty_and_strangers_files_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::at(&dir.path().join("absent"));
        assert!(journal.list().unwrap().records.is_empty());
        journal.prepare().unwrap();
        fs::write(journal.dir().join("1-2-0.json"), "{not json").unwrap();
        fs::write(journal.dir().join("notes.txt"), "ignored").unwrap();
        // A temporary file of a writer that is gone (pid 0 never is one).
        fs::write(journal.dir().join(".0-5-0.json.tmp"), "{").unwrap();
        let listing = journal.list().unwrap();
        assert!(listing.records.is_empty());
        assert_eq!(listing.unreadable.len(), 1);
        assert_eq!(listing.leftovers.len(), 1);
    }

    #[test]
    fn a_directory_others_can_write_to_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        DirBuilder::new().mode(0o777).create(&shared).unwrap();
        fs::set_permissions(&shared, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        let error = Journal::at(&shared).record(pool_change(0, 1)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("can be written by others (mode 777)"),
            "{error}"
        );
        assert_eq!(fs::read_dir(&shared).unwrap().count(), 0);
    }

    #[test]
    fn owners_are_told_apart_by_start_time_and_boot() {
        let proc = fake_proc(&[(100, 5000)]);
        let system = System {
            proc_root: proc.path().to_path_buf(),
            boot_id: "boot-a".into(),
        };
        let entry = |pid: u32, start_time: u64, boot: &str| Entry {
            format: FORMAT,
            pid,
            start_time,
            boot_id: boot.into(),
            time: "2026-01-01T00:00:00.000Z".into(),
            change: pool_change(0, 1),
        };
        assert_eq!(system.owner(&entry(100, 5000, "boot-a")), Owner::Running);
        // The pid was reused by a process started later.
        assert_eq!(system.owner(&entry(100, 4000, "boot-a")), Owner::Gone);
        assert_eq!(system.owner(&entry(101, 5000, "boot-a")), Owner::Gone);
        assert_eq!(
            system.owner(&entry(100, 5000, "boot-b")),
            Owner::EarlierBoot
        );
        // This very process is running.
        let me = this_process();
        let real = System::current();
        assert_eq!(
            real.owner(&entry(me.pid, me.start_time, &me.boot_id)),
            Owner::Running
        );
        assert_eq!(
            real.owner(&entry(me.pid, me.start_time + 1, &me.boot_id)),
            Owner::Gone
        );
    }

    #[test]
    fn the_lock_is_exclusive_between_holders_and_waits_only_so_long() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::at(dir.path());
        let held = journal.lock(Duration::ZERO).unwrap();
        // A second open file description is a second holder, as another process would be.
        let error = journal.lock(Duration::from_millis(30)).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut, "{error}");
        drop(held);
        assert!(journal.lock(Duration::ZERO).is_ok());
    }

    #[test]
    fn outcomes_that_settle_an_entry() {
        assert!(Outcome::Restored("x".into()).settles());
        assert!(Outcome::Clean.settles());
        assert!(Outcome::LeftAlone("x".into()).settles());
        assert!(!Outcome::Failed("x".into()).settles());
        assert!(!Outcome::Deferred.settles());
    }
}
