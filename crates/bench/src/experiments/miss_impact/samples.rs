//! A small miss-impact result and its parts, for this room's tests and the report's.

use super::*;
use crate::counters::LevelMisses;

/// Counts of 1000 accesses with these miss rates per access (None: not supported).
pub fn counts(l1: Option<f64>, l2: Option<f64>, llc: Option<f64>) -> AccessCounts {
    let level = |level, v: Option<f64>| LevelMisses {
        level,
        event: format!("{}-event", short(level)),
        per_access: v,
        multiplexed: false,
        not_supported: v
            .is_none()
            .then(|| "not supported: no hardware PMU (a VM)".to_string()),
    };
    AccessCounts {
        accesses: 1000,
        levels: vec![
            level(MissLevel::L1, l1),
            level(MissLevel::L2, l2),
            level(MissLevel::Llc, llc),
            level(MissLevel::Dtlb, Some(0.0)),
        ],
    }
}

/// The ladder of these levels and latencies.
pub fn ladder(levels: &[(&str, f64)]) -> Vec<LevelLatency> {
    levels
        .iter()
        .map(|(name, ns)| LevelLatency {
            name: Level::from(name.to_string()),
            ns: *ns,
        })
        .collect()
}

/// A small result, for the exporters' tests.
pub fn sample() -> MissImpactResult {
    let levels = ladder(&[("L1d", 1.0), ("L2", 4.0), ("L3", 12.0), ("DRAM", 100.0)]);
    let all = |m: Option<f64>| counts(m, m, m);
    let row = |level: &str, bytes, pattern, ns: f64, c: AccessCounts| {
        let amat = amat(&levels, &c);
        MissImpactRow {
            level: Level::from(level.to_string()),
            footprint_bytes: bytes,
            pattern,
            ns_per_access: ns,
            spread_pct: 1.5,
            trials: 5,
            run_time_ns: 4.2e6,
            laps: 3,
            llc_miss_rate: c.per_access(MissLevel::Llc),
            misses: c,
            page_faults: Some(0),
            task_clock_ns: Some(4_200_000),
            software_not_supported: None,
            measured_over_amat: amat.as_ref().ok().map(|a| ns / a),
            amat_ns: amat.as_ref().ok().copied(),
            amat_not_computed: amat.err(),
        }
    };
    MissImpactResult {
        line_bytes: 64,
        random_order: ChaseOrderKind::PageLocal,
        window_pages: Some(64),
        sequential_isa: Isa::Avx2,
        hardware_pmu: false,
        rows: vec![
            row("L1d", 16 * KIB, Pattern::Sequential, 0.1, all(Some(0.0))),
            row("DRAM", 128 * MIB, Pattern::Random, 101.0, all(Some(1.0))),
            row("DRAM", 128 * MIB, Pattern::Sequential, 5.0, all(None)),
        ],
        level_latencies: levels,
    }
}
