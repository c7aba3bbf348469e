//! TLB reach and miss cost: a chase that touches one line per page, over more and more
//! pages, with 4 KiB and with 2 MiB pages; the knees of the curve are the TLB levels. Also
//! what huge pages buy a real kernel (SAXPY) and the misses in flight (MLP).
//!
//! **The curve.** For P pages, one probe line sits in each of the first P pages of a
//! buffer, at line offsets that spread the probes evenly over the cache sets (see
//! `kernels::pageprobe`), linked into one random cycle; the time per load is timed like a
//! latency point. P runs from 4 to the maximum at `points_per_octave` points per doubling.
//! The probes' lines also outgrow the data caches (512 lines fill a 32 KiB L1d), so every
//! point is measured a second time with the same number of lines packed densely into a
//! buffer of huge pages (the *dense* control: no TLB misses, the same data-cache misses).
//! `tlb_ns = ns − dense_ns` is what the TLB adds per access.
//!
//! **Levels.** The curve the levels are found from is `hit_ns + tlb_ns`, the latency a
//! load would have if its line were always in L1 (hit_ns is the dense latency of the
//! smallest point): flat while the pages fit a TLB level, one step up per level missed.
//! Its plateaus come from `stats::segment` (on log scale); the first plateaus are the TLB
//! levels in order, one per level the CPU has for the page size (CPUID tells how many
//! levels to expect, never where they end; two when it says nothing), and what follows is
//! the page walk, whose cost keeps rising as the page tables themselves leave the caches.
//! A level holds its pages up to the knee: the largest page count whose latency is still
//! at or below the midpoint between its plateau and the cost of a miss (at least half the
//! loads still hit), scanning down from where the next plateau starts so that noise,
//! which only adds time, cannot carry a knee too far. The cost of a miss is read on the
//! curve a little past the knee ([`MISS_REFERENCE_RATIO`]), not from the median of the
//! next plateau, which for the walk lies far past it (see [`find_tlb_levels`]). After the
//! sweep each knee is refined: the page counts between the last point at or below the
//! midpoint and the first above it are measured (every count when there are few, twelve
//! log-spaced ones otherwise) and the knees are placed again on all points, for up to
//! [`REFINE_ROUNDS`] rounds. A level's miss cost is that step; the walk's figure is what
//! a load pays just past the last TLB's reach (the rows show how it grows).
//!
//! **SAXPY** (`y = a·x + y`, f64) over x and y of `saxpy_footprint` bytes together:
//! stride 1, and a stride of one 4 KiB page (512 elements), with 4 KiB and with huge
//! pages. Every pattern updates every element once per pass (see `kernels::strided`). A
//! strided pass over a GiB takes seconds, so strided trials time a run of whole offset
//! sweeps lasting about [`SAXPY_STRIDED_TRIAL_NS`] and the pass time is scaled from it
//! (`timed_fraction` says how much of a pass a trial was): every offset sweep touches the
//! same pages in the same order, so each is representative.
//!
//! **MLP** at DRAM (`experiments::mlp`, all chain counts) once in 4 KiB pages and once in
//! huge pages: a load that misses the TLB cannot leave for DRAM before its walk is done,
//! so small pages can leave fewer misses in flight; the one-chain rows give the DRAM
//! latency with each page size.
//!
//! **Counters.** With `counters`, every row of the curves also carries the misses per load
//! at each level (L1, L2, LLC, DTLB) of its one-line-per-page chase, counted over one more
//! trial's worth of the chase, untimed, after its trials (`ChaseCursor::counted`).

mod charts;
mod levels;
mod page_size;

use levels::{find_tlb_levels, FoundTlbLevel};
use page_size::{knees_to_refine, levels_of, measure_page_size, rows_of};
mod data;
pub mod figures;
#[cfg(any(test, feature = "test-support"))]
pub mod samples;
pub mod view;

use serde::{Deserialize, Serialize};

/// `experiments.tlb` of the report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TlbResult {
    /// One row per page size × page count.
    pub rows: Vec<TlbRow>,
    /// The TLB levels found from each page size's curve.
    pub levels: Vec<TlbLevel>,
    /// SAXPY over the same footprint: sequential, one 4 KiB page apart, and with huge
    /// pages.
    pub saxpy: Vec<SaxpyTlbRow>,
    /// DRAM parallelism with 4 KiB and with huge pages.
    pub mlp_by_page_size: Vec<MlpByPageSize>,
    /// Entries × page size per TLB level, from CPUID and from the measurement.
    pub reach: Vec<TlbReach>,
}

impl TlbResult {
    /// The page sizes measured, smallest first.
    pub(crate) fn page_sizes(&self) -> Vec<u64> {
        let mut sizes: Vec<u64> = self.rows.iter().map(|r| r.page_bytes).collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }

    /// The curve of one page size, by page count.
    pub fn curve(&self, page_bytes: u64) -> Vec<&TlbRow> {
        let mut rows: Vec<&TlbRow> = self
            .rows
            .iter()
            .filter(|r| r.page_bytes == page_bytes)
            .collect();
        rows.sort_by_key(|r| r.pages);
        rows
    }
}

/// One point: `pages` pages, one line touched in each, in a random cyclic order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TlbRow {
    pub page_bytes: u64,
    pub pages: u64,
    /// Median load-to-use latency of the one-line-per-page chase, ns.
    pub ns: f64,
    pub cycles: f64,
    /// The same number of lines packed densely into as few pages as possible (the data
    /// caches' share of `ns`), ns.
    pub dense_ns: f64,
    /// `ns − dense_ns`: what the TLB adds per access at this page count, ns.
    pub tlb_ns: f64,
    pub spread_pct: f64,
    /// Misses per load of the one-line-per-page chase at each level (`--counters`),
    /// counted after its timed trials; each level not counted says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<AccessCounts>,
}

