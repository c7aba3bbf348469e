//! The measuring commands: the profile (`memscope run`, the default command), which
//! composes the experiments' quick settings, and each experiment's own subcommand. Both
//! pin, calibrate, reserve huge pages when asked, run the planned experiments through the
//! registry (`experiments::Configs`), check the headline figures for drift and hand one
//! `Report` to the writer. Nothing here measures or formats by itself.

use std::process::ExitCode;

use super::output::{report_document, Outputs, Requested, Shown};
use super::{Command, Context, Document};
use crate::cli::RunArgs;
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
use crate::experiments::params::{defaults, thread_cpus, MeasurePlan};
use crate::experiments::stride::params::StrideArgs;
use crate::experiments::stride::StrideConfig;
use crate::experiments::tlb::params::TlbArgs;
use crate::experiments::tlb::TlbConfig;
use crate::experiments::{Configs, ExperimentCommand};
use crate::kernels::injector::Mix;
use crate::kernels::stream::{self, KernelSpec, Op};
use crate::platform::affinity;
use crate::platform::arena::PagePolicy;
use crate::platform::hugepages::{self, HugepageReservation};
use crate::platform::timer::Timer;
use crate::report::document::MachineView;
use crate::report::{Report, Settings, Warning};
use crate::session::context::Session;
use crate::session::progress::Progress;
use crate::session::warnings::WarningKind;
use crate::topology::Machine;

use crate::error::SIMULATED_FAILURE;

/// A measuring command's plan: its settings, its experiments and its outputs.
#[derive(Debug, Clone)]
pub struct MeasuringPlan {
    /// The command's name: "run", or the experiment's ("latency").
    pub name: &'static str,
    pub outputs: Outputs,
    pub measure: MeasurePlan,
    /// The experiments it runs, each with its validated configuration.
    pub experiments: Configs,
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

/// `memscope run`: the profile.
pub struct Profile;

impl Command for Profile {
    type Args = RunArgs;
    type Plan = MeasuringPlan;

    fn plan(args: &RunArgs, context: &Context) -> anyhow::Result<MeasuringPlan> {
        Ok(profile(args, context.machine()?)?)
    }

    fn run(plan: MeasuringPlan, context: Context) -> anyhow::Result<(Document, ExitCode)> {
        run_measuring(plan, context, MachineView::Summary)
    }
}

/// An experiment's own subcommand: its one experiment, resolved by its room.
pub struct Single;

impl Command for Single {
    type Args = ExperimentCommand;
    type Plan = MeasuringPlan;

    fn plan(command: &ExperimentCommand, context: &Context) -> anyhow::Result<MeasuringPlan> {
        let (measure, experiments) = command.resolve(context.machine()?)?;
        let args = command.measure();
        let outputs = Outputs::resolve(Requested::measuring(&args.json, &args.csv, &args.save))?;
        Ok(MeasuringPlan {
            name: command.name(),
            outputs,
            measure,
            experiments,
            skipped: Vec::new(),
            print_points: command.points(),
        })
    }

