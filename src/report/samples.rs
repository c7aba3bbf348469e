//! Small synthetic results of every experiment (latency, stride, loaded latency, MLP, ROB,
//! TLB, NUMA), shared by the tests of every exporter.

use std::collections::BTreeMap;

pub use crate::counters::samples::{access_counts, uncounted_access};
use crate::experiments::latency::{LatencyLevel, LatencyPoint, LatencyResult};
use crate::experiments::stride::{StrideResult, StrideRow};

use crate::experiments::loaded::{Knee, LoadedCurve, LoadedResult, LoadedRow};
use crate::experiments::mlp::{
    LittlesLaw, MlpResult, MlpRow, MlpSaturation, SequentialFit, SequentialPoint,
};
use crate::experiments::numa::NumaResult;
use crate::experiments::rob::{RobResult, RobRow, RobStructure, SerializedRow};
use crate::experiments::tlb::{MlpByPageSize, SaxpyTlbRow, TlbLevel, TlbReach, TlbResult, TlbRow};
use crate::units::{KIB, MIB};

/// Two curves; the read curve's knee is at 41.7 GB/s (delay 200), the 1:1 curve's at
/// its idle end.
pub fn loaded() -> LoadedResult {
    let mut rows = Vec::new();
    let curves = [
        (
            "read",
            [
                (400, 12.5, 80.0),
                (200, 41.7, 81.5),
                (100, 55.0, 95.0),
                (50, 63.0, 140.0),
                (0, 66.0, 210.0),
            ],
        ),
        (
            "1:1",
            [
                (400, 10.0, 82.0),
                (200, 30.2, 90.0),
                (100, 41.0, 120.0),
                (50, 47.0, 180.0),
                (0, 49.0, 260.0),
            ],
        ),
    ];
    for (mix, points) in curves {
        for (delay, gb, ns) in points {
            rows.push(LoadedRow {
                mix: mix.to_string(),
                threads: 3,
                delay_cycles: delay,
                gb_per_s: gb,
                injector_gb_per_s: gb - 0.8,
                latency_ns: ns,
                latency_cycles: ns * 3.0,
                spread_pct: if delay == 0 { 14.0 } else { 1.0 },
                concurrency: gb * ns / 64.0,
                injector_overlap: 1.0,
                injectors_concurrent: true,
            });
        }
    }
    let read_knee = Knee {
        delay: 200,
        gb_per_s: 41.7,
        latency_ns: 81.5,
        pct_of_peak: 63.2,
    };
    LoadedResult {
        idle_ns: 79.5,
        idle_cycles: 238.5,
        peak_gb_per_s: 66.0,
        knee: Some(read_knee.clone()),
        reference: "read, 3 injector(s)".to_string(),
        rows,
        curves: vec![
            LoadedCurve {
                mix: "read".to_string(),
                threads: 3,
                peak_gb_per_s: 66.0,
                loaded_ns: 210.0,
                knee: Some(read_knee),
            },
            LoadedCurve {
                mix: "1:1".to_string(),
                threads: 3,
                peak_gb_per_s: 49.0,
                loaded_ns: 260.0,
                knee: Some(Knee {
                    delay: 400,
                    gb_per_s: 10.0,
                    latency_ns: 82.0,
                    pct_of_peak: 20.4,
                }),
            },
        ],
        chase_bytes: 512 * MIB,
        chase_window_pages: 16,
        injector_bytes: 256 * MIB,
        latency_cpu: 0,
        injector_cpus: vec![1, 2, 3],
        line_bytes: 64,
    }
}

fn mlp_row(level: Option<&str>, bytes: u64, chains: u32, t1: f64, saturation: f64) -> MlpRow {
    let parallelism = f64::from(chains).min(saturation + 0.1 * f64::from(chains));
    let ns_per_round = f64::from(chains) * t1 / parallelism;
    MlpRow {
        level: level.map(str::to_string),
        bytes,
        chains,
        ns_per_round,
        ns_per_load: ns_per_round / f64::from(chains),
        parallelism,
        spread_pct: 1.0,
    }
}

