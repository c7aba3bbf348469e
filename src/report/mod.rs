//! The one report model and its outputs.
//!
//! Every command builds a `Report`. `json` serialises it as it is; `document` turns it
//! into sections (the registry's results framed by `machine` and `settings`) that the
//! renderers `terminal`, `csv` and `html` (+ `svg`) draw without knowing any experiment.
//! `output` owns the files and writes each one atomically (temporary file + rename), so
//! a failed run never leaves a half-written report.

use serde::{Deserialize, Serialize};

pub use crate::experiments::Results as Experiments;
use crate::footprint::FootprintResult;
use crate::pages::PagesResult;
pub use crate::platform::arena::PagesObtained;
use crate::stat::StatResult;
use crate::sweep::SweepResult;
use crate::topology::Machine;
use crate::view::figure::{Figure, Figures};

pub mod csv;
pub mod document;
pub mod html;
pub mod json;
pub mod machine;
pub mod output;
pub mod settings;
pub mod svg;
pub mod terminal;
pub mod virtualization;

pub use crate::session::warnings::Warning;

/// Version of the JSON document layout; bumped when a field is renamed or removed.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    pub schema_version: u32,
    pub tool: Tool,
    pub machine: Machine,
    pub settings: Settings,
    pub warnings: Vec<Warning>,
    pub experiments: Experiments,
    /// `memscope stat`: a user's command and its counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stat: Option<StatResult>,
    /// `memscope pages`: a user's command's regions (record) and huge pages applied
    /// to them (apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<PagesResult>,
    /// `memscope footprint`: a binary's per-thread and static data against the caches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footprint: Option<FootprintResult>,
    /// `memscope sweep`: a program's figures over the variants of its knobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepResult>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

impl Default for Tool {
    fn default() -> Self {
        Tool {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// What was asked and what was obtained.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Settings {
    /// The subcommand: "run", "info", "latency" …
    pub command: String,
    /// CPUs the measuring threads were pinned to.
    pub cpus: Vec<usize>,
    /// Page policy asked for: "4k", "thp", "2m", "1g".
    pub pages_requested: String,
    /// What the buffers actually got, verified after first touch.
    pub pages_obtained: Option<PagesObtained>,
    pub quick: bool,
    /// Timed trials per point (the median is reported).
    pub repetitions: usize,
    /// Target duration of one timed trial, milliseconds.
    pub trial_ms: f64,
    pub max_size_bytes: u64,
    /// "tsc" or "clock_gettime(CLOCK_MONOTONIC)".
    pub timer: String,
    /// The clock of multi-thread trials, whose start and end are read on different CPUs:
    /// the TSC where the kernel keeps time with it, else CLOCK_MONOTONIC, and why.
    #[serde(default)]
    pub team_clock: String,
    /// The sampling policy in words, as printed with the results.
    pub sampling: String,
}

impl Report {
    /// Every comparable figure of the report: the experiments' in the registry's order,
    /// then the program commands'.
    pub fn figures(&self) -> Vec<Figure> {
        let mut figures = self.experiments.figures();
        figures.extend(self.stat.iter().flat_map(Figures::figures));
        figures.extend(self.pages.iter().flat_map(Figures::figures));
        figures.extend(self.sweep.iter().flat_map(Figures::figures));
        figures
    }

    pub fn new(machine: Machine, settings: Settings) -> Report {
        Report {
            schema_version: SCHEMA_VERSION,
            tool: Tool::default(),
            machine,
            settings,
            warnings: Vec::new(),
            experiments: Experiments::default(),
            stat: None,
            pages: None,
            footprint: None,
            sweep: None,
        }
    }
}
