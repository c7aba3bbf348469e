//! Latency under load: one pinned thread chases pointers through DRAM while injector
//! threads on the other CPUs stream a traffic mix with a delay between lines; sweeping the
//! delay from 0 (full load) to an idle level traces latency against bandwidth, as Intel
//! MLC's --loaded_latency does. The knee is found from the curve.
//!
//! With `--membind NODE` the chase's and every injector's buffer are bound to one NUMA
//! node (a CXL or HBM node without CPUs included), so that node's curve can sit beside
//! local DRAM's; a sample of each buffer's pages is checked to be there.

pub mod figures;
#[cfg(any(test, feature = "test-support"))]
pub mod samples;
pub mod view;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::experiments::chase_timing::ChaseCursor;
use crate::experiments::shared::membind::{share_on_node, MemoryBinding};
use crate::kernels::chase::UNROLL;
use crate::kernels::injector::{self, Mix, LINE};
use crate::kernels::permutation::{build_chase, ChaseOrder};
use crate::platform::affinity;
use crate::platform::arena::{Arena, PagePolicy};
use crate::platform::cpu_time::{self, Concurrency, ThreadClock, MIN_OVERLAP};
use crate::platform::preemption::PreemptionWatch;
use crate::platform::timer::Timer;
use crate::session::progress::Progress;
use crate::session::warnings::WarningKind;
use crate::stats::summary::{median, Summary};
use crate::units::Bytes;

/// Intel MLC's default delays (core cycles), from full load to nearly idle.
const DEFAULT_DELAYS: [u64; 19] = [
    0, 2, 8, 15, 50, 100, 200, 300, 400, 500, 700, 1000, 1300, 1700, 2500, 3500, 5000, 9000, 20000,
];

/// The delays of the quick curve (`--quick` and `memscope run`).
const QUICK_DELAYS: [u64; 10] = [0, 15, 100, 300, 500, 1000, 1700, 3500, 9000, 20000];

/// What to measure.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub mixes: Vec<Mix>,
    /// Injector thread counts (each at most `injector_cpus.len()`).
    pub thread_counts: Vec<usize>,
    pub delays: Vec<u64>,
    /// The latency thread's CPU (the caller's thread, already pinned there).
    pub latency_cpu: usize,
    /// Injector CPUs, in the order threads take them.
    pub injector_cpus: Vec<usize>,
    pub chase_bytes: u64,
    /// Window of the page-local chase order, bytes.
    pub window_bytes: usize,
    pub injector_bytes: u64,
    /// `--membind`: the node the chase's and the injectors' buffers are bound to.
    pub membind: Option<MemoryBinding>,
    pub pages: PagePolicy,
    pub repetitions: usize,
    pub trial_ns: f64,
    pub seed: u64,
}

/// `experiments.loaded` of the report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LoadedResult {
    /// Latency of the chase with every injector stopped (no delay at all: idle), ns.
    pub idle_ns: f64,
    pub idle_cycles: f64,
    /// Highest total bandwidth of the reference curve (see `reference`), decimal GB/s.
    pub peak_gb_per_s: f64,
    /// Where latency leaves its idle level on the reference curve; None when it never
    /// does (the injectors could not load memory enough to matter).
    pub knee: Option<Knee>,
    /// The curve the top-level figures come from: "<mix>, <threads> injector(s)".
    pub reference: String,
    /// One row per mix × injector count × delay, in the order measured.
    pub rows: Vec<LoadedRow>,
    /// Idle, peak and knee of every mix × injector-count curve.
    pub curves: Vec<LoadedCurve>,
    /// Working set of the latency chase (page-local random order), bytes.
    pub chase_bytes: u64,
    /// Pages per window of the page-local chase order.
    pub chase_window_pages: u64,
    /// Working set of each injector thread, bytes.
    pub injector_bytes: u64,
    pub latency_cpu: usize,
    pub injector_cpus: Vec<usize>,
    /// Bytes per line, for Little's law.
    pub line_bytes: u64,
    /// `--membind`: the node the chase's and every injector's buffer were bound to, and
    /// where their pages were found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub membind: Option<MemoryBinding>,
}

