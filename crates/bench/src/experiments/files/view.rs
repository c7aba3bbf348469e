//! `files` in every output: where the files were (filesystem, device, how cold reads
//! missed the cache), throughput and time per read by file size (warm, mmap, cold), the
//! random-read latency percentiles by queue depth and the block-size sweep; HTML plots
//! of throughput vs file size (log-log, DRAM marked) and latency percentiles vs depth.

use serde::Serialize;

use super::{ColdMethod, FilesResult};
use crate::topology::Machine;
use crate::units::Bytes;
use crate::view::chart::{Axis, LineChart, Series, PALETTE};
use crate::view::data_row::Raw;
use crate::view::format;
use crate::view::{Block, Column, DataTable, Headline, Medium, Paragraph, Present, Section, Table};

impl Present for FilesResult {
    fn section(&self, _machine: &Machine) -> Section {
        let mut section = Section::new("files", "Files", "File reads: page cache and device");
        section.headlines = self.headlines();
        section.push(Paragraph::note(format!(
            "Test files in {}: {}. Cold reads: {}. {} of test files written, then removed.",
            self.storage.dir,
            self.storage.describe(),
            self.cold_method.describe(),
            Bytes(self.written_bytes)
        )));
        section.push(self.sizes_table());
        section.push(Block::Only(Medium::Html, vec![self.sizes_chart().into()]));
        section.push(self.random_table());
        if !self.random.is_empty() {
            section.push(Block::Only(Medium::Html, vec![self.random_chart().into()]));
        }
        section.push(self.blocks_table());
        for note in &self.notes {
            section.push(Paragraph::warning(note.as_str()));
        }
        section.push(self.sizes_data());
        section.push(self.random_data());
        section.push(self.blocks_data());
        section
    }
}

/// One latency percentile of a random-read row.
type Percentile = fn(&super::RandomRow) -> f64;

fn gbs(v: f64) -> String {
    format::derived(v)
}

impl FilesResult {
    fn headlines(&self) -> Vec<Headline> {
        let mut cards = Vec::new();
        if let Some(largest) = self.sizes.last() {
            cards.push(Headline {
                label: "File read, page cache".to_string(),
                value: format!("{} GB/s", gbs(largest.warm.gb_per_s)),
                detail: format!(
                    "{} file, read(2) in {} blocks",
                    Bytes(largest.bytes),
                    Bytes(self.read_block)
                ),
                ..Headline::default()
            });
            cards.push(Headline {
                label: "File read, device".to_string(),
                value: format!("{} GB/s", gbs(largest.cold.gb_per_s)),
                detail: format!(
                    "{} file, {}",
                    Bytes(largest.bytes),
                    match self.cold_method {
                        ColdMethod::Direct => "O_DIRECT",
                        ColdMethod::DropCache => "cache dropped",
                    }
                ),
                ..Headline::default()
            });
        }
        if let Some(qd1) = self.random.iter().find(|r| r.engine == "pread") {
            cards.push(Headline {
                label: "Random 4 KiB read".to_string(),
                value: format!("{} µs", format::derived(qd1.p50_us)),
                detail: format!(
                    "median at depth 1 (pread); p99 {} µs",
                    format::derived(qd1.p99_us)
                ),
                ..Headline::default()
            });
        }
        cards
    }

    fn sizes_table(&self) -> Table {
        let mut table = Table::new(vec![
            Column::text("file size"),
            Column::quantity("warm", "GB/s").titled("read(2) from the page cache"),
            Column::quantity("per read", "µs"),
            Column::quantity("mmap", "GB/s")
                .titled("mapped and every cache line touched, faults included"),
            Column::quantity("cold", "GB/s").titled("from the device"),
            Column::quantity("per read", "µs"),
            Column::number("cold spread"),
        ])
        .titled(format!(
            "Whole-file sequential reads in blocks of up to {}",
            Bytes(self.read_block)
        ));
        for row in &self.sizes {
            table.row([
                Bytes(row.bytes).to_string().into(),
                gbs(row.warm.gb_per_s).into(),
                format::derived(row.warm.latency_us).into(),
                gbs(row.mmap.gb_per_s).into(),
                gbs(row.cold.gb_per_s).into(),
                format::derived(row.cold.latency_us).into(),
                format::spread_cell(row.cold.spread_pct),
            ]);
        }
        table.note("GB/s are decimal (10^9 bytes per second); per read: time per read call");
        table
    }

