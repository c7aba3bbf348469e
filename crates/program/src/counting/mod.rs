//! Counting a command's events: the default memory-focused event set, running a command
//! under counters (`Counting::run`: forked paused with `platform::child`, every event group
//! opened on the child with `enable_on_exec`, released and waited for, so counting covers
//! the command from its exec to its exit and nothing of memscope), and the count model
//! built from the runs: each event's summary (`EventStat`) and the figures derived from the
//! counts that exist on this machine (`DerivedFigure`: IPC, miss ratios, misses per
//! kilo-instruction, the dTLB miss rate, a bandwidth estimate). `memscope stat` and
//! `memscope sweep` both count their runs with it.
//!
//! Counts are scaled for multiplexing and flagged; over several runs the median and the
//! spread (1.4826·MAD/median) are reported. An event the machine cannot count keeps its
//! row, with `not supported: <reason>`, and so does every figure derived from it.

use std::ffi::OsString;

use serde::{Deserialize, Serialize};

use crate::counters::{CounterGroup, Event, EventKind, Probe, Reading, Refusal, Scaled, Target};
use crate::platform::child::{self, Finished, SpawnError, SpawnOptions, Termination};
use crate::stats::summary::Summary;

mod notes;
pub use notes::CountingNote;

/// The default event set: the software events, then hardware pairs grouped so each
/// ratio comes from the same time slices when the PMU has to multiplex.
pub(crate) const DEFAULT_EVENTS: &[&[&str]] = &[
    &[
        "task-clock",
        "context-switches",
        "cpu-migrations",
        "page-faults",
    ],
    &["cycles", "instructions"],
    &["cache-references", "cache-misses"],
    &["L1-dcache-loads", "L1-dcache-load-misses"],
    &["LLC-loads", "LLC-load-misses"],
    &["dTLB-loads", "dTLB-load-misses"],
    &["dTLB-store-misses"],
];

pub fn default_groups() -> Vec<Vec<Event>> {
    DEFAULT_EVENTS
        .iter()
        .map(|group| {
            group
                .iter()
                .map(|name| Event::parse(name).expect("built-in event names parse"))
                .collect()
        })
        .collect()
}

/// One counted run as kept: its times, how it ended and its scaled counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub elapsed_s: f64,
    pub user_s: f64,
    pub system_s: f64,
    pub termination: Termination,
    /// Scaled counts in the order of `StatResult::events`; `None` when not counted.
    pub counts: Vec<Option<f64>>,
}

/// One event over all runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventStat {
    /// The name as requested, `pmu/name/` for one core PMU of a hybrid CPU.
    pub event: String,
    pub kind: EventKind,
    /// Median, MAD, min and max of the scaled counts over the runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Summary>,
    /// Percentage of the enabled time the event had a hardware counter (lowest run);
    /// below 100 the count is extrapolated (multiplexed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_pct: Option<f64>,
    #[serde(default)]
    pub multiplexed: bool,
    /// Only user-mode execution was counted (kernel counting not permitted).
    #[serde(default)]
    pub user_only: bool,
    /// Could not join the group it was listed in; scheduled alone.
    #[serde(default)]
    pub own_group: bool,
    /// `not supported: <reason>` when the event could not be counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_supported: Option<String>,
}

/// A figure computed from counts, per run, then summarised over the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DerivedFigure {
    pub name: String,
    pub unit: String,
    /// How it is computed, e.g. "instructions / cycles".
    pub formula: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Summary>,
    /// `not supported: <reason>` when an input event was not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_supported: Option<String>,
}

/// Counters around runs of a command: the requested groups spread over the core PMUs
/// (one copy per core type on a hybrid CPU), opened on each run's child before its exec.
pub(crate) struct Counting {
    groups: Vec<Vec<Event>>,
    /// Every event, in the order of `RunRecord::counts`.
    pub events: Vec<Event>,
}

/// One counted run: how it ended, and the scaled count of every event.
pub(crate) struct CountedRun {
    pub finished: Finished,
    /// Scaled counts in the order of `Counting::events`; `None` when not counted.
    pub counts: Vec<Option<f64>>,
    pub readings: Vec<Reading>,
    /// Why the counters could not be read after the run, if they could not.
    pub read_error: Option<String>,
}

