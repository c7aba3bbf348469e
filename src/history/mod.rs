//! The run history: an embedded SQLite database (`rusqlite`, its own bundled library)
//! under the user's data directory, holding every saved report whole and its figures row
//! by row. `--save` (or MEMSCOPE_SAVE=1) on a measuring command adds the run; `history
//! --add` imports reports from other hosts or older runs; `history` lists runs by host and
//! date; `history --check` sets each host's latest run against its earlier runs of the
//! same command and reports the figures that moved beyond the noise (`check`).

pub mod check;
pub mod params;
pub mod view;

use std::path::{Path, PathBuf};

use anyhow::Context;
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::report::Report;
use crate::view::figure::{Better, Figure};

/// The environment variable naming the database file.
pub const DB_ENV: &str = "MEMSCOPE_HISTORY";
/// The environment variable that makes every measuring run `--save`.
pub const SAVE_ENV: &str = "MEMSCOPE_SAVE";

/// The database layout's version (SQLite's `user_version`).
const LAYOUT_VERSION: i64 = 1;

/// MEMSCOPE_HISTORY, else `$XDG_DATA_HOME/memscope/history.sqlite3`, else
/// `~/.local/share/memscope/history.sqlite3`.
pub fn default_path() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(path) = var(DB_ENV) {
        return Some(PathBuf::from(path));
    }
    let data = var("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".local/share")))?;
    Some(data.join("memscope").join("history.sqlite3"))
}

/// Whether MEMSCOPE_SAVE asks for every run to be saved ("1", "true", "yes").
pub fn save_by_default() -> bool {
    std::env::var(SAVE_ENV)
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

/// One saved run, as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub id: i64,
    pub host: String,
    pub cpu_model: String,
    pub kernel: String,
    pub command: String,
    pub started: String,
    pub started_unix: i64,
    pub tool_version: String,
    /// "saved" for a run recorded by --save, else the file it was imported from.
    pub source: String,
    pub figures: i64,
}

/// The open database.
pub struct History {
    connection: Connection,
    pub path: PathBuf,
}

impl History {
    /// Opens (creating when `create`) the database at `path`.
    pub fn open(path: &Path, create: bool) -> anyhow::Result<History> {
        if !create && !path.exists() {
            anyhow::bail!(
                "no history database at {} yet: save a run first (--save on a measuring \
                 command, or memscope history --add REPORT.json)",
                path.display()
            );
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the directory {}", dir.display()))?;
        }
        let connection = Connection::open(path)
            .with_context(|| format!("opening the history database {}", path.display()))?;
        let history = History {
            connection,
            path: path.to_path_buf(),
        };
        history
            .migrate()
            .with_context(|| format!("reading the history database {}", path.display()))?;
        Ok(history)
    }

    fn migrate(&self) -> anyhow::Result<()> {
        let c = &self.connection;
        let version: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > LAYOUT_VERSION {
            anyhow::bail!(
                "it has layout {version}, newer than this memscope's {LAYOUT_VERSION}: use a \
                 newer memscope with it"
            );
        }
        c.execute_batch(
            "PRAGMA foreign_keys = ON;
             CREATE TABLE IF NOT EXISTS runs (
                 id INTEGER PRIMARY KEY,
                 host TEXT NOT NULL,
                 cpu_model TEXT NOT NULL,
                 kernel TEXT NOT NULL,
                 command TEXT NOT NULL,
                 started TEXT NOT NULL,
                 started_unix INTEGER NOT NULL,
                 tool_version TEXT NOT NULL,
                 schema_version INTEGER NOT NULL,
                 source TEXT NOT NULL,
                 report TEXT NOT NULL
             );
             CREATE INDEX IF NOT EXISTS runs_by_host ON runs (host, command, started_unix);
             CREATE TABLE IF NOT EXISTS figures (
                 run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                 key TEXT NOT NULL,
                 section TEXT NOT NULL,
                 label TEXT NOT NULL,
                 unit TEXT NOT NULL,
                 better TEXT NOT NULL,
                 value REAL NOT NULL,
                 spread_pct REAL,
                 step_pct REAL,
                 drift_pct REAL,
                 PRIMARY KEY (run_id, key)
             );",
        )?;
        c.execute_batch(&format!("PRAGMA user_version = {LAYOUT_VERSION}"))?;
        Ok(())
    }

