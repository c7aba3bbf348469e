//! The flags of `run`, `info` and `stat` (clap) and nothing else: raw values, validated
//! later (by each command's `commands::Command::plan`, through each room's
//! `<X>Config::resolve`), so every error can quote the value and say what was expected.
//! The command tree is the registry's (`commands::Cli`); each experiment's flags are in
//! its room (`experiments::<name>::params`), the measuring flags in `experiments::params`,
//! the other commands' in their rooms' `params`.

use clap::Args;

use crate::flags::{CsvArg, HtmlArg, JsonArg, SaveArgs};

pub use crate::experiments::params::MeasureArgs;

#[derive(Debug, Clone, Default, Args)]
#[command(mut_arg("html", |a| a.help("Write the HTML report here instead of DIR/memscope-report.html")))]
#[command(after_help = crate::examples::RUN)]
pub struct RunArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Directory for memscope-report.json and memscope-report.html (made when missing; its
    /// parent must exist).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub out: String,

    #[command(flatten)]
    pub html: HtmlArg,

    /// Skip the file reads (their quick form writes about 81 MiB of test files in a fresh
    /// directory under the current one, removed afterwards).
    #[arg(long)]
    pub no_files: bool,
}

#[derive(Debug, Clone, Default, Args)]
#[command(
    mut_arg("json", |a| a.help("Write the `machine` JSON object's report to FILE ('-' for stdout)")),
    mut_arg("csv", |a| a.help("Write the cache table as CSV to FILE ('-' for stdout)"))
)]
#[command(after_help = crate::examples::INFO)]
pub struct InfoArgs {
    #[command(flatten)]
    pub json: JsonArg,

    #[command(flatten)]
    pub csv: CsvArg,
}

#[derive(Debug, Clone, Default, Args)]
#[command(mut_arg("csv", |a| {
    a.help("Write the counts and derived figures as CSV to FILE ('-' for stdout)")
}))]
#[command(after_help = crate::examples::STAT)]
pub struct StatArgs {
    /// Events to count, comma-separated; '{a,b}' groups events so they are counted over
    /// the same time; repeatable. Generic names (cycles, instructions, cache-misses,
    /// LLC-load-misses, dTLB-load-misses, task-clock, page-faults …), raw rNNNN,
    /// cpu/event=0xNN,umask=0xNN/, cpu_core/…/ or cpu_atom/…/ [default: task-clock,
    /// context-switches, cpu-migrations, page-faults, {cycles,instructions},
    /// {cache-references,cache-misses}, {L1-dcache-loads,L1-dcache-load-misses},
    /// {LLC-loads,LLC-load-misses}, {dTLB-loads,dTLB-load-misses}, dTLB-store-misses].
    #[arg(short = 'e', long = "events", value_name = "EVENTS")]
    pub events: Vec<String>,

    /// Run the command N times and report the median and spread of every count; stops
    /// early at a run that fails.
    #[arg(short = 'r', long, value_name = "N", default_value = "1", value_parser = crate::flags::count(1, 10_000))]
    pub repeat: usize,

    #[command(flatten)]
    pub json: JsonArg,

    #[command(flatten)]
    pub csv: CsvArg,

    #[command(flatten)]
    pub save: SaveArgs,

    /// The command and its arguments (put `--` before it when it has options of its own).
    #[arg(
        value_name = "COMMAND",
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<std::ffi::OsString>,
}
