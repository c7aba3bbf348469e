//! One run of one benchmark on one variant: the command's words with the variant's values
//! and its kept copies, its environment, standard output and error captured in files (the
//! metrics are read from stdout; stderr is shown when a warm-up run fails), and `stat`'s
//! counters around it. A benchmark is argv, run with no shell; only the script of one
//! that runs a shell itself (`sh -c SCRIPT`) gets its values shell-quoted. Nothing here
//! decides what runs when (`schedule`).

use std::ffi::OsString;

use super::template;
use super::variants::BuiltVariant;
use super::{Benchmark, MetricSpec, SweepError, SweepPlan};
use crate::counters::Probe;
use crate::counting::{CountedRun, Counting};
use crate::platform::child::{SpawnError, SpawnOptions};
use crate::trials::capture::Capture;

/// A benchmark ready to run on one variant.
pub struct Prepared {
    pub command: Vec<OsString>,
    pub options_env: Vec<(OsString, OsString)>,
}

/// The benchmark's words with the variant's values, a word naming a kept path replaced
/// by the variant's copy, and the environment: `--env` values, the kept libraries first
/// on LD_LIBRARY_PATH and MEMSCOPE_VARIANT_DIR naming the variant's directory.
///
/// A benchmark that runs a shell on a script (`sh -c SCRIPT`) gets its values
/// shell-quoted into the script, as the build line does; the error (checked already when
/// the plan was made) names the value.
pub fn prepare(
    plan: &SweepPlan,
    benchmark: &Benchmark,
    variant: &BuiltVariant,
) -> Result<Prepared, SweepError> {
    let assignment = &variant.info.values;
    let script = template::shell_script_word(&benchmark.words);
    let command = benchmark
        .words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if Some(i) == script {
                return template::substitute_shell(w, assignment)
                    .map(OsString::from)
                    .map_err(|e| SweepError(format!("benchmark '{}': {e}", benchmark.name)));
            }
            let word = template::substitute(w, assignment);
            Ok(match variant.copy_of(&word) {
                Some(copy) => copy.as_os_str().to_os_string(),
                None => OsString::from(word),
            })
        })
        .collect::<Result<_, _>>()?;
    let mut env: Vec<(OsString, OsString)> = plan
        .env
        .iter()
        .map(|(k, v)| (k.into(), template::substitute(v, assignment).into()))
        .collect();
    if !variant.library_dirs.is_empty() {
        let mut dirs: Vec<std::path::PathBuf> = variant.library_dirs.clone();
        let existing = env
            .iter()
            .find(|(k, _)| k == "LD_LIBRARY_PATH")
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var_os("LD_LIBRARY_PATH"));
        if let Some(existing) = existing {
            dirs.extend(std::env::split_paths(&existing));
        }
        let joined = std::env::join_paths(dirs).unwrap_or_default();
        env.retain(|(k, _)| k != "LD_LIBRARY_PATH");
        env.push(("LD_LIBRARY_PATH".into(), joined));
    }
    if let Some(dir) = &variant.dir {
        env.push((
            "MEMSCOPE_VARIANT_DIR".into(),
            dir.as_os_str().to_os_string(),
        ));
    }
    Ok(Prepared {
        command,
        options_env: env,
    })
}

/// A finished run with its captured output.
pub(crate) struct Outcome {
    pub counted: CountedRun,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the prepared command once with its output captured (the last
/// `capture::TAIL_BYTES` of each stream are read back).
pub(super) fn run_once(
    prepared: &Prepared,
    counting: &Counting,
    probe: &Probe,
) -> Result<Outcome, RunError> {
    let capture = Capture::new(true).map_err(RunError::Capture)?;
    let options = capture.options(SpawnOptions {
        env: prepared.options_env.clone(),
        ..SpawnOptions::default()
    });
    let counted = counting
        .run(&prepared.command, &options, probe)
        .map_err(RunError::Spawn)?;
    let (stdout, stderr) = capture.texts();
    Ok(Outcome {
        counted,
        stdout,
        stderr,
    })
}

/// Why a run could not be made at all.
#[derive(Debug)]
pub(crate) enum RunError {
    Spawn(SpawnError),
    Capture(std::io::Error),
}

impl RunError {
    pub(super) fn into_sweep_error(self, what: &str) -> SweepError {
        match self {
            RunError::Spawn(e) => SweepError(format!("{what}: {e}")),
            RunError::Capture(e) => SweepError(format!(
                "{what}: cannot create a file to capture its output: {e}"
            )),
        }
    }
}

/// The metric's value in the run's standard output, or in its standard error when stdout
/// has no match (many benchmarks report there): the last match, its `value` group or the
/// first one, with thousands separators (`,` `_`) removed; `None` when it does not match
/// or the group is not a number.
pub(super) fn read_metric(metric: &MetricSpec, stdout: &str, stderr: &str) -> Option<f64> {
    let captures = (metric.regex.captures_iter(stdout).last())
        .or_else(|| metric.regex.captures_iter(stderr).last())?;
    let group = captures.name("value").or_else(|| captures.get(1))?;
    let text: String = group
        .as_str()
        .chars()
        .filter(|c| *c != ',' && *c != '_')
        .collect();
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Better;

    fn metric(pattern: &str) -> MetricSpec {
        MetricSpec {
            label: "x".into(),
            pattern: pattern.into(),
            regex: regex::Regex::new(pattern).unwrap(),
            better: Better::Higher,
            better_inferred: false,
        }
    }

    #[test]
    fn metrics_take_the_last_match_and_ignore_separators() {
        let out = "warm-up ops=1.5M ops/s\nops=2,345.5M ops/s\n";
        assert_eq!(
            read_metric(&metric(r"ops=([0-9.,]+)M"), out, ""),
            Some(2345.5)
        );
        assert_eq!(
            read_metric(&metric(r"(?P<unit>\w+)=(?P<value>[0-9.]+)"), "t=3.25", ""),
            Some(3.25)
        );
        assert_eq!(read_metric(&metric(r"time: ([0-9.]+)"), out, ""), None);
        assert_eq!(read_metric(&metric(r"ops=(\S+)"), "ops=fast", ""), None);
        // stderr when stdout has no match; stdout first when both have one.
        let m = metric(r"speed ([0-9.]+)");
        assert_eq!(read_metric(&m, "nothing", "speed 4.5"), Some(4.5));
        assert_eq!(read_metric(&m, "speed 1", "speed 2"), Some(1.0));
    }
}