/// L2 saturates at 8 chains (parallelism 7.4), DRAM at 10 (parallelism 9.7).
pub fn mlp() -> MlpResult {
    let mut rows = Vec::new();
    for (level, bytes, t1, sat) in [("L2", 512 * KIB, 4.0, 6.6), ("DRAM", 256 * MIB, 90.0, 8.7)] {
        for chains in 1..=12 {
            rows.push(mlp_row(Some(level), bytes, chains, t1, sat));
        }
    }
    let mut grid = Vec::new();
    for (bytes, t1, sat) in [(16 * KIB, 1.2, 0.9), (MIB, 4.0, 6.6), (64 * MIB, 90.0, 8.7)] {
        for chains in [1, 2, 4, 8, 16] {
            grid.push(mlp_row(None, bytes, chains, t1, sat));
        }
    }
    MlpResult {
        rows,
        mlp: BTreeMap::from([("L2".to_string(), 8), ("DRAM".to_string(), 10)]),
        saturation: vec![
            MlpSaturation {
                level: "L2".to_string(),
                bytes: 512 * KIB,
                chains: 8,
                parallelism: 7.4,
                ns_per_load: 0.54,
            },
            MlpSaturation {
                level: "DRAM".to_string(),
                bytes: 256 * MIB,
                chains: 10,
                parallelism: 9.7,
                ns_per_load: 9.3,
            },
        ],
        sequential_fit: Some(SequentialFit {
            m_ns: 85.3,
            c_ns: 30.1,
            r2: 0.9987,
            m_cycles: 255.9,
            points: (1..=8)
                .map(|n| SequentialPoint {
                    misses: n,
                    ns: f64::from(n) * 85.3 + 30.1,
                })
                .collect(),
            bytes: 256 * MIB,
        }),
        grid,
        littles_law: Some(LittlesLaw {
            latency_ns: 90.0,
            chase_gb_per_s: 6.9,
            stream_read_gb_per_s: 14.2,
            stream_concurrency: 19.97,
            chase_parallelism: 9.7,
            random_read_gb_per_s: 6.5,
            random_concurrency: 9.1,
        }),
        order: "page-local".to_string(),
    }
}

/// nop cliff at 224 (reorder buffer), add at 180, load at 72; store has no cliff.
pub fn rob() -> RobResult {
    let cliffs = [
        ("nop", Some(224)),
        ("add", Some(180)),
        ("load", Some(72)),
        ("store", None),
    ];
    let mut rows = Vec::new();
    for (filler, cliff) in cliffs {
        for k in (0..=320).step_by(16) {
            let ns = if cliff.is_some_and(|c| k > c) {
                190.0
            } else {
                100.0
            };
            rows.push(RobRow {
                filler: filler.to_string(),
                k,
                ns_per_iter: ns,
                cycles_per_iter: ns * 3.0,
                spread_pct: 1.0,
            });
        }
    }
    let structure = |filler: &str, structure: &str, entries: Option<u32>| RobStructure {
        filler: filler.to_string(),
        structure: structure.to_string(),
        entries,
        window_entries: entries,
        architectural: 0,
        low_ns: 100.0,
        high_ns: if entries.is_some() { 190.0 } else { 100.0 },
    };
    let mut serialized = Vec::new();
    for misses in 1..=4 {
        for k in (0..=320).step_by(32) {
            let ns = if k > 224 {
                95.0 * f64::from(misses)
            } else {
                95.0 + 20.0 * f64::from(misses - 1)
            };
            serialized.push(SerializedRow {
                misses,
                k,
                ns,
                cycles: ns * 3.0,
            });
        }
    }
    RobResult {
        rows,
        structures: vec![
            structure("nop", "reorder buffer", Some(224)),
            structure("add", "integer register file", Some(180)),
            structure("load", "load queue", Some(72)),
            structure("store", "store queue", None),
        ],
        serialized,
        serialized_window: Some(224),
        serialized_mlp: Some(3.6),
        chase_bytes: 256 * MIB,
    }
}

/// Every vector empty, every option None, every figure NaN.
pub fn empty_loaded() -> LoadedResult {
    LoadedResult {
        idle_ns: f64::NAN,
        idle_cycles: f64::NAN,
        peak_gb_per_s: f64::NAN,
        knee: None,
        reference: String::new(),
        rows: vec![],
        curves: vec![],
        chase_bytes: 0,
        chase_window_pages: 0,
        injector_bytes: 0,
        latency_cpu: 0,
        injector_cpus: vec![],
        line_bytes: 64,
    }
}

pub fn empty_mlp() -> MlpResult {
    MlpResult {
        rows: vec![],
        mlp: BTreeMap::new(),
        saturation: vec![],
        sequential_fit: None,
        grid: vec![],
        littles_law: None,
        order: String::new(),
    }
}

