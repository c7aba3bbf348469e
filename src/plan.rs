//! The validated run plan: command-line values resolved against the machine. Every
//! value is checked here, before anything is measured or written, and a bad one becomes
//! a `UsageError` that quotes it and says what was expected.

use crate::cli::{
    BandwidthArgs, Cli, Command, InfoArgs, LatencyArgs, LoadedArgs, MeasureArgs, MlpArgs, NumaArgs,
    RobArgs, RunArgs, StatArgs, StrideArgs, TlbArgs,
};
use crate::counters::event::accepted_forms;
use crate::counters::parse_event_list;
use crate::error::UsageError;
use crate::experiments::bandwidth::{sweep_working_sets, BandwidthConfig, Sizes};
use crate::experiments::latency::{sweep_sizes, LatencyConfig};
use crate::experiments::loaded::{LoadedConfig, DEFAULT_DELAYS, QUICK_DELAYS};
use crate::experiments::miss_impact::{self, MissImpactConfig};
use crate::experiments::mlp::MlpConfig;
use crate::experiments::numa::{NodeThreads, NumaConfig};
use crate::experiments::rob::RobConfig;
use crate::experiments::stride::StrideConfig;
use crate::experiments::tlb::TlbConfig;
use crate::experiments::Configs;
use crate::kernels::injector::Mix;
use crate::kernels::jit::Filler;
use crate::kernels::permutation::ChaseOrder;
use crate::kernels::stream::{self, Isa, KernelSpec};
use crate::platform::arena::PagePolicy;
use crate::report::output::Target;
use crate::stat::{self, StatPlan};
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
    /// The experiments it runs, each with its validated configuration.
    pub experiments: Configs,
    /// `memscope stat`: the events and the command.
    pub stat: Option<StatPlan>,
    /// Experiments of the profile that cannot run on this machine, and why.
    pub skipped: Vec<Skipped>,
    /// Print every sweep point, not only the levels.
    pub print_points: bool,
}

/// An experiment the plan leaves out on this machine.
#[derive(Debug, Clone)]
pub struct Skipped {
    pub experiment: &'static str,
    pub reason: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandKind {
    Run,
    Info,
    Latency,
    Bandwidth,
    Stride,
    Loaded,
    Mlp,
    Rob,
    Tlb,
    Numa,
    Stat,
}

impl CommandKind {
    pub fn name(self) -> &'static str {
        match self {
            CommandKind::Run => "run",
            CommandKind::Info => "info",
            CommandKind::Latency => "latency",
            CommandKind::Bandwidth => "bandwidth",
            CommandKind::Stride => "stride",
            CommandKind::Loaded => "loaded",
            CommandKind::Mlp => "mlp",
            CommandKind::Rob => "rob",
            CommandKind::Tlb => "tlb",
            CommandKind::Numa => "numa",
            CommandKind::Stat => "stat",
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
    /// Grow the hugetlbfs pool for this run when it is too small (and restore it after).
    pub reserve_hugepages: bool,
}

impl Plan {
    /// A plan that runs nothing yet: each command fills in its experiments.
    fn new(command: CommandKind, outputs: Outputs, measure: Option<MeasurePlan>) -> Plan {
        Plan {
            command,
            outputs,
            measure,
            experiments: Configs::default(),
            stat: None,
            skipped: Vec::new(),
            print_points: false,
        }
    }

    pub fn resolve(cli: &Cli, machine: &Machine) -> Result<Plan, UsageError> {
        match &cli.command {
            None => Plan::run(&cli.run, machine),
            Some(Command::Run(args)) => Plan::run(args, machine),
            Some(Command::Info(args)) => Plan::info(args),
            Some(Command::Latency(args)) => Plan::latency(args, machine),
            Some(Command::Bandwidth(args)) => Plan::bandwidth(args, machine),
            Some(Command::Stride(args)) => Plan::stride(args, machine),
            Some(Command::Loaded(args)) => Plan::loaded(args, machine),
            Some(Command::Mlp(args)) => Plan::mlp(args, machine),
            Some(Command::Rob(args)) => Plan::rob(args, machine),
            Some(Command::Tlb(args)) => Plan::tlb(args, machine),
            Some(Command::Numa(args)) => Plan::numa(args, machine),
            Some(Command::Stat(args)) => Plan::stat(args),
        }
    }

