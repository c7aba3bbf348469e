//! One run of the program in one arm: the co-runner it uses (beside the program or in
//! turns on its CPU) switched to the arm's load and the other idle, the
//! program started on the arm's CPUs with the arm's environment and its output captured
//! (or passed through), in a resctrl group of its own for the L3 CAT and MBA arms (made
//! before the paused child is released and its pid moved in, removed after the run),
//! its huge-page memory sampled over the run (time-weighted), and what the co-runner did
//! meanwhile. `Partitioning` says whether resctrl can be used here, and which arms.
//! A huge-page arm's runs start as a user's would, with no memory readied for them: the
//! gain they show is the one a plain run gets.

use std::ffi::OsString;
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::arms::{self, ArmKind, ArmSpec};
use super::RunRecord;
use crate::kernels::corunner::{CoRunner, Load};
use crate::pages::preload::{Preload, PreloadMode};
use crate::platform::child::{self, NodePolicy, Placement, ProcessTree, SpawnError, SpawnOptions};
use crate::platform::resctrl::{self, Limit, Resctrl, ResctrlGroup};
use crate::trials::capture::Capture;

/// What every run shares.
pub(crate) struct Setup<'a> {
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
    /// resctrl, for the L3 CAT and MBA arms.
    pub partitioning: Option<&'a Partitioning>,
    /// When a run still going is stopped (the time limit).
    pub deadline: Option<Instant>,
    /// What the runs left running.
    pub process_tree: &'a std::cell::RefCell<ProcessTree>,
}

/// The co-runner threads: one on the co-runner's CPU (beside the program), one on the
/// program's own CPU (in turns with it). An arm sets the load of the one it uses and
/// idles the other.
#[derive(Clone, Copy, Default)]
pub(crate) struct CoRunners<'a> {
    pub beside: Option<&'a CoRunner>,
    pub in_turns: Option<&'a CoRunner>,
}

impl<'a> CoRunners<'a> {
    /// Sets the arm's load on the co-runner it uses, idles the other; that co-runner.
    fn set_for(&self, arm: &ArmSpec) -> Option<&'a CoRunner> {
        let (used, other) = if arm.kind.in_turns() {
            (self.in_turns, self.beside)
        } else {
            (self.beside, self.in_turns)
        };
        if let Some(o) = other {
            o.set(Load::Idle);
        }
        if let Some(u) = used {
            u.set(load_of(arm));
        }
        used
    }
}

/// A run.
pub struct Trial {
    pub record: RunRecord,
}

/// The co-runner's load in an arm.
pub(crate) fn load_of(arm: &ArmSpec) -> Load {
    match arm.kind {
        ArmKind::Compute => Load::Compute,
        ArmKind::Pirate => Load::Pirate {
            bytes: arm.level.unwrap_or(0.0) as u64,
        },
        // On the program's CPU the turns are memscope's: short bursts at a fixed period.
        ArmKind::ComputeInTurns => Load::ComputeBursts,
        ArmKind::PirateInTurns => Load::PirateBursts {
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
pub(crate) fn run(
    setup: &Setup,
    arm: &ArmSpec,
    co_runners: CoRunners,
    block: usize,
    order: usize,
) -> Result<Trial, SpawnError> {
    let co_runner = co_runners.set_for(arm);
    let capture = Capture::new(!setup.show_output).map_err(SpawnError::Fork)?;
    let cpus = if arm.kind == ArmKind::AllCpus {
        setup.all_cpus
    } else {
        setup.program_cpus
    };
    let options = capture.options(SpawnOptions {
        env: env_of(arm, setup),
        cpus: Some(cpus.to_vec()),
        placement: match arm.kind {
            ArmKind::Interleave => Some(NodePolicy::Interleave),
            ArmKind::WeightedInterleave => Some(NodePolicy::WeightedInterleave),
            _ => None,
        }
        .map(|policy| Placement {
            policy,
            nodes: setup.memory_nodes.to_vec(),
        }),
        // As in the recorded run: the hot regions' addresses hold from run to run.
        no_aslr: true,
        inherit: setup
            .preload
            .filter(|_| matches!(arm.kind, ArmKind::HugeAll | ArmKind::HugeTop))
            .map(Preload::inherit),
        ..SpawnOptions::default()
    });
    // The group before the child: a failure leaves no program run outside it.
    let group = match setup.partitioning.and_then(|p| p.limit(arm)) {
        Some((p, limit)) => Some(
            ResctrlGroup::create(&p.resctrl, limit)
                .map_err(|e| SpawnError::Fork(io::Error::new(e.kind(), format!("resctrl: {e}"))))?,
        ),
        None => None,
    };
    let paused = child::spawn_paused_with(setup.command, &options)?;
    // Moved in before its exec, so that all it runs (threads, children) stays in it.
    if let Some(g) = &group {
        g.add_task(paused.pid())
            .map_err(|e| SpawnError::Fork(io::Error::new(e.kind(), format!("resctrl: {e}"))))?;
    }
    let mut running = paused.release()?;
    let pid = running.pid();
    let done = AtomicBool::new(false);
    let (finished, huge_kib) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| huge_over_time(pid, &done));
        let finished = running.wait_until(setup.deadline);
        done.store(true, Ordering::Release);
        (finished, sampler.join().unwrap_or(0.0))
    });
    let finished = finished?;
    setup.process_tree.borrow_mut().add(&finished);
    drop(group);
    let co = co_runner.map(|c| {
        let s = c.take_stats();
        (s.ns_per_step, s.bytes_per_s)
    });
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
            stopped: finished.stopped,
        },
    })
}

