//! A synthetic `files` result for the view's and the document's tests.

use super::{BlockRow, ColdMethod, FilesResult, RandomRow, ReadFigure, SizeRow};
use crate::topology::storage::Storage;

fn figure(gb_per_s: f64, latency_us: f64) -> ReadFigure {
    ReadFigure {
        gb_per_s,
        spread_pct: 2.0,
        latency_us,
        trials: 3,
    }
}

pub fn files() -> FilesResult {
    let sizes = [4096u64, 1 << 20, 64 << 20]
        .iter()
        .enumerate()
        .map(|(i, &bytes)| SizeRow {
            bytes,
            warm: figure(2.0 + 4.0 * i as f64, 2.0),
            mmap: figure(1.0 + 3.0 * i as f64, 50.0),
            cold: figure(0.05 + 0.8 * i as f64, 120.0),
        })
        .collect();
    let random = [("pread", 1usize), ("io_uring", 1), ("io_uring", 32)]
        .iter()
        .map(|&(engine, depth)| RandomRow {
            engine: engine.to_string(),
            depth,
            reads: 2000,
            iops: 8000.0 * depth as f64,
            mean_us: 120.0,
            p50_us: 110.0,
            p90_us: 150.0,
            p99_us: 300.0,
            p999_us: 900.0,
            max_us: 2000.0,
        })
        .collect();
    FilesResult {
        storage: Storage {
            dir: "/work".into(),
            filesystem: "ext4".into(),
            mount_source: "/dev/vda".into(),
            mount_point: "/".into(),
            device: Some("vda".into()),
            driver: Some("virtio_blk".into()),
            virtualized: true,
            available_bytes: 1 << 40,
            ..Storage::default()
        },
        cold_method: ColdMethod::Direct,
        read_block: 1 << 20,
        sizes,
        largest_bytes: 64 << 20,
        block_size: 4096,
        random,
        blocks: vec![BlockRow {
            block: 4096,
            gb_per_s: 0.04,
            spread_pct: 3.0,
            latency_us: 100.0,
        }],
        sweep_bytes: 64 << 20,
        written_bytes: (64 << 20) + (1 << 20) + 4096,
        dram_copy_gb_per_s: Some(12.0),
        notes: vec!["a note".into()],
    }
}

#[cfg(test)]
mod tests {
    use crate::topology::Machine;
    use crate::view::Present;

    #[test]
    fn the_section_has_its_tables_charts_and_csv() {
        let section = super::files().section(&Machine::default());
        assert_eq!(section.id, "files");
        assert_eq!(section.headlines.len(), 3);
        let names: Vec<&str> = section
            .data_tables()
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(names, ["files.sizes", "files.random", "files.blocks"]);
    }
}
