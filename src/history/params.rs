//! The flags of `memscope history`.

use std::path::PathBuf;

use crate::error::UsageError;
use crate::flags::JsonArg;

#[derive(Debug, Clone, clap::Args)]
#[command(mut_arg("json", |a| {
    a.help("Write the listing (or the check) as JSON to FILE ('-' for stdout)")
}))]
#[command(after_help = crate::examples::HISTORY)]
pub struct HistoryArgs {
    /// The database file [default: $MEMSCOPE_HISTORY, else
    /// $XDG_DATA_HOME/memscope/history.sqlite3, else ~/.local/share/memscope/history.sqlite3].
    #[arg(long, value_name = "FILE")]
    pub db: Option<String>,

    /// Only this host's runs.
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,

    /// List at most the newest N runs per host [default: all]; with --check, the earlier
    /// runs each latest run is checked against [default: 10].
    #[arg(long, value_name = "N", value_parser = crate::flags::count(1, 100_000))]
    pub last: Option<usize>,

    /// Set each host's latest run against its earlier runs of the same command and exit
    /// with status 1 when a figure got worse beyond the noise (for cron jobs and CI).
    #[arg(long)]
    pub check: bool,

    /// Import these reports (from other hosts, or runs made without --save) first; a
    /// directory's *.json reports are imported in name order, in one go.
    #[arg(long, value_name = "REPORT|DIR", num_args = 1..)]
    pub add: Vec<String>,

    #[command(flatten)]
    pub json: JsonArg,
}

/// What `history` does, checked.
#[derive(Debug, Clone)]
pub struct HistoryPlan {
    pub db: PathBuf,
    pub host: Option<String>,
    pub last: Option<usize>,
    pub check: bool,
    /// Reports to import: files already read, directories listed.
    pub add: Vec<AddSource>,
}

/// One `--add` argument.
#[derive(Debug, Clone)]
pub enum AddSource {
    /// A report file, read and checked (a bad one is refused before anything is written).
    File(String, Box<super::Prepared>),
    /// A directory's `*.json` files, read one at a time while they are added (a thousand
    /// reports are never all in memory at once); a file that is not a memscope report is
    /// passed over with a note, as `compare DIR` does.
    Directory { dir: String, files: Vec<PathBuf> },
}

impl HistoryArgs {
    pub fn plan(&self) -> Result<HistoryPlan, UsageError> {
        let db = match &self.db {
            Some(path) => PathBuf::from(path),
            None => super::default_path().ok_or_else(|| UsageError::InvalidValue {
                flag: "--db",
                value: String::new(),
                expected: format!(
                    "a database file: neither --db, {} nor HOME is set",
                    super::DB_ENV
                ),
            })?,
        };
        if db.is_dir() {
            return Err(UsageError::InvalidValue {
                flag: "--db",
                value: db.display().to_string(),
                expected: "a database file, not a directory".into(),
            });
        }
        let last = self.last;
        let mut add = Vec::new();
        for file in &self.add {
            let path = std::path::Path::new(file);
            if path.is_dir() {
                let files = crate::report::read::json_files(path).map_err(|e| {
                    UsageError::InvalidValue {
                        flag: "--add",
                        value: file.clone(),
                        expected: format!("a readable directory of reports ({e})"),
                    }
                })?;
                if files.is_empty() {
                    return Err(UsageError::InvalidValue {
                        flag: "--add",
                        value: file.clone(),
                        expected: "a directory holding memscope reports (*.json), but it holds \
                                   no *.json file"
                            .into(),
                    });
                }
                add.push(AddSource::Directory {
                    dir: file.clone(),
                    files,
                });
                continue;
            }
            let refused = |e: String| UsageError::InvalidValue {
                flag: "--add",
                value: file.clone(),
                expected: format!("a memscope JSON report, but {e}"),
            };
            let report =
                crate::report::read::read_report(path).map_err(|e| refused(e.to_string()))?;
            let prepared = super::Prepared::of(&report).map_err(|e| refused(format!("{e:#}")))?;
            add.push(AddSource::File(file.clone(), Box::new(prepared)));
        }
        Ok(HistoryPlan {
            db,
            host: self.host.clone(),
            last,
            check: self.check,
            add,
        })
    }
}