/// The knee of a latency-vs-bandwidth curve: the last point still at the idle level.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Knee {
    /// Injector delay of the knee point, core cycles.
    pub delay: u64,
    pub gb_per_s: f64,
    pub latency_ns: f64,
    /// `gb_per_s` as a percentage of the curve's peak bandwidth.
    pub pct_of_peak: f64,
}

/// One point of a loaded-latency curve.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadedRow {
    /// Traffic mix of the injectors: "read", "2:1", "1:1" or "write-nt".
    pub mix: Mix,
    /// Injector threads (the latency thread is not counted).
    pub threads: usize,
    /// Delay between the injectors' lines, core cycles (dependent adds).
    pub delay_cycles: u64,
    /// Total bandwidth: injectors plus the latency thread's own lines, decimal GB/s.
    pub gb_per_s: f64,
    /// The injectors' part of it.
    pub injector_gb_per_s: f64,
    /// Median load-to-use latency of the chase, ns.
    pub latency_ns: f64,
    pub latency_cycles: f64,
    /// Spread of the latency trials (1.4826·MAD/median), percent.
    pub spread_pct: f64,
    /// Little's law: lines in flight = bandwidth × latency / line size.
    pub concurrency: f64,
    /// How much the injectors ran during the latency trials: the median over the trials
    /// of the injectors' CPU time ÷ (injectors × the trial's length). Trials below 0.9 are
    /// taken again; a row still below it is flagged (`injectors_concurrent` false): its
    /// latency was not measured under the load of every injector.
    #[serde(default = "cpu_time::whole")]
    pub injector_overlap: f64,
    #[serde(default = "cpu_time::ran_together")]
    pub injectors_concurrent: bool,
}

/// Summary of one mix × injector-count curve.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadedCurve {
    pub mix: Mix,
    pub threads: usize,
    pub peak_gb_per_s: f64,
    /// Latency at the highest load (the smallest delay), ns.
    pub loaded_ns: f64,
    pub knee: Option<Knee>,
}

/// Injector bandwidth at delay 0 below which the injectors cannot have been running:
/// one thread streaming reads moves several GB/s from DRAM on any machine memscope knows.
const STARVED_GB_PER_S: f64 = 1.0;

/// Trials of one setting that may be retaken because the latency thread was preempted or
/// the injectors were off their CPUs.
const MAX_RETRIES: usize = 20;

/// How long the injectors run at a new setting before the latency trials start.
const SETTLE_NS: f64 = 3e6;

/// One injector's progress, on its own cache lines: the epoch of the setting it runs and
/// the steps it has completed at that setting.
#[repr(align(128))]
#[derive(Default)]
struct StepCounter {
    steps: AtomicU64,
    epoch: AtomicU64,
}

/// What the latency thread tells the injectors; every change bumps `epoch`.
struct Control {
    epoch: AtomicU64,
    /// 0: park, 1: run, 2: exit.
    state: AtomicU64,
    mix: AtomicUsize,
    delay: AtomicU64,
    /// Injectors with an index below this run; the others park.
    active: AtomicUsize,
    steps: Vec<StepCounter>,
    /// Each injector's CPU-time clock, published before it counts itself ready.
    clocks: Mutex<Vec<Option<ThreadClock>>>,
    /// With `--membind`, each injector's share of sampled pages on the node.
    placement: Mutex<Vec<Option<f64>>>,
    ready: AtomicUsize,
    failed: Mutex<Option<UsageError>>,
}

const PARK: u64 = 0;
const RUN: u64 = 1;
const EXIT: u64 = 2;

