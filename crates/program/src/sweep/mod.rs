//! `memscope sweep`: does a build or runtime knob really change a program's speed, and
//! why. Each variant (a point of the parameters' product) is built once (`variants`), then
//! every benchmark × variant runs in randomized blocks after warm-up runs (`schedule`,
//! one run in `runner`: wall, CPU time, peak RSS, stdout metrics and `stat`'s counters).
//! `analysis` gives each cell its median, a 95% order-statistic interval and the change
//! against the baseline with a Mann–Whitney U test (`~` when p ≥ 0.05, as benchstat
//! does), `footprint` names the static and TLS objects whose size differs between the
//! variants' binaries, and `view` draws the tables and plots.

pub mod analysis;
pub mod figures;
pub mod footprint;
pub mod params;
pub mod runner;
pub mod schedule;
pub mod template;
pub mod variants;
pub mod view;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::counters::Probe;
use crate::platform::child::Termination;
use crate::topology::Machine;
pub use analysis::{Cell, MeasureStat, Verdict};
use template::{Assignment, Parameter};

/// What `memscope sweep` does, validated.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    pub parameters: Vec<Parameter>,
    /// The product of the parameters, the first varying slowest.
    pub variants: Vec<Assignment>,
    pub baseline: usize,
    pub build: Option<String>,
    pub keep: Vec<String>,
    /// Environment for the benchmarks, values with `{NAME}`s.
    pub env: Vec<(String, String)>,
    pub benchmarks: Vec<Benchmark>,
    pub metrics: Vec<MetricSpec>,
    pub schedule: Schedule,
    pub warmup: usize,
    pub effect_pct: f64,
}

/// A benchmark command (words with `{NAME}`s) and its name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Benchmark {
    pub name: String,
    pub words: Vec<String>,
}

pub use crate::stats::change::Better;

/// A figure read from the benchmarks' standard output (or error).
#[derive(Debug, Clone)]
pub struct MetricSpec {
    pub label: String,
    pub pattern: String,
    pub regex: regex::Regex,
    pub better: Better,
    /// The direction was guessed from the label or regex, not given.
    pub better_inferred: bool,
}

/// How many measured blocks run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Schedule {
    Fixed(usize),
    /// At least `min_blocks` (fewer only to fit the time, never below 6), then more while
    /// a median's 95% interval is wider than ±effect/2, until `max_blocks` or the time.
    Adaptive {
        min_blocks: usize,
        max_blocks: usize,
        time_limit: Duration,
    },
}

/// A figure of every run: the wall time, then each metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    pub label: String,
    pub unit: String,
    pub better: Better,
    /// "wall clock" or "output /REGEX/ (direction guessed)".
    pub source: String,
}

/// One variant as built and measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantInfo {
    pub label: String,
    pub values: Assignment,
    /// Seconds its build took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_s: Option<f64>,
    /// Its binary's per-thread and static data (`memscope footprint`), when a kept file
    /// is an ELF binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footprint: Option<FootprintSummary>,
}

/// The part of `memscope footprint` that sits beside a variant's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FootprintSummary {
    /// The kept file read.
    pub binary: String,
    /// The per-thread (TLS) block, bytes.
    pub tls_bytes: u64,
    /// .data + .bss + .rodata (and their relatives), bytes.
    pub static_bytes: u64,
    /// The largest per-thread objects: (name, bytes).
    pub largest_tls: Vec<(String, u64)>,
    pub l1d_bytes: Option<u64>,
    pub l2_bytes: Option<u64>,
    /// Bytes behind the TLS pointers (their pointees), per thread, outside the TLS block.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tls_pointee_bytes: u64,
    /// The static and TLS objects whose size differs between the variants (`footprint`:
    /// the same objects in every variant's summary; empty when none differs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differing: Vec<footprint::ObjectSize>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One run of one benchmark on one variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRun {
    /// 0 for warm-up blocks' runs, then 1, 2, … for the measured blocks.
    pub block: usize,
    /// Position in its block.
    pub order: usize,
    pub benchmark: usize,
    pub variant: usize,
    pub elapsed_s: f64,
    pub user_s: f64,
    pub system_s: f64,
    pub max_rss_kib: u64,
    pub termination: Termination,
    /// Each metric as read from stdout (`None`: not found in this run's output).
    pub metrics: Vec<Option<f64>>,
    /// Scaled counts in the order of `SweepResult::events` (`None`: not counted).
    pub counts: Vec<Option<f64>>,
}

impl SweepRun {
    /// The run's value of measure `m` (0 = wall time, then the metrics).
    pub fn measure(&self, m: usize) -> Option<f64> {
        if m == 0 {
            Some(self.elapsed_s)
        } else {
            self.metrics.get(m - 1).copied().flatten()
        }
    }
}

/// Why the blocks stopped (the trial engine's).
pub use crate::trials::Stop;

/// The result of `memscope sweep`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepResult {
    pub parameters: Vec<Parameter>,
    pub variants: Vec<VariantInfo>,
    pub baseline: usize,
    pub benchmarks: Vec<Benchmark>,
    pub build: Option<String>,
    pub measures: Vec<Measure>,
    /// The counted events' names, in the order of `SweepRun::counts`.
    pub events: Vec<String>,
    pub warmup_blocks: usize,
    /// Measured blocks completed.
    pub blocks: usize,
    pub stop: Stop,
    pub effect_pct: f64,
    /// Seconds the measured blocks took.
    pub measured_s: f64,
    /// Every run, warm-up ones included, in the order they ran.
    pub runs: Vec<SweepRun>,
    /// One per benchmark × variant, benchmark-major.
    pub cells: Vec<Cell>,
    pub notes: Vec<analysis::SweepNote>,
    /// What the runs left running.
    #[serde(default)]
    pub process_tree: crate::platform::child::ProcessTree,
}

impl SweepResult {
    pub fn cell(&self, benchmark: usize, variant: usize) -> &Cell {
        &self.cells[benchmark * self.variants.len() + variant]
    }

    /// memscope's exit status: 130 after Ctrl-C, else 0.
    pub fn exit_status(&self) -> u8 {
        if self.stop == Stop::Interrupted {
            130
        } else {
            0
        }
    }
}

/// Why a sweep could not be made (each is the user's to fix: exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SweepError(pub String);

/// Builds every variant, runs the blocks and analyses them.
pub fn run(plan: &SweepPlan, machine: &Machine, probe: &Probe) -> Result<SweepResult, SweepError> {
    let built = variants::build_all(plan, machine)?;
    schedule::measure(plan, machine, probe, &built)
}
