//! The NUMA section: the method, the latency and bandwidth matrices (rows: nodes whose
//! threads measured; columns: nodes whose memory was measured; heatmaps in HTML from two
//! cells on, tables otherwise), the memory columns and the firmware's figures (`memory`),
//! the remote/local ratios, the CPUs, spread and placement, the kernel's distances, every
//! cell on demand, and the `numa.cells` CSV table.

mod memory;

use serde::Serialize;

use super::NumaResult;
use crate::platform::cpu_time::MIN_OVERLAP;
use crate::topology::cpu::format_cpu_list;
use crate::topology::tiers::MemoryKind;
use crate::topology::Machine;
use crate::units::Bytes;
use crate::view::chart::Heatmap;
use crate::view::data_row::Raw;
use crate::view::format::{self, DASH};
use crate::view::{
    Block, Cell, Column, DataTable, Medium, Overflow, Paragraph, Present, Section, Style, Table,
    Text,
};

/// Row and column headers of the measured matrices.
const NODE_AXES: (&str, &str) = ("Threads on", "Memory on node");

/// The node ids labelling the matrices' rows and columns: the result's, or as many as the
/// largest matrix has rows (columns), an index standing in for a missing id.
fn node_axes(result: &NumaResult) -> (Vec<usize>, Vec<usize>) {
    let matrices = [&result.latency_ns, &result.read_gb_per_s];
    let rows = matrices
        .iter()
        .map(|m| m.len())
        .fold(result.row_nodes().len(), usize::max);
    let columns = matrices
        .iter()
        .flat_map(|m| m.iter().map(Vec::len))
        .fold(result.column_nodes().len(), usize::max);
    let label = |ids: &[usize], n: usize| -> Vec<usize> {
        (0..n).map(|i| ids.get(i).copied().unwrap_or(i)).collect()
    };
    (
        label(result.row_nodes(), rows),
        label(result.column_nodes(), columns),
    )
}

/// A column's node with its kind when that is not plain DRAM with CPUs: "2 (CXL)", "0".
fn column_label(result: &NumaResult, node: usize) -> String {
    match result.memory.iter().find(|c| c.node == node) {
        Some(column) if column.cpu_less || column.kind != MemoryKind::Dram => {
            format!("{node} ({})", column.kind.label())
        }
        _ => node.to_string(),
    }
}

/// The matrices' axes: row node ids, and column labels (`column_label`).
struct Axes {
    rows: Vec<usize>,
    columns: Vec<String>,
}

impl Axes {
    fn of(result: &NumaResult) -> Axes {
        let (rows, columns) = node_axes(result);
        Axes {
            rows,
            columns: columns.iter().map(|&c| column_label(result, c)).collect(),
        }
    }

    fn cells(&self) -> usize {
        self.rows.len() * self.columns.len()
    }
}

/// A cell of a possibly ragged matrix.
fn matrix_cell<T: Copy>(m: &[Vec<T>], i: usize, j: usize) -> Option<T> {
    m.get(i).and_then(|r| r.get(j)).copied()
}

/// A node × node matrix as a heatmap: threads' node down, memory's node across. The rows
/// carry their meaning in their labels: a rotated y label is taller than a grid of two
/// rows and would run into the title.
fn node_heatmap(title: &str, axes: &Axes, m: &[Vec<f64>], value_label: &str) -> Heatmap {
    Heatmap::new(title)
        .x_label(NODE_AXES.1)
        .columns(axes.columns.clone())
        .rows(
            axes.rows
                .iter()
                .map(|i| format!("threads on node {i}"))
                .collect(),
        )
        .values(
            (0..axes.rows.len())
                .map(|i| {
                    (0..axes.columns.len())
                        .map(|j| matrix_cell(m, i, j).unwrap_or(f64::NAN))
                        .collect()
                })
                .collect(),
        )
        .value_label(value_label)
        .decimals(1)
}

