//! Bandwidth: GB/s of every registry kernel (read, write, non-temporal write, copy, triad,
//! read:write mixes) at a working set inside each level of the hierarchy, for each thread
//! count, and optionally against working-set size (`--sweep`).
//!
//! Bytes are counted from the kernel registry (bytes read + bytes written per pass, no
//! read-for-ownership), so every kernel is counted the same way; GB/s are decimal (10^9
//! bytes per second), like STREAM and Intel MLC. Each thread has its own arrays, in its
//! own arena, first-touched by itself; all threads start each trial together and a trial
//! lasts from the first thread's start to the last one's end (its union interval). A row
//! whose threads did not run together (overlap below 90% in every trial) is flagged.
//!
//! With `--membind NODE` every array (and the vector-width probe's) is bound to one NUMA
//! node, CPU-less ones included, and each thread checks a sample of its pages landed
//! there. On a machine of several nodes the default thread counts are a short ladder in
//! whole nodes (`params::thread_ladder`), and past 16 threads each thread's DRAM working
//! set shrinks so that all of them together stay near 16 one-thread sets
//! (`params::dram_bytes`):
//! the table's memory and time grow with the counts, not with the CPUs.

pub mod charts;
pub mod figures;
#[cfg(any(test, feature = "test-support"))]
pub mod samples;
pub mod tables;
pub mod view;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::experiments::params::{dram_bytes, ThreadLadder};
use crate::experiments::shared::level::Level;
use crate::experiments::shared::membind::MemoryBinding;
use crate::experiments::shared::sizing::{
    level_working_sets, round_to_granule, sweep_sizes, thread_share,
};
use crate::kernels::stream::{self, Isa, KernelSpec, GRANULE};
use crate::platform::arena::{Arena, PagePolicy};
use crate::platform::cpu_time;
use crate::platform::team::{run_jobs_on, Buffers, TeamJob, TrialPolicy, SETTLED_TRIALS};
use crate::platform::timer::Timer;
use crate::session::progress::Progress;
use crate::stats::Summary;
use crate::topology::Machine;
use crate::units::{Bytes, KIB, MIB};

/// `experiments.bandwidth` of the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BandwidthResult {
    /// Vector instruction set(s) of the kernels: "avx2", or "avx512 in caches, avx2 beyond".
    pub isa: String,
    /// How it was chosen.
    pub isa_choice: IsaChoice,
    /// The per-level table: every kernel at every level, for every thread count.
    pub rows: Vec<BandwidthRow>,
    /// Bandwidth against working-set size (with `--sweep`, and in `run`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<BandwidthRow>,
    /// The CPUs the threads ran on, in the order they were used.
    pub cpus: Vec<usize>,
    /// The default thread counts of a machine of several NUMA nodes, when they ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ladder: Option<ThreadLadder>,
    /// `--membind`: the node every array was bound to, and where the pages were found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub membind: Option<MemoryBinding>,
    /// `write-zero` zeroed whole blocks of this many bytes with `DC ZVA` (aarch64, NEON
    /// or SVE, where the CPU allows it); None: it stored zeros, or did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_block_bytes: Option<u64>,
}

/// A kernel of the registry (`stream::KERNELS`), written in reports by its name: a report
/// naming any other kernel is refused when read, naming the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel(pub &'static KernelSpec);

impl Kernel {
    /// The registry's kernel of this name ("read", "mix-2:1"), any case.
    pub fn find(name: &str) -> Option<Kernel> {
        stream::find(name).map(Kernel)
    }

    pub fn name(self) -> &'static str {
        self.0.name
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Kernel {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Kernel {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Kernel, D::Error> {
        let name = String::deserialize(deserializer)?;
        // Exact names only: the report wrote the registry's spelling.
        stream::KERNELS
            .iter()
            .find(|k| k.name == name)
            .map(Kernel)
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "unknown kernel '{name}', expected one of: {}",
                    stream::names()
                ))
            })
    }
}

