//! The command registry: each command (`run` and the experiments' own subcommands,
//! `info`, `stat`, `pages`, `footprint`, `sweep`, `compare`, `history`, `restore`) is a
//! room implementing `Command`: its clap flags become a validated plan (every value
//! checked before anything runs or is written; a bad one is a `UsageError`, exit 2), the
//! plan runs and gives back a `Document` and the exit status, and the one writer
//! (`output::write`) prints the document's tables and writes every requested file.
//!
//! `Plan` has one variant per command, and `plan` and `run` below are the only two
//! matches over the commands: adding a command is its room (its folder, and its small
//! `Command` implementation here) plus one line in each. The implementations live here,
//! above the rooms, so that no room imports the registry or another room.

use std::cell::OnceCell;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::cli::{Cli, Command as Subcommand};
use crate::report::RunStamp;
use crate::topology::{self, Machine};

mod compare;
mod footprint;
mod history;
mod info;
mod measure;
pub mod output;
mod pages;
mod restore;
mod stat;
mod sweep;

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

/// Which command runs, with everything it needs.
#[derive(Debug)]
pub enum Plan {
    /// The profile (`memscope run`, the default command).
    Run(measure::MeasuringPlan),
    /// One experiment's own subcommand (`memscope latency` …).
    Experiment(measure::MeasuringPlan),
    Info(info::InfoPlan),
    Stat(stat::StatCommandPlan),
    Pages(pages::PagesCommandPlan),
    Footprint(footprint::FootprintCommandPlan),
    Sweep(sweep::SweepCommandPlan),
    Compare(compare::ComparePlan),
    History(history::HistoryCommandPlan),
    Restore,
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

    /// A context with the machine already known (tests).
    pub fn with_machine(machine: Machine) -> Context {
        let context = Context::new();
        let _ = context.machine.set(machine);
        context
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

/// The command line's plan: the registry's one match from subcommands to rooms.
pub fn plan(cli: &Cli, context: &Context) -> anyhow::Result<Plan> {
    Ok(match &cli.command {
        None => Plan::Run(measure::Profile::plan(&cli.run, context)?),
        Some(Subcommand::Run(args)) => Plan::Run(measure::Profile::plan(args, context)?),
        Some(Subcommand::Experiment(command)) => {
            Plan::Experiment(measure::Single::plan(command, context)?)
        }
        Some(Subcommand::Info(args)) => Plan::Info(info::Info::plan(args, context)?),
        Some(Subcommand::Stat(args)) => Plan::Stat(stat::Stat::plan(args, context)?),
        Some(Subcommand::Pages(args)) => Plan::Pages(pages::Pages::plan(args, context)?),
        Some(Subcommand::Footprint(args)) => {
            Plan::Footprint(footprint::Footprint::plan(args, context)?)
        }
        Some(Subcommand::Sweep(args)) => Plan::Sweep(sweep::Sweep::plan(args, context)?),
        Some(Subcommand::Compare(args)) => Plan::Compare(compare::Compare::plan(args, context)?),
        Some(Subcommand::History(args)) => Plan::History(history::History::plan(args, context)?),
        Some(Subcommand::Restore) => {
            restore::Restore::plan(&(), context)?;
            Plan::Restore
        }
    })
}

/// Runs a plan by its room.
pub fn run(plan: Plan, context: Context) -> anyhow::Result<(Document, ExitCode)> {
    match plan {
        Plan::Run(plan) => measure::Profile::run(plan, context),
        Plan::Experiment(plan) => measure::Single::run(plan, context),
        Plan::Info(plan) => info::Info::run(plan, context),
        Plan::Stat(plan) => stat::Stat::run(plan, context),
        Plan::Pages(plan) => pages::Pages::run(plan, context),
        Plan::Footprint(plan) => footprint::Footprint::run(plan, context),
        Plan::Sweep(plan) => sweep::Sweep::run(plan, context),
        Plan::Compare(plan) => compare::Compare::run(plan, context),
        Plan::History(plan) => history::History::run(plan, context),
        Plan::Restore => restore::Restore::run((), context),
    }
}

/// Runs the command line; `Err` carries either a `UsageError` (exit 2) or a failure.
pub fn execute(cli: &Cli) -> anyhow::Result<ExitCode> {
    // Every other command first undoes what killed memscopes left (before the machine is
    // read: a grown hugetlbfs pool is part of it); `restore` does that as its work.
    if !matches!(cli.command, Some(Subcommand::Restore)) {
        crate::restore::at_start();
    }
    let context = Context::new();
    let plan = plan(cli, &context)?;
    let (document, code) = run(plan, context)?;
    output::write(document)?;
    Ok(code)
}

#[cfg(test)]
mod tests;