impl Control {
    /// For `injectors` injectors, all parked.
    fn parked(injectors: usize) -> Control {
        Control {
            epoch: AtomicU64::new(0),
            state: AtomicU64::new(PARK),
            mix: AtomicUsize::new(0),
            delay: AtomicU64::new(0),
            active: AtomicUsize::new(0),
            steps: (0..injectors).map(|_| StepCounter::default()).collect(),
            clocks: Mutex::new(vec![None; injectors]),
            placement: Mutex::new(Vec::new()),
            ready: AtomicUsize::new(0),
            failed: Mutex::new(None),
        }
    }

    fn set(&self, state: u64, mix: Mix, delay: u64, active: usize) {
        let mix_index = Mix::ALL.iter().position(|&m| m == mix).unwrap_or(0);
        self.state.store(state, Ordering::Relaxed);
        self.mix.store(mix_index, Ordering::Relaxed);
        self.delay.store(delay, Ordering::Relaxed);
        self.active.store(active, Ordering::Relaxed);
        self.epoch.fetch_add(1, Ordering::Release);
    }

    fn total_steps(&self, active: usize) -> Vec<u64> {
        self.steps[..active]
            .iter()
            .map(|c| c.steps.load(Ordering::Relaxed))
            .collect()
    }

    /// Whether the first `active` injectors have all started on the current setting.
    fn started(&self, active: usize) -> bool {
        let epoch = self.epoch.load(Ordering::Acquire);
        self.steps[..active]
            .iter()
            .all(|c| c.epoch.load(Ordering::Acquire) == epoch)
    }
}

/// An injector thread: pin, map and first-touch its own buffer, then follow the control.
fn injector(worker: usize, cpu: usize, config: &LoadedConfig, control: &Control) {
    let node = config.membind.as_ref().map(|b| b.node);
    let arena = affinity::pin_or_explain(cpu, &config.injector_cpus)
        .and_then(|_| Arena::new_on_node(Bytes(config.injector_bytes), config.pages, node));
    if let (Ok(arena), Some(node)) = (&arena, node) {
        let share = share_on_node(arena, node);
        control.placement.lock().expect("placement").push(share);
    }
    let arena = match arena {
        Ok(arena) => Some(arena),
        Err(error) => {
            control
                .failed
                .lock()
                .expect("error slot")
                .get_or_insert(error);
            None
        }
    };
    control.clocks.lock().expect("clock slots")[worker] = ThreadClock::of_current_thread();
    control.ready.fetch_add(1, Ordering::AcqRel);
    let Some(arena) = arena else { return };
    let mut sink = 0u64;
    loop {
        let epoch = control.epoch.load(Ordering::Acquire);
        let state = control.state.load(Ordering::Relaxed);
        if state == EXIT {
            break;
        }
        let active = control.active.load(Ordering::Relaxed);
        if state == RUN && worker < active {
            let mix = Mix::ALL[control.mix.load(Ordering::Relaxed)];
            let delay = control.delay.load(Ordering::Relaxed);
            let counter = &control.steps[worker];
            counter.steps.store(0, Ordering::Relaxed);
            counter.epoch.store(epoch, Ordering::Release);
            let counter = &counter.steps;
            let keep_going = || control.epoch.load(Ordering::Relaxed) == epoch;
            // SAFETY: the arena is page aligned and owned by this thread.
            sink ^= unsafe {
                injector::inject(
                    arena.as_ptr(),
                    arena.len(),
                    mix,
                    delay,
                    counter,
                    &keep_going,
                )
            };
        } else {
            // Parked: spin on the control line (no memory traffic) until it changes.
            let mut spins = 0u32;
            while control.epoch.load(Ordering::Acquire) == epoch {
                std::hint::spin_loop();
                spins = spins.saturating_add(1);
                if spins > 1 << 20 {
                    std::thread::yield_now();
                }
            }
        }
    }
    std::hint::black_box(sink);
}

/// The latency thread's view of one setting: trials of latency (ns per load), of the
/// injectors' bandwidth over the same intervals (decimal GB/s) and of how much of those
/// intervals the injectors ran.
struct Samples {
    latency_ns: Vec<f64>,
    injector_gb_per_s: Vec<f64>,
    overlaps: Vec<f64>,
}

