//! `memscope compare` in every output: the runs and what differs between their machines
//! first, then one section per experiment with its figures side by side (value, and for
//! each later run its change against the first with the verdict), and the runs' charts
//! overlaid (`view::overlay`). Groups of more than `SIDE_BY_SIDE_MAX` runs (a fleet) get
//! one row per figure with the group's median, range and the runs beyond the noise
//! instead of a column per run. A run measured while the machine was shared is marked
//! `*` (in the runs table, and beside each value of an experiment it measured so), the
//! mark explained once, under the runs.

use serde::Serialize;

use super::fleet_view::{self, unit_column, value_text};
use super::{Comparison, Group, Loaded, Row};
use crate::report::document;
use crate::view::data_row::Full;
use crate::view::format;
use crate::view::judge::Verdict;
use crate::view::overlay::{self, run_color};
use crate::view::{Block, Column, Headline, Paragraph, Priority, Section, Style, Table, Text};

/// The most runs a group shows as columns.
pub const SIDE_BY_SIDE_MAX: usize = 6;

/// The sections of a comparison; `runs` are the reports it was made from (for charts and
/// the experiments' section titles).
pub fn sections(comparison: &Comparison, runs: &[Loaded]) -> Vec<Section> {
    // Each report's own sections, for the charts of the groups shown side by side and for
    // the experiments' titles; a fleet's thousand reports are not drawn one by one.
    let mut per_run: Vec<Option<Vec<Section>>> = (0..runs.len()).map(|_| None).collect();
    for group in comparison.groups.iter().filter(|g| !g.is_fleet()) {
        for &i in &group.runs {
            per_run[i] = Some(document::result_sections(&runs[i].report));
        }
    }
    let mut sections = vec![runs_section(comparison)];
    // Experiment sections in the order their figures first appear.
    let mut ids: Vec<&str> = Vec::new();
    for row in comparison.groups.iter().flat_map(|g| &g.rows) {
        if !ids.contains(&row.section.as_str()) {
            ids.push(&row.section);
        }
    }
    for id in ids {
        let Some(model) = section_model(&mut per_run, comparison, runs, id) else {
            continue;
        };
        let mut section = Section::new(model.id, model.nav.clone(), model.title.clone());
        for group in &comparison.groups {
            let rows: Vec<&Row> = group.rows.iter().filter(|r| r.section == id).collect();
            if rows.is_empty() {
                continue;
            }
            if comparison.groups.len() > 1 {
                section.push(Block::Heading(format!(
                    "{} ({} runs)",
                    format::or_dash(&group.cpu_model),
                    group.runs.len()
                )));
            }
            if group.is_fleet() {
                section.push(fleet_view::fleet_table(comparison, &rows));
                section.push(fleet_view::strips(comparison, group, &rows));
            } else {
                section.push(side_by_side(comparison, group, &rows));
                if let Some(note) = fleet_view::side_by_side_outliers(comparison, &rows) {
                    section.push(note);
                }
                charts(comparison, group, &per_run, id, &mut section);
            }
        }
        sections.push(section);
    }
    sections.extend(fleet_view::outliers_section(comparison));
    sections
}

/// The section `id` of the first report that has it (its title and navigation label),
/// drawing reports' sections only until one is found.
fn section_model(
    per_run: &mut [Option<Vec<Section>>],
    comparison: &Comparison,
    runs: &[Loaded],
    id: &str,
) -> Option<Section> {
    let holders = comparison.groups.iter().flat_map(|g| {
        g.rows
            .iter()
            .filter(|r| r.section == id)
            .map(move |r| (g, r))
    });
    for (group, row) in holders {
        for (cell, &i) in row.cells.iter().zip(&group.runs) {
            if cell.is_none() {
                continue;
            }
            let sections =
                per_run[i].get_or_insert_with(|| document::result_sections(&runs[i].report));
            if let Some(model) = sections.iter().find(|s| s.id == id) {
                return Some(Section::new(
                    model.id,
                    model.nav.clone(),
                    model.title.clone(),
                ));
            }
        }
    }
    None
}

