//! The comparable figures of miss_impact (for compare, history and the Prometheus export):
//! the measured time per access of every footprint × pattern row, with its trials' spread.
//! The AMAT is a model built from other figures and the counted miss rates, not a
//! measurement of its own: it is left out.

use super::MissImpactResult;
use crate::view::figure::{Better, Figure, Figures};

impl Figures for MissImpactResult {
    fn figures(&self) -> Vec<Figure> {
        // One footprint per level: the level and the pattern name a row in every run.
        (self.rows.iter())
            .map(|r| {
                let pattern = r.pattern.label();
                Figure::new(
                    "miss-impact",
                    format!("{}.{pattern}.ns_per_access", r.level),
                    format!("{} {pattern}, time per access", r.level),
                    "ns",
                    r.ns_per_access,
                    Better::Lower,
                )
                .spread(r.spread_pct)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::samples::sample;
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn a_figure_per_row_with_its_spread() {
        let result = sample();
        let figures = result.figures();
        assert_eq!(figures.len(), result.rows.len());
        let keys: HashSet<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys.len(), figures.len(), "keys are unique");
        let keys: Vec<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "miss-impact.L1d.sequential.ns_per_access",
                "miss-impact.DRAM.random.ns_per_access",
                "miss-impact.DRAM.sequential.ns_per_access",
            ]
        );
        let chase = &figures[1];
        assert_eq!(chase.label, "DRAM random, time per access");
        assert_eq!((chase.value, chase.unit.as_str()), (101.0, "ns"));
        assert_eq!(
            (chase.section.as_str(), chase.better),
            ("miss-impact", Better::Lower)
        );
        assert!(figures
            .iter()
            .all(|f| f.spread_pct == Some(1.5) && f.step_pct.is_none() && f.metric.is_none()));
    }
}
