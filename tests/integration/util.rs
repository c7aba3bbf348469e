//! What the integration tests share: the command builder for the real binary, the lock
//! that keeps measuring and machine-wide tests apart, the hugetlbfs pool guard, a child
//! process that cannot outlive its test, polling, and the measured latency report that
//! several areas read.
//!
//! All areas run in one test binary, so their tests run in parallel threads of one
//! process (before, each file was its own binary and the files ran one after another).
//! Two kinds of test must therefore not overlap, and take [`exclusive`]:
//! - tests that measure, or compare timings within a run (a `--quick` measurement, the
//!   sweep example's p-values, `pages` sampling a demo): a second measurement on the
//!   other CPU of a small machine disturbs their trials;
//! - tests that change or read state the whole machine shares: the hugetlbfs pool
//!   (through [`PoolGuard`], which also holds the lock file other test processes take),
//!   DAMON's kdamonds, a memory cgroup.
//!
//! No test sets an environment variable or the current directory of this process (both
//! are process-wide): each gives its own to the `Command` it starts (`.env`,
//! `.current_dir`), and a test that writes a journal names its own with
//! `MEMSCOPE_JOURNAL_DIR`.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

/// The memscope binary under test.
pub const BINARY: &str = env!("CARGO_BIN_EXE_memscope");

/// The binary with `args`.
pub fn memscope(args: &[&str]) -> Command {
    let mut command = Command::new(BINARY);
    // Text assertions read unwrapped lines; the width tests set COLUMNS themselves.
    command.env("COLUMNS", "1000").args(args);
    command
}

/// The binary with the arguments of `line`, written as on a shell line but split at
/// spaces only (an argument holding a space is added with `arg`).
pub fn memscope_line(line: &str) -> Command {
    let mut command = Command::new(BINARY);
    command.env("COLUMNS", "1000").args(line.split_whitespace());
    command
}

/// `memscope sweep` with `args`, run in `dir` (where its builds and benchmarks run).
pub fn sweep_in(dir: &Path, args: &[&str]) -> Command {
    let mut command = memscope(&["sweep"]);
    command.current_dir(dir).args(args);
    command
}

/// A fresh temporary directory, removed when dropped.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// Bytes a command printed, as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One JSON document (a command's stdout or a report file).
pub fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("one JSON document")
}

/// The JSON report a measuring command writes on stdout, run one timing-sensitive test
/// at a time.
pub fn measured_json(line: &str) -> Value {
    let _one_at_a_time = exclusive();
    json_of(&memscope_line(line).assert().success().get_output().stdout)
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

static EXCLUSIVE: Mutex<()> = Mutex::new(());

/// Held for the whole of a test that measures or touches machine-wide state (see the
/// module comment): such tests run one at a time. A test that failed while holding it
/// must not fail the others, hence `into_inner` on a poisoned lock. Not reentrant: a
/// test holding it must not call a fixture that takes it ([`latency_report`]).
pub fn exclusive() -> MutexGuard<'static, ()> {
    EXCLUSIVE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub const POOL_2M: &str = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
pub const FREE_2M: &str = "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages";

/// A number a sysfs file holds.
pub fn read_count(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A `--max-size` (a power of two, at least 8 MiB) whose buffer needs more 2 MiB pages
/// than the pool has free now, so that a `--reserve-hugepages` run grows the pool (a run
/// that finds its pages is journaled as the pool's user too, without growing it).
pub fn max_size_beyond_the_free_pages() -> String {
    let free = read_count(FREE_2M).unwrap_or(0);
    let mib = ((free + 4) * 2).next_power_of_two().max(8);
    format!("{mib}M")
}

/// The real 2 MiB pool as found, held against every other test that uses it: this
/// process's [`exclusive`] lock, then the lock file the unit tests and other test
/// processes (another work tree's) take. Set back to its size as found when dropped
/// (after a failed assertion too), then both locks released.
pub struct PoolGuard {
    pub before: u64,
    _file: Option<std::fs::File>,
    _exclusive: MutexGuard<'static, ()>,
}

impl PoolGuard {
    /// None (having said why) unless this process may resize the real 2 MiB pool.
    pub fn take() -> Option<PoolGuard> {
        if !is_root() {
            eprintln!("skipped: resizing the hugetlbfs pool needs root");
            return None;
        }
        if let Err(error) = OpenOptions::new().write(true).open(POOL_2M) {
            eprintln!("skipped: {POOL_2M} is not writable here ({error})");
            return None;
        }
        PoolGuard::lock()
    }

    /// The locks and the pool's size now, whoever this process is; None (having said
    /// so) without a 2 MiB pool.
    pub fn lock() -> Option<PoolGuard> {
        let exclusive = exclusive();
        let path = std::env::temp_dir().join("memscope-hugepage-pool-tests.lock");
        // Another user's lock file cannot be opened for writing: this process cannot
        // resize the pool then, and only this process's own tests are kept out.
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .ok();
        if let Some(file) = &file {
            // SAFETY: flock on a descriptor this function owns.
            assert_eq!(unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) }, 0);
        }
        let Some(before) = read_count(POOL_2M) else {
            eprintln!("skipped: this kernel has no 2 MiB hugetlbfs pool");
            return None;
        };
        Some(PoolGuard {
            before,
            _file: file,
            _exclusive: exclusive,
        })
    }
}

