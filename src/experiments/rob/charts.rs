//! The out-of-order window's charts: time per iteration against K for each filler with
//! each cliff marked, and the serialised blocks' time against K for each miss count.

use super::{RobResult, RobRow, SerializedRow};
use crate::topology::Machine;
use crate::view::chart::{Axis, LineChart, Series, TickFormat, VMarker};
use crate::view::format::distinct;

/// Spread above which a point is drawn as unstable.
pub(super) const NOISY_SPREAD_PCT: f64 = 10.0;

/// Series colours: category10 in full, so every filler gets its own.
const FILLER_PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f",
];

/// Colour of the marker of a value found in the data (the serialised window).
const FOUND_POINT_COLOR: &str = "#111827";

pub(super) fn noisy(spread_pct: f64) -> bool {
    spread_pct.is_finite() && spread_pct > NOISY_SPREAD_PCT
}

/// Fillers in order of first appearance (rows, then structures): fixes their colours.
pub(super) fn rob_fillers(result: &RobResult) -> Vec<&str> {
    distinct(
        result
            .rows
            .iter()
            .map(|r| r.filler.as_str())
            .chain(result.structures.iter().map(|s| s.filler.as_str())),
    )
}

pub(super) fn filler_color(fillers: &[&str], filler: &str) -> &'static str {
    let i = fillers.iter().position(|f| *f == filler).unwrap_or(0);
    FILLER_PALETTE[i % FILLER_PALETTE.len()]
}

/// Median of the finite positive values, if any.
fn median_positive(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite() && *v > 0.0);
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values[values.len() / 2])
}

/// Core cycles per ns for the secondary axis: the measured core clock, else the ratio the
/// rows give; None when neither is usable.
fn cycles_per_ns(machine: &Machine, ratio: Option<f64>) -> Option<f64> {
    machine
        .core_hz_estimate
        .filter(|hz| hz.is_finite() && *hz > 0.0)
        .map(|hz| hz / 1e9)
        .or_else(|| ratio.filter(|f| f.is_finite() && *f > 0.0))
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
    let ratio = median_positive(
        result
            .rows
            .iter()
            .map(|r| r.cycles_per_iter / r.ns_per_iter)
            .collect(),
    );
    if let Some(f) = cycles_per_ns(machine, ratio) {
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
                filler,
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
                filler_color(&fillers, &s.filler),
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
            .color(FILLER_PALETTE[i % FILLER_PALETTE.len()]),
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
