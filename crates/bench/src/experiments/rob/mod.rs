//! The out-of-order window: run-time generated loops issue two independent cache-missing
//! loads separated by K filler instructions; while the window holds both, the misses
//! overlap (one miss latency per iteration), and once K exceeds the structure the filler
//! fills first, they serialise (two latencies). The cliff's K is that structure's size
//! (Henry Wong's method). x86_64 only.
//!
//! Each filler is swept coarsely (K step 16, 32 with --quick), then in steps of 2 around
//! the cliff found. The ROB filler is the eight-byte NOP: Zen 4 packs short NOPs several
//! to an entry (see `kernels::jit::Filler::Nop`). Past a cliff the curves keep rising
//! where the filler's own throughput takes over (stores most), which `find_cliff`
//! allows for.

mod charts;
pub mod figures;
#[cfg(any(test, feature = "test-support"))]
pub mod samples;
pub mod view;

use serde::{Deserialize, Serialize};

use crate::kernels::jit::{Filler, Structure};
use crate::stats::summary::median;

/// `experiments.rob` of the report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RobResult {
    /// One row per filler kind × K.
    pub rows: Vec<RobRow>,
    /// The cliff found in each filler's curve.
    pub structures: Vec<RobStructure>,
    /// The serialised variant: N−1 misses, K nops, one miss, timed as one block.
    pub serialized: Vec<SerializedRow>,
    /// Window size read from the serialised grid (the K cliff at the fewest misses).
    pub serialized_window: Option<u32>,
    /// Misses in flight read from the serialised grid at K = 0.
    pub serialized_mlp: Option<f64>,
    /// Working set of the two chases, bytes.
    pub chase_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RobRow {
    pub filler: Filler,
    /// Filler instructions between the two misses.
    pub k: u32,
    pub ns_per_iter: f64,
    pub cycles_per_iter: f64,
    pub spread_pct: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RobStructure {
    pub filler: Filler,
    /// The structure this filler fills first.
    pub structure: Structure,
    /// Estimated entries of the structure: `window_entries` plus `architectural` (None
    /// when no cliff was found within the sweep).
    pub entries: Option<u32>,
    /// Entries the window held at the cliff: the fillers plus the misses' own entries.
    pub window_entries: Option<u32>,
    /// Entries that hold committed architectural state and so are never free for the
    /// window: the general-purpose registers (16) for the integer register file, the
    /// vector registers (32 with AVX-512, else 16) for the vector file; 0 for the others.
    pub architectural: u32,
    /// Time per iteration below and above the cliff, ns.
    pub low_ns: f64,
    pub high_ns: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SerializedRow {
    /// Misses in the block (N−1 before the nops and one after).
    pub misses: u32,
    pub k: u32,
    pub ns: f64,
    pub cycles: f64,
}

/// What to measure; resolved from the command line by the plan.
#[derive(Debug, Clone)]
pub struct RobConfig {
    /// Filler kinds to sweep, each giving one curve and one structure.
    pub fillers: Vec<Filler>,
    /// The sweep runs K = 0 ..= max_k.
    pub max_k: u32,
    /// Timed trials per point; the median is reported.
    pub repetitions: usize,
    /// Target length of one trial, ns.
    pub trial_ns: f64,
    /// Also run the serialised N × K grid.
    pub serialized: bool,
    /// Coarser steps and a smaller grid.
    pub quick: bool,
    /// Arena for the two chains together (each takes half, at most 256 MiB). Each half
    /// should be several times the last-level cache, so that the chase loads miss.
    pub chase_bytes: u64,
}

/// Whether `rob` can run on this architecture.
pub fn supported() -> bool {
    cfg!(target_arch = "x86_64")
}

/// Why `rob` does not run elsewhere.
const UNSUPPORTED: &str = if cfg!(target_arch = "aarch64") {
    "rob generates x86-64 machine code at run time and runs only on x86_64; this build is \
     for aarch64, where the other experiments run"
} else {
    "rob generates x86-64 machine code at run time and runs only on x86_64; this build is \
     for another architecture"
};

/// A step in a time-per-iteration curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Cliff {
    /// First K on the upper side of the step.
    pub k: u32,
    /// Level before and after the step (same unit as the curve).
    pub low: f64,
    pub high: f64,
}

/// The upper level must be at least this many times the lower one to count as a cliff
/// (the ideal is 2: one miss latency per iteration below, two above).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const CLIFF_RATIO: f64 = 1.3;

/// Finds the step of a curve that is flat at one level and rises to a higher one.
///
/// `low` is the median of the first two or three points. The threshold is the midpoint
/// between `low` and the upper level, where the upper level is the median of the last
/// points but at most 2 × low (two serialised misses). The cap matters: past the cliff
/// the curve keeps rising for fillers whose own throughput becomes the limit (stores
/// commit about one per cycle, so 2K of them eventually outlast two misses), and the last
/// points would put the midpoint far above the step. The cliff is the first K whose value
/// is above the threshold while the median of the next three points is above it too, so
/// a single high point before the step or a single low one after it does not move it;
/// `high` is the median of the cliff point and the three after it (the level just past
/// the step). None when the last points are below 1.3 × low (no step within the sweep)
/// or the curve has fewer than four points. `ks` must be ascending.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn find_cliff(ks: &[u32], ns: &[f64]) -> Option<Cliff> {
    let n = ks.len().min(ns.len());
    if n < 4 {
        return None;
    }
    let edge = (n / 10).clamp(2, 3);
    let low = median(&ns[..edge]);
    let end = median(&ns[n - edge..n]);
    if !(low > 0.0 && end.is_finite() && end >= CLIFF_RATIO * low) {
        return None;
    }
    let threshold = (low + end.min(2.0 * low)) / 2.0;
    (0..n)
        .find(|&i| {
            let after = &ns[i + 1..n.min(i + 4)];
            ns[i] > threshold && (after.is_empty() || median(after) > threshold)
        })
        .map(|i| Cliff {
            k: ks[i],
            low,
            high: median(&ns[i..n.min(i + 4)]),
        })
}

