//! The command registry: each command (`run` and the experiments' own subcommands,
//! `info`, `stat`, `pages`, `footprint`, `sweep`, `compare`, `history`, `restore`) is a
//! room implementing `Command`: its clap flags become a validated plan (every value
//! checked before anything runs or is written; a bad one is a `UsageError`, exit 2), the
//! plan runs and gives back a `Document` and the exit status, and the one writer
//! (`output::write`) prints the document's tables and writes every requested file.
//!
//! `registry!` below is the list of commands, one line each (with the help summary as its
//! doc comment): from it come the rooms' `mod` declarations, the `Subcommand` enum clap
//! parses, the `Plan` enum and the two matches over them. Adding a command is its room
//! here (`<name>.rs` or `<name>/`, with its `Command` implementation) plus its registry
//! line. A room's work lives in its own folder below the registry (`crate::stat`, …) or
//! inside its room; rooms never import each other: what two share (the measuring runner,
//! the writer) sits beside the registry as a module that is not a room.

use std::cell::OnceCell;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser;

use crate::cli::RunArgs;
use crate::report::RunStamp;
use crate::topology::{self, Machine};

mod measuring;
pub mod output;

pub use crate::error::SIMULATED_FAILURE;
pub use output::{Document, Outputs};

/// A command: its flags checked into a plan, and the plan run.
pub trait Command {
    /// Its clap flags, as parsed.
    type Args;
    /// What it runs, validated.
    type Plan;

    /// Checks every flag (against the machine, when it needs it) before anything runs or
    /// is written; a bad value is a `UsageError`.
    fn plan(args: &Self::Args, context: &Context) -> anyhow::Result<Self::Plan>;

    /// Runs the plan: the document to print and write, and the exit status.
    fn run(plan: Self::Plan, context: Context) -> anyhow::Result<(Document, ExitCode)>;
}

/// What every command may use: the machine (detected once, when first asked for) and
/// when the command started.
pub struct Context {
    machine: OnceCell<Machine>,
    pub stamp: RunStamp,
    pub started: std::time::Instant,
}

impl Context {
    pub fn new() -> Context {
        Context {
            machine: OnceCell::new(),
            stamp: RunStamp::now(),
            started: std::time::Instant::now(),
        }
    }

    /// The machine's topology, detected the first time it is asked for.
    pub fn machine(&self) -> anyhow::Result<&Machine> {
        if let Some(machine) = self.machine.get() {
            return Ok(machine);
        }
        let machine = topology::detect().context("reading the machine's topology")?;
        Ok(self.machine.get_or_init(|| machine))
    }

    /// The machine, owned, for the command that runs.
    pub fn into_machine(mut self) -> anyhow::Result<(Machine, Context)> {
        self.machine()?;
        let machine = self
            .machine
            .take()
            .context("the machine was just detected")?;
        Ok((machine, self))
    }
}

impl Default for Context {
    fn default() -> Context {
        Context::new()
    }
}

