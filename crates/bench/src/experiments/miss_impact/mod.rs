//! Cache-miss impact: time per access and misses per access for footprints inside each
//! cache level and in DRAM, each walked sequentially, as a dependent chase and as
//! independent random loads, and an AMAT (average memory access time) estimate for each
//! row built from this run's measured level latencies and the row's counted miss rates.
//!
//! AMAT = t_L1 + m_L1·(t_L2 − t_L1) + m_L2·(t_L3 − t_L2) + m_LLC·(t_DRAM − t_L3), with t
//! the latency ladder's plateaus and m the misses per access counted at each level (the
//! formula follows the levels the ladder found). It assumes one miss at a time, so a
//! dependent chase should take about AMAT per access, while sequential and independent
//! loads take far less: prefetchers and memory-level parallelism overlap their misses.
//! Where a level's misses cannot be counted (no hardware PMU, an unknown CPU) the AMAT is
//! not computed and says why; nothing is estimated. Software events (page faults, task
//! clock) are counted around the same pass on every machine.

pub mod figures;
#[cfg(any(test, feature = "test-support"))]
pub mod samples;
pub mod view;

use serde::{Deserialize, Serialize};

use crate::counters::{AccessCounter, AccessCounts, CounterGroup, Event, MissLevel, Probe};
use crate::counters::{Scaled, Target};
use crate::experiments::chase_timing::{ChaseCursor, WARM_UP_TRIALS};
use crate::experiments::shared::ladder::LatencyLevel;
use crate::experiments::shared::level::Level;
use crate::kernels::chase::UNROLL;
use crate::kernels::permutation::{link, visit_order, ChaseOrder, ChaseOrderKind, SplitMix64};
use crate::kernels::stream::{self, Isa, GRANULE};
use crate::kernels::strided::indexed_sum;
use crate::platform::arena::Arena;
use crate::platform::timer::Timer;
use crate::session::progress::Progress;
use crate::stats::Summary;
use crate::topology::{CacheInfo, Machine};
use crate::units::{Bytes, GIB, KIB, MIB};

/// `experiments.miss_impact` of the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MissImpactResult {
    /// Bytes per access: one cache line per load in every pattern.
    pub line_bytes: u64,
    /// Order of both random patterns, the latency ladder's ("page-local": random lines
    /// inside a window of pages, windows in random order, so TLB misses stay out of the
    /// comparison with the ladder's latencies; or "random").
    pub random_order: ChaseOrderKind,
    /// Pages per window of the page-local order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_pages: Option<u64>,
    /// Vector instruction set of the sequential read.
    pub sequential_isa: Isa,
    /// Whether the kernel lists a hardware PMU (without one, no level's misses count).
    pub hardware_pmu: bool,
    /// The ladder's level latencies the AMAT is built from, fastest first.
    pub level_latencies: Vec<LevelLatency>,
    pub rows: Vec<MissImpactRow>,
}

/// One level of the latency ladder, as the AMAT uses it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelLatency {
    /// "L1d", "L2", "L3" … "DRAM".
    pub name: Level,
    pub ns: f64,
}

/// How a row walks its footprint; every pattern loads one line per access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// Every line in address order (the `read` stream kernel): prefetchable.
    Sequential,
    /// A dependent pointer chase through every line: one miss at a time.
    Random,
    /// The chase's order as independent loads through an index array: misses overlap.
    RandomIndependent,
}

impl Pattern {
    pub const ALL: [Pattern; 3] = [
        Pattern::Sequential,
        Pattern::Random,
        Pattern::RandomIndependent,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Pattern::Sequential => "sequential",
            Pattern::Random => "random",
            Pattern::RandomIndependent => "random-independent",
        }
    }
}