/// Entries of the structure that a cliff at `cliff_k` implies.
///
/// The definition: the most entries in use while both misses were still in flight, that
/// is the last K below the cliff (cliff_k − 1 at unit resolution) plus the entries the two
/// chase loads take themselves (two for the reorder buffer, the integer register file and
/// the load queue; none for the vector registers and the store queue). For the nop
/// filler this is K + 2 = the window that held load A, the fillers and load B. The
/// estimate is as fine as the sweep's step near the cliff (2 after refinement).
fn entries_at(filler: Filler, cliff_k: u32) -> u32 {
    cliff_k.saturating_sub(1) + filler.miss_entries()
}

/// Register-file entries held by committed architectural registers, which the window can
/// never use: 16 general-purpose registers; 32 vector registers with AVX-512 (16 without).
/// Queues and the reorder buffer hold in-flight instructions only.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn architectural_entries(filler: Filler) -> u32 {
    match filler {
        Filler::Add => 16,
        Filler::Xor if crate::kernels::stream::Isa::Avx512.is_available() => 32,
        Filler::Xor => 16,
        Filler::Nop | Filler::Load | Filler::Store => 0,
    }
}

/// Serialised-grid misses per block in a full and in a quick run.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const SERIALIZED_MISSES: [u32; 8] = [1, 2, 4, 8, 12, 16, 24, 32];
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const SERIALIZED_MISSES_QUICK: [u32; 5] = [1, 2, 8, 16, 24];

