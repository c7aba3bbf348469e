//! The flags of `memscope advise` (clap) and their resolution into an `AdvisePlan`:
//! every value checked before anything runs (a bad one is a `UsageError` that quotes it
//! and says what was expected).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::arms::Resource;
use crate::error::UsageError;
use crate::flags::{invalid, OutputArgs, SaveArgs};

#[derive(Debug, Clone, Args)]
#[command(after_help = crate::examples::ADVISE)]
pub struct AdviseArgs {
    /// The whole advise's budget (e.g. 90s, 3m, 1h): each stage stops once its arms are
    /// resolved, or when its share of the budget is spent.
    #[arg(long, value_name = "DURATION", default_value = "3m", value_parser = crate::flags::duration)]
    pub time_limit: Duration,

    /// Measured blocks per stage (each block runs every arm once, in a shuffled order)
    /// instead of the adaptive schedule.
    #[arg(long, value_name = "N", value_parser = crate::flags::count(2, 1000))]
    pub runs: Option<usize>,

    /// The co-runner's CPU (the pirate, the bandit, the compute neighbour); the program
    /// runs on every other CPU memscope may use. Default: the last CPU sharing the
    /// last-level cache with the first.
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<String>,

    /// A memscope report (`memscope run`) whose measured latencies and bandwidth the
    /// program is set against; default ./memscope-report.json, else the newest saved
    /// profile of this host, else advise measures what it needs.
    #[arg(long, value_name = "REPORT.json")]
    pub from: Option<PathBuf>,

    /// Only these resources, comma-separated: cache, bandwidth, tlb, placement (default:
    /// all that can be measured here).
    #[arg(long, value_name = "RESOURCES")]
    pub only: Option<String>,

    /// The smallest change (percent) the verdict calls a sensitivity.
    #[arg(long, value_name = "PERCENT", default_value = "5", value_parser = crate::flags::effect)]
    pub effect: f64,

    /// Weights LOCAL:FAR for the weighted-interleave arm (e.g. 3:1, as `memscope
    /// interleave` recommends): the program's node gets LOCAL, every other memory node
    /// FAR. Written to the kernel's weighted_interleave/nodeN files for this run only
    /// (journaled; the old ones are written back at its end). Linux 6.9+, root.
    #[arg(long, value_name = "LOCAL:FAR")]
    pub weights: Option<String>,

    /// Let the program's own output through (it is captured by default).
    #[arg(long)]
    pub show_output: bool,

    #[command(flatten)]
    pub outputs: OutputArgs,

    #[command(flatten)]
    pub save: SaveArgs,

    /// The command and its arguments (put `--` before it).
    #[arg(
        value_name = "COMMAND",
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<OsString>,
}

/// What `advise` runs, checked.
#[derive(Debug, Clone)]
pub struct AdvisePlan {
    pub command: Vec<OsString>,
    pub time_limit: Duration,
    /// Fixed blocks per stage; `None`: adaptive.
    pub runs: Option<usize>,
    pub co_runner_cpu: Option<usize>,
    pub from: Option<PathBuf>,
    pub effect_pct: f64,
    pub show_output: bool,
    /// The resources to measure.
    pub resources: Vec<Resource>,
    /// `--weights`: (local, far), each 1…255.
    pub weights: Option<(u32, u32)>,
}

/// `--weights`: LOCAL:FAR, each a whole number from 1 to 255 (the kernel's range).
fn parse_weights(text: &str) -> Result<(u32, u32), UsageError> {
    let weight = |part: &str| {
        part.trim()
            .parse::<u32>()
            .ok()
            .filter(|w| (1..=255).contains(w))
    };
    text.split_once(':')
        .and_then(|(local, far)| Some((weight(local)?, weight(far)?)))
        .ok_or_else(|| {
            invalid(
                "--weights",
                text,
                "LOCAL:FAR, two whole numbers from 1 to 255 (e.g. 3:1)",
            )
        })
}

/// The resources `--only` names, by name.
const RESOURCES: [(&str, Resource); 4] = [
    ("cache", Resource::Cache),
    ("bandwidth", Resource::Bandwidth),
    ("tlb", Resource::Tlb),
    ("placement", Resource::Placement),
];