/// One footprint × pattern.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissImpactRow {
    /// The level the footprint is sized to live in ("L1d", "L2", "L3", "DRAM").
    pub level: Level,
    pub footprint_bytes: u64,
    pub pattern: Pattern,
    /// Median of the timed trials, ns per access (one line loaded).
    pub ns_per_access: f64,
    /// Robust spread of the trials, 1.4826·MAD/median, percent.
    pub spread_pct: f64,
    pub trials: usize,
    /// Run time of the counted pass: `laps` walks through every line of the footprint.
    pub run_time_ns: f64,
    pub laps: u64,
    /// Misses per access at L1, L2, the LLC and the DTLB over the counted pass.
    pub misses: AccessCounts,
    /// LLC misses per access over the counted pass; null when not counted (see `misses`).
    pub llc_miss_rate: Option<f64>,
    /// Page faults during the counted pass (a software event: counted without a PMU).
    pub page_faults: Option<u64>,
    /// CPU time of the counted pass by the kernel's task clock, ns.
    pub task_clock_ns: Option<u64>,
    /// Why the software events were not counted ("not supported: <reason>").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub software_not_supported: Option<String>,
    /// AMAT from the ladder's latencies and this row's miss rates, ns per access.
    pub amat_ns: Option<f64>,
    /// Why `amat_ns` is null: "not computed: <why>".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amat_not_computed: Option<String>,
    /// ns_per_access / amat_ns.
    pub measured_over_amat: Option<f64>,
}

impl MissImpactResult {
    /// "t_L1d + m_L1·(t_L2 − t_L1d) + …" for the levels the ladder found.
    fn amat_formula(&self) -> String {
        let names: Vec<&Level> = self.level_latencies.iter().map(|l| &l.name).collect();
        let Some(first) = names.first() else {
            return "no latency levels".to_string();
        };
        let mut text = format!("t_{first}");
        for i in 0..names.len() - 1 {
            let m = match miss_level_after(i, &names) {
                Ok(level) => format!("m_{}", short(level)),
                Err(_) => format!("m_{}", names[i]),
            };
            text.push_str(&format!(" + {m}·(t_{} − t_{})", names[i + 1], names[i]));
        }
        text
    }

    /// One line per distinct reason why something was not counted or computed: the level
    /// events sharing a reason are listed together, then the software events and AMAT.
    pub fn notes(&self) -> Vec<String> {
        let mut by_reason: Vec<(String, Vec<String>)> = Vec::new();
        for level in self.rows.iter().flat_map(|r| &r.misses.levels) {
            let Some(why) = &level.not_supported else {
                continue;
            };
            let name = format!("{} ({})", level.level.label(), level.event);
            match by_reason.iter_mut().find(|(r, _)| r == why) {
                Some((_, names)) if names.contains(&name) => {}
                Some((_, names)) => names.push(name),
                None => by_reason.push((why.clone(), vec![name])),
            }
        }
        let mut notes: Vec<String> = by_reason
            .into_iter()
            .map(|(why, names)| format!("{}: {why}", names.join(", ")))
            .collect();
        let mut push = |note: String| {
            if !notes.contains(&note) {
                notes.push(note);
            }
        };
        for row in &self.rows {
            if let Some(why) = &row.software_not_supported {
                push(format!("page faults, task clock: {why}"));
            }
        }
        for row in &self.rows {
            if let Some(why) = &row.amat_not_computed {
                push(format!("AMAT: {why}"));
            }
        }
        notes
    }
}

/// What to measure; resolved by `plan`.
#[derive(Debug, Clone)]
pub struct MissImpactConfig {
    /// (level, footprint bytes), smallest first, from [`footprints`]; DRAM last.
    pub footprints: Vec<(String, u64)>,
    pub line_bytes: usize,
    /// Order of the random patterns: the latency ladder's.
    pub order: ChaseOrder,
    pub repetitions: usize,
    pub trial_ns: f64,
    pub seed: u64,
}

impl MissImpactConfig {
    /// The one buffer every row walks (from its start): the largest footprint.
    pub(crate) fn arena_bytes(&self) -> u64 {
        self.footprints.iter().map(|f| f.1).max().unwrap_or(4 * KIB)
    }
}

/// The counted pass lasts at least this many trials, so that the counters' own cost
/// (an ioctl each way) is negligible next to it; it is at least one walk through every
/// line of the footprint.
const COUNTED_TRIALS: f64 = 4.0;

/// Footprints are whole pages.
const PAGE: u64 = 4 * KIB;
/// Without an OS cache list, the DRAM footprint.
const DRAM_DEFAULT: u64 = 128 * MIB;
/// The largest DRAM footprint (u32 element indices address it with room to spare).
const DRAM_MAX: u64 = 4 * GIB;

