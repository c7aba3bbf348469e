//! `memscope history` in the terminal and JSON: the runs by host and date, and the check
//! of each host's latest run (the figures that moved beyond the noise, worse first, those
//! measured while the machine was shared marked `*`), saying which earlier runs it was
//! judged against and which were passed over, and why.

use std::path::Path;

use super::check::{Checked, HostCheck};
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
            r.identity.clone(),
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

/// The runs counted rather than listed (after a fleet's import), saying how to list them.
pub fn count_section(runs: &[RunRow], db: &Path) -> Section {
    let mut section = Section::new("history", "History", "Saved runs");
    let hosts = runs.chunk_by(|a, b| a.host == b.host).count();
    section.push(Paragraph::note(format!(
        "{} run(s) of {hosts} host(s) in {}: `memscope history --last 1` lists each host's \
         newest, `--host HOST` one host's runs, `--check` checks each host's latest.",
        runs.len(),
        db.display()
    )));
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
    // With many hosts (a fleet), those with nothing to show are counted, not listed.
    let many = checks.len() > FEW_HOSTS;
    let nothing_to_check: Vec<&str> = (checks.iter())
        .filter(|c| many && c.figures.is_empty())
        .map(|c| c.host.as_str())
        .collect();
    let quiet: Vec<&str> = (checks.iter())
        .filter(|c| many && is_quiet(c))
        .map(|c| c.host.as_str())
        .collect();
    for c in checks {
        if many && (c.figures.is_empty() || is_quiet(c)) {
            continue;
        }
        host_check(&mut section, c);
    }
    if !quiet.is_empty() {
        section.push(Paragraph::note(format!(
            "{} host(s) with every figure within the noise of their earlier runs: {}.",
            quiet.len(),
            some_of(&quiet)
        )));
    }
    if !nothing_to_check.is_empty() {
        section.push(Paragraph::note(format!(
            "{} host(s) with nothing to check against (no earlier run of the same series and \
             settings sharing a figure): {}.",
            nothing_to_check.len(),
            some_of(&nothing_to_check)
        )));
    }
    section
}

/// One host's check: its heading, what was passed over or left out, the figures that
/// moved and the count.
fn host_check(section: &mut Section, c: &HostCheck) {
    section.push(Block::Heading(format!(
        "{}: run {} ({}, {}) against {} earlier run(s)",
        c.host,
        c.latest.id,
        when(&c.latest.started),
        c.identity,
        c.earlier_runs.len()
    )));
    if c.other_settings > 0 {
        section.push(Paragraph::note(format!(
            "{} earlier run(s) of `{}` with other settings ({}) passed over: their \
             figures are not comparable.",
            c.other_settings,
            c.identity,
            c.other_settings_what.join(", ")
        )));
    }
    if c.figures.is_empty() {
        section.push(Paragraph::note(format!(
            "Nothing to check against: no earlier run of `{}` with the same settings on \
             this host shares a figure with it.",
            c.identity
        )));
        return;
    }
    settledness_notes(section, c);
    let mut moved: Vec<_> = c.figures.iter().filter(|f| f.verdict.is_change()).collect();
    moved.sort_by_key(|f| match f.verdict {
        Verdict::Worse => 0,
        Verdict::Changed => 1,
        _ => 2,
    });
    let within = (c.figures.iter())
        .filter(|f| f.verdict == Verdict::Same)
        .count();
    let unjudged = c.figures.len() - moved.len() - within;
    if !moved.is_empty() {
        section.push(moved_table(&moved));
    }
    let regressions = c.regressions().count();
    let unsettled = c.unsettled_worse().count();
    let not_counted = if unsettled > 0 {
        format!(
            " {unsettled} worse figure(s) marked * not counted: measured while disturbed \
             or drifting."
        )
    } else {
        String::new()
    };
    section.push(if regressions > 0 {
        Paragraph::warning(format!(
            "{regressions} regression(s) beyond the noise; {within} figure(s) within it, \
             {unjudged} not judged.{not_counted}"
        ))
    } else {
        Paragraph::note(format!(
            "No regression: {within} figure(s) within the noise, {unjudged} not \
             judged.{not_counted}"
        ))
    });
}

/// Whether the latest run or the reference was measured disturbed or drifting, and what
/// that does to the judging.
fn settledness_notes(section: &mut Section, c: &HostCheck) {
    if !c.latest.disturbed.is_empty() || c.latest.drift {
        let mut what = Vec::new();
        if !c.latest.disturbed.is_empty() {
            what.push(format!(
                "measured {} while other tasks or the hypervisor took a share of the \
                 machine",
                c.latest.disturbed.join(", ")
            ));
        }
        if c.latest.drift {
            what.push("its drift pass found figures that moved within the run".into());
        }
        section.push(Paragraph::note(format!(
            "This run {}: its figures from there are marked * and a worse one is not \
             counted as a regression.",
            what.join(", and ")
        )));
    }
    let left_out: usize = c.figures.iter().map(|f| f.left_out).max().unwrap_or(0);
    if left_out > 0 {
        section.push(Paragraph::note(format!(
            "Up to {left_out} earlier value(s) per figure measured while disturbed or \
             drifting were left out of the reference, settled ones being there."
        )));
    }
    if c.figures.iter().any(|f| f.reference_unsettled) {
        section.push(Paragraph::note(
            "Figures whose every earlier value was measured while disturbed or drifting \
             were judged against those values and are marked *.",
        ));
    }
}

/// The figures that moved beyond the noise, worse first.
fn moved_table(moved: &[&Checked]) -> Table {
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
        let style = if f.is_regression() {
            Style::Warn
        } else {
            Style::Plain
        };
        let mark = if f.unsettled || f.reference_unsettled {
            format!("{}*", f.verdict.mark())
        } else {
            f.verdict.mark().to_string()
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
            Cell::styled(mark, style),
        ]);
    }
    table
}

/// Beyond this many hosts, the check lists only those with something to show.
const FEW_HOSTS: usize = 10;

/// A host whose check shows nothing but "no regression": every figure within the noise
/// (or not judged), no earlier run passed over, the latest run settled.
fn is_quiet(c: &HostCheck) -> bool {
    !c.figures.is_empty()
        && c.other_settings == 0
        && c.latest.disturbed.is_empty()
        && !c.latest.drift
        && c.figures
            .iter()
            .all(|f| !f.verdict.is_change() && f.left_out == 0 && !f.reference_unsettled)
}

/// The first few names, and how many more.
fn some_of(names: &[&str]) -> String {
    const SHOWN: usize = 8;
    let mut text = names[..names.len().min(SHOWN)].join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}
