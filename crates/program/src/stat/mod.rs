//! `memscope stat -- CMD`: counts a command's events (a memory-focused set by default)
//! over one or more runs, and derives IPC, miss ratios, misses per kilo-instruction, the
//! dTLB miss rate and a bandwidth estimate from the counts that exist on this machine.
//!
//! The counting itself (a run under counters, the event summaries and derived figures)
//! is `counting`'s, shared with `sweep`; here are what `stat` runs, its repeats
//! (stopping at a run that fails, whose status becomes memscope's) and its result.

pub mod figures;
pub mod view;

use std::ffi::OsString;

use serde::{Deserialize, Serialize};

use crate::counters::{Event, Probe, Reading};
use crate::counting::{Counting, CountingNote, DerivedFigure, EventStat, RunRecord};
use crate::platform::child::{ProcessTree, SpawnError, SpawnOptions, Termination};
use crate::stats::summary::Summary;

/// What `memscope stat` runs.
#[derive(Debug, Clone)]
pub struct StatPlan {
    /// Event groups as requested (before spreading over a hybrid CPU's core PMUs).
    pub groups: Vec<Vec<Event>>,
    pub repeat: usize,
    pub command: Vec<OsString>,
}

/// The result of `memscope stat`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatResult {
    pub command: Vec<String>,
    pub runs_requested: usize,
    pub runs: Vec<RunRecord>,
    pub events: Vec<EventStat>,
    pub derived: Vec<DerivedFigure>,
    /// Wall time from the exec to the exit, and the command's CPU time, in seconds.
    pub elapsed_s: Summary,
    pub user_s: Summary,
    pub system_s: Summary,
    /// How the last run ended; memscope exits with its shell status.
    pub termination: Termination,
    /// The cache line size used for the bandwidth estimate.
    pub line_bytes: u64,
    /// The full explanation of each distinct refusal, and other remarks.
    pub notes: Vec<CountingNote>,
    /// What the runs left running.
    #[serde(default)]
    pub process_tree: ProcessTree,
}

impl StatResult {
    /// memscope's exit status: the command's (128 + signal when it was killed).
    pub fn exit_status(&self) -> u8 {
        self.termination.shell_status().clamp(0, 255) as u8
    }
}

/// Runs the plan: `repeat` runs, stopping after a run that fails (its status is passed
/// through). Errors only when the command cannot be started at all.
pub fn run(plan: &StatPlan, probe: &Probe, line_bytes: u64) -> Result<StatResult, SpawnError> {
    let counting = Counting::new(&plan.groups, probe);
    let mut runs = Vec::new();
    let mut readings_per_run: Vec<Vec<Reading>> = Vec::new();
    let mut notes = Vec::new();
    let mut process_tree = ProcessTree::default();
    for index in 0..plan.repeat {
        let counted = counting.run(&plan.command, &SpawnOptions::default(), probe)?;
        if let Some(e) = &counted.read_error {
            notes.push(CountingNote::ReadFailed {
                run: index + 1,
                error: e.to_string(),
            });
        }
        let finished = counted.finished;
        process_tree.add(&finished);
        runs.push(counted.record());
        readings_per_run.push(counted.readings);
        if !finished.termination.success() {
            if index + 1 < plan.repeat {
                notes.push(CountingNote::StoppedEarly {
                    run: index + 1,
                    planned: plan.repeat,
                    termination: finished.termination,
                });
            }
            break;
        }
    }
    let (event_stats, derived, summary_notes) =
        counting.summarize(&runs, &readings_per_run, line_bytes);
    notes.extend(summary_notes);
    let summary = |f: fn(&RunRecord) -> f64| {
        Summary::of(&runs.iter().map(f).collect::<Vec<_>>()).expect("at least one run")
    };
    Ok(StatResult {
        command: plan
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        runs_requested: plan.repeat,
        elapsed_s: summary(|r| r.elapsed_s),
        user_s: summary(|r| r.user_s),
        system_s: summary(|r| r.system_s),
        termination: runs.last().expect("at least one run").termination,
        runs,
        events: event_stats,
        derived,
        line_bytes,
        notes,
        process_tree,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counting::default_groups;
    use crate::counting::test_support::figure;

    #[test]
    fn software_events_of_a_real_command_are_counted() {
        let plan = StatPlan {
            groups: default_groups(),
            repeat: 2,
            command: vec![
                "sh".into(),
                "-c".into(),
                "i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done".into(),
            ],
        };
        let probe = Probe::detect();
        let result = run(&plan, &probe, 64).unwrap();
        assert_eq!(result.runs.len(), 2);
        assert_eq!(result.exit_status(), 0);
        let stat = |name: &str| result.events.iter().find(|e| e.event == name).unwrap();
        let task_clock = stat("task-clock").count.expect("task-clock counted");
        assert!(task_clock.median > 0.0);
        // The command's CPU time and its task-clock agree within a scheduler tick or so.
        let cpu_s = result.user_s.median + result.system_s.median;
        assert!(task_clock.median / 1e9 <= result.elapsed_s.max * 1.05 + 0.002);
        assert!(cpu_s <= result.elapsed_s.max + 0.02);
        assert!(stat("page-faults").count.unwrap().median > 10.0);
        if !probe.has_hardware_pmu() {
            let cycles = stat("cycles");
            assert_eq!(cycles.count, None);
            let why = cycles.not_supported.as_deref().unwrap();
            assert!(why.starts_with("not supported: no hardware PMU"));
            let ipc = figure(&result.derived, "IPC").not_supported.as_deref();
            assert!(ipc.unwrap().starts_with("not supported: "));
            let sysfs = |n: &CountingNote| n.text().contains("/sys/bus/event_source/devices");
            assert!(result.notes.iter().any(sysfs));
        }
    }

    #[test]
    fn a_failing_run_stops_the_repeats_and_passes_its_status() {
        let plan = StatPlan {
            groups: default_groups(),
            repeat: 3,
            command: vec!["false".into()],
        };
        let result = run(&plan, &Probe::detect(), 64).unwrap();
        assert_eq!(result.runs.len(), 1);
        assert_eq!(result.exit_status(), 1);
        let stopped = |n: &CountingNote| n.text().contains("run 1 of 3 ended with exit status 1");
        assert!(result.notes.iter().any(stopped));
    }
}