/// One footprint inside each data cache and one in DRAM, each at most `max_bytes`,
/// strictly increasing (a level that cannot get a larger footprint than the one below
/// within `max_bytes` is left out).
///
/// A private level gets half its size. A third or later level gets an eighth of its size
/// but at least four times the level below (at most half its size), as `mlp` sizes it:
/// a shared or virtualised last-level cache holds much less for one thread than the OS
/// reports (other cores, other tenants, slices). DRAM gets four times the largest cache.
pub fn footprints(caches: &[&CacheInfo], max_bytes: u64) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    let mut push = |name: String, bytes: u64| {
        let bytes = (bytes.min(max_bytes) / PAGE * PAGE).max(PAGE);
        if out.last().is_none_or(|(_, below)| bytes > *below) {
            out.push((name, bytes));
        }
    };
    let mut below = 0u64;
    for cache in caches {
        let size = cache.size_bytes;
        let bytes = if cache.level >= 3 && below > 0 {
            (size / 8).max(4 * below).min(size / 2)
        } else {
            size / 2
        };
        push(cache.name(), bytes);
        below = size;
    }
    let dram = caches
        .iter()
        .map(|c| c.size_bytes)
        .max()
        .map_or(DRAM_DEFAULT, |llc| 4 * llc)
        .min(DRAM_MAX);
    push("DRAM".to_string(), dram);
    out
}

/// The footprints with each cache level shrunk to half the capacity the latency ladder
/// measured for it (rounded down to a power of two), where the ladder found the level
/// clearly smaller than the OS reports (below 3/4, the latency warning's threshold) and
/// the result is at least twice what the level below holds (its measured capacity, else
/// its OS size), so the footprint is not served by that level: a busy shared cache holds
/// less than its size.
fn fit_to_ladder(footprints: &[(String, u64)], levels: &[LatencyLevel]) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    let mut below_holds = 0u64;
    for (name, bytes) in footprints {
        let mut bytes = *bytes;
        let level = levels.iter().find(|l| l.name.name() == name);
        let measured = level.and_then(|l| {
            let capacity = l.capacity_bytes?;
            let os = l.os_size_bytes?;
            ((capacity as f64) < 0.75 * os as f64).then_some(capacity)
        });
        if let Some(capacity) = measured {
            let half = capacity / 2;
            let fitted = if half >= PAGE {
                1u64 << (63 - half.leading_zeros())
            } else {
                PAGE
            };
            if fitted < bytes
                && fitted >= 2 * below_holds
                && out.last().is_none_or(|(_, below)| fitted > *below)
            {
                bytes = fitted;
            }
        }
        below_holds = level
            .and_then(|l| l.capacity_bytes.or(l.os_size_bytes))
            .unwrap_or(bytes);
        out.push((name.clone(), bytes));
    }
    out
}

/// "L1", "L2", "LLC", "dTLB".
fn short(level: MissLevel) -> &'static str {
    match level {
        MissLevel::L1 => "L1",
        MissLevel::L2 => "L2",
        MissLevel::Llc => "LLC",
        MissLevel::Dtlb => "dTLB",
    }
}

/// The counted misses that take an access past level `i` of the ladder (`names`, fastest
/// first, DRAM last when reached): the first level's are L1 misses, the last cache's are
/// LLC misses, an L2 that is not the last cache has L2 misses; other levels have no event.
fn miss_level_after(i: usize, names: &[&Level]) -> Result<MissLevel, String> {
    let last_cache = names.iter().rposition(|n| n.is_cache());
    if i == 0 {
        Ok(MissLevel::L1)
    } else if Some(i) == last_cache && names.get(i + 1) == Some(&&Level::Dram) {
        Ok(MissLevel::Llc)
    } else if names[i].name() == "L2" {
        Ok(MissLevel::L2)
    } else {
        Err(format!(
            "not computed: {} misses are not counted (memscope counts L1, L2 and last-level \
             cache misses)",
            names[i]
        ))
    }
}

