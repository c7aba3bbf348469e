//! The NUMA section: the method, the latency and bandwidth matrices (heatmaps in HTML from
//! two nodes on, tables otherwise), the remote/local ratios, the CPUs, spread and placement,
//! the kernel's distances, every cell on demand, and the `numa.cells` CSV table.

use serde::Serialize;

use super::NumaResult;
use crate::platform::cpu_time::MIN_OVERLAP;
use crate::topology::cpu::format_cpu_list;
use crate::topology::Machine;
use crate::units::Bytes;
use crate::view::chart::Heatmap;
use crate::view::data_row::Raw;
use crate::view::format::{self, DASH};
use crate::view::{
    Block, Cell, Column, DataTable, Medium, Paragraph, Present, Section, Style, Table, Text,
};

/// Row and column headers of the measured matrices.
const NODE_AXES: (&str, &str) = ("Threads on", "Memory on node");

/// The node ids labelling `n` rows or columns; an index stands in for a missing id.
fn node_labels(result: &NumaResult, n: usize) -> Vec<usize> {
    (0..n)
        .map(|i| result.nodes.get(i).copied().unwrap_or(i))
        .collect()
}

/// Nodes of the matrices: the ids, or as many as the largest matrix has rows.
fn numa_size(result: &NumaResult) -> usize {
    result
        .nodes
        .len()
        .max(result.latency_ns.len())
        .max(result.read_gb_per_s.len())
}

/// A cell of a possibly ragged matrix.
fn matrix_cell<T: Copy>(m: &[Vec<T>], i: usize, j: usize) -> Option<T> {
    m.get(i).and_then(|r| r.get(j)).copied()
}

/// A node × node matrix as a heatmap: threads' node down, memory's node across. The rows
/// carry their meaning in their labels: a rotated y label is taller than a grid of two
/// rows and would run into the title.
fn node_heatmap(title: &str, labels: &[usize], m: &[Vec<f64>], value_label: &str) -> Heatmap {
    let n = labels.len();
    Heatmap::new(title)
        .x_label(NODE_AXES.1)
        .columns(labels.iter().map(|j| j.to_string()).collect())
        .rows(
            labels
                .iter()
                .map(|i| format!("threads on node {i}"))
                .collect(),
        )
        .values(
            (0..n)
                .map(|i| {
                    (0..n)
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
    labels: &[usize],
    m: &[Vec<T>],
    cell: impl Fn(usize, usize, T) -> Cell,
) -> Table {
    let mut columns = vec![Column::text(corner)];
    columns.extend(
        labels
            .iter()
            .map(|j| Column::number(format!("{column} {j}"))),
    );
    let mut t = Table::new(columns).titled(title);
    for (i, from) in labels.iter().enumerate() {
        let mut row = vec![Cell::new(format!("node {from}"))];
        row.extend(
            (0..labels.len())
                .map(|j| matrix_cell(m, i, j).map_or_else(Cell::dash, |v| cell(i, j, v))),
        );
        t.row(row);
    }
    t
}

impl Present for NumaResult {
    fn section(&self, _machine: &Machine) -> Section {
        let mut s = Section::new("numa", "NUMA", "NUMA: latency and bandwidth by node");
        s.push(Paragraph::note(format!(
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
        )));
        if let Some(note) = &self.note {
            s.push(Paragraph::callout(note.as_str()));
        }
        let n = numa_size(self);
        let labels = node_labels(self, n);
        if n == 0 {
            s.push(Paragraph::muted("No node was measured."));
        } else {
            matrices(self, &labels, &mut s);
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
            s.push(Paragraph::note(cpus_and_spread(self, &labels)));
            s.push(Paragraph::note(placement(self, n)));
        }
        if !self.distances.is_empty() {
            let labels = node_labels(self, self.distances.len());
            s.push(node_table(
                "Kernel's node distances (firmware's relative cost, 10 = local)",
                ("From", "To node"),
                &labels,
                &self.distances,
                |_, _, d| Cell::new(d.to_string()),
            ));
        }
        if n > 0 {
            s.push(Block::Verbose(vec![all_cells(self, &labels)]));
        }
        s.push(data_table(self, n));
        s
    }
}

/// The latency and bandwidth matrices: heatmaps in HTML from two nodes on, with the tables
/// for the terminal; the tables in both for one node.
fn matrices(result: &NumaResult, labels: &[usize], s: &mut Section) {
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
            node_table(title, NODE_AXES, labels, m, |i, j, v| {
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
    let n = labels.len();
    let marked = (0..n).any(|i| (0..n).any(|j| not_together(i, j)));
    if let Some(bandwidth) = tables.last_mut().filter(|_| marked) {
        bandwidth.note(format!(
            "! the reading threads of the cell ran together less than {:.0} % of the time: \
             its bandwidth is what they got, not that of threads reading together.",
            MIN_OVERLAP * 100.0
        ));
    }
    let tables = tables.into_iter().map(Block::Table);
    if n >= 2 {
        for &(title, m, unit, _) in &measured {
            s.push(node_heatmap(title, labels, m, unit));
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

/// How much of the placement get_mempolicy confirmed.
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
            n * n
        ),
        None => "Placement not verified (get_mempolicy gave no answer).".to_string(),
    }
}

/// Every cell with all its figures, folded away in HTML.
fn all_cells(result: &NumaResult, labels: &[usize]) -> Block {
    let n = labels.len();
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
    for i in 0..n {
        for j in 0..n {
            t.row(vec![
                format!("node {}", labels[i]),
                format!("node {}", labels[j]),
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
        summary: if n == 1 {
            "The cell in detail".to_string()
        } else {
            format!("All {} cells", n * n)
        },
        blocks: vec![t.into()],
    }
}

/// `numa.cells`: one row per (threads' node, memory's node); node ids label both.
fn data_table(result: &NumaResult, n: usize) -> DataTable {
    let node = |i: usize| result.nodes.get(i).copied().unwrap_or(i);
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
    let cells = (0..n).flat_map(|i| (0..n).map(move |j| (i, j)));
    DataTable::of(
        "numa.cells",
        cells.map(|(i, j)| Row {
            cpu_node: node(i),
            memory_node: node(j),
            local: i == j,
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
}
