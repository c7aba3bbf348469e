//! The flags of `memscope pages record` and `memscope pages apply` (clap), and their
//! resolution into plans: every value is checked before the command runs.

use std::ffi::OsString;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::apply::{ApplyPlan, OkStatus};
use super::record::{PagesRecord, RecordPlan, Top};
use super::sources::SourceChoice;
use crate::error::UsageError;
use crate::flags::{parse_count, parse_membind, OutputArgs, SaveArgs};
use crate::platform::numa_policy;
use crate::topology::Machine;

#[derive(Debug, Clone, Args)]
#[command(after_help = crate::examples::PAGES)]
pub struct PagesArgs {
    #[command(subcommand)]
    pub action: PagesAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum PagesAction {
    /// Run a command and rank its 2 MiB virtual regions by TLB misses (PMU sampling) or,
    /// without a PMU, by how hot they are (DAMON, or the page tables' accessed bits).
    /// Address-space randomization is off for the command, so its regions keep their
    /// addresses from run to run; its exit status is memscope's.
    Record(RecordArgs),
    /// Back exactly the top regions of a command with huge pages (no change to the
    /// program) and measure what that buys against 4 KiB pages and against huge pages
    /// everywhere, in interleaved runs; the huge pages obtained are verified per region.
    Apply(ApplyArgs),
}

/// Flags shared by `record` and `apply`, and the command.
#[derive(Debug, Clone, Args)]
pub struct SamplingArgs {
    /// The regions to list (record) or to back with huge pages (apply): a number, or a
    /// share of the signal (`50%`: the fewest top regions that hold half of it).
    #[arg(long, value_name = "N|P%", default_value = "8")]
    pub top: String,

    /// Where accesses come from: pmu (precise sampling: PEBS, IBS, SPE), damon (the
    /// kernel's access monitor), refs (page-table accessed bits through /proc; works
    /// everywhere) or auto (the first of these that works here).
    #[arg(long, value_name = "SOURCE", value_enum, default_value_t = SourceChoice::Auto)]
    pub source: SourceChoice,

    /// Sampling interval in milliseconds [default: 100, shortened down to 5 while the
    /// hottest regions count every page in every interval (refs source); a value given
    /// here is kept].
    #[arg(long, value_name = "MS", value_parser = clap::builder::TypedValueParser::map(crate::flags::count(10, 60_000), |ms| ms as u64))]
    pub interval: Option<u64>,

    /// Run the command with its memory bound to this NUMA node (MPOL_BIND, as `numactl
    /// --membind`) in every run: a node with memory this process may use, CPU-less ones
    /// (CXL, HBM) included.
    #[arg(long, value_name = "NODE")]
    pub membind: Option<String>,

    #[command(flatten)]
    pub outputs: OutputArgs,

    #[command(flatten)]
    pub save: SaveArgs,

    /// The command and its arguments (put `--` before it).
    #[arg(
        value_name = "COMMAND",
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<OsString>,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = crate::examples::PAGES_RECORD)]
pub struct RecordArgs {
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

/// `--huge`: the huge pages `pages apply` backs the regions with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HugeKind {
    // Transparent huge pages.
    Thp,
    // hugetlb 2 MiB pages from the pool.
    #[value(name = "2m")]
    Hugetlb2m,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = crate::examples::PAGES_APPLY)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub sampling: SamplingArgs,

    /// Take the regions from a `pages record --json` report instead of recording first.
    #[arg(long, value_name = "RECORD.json")]
    pub from: Option<String>,

    /// Huge pages to use: thp (transparent huge pages: madvise and collapse, no pool
    /// needed) or 2m (hugetlb pages from the pool, under the program's new mmaps).
    #[arg(long, value_name = "KIND", value_enum, default_value_t = HugeKind::Thp)]
    pub huge: HugeKind,

    /// Timed blocks; each runs every arm (4 KiB, top N huge, all huge) once, in a shuffled
    /// order, so the arms are compared within a block.
    #[arg(long, value_name = "R", default_value = "7", value_parser = crate::flags::count(2, 1000))]
    pub repeat: usize,

    /// The exit status of a successful run: a number, or `any`. By default the status of
    /// the first 4 KiB warm-up run (a program that exits 1 in every run is timed, not
    /// failed); a run with another status is a failed run.
    #[arg(long, value_name = "N|any")]
    pub ok_status: Option<String>,

    /// Pass the program's standard output and error through instead of capturing them
    /// (a failed run shows the tail of its captured standard error).
    #[arg(long)]
    pub show_output: bool,
}

fn invalid(flag: &'static str, value: &str, expected: &str) -> UsageError {
    UsageError::InvalidValue {
        flag,
        value: value.to_string(),
        expected: expected.to_string(),
    }
}

