//! The flags of `memscope sweep` (clap) and their resolution into a `SweepPlan`: every
//! parameter, placeholder, benchmark, metric and limit is checked before anything is built
//! or run, and a bad one is a `UsageError` that quotes it and says what was expected.

use std::ffi::OsString;
use std::time::Duration;

use clap::Args;
use regex::Regex;

use super::template::{self, Assignment, Parameter, MAX_VARIANTS};
use super::{Benchmark, Better, MetricSpec, Schedule, SweepPlan};
use crate::error::UsageError;
use crate::flags::{invalid, OutputArgs, SaveArgs};

#[derive(Debug, Clone, Args)]
#[command(after_help = crate::examples::SWEEP)]
pub struct SweepArgs {
    /// A parameter and its values: NAME=V1,V2,… or a range NAME=FIRST..LAST[:STEP] (or
    /// :*FACTOR for powers); repeat -p for the product of several. `{NAME}` in --build,
    /// --keep, --env and the benchmarks is replaced by each variant's value.
    #[arg(
        short = 'p',
        long = "param",
        value_name = "NAME=VALUES",
        required = true
    )]
    pub params: Vec<String>,

    /// The build line, run once per variant by `sh -c` in the current directory (it is
    /// your shell line: it may use pipes, `&&` and ${VARIABLES}). Each `{NAME}` becomes
    /// its value shell-quoted, one literal word (inside '…' or "…" the text itself); for
    /// several words let the shell split a variable: `F={FLAGS}; cc $F …`.
    #[arg(long, value_name = "SHELL COMMAND")]
    pub build: Option<String>,

    /// A file or directory the build produces (binary, library), copied per variant so
    /// the variants can run interleaved without rebuilding; a benchmark word equal to
    /// PATH runs the variant's copy, and kept libraries' directories go first on
    /// LD_LIBRARY_PATH. Repeatable.
    #[arg(long, value_name = "PATH")]
    pub keep: Vec<String>,

    /// An environment variable for the benchmarks, VAR=VALUE with `{NAME}`s. Repeatable.
    #[arg(long, value_name = "VAR=VALUE")]
    pub env: Vec<String>,

    /// Measured blocks (each runs every benchmark × variant once, in a shuffled order);
    /// default: adaptive, at least 10 (fewer only to fit --time-limit, never below 6) and
    /// more while a median's 95% interval is wider than ±--effect/2 (a variant already
    /// clearly different from the baseline excepted), up to 60 blocks.
    #[arg(long, value_name = "N", value_parser = crate::flags::count(1, 10_000))]
    pub runs: Option<usize>,

    /// Warm-up blocks before the measured ones (their runs are checked, not counted).
    #[arg(long, value_name = "N", default_value = "1", value_parser = crate::flags::count(0, 100))]
    pub warmup: usize,

    /// Time limit of the measured blocks for the adaptive default: 90s, 10m, 1h.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::flags::duration)]
    pub time_limit: Duration,

    /// The smallest change you want to be able to see, percent; a note says when the runs
    /// are too noisy to resolve it.
    #[arg(long, value_name = "PERCENT", default_value = "2", value_parser = crate::flags::effect)]
    pub effect: f64,

    /// A figure read from each run's standard output (else its stderr): LABEL=REGEX with
    /// one capture group around the number (the last match counts), LABEL:higher=… or
    /// LABEL:lower=… for which way is better (default: higher when the label or regex
    /// names a rate: '/s', '/sec', 'ops', 'throughput', 'bandwidth'; else lower). The first metric is the one the sweep is about.
    /// Repeatable.
    #[arg(long, value_name = "LABEL=REGEX")]
    pub metric: Vec<String>,

    /// The variant the others are compared with: a value of the first parameter, or
    /// NAME=VALUE[,NAME=VALUE] (default: the first variant).
    #[arg(long, value_name = "VALUE")]
    pub baseline: Option<String>,

    #[command(flatten)]
    pub outputs: OutputArgs,

    #[command(flatten)]
    pub save: SaveArgs,

    /// The benchmarks, each one quoted argument: a command run as argv (split as a shell
    /// splits words, but no shell runs it), optionally named NAME=COMMAND, e.g.
    /// 'small=./bench --size 4K'.
    #[arg(value_name = "BENCH", required = true, num_args = 1..)]
    pub benchmarks: Vec<String>,
}