/// The CPU time of each injector so far, ns (None when any clock cannot be read).
fn injector_cpu_ns(clocks: &[Option<ThreadClock>]) -> Option<Vec<u64>> {
    clocks
        .iter()
        .map(|c| c.and_then(ThreadClock::now_ns))
        .collect()
}

/// Times `repetitions` chase trials of `iterations` × UNROLL loads while `active`
/// injectors run (or none), reading the injectors' step counters around each trial.
#[allow(clippy::too_many_arguments)]
fn sample(
    control: &Control,
    clocks: &[Option<ThreadClock>],
    active: usize,
    mix: Mix,
    cursor: &mut ChaseCursor,
    iterations: usize,
    repetitions: usize,
    timer: &Timer,
) -> Samples {
    let mut latency_ns = Vec::with_capacity(repetitions);
    let mut injector_gb_per_s = Vec::with_capacity(repetitions);
    let mut overlaps = Vec::with_capacity(repetitions);
    let mut retries = 0;
    while latency_ns.len() < repetitions {
        let watch = PreemptionWatch::start();
        let cpu_before = injector_cpu_ns(&clocks[..active]);
        let before = control.total_steps(active);
        let ns_per_load = cursor.trial(timer, iterations);
        let after = control.total_steps(active);
        let cpu_after = injector_cpu_ns(&clocks[..active]);
        let ns = (ns_per_load * (iterations * UNROLL) as f64).max(1.0);
        let overlap = match (cpu_before, cpu_after) {
            (Some(b), Some(a)) => {
                let ran: Vec<f64> = a
                    .iter()
                    .zip(&b)
                    .map(|(a, b)| a.saturating_sub(*b) as f64)
                    .collect();
                cpu_time::overlap_in(ns, &ran)
            }
            _ => 1.0,
        };
        // A trial the scheduler interrupted timed someone else's work too, and one whose
        // injectors were off their CPUs was not loaded by all of them: take another.
        if (watch.preempted() || overlap < MIN_OVERLAP) && retries < MAX_RETRIES {
            retries += 1;
            continue;
        }
        let steps: u64 = before
            .iter()
            .zip(&after)
            .map(|(b, a)| a.saturating_sub(*b))
            .sum();
        latency_ns.push(ns_per_load);
        injector_gb_per_s.push(steps as f64 * mix.bytes_per_step() as f64 / ns);
        overlaps.push(overlap);
    }
    Samples {
        latency_ns,
        injector_gb_per_s,
        overlaps,
    }
}

/// Tells the injectors to exit when dropped.
struct ExitOnDrop<'a>(&'a Control);

impl Drop for ExitOnDrop<'_> {
    fn drop(&mut self) {
        self.0.set(EXIT, Mix::Read, 0, 0);
    }
}

