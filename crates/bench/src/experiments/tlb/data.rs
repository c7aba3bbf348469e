//! The TLB section's CSV tables: `tlb.rows` (every point with its level and, when
//! counted, its misses), `tlb.levels` and `tlb.saxpy`, with their names, columns and cell
//! formats unchanged.

use serde::Serialize;

use super::{TlbResult, TlbRow};
use crate::experiments::misses::Misses;
use crate::view::data_row::{Columns, Raw};
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
    #[derive(Serialize, Default)]
    struct Row<'a> {
        page_bytes: u64,
        pages: u64,
        ns: Raw,
        cycles: Raw,
        dense_ns: Raw,
        tlb_ns: Raw,
        spread_pct: Raw,
        level: &'a str,
    }
    let misses = Misses::of("", result.rows.iter().map(|r| r.counters.as_ref()));
    let columns = Columns::after(misses.data_header());
    let rows = result.rows.iter().map(|r| {
        let row = Row {
            page_bytes: r.page_bytes,
            pages: r.pages,
            ns: Raw(r.ns),
            cycles: Raw(r.cycles),
            dense_ns: Raw(r.dense_ns),
            tlb_ns: Raw(r.tlb_ns),
            spread_pct: Raw(r.spread_pct),
            level: level_of(r),
        };
        (Vec::new(), row, misses.data(r.counters.as_ref()))
    });
    DataTable::of_around("tlb.rows", columns, rows)
}

pub(super) fn levels_data(result: &TlbResult) -> DataTable {
    #[derive(Serialize, Default)]
    struct Row<'a> {
        page_bytes: u64,
        name: &'a str,
        entries: Option<u64>,
        reach_bytes: Option<u64>,
        miss_ns: Option<Raw>,
        miss_cycles: Option<Raw>,
        cpuid_entries: Option<u32>,
        rise_from_pages: Option<u64>,
        rise_to_pages: Option<u64>,
        miss_ns_low: Option<Raw>,
        miss_ns_high: Option<Raw>,
    }
    DataTable::of(
        "tlb.levels",
        result.levels.iter().map(|l| Row {
            page_bytes: l.page_bytes,
            name: &l.name,
            entries: l.entries,
            reach_bytes: l.reach_bytes,
            miss_ns: l.miss_ns.map(Raw),
            miss_cycles: l.miss_cycles.map(Raw),
            cpuid_entries: l.cpuid_entries,
            rise_from_pages: l.transition_pages.map(|t| t.0),
            rise_to_pages: l.transition_pages.map(|t| t.1),
            miss_ns_low: l.miss_ns_range.map(|r| Raw(r.0)),
            miss_ns_high: l.miss_ns_range.map(|r| Raw(r.1)),
        }),
    )
}

pub(super) fn saxpy_data(result: &TlbResult) -> DataTable {
    #[derive(Serialize, Default)]
    struct Row<'a> {
        pattern: &'a str,
        page_bytes: u64,
        stride_bytes: u64,
        footprint_bytes: u64,
        pass_ms: Raw,
        ns_per_access: Raw,
    }
    DataTable::of(
        "tlb.saxpy",
        result.saxpy.iter().map(|r| Row {
            pattern: &r.pattern,
            page_bytes: r.page_bytes,
            stride_bytes: r.stride_bytes,
            footprint_bytes: r.footprint_bytes,
            pass_ms: Raw(r.pass_ms),
            ns_per_access: Raw(r.ns_per_access),
        }),
    )
}
