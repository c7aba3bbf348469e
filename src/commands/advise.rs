//! `memscope advise`: runs the user's command in arms that take a resource away or apply
//! a remedy (`crate::advise`); the verdict on stdout (or the files asked for), and the
//! program's exit status when its runs failed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::output::{report_document, Outputs, Requested, Shown};
use super::{Command, Context, Document};
use crate::advise::facts::{self, FactsSource, MachineFacts};
use crate::advise::{AdviseArgs, AdvisePlan};
use crate::history::{self, Access, History};
use crate::report::document::MachineView;
use crate::report::read::read_report;
use crate::report::{Report, Settings};
use crate::topology::Machine;

pub struct Advise;

#[derive(Debug)]
pub struct AdviseCommandPlan {
    pub outputs: Outputs,
    pub advise: AdvisePlan,
    /// The machine's figures, found at planning (a bad `--from` is exit 2 before anything
    /// runs).
    pub facts: MachineFacts,
}

impl Command for Advise {
    type Args = AdviseArgs;
    type Plan = AdviseCommandPlan;

    fn plan(args: &AdviseArgs, context: &Context) -> anyhow::Result<AdviseCommandPlan> {
        let outputs = Outputs::resolve(Requested::program(&args.outputs).saving(&args.save))?;
        let machine = context.machine()?;
        let advise = args.plan(&machine.allowed_cpus)?;
        let facts = find_facts(machine, advise.from.as_deref(), &context.stamp.host)?;
        Ok(AdviseCommandPlan {
            outputs,
            advise,
            facts,
        })
    }

    fn run(plan: AdviseCommandPlan, context: Context) -> anyhow::Result<(Document, ExitCode)> {
        let (machine, context) = context.into_machine()?;
        let result = crate::advise::run(&plan.advise, &machine, plan.facts)?;
        let code = ExitCode::from(result.exit_status());
        let mut report = Report::new(machine, Settings::default());
        report.settings.sampling = format!(
            "{} measured block(s); each block runs the program alone and every arm still \
             open once, in a shuffled order",
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

/// The machine's facts: from `from` (an error names a file that is not a readable report),
/// else `./memscope-report.json` of this host, else the history's newest profile of this
/// host, else the topology alone (`FactsSource::Measured`: the caller measures the rest).
fn find_facts(machine: &Machine, from: Option<&Path>, host: &str) -> anyhow::Result<MachineFacts> {
    let mut facts = facts::from_topology(machine);
    if let Some(path) = from {
        let report = read_report(path).map_err(|e| crate::error::UsageError::InvalidValue {
            flag: "--from",
            value: path.display().to_string(),
            expected: format!("a memscope JSON report ({e})"),
        })?;
        facts::take_figures(&mut facts, &report.figures()).map_err(|why| {
            crate::error::UsageError::InvalidValue {
                flag: "--from",
                value: path.display().to_string(),
                expected: format!("a memscope JSON report of a real machine: {why}"),
            }
        })?;
        facts.source = FactsSource::Report(path.display().to_string());
        return Ok(facts);
    }
    // The working directory's report only when it is the caller's (or root's) and of this
    // host: another user's file there could steer the co-runners' sizes.
    let local = PathBuf::from("memscope-report.json");
    let ours = std::fs::symlink_metadata(&local).is_ok_and(|m| {
        use std::os::unix::fs::MetadataExt;
        m.file_type().is_file()
            && (m.uid() == crate::platform::journal::effective_uid() || m.uid() == 0)
    });
    if let (true, Ok(report)) = (ours, read_report(&local)) {
        if report.run.host == host && facts::take_figures(&mut facts, &report.figures()) == Ok(true) {
            facts.source = FactsSource::Report(local.display().to_string());
            return Ok(facts);
        }
    }
    if let Some(found) = from_history(&mut facts, host) {
        facts.source = FactsSource::History(found);
        return Ok(facts);
    }
    Ok(facts)
}

/// The newest saved run of this host that measured latency or bandwidth.
fn from_history(facts: &mut MachineFacts, host: &str) -> Option<String> {
    let path = history::default_path()?;
    if !path.exists() {
        return None;
    }
    let db = History::open(&path, Access::Read).ok()?;
    let runs = db.runs(Some(host), None).ok()?;
    for run in runs.iter().rev() {
        let figures = db.figures(run.id).ok()?;
        if facts::take_figures(facts, &figures) == Ok(true) {
            return Some(format!("{}, {}", run.started, run.command));
        }
    }
    None
}