/// Misses in flight from the serialised grid at K = 0: the largest N × t(1) / t(N). By
/// Little's law, N misses served in t(N), each taking t(1) alone, means N·t(1)/t(N) in
/// flight on average. It equals N while all N overlap and stops growing once the miss
/// buffers (or the memory behind them) are saturated; with at most 32 misses per block it
/// is a lower bound when it still grows at N = 32. The timer's fixed cost inside t(1)
/// and t(N) makes it a slight underestimate too. `points` are (N, ns) at K = 0.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn serialized_mlp(points: &[(u32, f64)]) -> Option<f64> {
    let t1 = points.iter().find(|(n, _)| *n == 1)?.1;
    points
        .iter()
        .filter(|(_, t)| *t > 0.0)
        .map(|(n, t)| *n as f64 * t1 / t)
        .max_by(f64::total_cmp)
}

#[cfg(target_arch = "x86_64")]
pub use measure::measure;

#[cfg(target_arch = "x86_64")]
mod measure {
    use super::*;
    use crate::kernels::jit::{
        ChasePair, SerializedBlock, WindowLoop, MAX_SERIALIZED_MISSES, SCRATCH_BYTES,
    };
    use crate::kernels::permutation::{build_chase, ChaseOrder, SplitMix64};
    use crate::platform::arena::Arena;
    use crate::platform::timer::Timer;
    use crate::session::progress::Progress;
    use crate::stats::summary::Summary;
    use crate::units::MIB;
    use core::arch::x86_64::{_mm_clflush, _mm_mfence};
    use std::collections::btree_map::Entry;
    use std::collections::BTreeMap;

    /// Chase slot: one cache line, so every load is a different line.
    const SLOT_BYTES: usize = 64;
    /// Each chain covers at most this much of the arena (setup time grows with it, and
    /// 256 MiB is far beyond any last-level cache memscope meets).
    const MAX_CHAIN_BYTES: usize = 256 * MIB as usize;
    /// Rounds of refinement at most (each re-measures around the current cliff).
    const REFINE_ROUNDS: usize = 3;
    /// Step of the refinement around a coarse cliff.
    const FINE_STEP: u32 = 2;
    /// Timed calls per serialised cell (the first, warming, call is not counted).
    const SERIALIZED_CALLS: usize = 101;
    const SERIALIZED_CALLS_QUICK: usize = 41;
    /// The serialised grid runs K up to at least this.
    const SERIALIZED_MIN_MAX_K: u32 = 400;

    #[repr(align(64))]
    struct Scratch([u8; SCRATCH_BYTES]);

    /// The two chains and where they currently are.
    struct Chains {
        at: ChasePair,
        scratch: Box<Scratch>,
    }

    struct Point {
        ns: f64,
        spread_pct: f64,
    }

    /// Measures every configured filler's curve and, when asked, the serialised grid.
    ///
    /// The arena is split into two halves, each holding one random single-cycle chase of
    /// 64-byte slots; the chains continue across points and trials.
    pub fn measure(
        config: &RobConfig,
        arena: &Arena,
        timer: &Timer,
        core_hz: Option<f64>,
        progress: &Progress,
    ) -> RobResult {
        let half = (arena.len() / 2).min(MAX_CHAIN_BYTES);
        let slots = half / SLOT_BYTES;
        assert!(
            slots >= 2,
            "the rob arena must hold at least four cache lines"
        );
        let base = arena.as_ptr();
        // SAFETY: both halves lie inside the arena; slots of 64 bytes, 64-byte aligned.
        let (a, b) = unsafe {
            (
                build_chase(base, slots, SLOT_BYTES, ChaseOrder::Random, 0x5eed_a0a0),
                build_chase(
                    base.add(half),
                    slots,
                    SLOT_BYTES,
                    ChaseOrder::Random,
                    0x5eed_b0b0,
                ),
            )
        };
        let mut chains = Chains {
            at: ChasePair { a, b },
            scratch: Box::new(Scratch([0; SCRATCH_BYTES])),
        };
        let cycles = |ns: f64| core_hz.map_or(f64::NAN, |hz| ns * hz / 1e9);
        let mut rows = Vec::new();
        let mut structures = Vec::new();
        for &filler in &config.fillers {
            let (curve, cliff) = filler_curve(filler, config, &mut chains, timer, progress);
            rows.extend(curve.iter().map(|(&k, p)| RobRow {
                filler,
                k,
                ns_per_iter: p.ns,
                cycles_per_iter: cycles(p.ns),
                spread_pct: p.spread_pct,
            }));
            structures.push(RobStructure {
                filler,
                structure: filler.structure(),
                entries: cliff.map(|c| entries_at(filler, c.k) + architectural_entries(filler)),
                window_entries: cliff.map(|c| entries_at(filler, c.k)),
                architectural: architectural_entries(filler),
                low_ns: cliff.map_or(f64::NAN, |c| c.low),
                high_ns: cliff.map_or(f64::NAN, |c| c.high),
            });
        }
        progress.finish();

        let mut result = RobResult {
            rows,
            structures,
            serialized: Vec::new(),
            serialized_window: None,
            serialized_mlp: None,
            chase_bytes: 2 * (slots * SLOT_BYTES) as u64,
        };
        if config.serialized {
            let nop_cliff = result
                .structures
                .iter()
                .find(|s| s.filler == Filler::Nop)
                .and_then(|s| s.entries);
            serialized_grid(&mut result, config, arena, timer, nop_cliff, progress);
            for row in &mut result.serialized {
                row.cycles = cycles(row.ns);
            }
        }
        result
    }