/// One TLB level found from the data.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TlbLevel {
    pub page_bytes: u64,
    /// "L1 DTLB", "L2 DTLB", … in order, then "page walk".
    pub name: String,
    /// Pages covered before the next knee (None for the page-walk region).
    pub entries: Option<u64>,
    /// entries × page_bytes.
    pub reach_bytes: Option<u64>,
    /// What a miss in this level costs over a hit in it: the step to the next plateau, ns.
    pub miss_ns: Option<f64>,
    pub miss_cycles: Option<f64>,
    /// The entries CPUID reports for this level and page size, if any.
    pub cpuid_entries: Option<u32>,
    /// What the TLB adds per access on this level's plateau (`tlb_ns` of its rows): about
    /// 0 for L1 DTLB hits, the L1 miss for L2 DTLB hits, the walk for "page walk", ns.
    pub tlb_ns: f64,
    /// Page counts where the curve leaves the plateau and where it has nearly reached the
    /// miss cost (see [`FoundTlbLevel::transition`]): where the knee can land from run to
    /// run. None for the walk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transition_pages: Option<(u64, u64)>,
    /// The miss cost read with the knee at either end of the transition, ns (lower,
    /// higher): how far it moves when the knee lands elsewhere in the rise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miss_ns_range: Option<(f64, f64)>,
}

/// SAXPY (y = a·x + y) over the same footprint in one access pattern.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SaxpyTlbRow {
    /// "stride 1", "stride 4 KiB", "stride 4 KiB, huge pages" …
    pub pattern: String,
    pub page_bytes: u64,
    pub stride_bytes: u64,
    /// x and y together, bytes.
    pub footprint_bytes: u64,
    /// Time for one pass over every element, ms.
    pub pass_ms: f64,
    /// ns per element updated.
    pub ns_per_access: f64,
    /// Fraction of a pass each timed trial covered (1 for whole passes; strided passes
    /// are timed in part and `pass_ms` scaled from it).
    pub timed_fraction: f64,
}

/// DRAM MLP with one page size.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MlpByPageSize {
    pub page_bytes: u64,
    pub bytes: u64,
    pub chains: u32,
    pub ns_per_load: f64,
    pub parallelism: f64,
    /// One chain: the random-chase DRAM latency with this page size, ns.
    pub latency_ns: f64,
    pub latency_cycles: f64,
}

/// Entries × page size of one TLB level.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TlbReach {
    pub name: String,
    pub page_bytes: u64,
    pub cpuid_entries: Option<u32>,
    pub cpuid_reach_bytes: Option<u64>,
    pub measured_entries: Option<u64>,
    pub measured_reach_bytes: Option<u64>,
}

use std::collections::BTreeMap;

use crate::counters::{AccessCounter, AccessCounts, Probe};
use crate::error::UsageError;
use crate::experiments::chase_timing::ChaseCursor;
use crate::experiments::shared::chains::{
    self as chains, chain_counts, default_chains, saturation_of, sweep, to_rows, Cycle, Sampling,
    SLOT_BYTES,
};
use crate::experiments::shared::level::Level;
use crate::experiments::shared::sampling::UNSTABLE_SPREAD_PCT;
use crate::experiments::shared::sizing::sweep_sizes;
use crate::kernels::pageprobe::{self, LINE_BYTES};
use crate::kernels::permutation::SplitMix64;
use crate::kernels::strided::saxpy_strided_offsets;
use crate::platform::arena::{Arena, PagePolicy};
use crate::platform::timer::Timer;
use crate::session::progress::Progress;
use crate::session::warnings::WarningKind;
use crate::stats::Summary;
use crate::topology::{CacheKind, Machine};
use crate::units::{Bytes, GIB, KIB, MIB};

/// What to measure; resolved from the command line by `plan` (see [`TlbConfig::new`]
/// for the defaults).
#[derive(Debug, Clone)]
pub struct TlbConfig {
    /// Page policy of the huge-page curve, SAXPY and MLP rows: `Thp` or `Huge2M`
    /// (hugetlbfs); `Base` skips them.
    pub huge: PagePolicy,
    /// Largest page count of the 4 KiB curve.
    pub max_pages_base: u64,
    /// Largest page count of the huge-page curve (capped at run time by half the
    /// available memory, or by the free hugetlbfs pool).
    pub max_pages_huge: u64,
    pub points_per_octave: u32,
    /// Timed trials per point.
    pub repetitions: usize,
    /// Target length of one trial, ns.
    pub trial_ns: f64,
    /// Bytes of x and y together for the SAXPY rows; 0 skips them.
    pub saxpy_footprint: u64,
    /// DRAM working set of the MLP rows; 0 skips them.
    pub mlp_bytes: u64,
    pub seed: u64,
    /// Count the misses per load of every row of the curves with the hardware counters
    /// (`--counters`).
    pub counters: bool,
}