/// The headline cards of the HTML: how many figures changed, each way.
pub fn headlines(comparison: &Comparison) -> Vec<Headline> {
    let [better, worse, changed, same, unjudged] = comparison.counts();
    let mut cards = vec![
        Headline {
            label: "Worse".into(),
            value: worse.to_string(),
            detail: "figures beyond both runs' noise, the wrong way".into(),
            ..Headline::default()
        },
        Headline {
            label: "Better".into(),
            value: better.to_string(),
            detail: format!("and {changed} changed with no better direction"),
            ..Headline::default()
        },
        Headline {
            label: "Unchanged (~)".into(),
            value: same.to_string(),
            detail: format!("{unjudged} not judged (no spread measured)"),
            ..Headline::default()
        },
    ];
    if comparison.groups.iter().any(|g| g.is_fleet()) {
        let named = fleet_view::named_reports(comparison);
        cards.push(Headline {
            label: "Outliers".into(),
            value: named.len().to_string(),
            detail: "reports outside their fleet for at least one figure".into(),
            ..Headline::default()
        });
    }
    cards
}

/// The runs compared, what differs between them, which were disturbed, and how changes
/// are called.
fn runs_section(c: &Comparison) -> Section {
    let mut section = Section::new("runs", "Runs", "Runs compared");
    // With fleets, their reports are a summary below and only their outliers are rows.
    let fleets = c.groups.iter().any(|g| g.is_fleet());
    section.push(runs_table(c, fleets));
    for block in fleet_view::fleet_summaries(c) {
        section.push(block);
    }
    for group in &c.groups {
        differences(&mut section, c, group);
    }
    if let Some(note) = disturbed_note(c, fleets) {
        section.push(note);
    }
    if c.groups.len() > 1 {
        section.push(Paragraph::note(format!(
            "{} CPU models: each group is compared within itself, against its first run.",
            c.groups.len()
        )));
    }
    section.push(Paragraph::muted(format!(
        "How a change is called: {}.",
        c.rule
    )));
    let outliers = (c.groups.iter())
        .flat_map(|g| &g.rows)
        .any(|r| r.fleet.is_some());
    if outliers {
        section.push(Paragraph::muted(format!(
            "How an outlier is named: {}.",
            super::fleet::rule_text()
        )));
    }
    for note in &c.notes {
        section.push(Paragraph::muted(note.clone()));
    }
    section.push(data_table(c));
    if outliers {
        section.push(fleet_view::data_table(c));
    }
    section
}

/// One row per run (with fleets, only their outliers).
fn runs_table(c: &Comparison, fleets: bool) -> Table {
    let mut table = Table::new(vec![
        Column::text("run"),
        Column::text("host"),
        Column::text("date"),
        Column::text("command"),
        Column::text("CPU model"),
        Column::text("kernel"),
        Column::text("file"),
    ]);
    let (listed, left_out) = if fleets {
        fleet_view::listed_runs(c)
    } else {
        ((0..c.runs.len()).collect(), 0)
    };
    for i in listed {
        let run = &c.runs[i];
        let stamp = crate::report::RunStamp {
            started: run.started.clone(),
            ..Default::default()
        };
        let label = if run.disturbed.is_empty() {
            run.label.clone()
        } else {
            format!("{} *", run.label)
        };
        // The series ("stat -- true"); differing flags are named under What differs, and
        // the whole command line is in the JSON.
        let command = if run.identity.is_empty() {
            run.command.clone()
        } else {
            run.identity.clone()
        };
        table.row([
            crate::view::Cell::swatched(run_color(i), label),
            run.host.clone().into(),
            stamp.when().into(),
            command.into(),
            run.cpu_model.clone().into(),
            run.kernel.clone().into(),
            run.file.clone().into(),
        ]);
    }
    if left_out > 0 {
        table.note(format!(
            "+{left_out} more reports named as outliers (see Reports named most often)"
        ));
    }
    table
}