/// Declares the command rooms and derives the command tree from them: `Variant =>
/// room::Type` (a doc comment is the command's `--help` summary; clap attributes pass
/// through). Generates `mod room;`, the `Subcommand` enum (each variant holds its room's
/// `Args`), the `Plan` enum (each variant holds its room's plan), and the dispatch.
macro_rules! registry {
    ($($(#[$meta:meta])* $variant:ident => $room:ident::$kind:ident,)*) => {
        $(mod $room;)*

        /// The subcommands, one per room.
        #[derive(Debug, clap::Subcommand)]
        pub enum Subcommand {
            $($(#[$meta])* $variant(<$room::$kind as Command>::Args),)*
        }

        /// Which command runs, with everything it needs.
        #[derive(Debug)]
        pub enum Plan {
            $($variant(<$room::$kind as Command>::Plan),)*
        }

        impl Subcommand {
            /// The room's plan for these flags.
            fn plan(&self, context: &Context) -> anyhow::Result<Plan> {
                Ok(match self {
                    $(Subcommand::$variant(args) => {
                        Plan::$variant(<$room::$kind as Command>::plan(args, context)?)
                    })*
                })
            }
        }

        impl Plan {
            /// Runs the plan by its room.
            pub fn run(self, context: Context) -> anyhow::Result<(Document, ExitCode)> {
                match self {
                    $(Plan::$variant(plan) => <$room::$kind as Command>::run(plan, context),)*
                }
            }
        }
    };
}

registry! {
    /// The full profile of this machine, with quick defaults (the default command).
    Run => run::Profile,
    /// The machine as the OS and CPU report it: CPU, caches, TLBs, NUMA, pages, THP, clocks.
    Info => info::Info,
    // Each experiment's own subcommand, from the experiments' registry.
    #[command(flatten)]
    Experiment => experiment::Single,
    /// Count hardware and software events around a command, like `perf stat` with a
    /// memory focus: IPC, miss ratios, misses per kilo-instruction, dTLB miss rate, a
    /// bandwidth estimate and the run time. The command runs directly (no shell); its
    /// output is left alone, the table goes to stderr, and its exit status is memscope's.
    Stat => stat::Stat,
    /// Where a program's TLB misses and hot pages are (`pages record -- CMD`), and huge
    /// pages applied to exactly those regions and measured (`pages apply -- CMD`).
    Pages => pages::Pages,
    /// A binary's per-thread (TLS) and static data from its ELF and DWARF: each object in
    /// bytes, cache lines and shares of L1d and L2, struct layouts with holes and padding,
    /// and the per-thread total × threads against L3.
    Footprint => footprint::Footprint,
    /// Does a build or runtime knob change a program's speed, and why: every variant of
    /// the parameters (-p NAME=VALUES) built once, the benchmarks run interleaved in
    /// shuffled blocks, each variant's median with a 95% interval, its change against the
    /// baseline with a Mann–Whitney U test (~ when p ≥ 0.05), CPU time, peak RSS,
    /// counters and per-thread footprint.
    Sweep => sweep::Sweep,
    /// What holds a program back in memory, and which remedy buys how much: it runs
    /// again and again beside a cache pirate, a bandwidth bandit and a compute-only
    /// neighbour on another CPU, and with huge pages, interleaved in shuffled blocks; the
    /// verdict ranks the resources it is sensitive to, each with its measured effect,
    /// 95% interval and remedy.
    Advise => advise::Advise,
    /// Two or more reports side by side (runs, machines, a fleet): every figure they share
    /// with its change against the first, called a change only outside both runs' noise,
    /// and what differs between the machines named first. A directory compares every
    /// report in it, grouped by CPU model.
    Compare => compare::Compare,
    /// Saved runs (--save on a measuring command, or MEMSCOPE_SAVE=1) by host and date;
    /// with --check, each host's latest run against its earlier ones, exiting 1 on a
    /// regression beyond the noise.
    History => history::History,
    /// Undo what a killed memscope left changed (a grown hugetlbfs pool, its DAMON
    /// kdamond, a scratch directory), from its journal; every command does this first.
    Restore => restore::Restore,
}

/// The command line: a subcommand, or the profile's flags (`memscope` alone runs it).
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
    pub command: Option<Subcommand>,

    /// Flags of `memscope run` (the default command).
    #[command(flatten)]
    pub run: RunArgs,
}

/// The command line's plan: the profile without a subcommand, else the subcommand's room.
pub fn plan(cli: &Cli, context: &Context) -> anyhow::Result<Plan> {
    match &cli.command {
        None => Ok(Plan::Run(<run::Profile as Command>::plan(
            &cli.run, context,
        )?)),
        Some(command) => command.plan(context),
    }
}

/// Runs the command line; `Err` carries either a `UsageError` (exit 2) or a failure.
pub fn execute(cli: &Cli) -> anyhow::Result<ExitCode> {
    // Every other command first undoes what killed memscopes left (before the machine is
    // read: a grown hugetlbfs pool is part of it); `restore` does that as its work.
    if !matches!(cli.command, Some(Subcommand::Restore(_))) {
        crate::restore::at_start();
    }
    let context = Context::new();
    let plan = plan(cli, &context)?;
    let (document, code) = plan.run(context)?;
    output::write(document)?;
    Ok(code)
}

#[cfg(test)]
mod tests;
