//! `memscope advise -- CMD`: what holds a program back in memory, and which remedy buys
//! how much, measured without a PMU. The program runs again and again, interleaved in
//! shuffled blocks, in *arms*: alone, beside a co-runner on another CPU that takes a
//! resource away (a cache pirate keeping part of the shared cache busy, a bandwidth
//! bandit writing to DRAM at a chosen rate, a compute-only neighbour as their control), with a
//! pirate taking turns with it on its own CPU where no other CPU shares its cache (read
//! by CPU time against a compute thread in turns), and
//! with a remedy applied (huge pages for everything, for its hot regions, glibc's THP
//! malloc). Each arm's run times are compared with the reference arm's in the same blocks
//! (`stats::paired`: the paired t interval of the ratio, read at planned looks), and the
//! verdict names the resources the program is sensitive to and the
//! remedies with their measured gain and cost.
//!
//! The parts: `plan` (flags checked), `facts` (the machine figures it is set against:
//! a report, the history, or measured now), `arms` (what each arm changes), `trial` (one
//! run of the program in an arm), `checks` (the co-runner's checks read per arm),
//! `neighbours` (the co-runners, their calibration, and where the pirate runs),
//! `schedule` (the order of the work), `design` (the sequential design: which arms run, when one is decided), `results` (each arm against
//! its reference),
//! `profile` (the program's own figures), `verdict` (sensitivities and remedies), `view`
//! and `figures` (every output, and what compare reads).

pub mod arms;
pub mod checks;
pub mod design;
pub mod facts;
pub mod figures;
pub mod neighbours;
pub mod plan;
pub mod profile;
pub mod results;
pub mod schedule;
pub mod trial;
pub mod verdict;
pub mod view;

use serde::{Deserialize, Serialize};

use crate::kernels::corunner::SharingCheck;
use crate::platform::child::Termination;
use crate::stats::change::{MeasureStat, RatioInterval};
use crate::stats::summary::Summary;
pub use crate::trials::Stop;
pub use arms::{ArmKind, Resource, Timing};
pub use facts::{FactsSource, MachineFacts};
pub use plan::{AdviseArgs, AdvisePlan};
pub use profile::ProgramProfile;
pub use schedule::run;
pub use verdict::{Finding, Sensitivity};

/// The result of `memscope advise`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdviseResult {
    pub command: Vec<String>,
    /// The machine's figures the program is set against, and where they came from.
    pub facts: MachineFacts,
    pub cpus: CpuPlan,
    pub profile: ProgramProfile,
    /// The co-runner's own checks before the program ran, when there is a co-runner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<CoRunnerCalibration>,
    /// Every arm measured, in the order of the stages.
    pub arms: Vec<ArmResult>,
    /// The verdict, most important first: one finding per resource looked at.
    pub findings: Vec<Finding>,
    /// No experiment moved the program beyond its noise.
    pub not_memory_bound: bool,
    /// The exit status every run of the program is expected to end with (its first run's).
    pub normal_status: i32,
    pub blocks: usize,
    /// The looks planned at each arm: its 5% error is split over them.
    #[serde(default = "one")]
    pub looks: usize,
    /// The smallest change the verdict calls a sensitivity, percent (`--effect`).
    pub effect_pct: f64,
    pub elapsed_s: f64,
    pub time_limit_s: f64,
    pub stop: Stop,
    pub notes: Vec<String>,
    /// What the runs left running, and the runs stopped at the time limit.
    #[serde(default)]
    pub process_tree: crate::platform::child::ProcessTree,
}

impl AdviseResult {
    /// memscope's exit status: 130 when interrupted (what was measured is reported); the
    /// status of a run that ended otherwise than the program's normal one, when any did
    /// (1 when that was a death by a signal); else 0.
    pub fn exit_status(&self) -> u8 {
        if self.stop == Stop::Interrupted {
            return 130;
        }
        match self.failed_runs().1 {
            Some(t) => t.shell_status().clamp(1, 255) as u8,
            None => 0,
        }
    }

    /// How many runs ended otherwise than the program's normal status, and the first.
    pub fn failed_runs(&self) -> (usize, Option<Termination>) {
        let failed: Vec<Termination> = self
            .arms
            .iter()
            .flat_map(|a| &a.runs)
            .map(|r| r.termination)
            .filter(|t| t.shell_status() != self.normal_status)
            .collect();
        (failed.len(), failed.first().copied())
    }

    /// The arm of a kind (the first, for kinds measured at several levels).
    pub fn arm(&self, kind: ArmKind) -> Option<&ArmResult> {
        self.arms.iter().find(|a| a.kind == kind)
    }
}

/// Where the program and the co-runner run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuPlan {
    /// The CPUs the program may use in every arm but `all CPUs`.
    pub program: Vec<usize>,
    /// The co-runner's CPU; `None` on a single-CPU machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub co_runner: Option<usize>,
    /// The co-runner shares the last-level cache with the program's CPUs.
    pub shares_llc: bool,
    /// The co-runner is an SMT sibling of one of the program's CPUs.
    pub smt_sibling: bool,
    /// NUMA nodes with memory.
    pub memory_nodes: usize,
    /// Where the cache pirate ran.
    #[serde(default)]
    pub pirate: PirateSite,
    /// The program kept one CPU busy in its first run: every arm but `all CPUs` is timed
    /// by its CPU time (`ArmKind::timing`).
    #[serde(default)]
    pub cpu_bound: bool,
}