/// A node × node matrix as a table titled `title`: rows "node i" under `corner`, columns
/// "`column` j", each cell made by `cell` (a dash where the matrix has none).
fn node_table<T: Copy>(
    title: &str,
    (corner, column): (&str, &str),
    axes: &Axes,
    m: &[Vec<T>],
    cell: impl Fn(usize, usize, T) -> Cell,
) -> Table {
    let mut columns = vec![Column::text(corner)];
    columns.extend(
        axes.columns
            .iter()
            .map(|j| Column::number(format!("{column} {j}"))),
    );
    // Columns of like kind, none less important: a matrix too wide for the terminal (four
    // memory nodes and more) is cut into several tables rather than losing a column.
    let mut t = Table::new(columns).titled(title).overflow(Overflow::Wrap);
    for (i, from) in axes.rows.iter().enumerate() {
        let mut row = vec![Cell::new(format!("node {from}"))];
        row.extend(
            (0..axes.columns.len())
                .map(|j| matrix_cell(m, i, j).map_or_else(Cell::dash, |v| cell(i, j, v))),
        );
        t.row(row);
    }
    t
}

impl Present for NumaResult {
    fn section(&self, _machine: &Machine) -> Section {
        let mut s = Section::new("numa", "NUMA", "NUMA: latency and bandwidth by node");
        s.push(Paragraph::note(
            format!(
                "Threads pinned to the CPUs of node i measure memory bound to node j (mbind) and \
             first touched from node j, so its page tables are there too. One thread chases \
             pointers through {}: in page-local order ({} pages per window, so cache misses \
             without TLB misses, as the latency ladder's DRAM level) and in random order over \
             the whole buffer (TLB misses and page walks included, whose page-table reads also \
             go to node j). {} thread(s) read {} each for the bandwidth. The diagonal is local \
             memory; off it every access crosses the interconnect. Where the pages really are \
             is verified afterwards (get_mempolicy). The kernel's distance table (from the \
             firmware, 10 = local) is a declared relative cost, not a measurement: it is shown \
             for comparison.",
                Bytes(self.latency_bytes),
                self.page_local_window_pages,
                self.threads_per_node,
                Bytes(self.bandwidth_bytes),
            ) + &memory::method(self),
        ));
        if let Some(note) = &self.note {
            s.push(Paragraph::callout(note.as_str()));
        }
        let axes = Axes::of(self);
        let n = axes.cells();
        if n == 0 {
            s.push(Paragraph::muted("No node was measured."));
        } else {
            matrices(self, &axes, &mut s);
        }
        if self.remote_local_latency_ratio.is_some() || self.remote_local_bandwidth_ratio.is_some()
        {
            let ratio = |v: Option<f64>| format::opt_fixed(v, 2);
            s.push(Paragraph::callout(
                Text::new()
                    .strong("Remote / local")
                    .add(" (means over the cells): latency × ")
                    .strong(ratio(self.remote_local_latency_ratio))
                    .add(", bandwidth × ")
                    .strong(ratio(self.remote_local_bandwidth_ratio)),
            ));
        }
        if n > 0 {
            memory::columns_and_firmware(self, &axes, &mut s);
        }
        if n > 0 {
            s.push(Paragraph::note(cpus_and_spread(self, &axes.rows)));
            s.push(Paragraph::note(placement(self, n)));
        }
        if !self.distances.is_empty() {
            // The matrices' nodes, as many as the table has rows and columns.
            let (rows, columns) = node_axes(self);
            let label = |ids: &[usize], n: usize| -> Vec<usize> {
                (0..n).map(|i| ids.get(i).copied().unwrap_or(i)).collect()
            };
            let widest = self.distances.iter().map(Vec::len).max().unwrap_or(0);
            let distance_axes = Axes {
                rows: label(&rows, self.distances.len()),
                columns: label(&columns, widest)
                    .into_iter()
                    .map(|c| column_label(self, c))
                    .collect(),
            };
            s.push(node_table(
                "Kernel's node distances (firmware's relative cost, 10 = local)",
                ("From", "To node"),
                &distance_axes,
                &self.distances,
                |_, _, d| Cell::new(d.to_string()),
            ));
        }
        if n > 0 {
            s.push(Block::Verbose(vec![all_cells(self, &axes)]));
        }
        s.push(data_table(self));
        for table in memory::data_tables(self) {
            s.push(table);
        }
        s
    }
}

