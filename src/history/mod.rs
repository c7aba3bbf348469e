//! The run history: an embedded SQLite database (`rusqlite`, its own bundled library)
//! under the user's data directory, holding every saved report whole and its figures row
//! by row. `--save` (or MEMSCOPE_SAVE=1) on a measuring command adds the run; `history
//! --add` imports reports from other hosts or older runs; `history` lists runs by host and
//! date; `history --check` sets each host's latest run against its earlier runs of the
//! same series and settings (`identity`: the command and the program it ran, quick mode,
//! repetitions, sizes, pages, CPUs, flags) and reports the figures that moved beyond the
//! noise (`check`). A report the database already holds (by `identity::content_key`) is
//! not added twice.
//!
//! Listing and checking open the database read-only and never create or change a file;
//! `--add` and `--save` create a missing one exclusively. The path follows the output
//! files' link rules (`render::output::resolve`), SQLite opens it with
//! SQLITE_OPEN_NOFOLLOW, and a file that is not memscope's history is refused (exit 2)
//! before anything is written; `--save` checks all this before the measuring. A layout-1
//! database (before the identity columns) is read as it is, its runs' identities worked
//! out from their saved reports, and migrated in place the first time a run is added.

mod add;
pub mod check;
pub mod identity;
pub mod params;
pub mod view;

use std::path::{Path, PathBuf};

use anyhow::Context;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::render::output::{self, Found};
use crate::report::Report;
use crate::view::figure::{Better, Figure};
use add::{add_directory, insert};
pub use add::{Batch, Prepared};

/// The environment variable naming the database file.
pub const DB_ENV: &str = "MEMSCOPE_HISTORY";
/// The environment variable that makes every measuring run `--save`.
pub const SAVE_ENV: &str = "MEMSCOPE_SAVE";

/// The database layout's version (SQLite's `user_version`). 2 added the runs' identity,
/// settings, disturbed experiments, drift and content key.
const LAYOUT_VERSION: i64 = 2;

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
    /// The series: the command and the program it ran ("stat -- sleep 0.2").
    #[serde(default)]
    pub identity: String,
    /// The settings its figures depend on (`identity::settings`).
    #[serde(default)]
    pub settings: Vec<identity::Setting>,
    /// The experiments measured while the machine was shared.
    #[serde(default)]
    pub disturbed: Vec<String>,
    /// Its drift pass found figures that moved beyond their noise.
    #[serde(default)]
    pub drift: bool,
}

/// What `History::add` did with a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// Stored as this run.
    New(i64),
    /// The database held it already, as this run: nothing was written.
    Held(i64),
}

impl Added {
    /// The run's id, either way.
    pub fn id(self) -> i64 {
        match self {
            Added::New(id) | Added::Held(id) => id,
        }
    }
}

/// A run's facts worked out from its report (`identity`), as the layout-2 columns hold
/// them.
#[derive(Debug, Clone)]
struct Facts {
    identity: String,
    settings: Vec<identity::Setting>,
    disturbed: Vec<String>,
    drift: bool,
    content_key: String,
}

impl Facts {
    fn of(report: &Report) -> Facts {
        Facts {
            identity: identity::identity(report),
            settings: identity::settings(report),
            disturbed: identity::disturbed(report),
            drift: identity::drifted(report),
            content_key: identity::content_key(report),
        }
    }
}

/// The open database.
pub struct History {
    connection: Connection,
    pub path: PathBuf,
    /// The layout the file has (older ones are read, and migrated when written).
    version: i64,
}

/// How the database is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Listing and checking: opened read-only, so nothing is created or changed; a
    /// missing or empty file is an error.
    Read,
    /// Adding runs: a missing file is created exclusively, an empty one given the layout.
    Write,
}

/// What an existing database file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// memscope's tables, at this layout version.
    Ours(i64),
    /// No table at all (a new or empty file).
    Empty,
}

