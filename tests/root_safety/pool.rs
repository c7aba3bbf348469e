//! The hugetlbfs pool as shared state between concurrent memscopes (issue 25, row 4): two
//! `latency --pages 2m --reserve-hugepages` runs started 0.4 s apart, sharing one journal,
//! leave the real 2 MiB pool at its starting size and no journal entry. Needs root and a
//! 2 MiB pool; skipped otherwise. The pool is set back to its starting size whatever
//! happens (after a failed assertion too).

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::time::Duration;

const POOL_2M: &str = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
const FREE_2M: &str = "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages";
const RESERVING: &[&str] = &["latency", "--quick", "--pages", "2m", "--reserve-hugepages"];

/// A `--max-size` (a power of two, at least 8 MiB) whose buffer needs more 2 MiB pages
/// than the pool has free now, so that the runs grow it.
fn max_size_beyond_the_free_pages() -> String {
    let free: u64 = std::fs::read_to_string(FREE_2M)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0);
    let mib = ((free + 4) * 2).next_power_of_two().max(8);
    format!("{mib}M")
}

fn read_count() -> Option<u64> {
    std::fs::read_to_string(POOL_2M).ok()?.trim().parse().ok()
}

/// The real 2 MiB pool, locked against other tests that resize it (the lock file the unit
/// tests and tests/faults.rs take), set back to its size as found when dropped.
struct PoolGuard {
    before: u64,
    _lock: std::fs::File,
}

impl PoolGuard {
    fn take() -> Option<PoolGuard> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: resizing the hugetlbfs pool needs root");
            return None;
        }
        if let Err(error) = OpenOptions::new().write(true).open(POOL_2M) {
            eprintln!("skipped: {POOL_2M} is not writable here ({error})");
            return None;
        }
        let path = std::env::temp_dir().join("memscope-hugepage-pool-tests.lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .unwrap();
        // SAFETY: flock on a descriptor this function owns.
        assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
        Some(PoolGuard {
            before: read_count()?,
            _lock: lock,
        })
    }
}

impl Drop for PoolGuard {
    fn drop(&mut self) {
        if read_count() != Some(self.before) {
            eprintln!("test cleanup: setting the pool back to {}", self.before);
            let _ = std::fs::write(POOL_2M, format!("{}\n", self.before));
        }
    }
}

#[test]
fn two_concurrent_reserving_runs_leave_the_pool_as_they_found_it() {
    let Some(guard) = PoolGuard::take() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let journal = scratch.path().join("journal");
    let size = max_size_beyond_the_free_pages();
    let start = || {
        Command::new(assert_cmd::cargo::cargo_bin("memscope"))
            .args(RESERVING)
            .args(["--max-size", &size])
            .env("MEMSCOPE_JOURNAL_DIR", &journal)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let first = start();
    std::thread::sleep(Duration::from_millis(400));
    let second = start();
    let outputs = [first, second].map(|child| child.wait_with_output().unwrap());
    let said: Vec<String> = outputs
        .iter()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .collect();
    assert_eq!(read_count(), Some(guard.before), "{said:#?}");
    let left: Vec<_> = std::fs::read_dir(&journal)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.iter().all(|n| !n.to_string_lossy().ends_with(".json")),
        "journal entries left: {left:?}"
    );
    // Neither run lost its pages to the other's end (a run the kernel could not give
    // pages at all, memory being too fragmented, fails cleanly and is allowed).
    for (output, stderr) in outputs.iter().zip(&said) {
        assert!(
            output.status.success() || stderr.contains("memory is too fragmented"),
            "{:?}: {stderr}",
            output.status
        );
    }
}
