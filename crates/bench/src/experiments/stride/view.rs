//! The stride section of every output: a heatmap of ns per access per kernel (the
//! terminal's matrices, with a matrix of misses per access for each level counted), every
//! row in a folded table with its miss columns, and the CSV table.

use serde::Serialize;

use super::{StrideResult, StrideRow};
use crate::counters::{AccessCounts, MissLevel};
use crate::experiments::misses::{miss_notes, Misses};
use crate::topology::Machine;
use crate::units::Bytes;
use crate::view::chart::Heatmap;
use crate::view::data_row::{Columns, Raw};
use crate::view::format::{self, distinct, gbs};
use crate::view::{
    Block, Cell, Column, DataTable, Medium, Overflow, Paragraph, Present, Section, Table, Text,
};

impl Present for StrideResult {
    fn section(&self, _machine: &Machine) -> Section {
        let mut s = Section::new(
            "stride",
            "Stride",
            "Access patterns: stride and random order",
        );
        s.push(intro());
        let kernels = distinct(self.rows.iter().map(|r| r.kernel));
        if kernels.is_empty() {
            s.push(Paragraph::muted("No access pattern was measured."));
        }
        for kernel in kernels {
            let rows: Vec<&StrideRow> = self.rows.iter().filter(|r| r.kernel == kernel).collect();
            s.push(heatmap(&rows, kernel.name()));
            s.push(Block::Only(
                Medium::Terminal,
                matrices(&rows, kernel.name()),
            ));
        }
        s.push(Block::Only(
            Medium::Html,
            vec![Block::Details {
                summary: format!("All {} rows", self.rows.len()),
                blocks: vec![rows_table(self).into()],
            }],
        ));
        s.push(data_table(self));
        s
    }
}

fn intro() -> Paragraph {
    Paragraph::note(
        Text::plain(
            "One thread walks an array of 8-byte elements with a fixed stride (every pass \
             still visits every element once), or in a random order of all elements. ",
        )
        .strong("read")
        .add(" sums the elements; ")
        .strong("saxpy")
        .add(
            " computes y = a·x + y (24 useful bytes per element). Each cell is the median \
             time per element visited. The accesses do not depend on each other and overlap \
             in the memory system, so these are throughput figures (the inverse of accesses \
             per ns), not load-to-use latencies: the latency ladder measures those. Strides \
             of a cache line or more use 8 bytes of every line fetched; a stride of a page \
             adds a TLB miss per access once the array outgrows the TLB's reach.",
        ),
    )
}

/// The array sizes (ascending) and the orders (strides ascending, then random) of one
/// kernel's rows.
fn grid(rows: &[&StrideRow]) -> (Vec<u64>, Vec<Option<u64>>) {
    let mut sizes = distinct(rows.iter().map(|r| r.bytes));
    sizes.sort_unstable();
    let mut strides: Vec<Option<u64>> = distinct(rows.iter().filter_map(|r| r.stride_bytes))
        .into_iter()
        .map(Some)
        .collect();
    strides.sort_unstable();
    if rows.iter().any(|r| r.stride_bytes.is_none()) {
        strides.push(None);
    }
    (sizes, strides)
}

fn order_label(stride: Option<u64>) -> String {
    stride.map_or_else(|| "random".to_string(), |b| b.to_string())
}

fn find<'a>(rows: &[&'a StrideRow], bytes: u64, stride: Option<u64>) -> Option<&'a StrideRow> {
    rows.iter()
        .copied()
        .find(|r| r.bytes == bytes && r.stride_bytes == stride)
}

/// ns per access of one kernel as a heatmap: working sets down, strides across (ascending,
/// then the random order), log colour scale.
fn heatmap(rows: &[&StrideRow], kernel: &str) -> Heatmap {
    let (sizes, strides) = grid(rows);
    let values: Vec<Vec<f64>> = sizes
        .iter()
        .map(|&bytes| {
            strides
                .iter()
                .map(|&stride| find(rows, bytes, stride).map_or(f64::NAN, |r| r.ns_per_access))
                .collect()
        })
        .collect();
    Heatmap::new(format!(
        "{kernel}: ns per access (independent accesses: a throughput, not a latency)"
    ))
    .x_label("Stride (bytes), then a random order of all elements")
    .y_label("Array size")
    .columns(strides.iter().map(|&s| order_label(s)).collect())
    .rows(sizes.iter().map(|&b| Bytes(b).to_string()).collect())
    .values(values)
    .value_label("ns (log colour scale)")
    .log_color()
    .decimals(2)
}

/// A working set × order matrix of one kernel, each cell from its row.
fn matrix(rows: &[&StrideRow], title: String, cell: impl Fn(&StrideRow) -> String) -> Table {
    let (sizes, strides) = grid(rows);
    let mut columns = vec![Column::text("Working set")];
    columns.extend(strides.iter().map(|&s| Column::number(order_label(s))));
    // Too wide for a terminal, the strides go on under the working sets.
    let mut table = Table::new(columns).titled(title).overflow(Overflow::Wrap);
    for bytes in sizes {
        let mut cells = vec![Cell::new(Bytes(bytes).to_string())];
        cells.extend(
            strides
                .iter()
                .map(|&s| find(rows, bytes, s).map_or_else(Cell::dash, |r| Cell::new(cell(r)))),
        );
        table.row(cells);
    }
    table
}