    /// One filler's curve: coarse points up to the largest K, then rounds of fine points
    /// around the cliff until a round leaves it where it was; the points and the cliff.
    fn filler_curve(
        filler: Filler,
        config: &RobConfig,
        chains: &mut Chains,
        timer: &Timer,
        progress: &Progress,
    ) -> (BTreeMap<u32, Point>, Option<Cliff>) {
        let coarse_step = if config.quick { 32 } else { 16 };
        let coarse: Vec<u32> = (0..=config.max_k).step_by(coarse_step as usize).collect();
        let refine_points = (2 * coarse_step / FINE_STEP) as u64;
        progress.start(
            &format!("rob: {} fillers", filler.name()),
            coarse.len() as u64 + refine_points,
        );
        let mut points: BTreeMap<u32, Point> = BTreeMap::new();
        // Measures K (again, when `again`: a point near a cliff is re-measured in each
        // refinement round, so a burst of noise cannot pin the cliff to itself).
        let mut measure_at = |k: u32, points: &mut BTreeMap<u32, Point>, again: bool| {
            if again || !points.contains_key(&k) {
                if let Some(point) = measure_point(filler, k, chains, timer, config) {
                    points.insert(k, point);
                }
            }
            progress.advance();
        };
        for &k in &coarse {
            measure_at(k, &mut points, false);
        }
        let curve = |points: &BTreeMap<u32, Point>| {
            let ks: Vec<u32> = points.keys().copied().collect();
            let ns: Vec<f64> = points.values().map(|p| p.ns).collect();
            find_cliff(&ks, &ns)
        };
        let mut cliff = curve(&points);
        for _ in 0..REFINE_ROUNDS {
            let Some(before) = cliff else { break };
            let from = before.k.saturating_sub(coarse_step);
            let to = (before.k + coarse_step).min(config.max_k);
            for k in (from..=to).step_by(FINE_STEP as usize) {
                measure_at(k, &mut points, true);
            }
            cliff = curve(&points).or(cliff);
            if cliff.map(|c| c.k) == Some(before.k) {
                break;
            }
        }
        (points, cliff)
    }

