//! Latency results for the view's tests: a clean four-level ladder, and a three-level one
//! with (optionally) counted misses and a random curve.

use super::{DramLatency, LatencyLevel, LatencyPoint, LatencyResult};
use crate::counters::samples::{access_counts, uncounted_access};
use crate::experiments::shared::level::Level;
use crate::kernels::permutation::ChaseOrderKind;
use crate::units::{KIB, MIB};

/// A random-order sweep from 4 KiB to 256 MiB with L1d, L2, L3 and DRAM found, one
/// unstable point (2 MiB) and DRAM measured both ways.
pub fn latency() -> LatencyResult {
    let points = (12..=28)
        .map(|e| {
            let ns = match e {
                ..=15 => 1.25,
                16..=20 => 4.1,
                21..=25 => 14.0,
                _ => 95.0,
            };
            LatencyPoint {
                bytes: 1u64 << e,
                ns,
                cycles: ns * 3.0,
                spread_pct: 1.0,
                trials: 7,
                unstable: e == 21,
                counters: None,
            }
        })
        .collect();
    let level = |name: &str, ns: f64, first: u64, last: u64, cap: Option<u64>| LatencyLevel {
        name: Level::from(name.to_string()),
        latency_ns: ns,
        latency_cycles: ns * 3.0,
        capacity_bytes: cap,
        os_size_bytes: cap,
        first_bytes: first,
        last_bytes: last,
        points: 4,
    };
    LatencyResult {
        order: ChaseOrderKind::Random,
        stride_bytes: 64,
        points,
        random_points: None,
        levels: vec![
            level("L1d", 1.25, 4 * KIB, 32 * KIB, Some(32 * KIB)),
            level("L2", 4.1, 64 * KIB, MIB, Some(MIB)),
            level("L3", 14.0, 2 * MIB, 32 * MIB, Some(32 * MIB)),
            level("DRAM", 95.0, 64 * MIB, 256 * MIB, None),
        ],
        dram: Some(DramLatency {
            bytes: 256 * MIB,
            random_ns: 95.0,
            page_local_ns: 80.0,
            random_cycles: 285.0,
            page_local_cycles: 240.0,
            tlb_penalty_ns: 15.0,
            page_local_window_pages: 16,
            tlb_measured_ns: Some(9.5),
        }),
    }
}

/// A page-local sweep from 4 KiB to 64 MiB (L1d, L2, DRAM) with a random curve; with
/// `counted`, each point carries `access_counts` with L1 = (log2 bytes − 12) / 10 and the
/// random curve `uncounted_access`.
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
        name: Level::from(name.to_string()),
        latency_ns: ns,
        latency_cycles: ns * 4.0,
        capacity_bytes: (name != "DRAM").then_some(1 << last),
        os_size_bytes: None,
        first_bytes: 1 << first,
        last_bytes: 1 << last,
        points: (last - first + 1) as usize,
    };
    LatencyResult {
        order: ChaseOrderKind::PageLocal,
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
