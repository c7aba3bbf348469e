//! Access patterns: how fast one thread reads (and updates, with SAXPY) an array when it
//! walks it with a stride, or in a random order, across working-set sizes from the L1
//! cache to DRAM. The figures are throughputs of independent accesses: useful bytes per
//! second and nanoseconds per element visited, never a latency (see `latency` for that).
//!
//! Every pass covers the whole array once whatever the order (see `kernels::strided`), so
//! all strides move the same useful bytes per pass and differ only in how much of every
//! cache line and page they use before it is evicted. A stride of one element uses all of
//! each line; a stride of 64 B or more uses 8 bytes of each line per visit, so when a
//! sweep's lines do not survive until the next sweep every line is fetched eight times per
//! pass; a stride of a page touches a new page at every access, so with 4 KiB pages every
//! access past the TLB's reach also costs a page walk, which huge pages (`--pages`, the
//! caller's arena) remove. Power-of-two strides also crowd a few cache sets (and L1
//! banks), which shows as a dip well inside a cache's size.
//!
//! Trials last about `trial_ns`: many passes for arrays the caches hold, and for larger
//! arrays, where one pass at a wide stride costs tens of milliseconds, a run of sweeps
//! chosen to stand for the pass (see `samples`), so the whole default sweep takes seconds.
//!
//! Only the 8 bytes an access asks for count as useful (24 bytes for a SAXPY element:
//! x read, y read, y written). The random order reads a 4-byte index per access beside
//! the array, traffic that is real but not counted.
//!
//! With `counters`, every row also carries its misses per element visited at each level,
//! counted in a separate untimed run of one trial's units after the row's timed trials,
//! continuing the walk where the trials left it.

pub mod figures;
#[cfg(any(test, feature = "test-support"))]
pub mod samples;
pub mod view;

use serde::{Deserialize, Serialize};
use std::hint::black_box;

use crate::counters::{AccessCounter, AccessCounts, Probe};
use crate::experiments::shared::sizing::sweep_sizes;
use crate::kernels::permutation::{shuffle_indices, SplitMix64};
use crate::kernels::strided::{
    indexed_sum, saxpy_indexed, saxpy_strided, saxpy_strided_offsets, strided_sum,
    strided_sum_offsets,
};
use crate::platform::arena::Arena;
use crate::platform::timer::Timer;
use crate::session::progress::Progress;
use crate::session::warnings::WarningKind;
use crate::stats::Summary;
use crate::topology::Machine;
use crate::units::{Bytes, KIB};

/// Bytes of one array element (u64 for the read, f64 for SAXPY).
const ELEMENT_BYTES: u64 = 8;

/// Useful bytes of one SAXPY element: x[i] read, y[i] read, y[i] written.
const SAXPY_USEFUL_BYTES: u64 = 24;

/// Smallest array of the default sweep: well inside any L1 data cache.
const MIN_SIZE: u64 = 2 * KIB;

/// Default strides, bytes: 1, 3, 5 … 31 elements (odd, so that a stride never shares a
/// factor with the 8 elements of a cache line, and offsets fall on every position in a
/// line), then one line, a few lines and one base page.
fn default_strides() -> Vec<u64> {
    let mut strides: Vec<u64> = (1..=31).step_by(2).map(|e| e * ELEMENT_BYTES).collect();
    for bytes in [64, 256, KIB, 4 * KIB] {
        if !strides.contains(&bytes) {
            strides.push(bytes);
        }
    }
    strides
}

/// The multiplier of the SAXPY: small, so that y grows by a negligible amount however many
/// passes run (no overflow to infinity, no subnormals, which would slow the adds), and not
/// a power of two, so the multiply is a real one.
const SAXPY_A: f64 = 1.0e-7 * 3.0;

/// y starts this many bytes past a page boundary: x[i] and y[i] are then about half a page
/// apart in their low 12 address bits, so they never share an L1 set, and a store to y[i]
/// does not look like the following loads of x to the 4 KiB aliasing check.
const Y_SKEW_BYTES: u64 = 2 * KIB + 64;