/// Measures the loaded-latency curves. The caller's thread is the latency thread, pinned
/// to `config.latency_cpu`; `arena` (at least `chase_bytes`) was first-touched there.
pub fn measure(
    config: &LoadedConfig,
    arena: &Arena,
    timer: &Timer,
    core_hz: Option<f64>,
    progress: &Progress,
) -> Result<(LoadedResult, Vec<WarningKind>), UsageError> {
    let to_cycles = |ns: f64| core_hz.map_or(f64::NAN, |hz| ns * hz / 1e9);
    let injectors = config.thread_counts.iter().copied().max().unwrap_or(1);
    let cpus = &config.injector_cpus[..injectors.min(config.injector_cpus.len())];
    let slots = (config.chase_bytes.min(arena.len() as u64) / LINE as u64) as usize;
    let order = ChaseOrder::PageLocal {
        window_bytes: config.window_bytes,
    };
    // SAFETY: the slots lie inside the arena, which is page aligned.
    // The arena outlives the cursor.
    let mut cursor =
        unsafe { ChaseCursor::new(build_chase(arena.as_ptr(), slots, LINE, order, config.seed)) };
    let control = Control::parked(cpus.len());
    let points = config.mixes.len() * config.thread_counts.len() * config.delays.len() + 2;
    progress.start("loaded latency", points as u64);

    let result = std::thread::scope(|scope| {
        for (worker, &cpu) in cpus.iter().enumerate() {
            let control = &control;
            scope.spawn(move || injector(worker, cpu, config, control));
        }
        // Whatever happens below, the injectors must exit for the scope to end.
        let _exit = ExitOnDrop(&control);
        while control.ready.load(Ordering::Acquire) < cpus.len() {
            std::thread::yield_now();
        }
        if let Some(error) = control.failed.lock().expect("error slot").take() {
            return Err(error);
        }
        let clocks = control.clocks.lock().expect("clock slots").clone();

        // Size the trials from the idle chase.
        cursor.run_for(timer, SETTLE_NS);
        let iterations = cursor.iterations_for(timer, config.trial_ns);
        let mut sample_at = |active, mix, cursor: &mut ChaseCursor| {
            sample(
                &control,
                &clocks,
                active,
                mix,
                cursor,
                iterations,
                config.repetitions,
                timer,
            )
        };

        let mut idle = sample_at(0, Mix::Read, &mut cursor).latency_ns;
        progress.advance();

        let rows = loaded_rows(
            config,
            &control,
            &mut cursor,
            (timer, progress),
            &mut sample_at,
            to_cycles,
        );
        // Idle again at the end: the idle figure is the median of both visits.
        control.set(PARK, Mix::Read, 0, 0);
        cursor.run_for(timer, SETTLE_NS);
        idle.extend(sample_at(0, Mix::Read, &mut cursor).latency_ns);
        progress.advance();
        Ok((rows, median(&idle)))
    });
    progress.finish();
    std::hint::black_box(cursor.position());
    let (rows, idle_ns) = result?;

    let warnings = warnings_of(&rows);
    let curves = summarize_curves(&rows);
    let reference = reference_curve(&curves);
    let result = LoadedResult {
        idle_ns,
        idle_cycles: to_cycles(idle_ns),
        peak_gb_per_s: reference.as_ref().map_or(0.0, |c| c.peak_gb_per_s),
        knee: reference.as_ref().and_then(|c| c.knee.clone()),
        reference: reference.map_or_else(String::new, |c| curve_name(c.mix, c.threads)),
        rows,
        curves,
        chase_bytes: (slots * LINE) as u64,
        chase_window_pages: (config.window_bytes / 4096) as u64,
        injector_bytes: config.injector_bytes,
        latency_cpu: config.latency_cpu,
        injector_cpus: cpus.to_vec(),
        line_bytes: LINE as u64,
        membind: config.membind.clone().map(|binding| {
            let chase = share_on_node(arena, binding.node);
            let injectors = control.placement.into_inner().expect("placement");
            binding.placed(std::iter::once(chase).chain(injectors))
        }),
    };
    Ok((result, warnings))
}

/// Every setting's point: each injector count × mix × delay, the injectors set running
/// and settled before `sample_at` samples the chase.
fn loaded_rows(
    config: &LoadedConfig,
    control: &Control,
    cursor: &mut ChaseCursor,
    (timer, progress): (&Timer, &Progress),
    sample_at: &mut dyn FnMut(usize, Mix, &mut ChaseCursor) -> Samples,
    to_cycles: impl Fn(f64) -> f64,
) -> Vec<LoadedRow> {
    let mut rows = Vec::new();
    for &threads in &config.thread_counts {
        for &mix in &config.mixes {
            for &delay in &config.delays {
                progress.message(&format!("{} × {threads}, delay {delay}", mix.name()));
                control.set(RUN, mix, delay, threads);
                // Wait until every active injector has started on this setting.
                while !control.started(threads) {
                    std::hint::spin_loop();
                }
                cursor.run_for(timer, SETTLE_NS);
                let samples = sample_at(threads, mix, cursor);
                rows.push(row_of(&samples, (mix, threads, delay), &to_cycles));
                progress.advance();
            }
        }
    }
    rows
}

