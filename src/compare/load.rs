//! The reports a comparison reads: files named on the command line (each must be a
//! readable memscope report, a regular file: a device or FIFO is refused at once), and
//! directories, whose regular `*.json` files are read in name order and those that are
//! not memscope reports skipped with a note.

use std::path::Path;

use super::Loaded;
use crate::error::UsageError;
use crate::report::read::{read_report, ReadError};

/// What the arguments hold.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub runs: Vec<Loaded>,
    /// A directory was given: group by CPU model.
    pub from_directory: bool,
    /// Files of a directory that were passed over, and why.
    pub skipped: Vec<String>,
}

/// Reads every argument; a bad file named directly is an error (exit 2) quoting it.
pub fn load(arguments: &[String]) -> Result<Inputs, UsageError> {
    let mut inputs = Inputs {
        runs: Vec::new(),
        from_directory: false,
        skipped: Vec::new(),
    };
    for argument in arguments {
        let path = Path::new(argument);
        if path.is_dir() {
            inputs.from_directory = true;
            load_directory(path, &mut inputs)?;
        } else {
            let report = read_report(path).map_err(|e| refused(argument, e))?;
            inputs.runs.push(Loaded {
                file: argument.clone(),
                report,
            });
        }
    }
    if inputs.runs.len() < 2 {
        return Err(UsageError::InvalidValue {
            flag: "REPORT",
            value: arguments.join(" "),
            expected: format!(
                "at least two memscope reports to compare (found {}{})",
                inputs.runs.len(),
                if inputs.skipped.is_empty() {
                    String::new()
                } else {
                    format!("; passed over: {}", inputs.skipped.join("; "))
                }
            ),
        });
    }
    Ok(inputs)
}

fn load_directory(dir: &Path, inputs: &mut Inputs) -> Result<(), UsageError> {
    let listing = std::fs::read_dir(dir).map_err(|e| UsageError::InvalidValue {
        flag: "REPORT",
        value: dir.display().to_string(),
        expected: format!("a readable directory of reports ({e})"),
    })?;
    let mut files: Vec<_> = listing
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for file in files {
        match read_report(&file) {
            Ok(report) => inputs.runs.push(Loaded {
                file: file.display().to_string(),
                report,
            }),
            Err(e) => inputs.skipped.push(e.to_string()),
        }
    }
    Ok(())
}

fn refused(argument: &str, error: ReadError) -> UsageError {
    UsageError::InvalidValue {
        flag: "REPORT",
        value: argument.to_string(),
        expected: format!("a memscope JSON report, but {error}"),
    }
}
