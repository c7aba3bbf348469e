//! The comparable figures of latency (for compare, history and the Prometheus export):
//! each level's latency (spread: the median of its plateau's points) and capacity (step:
//! the sweep's ladder around it), and DRAM at the largest size both ways with the TLB
//! penalty between them.

use super::{DramLatency, LatencyLevel, LatencyResult};
use crate::kernels::permutation::ChaseOrderKind;
use crate::stats::summary::median;
use crate::view::figure::{ladder_step_pct, Better, Figure, Figures};

const SECTION: &str = "latency";

impl Figures for LatencyResult {
    fn figures(&self) -> Vec<Figure> {
        let mut figures: Vec<Figure> = (self.levels.iter())
            .flat_map(|level| level_figures(self, level))
            .collect();
        figures.extend(self.dram.iter().flat_map(|d| dram_figures(self, d)));
        figures
    }
}

/// The full key of a level's latency figure (the drift pass names it too).
pub(super) fn level_latency_key(name: &str) -> String {
    format!("{SECTION}.level.{name}.latency_ns")
}

/// A level's latency and, for a cache, its capacity on the ladder of sizes measured.
fn level_figures(result: &LatencyResult, level: &LatencyLevel) -> Vec<Figure> {
    let name = level.name.name();
    let labels = [("level", name.to_string())];
    // The plateau's value is the median of its stable points: so is its spread.
    let spreads: Vec<f64> = (result.points.iter())
        .filter(|p| (level.first_bytes..=level.last_bytes).contains(&p.bytes) && !p.unstable)
        .map(|p| p.spread_pct)
        .filter(|s| s.is_finite())
        .collect();
    let latency = Figure::new(
        SECTION,
        format!("level.{name}.latency_ns"),
        format!("{name} latency"),
        "ns",
        level.latency_ns,
        Better::Lower,
    )
    .spread(median(&spreads))
    .metric(
        "level_latency_seconds",
        "Load-to-use latency of a memory level (dependent pointer chase)",
        &labels,
        1e-9,
    );
    let mut figures = vec![latency];
    if let Some(capacity) = level.capacity_bytes {
        let ladder: Vec<u64> = result.points.iter().map(|p| p.bytes).collect();
        let capacity_figure = Figure::new(
            SECTION,
            format!("level.{name}.capacity_bytes"),
            format!("{name} capacity"),
            "bytes",
            capacity as f64,
            Better::Neither,
        )
        .metric(
            "level_capacity_bytes",
            "Measured capacity of a cache level (where its latency plateau ends)",
            &labels,
            1.0,
        )
        .step(ladder_step_pct(&ladder, capacity).unwrap_or(f64::NAN));
        figures.push(capacity_figure);
    }
    figures
}

/// DRAM at the largest working set both ways, each with the spread of the sweep it came
/// from (when it was measured on its own, it has none), and the TLB penalty between them.
fn dram_figures(result: &LatencyResult, d: &DramLatency) -> Vec<Figure> {
    let spread = |order: ChaseOrderKind| {
        let curve = if result.order == order {
            Some(&result.points)
        } else if order == ChaseOrderKind::Random {
            result.random_points.as_ref()
        } else {
            None
        };
        (curve.into_iter().flatten())
            .find(|p| p.bytes == d.bytes)
            .map_or(f64::NAN, |p| p.spread_pct)
    };
    let (random, page_local) = (
        spread(ChaseOrderKind::Random),
        spread(ChaseOrderKind::PageLocal),
    );
    let latency = |order: &str, ns: f64, spread: f64| {
        let key = format!("dram.{}_ns", order.replace('-', "_"));
        let label = format!("DRAM latency, {order} chase");
        Figure::new(SECTION, key, label, "ns", ns, Better::Lower)
            .spread(spread)
            .metric(
                "dram_latency_seconds",
                "DRAM load-to-use latency at the largest working set, by chase order",
                &[("order", order.to_string())],
                1e-9,
            )
    };
    let penalty = Figure::new(
        SECTION,
        "dram.tlb_penalty_ns",
        "TLB penalty at DRAM (random − page-local)",
        "ns",
        d.tlb_penalty_ns,
        Better::Lower,
    );
    vec![
        latency("random", d.random_ns, random),
        latency("page-local", d.page_local_ns, page_local),
        penalty.spread(difference_spread(
            d.random_ns,
            random,
            d.page_local_ns,
            page_local,
        )),
    ]
}

