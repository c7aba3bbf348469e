//! Orchestration of each command: detect the machine, resolve the plan, pin, calibrate,
//! allocate, run the experiments, then hand one `Report` to the exporters. Nothing here
//! measures or formats by itself.

use std::process::ExitCode;

use anyhow::Context;

use crate::cli::Cli;
use crate::counters::Probe;
use crate::error::UsageError;
use crate::experiments::numa::NodeThreads;
use crate::experiments::{bandwidth, latency, loaded, miss_impact, mlp, numa, rob, stride, tlb};
use crate::plan::{CommandKind, MeasurePlan, Plan};
use crate::platform::affinity;
use crate::platform::arena::{Arena, PagePolicy};
use crate::platform::cpu_time::MIN_OVERLAP;
use crate::platform::hugepages::{self, HugepageReservation};
use crate::platform::team;
use crate::platform::timer::Timer;
use crate::report::{self, Report, Settings, Warning};
use crate::session::progress::Progress;
use crate::session::warnings::WarningKind;
use crate::stat;
use crate::topology::{self, Machine};
use crate::units::Bytes;

/// Environment variable that makes a run fail on purpose at a given point, so tests can
/// check that memscope cleans up after a failure (e.g. "after-reservation").
pub const SIMULATED_FAILURE: &str = "MEMSCOPE_SIMULATE_FAILURE";

/// Runs the command line; `Err` carries either a `UsageError` (exit 2) or a failure.
pub fn execute(cli: &Cli) -> anyhow::Result<ExitCode> {
    let mut machine = topology::detect().context("reading the machine's topology")?;
    let plan = Plan::resolve(cli, &machine)?;
    let mut report = match plan.command {
        CommandKind::Info => info(&mut machine),
        CommandKind::Stat => stat(&plan, machine)?,
        _ => measure(&plan, machine)?,
    };
    report.settings.command = plan.command.name().to_string();
    export(&plan, &report)?;
    Ok(match &report.stat {
        // memscope stat passes the command's exit status through.
        Some(stat) => ExitCode::from(stat.exit_status()),
        None => ExitCode::SUCCESS,
    })
}

