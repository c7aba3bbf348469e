//! The latency ladder's chart: the measured curve against the working set, the other
//! chase order, the OS cache sizes, and each level's plateau and measured end.

use super::{LatencyPoint, LatencyResult, UNSTABLE_SPREAD_PCT};
use crate::kernels::permutation::ChaseOrderKind;
use crate::topology::Machine;
use crate::units::Bytes;
use crate::view::chart::{
    level_color, Axis, Band, LegendEntry, LegendSymbol, LineChart, Series, VMarker, CURVE_COLOR,
    REFERENCE_LINE_COLOR,
};
use crate::view::format::ns;

/// Colour of the single DRAM point measured with the other chase order.
const OTHER_ORDER_COLOR: &str = "#17becf";

/// The latency ladder: the measured curve (ns on a log scale, core cycles on the right),
/// the OS cache sizes as dashed references, the found level ends as solid lines, and each
/// plateau shaded and labelled with its latency.
pub(super) fn latency_chart(result: &LatencyResult, machine: &Machine) -> LineChart {
    let mut chart = LineChart::new("Load-to-use latency vs working set")
        .size(1000.0, 560.0)
        .x_axis(Axis::log2("Working set (log scale)").bytes())
        .y_axis(Axis::log10("Latency (ns, log scale)"))
        .series(
            latency_series(
                format!(
                    "{} chase, {} stride",
                    result.order,
                    Bytes(result.stride_bytes)
                ),
                &result.points,
            )
            .color(CURVE_COLOR),
        )
        .unstable_label(format!(
            "unstable (spread > {UNSTABLE_SPREAD_PCT:.0}% after re-measuring)"
        ));
    if let Some(hz) = machine.core_hz_estimate {
        chart = chart.secondary_y("Latency (core cycles)", hz / 1e9);
    }

    // The other chase order shows what TLB misses cost: the whole random curve when it was
    // measured, else the single DRAM point measured both ways.
    let random = result.random_points.as_deref().unwrap_or(&[]);
    if !random.is_empty() {
        chart = chart.series(
            latency_series(
                "random chase over the whole buffer (adds TLB misses)",
                random,
            )
            .color(OTHER_ORDER_COLOR)
            .dashed(),
        );
    } else if let Some(d) = &result.dram {
        let (name, value) = if result.order == ChaseOrderKind::PageLocal {
            ("random chase (DRAM, with TLB misses)", d.random_ns)
        } else {
            ("page-local chase (DRAM, no TLB misses)", d.page_local_ns)
        };
        if value.is_finite() && value > 0.0 {
            chart = chart
                .series(Series::new(name, vec![(d.bytes as f64, value)]).color(OTHER_ORDER_COLOR));
        }
    }

    let caches = machine.data_caches();
    for c in &caches {
        chart = chart.marker(VMarker::reference(
            c.size_bytes as f64,
            format!("{} {}", c.name(), Bytes(c.size_bytes)),
        ));
    }
    for level in &result.levels {
        let color = level_color(level.name.name());
        if let Some(cap) = level.capacity_bytes {
            chart = chart.marker(VMarker::found(
                cap as f64,
                format!("{} ends", level.name),
                color,
            ));
        }
        chart = chart.band(
            Band::new(
                level.first_bytes as f64,
                level.last_bytes as f64,
                format!("{} {} ns", level.name, ns(level.latency_ns)),
            )
            .color(color),
        );
    }

    if !result.levels.is_empty() {
        chart = chart.legend_entry(LegendEntry::new(
            "plateau (level found)",
            LegendSymbol::Swatch {
                color: REFERENCE_LINE_COLOR.to_string(),
                opacity: 0.2,
            },
        ));
    }
    if result.levels.iter().any(|l| l.capacity_bytes.is_some()) {
        chart = chart.legend_entry(LegendEntry::found("measured end of level"));
    }
    if !caches.is_empty() {
        chart = chart.legend_entry(LegendEntry::reference("cache size reported by the OS"));
    }
    chart
}

/// One sweep as a chart series: ns per working set, unstable points flagged, and error bars
/// of ± the robust spread (≈ one standard deviation), usually thinner than the marker, so
/// they stand out exactly where a point is noisy.
pub(super) fn latency_series(name: impl Into<String>, points: &[LatencyPoint]) -> Series {
    let errors = points
        .iter()
        .map(|p| {
            let s = if p.spread_pct.is_finite() {
                p.spread_pct.max(0.0) / 100.0
            } else {
                0.0
            };
            (p.ns * (1.0 - s), p.ns * (1.0 + s))
        })
        .collect();
    Series::new(
        name,
        points.iter().map(|p| (p.bytes as f64, p.ns)).collect(),
    )
    .error_bars(errors)
    .unstable(points.iter().map(|p| p.unstable).collect())
}
