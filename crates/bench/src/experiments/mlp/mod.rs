//! Memory-level parallelism: N independent pointer chains walked in one thread, one load
//! of each per round, so up to N misses can be in flight. Parallelism is N × t(1) / t(N);
//! where it stops growing with N is the core's MLP at that level. Also the sequential
//! model T(n) = n·M + C of n dependent misses, and a working-set × N grid that shows
//! where parallelism appears.

pub mod figures;
#[cfg(any(test, feature = "test-support"))]
pub mod samples;
pub mod view;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::experiments::shared::chains::{
    self, chain_counts, mix, saturation_of, sweep, to_rows, Cycle, Sampling, SLOT_BYTES,
};
pub use crate::experiments::shared::chains::{MlpRow, MlpSaturation};
use crate::experiments::shared::level::Level;
use crate::kernels::multichase::multichase;
use crate::kernels::permutation::{ChaseOrderKind, SplitMix64};
use crate::kernels::stream::{self, Isa, GRANULE};
use crate::kernels::strided;
use crate::platform::arena::{Arena, PagePolicy};
use crate::platform::timer::Timer;
use crate::session::progress::Progress;
use crate::stats::summary::median;
use crate::units::Bytes;

/// `experiments.mlp` of the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MlpResult {
    /// Chains 1…max at each level's working set.
    pub rows: Vec<MlpRow>,
    /// Saturation point per level: the number of chains beyond which parallelism stops
    /// growing.
    pub mlp: BTreeMap<String, u32>,
    /// How each saturation point was found, per level.
    pub saturation: Vec<MlpSaturation>,
    /// Fit of T(n) = n·M + C to n dependent DRAM misses timed one run at a time.
    pub sequential_fit: Option<SequentialFit>,
    /// The working-set × chains grid (empty when not measured).
    pub grid: Vec<MlpRow>,
    /// Little's law check at DRAM: lines in flight implied by the parallel chase.
    pub littles_law: Option<LittlesLaw>,
    /// Page policy and chase order of the chains.
    pub order: ChainLayout,
}

/// How the chains lie in memory: their chase order and the pages under them, written in
/// reports as "random, thp pages"; a report with any other text is refused when read,
/// naming the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainLayout {
    pub order: ChaseOrderKind,
    pub pages: PagePolicy,
}

impl ChainLayout {
    /// The layout written as `text` ("random, 4k pages"), or None.
    fn parse(text: &str) -> Option<ChainLayout> {
        let (order, pages) = text.split_once(", ")?;
        let pages = pages.strip_suffix(" pages")?;
        let order = [ChaseOrderKind::Random, ChaseOrderKind::PageLocal]
            .into_iter()
            .find(|k| k.name() == order)?;
        // Only the names `Display` writes: the parser's aliases ("base") never appear.
        let pages = PagePolicy::parse(pages)
            .ok()
            .filter(|p| p.to_string() == pages)?;
        Some(ChainLayout { order, pages })
    }
}

impl std::fmt::Display for ChainLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, {} pages", self.order, self.pages)
    }
}

impl Serialize for ChainLayout {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ChainLayout {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<ChainLayout, D::Error> {
        let text = String::deserialize(deserializer)?;
        ChainLayout::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "invalid chain layout '{text}', expected '<random or page-local>, <{}> pages'",
                PagePolicy::NAMES
            ))
        })
    }
}

/// T(n) = n·M + C over n dependent misses.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SequentialFit {
    /// Cost of one more dependent miss, ns.
    pub m_ns: f64,
    /// Fixed cost (timer and serialisation), ns.
    pub c_ns: f64,
    /// Coefficient of determination of the fit.
    pub r2: f64,
    pub m_cycles: f64,
    pub points: Vec<SequentialPoint>,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SequentialPoint {
    pub misses: u32,
    /// Median time of the run, ns.
    pub ns: f64,
}