/// The relative spread (%) of a − b from the spreads of a and b (independent errors add in
/// quadrature); NaN when either is unknown.
fn difference_spread(a: f64, a_pct: f64, b: f64, b_pct: f64) -> f64 {
    (a * a_pct).hypot(b * b_pct) / (a - b).abs()
}

#[cfg(test)]
mod tests {
    use super::super::samples;
    use super::*;
    use crate::units::{KIB, MIB};
    use crate::view::figure::find;
    use std::collections::HashSet;

    #[test]
    fn every_level_has_its_latency_and_capacity_with_spread_step_and_metric() {
        let result = samples::latency();
        let figures = result.figures();
        let keys: HashSet<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys.len(), figures.len(), "keys are unique");
        assert!(figures.iter().all(|f| f.section == "latency"));

        let l2 = find(&figures, "latency.level.L2.latency_ns");
        assert_eq!((l2.value, l2.unit.as_str()), (4.1, "ns"));
        assert_eq!(
            (l2.label.as_str(), l2.better),
            ("L2 latency", Better::Lower)
        );
        assert_eq!((l2.spread_pct, l2.step_pct), (Some(1.0), None));
        let metric = l2.metric.as_ref().unwrap();
        assert_eq!(metric.name, "level_latency_seconds");
        assert_eq!(metric.labels, [("level".to_string(), "L2".to_string())]);
        assert_eq!(metric.scale, 1e-9);

        let cap = find(&figures, "latency.level.L2.capacity_bytes");
        assert_eq!((cap.value, cap.better), (MIB as f64, Better::Neither));
        // The sweep doubles: 1 MiB is known to 100%.
        assert_eq!((cap.spread_pct, cap.step_pct), (None, Some(100.0)));
        assert_eq!(cap.metric.as_ref().unwrap().name, "level_capacity_bytes");
        assert_eq!(cap.metric.as_ref().unwrap().scale, 1.0);
        let l1 = find(&figures, "latency.level.L1d.capacity_bytes");
        assert_eq!(l1.value, (32 * KIB) as f64);

        // DRAM: a latency with its metric, no capacity.
        let dram = find(&figures, "latency.level.DRAM.latency_ns");
        assert_eq!(dram.value, 95.0);
        assert!(dram.metric.is_some());
        assert!(!keys.contains("latency.level.DRAM.capacity_bytes"));
        assert_eq!(figures.len(), 4 + 3 + 3);
    }

    #[test]
    fn dram_both_ways_carry_a_spread_only_where_a_sweep_measured_them() {
        // A random sweep: its last point is the random DRAM figure; page-local was
        // measured once on its own, without a spread, so the penalty has none either.
        let figures = samples::latency().figures();
        let random = find(&figures, "latency.dram.random_ns");
        assert_eq!((random.value, random.spread_pct), (95.0, Some(1.0)));
        let metric = random.metric.as_ref().unwrap();
        assert_eq!(metric.name, "dram_latency_seconds");
        assert_eq!(metric.labels, [("order".to_string(), "random".to_string())]);
        let page_local = find(&figures, "latency.dram.page_local_ns");
        assert_eq!((page_local.value, page_local.spread_pct), (80.0, None));
        let penalty = find(&figures, "latency.dram.tlb_penalty_ns");
        assert_eq!((penalty.value, penalty.spread_pct), (15.0, None));
        assert!(penalty.metric.is_none());

        // Both sweeps: both spreads, and the penalty's from them.
        let mut both = samples::latency();
        both.order = ChaseOrderKind::PageLocal;
        both.random_points = Some(both.points.clone());
        let figures = both.figures();
        let penalty = find(&figures, "latency.dram.tlb_penalty_ns");
        let expected = (95.0f64).hypot(80.0) / 15.0;
        assert!((penalty.spread_pct.unwrap() - expected).abs() < 1e-9);
        assert_eq!(
            find(&figures, "latency.dram.page_local_ns").spread_pct,
            Some(1.0)
        );
    }

    #[test]
    fn a_level_spread_is_the_median_of_its_stable_points() {
        let mut result = samples::latency();
        // L3's plateau is 2 – 32 MiB; 2 MiB is unstable and left out.
        for (p, spread) in result
            .points
            .iter_mut()
            .skip(9)
            .zip([50.0, 2.0, 3.0, 9.0, 4.0])
        {
            p.spread_pct = spread;
        }
        let figures = result.figures();
        let l3 = find(&figures, "latency.level.L3.latency_ns");
        assert_eq!(l3.spread_pct, Some(3.5));
        assert!(LatencyResult {
            levels: vec![],
            dram: None,
            ..result
        }
        .figures()
        .is_empty());
    }
}