/// One measured point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BandwidthRow {
    pub kernel: Kernel,
    /// Streams read and written per element ("3:1" has read_parts 3, write_parts 1).
    pub read_parts: usize,
    pub write_parts: usize,
    pub nontemporal: bool,
    pub isa: Isa,
    pub threads: usize,
    /// Working set of one thread asked for (the table column or sweep point).
    pub working_set_bytes: u64,
    /// Working set of one thread as measured: all of the kernel's arrays together, each
    /// rounded down to whole granules (a few % below `working_set_bytes` for kernels with
    /// three or four arrays).
    pub bytes_per_thread: u64,
    /// "L1d", "L2", "L3", "DRAM" for the per-level table; "custom" for `--sizes`; for the
    /// sweep, the level the working set falls in by the OS cache sizes.
    pub level: Level,
    /// Decimal GB/s of all threads together (bytes read + written by the kernel).
    pub gb_per_s: f64,
    /// Bytes per core cycle per thread (GB/s ÷ threads ÷ core GHz); null without a clock.
    pub bytes_per_cycle: Option<f64>,
    pub spread_pct: f64,
    /// Timed trials behind the median.
    pub trials: usize,
    /// How much the threads ran together: the median, over the trials behind the row, of
    /// the threads' CPU time ÷ (threads × the trial's union interval); for one thread, the
    /// share of the trial it was on its CPU.
    #[serde(default = "cpu_time::whole")]
    pub overlap: f64,
    /// False when no trial reached 90% overlap: the figure is then the bytes of every
    /// attempt over its union interval, what the threads got, not the bandwidth of threads
    /// running together (or of one thread running undisturbed).
    #[serde(default = "cpu_time::ran_together")]
    pub concurrent: bool,
    /// Trials run for the row, the ones re-run for a low overlap included.
    #[serde(default)]
    pub attempts: usize,
    /// Trials the row was planned to keep (`--repetitions`); 0 in reports from before it
    /// was recorded.
    #[serde(default)]
    pub planned_trials: usize,
    /// Fewer trials kept than a row needs (threads that ran together in too few attempts;
    /// a row whose first `SETTLED_TRIALS` agree stops there and is not thin): the median
    /// rests on thin evidence and its spread says little (none from one trial).
    #[serde(default)]
    pub few_trials: bool,
}

impl BandwidthRow {
    /// "1 of 9 planned trials kept (27 attempts)" when the row kept fewer than planned.
    pub(crate) fn few_trials_text(&self) -> Option<String> {
        self.few_trials.then(|| {
            format!(
                "{} of {} planned trials kept ({} attempts)",
                self.trials, self.planned_trials, self.attempts
            )
        })
    }
}

/// Where a row's working set comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Sizes {
    /// One column per level of the hierarchy, sized from the topology.
    Levels,
    /// The given working sets per thread.
    Custom(Vec<u64>),
}

/// What to measure; resolved from the command line by `plan`.
#[derive(Debug, Clone)]
pub struct BandwidthConfig {
    pub kernels: Vec<&'static KernelSpec>,
    /// The instruction set; None: probe for the fastest (`probe_isa`).
    pub isa: Option<Isa>,
    pub thread_counts: Vec<usize>,
    /// The machine's default counts, when they ran and step in whole NUMA nodes.
    pub ladder: Option<ThreadLadder>,
    /// CPUs in the order threads are placed (the measuring CPU of one-thread runs first).
    pub cpus: Vec<usize>,
    /// `--membind`: the node every thread's arrays are bound to.
    pub membind: Option<usize>,
    pub sizes: Sizes,
    /// Kernels and working sets of the size sweep (first thread count only); empty: none.
    pub sweep_kernels: Vec<&'static KernelSpec>,
    pub sweep_sizes: Vec<u64>,
    pub pages: PagePolicy,
    pub repetitions: usize,
    pub trial_ns: f64,
}

impl BandwidthConfig {
    /// The largest arena one of `threads` threads maps: the largest working set plus the
    /// padding that staggers a kernel's arrays (under 64 KiB). The sweep runs at the first
    /// count only.
    fn largest_arena_bytes(&self, machine: &Machine, threads: usize) -> u64 {
        let levels = match &self.sizes {
            Sizes::Levels => columns(machine, threads)
                .into_iter()
                .map(|(_, b)| b)
                .max()
                .unwrap_or(0),
            Sizes::Custom(list) => list.iter().copied().max().unwrap_or(0),
        };
        let first = self.thread_counts.first() == Some(&threads);
        let sweep = (self.sweep_sizes.iter().copied().max())
            .filter(|_| first)
            .unwrap_or(0);
        levels.max(sweep) + 64 * KIB
    }