/// Little's law at DRAM, from memscope's own figures.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LittlesLaw {
    /// Latency of one chain (t(1)), ns.
    pub latency_ns: f64,
    /// Bandwidth of the chains at saturation (64-byte lines), decimal GB/s.
    pub chase_gb_per_s: f64,
    /// Single-thread streaming read bandwidth at DRAM, measured here, decimal GB/s.
    pub stream_read_gb_per_s: f64,
    /// Lines in flight that the streaming bandwidth implies: bandwidth × latency / line.
    pub stream_concurrency: f64,
    /// Parallelism measured on the plateau of the chains.
    pub chase_parallelism: f64,
    /// Single-thread bandwidth of independent loads from random lines (an index array
    /// read in order, the lines it names in random order), decimal GB/s of whole lines.
    pub random_read_gb_per_s: f64,
    /// Lines in flight that the random reads imply: bandwidth × latency / line. No
    /// prefetcher can help random reads, so this is demand misses only, like the chains.
    pub random_concurrency: f64,
}

/// Runs of n dependent misses timed for the sequential model, and how many of each.
const SEQUENTIAL_MISSES: [u32; 12] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];
const SEQUENTIAL_RUNS: usize = 200;

/// Grid points are many and only need to show where parallelism appears: at most this
/// many trials of half the usual length each.
const GRID_REPETITIONS: usize = 5;

/// Streaming passes timed for Little's law (after one untimed pass).
const STREAM_PASSES: usize = 5;

/// What to measure; resolved from the command line by `plan`.
#[derive(Debug, Clone)]
pub struct MlpConfig {
    /// (level name, working set of all chains together in bytes), e.g. ("L2", 512 KiB),
    /// ("L3", 16 MiB), ("DRAM", 256 MiB). The largest is treated as DRAM (sequential model,
    /// Little's law).
    pub levels: Vec<(String, u64)>,
    /// Chain counts at every level; 1 is measured even when missing (it is t(1)). Counts
    /// without a kernel (see `kernels::multichase::supported`) are skipped.
    pub chains: Vec<u32>,
    /// Working sets of the grid (empty: no grid). Sizes larger than the arena are skipped.
    pub grid_sizes: Vec<u64>,
    /// Chain counts of the grid.
    pub grid_chains: Vec<u32>,
    /// Measure T(n) = n·M + C at DRAM.
    pub sequential: bool,
    /// Also measure one thread's streaming read bandwidth at DRAM (Little's law).
    pub littles_law: bool,
    /// Timed trials per point (the grid uses at most [`GRID_REPETITIONS`]).
    pub repetitions: usize,
    /// Target length of one trial, ns (the grid uses half).
    pub trial_ns: f64,
    pub seed: u64,
}

impl MlpConfig {
    /// 1…16, then 20, 24, 28, 32: dense where saturation usually is, sparse beyond.
    pub(crate) fn default_chains() -> Vec<u32> {
        chains::default_chains()
    }

    /// Powers of two from 1 KiB to `max` bytes.
    fn grid_sizes_up_to(max: u64) -> Vec<u64> {
        (10..63)
            .map(|shift| 1u64 << shift)
            .take_while(|&b| b <= max)
            .collect()
    }

    /// 1…12 chains.
    fn default_grid_chains() -> Vec<u32> {
        (1..=12).collect()
    }

    /// Bytes of arena `measure` needs: the largest working set asked for.
    pub(crate) fn arena_bytes(&self) -> u64 {
        self.levels
            .iter()
            .map(|(_, b)| *b)
            .chain(self.grid_sizes.iter().copied())
            .max()
            .unwrap_or(0)
    }
}