/// The interval `pages` starts sampling at when none is given.
const DEFAULT_INTERVAL_MS: u64 = 100;

/// `--top`: `8` or `50%`.
pub(crate) fn parse_top(text: &str) -> Result<Top, UsageError> {
    let expected = "a whole number from 1 to 100000, or a share of the signal from 0 to 100 \
                    followed by % (e.g. 50%)";
    let t = text.trim();
    match t.strip_suffix('%') {
        Some(pct) => pct
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|p| p.is_finite() && *p > 0.0 && *p <= 100.0)
            .map(Top::Share)
            .ok_or_else(|| invalid("--top", text, expected)),
        None => parse_count("--top", t, 1, 100_000)
            .map(Top::Count)
            .map_err(|_| invalid("--top", text, expected)),
    }
}

/// `--ok-status`: a status from 0 to 255, or `any`.
pub(crate) fn parse_ok_status(text: &str) -> Result<OkStatus, UsageError> {
    match text.trim() {
        "any" => Ok(OkStatus::Any),
        t => parse_count("--ok-status", t, 0, 255)
            .map(|n| OkStatus::Code(n as i32))
            .map_err(|_| {
                invalid(
                    "--ok-status",
                    text,
                    "an exit status from 0 to 255, or `any`",
                )
            }),
    }
}

impl SamplingArgs {
    fn record_plan(&self, machine: &Machine) -> Result<RecordPlan, UsageError> {
        let top = parse_top(&self.top)?;
        let source = self.source;
        let ms = self.interval.unwrap_or(DEFAULT_INTERVAL_MS);
        Ok(RecordPlan {
            top,
            source,
            interval: Duration::from_millis(ms),
            adaptive: self.interval.is_none(),
            capture: false,
            membind: (self.membind.as_deref())
                .map(|text| parse_membind(text, machine, numa_policy::memory_nodes().as_deref()))
                .transpose()?,
            command: self.command.clone(),
        })
    }
}

impl RecordArgs {
    pub fn plan(&self, machine: &Machine) -> Result<RecordPlan, UsageError> {
        self.sampling.record_plan(machine)
    }
}

impl ApplyArgs {
    pub fn plan(&self, machine: &Machine) -> Result<ApplyPlan, UsageError> {
        let mut record = self.sampling.record_plan(machine)?;
        record.capture = !self.show_output;
        let ok_status = self.ok_status.as_deref().map(parse_ok_status).transpose()?;
        let hugetlb = self.huge == HugeKind::Hugetlb2m;
        let repeat = self.repeat;
        let from = self.from.as_deref().map(read_record).transpose()?;
        Ok(ApplyPlan {
            top: record.top,
            from,
            from_path: self.from.clone(),
            hugetlb,
            repeat,
            ok_status,
            interval_given: self.sampling.interval.is_some(),
            record,
        })
    }
}

/// The record in a memscope JSON report (of `pages record`, or the one `pages apply`
/// made).
pub(crate) fn read_record(path: &str) -> Result<PagesRecord, UsageError> {
    let bad = |reason: String| UsageError::InvalidValue {
        flag: "--from",
        value: path.to_string(),
        expected: format!("a JSON report of `memscope pages record --json` ({reason})"),
    };
    // A regular file only, read to the report cap (a FIFO or device is refused at once).
    let bytes = crate::platform::user_file::read_capped(
        std::path::Path::new(path),
        crate::flags::MAX_REPORT_BYTES,
    )
    .map_err(|e| bad(e.to_string()))?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
    let pages = value
        .get("pages")
        .ok_or_else(|| bad("it has no `pages` object".to_string()))?;
    let record = pages
        .get("record")
        .or_else(|| pages.get("apply").and_then(|a| a.get("record")))
        .ok_or_else(|| bad("its `pages` object holds no record".to_string()))?;
    serde_json::from_value(record.clone())
        .map_err(|e| bad(format!("its record does not read: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_is_a_count_or_a_share_and_anything_else_names_itself() {
        assert_eq!(parse_top("8").unwrap(), Top::Count(8));
        assert_eq!(parse_top("50%").unwrap(), Top::Share(50.0));
        assert_eq!(parse_top(" 12.5 %").unwrap(), Top::Share(12.5));
        for bad in ["0", "0%", "101%", "-5%", "x%", "half", "nan%"] {
            let e = parse_top(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("--top"), "{e}");
        }
    }

    #[test]
    fn ok_status_is_a_status_or_any() {
        assert_eq!(parse_ok_status("1").unwrap(), OkStatus::Code(1));
        assert_eq!(parse_ok_status("any").unwrap(), OkStatus::Any);
        for bad in ["256", "-1", "ok", ""] {
            let e = parse_ok_status(bad).unwrap_err().to_string();
            assert!(e.contains("--ok-status") && e.contains("any"), "{e}");
        }
    }
}
