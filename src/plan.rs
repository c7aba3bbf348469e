//! The validated run plan: which command runs, its experiments and its outputs. Each
//! experiment's flags become its configuration in its room (`experiments::<name>::params`),
//! the measuring flags in `experiments::params`; here are the dispatch, the profile `run`
//! composes (which experiments, with which quick settings), the output files and `stat`'s
//! and `info`'s settings. Every value is checked before anything is measured or written,
//! and a bad one becomes a `UsageError` that quotes it and says what was expected.

use crate::cli::{Cli, Command, InfoArgs, RunArgs, StatArgs};
use crate::counters::event::accepted_forms;
use crate::counters::parse_event_list;
use crate::error::UsageError;
use crate::experiments::bandwidth::params::BandwidthArgs;
use crate::experiments::bandwidth::BandwidthConfig;
use crate::experiments::files::FilesConfig;
use crate::experiments::latency::params::LatencyArgs;
use crate::experiments::latency::LatencyConfig;
use crate::experiments::loaded::params::LoadedArgs;
use crate::experiments::loaded::LoadedConfig;
use crate::experiments::miss_impact::MissImpactConfig;
use crate::experiments::mlp::params::MlpArgs;
use crate::experiments::mlp::MlpConfig;
use crate::experiments::params::{
    defaults, parse_count, thread_cpus, MeasurePlan, OutputArgs, SaveArgs,
};
use crate::experiments::stride::params::StrideArgs;
use crate::experiments::stride::StrideConfig;
use crate::experiments::tlb::params::TlbArgs;
use crate::experiments::tlb::TlbConfig;
use crate::experiments::{Configs, ExperimentCommand};
use crate::footprint::params::FootprintArgs;
use crate::footprint::FootprintPlan;
use crate::pages::params::{PagesAction, PagesArgs};
use crate::pages::PagesPlan;
use crate::report::output::Target;
use crate::stat::{self, StatPlan};
use crate::sweep::params::SweepArgs;
use crate::sweep::SweepPlan;
use crate::topology::Machine;

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
    /// `memscope pages`: record or apply, and the command.
    pub pages: Option<PagesPlan>,
    /// `memscope footprint`: the binary and the caches to compare with.
    pub footprint: Option<FootprintPlan>,
    /// `memscope sweep`: the variants, builds, benchmarks and schedule.
    pub sweep: Option<SweepPlan>,
    /// `memscope compare`: the reports read.
    pub compare: Option<crate::compare::load::Inputs>,
    /// `memscope history`: the database and what to do with it.
    pub history: Option<crate::history::params::HistoryPlan>,
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
    /// An experiment's own subcommand, by name ("latency").
    Experiment(&'static str),
    Stat,
    Pages,
    Footprint,
    Sweep,
    Compare,
    History,
    Restore,
}

impl CommandKind {
    pub fn name(self) -> &'static str {
        match self {
            CommandKind::Run => "run",
            CommandKind::Info => "info",
            CommandKind::Experiment(name) => name,
            CommandKind::Stat => "stat",
            CommandKind::Pages => "pages",
            CommandKind::Footprint => "footprint",
            CommandKind::Sweep => "sweep",
            CommandKind::Compare => "compare",
            CommandKind::History => "history",
            CommandKind::Restore => "restore",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Outputs {
    pub json: Option<Target>,
    pub csv: Option<Target>,
    pub html: Option<Target>,
    /// The headline figures in Prometheus' text format.
    pub prometheus: Option<Target>,
    /// Record the run in the history database.
    pub save: bool,
}

impl Outputs {
    /// The `--json` and `--csv` files of a command (no HTML).
    fn of(json: Option<&str>, csv: Option<&str>) -> Result<Outputs, UsageError> {
        Ok(Outputs {
            json: json.map(Target::parse).transpose()?,
            csv: csv.map(Target::parse).transpose()?,
            ..Outputs::default()
        })
    }

    /// Adds a measuring command's `--save` (or MEMSCOPE_SAVE) and `--prometheus`.
    fn saving(mut self, args: &SaveArgs) -> Result<Outputs, UsageError> {
        self.save = args.save || crate::history::save_by_default();
        // A database that cannot take the run fails now, not after the measuring.
        if self.save {
            crate::history::check_saving()?;
        }
        self.prometheus = args.prometheus.as_deref().map(Target::parse).transpose()?;
        if self.prometheus.as_ref().is_some_and(Target::is_stdout) && self.uses_stdout() {
            return Err(UsageError::InvalidValue {
                flag: "--prometheus",
                value: "-".into(),
                expected: "a file, since another output already goes to stdout".into(),
            });
        }
        Ok(self)
    }

    /// The `--json`, `--csv` and `--html` files of a program command.
    fn of_program(args: &OutputArgs) -> Result<Outputs, UsageError> {
        let mut outputs = Outputs::of(args.json.as_deref(), args.csv.as_deref())?;
        outputs.html = args.html.as_deref().map(Target::parse).transpose()?;
        Ok(outputs)
    }

    /// True when a machine-readable output goes to stdout, so tables must go to stderr.
    pub fn uses_stdout(&self) -> bool {
        [&self.json, &self.csv, &self.html, &self.prometheus]
            .iter()
            .any(|t| t.as_ref().is_some_and(Target::is_stdout))
    }
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
            pages: None,
            footprint: None,
            sweep: None,
            compare: None,
            history: None,
            skipped: Vec::new(),
            print_points: false,
        }
    }

