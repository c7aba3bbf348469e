//! The comparable figures of memscope stat (for compare and history; they describe the
//! user's command, not the machine, so none is exported): per event its median count,
//! each derived figure, and the elapsed, user and system times, each with its spread over
//! the runs when there were several.

use std::collections::HashSet;

use super::StatResult;
use crate::stats::summary::Summary;
use crate::view::figure::{Better, Figure, Figures};

impl Figures for StatResult {
    fn figures(&self) -> Vec<Figure> {
        let mut figures = Vec::new();
        let mut seen = HashSet::new();
        for e in &self.events {
            let Some(count) = &e.count else { continue };
            // The same event listed twice is one figure.
            if !seen.insert(e.event.as_str()) {
                continue;
            }
            let key = format!("event.{}.count", e.event);
            let (value, unit) = match e.event.as_str() {
                "task-clock" | "cpu-clock" => (count.median / 1e6, "ms"),
                _ => (count.median, ""),
            };
            figures.push(
                Figure::new("stat", key, &e.event, unit, value, event_better(&e.event))
                    .spread(spread_of(count)),
            );
        }
        for d in &self.derived {
            let Some(value) = &d.value else { continue };
            figures.push(
                Figure::new(
                    "stat",
                    format!("derived.{}", d.name.replace(' ', "_")),
                    &d.name,
                    &d.unit,
                    value.median,
                    derived_better(&d.name),
                )
                .spread(spread_of(value)),
            );
        }
        let times = [
            ("elapsed_s", "elapsed time", &self.elapsed_s),
            ("user_s", "user CPU time", &self.user_s),
            ("system_s", "system CPU time", &self.system_s),
        ];
        for (key, label, time) in times {
            figures.push(
                Figure::new("stat", key, label, "s", time.median, Better::Lower)
                    .spread(spread_of(time)),
            );
        }
        figures.retain(|f| f.value.is_finite());
        figures
    }
}

/// The spread over the runs; NaN (none) from a single run.
fn spread_of(summary: &Summary) -> f64 {
    if summary.count < 2 {
        f64::NAN
    } else {
        summary.spread_pct()
    }
}

/// For the same command, fewer misses, faults, switches, cycles and less CPU time are
/// better; other counts (loads, references, instructions …) measure the work, not how
/// well it went.
fn event_better(event: &str) -> Better {
    // `cpu_core/cycles/` is `cycles`.
    let name = event
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(event);
    let fewer = [
        "cycles",
        "cpu-cycles",
        "task-clock",
        "cpu-clock",
        "page-faults",
        "faults",
        "major-faults",
        "minor-faults",
        "context-switches",
        "cs",
        "cpu-migrations",
        "migrations",
    ];
    if fewer.contains(&name) || name.ends_with("-misses") {
        Better::Lower
    } else {
        Better::Neither
    }
}