impl CountedRun {
    /// The run as kept.
    pub fn record(&self) -> RunRecord {
        RunRecord {
            elapsed_s: self.finished.elapsed.as_secs_f64(),
            user_s: self.finished.user.as_secs_f64(),
            system_s: self.finished.system.as_secs_f64(),
            termination: self.finished.termination,
            counts: self.counts.clone(),
        }
    }
}

impl Counting {
    pub fn new(groups: &[Vec<Event>], probe: &Probe) -> Counting {
        let groups = probe.expand_for_core_pmus(groups);
        let events = groups.iter().flatten().cloned().collect();
        Counting { groups, events }
    }

    /// Runs `command` once, counted from its exec to its exit with the processes and
    /// threads it starts. Errors only when it cannot be started.
    pub fn run(
        &self,
        command: &[OsString],
        options: &SpawnOptions,
        probe: &Probe,
    ) -> Result<CountedRun, SpawnError> {
        let paused = child::spawn_paused_with(command, options)?;
        let counters =
            CounterGroup::open_groups(&self.groups, Target::ChildBeforeExec(paused.pid()), probe);
        let finished = paused.run()?;
        let (readings, read_error) = match counters.read() {
            Ok(readings) => (readings, None),
            Err(e) => (Vec::new(), Some(e.to_string())),
        };
        let counts = (0..self.events.len())
            .map(|i| readings.get(i).and_then(scaled))
            .collect();
        Ok(CountedRun {
            finished,
            counts,
            readings,
            read_error,
        })
    }

    /// Every event's summary over `runs`, the derived figures, and the notes that explain
    /// refusals, multiplexing and user-only counting.
    pub(crate) fn summarize(
        &self,
        runs: &[RunRecord],
        readings: &[Vec<Reading>],
        line_bytes: u64,
    ) -> (Vec<EventStat>, Vec<DerivedFigure>, Vec<CountingNote>) {
        let stats = event_stats(&self.events, runs, readings);
        let mut notes: Vec<CountingNote> = Vec::new();
        for note in refusals(readings) {
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
        if stats.iter().any(|e| e.multiplexed) {
            notes.push(CountingNote::Multiplexed);
        }
        if stats.iter().any(|e| e.user_only) {
            notes.push(CountingNote::UserOnly);
        }
        let derived = derive(&self.events, &stats, runs, line_bytes);
        (stats, derived, notes)
    }
}

fn scaled(reading: &Reading) -> Option<f64> {
    match &reading.result {
        Ok(count) => match count.scaled {
            Scaled::Counted { value, .. } => Some(value as f64),
            Scaled::NotCounted => None,
        },
        Err(_) => None,
    }
}

/// The short form of a refusal for a table row; the full advice goes in the notes.
fn short_reason(refusal: &Refusal) -> String {
    match refusal {
        Refusal::NoHardwarePmu => "no hardware PMU (e.g. a VM without PMU passthrough)".into(),
        Refusal::NotPermitted {
            paranoid: Some(level),
        } => format!("not permitted (perf_event_paranoid is {level})"),
        Refusal::NotPermitted { paranoid: None } => "not permitted".into(),
        other => other.to_string(),
    }
}

/// The full explanation of every refusal whose table row shows a shorter form.
fn refusals(readings: &[Vec<Reading>]) -> Vec<CountingNote> {
    readings
        .iter()
        .flatten()
        .filter_map(|r| r.result.as_ref().err())
        .filter(|u| short_reason(&u.reason) != u.reason.to_string())
        .map(|u| CountingNote::NotSupported {
            reason: u.reason.to_string(),
        })
        .collect()
}

fn event_stats(events: &[Event], runs: &[RunRecord], readings: &[Vec<Reading>]) -> Vec<EventStat> {
    events
        .iter()
        .enumerate()
        .map(|(i, event)| {
            let values: Vec<f64> = runs.iter().filter_map(|r| r.counts[i]).collect();
            let counts: Vec<_> = readings
                .iter()
                .filter_map(|r| r.get(i))
                .filter_map(|r| r.result.as_ref().ok())
                .collect();
            let refusal = readings
                .iter()
                .filter_map(|r| r.get(i))
                .find_map(|r| r.result.as_ref().err());
            let running_pct = counts
                .iter()
                .filter(|c| c.time_enabled > 0)
                .map(|c| (c.time_running as f64 / c.time_enabled as f64 * 100.0).min(100.0))
                .reduce(f64::min);
            let not_supported = match (values.is_empty(), refusal) {
                (false, _) => None,
                (true, Some(u)) => Some(format!("not supported: {}", short_reason(&u.reason))),
                (true, None) => Some(
                    "not counted: the event never got a hardware counter (the PMU was busy or \
                     the group cannot be scheduled)"
                        .to_string(),
                ),
            };
            EventStat {
                event: event.name.clone(),
                kind: event.kind,
                count: Summary::of(&values),
                running_pct,
                multiplexed: counts.iter().any(|c| {
                    matches!(
                        c.scaled,
                        Scaled::Counted {
                            multiplexed: true,
                            ..
                        }
                    )
                }),
                user_only: counts.iter().any(|c| c.user_only),
                own_group: counts.iter().any(|c| c.own_group),
                not_supported,
            }
        })
        .collect()
}

/// Identifies a generic event whatever it was called (`cycles`, `cpu-cycles`,
/// `cpu_core/cycles/`): its kind and the low half of its config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct EventId(EventKind, u64);

fn id_of(event: &Event) -> Option<EventId> {
    match event.kind {
        EventKind::Raw => None,
        kind => Some(EventId(kind, event.config & 0xffff_ffff)),
    }
}

/// What a derived figure divides.
#[derive(Debug, Clone, Copy)]
enum Denominator {
    Event(EventId),
    ElapsedNs,
}

/// A derived figure: numerator × scale / denominator.
struct Formula {
    name: &'static str,
    unit: &'static str,
    numerator: EventId,
    denominator: Denominator,
    /// Multiplies the ratio (100 for %, 1000 for MPKI, the line size for bytes).
    scale: f64,
}

/// Inputs of the derived figures, by the events present in one run.
struct RunCounts<'a> {
    events: &'a [Event],
    run: &'a RunRecord,
}

