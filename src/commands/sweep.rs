//! `memscope sweep`: builds the variants and runs the benchmarks interleaved; like
//! `stat`, no calibration or pinning (the benchmarks run where the OS puts them).

use std::process::ExitCode;

use super::output::{report_document, Outputs, Requested, Shown};
use super::{Command, Context, Document};
use crate::counters::Probe;
use crate::error::UsageError;
use crate::report::document::MachineView;
use crate::report::{Report, Settings};
use crate::sweep::params::SweepArgs;
use crate::sweep::SweepPlan;

pub struct Sweep;

#[derive(Debug)]
pub struct SweepCommandPlan {
    pub outputs: Outputs,
    pub sweep: SweepPlan,
}

impl Command for Sweep {
    type Args = SweepArgs;
    type Plan = SweepCommandPlan;

    fn plan(args: &SweepArgs, _context: &Context) -> anyhow::Result<SweepCommandPlan> {
        let outputs = Outputs::resolve(Requested::program(&args.outputs).saving(&args.save))?;
        let sweep = args.plan()?;
        Ok(SweepCommandPlan { outputs, sweep })
    }

    fn run(plan: SweepCommandPlan, context: Context) -> anyhow::Result<(Document, ExitCode)> {
        let (machine, context) = context.into_machine()?;
        let probe = Probe::detect();
        let result = crate::sweep::run(&plan.sweep, &machine, &probe)
            .map_err(|e| UsageError::CannotProceed(e.0))?;
        let code = ExitCode::from(result.exit_status());
        let mut report = Report::new(machine, Settings::default());
        report.settings.sampling = format!(
            "{} warm-up and {} measured blocks; each block runs every benchmark × variant \
             once, in a shuffled order; counters as memscope stat counts them",
            result.warmup_blocks, result.blocks
        );
        report.sweep = Some(result);
        let shown = Shown {
            machine: MachineView::None,
            points: false,
            to_stderr: false,
        };
        let document = report_document(report, "sweep", plan.outputs, shown, &context);
        Ok((document, code))
    }
}
