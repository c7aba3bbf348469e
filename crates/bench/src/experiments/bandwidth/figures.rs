//! The comparable figures of bandwidth (for compare, history and the Prometheus export):
//! every figure of the per-level tables (kernel × level × thread count), with its trials'
//! spread, each exported as a peak bandwidth. The size sweep's points are not compared.

use super::{BandwidthResult, BandwidthRow};
use crate::experiments::shared::level::Level;
use crate::view::figure::{Better, Figure, Figures};
use crate::view::format::count_of;

impl Figures for BandwidthResult {
    fn figures(&self) -> Vec<Figure> {
        self.rows.iter().map(row_figure).collect()
    }
}

/// One kernel at one level (or one `--sizes` working set) with one thread count.
pub(crate) fn row_figure(r: &BandwidthRow) -> Figure {
    // A level holds one working set; custom columns are told apart by theirs.
    let level = if r.level == Level::Custom {
        format!("custom-{}", r.working_set_bytes)
    } else {
        r.level.to_string()
    };
    let (kernel, read, write) = (&r.kernel, r.read_parts, r.write_parts);
    Figure::new(
        "bandwidth",
        format!("{kernel}.{read}r{write}w.{}t.{level}.gb_per_s", r.threads),
        format!(
            "{kernel} {read}:{write}, {}, {level}",
            count_of(r.threads, "thread")
        ),
        "GB/s",
        r.gb_per_s,
        Better::Higher,
    )
    .spread(r.spread_pct)
    .metric(
        "bandwidth_bytes_per_second",
        "Bandwidth of a kernel, all threads together, at a working set inside a level",
        &[
            ("kernel", kernel.to_string()),
            ("read", read.to_string()),
            ("write", write.to_string()),
            ("threads", r.threads.to_string()),
            ("level", level),
        ],
        1e9,
    )
}

#[cfg(test)]
mod tests {
    use super::super::samples::{self, KERNELS};
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_row_of_the_level_tables_is_a_figure_with_its_spread_and_metric() {
        let result = samples::bandwidth(&[1, 8], &KERNELS, &KERNELS[..2], 2);
        let figures = result.figures();
        assert_eq!(figures.len(), result.rows.len(), "the sweep is left out");
        let keys: HashSet<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys.len(), figures.len(), "keys are unique");

        let key = "bandwidth.mix-2:1.2r1w.8t.DRAM.gb_per_s";
        let f = figures.iter().find(|f| f.key == key).unwrap();
        let row = (result.rows.iter())
            .find(|r| r.kernel.name() == "mix-2:1" && r.threads == 8 && r.level == Level::Dram)
            .unwrap();
        assert_eq!(f.value, row.gb_per_s);
        assert_eq!((f.unit.as_str(), f.better), ("GB/s", Better::Higher));
        assert_eq!(f.label, "mix-2:1 2:1, 8 threads, DRAM");
        assert_eq!((f.spread_pct, f.step_pct), (Some(1.5), None));
        let metric = f.metric.as_ref().unwrap();
        assert_eq!(metric.name, "bandwidth_bytes_per_second");
        assert_eq!(metric.scale, 1e9);
        let labels: Vec<(&str, &str)> = (metric.labels.iter())
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            labels,
            [
                ("kernel", "mix-2:1"),
                ("read", "2"),
                ("write", "1"),
                ("threads", "8"),
                ("level", "DRAM")
            ]
        );
        let copy = figures
            .iter()
            .find(|f| f.key == "bandwidth.copy.1r1w.1t.L3.gb_per_s");
        assert_eq!(copy.unwrap().spread_pct, Some(14.0));
        assert!(figures.iter().all(|f| f.metric.is_some()));
        assert!(samples::empty().figures().is_empty());
    }

    #[test]
    fn custom_working_sets_are_told_apart_by_their_size() {
        let custom = |bytes| samples::row(KERNELS[0], 1, "custom", bytes);
        let result = BandwidthResult {
            rows: vec![custom(64 << 10), custom(1 << 20)],
            ..samples::empty()
        };
        let keys: Vec<String> = result.figures().into_iter().map(|f| f.key).collect();
        assert_eq!(
            keys,
            [
                "bandwidth.read.1r0w.1t.custom-65536.gb_per_s",
                "bandwidth.read.1r0w.1t.custom-1048576.gb_per_s"
            ]
        );
    }
}
