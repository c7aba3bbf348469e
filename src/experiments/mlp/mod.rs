//! Memory-level parallelism: N independent pointer chains walked in one thread, one load
//! of each per round, so up to N misses can be in flight. Parallelism is N × t(1) / t(N);
//! where it stops growing with N is the core's MLP at that level. Also the sequential
//! model T(n) = n·M + C of n dependent misses, and a working-set × N grid that shows
//! where parallelism appears.

pub mod figures;
#[cfg(test)]
pub(crate) mod samples;
pub mod view;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::experiments::latency::UNSTABLE_SPREAD_PCT;
use crate::kernels::multichase::{multichase, supported};
use crate::kernels::permutation::SplitMix64;
use crate::kernels::stream::{self, Isa, GRANULE};
use crate::kernels::strided;
use crate::platform::arena::Arena;
use crate::platform::timer::Timer;
use crate::session::progress::Progress;
use crate::stats::summary::median;
use crate::stats::Summary;
use crate::units::Bytes;

/// `experiments.mlp` of the report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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
    pub order: String,
}

/// One working set × chain count.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MlpRow {
    /// Level this working set was chosen for ("L2", "L3", "DRAM"); None in the grid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// Working set of all chains together, bytes.
    pub bytes: u64,
    pub chains: u32,
    /// Time for one load on every chain, ns.
    pub ns_per_round: f64,
    /// ns_per_round / chains: the throughput cost of one load.
    pub ns_per_load: f64,
    /// chains × t(1) / t(chains): misses effectively overlapped.
    pub parallelism: f64,
    /// Spread of the trials (1.4826·MAD/median), percent.
    pub spread_pct: f64,
}

/// The saturation point of one level's parallelism curve.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MlpSaturation {
    pub level: String,
    pub bytes: u64,
    /// Chains at which the curve reaches its plateau.
    pub chains: u32,
    /// Parallelism on the plateau (median of the points from `chains` on).
    pub parallelism: f64,
    /// ns per load on the plateau: the level's best throughput with dependent chains.
    pub ns_per_load: f64,
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

/// Bytes per chased slot: one cache line, so every load is a different line.
pub const SLOT_BYTES: usize = 64;

/// A curve has reached its plateau at the first chain count whose parallelism is at least
/// this fraction of the plateau level (see [`find_saturation`]).
pub const PLATEAU_FRACTION: f64 = 0.95;

/// Runs of n dependent misses timed for the sequential model, and how many of each.
pub const SEQUENTIAL_MISSES: [u32; 12] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];
pub const SEQUENTIAL_RUNS: usize = 200;

/// Grid points are many and only need to show where parallelism appears: at most this
/// many trials of half the usual length each.
const GRID_REPETITIONS: usize = 5;

/// The longest a warm-up lap may run, in trials (as in the latency sweep): a lap through
/// any cache, far less than one through a DRAM-sized working set.
const WARM_UP_TRIALS: f64 = 10.0;

/// Passes through the chain counts of one working set that its trials are spread over.
const MAX_PASSES: usize = 3;

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
    pub fn default_chains() -> Vec<u32> {
        (1..=16).chain([20, 24, 28, 32]).collect()
    }

    /// Powers of two from 1 KiB to `max` bytes.
    pub fn grid_sizes_up_to(max: u64) -> Vec<u64> {
        (10..63)
            .map(|shift| 1u64 << shift)
            .take_while(|&b| b <= max)
            .collect()
    }

    /// 1…12 chains.
    pub fn default_grid_chains() -> Vec<u32> {
        (1..=12).collect()
    }

    /// Bytes of arena `measure` needs: the largest working set asked for.
    pub fn arena_bytes(&self) -> u64 {
        self.levels
            .iter()
            .map(|(_, b)| *b)
            .chain(self.grid_sizes.iter().copied())
            .max()
            .unwrap_or(0)
    }
}