    pub fn resolve(cli: &Cli, machine: &Machine) -> Result<Plan, UsageError> {
        match &cli.command {
            None => Plan::run(&cli.run, machine),
            Some(Command::Run(args)) => Plan::run(args, machine),
            Some(Command::Info(args)) => Plan::info(args),
            Some(Command::Experiment(command)) => Plan::experiment(command, machine),
            Some(Command::Stat(args)) => Plan::stat(args),
            Some(Command::Pages(args)) => Plan::pages(args),
            Some(Command::Footprint(args)) => Plan::footprint(args),
            Some(Command::Sweep(args)) => Plan::sweep(args),
            Some(Command::Compare(args)) => Plan::compare(args),
            Some(Command::Restore) => Ok(Plan::new(CommandKind::Restore, Outputs::default(), None)),
            Some(Command::History(args)) => {
                let outputs = Outputs::of(args.json.as_deref(), None)?;
                let mut plan = Plan::new(CommandKind::History, outputs, None);
                plan.history = Some(args.plan()?);
                Ok(plan)
            }
        }
    }

    fn compare(args: &crate::compare::params::CompareArgs) -> Result<Plan, UsageError> {
        let outputs = Outputs::of_program(&args.outputs)?;
        let mut plan = Plan::new(CommandKind::Compare, outputs, None);
        plan.compare = Some(args.inputs()?);
        Ok(plan)
    }

    fn sweep(args: &SweepArgs) -> Result<Plan, UsageError> {
        let outputs = Outputs::of_program(&args.outputs)?.saving(&args.save)?;
        let mut plan = Plan::new(CommandKind::Sweep, outputs, None);
        plan.sweep = Some(args.plan()?);
        Ok(plan)
    }

    fn footprint(args: &FootprintArgs) -> Result<Plan, UsageError> {
        let outputs = Outputs::of_program(&args.outputs)?;
        let mut plan = Plan::new(CommandKind::Footprint, outputs, None);
        plan.footprint = Some(args.plan()?);
        Ok(plan)
    }

    fn pages(args: &PagesArgs) -> Result<Plan, UsageError> {
        let (sampling, pages) = match &args.action {
            PagesAction::Record(a) => (&a.sampling, PagesPlan::Record(a.plan()?)),
            PagesAction::Apply(a) => (&a.sampling, PagesPlan::Apply(Box::new(a.plan()?))),
        };
        let outputs = Outputs::of_program(&sampling.outputs)?.saving(&sampling.save)?;
        let mut plan = Plan::new(CommandKind::Pages, outputs, None);
        plan.pages = Some(pages);
        Ok(plan)
    }

    fn stat(args: &StatArgs) -> Result<Plan, UsageError> {
        let outputs = Outputs::of(args.json.as_deref(), args.csv.as_deref())?.saving(&args.save)?;
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
        let outputs = Outputs::of(args.json.as_deref(), args.csv.as_deref())?;
        Ok(Plan::new(CommandKind::Info, outputs, None))
    }

