//! What the measuring commands share (the profile, `run`, and each experiment's own
//! subcommand; `info` uses the clock calibration and the machine's warnings): pin,
//! calibrate, reserve huge pages when asked, run the planned experiments through the
//! experiments' registry (`experiments::Configs`), check the headline figures for drift
//! and hand one `Report` to the writer. Not a command room: the rooms below the registry
//! that measure use it. Nothing here measures or formats by itself.

use std::process::ExitCode;

use super::output::{report_document, Outputs, Shown};
use super::{Context, Document};
use crate::error::UsageError;
use crate::experiments::drift::{DriftResult, StableTarget};
use crate::experiments::params::MeasurePlan;
use crate::experiments::{Configs, Results};
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

/// Measures, then builds the document; the measuring commands always exit 0.
pub(super) fn run_measuring(
    plan: MeasuringPlan,
    context: Context,
    machine_view: MachineView,
) -> anyhow::Result<(Document, ExitCode)> {
    let (machine, context) = context.into_machine()?;
    let report = measure(&plan, machine, &Experiments)?;
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

/// What runs a plan's experiments in a session: the experiments themselves, or, in the
/// orchestration's tests, a stand-in that measures nothing and says what happened.
trait Bench {
    /// Every planned experiment, in the registry's order.
    fn measure(&self, configs: &Configs, session: &mut Session) -> anyhow::Result<Results>;

    /// The drift pass over the headline figures (None: nothing to repeat).
    fn drift(
        &self,
        configs: &Configs,
        session: &mut Session,
        results: &Results,
        until: Option<StableTarget>,
    ) -> anyhow::Result<Option<DriftResult>>;
}

/// The real bench: the experiments' registry measures.
struct Experiments;

impl Bench for Experiments {
    fn measure(&self, configs: &Configs, session: &mut Session) -> anyhow::Result<Results> {
        configs.measure(session)
    }

    fn drift(
        &self,
        configs: &Configs,
        session: &mut Session,
        results: &Results,
        until: Option<StableTarget>,
    ) -> anyhow::Result<Option<DriftResult>> {
        crate::experiments::drift::check(configs, session, results, until)
    }
}

/// Pins, calibrates, reserves huge pages when asked, has the bench measure the plan and
/// repeat its headline figures, and turns what the session gathered (disturbed
/// experiments, drift, skipped experiments, pages obtained, CPUs used) into the report.
fn measure(
    plan: &MeasuringPlan,
    mut machine: Machine,
    bench: &dyn Bench,
) -> anyhow::Result<Report> {
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
    let mut experiments = bench.measure(&plan.experiments, &mut session)?;
    // The headline figures once more (or until stable): how far the machine moved.
    let drift = bench.drift(
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
    settings.max_size_bytes = settings.max_size_bytes.max(session.working_set);

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

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::experiments::drift::DriftFigure;
    use crate::experiments::params::{defaults, MeasureArgs};
    use crate::session::conditions::ExperimentConditions;

    /// A bench that measures nothing: the first experiment ran beside a busy task, one
    /// helper CPU was used, and one of two headline figures moved beyond its noise.
    #[derive(Default)]
    struct Fake {
        measured: Cell<usize>,
        repeated: Cell<usize>,
    }

    impl Bench for Fake {
        fn measure(&self, _configs: &Configs, session: &mut Session) -> anyhow::Result<Results> {
            self.measured.set(self.measured.get() + 1);
            if let Some(&helper) = session.machine.allowed_cpus.last() {
                session.used_cpus([helper]);
            }
            session.conditions.records.push(ExperimentConditions {
                experiment: "miss_impact".into(),
                elapsed_s: 1.0,
                other_runnable_mean: Some(1.5),
                other_runnable_max: Some(2.0),
                other_runnable_share_pct: Some(60.0),
                samples: 10,
                tasks: vec!["cc1".into()],
                steal_pct: None,
                disturbed: true,
            });
            Ok(Results::default())
        }

        fn drift(
            &self,
            _configs: &Configs,
            _session: &mut Session,
            _results: &Results,
            _until: Option<StableTarget>,
        ) -> anyhow::Result<Option<DriftResult>> {
            self.repeated.set(self.repeated.get() + 1);
            let figure = |label: &str, after: f64, beyond_noise: bool| DriftFigure {
                key: label.to_lowercase(),
                label: label.into(),
                unit: "ns".into(),
                before: 1.0,
                passes: vec![after],
                drift_pct: (after - 1.0).abs() * 100.0,
                spread_pct: Some(1.0),
                beyond_noise,
            };
            Ok(Some(DriftResult {
                passes: 1,
                elapsed_s: 0.1,
                figures: vec![figure("L1d", 1.004, false), figure("DRAM", 1.25, true)],
                until_stable: None,
            }))
        }
    }

    fn plan(machine: &Machine) -> MeasuringPlan {
        MeasuringPlan {
            name: "latency",
            outputs: Outputs::default(),
            measure: MeasurePlan::resolve(&defaults::<MeasureArgs>(), machine)
                .expect("the default flags plan"),
            experiments: Configs::default(),
            skipped: vec![Skipped {
                experiment: "latency under load",
                reason: "it needs a second CPU",
            }],
            print_points: false,
        }
    }

    #[test]
    fn the_run_turns_what_the_session_gathered_into_the_report() {
        let machine = crate::topology::detect().expect("the machine's topology");
        let fake = Fake::default();
        let report = measure(&plan(&machine), machine.clone(), &fake).expect("a report");
        assert_eq!((fake.measured.get(), fake.repeated.get()), (1, 1));
        let kinds: Vec<&str> = report.warnings.iter().map(|w| w.code.as_str()).collect();
        for kind in ["skipped", "disturbed", "drift"] {
            assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
        }
        let drift = report.warnings.iter().find(|w| w.code == "drift");
        let drift = drift.expect("the drift warning");
        assert!(drift.message.contains("DRAM +25.0%"), "{}", drift.message);
        let disturbed = report.warnings.iter().find(|w| w.code == "disturbed");
        let disturbed = disturbed.expect("the disturbed warning");
        assert!(
            disturbed.message.contains("miss impact"),
            "{}",
            disturbed.message
        );
        assert_eq!(
            report.conditions.len(),
            1,
            "the conditions move into the report"
        );
        assert_eq!(report.settings.command, "latency");
        assert_eq!(report.settings.cpus[0], plan(&machine).measure.cpu);
        let helper = *machine.allowed_cpus.last().expect("a CPU");
        assert!(report.settings.cpus.contains(&helper));
        assert!(report.drift.is_some());
        // The measuring thread is let go again.
        // SAFETY: a zeroed cpu_set_t filled by sched_getaffinity for this thread (pid 0).
        let allowed: Vec<usize> = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
                0
            );
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
                .collect()
        };
        assert_eq!(allowed, machine.allowed_cpus);
    }

    #[test]
    fn a_run_without_trouble_warns_about_nothing_it_measured() {
        struct Quiet;
        impl Bench for Quiet {
            fn measure(&self, _: &Configs, _: &mut Session) -> anyhow::Result<Results> {
                Ok(Results::default())
            }
            fn drift(
                &self,
                _: &Configs,
                _: &mut Session,
                _: &Results,
                _: Option<StableTarget>,
            ) -> anyhow::Result<Option<DriftResult>> {
                Ok(None)
            }
        }
        let machine = crate::topology::detect().expect("the machine's topology");
        let mut quiet = plan(&machine);
        quiet.skipped.clear();
        let report = measure(&quiet, machine, &Quiet).expect("a report");
        let measured = ["skipped", "disturbed", "drift"];
        assert!(
            report
                .warnings
                .iter()
                .all(|w| !measured.contains(&w.code.as_str())),
            "{:?}",
            report.warnings
        );
        assert!(report.drift.is_none() && report.conditions.is_empty());
    }
}