impl Drop for PoolGuard {
    fn drop(&mut self) {
        if read_count(POOL_2M) != Some(self.before) && is_root() {
            eprintln!("test cleanup: setting the pool back to {}", self.before);
            let _ = std::fs::write(POOL_2M, format!("{}\n", self.before));
        }
    }
}

/// A started child (memscope, mostly) that is SIGKILLed and reaped if its test ends
/// early; with its process group when it leads one (`process_group(0)`), so that what it
/// started goes too.
pub struct ChildGuard {
    child: Child,
    reaped: bool,
}

impl ChildGuard {
    pub fn spawn(command: &mut std::process::Command) -> ChildGuard {
        ChildGuard {
            child: command.spawn().expect("the child starts"),
            reaped: false,
        }
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Its exit status if it has ended (reaped then), without waiting.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        let status = self.child.try_wait().unwrap();
        self.reaped |= status.is_some();
        status
    }

    /// Waits for it to end and reaps it.
    pub fn wait(&mut self) -> ExitStatus {
        let status = self.child.wait().unwrap();
        self.reaped = true;
        status
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        // Only while unreaped does its pid (and a group of that id) surely name it.
        if !self.reaped {
            let pid = self.child.id() as libc::pid_t;
            // SAFETY: kill has no memory-safety preconditions; a group with our unreaped
            // child's pid as its id can only be the child's own (ESRCH when it leads none).
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
                libc::kill(pid, libc::SIGKILL);
            }
            let _ = self.child.wait();
        }
    }
}

/// Polls `ready` every millisecond until it holds or `limit` passes; whether it held.
pub fn wait_for(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    ready()
}

/// One measured latency report, shared by the areas that read reports back (`compare`,
/// `history`, hostile input): `latency --quick --max-size 16M --save` with its JSON
/// report, its Prometheus file and its saved history run, in a directory kept for the
/// whole test run.
pub struct LatencyReport {
    pub dir: PathBuf,
    /// The JSON report.
    pub json: PathBuf,
    /// The Prometheus text file.
    pub prometheus: PathBuf,
    /// The history database the run was saved into (as run 1).
    pub history: PathBuf,
}

/// The [`LatencyReport`], measured on first use (under [`exclusive`]).
pub fn latency_report() -> &'static LatencyReport {
    static REPORT: OnceLock<LatencyReport> = OnceLock::new();
    REPORT.get_or_init(|| {
        let dir = temp_dir().keep();
        let report = LatencyReport {
            json: dir.join("a.json"),
            prometheus: dir.join("memscope.prom"),
            history: dir.join("saved.sqlite3"),
            dir,
        };
        let _one_at_a_time = exclusive();
        memscope(&["latency", "--quick", "--max-size", "16M", "--save"])
            .arg("--json")
            .arg(&report.json)
            .arg("--prometheus")
            .arg(&report.prometheus)
            .env("MEMSCOPE_HISTORY", &report.history)
            .assert()
            .success()
            .stdout(predicate::str::contains("Saved as run 1"));
        report
    })
}

/// A report file as JSON.
pub fn read_json(path: &Path) -> Value {
    json_of(&std::fs::read(path).unwrap())
}