/// IPC is better higher, miss ratios and MPKI lower; rates per second and the clock say
/// how the command ran, not how well.
fn derived_better(name: &str) -> Better {
    if name == "IPC" {
        Better::Higher
    } else if name.contains("miss ratio") || name.contains("miss rate") || name.ends_with("MPKI") {
        Better::Lower
    } else {
        Better::Neither
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::EventKind;
    use crate::platform::child::Termination;
    use crate::stat::{DerivedFigure, EventStat};
    use crate::view::figure::find;

    fn event(name: &str, counts: &[f64]) -> EventStat {
        EventStat {
            event: name.to_string(),
            kind: EventKind::Hardware,
            count: Summary::of(counts),
            running_pct: Some(100.0),
            multiplexed: false,
            user_only: false,
            own_group: false,
            not_supported: None,
        }
    }

    fn derived(name: &str, unit: &str, values: &[f64]) -> DerivedFigure {
        DerivedFigure {
            name: name.to_string(),
            unit: unit.to_string(),
            formula: String::new(),
            value: Summary::of(values),
            not_supported: None,
        }
    }

    fn result(runs: &[f64]) -> StatResult {
        let times = |scale: f64| Summary::of(&runs.iter().map(|t| t * scale).collect::<Vec<_>>());
        StatResult {
            command: vec!["demo".into()],
            runs_requested: runs.len(),
            runs: Vec::new(),
            events: vec![
                event("task-clock", &[1.0e9, 1.1e9, 0.9e9]),
                event("cpu_core/cycles/", &[3e9, 3.3e9, 2.7e9]),
                event("instructions", &[6e9, 6e9, 6e9]),
                event("LLC-load-misses", &[2e6, 2e6, 2.2e6]),
                event("LLC-load-misses", &[2e6, 2e6, 2.2e6]),
                EventStat {
                    not_supported: Some("not supported: no hardware PMU".into()),
                    ..event("dTLB-loads", &[])
                },
            ],
            derived: vec![
                derived("IPC", "instructions/cycle", &[2.0, 2.2, 1.8]),
                derived("LLC load MPKI", "misses/1000 instr", &[0.33]),
                derived("dTLB load miss rate", "%", &[]),
                derived("clock", "GHz", &[3.0, 3.0, 3.0]),
            ],
            elapsed_s: times(1.0).unwrap(),
            user_s: times(0.9).unwrap(),
            system_s: times(0.1).unwrap(),
            termination: Termination::Exited(0),
            line_bytes: 64,
            notes: Vec::new(),
            process_tree: Default::default(),
        }
    }

    #[test]
    fn counts_derived_figures_and_times_with_their_spreads() {
        let result = result(&[1.0, 1.2, 0.8]);
        let figures = result.figures();
        let keys: HashSet<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys.len(), figures.len(), "unique keys");
        assert!(figures
            .iter()
            .all(|f| f.section == "stat" && f.metric.is_none()));
        // 4 distinct counted events, 3 derived figures with a value, 3 times.
        assert_eq!(figures.len(), 4 + 3 + 3, "{keys:?}");
        assert!(!keys.contains("stat.event.dTLB-loads.count"));
        assert!(!keys.contains("stat.derived.dTLB_load_miss_rate"));

        let clock = find(&figures, "stat.event.task-clock.count");
        assert_eq!((clock.value, clock.unit.as_str()), (1000.0, "ms"));
        let spread = result.events[0].count.unwrap().spread_pct();
        assert_eq!(
            (clock.spread_pct, clock.better),
            (Some(spread), Better::Lower)
        );
        let cycles = find(&figures, "stat.event.cpu_core/cycles/.count");
        assert_eq!((cycles.value, cycles.better), (3e9, Better::Lower));
        let instructions = find(&figures, "stat.event.instructions.count");
        assert_eq!(
            (instructions.better, instructions.spread_pct),
            (Better::Neither, Some(0.0))
        );
        assert_eq!(
            find(&figures, "stat.event.LLC-load-misses.count").better,
            Better::Lower
        );

        let ipc = find(&figures, "stat.derived.IPC");
        assert_eq!((ipc.value, ipc.better), (2.0, Better::Higher));
        assert_eq!(ipc.unit, "instructions/cycle");
        assert!(ipc.spread_pct.unwrap() > 0.0);
        let mpki = find(&figures, "stat.derived.LLC_load_MPKI");
        assert_eq!((mpki.value, mpki.better), (0.33, Better::Lower));
        assert_eq!(mpki.spread_pct, None, "one value has no spread");
        assert_eq!(find(&figures, "stat.derived.clock").better, Better::Neither);

        let elapsed = find(&figures, "stat.elapsed_s");
        assert_eq!((elapsed.value, elapsed.unit.as_str()), (1.0, "s"));
        assert_eq!(elapsed.spread_pct, Some(result.elapsed_s.spread_pct()));
        assert!((find(&figures, "stat.system_s").value - 0.1).abs() < 1e-12);
    }

    #[test]
    fn a_single_run_has_no_spreads() {
        let mut one = result(&[1.0]);
        let single = |s: Option<Summary>| s.and_then(|s| Summary::of(&[s.median]));
        for e in &mut one.events {
            e.count = single(e.count);
        }
        for d in &mut one.derived {
            d.value = single(d.value);
        }
        let figures = one.figures();
        assert_eq!(figures.len(), 10);
        assert!(figures.iter().all(|f| f.spread_pct.is_none()));
    }
}