/// What to measure; resolved from the command line by `plan`.
#[derive(Debug, Clone)]
pub struct StrideConfig {
    /// Array sizes in bytes, ascending; each is used as a whole number of 8-byte elements.
    pub sizes: Vec<u64>,
    /// Strides in bytes, each used as a whole number of elements (at least one).
    pub strides_bytes: Vec<u64>,
    /// Also measure a random order of all elements at every size.
    pub random: bool,
    /// Also run SAXPY in every order (else only the read).
    pub saxpy: bool,
    /// Timed trials per row; the row's figures are their median.
    pub repetitions: usize,
    /// Target length of one trial, nanoseconds (a trial is never shorter than one unit of
    /// its walk: a pass, a sweep or a run of eight sweeps, see `samples`).
    pub trial_ns: f64,
    pub seed: u64,
    /// Count each row's misses per access with the hardware counters (`--counters`).
    pub counters: bool,
}

impl StrideConfig {
    /// Defaults from the topology: sizes 2 KiB … max (1 per octave, plus max), the strides above.
    fn for_machine(max_size: u64, repetitions: usize, trial_ns: f64) -> StrideConfig {
        StrideConfig {
            sizes: sweep_sizes(MIN_SIZE, max_size, 1, ELEMENT_BYTES),
            strides_bytes: default_strides(),
            random: true,
            saxpy: true,
            repetitions,
            trial_ns,
            seed: 0x5712_1de5,
            counters: false,
        }
    }

    /// The profile's form: every other odd stride up to 31 elements (1, 3, 7, 11 … 31: a
    /// row of each kind of stride; `memscope stride` measures them all) and the line
    /// strides; with `quick`, the reads alone (no SAXPY) and three trials a row.
    pub fn for_profile(mut self, quick: bool) -> StrideConfig {
        let line = LINE_ELEMENTS as u64 * ELEMENT_BYTES;
        self.strides_bytes.retain(|&b| {
            let elements = b / ELEMENT_BYTES;
            b % line == 0 || elements == 1 || elements % 4 == 3
        });
        if quick {
            self.saxpy = false;
            self.repetitions = self.repetitions.min(3);
        }
        self
    }

    /// Bytes the caller must allocate in one arena (x, y and the index array for the largest size).
    /// y is left out without SAXPY and the index array without the random order.
    pub(crate) fn arena_bytes(&self) -> u64 {
        Regions::of(self).total
    }

    fn max_elements(&self) -> usize {
        self.sizes.iter().map(|&s| elements(s)).max().unwrap_or(0)
    }
}

/// `experiments.stride` of the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StrideResult {
    /// For each size, ascending: its read rows (each stride, then random), then its SAXPY
    /// rows in the same order.
    pub rows: Vec<StrideRow>,
}

/// One (size, order, kernel) measurement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StrideRow {
    /// Array size (for SAXPY: each of x and y).
    pub bytes: u64,
    /// Stride between consecutive accesses; null for the random order.
    pub stride_bytes: Option<u64>,
    pub pattern: Pattern,
    pub kernel: Kernel,
    /// Useful bytes per second, decimal GB: 8 per element read, 24 per SAXPY element.
    pub gb_per_s: f64,
    /// Median time per element visited. The accesses are independent and overlap, so this
    /// is a throughput figure (the inverse of accesses per ns), not a latency.
    pub ns_per_access: f64,
    /// Robust spread of the trials: 1.4826 × MAD / median, in percent.
    pub spread_pct: f64,
    /// Misses per element visited at each level (`--counters`), like `ns_per_access`: a
    /// SAXPY visit loads x[i] and y[i] and stores y[i], and a random-order visit also
    /// reads its 4-byte index. Counted over one trial's worth of the walk after the timed
    /// trials; each level not counted says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<AccessCounts>,
}

/// Where x, y and the index array lie in the arena, byte offsets.
struct Regions {
    y: u64,
    index: u64,
    total: u64,
}

impl Regions {
    fn of(config: &StrideConfig) -> Regions {
        let array = config.max_elements() as u64 * ELEMENT_BYTES;
        let page = 4 * KIB;
        let mut end = array;
        let y = array.next_multiple_of(page) + Y_SKEW_BYTES;
        if config.saxpy {
            end = y + array;
        }
        let index = end.next_multiple_of(page);
        if config.random {
            end = index + config.max_elements() as u64 * 4;
        }
        Regions {
            y,
            index,
            total: end.max(ELEMENT_BYTES),
        }
    }
}

/// Whole elements in an array of `bytes` (at least one).
fn elements(bytes: u64) -> usize {
    (bytes / ELEMENT_BYTES).max(1) as usize
}