    fn stat(args: &StatArgs) -> Result<Plan, UsageError> {
        let outputs = Outputs {
            json: args.json.as_deref().map(Target::parse).transpose()?,
            csv: args.csv.as_deref().map(Target::parse).transpose()?,
            html: None,
        };
        let groups = if args.events.is_empty() {
            stat::default_groups()
        } else {
            let mut groups = Vec::new();
            for list in &args.events {
                groups.extend(
                    parse_event_list(list).map_err(|e| UsageError::InvalidValue {
                        flag: "-e/--events",
                        value: e.value.clone(),
                        expected: format!(
                            "an event ({}); accepted: {}",
                            e.reason,
                            accepted_forms()
                        ),
                    })?,
                );
            }
            groups
        };
        let mut plan = Plan::new(CommandKind::Stat, outputs, None);
        plan.stat = Some(StatPlan {
            groups,
            repeat: parse_count("--repeat", &args.repeat, 1, 10_000)?,
            command: args.command.clone(),
        });
        Ok(plan)
    }

    fn info(args: &InfoArgs) -> Result<Plan, UsageError> {
        let outputs = Outputs {
            json: args.json.as_deref().map(Target::parse).transpose()?,
            csv: args.csv.as_deref().map(Target::parse).transpose()?,
            html: None,
        };
        Ok(Plan::new(CommandKind::Info, outputs, None))
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
        // A quick loaded-latency curve (read mix, every injector), when there is a CPU
        // to inject from.
        // (`loaded_config` refuses a machine with one CPU: the profile skips it instead.)
        let loaded = (thread_cpus(machine, measure.cpu).len() > 1)
            .then(|| {
                let mut loaded_args = defaults::<LoadedArgs>();
                loaded_args.mix = Some("read".into());
                loaded_config(&loaded_args, &quick, machine)
            })
            .transpose()?;
        let skipped = if loaded.is_none() {
            vec![Skipped {
                experiment: "latency under load",
                reason: "it needs a second CPU for the injector thread, and this process may \
                         use only one",
            }]
        } else {
            Vec::new()
        };
        let outputs = Outputs {
            json: Some(Target::parse(&json)?),
            csv: args.measure.csv.as_deref().map(Target::parse).transpose()?,
            html: Some(Target::parse(&html)?),
        };
        let mut plan = Plan::new(CommandKind::Run, outputs, Some(measure));
        plan.experiments.latency = Some(latency);
        plan.experiments.bandwidth = Some(bandwidth);
        plan.experiments.stride = Some(stride);
        plan.experiments.loaded = loaded;
        plan.skipped = skipped;
        // DRAM parallelism with the quick chain counts, the sequential model and Little's law.
        let mut mlp_args = defaults::<MlpArgs>();
        mlp_args.grid_max = Some("none".into());
        let mut mlp = mlp_config(&mlp_args, &quick, machine)?;
        mlp.levels.retain(|(name, _)| name == "DRAM");
        plan.experiments.mlp = Some(mlp);
        // The TLB levels with 4 KiB pages and the quick huge-page curve.
        let mut quick_tlb = quick.clone();
        quick_tlb.quick = true;
        plan.experiments.tlb = Some(tlb_config(&defaults::<TlbArgs>(), &quick_tlb, machine)?);
        plan.experiments.miss_impact = plan
            .experiments
            .latency
            .as_ref()
            .map(|latency| miss_impact_config(latency, &quick, machine));
        Ok(plan)
    }

    fn latency(args: &LatencyArgs, machine: &Machine) -> Result<Plan, UsageError> {
        let measure = resolve_measure(&args.measure, machine)?;
        let latency = latency_config(args, &measure)?;
        let mut plan = Plan::new(
            CommandKind::Latency,
            Outputs::of(&args.measure)?,
            Some(measure),
        );
        plan.experiments.latency = Some(latency);
        plan.print_points = args.points;
        Ok(plan)
    }

    fn bandwidth(args: &BandwidthArgs, machine: &Machine) -> Result<Plan, UsageError> {
        let measure = resolve_measure(&args.measure, machine)?;
        let bandwidth = bandwidth_config(args, &measure, machine)?;
        let mut plan = Plan::new(
            CommandKind::Bandwidth,
            Outputs::of(&args.measure)?,
            Some(measure),
        );
        plan.experiments.bandwidth = Some(bandwidth);
        Ok(plan)
    }