impl RunCounts<'_> {
    /// The sum of the counts of every copy of `id` (one per core PMU on a hybrid CPU);
    /// `None` when no copy was counted.
    fn total(&self, id: EventId) -> Option<f64> {
        self.events
            .iter()
            .zip(&self.run.counts)
            .filter(|(e, _)| id_of(e) == Some(id))
            .filter_map(|(_, c)| *c)
            .reduce(|a, b| a + b)
    }
}

/// Every derived figure, with its formula as shown: the events by their perf names, which
/// also give their ids.
fn formulas(line_bytes: u64) -> Vec<(Formula, String)> {
    let id = |name: &str| {
        let event = Event::parse(name).expect("built-in event names parse");
        id_of(&event).expect("built-in events are generic")
    };
    let formula = |name, unit, numerator: &str, denominator: Option<&str>, scale| Formula {
        name,
        unit,
        numerator: id(numerator),
        denominator: denominator.map_or(Denominator::ElapsedNs, |d| Denominator::Event(id(d))),
        scale,
    };
    let ratio = |name, unit, numerator: &str, denominator: &str| {
        let text = format!("{numerator} / {denominator}");
        (formula(name, unit, numerator, Some(denominator), 1.0), text)
    };
    let percent = |name, numerator: &str, denominator: &str| {
        let text = format!("{numerator} / {denominator}");
        (
            formula(name, "%", numerator, Some(denominator), 100.0),
            text,
        )
    };
    let mpki = |name, numerator: &str| {
        let text = format!("1000 × {numerator} / instructions");
        let unit = "misses/1000 instr";
        (
            formula(name, unit, numerator, Some("instructions"), 1000.0),
            text,
        )
    };
    let per_second = |name, unit, numerator: &str, scale| {
        let text = format!("{numerator} / elapsed");
        (formula(name, unit, numerator, None, scale), text)
    };
    let line = line_bytes as f64;
    vec![
        ratio("IPC", "instructions/cycle", "instructions", "cycles"),
        ratio("clock", "GHz", "cycles", "task-clock"),
        per_second("CPUs utilized", "", "task-clock", 1.0),
        percent("cache miss ratio", "cache-misses", "cache-references"),
        percent(
            "L1d load miss ratio",
            "L1-dcache-load-misses",
            "L1-dcache-loads",
        ),
        percent("LLC load miss ratio", "LLC-load-misses", "LLC-loads"),
        percent("dTLB load miss rate", "dTLB-load-misses", "dTLB-loads"),
        mpki("L1d load MPKI", "L1-dcache-load-misses"),
        mpki("LLC load MPKI", "LLC-load-misses"),
        mpki("cache-miss MPKI", "cache-misses"),
        mpki("dTLB load MPKI", "dTLB-load-misses"),
        mpki("dTLB store MPKI", "dTLB-store-misses"),
        per_second("page faults", "/s", "page-faults", 1e9),
        (
            formula(
                "LLC-miss read bandwidth",
                "GB/s",
                "LLC-load-misses",
                None,
                line,
            ),
            format!(
                "LLC-load-misses × {line_bytes} B / elapsed: demand reads that missed the LLC; \
                 prefetches and write-backs not included"
            ),
        ),
        (
            formula("cache-miss bandwidth", "GB/s", "cache-misses", None, line),
            format!("cache-misses × {line_bytes} B / elapsed: one line per miss"),
        ),
    ]
}