/// The `UsageError` (exit 2) naming the database and why it cannot be used.
fn refused(path: &Path, reason: impl Into<String>) -> UsageError {
    UsageError::HistoryDatabase {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// An SQLite error while opening or inspecting `path`: a file that is not an SQLite
/// database (or a damaged one, one swapped for a link, one memscope may not open) is the
/// user's to fix (exit 2).
fn sqlite_error(path: &Path, error: rusqlite::Error) -> anyhow::Error {
    use rusqlite::ErrorCode;
    let reason = match error.sqlite_error() {
        Some(e) if e.code == ErrorCode::NotADatabase => "it is not an SQLite database",
        Some(e) if e.code == ErrorCode::DatabaseCorrupt => "it is a damaged SQLite database",
        Some(e) if e.extended_code == rusqlite::ffi::SQLITE_CANTOPEN_SYMLINK => {
            "it became a symbolic link while memscope opened it"
        }
        // Unreadable (another user's file, a mode without read permission): the OS says
        // why, SQLite only that it could not.
        Some(e)
            if matches!(
                e.code,
                ErrorCode::CannotOpen | ErrorCode::PermissionDenied | ErrorCode::ReadOnly
            ) =>
        {
            // Asked without opening it (a FIFO swapped in would block an open).
            let readable = || -> std::io::Result<()> {
                use std::os::unix::ffi::OsStrExt;
                let c = std::ffi::CString::new(path.as_os_str().as_bytes())?;
                // SAFETY: faccessat reads the NUL-terminated path.
                let ok = unsafe {
                    libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::R_OK, libc::AT_EACCESS)
                };
                if ok == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            };
            let why = match readable() {
                Err(os) => os.to_string(),
                Ok(()) => "it or its directory is not writable".to_string(),
            };
            return refused(path, format!("it cannot be opened: {why} ({error})")).into();
        }
        _ => {
            return anyhow::Error::new(error)
                .context(format!("opening the history database {}", path.display()))
        }
    };
    refused(path, format!("{reason} ({error})")).into()
}

impl History {
    /// Opens the database at `path`: for `Read` read-only and without creating anything,
    /// for `Write` creating it when missing. The path follows the output files' link
    /// rules (`render::output::resolve`): another user's link, or any link in a
    /// world-writable directory, is refused; SQLite then opens the resolved file by a
    /// path without links, with SQLITE_OPEN_NOFOLLOW.
    pub fn open(path: &Path, access: Access) -> anyhow::Result<History> {
        if access == Access::Write {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                crate::fs::create_dirs(dir).map_err(|e| {
                    refused(path, format!("its directory cannot be made or used: {e}"))
                })?;
            }
        }
        let real = locate(path, access)?;
        let flags = match access {
            Access::Read => OpenFlags::SQLITE_OPEN_READ_ONLY,
            Access::Write => OpenFlags::SQLITE_OPEN_READ_WRITE,
        } | OpenFlags::SQLITE_OPEN_NOFOLLOW
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection =
            Connection::open_with_flags(&real, flags).map_err(|e| sqlite_error(path, e))?;
        let mut history = History {
            connection,
            path: path.to_path_buf(),
            version: LAYOUT_VERSION,
        };
        let layout = history.layout()?;
        match (access, layout) {
            (Access::Read, Layout::Empty) => {
                return Err(refused(path, "it is empty: no run was saved in it yet").into())
            }
            (Access::Write, Layout::Empty) => history.create_layout(),
            (Access::Write, Layout::Ours(version)) if version < LAYOUT_VERSION => history.migrate(),
            (Access::Read, Layout::Ours(version)) => {
                history.version = version;
                Ok(())
            }
            _ => Ok(()),
        }
        .with_context(|| format!("writing the history database {}", path.display()))?;
        Ok(history)
    }

    /// What the file holds; anything but memscope's tables (or none) is refused.
    fn layout(&self) -> anyhow::Result<Layout> {
        let c = &self.connection;
        let path = &self.path;
        c.execute_batch("PRAGMA foreign_keys = ON")
            .map_err(|e| sqlite_error(path, e))?;
        let version: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| sqlite_error(path, e))?;
        if version > LAYOUT_VERSION {
            return Err(refused(
                path,
                format!(
                    "it has layout {version}, newer than this memscope's {LAYOUT_VERSION}: \
                     use a newer memscope with it"
                ),
            )
            .into());
        }
        let tables: Vec<String> = c
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| sqlite_error(path, e))?;
        let has = |name: &str| tables.iter().any(|t| t == name);
        if has("runs") && has("figures") {
            Ok(Layout::Ours(version))
        } else if tables.is_empty() {
            Ok(Layout::Empty)
        } else {
            Err(refused(
                path,
                "it is an SQLite database, but not a memscope history (it has no runs and \
                 figures tables)",
            )
            .into())
        }
    }

    fn create_layout(&self) -> anyhow::Result<()> {
        let c = &self.connection;
        c.execute_batch(
            "CREATE TABLE IF NOT EXISTS runs (
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
                 report TEXT NOT NULL,
                 identity TEXT NOT NULL DEFAULT '',
                 settings TEXT NOT NULL DEFAULT '[]',
                 disturbed TEXT NOT NULL DEFAULT '[]',
                 drift INTEGER NOT NULL DEFAULT 0,
                 content_key TEXT NOT NULL DEFAULT ''
             );
             CREATE INDEX IF NOT EXISTS runs_by_host ON runs (host, command, started_unix);
             CREATE INDEX IF NOT EXISTS runs_by_content ON runs (content_key);
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

    /// Layout 1 to 2 in one transaction: the identity columns added and filled in from
    /// each run's saved report (a report this memscope cannot read keeps its command as
    /// its identity and a key of its own, so it is never taken for another).
    fn migrate(&mut self) -> anyhow::Result<()> {
        let tx = self.connection.transaction()?;
        tx.execute_batch(
            "ALTER TABLE runs ADD COLUMN identity TEXT NOT NULL DEFAULT '';
             ALTER TABLE runs ADD COLUMN settings TEXT NOT NULL DEFAULT '[]';
             ALTER TABLE runs ADD COLUMN disturbed TEXT NOT NULL DEFAULT '[]';
             ALTER TABLE runs ADD COLUMN drift INTEGER NOT NULL DEFAULT 0;
             ALTER TABLE runs ADD COLUMN content_key TEXT NOT NULL DEFAULT '';
             CREATE INDEX IF NOT EXISTS runs_by_content ON runs (content_key);",
        )?;
        let saved: Vec<(i64, String, String)> = tx
            .prepare("SELECT id, command, report FROM runs")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        for (id, command, text) in saved {
            let facts = match serde_json::from_str::<Report>(&text) {
                Ok(report) => Facts::of(&report),
                Err(_) => Facts {
                    identity: command,
                    settings: Vec::new(),
                    disturbed: Vec::new(),
                    drift: false,
                    content_key: format!("legacy:{id}"),
                },
            };
            tx.execute(
                "UPDATE runs SET identity = ?2, settings = ?3, disturbed = ?4, drift = ?5,
                                 content_key = ?6 WHERE id = ?1",
                params![
                    id,
                    facts.identity,
                    serde_json::to_string(&facts.settings)?,
                    serde_json::to_string(&facts.disturbed)?,
                    facts.drift,
                    facts.content_key
                ],
            )?;
        }
        tx.execute_batch(&format!("PRAGMA user_version = {LAYOUT_VERSION}"))?;
        tx.commit()?;
        self.version = LAYOUT_VERSION;
        Ok(())
    }

    /// Adds a report and its figures in one transaction, unless the database holds it
    /// already (the same `identity::content_key`).
    pub fn add(&mut self, report: &Report, source: &str) -> anyhow::Result<Added> {
        let prepared = Prepared::of(report)?;
        let tx = self.connection.transaction()?;
        let added = insert(&tx, &prepared, source)?;
        tx.commit()?;
        Ok(added)
    }

    /// A batch of additions in one transaction (one journal write and sync for all of
    /// them, the statements prepared once): nothing of it is kept unless it is committed.
    pub fn batch(&mut self) -> anyhow::Result<Batch<'_>> {
        Ok(Batch {
            tx: self.connection.transaction()?,
        })
    }

    /// Runs, by host then date, optionally of one host, the newest `limit` per host.
    pub fn runs(&self, host: Option<&str>, limit: Option<usize>) -> anyhow::Result<Vec<RunRow>> {
        // A layout-1 file (read only) has no identity columns: its rows get the command
        // as a stand-in here, and their facts from their reports below.
        let facts = if self.version >= 2 {
            "r.identity, r.settings, r.disturbed, r.drift"
        } else {
            "r.command, '[]', '[]', 0"
        };
        let mut statement = self.connection.prepare(&format!(
            "SELECT r.id, r.host, r.cpu_model, r.kernel, r.command, r.started, r.started_unix,
                    r.tool_version, r.source,
                    (SELECT COUNT(*) FROM figures f WHERE f.run_id = r.id), {facts}
             FROM runs r
             WHERE ?1 IS NULL OR r.host = ?1
             ORDER BY r.host, r.started_unix, r.id"
        ))?;
        let rows = statement.query_map(params![host], |r| {
            let json = |i: usize| -> rusqlite::Result<String> { r.get(i) };
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
                identity: r.get(10)?,
                settings: serde_json::from_str(&json(11)?).unwrap_or_default(),
                disturbed: serde_json::from_str(&json(12)?).unwrap_or_default(),
                drift: r.get(13)?,
            })
        })?;
        let mut all: Vec<RunRow> = rows
            .collect::<Result<_, _>>()
            .with_context(|| format!("reading the runs in {}", self.path.display()))?;
        if self.version < 2 {
            for row in &mut all {
                // A report this memscope cannot read keeps its command as its identity.
                if let Ok(Some(report)) = self.report(row.id) {
                    let facts = Facts::of(&report);
                    row.identity = facts.identity;
                    row.settings = facts.settings;
                    row.disturbed = facts.disturbed;
                    row.drift = facts.drift;
                }
            }
        }
        if let Some(limit) = limit {
            // Sorted by host: each host's runs are one stretch, its newest at the end.
            let mut kept = Vec::new();
            for of_host in all.chunk_by(|a, b| a.host == b.host) {
                kept.extend_from_slice(&of_host[of_host.len().saturating_sub(limit)..]);
            }
            all = kept;
        }
        Ok(all)
    }

    /// The figures of one run.
    pub fn figures(&self, run: i64) -> anyhow::Result<Vec<Figure>> {
        let mut statement = self.connection.prepare_cached(
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
                scatter_pct: None,
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

/// Resolves `path` by the output files' link rules and returns the path SQLite is to
/// open (absolute, without links, or `path` itself without /proc, which NOFOLLOW then
/// guards). For `Write`, a missing file is created exclusively first (`O_CREAT|O_EXCL|
/// O_NOFOLLOW`), so SQLite never creates one through a link planted meanwhile.
fn locate(path: &Path, access: Access) -> Result<PathBuf, UsageError> {
    for _ in 0..2 {
        let resolved = output::resolve(path).map_err(|reason| refused(path, reason))?;
        let real = resolved.real_path().unwrap_or_else(|| path.to_path_buf());
        match (resolved.found, access) {
            (Found::Special { .. }, _) => {
                return Err(refused(path, "it is not a regular file"));
            }
            (Found::Regular, _) => return Ok(real),
            (Found::Nothing, Access::Read) => {
                return Err(refused(
                    path,
                    "there is no such file yet: save a run first (--save on a measuring \
                     command, or memscope history --add REPORT.json)",
                ))
            }
            (Found::Nothing, Access::Write) => match resolved.create_new(0o644) {
                Ok(()) => return Ok(real),
                // Made by someone meanwhile: judged again as it is now.
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(refused(path, format!("cannot create it ({error})"))),
            },
        }
    }
    Err(refused(path, "it kept changing while memscope opened it"))
}

/// Checks, without writing anything, that runs can be added to the database at `path`:
/// an existing file must be memscope's history (or empty) and writable with its
/// directory, a missing one creatable. For `--save`, before anything is measured.
pub fn check_for_writing(path: &Path) -> Result<(), UsageError> {
    let access = |dir: &Path, name: &str| -> Result<(), UsageError> {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| refused(path, "the path contains a NUL byte"))?;
        // SAFETY: faccessat reads the NUL-terminated path.
        let ok =
            unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) };
        if ok == 0 {
            Ok(())
        } else {
            let error = std::io::Error::last_os_error();
            Err(refused(
                path,
                format!("{name} '{}' is not writable ({error})", dir.display()),
            ))
        }
    };
    // A missing directory is made by the save: the nearest existing one must allow it.
    let mut existing = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut missing = false;
    while std::fs::symlink_metadata(existing).is_err() {
        missing = true;
        existing = existing
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
    }
    if missing {
        if !existing.is_dir() {
            return Err(refused(
                path,
                format!("'{}' is not a directory", existing.display()),
            ));
        }
        return access(existing, "the directory");
    }
    let resolved = output::resolve(path).map_err(|reason| refused(path, reason))?;
    resolved
        .check_writable()
        .map_err(|error| refused(path, error.to_string()))?;
    match resolved.found {
        Found::Special { .. } => Err(refused(path, "it is not a regular file")),
        Found::Nothing => Ok(()),
        Found::Regular => {
            let real = resolved.real_path().unwrap_or_else(|| path.to_path_buf());
            access(&real, "the file")?;
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_NOFOLLOW
                | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            let as_usage = |error: anyhow::Error| match error.downcast::<UsageError>() {
                Ok(usage) => usage,
                Err(other) => refused(path, format!("{other:#}")),
            };
            let connection = Connection::open_with_flags(&real, flags)
                .map_err(|e| as_usage(sqlite_error(path, e)))?;
            let history = History {
                connection,
                path: path.to_path_buf(),
                version: LAYOUT_VERSION,
            };
            history.layout().map(drop).map_err(as_usage)
        }
    }
}

