//! Command-line definitions (clap) and nothing else: raw values, validated later (by each
//! command's `commands::Command::plan`, through each room's `<X>Config::resolve`), so every error can quote the value
//! and say what was expected. The subcommands and `run`'s, `info`'s and `stat`'s flags are
//! here; each experiment's flags are in its room (`experiments::<name>::params`), the
//! measuring flags in `experiments::params`.

use clap::{Args, Parser, Subcommand};

use crate::flags::{CsvArg, HtmlArg, JsonArg, SaveArgs};

pub use crate::experiments::params::MeasureArgs;
pub use crate::experiments::ExperimentCommand;

#[derive(Debug, Parser)]
#[command(
    name = "memscope",
    version,
    about = "Measure this machine's memory hierarchy: latency of every level, where each ends, and more",
    long_about = "Measure this machine's memory hierarchy.\n\n\
                  Without a subcommand, memscope runs the full profile ('memscope run'): \
                  topology, the latency ladder with its levels, a cache-miss-impact table \
                  with an AMAT estimate, bandwidth per level, the stride matrix, a \
                  loaded-latency curve, DRAM memory-level parallelism and the TLB levels, \
                  written as a table, memscope-report.json and a \
                  self-contained memscope-report.html.",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Flags of `memscope run` (the default command).
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The full profile of this machine, with quick defaults (the default command).
    Run(RunArgs),
    /// The machine as the OS and CPU report it: CPU, caches, TLBs, NUMA, pages, THP, clocks.
    Info(InfoArgs),
    // Each experiment's own subcommand, from the registry (experiments::ExperimentCommand).
    #[command(flatten)]
    Experiment(ExperimentCommand),
    /// Count hardware and software events around a command, like `perf stat` with a
    /// memory focus: IPC, miss ratios, misses per kilo-instruction, dTLB miss rate, a
    /// bandwidth estimate and the run time. The command runs directly (no shell); its
    /// output is left alone, the table goes to stderr, and its exit status is memscope's.
    Stat(StatArgs),
    /// Where a program's TLB misses and hot pages are (`pages record -- CMD`), and huge
    /// pages applied to exactly those regions and measured (`pages apply -- CMD`).
    Pages(crate::pages::params::PagesArgs),
    /// A binary's per-thread (TLS) and static data from its ELF and DWARF: each object in
    /// bytes, cache lines and shares of L1d and L2, struct layouts with holes and padding,
    /// and the per-thread total × threads against L3.
    Footprint(crate::footprint::params::FootprintArgs),
    /// Does a build or runtime knob change a program's speed, and why: every variant of
    /// the parameters (-p NAME=VALUES) built once, the benchmarks run interleaved in
    /// shuffled blocks, each variant's median with a 95% interval, its change against the
    /// baseline with a Mann–Whitney U test (~ when p ≥ 0.05), CPU time, peak RSS,
    /// counters and per-thread footprint.
    Sweep(crate::sweep::params::SweepArgs),
    /// Two or more reports side by side (runs, machines, a fleet): every figure they share
    /// with its change against the first, called a change only outside both runs' noise,
    /// and what differs between the machines named first. A directory compares every
    /// report in it, grouped by CPU model.
    Compare(crate::compare::params::CompareArgs),
    /// Saved runs (--save on a measuring command, or MEMSCOPE_SAVE=1) by host and date;
    /// with --check, each host's latest run against its earlier ones, exiting 1 on a
    /// regression beyond the noise.
    History(crate::history::params::HistoryArgs),
    /// Undo what a killed memscope left changed (a grown hugetlbfs pool, its DAMON
    /// kdamond, a scratch directory), from its journal; every command does this first.
    Restore,
}

#[derive(Debug, Clone, Default, Args)]
#[command(mut_arg("html", |a| a.help("Write the HTML report here instead of DIR/memscope-report.html")))]
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
    #[arg(short = 'r', long, value_name = "N", default_value = "1")]
    pub repeat: String,

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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// The output flags are declared once (`flags`) and worded per command with
    /// `mut_arg`: each command's own help, and the shared one where it has none.
    #[test]
    fn output_flags_are_worded_per_command() {
        let cli = Cli::command();
        let help = |command: Option<&str>, flag: &str| {
            let command = command.map_or(&cli, |name| {
                cli.find_subcommand(name).expect("the subcommand exists")
            });
            let arg = command.get_arguments().find(|a| a.get_id() == flag);
            arg.and_then(|a| a.get_help()).map(|h| h.to_string())
        };
        let stdout = "to FILE ('-' for stdout)";
        let cases = [
            (
                Some("info"),
                "json",
                "Write the `machine` JSON object's report",
            ),
            (Some("info"), "csv", "Write the cache table as CSV"),
            (Some("stat"), "json", "Write the JSON report"),
            (
                Some("stat"),
                "csv",
                "Write the counts and derived figures as CSV",
            ),
            (
                Some("history"),
                "json",
                "Write the listing (or the check) as JSON",
            ),
            (Some("latency"), "csv", "Write the result rows as CSV"),
            (Some("run"), "csv", "Write the result rows as CSV"),
            (None, "csv", "Write the result rows as CSV"),
            (
                Some("footprint"),
                "csv",
                "Write the tables (every run, region or object) as CSV",
            ),
        ];
        for (command, flag, words) in cases {
            assert_eq!(
                help(command, flag).as_deref(),
                Some(format!("{words} {stdout}").as_str()),
                "{command:?} --{flag}"
            );
        }
        let run_html = "Write the HTML report here instead of DIR/memscope-report.html";
        assert_eq!(help(Some("run"), "html").as_deref(), Some(run_html));
        assert_eq!(help(None, "html").as_deref(), Some(run_html));
        let html = "Write the self-contained HTML report, with its plots, to FILE";
        assert_eq!(help(Some("sweep"), "html").as_deref(), Some(html));
        assert_eq!(help(Some("info"), "html"), None);
    }
}