    /// One point of a curve: sizes the iteration count from a short run so a trial lasts
    /// about `trial_ns`, warms up, then times `repetitions` trials.
    fn measure_point(
        filler: Filler,
        k: u32,
        chains: &mut Chains,
        timer: &Timer,
        config: &RobConfig,
    ) -> Option<Point> {
        let probe = WindowLoop::new(filler, k).ok()?;
        let scratch = chains.scratch.0.as_mut_ptr();
        let mut timed = |iterations: u64| {
            let t0 = timer.start();
            // SAFETY: the chains are closed cycles inside the arena, which outlives the
            // measurement; the scratch buffer is SCRATCH_BYTES long.
            chains.at = unsafe { probe.run(chains.at.a, chains.at.b, iterations, scratch) };
            let t1 = timer.stop();
            timer.ticks_to_ns(t1.saturating_sub(t0)) / iterations as f64
        };
        // Warm-up: the code into the caches, the core out of any idle state.
        timed(64);
        let sizing = 256;
        let estimate = timed(sizing).max(1.0);
        let iterations = (config.trial_ns / estimate).clamp(sizing as f64, 1e8) as u64;
        let trials: Vec<f64> = (0..config.repetitions.max(1))
            .map(|_| timed(iterations))
            .collect();
        let summary = Summary::of(&trials)?;
        Some(Point {
            ns: summary.median,
            spread_pct: summary.spread_pct(),
        })
    }

    /// The serialised N × K grid, then the window (refined at N = 2) and the MLP from it.
    fn serialized_grid(
        result: &mut RobResult,
        config: &RobConfig,
        arena: &Arena,
        timer: &Timer,
        nop_entries: Option<u32>,
        progress: &Progress,
    ) {
        let lines = random_lines(arena);
        let misses: Vec<u32> = if config.quick {
            &SERIALIZED_MISSES_QUICK[..]
        } else {
            &SERIALIZED_MISSES[..]
        }
        .iter()
        .copied()
        .filter(|&n| n as usize <= lines.len())
        .collect();
        let step: u32 = if config.quick { 32 } else { 16 };
        let max_k = nop_entries
            .map_or(SERIALIZED_MIN_MAX_K, |e| e + 128)
            .max(SERIALIZED_MIN_MAX_K)
            .div_ceil(step)
            * step;
        let calls = if config.quick {
            SERIALIZED_CALLS_QUICK
        } else {
            SERIALIZED_CALLS
        };
        let ks: Vec<u32> = (0..=max_k).step_by(step as usize).collect();
        let base = arena.as_ptr() as *const u8;
        let cell = |n: u32, k: u32| serialized_cell(base, &lines[..n as usize], k, calls, timer);
        progress.start(
            "rob: serialised grid",
            (misses.len() * ks.len()) as u64 + 17,
        );
        let mut grid: BTreeMap<(u32, u32), SerializedRow> = BTreeMap::new();
        for &n in &misses {
            for &k in &ks {
                if let Some(row) = cell(n, k) {
                    grid.insert((n, k), row);
                }
                progress.advance();
            }
        }
        let row_curve = |grid: &BTreeMap<(u32, u32), SerializedRow>, n: u32| {
            let (ks, ns): (Vec<u32>, Vec<f64>) = grid
                .range((n, 0)..=(n, u32::MAX))
                .map(|(&(_, k), row)| (k, row.ns))
                .unzip();
            find_cliff(&ks, &ns)
        };
        // The window from two misses (one before the nops, one after), refined.
        let mut window = row_curve(&grid, 2);
        if let Some(coarse) = window {
            let from = coarse.k.saturating_sub(step);
            let to = coarse.k + step;
            for k in (from..=to).step_by(FINE_STEP as usize) {
                if let Entry::Vacant(slot) = grid.entry((2, k)) {
                    if let Some(row) = cell(2, k) {
                        slot.insert(row);
                    }
                }
                progress.advance();
            }
            window = row_curve(&grid, 2).or(window);
        }
        progress.finish();
        // At N = 2 the block is load, K nops, load: the window held K + 2 at the last fast K.
        result.serialized_window = window.map(|c| entries_at(Filler::Nop, c.k));
        let at_zero: Vec<(u32, f64)> = grid
            .iter()
            .filter(|((_, k), _)| *k == 0)
            .map(|(&(n, _), row)| (n, row.ns))
            .collect();
        result.serialized_mlp = serialized_mlp(&at_zero);
        result.serialized = grid.into_values().collect();
    }

