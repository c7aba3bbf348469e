//! N independent pointer chains over one working set, walked in one thread one load of
//! each per round: the engine of `mlp`'s sweeps (every level, the grid, the sequential
//! model) and of `tlb`'s DRAM MLP in each page size. The random cycle the chains are cut
//! from, the sampling (calibration, passes, re-measuring unstable points), the rows
//! (ns per load, parallelism) and the saturation point found from them; the report types
//! of a row and a saturation point are `mlp`'s, defined here so both rooms share them.

use serde::{Deserialize, Serialize};

use crate::experiments::shared::level::Level;
use crate::experiments::shared::sampling::UNSTABLE_SPREAD_PCT;
use crate::kernels::multichase::{multichase, supported};
use crate::kernels::permutation::SplitMix64;
use crate::platform::arena::Arena;
use crate::platform::timer::Timer;
use crate::session::progress::Progress;
use crate::stats::summary::median;
use crate::stats::Summary;

/// 1…16, then 20, 24, 28, 32: dense where saturation usually is, sparse beyond.
pub(crate) fn default_chains() -> Vec<u32> {
    (1..=16).chain([20, 24, 28, 32]).collect()
}

/// One working set × chain count.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MlpRow {
    /// Level this working set was chosen for ("L2", "L3", "DRAM"); None in the grid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
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
    pub level: Level,
    pub bytes: u64,
    /// Chains at which the curve reaches its plateau.
    pub chains: u32,
    /// Parallelism on the plateau (median of the points from `chains` on).
    pub parallelism: f64,
    /// ns per load on the plateau: the level's best throughput with dependent chains.
    pub ns_per_load: f64,
}

/// Bytes per chased slot: one cache line, so every load is a different line.
pub(crate) const SLOT_BYTES: usize = 64;

/// A curve has reached its plateau at the first chain count whose parallelism is at least
/// this fraction of the plateau level (see [`find_saturation`]).
pub(crate) const PLATEAU_FRACTION: f64 = 0.95;

/// The longest a warm-up lap may run, in trials (as in the latency sweep): a lap through
/// any cache, far less than one through a DRAM-sized working set.
pub(crate) const WARM_UP_TRIALS: f64 = 10.0;

/// Passes through the chain counts of one working set that its trials are spread over.
pub(crate) const MAX_PASSES: usize = 3;

/// How long and how often one point is timed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sampling {
    pub(crate) trial_ns: f64,
    pub(crate) repetitions: usize,
}

/// The chain counts to measure: supported ones, ascending, without repeats, always with 1.
pub(crate) fn chain_counts(asked: &[u32]) -> Vec<u32> {
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
pub(crate) fn mix(seed: u64, bytes: u64, salt: u64) -> u64 {
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
pub(crate) struct Cycle {
    base: *mut u8,
    /// `order[k]` is the k-th slot of the cycle.
    order: Vec<u32>,
    /// Positions in `order` where the current chains start (one chain: not cut).
    cuts: Vec<usize>,
}

impl Cycle {
    pub(crate) fn build(arena: &Arena, bytes: u64, seed: u64) -> Cycle {
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

    pub(crate) fn slots(&self) -> usize {
        self.order.len()
    }

    /// The slot at `position` along the cycle (taken modulo its length).
    pub(crate) fn slot(&self, position: usize) -> *mut usize {
        let slot = self.order[position % self.slots()] as usize;
        // SAFETY: every slot index is below `slots`, inside the arena.
        unsafe { self.base.add(slot * SLOT_BYTES) as *mut usize }
    }

    /// Cuts the cycle into `n` chains of equal length (±1 slot), the first starting at
    /// position `offset`, and returns where each chain starts. `n` ≤ slots.
    pub(crate) fn cut(&mut self, n: usize, offset: usize) -> Vec<*const usize> {
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
    pub(crate) fn join(&mut self) {
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
    pub(crate) fn passes(self) -> usize {
        self.repetitions.clamp(1, MAX_PASSES)
    }

    /// Progress steps of one working set with `chains` chain counts.
    pub(crate) fn steps(self, chains: usize) -> u64 {
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
pub(crate) fn sweep(
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
pub(crate) fn calibrate(ptrs: &mut [*const usize], sampling: Sampling, timer: &Timer) -> usize {
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
pub(crate) fn trials(
    ptrs: &mut [*const usize],
    rounds: usize,
    repetitions: usize,
    timer: &Timer,
) -> Vec<f64> {
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
pub(crate) fn to_rows(
    level: Option<&Level>,
    bytes: u64,
    measured: &[(u32, Summary)],
) -> Vec<MlpRow> {
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
pub(crate) fn saturation_of(level: &Level, bytes: u64, rows: &[MlpRow]) -> Option<MlpSaturation> {
    let chains: Vec<u32> = rows.iter().map(|r| r.chains).collect();
    let parallelism: Vec<f64> = rows.iter().map(|r| r.parallelism).collect();
    let (at, plateau) = find_saturation(&chains, &parallelism)?;
    let on_plateau: Vec<f64> = rows
        .iter()
        .filter(|r| r.chains >= at)
        .map(|r| r.ns_per_load)
        .collect();
    Some(MlpSaturation {
        level: level.clone(),
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
pub(crate) fn find_saturation(chains: &[u32], parallelism: &[f64]) -> Option<(u32, f64)> {
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
pub(crate) fn rise_then_flat_error(points: &[(f64, f64)], k: f64) -> f64 {
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