/// How long and how often one point is timed.
#[derive(Debug, Clone, Copy)]
struct Sampling {
    trial_ns: f64,
    repetitions: usize,
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
        let level_rows = to_rows(Some(level), *bytes, &measured);
        if let Some(found) = saturation_of(level, *bytes, &level_rows) {
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

    let grid_sizes: Vec<u64> = config
        .grid_sizes
        .iter()
        .copied()
        .filter(|&b| fits(b))
        .collect();
    let mut grid = Vec::new();
    if !grid_sizes.is_empty() {
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
    }

    let littles_law = match (&dram, config.littles_law) {
        (Some((level, bytes)), true) => {
            progress.start("mlp, streaming read at DRAM", 1);
            let law = littles_law(level, *bytes, &rows, &saturation, arena, timer);
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
        order: format!("random, {} pages", arena.policy()),
    }
}

/// The chain counts to measure: supported ones, ascending, without repeats, always with 1.
fn chain_counts(asked: &[u32]) -> Vec<u32> {
    let mut counts: Vec<u32> = asked
        .iter()
        .copied()
        .chain([1])
        .filter(|&n| supported(n as usize))
        .collect();
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// A seed for one layout, different for every working set and chain count.
fn mix(seed: u64, bytes: u64, salt: u64) -> u64 {
    let mut rng = SplitMix64::new(seed ^ bytes.rotate_left(23) ^ salt.rotate_left(47));
    rng.next_u64()
}

/// One uniformly random cyclic order of all the cache-line slots of a working set, linked
/// in the arena, that can be cut into N chains of equal length.
///
/// Building the layout is the slow part of this experiment (a GiB is 16 M slots), so a
/// working set's cycle is built once and every chain count cuts it afresh: chain i is the
/// i-th of N equal stretches of the cycle, closed on itself by rewriting one slot, and the
/// cut points start at a random position for every N. Each chain is thus a uniformly
/// random cycle through a random N-th of the lines, spread over the whole working set
/// (like one random cycle per equal part, with the same pages and TLB reach in total), and
/// the chains share no line. The order is a Fisher–Yates shuffle read as a cycle (the
/// distribution Sattolo's algorithm gives, see `kernels::permutation`), because cutting
/// needs each slot's position along the cycle; the slots are then written in address
/// order, which is several times faster than following the cycle.
struct Cycle {
    base: *mut u8,
    /// `order[k]` is the k-th slot of the cycle.
    order: Vec<u32>,
    /// Positions in `order` where the current chains start (one chain: not cut).
    cuts: Vec<usize>,
}

impl Cycle {
    fn build(arena: &Arena, bytes: u64, seed: u64) -> Cycle {
        let slots = (bytes as usize / SLOT_BYTES).max(1);
        assert!(
            slots * SLOT_BYTES <= arena.len() && slots <= u32::MAX as usize,
            "the working set fits the arena"
        );
        let mut rng = SplitMix64::new(seed);
        let mut order: Vec<u32> = (0..slots as u32).collect();
        for i in (1..slots).rev() {
            order.swap(i, rng.below(i + 1));
        }
        let mut next = vec![0u32; slots];
        for pair in order.windows(2) {
            next[pair[0] as usize] = pair[1];
        }
        next[order[slots - 1] as usize] = order[0];
        let base = arena.as_ptr();
        for (slot, &to) in next.iter().enumerate() {
            // SAFETY: both slots lie in the arena (checked above), which is page aligned,
            // so every slot is aligned for a usize.
            unsafe {
                (base.add(slot * SLOT_BYTES) as *mut usize)
                    .write(base.add(to as usize * SLOT_BYTES) as usize)
            };
        }
        Cycle {
            base,
            order,
            cuts: Vec::new(),
        }
    }

    fn slots(&self) -> usize {
        self.order.len()
    }

    /// The slot at `position` along the cycle (taken modulo its length).
    fn slot(&self, position: usize) -> *mut usize {
        let slot = self.order[position % self.slots()] as usize;
        // SAFETY: every slot index is below `slots`, inside the arena.
        unsafe { self.base.add(slot * SLOT_BYTES) as *mut usize }
    }

    /// Cuts the cycle into `n` chains of equal length (±1 slot), the first starting at
    /// position `offset`, and returns where each chain starts. `n` ≤ slots.
    fn cut(&mut self, n: usize, offset: usize) -> Vec<*const usize> {
        self.join();
        let slots = self.slots();
        assert!(n >= 1 && n <= slots, "at most one chain per slot");
        self.cuts = (0..n).map(|i| (offset + i * slots / n) % slots).collect();
        for i in 0..n {
            // Close chain i: its last slot (just before chain i+1 starts) points back to its
            // first.
            let next_start = self.cuts[(i + 1) % n] + slots;
            // SAFETY: both are slots of the arena; see `slot`.
            unsafe {
                self.slot(next_start - 1)
                    .write(self.slot(self.cuts[i]) as usize)
            };
        }
        self.cuts
            .iter()
            .map(|&c| self.slot(c) as *const usize)
            .collect()
    }

    /// Undoes `cut`: one cycle through every slot again.
    fn join(&mut self) {
        let slots = self.slots();
        for &c in &self.cuts {
            // SAFETY: as in `cut`.
            unsafe { self.slot(c + slots - 1).write(self.slot(c) as usize) };
        }
        self.cuts.clear();
    }
}

impl Sampling {
    /// Passes over the chain counts that a point's trials are spread over.
    fn passes(self) -> usize {
        self.repetitions.clamp(1, MAX_PASSES)
    }

    /// Progress steps of one working set with `chains` chain counts.
    fn steps(self, chains: usize) -> u64 {
        (self.passes() * chains) as u64
    }
}

/// Every chain count at one working set: the median and spread of ns per round.
///
/// The working set is warmed up once, with a lap through the whole cycle (cut short after
/// [`WARM_UP_TRIALS`] trials, as in the latency sweep): every chain count walks the same
/// lines, so what one count brought into the caches is there for the next. A point's
/// trials are spread over [`MAX_PASSES`] passes through all chain counts, each with the
/// cycle cut afresh at another place, so that a neighbour's burst of activity (another
/// vCPU thrashing the shared L3, say) spoils a part of a few points' trials rather than
/// all of them; points whose trials still spread more than `UNSTABLE_SPREAD_PCT` get one
/// more pass. Chain counts above the number of slots are skipped.
fn sweep(
    cycle: &mut Cycle,
    chains: &[u32],
    sampling: Sampling,
    seed: u64,
    timer: &Timer,
    progress: &Progress,
) -> Vec<(u32, Summary)> {
    let slots = cycle.slots();
    let passes = sampling.passes();
    let per_pass = sampling.repetitions.div_ceil(passes).max(1);

    let mut whole = [cycle.slot(0) as *const usize];
    let mut remaining = slots;
    let warm_start = timer.start();
    while remaining > 0 {
        let chunk = remaining.min(4096);
        // SAFETY: the cycle is whole and lies in the arena; so are the chains `cut` returns
        // (for every multichase call below).
        unsafe { multichase(&mut whole, chunk) };
        remaining -= chunk;
        let elapsed = timer.ticks_to_ns(timer.stop().saturating_sub(warm_start));
        if elapsed > WARM_UP_TRIALS * sampling.trial_ns {
            break;
        }
    }
    std::hint::black_box(whole);

    let mut rounds: Vec<Option<usize>> = vec![None; chains.len()];
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); chains.len()];
    let mut point = |i: usize, pass: usize, samples: &mut Vec<f64>| {
        let n = chains[i] as usize;
        let offset = SplitMix64::new(mix(seed, slots as u64, (n << 8 | pass) as u64)).below(slots);
        let mut ptrs = cycle.cut(n, offset);
        let r = match rounds[i] {
            Some(r) => {
                // Settle after the cut (its writes, the new start lines).
                unsafe { multichase(&mut ptrs, r / 8) };
                r
            }
            None => *rounds[i].insert(calibrate(&mut ptrs, sampling, timer)),
        };
        samples.extend(trials(&mut ptrs, r, per_pass, timer));
        std::hint::black_box(&ptrs);
    };
    for pass in 0..passes {
        for (i, &n) in chains.iter().enumerate() {
            if n as usize <= slots {
                point(i, pass, &mut samples[i]);
            }
            progress.advance();
        }
    }
    for (i, trials) in samples.iter_mut().enumerate() {
        if Summary::of(trials).is_some_and(|s| s.spread_pct() > UNSTABLE_SPREAD_PCT) {
            point(i, passes, trials);
        }
    }
    cycle.join();
    chains
        .iter()
        .zip(&samples)
        .filter_map(|(&n, trials)| Some((n, Summary::of(trials)?)))
        .collect()
}

/// The rounds that make one trial last `trial_ns`: runs of doubling length until one
/// lasts a quarter trial. The chains continue from where they stopped, so trials never
/// re-walk lines the previous run just brought in.
fn calibrate(ptrs: &mut [*const usize], sampling: Sampling, timer: &Timer) -> usize {
    let mut rounds = 16usize;
    let ns_per_round = loop {
        let t0 = timer.start();
        // SAFETY: every pointer starts a closed chain of the arena.
        unsafe { multichase(ptrs, rounds) };
        let ns = timer.ticks_to_ns(timer.stop().saturating_sub(t0));
        if ns >= sampling.trial_ns / 4.0 || rounds >= 1 << 30 {
            break ns.max(1.0) / rounds as f64;
        }
        rounds *= 2;
    };
    ((sampling.trial_ns / ns_per_round) as usize).max(1)
}

/// `repetitions` timed trials of `rounds` rounds, in ns per round.
fn trials(ptrs: &mut [*const usize], rounds: usize, repetitions: usize, timer: &Timer) -> Vec<f64> {
    let mut samples = Vec::with_capacity(repetitions);
    for _ in 0..repetitions {
        let t0 = timer.start();
        // SAFETY: as in `calibrate`.
        unsafe { multichase(ptrs, rounds) };
        let t1 = timer.stop();
        samples.push(timer.ticks_to_ns(t1.saturating_sub(t0)) / rounds as f64);
    }
    samples
}

/// Rows of one working set; parallelism against its own t(1).
fn to_rows(level: Option<&String>, bytes: u64, measured: &[(u32, Summary)]) -> Vec<MlpRow> {
    let t1 = measured
        .iter()
        .find(|(n, _)| *n == 1)
        .map_or(f64::NAN, |(_, s)| s.median);
    measured
        .iter()
        .map(|(n, s)| MlpRow {
            level: level.cloned(),
            bytes,
            chains: *n,
            ns_per_round: s.median,
            ns_per_load: s.median / *n as f64,
            parallelism: *n as f64 * t1 / s.median,
            spread_pct: s.spread_pct(),
        })
        .collect()
}

/// The saturation point of one level's rows; None when the curve is still rising at the
/// largest chain count.
fn saturation_of(level: &str, bytes: u64, rows: &[MlpRow]) -> Option<MlpSaturation> {
    let chains: Vec<u32> = rows.iter().map(|r| r.chains).collect();
    let parallelism: Vec<f64> = rows.iter().map(|r| r.parallelism).collect();
    let (at, plateau) = find_saturation(&chains, &parallelism)?;
    let on_plateau: Vec<f64> = rows
        .iter()
        .filter(|r| r.chains >= at)
        .map(|r| r.ns_per_load)
        .collect();
    Some(MlpSaturation {
        level: level.to_string(),
        bytes,
        chains: at,
        parallelism: plateau,
        ns_per_load: median(&on_plateau),
    })
}

/// Where a parallelism curve stops rising: returns (saturation chains, plateau
/// parallelism), or None when it is still rising at the largest count measured (fewer
/// than two points on the fitted plateau) or there are fewer than three points.
///
/// The curve is fitted by least squares with a continuous "rise, then flat" line,
/// p(N) = P + s·min(N − k, 0), over breakpoints k on a fine grid between the first and
/// the last count (and at every count measured); the smallest k of least squared error
/// wins. The fit only says roughly
/// where the plateau is; its level is the median of the points at or beyond k (robust to
/// a noisy point and to a dip beyond the knee). The saturation point is then the smallest
/// measured N whose parallelism reaches [`PLATEAU_FRACTION`] of that level, and the
/// plateau parallelism returned is the median of the points from there on. On a curve
/// that rises with slope one to K and is flat beyond, this gives K (K − 1 reaches only
/// 1 − 1/K of the plateau); on a rounded knee, the count that gets within 5 %.
pub fn find_saturation(chains: &[u32], parallelism: &[f64]) -> Option<(u32, f64)> {
    let mut points: Vec<(f64, f64)> = chains
        .iter()
        .zip(parallelism)
        .filter(|(_, p)| p.is_finite())
        .map(|(&n, &p)| (f64::from(n), p))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    if points.len() < 3 {
        return None;
    }
    let (first, last) = (points[0].0, points[points.len() - 1].0);
    const STEPS: usize = 1000;
    let mut breakpoints: Vec<f64> = (0..=STEPS)
        .map(|step| first + (last - first) * step as f64 / STEPS as f64)
        .chain(points.iter().map(|p| p.0))
        .collect();
    breakpoints.sort_by(f64::total_cmp);
    let mut best: Option<(f64, f64)> = None; // (squared error, breakpoint)
    for k in breakpoints {
        let sse = rise_then_flat_error(&points, k);
        if best.is_none_or(|(e, _)| sse < e * (1.0 - 1e-9) - 1e-12) {
            best = Some((sse, k));
        }
    }
    let (_, knee) = best?;
    let flat: Vec<f64> = points
        .iter()
        .filter(|(n, _)| *n >= knee - 1e-9)
        .map(|(_, p)| *p)
        .collect();
    if flat.len() < 2 {
        return None;
    }
    let level = median(&flat);
    let (at, _) = points
        .iter()
        .find(|(_, p)| *p >= PLATEAU_FRACTION * level)?;
    let plateau: Vec<f64> = points
        .iter()
        .filter(|(n, _)| n >= at)
        .map(|(_, p)| *p)
        .collect();
    Some((*at as u32, median(&plateau)))
}

/// Least-squares error of p = P + s·min(n − k, 0) with P and s fitted, for a fixed k.
fn rise_then_flat_error(points: &[(f64, f64)], k: f64) -> f64 {
    let count = points.len() as f64;
    let (mut su, mut suu, mut sy, mut suy) = (0.0, 0.0, 0.0, 0.0);
    for &(n, y) in points {
        let u = (n - k).min(0.0);
        su += u;
        suu += u * u;
        sy += y;
        suy += u * y;
    }
    let det = count * suu - su * su;
    let (level, slope) = if det.abs() <= 1e-12 * count * suu.max(1.0) {
        (sy / count, 0.0)
    } else {
        let slope = (count * suy - su * sy) / det;
        ((sy - slope * su) / count, slope)
    };
    points
        .iter()
        .map(|&(n, y)| {
            let e = y - level - slope * (n - k).min(0.0);
            e * e
        })
        .sum()
}

/// Ordinary least squares of ns = n·M + C over (n, ns) points: (M, C, r²). None with fewer
/// than two distinct n or a non-finite value. r² is 1 − SS_res/SS_tot (1 when every point
/// has the same time and the fit is exact).
pub fn fit_sequential(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
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
    level: &str,
    bytes: u64,
    rows: &[MlpRow],
    saturation: &[MlpSaturation],
    arena: &Arena,
    timer: &Timer,
) -> Option<LittlesLaw> {
    let level_rows: Vec<&MlpRow> = rows
        .iter()
        .filter(|r| r.level.as_deref() == Some(level) && r.bytes == bytes)
        .collect();
    let latency_ns = level_rows.iter().find(|r| r.chains == 1)?.ns_per_round;
    let (parallelism, ns_per_load) = match saturation.iter().find(|s| s.level == level) {
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
        assert_eq!(result.order, "random, 4k pages");
    }
}

pub mod params;
mod run;