/// Where the cache pirate runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PirateSite {
    /// On the co-runner's CPU, which shares the program's last-level cache (Cache
    /// Pirating): the program keeps the rest of the cache all the time.
    #[default]
    Beside,
    /// In turns with the program on the program's own CPU: no other CPU shares its cache
    /// (or there is none). At each of the program's turns the pirate has just walked its
    /// set; the program's CPU time shows what refilling the rest costs it.
    InTurns,
    /// No pirate ran (no cache size known, no set it holds, or not asked for).
    Nowhere,
}

/// The co-runner's checks, alone, before the program runs: how fast the pirate walks each
/// of its sets (≈ the latency of the cache holding it) and a set far beyond the LLC (≈
/// DRAM latency), the bandit's flat-out bandwidth, and the pirate beside the bandit (how
/// much cache the bandit takes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoRunnerCalibration {
    /// (set bytes, ns per step alone).
    pub pirate_alone_ns: Vec<(u64, f64)>,
    pub dram_ns: f64,
    pub bandit_max_bytes_per_s: f64,
    /// The pirate's ns per step at its largest set beside a flat-out bandit (NaN when not
    /// measured).
    pub pirate_beside_bandit_ns: f64,
    /// The bandit's buffer got huge pages, so its lines fall in few cache sets.
    pub bandit_huge: bool,
    /// Whether the co-runner's CPU shares the program's last-level cache now: its pirate
    /// alone and while the program's CPU walks a set no shared cache holds beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<SharingCheck>,
}

/// One arm over its runs, against its reference arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmResult {
    pub kind: ArmKind,
    pub label: String,
    pub resource: Resource,
    /// 1: the screening stage; 2: the curves of the resources found sensitive.
    pub stage: usize,
    /// The pirate's set or the bandit's rate asked for (bytes, bytes/s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<f64>,
    /// What its runs (and its reference's, in `time` and `ratio`) are timed by.
    #[serde(default = "wall")]
    pub timing: Timing,
    /// The arm its runs are compared with (`alone`, or `compute neighbour` for the
    /// pirate and the bandit, so a busy neighbour CPU by itself is not counted).
    pub reference: ArmKind,
    pub runs: Vec<RunRecord>,
    /// Time (by `timing`), seconds, against the reference's runs of the same stage.
    pub time: MeasureStat,
    /// Run time / the reference's (the geometric mean of the blocks' ratios, with the
    /// paired t interval at the looks' level: 95% over all of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<RatioInterval>,
    /// The paired reading the ratio comes from (pairs, level, the test's p).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired: Option<crate::stats::paired::PairedChange>,
    /// Still open at the end: about how many seconds more runs would take to decide it
    /// against ±effect, from the spread so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_s: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_s: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_kib: Option<Summary>,
    /// Median huge-page memory of the program's runs (time-weighted over each run), KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub huge_kib: Option<f64>,
    /// The co-runner over the arm's runs (medians).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub co_runner: Option<CoRunnerCheck>,
    /// A huge-page arm whose runs' system time fell in two groups: each against the
    /// reference (on a VM the host may back the memory of some runs and not others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_groups: Option<results::SystemTimeGroups>,
    /// Runs that ended otherwise than the program's normal status.
    pub failed_runs: usize,
}

impl ArmResult {
    /// The change (%) the words give: the ratio's estimate, as its interval and the verdict
    /// are, unless it points the other way from the medians' (few runs), then theirs.
    pub fn change_pct(&self) -> Option<f64> {
        match (
            self.ratio.map(|r| (r.ratio - 1.0) * 100.0),
            self.time.change_pct,
        ) {
            (Some(estimate), Some(medians)) if estimate * medians < 0.0 => Some(medians),
            (estimate, medians) => estimate.or(medians),
        }
    }
}

/// What the co-runner did while the program ran, and what that left the program.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CoRunnerCheck {
    /// Pirate: ns per step of one of its chains (≈ its access latency); pirate in turns: ns
    /// of its CPU time per line swept.
    pub ns_per_step: f64,
    /// Bandit: bytes written per second.
    pub bytes_per_s: f64,
    /// Pirate: the share of its set it kept in the cache, estimated from its speed between
    /// its speed alone (all of it) and at DRAM latency (none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_share: Option<f64>,
    /// The LLC share left to the program, bytes (pirate arms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_left_bytes: Option<f64>,
}

/// One run of the program in an arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The block it ran in (0: warm-up, not counted).
    pub block: usize,
    /// Position in the whole interleaved sequence.
    pub order: usize,
    pub elapsed_s: f64,
    pub user_s: f64,
    pub system_s: f64,
    pub max_rss_kib: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub termination: Termination,
    /// Time-weighted huge-page memory of the program over the run, KiB.
    pub huge_kib: f64,
    /// The co-runner's ns per step and bytes per second over the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub co_runner: Option<(f64, f64)>,
    /// Still running at the time limit: stopped (its block is not counted).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
}

fn one() -> usize {
    1
}

fn wall() -> Timing {
    Timing::Wall
}
