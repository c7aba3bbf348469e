//! The validated run plan: command-line values resolved against the machine. Every
//! value is checked here, before anything is measured or written, and a bad one becomes
//! a `UsageError` that quotes it and says what was expected.

use crate::cli::{Cli, Command, InfoArgs, LatencyArgs, MeasureArgs, RunArgs};
use crate::error::UsageError;
use crate::experiments::latency::{sweep_sizes, LatencyConfig};
use crate::kernels::permutation::ChaseOrder;
use crate::platform::arena::PagePolicy;
use crate::report::output::Target;
use crate::topology::cpu::format_cpu_list;
use crate::topology::Machine;
use crate::units::{Bytes, KIB, MIB};

/// Which command runs, with everything it needs.
#[derive(Debug, Clone)]
pub struct Plan {
    pub command: CommandKind,
    pub outputs: Outputs,
    /// Settings of measuring commands (None for `info`).
    pub measure: Option<MeasurePlan>,
    pub latency: Option<LatencyConfig>,
    /// Print every sweep point, not only the levels.
    pub print_points: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandKind {
    Run,
    Info,
    Latency,
}

impl CommandKind {
    pub fn name(self) -> &'static str {
        match self {
            CommandKind::Run => "run",
            CommandKind::Info => "info",
            CommandKind::Latency => "latency",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Outputs {
    pub json: Option<Target>,
    pub csv: Option<Target>,
    pub html: Option<Target>,
}

impl Outputs {
    /// True when a machine-readable output goes to stdout, so tables must go to stderr.
    pub fn uses_stdout(&self) -> bool {
        [&self.json, &self.csv, &self.html]
            .iter()
            .any(|t| t.as_ref().is_some_and(Target::is_stdout))
    }
}

/// Settings shared by measuring commands.
#[derive(Debug, Clone)]
pub struct MeasurePlan {
    pub cpu: usize,
    pub pages: PagePolicy,
    pub quick: bool,
    pub repetitions: usize,
    /// Target length of one timed trial.
    pub trial_ns: f64,
    pub max_size: Bytes,
}

impl Plan {
    pub fn resolve(cli: &Cli, machine: &Machine) -> Result<Plan, UsageError> {
        match &cli.command {
            None => Plan::run(&cli.run, machine),
            Some(Command::Run(args)) => Plan::run(args, machine),
            Some(Command::Info(args)) => Plan::info(args),
            Some(Command::Latency(args)) => Plan::latency(args, machine),
        }
    }

    fn info(args: &InfoArgs) -> Result<Plan, UsageError> {
        Ok(Plan {
            command: CommandKind::Info,
            outputs: Outputs {
                json: args.json.as_deref().map(Target::parse).transpose()?,
                csv: args.csv.as_deref().map(Target::parse).transpose()?,
                html: None,
            },
            measure: None,
            latency: None,
            print_points: false,
        })
    }

    fn run(args: &RunArgs, machine: &Machine) -> Result<Plan, UsageError> {
        let measure = resolve_measure(&args.measure, machine)?;
        let dir = std::path::Path::new(&args.out);
        if !dir.is_dir() {
            return Err(UsageError::OutputPath {
                path: args.out.clone(),
                reason: "--out expects an existing directory".into(),
            });
        }
        let in_dir = |name: &str| dir.join(name).to_string_lossy().into_owned();
        let json = args
            .measure
            .json
            .clone()
            .unwrap_or_else(|| in_dir("memscope-report.json"));
        let html = args
            .html
            .clone()
            .unwrap_or_else(|| in_dir("memscope-report.html"));
        let latency = latency_config(&LatencyArgs::default_values(), &measure)?;
        Ok(Plan {
            command: CommandKind::Run,
            outputs: Outputs {
                json: Some(Target::parse(&json)?),
                csv: args.measure.csv.as_deref().map(Target::parse).transpose()?,
                html: Some(Target::parse(&html)?),
            },
            measure: Some(measure),
            latency: Some(latency),
            print_points: false,
        })
    }

    fn latency(args: &LatencyArgs, machine: &Machine) -> Result<Plan, UsageError> {
        let measure = resolve_measure(&args.measure, machine)?;
        let latency = latency_config(args, &measure)?;
        Ok(Plan {
            command: CommandKind::Latency,
            outputs: Outputs {
                json: args
                    .measure
                    .json
                    .as_deref()
                    .map(Target::parse)
                    .transpose()?,
                csv: args.measure.csv.as_deref().map(Target::parse).transpose()?,
                html: None,
            },
            measure: Some(measure),
            latency: Some(latency),
            print_points: args.points,
        })
    }
}

impl LatencyArgs {
    /// The latency flags' defaults, for commands that run the ladder without exposing them.
    pub fn default_values() -> LatencyArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Defaults {
            #[command(flatten)]
            args: LatencyArgs,
        }
        Defaults::parse_from(["memscope"]).args
    }
}

fn invalid(flag: &'static str, value: &str, expected: &str) -> UsageError {
    UsageError::InvalidValue {
        flag,
        value: value.to_string(),
        expected: expected.to_string(),
    }
}

fn parse_count(
    flag: &'static str,
    value: &str,
    min: usize,
    max: usize,
) -> Result<usize, UsageError> {
    value
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| invalid(flag, value, &format!("a whole number from {min} to {max}")))
}

fn resolve_measure(args: &MeasureArgs, machine: &Machine) -> Result<MeasurePlan, UsageError> {
    let allowed = &machine.allowed_cpus;
    let cpu = match &args.cpu {
        None => crate::platform::affinity::default_cpu(allowed).unwrap_or(0),
        Some(text) => text
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|c| allowed.contains(c))
            .ok_or_else(|| UsageError::NoSuchCpu {
                cpu: text.clone(),
                available: format_cpu_list(allowed),
            })?,
    };
    let pages = match &args.pages {
        Some(text) => PagePolicy::parse(text)?,
        None if matches!(machine.thp.enabled.as_str(), "always" | "madvise") => PagePolicy::Thp,
        None => PagePolicy::Base,
    };
    let repetitions = match &args.repetitions {
        Some(text) => parse_count("--repetitions", text, 1, 1000)?,
        None if args.quick => 5,
        None => 9,
    };
    let llc = machine.largest_cache_bytes().unwrap_or(32 * MIB);
    let max_size = match &args.max_size {
        Some(text) => Bytes::parse(text)?,
        None if args.quick => Bytes((64 * MIB).max(4 * llc)),
        None => Bytes((256 * MIB).max(8 * llc)),
    };
    if max_size.0 < 4 * KIB {
        return Err(UsageError::SizeTooSmall {
            requested: max_size,
            minimum: Bytes(4 * KIB),
        });
    }
    // Leave a tenth of the available memory for everything else on the machine.
    let available = Bytes(machine.memory_available_bytes / 10 * 9);
    if machine.memory_available_bytes > 0 && max_size > available {
        return Err(UsageError::SizeExceedsMemory {
            requested: max_size,
            available,
        });
    }
    Ok(MeasurePlan {
        cpu,
        pages,
        quick: args.quick,
        repetitions,
        trial_ns: if args.quick { 1e6 } else { 2e6 },
        max_size,
    })
}