pub fn empty_rob() -> RobResult {
    RobResult {
        rows: vec![],
        structures: vec![],
        serialized: vec![],
        serialized_window: None,
        serialized_mlp: None,
        chase_bytes: 0,
    }
}

/// The samples with NaN in every figure and missing values where they can be missing.
pub fn nan_results() -> (LoadedResult, MlpResult, RobResult) {
    let mut l = loaded();
    for r in &mut l.rows {
        r.latency_cycles = f64::NAN;
        r.spread_pct = f64::NAN;
        r.concurrency = f64::NAN;
    }
    l.rows[1].gb_per_s = f64::NAN;
    l.rows[2].latency_ns = f64::NAN;
    l.idle_cycles = f64::NAN;
    l.curves[1].knee = None;
    let mut m = mlp();
    for r in m.rows.iter_mut().chain(m.grid.iter_mut()) {
        r.parallelism = f64::NAN;
        r.spread_pct = f64::NAN;
    }
    m.saturation.clear();
    if let Some(fit) = &mut m.sequential_fit {
        fit.r2 = f64::NAN;
        fit.m_cycles = f64::NAN;
    }
    let mut r = rob();
    for row in &mut r.rows {
        row.cycles_per_iter = f64::NAN;
    }
    r.rows[3].ns_per_iter = f64::NAN;
    r.serialized_mlp = None;
    r.serialized_window = None;
    (l, m, r)
}

/// Ideal latency of the samples' chase: the data caches' part by the lines' footprint
/// packed densely, plus a TLB part by the pages against the levels' entries.
fn tlb_row(page_bytes: u64, pages: u64, entries: [u64; 2], walk_ns: f64) -> TlbRow {
    let dense_ns = match pages * 64 {
        0..=32768 => 1.2,
        32769..=1048576 => 4.0,
        _ => 14.0,
    };
    let tlb_ns = if pages <= entries[0] {
        0.0
    } else if pages <= entries[1] {
        2.0
    } else {
        walk_ns
    };
    let ns = dense_ns + tlb_ns;
    TlbRow {
        page_bytes,
        pages,
        ns,
        cycles: ns * 3.0,
        dense_ns,
        tlb_ns,
        spread_pct: if pages == 3 { 14.0 } else { 1.0 },
        counters: None,
    }
}

/// 4 KiB pages: L1 DTLB 64 entries (CPUID 72), L2 DTLB 2048 (CPUID 3072), 30 page
/// counts from 1 to 32768; 2 MiB pages: L1 DTLB 32 (as CPUID), L2 DTLB 1024 (CPUID
/// 2048), 13 page counts from 1 to 4096.
pub fn tlb() -> TlbResult {
    let mut rows = Vec::new();
    for e in 0..=15u32 {
        rows.push(tlb_row(4 * KIB, 1 << e, [64, 2048], 25.0));
        if (1..15).contains(&e) {
            rows.push(tlb_row(4 * KIB, 3 << (e - 1), [64, 2048], 25.0));
        }
    }
    for e in 0..=12u32 {
        rows.push(tlb_row(2 * MIB, 1 << e, [32, 1024], 20.0));
    }
    let level = |page_bytes: u64,
                 name: &str,
                 entries: Option<u64>,
                 miss_ns: Option<f64>,
                 cpuid: Option<u32>| TlbLevel {
        page_bytes,
        name: name.to_string(),
        entries,
        reach_bytes: entries.map(|e| e * page_bytes),
        miss_ns,
        miss_cycles: miss_ns.map(|ns| ns * 3.0),
        cpuid_entries: cpuid,
        tlb_ns: miss_ns.unwrap_or(40.0),
    };
    let saxpy = |pattern: &str, page_bytes: u64, stride_bytes: u64, ns: f64| SaxpyTlbRow {
        pattern: pattern.to_string(),
        page_bytes,
        stride_bytes,
        footprint_bytes: 256 * MIB,
        pass_ms: ns * (32 * MIB) as f64 / 1e6,
        ns_per_access: ns,
        timed_fraction: 1.0,
    };
    let reach = |name: &str, page_bytes: u64, cpuid: Option<u32>, measured: Option<u64>| TlbReach {
        name: name.to_string(),
        page_bytes,
        cpuid_entries: cpuid,
        cpuid_reach_bytes: cpuid.map(|c| u64::from(c) * page_bytes),
        measured_entries: measured,
        measured_reach_bytes: measured.map(|m| m * page_bytes),
    };
    TlbResult {
        rows,
        levels: vec![
            level(4 * KIB, "L1 DTLB", Some(64), Some(2.0), Some(72)),
            level(4 * KIB, "L2 DTLB", Some(2048), Some(23.0), Some(3072)),
            level(4 * KIB, "page walk", None, None, None),
            level(2 * MIB, "L1 DTLB", Some(32), Some(2.0), Some(32)),
            level(2 * MIB, "L2 DTLB", Some(1024), Some(18.0), Some(2048)),
            level(2 * MIB, "page walk", None, None, None),
        ],
        saxpy: vec![
            saxpy("stride 1", 4 * KIB, 4, 0.45),
            saxpy("stride 4 KiB", 4 * KIB, 4 * KIB, 12.5),
            saxpy("stride 4 KiB, huge pages", 2 * MIB, 4 * KIB, 3.1),
        ],
        mlp_by_page_size: vec![
            MlpByPageSize {
                page_bytes: 4 * KIB,
                bytes: 256 * MIB,
                chains: 16,
                ns_per_load: 9.9,
                parallelism: 8.6,
                latency_ns: 180.0,
                latency_cycles: 540.0,
            },
            MlpByPageSize {
                page_bytes: 2 * MIB,
                bytes: 256 * MIB,
                chains: 16,
                ns_per_load: 7.6,
                parallelism: 11.2,
                latency_ns: 160.0,
                latency_cycles: 480.0,
            },
        ],
        reach: vec![
            reach("L1 DTLB", 4 * KIB, Some(72), Some(64)),
            reach("L2 DTLB", 4 * KIB, Some(3072), Some(2048)),
            reach("L1 DTLB", 2 * MIB, Some(32), Some(32)),
            reach("L2 DTLB", 2 * MIB, Some(2048), Some(1024)),
            reach("L1 DTLB", 1024 * MIB, Some(72), None),
        ],
    }
}