    /// Bytes all threads map together at each thread count (`threads` × the largest
    /// arena): what the run needs in memory at its largest.
    pub fn footprint(&self, machine: &Machine) -> Vec<(usize, u64)> {
        (self.thread_counts.iter())
            .map(|&t| (t, t as u64 * self.largest_arena_bytes(machine, t)))
            .collect()
    }
}

/// The table's working sets for one of `threads` threads: one inside each cache level
/// (`level_working_sets`) and the DRAM one of `dram_bytes`.
fn columns(machine: &Machine, threads: usize) -> Vec<(Level, u64)> {
    let mut sets = level_working_sets(machine, threads);
    if let Some(dram) = sets.last_mut() {
        dram.1 = dram_bytes(machine, threads);
    }
    sets.into_iter()
        .map(|(name, bytes)| (Level::from(name), bytes))
        .collect()
}

/// Sizes from 4 KiB to `max` with `per_octave` points per doubling, rounded to granules.
fn sweep_working_sets(max: u64, per_octave: u32) -> Vec<u64> {
    sweep_sizes(4 * KIB, max, per_octave, GRANULE as u64)
}

/// The OS level a working set of `bytes` falls in (by the data caches' sizes).
fn level_of(bytes: u64, machine: &Machine, threads: usize) -> Level {
    for cache in machine.data_caches() {
        if bytes <= thread_share(cache, threads) {
            return Level::Cache(cache.name());
        }
    }
    Level::Dram
}

/// One kernel at one working set: the `TeamJob` the thread team runs.
struct KernelJob {
    kernel: &'static KernelSpec,
    isa: Isa,
    /// Bytes of each of the kernel's arrays.
    array_bytes: usize,
}

/// Distance between the starts of a job's arrays: whole pages plus 7.5 KiB. Arrays a few
/// lines apart modulo 4 KiB make loads wait on unrelated stores to the same page offset
/// ("4K aliasing": triad lost a quarter in L1 on Zen 4), and arrays a power of two apart
/// compete for the same DRAM banks; this offset measured best at both ends.
fn array_stride(array_bytes: usize) -> usize {
    array_bytes.next_multiple_of(4096) + 7680
}

impl KernelJob {
    fn arrays(&self, arena: &Arena) -> Vec<*mut u8> {
        let stride = array_stride(self.array_bytes);
        (0..self.kernel.arrays())
            // SAFETY: the arena was sized for arrays() × stride bytes (see arena_bytes).
            .map(|i| unsafe { arena.as_ptr().add(i * stride) })
            .collect()
    }

    /// Arena bytes this job needs.
    fn arena_bytes(kernel: &KernelSpec, array_bytes: usize) -> usize {
        kernel.arrays() * array_stride(array_bytes)
    }
}

impl TeamJob for KernelJob {
    fn prepare(&self, worker: usize, arena: &Arena) {
        for (i, &array) in self.arrays(arena).iter().enumerate() {
            // SAFETY: each array lies inside the arena (arena_bytes) and they do not overlap.
            let slice = unsafe { std::slice::from_raw_parts_mut(array, self.array_bytes) };
            stream::fill_pattern(slice, (worker * 16 + i) as u64 + 1);
        }
        // One untimed pass: caches and TLBs in the state the trials will see.
        self.work(worker, arena, 1);
    }

    fn work(&self, _worker: usize, arena: &Arena, repeats: usize) {
        let arrays = self.arrays(arena);
        // SAFETY: arrays are ALIGN-aligned (the arena is page aligned, strides are
        // multiples of ALIGN), each valid for array_bytes, disjoint; array_bytes is a
        // multiple of GRANULE; the ISA was checked available by the plan.
        let checksum =
            unsafe { stream::run(self.kernel, self.isa, &arrays, self.array_bytes, repeats) };
        std::hint::black_box(checksum);
    }
}

/// How the instruction sets were chosen, for the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IsaChoice {
    /// Instruction set of working sets that fit the caches.
    pub cache_isa: Isa,
    /// Instruction set of working sets beyond the largest cache.
    pub dram_isa: Isa,
    pub chosen_by: ChosenBy,
    /// Per candidate: GB/s of read + copy (mean) in L1 and beyond the caches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probe: Vec<IsaProbe>,
}