/// The working set × chains grid: every grid size that fits the arena, at half the trial
/// length and a few repetitions.
fn working_set_grid(
    config: &MlpConfig,
    arena: &Arena,
    sampling: Sampling,
    timer: &Timer,
    progress: &Progress,
) -> Vec<MlpRow> {
    let fits = |bytes: u64| bytes >= SLOT_BYTES as u64 && bytes <= arena.len() as u64;
    let grid_sizes: Vec<u64> = config
        .grid_sizes
        .iter()
        .copied()
        .filter(|&b| fits(b))
        .collect();
    let mut grid = Vec::new();
    if grid_sizes.is_empty() {
        return grid;
    }
    let grid_chains = chain_counts(&config.grid_chains);
    let grid_sampling = Sampling {
        trial_ns: config.trial_ns / 2.0,
        repetitions: sampling.repetitions.min(GRID_REPETITIONS),
    };
    progress.start(
        "mlp, working set × chains",
        grid_sizes.len() as u64 * grid_sampling.steps(grid_chains.len()),
    );
    for &bytes in &grid_sizes {
        progress.message(&Bytes(bytes).to_string());
        let mut cycle = Cycle::build(arena, bytes, mix(config.seed, bytes, u64::MAX));
        let measured = sweep(
            &mut cycle,
            &grid_chains,
            grid_sampling,
            config.seed,
            timer,
            progress,
        );
        grid.extend(to_rows(None, bytes, &measured));
    }
    progress.finish();
    grid
}

/// Measures every level's chain sweep, the sequential model, the grid and Little's law in
/// `arena` (allocated, touched and pinned by the caller; at least
/// [`MlpConfig::arena_bytes`] long, working sets that do not fit are skipped).
pub fn measure(
    config: &MlpConfig,
    arena: &Arena,
    timer: &Timer,
    core_hz: Option<f64>,
    progress: &Progress,
) -> MlpResult {
    let fits = |bytes: u64| bytes >= SLOT_BYTES as u64 && bytes <= arena.len() as u64;
    let sampling = Sampling {
        trial_ns: config.trial_ns,
        repetitions: config.repetitions.max(1),
    };
    let chains = chain_counts(&config.chains);
    let dram = config
        .levels
        .iter()
        .filter(|(_, bytes)| fits(*bytes))
        .max_by_key(|(_, bytes)| *bytes)
        .cloned();

    let mut rows = Vec::new();
    let mut mlp = BTreeMap::new();
    let mut saturation = Vec::new();
    let mut sequential_fit = None;
    for (index, (level, bytes)) in config.levels.iter().enumerate() {
        if !fits(*bytes) {
            continue;
        }
        progress.start(
            &format!("mlp, {level} ({})", Bytes(*bytes)),
            sampling.steps(chains.len()),
        );
        let mut cycle = Cycle::build(arena, *bytes, mix(config.seed, *bytes, index as u64));
        let measured = sweep(&mut cycle, &chains, sampling, config.seed, timer, progress);
        let named = Level::from(level.clone());
        let level_rows = to_rows(Some(&named), *bytes, &measured);
        if let Some(found) = saturation_of(&named, *bytes, &level_rows) {
            mlp.insert(level.clone(), found.chains);
            saturation.push(found);
        }
        rows.extend(level_rows);
        progress.finish();

        if config.sequential && dram.as_ref() == Some(&(level.clone(), *bytes)) {
            progress.start("mlp, dependent misses", 1);
            sequential_fit = Some(sequential(&cycle, timer, core_hz));
            progress.advance();
            progress.finish();
        }
    }

    let grid = working_set_grid(config, arena, sampling, timer, progress);

    let littles_law = match (&dram, config.littles_law) {
        (Some((level, bytes)), true) => {
            progress.start("mlp, streaming read at DRAM", 1);
            let law = littles_law(
                &Level::from(level.clone()),
                *bytes,
                &rows,
                &saturation,
                arena,
                timer,
            );
            progress.advance();
            progress.finish();
            law
        }
        _ => None,
    };

    MlpResult {
        rows,
        mlp,
        saturation,
        sequential_fit,
        grid,
        littles_law,
        order: ChainLayout {
            order: ChaseOrderKind::Random,
            pages: arena.policy(),
        },
    }
}