/// The derived figures whose input events were all requested: their value per run,
/// summarised, or why an input was not counted.
fn derive(
    events: &[Event],
    stats: &[EventStat],
    runs: &[RunRecord],
    line_bytes: u64,
) -> Vec<DerivedFigure> {
    let present = |id: EventId| events.iter().any(|e| id_of(e) == Some(id));
    let reason = |id: EventId| {
        events
            .iter()
            .zip(stats)
            .filter(|(e, _)| id_of(e) == Some(id))
            .find_map(|(_, s)| s.not_supported.clone())
    };
    formulas(line_bytes)
        .into_iter()
        .filter(|(f, _)| {
            present(f.numerator)
                && match f.denominator {
                    Denominator::Event(d) => present(d),
                    Denominator::ElapsedNs => true,
                }
        })
        .map(|(f, formula)| {
            let values: Vec<f64> = runs
                .iter()
                .filter_map(|run| {
                    let counts = RunCounts { events, run };
                    let numerator = counts.total(f.numerator)?;
                    let denominator = match f.denominator {
                        Denominator::Event(d) => counts.total(d)?,
                        Denominator::ElapsedNs => run.elapsed_s * 1e9,
                    };
                    (denominator > 0.0).then(|| numerator * f.scale / denominator)
                })
                .collect();
            let value = Summary::of(&values);
            let not_supported = match value {
                Some(_) => None,
                None => Some(
                    [
                        Some(f.numerator),
                        match f.denominator {
                            Denominator::Event(d) => Some(d),
                            Denominator::ElapsedNs => None,
                        },
                    ]
                    .into_iter()
                    .flatten()
                    .find_map(reason)
                    .unwrap_or_else(|| "not computed: a denominator was zero".to_string()),
                ),
            };
            DerivedFigure {
                name: f.name.to_string(),
                unit: f.unit.to_string(),
                formula,
                value,
                not_supported,
            }
        })
        .collect()
}

/// What the tests of the counting commands share (this module's and `stat`'s).
#[cfg(any(test, feature = "test-support"))]
pub mod test_support {
    use super::DerivedFigure;

