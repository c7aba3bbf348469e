//! `memscope info`: the machine as the OS and CPU report it, with the clocks calibrated
//! and the warnings that follow from the machine alone; nothing is measured.

use std::process::ExitCode;

use super::measuring::{calibrate_clocks, machine_warnings};
use super::output::{report_document, Outputs, Requested, Shown};
use super::{Command, Context, Document};
use crate::cli::InfoArgs;
use crate::report::document::MachineView;
use crate::report::{Report, Settings};

pub struct Info;

/// `info`'s plan: only its outputs.
#[derive(Debug)]
pub struct InfoPlan {
    pub outputs: Outputs,
}

impl Command for Info {
    type Args = InfoArgs;
    type Plan = InfoPlan;

    fn plan(args: &InfoArgs, _context: &Context) -> anyhow::Result<InfoPlan> {
        let outputs = Outputs::resolve(Requested {
            json: args.json.file(),
            csv: args.csv.file(),
            ..Requested::default()
        })?;
        Ok(InfoPlan { outputs })
    }

    fn run(plan: InfoPlan, context: Context) -> anyhow::Result<(Document, ExitCode)> {
        let (mut machine, context) = context.into_machine()?;
        let (timer, tsc_problem) = calibrate_clocks(&mut machine);
        let mut report = Report::new(machine.clone(), Settings::default());
        report.settings.timer = timer.name().to_string();
        report.warnings = machine_warnings(&machine, tsc_problem);
        let shown = Shown {
            machine: MachineView::Full,
            points: false,
            to_stderr: false,
        };
        let document = report_document(report, "info", plan.outputs, shown, &context);
        Ok((document, ExitCode::SUCCESS))
    }
}
