//! The TLB section's charts: latency against pages touched per page size (with its TLB
//! part, the knees found and CPUID's entries) and SAXPY's time per element per pattern.

use super::TlbResult;
use crate::topology::Machine;
use crate::units::Bytes;
use crate::view::chart::{
    cycles_per_ns, Axis, BarChart, LegendEntry, LineChart, Series, TickFormat, VMarker,
    CURVE_COLOR, PALETTE,
};
use crate::view::format::{noisy, NOISY_SPREAD_PCT};

/// Colour of a page size, shared by the curves, the knee markers and the tables' swatches.
pub(super) fn page_color(page_bytes: u64) -> &'static str {
    match page_bytes {
        4096 => PALETTE[0],
        0x20_0000 => PALETTE[1],
        0x4000_0000 => PALETTE[2],
        _ => PALETTE[5],
    }
}

/// Page counts as whole numbers: "16384" says more here than "16.4k".
fn page_count_label(v: f64) -> String {
    if v.is_finite() && v >= 1.0 {
        format!("{}", v.round() as u64)
    } else if v.is_finite() {
        format!("{v:.2}")
    } else {
        crate::view::format::DASH.to_string()
    }
}

/// Latency against pages touched (one line per page) on a log2 axis, one solid line per
/// page size and its TLB part (ns − dense ns) dashed in the same colour; each level's
/// entries found from the knees as solid markers, CPUID's entries as dashed references.
pub(super) fn tlb_chart(result: &TlbResult, machine: &Machine) -> LineChart {
    let mut chart = LineChart::new("Latency vs pages touched, one line per page")
        .size(1000.0, 540.0)
        .x_axis(
            Axis::log2("Pages touched, one cache line in each (log scale)")
                .format(TickFormat::Custom(page_count_label)),
        )
        // Log scale: an L2 TLB hit adds ~2 ns to a 1 ns load, a nested walk hundreds.
        .y_axis(Axis::log2("Load-to-use latency (ns, log scale)"))
        .unstable_label(format!("spread > {NOISY_SPREAD_PCT:.0}%"));
    let ratios = result.rows.iter().map(|r| r.cycles / r.ns);
    if let Some(f) = cycles_per_ns(machine, ratios) {
        chart = chart.secondary_y("Latency (core cycles)", f);
    }
    for page in result.page_sizes() {
        let rows = result.curve(page);
        chart = chart
            .series(
                Series::new(
                    format!("{} pages", Bytes(page)),
                    rows.iter().map(|r| (r.pages as f64, r.ns)).collect(),
                )
                .color(page_color(page))
                .unstable(rows.iter().map(|r| noisy(r.spread_pct)).collect()),
            )
            .series(
                Series::new(
                    format!("{} pages: TLB part (ns − dense ns)", Bytes(page)),
                    // The TLB part where there is one (a log axis has no zero).
                    rows.iter()
                        .filter(|r| r.tlb_ns > 0.05)
                        .map(|r| (r.pages as f64, r.tlb_ns))
                        .collect(),
                )
                .color(page_color(page))
                .dashed()
                .without_markers(),
            );
    }
    for l in &result.levels {
        let page = Bytes(l.page_bytes);
        if let Some(e) = l.entries {
            chart = chart.marker(VMarker::found(
                e as f64,
                format!("{page} {}: {e}", l.name),
                page_color(l.page_bytes),
            ));
        }
        if let Some(c) = l.cpuid_entries {
            chart = chart.marker(VMarker::reference(
                f64::from(c),
                format!("CPUID {page} {}: {c}", l.name),
            ));
        }
    }
    if result.levels.iter().any(|l| l.entries.is_some()) {
        chart = chart.legend_entry(LegendEntry::found("entries found (knee)"));
    }
    if result.levels.iter().any(|l| l.cpuid_entries.is_some()) {
        chart = chart.legend_entry(LegendEntry::reference("entries CPUID reports"));
    }
    chart
}

/// ns per element of each SAXPY pattern, one bar each.
pub(super) fn saxpy_chart(result: &TlbResult) -> BarChart {
    BarChart::new("SAXPY: ns per element updated")
        .size(1000.0, 320.0)
        .y_axis(Axis::linear("ns per element"))
        .categories(result.saxpy.iter().map(|r| r.pattern.clone()).collect())
        .series(
            "ns per element",
            result.saxpy.iter().map(|r| r.ns_per_access).collect(),
            Some(CURVE_COLOR.to_string()),
        )
        .value_labels(Some(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_counts_are_whole_and_colours_follow_the_page_size() {
        assert_eq!(page_count_label(32768.0), "32768");
        assert_eq!(page_count_label(0.5), "0.50");
        assert_eq!(page_count_label(f64::NAN), crate::view::format::DASH);
        assert_eq!(page_color(4096), PALETTE[0]);
        assert_ne!(page_color(4096), page_color(2 << 20));
    }
}