/// The latency and bandwidth matrices: heatmaps in HTML from two nodes on, with the tables
/// for the terminal; the tables in both for one node.
fn matrices(result: &NumaResult, axes: &Axes, s: &mut Section) {
    // Each matrix: its title, its values, their unit, and whether it is the bandwidth.
    let mut measured = vec![(
        "Idle latency, page-local chase (ns)",
        &result.latency_ns,
        "ns",
        false,
    )];
    if !result.random_latency_ns.is_empty() {
        measured.push((
            "Idle latency, random chase with TLB misses (ns)",
            &result.random_latency_ns,
            "ns",
            false,
        ));
    }
    measured.push(("Read bandwidth (GB/s)", &result.read_gb_per_s, "GB/s", true));
    // A bandwidth cell whose reading threads did not run together is marked "!".
    let not_together = |i: usize, j: usize| {
        matrix_cell(&result.read_overlap, i, j).is_some_and(|o| o < MIN_OVERLAP)
    };
    let mut tables: Vec<Table> = measured
        .iter()
        .map(|&(title, m, _, bandwidth)| {
            node_table(title, NODE_AXES, axes, m, |i, j, v| {
                let text = format::fixed(v, 1);
                match matrix_cell(&result.read_overlap, i, j) {
                    Some(o) if bandwidth && not_together(i, j) => Cell::titled(
                        format!("!{text}"),
                        Style::Warn,
                        format!("the readers ran together {:.0} % of the time", o * 100.0),
                    ),
                    _ => Cell::new(text),
                }
            })
        })
        .collect();
    let (rows, columns) = (axes.rows.len(), axes.columns.len());
    let marked = (0..rows).any(|i| (0..columns).any(|j| not_together(i, j)));
    if let Some(bandwidth) = tables.last_mut().filter(|_| marked) {
        bandwidth.note(format!(
            "! the reading threads of the cell ran together less than {:.0} % of the time: \
             its bandwidth is what they got, not that of threads reading together.",
            MIN_OVERLAP * 100.0
        ));
    }
    let tables = tables.into_iter().map(Block::Table);
    if axes.cells() >= 2 {
        for &(title, m, unit, _) in &measured {
            s.push(node_heatmap(title, axes, m, unit));
        }
        s.push(Block::Only(Medium::Terminal, tables.collect()));
    } else {
        s.blocks.extend(tables);
    }
}

/// "CPUs used: … Read kernel: … Widest spread of any cell: … %."
fn cpus_and_spread(result: &NumaResult, labels: &[usize]) -> Text {
    let used: Vec<String> = labels
        .iter()
        .zip(&result.cpus)
        .filter(|(_, cpus)| !cpus.is_empty())
        .map(|(node, cpus)| format!("node {node}: {}", format_cpu_list(cpus)))
        .collect();
    let used = used.join("; ");
    let used = format::or_dash(&used);
    let isa = result.isa;
    let spread = format::spread(result.max_spread_pct);
    let text = Text::plain(format!(
        "CPUs used: {used} (the latency thread on the first of each). Read kernel: {isa}. \
         Widest spread of any cell: "
    ));
    if format::noisy(result.max_spread_pct) {
        text.warn(spread)
            .add(" % (noisy: compare cells with care).")
    } else {
        text.add(format!("{spread} %."))
    }
}

/// How much of the placement get_mempolicy confirmed, of `n` cells.
fn placement(result: &NumaResult, n: usize) -> String {
    let verified: Vec<f64> = result
        .placement_verified
        .iter()
        .flatten()
        .filter_map(|v| v.filter(|v| v.is_finite()))
        .collect();
    match verified.iter().copied().reduce(f64::min) {
        Some(min) => format!(
            "Pages on the intended node (get_mempolicy): at least {} % in the {} of {} cells \
             verified.",
            format::fixed(min * 100.0, 1),
            verified.len(),
            n
        ),
        None => "Placement not verified (get_mempolicy gave no answer).".to_string(),
    }
}

