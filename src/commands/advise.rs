//! `memscope advise`: runs the user's command in arms that take a resource away or apply
//! a remedy (`crate::advise`); the verdict on stdout (or the files asked for), and the
//! program's exit status when its runs failed.

use std::process::ExitCode;

use super::output::{report_document, Outputs, Requested, Shown};
use super::{Command, Context, Document};
use crate::advise::{AdviseArgs, AdvisePlan};
use crate::report::document::MachineView;
use crate::report::{Report, Settings};

pub struct Advise;

#[derive(Debug)]
pub struct AdviseCommandPlan {
    pub outputs: Outputs,
    pub advise: AdvisePlan,
}

impl Command for Advise {
    type Args = AdviseArgs;
    type Plan = AdviseCommandPlan;

    fn plan(args: &AdviseArgs, context: &Context) -> anyhow::Result<AdviseCommandPlan> {
        let outputs = Outputs::resolve(Requested::program(&args.outputs).saving(&args.save))?;
        let advise = args.plan(&context.machine()?.allowed_cpus)?;
        Ok(AdviseCommandPlan { outputs, advise })
    }

    fn run(plan: AdviseCommandPlan, context: Context) -> anyhow::Result<(Document, ExitCode)> {
        let (machine, context) = context.into_machine()?;
        let result = crate::advise::run(&plan.advise, &machine, &context.stamp.host)?;
        let code = ExitCode::from(result.exit_status());
        let mut report = Report::new(machine, Settings::default());
        report.settings.sampling = format!(
            "{} measured block(s) in two stages; each block runs every arm of its stage once, \
             in a shuffled order",
            result.blocks
        );
        report.advise = Some(result);
        let shown = Shown {
            machine: MachineView::None,
            points: false,
            to_stderr: false,
        };
        let document = report_document(report, "advise", plan.outputs, shown, &context);
        Ok((document, code))
    }
}
