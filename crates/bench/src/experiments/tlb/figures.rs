//! The comparable figures of tlb (for compare, history and the Prometheus export): per
//! level and page size the entries and reach (with the step of the page-count ladder at
//! the knee, or the curve's whole rise around it when wider) and the miss cost (with the
//! spread of the points around the knee, and as its step how far it moves when the knee
//! lands elsewhere in that rise); SAXPY's time per element per pattern; DRAM parallelism
//! and latency per page size.

use super::{TlbLevel, TlbResult};
use crate::stats::summary::median;
use crate::units::Bytes;
use crate::view::figure::{ladder_step_pct, Better, Figure, Figures};

impl Figures for TlbResult {
    fn figures(&self) -> Vec<Figure> {
        let mut figures: Vec<Figure> = (self.levels.iter())
            .flat_map(|level| self.level_figures(level))
            .collect();
        for s in &self.saxpy {
            figures.push(Figure::new(
                "tlb",
                format!(
                    "saxpy.{}.stride_{}.ns_per_element",
                    s.page_bytes, s.stride_bytes
                ),
                format!("SAXPY {}: time per element", s.pattern),
                "ns",
                s.ns_per_access,
                Better::Lower,
            ));
        }
        for m in &self.mlp_by_page_size {
            let page = Bytes(m.page_bytes);
            let key = format!("mlp.{}", m.page_bytes);
            figures.push(Figure::new(
                "tlb",
                format!("{key}.parallelism"),
                format!("DRAM misses in flight, {page} pages"),
                "",
                m.parallelism,
                Better::Higher,
            ));
            figures.push(Figure::new(
                "tlb",
                format!("{key}.latency_ns"),
                format!("DRAM latency, random chase, {page} pages"),
                "ns",
                m.latency_ns,
                Better::Lower,
            ));
        }
        figures.retain(|f| f.value.is_finite());
        figures
    }
}

impl TlbResult {
    /// A level's entries, reach and miss cost; none where its knee was not found.
    fn level_figures(&self, level: &TlbLevel) -> Vec<Figure> {
        let (Some(entries), Some(reach)) = (level.entries, level.reach_bytes) else {
            return Vec::new();
        };
        let page = level.page_bytes;
        let key = format!("level.{page}.{}", level.name.replace(' ', "_"));
        let what = format!("{}, {} pages", level.name, Bytes(page));
        let labels = [
            ("tlb", level.name.clone()),
            ("page_bytes", page.to_string()),
        ];
        let pages: Vec<u64> = self.curve(page).iter().map(|r| r.pages).collect();
        // Where the knee can land: one step of the ladder, or the whole rise where the
        // curve climbs over a range of page counts.
        let ladder = ladder_step_pct(&pages, entries).unwrap_or(f64::NAN);
        let rise = level.transition_pages.map_or(f64::NAN, |(lo, hi)| {
            (hi as f64 / lo.max(1) as f64 - 1.0) * 100.0
        });
        let step = ladder.max(rise);
        let figure = |name: &str, label: &str, unit: &str, value: f64, better: Better| {
            let label = format!("{what}: {label}");
            Figure::new("tlb", format!("{key}.{name}"), label, unit, value, better)
        };
        let mut figures = vec![
            figure("entries", "entries", "", entries as f64, Better::Neither)
                .step(step)
                .metric(
                    "tlb_entries",
                    "Pages a TLB level holds, from the knee of the page-count curve",
                    &labels,
                    1.0,
                ),
            figure(
                "reach_bytes",
                "reach",
                "bytes",
                reach as f64,
                Better::Neither,
            )
            .step(step)
            .metric(
                "tlb_reach_bytes",
                "Memory a TLB level covers: its entries times the page size",
                &labels,
                1.0,
            ),
        ];
        if let Some(miss_ns) = level.miss_ns {
            figures.push(
                figure("miss_ns", "miss cost", "ns", miss_ns, Better::Lower)
                    .spread(miss_spread_pct(self, level, entries, miss_ns))
                    .step(level.miss_ns_range.map_or(f64::NAN, |(lo, hi)| {
                        (hi - lo) / miss_ns.abs().max(f64::MIN_POSITIVE) * 100.0
                    }))
                    .metric(
                        "tlb_miss_seconds",
                        "What a miss in a TLB level adds to a load over a hit in it",
                        &labels,
                        1e-9,
                    ),
            );
        }
        figures
    }
}