/// Every cell with all its figures, folded away in HTML.
fn all_cells(result: &NumaResult, axes: &Axes) -> Block {
    let cell = |m: &[Vec<f64>], i: usize, j: usize| matrix_cell(m, i, j).unwrap_or(f64::NAN);
    let mut t = Table::new(vec![
        Column::text("Threads on"),
        Column::text("Memory on"),
        Column::quantity("Page-local latency", "ns"),
        Column::quantity("Random latency", "ns"),
        Column::number("Read GB/s"),
        Column::quantity("Readers' overlap", "%"),
        Column::number("Distance"),
        Column::quantity("Pages on the node", "%"),
    ]);
    for (i, row) in axes.rows.iter().enumerate() {
        for (j, column) in axes.columns.iter().enumerate() {
            t.row(vec![
                format!("node {row}"),
                format!("node {column}"),
                format::ns(cell(&result.latency_ns, i, j)),
                format::ns(cell(&result.random_latency_ns, i, j)),
                format::gbs(cell(&result.read_gb_per_s, i, j)),
                matrix_cell(&result.read_overlap, i, j)
                    .map_or_else(|| DASH.to_string(), |o| format::rounded(o * 100.0, 1.0)),
                format::opt_count(matrix_cell(&result.distances, i, j)),
                format::percent(matrix_cell(&result.placement_verified, i, j).flatten()),
            ]);
        }
    }
    Block::Details {
        summary: if axes.cells() == 1 {
            "The cell in detail".to_string()
        } else {
            format!("All {} cells", axes.cells())
        },
        blocks: vec![t.into()],
    }
}

