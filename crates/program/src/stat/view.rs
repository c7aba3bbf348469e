//! `memscope stat` in every output: the counts with their spread and counted share, the
//! figures derived from them, one line naming what could not be counted (and why) in
//! place of a row each, the times and the notes, and the CSV table `stat` (which keeps a
//! row for every event and figure). Numbers have thousands separators throughout.

use serde::Serialize;

use super::StatResult;
use crate::stats::summary::Summary;
use crate::topology::Machine;
use crate::view::data_row::Raw;
use crate::view::format;
use crate::view::{Column, DataTable, Paragraph, Present, Section, Table};

impl Present for StatResult {
    fn section(&self, _machine: &Machine) -> Section {
        let runs = self.runs.len();
        let mut section = Section::new(
            "stat",
            "Counters",
            format!(
                "Counters for {} ({})",
                format::shell_quoted(&self.command),
                if runs == 1 {
                    "1 run".to_string()
                } else {
                    format!("median of {runs} runs, spread = 1.4826·MAD/median")
                }
            ),
        );
        section.push(event_table(self));
        let derived = derived_table(self);
        if !derived.is_empty() {
            section.push(derived);
        }
        for line in not_counted(self) {
            section.push(line);
        }
        section.push(Paragraph::note(format!(
            "{} s elapsed{}, {} s user, {} s system; {}",
            format::grouped(self.elapsed_s.median, 4),
            match spread_text(&self.elapsed_s) {
                s if s.is_empty() => String::new(),
                s => format!(" ({s})"),
            },
            format::grouped(self.user_s.median, 4),
            format::grouped(self.system_s.median, 4),
            self.termination
        )));
        for note in (self.notes.iter().map(|n| n.text()))
            .chain(format::process_tree_notes(&self.process_tree))
        {
            section.push(Paragraph::note(note));
        }
        section.push(stat_data(self));
        section
    }
}

fn event_table(result: &StatResult) -> Table {
    let mut table = Table::new(vec![
        Column::text("event"),
        Column::number("count").titled("* multiplexed (extrapolated), (u) user mode only"),
        Column::text("unit"),
        Column::number("spread"),
        Column::number("counted").titled("Share of the time the event had a hardware counter"),
    ]);
    // What was not counted is named once, under the tables (`not_counted`).
    for e in &result.events {
        let Some(count) = &e.count else {
            continue;
        };
        let (value, unit) = match e.event.as_str() {
            "task-clock" | "cpu-clock" => (format::grouped(count.median / 1e6, 2), "ms"),
            _ => (format::grouped(count.median, 0), ""),
        };
        let marks = format!(
            "{}{}",
            if e.multiplexed { "*" } else { "" },
            if e.user_only { " (u)" } else { "" }
        );
        table.row([
            e.event.clone(),
            value + &marks,
            unit.to_string(),
            spread_text(count),
            e.running_pct
                .map(|p| format!("{}%", format::fixed(p, 0)))
                .unwrap_or_default(),
        ]);
    }
    table
}

fn derived_table(result: &StatResult) -> Table {
    let mut table = Table::new(vec![
        Column::text("derived"),
        Column::number("value"),
        Column::text("unit"),
        Column::number("spread"),
        Column::text("from"),
    ]);
    for d in &result.derived {
        if let Some(v) = &d.value {
            table.row([
                d.name.clone(),
                format::derived(v.median),
                d.unit.clone(),
                spread_text(v),
                d.formula.clone(),
            ]);
        }
    }
    table
}

/// One line per reason naming the events it kept from being counted and the figures
/// that could not be derived, in place of a row each.
fn not_counted(result: &StatResult) -> Vec<Paragraph> {
    const NO_REASON: &str = "not counted";
    let events = (result.events.iter())
        .filter(|e| e.count.is_none())
        .map(|e| (e.not_supported.as_deref().unwrap_or(NO_REASON), &e.event));
    let derived = (result.derived.iter())
        .filter(|d| d.value.is_none())
        .map(|d| (d.not_supported.as_deref().unwrap_or(NO_REASON), &d.name));
    let (events, derived): (Vec<_>, Vec<_>) = (events.collect(), derived.collect());
    let reasons = format::distinct(events.iter().chain(&derived).map(|(why, _)| *why));
    let names = |list: &[(&str, &String)], why: &str| -> Vec<String> {
        (list.iter())
            .filter(|(w, _)| *w == why)
            .map(|(_, name)| name.to_string())
            .collect()
    };
    reasons
        .into_iter()
        .map(|why| {
            let (events, derived) = (names(&events, why), names(&derived, why));
            let mut text = match events.len() {
                0 => String::new(),
                n => format!("Not counted ({n}): {}", events.join(", ")),
            };
            if !derived.is_empty() {
                let lead = if text.is_empty() {
                    "Not derived"
                } else {
                    "; so not derived"
                };
                text.push_str(&format!("{lead}: {}", derived.join(", ")));
            }
            Paragraph::muted(format!("{text}. Why: {why}."))
        })
        .collect()
}