fn latency_config(args: &LatencyArgs, measure: &MeasurePlan) -> Result<LatencyConfig, UsageError> {
    let stride = Bytes::parse(&args.stride)?.0 as usize;
    if stride < 8 || stride % 8 != 0 || stride as u64 > MIB {
        return Err(invalid(
            "--stride",
            &args.stride,
            "a multiple of 8 bytes from 8 to 1M",
        ));
    }
    let window_pages = parse_count("--window-pages", &args.window_pages, 1, 1 << 20)?;
    let page_local = ChaseOrder::PageLocal {
        window_bytes: window_pages * 4096,
    };
    let (order, random_curve) = match args.order.as_str() {
        "both" => (page_local, true),
        "page-local" => (page_local, false),
        "random" => (ChaseOrder::Random, false),
        other => return Err(invalid("--order", other, "both, page-local or random")),
    };
    let min_size = Bytes::parse(&args.min_size)?;
    if min_size.0 < stride as u64 || min_size > measure.max_size {
        return Err(invalid(
            "--min-size",
            &args.min_size,
            &format!(
                "a size of at least one stride ({stride} B) and at most --max-size ({})",
                measure.max_size
            ),
        ));
    }
    let per_octave = parse_count("--points-per-octave", &args.points_per_octave, 1, 32)? as u32;
    Ok(LatencyConfig {
        sizes: sweep_sizes(min_size.0, measure.max_size.0, per_octave, stride as u64),
        order,
        random_curve,
        stride_bytes: stride,
        repetitions: measure.repetitions,
        passes: if measure.quick { 1 } else { 3 },
        trial_ns: measure.trial_ns,
        page_local_window_bytes: window_pages * 4096,
        dram_both_orders: true,
        seed: 0x6d65_6d73_636f_7065, // "memscope"
    })
}