/// AMAT in ns per access from the ladder's `levels` (fastest first) and the counted
/// misses per access: t_0 + Σ m_i·(t_{i+1} − t_i), with m_i the misses that take an access
/// past level i. `Err` says why it cannot be computed: the first term of the formula that
/// is missing, either a miss count ("not computed: L1 misses not supported: <reason>") or
/// the DRAM latency.
fn amat(levels: &[LevelLatency], counts: &AccessCounts) -> Result<f64, String> {
    let Some(first) = levels.first() else {
        return Err("not computed: the latency ladder found no level".to_string());
    };
    let names: Vec<&Level> = levels.iter().map(|l| &l.name).collect();
    let mut total = first.ns;
    for i in 0..levels.len() - 1 {
        let level = miss_level_after(i, &names)?;
        let Some(m) = counts.per_access(level) else {
            let why = counts
                .levels
                .iter()
                .find(|l| l.level == level)
                .and_then(|l| l.not_supported.clone())
                .unwrap_or_else(|| "not supported: not counted".to_string());
            return Err(format!("not computed: {} misses {why}", short(level)));
        };
        total += m * (levels[i + 1].ns - levels[i].ns);
    }
    if names.last() != Some(&&Level::Dram) || levels.len() < 2 {
        return Err(
            "not computed: the latency ladder did not reach DRAM, so what an LLC miss costs \
             is unknown"
                .to_string(),
        );
    }
    Ok(total)
}

