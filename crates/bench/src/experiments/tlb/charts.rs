//! The TLB section's charts: latency against pages touched per page size (with its TLB
//! part, the knees found and CPUID's entries) and SAXPY's time per element per pattern.

use super::{TlbLevel, TlbResult};
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
    for marker in entry_markers(result) {
        chart = chart.marker(marker);
    }
    if result.levels.iter().any(|l| l.entries.is_some()) {
        chart = chart.legend_entry(LegendEntry::found("entries found (knee)"));
    }
    if result.levels.iter().any(|l| l.cpuid_entries.is_some()) {
        chart = chart.legend_entry(LegendEntry::reference("entries CPUID reports"));
    }
    chart
}

/// The width of the plot in the chart's 1000 px (less the axes' labels on both sides).
const PLOT_PX: f64 = 860.0;

/// Entry counts closer than this on the chart share their labels: two turned labels side
/// by side take about 34 px.
const LABEL_GAP_PX: f64 = 40.0;

/// One level's entry count on the chart: found from the knees, or as CPUID reports it.
struct Entries<'a> {
    x: f64,
    level: &'a TlbLevel,
    found: bool,
}

/// Every level's entries found (solid, in its page size's colour) and CPUID's (dashed),
/// each a line, their labels merged where the lines are too close for a label each (a
/// TLB's 4 KiB and 2 MiB levels and their CPUID counts are often within a few pixels):
/// the counts within `LABEL_GAP_PX` of each other carry one found label right of the first
/// found line ("4 KiB L1 DTLB: 96 = CPUID", "4 KiB L1 DTLB: 64 (CPUID 72)") and one label
/// for the other CPUID counts left of the first line ("CPUID 2 MiB L1 DTLB: 96, 4 KiB L2
/// DTLB: 128"). References come first so that a found line covers a reference at its x.
fn entry_markers(result: &TlbResult) -> Vec<VMarker> {
    let mut entries: Vec<Entries> = Vec::new();
    for level in &result.levels {
        if let Some(e) = level.entries {
            entries.push(Entries {
                x: e as f64,
                level,
                found: true,
            });
        }
        if let Some(c) = level.cpuid_entries {
            entries.push(Entries {
                x: f64::from(c),
                level,
                found: false,
            });
        }
    }
    entries.retain(|e| e.x > 0.0 && e.x.is_finite());
    entries.sort_by(|a, b| a.x.total_cmp(&b.x));
    // Pixels per doubling on the log2 axis, over the pages the chart spans.
    let (lo, hi) = (result.rows.iter().map(|r| r.pages as f64))
        .chain(entries.iter().map(|e| e.x))
        .filter(|&x| x > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
    let px_per_doubling = PLOT_PX / (hi / lo).log2().max(1.0);
    let mut clusters: Vec<Vec<Entries>> = Vec::new();
    for e in entries {
        match clusters.last_mut() {
            Some(c)
                if c.last()
                    .is_some_and(|p| (e.x / p.x).log2() * px_per_doubling < LABEL_GAP_PX) =>
            {
                c.push(e)
            }
            _ => clusters.push(vec![e]),
        }
    }
    let mut references = Vec::new();
    let mut found = Vec::new();
    for cluster in &clusters {
        let name = |l: &TlbLevel| format!("{} {}", Bytes(l.page_bytes), l.name);
        // A level's CPUID count in the cluster of its found count goes into the found label.
        let cpuid_of = |l: &TlbLevel| {
            (cluster.iter())
                .find(|e| !e.found && std::ptr::eq(e.level, l))
                .and(l.cpuid_entries)
        };
        let found_label = (cluster.iter().filter(|e| e.found))
            .map(|e| {
                let entries = e.x as u64;
                match cpuid_of(e.level) {
                    Some(c) if u64::from(c) == entries => {
                        format!("{}: {entries} = CPUID", name(e.level))
                    }
                    Some(c) => format!("{}: {entries} (CPUID {c})", name(e.level)),
                    None => format!("{}: {entries}", name(e.level)),
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let told =
            |e: &Entries| (cluster.iter()).any(|f| f.found && std::ptr::eq(f.level, e.level));
        let rest: Vec<&Entries> = (cluster.iter()).filter(|e| !e.found && !told(e)).collect();
        let reference_label = (!rest.is_empty()).then(|| {
            let counts: Vec<String> = (rest.iter())
                .map(|e| format!("{}: {}", name(e.level), e.x as u64))
                .collect();
            format!("CPUID {}", counts.join(", "))
        });
        // The reference label goes left of the cluster's first line, so that it and the
        // found label right of the first found line face away from each other.
        let first = cluster[0].x;
        let mut reference_label = reference_label;
        if cluster[0].found {
            if let Some(label) = reference_label.take() {
                references.push(VMarker::reference(first, label));
            }
        }
        let mut found_label = Some(found_label);
        for e in cluster {
            if e.found {
                let label = found_label.take().unwrap_or_default();
                found.push(VMarker::found(e.x, label, page_color(e.level.page_bytes)));
            } else {
                let label = reference_label.take().unwrap_or_default();
                references.push(VMarker::reference(e.x, label));
            }
        }
    }
    references.extend(found);
    references
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

    /// The turned marker labels of a rendered chart: (text, [x0, x1, y0, y1]) from their
    /// anchor, the glyphs' height across and a generous width (bold) downwards.
    fn label_boxes(svg: &str) -> Vec<(String, [f64; 4])> {
        svg.lines()
            .filter(|l| l.starts_with("<text") && l.contains("rotate(-90 "))
            .filter(|l| l.contains("text-anchor=\"end\""))
            .map(|l| {
                let attr = |name: &str| -> f64 {
                    let rest = l.split_once(&format!(" {name}=\"")).unwrap().1;
                    rest.split('"').next().unwrap().parse().unwrap()
                };
                let text = l.split('>').nth(1).unwrap().split('<').next().unwrap();
                let (x, y, font) = (attr("x"), attr("y"), 12.0);
                let length = text.chars().count() as f64 * font * 0.62;
                (
                    text.to_string(),
                    [x - 0.75 * font, x + 0.25 * font, y, y + length],
                )
            })
            .collect()
    }

    #[test]
    fn entry_labels_close_together_are_merged_and_do_not_overlap() {
        let machine = Machine::sample();
        // The crowded case of a KVM guest: 4 KiB L1 DTLB found at 96 = CPUID, CPUID's 4
        // KiB L2 DTLB 128 and 2 MiB L1 DTLB 96, pages from 4 to 65536.
        let mut crowded = super::super::samples::tlb();
        crowded.rows.retain(|r| r.pages >= 4);
        crowded.levels[0].entries = Some(96);
        crowded.levels[0].cpuid_entries = Some(96);
        crowded.levels[1].entries = None;
        crowded.levels[1].cpuid_entries = Some(128);
        crowded.levels[3].entries = None;
        crowded.levels[3].cpuid_entries = Some(96);
        crowded.levels[4].entries = None;
        crowded.levels[4].cpuid_entries = None;
        for (result, labels) in [
            (
                crowded,
                vec![
                    "CPUID 2 MiB L1 DTLB: 96, 4 KiB L2 DTLB: 128",
                    "4 KiB L1 DTLB: 96 = CPUID",
                ],
            ),
            (
                super::super::samples::tlb(),
                vec![
                    "CPUID 2 MiB L2 DTLB: 2048",
                    "2 MiB L1 DTLB: 32 = CPUID",
                    "4 KiB L1 DTLB: 64 (CPUID 72)",
                    "2 MiB L2 DTLB: 1024",
                    "4 KiB L2 DTLB: 2048 (CPUID 3072)",
                ],
            ),
        ] {
            let chart = tlb_chart(&result, &machine);
            // Every count is still a line.
            let lines = (result.levels.iter())
                .map(|l| usize::from(l.entries.is_some()) + usize::from(l.cpuid_entries.is_some()))
                .sum::<usize>();
            assert!(chart.markers.len() >= lines);
            let height = chart.height;
            let svg = chart.render();
            let boxes = label_boxes(&svg);
            let texts: Vec<&str> = boxes.iter().map(|(t, _)| t.as_str()).collect();
            assert_eq!(texts, labels);
            for (i, (a, p)) in boxes.iter().enumerate() {
                // Inside the plot, above the x axis's tick labels.
                assert!(p[3] < height - 60.0, "{a} runs below the plot: {p:?}");
                for (b, q) in &boxes[i + 1..] {
                    let across = p[0] < q[1] && q[0] < p[1];
                    let along = p[2] < q[3] && q[2] < p[3];
                    assert!(!(across && along), "{a} and {b} overlap");
                }
            }
        }
    }
}