    /// One cell of the serialised grid: the median of `calls` timed runs (after one
    /// untimed) of the block of K nops between the loads of `displacements`, flushed
    /// before each run.
    fn serialized_cell(
        base: *const u8,
        displacements: &[i32],
        k: u32,
        calls: usize,
        timer: &Timer,
    ) -> Option<SerializedRow> {
        let block = SerializedBlock::new(displacements, k).ok()?;
        let mut ticks: Vec<f64> = Vec::with_capacity(calls);
        for call in 0..=calls {
            // SAFETY: every displacement is a line inside the arena.
            let t = unsafe {
                for &d in displacements {
                    _mm_clflush(base.add(d as usize));
                }
                _mm_mfence();
                block.run(base)
            };
            if call > 0 {
                ticks.push(t as f64);
            }
        }
        let median_ticks = Summary::of(&ticks)?.median;
        Some(SerializedRow {
            misses: displacements.len() as u32,
            k,
            ns: timer.ticks_to_ns(median_ticks.round() as u64),
            cycles: f64::NAN,
        })
    }

    /// Byte offsets of random lines in distinct 4 KiB pages of the arena's first GiB (the
    /// block addresses them with 32-bit displacements), one per possible miss of a block.
    /// Distinct pages keep the lines out of each other's adjacent-line prefetches.
    fn random_lines(arena: &Arena) -> Vec<i32> {
        const PAGE: usize = 4096;
        let pages = arena.len().min(1 << 30) / PAGE;
        let mut rng = SplitMix64::new(0x5e71_a112);
        let mut chosen: Vec<usize> = Vec::with_capacity(MAX_SERIALIZED_MISSES);
        while chosen.len() < MAX_SERIALIZED_MISSES.min(pages) {
            let page = rng.below(pages);
            if !chosen.contains(&page) {
                chosen.push(page);
            }
        }
        chosen
            .into_iter()
            .map(|page| (page * PAGE + rng.below(PAGE / SLOT_BYTES) * SLOT_BYTES) as i32)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fillers_and_structures_read_and_write_the_names_reports_hold() {
        for filler in Filler::ALL {
            let st = RobStructure {
                filler,
                structure: filler.structure(),
                entries: None,
                window_entries: None,
                architectural: 0,
                low_ns: 1.0,
                high_ns: 2.0,
            };
            let json = serde_json::to_string(&st).unwrap();
            assert!(json.starts_with(&format!(
                r#"{{"filler":"{}","structure":"{}","#,
                filler.name(),
                filler.structure().name()
            )));
            assert_eq!(serde_json::from_str::<RobStructure>(&json).unwrap(), st);
        }
        let row = r#"{"filler":"NOP","k":0,"ns_per_iter":1,"cycles_per_iter":1,"spread_pct":0}"#;
        let err = serde_json::from_str::<RobRow>(row).unwrap_err().to_string();
        assert!(err.contains("NOP"), "{err}");
        let st = r#"{"filler":"nop","structure":"rob","entries":null,"window_entries":null,
            "architectural":0,"low_ns":1,"high_ns":2}"#;
        let err = serde_json::from_str::<RobStructure>(st)
            .unwrap_err()
            .to_string();
        assert!(err.contains("rob"), "{err}");
    }

    /// A step from 100 to 200 between `at - step` and `at`, sampled every `step`.
    fn step_curve(at: u32, step: u32, max_k: u32) -> (Vec<u32>, Vec<f64>) {
        let ks: Vec<u32> = (0..=max_k).step_by(step as usize).collect();
        let ns = ks
            .iter()
            .map(|&k| if k < at { 100.0 } else { 200.0 })
            .collect();
        (ks, ns)
    }