impl TlbConfig {
    /// The defaults: 4 KiB pages up to 2^17 (quick: 2^16); huge pages up to the power of
    /// two at or above 1.25 × the largest TLB CPUID reports for them (4096 when it says
    /// nothing; quick: 256); 4 points per octave (quick: 2); SAXPY over 1 GiB and MLP at
    /// 256 MiB (quick: neither).
    ///
    /// The huge-page maximum is a trade: every 2 MiB page of the curve is real memory
    /// that must be zeroed (and, in a VM, often faulted in by the host first: 8 GiB took
    /// 7–18 s on a KVM guest), while the sweep must reach past the largest TLB by enough
    /// for the walk to form a plateau of its own (three sweep points).
    pub fn new(
        machine: &Machine,
        huge: PagePolicy,
        quick: bool,
        repetitions: usize,
        trial_ns: f64,
        seed: u64,
    ) -> TlbConfig {
        let largest_huge_tlb = cpuid_levels(machine, huge.page_bytes())
            .iter()
            .map(|&(_, entries)| u64::from(entries))
            .max();
        TlbConfig {
            huge,
            max_pages_base: if quick { 1 << 16 } else { 1 << 17 },
            max_pages_huge: if quick {
                256
            } else {
                largest_huge_tlb.map_or(4096, |e| (e + e / 4).next_power_of_two())
            },
            points_per_octave: if quick { 2 } else { 4 },
            repetitions,
            trial_ns,
            saxpy_footprint: if quick { 0 } else { GIB },
            mlp_bytes: if quick { 0 } else { 256 * MIB },
            seed,
            counters: false,
        }
    }
}

/// What the TLB adds per access (`tlb_ns`) with `page_bytes` pages at the measured page
/// count nearest to `pages` (on a log scale), when the curve reaches within a factor of
/// two of it.
pub(crate) fn tlb_ns_at(result: &TlbResult, page_bytes: u64, pages: u64) -> Option<f64> {
    let distance = |r: &TlbRow| {
        ((r.pages.max(1) as f64) / (pages.max(1) as f64))
            .log2()
            .abs()
    };
    result
        .curve(page_bytes)
        .into_iter()
        .filter(|r| r.tlb_ns.is_finite() && distance(r) <= 1.0)
        .min_by(|a, b| distance(a).total_cmp(&distance(b)))
        .map(|r| r.tlb_ns.max(0.0))
}

/// The smallest page count of a curve.
const MIN_PAGES: u64 = 4;

/// Points measured between the two bracketing points of a knee (every count when fewer
/// lie between them).
const REFINE_POINTS: usize = 12;

/// Rounds of knee refinement at most, and the bracket width (relative to the knee) below
/// which a knee is placed finely enough.
pub(crate) const REFINE_ROUNDS: usize = 3;
const REFINED_WIDTH: f64 = 0.02;

/// How far past a knee (ratio of page counts) the cost of a miss is read: far enough that
/// an unevenly indexed set-associative TLB misses in (nearly) every set, near enough that
/// the page tables have hardly outgrown the caches the walk reads them from.
const MISS_REFERENCE_RATIO: f64 = 1.5;

/// Target length of one strided SAXPY trial, ns.
const SAXPY_STRIDED_TRIAL_NS: f64 = 60e6;

/// Timed SAXPY trials per pattern (after one untimed warm-up).
const SAXPY_TRIALS: usize = 3;

/// A level whose knee is further than this (ratio) from the entries CPUID reports gets a
/// warning.
const CPUID_MISMATCH: f64 = 0.25;

/// Distance between x and y in the SAXPY buffer beyond whole pages: not a multiple of
/// 4 KiB (no 4K aliasing between the load of x and the store to y) and not a power of two
/// (DESIGN.md).
const SAXPY_ARRAY_GAP: u64 = 7 * KIB + 512;

/// Runs the TLB curves with 4 KiB and with huge pages, the SAXPY rows and the MLP rows,
/// on the calling thread (pinned by the caller). Returns the result and quality
/// warnings; fails when a buffer cannot be had (e.g. a hugetlbfs pool too small).
pub fn measure(
    config: &TlbConfig,
    timer: &Timer,
    machine: &Machine,
    progress: &Progress,
) -> Result<(TlbResult, Vec<WarningKind>), UsageError> {
    let core_ghz = machine.core_hz_estimate.map(|hz| hz / 1e9);
    let to_cycles = |ns: f64| core_ghz.map_or(f64::NAN, |ghz| ns * ghz);
    // Opened once, on this (the measuring, pinned) thread: the counters follow it.
    let counter = config
        .counters
        .then(|| AccessCounter::open(&machine.cpu_vendor, machine.cpu_family, &Probe::detect()));
    let run = Run {
        config,
        sampler: Sampler {
            timer,
            trial_ns: config.trial_ns,
            repetitions: config.repetitions.max(1),
            counter: counter.as_ref(),
        },
        machine,
        progress,
    };
    let mut warnings = Vec::new();
    let huge_pages = (config.huge != PagePolicy::Base)
        .then(|| {
            config
                .max_pages_huge
                .min(huge_page_cap(config.huge, machine))
        })
        .filter(|&pages| pages >= MIN_PAGES);
    let max_lines = config
        .max_pages_base
        .max(huge_pages.unwrap_or(0))
        .max(MIN_PAGES);
    let mut dense = Dense::new(max_lines, machine)?;

    // SAXPY and MLP share each page size's buffer with its curve.
    let aux_bytes = saxpy_arena_bytes(config.saxpy_footprint).max(config.mlp_bytes);
    let mut measured = Vec::new();
    let max_pages = config.max_pages_base.max(MIN_PAGES);
    let arena = Arena::new(
        Bytes((max_pages * PagePolicy::Base.page_bytes()).max(aux_bytes)),
        PagePolicy::Base,
    )?;
    measured.push(measure_page_size(&run, &arena, max_pages, &mut dense));
    if let Some(max_pages) = huge_pages {
        let arena = Arena::new(
            Bytes((max_pages * config.huge.page_bytes()).max(aux_bytes)),
            config.huge,
        )?;
        let obtained = arena.obtained();
        if obtained.huge_fraction == 0.0 {
            warnings.push(WarningKind::Skipped {
                experiment: "tlb with huge pages".to_string(),
                reason: format!(
                    "the buffer got no huge pages (policy {}); the 4 KiB curve stands alone",
                    config.huge
                ),
            });
        } else {
            if obtained.huge_fraction < 0.9 {
                warnings.push(WarningKind::ThpPartial {
                    fraction: obtained.huge_fraction,
                });
            }
            measured.push(measure_page_size(&run, &arena, max_pages, &mut dense));
        }
    }
    let (mut rows, mut levels, mut saxpy, mut mlp_rows) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut unstable = Vec::new();
    for (curve, saxpy_of, mlp_of) in measured {
        rows_of(&curve, to_cycles, &mut rows, &mut unstable);
        levels_of(&curve, machine, to_cycles, &mut levels, &mut warnings);
        saxpy.extend(saxpy_of);
        mlp_rows.extend(mlp_of);
    }
    if !unstable.is_empty() {
        warnings.push(WarningKind::UnstablePoints {
            count: unstable.len(),
            sizes: unstable.join(", "),
        });
    }
    let reach = reach_rows(machine, &levels);
    Ok((
        TlbResult {
            rows,
            levels,
            saxpy,
            mlp_by_page_size: mlp_rows,
            reach,
        },
        warnings,
    ))
}