    /// The derived figure of this name; panics naming it and listing the others.
    pub fn figure<'a>(derived: &'a [DerivedFigure], name: &str) -> &'a DerivedFigure {
        derived
            .iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("no {name} in {derived:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::figure;
    use super::*;
    use crate::counters::parse_event_list;

    fn events(list: &str) -> Vec<Event> {
        parse_event_list(list)
            .unwrap()
            .into_iter()
            .flatten()
            .collect()
    }

    fn run_with(counts: &[Option<f64>], elapsed_s: f64) -> RunRecord {
        RunRecord {
            elapsed_s,
            user_s: 0.0,
            system_s: 0.0,
            termination: Termination::Exited(0),
            counts: counts.to_vec(),
        }
    }

    #[test]
    fn derived_figures_follow_from_the_counts() {
        let evs = events(
            "task-clock,page-faults,cycles,instructions,LLC-loads,LLC-load-misses,dTLB-loads,dTLB-load-misses",
        );
        let runs = [
            run_with(&[1e9, 500.0, 3e9, 6e9, 1e8, 2.5e7, 2e9, 2e6].map(Some), 1.0),
            run_with(
                &[1e9, 700.0, 3e9, 6.6e9, 1e8, 2.5e7, 2e9, 2e6].map(Some),
                1.0,
            ),
        ];
        let derived = derive(&evs, &event_stats(&evs, &runs, &[]), &runs, 64);
        // 2.5e7 misses per 6e9 and 6.6e9 instructions: MPKI medians of 4.1667 and 3.7879.
        for (name, want) in [
            ("IPC", 2.1),
            ("clock", 3.0),
            ("CPUs utilized", 1.0),
            ("LLC load miss ratio", 25.0),
            ("dTLB load miss rate", 0.1),
            ("LLC load MPKI", (25.0 / 6.0 + 25.0 / 6.6) / 2.0),
            ("LLC-miss read bandwidth", 1.6),
            ("page faults", 600.0),
        ] {
            let median = figure(&derived, name).value.unwrap().median;
            assert!((median - want).abs() < 1e-9, "{name}: {median}");
        }
        // Figures whose inputs were not requested are left out.
        assert!(derived.iter().all(|d| d.name != "cache miss ratio"));
        assert!(derived.iter().all(|d| d.name != "L1d load MPKI"));
    }

    #[test]
    fn a_figure_with_an_uncounted_input_says_why() {
        let evs = events("task-clock,cycles,instructions");
        let runs = [run_with(&[Some(1e6), None, None], 0.01)];
        let mut stats = event_stats(&evs, &runs, &[]);
        stats[1].not_supported = Some("not supported: no hardware PMU".into());
        stats[2].not_supported = Some("not supported: no hardware PMU".into());
        let derived = derive(&evs, &stats, &runs, 64);
        let ipc = figure(&derived, "IPC");
        assert_eq!(ipc.value, None);
        assert_eq!(
            ipc.not_supported.as_deref(),
            Some("not supported: no hardware PMU")
        );
        assert!(figure(&derived, "CPUs utilized").value.is_some());
    }

    #[test]
    fn hybrid_copies_are_summed_and_aliases_match() {
        let on = |name: &str, pmu: &str| Event::parse(name).unwrap().on_pmu(pmu);
        let evs = ["cpu-cycles", "instructions"].map(|n| [on(n, "cpu_core"), on(n, "cpu_atom")]);
        let evs = evs.concat();
        let runs = [run_with(&[1e9, 1e9, 3e9, 1e9].map(Some), 1.0)];
        let derived = derive(&evs, &event_stats(&evs, &runs, &[]), &runs, 64);
        assert!((figure(&derived, "IPC").value.unwrap().median - 2.0).abs() < 1e-9);
    }

    #[test]
    fn default_set_is_the_memory_set() {
        let names: Vec<String> = default_groups()
            .into_iter()
            .flatten()
            .map(|e| e.name)
            .collect();
        let wanted = "cycles instructions cache-references cache-misses L1-dcache-load-misses \
                      LLC-loads LLC-load-misses dTLB-loads dTLB-load-misses dTLB-store-misses \
                      task-clock page-faults context-switches cpu-migrations";
        let missing: Vec<&str> = (wanted.split_whitespace())
            .filter(|w| !names.iter().any(|n| n == w))
            .collect();
        assert!(missing.is_empty(), "{missing:?} missing from {names:?}");
    }
}