    fn sizes_chart(&self) -> LineChart {
        let points = |f: fn(&super::SizeRow) -> f64| {
            self.sizes
                .iter()
                .map(|r| (r.bytes as f64, f(r)))
                .collect::<Vec<_>>()
        };
        let mut chart = LineChart::new("Read throughput by file size")
            .x_axis(Axis::log2("file size").bytes())
            .y_axis(Axis::log10("GB/s (log scale)"))
            .series(
                Series::new(
                    "warm: read(2) from the page cache",
                    points(|r| r.warm.gb_per_s),
                )
                .color(PALETTE[0]),
            )
            .series(
                Series::new("warm: mmap + touch", points(|r| r.mmap.gb_per_s)).color(PALETTE[1]),
            )
            .series(
                Series::new("cold: from the device", points(|r| r.cold.gb_per_s)).color(PALETTE[2]),
            );
        if let (Some(dram), Some(first), Some(last)) = (
            self.dram_copy_gb_per_s,
            self.sizes.first(),
            self.sizes.last(),
        ) {
            chart = chart.series(
                Series::new(
                    "DRAM copy, 1 thread: bytes copied/s (bandwidth table)",
                    vec![(first.bytes as f64, dram), (last.bytes as f64, dram)],
                )
                .color(PALETTE[3])
                .dashed()
                .without_markers(),
            );
        }
        chart
    }

    fn random_table(&self) -> Table {
        let mut table = Table::new(vec![
            Column::text("engine"),
            Column::number("depth"),
            Column::number("reads"),
            Column::number("IOPS"),
            Column::quantity("p50", "µs"),
            Column::quantity("p90", "µs"),
            Column::quantity("p99", "µs"),
            Column::quantity("p99.9", "µs"),
            Column::quantity("max", "µs"),
        ])
        .titled(format!(
            "Random {} reads over the {} file",
            Bytes(self.block_size),
            Bytes(self.largest_bytes)
        ));
        for r in &self.random {
            table.row([
                r.engine.clone(),
                r.depth.to_string(),
                r.reads.to_string(),
                format::thousands(r.iops),
                format::derived(r.p50_us),
                format::derived(r.p90_us),
                format::derived(r.p99_us),
                format::derived(r.p999_us),
                format::derived(r.max_us),
            ]);
        }
        table.note("latency from submission to completion of each read (HDR histogram, 3 digits)");
        table
    }

    fn random_chart(&self) -> LineChart {
        let uring: Vec<&super::RandomRow> = self
            .random
            .iter()
            .filter(|r| r.engine == "io_uring")
            .collect();
        let mut chart = LineChart::new("Random read latency percentiles by queue depth (io_uring)")
            .x_axis(Axis::log2("queue depth").format(crate::view::chart::TickFormat::Integer))
            .y_axis(Axis::log10("latency (µs, log scale)"));
        let percentiles: [(&str, Percentile); 5] = [
            ("p50", |r| r.p50_us),
            ("p90", |r| r.p90_us),
            ("p99", |r| r.p99_us),
            ("p99.9", |r| r.p999_us),
            ("max", |r| r.max_us),
        ];
        for (i, (name, f)) in percentiles.into_iter().enumerate() {
            let points = uring.iter().map(|r| (r.depth as f64, f(r))).collect();
            chart = chart.series(Series::new(name, points).color(PALETTE[i % PALETTE.len()]));
        }
        if let Some(p) = self.random.iter().find(|r| r.engine == "pread") {
            chart = chart.series(
                Series::new("pread p50 (depth 1)", vec![(1.0, p.p50_us)])
                    .color(PALETTE[5 % PALETTE.len()])
                    .highlight(),
            );
        }
        chart
    }

