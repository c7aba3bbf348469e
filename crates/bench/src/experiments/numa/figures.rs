//! The comparable figures of numa (for compare, history and the Prometheus export): per
//! cell (threads' node, memory's node) the page-local and the random-chase latency and the
//! read bandwidth, the remote/local ratios, and per column without CPUs (CXL, HBM) its
//! latency and bandwidth over local DRAM. The result keeps one spread for the whole
//! matrix, the widest of any cell: each cell takes it as an upper bound of its own.

use super::NumaResult;
use crate::view::figure::{Better, Figure, Figures};

impl Figures for NumaResult {
    fn figures(&self) -> Vec<Figure> {
        let mut figures = Vec::new();
        for (i, from) in self.row_nodes().iter().enumerate() {
            for (j, to) in self.column_nodes().iter().enumerate() {
                figures.extend(self.cell_figures((i, *from), (j, *to)));
            }
        }
        let ratios = [
            (
                "remote_local_latency_ratio",
                "remote / local latency",
                self.remote_local_latency_ratio,
                Better::Lower,
            ),
            (
                "remote_local_bandwidth_ratio",
                "remote / local read bandwidth",
                self.remote_local_bandwidth_ratio,
                Better::Higher,
            ),
        ];
        for (key, label, ratio, better) in ratios {
            if let Some(ratio) = ratio {
                figures.push(Figure::new("numa", key, label, "×", ratio, better));
            }
        }
        figures.extend(self.far_memory_figures());
        figures.retain(|f| f.value.is_finite());
        figures
    }
}

impl NumaResult {
    /// The cell's latencies and bandwidth, from the CPUs of row `i` (node `from`) to the
    /// memory of column `j` (node `to`).
    fn cell_figures(&self, (i, from): (usize, usize), (j, to): (usize, usize)) -> Vec<Figure> {
        let cell = |matrix: &[Vec<f64>]| matrix.get(i).and_then(|row| row.get(j)).copied();
        let key = format!("node.{from}.{to}");
        let what = format!("node {from} → node {to}");
        let labels = [("from_node", from.to_string()), ("to_node", to.to_string())];
        let figure = |name: &str, label: String, unit: &str, value: f64, better: Better| {
            Figure::new("numa", format!("{key}.{name}"), label, unit, value, better)
                .spread(self.max_spread_pct)
        };
        let mut figures = Vec::new();
        if let Some(ns) = cell(&self.latency_ns) {
            figures.push(
                figure(
                    "latency_ns",
                    format!("{what} latency"),
                    "ns",
                    ns,
                    Better::Lower,
                )
                .metric(
                    "numa_latency_seconds",
                    "Idle load latency from the CPUs of one node to the memory of another \
                     (page-local chase)",
                    &labels,
                    1e-9,
                ),
            );
        }
        if let Some(ns) = cell(&self.random_latency_ns) {
            let label = format!("{what} latency, random chase (TLB misses)");
            figures.push(figure("random_latency_ns", label, "ns", ns, Better::Lower));
        }
        if let Some(gb_per_s) = cell(&self.read_gb_per_s) {
            let label = format!("{what} read bandwidth");
            figures.push(
                figure("read_gb_per_s", label, "GB/s", gb_per_s, Better::Higher).metric(
                    "numa_read_bandwidth_bytes_per_second",
                    "Read bandwidth of the threads on one node from the memory of another",
                    &labels,
                    1e9,
                ),
            );
        }
        figures
    }