/// What differs between a group's runs, and the warning that a change may come from it.
fn differences(section: &mut Section, c: &Comparison, group: &super::Group) {
    if group.differences.is_empty() {
        return;
    }
    let what: Vec<&str> = group.differences.iter().map(|d| d.what.as_str()).collect();
    section.push(Paragraph::warning(format!(
        "These runs differ in {}: a change below may come from that, not from the \
         machine's memory.",
        what.join(", ")
    )));
    if group.is_fleet() {
        section.push(fleet_view::differences_table(c, group));
        return;
    }
    let mut columns = vec![Column::text("")];
    columns.extend(group.runs.iter().map(|&i| Column::text(&c.runs[i].label)));
    let mut differences = Table::new(columns).titled("What differs");
    for d in &group.differences {
        let mut cells = vec![d.what.clone()];
        cells.extend(d.values.iter().cloned());
        differences.row(cells);
    }
    section.push(differences);
}

/// The runs measured while disturbed (a fleet's counted, the first few named).
fn disturbed_note(c: &Comparison, fleets: bool) -> Option<Paragraph> {
    let mut disturbed: Vec<String> = (c.runs.iter())
        .filter(|r| !r.disturbed.is_empty())
        .map(|r| format!("{} ({})", r.label, r.disturbed.join(", ")))
        .collect();
    if fleets && disturbed.len() > fleet_view::LISTED_REPORTS {
        let more = disturbed.len() - fleet_view::LISTED_REPORTS;
        disturbed.truncate(fleet_view::LISTED_REPORTS);
        disturbed.push(format!("and {more} more of the {} reports", c.runs.len()));
    }
    (!disturbed.is_empty()).then(|| {
        Paragraph::note(format!(
            "* measured while other tasks or the hypervisor took a share of the machine: \
             {}. A change beside a value marked * may be theirs (see the runs' Stability \
             sections).",
            disturbed.join("; ")
        ))
    })
}

/// "+12.3% worse", "~ (+0.4%)", "? (+3.1%)".
fn change_text(ratio: Option<f64>, verdict: Verdict) -> (String, Style) {
    let pct = ratio.map_or_else(
        || format::DASH.to_string(),
        |r| format!("{:+.1}%", (r - 1.0) * 100.0),
    );
    match verdict {
        Verdict::Same => (format!("~ ({pct})"), Style::Muted),
        Verdict::NotJudged => (format!("? ({pct})"), Style::Muted),
        Verdict::Worse => (format!("{pct} worse"), Style::Warn),
        Verdict::Better => (format!("{pct} better"), Style::Strong),
        Verdict::Changed => (format!("{pct} changed"), Style::Strong),
    }
}

fn side_by_side(c: &Comparison, group: &Group, rows: &[&Row]) -> Table {
    let first = &c.runs[group.runs[0]].label;
    // The unit goes first when the table is too wide: the change says better or worse.
    let mut columns = vec![
        Column::text("figure"),
        Column::text("unit").priority(Priority::Low),
    ];
    for (n, &i) in group.runs.iter().enumerate() {
        columns.push(Column::number(c.runs[i].label.clone()));
        if n > 0 {
            // The change is what a comparison is for: the last column to go.
            columns.push(Column::text(format!("vs {first}")).priority(Priority::High));
        }
    }
    let mut table = Table::new(columns);
    for row in rows {
        let mut cells = vec![
            crate::view::Cell::new(row.label.clone()),
            crate::view::Cell::new(unit_column(row)),
        ];
        for (n, cell) in row.cells.iter().enumerate() {
            let run = &c.runs[group.runs[n]];
            let star = if crate::history::identity::section_disturbed(&run.disturbed, &row.section)
            {
                " *"
            } else {
                ""
            };
            cells.push(match cell {
                Some(cell) => {
                    crate::view::Cell::new(format!("{}{star}", value_text(cell.value, &row.unit)))
                }
                None => crate::view::Cell::dash(),
            });
            if n > 0 {
                cells.push(
                    match cell.as_ref().and_then(|c| c.verdict.map(|v| (c, v))) {
                        Some((cell, verdict)) => {
                            let (text, style) = change_text(cell.ratio, verdict);
                            crate::view::Cell::styled(text, style)
                        }
                        None => crate::view::Cell::dash(),
                    },
                );
            }
        }
        table.row(cells);
    }
    table.note("↓ lower is better, ↑ higher is better; ~ within the noise of either run");
    table
}