/// `±1.2%`; empty for a single run, which has no spread.
fn spread_text(summary: &Summary) -> String {
    if summary.count < 2 {
        String::new()
    } else {
        format!("±{}%", format::spread(summary.spread_pct()))
    }
}

/// What a row of the `stat` table holds.
#[derive(Serialize, Default, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum StatRowKind {
    #[default]
    Event,
    Derived,
    Time,
}

/// A row of the `stat` table: an event, a derived figure or a time, with the median over
/// the runs and its spread; what only an event has is empty for the others.
#[derive(Serialize, Default)]
struct StatCsvRow<'a> {
    kind: StatRowKind,
    name: &'a str,
    unit: &'a str,
    median: Option<Raw>,
    spread_pct: Option<Raw>,
    min: Option<Raw>,
    max: Option<Raw>,
    multiplexed: Option<bool>,
    running_pct: Option<Raw>,
    not_supported: &'a str,
}

impl<'a> StatCsvRow<'a> {
    /// A row of `kind` with `summary`'s figures (all empty without one).
    fn new(kind: StatRowKind, name: &'a str, unit: &'a str, summary: Option<&Summary>) -> Self {
        let figure = |f: fn(&Summary) -> f64| summary.map(|s| Raw(f(s)));
        StatCsvRow {
            kind,
            name,
            unit,
            median: figure(|s| s.median),
            spread_pct: figure(Summary::spread_pct),
            min: figure(|s| s.min),
            max: figure(|s| s.max),
            ..StatCsvRow::default()
        }
    }
}

