//! The reports a comparison reads: files named on the command line (each must be a
//! readable memscope report, a regular file: a device or FIFO is refused at once), and
//! directories, whose regular `*.json` files are read in name order and those that are
//! not memscope reports skipped with a note. Reports that share no figure (a profile and
//! a footprint) cannot be compared: named on the command line they are refused (exit 2),
//! in a directory a report with no figure at all is passed over with a note.

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
    // Which runs were named as files (the others came from directories).
    let mut named: Vec<usize> = Vec::new();
    for argument in arguments {
        let path = Path::new(argument);
        if path.is_dir() {
            inputs.from_directory = true;
            load_directory(path, &mut inputs)?;
        } else {
            named.push(inputs.runs.len());
            let report = read_report(path).map_err(|e| refused(argument, e))?;
            inputs.runs.push(Loaded {
                file: argument.clone(),
                report,
            });
        }
    }
    // From a directory, a report without a figure (a footprint) has nothing to compare.
    let mut kept = Vec::new();
    for (i, run) in std::mem::take(&mut inputs.runs).into_iter().enumerate() {
        if named.contains(&i) || !run.report.figures().is_empty() {
            kept.push(run);
        } else {
            inputs.skipped.push(format!(
                "{}: a `{}` report, with no figure to compare",
                run.file,
                kind(&run.report)
            ));
        }
    }
    inputs.runs = kept;
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
    if !inputs.from_directory {
        share_a_figure(&inputs.runs)?;
    }
    Ok(inputs)
}

/// The report's command as its reader would name it ("run" for a profile).
fn kind(report: &crate::report::Report) -> String {
    match report.settings.command.as_str() {
        "" => "run".to_string(),
        c => c.to_string(),
    }
}

/// Every run shares at least one figure with the first (what the others are set
/// against); otherwise the comparison would be empty, and that is the user's mistake.
pub fn share_a_figure(runs: &[Loaded]) -> Result<(), UsageError> {
    let Some((first, rest)) = runs.split_first() else {
        return Ok(());
    };
    let keys: Vec<String> = first.report.figures().into_iter().map(|f| f.key).collect();
    for other in rest {
        let figures = other.report.figures();
        if !figures.iter().any(|f| keys.contains(&f.key)) {
            return Err(UsageError::InvalidValue {
                flag: "REPORT",
                value: format!("{} {}", first.file, other.file),
                expected: format!(
                    "reports that share a figure, but {} (a `{}` report, {} figure(s)) and {} \
                     (a `{}` report, {} figure(s)) share none: compare runs of the same \
                     command",
                    first.file,
                    kind(&first.report),
                    keys.len(),
                    other.file,
                    kind(&other.report),
                    figures.len()
                ),
            });
        }
    }
    Ok(())
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