/// One point of a curve from its samples.
fn row_of(
    samples: &Samples,
    (mix, threads, delay): (Mix, usize, u64),
    to_cycles: impl Fn(f64) -> f64,
) -> LoadedRow {
    let summary = Summary::of(&samples.latency_ns).expect("trials");
    let concurrency = Concurrency::of(&samples.overlaps);
    let injector_gb = median(&samples.injector_gb_per_s);
    let latency_ns = summary.median;
    let gb_per_s = injector_gb + LINE as f64 / latency_ns;
    LoadedRow {
        mix,
        threads,
        delay_cycles: delay,
        gb_per_s,
        injector_gb_per_s: injector_gb,
        latency_ns,
        latency_cycles: to_cycles(latency_ns),
        spread_pct: summary.spread_pct(),
        concurrency: gb_per_s * latency_ns / LINE as f64,
        injector_overlap: concurrency.overlap,
        injectors_concurrent: concurrency.concurrent,
    }
}

/// Injectors that could not keep up, and points where they did not run at once.
fn warnings_of(rows: &[LoadedRow]) -> Vec<WarningKind> {
    (starved_injectors(rows).into_iter())
        .chain(WarningKind::not_concurrent(
            "loaded-latency point",
            rows.iter().map(|r| r.injector_overlap),
        ))
        .collect()
}

/// The curve the peak and the knee are read from: reads with the most injectors, else the
/// curve with the most.
fn reference_curve(curves: &[LoadedCurve]) -> Option<LoadedCurve> {
    (curves.iter())
        .filter(|c| c.mix == Mix::Read)
        .max_by_key(|c| c.threads)
        .or_else(|| curves.iter().max_by_key(|c| c.threads))
        .cloned()
}

fn curve_name(mix: Mix, threads: usize) -> String {
    format!(
        "{mix}, {threads} injector{}",
        if threads == 1 { "" } else { "s" }
    )
}

/// The curves whose injectors hardly moved any data at delay 0 (their CPUs were taken by
/// another process), as a warning.
fn starved_injectors(rows: &[LoadedRow]) -> Option<WarningKind> {
    let starved: Vec<String> = rows
        .iter()
        .filter(|r| r.delay_cycles == 0 && r.injector_gb_per_s < STARVED_GB_PER_S)
        .map(|r| curve_name(r.mix, r.threads))
        .collect();
    (!starved.is_empty()).then(|| WarningKind::InjectorsStarved(starved.join("; ")))
}