/// The terminal's matrices of one kernel: ns per access, then with counters misses per
/// access at each level counted in some row, the levels counted in no row, the "*" note
/// and every distinct reason a level was not counted.
fn matrices(rows: &[&StrideRow], kernel: &str) -> Vec<Block> {
    let mut out: Vec<Block> = vec![matrix(
        rows,
        format!(
            "Access cost, {kernel}: ns per access by stride in bytes (independent accesses: \
             a throughput figure, not latency)"
        ),
        |r| format::fixed(r.ns_per_access, 2),
    )
    .into()];
    let counts: Vec<&AccessCounts> = rows.iter().filter_map(|r| r.counters.as_ref()).collect();
    if counts.is_empty() {
        return out;
    }
    let mut uncounted = Vec::new();
    for level in MissLevel::ALL {
        if !counts.iter().any(|c| c.per_access(level).is_some()) {
            uncounted.push(level.label());
            continue;
        }
        out.push(
            matrix(
                rows,
                format!(
                    "{} per access, {kernel}, by stride in bytes (hardware counters)",
                    level.label()
                ),
                |r| {
                    r.counters
                        .as_ref()
                        .map_or_else(|| format::DASH.to_string(), |c| c.cell(level))
                },
            )
            .into(),
        );
    }
    if !uncounted.is_empty() {
        out.push(
            Paragraph::note(format!(
                "{kernel}: {} per access not counted in any row.",
                uncounted.join(", ")
            ))
            .into(),
        );
    }
    // The miss columns' notes ("*", each reason of "n/s") but the first, about columns.
    let notes = miss_notes(counts).into_iter().skip(1);
    out.extend(notes.map(|n| Paragraph::note(n).into()));
    out
}

/// Every row, with the miss columns and their notes when counted.
fn rows_table(result: &StrideResult) -> Table {
    let misses = Misses::of("", result.rows.iter().map(|r| r.counters.as_ref()));
    let mut columns = vec![
        Column::number("Array size"),
        Column::number("Stride (bytes)"),
        Column::text("Pattern"),
        Column::text("Kernel"),
        Column::number("GB/s (useful)"),
        Column::number("ns per access"),
        Column::number("Spread %"),
    ];
    columns.extend(misses.columns());
    let mut table = Table::new(columns);
    for r in &result.rows {
        let mut cells = vec![
            Cell::new(Bytes(r.bytes).to_string()),
            Cell::new(format::opt_count(r.stride_bytes)),
            Cell::new(r.pattern.name()),
            Cell::new(r.kernel.name()),
            Cell::new(gbs(r.gb_per_s)),
            Cell::new(format::fixed(r.ns_per_access, 3)),
            format::spread_cell(r.spread_pct),
        ];
        cells.extend(misses.cells(r.counters.as_ref()));
        table.row(cells);
    }
    table.notes = misses.notes();
    table
}

