//! `memscope pages`: runs the user's command under an access source (and huge pages, for
//! `apply`); like `stat`, no calibration or pinning, the table on stderr and the
//! command's exit status passed through.

use std::process::ExitCode;

use super::output::{report_document, Outputs, Requested, Shown};
use super::{Command, Context, Document};
use crate::error::UsageError;
use crate::pages::params::{PagesAction, PagesArgs};
use crate::pages::record::RecordError;
use crate::pages::{PagesPlan, PagesResult};
use crate::report::document::MachineView;
use crate::report::{Report, Settings};

pub struct Pages;

#[derive(Debug)]
pub struct PagesCommandPlan {
    pub outputs: Outputs,
    pub pages: PagesPlan,
}

impl Command for Pages {
    type Args = PagesArgs;
    type Plan = PagesCommandPlan;

    fn plan(args: &PagesArgs, _context: &Context) -> anyhow::Result<PagesCommandPlan> {
        let (sampling, pages) = match &args.action {
            PagesAction::Record(a) => (&a.sampling, PagesPlan::Record(a.plan()?)),
            PagesAction::Apply(a) => (&a.sampling, PagesPlan::Apply(Box::new(a.plan()?))),
        };
        let outputs =
            Outputs::resolve(Requested::program(&sampling.outputs).saving(&sampling.save))?;
        Ok(PagesCommandPlan { outputs, pages })
    }

    fn run(plan: PagesCommandPlan, context: Context) -> anyhow::Result<(Document, ExitCode)> {
        let (machine, context) = context.into_machine()?;
        let result = match crate::pages::run(&plan.pages) {
            Ok(result) => result,
            Err(RecordError::Spawn(e)) => return Err(e.into()),
            Err(RecordError::Source(why)) => return Err(UsageError::Unsupported(why).into()),
            Err(e) => return Err(e.into()),
        };
        let code = ExitCode::from(result.exit_status());
        let mut report = Report::new(machine, Settings::default());
        report.settings.sampling = match &result {
            PagesResult::Record(r) => format!(
                "one run of the command with address-space randomization off, sampled every \
                 {:.0} ms by the {} source",
                r.interval_ms,
                r.source.name()
            ),
            PagesResult::Apply(a) => format!(
                "one warm-up block, then {} blocks of three runs (4 KiB pages, top {} regions \
                 huge, all huge; order shuffled per block), address-space randomization off; \
                 speed-up = median over the blocks of the 4 KiB time / the arm's time; \
                 two-sided Wilcoxon signed-rank test of those ratios",
                a.repeat, a.top
            ),
        };
        report.pages = Some(result);
        let shown = Shown {
            machine: MachineView::None,
            points: false,
            to_stderr: true,
        };
        let document = report_document(report, "pages", plan.outputs, shown, &context);
        Ok((document, code))
    }
}