/// Pages of `policy` the machine can give the huge-page curve: half the available memory,
/// or the free pages of a hugetlbfs pool.
fn huge_page_cap(policy: PagePolicy, machine: &Machine) -> u64 {
    let page = policy.page_bytes();
    match policy {
        PagePolicy::Huge2M | PagePolicy::Huge1G => machine
            .hugepage_pools
            .iter()
            .find(|p| p.page_bytes == page)
            .map_or(0, |p| p.free),
        _ => machine.available_memory().bytes / 2 / page,
    }
}

/// (level, entries) of the data and unified TLBs CPUID reports for a page size, by level.
fn cpuid_levels(machine: &Machine, page_bytes: u64) -> Vec<(u32, u32)> {
    let mut levels: Vec<(u32, u32)> = machine
        .tlbs
        .iter()
        .filter(|t| {
            t.page_bytes == page_bytes
                && (t.kind == CacheKind::Data || t.kind == CacheKind::Unified)
        })
        .map(|t| (t.level, t.entries))
        .collect();
    levels.sort_unstable();
    levels.dedup_by_key(|l| l.0);
    levels
}

/// TLB levels assumed when CPUID reports none for a page size (every current x86 and Arm
/// core has two levels of data TLB).
const DEFAULT_TLB_LEVELS: usize = 2;

/// Name of the level past every TLB.
const PAGE_WALK: &str = "page walk";

/// How long and how often one point is timed, and the counters of `--counters`.
struct Sampler<'a> {
    timer: &'a Timer,
    trial_ns: f64,
    repetitions: usize,
    counter: Option<&'a AccessCounter>,
}

impl Sampler<'_> {
    /// Trials in ns per load of the chase from `start` through `probes` probes: a warm-up
    /// lap, then trials sized to `trial_ns` (see `chase_timing`); when `count` and the
    /// sampler has a counter, also the misses per load of one more trial's worth, untimed.
    ///
    /// # Safety
    /// `start` begins a complete chain that outlives the call.
    unsafe fn chase(
        &self,
        start: *const usize,
        probes: usize,
        count: bool,
    ) -> (Vec<f64>, Option<AccessCounts>) {
        let mut cursor = ChaseCursor::new(start);
        cursor.warm_up_lap(probes, self.timer, self.trial_ns);
        let trials = cursor.trials(self.timer, self.trial_ns, self.repetitions);
        let counted = self.counter.filter(|_| count).map(|counter| {
            let median = Summary::of(&trials).map_or(f64::NAN, |s| s.median);
            cursor.counted(counter, self.trial_ns, median)
        });
        (trials, counted)
    }
}

/// Trials of `offsets` (byte offsets of 8-byte aligned probes) in `buffer`, linked in a
/// random cycle from `seed`; laid out and timed once more with another seed when the
/// trials spread too much. Returns the summary, whether it stayed unstable and, when
/// `count`, the misses per load counted on the last layout (see `Sampler::chase`).
fn sample_layout(
    buffer: *mut u8,
    offsets: impl Fn(u64) -> Vec<usize>,
    seed: u64,
    sampler: &Sampler,
    count: bool,
) -> (Summary, bool, Option<AccessCounts>) {
    let mut trials = Vec::new();
    let mut counted = None;
    for attempt in 0..2u64 {
        let layout_seed = mix(seed, attempt);
        let offsets = offsets(layout_seed);
        // SAFETY: callers give offsets inside the buffer, line aligned.
        let start = unsafe { pageprobe::link(buffer, &offsets, layout_seed) };
        // SAFETY: `link` wrote a complete cycle through the probes, inside the buffer.
        let (more, counts) = unsafe { sampler.chase(start, offsets.len(), count) };
        trials.extend(more);
        counted = counts;
        let summary = Summary::of(&trials).expect("trials");
        if summary.spread_pct() <= UNSTABLE_SPREAD_PCT {
            return (summary, false, counted);
        }
    }
    (Summary::of(&trials).expect("trials"), true, counted)
}

fn mix(seed: u64, salt: u64) -> u64 {
    SplitMix64::new(seed ^ salt.rotate_left(29)).next_u64()
}

/// The dense control: `lines` consecutive lines in a buffer of huge pages (base pages when
/// THP cannot be had), one measurement per line count.
struct Dense {
    arena: Arena,
    measured: BTreeMap<u64, (Summary, bool)>,
}