/// Who chose the instruction sets, written in reports as "--isa" or "probe".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChosenBy {
    /// The user, with `--isa`.
    #[serde(rename = "--isa")]
    Flag,
    /// memscope, timing the candidates.
    #[serde(rename = "probe")]
    Probe,
}

impl std::fmt::Display for ChosenBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ChosenBy::Flag => "--isa",
            ChosenBy::Probe => "probe",
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IsaProbe {
    pub isa: Isa,
    pub cache_gb_per_s: f64,
    pub dram_gb_per_s: f64,
}

impl IsaChoice {
    pub fn fixed(isa: Isa, chosen_by: ChosenBy) -> IsaChoice {
        IsaChoice {
            cache_isa: isa,
            dram_isa: isa,
            chosen_by,
            probe: Vec::new(),
        }
    }

    /// "avx2", or "avx512 in caches, avx2 beyond" when they differ.
    pub fn summary(&self) -> String {
        // SVE's width is the CPU's, not the instruction set's: say it.
        let named = |isa: Isa| match isa {
            Isa::Sve => format!("sve ({}-bit vectors)", 8 * isa.vector_bytes()),
            _ => isa.to_string(),
        };
        if self.cache_isa == self.dram_isa {
            named(self.cache_isa)
        } else {
            format!(
                "{} in caches, {} beyond",
                named(self.cache_isa),
                named(self.dram_isa)
            )
        }
    }
}

/// Picks the vector width that moves the most bytes, separately for cache-resident and
/// DRAM working sets: the widest is not always the fastest (on Zen 4 the L1 serves 64 B
/// per cycle to 256-bit and 512-bit loads alike, and 128-bit or 256-bit streams reach
/// DRAM faster than 512-bit ones). Times read and copy, best of five passes, in L1 and
/// past the largest cache with every available SIMD instruction set on the calling thread.
pub(crate) fn probe_isa(
    timer: &Timer,
    machine: &Machine,
    pages: PagePolicy,
    node: Option<usize>,
) -> Result<IsaChoice, UsageError> {
    // The SIMD sets this CPU runs (x86's three or aarch64's SVE and NEON), widest first.
    let candidates: Vec<Isa> = Isa::ALL
        .into_iter()
        .filter(|&isa| isa != Isa::Portable && isa.is_available())
        .collect();
    if candidates.len() <= 1 {
        let isa = candidates.first().copied().unwrap_or(Isa::Portable);
        return Ok(IsaChoice::fixed(isa, ChosenBy::Probe));
    }
    let llc = machine.largest_cache_bytes().unwrap_or(32 * MIB);
    let dram_bytes = round_to_granule((2 * llc).max(64 * MIB)) as usize;
    let cache_bytes = 8 * KIB as usize;
    let kernels = [
        stream::find("read").expect("read kernel"),
        stream::find("copy").expect("copy kernel"),
    ];
    let arena = Arena::new_on_node(Bytes((2 * array_stride(dram_bytes)) as u64), pages, node)?;
    // Fill the inputs once (copy's two arrays cover read's one); every timing below starts
    // with an untimed pass of its own so caches and TLBs are in the state it measures.
    for array_bytes in [cache_bytes, dram_bytes] {
        let fill = KernelJob {
            kernel: kernels[1],
            isa: candidates[0],
            array_bytes,
        };
        for (i, &array) in fill.arrays(&arena).iter().enumerate() {
            // SAFETY: the arena holds two arrays of dram_bytes ≥ array_bytes at this stride.
            let slice = unsafe { std::slice::from_raw_parts_mut(array, array_bytes) };
            stream::fill_pattern(slice, i as u64 + 1);
        }
    }
    let rate = |isa: Isa, array_bytes: usize, repeats: usize| -> f64 {
        let mut total = 0.0;
        for &kernel in &kernels {
            let job = KernelJob {
                kernel,
                isa,
                array_bytes,
            };
            job.work(0, &arena, 1);
            let best_ns = (0..5)
                .map(|_| {
                    let t0 = timer.start();
                    job.work(0, &arena, repeats);
                    timer.ticks_to_ns(timer.stop().saturating_sub(t0))
                })
                .fold(f64::INFINITY, f64::min);
            total += kernel.bytes_per_pass(array_bytes) as f64 * repeats as f64 / best_ns;
        }
        total / kernels.len() as f64
    };
    let probe: Vec<IsaProbe> = candidates
        .iter()
        .map(|&isa| IsaProbe {
            isa,
            cache_gb_per_s: rate(isa, cache_bytes, 2000),
            dram_gb_per_s: rate(isa, dram_bytes, 1),
        })
        .collect();
    // Candidates are widest first; a narrower one must beat the best wider one by 3 % to
    // be chosen, so that run-to-run noise does not flip the choice.
    let best = |score: fn(&IsaProbe) -> f64| {
        let mut chosen = &probe[0];
        for candidate in &probe[1..] {
            if score(candidate) > 1.03 * score(chosen) {
                chosen = candidate;
            }
        }
        chosen.isa
    };
    Ok(IsaChoice {
        cache_isa: best(|p| p.cache_gb_per_s),
        dram_isa: best(|p| p.dram_gb_per_s),
        chosen_by: ChosenBy::Probe,
        probe,
    })
}

