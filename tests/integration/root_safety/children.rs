//! Commands memscope runs die with it (issue 25, row 8): `stat`, `pages record` and
//! `pages apply` running `sleep 30`, memscope SIGKILLed (the kernel's parent-death signal
//! kills the command) or SIGTERMed (memscope's signal thread kills it, then exits 143):
//! the sleep is gone soon after, not reparented and left running. Each run keeps its own
//! journal; `pages` samples through `--source refs`, which changes nothing in the system.
//! Runs as any user.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{temp_dir, ChildGuard, BINARY};

/// The commands under test, each running `sleep 30`.
const COMMANDS: &[&[&str]] = &[
    &["stat", "--", "sleep", "30"],
    &["pages", "record", "--source", "refs", "--", "sleep", "30"],
    &[
        "pages", "apply", "--source", "refs", "--repeat", "2", "--", "sleep", "30",
    ],
];

/// Field `n` (1-based, as proc(5) counts) of /proc/PID/stat, counted after the command
/// name; None for a process that is gone or a zombie.
fn stat_field(pid: u32, n: usize) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    if matches!(fields.clone().next()?, "Z" | "X") {
        return None;
    }
    fields.nth(n - 3).map(str::to_string)
}

/// The `sleep` whose parent is `parent`, with its start time.
fn sleep_child_of(parent: u32) -> Option<(u32, String)> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        (comm.trim() == "sleep" && stat_field(pid, 4)? == parent.to_string())
            .then(|| Some((pid, stat_field(pid, 22)?)))
            .flatten()
    })
}

fn runs(pid: u32, started: &str) -> bool {
    stat_field(pid, 22).as_deref() == Some(started)
}

/// memscope (killed and reaped if a test ends early) with its own journal.
fn start(args: &[&str], journal: &Path) -> ChildGuard {
    ChildGuard::spawn(
        Command::new(BINARY)
            .args(args)
            .env("MEMSCOPE_JOURNAL_DIR", journal)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
}

#[test]
fn the_command_memscope_runs_dies_with_it() {
    for args in COMMANDS {
        for signal in [libc::SIGKILL, libc::SIGTERM] {
            let scratch = temp_dir();
            let mut memscope = start(args, &scratch.path().join("journal"));
            let parent = memscope.id();
            let deadline = Instant::now() + Duration::from_secs(60);
            let (pid, started) = loop {
                if let Some(found) = sleep_child_of(parent) {
                    break found;
                }
                let ended = memscope.try_wait();
                assert!(
                    ended.is_none() && Instant::now() < deadline,
                    "{args:?}: no sleep started ({ended:?})"
                );
                std::thread::sleep(Duration::from_millis(5));
            };
            // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
            assert_eq!(unsafe { libc::kill(parent as libc::pid_t, signal) }, 0);
            let status = memscope.wait();
            let killed = Instant::now();
            // The kernel's signal is immediate; the bound only keeps a failure from hanging.
            while runs(pid, &started) && killed.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(1));
            }
            let still = runs(pid, &started);
            if still {
                // SAFETY: as above; the pid still names that sleep (same start time).
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
            assert!(
                !still,
                "{args:?}, signal {signal}: the sleep outlived memscope"
            );
            eprintln!(
                "{args:?}, signal {signal}: sleep gone {:?} after memscope ended ({status})",
                killed.elapsed()
            );
            if signal == libc::SIGTERM {
                assert_eq!(status.code(), Some(128 + signal), "{args:?}");
            }
        }
    }
}
