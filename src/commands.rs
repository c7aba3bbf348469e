//! Orchestration of each command: detect the machine, resolve the plan, pin, calibrate,
//! allocate, run the experiments, then hand one `Report` to the exporters. Nothing here
//! measures or formats by itself.

use std::process::ExitCode;

use anyhow::Context;

use crate::cli::Cli;
use crate::counters::Probe;
use crate::error::UsageError;
use crate::experiments::params::MeasurePlan;
use crate::pages::record::RecordError;
use crate::pages::PagesResult;
use crate::plan::{CommandKind, Plan};
use crate::platform::affinity;
use crate::platform::arena::PagePolicy;
use crate::platform::hugepages::{self, HugepageReservation};
use crate::platform::timer::Timer;
use crate::report::document::{self, MachineView};
use crate::report::{self, Report, Settings, Warning};
use crate::session::context::Session;
use crate::session::progress::Progress;
use crate::session::warnings::WarningKind;
use crate::stat;
use crate::topology::{self, Machine};

pub use crate::error::SIMULATED_FAILURE;

/// Runs the command line; `Err` carries either a `UsageError` (exit 2) or a failure.
pub fn execute(cli: &Cli) -> anyhow::Result<ExitCode> {
    let mut machine = topology::detect().context("reading the machine's topology")?;
    let plan = Plan::resolve(cli, &machine)?;
    let mut report = match plan.command {
        CommandKind::Info => info(&mut machine),
        CommandKind::Stat => stat(&plan, machine)?,
        CommandKind::Pages => pages(&plan, machine)?,
        CommandKind::Footprint => footprint(&plan, machine)?,
        CommandKind::Sweep => sweep(&plan, machine)?,
        _ => measure(&plan, machine)?,
    };
    report.settings.command = plan.command.name().to_string();
    export(&plan, &report)?;
    // memscope stat and pages pass the command's exit status through.
    Ok(match (&report.stat, &report.pages, &report.sweep) {
        (Some(stat), _, _) => ExitCode::from(stat.exit_status()),
        (_, Some(pages), _) => ExitCode::from(pages.exit_status()),
        (_, _, Some(sweep)) => ExitCode::from(sweep.exit_status()),
        _ => ExitCode::SUCCESS,
    })
}

/// `memscope sweep`: builds the variants and runs the benchmarks interleaved; like
/// `stat`, no calibration or pinning (the benchmarks run where the OS puts them).
fn sweep(plan: &Plan, machine: Machine) -> anyhow::Result<Report> {
    let sweep_plan = plan
        .sweep
        .as_ref()
        .expect("the sweep command has a sweep plan");
    let probe = Probe::detect();
    let result = crate::sweep::run(sweep_plan, &machine, &probe)
        .map_err(|e| UsageError::CannotProceed(e.0))?;
    let mut report = Report::new(machine, Settings::default());
    report.settings.sampling = format!(
        "{} warm-up and {} measured blocks; each block runs every benchmark × variant once, \
         in a shuffled order; counters as memscope stat counts them",
        result.warmup_blocks, result.blocks
    );
    report.sweep = Some(result);
    Ok(report)
}

/// `memscope footprint`: reads the binary; nothing is measured or pinned.
fn footprint(plan: &Plan, machine: Machine) -> anyhow::Result<Report> {
    let footprint_plan = plan
        .footprint
        .as_ref()
        .expect("the footprint command has a footprint plan");
    let result =
        crate::footprint::run(footprint_plan, &machine).map_err(|e| UsageError::InvalidValue {
            flag: "BINARY",
            value: e.path,
            expected: format!(
                "an ELF executable or library that can be read ({})",
                e.reason
            ),
        })?;
    let mut report = Report::new(machine, Settings::default());
    report.settings.sampling = "read from the file: nothing was run or measured".to_string();
    report.footprint = Some(result);
    Ok(report)
}

/// `memscope pages`: runs the user's command under an access source (and huge pages,
/// for `apply`); like `stat`, no calibration or pinning.
fn pages(plan: &Plan, machine: Machine) -> anyhow::Result<Report> {
    let pages_plan = plan
        .pages
        .as_ref()
        .expect("the pages command has a pages plan");
    let result = match crate::pages::run(pages_plan) {
        Ok(result) => result,
        Err(RecordError::Spawn(e)) => return Err(e.into()),
        Err(RecordError::Source(why)) => return Err(UsageError::Unsupported(why).into()),
        Err(e) => return Err(e.into()),
    };
    let mut report = Report::new(machine, Settings::default());
    report.settings.sampling = match &result {
        PagesResult::Record(r) => format!(
            "one run of the command with address-space randomization off, sampled every {:.0} \
             ms by the {} source",
            r.interval_ms,
            r.source.name()
        ),
        PagesResult::Apply(a) => format!(
            "one warm-up block, then {} blocks of three runs (4 KiB pages, top {} regions huge, \
             all huge; order shuffled per block), address-space randomization off; speed-up = \
             median over the blocks of the 4 KiB time / the arm's time; two-sided Wilcoxon \
             signed-rank test of those ratios",
            a.repeat, a.top
        ),
    };
    report.pages = Some(result);
    Ok(report)
}

