//! The hugetlbfs pool as shared state between concurrent memscopes (issue 25, row 4): two
//! `latency --pages 2m --reserve-hugepages` runs started 0.4 s apart, sharing one journal,
//! leave the real 2 MiB pool at its starting size and no journal entry. Needs root and a
//! 2 MiB pool; skipped otherwise. The pool is set back to its starting size whatever
//! happens (after a failed assertion too).

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::{
    max_size_beyond_the_free_pages, read_count, temp_dir, PoolGuard, BINARY, POOL_2M,
};

const RESERVING: &[&str] = &["latency", "--quick", "--pages", "2m", "--reserve-hugepages"];

#[test]
fn two_concurrent_reserving_runs_leave_the_pool_as_they_found_it() {
    let Some(guard) = PoolGuard::take() else {
        return;
    };
    let scratch = temp_dir();
    let journal = scratch.path().join("journal");
    let size = max_size_beyond_the_free_pages();
    let start = || {
        Command::new(BINARY)
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
    assert_eq!(read_count(POOL_2M), Some(guard.before), "{said:#?}");
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