/// The L3 ways removed in the cache arms (strongest first): the program keeps the rest.
const CAT_REMOVED: [f64; 3] = [0.75, 0.5, 0.25];
/// The bandwidth the MBA arms allow, percent (strongest first).
const MBA_PERCENT: [u32; 2] = [25, 50];

/// resctrl as advise uses it: the mounted tree, the L3 size its ways split, and which of
/// cache allocation and bandwidth throttling it offers.
#[derive(Debug)]
pub(crate) struct Partitioning {
    pub resctrl: Resctrl,
    /// The L3's size (bytes), when known: CAT arms need it.
    pub llc_bytes: Option<u64>,
}

impl Partitioning {
    /// resctrl when memscope is root and it offers L3 CAT or MBA in percent and a group
    /// can be made; else the one sentence saying why not.
    pub fn detect(llc_bytes: Option<u64>) -> Result<Partitioning, String> {
        let why_not =
            |why: String| format!("{why}: cache and bandwidth are taken by a co-runner instead");
        let resctrl = resctrl::detect().map_err(|e| why_not(e.to_string()))?;
        if crate::platform::journal::effective_uid() != 0 {
            return Err(why_not(format!(
                "resctrl is mounted at {}, but restricting a program's L3 ways or bandwidth \
                 needs root",
                resctrl.path().display()
            )));
        }
        Partitioning::with(resctrl, llc_bytes).map_err(why_not)
    }

    /// `resctrl` checked to offer something and to let a group be made (made and removed
    /// at once).
    pub fn with(resctrl: Resctrl, llc_bytes: Option<u64>) -> Result<Partitioning, String> {
        let p = Partitioning { resctrl, llc_bytes };
        let probe = p
            .cat_arms()
            .into_iter()
            .chain(p.mba_arms())
            .next()
            .and_then(|arm| p.limit(&arm).map(|(_, limit)| limit));
        let Some(limit) = probe else {
            let mut why = format!(
                "resctrl at {} offers no L3 CAT{} and no MBA in percent",
                p.resctrl.path().display(),
                if p.llc_bytes.is_none() && p.resctrl.l3.is_some() {
                    " memscope can use (the L3's size is unknown)"
                } else {
                    ""
                }
            );
            for note in &p.resctrl.notes {
                why.push_str("; ");
                why.push_str(note);
            }
            return Err(why);
        };
        ResctrlGroup::create(&p.resctrl, limit)
            .map_err(|e| format!("resctrl cannot be used: {e}"))?;
        Ok(p)
    }

    /// The CAT arms, ¾, ½ and ¼ of the ways removed (fewer when there are few ways).
    pub(crate) fn cat_arms(&self) -> Vec<ArmSpec> {
        let (Some(cat), Some(llc)) = (&self.resctrl.l3, self.llc_bytes) else {
            return Vec::new();
        };
        let total = cat.ways();
        let least = cat.min_cbm_bits.max(1);
        let mut kept: Vec<u32> = Vec::new();
        for removed in CAT_REMOVED {
            let ways = ((f64::from(total) * (1.0 - removed)).round() as u32)
                .clamp(least, total.saturating_sub(1).max(least));
            if ways < total && !kept.contains(&ways) && cat.mask(ways).is_some() {
                kept.push(ways);
            }
        }
        kept.iter()
            .map(|&k| ArmSpec::cat_ways(k, total, resctrl::capacity_of_ways(llc, k, total)))
            .collect()
    }

    /// The MBA arms, at 25% and 50% (as the granularity allows).
    pub(crate) fn mba_arms(&self) -> Vec<ArmSpec> {
        let Some(mba) = &self.resctrl.mb else {
            return Vec::new();
        };
        let mut arms: Vec<ArmSpec> = Vec::new();
        for p in MBA_PERCENT {
            let arm = ArmSpec::mba(resctrl::mb_percent(
                p,
                mba.bandwidth_gran,
                mba.min_bandwidth,
            ));
            if arm.level.is_some_and(|l| l < 100.0) && !arms.iter().any(|a| a.same(&arm)) {
                arms.push(arm);
            }
        }
        arms
    }

    /// What the group of an arm restricts; `None` for arms resctrl has no part in.
    fn limit(&self, arm: &ArmSpec) -> Option<(&Partitioning, Limit)> {
        let level = arm.level?;
        let limit = match arm.kind {
            ArmKind::CatWays => {
                let total = self.resctrl.l3.as_ref()?.ways();
                Limit::L3Ways(resctrl::ways_for_capacity(
                    self.llc_bytes?,
                    total,
                    level as u64,
                ))
            }
            ArmKind::MbaThrottle => Limit::MbPercent(level.round() as u32),
            _ => return None,
        };
        Some((self, limit))
    }