/// `numa.cells`: one row per (threads' node, memory's node); node ids label both.
fn data_table(result: &NumaResult) -> DataTable {
    let (rows, columns) = node_axes(result);
    let cell = |m: &[Vec<f64>], i: usize, j: usize| matrix_cell(m, i, j).map(Raw);
    #[derive(Serialize, Default)]
    struct Row {
        cpu_node: usize,
        memory_node: usize,
        local: bool,
        latency_ns: Option<Raw>,
        random_latency_ns: Option<Raw>,
        read_gb_per_s: Option<Raw>,
        read_overlap: Option<Raw>,
        distance: Option<u32>,
        placement_verified: Option<Raw>,
    }
    let cells = (0..rows.len()).flat_map(|i| (0..columns.len()).map(move |j| (i, j)));
    DataTable::of(
        "numa.cells",
        cells.map(|(i, j)| Row {
            cpu_node: rows[i],
            memory_node: columns[j],
            local: rows[i] == columns[j],
            latency_ns: cell(&result.latency_ns, i, j),
            random_latency_ns: cell(&result.random_latency_ns, i, j),
            read_gb_per_s: cell(&result.read_gb_per_s, i, j),
            read_overlap: cell(&result.read_overlap, i, j),
            distance: matrix_cell(&result.distances, i, j),
            placement_verified: matrix_cell(&result.placement_verified, i, j)
                .flatten()
                .map(Raw),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::numa::samples;

    fn section(result: &NumaResult) -> Section {
        result.section(&Machine::default())
    }

    #[test]
    fn two_nodes_give_heatmaps_terminal_matrices_ratios_distances_and_every_cell() {
        let s = section(&samples::numa());
        assert_eq!((s.id, s.nav.as_str()), ("numa", "NUMA"));
        assert!(s.headlines.is_empty());
        assert_eq!(s.charts().len(), 3, "three heatmaps");
        let charts = format!("{:?}", s.charts());
        assert!(charts.contains("Idle latency, random chase with TLB misses (ns)"));

        let latency = s.table("Idle latency, page-local chase (ns)").unwrap();
        let headers = "Threads on|Memory on node 0|Memory on node 1";
        assert_eq!(latency.headers().join("|"), headers);
        assert_eq!(latency.column_text(0), ["node 0", "node 1"]);
        assert_eq!(latency.column_text(2), ["140.0", "91.0"]);
        let bandwidth = s.table("Read bandwidth (GB/s)").unwrap();
        assert_eq!(bandwidth.column_text(1), ["40.0", "24.0"]);
        assert_eq!(bandwidth.column_text(2), ["25.0", "41.0"]);
        assert!(bandwidth.notes.is_empty(), "every reader ran together");
        let random = s
            .table("Idle latency, random chase with TLB misses (ns)")
            .unwrap();
        assert_eq!(random.column_text(2), ["171.0", "106.0"]);
        // The matrices are the terminal's; HTML draws the heatmaps.
        assert!(s
            .blocks
            .iter()
            .any(|b| matches!(b, Block::Only(Medium::Terminal, t) if t.len() == 3)));

        let text = s.plain_text();
        for figure in [
            "latency × 1.56, bandwidth × 0.60",
            "64 pages per window",
            "4 thread(s) read 128 MiB each",
            "CPUs used: node 0: 0-3; node 1: 4-7",
            "Read kernel: avx2",
            "Widest spread of any cell: 2.5 %.",
            "at least 99.8 % in the 3 of 4 cells verified",
            "All 4 cells",
        ] {
            assert!(text.contains(figure), "{figure}: {text}");
        }
        let distances = s
            .table("Kernel's node distances (firmware's relative cost, 10 = local)")
            .unwrap();
        assert_eq!(distances.column_text(2), ["21", "10"]);
        let cells = s
            .tables()
            .into_iter()
            .find(|t| t.columns.len() == 8)
            .unwrap();
        assert_eq!(cells.rows.len(), 4);
        assert_eq!(cells.column_text(7)[1], "99.8");
        assert_eq!(cells.column_text(3)[3], "106");
        assert!(!text.contains("NaN") && !text.contains("Some("));
    }

    #[test]
    fn one_node_gives_tables_in_both_outputs_and_the_note() {
        let s = section(&samples::numa_single_node());
        assert!(s.charts().is_empty());
        assert!(!s.blocks.iter().any(|b| matches!(b, Block::Only(..))));
        let text = s.plain_text();
        assert!(text.contains("one NUMA node: there is no remote memory to measure"));
        for (title, cell) in [
            ("Idle latency, page-local chase (ns)", "95.0"),
            ("Read bandwidth (GB/s)", "38.5"),
        ] {
            assert_eq!(s.table(title).unwrap().column_text(1), [cell], "{title}");
        }
        for words in ["The cell in detail", "14.0 % (noisy"] {
            assert!(text.contains(words), "{words}: {text}");
        }
        assert!(!text.contains("Remote / local") && !text.contains("node 1"));
    }

    #[test]
    fn csv_cells_keep_their_header_and_formats() {
        let s = section(&samples::numa());
        let data = s.data_tables();
        assert_eq!(data.len(), 1);
        assert_eq!(data[0].name, "numa.cells");
        assert_eq!(
            data[0].header.join(","),
            "cpu_node,memory_node,local,latency_ns,random_latency_ns,read_gb_per_s,\
             read_overlap,distance,placement_verified"
        );
        let rows: Vec<String> = data[0].rows.iter().map(|r| r.join(",")).collect();
        assert!(rows.contains(&"0,1,false,140,171,25,0.98,21,0.998".to_string()));
        assert!(rows.contains(&"1,1,true,91,106,41,0.99,10,".to_string()));
        assert_eq!(rows.len(), 4);
    }

    #[test]
    fn empty_nan_and_ragged_results_give_dashes_and_do_not_panic() {
        let s = section(&samples::empty_numa());
        assert!(s.plain_text().contains("No node was measured"));
        assert!(s.charts().is_empty());
        assert_eq!(s.data_tables()[0].rows.len(), 0);

        let s = section(&samples::nan_numa());
        let text = s.plain_text();
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
        let ratios = format!("latency × {DASH}, bandwidth × {DASH}");
        for words in [&ratios, "Placement not verified", "CPUs used: node 1: 4"] {
            assert!(text.contains(words), "{words}: {text}");
        }
        // The ragged row's missing cell is a dash, not a panic.
        let bandwidth = s.table("Read bandwidth (GB/s)").unwrap();
        assert_eq!(bandwidth.column_text(2)[1], DASH);
        let rows: Vec<String> = s.data_tables()[0]
            .rows
            .iter()
            .map(|r| r.join(","))
            .collect();
        assert!(rows.contains(&"1,1,true,91,,,0.99,10,".into()), "{rows:?}");
        assert!(rows
            .iter()
            .all(|r| !r.contains("NaN") && !r.contains("inf")));
    }

    #[test]
    fn readers_that_did_not_run_together_are_marked() {
        let mut r = samples::numa();
        r.read_overlap[1][0] = 0.5;
        let s = section(&r);
        let bandwidth = s.table("Read bandwidth (GB/s)").unwrap();
        assert_eq!(bandwidth.column_text(1), ["40.0", "!24.0"]);
        assert_eq!(bandwidth.notes.len(), 1);
    }

    #[test]
    fn one_node_renders_as_it_did_before_rows_and_columns() {
        // The terminal rendering of the one-node sample, as it was before rows and columns
        // were told apart: a one-node machine's output is unchanged.
        let before = r#"
NUMA: latency and bandwidth by node
═══════════════════════════════════
 Threads pinned to the CPUs of node i measure memory bound to node j (mbind) and first touched from
 node j, so its page tables are there too. One thread chases pointers through 256 MiB: in page-local
 order (64 pages per window, so cache misses without TLB misses, as the latency ladder's DRAM level)
 and in random order over the whole buffer (TLB misses and page walks included, whose page-table
 reads also go to node j). 2 thread(s) read 128 MiB each for the bandwidth. The diagonal is local
 memory; off it every access crosses the interconnect. Where the pages really are is verified
 afterwards (get_mempolicy). The kernel's distance table (from the firmware, 10 = local) is a
 declared relative cost, not a measurement: it is shown for comparison.
 one NUMA node: there is no remote memory to measure

Idle latency, page-local chase (ns)
 Threads on  Memory on node 0
 ──────────  ────────────────
 node 0                  95.0

Idle latency, random chase with TLB misses (ns)
 Threads on  Memory on node 0
 ──────────  ────────────────
 node 0                 112.0

Read bandwidth (GB/s)
 Threads on  Memory on node 0
 ──────────  ────────────────
 node 0                  38.5
 CPUs used: node 0: 0-1 (the latency thread on the first of each). Read kernel: avx512. Widest
 spread of any cell: 14.0 % (noisy: compare cells with care).
 Pages on the intended node (get_mempolicy): at least 100.0 % in the 1 of 1 cells verified.

Kernel's node distances (firmware's relative cost, 10 = local)
 From    To node 0
 ──────  ─────────
 node 0         10

The cell in detail
 Threads on  Memory on  Page-local latency (ns)  Random latency (ns)  Read GB/s
 ──────────  ─────────  ───────────────────────  ───────────────────  ─────────
 node 0      node 0                        95.0                  112       38.5

 Threads on  Readers' overlap (%)  Distance  Pages on the node (%)
 ──────────  ────────────────────  ────────  ─────────────────────
 node 0                       100        10                  100.0
"#;
        let mut result = samples::numa_single_node();
        let rendered =
            |r: &NumaResult| crate::render::terminal::render_width(&[section(r)], true, 100);
        assert_eq!(rendered(&result), before);
        // A report written before then (no rows, columns or memory) reads the same.
        result.rows.clear();
        result.columns.clear();
        result.memory.clear();
        assert_eq!(rendered(&result), before);
        let s = section(&result);
        assert_eq!(s.data_tables().len(), 1);
        assert!(s.table("Memory nodes (the columns)").is_none());
    }

    #[test]
    fn two_sockets_and_two_cxl_nodes_show_labelled_columns_and_the_firmware_beside() {
        let s = section(&samples::numa_cxl());
        assert_eq!(s.charts().len(), 3, "three heatmaps");
        let charts = format!("{:?}", s.charts());
        assert!(charts.contains("\"3 (CXL)\""), "{charts}");

        let latency = s.table("Idle latency, page-local chase (ns)").unwrap();
        assert_eq!(
            latency.headers().join("|"),
            "Threads on|Memory on node 0|Memory on node 1|Memory on node 2 (CXL)|\
             Memory on node 3 (CXL)"
        );
        assert_eq!(latency.column_text(0), ["node 0", "node 1"]);
        assert_eq!(latency.column_text(3), ["258.0", "369.0"]);
        let bandwidth = s.table("Read bandwidth (GB/s)").unwrap();
        assert_eq!(bandwidth.column_text(4), ["17.5", "27.5"]);

        let columns = s.table("Memory nodes (the columns)").unwrap();
        assert_eq!(columns.column_text(1), ["DRAM", "DRAM", "CXL", "CXL"]);
        assert_eq!(columns.column_text(2), ["4", "4", "22", "22"]);
        assert_eq!(columns.column_text(3), ["yes", "yes", "none", "none"]);
        assert_eq!(columns.column_text(4)[3], "node 1");
        assert_eq!(columns.column_text(5), [DASH, DASH, "2.30", "2.32"]);

        let firmware = s
            .table("Measured beside the firmware's figures (ACPI HMAT)")
            .unwrap();
        let cells = ["0 → 0", "0 → 2 (CXL)", "1 → 1", "1 → 3 (CXL)"];
        assert_eq!(firmware.column_text(0), cells);
        assert_eq!(firmware.column_text(1), ["112", "258", "113", "262"]);
        assert_eq!(firmware.column_text(2), ["110", "250", "110", "250"]);
        assert_eq!(firmware.column_text(4), ["120.0", "32.0", "120.0", "32.0"]);
        assert_eq!(firmware.column_text(5), ["90.0", "24.0", "90.0", "24.0"]);

        let distances = s
            .table("Kernel's node distances (firmware's relative cost, 10 = local)")
            .unwrap();
        assert_eq!(distances.headers()[3], "To node 2 (CXL)");
        assert_eq!(distances.column_text(4), ["24", "14"]);

        let text = s.plain_text();
        for words in [
            "is a column only: its memory is first touched from the row nearest to it",
            "CXL node 2 (from node 0): 2.30× latency, 0.45× bandwidth",
            "latency × 1.74, bandwidth × 0.62",
            "CPUs used: node 0: 28-31; node 1: 60-63",
            "in the 8 of 8 cells verified",
            "All 8 cells",
        ] {
            assert!(text.contains(words), "{words}: {text}");
        }
        assert!(!text.contains("nothing remote"));

        let data = s.data_tables();
        let names: Vec<&str> = data.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["numa.cells", "numa.columns", "numa.hmat"]);
        let rows = |t: &DataTable| -> Vec<String> { t.rows.iter().map(|r| r.join(",")).collect() };
        assert_eq!(rows(data[0]).len(), 8);
        assert!(rows(data[0]).contains(&"1,3,false,262,301,27.5,0.99,14,1".to_string()));
        assert!(rows(data[1]).contains(&"2,CXL,22,true,0,2.3,0.45".to_string()));
        assert_eq!(rows(data[2])[1], "0,2,access1,250,250,32000,24000");
    }

    #[test]
    fn a_row_without_memory_and_a_column_without_cpus_render_their_shapes() {
        // One CPU node whose memory is out of bounds (row 0 only) and an HBM node.
        let mut r = samples::numa_cxl();
        r.rows = vec![0];
        r.columns = vec![2];
        r.latency_ns = vec![vec![150.0]];
        r.random_latency_ns = vec![vec![170.0]];
        r.read_gb_per_s = vec![vec![90.0]];
        r.read_overlap = vec![vec![1.0]];
        r.placement_verified = vec![vec![Some(1.0)]];
        r.distances = vec![vec![13]];
        r.cpus = vec![vec![3, 2]];
        r.memory = vec![crate::experiments::numa::MemoryColumn {
            kind: MemoryKind::Hbm,
            latency_vs_local_dram: None,
            bandwidth_vs_local_dram: None,
            ..r.memory[2].clone()
        }];
        r.hmat = Vec::new();
        r.remote_local_latency_ratio = None;
        r.remote_local_bandwidth_ratio = None;
        let s = section(&r);
        let latency = s.table("Idle latency, page-local chase (ns)").unwrap();
        assert_eq!(
            latency.headers().join("|"),
            "Threads on|Memory on node 2 (HBM-like)"
        );
        assert_eq!(s.charts().len(), 0, "one cell: tables, not heatmaps");
        assert!(s
            .table("Measured beside the firmware's figures (ACPI HMAT)")
            .is_none());
        let text = s.plain_text();
        assert!(
            !text.contains("CPU-less memory") && !text.contains("Remote / local"),
            "{text}"
        );
        assert!(text.contains("The cell in detail"), "{text}");
    }
}
