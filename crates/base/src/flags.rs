//! The flags and the parse helpers that commands and experiments share, below them all:
//! each output flag declared once (`JsonArg`, `CsvArg`, `HtmlArg`, `PrometheusArg`,
//! flattened into every command that writes that format; a command words its own help
//! with clap's `mut_arg`), the program commands' set of them (`OutputArgs`), what a
//! measuring run leaves beyond them (`SaveArgs`: the history database, the Prometheus
//! textfile), clap value parsers for whole numbers in a range (`count`), percentages
//! (`percent`, `effect`) and durations (`duration`), `parse_count` for a number inside a list, the
//! node a `--membind` names (`parse_membind`) and how
//! large a report file a flag names may be (`MAX_REPORT_BYTES`). Here, not in one
//! command's room, so that no room imports another's parameters to get them; nothing
//! here imports a room or the commands.

use std::time::Duration;

use crate::error::UsageError;
use crate::topology::cpu::format_cpu_list;
use crate::topology::Machine;

/// The largest report read (`compare`, `history --add`, `footprint --against`, `pages
/// apply --from`); a profile's report is a few hundred KiB. Here, below the rooms, so
/// that a room reading a report file names its cap without importing the report model.
pub const MAX_REPORT_BYTES: u64 = 256 << 20;

/// `--json FILE`, declared once for every command that writes JSON. A command whose
/// JSON is not the report (`info`, `history`) words its help with clap's `mut_arg("json",
/// …)` on its own flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct JsonArg {
    /// Write the JSON report to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
}

/// `--csv FILE`, declared once; each command that writes other tables than the program
/// commands' names them with `mut_arg("csv", …)`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CsvArg {
    /// Write the tables (every run, region or object) as CSV to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<String>,
}

/// `--html FILE`, declared once (`run` says where it goes by default with `mut_arg`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HtmlArg {
    /// Write the self-contained HTML report, with its plots, to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<String>,
}

/// `--prometheus FILE`, declared once.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PrometheusArg {
    /// Write the headline figures to FILE in Prometheus' text format (for node_exporter's
    /// textfile collector), atomically, labelled with the host and CPU model.
    #[arg(long, value_name = "FILE")]
    pub prometheus: Option<String>,
}

impl JsonArg {
    /// The file asked for, as given.
    pub fn file(&self) -> Option<&str> {
        self.json.as_deref()
    }
}

impl CsvArg {
    /// The file asked for, as given.
    pub fn file(&self) -> Option<&str> {
        self.csv.as_deref()
    }
}

impl HtmlArg {
    /// The file asked for, as given.
    pub fn file(&self) -> Option<&str> {
        self.html.as_deref()
    }
}

impl PrometheusArg {
    /// The file asked for, as given.
    pub fn file(&self) -> Option<&str> {
        self.prometheus.as_deref()
    }
}

/// The output files of the program commands (`pages`, `footprint`, `sweep`, `compare`):
/// the report as JSON, its tables as CSV and the self-contained HTML page.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OutputArgs {
    #[command(flatten)]
    pub json: JsonArg,

    #[command(flatten)]
    pub csv: CsvArg,

    #[command(flatten)]
    pub html: HtmlArg,
}

/// What becomes of a measuring run beyond its outputs: the history database and the
/// Prometheus textfile.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SaveArgs {
    /// Record the run in the history database (`memscope history` lists and checks it);
    /// also done when the environment sets MEMSCOPE_SAVE=1.
    #[arg(long)]
    pub save: bool,

    #[command(flatten)]
    pub prometheus: PrometheusArg,
}

/// A whole number from `min` to `max`.
pub fn parse_count(
    flag: &'static str,
    value: &str,
    min: usize,
    max: usize,
) -> Result<usize, UsageError> {
    count(min, max)(value).map_err(|expected| invalid(flag, value, &expected))
}

/// A clap value parser for a whole number from `min` to `max`; its error is what was
/// expected (`main` names the value and the flag beside it).
pub fn count(
    min: usize,
    max: usize,
) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    move |text| {
        (text.trim().parse::<usize>().ok())
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| format!("a whole number from {min} to {max}"))
    }
}

/// A flag's value that is not one of those expected.
pub fn invalid(flag: &'static str, value: &str, expected: &str) -> UsageError {
    UsageError::InvalidValue {
        flag,
        value: value.to_string(),
        expected: expected.to_string(),
    }
}

/// A clap value parser for a percentage above 0 and at most 100 (`2`, `0.5`, `5%`).
pub fn percent(text: &str) -> Result<f64, String> {
    (text.trim().trim_end_matches('%').parse::<f64>().ok())
        .filter(|p| p.is_finite() && *p > 0.0 && *p <= 100.0)
        .ok_or_else(|| "a percentage above 0 and at most 100, e.g. 2 or 0.5".to_string())
}

/// A clap value parser for an effect size: a percentage above 0 and below 100 (`5`, `2%`).
pub fn effect(text: &str) -> Result<f64, String> {
    (text.trim().trim_end_matches('%').parse::<f64>().ok())
        .filter(|p| p.is_finite() && *p > 0.0 && *p < 100.0)
        .ok_or_else(|| "a percentage above 0 and below 100".to_string())
}

/// A clap value parser for a duration: `90`, `90s`, `10m`, `1h`, `500ms`.
pub fn duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    (number.trim().parse::<f64>().ok())
        .map(|n| n * scale)
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 7.0 * 86400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| "a duration such as 90s, 10m or 1h (at most a week)".to_string())
}

/// The `--membind` value: a NUMA node of this machine with memory this process may use
/// (`usable`: `numa_policy::memory_nodes()`, None when it cannot be read). A node without
/// CPUs is allowed. Anything else is a usage error naming the nodes that would do.
pub fn parse_membind(
    text: &str,
    machine: &Machine,
    usable: Option<&[usize]>,
) -> Result<usize, UsageError> {
    let with_memory: Vec<usize> = machine
        .numa_nodes
        .iter()
        .filter(|n| n.memory_total_bytes > 0)
        .map(|n| n.id)
        .filter(|id| usable.is_none_or(|u| u.contains(id)))
        .collect();
    // Without NUMA information in the topology, what the kernel says is usable decides.
    let candidates = if machine.numa_nodes.is_empty() {
        usable.map(<[usize]>::to_vec).unwrap_or_default()
    } else {
        with_memory
    };
    let expected = if candidates.is_empty() {
        "a NUMA node with memory this process may use, and this system shows none".to_string()
    } else {
        format!(
            "a NUMA node with memory this process may use: {}",
            format_cpu_list(&candidates)
        )
    };
    text.trim()
        .parse::<usize>()
        .ok()
        .filter(|node| candidates.contains(node))
        .ok_or_else(|| UsageError::InvalidValue {
            flag: "--membind",
            value: text.to_string(),
            expected,
        })
}