impl Dense {
    fn new(max_lines: u64, machine: &Machine) -> Result<Dense, UsageError> {
        let bytes = Bytes((max_lines * LINE_BYTES as u64).max(2 * MIB));
        let arena = if machine.thp.enabled.offers_huge_pages() {
            Arena::new(bytes, PagePolicy::Thp).or_else(|_| Arena::new(bytes, PagePolicy::Base))?
        } else {
            Arena::new(bytes, PagePolicy::Base)?
        };
        Ok(Dense {
            arena,
            measured: BTreeMap::new(),
        })
    }

    fn get(&mut self, lines: u64, seed: u64, sampler: &Sampler) -> (Summary, bool) {
        if let Some(found) = self.measured.get(&lines) {
            return *found;
        }
        let (summary, unstable, _) = sample_layout(
            self.arena.as_ptr(),
            |_| pageprobe::dense_offsets(lines as usize),
            mix(seed, lines),
            sampler,
            false,
        );
        let found = (summary, unstable);
        self.measured.insert(lines, found);
        found
    }
}

/// One measured point of a curve.
#[derive(Debug, Clone)]
struct Point {
    pages: u64,
    ns: f64,
    dense_ns: f64,
    spread_pct: f64,
    unstable: bool,
    counters: Option<AccessCounts>,
}

/// A page size's curve and the levels found from it.
struct Curve {
    page_bytes: u64,
    /// All points, by page count (the sweep and the refinements).
    points: Vec<Point>,
    levels: Vec<FoundTlbLevel>,
    /// The sweep went past every TLB CPUID reports, so a page walk was expected.
    walk_expected: bool,
}

/// What the curves of one run share.
struct Run<'a> {
    config: &'a TlbConfig,
    sampler: Sampler<'a>,
    machine: &'a Machine,
    progress: &'a Progress,
}

/// Sweeps up to `max_pages` pages of `page_bytes` in `arena`, finds the levels, refines
/// the knees and finds the levels again on all points.
fn measure_curve(
    run: &Run,
    arena: &Arena,
    page_bytes: u64,
    max_pages: u64,
    dense: &mut Dense,
) -> Curve {
    let (config, sampler, machine, progress) =
        (run.config, &run.sampler, run.machine, run.progress);
    let max_pages =
        (max_pages.max(MIN_PAGES) as usize).min(arena.len() / page_bytes as usize) as u64;
    let sweep = sweep_sizes(MIN_PAGES, max_pages, config.points_per_octave.max(1), 1);
    let seed = config.seed ^ page_bytes.rotate_left(17);
    let mut measure_point = |pages: u64| -> Point {
        let (sparse, sparse_unstable, counters) = sample_layout(
            arena.as_ptr(),
            |layout_seed| {
                let rotation = SplitMix64::new(layout_seed).below(4096 / LINE_BYTES);
                pageprobe::sparse_offsets(pages as usize, page_bytes as usize, rotation)
            },
            mix(seed, pages),
            sampler,
            true,
        );
        let (dense_summary, dense_unstable) = dense.get(pages, config.seed, sampler);
        Point {
            pages,
            ns: sparse.median,
            dense_ns: dense_summary.median,
            spread_pct: sparse.spread_pct(),
            unstable: sparse_unstable || dense_unstable,
            counters,
        }
    };

    let name = format!("tlb, {} pages", Bytes(page_bytes));
    progress.start(&name, sweep.len() as u64);
    let mut points = Vec::with_capacity(sweep.len());
    for &pages in &sweep {
        progress.message(&format!("{pages} pages"));
        points.push(measure_point(pages));
        progress.advance();
    }
    progress.finish();

    let cpuid = cpuid_levels(machine, page_bytes);
    let tlb_levels = if cpuid.is_empty() {
        DEFAULT_TLB_LEVELS
    } else {
        cpuid.len()
    };
    let walk_expected = cpuid
        .iter()
        .map(|&(_, e)| u64::from(e))
        .max()
        .is_some_and(|e| max_pages as f64 >= 1.3 * e as f64);
    let hit_ns = points.first().map_or(1.0, |p| p.dense_ns);
    let find = |points: &[Point], extra: &[(u64, f64)]| {
        let pages: Vec<u64> = points.iter().map(|p| p.pages).collect();
        let tlb_ns: Vec<f64> = points.iter().map(|p| p.ns - p.dense_ns).collect();
        let usable: Vec<bool> = points.iter().map(|p| !p.unstable).collect();
        find_tlb_levels(&pages, &tlb_ns, &usable, hit_ns, tlb_levels, extra)
    };
    let mut levels = find(&points, &[]);

    // Refine the knees: measure between each knee's bracketing points and place the knees
    // again on all points, until every bracket is narrow (or after a few rounds).
    let mut extra_points: Vec<Point> = Vec::new();
    for round in 1..=REFINE_ROUNDS {
        let refine = knees_to_refine(&levels, &extra_points);
        if refine.is_empty() {
            break;
        }
        progress.start(&format!("{name}, knees ({round})"), refine.len() as u64);
        for &pages in &refine {
            progress.message(&format!("{pages} pages"));
            extra_points.push(measure_point(pages));
            progress.advance();
        }
        progress.finish();
        let extra: Vec<(u64, f64)> = extra_points
            .iter()
            .map(|p| (p.pages, p.ns - p.dense_ns))
            .collect();
        levels = find(&points, &extra);
    }

    let mut all = points;
    all.extend(extra_points);
    all.sort_by_key(|p| p.pages);
    all.dedup_by_key(|p| p.pages);
    Curve {
        page_bytes,
        points: all,
        levels,
        walk_expected,
    }
}

