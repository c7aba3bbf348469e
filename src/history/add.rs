//! Adding reports to the history: a report made ready for the database (`Prepared`:
//! its run row's columns, its JSON and its figures, without the parsed report), the
//! batch that adds many in one transaction, skipping what the database holds already by
//! content key, and `--add DIR`, a directory's reports read one at a time and summed up in
//! a few lines.

use std::path::PathBuf;

use anyhow::Context;
use rusqlite::{params, OptionalExtension};

use super::{Added, Facts};
use crate::report::Report;
use crate::view::figure::{Better, Figure};

/// A report made ready for the database: the columns of its run row, its JSON text and
/// its figures, without the report itself (a batch of a thousand imports holds these, a
/// fraction of the parsed reports' memory).
#[derive(Debug, Clone)]
pub struct Prepared {
    pub host: String,
    /// When it ran, as the listing writes it.
    pub when: String,
    cpu_model: String,
    kernel: String,
    command: String,
    started: String,
    started_unix: i64,
    tool_version: String,
    schema_version: u32,
    json: String,
    facts: Facts,
    figures: Vec<Figure>,
}

impl Prepared {
    pub fn of(report: &Report) -> anyhow::Result<Prepared> {
        let figures = report
            .figures()
            .into_iter()
            .filter(|f| f.value.is_finite())
            // The export's names and help texts are not stored.
            .map(|f| Figure { metric: None, ..f })
            .collect();
        Ok(Prepared {
            host: report.run.host.clone(),
            when: report.run.when(),
            cpu_model: report.machine.cpu_model.clone(),
            kernel: report.machine.kernel.clone(),
            command: report.settings.command.clone(),
            started: report.run.started.clone(),
            started_unix: report.run.started_unix as i64,
            tool_version: report.tool.version.clone(),
            schema_version: report.schema_version,
            json: serde_json::to_string(report).context("serialising the report")?,
            facts: Facts::of(report),
            figures,
        })
    }
}

/// Reports being added in one transaction (`History::batch`).
pub struct Batch<'c> {
    pub(super) tx: rusqlite::Transaction<'c>,
}

impl Batch<'_> {
    /// Adds a report unless the database, or an earlier report of the batch, holds it.
    pub fn add(&self, prepared: &Prepared, source: &str) -> anyhow::Result<Added> {
        insert(&self.tx, prepared, source)
    }

    /// Keeps what was added.
    pub fn commit(self) -> anyhow::Result<()> {
        Ok(self.tx.commit()?)
    }
}

/// Inserts one prepared report and its figures inside the caller's transaction, unless
/// the database holds a report with its content key (found by the key's index).
pub(super) fn insert(
    tx: &rusqlite::Transaction,
    p: &Prepared,
    source: &str,
) -> anyhow::Result<Added> {
    let held: Option<i64> = tx
        .prepare_cached("SELECT id FROM runs WHERE content_key = ?1 ORDER BY id LIMIT 1")?
        .query_row(params![p.facts.content_key], |r| r.get(0))
        .optional()?;
    if let Some(id) = held {
        return Ok(Added::Held(id));
    }
    tx.prepare_cached(
        "INSERT INTO runs (host, cpu_model, kernel, command, started, started_unix,
                           tool_version, schema_version, source, report, identity,
                           settings, disturbed, drift, content_key)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    )?
    .execute(params![
        p.host,
        p.cpu_model,
        p.kernel,
        p.command,
        p.started,
        p.started_unix,
        p.tool_version,
        p.schema_version,
        source,
        p.json,
        p.facts.identity,
        serde_json::to_string(&p.facts.settings)?,
        serde_json::to_string(&p.facts.disturbed)?,
        p.facts.drift,
        p.facts.content_key
    ])?;
    let id = tx.last_insert_rowid();
    let mut figure = tx.prepare_cached(
        "INSERT OR REPLACE INTO figures
         (run_id, key, section, label, unit, better, value, spread_pct, step_pct, drift_pct)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    for f in &p.figures {
        figure.execute(params![
            id,
            f.key,
            f.section,
            f.label,
            f.unit,
            better_name(f.better),
            f.value,
            f.spread_pct,
            f.step_pct,
            f.drift_pct
        ])?;
    }
    Ok(Added::New(id))
}

/// How many files passed over in a directory are named one by one.
const PASSED_OVER_NAMED: usize = 5;

/// Adds a directory's reports, read one at a time, and says in a few lines what was
/// added, what the database held already and which files were not reports.
pub(super) fn add_directory(batch: &Batch, dir: &str, files: &[PathBuf]) -> anyhow::Result<String> {
    let (mut new, mut held, mut passed_over) = (Vec::new(), Vec::new(), Vec::new());
    for file in files {
        match crate::report::read::read_report(file) {
            Ok(report) => {
                let prepared = Prepared::of(&report)?;
                drop(report);
                match batch.add(&prepared, &file.display().to_string())? {
                    Added::New(id) => new.push(id),
                    Added::Held(id) => held.push(id),
                }
            }
            Err(error) => passed_over.push(error.to_string()),
        }
    }
    let range = |ids: &[i64]| match (ids.iter().min(), ids.iter().max()) {
        (Some(a), Some(b)) if a == b => format!("run {a}"),
        (Some(a), Some(b)) => format!("runs {a}–{b}"),
        _ => String::new(),
    };
    let mut text = format!(
        " Added {} report(s) from {dir}{}\n",
        new.len(),
        if new.is_empty() {
            String::new()
        } else {
            format!(" as {}", range(&new))
        }
    );
    if !held.is_empty() {
        text.push_str(&format!(
            " Skipped {} report(s) from {dir}: the database holds them already ({})\n",
            held.len(),
            range(&held)
        ));
    }
    if !passed_over.is_empty() {
        text.push_str(&format!(
            " Passed over {} file(s) of {dir} that are not memscope reports:\n",
            passed_over.len()
        ));
        for reason in passed_over.iter().take(PASSED_OVER_NAMED) {
            text.push_str(&format!("   {reason}\n"));
        }
        if passed_over.len() > PASSED_OVER_NAMED {
            text.push_str(&format!(
                "   … and {} more\n",
                passed_over.len() - PASSED_OVER_NAMED
            ));
        }
    }
    Ok(text)
}

fn better_name(better: Better) -> &'static str {
    match better {
        Better::Lower => "lower",
        Better::Higher => "higher",
        Better::Neither => "neither",
    }
}