    fn stride(args: &StrideArgs, machine: &Machine) -> Result<Plan, UsageError> {
        let measure = resolve_measure(&args.measure, machine)?;
        let mut stride = stride_config(&measure, machine, false);
        stride.counters = args.counters;
        let mut plan = Plan::new(
            CommandKind::Stride,
            Outputs::of(&args.measure)?,
            Some(measure),
        );
        plan.experiments.stride = Some(stride);
        Ok(plan)
    }

    fn loaded(args: &LoadedArgs, machine: &Machine) -> Result<Plan, UsageError> {
        let measure = resolve_measure(&args.measure, machine)?;
        let loaded = loaded_config(args, &measure, machine)?;
        let mut plan = Plan::new(
            CommandKind::Loaded,
            Outputs::of(&args.measure)?,
            Some(measure),
        );
        plan.experiments.loaded = Some(loaded);
        Ok(plan)
    }

    fn mlp(args: &MlpArgs, machine: &Machine) -> Result<Plan, UsageError> {
        let measure = resolve_measure(&args.measure, machine)?;
        let mlp = mlp_config(args, &measure, machine)?;
        let mut plan = Plan::new(CommandKind::Mlp, Outputs::of(&args.measure)?, Some(measure));
        plan.experiments.mlp = Some(mlp);
        Ok(plan)
    }

    fn tlb(args: &TlbArgs, machine: &Machine) -> Result<Plan, UsageError> {
        let measure = resolve_measure(&args.measure, machine)?;
        let tlb = tlb_config(args, &measure, machine)?;
        let mut plan = Plan::new(CommandKind::Tlb, Outputs::of(&args.measure)?, Some(measure));
        plan.experiments.tlb = Some(tlb);
        Ok(plan)
    }

    fn numa(args: &NumaArgs, machine: &Machine) -> Result<Plan, UsageError> {
        let measure = resolve_measure(&args.measure, machine)?;
        let mut numa = NumaConfig::defaults(machine);
        numa.threads_per_node = NodeThreads::parse(&args.threads)?;
        numa.bandwidth_bytes = NumaConfig::default_bandwidth_bytes(machine, numa.threads_per_node);
        if measure.max_size_given {
            numa.latency_bytes = measure.max_size.0;
        }
        numa.pages = measure.pages;
        numa.repetitions = measure.repetitions;
        numa.trial_ns = measure.trial_ns;
        let mut plan = Plan::new(
            CommandKind::Numa,
            Outputs::of(&args.measure)?,
            Some(measure),
        );
        plan.experiments.numa = Some(numa);
        Ok(plan)
    }