    fn run(plan: MeasuringPlan, context: Context) -> anyhow::Result<(Document, ExitCode)> {
        run_measuring(plan, context, MachineView::None)
    }
}

/// Measures, then builds the document; the measuring commands always exit 0.
fn run_measuring(
    plan: MeasuringPlan,
    context: Context,
    machine_view: MachineView,
) -> anyhow::Result<(Document, ExitCode)> {
    let (machine, context) = context.into_machine()?;
    let report = measure(&plan, machine)?;
    let shown = Shown {
        machine: machine_view,
        points: plan.print_points,
        to_stderr: false,
    };
    let document = report_document(report, plan.name, plan.outputs, shown, &context);
    Ok((document, ExitCode::SUCCESS))
}

/// Calibrates the clock on the calling thread and records the TSC rate and the measured
/// core clock in the machine description. Returns why the TSC is not used, if it is not.
pub(super) fn calibrate_clocks(machine: &mut Machine) -> (Timer, Option<String>) {
    let (timer, tsc_problem) = Timer::calibrate();
    machine.tsc_hz = timer.tsc_hz();
    machine.core_hz_estimate = timer.estimate_core_hz();
    (timer, tsc_problem)
}

/// Warnings that follow from the machine alone.
pub(super) fn machine_warnings(machine: &Machine, tsc_problem: Option<String>) -> Vec<Warning> {
    let mut warnings: Vec<WarningKind> = Vec::new();
    if let Some(vendor) = &machine.hypervisor {
        warnings.push(WarningKind::Hypervisor(vendor.clone()));
    }
    if let Some(reason) = tsc_problem {
        warnings.push(WarningKind::NoTsc(reason));
    }
    let governor = machine.cpufreq.as_ref().and_then(|f| f.governor.clone());
    if let Some(governor) = governor.filter(|g| g != "performance") {
        warnings.push(WarningKind::FrequencyScaling(governor));
    }
    if let Some((running, tasks)) = other_running_tasks().filter(|(others, _)| *others >= 0.5) {
        let cpus = machine.logical_cpus;
        warnings.push(WarningKind::SystemBusy {
            running,
            cpus,
            tasks,
        });
    }
    warnings.into_iter().map(Warning::from).collect()
}

/// Tasks running on the CPUs besides memscope (its own threads and its ancestors, such as
/// `cargo run`, are not load), averaged over ten samples 10 ms apart: the instantaneous
/// competition for caches and memory, which the load average (a decaying mean over a
/// minute) reports too late. With the names of those seen running.
fn other_running_tasks() -> Option<(f64, Vec<String>)> {
    use crate::platform::load;
    let own = load::Own::this_process();
    let mut total = 0.0;
    let mut names: Vec<String> = Vec::new();
    for _ in 0..10 {
        let running = load::procs_running()?;
        let others = running.saturating_sub(load::own_running_threads().max(1));
        total += others as f64;
        if others > 0 && names.is_empty() {
            names = load::running_elsewhere(&own);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Some((total / 10.0, names))
}

/// The sampling policy of every experiment the plan runs, in words.
fn sampling_policy(plan: &MeasuringPlan) -> String {
    let mut parts = plan.experiments.sampling();
    let counted = plan.experiments.counted();
    if !counted.is_empty() {
        parts.push(format!(
            "counters: misses per access of each {} counted over one more trial's worth of \
             the same kernel, untimed, after its timed trials",
            counted.join(", ")
        ));
    }
    parts.join("; ")
}

/// For hugetlbfs pages: reserves what the run needs when asked to (the pool is restored when
/// the returned guard drops, on error and on a signal too), else checks before anything
/// runs that the pool has them, with a clear error naming the command that would.
fn hugepages_for_run(
    plan: &MeasuringPlan,
    m: &MeasurePlan,
    machine: &Machine,
) -> Result<Option<HugepageReservation>, UsageError> {
    let page = match (m.pages, plan.experiments.tlb.as_ref().map(|t| t.huge)) {
        (PagePolicy::Huge2M | PagePolicy::Huge1G, _) => m.pages.page_bytes(),
        (_, Some(PagePolicy::Huge2M)) => PagePolicy::Huge2M.page_bytes(),
        _ => return Ok(None),
    };
    let needed = plan.experiments.hugepages(machine, page);
    if needed == 0 {
        return Ok(None);
    }
    if m.reserve_hugepages {
        HugepageReservation::ensure(page, needed).map(Some)
    } else {
        hugepages::check_pool(page, needed).map(|_| None)
    }
}

fn measure(plan: &MeasuringPlan, mut machine: Machine) -> anyhow::Result<Report> {
    let m = &plan.measure;
    // Pin first: the clock estimate, the first touch of the buffers and the chase all
    // happen on the measuring CPU.
    affinity::pin_or_explain(m.cpu, &machine.allowed_cpus)?;
    let (timer, tsc_problem) = calibrate_clocks(&mut machine);

    let mut warnings = machine_warnings(&machine, tsc_problem);
    // Held until the report is built; dropping it gives reserved pages back.
    let reservation = hugepages_for_run(plan, m, &machine)?;
    if std::env::var_os(SIMULATED_FAILURE).is_some_and(|v| v == "after-reservation") {
        anyhow::bail!("simulated failure after the hugepage reservation ({SIMULATED_FAILURE})");
    }
    let mut settings = Settings {
        command: plan.name.to_string(),
        cpus: vec![m.cpu],
        pages_requested: Some(m.pages),
        pages_obtained: None,
        quick: m.quick,
        repetitions: m.repetitions,
        trial_ms: m.trial_ns / 1e6,
        max_size_bytes: m.max_size.0,
        timer: timer.name().to_string(),
        team_clock: timer.across_cpus_description(),
        sampling: sampling_policy(plan),
    };
    let progress = Progress::for_stderr();
    let mut session = Session::new(&timer, &machine, &progress, m.pages, m.cpu);
    session.warn(plan.skipped.iter().map(|s| WarningKind::Skipped {
        experiment: s.experiment.into(),
        reason: s.reason.into(),
    }));
    let mut experiments = plan.experiments.measure(&mut session)?;
    // The headline figures once more (or until stable): how far the machine moved.
    let drift = crate::experiments::drift::check(
        &plan.experiments,
        &mut session,
        &experiments,
        m.until_stable,
    )?;
    let conditions = std::mem::take(&mut session.conditions.records);
    for c in conditions.iter().filter(|c| c.disturbed) {
        let by_tasks = c.tasks_disturbed();
        session.warn([WarningKind::Disturbed {
            experiment: c.experiment.replace('_', " "),
            other_runnable: c.other_runnable_mean.filter(|_| by_tasks),
            busy_share_pct: c.other_runnable_share_pct.filter(|_| by_tasks),
            steal_pct: c.steal_pct.filter(|_| c.steal_disturbed()),
            tasks: c.tasks.clone(),
        }]);
    }
    if let Some(d) = &drift {
        let moved: Vec<_> = d.beyond_noise().collect();
        if let Some(worst) = moved
            .iter()
            .max_by(|a, b| a.drift_pct.total_cmp(&b.drift_pct))
        {
            session.warn([WarningKind::Drift {
                count: moved.len(),
                worst: format!("{} {:+.1}%", worst.label, signed_drift(worst)),
            }]);
        }
    }
    // What the test files of `files` were on belongs to the machine's description.
    let storage = experiments.files.as_ref().map(|f| f.storage.clone());
    experiments.link(session.pages_obtained.as_ref());
    warnings.extend(session.warnings);
    settings.cpus = session.cpus;
    settings.pages_obtained = session.pages_obtained;

    if let Some(d) = &report_drift_words(m, &drift) {
        settings.sampling.push_str(d);
    }
    if let Some(summary) = reservation.as_ref().and_then(HugepageReservation::summary) {
        settings.sampling.push_str(&format!("; {summary}"));
    }
    drop(reservation);
    machine.storage = storage;
    let mut report = Report::new(machine, settings);
    report.warnings = warnings;
    report.experiments = experiments;
    report.conditions = conditions;
    report.drift = drift;
    // The measuring thread is done; let the exporters run anywhere.
    let _ = affinity::set_current_thread_cpus(&report.machine.allowed_cpus);
    Ok(report)
}

/// The drift pass in words, for the sampling policy.
fn report_drift_words(
    m: &MeasurePlan,
    drift: &Option<crate::experiments::drift::DriftResult>,
) -> Option<String> {
    let d = drift.as_ref()?;
    Some(match m.until_stable {
        None => format!(
            "; drift: {} headline figures measured once more at the end of the run (at most \
             5 trials each)",
            d.figures.len()
        ),
        Some(t) => format!(
            "; drift: {} headline figures measured again at the end until two passes in a row \
             agreed within {}% or {:.0} s ran out ({} passes)",
            d.figures.len(),
            t.within_pct,
            t.budget.as_secs_f64(),
            d.passes
        ),
    })
}

/// The last pass's change against the measurement, percent, with its sign.
fn signed_drift(f: &crate::experiments::drift::DriftFigure) -> f64 {
    let last = f.passes.last().copied().unwrap_or(f.before);
    (last / f.before - 1.0) * 100.0
}

/// The kernels of the profile's bandwidth-vs-size sweep: the plain read and the plain
/// copy (cached stores), in the registry's order.
fn profile_sweep_kernels() -> Vec<&'static KernelSpec> {
    (stream::KERNELS.iter())
        .filter(|k| !k.nontemporal && matches!(k.op, Op::Read | Op::Copy))
        .collect()
}

/// The profile's plan: the quick versions of the experiments, composed.
fn profile(args: &RunArgs, machine: &Machine) -> Result<MeasuringPlan, UsageError> {
    let measure = MeasurePlan::resolve(&args.measure, machine)?;
    let dir = std::path::Path::new(&args.out);
    if !dir.is_dir() {
        return Err(UsageError::OutputPath {
            path: args.out.clone(),
            reason: "--out expects an existing directory".into(),
        });
    }
    // The file given, else `name` in the output directory.
    let or_in_dir = |given: Option<&str>, name: &str| {
        given.map_or_else(
            || dir.join(name).to_string_lossy().into_owned(),
            String::from,
        )
    };
    let json = or_in_dir(args.measure.json.file(), "memscope-report.json");
    let html = or_in_dir(args.html.file(), "memscope-report.html");
    let latency = LatencyConfig::resolve(&defaults::<LatencyArgs>(), &measure, machine)?;
    // The quick versions of the other experiments: the bandwidth table with a read and
    // copy sweep, and the stride matrix at one size per level.
    let mut quick = measure.clone();
    quick.repetitions = quick.repetitions.min(5);
    quick.trial_ns = 1e6;
    let bandwidth = BandwidthConfig::resolve(&defaults::<BandwidthArgs>(), &quick, machine)?
        .with_sweep(profile_sweep_kernels(), &quick, machine);
    let stride = StrideConfig::resolve(&defaults::<StrideArgs>(), &quick, machine)?
        .one_size_per_level(&quick, machine);
    // A quick loaded-latency curve (read mix, every injector), when there is a CPU
    // to inject from (`LoadedConfig::resolve` refuses a machine with one CPU: the
    // profile skips it instead).
    let loaded = (thread_cpus(machine, measure.cpu).len() > 1)
        .then(|| LoadedConfig::resolve(&defaults::<LoadedArgs>(), &quick, machine))
        .transpose()?
        .map(|loaded| LoadedConfig {
            mixes: vec![Mix::Read],
            ..loaded
        });
    let skipped = loaded.is_none().then_some(Skipped {
        experiment: "latency under load",
        reason: "it needs a second CPU for the injector thread, and this process may use \
                     only one",
    });
    let outputs = Outputs::resolve(Requested {
        json: Some(&json),
        csv: args.measure.csv.file(),
        html: Some(&html),
        save: Some(&args.measure.save),
    })?;
    let mut plan = MeasuringPlan {
        name: "run",
        outputs,
        measure,
        experiments: Configs::default(),
        skipped: Vec::new(),
        print_points: false,
    };
    plan.experiments.miss_impact = Some(MissImpactConfig::resolve(latency.order, &quick, machine));
    plan.experiments.latency = Some(latency);
    plan.experiments.bandwidth = Some(bandwidth);
    plan.experiments.stride = Some(stride);
    plan.experiments.loaded = loaded;
    plan.skipped.extend(skipped);
    // DRAM parallelism with the quick chain counts, the sequential model and Little's law.
    // No size × chains grid.
    let mut mlp = MlpConfig::resolve(&defaults::<MlpArgs>(), &quick, machine)?;
    mlp.grid_sizes.clear();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    /// The experiments of the profile as they were built before the configs were typed:
    /// CLI strings written into default flags and parsed again. Kept as the reference the
    /// typed profile must equal.
    fn string_built(args: &RunArgs, machine: &Machine) -> Configs {
        let measure = MeasurePlan::resolve(&args.measure, machine).unwrap();
        let latency =
            LatencyConfig::resolve(&defaults::<LatencyArgs>(), &measure, machine).unwrap();
        let mut bandwidth_args = defaults::<BandwidthArgs>();
        bandwidth_args.sweep = true;
        bandwidth_args.sweep_kernels = "read,copy".into();
        let mut quick = measure.clone();
        quick.repetitions = quick.repetitions.min(5);
        quick.trial_ns = 1e6;
        let bandwidth = BandwidthConfig::resolve(&bandwidth_args, &quick, machine).unwrap();
        let stride = StrideConfig::resolve(&defaults::<StrideArgs>(), &quick, machine)
            .unwrap()
            .one_size_per_level(&quick, machine);
        let loaded = (thread_cpus(machine, measure.cpu).len() > 1).then(|| {
            let mut loaded_args = defaults::<LoadedArgs>();
            loaded_args.mix = Some("read".into());
            LoadedConfig::resolve(&loaded_args, &quick, machine).unwrap()
        });
        let mut configs = Configs {
            miss_impact: Some(MissImpactConfig::resolve(latency.order, &quick, machine)),
            latency: Some(latency),
            bandwidth: Some(bandwidth),
            stride: Some(stride),
            loaded,
            ..Configs::default()
        };
        let mut mlp_args = defaults::<MlpArgs>();
        mlp_args.grid_max = Some("none".into());
        let mut mlp = MlpConfig::resolve(&mlp_args, &quick, machine).unwrap();
        mlp.levels.retain(|(name, _)| name == "DRAM");
        configs.mlp = Some(mlp);
        let mut quick_tlb = quick.clone();
        quick_tlb.quick = true;
        configs.tlb =
            Some(TlbConfig::resolve(&defaults::<TlbArgs>(), &quick_tlb, machine).unwrap());
        if !args.no_files {
            configs.files = Some(FilesConfig::quick_profile());
        }
        configs
    }

    #[test]
    fn the_typed_profile_equals_the_string_built_one() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let out = dir.path().to_str().expect("a UTF-8 path");
        let detected = crate::topology::detect().expect("the machine's topology");
        // This machine, and the same machine allowed one CPU (no loaded-latency curve).
        let mut one_cpu = detected.clone();
        one_cpu.allowed_cpus.truncate(1);
        let cpu = one_cpu.allowed_cpus[0].to_string();
        for machine in [&detected, &one_cpu] {
            for flags in [
                vec!["--quick"],
                vec![],
                vec![
                    "--quick",
                    "--no-files",
                    "--max-size",
                    "8M",
                    "--repetitions",
                    "3",
                ],
                vec!["--cpu", cpu.as_str(), "--pages", "4k"],
            ] {
                let argv = [&["memscope", "run", "--out", out], &flags[..]].concat();
                let cli = Cli::try_parse_from(&argv).expect("arguments clap accepts");
                let Some(crate::cli::Command::Run(args)) = &cli.command else {
                    panic!("{argv:?} is `run`");
                };
                let typed = profile(args, machine).expect("the profile plans");
                assert_eq!(
                    format!("{:?}", typed.experiments),
                    format!("{:?}", string_built(args, machine)),
                    "{argv:?}"
                );
                assert_eq!(typed.skipped.is_empty(), typed.experiments.loaded.is_some());
            }
        }
    }
}