    fn blocks_table(&self) -> Table {
        let mut table = Table::new(vec![
            Column::text("block"),
            Column::quantity("cold", "GB/s"),
            Column::quantity("per read", "µs"),
            Column::number("spread"),
        ])
        .titled(format!(
            "Cold sequential reads of up to {} of the {} file (at most {} reads a pass), by \
             block size",
            Bytes(self.sweep_bytes),
            Bytes(self.largest_bytes),
            super::BLOCK_SWEEP_CALLS
        ));
        for b in &self.blocks {
            table.row([
                Bytes(b.block).to_string().into(),
                gbs(b.gb_per_s).into(),
                format::derived(b.latency_us).into(),
                format::spread_cell(b.spread_pct),
            ]);
        }
        table
    }

    fn sizes_data(&self) -> DataTable {
        let cold_method = match self.cold_method {
            ColdMethod::Direct => "o_direct",
            ColdMethod::DropCache => "fadvise_dontneed",
        };
        DataTable::of(
            "files.sizes",
            self.sizes.iter().map(|r| SizeCsvRow {
                bytes: r.bytes,
                warm_gb_s: Raw(r.warm.gb_per_s),
                warm_us_per_read: Raw(r.warm.latency_us),
                warm_spread_pct: Raw(r.warm.spread_pct),
                mmap_gb_s: Raw(r.mmap.gb_per_s),
                cold_gb_s: Raw(r.cold.gb_per_s),
                cold_us_per_read: Raw(r.cold.latency_us),
                cold_spread_pct: Raw(r.cold.spread_pct),
                cold_method,
            }),
        )
    }

    fn random_data(&self) -> DataTable {
        DataTable::of(
            "files.random",
            self.random.iter().map(|r| RandomCsvRow {
                engine: &r.engine,
                depth: r.depth,
                reads: r.reads,
                iops: Raw(r.iops),
                mean_us: Raw(r.mean_us),
                p50_us: Raw(r.p50_us),
                p90_us: Raw(r.p90_us),
                p99_us: Raw(r.p99_us),
                p999_us: Raw(r.p999_us),
                max_us: Raw(r.max_us),
            }),
        )
    }

    fn blocks_data(&self) -> DataTable {
        DataTable::of(
            "files.blocks",
            self.blocks.iter().map(|b| BlockCsvRow {
                block_bytes: b.block,
                cold_gb_s: Raw(b.gb_per_s),
                us_per_read: Raw(b.latency_us),
                spread_pct: Raw(b.spread_pct),
            }),
        )
    }
}

/// A row of `files.sizes`: one file size read warm, through mmap and cold.
#[derive(Serialize, Default)]
struct SizeCsvRow {
    bytes: u64,
    warm_gb_s: Raw,
    warm_us_per_read: Raw,
    warm_spread_pct: Raw,
    mmap_gb_s: Raw,
    cold_gb_s: Raw,
    cold_us_per_read: Raw,
    cold_spread_pct: Raw,
    cold_method: &'static str,
}

/// A row of `files.random`: random 4 KiB reads at one engine and queue depth.
#[derive(Serialize, Default)]
struct RandomCsvRow<'a> {
    engine: &'a str,
    depth: usize,
    reads: usize,
    iops: Raw,
    mean_us: Raw,
    p50_us: Raw,
    p90_us: Raw,
    p99_us: Raw,
    p999_us: Raw,
    max_us: Raw,
}

/// A row of `files.blocks`: cold reads at one block size.
#[derive(Serialize, Default)]
struct BlockCsvRow {
    block_bytes: u64,
    cold_gb_s: Raw,
    us_per_read: Raw,
    spread_pct: Raw,
}