    fn rob(args: &RobArgs, machine: &Machine) -> Result<Plan, UsageError> {
        if !crate::experiments::rob::supported() {
            return Err(UsageError::Unsupported(
                crate::experiments::rob::UNSUPPORTED.to_string(),
            ));
        }
        let measure = resolve_measure(&args.measure, machine)?;
        let rob = rob_config(args, &measure, machine)?;
        let mut plan = Plan::new(CommandKind::Rob, Outputs::of(&args.measure)?, Some(measure));
        plan.experiments.rob = Some(rob);
        Ok(plan)
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
            check_fits_memory("--sizes (× threads)", Bytes(bytes * max_threads), machine)?;
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

/// The loaded-latency experiment: the chase on the measuring CPU over the latency
/// ladder's largest working set (so its idle end compares with `latency`'s DRAM figure),
/// injectors on the other CPUs in `thread_cpus` order.
fn loaded_config(
    args: &LoadedArgs,
    measure: &MeasurePlan,
    machine: &Machine,
) -> Result<LoadedConfig, UsageError> {
    let cpus = thread_cpus(machine, measure.cpu);
    let injector_cpus = cpus[1..].to_vec();
    if injector_cpus.is_empty() {
        return Err(invalid(
            "--cpu",
            &measure.cpu.to_string(),
            &format!(
                "a machine with a second CPU to inject load from (this process may use only CPU \
                 {})",
                format_cpu_list(&machine.allowed_cpus)
            ),
        ));
    }
    let mixes = match args.mix.as_deref() {
        None if measure.quick => vec![Mix::Read],
        None => Mix::ALL.to_vec(),
        Some(text) if text.trim() == "all" => Mix::ALL.to_vec(),
        Some(text) => {
            let mut mixes = Vec::new();
            for name in text.split(',').map(str::trim) {
                let mix = Mix::parse(name).ok_or_else(|| {
                    invalid(
                        "--mix",
                        name,
                        &format!("'all' or mixes from: {}", Mix::NAMES),
                    )
                })?;
                if !mixes.contains(&mix) {
                    mixes.push(mix);
                }
            }
            mixes
        }
    };
    let thread_counts = parse_thread_counts(&args.threads, injector_cpus.len())?;
    let delays = match args.delays.as_deref() {
        None if measure.quick => QUICK_DELAYS.to_vec(),
        None => DEFAULT_DELAYS.to_vec(),
        Some(text) => {
            let mut delays = Vec::new();
            for part in text.split(',').map(str::trim) {
                let delay = part
                    .parse::<u64>()
                    .ok()
                    .filter(|d| *d <= 10_000_000)
                    .ok_or_else(|| {
                        invalid(
                            "--delays",
                            part,
                            "delays in core cycles from 0 to 10000000, comma-separated",
                        )
                    })?;
                if !delays.contains(&delay) {
                    delays.push(delay);
                }
            }
            delays
        }
    };
    let llc = machine.largest_cache_bytes().unwrap_or(32 * MIB);
    // The page-local window of the latency ladder, so the idle ends agree.
    let window_pages = parse_count(
        "--window-pages",
        &defaults::<LatencyArgs>().window_pages,
        1,
        1 << 20,
    )?;
    Ok(LoadedConfig {
        mixes,
        thread_counts,
        delays,
        latency_cpu: measure.cpu,
        injector_cpus,
        chase_bytes: measure.max_size.0,
        window_bytes: window_pages * 4096,
        injector_bytes: (4 * llc).max(128 * MIB),
        pages: measure.pages,
        repetitions: measure.repetitions,
        trial_ns: measure.trial_ns,
        seed: 0x6c6f_6164_6564, // "loaded"
    })
}

/// The DRAM working set of the MLP and ROB chases: --max-size when given, else the
/// bandwidth table's DRAM size (four times the largest cache, at least 128 MiB).
fn dram_working_set(measure: &MeasurePlan, machine: &Machine) -> u64 {
    if measure.max_size_given {
        return measure.max_size.0;
    }
    crate::experiments::bandwidth::level_working_sets(machine, 1)
        .last()
        .map_or(128 * MIB, |(_, bytes)| *bytes)
}

/// The MLP experiment: chains at L2, L3 and DRAM (L2 and DRAM with --quick) or at
/// --sizes, and the size × chains grid.
fn mlp_config(
    args: &MlpArgs,
    measure: &MeasurePlan,
    machine: &Machine,
) -> Result<MlpConfig, UsageError> {
    let levels = match &args.sizes {
        Some(text) => {
            let mut levels = Vec::new();
            for part in text.split(',').map(str::trim) {
                let bytes = Bytes::parse(part)?;
                if bytes.0 < 4 * KIB {
                    return Err(UsageError::SizeTooSmall {
                        flag: "--sizes",
                        requested: bytes,
                        minimum: Bytes(4 * KIB),
                    });
                }
                check_fits_memory("--sizes", bytes, machine)?;
                levels.push((bytes.to_string(), bytes.0));
            }
            levels
        }
        None => {
            let mut levels = crate::experiments::bandwidth::level_working_sets(machine, 1);
            levels.retain(|(name, _)| !name.starts_with("L1"));
            if measure.quick {
                levels.retain(|(name, _)| name == "L2" || name == "DRAM");
            }
            if let Some(dram) = levels.iter_mut().find(|(name, _)| name == "DRAM") {
                dram.1 = dram_working_set(measure, machine);
            }
            // Shared last-level caches behave smaller than their size (other cores, other
            // tenants, slices): well above the level below, far below the OS size.
            let caches: Vec<u64> = machine.data_caches().iter().map(|c| c.size_bytes).collect();
            for (name, bytes) in levels.iter_mut() {
                let level: Option<usize> = name.strip_prefix('L').and_then(|n| n.parse().ok());
                if let Some(level) = level.filter(|&l| l >= 3 && l <= caches.len()) {
                    *bytes = (caches[level - 1] / 8).max(4 * caches[level - 2]);
                }
            }
            levels
        }
    };
    let max_chains = match &args.max_chains {
        Some(text) => parse_count("--max-chains", text, 1, 64)? as u32,
        None => 32,
    };
    let mut chains: Vec<u32> = MlpConfig::default_chains()
        .into_iter()
        .filter(|&n| n <= max_chains)
        .collect();
    if !chains.contains(&max_chains) {
        chains.push(max_chains);
    }
    let grid_max = match args.grid_max.as_deref() {
        Some("none") => None,
        Some(text) => {
            let bytes = Bytes::parse(text)?;
            if bytes.0 < KIB {
                return Err(UsageError::SizeTooSmall {
                    flag: "--grid-max",
                    requested: bytes,
                    minimum: Bytes(KIB),
                });
            }
            check_fits_memory("--grid-max", bytes, machine)?;
            Some(bytes.0)
        }
        None if measure.quick => None,
        // 1 GiB, or what fits in the memory available now.
        None => Some(
            (1 << 30)
                .min(machine.memory_available_bytes / 2)
                .max(64 * MIB),
        ),
    };
    Ok(MlpConfig {
        levels,
        chains,
        grid_sizes: grid_max.map_or_else(Vec::new, MlpConfig::grid_sizes_up_to),
        grid_chains: MlpConfig::default_grid_chains(),
        sequential: true,
        littles_law: true,
        repetitions: measure.repetitions,
        trial_ns: measure.trial_ns,
        seed: 0x006d_6c70, // "mlp"
    })
}

/// The ROB experiment over a DRAM-sized pair of chases.
fn rob_config(
    args: &RobArgs,
    measure: &MeasurePlan,
    machine: &Machine,
) -> Result<RobConfig, UsageError> {
    let fillers = if args.fillers.trim() == "all" {
        Filler::ALL.to_vec()
    } else {
        let mut fillers = Vec::new();
        for name in args.fillers.split(',').map(str::trim) {
            let filler = Filler::parse(name).ok_or_else(|| {
                invalid(
                    "--fillers",
                    name,
                    &format!("'all' or fillers from: {}", Filler::names()),
                )
            })?;
            if !fillers.contains(&filler) {
                fillers.push(filler);
            }
        }
        fillers
    };
    let max_k = match &args.max_k {
        Some(text) => parse_count("--max-k", text, 16, 4096)? as u32,
        None if measure.quick => 512,
        None => 1024,
    };
    Ok(RobConfig {
        fillers,
        max_k,
        repetitions: measure.repetitions,
        trial_ns: measure.trial_ns,
        serialized: !args.no_serialized,
        quick: measure.quick,
        // Two chains, each over the DRAM working set.
        chase_bytes: 2 * dram_working_set(measure, machine),
    })
}

/// The cache-miss-impact table: one footprint inside each cache and one in DRAM (within
/// --max-size), its random patterns in the latency ladder's chase order.
fn miss_impact_config(
    latency: &LatencyConfig,
    measure: &MeasurePlan,
    machine: &Machine,
) -> MissImpactConfig {
    let line = machine
        .data_caches()
        .first()
        .map(|c| c.line_bytes as usize)
        .filter(|l| l.is_power_of_two() && (8..=1024).contains(l))
        .unwrap_or(64);
    MissImpactConfig {
        footprints: miss_impact::footprints(&machine.data_caches(), measure.max_size.0),
        line_bytes: line,
        order: latency.order,
        repetitions: measure.repetitions,
        trial_ns: measure.trial_ns,
        seed: 0x6d69_7373, // "miss"
    }
}

/// The TLB experiment: 4 KiB pages always, and THP or hugetlbfs 2 MiB pages.
fn tlb_config(
    args: &TlbArgs,
    measure: &MeasurePlan,
    machine: &Machine,
) -> Result<TlbConfig, UsageError> {
    let thp = matches!(machine.thp.enabled.as_str(), "always" | "madvise");
    let pool_has_pages =
        crate::topology::memory::hugepage_pool(2 * MIB).is_some_and(|pool| pool.total > 0);
    let huge = match args.huge.as_deref().map(str::trim) {
        None if thp => PagePolicy::Thp,
        None if pool_has_pages || measure.reserve_hugepages => PagePolicy::Huge2M,
        None => PagePolicy::Base,
        Some("thp") => PagePolicy::Thp,
        Some("2m") => PagePolicy::Huge2M,
        Some("none") => PagePolicy::Base,
        Some(other) => return Err(invalid("--huge", other, "thp, 2m or none")),
    };
    let mut config = TlbConfig::new(
        machine,
        huge,
        measure.quick,
        measure.repetitions,
        measure.trial_ns,
        0x0074_6c62, // "tlb"
    );
    if let Some(text) = &args.max_pages {
        config.max_pages_base = parse_count("--max-pages", text, 16, 1 << 24)? as u64;
    }
    // At most half the free memory, in 2 MiB pages.
    let memory_pages = (machine.memory_available_bytes / 2 / (2 * MIB)).max(16);
    match &args.max_huge_pages {
        Some(text) => {
            let pages = parse_count("--max-huge-pages", text, 16, 1 << 20)? as u64;
            check_fits_memory(
                "--max-huge-pages (× 2 MiB)",
                Bytes(pages * 2 * MIB),
                machine,
            )?;
            config.max_pages_huge = pages;
        }
        None => config.max_pages_huge = config.max_pages_huge.min(memory_pages),
    }
    match args.saxpy_footprint.as_deref() {
        Some("none") => config.saxpy_footprint = 0,
        Some(text) => {
            let bytes = Bytes::parse(text)?;
            if bytes.0 < 2 * MIB {
                return Err(UsageError::SizeTooSmall {
                    flag: "--saxpy-footprint",
                    requested: bytes,
                    minimum: Bytes(2 * MIB),
                });
            }
            check_fits_memory("--saxpy-footprint", bytes, machine)?;
            config.saxpy_footprint = bytes.0;
        }
        None => {
            config.saxpy_footprint = config
                .saxpy_footprint
                .min(machine.memory_available_bytes / 2)
        }
    }
    if !measure.quick {
        config.mlp_bytes = dram_working_set(measure, machine);
    }
    config.counters = args.counters;
    Ok(config)
}

/// A working set that must fit in the memory available now, leaving a tenth of it for
/// everything else on the machine.
fn check_fits_memory(
    flag: &'static str,
    bytes: Bytes,
    machine: &Machine,
) -> Result<(), UsageError> {
    let available = Bytes(machine.memory_available_bytes / 10 * 9);
    if machine.memory_available_bytes > 0 && bytes > available {
        return Err(UsageError::SizeExceedsMemory {
            flag,
            requested: bytes,
            available,
        });
    }
    Ok(())
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
    check_fits_memory("--max-size", max_size, machine)?;
    Ok(MeasurePlan {
        cpu,
        pages,
        quick: args.quick,
        repetitions,
        trial_ns: if args.quick { 1e6 } else { 2e6 },
        max_size,
        max_size_given: args.max_size.is_some(),
        reserve_hugepages: args.reserve_hugepages,
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
        arena_bytes: measure.max_size.0,
        order,
        random_curve,
        stride_bytes: stride,
        repetitions: measure.repetitions,
        passes: if measure.quick { 1 } else { 3 },
        trial_ns: measure.trial_ns,
        page_local_window_bytes: window_pages * 4096,
        seed: 0x6d65_6d73_636f_7065, // "memscope"
        counters: args.counters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan(args: &[&str]) -> Plan {
        let machine = crate::topology::detect().expect("the machine's topology");
        let cli = Cli::try_parse_from(args).expect("valid arguments");
        Plan::resolve(&cli, &machine).expect("a plan")
    }

    #[test]
    fn counters_reach_latency_stride_and_tlb_and_stay_off_in_run() {
        let on = |command: &str| plan(&["memscope", command, "--quick", "--counters"]);
        assert!(on("latency").experiments.latency.unwrap().counters);
        assert!(on("stride").experiments.stride.unwrap().counters);
        assert!(on("tlb").experiments.tlb.unwrap().counters);
        assert!(
            !plan(&["memscope", "latency"])
                .experiments
                .latency
                .unwrap()
                .counters
        );
        assert!(
            !plan(&["memscope", "stride"])
                .experiments
                .stride
                .unwrap()
                .counters
        );
        assert!(!plan(&["memscope", "tlb"]).experiments.tlb.unwrap().counters);
        let run = plan(&["memscope", "run", "--quick"]);
        assert!(!run.experiments.latency.unwrap().counters);
        assert!(!run.experiments.stride.unwrap().counters);
        assert!(!run.experiments.tlb.unwrap().counters);
        // Only the experiments that count take the flag.
        for command in ["run", "bandwidth", "mlp"] {
            assert!(Cli::try_parse_from(["memscope", command, "--counters"]).is_err());
        }
    }
}
