//! `memscope footprint`: reads the binary; nothing is run, measured or pinned.

use std::process::ExitCode;

use super::output::{report_document, Outputs, Requested, Shown};
use super::{Command, Context, Document};
use crate::binary::FootprintPlan;
use crate::error::UsageError;
use crate::footprint::params::FootprintArgs;
use crate::report::document::MachineView;
use crate::report::{Report, Settings};

pub struct Footprint;

#[derive(Debug)]
pub struct FootprintCommandPlan {
    pub outputs: Outputs,
    pub footprint: FootprintPlan,
}

impl Command for Footprint {
    type Args = FootprintArgs;
    type Plan = FootprintCommandPlan;

    fn plan(args: &FootprintArgs, _context: &Context) -> anyhow::Result<FootprintCommandPlan> {
        let outputs = Outputs::resolve(Requested::program(&args.outputs))?;
        let footprint = args.plan()?;
        Ok(FootprintCommandPlan { outputs, footprint })
    }

    fn run(plan: FootprintCommandPlan, context: Context) -> anyhow::Result<(Document, ExitCode)> {
        let (machine, context) = context.into_machine()?;
        let result = crate::binary::footprint(&plan.footprint, &machine).map_err(|e| {
            UsageError::InvalidValue {
                flag: "BINARY",
                value: e.path,
                expected: format!(
                    "an ELF executable or library that can be read ({})",
                    e.reason
                ),
            }
        })?;
        let mut report = Report::new(machine, Settings::default());
        report.settings.sampling = "read from the file: nothing was run or measured".to_string();
        report.footprint = Some(result);
        let shown = Shown {
            machine: MachineView::None,
            points: false,
            to_stderr: false,
        };
        let document = report_document(report, "footprint", plan.outputs, shown, &context);
        Ok((document, ExitCode::SUCCESS))
    }
}