/// Ordinary least squares of ns = n·M + C over (n, ns) points: (M, C, r²). None with fewer
/// than two distinct n or a non-finite value. r² is 1 − SS_res/SS_tot (1 when every point
/// has the same time and the fit is exact).
fn fit_sequential(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    if points.len() < 2 || points.iter().any(|(x, y)| !x.is_finite() || !y.is_finite()) {
        return None;
    }
    let count = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / count;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / count;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let m = sxy / sxx;
    let c = mean_y - m * mean_x;
    let ss_res: f64 = points.iter().map(|p| (p.1 - m * p.0 - c).powi(2)).sum();
    let ss_tot: f64 = points.iter().map(|p| (p.1 - mean_y).powi(2)).sum();
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else if ss_res == 0.0 {
        1.0
    } else {
        0.0
    };
    Some((m, c, r2))
}

/// T(n) for n dependent misses: runs of n loads along the (uncut) DRAM cycle, each timed
/// on its own, the run lengths interleaved and repeated [`SEQUENTIAL_RUNS`] times. The
/// walk continues along the cycle, so every run meets lines it has not touched for
/// millions of loads. M is the cost of one more dependent miss (it should agree with
/// t(1)); C is what timing a run costs (serialising timer reads, the call).
fn sequential(cycle: &Cycle, timer: &Timer, core_hz: Option<f64>) -> SequentialFit {
    let mut p = [cycle.slot(0) as *const usize];
    let mut samples = vec![Vec::with_capacity(SEQUENTIAL_RUNS); SEQUENTIAL_MISSES.len()];
    for _ in 0..SEQUENTIAL_RUNS {
        for (i, &n) in SEQUENTIAL_MISSES.iter().enumerate() {
            let t0 = timer.start();
            // SAFETY: the cycle is whole (not cut) and lies in the arena.
            unsafe { multichase(&mut p, n as usize) };
            let t1 = timer.stop();
            samples[i].push(timer.ticks_to_ns(t1.saturating_sub(t0)));
        }
    }
    std::hint::black_box(p);
    let points: Vec<SequentialPoint> = SEQUENTIAL_MISSES
        .iter()
        .zip(&samples)
        .map(|(&misses, runs)| SequentialPoint {
            misses,
            ns: median(runs),
        })
        .collect();
    let xy: Vec<(f64, f64)> = points.iter().map(|p| (f64::from(p.misses), p.ns)).collect();
    let (m_ns, c_ns, r2) = fit_sequential(&xy).unwrap_or((f64::NAN, f64::NAN, f64::NAN));
    SequentialFit {
        m_ns,
        c_ns,
        r2,
        m_cycles: core_hz.map_or(f64::NAN, |hz| m_ns * hz / 1e9),
        points,
        bytes: (cycle.slots() * SLOT_BYTES) as u64,
    }
}

/// Little's law at DRAM: the lines one thread's streaming reads keep in flight
/// (bandwidth × latency / line) next to the parallelism the chains reach. The chains'
/// figures come from the plateau, or from the most parallel row when the curve did not
/// saturate.
fn littles_law(
    level: &Level,
    bytes: u64,
    rows: &[MlpRow],
    saturation: &[MlpSaturation],
    arena: &Arena,
    timer: &Timer,
) -> Option<LittlesLaw> {
    let level_rows: Vec<&MlpRow> = rows
        .iter()
        .filter(|r| r.level.as_ref() == Some(level) && r.bytes == bytes)
        .collect();
    let latency_ns = level_rows.iter().find(|r| r.chains == 1)?.ns_per_round;
    let (parallelism, ns_per_load) = match saturation.iter().find(|s| s.level == *level) {
        Some(s) => (s.parallelism, s.ns_per_load),
        None => level_rows
            .iter()
            .max_by(|a, b| a.parallelism.total_cmp(&b.parallelism))
            .map(|r| (r.parallelism, r.ns_per_load))?,
    };
    let stream_gb_per_s = stream_read_gb_per_s(arena, bytes, timer)?;
    let random_gb_per_s = random_read_gb_per_s(arena, bytes, timer)?;
    Some(LittlesLaw {
        latency_ns,
        chase_gb_per_s: SLOT_BYTES as f64 / ns_per_load,
        stream_read_gb_per_s: stream_gb_per_s,
        stream_concurrency: stream_gb_per_s * latency_ns / SLOT_BYTES as f64,
        chase_parallelism: parallelism,
        random_read_gb_per_s: random_gb_per_s,
        random_concurrency: random_gb_per_s * latency_ns / SLOT_BYTES as f64,
    })
}