/// The spread of a level's miss cost, a difference of two readings of the curve: the
/// median spread in ns of the points within an octave of the knee (the end of the plateau
/// and the reference past it), relative to the cost; NaN (none) without such points.
fn miss_spread_pct(result: &TlbResult, level: &TlbLevel, entries: u64, miss_ns: f64) -> f64 {
    let spreads_ns: Vec<f64> = (result.curve(level.page_bytes).iter())
        .filter(|r| r.pages.saturating_mul(2) >= entries && r.pages <= entries.saturating_mul(2))
        .map(|r| r.spread_pct / 100.0 * r.ns)
        .filter(|s| s.is_finite())
        .collect();
    if spreads_ns.is_empty() || miss_ns <= 0.0 {
        return f64::NAN;
    }
    median(&spreads_ns) / miss_ns * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::tlb::samples;
    use crate::units::{KIB, MIB};
    use crate::view::figure::find;
    use std::collections::HashSet;

    fn labels(f: &Figure) -> Vec<(String, String)> {
        f.metric.as_ref().unwrap().labels.clone()
    }

    #[test]
    fn levels_have_entries_reach_and_miss_cost_with_steps_spreads_and_metrics() {
        let result = samples::tlb();
        let figures = result.figures();
        let keys: HashSet<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys.len(), figures.len(), "unique keys");
        assert!(figures.iter().all(|f| f.section == "tlb"));
        // 4 levels × 3, 3 SAXPY patterns, 2 page sizes × 2 MLP figures; no page walk.
        assert_eq!(figures.len(), 12 + 3 + 4);
        assert!(figures.iter().all(|f| !f.key.contains("page_walk")));

        let entries = find(&figures, "tlb.level.4096.L2_DTLB.entries");
        assert_eq!((entries.value, entries.better), (2048.0, Better::Neither));
        // The 4 KiB ladder: 2048 between 1536 and 3072.
        assert_eq!(entries.step_pct, Some(50.0));
        assert_eq!(entries.spread_pct, None);
        let want = vec![
            ("tlb".to_string(), "L2 DTLB".to_string()),
            ("page_bytes".to_string(), "4096".to_string()),
        ];
        assert_eq!(labels(entries), want);
        assert_eq!(entries.metric.as_ref().unwrap().name, "tlb_entries");

        let reach = find(&figures, "tlb.level.4096.L2_DTLB.reach_bytes");
        assert_eq!(
            (reach.value, reach.unit.as_str()),
            (8.0 * MIB as f64, "bytes")
        );
        assert_eq!(reach.step_pct, Some(50.0));
        assert_eq!(reach.metric.as_ref().unwrap().name, "tlb_reach_bytes");
        assert_eq!(labels(reach), want);

        let miss = find(&figures, "tlb.level.2097152.L1_DTLB.miss_ns");
        assert_eq!((miss.value, miss.better), (2.0, Better::Lower));
        assert_eq!(miss.label, "L1 DTLB, 2 MiB pages: miss cost");
        let metric = miss.metric.as_ref().unwrap();
        assert_eq!(
            (metric.name.as_str(), metric.scale),
            ("tlb_miss_seconds", 1e-9)
        );
        assert_eq!(metric.labels[1].1, "2097152");
        // Points at 16, 32 and 64 pages: 1% of 1.2, 1.2 and 3.2 ns, against 2 ns.
        let spread = miss.spread_pct.unwrap();
        assert!((spread - 0.012 / 2.0 * 100.0).abs() < 1e-9, "{spread}");
        assert_eq!(miss.step_pct, None);
        // Every level found with a reach and a miss cost is a headline: it is exported.
        let exported = figures.iter().filter(|f| f.metric.is_some()).count();
        assert_eq!(exported, 12);
    }

    #[test]
    fn saxpy_and_mlp_by_page_size() {
        let figures = samples::tlb().figures();
        let strided = find(&figures, "tlb.saxpy.2097152.stride_4096.ns_per_element");
        assert_eq!((strided.value, strided.better), (3.1, Better::Lower));
        assert!(strided.label.contains("stride 4 KiB, huge pages"));
        assert_eq!(
            find(&figures, "tlb.saxpy.4096.stride_4.ns_per_element").value,
            0.45
        );
        let mlp = find(&figures, &format!("tlb.mlp.{}.parallelism", 4 * KIB));
        assert_eq!((mlp.value, mlp.better), (8.6, Better::Higher));
        let latency = find(&figures, "tlb.mlp.2097152.latency_ns");
        assert_eq!((latency.value, latency.better), (160.0, Better::Lower));
        assert!([strided, mlp, latency]
            .iter()
            .all(|f| f.metric.is_none() && f.spread_pct.is_none()));
    }

    #[test]
    fn nan_and_empty_results_leave_out_what_is_not_a_number() {
        assert!(TlbResult::default().figures().is_empty());
        let figures = samples::nan_tlb().figures();
        assert!(figures.iter().all(|f| f.value.is_finite()));
        assert!(figures.iter().all(|f| !f.key.ends_with(".miss_ns")));
        assert!(figures.iter().all(|f| f.spread_pct.is_none()));
        assert!(figures
            .iter()
            .any(|f| f.key == "tlb.level.4096.L1_DTLB.entries"));
    }
}
