//! The comparable figures of interleave (for compare, history and the Prometheus export):
//! per mix of nodes, the read bandwidth at each ratio (with its trials' spread) and the
//! best ratio's gain over local DRAM alone.

use super::{InterleaveResult, PointOrigin};
use crate::view::figure::{Better, Figure, Figures};

impl Figures for InterleaveResult {
    fn figures(&self) -> Vec<Figure> {
        let mut figures = Vec::new();
        for mix in &self.mixes {
            let nodes: Vec<String> = mix.nodes.iter().map(ToString::to_string).collect();
            let key = format!("nodes.{}", nodes.join("-"));
            let what = format!("nodes {}", nodes.join(","));
            for p in mix
                .points
                .iter()
                .filter(|p| p.origin != PointOrigin::System)
            {
                let ratio = format!("{}-{}", p.ratio.local, p.ratio.far);
                figures.push(
                    Figure::new(
                        "interleave",
                        format!("{key}.ratio.{ratio}.read_gb_per_s"),
                        format!("{what} at {} read bandwidth", p.ratio),
                        "GB/s",
                        p.read_gb_per_s,
                        Better::Higher,
                    )
                    .spread(p.spread_pct)
                    .metric(
                        "interleave_read_bandwidth_bytes_per_second",
                        "Read bandwidth of one node's threads with memory spread over nodes at \
                         a weight ratio local:far",
                        &[("nodes", nodes.join(",")), ("ratio", p.ratio.to_string())],
                        1e9,
                    ),
                );
            }
            if let Some(rec) = &mix.recommendation {
                figures.push(Figure::new(
                    "interleave",
                    format!("{key}.best_gain_pct"),
                    format!("{what} best ratio's gain over local DRAM alone"),
                    "%",
                    rec.gain_pct,
                    Better::Higher,
                ));
            }
        }
        figures.retain(|f| f.value.is_finite());
        figures
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::interleave::samples;
    use crate::view::figure::find;
    use std::collections::HashSet;

    #[test]
    fn every_ratio_and_each_mix_gain_with_unique_keys() {
        let figures = samples::interleave().figures();
        let keys: HashSet<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys.len(), figures.len(), "unique keys");
        // 9 + 4 ratios and two gains.
        assert_eq!(figures.len(), 15);
        let best = find(&figures, "interleave.nodes.0-2.ratio.3-1.read_gb_per_s");
        assert_eq!((best.value, best.better), (290.0, Better::Higher));
        assert_eq!(best.spread_pct, Some(1.3));
        let gain = find(&figures, "interleave.nodes.0-2.best_gain_pct");
        assert!((gain.value - 20.833).abs() < 0.01, "{}", gain.value);
        // The NaN point of the old-kernel sample is left out.
        assert_eq!(samples::interleave_old_kernel().figures().len(), 14);
    }
}
