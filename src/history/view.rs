//! `memscope history` in the terminal and JSON: the runs by host and date, and the check
//! of each host's latest run (the figures that moved beyond the noise, worse first).

use std::path::Path;

use super::check::HostCheck;
use super::RunRow;
use crate::report::RunStamp;
use crate::units::Bytes;
use crate::view::format;
use crate::view::judge::Verdict;
use crate::view::{Block, Cell, Column, Paragraph, Section, Style, Table};

fn when(started: &str) -> String {
    RunStamp {
        started: started.to_string(),
        ..Default::default()
    }
    .when()
}

/// The runs, one row each.
pub fn list_section(runs: &[RunRow], db: &Path) -> Section {
    let mut section = Section::new("history", "History", "Saved runs");
    if runs.is_empty() {
        section.push(Paragraph::note(format!("No runs in {} yet.", db.display())));
        return section;
    }
    let mut table = Table::new(vec![
        Column::number("id"),
        Column::text("host"),
        Column::text("date"),
        Column::text("command"),
        Column::text("CPU model"),
        Column::text("kernel"),
        Column::number("figures"),
        Column::text("from"),
    ]);
    for r in runs {
        table.row([
            r.id.to_string(),
            r.host.clone(),
            when(&r.started),
            r.command.clone(),
            r.cpu_model.clone(),
            r.kernel.clone(),
            r.figures.to_string(),
            r.source.clone(),
        ]);
    }
    section.push(table);
    section.push(Paragraph::muted(format!("Database: {}", db.display())));
    section
}

fn value_text(value: f64, unit: &str) -> String {
    match unit {
        "bytes" if value.is_finite() && value >= 0.0 => Bytes(value.round() as u64).to_string(),
        _ => format::derived(value),
    }
}

/// Each host's latest run against its history.
pub fn check_section(checks: &[HostCheck]) -> Section {
    let mut section = Section::new(
        "check",
        "Check",
        "Latest run of each host against its history",
    );
    for c in checks {
        section.push(Block::Heading(format!(
            "{}: run {} ({}, {}) against {} earlier run(s)",
            c.host,
            c.latest.id,
            when(&c.latest.started),
            c.command,
            c.earlier_runs.len()
        )));
        if c.figures.is_empty() {
            section.push(Paragraph::note(
                "Nothing to check against: no earlier run of this command on this host shares \
                 a figure with it.",
            ));
            continue;
        }
        let mut moved: Vec<_> = c.figures.iter().filter(|f| f.verdict.is_change()).collect();
        moved.sort_by_key(|f| match f.verdict {
            Verdict::Worse => 0,
            Verdict::Changed => 1,
            _ => 2,
        });
        let within = c
            .figures
            .iter()
            .filter(|f| f.verdict == Verdict::Same)
            .count();
        let unjudged = c.figures.len() - moved.len() - within;
        if !moved.is_empty() {
            let mut table = Table::new(vec![
                Column::text("figure"),
                Column::text("unit"),
                Column::number("latest"),
                Column::number("before (median)"),
                Column::number("change"),
                Column::number("noise band"),
                Column::text(""),
            ]);
            for f in moved {
                let style = if f.verdict == Verdict::Worse {
                    Style::Warn
                } else {
                    Style::Plain
                };
                table.row([
                    Cell::new(f.label.clone()),
                    Cell::new(f.unit.clone()),
                    Cell::new(value_text(f.latest, &f.unit)),
                    Cell::new(value_text(f.reference, &f.unit)),
                    Cell::new(format!("{:+.1}%", (f.latest / f.reference - 1.0) * 100.0)),
                    Cell::new(
                        f.band_pct
                            .map_or_else(|| format::DASH.to_string(), |b| format!("±{b:.1}%")),
                    ),
                    Cell::styled(f.verdict.mark(), style),
                ]);
            }
            section.push(table);
        }
        let regressions = c.regressions().count();
        section.push(if regressions > 0 {
            Paragraph::warning(format!(
                "{regressions} regression(s) beyond the noise; {within} figure(s) within it, \
                 {unjudged} not judged."
            ))
        } else {
            Paragraph::note(format!(
                "No regression: {within} figure(s) within the noise, {unjudged} not judged."
            ))
        });
    }
    section
}
