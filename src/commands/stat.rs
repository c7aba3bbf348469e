//! `memscope stat`: runs the command with its counters; no calibration, pinning or
//! warnings about the machine, so memscope adds as little as possible to the run. The
//! table goes to stderr like perf stat's (stdout is the command's), and the command's
//! exit status is memscope's.

use std::process::ExitCode;

use super::output::{report_document, Outputs, Requested, Shown};
use super::{Command, Context, Document};
use crate::cli::StatArgs;
use crate::counters::event::accepted_forms;
use crate::counters::{parse_event_list, Probe};
use crate::error::UsageError;
use crate::report::document::MachineView;
use crate::report::{Report, Settings};
use crate::stat::StatPlan;

pub struct Stat;

#[derive(Debug)]
pub struct StatCommandPlan {
    pub outputs: Outputs,
    pub stat: StatPlan,
}

impl Command for Stat {
    type Args = StatArgs;
    type Plan = StatCommandPlan;

    fn plan(args: &StatArgs, _context: &Context) -> anyhow::Result<StatCommandPlan> {
        let outputs = Outputs::resolve(Requested::measuring(&args.json, &args.csv, &args.save))?;
        let groups = if args.events.is_empty() {
            crate::counting::default_groups()
        } else {
            let mut groups = Vec::new();
            for list in &args.events {
                groups.extend(
                    parse_event_list(list).map_err(|e| UsageError::InvalidValue {
                        flag: "-e/--events",
                        value: e.value.clone(),
                        expected: format!(
                            "an event ({}); accepted: {}",
                            e.reason,
                            accepted_forms()
                        ),
                    })?,
                );
            }
            groups
        };
        let stat = StatPlan {
            groups,
            repeat: args.repeat,
            command: args.command.clone(),
        };
        Ok(StatCommandPlan { outputs, stat })
    }

    fn run(plan: StatCommandPlan, context: Context) -> anyhow::Result<(Document, ExitCode)> {
        let (machine, context) = context.into_machine()?;
        let probe = Probe::detect();
        let line_bytes = machine.line_bytes();
        let result = crate::stat::run(&plan.stat, &probe, line_bytes)?;
        let code = ExitCode::from(result.exit_status());
        let mut report = Report::new(machine, Settings::default());
        report.settings.sampling = format!(
            "{} run(s) of the command, counted from its exec to its exit with the processes \
             and threads it starts; counts scaled by time enabled / time running when \
             multiplexed; median over the runs, spread = 1.4826·MAD/median",
            result.runs.len()
        );
        report.stat = Some(result);
        let shown = Shown {
            machine: MachineView::None,
            points: false,
            to_stderr: true,
        };
        let document = report_document(report, "stat", plan.outputs, shown, &context);
        Ok((document, code))
    }
}