impl SweepArgs {
    pub fn plan(&self) -> Result<SweepPlan, UsageError> {
        let parameters = self.parameters()?;
        let variants = template::product(&parameters);
        let env = self
            .env
            .iter()
            .map(|e| parse_env(e))
            .collect::<Result<Vec<_>, _>>()?;
        let benchmarks = self
            .benchmarks
            .iter()
            .enumerate()
            .map(|(i, b)| parse_benchmark(i, b))
            .collect::<Result<Vec<_>, _>>()?;
        for (i, b) in benchmarks.iter().enumerate() {
            if benchmarks[..i].iter().any(|o| o.name == b.name) {
                return Err(invalid(
                    "BENCH",
                    &b.name,
                    "a different name for each benchmark (NAME=COMMAND)",
                ));
            }
        }
        if self.build.is_some() && self.keep.is_empty() {
            return Err(invalid(
                "--build",
                self.build.as_deref().unwrap_or_default(),
                "--keep PATH as well, naming what the build produces, so each variant's \
                 build is kept and the variants run interleaved",
            ));
        }
        if self.build.is_none() && !self.keep.is_empty() {
            return Err(invalid(
                "--keep",
                &self.keep[0],
                "a --build line that produces it",
            ));
        }
        self.check_placeholders(&parameters, &env, &benchmarks)?;
        check_shell_lines(self.build.as_deref(), &benchmarks, &variants)?;
        check_programs(&benchmarks, &self.keep, &variants[0])?;
        let metrics = self
            .metric
            .iter()
            .map(|m| parse_metric(m))
            .collect::<Result<Vec<_>, _>>()?;
        let baseline = match &self.baseline {
            Some(b) => find_baseline(b, &parameters, &variants)?,
            None => 0,
        };
        let schedule = match self.runs {
            Some(n) => Schedule::Fixed(n),
            None => Schedule::Adaptive {
                min_blocks: 10,
                max_blocks: 60,
                time_limit: self.time_limit,
            },
        };
        let effect_pct = self.effect;
        Ok(SweepPlan {
            parameters,
            variants,
            baseline,
            build: self.build.clone(),
            keep: self.keep.clone(),
            env,
            benchmarks,
            metrics,
            schedule,
            warmup: self.warmup,
            effect_pct,
        })
    }

    fn parameters(&self) -> Result<Vec<Parameter>, UsageError> {
        if self.params.is_empty() {
            return Err(invalid(
                "-p/--param",
                "",
                "at least one parameter, NAME=V1,V2,… or NAME=FIRST..LAST[:STEP]",
            ));
        }
        let mut parameters: Vec<Parameter> = Vec::new();
        for spec in &self.params {
            let p = template::parse_parameter(spec).map_err(|e| invalid("-p/--param", spec, &e))?;
            if parameters.iter().any(|q| q.name == p.name) {
                return Err(invalid("-p/--param", spec, "each parameter name once"));
            }
            parameters.push(p);
        }
        // Checked: nine parameters of 512 values overflow a 64-bit product.
        let count = parameters
            .iter()
            .try_fold(1usize, |n, p| n.checked_mul(p.values.len()));
        if count.is_none_or(|c| c > MAX_VARIANTS) {
            let count =
                count.map_or_else(|| format!("more than {}", usize::MAX), |c| c.to_string());
            return Err(invalid(
                "-p/--param",
                &self.params.join(" "),
                &format!("at most {MAX_VARIANTS} variants in all (these give {count})"),
            ));
        }
        Ok(parameters)
    }

