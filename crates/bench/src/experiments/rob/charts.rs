//! The out-of-order window's charts: time per iteration against K for each filler with
//! each cliff marked, and the serialised blocks' time against K for each miss count.

use super::{RobResult, RobRow, SerializedRow};
use crate::kernels::jit::Filler;
use crate::topology::Machine;
use crate::view::chart::{
    category_color, cycles_per_ns, Axis, LineChart, Series, TickFormat, VMarker, FOUND_POINT_COLOR,
    PALETTE,
};
use crate::view::format::{distinct, noisy, NOISY_SPREAD_PCT};

/// Fillers in order of first appearance (rows, then structures): fixes their colours.
pub(super) fn rob_fillers(result: &RobResult) -> Vec<Filler> {
    distinct(
        result
            .rows
            .iter()
            .map(|r| r.filler)
            .chain(result.structures.iter().map(|s| s.filler)),
    )
}

/// The colour of `filler` among `fillers` (those of `rob_fillers`).
pub(super) fn filler_color(fillers: &[Filler], filler: Filler) -> &'static str {
    let names: Vec<&str> = fillers.iter().map(|f| f.name()).collect();
    category_color(&names, filler.name())
}

/// ns per iteration against K, one line per filler, each cliff marked with its structure.
pub(super) fn rob_chart(result: &RobResult, machine: &Machine) -> LineChart {
    let fillers = rob_fillers(result);
    let max_k = result.rows.iter().map(|r| r.k).max().unwrap_or(0).max(1);
    let mut chart = LineChart::new("Time per iteration vs filler instructions between two misses")
        .size(1000.0, 520.0)
        .x_axis(
            Axis::linear("Filler instructions K between the two loads")
                .format(TickFormat::Integer)
                .range(0.0, f64::from(max_k)),
        )
        .y_axis(Axis::linear("Time per iteration (ns)").include_zero())
        .unstable_label(format!("spread > {NOISY_SPREAD_PCT:.0}%"));
    let ratios = result
        .rows
        .iter()
        .map(|r| r.cycles_per_iter / r.ns_per_iter);
    if let Some(f) = cycles_per_ns(machine, ratios) {
        chart = chart.secondary_y("Core cycles per iteration", f);
    }
    for &filler in &fillers {
        let mut rows: Vec<&RobRow> = result.rows.iter().filter(|r| r.filler == filler).collect();
        if rows.is_empty() {
            continue;
        }
        rows.sort_by_key(|r| r.k);
        chart = chart.series(
            Series::new(
                filler.name(),
                rows.iter()
                    .map(|r| (f64::from(r.k), r.ns_per_iter))
                    .collect(),
            )
            .color(filler_color(&fillers, filler))
            .unstable(rows.iter().map(|r| noisy(r.spread_pct)).collect()),
        );
    }
    for s in &result.structures {
        if let Some(entries) = s.entries {
            chart = chart.marker(VMarker::found(
                f64::from(entries),
                format!("{}: {} ≈ {entries}", s.filler, s.structure),
                filler_color(&fillers, s.filler),
            ));
        }
    }
    chart
}

/// The serialised blocks: time per block against K, one line per miss count, with the
/// window read from the grid marked.
pub(super) fn rob_serialized_chart(result: &RobResult) -> LineChart {
    let max_k = result
        .serialized
        .iter()
        .map(|r| r.k)
        .max()
        .unwrap_or(0)
        .max(1);
    let mut chart = LineChart::new("Serialised blocks: N−1 misses, K nops, one miss")
        .size(1000.0, 460.0)
        .x_axis(
            Axis::linear("Nops K before the last miss")
                .format(TickFormat::Integer)
                .range(0.0, f64::from(max_k)),
        )
        .y_axis(Axis::linear("Time per block (ns)").include_zero());
    let mut misses = distinct(result.serialized.iter().map(|r| r.misses));
    misses.sort_unstable();
    for (i, &n) in misses.iter().enumerate() {
        let mut rows: Vec<&SerializedRow> =
            result.serialized.iter().filter(|r| r.misses == n).collect();
        rows.sort_by_key(|r| r.k);
        chart = chart.series(
            Series::new(
                if n == 1 {
                    "1 miss".to_string()
                } else {
                    format!("{n} misses")
                },
                rows.iter().map(|r| (f64::from(r.k), r.ns)).collect(),
            )
            .color(PALETTE[i % PALETTE.len()]),
        );
    }
    if let Some(w) = result.serialized_window {
        chart = chart.marker(VMarker::found(
            f64::from(w),
            format!("window ≈ {w}"),
            FOUND_POINT_COLOR,
        ));
    }
    chart
}