    /// Deterministic ±amplitude noise.
    fn noisy(ns: &mut [f64], amplitude: f64) {
        let mut state = 12345u64;
        for v in ns {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let unit = (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
            *v *= 1.0 + amplitude * unit;
        }
    }

    #[test]
    fn clean_steps_are_found_where_they_were_put() {
        // The second one early, on a coarse grid.
        for (k, step, max_k) in [(208, 16, 1024), (64, 32, 512)] {
            let (ks, ns) = step_curve(k, step, max_k);
            let (low, high) = (100.0, 200.0);
            assert_eq!(find_cliff(&ks, &ns), Some(Cliff { k, low, high }));
        }
    }

    #[test]
    fn noisy_step_with_outliers_is_found_within_one_step() {
        let (ks, mut ns) = step_curve(200, 8, 1024);
        noisy(&mut ns, 0.08);
        // One disturbed point on each side of the step.
        let spike = ks.iter().position(|&k| k == 120).unwrap();
        ns[spike] = 400.0;
        let dip = ks.iter().position(|&k| k == 208).unwrap();
        ns[dip] = 90.0;
        let cliff = find_cliff(&ks, &ns).unwrap();
        assert!((192..=208).contains(&cliff.k), "{cliff:?}");
        assert!((cliff.high / cliff.low - 2.0).abs() < 0.3);
    }

    #[test]
    fn gradual_ramp_breaks_at_its_middle() {
        let ks: Vec<u32> = (0..=1024).step_by(16).collect();
        let ns: Vec<f64> = ks
            .iter()
            .map(|&k| 100.0 + 100.0 * ((k as f64 - 136.0) / 128.0).clamp(0.0, 1.0))
            .collect();
        let cliff = find_cliff(&ks, &ns).unwrap();
        assert!((192..=216).contains(&cliff.k), "{cliff:?}");
    }

    #[test]
    fn a_throughput_ramp_after_the_step_does_not_move_it() {
        // Step 100 → 200 at 80, then rising to 600 by K = 1024 (the store filler's shape).
        let ks: Vec<u32> = (0..=1024).step_by(16).collect();
        let ns: Vec<f64> = ks
            .iter()
            .map(|&k| {
                if k < 80 {
                    100.0
                } else {
                    200.0 + 400.0 * (k - 80) as f64 / 944.0
                }
            })
            .collect();
        let cliff = find_cliff(&ks, &ns).unwrap();
        assert_eq!(cliff.k, 80);
        assert!(cliff.high > 190.0 && cliff.high < 220.0, "{cliff:?}");
    }

    #[test]
    fn flat_or_short_curves_have_no_cliff() {
        let ks: Vec<u32> = (0..=1024).step_by(16).collect();
        let mut ns = vec![100.0; ks.len()];
        noisy(&mut ns, 0.1);
        assert_eq!(find_cliff(&ks, &ns), None);
        // A rise too small to be the second miss.
        let ns: Vec<f64> = ks
            .iter()
            .map(|&k| if k < 300 { 100.0 } else { 120.0 })
            .collect();
        assert_eq!(find_cliff(&ks, &ns), None);
        assert_eq!(find_cliff(&[0, 16, 32], &[1.0, 2.0, 2.0]), None);
        assert_eq!(find_cliff(&[], &[]), None);
    }

    #[test]
    fn entries_count_the_misses_where_they_take_entries() {
        assert_eq!(entries_at(Filler::Nop, 320), 321);
        assert_eq!(entries_at(Filler::Store, 64), 63);
    }

    #[test]
    fn serialized_mlp_is_the_best_overlap() {
        // Up to 4 misses overlap, 8 take more than two rounds.
        let points = [(1, 100.0), (2, 100.0), (4, 104.0), (8, 250.0)];
        let mlp = serialized_mlp(&points).unwrap();
        assert!((mlp - 4.0 * 100.0 / 104.0).abs() < 1e-9);
        assert_eq!(serialized_mlp(&[(2, 100.0)]), None);
    }

    #[test]
    fn supported_matches_the_architecture() {
        assert_eq!(supported(), cfg!(target_arch = "x86_64"));
    }
}

pub mod params;
mod run;
