//! Small synthetic TLB results for the view's tests: two page sizes with two TLB levels
//! each, and one with NaN figures and missing values.

use super::{MlpByPageSize, SaxpyTlbRow, TlbLevel, TlbReach, TlbResult, TlbRow};
use crate::units::{KIB, MIB};

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
        transition_pages: entries.map(|e| (e, e + e / 8)),
        miss_ns_range: miss_ns.map(|ns| (ns, ns)),
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
    let mlp = |page_bytes, ns_per_load, parallelism, latency_ns: f64| MlpByPageSize {
        page_bytes,
        bytes: 256 * MIB,
        chains: 16,
        ns_per_load,
        parallelism,
        latency_ns,
        latency_cycles: latency_ns * 3.0,
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
            mlp(4 * KIB, 9.9, 8.6, 180.0),
            mlp(2 * MIB, 7.6, 11.2, 160.0),
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

/// The TLB sample with NaN and infinite figures and missing values.
pub fn nan_tlb() -> TlbResult {
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
    t
}
