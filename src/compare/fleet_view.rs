//! How a fleet (a group of more than `view::SIDE_BY_SIDE_MAX` reports of one CPU model)
//! is shown, sized to stay readable at a thousand reports: the runs as a summary (count per
//! CPU model, date range) with only the outliers' rows; what differs as each value's count;
//! per figure the median, robust spread and the farthest outliers named (`fleet::summarise`);
//! the reports named most often; in HTML one strip per figure (each report a point on one
//! axis, the median and the band drawn, outliers labelled); and the `compare.fleet` CSV
//! table. Nothing here is per pair of reports.

use std::collections::HashMap;

use serde::Serialize;

use super::fleet::{self, FleetFigure, Outlier};
use super::{Comparison, Group, Row};
use crate::units::Bytes;
use crate::view::chart::{
    Axis, Band, LegendEntry, LegendSymbol, LineChart, Series, TickFormat, VMarker,
};
use crate::view::data_row::Full;
use crate::view::figure::Better;
use crate::view::format;
use crate::view::judge::Verdict;
use crate::view::{Block, Cell, Column, Medium, Paragraph, Priority, Section, Style, Table};

/// Outliers named per figure in the terminal; the rest are counted ("+4 more").
const NAMED_PER_FIGURE: usize = 3;
/// Reports listed as named most often, and outliers' rows in the runs table.
pub const LISTED_REPORTS: usize = 10;
/// Outliers labelled on a figure's strip (the others are red points).
const LABELLED_PER_STRIP: usize = 5;
/// Values listed per difference before "+N other values".
const LISTED_VALUES: usize = 4;

/// "r-7 +35.2% worse".
fn outlier_text(c: &Comparison, o: &Outlier) -> String {
    let pct = o
        .deviation_pct
        .map_or_else(|| format::DASH.to_string(), |p| format!("{p:+.1}%"));
    format!("{} {pct} {}", c.runs[o.run].label, o.verdict.mark())
}

/// The reports named for any figure of the fleet groups, most figures first (then the
/// farthest), each with the (row, outlier) pairs naming it.
pub fn named_reports(c: &Comparison) -> Vec<(usize, Vec<(&Row, &Outlier)>)> {
    let mut by_run: HashMap<usize, Vec<(&Row, &Outlier)>> = HashMap::new();
    for group in c.groups.iter().filter(|g| g.is_fleet()) {
        for row in &group.rows {
            for o in row.fleet.iter().flat_map(|f| &f.outliers) {
                by_run.entry(o.run).or_default().push((row, o));
            }
        }
    }
    let mut named: Vec<(usize, Vec<(&Row, &Outlier)>)> = by_run.into_iter().collect();
    let farthest =
        |list: &[(&Row, &Outlier)]| list.iter().map(|(_, o)| o.distance).fold(0.0, f64::max);
    named.sort_by(|(ra, a), (rb, b)| {
        b.len()
            .cmp(&a.len())
            .then(farthest(b).total_cmp(&farthest(a)))
            .then(ra.cmp(rb))
    });
    named
}

/// The runs table's rows for a comparison with fleets: every run of the groups shown side
/// by side, and of the fleets only the reports named as outliers (the most named first, at
/// most `LISTED_REPORTS`). Returns the run indices and how many named ones were left out.
pub fn listed_runs(c: &Comparison) -> (Vec<usize>, usize) {
    let mut listed: Vec<usize> = c
        .groups
        .iter()
        .filter(|g| !g.is_fleet())
        .flat_map(|g| g.runs.iter().copied())
        .collect();
    let named = named_reports(c);
    let left_out = named.len().saturating_sub(LISTED_REPORTS);
    listed.extend(named.iter().take(LISTED_REPORTS).map(|(run, _)| *run));
    (listed, left_out)
}