/// Up to `count` page counts strictly between `lo` and `hi`: all of them when there are
/// that few, else spaced evenly on a log scale.
fn between(lo: u64, hi: u64, count: usize) -> Vec<u64> {
    if hi <= lo + 1 {
        return Vec::new();
    }
    if hi - lo - 1 <= count as u64 {
        return (lo + 1..hi).collect();
    }
    let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
    let mut counts: Vec<u64> = (1..=count)
        .map(|k| (a + (b - a) * k as f64 / (count + 1) as f64).exp().round() as u64)
        .filter(|&p| p > lo && p < hi)
        .collect();
    counts.dedup();
    counts
}

/// Bytes of buffer the SAXPY rows need (0 when skipped).
fn saxpy_arena_bytes(footprint: u64) -> u64 {
    if footprint == 0 {
        0
    } else {
        footprint + SAXPY_ARRAY_GAP + 4 * KIB
    }
}

/// The SAXPY rows in one buffer: stride 1 and a stride of 4 KiB.
fn saxpy_rows(
    config: &TlbConfig,
    arena: &Arena,
    page_bytes: u64,
    label: &str,
    timer: &Timer,
    progress: &Progress,
) -> Vec<SaxpyTlbRow> {
    let footprint = config.saxpy_footprint;
    if footprint == 0 || saxpy_arena_bytes(footprint) > arena.len() as u64 {
        return Vec::new();
    }
    let elements = (footprint / 2 / 8) as usize;
    let y_offset = ((elements * 8) as u64).div_ceil(4 * KIB) * 4 * KIB + SAXPY_ARRAY_GAP;
    let x = arena.as_ptr() as *mut f64;
    // SAFETY: y_offset + elements × 8 ≤ footprint + gap + 4 KiB ≤ the arena's length.
    let y = unsafe { arena.as_ptr().add(y_offset as usize) } as *mut f64;
    // Fresh values: the buffer may hold chase pointers, which read as subnormal doubles
    // and would make every add a slow microcode assist.
    for i in 0..elements {
        // SAFETY: both arrays hold `elements` doubles inside the arena.
        unsafe {
            x.add(i).write(1.0);
            y.add(i).write(0.0);
        }
    }
    progress.start(&format!("tlb, SAXPY{label}"), 2);
    let mut rows = Vec::new();
    for (stride, name) in [(1usize, "stride 1"), (4096 / 8, "stride 4 KiB")] {
        let (ns_per_access, fraction) = saxpy_ns_per_element(x, y, elements, stride, timer);
        rows.push(SaxpyTlbRow {
            pattern: format!("{name}{label}"),
            page_bytes,
            stride_bytes: (stride * 8) as u64,
            footprint_bytes: footprint,
            pass_ms: ns_per_access * elements as f64 / 1e6,
            ns_per_access,
            timed_fraction: fraction,
        });
        progress.advance();
    }
    progress.finish();
    rows
}

/// Median ns per element of SAXPY passes in stride order, and the fraction of a pass each
/// trial timed. Stride 1: whole passes. Larger strides: after one untimed offset sweep,
/// trials of consecutive offset sweeps lasting about [`SAXPY_STRIDED_TRIAL_NS`].
fn saxpy_ns_per_element(
    x: *const f64,
    y: *mut f64,
    elements: usize,
    stride: usize,
    timer: &Timer,
) -> (f64, f64) {
    let a = 0.5;
    let offsets = stride.min(elements).max(1);
    let visited = |first: usize, count: usize| -> usize {
        (first..first + count)
            .map(|o| (elements - o).div_ceil(stride))
            .sum()
    };
    // SAFETY (all kernel calls): x and y hold `elements` doubles each and do not overlap.
    let run = |first: usize, count: usize| -> f64 {
        let t0 = timer.start();
        unsafe { saxpy_strided_offsets(x, y, elements, stride, first, count, a) };
        timer.ticks_to_ns(timer.stop().saturating_sub(t0))
    };
    // Warm-up: one whole pass with stride 1, the first offset sweep otherwise.
    let warm_ns = run(0, 1).max(1.0);
    let per_trial = ((SAXPY_STRIDED_TRIAL_NS / warm_ns).ceil() as usize).clamp(1, offsets);
    let mut next = 1 % offsets;
    let mut samples = Vec::with_capacity(SAXPY_TRIALS);
    let mut fraction = 0.0;
    for _ in 0..SAXPY_TRIALS {
        let count = per_trial.min(offsets - next);
        let ns = run(next, count);
        let done = visited(next, count);
        samples.push(ns / done as f64);
        fraction = done as f64 / elements as f64;
        next = (next + count) % offsets;
    }
    let median = Summary::of(&samples).expect("trials").median;
    (median, fraction)
}