/// Random lines one pass of the random-read measurement loads (fewer when the working
/// set has fewer lines).
const RANDOM_READ_LINES: usize = 1 << 20;

/// One thread's throughput of independent loads from random lines of `bytes` of the
/// arena, as decimal GB/s of whole 64-byte lines: one 8-byte load per line, the lines in
/// a random order read from an index array; the median of [`STREAM_PASSES`] passes.
fn random_read_gb_per_s(arena: &Arena, bytes: u64, timer: &Timer) -> Option<f64> {
    let lines = (bytes as usize).min(arena.len()) / SLOT_BYTES;
    if lines < 2 || lines > u32::MAX as usize / 8 {
        return None;
    }
    let mut rng = SplitMix64::new(0x7261_6e64); // "rand"
    let count = lines.min(RANDOM_READ_LINES);
    // Distinct lines when the working set has no more lines than a pass loads.
    let index: Vec<u32> = if count == lines {
        let mut order: Vec<u32> = (0..lines as u32).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        order.into_iter().map(|line| line * 8).collect()
    } else {
        (0..count).map(|_| rng.below(lines) as u32 * 8).collect()
    };
    let a = arena.as_ptr() as *const u64;
    Some(median_rate(timer, (count * SLOT_BYTES) as f64, || {
        // SAFETY: every index names the first word of a line inside the working set.
        std::hint::black_box(unsafe { strided::indexed_sum(a, index.as_ptr(), count, 1) });
    }))
}

/// The median of [`STREAM_PASSES`] timed runs of `pass` after an untimed one, as `bytes`
/// moved per ns (decimal GB/s).
fn median_rate(timer: &Timer, bytes: f64, pass: impl Fn()) -> f64 {
    pass();
    let rates: Vec<f64> = (0..STREAM_PASSES)
        .map(|_| {
            let t0 = timer.start();
            pass();
            let ns = timer.ticks_to_ns(timer.stop().saturating_sub(t0));
            bytes / ns.max(1.0)
        })
        .collect();
    median(&rates)
}