/// Measures every footprint × pattern in `arena` (allocated and first touched by the
/// pinned caller, at least `config.arena_bytes()`), counting misses on the calling thread,
/// and builds each row's AMAT from `levels`, the latency ladder's, measured earlier in the
/// same run.
pub fn measure(
    config: &MissImpactConfig,
    arena: &Arena,
    levels: &[LatencyLevel],
    timer: &Timer,
    machine: &Machine,
    progress: &Progress,
) -> MissImpactResult {
    let footprints = fit_to_ladder(&config.footprints, levels);
    let line = config.line_bytes;
    assert!(
        line.is_power_of_two() && (8..=GRANULE).contains(&line),
        "a line is a power of two from 8 bytes to a granule"
    );
    assert!(
        footprints.iter().all(|f| f.1 as usize <= arena.len()),
        "the arena holds {} but the largest footprint is {}",
        Bytes(arena.len() as u64),
        Bytes(config.arena_bytes())
    );
    let level_latencies: Vec<LevelLatency> = levels
        .iter()
        .map(|l| LevelLatency {
            name: l.name.clone(),
            ns: l.latency_ns,
        })
        .collect();
    let probe = Probe::detect();
    let counter = AccessCounter::open(&machine.cpu_vendor, machine.cpu_family, &probe);
    let software = Software::open(&probe);
    let isa = Isa::best_available();
    let words_per_line = line / 8;

    progress.start(
        "miss impact",
        (footprints.len() * Pattern::ALL.len()) as u64,
    );
    let mut rows = Vec::new();
    for (k, (level, bytes)) in footprints.iter().enumerate() {
        let lines = *bytes as usize / line;
        let mut rng = SplitMix64::new(config.seed ^ ((k as u64) << 32));
        let mut order = visit_order(lines, line, config.order, &mut rng);
        // SAFETY: `lines` lines lie inside the page-aligned arena (checked above) and
        // `order` is a permutation of them; line ≥ 8 and a multiple of 8.
        let start = unsafe { link(arena.as_ptr(), line, &order) };
        // The independent pattern loads the same lines in the chase's order.
        for slot in order.iter_mut() {
            *slot *= words_per_line as u32;
        }
        for pattern in Pattern::ALL {
            progress.message(&format!("{level} ({}), {}", Bytes(*bytes), pattern.label()));
            let walk = match pattern {
                Pattern::Sequential => Walk::Sequential {
                    base: arena.as_ptr(),
                    lines,
                    line,
                    isa,
                    at: 0,
                },
                Pattern::Random => Walk::Chase {
                    // SAFETY: `start` begins the chain just linked over these lines, in
                    // the arena, which outlives the walk.
                    cursor: unsafe { ChaseCursor::new(start) },
                    lines,
                },
                Pattern::RandomIndependent => Walk::Independent {
                    base: arena.as_ptr() as *const u64,
                    index: &order,
                    at: 0,
                },
            };
            let counting = (&counter, &software, &level_latencies[..]);
            let what = (Level::from(level.clone()), *bytes, pattern);
            rows.push(measure_walk(walk, what, lines, (config, timer), counting));
            progress.advance();
        }
    }
    progress.finish();
    MissImpactResult {
        line_bytes: line as u64,
        random_order: config.order.kind(),
        window_pages: match config.order {
            ChaseOrder::PageLocal { window_bytes } => Some(window_bytes as u64 / 4096),
            ChaseOrder::Random => None,
        },
        sequential_isa: isa,
        hardware_pmu: probe.has_hardware_pmu(),
        level_latencies,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::samples::{counts, ladder, sample};
    use super::*;
    use crate::topology::CacheKind;

    fn cache(level: u32, kind: CacheKind, size: u64, shared: usize) -> CacheInfo {
        CacheInfo::sample(level, kind, size, (0..shared).collect())
    }

    fn sizes(rows: &[(String, u64)]) -> Vec<(&str, u64)> {
        rows.iter().map(|(n, b)| (n.as_str(), *b)).collect()
    }

    /// The four rows of a plan: 16 KiB in L1d, then the given L2, L3 and DRAM sizes.
    fn plan(l2: u64, l3: u64, dram: u64) -> Vec<(&'static str, u64)> {
        vec![("L1d", 16 * KIB), ("L2", l2), ("L3", l3), ("DRAM", dram)]
    }

    #[test]
    fn footprints_sit_inside_each_level_and_dram_past_the_llc() {
        // A Zen 4 guest like this one: 32 KiB L1d, 1 MiB L2, a 32 MiB L3.
        let caches = [
            cache(1, CacheKind::Data, 32 * KIB, 1),
            cache(1, CacheKind::Instruction, 32 * KIB, 1),
            cache(2, CacheKind::Unified, MIB, 1),
            cache(3, CacheKind::Unified, 32 * MIB, 2),
        ];
        let data: Vec<&CacheInfo> = caches.iter().filter(|c| c.holds_data()).collect();
        let plan_256 = plan(512 * KIB, 4 * MIB, 128 * MIB);
        assert_eq!(sizes(&footprints(&data, 256 * MIB)), plan_256);
        // A big L3 over a small L2: an eighth of it; a small one: four L2s, at most half.
        let big = [
            cache(1, CacheKind::Data, 48 * KIB, 1),
            cache(2, CacheKind::Unified, 2 * MIB, 1),
            cache(3, CacheKind::Unified, 96 * MIB, 16),
        ];
        let data: Vec<&CacheInfo> = big.iter().collect();
        assert_eq!(footprints(&data, 1 << 40)[2], ("L3".into(), 12 * MIB));
        assert_eq!(footprints(&data, 1 << 40)[3], ("DRAM".into(), 384 * MIB));
        let small = [
            cache(1, CacheKind::Data, 32 * KIB, 1),
            cache(2, CacheKind::Unified, 2 * MIB, 1),
            cache(3, CacheKind::Unified, 6 * MIB, 4),
        ];
        let data: Vec<&CacheInfo> = small.iter().collect();
        assert_eq!(footprints(&data, 1 << 40)[2], ("L3".into(), 3 * MIB));
        // The plan's maximum caps the rows, and rows that would not grow are dropped.
        let data: Vec<&CacheInfo> = caches.iter().filter(|c| c.holds_data()).collect();
        let plan_8 = plan(512 * KIB, 4 * MIB, 8 * MIB);
        assert_eq!(sizes(&footprints(&data, 8 * MIB)), plan_8);
        assert_eq!(sizes(&footprints(&data, 4 * MIB)), plan_8[..3]);
        // No cache list: DRAM alone.
        assert_eq!(sizes(&footprints(&[], 1 << 40)), [("DRAM", 128 * MIB)]);
        // Every footprint is whole pages and strictly increasing.
        for rows in [footprints(&data, 300 * MIB), footprints(&data, 5 * MIB + 7)] {
            assert!(rows.iter().all(|(_, b)| b % PAGE == 0));
            assert!(rows.windows(2).all(|w| w[0].1 < w[1].1));
        }
    }

    fn level(name: &str, ns: f64, capacity: Option<u64>, os: Option<u64>) -> LatencyLevel {
        LatencyLevel {
            name: Level::from(name.to_string()),
            latency_ns: ns,
            latency_cycles: ns * 3.7,
            capacity_bytes: capacity,
            os_size_bytes: os,
            first_bytes: 4 * KIB,
            last_bytes: capacity.unwrap_or(256 * MIB),
            points: 5,
        }
    }

    #[test]
    fn a_cache_the_ladder_found_much_smaller_gets_half_its_measured_capacity() {
        let planned: Vec<(String, u64)> = plan(512 * KIB, 4 * MIB, 128 * MIB)
            .into_iter()
            .map(|(n, b)| (n.to_string(), b))
            .collect();
        let levels = [
            level("L1d", 1.1, Some(32 * KIB), Some(32 * KIB)),
            level("L2", 3.9, Some(861 * KIB), Some(MIB)),
            level("L3", 10.0, Some(5 * MIB + 700 * KIB), Some(32 * MIB)),
            level("DRAM", 103.0, None, None),
        ];
        // L2 is close to its OS size and stays; L3 acts like ~5.7 MiB: half, down to 2 MiB.
        let fitted = plan(512 * KIB, 2 * MIB, 128 * MIB);
        assert_eq!(sizes(&fit_to_ladder(&planned, &levels)), fitted);
        // A level measured so small that half of it is not above the row below: unchanged.
        let tiny = [level("L3", 10.0, Some(MIB), Some(32 * MIB))];
        assert_eq!(fit_to_ladder(&planned, &tiny), planned);
        // Half the L3 (1 MiB) would still fit in what the L2 holds (724 KiB, doubled):
        // the L3 row keeps its planned size, seen in a quick run on this VM.
        let quick = [
            level("L1d", 1.1, Some(32 * KIB), Some(32 * KIB)),
            level("L2", 3.9, Some(724 * KIB), Some(MIB)),
            level("L3", 10.0, Some(2 * MIB), Some(32 * MIB)),
        ];
        let fitted = plan(256 * KIB, 4 * MIB, 128 * MIB);
        assert_eq!(sizes(&fit_to_ladder(&planned, &quick)), fitted);
        // Nothing found: the plan as it was.
        assert_eq!(fit_to_ladder(&planned, &[]), planned);
    }

    #[test]
    fn amat_adds_each_levels_extra_latency_times_its_miss_rate() {
        let four = ladder(&[("L1d", 1.0), ("L2", 4.0), ("L3", 12.0), ("DRAM", 100.0)]);
        // All hits: the L1 latency.
        let all = |m: Option<f64>| counts(m, m, m);
        let hits = amat(&four, &all(Some(0.0))).unwrap();
        assert!((hits - 1.0).abs() < 1e-12);
        // Every access misses everywhere: the DRAM latency.
        let misses = amat(&four, &all(Some(1.0))).unwrap();
        assert!((misses - 100.0).abs() < 1e-12);
        // 1 + 0.5·3 + 0.25·8 + 0.1·88 = 13.3
        let mixed = amat(&four, &counts(Some(0.5), Some(0.25), Some(0.1))).unwrap();
        assert!((mixed - 13.3).abs() < 1e-9, "{mixed}");

        // Two cache levels: the second is the LLC and L2 misses are not needed.
        let three = ladder(&[("L1d", 1.0), ("L2", 4.0), ("DRAM", 80.0)]);
        let two_level = amat(&three, &counts(Some(0.5), None, Some(0.25))).unwrap();
        assert!((two_level - (1.0 + 0.5 * 3.0 + 0.25 * 76.0)).abs() < 1e-9);
    }

    #[test]
    fn amat_is_not_computed_without_a_miss_count_or_a_dram_level() {
        let four = ladder(&[("L1d", 1.0), ("L2", 4.0), ("L3", 12.0), ("DRAM", 100.0)]);
        let why = amat(&four, &counts(None, None, None)).unwrap_err();
        assert_eq!(
            why,
            "not computed: L1 misses not supported: no hardware PMU (a VM)"
        );
        let why = amat(&four, &counts(Some(0.1), None, Some(0.1))).unwrap_err();
        assert!(
            why.starts_with("not computed: L2 misses not supported: "),
            "{why}"
        );
        let no_dram = ladder(&[("L1d", 1.0), ("L2", 4.0), ("L3", 12.0)]);
        let why = amat(&no_dram, &counts(Some(0.1), Some(0.1), Some(0.1))).unwrap_err();
        assert!(why.contains("did not reach DRAM"), "{why}");
        assert!(amat(&[], &counts(Some(0.0), Some(0.0), Some(0.0))).is_err());
        // A fourth cache level has no event of its own.
        let mut five = four.clone();
        five.insert(3, ladder(&[("L4", 40.0)]).remove(0));
        let why = amat(&five, &counts(Some(0.1), Some(0.1), Some(0.1))).unwrap_err();
        assert!(
            why.starts_with("not computed: L3 misses are not counted"),
            "{why}"
        );
    }

    #[test]
    fn notes_give_each_reason_once_and_the_formula_follows_the_ladder() {
        let result = sample();
        assert_eq!(
            result.amat_formula(),
            "t_L1d + m_L1·(t_L2 − t_L1d) + m_L2·(t_L3 − t_L2) + m_LLC·(t_DRAM − t_L3)"
        );
        let notes = result.notes();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert_eq!(
            notes[0],
            "L1 miss (L1-event), L2 miss (L2-event), LLC miss (LLC-event): not supported: \
             no hardware PMU (a VM)"
        );
        assert_eq!(
            notes[1],
            "AMAT: not computed: L1 misses not supported: no hardware PMU (a VM)"
        );
        let r = &result.rows[1];
        assert!((r.amat_ns.unwrap() - 100.0).abs() < 1e-9);
        assert!((r.measured_over_amat.unwrap() - 1.01).abs() < 1e-9);
        assert_eq!(r.llc_miss_rate, Some(1.0));
    }

    #[test]
    fn a_small_run_times_every_pattern_and_counts_software_events() {
        let config = MissImpactConfig {
            footprints: vec![("L1d".into(), 16 * KIB), ("L2".into(), 256 * KIB)],
            line_bytes: 64,
            order: ChaseOrder::PageLocal {
                window_bytes: 16 * 4096,
            },
            repetitions: 3,
            trial_ns: 1e5,
            seed: 1,
        };
        let arena = Arena::new(
            Bytes(config.arena_bytes()),
            crate::platform::arena::PagePolicy::Base,
        )
        .unwrap();
        let levels = vec![
            level("L1d", 1.0, Some(32 * KIB), Some(32 * KIB)),
            level("DRAM", 100.0, None, None),
        ];
        let machine = Machine {
            cpu_vendor: "AuthenticAMD".into(),
            cpu_family: Some(0x19),
            ..Machine::default()
        };
        let result = measure(
            &config,
            &arena,
            &levels,
            &Timer::monotonic(),
            &machine,
            &Progress::hidden(),
        );
        assert_eq!(result.rows.len(), 6);
        for row in &result.rows {
            assert!(row.ns_per_access > 0.0 && row.ns_per_access.is_finite());
            assert!(row.run_time_ns > 0.0 && row.laps >= 1);
            assert_eq!(
                row.misses.accesses,
                row.laps * row.footprint_bytes / 64,
                "every line, every lap"
            );
            assert_eq!(row.misses.levels.len(), 4);
            // Software events count everywhere they are permitted; else they say why.
            assert!(
                row.page_faults.is_some() || row.software_not_supported.is_some(),
                "{row:?}"
            );
            // The task clock runs while the pass runs (it ran on this thread).
            if row.software_not_supported.is_none() {
                assert!(row.task_clock_ns.is_some_and(|t| t > 0), "{row:?}");
            }
            assert_eq!(row.amat_ns.is_some(), row.amat_not_computed.is_none());
            if !result.hardware_pmu {
                assert!(row.amat_ns.is_none() && row.llc_miss_rate.is_none());
                let why = row.amat_not_computed.as_deref().unwrap();
                assert!(why.starts_with("not computed: L1 misses not supported: "));
            }
        }
    }
}

pub mod params;
mod run;
mod walk;

use walk::*;
