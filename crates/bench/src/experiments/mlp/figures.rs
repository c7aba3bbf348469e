//! The comparable figures of mlp (for compare, history and the Prometheus export): per
//! level the chain count where parallelism saturates (step: the chain counts measured),
//! the parallelism and ns per load on the plateau (spread: the median of the plateau's
//! points), the cost of one more dependent DRAM miss, and the lines in flight that
//! Little's law gives for one thread's random and streaming reads.

use super::{MlpResult, MlpRow, MlpSaturation};
use crate::experiments::shared::level::Level;
use crate::stats::summary::median;
use crate::view::figure::{ladder_step_pct, Better, Figure, Figures};

const SECTION: &str = "mlp";

impl Figures for MlpResult {
    fn figures(&self) -> Vec<Figure> {
        let mut figures = Vec::new();
        for (level, &chains) in &self.mlp {
            let mut measured: Vec<u64> = (self.rows.iter())
                .filter(|r| r.level.as_ref().map(Level::name) == Some(level.as_str()))
                .map(|r| u64::from(r.chains))
                .collect();
            measured.sort_unstable();
            measured.dedup();
            let step = ladder_step_pct(&measured, u64::from(chains));
            figures.push(
                Figure::new(
                    SECTION,
                    format!("level.{level}.saturation_chains"),
                    format!("{level} saturates at chains"),
                    "",
                    f64::from(chains),
                    Better::Higher,
                )
                .step(step.unwrap_or(f64::NAN)),
            );
        }
        for s in &self.saturation {
            figures.extend(plateau_figures(self, s));
        }
        if let Some(fit) = &self.sequential_fit {
            let label = "Dependent DRAM miss (fit of n misses)";
            figures.push(Figure::new(
                SECTION,
                "sequential.miss_ns",
                label,
                "ns",
                fit.m_ns,
                Better::Lower,
            ));
        }
        if let Some(law) = &self.littles_law {
            let law_figures = [
                (
                    "random_read_gb_per_s",
                    "DRAM random reads, 1 thread",
                    "GB/s",
                    law.random_read_gb_per_s,
                ),
                (
                    "random_concurrency",
                    "DRAM random reads: lines in flight",
                    "",
                    law.random_concurrency,
                ),
                (
                    "stream_read_gb_per_s",
                    "DRAM streaming read, 1 thread",
                    "GB/s",
                    law.stream_read_gb_per_s,
                ),
                (
                    "stream_concurrency",
                    "DRAM streaming read: lines in flight",
                    "",
                    law.stream_concurrency,
                ),
            ];
            figures.extend(law_figures.map(|(key, label, unit, value)| {
                let key = format!("littles_law.{key}");
                Figure::new(SECTION, key, label, unit, value, Better::Higher)
            }));
        }
        figures
    }
}

/// A level's parallelism and ns per load on its plateau, whose spread is the median of
/// its points'.
fn plateau_figures(result: &MlpResult, s: &MlpSaturation) -> Vec<Figure> {
    let level = &s.level;
    let on_plateau =
        |r: &&MlpRow| r.level.as_ref() == Some(level) && r.bytes == s.bytes && r.chains >= s.chains;
    let spreads: Vec<f64> = (result.rows.iter())
        .filter(on_plateau)
        .map(|r| r.spread_pct)
        .filter(|p| p.is_finite())
        .collect();
    let spread = median(&spreads);
    vec![
        Figure::new(
            SECTION,
            format!("level.{level}.parallelism"),
            format!("{level} MLP"),
            "",
            s.parallelism,
            Better::Higher,
        )
        .spread(spread)
        .metric(
            "mlp",
            "Memory-level parallelism of one thread at a level: misses in flight on the plateau",
            &[("level", level.to_string())],
            1.0,
        ),
        Figure::new(
            SECTION,
            format!("level.{level}.ns_per_load"),
            format!("{level} ns per load at saturation"),
            "ns",
            s.ns_per_load,
            Better::Lower,
        )
        .spread(spread),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::samples;
    use super::*;
    use crate::view::figure::find;
    use std::collections::HashSet;

    #[test]
    fn saturation_plateau_fit_and_littles_law() {
        let result = samples::mlp();
        let figures = result.figures();
        let keys: HashSet<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys.len(), figures.len(), "keys are unique");
        assert_eq!(figures.len(), 2 * 3 + 1 + 4);

        // Saturation at 10 of 1…12 chains: 9 is the wider step away.
        let chains = find(&figures, "mlp.level.DRAM.saturation_chains");
        assert_eq!((chains.value, chains.better), (10.0, Better::Higher));
        assert_eq!(chains.spread_pct, None);
        assert!((chains.step_pct.unwrap() - 100.0 / 9.0).abs() < 1e-9);
        assert!(chains.metric.is_none());

        let dram = find(&figures, "mlp.level.DRAM.parallelism");
        assert_eq!((dram.value, dram.unit.as_str()), (9.7, ""));
        assert_eq!((dram.spread_pct, dram.step_pct), (Some(1.0), None));
        let metric = dram.metric.as_ref().unwrap();
        assert_eq!((metric.name.as_str(), metric.scale), ("mlp", 1.0));
        assert_eq!(metric.labels, [("level".to_string(), "DRAM".to_string())]);
        assert!(find(&figures, "mlp.level.L2.parallelism").metric.is_some());
        let per_load = find(&figures, "mlp.level.L2.ns_per_load");
        assert_eq!((per_load.value, per_load.better), (0.54, Better::Lower));
        assert_eq!(per_load.spread_pct, Some(1.0));

        let miss = find(&figures, "mlp.sequential.miss_ns");
        assert_eq!((miss.value, miss.spread_pct), (85.3, None));
        let random = find(&figures, "mlp.littles_law.random_concurrency");
        assert_eq!((random.value, random.better), (9.1, Better::Higher));
        let stream = find(&figures, "mlp.littles_law.stream_read_gb_per_s");
        assert_eq!((stream.value, stream.unit.as_str()), (14.2, "GB/s"));
    }

    #[test]
    fn the_plateau_spread_is_the_median_of_its_points() {
        let mut result = samples::mlp();
        // DRAM's plateau is 10…12 chains.
        for (r, spread) in (result.rows.iter_mut())
            .filter(|r| r.level == Some(Level::Dram) && r.chains >= 9)
            .zip([40.0, 2.0, 5.0, 3.0])
        {
            r.spread_pct = spread;
        }
        let figures = result.figures();
        assert_eq!(
            find(&figures, "mlp.level.DRAM.parallelism").spread_pct,
            Some(3.0)
        );
        // Without saturation details only the chain counts of the `mlp` map remain.
        let nan = samples::nan_mlp().figures();
        assert!(nan.iter().all(|f| !f.key.ends_with("parallelism")));
        assert!(nan
            .iter()
            .any(|f| f.key == "mlp.level.L2.saturation_chains"));
        assert!(samples::empty_mlp().figures().is_empty());
    }
}