    /// Every `{NAME}` must be a parameter, and every parameter must be used somewhere.
    fn check_placeholders(
        &self,
        parameters: &[Parameter],
        env: &[(String, String)],
        benchmarks: &[Benchmark],
    ) -> Result<(), UsageError> {
        let defined: Vec<&str> = parameters.iter().map(|p| p.name.as_str()).collect();
        let mut texts: Vec<(&'static str, String)> = Vec::new();
        if let Some(build) = &self.build {
            texts.push(("--build", build.clone()));
        }
        texts.extend(self.keep.iter().map(|k| ("--keep", k.clone())));
        texts.extend(env.iter().map(|(k, v)| ("--env", format!("{k}={v}"))));
        texts.extend(benchmarks.iter().map(|b| ("BENCH", b.words.join(" "))));
        let mut used = Vec::new();
        for (flag, text) in &texts {
            for name in template::placeholders(text) {
                if !defined.contains(&name.as_str()) {
                    return Err(invalid(
                        flag,
                        text,
                        &format!(
                            "placeholders naming a parameter: {{{name}}} is not one (defined \
                             with -p: {})",
                            defined.join(", ")
                        ),
                    ));
                }
                used.push(name);
            }
        }
        if let Some(unused) = defined.iter().find(|d| !used.iter().any(|u| u == *d)) {
            let spec = &self.params[defined.iter().position(|d| d == unused).unwrap_or(0)];
            return Err(invalid(
                "-p/--param",
                spec,
                &format!(
                    "a parameter some command uses: put {{{unused}}} in --build, --env or a \
                     benchmark, else every variant runs the same thing"
                ),
            ));
        }
        Ok(())
    }
}

/// Every variant's values can be quoted into the shell lines: the build line and the
/// script of a benchmark run as `sh -c SCRIPT` (refused here, before anything is built).
fn check_shell_lines(
    build: Option<&str>,
    benchmarks: &[Benchmark],
    variants: &[Assignment],
) -> Result<(), UsageError> {
    let mut lines: Vec<(&'static str, &str)> = Vec::new();
    lines.extend(build.map(|b| ("--build", b)));
    lines.extend(benchmarks.iter().filter_map(|b| {
        template::shell_script_word(&b.words).map(|i| ("BENCH", b.words[i].as_str()))
    }));
    for (flag, line) in lines {
        for v in variants {
            template::substitute_shell(line, v).map_err(|e| {
                invalid(
                    flag,
                    line,
                    &format!("a shell line every value can be quoted into ({e})"),
                )
            })?;
        }
    }
    Ok(())
}

/// `VAR=VALUE` with a valid variable name.
fn parse_env(spec: &str) -> Result<(String, String), UsageError> {
    match spec.split_once('=') {
        Some((var, value)) if template::is_name(var) => Ok((var.to_string(), value.to_string())),
        _ => Err(invalid(
            "--env",
            spec,
            "VAR=VALUE with a variable name of letters, digits and '_'",
        )),
    }
}

/// `NAME=COMMAND` or `COMMAND`, split into words as a shell would (no shell runs it).
fn parse_benchmark(index: usize, spec: &str) -> Result<Benchmark, UsageError> {
    let named = spec.split_once('=').filter(|(name, rest)| {
        !name.is_empty()
            && !rest.trim().is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.:".contains(c))
    });
    let (name, command) = match named {
        Some((name, command)) => (Some(name.to_string()), command),
        None => (None, spec),
    };
    let words = shlex::split(command).ok_or_else(|| {
        invalid(
            "BENCH",
            spec,
            "a command whose quotes are balanced (it is split into words as a shell would)",
        )
    })?;
    if words.is_empty() {
        return Err(invalid("BENCH", spec, "a command to run"));
    }
    let name = name.unwrap_or_else(|| {
        let program = words[0].rsplit('/').next().unwrap_or(&words[0]);
        let mut name = std::iter::once(program)
            .chain(words[1..].iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        if name.chars().count() > 40 {
            name = format!("{}…", name.chars().take(39).collect::<String>());
        }
        if name.is_empty() {
            format!("bench{}", index + 1)
        } else {
            name
        }
    });
    Ok(Benchmark { name, words })
}

/// Each benchmark's program must exist (on PATH, or as a path) unless the build makes it.
fn check_programs(
    benchmarks: &[Benchmark],
    keep: &[String],
    first: &Assignment,
) -> Result<(), UsageError> {
    for b in benchmarks {
        let program = template::substitute(&b.words[0], first);
        let kept = keep
            .iter()
            .any(|k| same_path(&template::substitute(k, first), &program));
        if kept || find_program(&program) {
            continue;
        }
        return Err(invalid(
            "BENCH",
            &b.words.join(" "),
            &format!(
                "a program that exists: '{program}' is not {}",
                if program.contains('/') {
                    "an executable file"
                } else {
                    "on PATH"
                }
            ),
        ));
    }
    Ok(())
}

/// Whether two spellings name the same path relative to the current directory
/// ("./bench" and "bench").
pub(crate) fn same_path(a: &str, b: &str) -> bool {
    let normal = |p: &str| {
        std::path::Path::new(p)
            .components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .collect::<std::path::PathBuf>()
    };
    normal(a) == normal(b)
}

fn find_program(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(std::path::Path::new(program));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin"));
    std::env::split_paths(&path).any(|dir| executable(&dir.join(program)))
}

/// `LABEL[:higher|:lower]=REGEX` with exactly one capture group (or a group named `value`).
fn parse_metric(spec: &str) -> Result<MetricSpec, UsageError> {
    let (head, pattern) = spec.split_once('=').ok_or_else(|| {
        invalid(
            "--metric",
            spec,
            "LABEL=REGEX, e.g. 'throughput=([0-9.]+) ops/s'",
        )
    })?;
    let (label, better) = match head.rsplit_once(':') {
        Some((label, "higher")) => (label, Some(Better::Higher)),
        Some((label, "lower")) => (label, Some(Better::Lower)),
        Some((_, other)) => {
            return Err(invalid(
                "--metric",
                spec,
                &format!("LABEL:higher or LABEL:lower before '=' (got ':{other}')"),
            ))
        }
        None => (head, None),
    };
    let label = label.trim();
    if label.is_empty() {
        return Err(invalid("--metric", spec, "a label before '='"));
    }
    let regex = Regex::new(pattern).map_err(|e| {
        invalid(
            "--metric",
            spec,
            &format!("a valid regular expression after '=' ({e})"),
        )
    })?;
    let groups = regex.captures_len() - 1;
    if groups == 0 {
        return Err(invalid(
            "--metric",
            spec,
            "a regular expression with a capture group around the number, e.g. \
             'ops=([0-9.]+)'",
        ));
    }
    if groups > 1 && regex.capture_names().flatten().all(|n| n != "value") {
        return Err(invalid(
            "--metric",
            spec,
            "one capture group around the number (or a group named 'value': (?P<value>…))",
        ));
    }
    let (better, inferred) = match better {
        Some(b) => (b, false),
        None => {
            let rate = Regex::new(r"(?i)(/s\b|/sec\b|per sec|\bops\b|ops/|throughput|bandwidth)")
                .expect("a valid pattern");
            let hint = |s: &str| rate.is_match(s);
            let b = if hint(label) || hint(pattern) {
                Better::Higher
            } else {
                Better::Lower
            };
            (b, true)
        }
    };
    Ok(MetricSpec {
        label: label.to_string(),
        pattern: pattern.to_string(),
        regex,
        better,
        better_inferred: inferred,
    })
}

fn find_baseline(
    spec: &str,
    parameters: &[Parameter],
    variants: &[Assignment],
) -> Result<usize, UsageError> {
    let wanted: Vec<(String, String)> = if spec.contains('=') {
        spec.split(',')
            .map(|part| {
                part.split_once('=')
                    .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
            })
            .collect::<Option<Vec<_>>>()
            .unwrap_or_default()
    } else {
        vec![(parameters[0].name.clone(), spec.trim().to_string())]
    };
    variants
        .iter()
        .position(|v| {
            !wanted.is_empty()
                && wanted
                    .iter()
                    .all(|(n, val)| v.value(n) == Some(val.as_str()))
        })
        .ok_or_else(|| {
            invalid(
                "--baseline",
                spec,
                &format!(
                    "a value of {} ({}), or NAME=VALUE[,NAME=VALUE] naming a variant",
                    parameters[0].name,
                    parameters[0].values.join(", ")
                ),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: SweepArgs,
    }

    fn plan(argv: &[&str]) -> Result<SweepPlan, String> {
        let mut full = vec!["sweep"];
        full.extend(argv);
        let w = Wrapper::try_parse_from(full).map_err(|e| e.to_string())?;
        w.args.plan().map_err(|e| e.to_string())
    }

    #[test]
    fn a_runtime_sweep_resolves() {
        let p = plan(&[
            "-p",
            "N=1,2",
            "--env",
            "X={N}",
            "--metric",
            "rate=([0-9.]+) ops/s",
            "--baseline",
            "2",
            "echo hello",
            "second=true {N}",
        ])
        .unwrap();
        assert_eq!(p.variants.len(), 2);
        assert_eq!(p.baseline, 1);
        assert_eq!(p.benchmarks[0].name, "echo hello");
        assert_eq!(p.benchmarks[1].name, "second");
        assert_eq!(p.benchmarks[1].words, ["true", "{N}"]);
        assert_eq!(p.metrics[0].better, Better::Higher);
        // A rate is higher-is-better, a time per step is not.
        for (spec, better) in [
            ("ns/step=ns/step=([0-9.]+)", Better::Lower),
            ("t=took ([0-9.]+) s", Better::Lower),
            ("rate=([0-9.]+) MB/s", Better::Higher),
            ("x=([0-9.]+) Mops", Better::Lower),
            ("x=([0-9.]+) ops/sec", Better::Higher),
            ("throughput=([0-9.]+)", Better::Higher),
            ("x:lower=([0-9.]+) MB/s", Better::Lower),
        ] {
            assert_eq!(parse_metric(spec).unwrap().better, better, "{spec}");
        }
        assert!(matches!(p.schedule, Schedule::Adaptive { .. }));
    }

    #[test]
    fn bad_input_is_refused_with_the_value_and_what_was_expected() {
        let cases: &[(&[&str], &str)] = &[
            (&["-p", "N=1,2", "true"], "{N}"),
            (&["-p", "N=1,2", "true {M}"], "{M} is not one"),
            (
                &["-p", "N=1,2", "memscope-no-such-program {N}"],
                "not on PATH",
            ),
            (
                &["-p", "N=1,2", "--metric", "x=[0-9]+", "true {N}"],
                "capture group",
            ),
            (
                &["-p", "N=1,2", "--metric", "x=(", "true {N}"],
                "valid regular",
            ),
            (
                &["-p", "N=1,2", "--metric", "x:up=(1)", "true {N}"],
                ":higher",
            ),
            (&["-p", "N=1,2", "--build", "make N={N}", "true"], "--keep"),
            (&["-p", "N=1,2", "--keep", "x", "true {N}"], "--build"),
            (
                &["-p", "N=1,2", "--baseline", "3", "true {N}"],
                "value of N",
            ),
            (&["-p", "N=1,2", "--runs", "0", "true {N}"], "whole number"),
            (
                &["-p", "N=1,2", "--time-limit", "soon", "true {N}"],
                "duration",
            ),
            (&["-p", "N=1,2", "--env", "1X={N}", "true"], "VAR=VALUE"),
            (&["-p", "N=1,2", "true 'open {N}"], "balanced"),
            (&["-p", "N=1,2", "-p", "N=3", "true {N}"], "once"),
            (
                &["-p", "A=1..32", "-p", "B=1..32", "true {A}{B}"],
                "at most 512",
            ),
            (
                &["-p", "N=1,2", "a=true {N}", "a=false {N}"],
                "different name",
            ),
        ];
        for (argv, want) in cases {
            let err = plan(argv).expect_err(&format!("{argv:?} should fail"));
            assert!(err.contains(want), "{argv:?}: {err}");
        }
    }

    #[test]
    fn huge_products_and_no_parameters_are_refused_not_a_panic() {
        // Found by tests/hostile_input.rs: the product of nine 512-value parameters
        // overflowed (a panic in debug builds, a wrapped count let through in release),
        // and a plan without -p (possible through the library) indexed the first one.
        let mut argv: Vec<String> = Vec::new();
        for i in 0..9 {
            argv.extend(["-p".to_string(), format!("P{i}=1..512")]);
        }
        let placeholders: Vec<String> = (0..9).map(|i| format!("{{P{i}}}")).collect();
        argv.push(format!("true {}", placeholders.join(" ")));
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let err = plan(&argv).unwrap_err();
        assert!(
            err.contains("at most 512 variants") && err.contains("more than"),
            "{err}"
        );
        let mut args =
            Wrapper::try_parse_from(["sweep", "-p", "N=1", "--baseline", "1", "true {N}"])
                .unwrap()
                .args;
        args.params.clear();
        let err = args.plan().unwrap_err().to_string();
        assert!(err.contains("at least one parameter"), "{err}");
    }

    #[test]
    fn a_kept_program_need_not_exist_before_the_build() {
        let p = plan(&[
            "-p",
            "K=1,2",
            "--build",
            "cc -DK={K} -o ./not-built-yet x.c",
            "--keep",
            "not-built-yet",
            "./not-built-yet",
        ])
        .unwrap();
        assert_eq!(p.keep, ["not-built-yet"]);
        assert!(same_path("./a/b", "a/b"));
        assert!(!same_path("a/b", "b"));
    }
}