    fn run(args: &RunArgs, machine: &Machine) -> Result<Plan, UsageError> {
        let measure = MeasurePlan::resolve(&args.measure, machine)?;
        let dir = std::path::Path::new(&args.out);
        if !dir.is_dir() {
            return Err(UsageError::OutputPath {
                path: args.out.clone(),
                reason: "--out expects an existing directory".into(),
            });
        }
        // The file given, else `name` in the output directory.
        let or_in_dir = |given: &Option<String>, name: &str| {
            (given.clone()).unwrap_or_else(|| dir.join(name).to_string_lossy().into_owned())
        };
        let json = or_in_dir(&args.measure.json, "memscope-report.json");
        let html = or_in_dir(&args.html, "memscope-report.html");
        let latency = LatencyConfig::resolve(&defaults::<LatencyArgs>(), &measure, machine)?;
        // The quick versions of the other experiments: the bandwidth table with a read and
        // copy sweep, and the stride matrix at one size per level.
        let mut bandwidth_args = defaults::<BandwidthArgs>();
        bandwidth_args.sweep = true;
        bandwidth_args.sweep_kernels = "read,copy".into();
        let mut quick = measure.clone();
        quick.repetitions = quick.repetitions.min(5);
        quick.trial_ns = 1e6;
        let bandwidth = BandwidthConfig::resolve(&bandwidth_args, &quick, machine)?;
        let stride = StrideConfig::resolve(&defaults::<StrideArgs>(), &quick, machine)?
            .one_size_per_level(&quick, machine);
        // A quick loaded-latency curve (read mix, every injector), when there is a CPU
        // to inject from (`LoadedConfig::resolve` refuses a machine with one CPU: the
        // profile skips it instead).
        let loaded = (thread_cpus(machine, measure.cpu).len() > 1)
            .then(|| {
                let mut loaded_args = defaults::<LoadedArgs>();
                loaded_args.mix = Some("read".into());
                LoadedConfig::resolve(&loaded_args, &quick, machine)
            })
            .transpose()?;
        let skipped = loaded.is_none().then_some(Skipped {
            experiment: "latency under load",
            reason: "it needs a second CPU for the injector thread, and this process may use \
                     only one",
        });
        let outputs = Outputs {
            json: Some(Target::parse(&json)?),
            csv: args.measure.csv.as_deref().map(Target::parse).transpose()?,
            html: Some(Target::parse(&html)?),
            ..Outputs::default()
        }
        .saving(&args.measure.save)?;
        let mut plan = Plan::new(CommandKind::Run, outputs, Some(measure));
        plan.experiments.miss_impact =
            Some(MissImpactConfig::resolve(latency.order, &quick, machine));
        plan.experiments.latency = Some(latency);
        plan.experiments.bandwidth = Some(bandwidth);
        plan.experiments.stride = Some(stride);
        plan.experiments.loaded = loaded;
        plan.skipped.extend(skipped);
        // DRAM parallelism with the quick chain counts, the sequential model and Little's law.
        let mut mlp_args = defaults::<MlpArgs>();
        mlp_args.grid_max = Some("none".into());
        let mut mlp = MlpConfig::resolve(&mlp_args, &quick, machine)?;
        mlp.levels.retain(|(name, _)| name == "DRAM");
        plan.experiments.mlp = Some(mlp);
        // The TLB levels with 4 KiB pages and the quick huge-page curve.
        let mut quick_tlb = quick.clone();
        quick_tlb.quick = true;
        let tlb = TlbConfig::resolve(&defaults::<TlbArgs>(), &quick_tlb, machine)?;
        plan.experiments.tlb = Some(tlb);
        // File reads in their quick form, in the current directory, unless skipped.
        if !args.no_files {
            plan.experiments.files = Some(FilesConfig::quick_profile());
        }
        Ok(plan)
    }

    /// An experiment's own subcommand: its one experiment, resolved by its room.
    fn experiment(command: &ExperimentCommand, machine: &Machine) -> Result<Plan, UsageError> {
        let (measure, experiments) = command.resolve(machine)?;
        let args = command.measure();
        let outputs = Outputs::of(args.json.as_deref(), args.csv.as_deref())?.saving(&args.save)?;
        let mut plan = Plan::new(
            CommandKind::Experiment(command.name()),
            outputs,
            Some(measure),
        );
        plan.experiments = experiments;
        plan.print_points = command.points();
        Ok(plan)
    }
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
        // Whether latency, stride and tlb count, for the experiments the plan runs.
        let counters = |args: &[&str]| {
            let e = plan(args).experiments;
            [
                e.latency.map(|c| c.counters),
                e.stride.map(|c| c.counters),
                e.tlb.map(|c| c.counters),
            ]
        };
        for (i, command) in ["latency", "stride", "tlb"].into_iter().enumerate() {
            let on = counters(&["memscope", command, "--quick", "--counters"]);
            assert_eq!(on[i], Some(true), "{command}");
            assert_eq!(
                counters(&["memscope", command])[i],
                Some(false),
                "{command}"
            );
        }
        let run = counters(&["memscope", "run", "--quick"]);
        assert_eq!(run, [Some(false); 3]);
        // Only the experiments that count take the flag.
        for command in ["run", "bandwidth", "mlp"] {
            assert!(Cli::try_parse_from(["memscope", command, "--counters"]).is_err());
        }
    }
}
