//! The TLB section's CSV tables: `tlb.rows` (every point with its level and, when
//! counted, its misses), `tlb.levels` and `tlb.saxpy`, with their names, columns and cell
//! formats unchanged.

use super::{TlbResult, TlbRow};
use crate::experiments::misses::Misses;
use crate::view::format::{raw, raw_opt};
use crate::view::DataTable;

/// `tlb.rows`: every point with the TLB level its page count falls in (the first level
/// of its page size whose entries cover it, else the level without entries: the walk).
pub(super) fn rows_data(result: &TlbResult) -> DataTable {
    let level_of = |r: &TlbRow| {
        let levels = result
            .levels
            .iter()
            .filter(|l| l.page_bytes == r.page_bytes);
        levels
            .clone()
            .find(|l| l.entries.is_some_and(|e| r.pages <= e))
            .or_else(|| levels.clone().find(|l| l.entries.is_none()))
            .map_or("", |l| l.name.as_str())
    };
    let misses = Misses::of("", result.rows.iter().map(|r| r.counters.as_ref()));
    let mut t = DataTable::new(
        "tlb.rows",
        "page_bytes pages ns cycles dense_ns tlb_ns spread_pct level".split_whitespace(),
    );
    t.header.extend(misses.data_header());
    for r in &result.rows {
        let mut row = vec![
            r.page_bytes.to_string(),
            r.pages.to_string(),
            raw(r.ns),
            raw(r.cycles),
            raw(r.dense_ns),
            raw(r.tlb_ns),
            raw(r.spread_pct),
            level_of(r).to_string(),
        ];
        row.extend(misses.data(r.counters.as_ref()));
        t.row(row);
    }
    t
}

pub(super) fn levels_data(result: &TlbResult) -> DataTable {
    let mut t = DataTable::new(
        "tlb.levels",
        "page_bytes name entries reach_bytes miss_ns miss_cycles cpuid_entries rise_from_pages \
         rise_to_pages miss_ns_low miss_ns_high"
            .split_whitespace(),
    );
    for l in &result.levels {
        t.row(vec![
            l.page_bytes.to_string(),
            l.name.clone(),
            raw_opt(l.entries),
            raw_opt(l.reach_bytes),
            l.miss_ns.map(raw).unwrap_or_default(),
            l.miss_cycles.map(raw).unwrap_or_default(),
            raw_opt(l.cpuid_entries),
            raw_opt(l.transition_pages.map(|t| t.0)),
            raw_opt(l.transition_pages.map(|t| t.1)),
            l.miss_ns_range.map(|r| raw(r.0)).unwrap_or_default(),
            l.miss_ns_range.map(|r| raw(r.1)).unwrap_or_default(),
        ]);
    }
    t
}

pub(super) fn saxpy_data(result: &TlbResult) -> DataTable {
    let mut t = DataTable::new(
        "tlb.saxpy",
        "pattern page_bytes stride_bytes footprint_bytes pass_ms ns_per_access".split_whitespace(),
    );
    for r in &result.saxpy {
        t.row(vec![
            r.pattern.clone(),
            r.page_bytes.to_string(),
            r.stride_bytes.to_string(),
            r.footprint_bytes.to_string(),
            raw(r.pass_ms),
            raw(r.ns_per_access),
        ]);
    }
    t
}