/// The database `--save` (or MEMSCOPE_SAVE) adds to, checked by `check_for_writing`.
pub fn check_saving() -> Result<(), UsageError> {
    check_for_writing(&save_path()?)
}

fn save_path() -> Result<PathBuf, UsageError> {
    default_path().ok_or_else(|| UsageError::HistoryDatabase {
        path: format!("${DB_ENV}"),
        reason: "it is not set, and neither is HOME: set it to a file path".into(),
    })
}

/// What `memscope history` found: the table, the same as JSON, and whether a check found
/// a regression (exit status 1).
#[derive(Debug)]
pub struct Listing {
    pub text: String,
    pub json: Vec<u8>,
    pub regression: bool,
}

/// `memscope history`: imports, then lists or checks. Writes nothing but the imports: the
/// command's writer prints the listing and writes its JSON.
pub fn run(plan: &params::HistoryPlan) -> anyhow::Result<Listing> {
    // Listing and checking only read: the database is opened read-only.
    let access = if plan.add.is_empty() {
        Access::Read
    } else {
        Access::Write
    };
    let mut history = History::open(&plan.db, access)?;
    let mut text = String::new();
    if !plan.add.is_empty() {
        // One transaction for every report of the command line.
        let batch = history.batch()?;
        for source in &plan.add {
            match source {
                params::AddSource::File(file, prepared) => {
                    text.push_str(&match batch.add(prepared, file)? {
                        Added::New(id) => format!(
                            " Added {file} ({}, {}) as run {id}\n",
                            prepared.host, prepared.when
                        ),
                        Added::Held(id) => format!(
                            " Skipped {file} ({}, {}): the database holds it already, as run \
                             {id}\n",
                            prepared.host, prepared.when
                        ),
                    });
                }
                params::AddSource::Directory { dir, files } => {
                    text.push_str(&add_directory(&batch, dir, files)?);
                }
            }
        }
        batch.commit()?;
    }
    let mut regression = false;
    let (section, json) = if plan.check {
        let checks = check::check(&history, plan.host.as_deref(), plan.last.unwrap_or(10))?;
        regression = checks.iter().any(|c| c.regressions().count() > 0);
        (
            view::check_section(&checks),
            crate::render::json::to_bytes(&checks),
        )
    } else {
        let runs = history.runs(plan.host.as_deref(), plan.last)?;
        // After a directory's import, a fleet's runs are counted, not listed one by one.
        let from_directory =
            (plan.add.iter()).any(|a| matches!(a, params::AddSource::Directory { .. }));
        let section = if from_directory && runs.len() > LISTED_AFTER_IMPORT {
            view::count_section(&runs, &history.path)
        } else {
            view::list_section(&runs, &history.path)
        };
        (section, crate::render::json::to_bytes(&runs))
    };
    text.push_str(&crate::render::terminal::render(&[section], false));
    Ok(Listing {
        text,
        json,
        regression,
    })
}

/// After `--add DIR`, a listing of more runs than this is a count instead.
const LISTED_AFTER_IMPORT: usize = 20;

/// Saves a measuring command's report in the default database; returns where and the id.
pub fn save(report: &Report) -> anyhow::Result<(PathBuf, i64)> {
    let path = save_path()?;
    let mut history = History::open(&path, Access::Write)?;
    let id = history.add(report, "saved")?.id();
    Ok((path, id))
}

fn parse_better(name: &str) -> Better {
    match name {
        "lower" => Better::Lower,
        "higher" => Better::Higher,
        _ => Better::Neither,
    }
}

#[cfg(test)]
pub(crate) mod tests;