/// The CSV table: one row per event, derived figure and time, with the median over the
/// runs, its spread and the reason when not counted.
fn stat_data(stat: &StatResult) -> DataTable {
    let events = stat.events.iter().map(|e| StatCsvRow {
        multiplexed: Some(e.multiplexed),
        running_pct: e.running_pct.map(Raw),
        not_supported: e.not_supported.as_deref().unwrap_or_default(),
        ..StatCsvRow::new(StatRowKind::Event, &e.event, "", e.count.as_ref())
    });
    let derived = stat.derived.iter().map(|d| StatCsvRow {
        not_supported: d.not_supported.as_deref().unwrap_or_default(),
        ..StatCsvRow::new(StatRowKind::Derived, &d.name, &d.unit, d.value.as_ref())
    });
    let times = [
        ("elapsed", &stat.elapsed_s),
        ("user", &stat.user_s),
        ("system", &stat.system_s),
    ]
    .map(|(name, s)| StatCsvRow::new(StatRowKind::Time, name, "s", Some(s)));
    DataTable::of("stat", events.chain(derived).chain(times))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::EventKind;
    use crate::counting::{CountingNote, DerivedFigure, EventStat, RunRecord};
    use crate::platform::child::Termination;
    use crate::view::{Block, Row};

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    fn summary(samples: &[f64]) -> Summary {
        Summary::of(samples).expect("finite samples")
    }

    fn event(name: &str, samples: &[f64]) -> EventStat {
        EventStat {
            event: name.into(),
            kind: EventKind::Hardware,
            count: Some(summary(samples)),
            running_pct: Some(100.0),
            multiplexed: false,
            user_only: false,
            own_group: false,
            not_supported: None,
        }
    }

    fn run() -> RunRecord {
        RunRecord {
            elapsed_s: 1.0,
            user_s: 0.9,
            system_s: 0.1,
            termination: Termination::Exited(0),
            counts: vec![],
        }
    }

    fn sample(runs: usize) -> StatResult {
        let mut multiplexed = event("LLC-load-misses", &[2.5e7, 2.6e7, 2.4e7]);
        multiplexed.multiplexed = true;
        multiplexed.user_only = true;
        multiplexed.running_pct = Some(49.6);
        let unsupported = EventStat {
            count: None,
            running_pct: None,
            not_supported: Some("not supported: no hardware PMU".into()),
            ..event("dTLB-loads", &[1.0])
        };
        StatResult {
            command: argv(&["sh", "-c", "echo it's"]),
            runs_requested: runs,
            runs: vec![run(); runs],
            events: vec![
                event("task-clock", &[1.0e9, 1.1e9, 0.9e9]),
                event("instructions", &[1234567.0, 1234567.0, 1234567.0]),
                multiplexed,
                unsupported,
            ],
            derived: vec![
                DerivedFigure {
                    name: "IPC".into(),
                    unit: "".into(),
                    formula: "instructions / cycles".into(),
                    value: Some(summary(&[2.1, 2.1, 2.1])),
                    not_supported: None,
                },
                DerivedFigure {
                    name: "dTLB load miss rate".into(),
                    unit: "%".into(),
                    formula: "dTLB-load-misses / dTLB-loads".into(),
                    value: None,
                    not_supported: Some("not supported: no hardware PMU".into()),
                },
            ],
            elapsed_s: summary(&[1.0, 1.1, 0.9]),
            user_s: summary(&[0.9]),
            system_s: summary(&[0.1]),
            termination: Termination::Exited(0),
            line_bytes: 64,
            notes: vec![CountingNote::NotSupported {
                reason: "no hardware PMU: the kernel lists none".into(),
            }],
            process_tree: Default::default(),
        }
    }

    #[test]
    fn commands_are_shown_as_they_would_be_typed() {
        assert_eq!(format::shell_quoted(&argv(&["true"])), "\"true\"");
        assert_eq!(
            format::shell_quoted(&argv(&["sh", "-c", "echo it's; exit 1"])),
            r#""sh -c 'echo it'\''s; exit 1'""#
        );
        assert_eq!(format::shell_quoted(&argv(&["ls", ""])), "\"ls ''\"");
    }

    #[test]
    fn counts_marks_reasons_derived_figures_times_and_notes() {
        let s = sample(3).section(&Machine::default());
        assert_eq!(s.id, "stat");
        assert_eq!(
            s.title,
            r#"Counters for "sh -c 'echo it'\''s'" (median of 3 runs, spread = 1.4826·MAD/median)"#
        );
        let tables = s.tables();
        assert_eq!(tables.len(), 2);
        let events = tables[0];
        // Only what was counted has a row.
        let names = "task-clock,instructions,LLC-load-misses";
        assert_eq!(events.column_text(0).join(","), names);
        let counts = ["1,000.00", "1,234,567", "25,000,000* (u)"];
        assert_eq!(events.column_text(1), counts);
        assert_eq!(events.column_text(2)[0], "ms");
        assert_eq!(events.column_text(3)[1], "±0.0%");
        assert_eq!(events.column_text(4)[2], "50%");
        let derived = tables[1];
        assert_eq!(derived.column_text(0), ["IPC"]);
        assert_eq!(derived.column_text(1)[0], "2.10");
        assert_eq!(derived.column_text(4)[0], "instructions / cycles");
        assert!(derived.rows.iter().all(|r| matches!(r, Row::Cells(_))));
        // What was not counted, named once with its reason.
        let text = s.plain_text();
        let line = "Not counted (1): dTLB-loads; so not derived: dTLB load miss rate. \
                    Why: not supported: no hardware PMU.";
        assert_eq!(text.matches(line).count(), 1, "{text}");
        assert_eq!(text.matches("no hardware PMU").count(), 2, "{text}");
        for words in [
            "1.0000 s elapsed (±",
            "0.9000 s user, 0.1000 s system; exit status 0",
            "the kernel lists none",
        ] {
            assert!(text.contains(words), "{words}: {text}");
        }
    }

    #[test]
    fn one_run_has_no_spread_and_no_derived_table_when_none() {
        let mut result = sample(1);
        result.derived.clear();
        result.elapsed_s = summary(&[1.0]);
        let s = result.section(&Machine::default());
        assert!(s.title.ends_with("(1 run)"), "{}", s.title);
        assert_eq!(s.tables().len(), 1);
        assert!(s.plain_text().contains("1.0000 s elapsed, "));
        result.events[1].count = Some(Summary {
            median: f64::NAN,
            ..summary(&[1.0])
        });
        let s = result.section(&Machine::default());
        assert_eq!(s.tables()[0].column_text(1)[1], format::DASH);
        assert_eq!(s.data_tables()[0].rows[1][3], "");
    }

    #[test]
    fn csv_has_a_row_per_event_figure_and_time() {
        let s = sample(3).section(&Machine::default());
        let data = s.data_tables();
        assert_eq!(data.len(), 1);
        let t = data[0];
        assert_eq!(t.name, "stat");
        assert_eq!(
            t.header.join(","),
            "kind,name,unit,median,spread_pct,min,max,multiplexed,running_pct,not_supported"
        );
        assert_eq!(t.rows.len(), 4 + 2 + 3);
        let llc = "event,LLC-load-misses,,25000000,5.9304,24000000,26000000,true,49.6,";
        assert_eq!(t.rows[2].join(","), llc);
        assert_eq!(t.rows[3][9], "not supported: no hardware PMU");
        assert_eq!(t.rows[3][3], "");
        assert_eq!(t.rows[5][..3], ["derived", "dTLB load miss rate", "%"]);
        assert_eq!(t.rows[6][..4], ["time", "elapsed", "s", "1"]);
        assert!(s.blocks.iter().any(|b| matches!(b, Block::Data(_))));
    }
}