/// Runs the experiment single-threaded on the calling (already pinned) thread inside
/// `arena`; `machine` names the CPU whose miss events `config.counters` counts.
pub fn measure(
    config: &StrideConfig,
    arena: &Arena,
    timer: &Timer,
    machine: &Machine,
    progress: &Progress,
) -> (StrideResult, Vec<WarningKind>) {
    let regions = Regions::of(config);
    assert!(
        arena.len() as u64 >= regions.total,
        "the arena holds {} but the stride experiment needs {}",
        Bytes(arena.len() as u64),
        Bytes(regions.total)
    );
    let max_elements = config.max_elements();
    assert!(
        max_elements <= u32::MAX as usize,
        "u32 indices address every element"
    );
    let base = arena.as_ptr();
    // SAFETY (for every pointer into the arena below): the regions lie inside it (checked
    // above), are 8-byte aligned (the arena is page aligned, offsets are multiples of 8)
    // and do not overlap.
    let arrays = unsafe {
        Arrays {
            x: base as *mut f64,
            y: base.add(regions.y as usize) as *mut f64,
            index: base.add(regions.index as usize) as *mut u32,
        }
    };

    // Values in [1, 2): non-zero, and SAXPY on them stays far from overflow and subnormals.
    let mut rng = SplitMix64::new(config.seed);
    let mut fill = |array: *mut f64| {
        for i in 0..max_elements {
            let value = 1.0 + (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            // SAFETY: x and y hold max_elements elements.
            unsafe { array.add(i).write(value) };
        }
    };
    fill(arrays.x);
    if config.saxpy {
        fill(arrays.y);
    }

    let kernels: &[Kernel] = if config.saxpy {
        &[Kernel::Read, Kernel::Saxpy]
    } else {
        &[Kernel::Read]
    };
    // Opened once, on this (the measuring, pinned) thread: the counters follow it.
    let counter = config
        .counters
        .then(|| AccessCounter::open(&machine.cpu_vendor, machine.cpu_family, &Probe::detect()));
    let per_size = kernels.len() * (config.strides_bytes.len() + usize::from(config.random));
    progress.start("access patterns", (per_size * config.sizes.len()) as u64);

    let mut rows = Vec::new();
    for (size_index, &bytes) in config.sizes.iter().enumerate() {
        let elements = elements(bytes);
        let mut orders: Vec<(Order, Option<u64>)> = config
            .strides_bytes
            .iter()
            .map(|&b| {
                let stride = (b / ELEMENT_BYTES).max(1) as usize;
                (Order::Strided { stride }, Some(b))
            })
            .collect();
        if config.random {
            // One random order of all the elements, built before any timing and shared by
            // both kernels, in place in the arena (its pages, not a heap copy's): a
            // shuffled sequence of indices visits every element once, in an order the
            // prefetchers cannot follow.
            let mut order_rng = SplitMix64::new(config.seed ^ ((size_index as u64) << 32));
            // SAFETY: the index region holds max_elements ≥ elements u32s, and nothing
            // else points into it while the slice lives.
            let index = unsafe { std::slice::from_raw_parts_mut(arrays.index, elements) };
            shuffle_indices(index, &mut order_rng);
            orders.push((Order::Random, None));
        }
        // All the reads of a size run back to back, then all the SAXPYs: a kernel's rows
        // then find the cache as the previous row of the same kernel left it, which for
        // arrays near the last-level cache's size takes many passes to settle (SAXPY's
        // second array would otherwise evict half of the read's array between rows).
        for &kernel in kernels {
            for &(order, stride_bytes) in &orders {
                progress.message(&format!(
                    "{}, {}, {}",
                    Bytes(bytes),
                    kernel.name(),
                    match stride_bytes {
                        Some(b) => format!("stride {b} B"),
                        None => "random order".to_string(),
                    }
                ));
                let mut walk = Walk::new(kernel, order, arrays, elements);
                let (trials, units) = samples(config, timer, &mut walk);
                let mut row = row(bytes, stride_bytes, order, kernel, &trials);
                row.counters = counter.as_ref().map(|c| counted(c, &mut walk, units));
                rows.push(row);
                progress.advance();
            }
        }
    }
    progress.finish();
    (StrideResult { rows }, Vec::new())
}

/// What a visit does to an element, written in reports as "read" or "saxpy".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kernel {
    /// Sum of the elements.
    Read,
    /// y = a·x + y.
    Saxpy,
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The order of the visits, written in reports as "strided" or "random".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    Strided,
    Random,
}

