//! The bandwidth section's charts: GB/s against the working set per thread (the sweep)
//! and against the thread count, one series per kernel, coloured by kernel family.

use super::{BandwidthResult, BandwidthRow};
use crate::experiments::shared::level::Level;
use crate::topology::Machine;
use crate::units::Bytes;
use crate::view::chart::{
    category_color, Axis, LegendEntry, LineChart, Series, TickFormat, VMarker,
};
use crate::view::format::{count_of, distinct, noisy, NOISY_SPREAD_PCT};

/// A kernel without its "-nt" suffix: a kernel and its streaming-store variant share one
/// colour, the streaming one drawn dashed.
fn kernel_family(name: &str) -> &str {
    name.strip_suffix("-nt").unwrap_or(name)
}

/// Kernel families in order of first appearance (table, then sweep), which fixes their
/// colours for every chart of the section.
fn kernel_families(result: &BandwidthResult) -> Vec<&str> {
    distinct(
        result
            .rows
            .iter()
            .chain(&result.sweep)
            .map(|r| kernel_family(r.kernel.name())),
    )
}

/// A kernel as a chart series: coloured by family, dashed with streaming stores, noisy
/// points and points whose threads did not run together hollow.
fn kernel_series(families: &[&str], rows: &[&BandwidthRow], points: Vec<(f64, f64)>) -> Series {
    let Some(first) = rows.first() else {
        return Series::new("", points);
    };
    let series = Series::new(first.kernel.name(), points)
        .color(category_color(families, kernel_family(first.kernel.name())))
        .unstable(
            rows.iter()
                .map(|r| noisy(r.spread_pct) || !r.concurrent)
                .collect(),
        );
    if first.nontemporal {
        series.dashed()
    } else {
        series
    }
}

/// What a hollow point of a bandwidth chart means: a wide spread, and (when some row has
/// it) threads that did not run together.
fn unstable_label<'a>(rows: impl Iterator<Item = &'a BandwidthRow>) -> String {
    let mut label = format!("spread > {NOISY_SPREAD_PCT:.0}%");
    if rows.into_iter().any(|r| !r.concurrent) {
        label.push_str(" or threads not together (!)");
    }
    label
}

/// Bandwidth against the working set per thread for the sweep's kernels (first thread
/// count), on log axes, with the OS cache sizes as dashed references and bytes per cycle
/// per thread on the right when the core clock is known.
pub(super) fn sweep_chart(result: &BandwidthResult, machine: &Machine) -> LineChart {
    let threads = result.sweep.first().map_or(1, |r| r.threads).max(1);
    let families = kernel_families(result);
    let mut chart = LineChart::new(format!(
        "Bandwidth vs working set, {} (decimal GB/s, bytes read + written)",
        count_of(threads, "thread")
    ))
    .size(1000.0, 520.0)
    .x_axis(Axis::log2("Working set per thread, all arrays of the kernel (log scale)").bytes())
    .y_axis(Axis::log10("Bandwidth (GB/s, log scale)"))
    .unstable_label(unstable_label(result.sweep.iter()));
    if let Some(hz) = machine
        .core_hz_estimate
        .filter(|hz| hz.is_finite() && *hz > 0.0)
    {
        chart = chart.secondary_y("Bytes per core cycle per thread", 1e9 / hz / threads as f64);
    }
    for kernel in distinct(result.sweep.iter().map(|r| r.kernel.name())) {
        let mut rows: Vec<&BandwidthRow> = result
            .sweep
            .iter()
            .filter(|r| r.kernel.name() == kernel)
            .collect();
        rows.sort_by_key(|r| r.bytes_per_thread);
        let points = rows
            .iter()
            .map(|r| (r.bytes_per_thread as f64, r.gb_per_s))
            .collect();
        chart = chart.series(kernel_series(&families, &rows, points));
    }
    let caches = machine.data_caches();
    for c in &caches {
        chart = chart.marker(VMarker::reference(
            c.size_bytes as f64,
            format!("{} {}", c.name(), Bytes(c.size_bytes)),
        ));
    }
    if !caches.is_empty() {
        chart = chart.legend_entry(LegendEntry::reference("cache size reported by the OS"));
    }
    chart
}

/// The level the thread-scaling chart shows: DRAM, else the custom sizes, else the last
/// level measured.
pub(super) fn scaling_level(rows: &[BandwidthRow]) -> Option<&Level> {
    if rows.iter().any(|r| r.level == Level::Dram) {
        Some(&Level::Dram)
    } else if rows.iter().any(|r| r.level == Level::Custom) {
        Some(&Level::Custom)
    } else {
        rows.last().map(|r| &r.level)
    }
}

/// Bandwidth of every kernel against the thread count at `level` (the largest working set
/// of that level when there are several, as with custom sizes); linear axes, so that the
/// slope reads as scaling.
pub(super) fn threads_chart(result: &BandwidthResult, level: &Level) -> LineChart {
    let families = kernel_families(result);
    let rows: Vec<&BandwidthRow> = result.rows.iter().filter(|r| r.level == *level).collect();
    // From the fewest threads measured to the most: starting at zero would leave the
    // left part empty (nothing runs on zero threads), half the chart with "1,all" on 2 CPUs.
    let min_threads = rows.iter().map(|r| r.threads).min().unwrap_or(1);
    let max_threads = rows.iter().map(|r| r.threads).max().unwrap_or(1);
    let where_ = if *level == Level::Custom {
        "the largest custom working set".to_string()
    } else {
        level.to_string()
    };
    let mut chart = LineChart::new(format!(
        "Bandwidth vs threads in {where_} (decimal GB/s of all threads together)"
    ))
    .size(1000.0, 480.0)
    .x_axis(
        Axis::linear("Threads")
            .format(TickFormat::Integer)
            .range(min_threads as f64, max_threads as f64),
    )
    .y_axis(Axis::linear("Bandwidth (GB/s)").include_zero())
    .unstable_label(unstable_label(rows.iter().copied()));
    for kernel in distinct(rows.iter().map(|r| r.kernel.name())) {
        let mut points: Vec<&BandwidthRow> = distinct(rows.iter().map(|r| r.threads))
            .into_iter()
            .filter_map(|threads| {
                rows.iter()
                    .copied()
                    .filter(|r| r.kernel.name() == kernel && r.threads == threads)
                    .max_by_key(|r| r.bytes_per_thread)
            })
            .collect();
        points.sort_by_key(|r| r.threads);
        let xy = points
            .iter()
            .map(|r| (r.threads as f64, r.gb_per_s))
            .collect();
        chart = chart.series(kernel_series(&families, &points, xy));
    }
    chart
}
