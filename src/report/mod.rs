//! The one report model.
//!
//! Every measuring and program command builds a `Report`: its serde layout is the JSON
//! (`render::json` prints it as it is; `read` reads one back and checks it). `document`
//! turns it into sections (the registry's results framed by `machine` and `settings`)
//! and picks its Prometheus figures; the generic renderers in `render` (terminal, CSV,
//! HTML + SVG, Prometheus text) draw them without knowing any experiment, and
//! `render::output` writes each file atomically.

use serde::{Deserialize, Serialize};

use crate::advise::AdviseResult;
use crate::binary::FootprintResult;
use crate::experiments::drift::DriftResult;
pub use crate::experiments::Results as Experiments;
use crate::pages::PagesResult;
use crate::platform::arena::PagePolicy;
pub use crate::platform::arena::PagesObtained;
use crate::session::conditions::ExperimentConditions;
use crate::stat::StatResult;
use crate::sweep::SweepResult;
use crate::topology::Machine;
use crate::view::figure::{Figure, Figures};

pub mod document;
pub mod machine;
pub mod read;
pub mod settings;
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
    /// `memscope advise`: what holds a program back in memory, and the remedies measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advise: Option<AdviseResult>,
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
    /// memscope's arguments as given, after the program name (`["stat", "--", "true"]`):
    /// with `settings.command` it tells runs of different programs or flags apart
    /// (`history::identity`). Empty in reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub argv: Vec<String>,
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
            argv: std::env::args_os()
                .skip(1)
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        }
    }

    /// The command line as a shell would take it ("memscope stat -- sleep 0.2"), or ""
    /// when the report did not record it.
    pub fn command_line(&self) -> String {
        if self.argv.is_empty() {
            return String::new();
        }
        let words = std::iter::once("memscope").chain(self.argv.iter().map(String::as_str));
        shlex::try_join(words).unwrap_or_else(|_| {
            // A NUL byte cannot be quoted: the words as they are.
            format!("memscope {}", self.argv.join(" "))
        })
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
    /// Page policy asked for: "4k", "thp", "2m", "1g" in reports; none ("") for the
    /// commands that measure nothing.
    #[serde(with = "settings::pages_requested")]
    pub pages_requested: Option<PagePolicy>,
    /// What the buffers actually got, verified after first touch.
    pub pages_obtained: Option<PagesObtained>,
    pub quick: bool,
    /// Timed trials per point (the median is reported).
    pub repetitions: usize,
    /// Target duration of one timed trial, milliseconds.
    pub trial_ms: f64,
    pub max_size_bytes: u64,
    /// "tsc", "cntvct (generic timer, 25 MHz)" (aarch64) or "clock_gettime(CLOCK_MONOTONIC)".
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
        figures.extend(self.advise.iter().flat_map(Figures::figures));
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
            advise: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads a report and writes it again: every field, the enums among them, must come
    /// back as the same JSON.
    fn round_trip(text: &str) {
        let original: serde_json::Value = serde_json::from_str(text).unwrap();
        let report: Report = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_value(&report).unwrap(), original);
    }

    /// A real report, as `memscope run --quick --json FILE` wrote it, read and written
    /// again. Set MEMSCOPE_ROUND_TRIP to its path.
    #[test]
    #[ignore = "needs a report: MEMSCOPE_ROUND_TRIP=report.json"]
    fn a_real_report_round_trips() {
        let path = std::env::var("MEMSCOPE_ROUND_TRIP").unwrap();
        round_trip(&std::fs::read_to_string(path).unwrap());
    }

    #[test]
    fn a_report_of_every_sample_result_round_trips() {
        use crate::experiments::{bandwidth, latency, miss_impact, mlp, tlb};
        let mut report = Report::new(Machine::sample(), Default::default());
        let e = &mut report.experiments;
        e.latency = Some(latency::samples::latency());
        e.miss_impact = Some(miss_impact::samples::sample());
        e.bandwidth = Some(bandwidth::samples::bandwidth(
            &[1, 2],
            &bandwidth::samples::KERNELS,
            &bandwidth::samples::KERNELS[..2],
            2,
        ));
        e.mlp = Some(mlp::samples::mlp());
        e.tlb = Some(tlb::samples::tlb());
        e.interleave = Some(crate::experiments::interleave::samples::interleave());
        round_trip(&serde_json::to_string(&report).unwrap());
    }

    #[test]
    fn the_result_round_trips_through_the_report_json() {
        let mut report = Report::new(Machine::default(), Settings::default());
        report.experiments.miss_impact = Some(crate::experiments::miss_impact::samples::sample());
        let json = crate::render::json::to_bytes(&report);
        let back: Report = serde_json::from_slice(&json).unwrap();
        assert_eq!(
            back.experiments.miss_impact.unwrap().rows,
            crate::experiments::miss_impact::samples::sample().rows,
            "rows survive the round trip"
        );
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let row = &value["experiments"]["miss_impact"]["rows"][2];
        assert_eq!(row["pattern"], "sequential");
        assert_eq!(row["footprint_bytes"], 128 * crate::units::MIB);
        assert!(row["amat_ns"].is_null() && row["llc_miss_rate"].is_null());
        assert_eq!(
            row["amat_not_computed"],
            "not computed: L1 misses not supported: no hardware PMU (a VM)"
        );
        assert_eq!(row["misses"]["levels"][2]["level"], "llc");
        assert_eq!(
            value["experiments"]["miss_impact"]["rows"][1]["llc_miss_rate"],
            1.0
        );
    }

    #[test]
    fn counters_round_trip_and_are_left_out_when_not_asked_for() {
        let mut report = Report::new(Machine::default(), Settings::default());
        report.experiments.latency =
            Some(crate::experiments::latency::samples::latency_counted(false));
        let text = String::from_utf8(crate::render::json::to_bytes(&report)).unwrap();
        assert!(!text.contains("\"counters\""), "{text}");

        report.experiments.latency =
            Some(crate::experiments::latency::samples::latency_counted(true));
        report.experiments.stride = Some(crate::experiments::stride::samples::stride_counted(true));
        let mut tlb = crate::experiments::tlb::samples::tlb();
        tlb.rows[0].counters = Some(crate::counters::samples::access_counts(0.5));
        report.experiments.tlb = Some(tlb);
        let back: Report = serde_json::from_slice(&crate::render::json::to_bytes(&report)).unwrap();
        let (sent, got) = (&report.experiments, &back.experiments);
        let latency = |e: &Experiments| {
            let l = e.latency.as_ref().unwrap();
            let random = l.random_points.as_ref().unwrap();
            (l.points.iter().chain(random))
                .map(|p| p.counters.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(latency(sent), latency(got));
        let stride = |e: &Experiments| {
            let rows = &e.stride.as_ref().unwrap().rows;
            rows.iter().map(|r| r.counters.clone()).collect::<Vec<_>>()
        };
        assert_eq!(stride(sent), stride(got));
        let tlb = |e: &Experiments| {
            let rows = &e.tlb.as_ref().unwrap().rows;
            rows.iter().map(|r| r.counters.clone()).collect::<Vec<_>>()
        };
        assert_eq!(tlb(sent), tlb(got));
        let value: serde_json::Value =
            serde_json::from_slice(&crate::render::json::to_bytes(&report)).unwrap();
        let l2 = &value["experiments"]["latency"]["points"][0]["counters"]["levels"][1];
        assert_eq!(l2["level"], "l2");
        assert!(l2["per_access"].is_null());
        assert_eq!(l2["not_supported"], "not supported: no generic L2 event");
    }
}
