//! The flags of `memscope compare` and their resolution into what it reads.

use super::load::{self, Inputs};
use crate::error::UsageError;
use crate::flags::OutputArgs;

#[derive(Debug, Clone, clap::Args)]
#[command(after_help = crate::examples::COMPARE)]
pub struct CompareArgs {
    /// Reports to compare (JSON written by `memscope --json` or the profile's
    /// memscope-report.json), or directories: every report in them, grouped by CPU model.
    /// The first report is the one the others are set against.
    #[arg(value_name = "REPORT", required = true, num_args = 1..)]
    pub reports: Vec<String>,

    #[command(flatten)]
    pub outputs: OutputArgs,
}

impl CompareArgs {
    /// Reads every report given; a file that is not a memscope report is an error.
    pub fn inputs(&self) -> Result<Inputs, UsageError> {
        load::load(&self.reports)
    }
}