/// The group's charts of section `id`, overlaid where they can be.
fn charts(
    c: &Comparison,
    group: &Group,
    per_run: &[Option<Vec<Section>>],
    id: &str,
    section: &mut Section,
) {
    let of_run = |i: usize| per_run[i].iter().flatten().find(|s| s.id == id);
    let mut titles: Vec<String> = Vec::new();
    for &i in &group.runs {
        for chart in of_run(i).map(overlay::charts).unwrap_or_default() {
            let t = overlay::title(chart).to_string();
            if !titles.contains(&t) {
                titles.push(t);
            }
        }
    }
    for t in titles {
        let labelled: Vec<(String, Option<&crate::view::Chart>)> = group
            .runs
            .iter()
            .map(|&i| {
                let chart = of_run(i).and_then(|s| {
                    overlay::charts(s)
                        .into_iter()
                        .find(|ch| overlay::title(ch) == t)
                });
                (legend_label(&c.runs[i]), chart)
            })
            .collect();
        for chart in overlay::overlay(&labelled) {
            section.push(Block::Only(crate::view::Medium::Html, vec![chart.into()]));
        }
    }
}

/// A run as the charts' legends name it: its label, with the host and date when the
/// label is a letter.
fn legend_label(run: &super::RunInfo) -> String {
    let stamp = crate::report::RunStamp {
        started: run.started.clone(),
        ..Default::default()
    };
    if run.label == run.host {
        format!("{} ({})", run.host, stamp.when())
    } else {
        format!("{}: {}, {}", run.label, run.host, stamp.when())
    }
}

/// A row of `compare.figures`: one figure of one run, its values in full.
#[derive(Serialize, Default)]
struct FigureCsvRow<'a> {
    group: usize,
    cpu_model: &'a str,
    key: &'a str,
    section: &'a str,
    label: &'a str,
    unit: &'a str,
    better: String,
    run: &'a str,
    value: Full,
    spread_pct: Option<Full>,
    step_pct: Option<Full>,
    ratio: Option<Full>,
    verdict: &'static str,
    disturbed: bool,
}

/// Every cell as CSV: one line per figure and run.
fn data_table(c: &Comparison) -> crate::view::DataTable {
    let mut rows = Vec::new();
    for (g, group) in c.groups.iter().enumerate() {
        for row in &group.rows {
            for (cell, &i) in row.cells.iter().zip(&group.runs) {
                let Some(cell) = cell else { continue };
                rows.push(FigureCsvRow {
                    group: g + 1,
                    cpu_model: &group.cpu_model,
                    key: &row.key,
                    section: &row.section,
                    label: &row.label,
                    unit: &row.unit,
                    better: format!("{:?}", row.better).to_lowercase(),
                    run: &c.runs[i].label,
                    value: Full(cell.value),
                    spread_pct: cell.spread_pct.map(Full),
                    step_pct: cell.step_pct.map(Full),
                    ratio: cell.ratio.map(Full),
                    verdict: cell.verdict.map_or("", |v| v.mark()),
                    disturbed: cell.disturbed,
                });
            }
        }
    }
    crate::view::DataTable::of("compare.figures", rows)
}

/// The terminal's closing line: the counts of each verdict.
pub fn summary_line(comparison: &Comparison) -> Text {
    let [better, worse, changed, same, unjudged] = comparison.counts();
    let mut line = format!(
        "{worse} worse, {better} better, {changed} changed, {same} unchanged (~), {unjudged} \
         not judged"
    );
    if comparison.groups.iter().any(|g| g.is_fleet()) {
        let named = fleet_view::named_reports(comparison);
        let figures: usize = named.iter().map(|(_, list)| list.len()).sum();
        line.push_str(&format!(
            "; {} report(s) named as outliers, {figures} time(s) in all",
            named.len()
        ));
    }
    Text::plain(line)
}