/// Peak, loaded latency and knee of each mix × thread-count curve, in measuring order.
fn summarize_curves(rows: &[LoadedRow]) -> Vec<LoadedCurve> {
    let mut keys: Vec<(Mix, usize)> = Vec::new();
    for row in rows {
        let key = (row.mix, row.threads);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.into_iter()
        .map(|(mix, threads)| {
            let curve: Vec<&LoadedRow> = rows
                .iter()
                .filter(|r| r.mix == mix && r.threads == threads)
                .collect();
            let peak = curve.iter().map(|r| r.gb_per_s).fold(0.0, f64::max);
            let loaded = curve
                .iter()
                .min_by_key(|r| r.delay_cycles)
                .map_or(f64::NAN, |r| r.latency_ns);
            let bandwidth: Vec<f64> = curve.iter().map(|r| r.gb_per_s).collect();
            let latency: Vec<f64> = curve.iter().map(|r| r.latency_ns).collect();
            let knee = find_knee(&bandwidth, &latency).map(|i| Knee {
                delay: curve[i].delay_cycles,
                gb_per_s: curve[i].gb_per_s,
                latency_ns: curve[i].latency_ns,
                pct_of_peak: 100.0 * curve[i].gb_per_s / peak,
            });
            LoadedCurve {
                mix,
                threads,
                peak_gb_per_s: peak,
                loaded_ns: loaded,
                knee,
            }
        })
        .collect()
}

/// The smallest rise above the idle level that counts as latency leaving it.
const KNEE_MIN_RISE: f64 = 0.10;

/// The largest: however noisy the light-load points (on a shared VM they were seen to split
/// into ~100 and ~130 ns groups, a ±64% tolerance), latency this far above idle has left it.
const KNEE_MAX_RISE: f64 = 0.25;

/// The knee of a latency-vs-bandwidth curve: the index of the last point still at the idle
/// level, i.e. the highest-bandwidth point after which every point (by bandwidth) is more
/// than the tolerance above idle. The idle level is the median latency of the points below
/// a quarter of the peak bandwidth (at least the three least loaded ones); the tolerance is
/// three times their relative noise, within KNEE_MIN_RISE … KNEE_MAX_RISE. A point above
/// the tolerance followed by one within it is noise, not the knee. None when the most
/// loaded point is still at the idle level, or with fewer than four points.
fn find_knee(bandwidth: &[f64], latency: &[f64]) -> Option<usize> {
    let mut order: Vec<usize> = (0..bandwidth.len().min(latency.len()))
        .filter(|&i| bandwidth[i].is_finite() && latency[i].is_finite() && latency[i] > 0.0)
        .collect();
    if order.len() < 4 {
        return None;
    }
    order.sort_by(|&a, &b| bandwidth[a].total_cmp(&bandwidth[b]));
    let peak = bandwidth[*order.last().expect("non-empty")];
    let light = order
        .iter()
        .take_while(|&&i| bandwidth[i] <= 0.25 * peak)
        .count()
        .max(3);
    let idle_points: Vec<f64> = order[..light].iter().map(|&i| latency[i]).collect();
    let idle = Summary::of(&idle_points).expect("at least three points");
    let tolerance = (3.0 * idle.spread_pct() / 100.0).clamp(KNEE_MIN_RISE, KNEE_MAX_RISE);
    let above = |i: usize| latency[i] > idle.median * (1.0 + tolerance);
    // The first point of the final run of points above the tolerance.
    let first_above = order.iter().rposition(|&i| !above(i)).map_or(0, |j| j + 1);
    if first_above == order.len() || first_above == 0 {
        return None;
    }
    Some(order[first_above - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Flat at 100 ns up to `knee` GB/s, then rising 4 ns per GB/s; a little noise.
    fn hockey_stick(knee: f64) -> (Vec<f64>, Vec<f64>) {
        let bandwidth: Vec<f64> = (0..20).map(|i| 1.0 + 2.0 * i as f64).collect();
        let latency = bandwidth
            .iter()
            .enumerate()
            .map(|(i, &x)| 100.0 + 4.0 * (x - knee).max(0.0) + if i % 2 == 0 { 0.8 } else { -0.8 })
            .collect();
        (bandwidth, latency)
    }

    #[test]
    fn knee_is_found_where_the_synthetic_curve_bends() {
        for knee in [13.0, 21.0, 29.0] {
            let (bandwidth, latency) = hockey_stick(knee);
            let found = bandwidth[find_knee(&bandwidth, &latency).expect("a knee")];
            assert!((found - knee).abs() <= 2.0, "knee {knee}: found {found}");
        }
    }

    #[test]
    fn knee_ignores_the_order_of_the_rows() {
        let (mut bandwidth, mut latency) = hockey_stick(21.0);
        bandwidth.reverse();
        latency.reverse();
        let found = find_knee(&bandwidth, &latency).expect("a knee");
        assert!((bandwidth[found] - 23.5).abs() <= 2.0);
    }

    #[test]
    fn one_noisy_point_under_load_is_not_the_knee() {
        // The shape measured on a 2-vCPU VM: flat to 5 GB/s, one spike at 13, a dip back
        // near idle at 20, then the rise.
        let bandwidth = [
            0.7, 0.7, 0.8, 0.9, 1.1, 1.4, 1.8, 2.8, 4.8, 13.0, 20.5, 31.8, 32.9,
        ];
        let latency = [
            98.8, 98.3, 96.9, 99.2, 99.7, 104.2, 100.5, 101.3, 102.8, 122.7, 106.8, 121.8, 129.1,
        ];
        let found = find_knee(&bandwidth, &latency).expect("a knee");
        assert_eq!(bandwidth[found], 20.5);
    }

    #[test]
    fn light_points_in_two_groups_do_not_hide_a_rise() {
        // Idle points split into ~100 and ~130 ns (a shared VM), then 199 and 261 ns under
        // load: the rise is the knee, not noise.
        let bandwidth = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 8.0, 14.0, 16.0];
        let latency = [
            100.0, 131.0, 99.0, 129.0, 102.0, 130.0, 111.0, 120.0, 199.0, 261.0,
        ];
        let found = find_knee(&bandwidth, &latency).expect("a knee");
        assert_eq!(bandwidth[found], 8.0);
    }

    #[test]
    fn a_flat_curve_has_no_knee() {
        let bandwidth: Vec<f64> = (0..12).map(|i| i as f64).collect();
        let latency: Vec<f64> = (0..12).map(|i| 100.0 + (i % 3) as f64).collect();
        assert_eq!(find_knee(&bandwidth, &latency), None);
        assert_eq!(find_knee(&[1.0, 2.0], &[100.0, 200.0]), None);
    }

    /// A point of a one-injector curve.
    fn row(mix: Mix, delay: u64, gb: f64, injector: f64, ns: f64) -> LoadedRow {
        LoadedRow {
            mix,
            threads: 1,
            delay_cycles: delay,
            gb_per_s: gb,
            injector_gb_per_s: injector,
            latency_ns: ns,
            latency_cycles: f64::NAN,
            spread_pct: 1.0,
            concurrency: gb * ns / 64.0,
            injector_overlap: 1.0,
            injectors_concurrent: true,
        }
    }

    #[test]
    fn curves_are_summarised_with_peak_and_percent_of_peak() {
        let (bandwidth, latency) = hockey_stick(21.0);
        let rows: Vec<LoadedRow> = (0..)
            .zip(bandwidth.iter().zip(&latency))
            .map(|(i, (&gb, &ns))| row(Mix::Read, 1000 - i * 10, gb, gb, ns))
            .collect();
        let curves = summarize_curves(&rows);
        assert_eq!(curves.len(), 1);
        let knee = curves[0].knee.as_ref().expect("knee");
        assert_eq!(curves[0].peak_gb_per_s, 39.0);
        assert!((knee.pct_of_peak - 100.0 * knee.gb_per_s / 39.0).abs() < 1e-9);
        assert_eq!(curves[0].loaded_ns, *latency.last().unwrap());
    }

    #[test]
    fn mixes_read_and_write_as_their_names() {
        for mix in Mix::ALL {
            let json = format!("\"{}\"", mix.name());
            assert_eq!(serde_json::to_string(&mix).unwrap(), json);
            assert_eq!(serde_json::from_str::<Mix>(&json).unwrap(), mix);
            assert_eq!(mix.to_string(), mix.name());
        }
        let err = serde_json::from_str::<Mix>("\"3:1\"").unwrap_err();
        assert!(err.to_string().contains("3:1"), "{err}");
    }

    #[test]
    fn injectors_that_moved_nothing_at_full_load_are_reported() {
        let row = |mix, delay, injector| row(mix, delay, injector + 0.6, injector, 100.0);
        let busy = [row(Mix::Read, 0, 30.0), row(Mix::Read, 9000, 0.1)];
        assert_eq!(starved_injectors(&busy), None);
        let starved = [
            row(Mix::Read, 0, 30.0),
            row(Mix::TwoToOne, 0, 0.2),
            row(Mix::TwoToOne, 20000, 0.1),
        ];
        let warning = WarningKind::InjectorsStarved("2:1, 1 injector".into());
        assert_eq!(starved_injectors(&starved), Some(warning));
    }
}

pub mod params;
mod run;