/// `--only`'s list.
fn parse_resources(text: &str) -> Result<Vec<Resource>, UsageError> {
    let mut out = Vec::new();
    for word in text.split(',').map(str::trim) {
        let found = RESOURCES.iter().find(|(name, _)| *name == word);
        match found {
            Some((_, r)) if !out.contains(r) => out.push(*r),
            Some(_) => {}
            None => {
                return Err(invalid(
                    "--only",
                    text,
                    "resources from cache, bandwidth, tlb, placement, separated by commas",
                ))
            }
        }
    }
    Ok(out)
}

impl AdviseArgs {
    pub fn plan(&self, allowed_cpus: &[usize]) -> Result<AdvisePlan, UsageError> {
        let time_limit = self.time_limit;
        if time_limit < Duration::from_secs(10) {
            return Err(invalid(
                "--time-limit",
                &humantime::format_duration(time_limit).to_string(),
                "at least 10s (a verdict needs several runs of every arm)",
            ));
        }
        let runs = self.runs;
        let co_runner_cpu = match &self.cpu {
            None => None,
            Some(text) => {
                let cpu = text.trim().parse::<usize>().ok();
                match cpu.filter(|c| allowed_cpus.contains(c)) {
                    Some(c) => Some(c),
                    None => {
                        return Err(UsageError::NoSuchCpu {
                            cpu: text.clone(),
                            available: crate::topology::cpu::format_cpu_list(allowed_cpus),
                        })
                    }
                }
            }
        };
        let effect_pct = self.effect;
        if let Some(from) = &self.from {
            if !from.exists() {
                return Err(invalid(
                    "--from",
                    &from.display().to_string(),
                    "an existing memscope JSON report",
                ));
            }
        }
        let resources = match &self.only {
            Some(text) => parse_resources(text)?,
            None => RESOURCES.iter().map(|(_, r)| *r).collect(),
        };
        Ok(AdvisePlan {
            command: self.command.clone(),
            time_limit,
            runs,
            co_runner_cpu,
            from: self.from.clone(),
            effect_pct,
            show_output: self.show_output,
            weights: self.weights.as_deref().map(parse_weights).transpose()?,
            resources,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        advise: AdviseArgs,
    }

    /// The plan, or the error (clap's for a value its parsers refuse) as text.
    fn plan(args: &[&str]) -> Result<AdvisePlan, String> {
        let mut argv = vec!["advise"];
        argv.extend_from_slice(args);
        let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
        cli.advise.plan(&[0, 1]).map_err(|e| e.to_string())
    }

    #[test]
    fn flags_are_checked_and_the_command_is_kept_whole() {
        let p = plan(&["--runs", "6", "--cpu", "1", "--", "prog", "--its-flag"]).unwrap();
        assert_eq!(p.runs, Some(6));
        assert_eq!(p.co_runner_cpu, Some(1));
        assert_eq!(p.command, vec![OsString::from("prog"), "--its-flag".into()]);
        assert_eq!(p.time_limit, Duration::from_secs(180));
        assert_eq!(p.resources.len(), 4);
        let only = plan(&["--only", "tlb, cache,tlb", "--", "p"]).unwrap();
        assert_eq!(only.resources, vec![Resource::Tlb, Resource::Cache]);
        assert_eq!(
            plan(&["--weights", " 3:1", "--", "p"]).unwrap().weights,
            Some((3, 1))
        );
        for (bad, flag) in [
            (vec!["--runs", "1", "--", "p"], "--runs"),
            (vec!["--time-limit", "5s", "--", "p"], "--time-limit"),
            (vec!["--effect", "0", "--", "p"], "--effect"),
            (vec!["--from", "/nonexistent.json", "--", "p"], "--from"),
            (vec!["--only", "tlb,disk", "--", "p"], "--only"),
            (vec!["--weights", "3", "--", "p"], "--weights"),
            (vec!["--weights", "0:1", "--", "p"], "--weights"),
            (vec!["--weights", "3:256", "--", "p"], "--weights"),
        ] {
            let e = plan(&bad).unwrap_err();
            assert!(e.contains(flag), "{e}");
        }
        let e = plan(&["--cpu", "7", "--", "p"]).unwrap_err();
        assert!(e.contains("CPU 7") && e.contains("0-1"), "{e}");
    }
}