/// Two nodes: local 90 / 91 ns and 40 / 41 GB/s, remote 140 / 142 ns and 25 / 24 GB/s.
pub fn numa() -> NumaResult {
    NumaResult {
        nodes: vec![0, 1],
        latency_ns: vec![vec![90.0, 140.0], vec![142.0, 91.0]],
        read_gb_per_s: vec![vec![40.0, 25.0], vec![24.0, 41.0]],
        read_overlap: vec![vec![0.99, 0.98], vec![0.97, 0.99]],
        remote_local_latency_ratio: Some(1.56),
        remote_local_bandwidth_ratio: Some(0.60),
        distances: vec![vec![10, 21], vec![21, 10]],
        threads_per_node: 4,
        latency_bytes: 256 * MIB,
        bandwidth_bytes: 128 * MIB,
        placement_verified: vec![vec![Some(1.0), Some(0.998)], vec![Some(0.999), None]],
        note: None,
        random_latency_ns: vec![vec![105.0, 171.0], vec![173.0, 106.0]],
        page_local_window_pages: 64,
        cpus: vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]],
        isa: "avx2".to_string(),
        max_spread_pct: 2.5,
    }
}

/// One node: a 1 × 1 matrix and the note saying why nothing remote was measured.
pub fn numa_single_node() -> NumaResult {
    NumaResult {
        nodes: vec![0],
        latency_ns: vec![vec![95.0]],
        read_gb_per_s: vec![vec![38.5]],
        read_overlap: vec![vec![1.0]],
        remote_local_latency_ratio: None,
        remote_local_bandwidth_ratio: None,
        distances: vec![vec![10]],
        threads_per_node: 2,
        latency_bytes: 256 * MIB,
        bandwidth_bytes: 128 * MIB,
        placement_verified: vec![vec![Some(1.0)]],
        note: Some("one NUMA node: there is no remote memory to measure".to_string()),
        random_latency_ns: vec![vec![112.0]],
        page_local_window_pages: 64,
        cpus: vec![vec![0, 1]],
        isa: "avx512".to_string(),
        max_spread_pct: 14.0,
    }
}

pub fn empty_tlb() -> TlbResult {
    TlbResult {
        rows: vec![],
        levels: vec![],
        saxpy: vec![],
        mlp_by_page_size: vec![],
        reach: vec![],
    }
}

pub fn empty_numa() -> NumaResult {
    NumaResult {
        nodes: vec![],
        latency_ns: vec![],
        read_gb_per_s: vec![],
        read_overlap: vec![],
        remote_local_latency_ratio: None,
        remote_local_bandwidth_ratio: None,
        distances: vec![],
        threads_per_node: 0,
        latency_bytes: 0,
        bandwidth_bytes: 0,
        placement_verified: vec![],
        note: None,
        random_latency_ns: vec![],
        page_local_window_pages: 0,
        cpus: vec![],
        isa: String::new(),
        max_spread_pct: f64::NAN,
    }
}