/// Measures the table (and the sweep) for every thread count.
pub fn measure(
    config: &BandwidthConfig,
    timer: &Timer,
    machine: &Machine,
    progress: &Progress,
) -> Result<BandwidthResult, UsageError> {
    let isa_choice = match config.isa {
        Some(isa) => IsaChoice::fixed(isa, ChosenBy::Flag),
        None => {
            progress.start("choosing the vector width", 1);
            let choice = probe_isa(timer, machine, config.pages, config.membind)?;
            progress.finish();
            choice
        }
    };
    let (cache_isa, dram_isa) = (isa_choice.cache_isa, isa_choice.dram_isa);
    let llc = machine.largest_cache_bytes().unwrap_or(32 * MIB);
    // Working sets beyond the largest cache (per thread's share) run with the DRAM choice.
    let isa_for = |level: &Level, bytes: u64, threads: usize| {
        let beyond = *level == Level::Dram || bytes > llc / threads as u64;
        if beyond {
            dram_isa
        } else {
            cache_isa
        }
    };
    let core_ghz = machine.core_hz_estimate.map(|hz| hz / 1e9);
    let mut rows = Vec::new();
    let mut sweep = Vec::new();
    let mut placement = Vec::new();
    for (t, &threads) in config.thread_counts.iter().enumerate() {
        let columns: Vec<(Level, u64)> = match &config.sizes {
            Sizes::Levels => columns(machine, threads),
            Sizes::Custom(sizes) => sizes.iter().map(|&s| (Level::Custom, s)).collect(),
        };
        let mut points: Vec<(&'static KernelSpec, Level, u64)> = Vec::new();
        for (level, bytes) in &columns {
            for &kernel in &config.kernels {
                points.push((kernel, level.clone(), *bytes));
            }
        }
        let table_len = points.len();
        if t == 0 {
            for &bytes in &config.sweep_sizes {
                for &kernel in &config.sweep_kernels {
                    points.push((kernel, level_of(bytes, machine, threads), bytes));
                }
            }
        }
        let points: Vec<(&'static KernelSpec, Level, u64, Isa)> = points
            .into_iter()
            .map(|(kernel, level, bytes)| {
                let isa = isa_for(&level, bytes, threads);
                (kernel, level, bytes, isa)
            })
            .collect();
        let (measured, shares) =
            measure_points(config, &points, threads, timer, core_ghz, progress)?;
        placement.extend(shares);
        let (table, swept) = measured.split_at(table_len);
        rows.extend_from_slice(table);
        sweep.extend_from_slice(swept);
    }
    let zero_block_bytes = (rows.iter())
        .filter(|r| r.kernel.0.op == stream::Op::Zero)
        .find_map(|r| stream::zero_block(r.isa))
        .map(|bytes| bytes as u64);
    Ok(BandwidthResult {
        isa: isa_choice.summary(),
        isa_choice,
        rows,
        sweep,
        cpus: config.cpus.clone(),
        ladder: config.ladder.clone(),
        membind: (config.membind).map(|node| MemoryBinding::to(node, machine).placed(placement)),
        zero_block_bytes,
    })
}

/// The kernels whose table rows the drift pass measures again: the STREAM-like read,
/// copy and triad, which stand for the rest (re-measuring every mix would double the
/// table's time).
const DRIFT_KERNELS: [&str; 3] = ["read", "copy", "triad"];

/// The drift pass: the table rows of `DRIFT_KERNELS` measured again with at most three
/// trials each, with the ISA they had; (row before, row now).
fn remeasure_rows(
    config: &BandwidthConfig,
    result: &BandwidthResult,
    timer: &Timer,
    machine: &Machine,
    progress: &Progress,
) -> Result<Vec<(BandwidthRow, BandwidthRow)>, UsageError> {
    let core_ghz = machine.core_hz_estimate.map(|hz| hz / 1e9);
    let quick = BandwidthConfig {
        repetitions: config.repetitions.clamp(1, 3),
        ..config.clone()
    };
    let mut pairs = Vec::new();
    for &threads in &config.thread_counts {
        let rows: Vec<&BandwidthRow> = (result.rows.iter())
            .filter(|r| r.threads == threads && DRIFT_KERNELS.contains(&r.kernel.name()))
            .collect();
        let points: Vec<(&'static KernelSpec, Level, u64, Isa)> = rows
            .iter()
            .map(|r| (r.kernel.0, r.level.clone(), r.working_set_bytes, r.isa))
            .collect();
        if points.is_empty() {
            continue;
        }
        let (again, _) = measure_points(&quick, &points, threads, timer, core_ghz, progress)?;
        pairs.extend(rows.into_iter().cloned().zip(again));
    }
    Ok(pairs)
}

fn measure_points(
    config: &BandwidthConfig,
    points: &[(&'static KernelSpec, Level, u64, Isa)],
    threads: usize,
    timer: &Timer,
    core_ghz: Option<f64>,
    progress: &Progress,
) -> Result<(Vec<BandwidthRow>, Vec<Option<f64>>), UsageError> {
    let jobs: Vec<KernelJob> = points
        .iter()
        .map(|&(kernel, _, bytes, isa)| KernelJob {
            kernel,
            isa,
            array_bytes: (bytes as usize / kernel.arrays() / GRANULE).max(1) * GRANULE,
        })
        .collect();
    let arena_bytes = jobs
        .iter()
        .map(|j| KernelJob::arena_bytes(j.kernel, j.array_bytes))
        .max()
        .unwrap_or(4096);
    let cpus: Vec<usize> = config.cpus.iter().copied().take(threads).collect();
    let job_refs: Vec<&dyn TeamJob> = jobs.iter().map(|j| j as &dyn TeamJob).collect();
    progress.start(
        &format!("bandwidth, {threads} thread(s)"),
        jobs.len() as u64,
    );
    let team = run_jobs_on(
        &cpus,
        Buffers {
            bytes: Bytes(arena_bytes as u64),
            pages: config.pages,
            node: config.membind,
        },
        timer,
        TrialPolicy {
            trial_ns: config.trial_ns,
            trials: config.repetitions,
        },
        &job_refs,
        &|_| progress.advance(),
    )?;
    progress.finish();
    let timings = team.timings;

    let rows = points
        .iter()
        .zip(&jobs)
        .zip(&timings)
        .map(|((&(kernel, ref level, working_set, _), job), timing)| {
            let bytes = kernel.bytes_per_pass(job.array_bytes) as f64
                * timing.repeats as f64
                * threads as f64;
            let rates: Vec<f64> = timing.trials_ns.iter().map(|&ns| bytes / ns).collect();
            let summary = Summary::of(&rates).expect("every job has trials");
            let concurrency = timing.concurrency();
            BandwidthRow {
                kernel: Kernel(kernel),
                read_parts: kernel.read_streams,
                write_parts: kernel.write_streams,
                nontemporal: kernel.nontemporal,
                isa: job.isa,
                threads,
                working_set_bytes: working_set,
                bytes_per_thread: (job.array_bytes * kernel.arrays()) as u64,
                level: level.clone(),
                gb_per_s: summary.median,
                bytes_per_cycle: core_ghz.map(|ghz| summary.median / threads as f64 / ghz),
                spread_pct: summary.spread_pct(),
                trials: summary.count,
                overlap: concurrency.overlap,
                concurrent: concurrency.concurrent,
                attempts: timing.attempts,
                planned_trials: config.repetitions,
                // A job may stop at SETTLED_TRIALS agreeing trials: fewer is thin.
                few_trials: summary.count < config.repetitions.min(SETTLED_TRIALS),
            }
        })
        .collect();
    Ok((rows, team.placement))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruction_sets_read_and_write_as_their_names() {
        for isa in Isa::ALL {
            let json = format!("\"{}\"", isa.name());
            assert_eq!(serde_json::to_string(&isa).unwrap(), json);
            assert_eq!(serde_json::from_str::<Isa>(&json).unwrap(), isa);
        }
        let err = serde_json::from_str::<Isa>("\"altivec\"").unwrap_err();
        assert!(err.to_string().contains("altivec"), "{err}");
    }
    use crate::topology::{CacheInfo, CacheKind};

    fn zen4_vm() -> Machine {
        Machine {
            caches: vec![
                CacheInfo::sample(1, CacheKind::Data, 32 * KIB, vec![0]),
                CacheInfo::sample(2, CacheKind::Unified, MIB, vec![0]),
                CacheInfo::sample(3, CacheKind::Unified, 32 * MIB, vec![0, 1]),
            ],
            ..Machine::default()
        }
    }

    #[test]
    fn working_sets_sit_inside_each_level() {
        let one = level_working_sets(&zen4_vm(), 1);
        let want = [
            ("L1d", 16 * KIB),
            ("L2", 512 * KIB),
            ("L3", 16 * MIB),
            ("DRAM", 128 * MIB),
        ];
        assert_eq!(one, want.map(|(name, bytes)| (name.to_string(), bytes)));
        // Two threads share the L3: each gets half of its half.
        let two = level_working_sets(&zen4_vm(), 2);
        assert_eq!(two[2].1, 8 * MIB);
        assert!(two.iter().all(|(_, b)| b % GRANULE as u64 == 0));
    }

    #[test]
    fn threads_that_cannot_run_together_are_flagged_not_doubled() {
        // Two threads pinned to one CPU cannot overlap: the row must say so, and its
        // bandwidth must stay near one thread's (timed by each thread's own duration it
        // came out twice as high).
        let cpu = crate::platform::affinity::allowed_cpus().unwrap()[0];
        let config = BandwidthConfig {
            kernels: vec![stream::find("read").unwrap()],
            isa: Some(Isa::best_available()),
            thread_counts: vec![1, 2],
            ladder: None,
            cpus: vec![cpu, cpu],
            membind: None,
            sizes: Sizes::Custom(vec![16 * KIB]),
            sweep_kernels: vec![],
            sweep_sizes: vec![],
            pages: PagePolicy::Base,
            repetitions: 5,
            trial_ns: 2e6,
        };
        let result = measure(
            &config,
            &Timer::calibrate().0,
            &Machine::default(),
            &Progress::hidden(),
        )
        .unwrap();
        let [one, two] = &result.rows[..] else {
            panic!("{:?}", result.rows)
        };
        assert!(!two.concurrent, "{two:?}");
        assert!(two.overlap < 0.75, "{two:?}");
        // None of its trials ran together: every attempt was made, and all are behind it.
        let attempts = 5 * crate::platform::team::ATTEMPTS_PER_TRIAL;
        assert_eq!((two.attempts, two.trials), (attempts, attempts), "{two:?}");
        assert!(
            two.gb_per_s < 1.5 * one.gb_per_s,
            "2 threads on one CPU {} GB/s, 1 thread {} GB/s",
            two.gb_per_s,
            one.gb_per_s
        );
    }

    #[test]
    fn sweep_points_fall_in_their_levels() {
        let machine = zen4_vm();
        assert_eq!(level_of(16 * KIB, &machine, 1).name(), "L1d");
        assert_eq!(level_of(600 * KIB, &machine, 1).name(), "L2");
        assert_eq!(level_of(20 * MIB, &machine, 1).name(), "L3");
        assert_eq!(level_of(20 * MIB, &machine, 2), Level::Dram);
        let sizes = sweep_working_sets(256 * MIB, 2);
        assert_eq!((sizes[0], sizes[sizes.len() - 1]), (4 * KIB, 256 * MIB));
    }
}

pub mod params;
mod run;