/// A paragraph per fleet: how many reports, of which CPU model, over which dates.
pub fn fleet_summaries(c: &Comparison) -> Vec<Block> {
    c.groups
        .iter()
        .filter(|g| g.is_fleet())
        .map(|g| {
            let dates: Vec<&str> = g
                .runs
                .iter()
                .map(|&i| c.runs[i].started.as_str())
                .filter(|s| !s.is_empty())
                .collect();
            let when = |s: &str| {
                crate::report::RunStamp {
                    started: s.to_string(),
                    ..Default::default()
                }
                .when()
            };
            let range = match (dates.iter().min(), dates.iter().max()) {
                (Some(first), Some(last)) => format!("{} – {}", when(first), when(last)),
                _ => "dates unknown".to_string(),
            };
            let outliers: usize = named_reports_in(g).len();
            Block::Paragraph(Paragraph::note(format!(
                "A fleet of {} reports of {}, {range}: each figure's median and robust spread \
                 over them, and the reports outside it named ({outliers} report(s) named for \
                 at least one figure; listed above with the runs).",
                g.runs.len(),
                format::or_dash(&g.cpu_model)
            )))
        })
        .collect()
}

fn named_reports_in(g: &Group) -> Vec<usize> {
    let mut runs: Vec<usize> = g
        .rows
        .iter()
        .flat_map(|r| r.fleet.iter().flat_map(|f| &f.outliers))
        .map(|o| o.run)
        .collect();
    runs.sort_unstable();
    runs.dedup();
    runs
}

/// What differs in a fleet, as each value's count: the most common value, then the others
/// with the first reports that have them.
pub fn differences_table(c: &Comparison, group: &Group) -> Table {
    let mut table = Table::new(vec![
        Column::text(""),
        Column::text("most reports"),
        Column::text("the others"),
    ])
    .titled("What differs");
    for d in &group.differences {
        let mut counts: Vec<(&str, Vec<usize>)> = Vec::new();
        let mut at: HashMap<&str, usize> = HashMap::new();
        for (value, &run) in d.values.iter().zip(&group.runs) {
            match at.get(value.as_str()) {
                Some(&k) => counts[k].1.push(run),
                None => {
                    at.insert(value, counts.len());
                    counts.push((value, vec![run]));
                }
            }
        }
        counts.sort_by_key(|(_, runs)| std::cmp::Reverse(runs.len()));
        let Some(((common, common_runs), others)) = counts.split_first() else {
            continue;
        };
        let mut other_text: Vec<String> = others
            .iter()
            .take(LISTED_VALUES)
            .map(|(value, runs)| {
                let labels: Vec<&str> = runs
                    .iter()
                    .take(3)
                    .map(|&i| c.runs[i].label.as_str())
                    .collect();
                let more = if runs.len() > 3 { ", …" } else { "" };
                format!("{value} ({}: {}{more})", runs.len(), labels.join(", "))
            })
            .collect();
        if others.len() > LISTED_VALUES {
            other_text.push(format!("+{} other values", others.len() - LISTED_VALUES));
        }
        table.row([
            d.what.clone(),
            format!("{common} ({})", common_runs.len()),
            other_text.join("; "),
        ]);
    }
    table
}

/// One row per figure of a fleet: its median, robust spread, and the farthest outliers.
pub fn fleet_table(c: &Comparison, rows: &[&Row]) -> Table {
    // Too wide for the terminal, the unit and the count go first; the outliers, what a
    // fleet view is for, stay.
    let mut table = Table::new(vec![
        Column::text("figure"),
        Column::text("unit").priority(Priority::Low),
        Column::number("reports").priority(Priority::Low),
        Column::number("median"),
        Column::number("spread"),
        Column::text("outliers").priority(Priority::High),
    ]);
    for row in rows {
        let Some(f) = &row.fleet else {
            table.row([
                Cell::new(row.label.clone()),
                Cell::new(unit_column(row)),
                Cell::new(row.cells.iter().flatten().count().to_string()),
                Cell::dash(),
                Cell::dash(),
                Cell::dash(),
            ]);
            continue;
        };
        let mut named: Vec<String> = f
            .outliers
            .iter()
            .take(NAMED_PER_FIGURE)
            .map(|o| outlier_text(c, o))
            .collect();
        if f.outliers.len() > NAMED_PER_FIGURE {
            named.push(format!("+{} more", f.outliers.len() - NAMED_PER_FIGURE));
        }
        let outliers = if named.is_empty() {
            Cell::dash()
        } else {
            let worse = f.outliers.iter().any(|o| o.verdict == Verdict::Worse);
            Cell::styled(
                named.join(", "),
                if worse { Style::Warn } else { Style::Strong },
            )
        };
        table.row([
            Cell::new(row.label.clone()),
            Cell::new(unit_column(row)),
            Cell::new(f.reports.to_string()),
            Cell::new(value_text(f.median, &row.unit)),
            Cell::new(spread_text(f)),
            outliers,
        ]);
    }
    table.note(format!(
        "median and spread (1.4826 × MAD, ±% of the median; ^ at the {}% floor) over the \
         reports; outliers: beyond {} spreads (more in a large fleet) and their own noise, \
         farthest first (the rule is under the runs)",
        crate::view::judge::FLOOR_PCT,
        fleet::OUTLIER_K
    ));
    table
}