/// One thread's read bandwidth over `bytes` of the arena with the registry's `read`
/// kernel, decimal GB/s: the median of [`STREAM_PASSES`] passes after an untimed one, with
/// the widest instruction set and the next narrower one, whichever is faster (the widest
/// is not always the fastest at DRAM; see `experiments::bandwidth::probe_isa`).
fn stream_read_gb_per_s(arena: &Arena, bytes: u64, timer: &Timer) -> Option<f64> {
    let kernel = stream::find("read").expect("the registry has a read kernel");
    let array_bytes = (bytes as usize).min(arena.len()) / GRANULE * GRANULE;
    if array_bytes == 0 {
        return None;
    }
    let arrays = [arena.as_ptr()];
    let widest = Isa::best_available();
    let isas = Isa::ALL
        .into_iter()
        .filter(|isa| isa.is_available())
        .skip_while(|&isa| isa != widest)
        .take(2)
        .filter(|&isa| isa != Isa::Portable || widest == Isa::Portable);
    let bytes = kernel.bytes_per_pass(array_bytes) as f64;
    isas.map(|isa| {
        median_rate(timer, bytes, || {
            // SAFETY: the arena is page aligned and holds array_bytes (a multiple of
            // GRANULE); the ISA is available.
            std::hint::black_box(unsafe { stream::run(kernel, isa, &arrays, array_bytes, 1) });
        })
    })
    .reduce(f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::shared::chains::find_saturation;
    use crate::platform::arena::PagePolicy;

    /// Deterministic noise in ±amplitude (relative).
    fn noisy(values: impl Iterator<Item = f64>, amplitude: f64, seed: u64) -> Vec<f64> {
        let mut rng = SplitMix64::new(seed);
        values
            .map(|v| {
                let u = rng.next_u64() as f64 / u64::MAX as f64;
                v * (1.0 + amplitude * (2.0 * u - 1.0))
            })
            .collect()
    }

    #[test]
    fn saturation_of_a_noisy_rise_then_flat() {
        // Rising to 10 with slope 1 and 3 % noise; to 20 with slope 0.7 and 2 % noise.
        let chains = MlpConfig::default_chains();
        for (top, slope, amplitude) in [(10, 1.0, 0.03), (20, 0.7, 0.02)] {
            for seed in 0..50 {
                let rise = chains.iter().map(|&n| slope * f64::from(n.min(top)));
                let (at, plateau) =
                    find_saturation(&chains, &noisy(rise, amplitude, seed)).expect("saturates");
                assert!(
                    (top - 1..=top + 1).contains(&at),
                    "{top}, seed {seed}: {at}"
                );
                let want = slope * f64::from(top);
                assert!(
                    (plateau - want).abs() < 0.5,
                    "{top}, seed {seed}: {plateau}"
                );
            }
        }
    }

    #[test]
    fn saturation_beyond_a_dip() {
        // Rises to 8, then loses a quarter by 32 chains (registers spilled, say).
        let chains = MlpConfig::default_chains();
        let p: Vec<f64> = chains
            .iter()
            .map(|&n| {
                let n = f64::from(n);
                if n <= 8.0 {
                    n
                } else {
                    8.0 - 2.0 * (n - 8.0) / 24.0
                }
            })
            .collect();
        let (at, plateau) = find_saturation(&chains, &p).expect("saturates");
        assert!((7..=8).contains(&at), "{at}");
        assert!(plateau > 6.0 && plateau < 8.0, "{plateau}");
    }

    #[test]
    fn no_saturation_while_still_rising_and_a_flat_curve_saturates_at_one() {
        let chains = MlpConfig::default_chains();
        for seed in 0..20 {
            let p = noisy(chains.iter().map(|&n| f64::from(n)), 0.01, seed);
            assert_eq!(find_saturation(&chains, &p), None, "seed {seed}");
        }
        // A plateau reached at the last count but one is a plateau.
        let p: Vec<f64> = chains.iter().map(|&n| f64::from(n.min(28))).collect();
        assert_eq!(find_saturation(&chains, &p).map(|s| s.0), Some(28));
        // Too few points to tell.
        assert_eq!(find_saturation(&[1, 2], &[1.0, 2.0]), None);
        assert_eq!(find_saturation(&[1, 2, 3], &[1.0, f64::NAN, 3.0]), None);
        let chains: Vec<u32> = (1..=12).collect();
        assert_eq!(find_saturation(&chains, &[1.0; 12]), Some((1, 1.0)));
    }

    #[test]
    fn sequential_fit_of_exact_and_noisy_lines() {
        let misses = SEQUENTIAL_MISSES.map(f64::from);
        let exact: Vec<(f64, f64)> = misses.iter().map(|&n| (n, 95.0 * n + 30.0)).collect();
        let (m, c, r2) = fit_sequential(&exact).expect("fit");
        assert!(
            (m - 95.0).abs() < 1e-9 && (c - 30.0).abs() < 1e-6,
            "{m} {c}"
        );
        assert!((r2 - 1.0).abs() < 1e-12);

        let ns = noisy(misses.iter().map(|&n| 110.0 * n + 40.0), 0.03, 9);
        let (m, c, r2) = fit_sequential(&misses.into_iter().zip(ns).collect::<Vec<_>>()).unwrap();
        assert!((m - 110.0).abs() < 5.0 && c.abs() < 200.0, "{m} {c}");
        assert!(r2 > 0.99 && r2 <= 1.0, "{r2}");
    }

    #[test]
    fn sequential_fit_needs_two_distinct_counts() {
        assert_eq!(fit_sequential(&[(4.0, 10.0)]), None);
        assert_eq!(fit_sequential(&[(4.0, 10.0), (4.0, 12.0)]), None);
        assert_eq!(fit_sequential(&[(1.0, f64::NAN), (4.0, 12.0)]), None);
    }

    #[test]
    fn chain_counts_always_start_at_one() {
        assert_eq!(chain_counts(&[4, 2, 2, 65, 48, 0]), vec![1, 2, 4, 48]);
        assert_eq!(chain_counts(&[]), vec![1]);
    }

    /// Follows a chain from `start` until it returns; its slots, in order.
    fn walk_chain(start: *const usize, limit: usize) -> Vec<usize> {
        let mut seen = vec![start as usize];
        // SAFETY: the chains of the tests are closed cycles in their arena.
        let mut p = unsafe { *start } as *const usize;
        while p != start {
            seen.push(p as usize);
            assert!(seen.len() <= limit, "the chain does not close");
            p = unsafe { *p } as *const usize;
        }
        seen
    }

    #[test]
    fn cut_makes_equal_disjoint_chains_and_join_restores_one_cycle() {
        let arena = Arena::new(Bytes(64 << 10), PagePolicy::Base).expect("arena");
        let mut cycle = Cycle::build(&arena, 1000 * SLOT_BYTES as u64, 5);
        let whole = walk_chain(cycle.slot(0), 1000);
        assert_eq!(whole.len(), 1000);
        for (n, offset) in [(1, 0), (3, 7), (7, 999), (12, 500), (1000, 3)] {
            let starts = cycle.cut(n, offset);
            assert_eq!(starts.len(), n);
            let mut all = Vec::new();
            for &s in &starts {
                let chain = walk_chain(s, 1000);
                assert!(chain.len() == 1000 / n || chain.len() == 1000_usize.div_ceil(n));
                all.extend(chain);
            }
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), 1000, "n={n}: the chains cover every slot once");
            cycle.join();
            assert_eq!(walk_chain(cycle.slot(0), 1000), whole, "n={n}");
        }
        // Cutting again without joining first also starts from the whole cycle.
        cycle.cut(5, 1);
        let starts = cycle.cut(2, 2);
        assert_eq!(walk_chain(starts[0], 1000).len(), 500);
    }

    #[test]
    fn quick_measurement_is_consistent() {
        // Small and fast: relations that hold on any machine, not speeds.
        let arena = Arena::new(Bytes(1 << 20), PagePolicy::Base).expect("arena");
        let config = MlpConfig {
            levels: vec![("L1".into(), 16 << 10), ("big".into(), 1 << 20)],
            chains: vec![2, 4, 8],
            grid_sizes: vec![4 << 10, 2 << 20],
            grid_chains: vec![1, 3],
            sequential: true,
            littles_law: true,
            repetitions: 3,
            trial_ns: 2e5,
            seed: 1,
        };
        let (timer, _) = Timer::calibrate();
        let result = measure(&config, &arena, &timer, Some(3e9), &Progress::hidden());
        assert_eq!(result.rows.len(), 8);
        for r in &result.rows {
            assert!(r.ns_per_round > 0.0 && r.parallelism > 0.0, "{r:?}");
            assert!((r.ns_per_load * f64::from(r.chains) - r.ns_per_round).abs() < 1e-9);
            if r.chains == 1 {
                assert!((r.parallelism - 1.0).abs() < 1e-12);
            }
        }
        // The 2 MiB grid size does not fit the arena.
        assert_eq!(result.grid.len(), 2);
        let small = |r: &MlpRow| r.level.is_none() && r.bytes == 4 << 10;
        assert!(result.grid.iter().all(small));
        let fit = result.sequential_fit.expect("sequential");
        assert_eq!(fit.bytes, 1 << 20);
        assert_eq!(fit.points.len(), SEQUENTIAL_MISSES.len());
        assert!(fit.m_ns > 0.0, "{fit:?}");
        let law = result.littles_law.expect("littles law");
        assert!(law.stream_read_gb_per_s > 0.0 && law.latency_ns > 0.0);
        assert_eq!(result.order.to_string(), "random, 4k pages");
    }
}

pub mod params;
mod run;
