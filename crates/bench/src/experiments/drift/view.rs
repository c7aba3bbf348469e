//! The stability section: what else ran during each experiment (other runnable tasks,
//! steal time), each headline figure measured again at the end of the run with its drift
//! against its own spread, and how `--until-stable` ended.

use serde::Serialize;

use super::DriftResult;
use crate::session::conditions::ExperimentConditions;
use crate::units::Bytes;
use crate::view::data_row::Raw;
use crate::view::format;
use crate::view::{Cell, Column, DataTable, Paragraph, Priority, Section, Style, Table};

/// The section, when there is anything to show.
pub fn section(
    drift: Option<&DriftResult>,
    conditions: &[ExperimentConditions],
) -> Option<Section> {
    if drift.is_none() && conditions.is_empty() {
        return None;
    }
    let mut section = Section::new(
        "stability",
        "Stability",
        "Stability: the machine while memscope ran",
    );
    if !conditions.is_empty() {
        section.push(conditions_table(conditions));
    }
    if let Some(d) = drift {
        section.push(drift_table(d));
        let moved = d.beyond_noise().count();
        section.push(if moved > 0 {
            Paragraph::warning(format!(
                "{moved} of {} figures moved beyond their own noise between the measurement \
                 and the drift pass: the machine changed while memscope ran.",
                d.figures.len()
            ))
        } else {
            Paragraph::note(format!(
                "Every one of the {} figures measured again stayed within its own noise.",
                d.figures.len()
            ))
        });
        if let Some(s) = &d.until_stable {
            section.push(Paragraph::note(if s.stable {
                format!(
                    "--until-stable: stable after {} passes ({:.1} s): the last two agreed \
                     within {:.1}% (target {:.1}%).",
                    d.passes, d.elapsed_s, s.last_disagreement_pct, s.within_pct
                )
            } else {
                format!(
                    "--until-stable: not stable within the {:.0} s budget after {} passes: the \
                     last two still differed by {:.1}% ({}), target {:.1}%.",
                    s.budget_s,
                    d.passes,
                    s.last_disagreement_pct,
                    s.last_disagreement,
                    s.within_pct
                )
            }));
        }
        section.push(drift_data(d));
    }
    section.push(conditions_data(conditions));
    Some(section)
}

fn conditions_table(conditions: &[ExperimentConditions]) -> Table {
    let mut table = Table::new(vec![
        Column::text("experiment"),
        Column::quantity("time", "s"),
        Column::number("other runnable (mean)"),
        Column::number("peak"),
        Column::quantity("busy", "%"),
        Column::quantity("steal", "%"),
        Column::text("tasks seen running"),
    ])
    .titled("Other load during each experiment");
    for c in conditions {
        let style = if c.disturbed {
            Style::Warn
        } else {
            Style::Plain
        };
        table.row([
            Cell::new(c.experiment.replace('_', " ")),
            Cell::new(format::fixed(c.elapsed_s, 1)),
            Cell::styled(format::opt_fixed(c.other_runnable_mean, 2), style),
            Cell::new(format::opt_fixed(c.other_runnable_max, 0)),
            Cell::styled(format::opt_fixed(c.other_runnable_share_pct, 0), style),
            Cell::styled(format::opt_fixed(c.steal_pct, 1), style),
            Cell::new(if c.tasks.is_empty() {
                format::DASH.to_string()
            } else {
                c.tasks.join(", ")
            }),
        ]);
    }
    table.note(
        "runnable tasks outside memscope (its threads and the processes it runs under are not \
         counted), sampled every 50 ms; busy: share of the samples with one or more; steal: \
         time the hypervisor gave the measuring CPUs to others",
    );
    table
}

fn value_text(value: f64, unit: &str) -> String {
    match unit {
        "bytes" if value.is_finite() && value >= 0.0 => Bytes(value as u64).to_string(),
        _ => format::derived(value),
    }
}

fn drift_table(d: &DriftResult) -> Table {
    let mut table = Table::new(vec![
        Column::text("figure"),
        Column::text("unit"),
        Column::number("measured"),
        Column::number(if d.passes == 1 {
            "at the end".to_string()
        } else {
            format!("last of {} passes", d.passes)
        }),
        Column::quantity("drift", "%"),
        Column::quantity("own spread", "%"),
        // The verdict ("beyond noise") is what the table is read for.
        Column::text("").priority(Priority::High),
    ])
    .titled("Headline figures measured again at the end of the run");
    for f in &d.figures {
        let last = f.passes.last().copied().unwrap_or(f64::NAN);
        table.row([
            Cell::new(f.label.clone()),
            Cell::new(f.unit.clone()),
            Cell::new(value_text(f.before, &f.unit)),
            Cell::new(value_text(last, &f.unit)),
            Cell::new(format::fixed(f.drift_pct, 1)),
            Cell::new(format::opt_fixed(f.spread_pct, 1)),
            if f.beyond_noise {
                Cell::styled("beyond noise", Style::Warn)
            } else {
                Cell::styled("~", Style::Muted)
            },
        ]);
    }
    table.note(
        "drift: the largest |again − measured| / measured over the passes; beyond noise: more \
         than 3 × the figure's own spread and 1%; a level's latency is repeated at the middle \
         point of its plateau",
    );
    table
}

/// A row of `stability.drift`: one figure measured again, its passes space-separated.
#[derive(Serialize, Default)]
struct DriftCsvRow<'a> {
    key: &'a str,
    label: &'a str,
    unit: &'a str,
    measured: Raw,
    passes: String,
    drift_pct: Raw,
    spread_pct: Option<Raw>,
    beyond_noise: bool,
}

fn drift_data(d: &DriftResult) -> DataTable {
    DataTable::of(
        "stability.drift",
        d.figures.iter().map(|f| {
            let passes: Vec<String> = f.passes.iter().map(|&v| format::raw(v)).collect();
            DriftCsvRow {
                key: &f.key,
                label: &f.label,
                unit: &f.unit,
                measured: Raw(f.before),
                passes: passes.join(" "),
                drift_pct: Raw(f.drift_pct),
                spread_pct: f.spread_pct.map(Raw),
                beyond_noise: f.beyond_noise,
            }
        }),
    )
}

/// A row of `stability.conditions`: what else ran during one experiment.
#[derive(Serialize, Default)]
struct ConditionsCsvRow<'a> {
    experiment: &'a str,
    elapsed_s: Raw,
    other_runnable_mean: Option<Raw>,
    other_runnable_max: Option<Raw>,
    other_runnable_share_pct: Option<Raw>,
    steal_pct: Option<Raw>,
    disturbed: bool,
    tasks: String,
}

fn conditions_data(conditions: &[ExperimentConditions]) -> DataTable {
    DataTable::of(
        "stability.conditions",
        conditions.iter().map(|c| ConditionsCsvRow {
            experiment: &c.experiment,
            elapsed_s: Raw(c.elapsed_s),
            other_runnable_mean: c.other_runnable_mean.map(Raw),
            other_runnable_max: c.other_runnable_max.map(Raw),
            other_runnable_share_pct: c.other_runnable_share_pct.map(Raw),
            steal_pct: c.steal_pct.map(Raw),
            disturbed: c.disturbed,
            tasks: c.tasks.join("; "),
        }),
    )
}