/// MLP at DRAM (`mlp_bytes`) in `arena`: the saturation row (or the most parallel one)
/// and the one-chain latency.
fn mlp_row(
    config: &TlbConfig,
    arena: &Arena,
    page_bytes: u64,
    timer: &Timer,
    machine: &Machine,
    progress: &Progress,
) -> Option<MlpByPageSize> {
    let bytes = config.mlp_bytes;
    if bytes == 0 || bytes > arena.len() as u64 {
        return None;
    }
    progress.start(&format!("tlb, DRAM MLP, {} pages", Bytes(page_bytes)), 1);
    // `mlp`'s DRAM row with its default chain counts, from the same shared engine (and
    // the same layout seed, the first level's), so the two agree in 4 KiB pages.
    let measured = (bytes >= SLOT_BYTES as u64).then(|| {
        let sampling = Sampling {
            trial_ns: config.trial_ns,
            repetitions: config.repetitions.max(1),
        };
        let counts = chain_counts(&default_chains());
        let mut cycle = Cycle::build(arena, bytes, chains::mix(config.seed, bytes, 0));
        let hidden = Progress::hidden();
        sweep(&mut cycle, &counts, sampling, config.seed, timer, &hidden)
    });
    let rows = to_rows(
        Some(&Level::Dram),
        bytes,
        measured.as_deref().unwrap_or_default(),
    );
    let saturation = saturation_of(&Level::Dram, bytes, &rows);
    progress.advance();
    progress.finish();
    let latency_ns = rows.iter().find(|r| r.chains == 1)?.ns_per_load;
    let (chains, ns_per_load, parallelism) = match saturation {
        Some(s) => (s.chains, s.ns_per_load, s.parallelism),
        None => {
            let best = rows
                .iter()
                .max_by(|a, b| a.parallelism.total_cmp(&b.parallelism))?;
            (best.chains, best.ns_per_load, best.parallelism)
        }
    };
    Some(MlpByPageSize {
        page_bytes,
        bytes,
        chains,
        ns_per_load,
        parallelism,
        latency_ns,
        latency_cycles: machine
            .core_hz_estimate
            .map_or(f64::NAN, |hz| latency_ns * hz / 1e9),
    })
}

/// Reach per TLB level and page size: every data or unified TLB CPUID reports and every
/// level measured (the walk excluded), matched by name and page size.
fn reach_rows(machine: &Machine, levels: &[TlbLevel]) -> Vec<TlbReach> {
    let mut rows: Vec<TlbReach> = Vec::new();
    let mut tlbs: Vec<_> = machine
        .tlbs
        .iter()
        .filter(|t| t.kind == CacheKind::Data || t.kind == CacheKind::Unified)
        .collect();
    tlbs.sort_by_key(|t| (t.page_bytes, t.level));
    for t in tlbs {
        let row = reach_row(&mut rows, &format!("L{} DTLB", t.level), t.page_bytes);
        // The first TLB of a name and page size counts.
        if row.cpuid_entries.is_none() {
            row.cpuid_entries = Some(t.entries);
            row.cpuid_reach_bytes = Some(u64::from(t.entries) * t.page_bytes);
        }
    }
    for level in levels.iter().filter(|l| l.name != PAGE_WALK) {
        let row = reach_row(&mut rows, &level.name, level.page_bytes);
        row.measured_entries = level.entries;
        row.measured_reach_bytes = level.reach_bytes;
    }
    rows.sort_by(|a, b| (a.page_bytes, &a.name).cmp(&(b.page_bytes, &b.name)));
    rows
}