    /// Each CPU-less node's latency and bandwidth over local DRAM.
    fn far_memory_figures(&self) -> Vec<Figure> {
        let mut figures = Vec::new();
        for column in self.memory.iter().filter(|c| c.cpu_less) {
            let (node, kind) = (column.node, column.kind.label());
            let far = [
                (
                    "latency_vs_local_dram",
                    "latency",
                    column.latency_vs_local_dram,
                    Better::Lower,
                ),
                (
                    "bandwidth_vs_local_dram",
                    "read bandwidth",
                    column.bandwidth_vs_local_dram,
                    Better::Higher,
                ),
            ];
            for (key, what, ratio, better) in far {
                if let Some(ratio) = ratio {
                    figures.push(Figure::new(
                        "numa",
                        format!("node.{node}.{key}"),
                        format!("{kind} node {node} {what} / local DRAM"),
                        "×",
                        ratio,
                        better,
                    ));
                }
            }
        }
        figures
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::numa::samples;
    use crate::view::figure::find;
    use std::collections::HashSet;

    #[test]
    fn every_pair_has_latencies_and_bandwidth_and_the_ratios_follow() {
        let figures = samples::numa().figures();
        let keys: HashSet<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys.len(), figures.len(), "unique keys");
        assert!(figures.iter().all(|f| f.section == "numa"));
        assert_eq!(figures.len(), 4 * 3 + 2);

        let remote = find(&figures, "numa.node.1.0.latency_ns");
        assert_eq!((remote.value, remote.better), (142.0, Better::Lower));
        assert_eq!(remote.label, "node 1 → node 0 latency");
        assert_eq!(remote.spread_pct, Some(2.5));
        let metric = remote.metric.as_ref().unwrap();
        assert_eq!(
            (metric.name.as_str(), metric.scale),
            ("numa_latency_seconds", 1e-9)
        );
        let labels = [("from_node", "1"), ("to_node", "0")].map(|(k, v)| (k.into(), v.into()));
        assert_eq!(metric.labels, labels);

        let random = find(&figures, "numa.node.0.1.random_latency_ns");
        assert_eq!((random.value, random.metric.clone()), (171.0, None));
        let bandwidth = find(&figures, "numa.node.0.1.read_gb_per_s");
        assert_eq!((bandwidth.value, bandwidth.better), (25.0, Better::Higher));
        let metric = bandwidth.metric.as_ref().unwrap();
        assert_eq!(metric.name, "numa_read_bandwidth_bytes_per_second");
        assert_eq!(metric.scale, 1e9);

        let ratio = find(&figures, "numa.remote_local_latency_ratio");
        assert_eq!((ratio.value, ratio.spread_pct), (1.56, None));
        let ratio = find(&figures, "numa.remote_local_bandwidth_ratio");
        assert_eq!((ratio.value, ratio.better), (0.60, Better::Higher));
    }

    #[test]
    fn cxl_columns_give_their_cells_and_their_ratios_to_local_dram() {
        let figures = samples::numa_cxl().figures();
        // 2 rows × 4 columns × 3 figures, 2 remote/local ratios, 2 per CXL column.
        assert_eq!(figures.len(), 2 * 4 * 3 + 2 + 2 * 2);
        let far = find(&figures, "numa.node.1.3.latency_ns");
        assert_eq!(
            (far.value, far.label.as_str()),
            (262.0, "node 1 → node 3 latency")
        );
        let ratio = find(&figures, "numa.node.2.latency_vs_local_dram");
        assert_eq!((ratio.value, ratio.better), (2.30, Better::Lower));
        assert_eq!(ratio.label, "CXL node 2 latency / local DRAM");
        let ratio = find(&figures, "numa.node.3.bandwidth_vs_local_dram");
        assert_eq!((ratio.value, ratio.better), (0.45, Better::Higher));
    }

    #[test]
    fn one_node_empty_and_ragged_results() {
        let figures = samples::numa_single_node().figures();
        assert_eq!(figures.len(), 3);
        assert_eq!(find(&figures, "numa.node.0.0.read_gb_per_s").value, 38.5);
        assert!(samples::empty_numa().figures().is_empty());

        let figures = samples::nan_numa().figures();
        assert!(figures
            .iter()
            .all(|f| f.value.is_finite() && f.spread_pct.is_none()));
        let keys: Vec<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert!(!keys.contains(&"numa.node.0.1.latency_ns"));
        assert!(!keys.contains(&"numa.node.1.1.read_gb_per_s"));
        assert!(keys.contains(&"numa.node.1.0.read_gb_per_s"));
    }
}
