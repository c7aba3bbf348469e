//! One run of the program in one arm: the co-runner switched to the arm's load, the
//! program started on the arm's CPUs with the arm's environment and its output captured
//! (or passed through), its huge-page memory sampled over the run (time-weighted), and
//! what the co-runner did meanwhile.

use std::ffi::OsString;
use std::io::{Read, Seek};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::arms::{self, ArmKind, ArmSpec};
use super::RunRecord;
use crate::kernels::corunner::{CoRunner, Load};
use crate::pages::preload::{Preload, PreloadMode};
use crate::platform::child::{self, SpawnError, SpawnOptions};

/// What every run shares.
pub struct Setup<'a> {
    pub command: &'a [OsString],
    /// The CPUs of every arm but `AllCpus`, and all of them.
    pub program_cpus: &'a [usize],
    pub all_cpus: &'a [usize],
    pub memory_nodes: &'a [usize],
    pub preload: Option<&'a Preload>,
    /// The hot regions' address ranges (`HugeTop`).
    pub hot_ranges: &'a [(u64, u64)],
    /// Pass the program's output through instead of capturing it.
    pub show_output: bool,
}

/// A run, with the end of what it wrote on stderr (for a failure's message).
pub struct Trial {
    pub record: RunRecord,
    pub stderr_tail: String,
}

/// The co-runner's load in an arm.
pub fn load_of(arm: &ArmSpec) -> Load {
    match arm.kind {
        ArmKind::Compute => Load::Compute,
        ArmKind::Pirate => Load::Pirate {
            bytes: arm.level.unwrap_or(0.0) as u64,
        },
        ArmKind::Bandit => Load::Bandit {
            bytes_per_s: arm.level,
        },
        _ => Load::Idle,
    }
}

/// The environment an arm adds.
fn env_of(arm: &ArmSpec, setup: &Setup) -> Vec<(OsString, OsString)> {
    let preload = |huge: Vec<(u64, u64)>| {
        setup.preload.map_or_else(Vec::new, |p| {
            p.env(&PreloadMode {
                split: false,
                no_huge: false,
                huge: Some(huge),
                hugetlb: false,
            })
        })
    };
    match arm.kind {
        ArmKind::HugeAll => preload(Vec::new()),
        ArmKind::HugeTop => preload(setup.hot_ranges.to_vec()),
        ArmKind::MallocHugetlb => {
            let existing = std::env::var(arms::MALLOC_HUGETLB.0).ok();
            vec![(
                arms::MALLOC_HUGETLB.0.into(),
                arms::malloc_hugetlb_tunables(existing.as_deref()).into(),
            )]
        }
        _ => Vec::new(),
    }
}

/// Runs the program once in `arm`.
pub fn run(
    setup: &Setup,
    arm: &ArmSpec,
    co_runner: Option<&CoRunner>,
    block: usize,
    order: usize,
) -> Result<Trial, SpawnError> {
    if let Some(c) = co_runner {
        c.set(load_of(arm));
    }
    let capture = || tempfile::tempfile().map_err(SpawnError::Fork);
    let files = if setup.show_output {
        None
    } else {
        Some((capture()?, capture()?))
    };
    let cpus = if arm.kind == ArmKind::AllCpus {
        setup.all_cpus
    } else {
        setup.program_cpus
    };
    let options = SpawnOptions {
        env: env_of(arm, setup),
        stdout: files.as_ref().map(|f| f.0.as_raw_fd()),
        stderr: files.as_ref().map(|f| f.1.as_raw_fd()),
        cpus: Some(cpus.to_vec()),
        interleave_nodes: (arm.kind == ArmKind::Interleave).then(|| setup.memory_nodes.to_vec()),
        ..SpawnOptions::default()
    };
    let paused = child::spawn_paused_with(setup.command, &options)?;
    let mut running = paused.release()?;
    let pid = running.pid();
    let done = AtomicBool::new(false);
    let (finished, huge_kib) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| huge_over_time(pid, &done));
        let finished = running.wait();
        done.store(true, Ordering::Release);
        (finished, sampler.join().unwrap_or(0.0))
    });
    let finished = finished?;
    let co = co_runner.map(|c| {
        let s = c.take_stats();
        (s.ns_per_step, s.bytes_per_s)
    });
    let stderr_tail = match files {
        Some((_, mut err)) => tail(&mut err),
        None => String::new(),
    };
    Ok(Trial {
        record: RunRecord {
            block,
            order,
            elapsed_s: finished.elapsed.as_secs_f64(),
            user_s: finished.user.as_secs_f64(),
            system_s: finished.system.as_secs_f64(),
            max_rss_kib: finished.max_rss_kib,
            minor_faults: finished.minor_faults,
            major_faults: finished.major_faults,
            termination: finished.termination,
            huge_kib,
            co_runner: co.filter(|_| arm.kind.uses_co_runner()),
        },
        stderr_tail,
    })
}

/// The process's huge-page memory (AnonHugePages of smaps_rollup), time-weighted over
/// its run: sampled every 100 ms until `done`.
fn huge_over_time(pid: libc::pid_t, done: &AtomicBool) -> f64 {
    let start = Instant::now();
    let (mut weighted, mut last, mut value, mut next) = (0.0, start, 0.0, start);
    while !done.load(Ordering::Acquire) {
        let now = Instant::now();
        if now >= next {
            weighted += value * now.duration_since(last).as_secs_f64();
            last = now;
            value = anon_huge_kib(pid).unwrap_or(value);
            next = now + Duration::from_millis(100);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let total = start.elapsed().as_secs_f64();
    weighted += value * last.elapsed().as_secs_f64();
    if total > 0.0 {
        weighted / total
    } else {
        0.0
    }
}

/// AnonHugePages of /proc/PID/smaps_rollup, KiB (bounded read).
fn anon_huge_kib(pid: libc::pid_t) -> Option<f64> {
    let file = std::fs::File::open(format!("/proc/{pid}/smaps_rollup")).ok()?;
    let mut text = String::new();
    file.take(64 * 1024).read_to_string(&mut text).ok()?;
    parse_anon_huge(&text)
}

fn parse_anon_huge(text: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// The last lines of a captured file (at most 40 lines, 4 KiB).
fn tail(file: &mut std::fs::File) -> String {
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(std::io::SeekFrom::Start(len.saturating_sub(4096)));
    let mut bytes = Vec::new();
    let _ = file.take(4096).read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaps_rollup_gives_the_huge_page_memory() {
        let text = "Rss:  1000 kB\nAnonHugePages:    4096 kB\nShared: 0 kB\n";
        assert_eq!(parse_anon_huge(text), Some(4096.0));
        assert_eq!(parse_anon_huge("Rss: 1 kB\n"), None);
        // Our own process has a rollup.
        assert!(anon_huge_kib(std::process::id() as libc::pid_t).is_some());
    }

    #[test]
    fn each_arm_sets_its_load_and_environment() {
        let setup = Setup {
            command: &[],
            program_cpus: &[0],
            all_cpus: &[0, 1],
            memory_nodes: &[0],
            preload: None,
            hot_ranges: &[],
            show_output: false,
        };
        assert_eq!(load_of(&ArmSpec::new(ArmKind::Alone)), Load::Idle);
        assert_eq!(
            load_of(&ArmSpec::pirate(1 << 20, 0.5)),
            Load::Pirate { bytes: 1 << 20 }
        );
        let env = env_of(&ArmSpec::new(ArmKind::MallocHugetlb), &setup);
        assert_eq!(env[0].0, "GLIBC_TUNABLES");
        assert!(env_of(&ArmSpec::new(ArmKind::Compute), &setup).is_empty());
    }
}
