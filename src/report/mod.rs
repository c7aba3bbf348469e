//! The one report model and its outputs.
//!
//! Every command builds a `Report`. `json` serialises it as it is; `document` turns it
//! into sections (the registry's results framed by `machine` and `settings`) that the
//! renderers `terminal`, `csv` and `html` (+ `svg`) draw without knowing any experiment.
//! `output` owns the files and writes each one atomically (temporary file + rename), so
//! a failed run never leaves a half-written report.

use serde::{Deserialize, Serialize};

use crate::experiments::drift::DriftResult;
pub use crate::experiments::Results as Experiments;
use crate::footprint::FootprintResult;
use crate::pages::PagesResult;
pub use crate::platform::arena::PagesObtained;
use crate::session::conditions::ExperimentConditions;
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
pub mod prometheus;
pub mod read;
pub mod settings;
pub mod svg;
pub mod terminal;
pub mod virtualization;

pub use crate::session::warnings::Warning;

/// Version of the JSON document layout; bumped when a field is renamed or removed, or
/// when a reader must know that a field was added. 2 added `run` (host and time).
pub const SCHEMA_VERSION: u32 = 2;

/// The oldest schema this memscope still reads (`compare`, `history --add`).
pub const OLDEST_READABLE_SCHEMA: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    pub schema_version: u32,
    pub tool: Tool,
    /// Where and when it ran (schema 2; empty in a schema-1 report).
    #[serde(default)]
    pub run: RunStamp,
    pub machine: Machine,
    pub settings: Settings,
    pub warnings: Vec<Warning>,
    pub experiments: Experiments,
    /// What else ran on the machine during each experiment (schema 2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ExperimentConditions>,
    /// The headline figures measured again at the end of the run (schema 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftResult>,
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

/// Where and when a report was made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunStamp {
    /// The host name (`uname -n`).
    pub host: String,
    /// When the command started, RFC 3339 in UTC ("2026-11-26T13:05:00Z").
    pub started: String,
    /// The same instant in seconds since the Unix epoch (0 when unknown).
    pub started_unix: u64,
    /// Seconds from the start to the report being written.
    pub elapsed_s: f64,
}

impl RunStamp {
    /// This host, now.
    pub fn now() -> RunStamp {
        let now = std::time::SystemTime::now();
        RunStamp {
            host: host_name(),
            started: humantime::format_rfc3339_seconds(now).to_string(),
            started_unix: now
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            elapsed_s: 0.0,
        }
    }

    /// The date and time for a reader ("2026-11-26 13:05 UTC"), or "date unknown".
    pub fn when(&self) -> String {
        match self.started.get(..16) {
            Some(t) if self.started.len() >= 16 => format!("{} UTC", t.replace('T', " ")),
            _ => "date unknown".to_string(),
        }
    }
}

/// The kernel's host name, or "unknown".
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
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
        if let Some(drift) = &self.drift {
            drift.annotate(&mut figures);
        }
        figures
    }

    pub fn new(machine: Machine, settings: Settings) -> Report {
        Report {
            schema_version: SCHEMA_VERSION,
            tool: Tool::default(),
            run: RunStamp::now(),
            machine,
            settings,
            warnings: Vec::new(),
            experiments: Experiments::default(),
            conditions: Vec::new(),
            drift: None,
            stat: None,
            pages: None,
            footprint: None,
            sweep: None,
        }
    }
}