    /// What the cache and bandwidth stages use, for the notes.
    pub fn note(&self) -> String {
        let mut uses = Vec::new();
        if let (Some(cat), false) = (&self.resctrl.l3, self.cat_arms().is_empty()) {
            uses.push(format!(
                "the program's L3 ways (CAT, {} ways, mask {:x}) instead of a cache pirate",
                cat.ways(),
                cat.cbm_mask
            ));
        }
        if let (Some(mba), false) = (&self.resctrl.mb, self.mba_arms().is_empty()) {
            uses.push(format!(
                "its memory bandwidth (MBA, steps of {}%{})",
                mba.bandwidth_gran,
                if mba.delay_linear {
                    ""
                } else {
                    ", applied approximately"
                }
            ));
        }
        format!(
            "resctrl at {} restricts {}; each arm's group is removed after its run",
            self.resctrl.path().display(),
            uses.join(", and ")
        )
    }
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
            partitioning: None,
            deadline: None,
            process_tree: &Default::default(),
        };
        assert_eq!(load_of(&ArmSpec::new(ArmKind::Alone)), Load::Idle);
        assert_eq!(
            load_of(&ArmSpec::pirate(1 << 20, 0.5)),
            Load::Pirate { bytes: 1 << 20 }
        );
        let env = env_of(&ArmSpec::new(ArmKind::MallocHugetlb), &setup);
        assert_eq!(env[0].0, "GLIBC_TUNABLES");
        assert!(env_of(&ArmSpec::new(ArmKind::Compute), &setup).is_empty());
        assert_eq!(
            load_of(&ArmSpec::pirate_in_turns(1 << 20, 0.5)),
            Load::PirateBursts { bytes: 1 << 20 }
        );
        assert_eq!(
            load_of(&ArmSpec::new(ArmKind::ComputeInTurns)),
            Load::ComputeBursts
        );
    }

    #[test]
    fn resctrl_arms_keep_a_quarter_half_and_three_quarters_of_the_ways() {
        use crate::platform::resctrl::fake;
        let dir = fake::tree(true, true);
        let llc: u64 = 11 * 1408 * 1024;
        let p = Partitioning::with(fake::synthetic(dir.path()), Some(llc)).unwrap();
        // The probe group was made and removed: only the tree's own entries are left.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
        let cat = p.cat_arms();
        let kept: Vec<Option<(&Partitioning, Limit)>> = cat.iter().map(|a| p.limit(a)).collect();
        let ways: Vec<u32> = kept
            .iter()
            .map(|k| match k {
                Some((_, Limit::L3Ways(w))) => *w,
                other => panic!("{other:?}"),
            })
            .collect();
        // 11 ways: ¾ removed keeps 3, ½ keeps 6 (5.5 rounded), ¼ keeps 8; strongest first.
        assert_eq!(ways, vec![3, 6, 8]);
        assert!(cat.iter().all(|a| a.kind == ArmKind::CatWays));
        assert_eq!(
            cat[0].level,
            Some(resctrl::capacity_of_ways(llc, 3, 11) as f64)
        );
        let mba = p.mba_arms();
        let percents: Vec<f64> = mba.iter().filter_map(|a| a.level).collect();
        assert_eq!(percents, vec![20.0, 50.0]);
        assert!(matches!(p.limit(&mba[0]), Some((_, Limit::MbPercent(20)))));
        // Arms resctrl has no part in.
        assert!(p.limit(&ArmSpec::new(ArmKind::Alone)).is_none());
        assert!(p.limit(&ArmSpec::pirate(1 << 20, 0.5)).is_none());
        let note = p.note();
        assert!(
            note.contains("L3 ways (CAT, 11 ways, mask 7ff)") && note.contains("MBA"),
            "{note}"
        );
    }

    #[test]
    fn resctrl_without_cat_or_mba_or_an_l3_size_is_not_used_and_says_why() {
        use crate::platform::resctrl::fake;
        let none = fake::tree(false, false);
        let why = Partitioning::with(fake::synthetic(none.path()), Some(8 << 20)).unwrap_err();
        assert!(why.contains("offers no L3 CAT and no MBA"), "{why}");
        let cat = fake::tree(true, false);
        let why = Partitioning::with(fake::synthetic(cat.path()), None).unwrap_err();
        assert!(why.contains("the L3's size is unknown"), "{why}");
        // MBA alone is used without an L3 size.
        let mb = fake::tree(false, true);
        let p = Partitioning::with(fake::synthetic(mb.path()), None).unwrap();
        assert!(p.cat_arms().is_empty() && p.mba_arms().len() == 2);
        // This machine: an answer, never a panic (no resctrl here: a sentence).
        match Partitioning::detect(Some(8 << 20)) {
            Ok(p) => eprintln!("resctrl here: {}", p.note()),
            Err(why) => assert!(why.contains("co-runner instead"), "{why}"),
        }
    }
}