/// The CSV table `stride.rows`, with the miss columns when counted.
fn data_table(result: &StrideResult) -> DataTable {
    #[derive(Serialize, Default)]
    struct Row {
        bytes: u64,
        stride_bytes: Option<u64>,
        pattern: &'static str,
        kernel: &'static str,
        gb_per_s: Raw,
        ns_per_access: Raw,
        spread_pct: Raw,
    }
    let misses = Misses::of("", result.rows.iter().map(|r| r.counters.as_ref()));
    let columns = Columns::after(misses.data_header());
    let rows = result.rows.iter().map(|r| {
        let row = Row {
            bytes: r.bytes,
            stride_bytes: r.stride_bytes,
            pattern: r.pattern.name(),
            kernel: r.kernel.name(),
            gb_per_s: Raw(r.gb_per_s),
            ns_per_access: Raw(r.ns_per_access),
            spread_pct: Raw(r.spread_pct),
        };
        (Vec::new(), row, misses.data(r.counters.as_ref()))
    });
    DataTable::of_around("stride.rows", columns, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::stride::samples;
    use crate::units::{KIB, MIB};
    use crate::view::{Row, Style};

    fn section(result: &StrideResult) -> Section {
        result.section(&Machine::default())
    }

    /// The blocks the terminal shows (everything but the HTML-only ones), as plain text.
    fn terminal_text(s: &Section) -> String {
        fn walk(blocks: &[Block], out: &mut String) {
            for b in blocks {
                match b {
                    Block::Paragraph(p) => out.push_str(&format!("{}\n", p.text.to_plain())),
                    Block::Table(t) => out.push_str(&t.plain_text()),
                    Block::Details { blocks, .. }
                    | Block::Verbose(blocks)
                    | Block::Only(Medium::Terminal, blocks) => walk(blocks, out),
                    _ => {}
                }
            }
        }
        let mut out = String::new();
        walk(&s.blocks, &mut out);
        out
    }

    fn rows_table(s: &Section) -> &Table {
        s.tables()
            .into_iter()
            .find(|t| t.title.is_none())
            .expect("the table of all rows")
    }

    #[test]
    fn heatmaps_terminal_matrices_and_the_rows_table() {
        let s = section(&samples::stride(16 * MIB));
        assert_eq!((s.id, s.nav.as_str()), ("stride", "Stride"));
        let charts: Vec<String> = s.charts().iter().map(|c| format!("{c:?}")).collect();
        assert_eq!(charts.len(), 2);
        for label in ["read: ns per access", "not a latency", "\"random\""] {
            assert!(charts[0].contains(label), "{label}");
        }
        assert!(charts[1].contains("saxpy: ns per access"));
        let read = s.table(
            "Access cost, read: ns per access by stride in bytes (independent accesses: a \
             throughput figure, not latency)",
        );
        let read = read.expect("read matrix");
        assert_eq!(read.columns.last().unwrap().name, "random");
        assert_eq!(read.row_text(0)[..2], ["2 KiB", "0.08"]);
        let all = rows_table(&s);
        assert_eq!(all.rows.len(), 14 * 2 * 21);
        assert_eq!(all.columns[4].header(), "GB/s (useful)");
        let summary = s.plain_text();
        assert!(summary.contains(&format!("All {} rows", 14 * 2 * 21)));
        // The 4 KiB stride is noisy: its spread is set as a warning.
        assert!(all.rows.iter().any(|r| matches!(r,
            Row::Cells(c) if c[6] == Cell::styled("12.0", Style::Warn))));
        assert!(!summary.contains("NaN") && !summary.contains("Some("));
    }

    #[test]
    fn counted_rows_get_miss_columns_in_html_and_matrices_in_the_terminal() {
        let plain = section(&samples::stride_counted(false));
        let text = plain.plain_text();
        assert!(!text.contains("L1 miss"), "{text}");
        assert_eq!(plain.data_tables()[0].header.len(), 7);

        let s = section(&samples::stride_counted(true));
        // HTML: miss columns with one note per reason.
        let all = rows_table(&s);
        assert_eq!(all.row_text(0)[7..], ["0.125", "n/s", "0.010*", "n/s"]);
        let l2 = "n/s — L2 miss (none): not supported: no generic L2 event";
        assert_eq!(all.note_count(l2), 1);
        // Terminal: a matrix per level counted in some row, notes for the rest, once.
        let text = terminal_text(&s);
        let matrix = |level: &str| {
            let title =
                format!("{level} miss per access, read, by stride in bytes (hardware counters)");
            s.table(&title).unwrap_or_else(|| panic!("{level} matrix"))
        };
        let l1 = matrix("L1").plain_text();
        assert_eq!(l1.lines().nth(2), Some("4 KiB | 0.125 | 1.000 | 1.000"));
        let llc = matrix("LLC");
        assert!(llc.column_text(1)[1].contains("0.010*"));
        assert!(!text.contains("\nL2 miss per access") && !text.contains("\ndTLB miss per"));
        assert!(text.contains("read: L2 miss, dTLB miss per access not counted in any row.\n"));
        for once in [
            "L2 miss (none): not supported",
            "dTLB miss (dTLB-load-misses)",
        ] {
            assert_eq!(text.matches(once).count(), 1, "{once}: {text}");
        }
        assert!(text.contains("* the PMU was shared"));
        // CSV: the miss columns, raw.
        let csv = &s.data_tables()[0];
        assert_eq!(csv.name, "stride.rows");
        assert_eq!(
            csv.header.join(","),
            "bytes,stride_bytes,pattern,kernel,gb_per_s,ns_per_access,spread_pct,\
             counted_accesses,l1_miss_per_access,l2_miss_per_access,llc_miss_per_access,\
             dtlb_miss_per_access"
        );
        assert_eq!(csv.rows[1][8], "1");
        assert_eq!(
            csv.rows[2].join(","),
            "4096,,random,read,8,1,1,1000,1,,0.01,"
        );
    }

    #[test]
    fn invalid_values_and_empty_results_give_dashes_without_panicking() {
        let mut result = samples::stride(64 * KIB);
        for (i, r) in result.rows.iter_mut().enumerate() {
            match i % 3 {
                0 => r.ns_per_access = f64::NAN,
                1 => r.ns_per_access = 0.0,
                _ => r.spread_pct = f64::INFINITY,
            }
        }
        let s = section(&result);
        let text = s.plain_text();
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
        assert_eq!(rows_table(&s).column_text(5)[0], format::DASH);
        assert_eq!(s.data_tables()[0].rows[0][5], "");

        let s = section(&StrideResult { rows: vec![] });
        assert!(s.plain_text().contains("No access pattern was measured."));
        assert!(s.charts().is_empty());
        assert_eq!(s.data_tables()[0].rows.len(), 0);
    }
}
