//! The comparable figures of files (for compare, history and the Prometheus export): per
//! file size the warm, mmap and cold read throughput (with their trials' spread), the
//! random reads' IOPS and latency percentiles per engine and depth (measured once: no
//! spread), and the cold throughput per block size.

use super::{FilesResult, ReadFigure};
use crate::units::Bytes;
use crate::view::figure::{Better, Figure, Figures};

impl Figures for FilesResult {
    fn figures(&self) -> Vec<Figure> {
        let mut figures = Vec::new();
        let largest = self.sizes.iter().map(|s| s.bytes).max();
        for size in &self.sizes {
            let reads: [(&str, &str, &ReadFigure); 3] = [
                ("warm", "page cache", &size.warm),
                ("mmap", "page cache, mmap", &size.mmap),
                ("cold", "device", &size.cold),
            ];
            for (cache, how, read) in reads {
                let mut figure = Figure::new(
                    "files",
                    format!("size.{}.{cache}_gb_per_s", size.bytes),
                    format!("{} file read, {how}", Bytes(size.bytes)),
                    "GB/s",
                    read.gb_per_s,
                    Better::Higher,
                )
                .spread(read.spread_pct);
                if Some(size.bytes) == largest && cache != "mmap" {
                    figure = figure.metric(
                        "file_read_bytes_per_second",
                        "Whole-file sequential read throughput of the largest test file, \
                         from the page cache (warm) or the device (cold)",
                        &[
                            ("cache", cache.into()),
                            ("file_bytes", size.bytes.to_string()),
                        ],
                        1e9,
                    );
                }
                figures.push(figure);
            }
        }
        let block = Bytes(self.block_size);
        for r in &self.random {
            let key = format!("random.{}.qd{}", r.engine, r.depth);
            let (what, engine) = (format!("random {block} QD{}", r.depth), &r.engine);
            let labels = [("engine", r.engine.clone()), ("depth", r.depth.to_string())];
            figures.push(
                Figure::new(
                    "files",
                    format!("{key}.iops"),
                    format!("{what} IOPS, {engine}"),
                    "IOPS",
                    r.iops,
                    Better::Higher,
                )
                .metric(
                    "file_random_read_iops",
                    "Random 4 KiB reads per second from the device",
                    &labels,
                    1.0,
                ),
            );
            figures.push(
                Figure::new(
                    "files",
                    format!("{key}.p50_us"),
                    format!("{what} median latency, {engine}"),
                    "µs",
                    r.p50_us,
                    Better::Lower,
                )
                .metric(
                    "file_random_read_p50_seconds",
                    "Median latency of random 4 KiB reads from the device",
                    &labels,
                    1e-6,
                ),
            );
            figures.push(Figure::new(
                "files",
                format!("{key}.p99_us"),
                format!("{what} p99 latency, {engine}"),
                "µs",
                r.p99_us,
                Better::Lower,
            ));
        }
        for b in &self.blocks {
            figures.push(
                Figure::new(
                    "files",
                    format!("block.{}.cold_gb_per_s", b.block),
                    format!("cold sequential reads in {} blocks", Bytes(b.block)),
                    "GB/s",
                    b.gb_per_s,
                    Better::Higher,
                )
                .spread(b.spread_pct),
            );
        }
        figures.retain(|f| f.value.is_finite());
        figures
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::files::samples;
    use crate::view::figure::find;
    use std::collections::HashSet;

    fn metric_labels(f: &Figure) -> Vec<(String, String)> {
        f.metric.as_ref().unwrap().labels.clone()
    }

    fn pairs(labels: &[(&str, &str)]) -> Vec<(String, String)> {
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn sizes_random_reads_and_blocks() {
        let result = samples::files();
        let figures = result.figures();
        let keys: HashSet<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys.len(), figures.len(), "unique keys");
        assert!(figures.iter().all(|f| f.section == "files"));
        // 3 sizes × 3 ways, 3 random rows × 3 figures, 1 block size.
        assert_eq!(figures.len(), 9 + 9 + 1);

        let warm = find(&figures, "files.size.67108864.warm_gb_per_s");
        assert_eq!(
            (warm.value, warm.better),
            (result.sizes[2].warm.gb_per_s, Better::Higher)
        );
        assert_eq!(
            (warm.spread_pct, warm.label.as_str()),
            (Some(2.0), "64 MiB file read, page cache")
        );
        let metric = warm.metric.as_ref().unwrap();
        assert_eq!(
            (metric.name.as_str(), metric.scale),
            ("file_read_bytes_per_second", 1e9)
        );
        assert_eq!(
            metric_labels(warm),
            pairs(&[("cache", "warm"), ("file_bytes", "67108864")])
        );
        let cold = find(&figures, "files.size.67108864.cold_gb_per_s");
        assert_eq!(metric_labels(cold)[0].1, "cold");
        // Only the largest file's warm and cold reads are exported.
        assert!(find(&figures, "files.size.67108864.mmap_gb_per_s")
            .metric
            .is_none());
        assert!(find(&figures, "files.size.4096.cold_gb_per_s")
            .metric
            .is_none());

        let iops = find(&figures, "files.random.io_uring.qd32.iops");
        assert_eq!((iops.value, iops.better), (256000.0, Better::Higher));
        assert_eq!(iops.label, "random 4 KiB QD32 IOPS, io_uring");
        assert_eq!((iops.spread_pct, iops.step_pct), (None, None));
        assert_eq!(iops.metric.as_ref().unwrap().name, "file_random_read_iops");
        assert_eq!(
            metric_labels(iops),
            pairs(&[("engine", "io_uring"), ("depth", "32")])
        );
        let p50 = find(&figures, "files.random.pread.qd1.p50_us");
        assert_eq!(
            (p50.value, p50.better, p50.unit.as_str()),
            (110.0, Better::Lower, "µs")
        );
        let metric = p50.metric.as_ref().unwrap();
        assert_eq!(
            (metric.name.as_str(), metric.scale),
            ("file_random_read_p50_seconds", 1e-6)
        );
        assert!(find(&figures, "files.random.pread.qd1.p99_us")
            .metric
            .is_none());

        let block = find(&figures, "files.block.4096.cold_gb_per_s");
        assert_eq!((block.value, block.spread_pct), (0.04, Some(3.0)));
    }

    #[test]
    fn nothing_measured_gives_nothing() {
        let mut result = samples::files();
        result.sizes.clear();
        result.random.clear();
        result.blocks.clear();
        assert!(result.figures().is_empty());
    }
}
