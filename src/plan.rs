//! The validated run plan: command-line values resolved against the machine. Every
//! value is checked here, before anything is measured or written, and a bad one becomes
//! a `UsageError` that quotes it and says what was expected.

use crate::cli::{
    BandwidthArgs, Cli, Command, InfoArgs, LatencyArgs, MeasureArgs, RunArgs, StrideArgs,
};
use crate::error::UsageError;
use crate::experiments::bandwidth::{sweep_working_sets, BandwidthConfig, Sizes};
use crate::experiments::latency::{sweep_sizes, LatencyConfig};
use crate::experiments::stride::StrideConfig;
use crate::kernels::permutation::ChaseOrder;
use crate::kernels::stream::{self, Isa, KernelSpec};
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
    pub bandwidth: Option<BandwidthConfig>,
    pub stride: Option<StrideConfig>,
    /// Print every sweep point, not only the levels.
    pub print_points: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandKind {
    Run,
    Info,
    Latency,
    Bandwidth,
    Stride,
}

impl CommandKind {
    pub fn name(self) -> &'static str {
        match self {
            CommandKind::Run => "run",
            CommandKind::Info => "info",
            CommandKind::Latency => "latency",
            CommandKind::Bandwidth => "bandwidth",
            CommandKind::Stride => "stride",
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
    /// The `--json` and `--csv` files of a measuring command (no HTML).
    fn of(args: &MeasureArgs) -> Result<Outputs, UsageError> {
        Ok(Outputs {
            json: args.json.as_deref().map(Target::parse).transpose()?,
            csv: args.csv.as_deref().map(Target::parse).transpose()?,
            html: None,
        })
    }

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
    /// Whether --max-size was given (else each experiment picks its own default).
    pub max_size_given: bool,
}

impl Plan {
    pub fn resolve(cli: &Cli, machine: &Machine) -> Result<Plan, UsageError> {
        match &cli.command {
            None => Plan::run(&cli.run, machine),
            Some(Command::Run(args)) => Plan::run(args, machine),
            Some(Command::Info(args)) => Plan::info(args),
            Some(Command::Latency(args)) => Plan::latency(args, machine),
            Some(Command::Bandwidth(args)) => Plan::bandwidth(args, machine),
            Some(Command::Stride(args)) => Plan::stride(args, machine),
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
            bandwidth: None,
            stride: None,
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
        let latency = latency_config(&defaults::<LatencyArgs>(), &measure)?;
        // The quick versions of the other experiments: the bandwidth table with a read and
        // copy sweep, and the stride matrix at one size per level.
        let mut bandwidth_args = defaults::<BandwidthArgs>();
        bandwidth_args.sweep = true;
        bandwidth_args.sweep_kernels = "read,copy".into();
        let mut quick = measure.clone();
        quick.repetitions = quick.repetitions.min(5);
        quick.trial_ns = 1e6;
        let bandwidth = bandwidth_config(&bandwidth_args, &quick, machine)?;
        let stride = stride_config(&quick, machine, true);
        Ok(Plan {
            command: CommandKind::Run,
            outputs: Outputs {
                json: Some(Target::parse(&json)?),
                csv: args.measure.csv.as_deref().map(Target::parse).transpose()?,
                html: Some(Target::parse(&html)?),
            },
            measure: Some(measure),
            latency: Some(latency),
            bandwidth: Some(bandwidth),
            stride: Some(stride),
            print_points: false,
        })
    }

    fn latency(args: &LatencyArgs, machine: &Machine) -> Result<Plan, UsageError> {
        let measure = resolve_measure(&args.measure, machine)?;
        let latency = latency_config(args, &measure)?;
        Ok(Plan {
            command: CommandKind::Latency,
            outputs: Outputs::of(&args.measure)?,
            measure: Some(measure),
            latency: Some(latency),
            bandwidth: None,
            stride: None,
            print_points: args.points,
        })
    }

    fn bandwidth(args: &BandwidthArgs, machine: &Machine) -> Result<Plan, UsageError> {
        let measure = resolve_measure(&args.measure, machine)?;
        let bandwidth = bandwidth_config(args, &measure, machine)?;
        Ok(Plan {
            command: CommandKind::Bandwidth,
            outputs: Outputs::of(&args.measure)?,
            measure: Some(measure),
            latency: None,
            bandwidth: Some(bandwidth),
            stride: None,
            print_points: false,
        })
    }

    fn stride(args: &StrideArgs, machine: &Machine) -> Result<Plan, UsageError> {
        let measure = resolve_measure(&args.measure, machine)?;
        let stride = stride_config(&measure, machine, false);
        Ok(Plan {
            command: CommandKind::Stride,
            outputs: Outputs::of(&args.measure)?,
            measure: Some(measure),
            latency: None,
            bandwidth: None,
            stride: Some(stride),
            print_points: false,
        })
    }
}

/// Largest working set of the sweeps that do not default to the latency ladder's size:
/// four times the largest cache, at least 64 MiB.
fn sweep_max(measure: &MeasurePlan, machine: &Machine) -> u64 {
    if measure.max_size_given {
        measure.max_size.0
    } else {
        (64 * MIB).max(4 * machine.largest_cache_bytes().unwrap_or(32 * MIB))
    }
}

fn parse_kernels(flag: &'static str, text: &str) -> Result<Vec<&'static KernelSpec>, UsageError> {
    if text.trim() == "all" {
        return Ok(stream::KERNELS.iter().collect());
    }
    let mut kernels: Vec<&'static KernelSpec> = Vec::new();
    for name in text.split(',').map(str::trim) {
        let kernel = stream::find(name).ok_or_else(|| {
            invalid(
                flag,
                name,
                &format!("'all' or kernel names from: {}", stream::names()),
            )
        })?;
        if !kernels.iter().any(|k| k.name == kernel.name) {
            kernels.push(kernel);
        }
    }
    Ok(kernels)
}

/// Thread counts from "1,2" or "all"; each from 1 to the CPUs this process may use.
fn parse_thread_counts(text: &str, available: usize) -> Result<Vec<usize>, UsageError> {
    let expected = format!(
        "thread counts from 1 to {available} or 'all', comma-separated (e.g. 1,{available})"
    );
    let mut counts = Vec::new();
    for part in text.split(',').map(str::trim) {
        let count = if part == "all" {
            available
        } else {
            part.parse::<usize>()
                .ok()
                .filter(|n| (1..=available).contains(n))
                .ok_or_else(|| invalid("--threads", part, &expected))?
        };
        if !counts.contains(&count) {
            counts.push(count);
        }
    }
    counts.sort_unstable();
    Ok(counts)
}

/// CPUs in the order threads take them: the measuring CPU first, then CPUs on other cores
/// (so two threads do not share a core while a core is free), then SMT siblings.
fn thread_cpus(machine: &Machine, first: usize) -> Vec<usize> {
    let sibling_of = |a: usize, b: usize| {
        machine
            .smt_sibling_groups
            .iter()
            .any(|g| g.contains(&a) && g.contains(&b))
    };
    let mut order = vec![first];
    let rest: Vec<usize> = machine
        .allowed_cpus
        .iter()
        .copied()
        .filter(|&c| c != first)
        .collect();
    for &cpu in &rest {
        if !order.iter().any(|&o| sibling_of(o, cpu)) {
            order.push(cpu);
        }
    }
    for &cpu in &rest {
        if !order.contains(&cpu) {
            order.push(cpu);
        }
    }
    order
}

fn bandwidth_config(
    args: &BandwidthArgs,
    measure: &MeasurePlan,
    machine: &Machine,
) -> Result<BandwidthConfig, UsageError> {
    let isa = match &args.isa {
        None => None,
        Some(text) => {
            let isa = Isa::parse(text).ok_or_else(|| invalid("--isa", text, Isa::NAMES))?;
            if !isa.is_available() {
                return Err(invalid(
                    "--isa",
                    text,
                    &format!(
                        "an instruction set this CPU supports (the widest here is {})",
                        Isa::best_available()
                    ),
                ));
            }
            Some(isa)
        }
    };
    let cpus = thread_cpus(machine, measure.cpu);
    let thread_counts = parse_thread_counts(&args.threads, cpus.len())?;
    let sizes = match &args.sizes {
        None => Sizes::Levels,
        Some(text) => Sizes::Custom(
            text.split(',')
                .map(|s| Bytes::parse(s.trim()).map(|b| b.0))
                .collect::<Result<Vec<u64>, _>>()?,
        ),
    };
    let max_threads = *thread_counts.last().expect("at least one count") as u64;
    if let Sizes::Custom(list) = &sizes {
        for &bytes in list {
            if bytes < stream::GRANULE as u64 * 4 {
                return Err(UsageError::SizeTooSmall {
                    flag: "--sizes",
                    requested: Bytes(bytes),
                    minimum: Bytes(stream::GRANULE as u64 * 4),
                });
            }
            let available = Bytes(machine.memory_available_bytes / 10 * 9);
            if machine.memory_available_bytes > 0 && bytes * max_threads > available.0 {
                return Err(UsageError::SizeExceedsMemory {
                    requested: Bytes(bytes * max_threads),
                    available,
                });
            }
        }
    }
    let sweep_kernels = if args.sweep {
        parse_kernels("--sweep-kernels", &args.sweep_kernels)?
    } else {
        Vec::new()
    };
    let sweep_sizes = if args.sweep {
        sweep_working_sets(
            sweep_max(measure, machine),
            if measure.quick { 1 } else { 2 },
        )
    } else {
        Vec::new()
    };
    Ok(BandwidthConfig {
        kernels: parse_kernels("--kernels", &args.kernels)?,
        isa,
        thread_counts,
        cpus,
        sizes,
        sweep_kernels,
        sweep_sizes,
        pages: measure.pages,
        repetitions: measure.repetitions,
        trial_ns: measure.trial_ns,
    })
}

/// The stride study: the full matrix, or for `run` one working set inside each level.
fn stride_config(measure: &MeasurePlan, machine: &Machine, per_level: bool) -> StrideConfig {
    let mut config = StrideConfig::for_machine(
        sweep_max(measure, machine),
        measure.repetitions.min(5),
        measure.trial_ns / 2.0,
    );
    if per_level {
        let levels = crate::experiments::bandwidth::level_working_sets(machine, 1);
        config.sizes = levels
            .iter()
            .map(|(_, bytes)| (*bytes).min(sweep_max(measure, machine)))
            .collect();
        config.sizes.dedup();
    }
    config
}

/// A command's flags at their defaults, for `run`, which runs the experiments without
/// exposing their flags: the defaults live once, in the clap definitions.
fn defaults<A: clap::Args + clap::FromArgMatches>() -> A {
    let command = A::augment_args(clap::Command::new("memscope"));
    A::from_arg_matches(&command.get_matches_from(["memscope"]))
        .expect("the clap definitions give every flag a default")
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
            flag: "--max-size",
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
        max_size_given: args.max_size.is_some(),
    })
}

fn latency_config(args: &LatencyArgs, measure: &MeasurePlan) -> Result<LatencyConfig, UsageError> {
    let stride = Bytes::parse(&args.stride)?.0 as usize;
    if stride < 8 || !stride.is_multiple_of(8) || stride as u64 > MIB {
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
        seed: 0x6d65_6d73_636f_7065, // "memscope"
    })
}