/// `memscope stat`: runs the command with its counters; no calibration, pinning or
/// warnings about the machine, so memscope adds as little as possible to the run.
fn stat(plan: &Plan, machine: Machine) -> anyhow::Result<Report> {
    let stat_plan = plan
        .stat
        .as_ref()
        .expect("the stat command has a stat plan");
    let probe = Probe::detect();
    let line_bytes = machine
        .caches
        .iter()
        .map(|c| c.line_bytes)
        .find(|&l| l > 0)
        .unwrap_or(64);
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
    if let Some(governor) = machine.cpufreq.as_ref().and_then(|f| f.governor.clone()) {
        if governor != "performance" {
            warnings.push(WarningKind::FrequencyScaling(governor));
        }
    }
    if let Some(others) = other_running_tasks() {
        if others >= 0.5 {
            warnings.push(WarningKind::SystemBusy {
                running: others,
                cpus: machine.logical_cpus,
            });
        }
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
fn sampling_policy(plan: &Plan, m: &MeasurePlan) -> String {
    let mut parts = Vec::new();
    if let Some(latency) = &plan.latency {
        let passes = latency.passes.max(1);
        let trials = m.repetitions.div_ceil(passes) * passes;
        parts.push(format!(
            "latency: {trials} timed trials of ~{:.0} ms per point in {passes} pass(es) through \
             the sweep, each pass a fresh random layout after a warm-up lap; median reported, \
             spread = 1.4826·MAD/median; points above {:.0}% spread get one more pass and are \
             flagged if still above",
            m.trial_ns / 1e6,
            latency::UNSTABLE_SPREAD_PCT
        ));
    }
    if let Some(bandwidth) = &plan.bandwidth {
        parts.push(format!(
            "bandwidth: one untimed pass, then {} trials of ~{:.0} ms (repetitions doubled \
             until a trial lasts a quarter of that), all threads released together, each \
             trial timed from the first thread's start to the last one's end on a clock all \
             CPUs share; a trial whose threads overlapped less than {:.0}% (their CPU time \
             ÷ threads × the trial; one thread: its time on the CPU) is run again (up to {}× \
             the trials), and a row none of whose trials reach it is marked !; median and \
             1.4826·MAD/median",
            bandwidth.repetitions,
            bandwidth.trial_ns / 1e6,
            MIN_OVERLAP * 100.0,
            team::ATTEMPTS_PER_TRIAL
        ));
    }
    if let Some(stride) = &plan.stride {
        parts.push(format!(
            "stride: a warm-up pass, then {} trials of ~{:.1} ms per row; median",
            stride.repetitions,
            stride.trial_ns / 1e6
        ));
    }
    if let Some(loaded) = &plan.loaded {
        parts.push(format!(
            "loaded: per delay, the injectors run {:.0} ms before {} chase trials of ~{:.0} ms; \
             injector bandwidth from their step counts over the same trials; a trial during \
             which the chase was preempted or the injectors ran less than {:.0}% of the time \
             is taken again (up to {} times per point); median; idle latency measured before \
             and after the curves",
            loaded::SETTLE_NS / 1e6,
            loaded.repetitions,
            loaded.trial_ns / 1e6,
            MIN_OVERLAP * 100.0,
            loaded::MAX_RETRIES
        ));
    }
    if let Some(mlp) = &plan.mlp {
        parts.push(format!(
            "mlp: a warm-up lap, then {} trials of ~{:.0} ms per level × chains (grid: fewer, \
             shorter trials); median",
            mlp.repetitions,
            mlp.trial_ns / 1e6
        ));
    }
    if let Some(rob) = &plan.rob {
        parts.push(format!(
            "rob: {} trials of ~{:.0} ms per filler × K, a coarse sweep then steps of 2 around \
             each cliff; median",
            rob.repetitions,
            rob.trial_ns / 1e6
        ));
    }
    let counted: Vec<&str> = [
        (
            "latency point",
            plan.latency.as_ref().is_some_and(|c| c.counters),
        ),
        (
            "stride row",
            plan.stride.as_ref().is_some_and(|c| c.counters),
        ),
        ("tlb row", plan.tlb.as_ref().is_some_and(|c| c.counters)),
    ]
    .iter()
    .filter(|(_, on)| *on)
    .map(|(what, _)| *what)
    .collect();
    if !counted.is_empty() {
        parts.push(format!(
            "counters: misses per access of each {} counted over one more trial's worth of \
             the same kernel, untimed, after its timed trials",
            counted.join(", ")
        ));
    }
    if let Some(impact) = &plan.miss_impact {
        parts.push(format!(
            "miss impact: per footprint × pattern a warm-up lap, then {} trials of ~{:.0} ms \
             (median ns per access), then one counted pass through every line, repeated to \
             last at least {:.0} trials, with the miss counters, page faults and task clock \
             on; AMAT from the latency ladder's levels",
            impact.repetitions,
            impact.trial_ns / 1e6,
            miss_impact::COUNTED_TRIALS
        ));
    }
    parts.join("; ")
}

/// Maps a measurement buffer on the calling (pinned) thread and records what it got: the
/// first buffer's backing goes into the settings; THP that was not obtained is an error
/// when none of the buffer got huge pages, a warning when part of it did.
fn allocate(
    bytes: Bytes,
    pages: PagePolicy,
    settings: &mut Settings,
    warnings: &mut Vec<Warning>,
) -> Result<Arena, UsageError> {
    let arena = Arena::new(bytes, pages)?;
    let obtained = arena.obtained();
    if pages == PagePolicy::Thp && obtained.huge_fraction < 0.9 {
        if obtained.huge_fraction == 0.0 && arena.len() >= 4 << 20 {
            return Err(UsageError::PagesUnavailable {
                policy: "thp".into(),
                reason: "none of the buffer was backed by transparent huge pages after first \
                         touch (memory fragmentation, or THP limited by the system)"
                    .into(),
                advice: "Try --pages 2m with a reserved hugetlbfs pool, or --pages 4k".into(),
            });
        }
        let warning = Warning::from(WarningKind::ThpPartial {
            fraction: obtained.huge_fraction,
        });
        if !warnings.contains(&warning) {
            warnings.push(warning);
        }
    }
    settings.pages_obtained.get_or_insert(obtained);
    Ok(arena)
}

/// The most hugetlbfs pages of `page` bytes that the plan's experiments map at the same
/// time: each experiment's buffers that live together, each rounded up to whole pages.
fn hugepages_needed(plan: &Plan, m: &MeasurePlan, machine: &Machine, page: u64) -> u64 {
    let pages = |bytes: u64| hugepages::pages_for_bytes(bytes, page);
    let mut needs: Vec<u64> = Vec::new();
    if plan.latency.is_some() {
        needs.push(pages(m.max_size.0));
    }
    if let Some(config) = &plan.bandwidth {
        let threads = config.thread_counts.iter().copied().max().unwrap_or(1) as u64;
        needs.push(threads * pages(config.largest_arena_bytes(machine)));
    }
    if let Some(config) = &plan.stride {
        needs.push(pages(config.arena_bytes()));
    }
    if let Some(config) = &plan.loaded {
        let injectors = config.thread_counts.iter().copied().max().unwrap_or(0) as u64;
        needs.push(pages(config.chase_bytes) + injectors * pages(config.injector_bytes));
    }
    if let Some(config) = &plan.mlp {
        needs.push(pages(config.arena_bytes()));
    }
    if let Some(config) = &plan.rob {
        needs.push(pages(config.chase_bytes));
    }
    if let Some(config) = &plan.miss_impact {
        needs.push(pages(config.arena_bytes()));
    }
    if let Some(config) = &plan.numa {
        let threads = match config.threads_per_node {
            NodeThreads::Count(n) => n,
            NodeThreads::All => machine
                .numa_nodes
                .iter()
                .map(|n| n.cpus.len())
                .max()
                .unwrap_or(1),
        } as u64;
        needs.push(pages(config.latency_bytes).max(threads * pages(config.bandwidth_bytes)));
    }
    if let Some(config) = plan.tlb.as_ref().filter(|t| t.huge == PagePolicy::Huge2M) {
        // The huge-page sweep, the MLP and the SAXPY buffers, one after the other.
        needs.push(
            (config.max_pages_huge * PagePolicy::Huge2M.page_bytes())
                .max(config.mlp_bytes)
                .max(config.saxpy_footprint)
                .div_ceil(page)
                + 2,
        );
    }
    needs.into_iter().max().unwrap_or(0)
}

/// For hugetlbfs pages: reserves what the run needs when asked to (the pool is restored when
/// the returned guard drops, on error and on a signal too), else checks before anything
/// runs that the pool has them, with a clear error naming the command that would.
fn hugepages_for_run(
    plan: &Plan,
    m: &MeasurePlan,
    machine: &Machine,
) -> Result<Option<HugepageReservation>, UsageError> {
    let page = match (m.pages, plan.tlb.as_ref().map(|t| t.huge)) {
        (PagePolicy::Huge2M | PagePolicy::Huge1G, _) => m.pages.page_bytes(),
        (_, Some(PagePolicy::Huge2M)) => PagePolicy::Huge2M.page_bytes(),
        _ => return Ok(None),
    };
    let needed = hugepages_needed(plan, m, machine, page);
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
        sampling: sampling_policy(plan, m),
    };
    let progress = Progress::for_stderr();
    let mut experiments = report::Experiments::default();

    if let Some(config) = &plan.latency {
        let arena = allocate(m.max_size, m.pages, &mut settings, &mut warnings)?;
        let (result, found) = latency::measure(config, &arena, &timer, &machine, &progress);
        experiments.latency = Some(result);
        warnings.extend(found.into_iter().map(Warning::from));
    }
    if let (Some(config), Some(latency)) = (&plan.miss_impact, &experiments.latency) {
        let arena = allocate(
            Bytes(config.arena_bytes()),
            m.pages,
            &mut settings,
            &mut warnings,
        )?;
        experiments.miss_impact = Some(miss_impact::measure(
            config, &arena, latency, &timer, &machine, &progress,
        ));
    }
    if let Some(config) = &plan.bandwidth {
        let result = bandwidth::measure(config, &timer, &machine, &progress)?;
        let mut cpus: Vec<usize> = result
            .cpus
            .iter()
            .copied()
            .take(config.thread_counts.iter().copied().max().unwrap_or(1))
            .collect();
        cpus.retain(|c| !settings.cpus.contains(c));
        settings.cpus.extend(cpus);
        warnings.extend(
            WarningKind::not_concurrent(
                "bandwidth row",
                result.rows.iter().chain(&result.sweep).map(|r| r.overlap),
            )
            .map(Warning::from),
        );
        experiments.bandwidth = Some(result);
    }
    if let Some(config) = &plan.stride {
        let arena = allocate(
            Bytes(config.arena_bytes()),
            m.pages,
            &mut settings,
            &mut warnings,
        )?;
        let (result, found) = stride::measure(config, &arena, &timer, &machine, &progress);
        experiments.stride = Some(result);
        warnings.extend(found.into_iter().map(Warning::from));
    }

    if let Some(config) = &plan.tlb {
        let (result, found) = tlb::measure(config, &timer, &machine, &progress)?;
        warnings.extend(found.into_iter().map(Warning::from));
        experiments.tlb = Some(result);
    }
    if let Some(config) = &plan.numa {
        let result = numa::measure(config, &machine, &timer, &progress)?;
        warnings.extend(
            WarningKind::not_concurrent("NUMA cell", result.read_overlap.iter().flatten().copied())
                .map(Warning::from),
        );
        experiments.numa = Some(result);
    }
    if let (Some(latency), Some(tlb), Some(pages)) = (
        experiments.latency.as_mut(),
        &experiments.tlb,
        &settings.pages_obtained,
    ) {
        if let Some(dram) = latency.dram.as_mut() {
            // The latency buffer's page size: huge when most of it got huge pages.
            let page = if pages.huge_fraction >= 0.9 {
                pages.page_bytes.max(2 << 20)
            } else {
                4096
            };
            dram.tlb_measured_ns = tlb::tlb_ns_at(tlb, page, dram.bytes / page);
        }
    }
    warnings.extend(plan.skipped.iter().map(|s| {
        Warning::from(WarningKind::Skipped {
            experiment: s.experiment.into(),
            reason: s.reason.into(),
        })
    }));
    if let Some(config) = &plan.loaded {
        let arena = allocate(
            Bytes(config.chase_bytes),
            m.pages,
            &mut settings,
            &mut warnings,
        )?;
        let (result, found) =
            loaded::measure(config, &arena, &timer, machine.core_hz_estimate, &progress)?;
        warnings.extend(found.into_iter().map(Warning::from));
        for cpu in &result.injector_cpus {
            if !settings.cpus.contains(cpu) {
                settings.cpus.push(*cpu);
            }
        }
        experiments.loaded = Some(result);
    }
    if let Some(config) = &plan.mlp {
        let arena = allocate(
            Bytes(config.arena_bytes()),
            m.pages,
            &mut settings,
            &mut warnings,
        )?;
        experiments.mlp = Some(mlp::measure(
            config,
            &arena,
            &timer,
            machine.core_hz_estimate,
            &progress,
        ));
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(config) = &plan.rob {
        crate::kernels::jit::probe().map_err(|e| {
            UsageError::Unsupported(format!(
                "rob generates machine code at run time and could not map executable memory \
                 ({e}); a security policy (SELinux, PaX, a noexec container) may forbid it"
            ))
        })?;
        let arena = allocate(
            Bytes(config.chase_bytes),
            m.pages,
            &mut settings,
            &mut warnings,
        )?;
        experiments.rob = Some(rob::measure(
            config,
            &arena,
            &timer,
            machine.core_hz_estimate,
            &progress,
        ));
    }

    if let Some(summary) = reservation.as_ref().and_then(HugepageReservation::summary) {
        settings.sampling.push_str(&format!("; {summary}"));
    }
    drop(reservation);
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
    let mut text = String::new();
    match plan.command {
        CommandKind::Info => text.push_str(&report::terminal_old::machine(&report.machine)),
        CommandKind::Run => text.push_str(&report::terminal_old::machine_summary(&report.machine)),
        _ => {}
    }
    if let Some(stat) = &report.stat {
        text.push_str(&report::terminal_old::stat(stat));
    }
    text.push_str(&report::terminal_old::experiments(
        &report.experiments,
        plan.print_points,
    ));
    text.push_str(&report::terminal_old::settings_and_warnings(report));

    let outputs = &plan.outputs;
    let mut written = Vec::new();
    if let Some(target) = &outputs.json {
        target.write(&report::json::serialize(report))?;
        written.push(target.clone());
    }
    if let Some(target) = &outputs.csv {
        target.write(&report::csv_old::serialize(report))?;
        written.push(target.clone());
    }
    if let Some(target) = &outputs.html {
        target.write(&report::html_old::serialize(report))?;
        written.push(target.clone());
    }
    let files: Vec<String> = written
        .iter()
        .filter(|t| !t.is_stdout())
        .map(|t| t.to_string())
        .collect();
    if !files.is_empty() {
        text.push_str(&format!("\n Wrote {}\n", files.join(", ")));
    }
    // stat's table goes to stderr like perf stat's: stdout belongs to the command.
    if outputs.uses_stdout() || report.stat.is_some() {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    Ok(())
}