impl Pattern {
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Strided => "strided",
            Pattern::Random => "random",
        }
    }
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Kernel {
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Read => "read",
            Kernel::Saxpy => "saxpy",
        }
    }

    /// Bytes an element visit asks for.
    fn useful_bytes(self) -> u64 {
        match self {
            Kernel::Read => ELEMENT_BYTES,
            Kernel::Saxpy => SAXPY_USEFUL_BYTES,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    /// Stride in elements.
    Strided {
        stride: usize,
    },
    Random,
}

/// The arrays in the arena: x (read by both kernels), y (SAXPY) and the random order.
#[derive(Debug, Clone, Copy)]
struct Arrays {
    x: *mut f64,
    y: *mut f64,
    index: *mut u32,
}

/// A row from its trials (ns per element visited).
fn row(
    bytes: u64,
    stride_bytes: Option<u64>,
    order: Order,
    kernel: Kernel,
    trials: &[f64],
) -> StrideRow {
    let summary = Summary::of(trials).expect("every row has finite trials");
    StrideRow {
        bytes,
        stride_bytes,
        pattern: match order {
            Order::Strided { .. } => Pattern::Strided,
            Order::Random => Pattern::Random,
        },
        kernel,
        // Bytes per nanosecond are decimal GB per second.
        gb_per_s: kernel.useful_bytes() as f64 / summary.median,
        ns_per_access: summary.median,
        spread_pct: summary.spread_pct(),
        counters: None,
    }
}

/// The misses per element visited of `units` more units of `walk` (untimed, after the
/// trials): the visits are known before the walk runs, so the counts are divided by
/// exactly the accesses made.
fn counted(counter: &AccessCounter, walk: &mut Walk, units: usize) -> AccessCounts {
    let visits = walk.visits_in(units);
    let (made, counts) = counter.count(visits as u64, || walk.run(units));
    debug_assert_eq!(made, visits, "visits_in predicts run");
    counts
}

/// Elements in one cache line (64 B, on every machine memscope targets): the offsets of a
/// strided pass that share lines come in runs of this many.
const LINE_ELEMENTS: usize = 8;

/// Steps (elements) per unit of the random order: long enough that the call costs
/// nothing next to it, short enough to cut trials finely.
const RANDOM_UNIT: usize = 4096;

/// The longest a warm-up may run, in trials, when a pass takes longer: far more than it
/// takes to bring a cache-sized array in, far less than a pass through a large array
/// costs at a wide stride (which would warm nothing the trials do not warm anyway).
const WARM_UP_TRIALS: f64 = 4.0;

/// One kernel walking one array in one order, as a cycle of steps that repeats every
/// pass: a step is one offset's sweep of a strided pass, or one element of the random
/// order. Trials are made of whole units (runs of steps) and continue where the previous
/// one stopped, so that over a row the trials walk the passes in order.
#[derive(Clone)]
struct Walk {
    kernel: Kernel,
    order: Order,
    arrays: Arrays,
    elements: usize,
    /// Steps per pass.
    steps: usize,
    /// Steps per unit (the last unit of a pass may be shorter).
    unit: usize,
    /// Next step, at a unit boundary between trials.
    position: usize,
}

impl Walk {
    fn new(kernel: Kernel, order: Order, arrays: Arrays, elements: usize) -> Walk {
        let (steps, unit) = match order {
            Order::Strided { stride } => (stride.min(elements), 1),
            Order::Random => (elements, RANDOM_UNIT.min(elements)),
        };
        Walk {
            kernel,
            order,
            arrays,
            elements,
            steps,
            unit,
            position: 0,
        }
    }

    fn units_per_pass(&self) -> usize {
        self.steps.div_ceil(self.unit)
    }

    /// Runs the next `units` units and returns the elements they visited. The bookkeeping
    /// is a few integer operations per call, nothing next to a trial.
    fn run(&mut self, units: usize) -> usize {
        self.advance(units, true)
    }

    /// The elements the next `units` units would visit, without running them.
    fn visits_in(&self, units: usize) -> usize {
        self.clone().advance(units, false)
    }

    /// Moves on `units` units, running the kernel over them when `execute`; returns the
    /// elements visited.
    fn advance(&mut self, units: usize, execute: bool) -> usize {
        let per_pass = self.units_per_pass();
        let mut left = units;
        let mut visits = 0;
        while left > 0 {
            if self.position == 0 && left >= per_pass {
                let passes = left / per_pass;
                if execute {
                    self.run_passes(passes);
                }
                visits += passes * self.elements;
                left -= passes * per_pass;
                continue;
            }
            let first_unit = self.position / self.unit;
            let take = left.min(per_pass - first_unit);
            let end = ((first_unit + take) * self.unit).min(self.steps);
            let count = end - self.position;
            visits += if execute {
                self.run_steps(self.position, count)
            } else {
                self.step_visits(self.position, count)
            };
            self.position = if end == self.steps { 0 } else { end };
            left -= take;
        }
        visits
    }

    fn run_passes(&self, passes: usize) {
        let Arrays { x, y, index } = self.arrays;
        let n = self.elements;
        // SAFETY: x and y hold at least n elements (max_elements), the first n entries of
        // the index array are a permutation of 0..n when the order is random.
        unsafe {
            match (self.order, self.kernel) {
                (Order::Strided { stride }, Kernel::Read) => {
                    black_box(strided_sum(x as *const u64, n, stride, passes));
                }
                (Order::Strided { stride }, Kernel::Saxpy) => {
                    saxpy_strided(x, y, n, stride, SAXPY_A, passes)
                }
                (Order::Random, Kernel::Read) => {
                    black_box(indexed_sum(x as *const u64, index, n, passes));
                }
                (Order::Random, Kernel::Saxpy) => saxpy_indexed(x, y, index, n, SAXPY_A, passes),
            }
        }
    }

    /// Runs steps `first .. first + count` of a pass; returns the elements visited.
    fn run_steps(&self, first: usize, count: usize) -> usize {
        let Arrays { x, y, index } = self.arrays;
        let n = self.elements;
        // SAFETY: as in run_passes; first + count ≤ steps, so the offsets are below the
        // stride and the index range lies in the first n entries.
        unsafe {
            match (self.order, self.kernel) {
                (Order::Strided { stride }, Kernel::Read) => {
                    black_box(strided_sum_offsets(
                        x as *const u64,
                        n,
                        stride,
                        first,
                        count,
                    ));
                }
                (Order::Strided { stride }, Kernel::Saxpy) => {
                    saxpy_strided_offsets(x, y, n, stride, first, count, SAXPY_A)
                }
                (Order::Random, Kernel::Read) => {
                    black_box(indexed_sum(x as *const u64, index.add(first), count, 1));
                }
                (Order::Random, Kernel::Saxpy) => {
                    saxpy_indexed(x, y, index.add(first), count, SAXPY_A, 1)
                }
            }
        }
        self.step_visits(first, count)
    }

    /// The elements steps `first .. first + count` of a pass visit.
    fn step_visits(&self, first: usize, count: usize) -> usize {
        match self.order {
            // Sweeps of offsets below n % stride visit one element more than the others.
            Order::Strided { stride } => {
                let n = self.elements;
                let (quotient, remainder) = (n / stride, n % stride);
                count * quotient + remainder.min(first + count).saturating_sub(first)
            }
            Order::Random => count,
        }
    }
}

/// Times `units` units of `walk`: nanoseconds and elements visited.
fn timed(timer: &Timer, walk: &mut Walk, units: usize) -> (f64, usize) {
    let t0 = timer.start();
    let visits = walk.run(units);
    let t1 = timer.stop();
    (timer.ticks_to_ns(t1.saturating_sub(t0)), visits)
}

/// Returns `config.repetitions` trials of `walk` in ns per element visited.
///
/// A trial is a whole number of passes when a pass is shorter than a trial, as it is for
/// every array the caches hold. Past the caches a pass at a wide stride costs tens of
/// milliseconds (each of its sweeps fetches every line or page again), and whole-pass
/// trials would make the experiment last minutes; trials are then runs of sweeps (or of
/// the random order), which stand for the pass as long as every unit is alike:
///
/// - below 8 elements of stride every sweep touches every line of the array, so all
///   sweeps are alike and one sweep is a unit;
/// - from 8 elements on, the 8 sweeps of a run of offsets share their lines: when what the
///   first brings in survives until the next (its lines fit some cache), the later ones
///   are faster, so the unit is the whole run of 8. The first two sweeps, timed one by
///   one, tell which: a second sweep more than 10% faster than the first means reuse;
/// - the random order has no such structure: a unit is 4096 elements.
///
/// The warm-up is one pass, stopped after `WARM_UP_TRIALS` trials' time; runs of doubling
/// length then size the trials (when a unit already lasts a quarter trial, the warm-up's
/// last unit sizes them). Also returns the units of one trial.
fn samples(config: &StrideConfig, timer: &Timer, walk: &mut Walk) -> (Vec<f64>, usize) {
    let warm_up_limit = WARM_UP_TRIALS * config.trial_ns;
    let mut warm_up_ns = 0.0;
    let mut warm_up_steps = 0;
    let mut last = (f64::NAN, 0usize);

    if let Order::Strided { stride } = walk.order {
        if stride >= LINE_ELEMENTS && walk.steps >= 2 {
            let first = timed(timer, walk, 1);
            let second = timed(timer, walk, 1);
            warm_up_ns = first.0 + second.0;
            warm_up_steps = 2;
            last = second;
            let group = LINE_ELEMENTS.min(walk.steps);
            if first.0 * group as f64 <= config.trial_ns || second.0 < 0.9 * first.0 {
                // The two sweeps began the first unit; finish it (as part of the warm-up)
                // so that every timed run starts on a unit boundary.
                walk.unit = group;
                walk.run_steps(2, group - 2);
                walk.position = group % walk.steps;
                warm_up_steps = group;
            }
        }
    }
    while warm_up_steps < walk.steps && warm_up_ns < warm_up_limit {
        let before = walk.position;
        last = timed(timer, walk, 1);
        warm_up_ns += last.0;
        warm_up_steps += if walk.position == 0 {
            walk.steps - before
        } else {
            walk.position - before
        };
    }

    let ns_per_visit = if last.0 >= config.trial_ns / 4.0 && last.1 > 0 {
        last.0 / last.1 as f64
    } else {
        let mut units = 1usize;
        loop {
            let (ns, visits) = timed(timer, walk, units);
            if ns >= config.trial_ns / 4.0 || units >= 1 << 30 {
                break ns.max(1.0) / visits.max(1) as f64;
            }
            units *= 2;
        }
    };
    let visits_per_unit = walk.elements as f64 / walk.units_per_pass() as f64;
    let unit_ns = ns_per_visit * visits_per_unit;
    let units = ((config.trial_ns / unit_ns).round() as usize).max(1);
    let trials = (0..trial_count(config, units as f64 * unit_ns))
        .map(|_| {
            let (ns, visits) = timed(timer, walk, units);
            ns / visits.max(1) as f64
        })
        .collect();
    (trials, units)
}

/// Trials for a row whose trial lasts `trial_ns` (more than asked when one unit is longer):
/// as many as asked, but no more than the asked trials' time in all, and at least
/// `MIN_LONG_TRIALS` — a trial of many sweeps through DRAM already averages over far more
/// time than a short one, so fewer of them carry as much.
fn trial_count(config: &StrideConfig, trial_ns: f64) -> usize {
    let asked = config.repetitions.max(1);
    let fit = (asked as f64 * config.trial_ns / trial_ns).ceil() as usize;
    fit.clamp(asked.min(MIN_LONG_TRIALS), asked)
}

/// The fewest trials of a row whose units outlast the asked trial.
const MIN_LONG_TRIALS: usize = 3;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::arena::PagePolicy;
    use crate::units::MIB;

    #[test]
    fn defaults_cover_the_strides_and_sizes_of_the_issue() {
        let config = StrideConfig::for_machine(64 * MIB, 3, 1e6);
        let mut expected: Vec<u64> = (0..16).map(|k| 8 + 16 * k).collect();
        expected.extend([64, 256, 1024, 4096]);
        assert_eq!(config.strides_bytes, expected);
        let mut unique = config.strides_bytes.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), config.strides_bytes.len());
        assert_eq!(config.sizes.first(), Some(&(2 * KIB)));
        assert_eq!(config.sizes.last(), Some(&(64 * MIB)));
        assert_eq!(config.sizes.len(), 16);
        assert!(config.sizes.windows(2).all(|w| w[1] == 2 * w[0]));
        // A maximum that is not a power of two is still the last size.
        let odd = StrideConfig::for_machine(100 * MIB, 3, 1e6);
        assert_eq!(odd.sizes.last(), Some(&(100 * MIB)));
        // x, y and the u32 indices of the largest size.
        assert!(config.arena_bytes() >= 64 * MIB * 2 + 32 * MIB);
        assert!(config.arena_bytes() < 64 * MIB * 2 + 32 * MIB + 16 * KIB);
    }

    #[test]
    fn trials_cut_from_passes_visit_every_element_once_per_pass() {
        let n = 1001;
        let mut x = vec![1.0f64; n];
        let mut y = vec![1.0f64; n];
        let mut index: Vec<u32> = (0..n as u32).rev().collect();
        let arrays = Arrays {
            x: x.as_mut_ptr(),
            y: y.as_mut_ptr(),
            index: index.as_mut_ptr(),
        };
        for (order, unit) in [
            (Order::Strided { stride: 31 }, 8),
            (Order::Strided { stride: 31 }, 1),
            (Order::Strided { stride: 3 }, 1),
            (Order::Strided { stride: 4096 }, 8),
            (Order::Random, RANDOM_UNIT.min(n)),
            (Order::Random, 100),
        ] {
            for kernel in [Kernel::Read, Kernel::Saxpy] {
                let mut walk = Walk::new(kernel, order, arrays, n);
                walk.unit = unit;
                let per_pass = walk.units_per_pass();
                // Runs of assorted lengths that add up to three passes.
                let mut visits = 0;
                let mut left = 3 * per_pass;
                for length in [1, per_pass + 2, 2, 5, 1].iter().cycle() {
                    if left == 0 {
                        break;
                    }
                    let units = (*length).min(left);
                    let position = walk.position;
                    let predicted = walk.visits_in(units);
                    assert_eq!(walk.position, position, "a dry run does not move the walk");
                    let made = walk.run(units);
                    assert_eq!(made, predicted, "{order:?} unit {unit} {kernel:?}");
                    visits += made;
                    left -= units;
                }
                assert_eq!(visits, 3 * n, "{order:?} unit {unit} {kernel:?}");
                assert_eq!(walk.position, 0, "{order:?} unit {unit} {kernel:?}");
            }
        }
    }

    #[test]
    fn a_tiny_run_gives_one_row_per_size_stride_and_kernel() {
        let config = StrideConfig {
            sizes: sweep_sizes(2 * KIB, 64 * KIB, 1, ELEMENT_BYTES),
            strides_bytes: vec![8, 4096],
            random: true,
            saxpy: true,
            repetitions: 1,
            trial_ns: 50_000.0,
            seed: 1,
            counters: true,
        };
        let arena = Arena::new(Bytes(config.arena_bytes()), PagePolicy::Base).unwrap();
        let timer = Timer::calibrate().0;
        let machine = Machine {
            cpu_vendor: "AuthenticAMD".into(),
            cpu_family: Some(0x19),
            ..Machine::default()
        };
        let (result, _warnings) = measure(&config, &arena, &timer, &machine, &Progress::hidden());
        assert_eq!(config.sizes.len(), 6);
        // 36 distinct rows, each of a size, a kernel and an order asked for: each once.
        let orders = [
            (Some(8), "strided"),
            (Some(4096), "strided"),
            (None, "random"),
        ];
        let mut keys: Vec<_> = (result.rows.iter())
            .map(|r| (r.bytes, r.kernel.name(), r.stride_bytes, r.pattern.name()))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 6 * 2 * 3);
        assert_eq!(result.rows.len(), keys.len());
        for (bytes, kernel, stride, pattern) in keys {
            assert!(config.sizes.contains(&bytes) && ["read", "saxpy"].contains(&kernel));
            assert!(orders.contains(&(stride, pattern)), "{stride:?} {pattern}");
        }
        for r in &result.rows {
            assert!(r.gb_per_s.is_finite() && r.gb_per_s > 0.0, "{r:?}");
            let ns = r.ns_per_access;
            assert!(ns.is_finite() && ns > 0.0, "{r:?}");
            // Every row is counted over whole visits (or says why per level).
            let counts = r.counters.as_ref().expect("counters were asked for");
            assert!(counts.accesses > 0, "{r:?}");
            assert_eq!(counts.levels.len(), 4, "{r:?}");
            let levels = &counts.levels;
            assert!(levels
                .iter()
                .all(|l| l.per_access.is_some() != l.not_supported.is_some()));
            let useful = if r.kernel == Kernel::Saxpy { 24.0 } else { 8.0 };
            assert!((r.gb_per_s * ns - useful).abs() < 1e-9, "{r:?}");
        }
    }
}

pub mod params;
mod run;