/// The row of `name` and `page_bytes` in `rows`, added empty if there is none yet.
fn reach_row<'r>(rows: &'r mut Vec<TlbReach>, name: &str, page_bytes: u64) -> &'r mut TlbReach {
    match rows
        .iter()
        .position(|r| r.name == name && r.page_bytes == page_bytes)
    {
        Some(i) => &mut rows[i],
        None => {
            rows.push(TlbReach {
                name: name.to_string(),
                page_bytes,
                ..TlbReach::default()
            });
            rows.last_mut().expect("just pushed")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tlb_share_is_read_at_the_nearest_page_count_of_the_right_page_size() {
        let base = samples::tlb().rows.remove(0);
        let row = |page_bytes, pages, tlb_ns| TlbRow {
            page_bytes,
            pages,
            tlb_ns,
            ..base.clone()
        };
        let result = TlbResult {
            rows: vec![
                row(4096, 64, 0.0),
                row(4096, 128, 2.0),
                row(2 << 20, 128, 1.9),
            ],
            ..TlbResult::default()
        };
        assert_eq!(tlb_ns_at(&result, 2 << 20, 120), Some(1.9));
        assert_eq!(tlb_ns_at(&result, 4096, 100), Some(2.0));
        assert_eq!(tlb_ns_at(&result, 4096, 70), Some(0.0));
        // Further than a factor of two from anything measured: nothing.
        assert_eq!(tlb_ns_at(&result, 2 << 20, 4096), None);
    }

    use crate::topology::TlbInfo;

    #[test]
    fn refinement_points_lie_strictly_between() {
        assert_eq!(between(71, 73, 12), vec![72]);
        assert_eq!(between(64, 76, 12), (65..76).collect::<Vec<_>>());
        assert!(between(5, 6, 12).is_empty());
        let wide = between(2896, 3444, 12);
        assert_eq!(wide.len(), 12);
        assert!(wide.windows(2).all(|w| w[0] < w[1]));
        assert!(wide[0] > 2896 && wide[11] < 3444);
    }

    /// A Zen 4's TLBs: 72 and 3072 data entries for 4 KiB and 2 MiB pages.
    fn zen4() -> Machine {
        let tlb = |level, kind, page_bytes, entries| TlbInfo {
            level,
            kind,
            page_bytes,
            entries,
            ways: None,
            source: crate::topology::TlbSource::Cpuid2,
        };
        let tlbs = vec![
            tlb(1, CacheKind::Data, 4096, 72),
            tlb(1, CacheKind::Data, 2 * MIB, 72),
            tlb(1, CacheKind::Instruction, 4096, 64),
            tlb(2, CacheKind::Data, 4096, 3072),
            tlb(2, CacheKind::Data, 2 * MIB, 3072),
            tlb(2, CacheKind::Instruction, 4096, 512),
        ];
        Machine {
            tlbs,
            ..Machine::default()
        }
    }

    #[test]
    fn defaults_reach_past_the_largest_huge_page_tlb() {
        let machine = zen4();
        let config = TlbConfig::new(&machine, PagePolicy::Thp, false, 9, 2e6, 1);
        assert_eq!(config.max_pages_base, 1 << 17);
        assert_eq!(config.max_pages_huge, 4096);
        assert_eq!((config.saxpy_footprint, config.mlp_bytes), (GIB, 256 * MIB));
        let quick = TlbConfig::new(&machine, PagePolicy::Thp, true, 5, 1e6, 1);
        assert_eq!((quick.max_pages_base, quick.max_pages_huge), (1 << 16, 256));
        assert_eq!((quick.saxpy_footprint, quick.mlp_bytes), (0, 0));
        assert_eq!(cpuid_levels(&machine, 4096), vec![(1, 72), (2, 3072)]);
        let unknown = TlbConfig::new(&Machine::default(), PagePolicy::Thp, false, 9, 2e6, 1);
        assert_eq!(unknown.max_pages_huge, 4096);
    }

    #[test]
    fn reach_rows_pair_cpuid_with_measured_levels() {
        let machine = zen4();
        let level = |name: &str, page_bytes: u64, entries: Option<u64>| TlbLevel {
            page_bytes,
            name: name.into(),
            entries,
            reach_bytes: entries.map(|e| e * page_bytes),
            miss_ns: None,
            miss_cycles: None,
            cpuid_entries: None,
            tlb_ns: 0.0,
            transition_pages: None,
            miss_ns_range: None,
        };
        let levels = [
            level("L1 DTLB", 4096, Some(72)),
            level("L2 DTLB", 4096, Some(2900)),
            level(PAGE_WALK, 4096, None),
        ];
        let reach = reach_rows(&machine, &levels);
        assert_eq!(reach.len(), 4, "{reach:?}");
        let l2 = |page| {
            reach
                .iter()
                .find(|r| r.name == "L2 DTLB" && r.page_bytes == page)
        };
        let (l2, huge) = (l2(4096).unwrap(), l2(2 * MIB).unwrap());
        assert_eq!(l2.cpuid_reach_bytes, Some(12 * MIB));
        assert_eq!(l2.measured_reach_bytes, Some(2900 * 4096));
        assert_eq!(
            (huge.cpuid_entries, huge.measured_entries),
            (Some(3072), None)
        );
        assert!(reach.iter().all(|r| r.name != PAGE_WALK));
    }

    #[test]
    fn saxpy_timing_covers_a_part_of_a_strided_pass() {
        let timer = Timer::monotonic();
        let n = 1 << 16;
        let x = vec![1.0f64; n];
        let mut y = vec![0.0f64; n];
        let (ns, fraction) = saxpy_ns_per_element(x.as_ptr(), y.as_mut_ptr(), n, 1, &timer);
        assert!(ns > 0.0 && ns.is_finite());
        assert_eq!(fraction, 1.0);
        // One warm-up pass and SAXPY_TRIALS timed ones with stride 1: y = 0.5 × 4.
        assert!(y.iter().all(|&v| v == 0.5 * (1 + SAXPY_TRIALS) as f64));
        let (ns, fraction) = saxpy_ns_per_element(x.as_ptr(), y.as_mut_ptr(), n, 512, &timer);
        assert!(ns > 0.0 && ns.is_finite());
        assert!(fraction > 0.0 && fraction <= 1.0, "{fraction}");
    }

    /// `tlb --quick` with 4 KiB pages only: at least one knee, and a load over 2^16 pages
    /// costs more than one over 16.
    #[test]
    fn quick_base_pages_find_a_knee() {
        let timer = Timer::calibrate().0;
        let machine = crate::topology::detect().unwrap();
        let config = TlbConfig::new(&machine, PagePolicy::Base, true, 5, 1e6, 7);
        let (result, _) = measure(&config, &timer, &machine, &Progress::hidden()).unwrap();
        assert!(result
            .rows
            .iter()
            .all(|r| r.page_bytes == machine.base_page_bytes));
        let levels = &result.levels;
        assert!(levels.iter().any(|l| l.entries.is_some()), "{levels:?}");
        let at = |pages: u64| result.rows.iter().find(|r| r.pages == pages).unwrap().ns;
        assert!(at(1 << 16) > at(16), "{:?}", result.rows);
        assert!(result.saxpy.is_empty() && result.mlp_by_page_size.is_empty());
    }

    /// Runs `measure` on this machine and prints the result (pinned to CPU 1).
    #[test]
    #[ignore]
    fn print_tlb_measurement() {
        crate::platform::affinity::pin_current_thread(1).unwrap();
        let timer = Timer::calibrate().0;
        let mut machine = crate::topology::detect().unwrap();
        machine.core_hz_estimate = timer.estimate_core_hz();
        let quick = std::env::var("TLB_QUICK").is_ok();
        let (repetitions, trial_ns) = if quick { (5, 1e6) } else { (9, 2e6) };
        let config = TlbConfig::new(&machine, PagePolicy::Thp, quick, repetitions, trial_ns, 1);
        println!("{config:?}");
        let started = std::time::Instant::now();
        let (result, warnings) = measure(&config, &timer, &machine, &Progress::hidden()).unwrap();
        println!("took {:?}", started.elapsed());
        for r in &result.rows {
            println!(
                "{:>8} {:>7} {:8.2} ns {:8.2} dense {:8.2} tlb  ±{:.1}%",
                r.page_bytes, r.pages, r.ns, r.dense_ns, r.tlb_ns, r.spread_pct
            );
        }
        for l in &result.levels {
            println!("{l:?}");
        }
        for s in &result.saxpy {
            println!("{s:?}");
        }
        for m in &result.mlp_by_page_size {
            println!("{m:?}");
        }
        for r in &result.reach {
            println!("{r:?}");
        }
        for w in &warnings {
            println!("! {w}");
        }
    }
}

pub mod params;
mod run;
