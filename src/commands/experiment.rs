//! An experiment's own subcommand (`memscope latency`, `bandwidth` …): its one
//! experiment, resolved by its room through the experiments' registry, measured through
//! `measuring`.

use std::process::ExitCode;

use super::measuring::{run_measuring, MeasuringPlan};
use super::output::{Outputs, Requested};
use super::{Command, Context, Document};
use crate::experiments::ExperimentCommand;
use crate::report::document::MachineView;

/// An experiment's own subcommand: its one experiment, resolved by its room.
pub struct Single;

impl Command for Single {
    type Args = ExperimentCommand;
    type Plan = MeasuringPlan;

    fn plan(command: &ExperimentCommand, context: &Context) -> anyhow::Result<MeasuringPlan> {
        let (measure, experiments) = command.resolve(context.machine()?)?;
        let args = command.measure();
        let outputs = Outputs::resolve(Requested::measuring(&args.json, &args.csv, &args.save))?;
        Ok(MeasuringPlan {
            name: command.name(),
            outputs,
            measure,
            experiments,
            skipped: Vec::new(),
            print_points: command.points(),
        })
    }

    fn run(plan: MeasuringPlan, context: Context) -> anyhow::Result<(Document, ExitCode)> {
        run_measuring(plan, context, MachineView::None)
    }
}