/// "±2.1%", "±1.0%^" at the floor.
fn spread_text(f: &FleetFigure) -> String {
    let mark = if f.floored { "^" } else { "" };
    match f.spread_pct() {
        Some(p) => format!("±{p:.1}%{mark}"),
        None => format!("±{}{mark}", format::derived(f.spread)),
    }
}

/// A section listing the reports named most often, with how many figures and which.
pub fn outliers_section(c: &Comparison) -> Option<Section> {
    if !c.groups.iter().any(|g| g.is_fleet()) {
        return None;
    }
    let mut section = Section::new("outliers", "Outliers", "Reports named most often");
    let named = named_reports(c);
    if named.is_empty() {
        section.push(Paragraph::note(
            "No report lies outside its fleet for any figure.",
        ));
        return Some(section);
    }
    let mut table = Table::new(vec![
        Column::text("report"),
        Column::text("host").priority(Priority::Low),
        Column::number("figures"),
        Column::text("which").priority(Priority::High),
        Column::text("file").priority(Priority::Low),
    ]);
    for (run, list) in named.iter().take(LISTED_REPORTS) {
        let info = &c.runs[*run];
        let mut which: Vec<String> = list
            .iter()
            .take(NAMED_PER_FIGURE)
            .map(|(row, o)| {
                let pct = o
                    .deviation_pct
                    .map_or_else(String::new, |p| format!(" {p:+.0}%"));
                format!("{}{pct}", row.label)
            })
            .collect();
        if list.len() > NAMED_PER_FIGURE {
            which.push(format!("+{} more", list.len() - NAMED_PER_FIGURE));
        }
        table.row([
            info.label.clone(),
            info.host.clone(),
            list.len().to_string(),
            which.join(", "),
            info.file.clone(),
        ]);
    }
    if named.len() > LISTED_REPORTS {
        table.note(format!(
            "+{} more reports named; --json and --csv have every outlier",
            named.len() - LISTED_REPORTS
        ));
    }
    section.push(table);
    Some(section)
}

/// HTML only: per figure, one horizontal axis with every report as a point, the median and
/// the band of `OUTLIER_K` robust spreads drawn, the farthest outliers labelled.
pub fn strips(c: &Comparison, group: &Group, rows: &[&Row]) -> Block {
    let charts = rows
        .iter()
        .filter_map(|row| Some(strip(c, group, row, row.fleet.as_ref()?)))
        .map(Block::Chart)
        .collect();
    Block::Only(Medium::Html, charts)
}

fn strip(c: &Comparison, group: &Group, row: &Row, f: &FleetFigure) -> crate::view::Chart {
    // Each report at its value, one above the other in the order of the files, so that
    // reports with the same value stay apart.
    let height = |n: usize| (n + 1) as f64;
    let outlier_runs: HashMap<usize, &Outlier> = f.outliers.iter().map(|o| (o.run, o)).collect();
    let mut inside = Vec::new();
    let mut outside = Vec::new();
    for (n, (cell, &run)) in row.cells.iter().zip(&group.runs).enumerate() {
        let Some(cell) = cell.as_ref().filter(|c| c.value.is_finite()) else {
            continue;
        };
        let point = (cell.value, height(n));
        if outlier_runs.contains_key(&run) {
            outside.push(point);
        } else {
            inside.push(point);
        }
    }
    let reach = f.cutoff * f.spread;
    let (lo, hi) = inside
        .iter()
        .chain(&outside)
        .fold((f.median - reach, f.median + reach), |(lo, hi), &(x, _)| {
            (lo.min(x), hi.max(x))
        });
    let pad = ((hi - lo) * 0.04).max(f64::MIN_POSITIVE);
    let mut x =
        Axis::linear(format!("{} ({})", row.label, unit_column(row))).range(lo - pad, hi + pad);
    if row.unit == "bytes" {
        x = x.bytes();
    }
    let mut chart = LineChart::new(format!("{} — {} reports", row.label, f.reports))
        .size(960.0, 320.0)
        .x_axis(x)
        .y_axis(
            Axis::linear("report (file order)")
                .range(0.0, (group.runs.len() + 1) as f64)
                .format(TickFormat::Integer),
        )
        .band(
            Band::new(
                f.median - reach,
                f.median + reach,
                format!("median ± {:.1} spreads", f.cutoff),
            )
            .color(crate::view::chart::PALETTE[2]),
        )
        .series(Series::new("outlier", outside).color("#d62728").highlight())
        .series(Series::new("report", inside).color("#4b5563").highlight())
        .marker(VMarker::found(
            f.median,
            "median",
            crate::view::chart::FOUND_POINT_COLOR,
        ))
        .legend_entry(LegendEntry::new(
            "within the fleet's band or its own noise",
            LegendSymbol::Swatch {
                color: crate::view::chart::PALETTE[2].to_string(),
                opacity: 0.2,
            },
        ));
    for o in f.outliers.iter().take(LABELLED_PER_STRIP) {
        chart = chart.marker(VMarker::reference(o.value, c.runs[o.run].label.clone()));
    }
    chart.into()
}