/// The TLB and NUMA samples with NaN figures, missing values and a ragged matrix.
pub fn nan_tlb_numa() -> (TlbResult, NumaResult) {
    let mut t = tlb();
    for r in &mut t.rows {
        r.cycles = f64::NAN;
        r.spread_pct = f64::NAN;
    }
    t.rows[5].ns = f64::NAN;
    t.rows[6].tlb_ns = f64::NAN;
    t.rows[7].dense_ns = f64::INFINITY;
    for l in &mut t.levels {
        l.miss_ns = l.miss_ns.map(|_| f64::NAN);
        l.miss_cycles = None;
        l.cpuid_entries = None;
    }
    for s in &mut t.saxpy {
        s.ns_per_access = f64::NAN;
        s.pass_ms = f64::NAN;
    }
    t.mlp_by_page_size[0].parallelism = f64::NAN;
    for r in &mut t.reach {
        r.measured_entries = None;
        r.measured_reach_bytes = None;
    }
    let mut n = numa();
    n.latency_ns[0][1] = f64::NAN;
    n.read_gb_per_s[1].pop();
    n.remote_local_latency_ratio = Some(f64::NAN);
    n.remote_local_bandwidth_ratio = None;
    n.placement_verified = vec![vec![None, Some(f64::NAN)]];
    n.random_latency_ns = vec![vec![f64::NAN]];
    n.cpus = vec![vec![], vec![4]];
    n.max_spread_pct = f64::INFINITY;
    (t, n)
}

/// A page-local sweep of 4 KiB … 64 MiB, one point per octave, with L1d (4–32 KiB),
/// L2 (64 KiB–1 MiB) and DRAM levels; with `counted`, every point carries
/// `access_counts` with L1 = (log2(bytes) − 12) / 10, and a random curve whose points
/// were not counted (`uncounted_access`).
pub fn latency_counted(counted: bool) -> LatencyResult {
    let points: Vec<LatencyPoint> = (12..=26u32)
        .map(|e| {
            let ns = match e {
                ..=15 => 1.0,
                16..=20 => 4.0,
                _ => 90.0,
            };
            LatencyPoint {
                bytes: 1 << e,
                ns,
                cycles: ns * 4.0,
                spread_pct: 1.0,
                trials: 5,
                unstable: false,
                counters: counted.then(|| access_counts(f64::from(e - 12) / 10.0)),
            }
        })
        .collect();
    let random = points
        .iter()
        .map(|p| LatencyPoint {
            ns: p.ns * 1.2,
            counters: counted.then(uncounted_access),
            ..p.clone()
        })
        .collect();
    let level = |name: &str, ns: f64, first: u32, last: u32| LatencyLevel {
        name: name.to_string(),
        latency_ns: ns,
        latency_cycles: ns * 4.0,
        capacity_bytes: (name != "DRAM").then_some(1 << last),
        os_size_bytes: None,
        first_bytes: 1 << first,
        last_bytes: 1 << last,
        points: (last - first + 1) as usize,
    };
    LatencyResult {
        order: "page-local".to_string(),
        stride_bytes: 64,
        points,
        random_points: Some(random),
        levels: vec![
            level("L1d", 1.0, 12, 15),
            level("L2", 4.0, 16, 20),
            level("DRAM", 90.0, 21, 26),
        ],
        dram: None,
    }
}

/// Read rows at 4 KiB and 1 MiB, strides 8 and 64 and random; with `counted`, each
/// row carries `access_counts` with L1 = 0.125 × stride / 8 (random: 1).
pub fn stride_counted(counted: bool) -> StrideResult {
    let mut rows = Vec::new();
    for bytes in [4 * KIB, MIB] {
        for stride in [Some(8), Some(64), None] {
            rows.push(StrideRow {
                bytes,
                stride_bytes: stride,
                pattern: if stride.is_some() {
                    "strided"
                } else {
                    "random"
                }
                .to_string(),
                kernel: "read".to_string(),
                gb_per_s: 8.0,
                ns_per_access: 1.0,
                spread_pct: 1.0,
                counters: counted
                    .then(|| access_counts(stride.map_or(1.0, |s| 0.125 * s as f64 / 8.0))),
            });
        }
    }
    StrideResult { rows }
}
