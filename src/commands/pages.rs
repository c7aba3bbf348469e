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

    fn plan(args: &PagesArgs, context: &Context) -> anyhow::Result<PagesCommandPlan> {
        let machine = context.machine()?;
        let (sampling, pages) = match &args.action {
            PagesAction::Record(a) => (&a.sampling, PagesPlan::Record(a.plan(machine)?)),
            PagesAction::Apply(a) => (
                &a.sampling,
                PagesPlan::Apply(Box::new(a.plan(machine)?)),
            ),
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
            // The program failed in the warm-up: its status is memscope's, as a failed
            // run's always is, with why on stderr and no tables of runs never made.
            Err(e @ RecordError::WarmUp { termination, .. }) => {
                let status = termination.shell_status().clamp(1, 255) as u8;
                let document = Document {
                    text_to_stderr: true,
                    ..Document::text(format!("memscope: error: {e}\n"))
                };
                return Ok((document, ExitCode::from(status)));
            }
            Err(e) => return Err(e.into()),
        };
        let code = ExitCode::from(result.exit_status());
        let mut report = Report::new(machine, Settings::default());
        report.settings.sampling = match &result {
            PagesResult::Record(r) => format!(
                "one run of the command with address-space randomization off, sampled every \
                 {:.0} ms by the {} source{}",
                r.interval_ms,
                r.source.name(),
                adapted(r)
            ),
            PagesResult::Apply(a) => format!(
                "one warm-up block, then {} blocks of three runs (4 KiB pages, top {} regions \
                 huge, all huge; order shuffled per block), address-space randomization off; \
                 speed-up = median over the blocks of the 4 KiB time / the arm's time; \
                 two-sided Wilcoxon signed-rank test of those ratios{}",
                a.repeat,
                a.top,
                if a.record.intervals_used_ms.len() > 1 {
                    format!("; the regions' record{}", adapted(&a.record))
                } else {
                    String::new()
                }
            ),
        };
        let membind = match &plan.pages {
            PagesPlan::Record(r) => r.membind,
            PagesPlan::Apply(a) => a.record.membind,
        };
        if let Some(node) = membind {
            let bound = format!("; every run's memory bound to node {node} (MPOL_BIND)");
            report.settings.sampling.push_str(&bound);
        }
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

/// The interval's history when it was shortened during the record (empty otherwise).
fn adapted(r: &crate::pages::record::PagesRecord) -> String {
    if r.intervals_used_ms.len() < 2 {
        return String::new();
    }
    format!(
        " (interval shortened {} ms while the hottest regions counted every page in every \
         interval)",
        r.intervals_used_ms
            .iter()
            .map(|ms| format!("{ms:.0}"))
            .collect::<Vec<_>>()
            .join(" → ")
    )
}