/// `memscope stat`: runs the command with its counters; no calibration, pinning or
/// warnings about the machine, so memscope adds as little as possible to the run.
fn stat(plan: &Plan, machine: Machine) -> anyhow::Result<Report> {
    let stat_plan = plan
        .stat
        .as_ref()
        .expect("the stat command has a stat plan");
    let probe = Probe::detect();
    let line_bytes = machine.line_bytes();
    let result = stat::run(stat_plan, &probe, line_bytes)?;
    let mut report = Report::new(machine, Settings::default());
    report.settings.sampling = format!(
        "{} run(s) of the command, counted from its exec to its exit with the processes \
         and threads it starts; counts scaled by time enabled / time running when \
         multiplexed; median over the runs, spread = 1.4826·MAD/median",
        result.runs.len()
    );
    report.stat = Some(result);
    Ok(report)
}

/// Calibrates the clock on the calling thread and records the TSC rate and the measured
/// core clock in the machine description. Returns why the TSC is not used, if it is not.
fn calibrate_clocks(machine: &mut Machine) -> (Timer, Option<String>) {
    let (timer, tsc_problem) = Timer::calibrate();
    machine.tsc_hz = timer.tsc_hz();
    machine.core_hz_estimate = timer.estimate_core_hz();
    (timer, tsc_problem)
}

fn info(machine: &mut Machine) -> Report {
    let (timer, tsc_problem) = calibrate_clocks(machine);
    let mut report = Report::new(machine.clone(), Settings::default());
    report.settings.timer = timer.name().to_string();
    report.warnings = machine_warnings(machine, tsc_problem);
    report
}

/// Warnings that follow from the machine alone.
fn machine_warnings(machine: &Machine, tsc_problem: Option<String>) -> Vec<Warning> {
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
    if let Some(running) = other_running_tasks().filter(|&others| others >= 0.5) {
        let cpus = machine.logical_cpus;
        warnings.push(WarningKind::SystemBusy { running, cpus });
    }
    warnings.into_iter().map(Warning::from).collect()
}

/// Tasks running on the CPUs besides memscope, averaged over ten samples of
/// `procs_running` (/proc/stat) 10 ms apart: the instantaneous competition for caches and
/// memory, which the load average (a decaying mean over a minute) reports too late.
fn other_running_tasks() -> Option<f64> {
    let mut total = 0.0;
    for _ in 0..10 {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let running: f64 = stat
            .lines()
            .find_map(|l| l.strip_prefix("procs_running "))?
            .trim()
            .parse()
            .ok()?;
        total += (running - 1.0).max(0.0); // memscope itself is one of them
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Some(total / 10.0)
}

/// The sampling policy of every experiment the plan runs, in words.
fn sampling_policy(plan: &Plan) -> String {
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
    plan: &Plan,
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

fn measure(plan: &Plan, mut machine: Machine) -> anyhow::Result<Report> {
    let m = plan
        .measure
        .as_ref()
        .expect("measuring commands have a measure plan");
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
        command: plan.command.name().to_string(),
        cpus: vec![m.cpu],
        pages_requested: m.pages.to_string(),
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
    // What the test files of `files` were on belongs to the machine's description.
    let storage = experiments.files.as_ref().map(|f| f.storage.clone());
    experiments.link(session.pages_obtained.as_ref());
    warnings.extend(session.warnings);
    settings.cpus = session.cpus;
    settings.pages_obtained = session.pages_obtained;

    if let Some(summary) = reservation.as_ref().and_then(HugepageReservation::summary) {
        settings.sampling.push_str(&format!("; {summary}"));
    }
    drop(reservation);
    machine.storage = storage;
    let mut report = Report::new(machine, settings);
    report.warnings = warnings;
    report.experiments = experiments;
    // The measuring thread is done; let the exporters run anywhere.
    let _ = affinity::set_current_thread_cpus(&report.machine.allowed_cpus);
    Ok(report)
}

/// Prints the tables (to stderr when a machine-readable output goes to stdout) and writes
/// every requested file.
fn export(plan: &Plan, report: &Report) -> anyhow::Result<()> {
    let machine_view = match plan.command {
        CommandKind::Info => MachineView::Full,
        CommandKind::Run => MachineView::Summary,
        _ => MachineView::None,
    };
    // The results' sections are built once and drawn by every output.
    let results = document::result_sections(report);
    let mut text = document::terminal(report, &results, machine_view, plan.print_points);

    let outputs = &plan.outputs;
    let mut files = Vec::new();
    let renderers: [(_, &dyn Fn() -> Vec<u8>); 3] = [
        (&outputs.json, &|| report::json::serialize(report)),
        (&outputs.csv, &|| document::csv(report, &results)),
        (&outputs.html, &|| document::html(report, &results)),
    ];
    for (target, render) in renderers {
        let Some(target) = target else { continue };
        target.write(&render())?;
        if !target.is_stdout() {
            files.push(target.to_string());
        }
    }
    if !files.is_empty() {
        text.push_str(&format!("\n Wrote {}\n", files.join(", ")));
    }
    // stat's table goes to stderr like perf stat's: stdout belongs to the command.
    if outputs.uses_stdout() || report.stat.is_some() || report.pages.is_some() {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    Ok(())
}