    /// Adds a report and its figures in one transaction; returns the run's id.
    pub fn add(&mut self, report: &Report, source: &str) -> anyhow::Result<i64> {
        let json = serde_json::to_string(report).context("serialising the report")?;
        let figures = report.figures();
        let tx = self.connection.transaction()?;
        tx.execute(
            "INSERT INTO runs (host, cpu_model, kernel, command, started, started_unix,
                               tool_version, schema_version, source, report)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                report.run.host,
                report.machine.cpu_model,
                report.machine.kernel,
                report.settings.command,
                report.run.started,
                report.run.started_unix as i64,
                report.tool.version,
                report.schema_version,
                source,
                json
            ],
        )?;
        let id = tx.last_insert_rowid();
        {
            let mut insert = tx.prepare(
                "INSERT OR REPLACE INTO figures
                 (run_id, key, section, label, unit, better, value, spread_pct, step_pct,
                  drift_pct)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?;
            for f in figures.iter().filter(|f| f.value.is_finite()) {
                insert.execute(params![
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
        }
        tx.commit()?;
        Ok(id)
    }

    /// Runs, by host then date, optionally of one host, the newest `limit` per host.
    pub fn runs(&self, host: Option<&str>, limit: Option<usize>) -> anyhow::Result<Vec<RunRow>> {
        let mut statement = self.connection.prepare(
            "SELECT r.id, r.host, r.cpu_model, r.kernel, r.command, r.started, r.started_unix,
                    r.tool_version, r.source,
                    (SELECT COUNT(*) FROM figures f WHERE f.run_id = r.id)
             FROM runs r
             WHERE ?1 IS NULL OR r.host = ?1
             ORDER BY r.host, r.started_unix, r.id",
        )?;
        let rows = statement.query_map(params![host], |r| {
            Ok(RunRow {
                id: r.get(0)?,
                host: r.get(1)?,
                cpu_model: r.get(2)?,
                kernel: r.get(3)?,
                command: r.get(4)?,
                started: r.get(5)?,
                started_unix: r.get(6)?,
                tool_version: r.get(7)?,
                source: r.get(8)?,
                figures: r.get(9)?,
            })
        })?;
        let mut all: Vec<RunRow> = rows
            .collect::<Result<_, _>>()
            .with_context(|| format!("reading the runs in {}", self.path.display()))?;
        if let Some(limit) = limit {
            let mut kept = Vec::new();
            for host in distinct(all.iter().map(|r| r.host.clone())) {
                let of_host: Vec<RunRow> = all.iter().filter(|r| r.host == host).cloned().collect();
                kept.extend(of_host.into_iter().rev().take(limit).rev());
            }
            all = kept;
        }
        Ok(all)
    }

    /// The figures of one run.
    pub fn figures(&self, run: i64) -> anyhow::Result<Vec<Figure>> {
        let mut statement = self.connection.prepare(
            "SELECT key, section, label, unit, better, value, spread_pct, step_pct, drift_pct
             FROM figures WHERE run_id = ?1 ORDER BY rowid",
        )?;
        let rows = statement.query_map(params![run], |r| {
            Ok(Figure {
                key: r.get(0)?,
                section: r.get(1)?,
                label: r.get(2)?,
                unit: r.get(3)?,
                better: parse_better(&r.get::<_, String>(4)?),
                value: r.get(5)?,
                spread_pct: r.get(6)?,
                step_pct: r.get(7)?,
                drift_pct: r.get(8)?,
                metric: None,
            })
        })?;
        rows.collect::<Result<_, _>>().with_context(|| {
            format!(
                "reading the figures of run {run} in {}",
                self.path.display()
            )
        })
    }

    /// The whole report of a run, as it was saved.
    pub fn report(&self, run: i64) -> anyhow::Result<Option<Report>> {
        let text: Option<String> = self
            .connection
            .query_row("SELECT report FROM runs WHERE id = ?1", params![run], |r| {
                r.get(0)
            })
            .optional()?;
        text.map(|t| serde_json::from_str(&t).context("reading a saved report"))
            .transpose()
    }
}

/// `memscope history`: imports, then lists or checks; exit status 1 when a check finds a
/// regression.
pub fn run(
    plan: &params::HistoryPlan,
    json_to: Option<&crate::report::output::Target>,
) -> anyhow::Result<std::process::ExitCode> {
    let creating = !plan.add.is_empty();
    let mut history = History::open(&plan.db, creating)?;
    let mut text = String::new();
    for (file, report) in &plan.add {
        let id = history.add(report, file)?;
        text.push_str(&format!(
            " Added {file} ({}, {}) as run {id}\n",
            report.run.host,
            report.run.when()
        ));
    }
    let mut regression = false;
    let (section, json) = if plan.check {
        let checks = check::check(&history, plan.host.as_deref(), plan.last.unwrap_or(10))?;
        regression = checks.iter().any(|c| c.regressions().count() > 0);
        (
            view::check_section(&checks),
            crate::report::json::to_bytes(&checks),
        )
    } else {
        let runs = history.runs(plan.host.as_deref(), plan.last)?;
        (
            view::list_section(&runs, &history.path),
            crate::report::json::to_bytes(&runs),
        )
    };
    text.push_str(&crate::report::terminal::render(&[section], false));
    if let Some(target) = json_to {
        target.write(&json)?;
        if !target.is_stdout() {
            text.push_str(&format!("\n Wrote {target}\n"));
        }
    }
    if json_to.is_some_and(|t| t.is_stdout()) {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    Ok(if regression {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    })
}

/// Saves a measuring command's report in the default database; returns where and the id.
pub fn save(report: &Report) -> anyhow::Result<(PathBuf, i64)> {
    let path = default_path().context(
        "no history database: set MEMSCOPE_HISTORY to a file path (HOME is not set either)",
    )?;
    let mut history = History::open(&path, true)?;
    let id = history.add(report, "saved")?;
    Ok((path, id))
}

fn better_name(better: Better) -> &'static str {
    match better {
        Better::Lower => "lower",
        Better::Higher => "higher",
        Better::Neither => "neither",
    }
}

fn parse_better(name: &str) -> Better {
    match name {
        "lower" => Better::Lower,
        "higher" => Better::Higher,
        _ => Better::Neither,
    }
}

/// The distinct values in first-seen order.
fn distinct(values: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn report(host: &str, when: u64, scale: f64) -> Report {
        let mut report = Report::new(crate::topology::Machine::default(), Default::default());
        report.run.host = host.to_string();
        report.run.started_unix = when;
        report.run.started = format!("{when}");
        report.settings.command = "run".into();
        let mut latency = crate::experiments::latency::samples::latency();
        for level in &mut latency.levels {
            level.latency_ns *= scale;
        }
        report.experiments.latency = Some(latency);
        report
    }

    #[test]
    fn runs_are_saved_whole_with_their_figures_and_listed_by_host() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/history.sqlite3");
        assert!(History::open(&path, false).is_err());
        let mut h = History::open(&path, true).unwrap();
        let a = h.add(&report("b-host", 10, 1.0), "saved").unwrap();
        h.add(&report("a-host", 20, 1.0), "x.json").unwrap();
        h.add(&report("b-host", 30, 1.0), "saved").unwrap();
        let runs = h.runs(None, None).unwrap();
        let order: Vec<(&str, i64)> = runs
            .iter()
            .map(|r| (r.host.as_str(), r.started_unix))
            .collect();
        assert_eq!(order, [("a-host", 20), ("b-host", 10), ("b-host", 30)]);
        assert_eq!(h.runs(Some("b-host"), Some(1)).unwrap().len(), 1);
        let figures = h.figures(a).unwrap();
        assert_eq!(figures.len() as i64, runs[1].figures);
        let expected = report("b-host", 10, 1.0).figures();
        assert_eq!(
            figures.len(),
            expected.iter().filter(|f| f.value.is_finite()).count()
        );
        assert_eq!(h.report(a).unwrap().unwrap().run.host, "b-host");
        drop(h);
        // Reopened, the layout is there and the runs too.
        assert_eq!(
            History::open(&path, false)
                .unwrap()
                .runs(None, None)
                .unwrap()
                .len(),
            3
        );
    }
}