/// A row of `compare.fleet`: one figure over one fleet.
#[derive(Serialize, Default)]
struct FleetCsvRow<'a> {
    group: usize,
    cpu_model: &'a str,
    key: &'a str,
    label: &'a str,
    unit: &'a str,
    better: String,
    reports: usize,
    median: Full,
    mad_spread: Full,
    spread: Full,
    floored: bool,
    /// "label:+35.2%:worse" per outlier, farthest first, separated by spaces.
    outliers: String,
}

/// The fleet summary of every figure of every group that has one, as CSV.
pub fn data_table(c: &Comparison) -> crate::view::DataTable {
    let mut rows = Vec::new();
    for (g, group) in c.groups.iter().enumerate() {
        for row in &group.rows {
            let Some(f) = &row.fleet else { continue };
            let outliers: Vec<String> = f
                .outliers
                .iter()
                .map(|o| {
                    let pct = o
                        .deviation_pct
                        .map_or_else(String::new, |p| format!("{p:+.1}%"));
                    format!("{}:{pct}:{}", c.runs[o.run].label, o.verdict.mark())
                })
                .collect();
            rows.push(FleetCsvRow {
                group: g + 1,
                cpu_model: &group.cpu_model,
                key: &row.key,
                label: &row.label,
                unit: &row.unit,
                better: format!("{:?}", row.better).to_lowercase(),
                reports: f.reports,
                median: Full(f.median),
                mad_spread: Full(f.mad_spread),
                spread: Full(f.spread),
                floored: f.floored,
                outliers: outliers.join(" "),
            });
        }
    }
    crate::view::DataTable::of("compare.fleet", rows)
}

/// Under a side-by-side table of three or more runs: the runs outside the group for a
/// figure by the same rule, when there are any.
pub fn side_by_side_outliers(c: &Comparison, rows: &[&Row]) -> Option<Block> {
    let named: Vec<String> = rows
        .iter()
        .filter_map(|row| {
            let f = row.fleet.as_ref().filter(|f| !f.outliers.is_empty())?;
            let list: Vec<String> = f.outliers.iter().map(|o| outlier_text(c, o)).collect();
            Some(format!("{}: {}", row.label, list.join(", ")))
        })
        .collect();
    (!named.is_empty()).then(|| {
        Block::Paragraph(Paragraph::note(format!(
            "Outside the group (beyond {} robust spreads of its median and their own noise): {}.",
            fleet::OUTLIER_K,
            named.join("; ")
        )))
    })
}
/// A value with its unit's format: sizes in binary units, the rest with the digits that
/// matter.
pub(super) fn value_text(value: f64, unit: &str) -> String {
    match unit {
        "bytes" if value.is_finite() && value >= 0.0 => Bytes(value.round() as u64).to_string(),
        _ => format::derived(value),
    }
}

pub(super) fn unit_column(row: &Row) -> String {
    match (row.unit.as_str(), row.better) {
        ("", _) => String::new(),
        (unit, Better::Lower) => format!("{unit} ↓"),
        (unit, Better::Higher) => format!("{unit} ↑"),
        (unit, Better::Neither) => unit.to_string(),
    }
}
