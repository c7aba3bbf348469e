//! The flags and the parse helper that commands and experiments share, below them all:
//! the output files (`OutputArgs`), what a measuring run leaves beyond them (`SaveArgs`:
//! the history database, the Prometheus textfile) and whole-number flags
//! (`parse_count`), and how large a report file a flag names may be
//! (`MAX_REPORT_BYTES`). Here, not in one command's room, so that no room imports
//! another's parameters to get them; nothing here imports a room, the plan or the
//! commands.

use crate::error::UsageError;

/// The largest report read (`compare`, `history --add`, `footprint --against`, `pages
/// apply --from`); a profile's report is a few hundred KiB. Here, below the rooms, so
/// that a room reading a report file names its cap without importing the report model.
pub const MAX_REPORT_BYTES: u64 = 256 << 20;

/// The output files of the program commands (`pages`, `footprint`, `sweep`): the report
/// as JSON, its tables as CSV and the self-contained HTML page.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OutputArgs {
    /// Write the JSON report to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,

    /// Write the tables (every run, region or object) as CSV to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<String>,

    /// Write the self-contained HTML report, with its plots, to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<String>,
}

/// What becomes of a measuring run beyond its outputs: the history database and the
/// Prometheus textfile.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SaveArgs {
    /// Record the run in the history database (`memscope history` lists and checks it);
    /// also done when the environment sets MEMSCOPE_SAVE=1.
    #[arg(long)]
    pub save: bool,

    /// Write the headline figures to FILE in Prometheus' text format (for node_exporter's
    /// textfile collector), atomically, labelled with the host and CPU model.
    #[arg(long, value_name = "FILE")]
    pub prometheus: Option<String>,
}

/// A whole number from `min` to `max`.
pub fn parse_count(
    flag: &'static str,
    value: &str,
    min: usize,
    max: usize,
) -> Result<usize, UsageError> {
    value
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| invalid(flag, value, &format!("a whole number from {min} to {max}")))
}

/// A flag's value that is not one of those expected.
pub fn invalid(flag: &'static str, value: &str, expected: &str) -> UsageError {
    UsageError::InvalidValue {
        flag,
        value: value.to_string(),
        expected: expected.to_string(),
    }
}
