//! The NUMA section's memory columns: what each column's node is (kind, tier, whether it
//! has CPUs, the row that touched its buffers), how a column without CPUs compares with
//! local DRAM, and the firmware's HMAT figures set beside the measured ones, with their
//! `numa.columns` and `numa.hmat` CSV tables. Shown only where there is something to say
//! (a CPU-less or non-DRAM column, a column that is not a row, or HMAT figures), so a
//! machine of DRAM nodes with CPUs keeps the section it had.

use serde::Serialize;

use super::{matrix_cell, Axes};
use crate::experiments::numa::{HmatCell, NumaResult};
use crate::topology::tiers::MemoryKind;
use crate::view::data_row::Raw;
use crate::view::format::{self, DASH};
use crate::view::{Cell, Column, DataTable, Overflow, Paragraph, Section, Table, Text};

/// Whether the matrix has memory columns worth their own table: a node without CPUs, a
/// kind other than DRAM, or a column whose node is not a row.
fn far_columns(result: &NumaResult) -> bool {
    result
        .memory
        .iter()
        .any(|c| c.cpu_less || c.kind != MemoryKind::Dram || !result.row_nodes().contains(&c.node))
}

/// The method's sentence on columns without rows, or nothing.
pub(super) fn method(result: &NumaResult) -> String {
    if !far_columns(result) {
        return String::new();
    }
    " A node without CPUs this process may use (CXL, HBM or PMEM as RAM) is a column only: \
     its memory is first touched from the row nearest to it (smallest distance, else its \
     HMAT initiator) and measured from every row. Where the firmware describes the memory \
     (ACPI HMAT), its figures are set beside the measured ones."
        .to_string()
}

/// GB/s from the kernel's MB/s.
fn gbs(mb_s: Option<u64>) -> String {
    mb_s.map_or_else(|| DASH.to_string(), |v| format::gbs(v as f64 / 1000.0))
}

/// The memory columns' table, the far columns' ratios against local DRAM, and the cells
/// with HMAT figures beside the measured ones.
pub(super) fn columns_and_firmware(result: &NumaResult, axes: &Axes, s: &mut Section) {
    if far_columns(result) {
        let mut t = Table::new(vec![
            Column::text("Memory node"),
            Column::text("Kind"),
            Column::number("Tier"),
            Column::text("CPUs"),
            Column::text("Touched from"),
            Column::number("Latency / DRAM"),
            Column::number("Bandwidth / DRAM"),
        ])
        .titled("Memory nodes (the columns)")
        .overflow(Overflow::Wrap);
        for c in &result.memory {
            t.row(vec![
                Cell::new(format!("node {}", c.node)),
                Cell::new(c.kind.label()),
                Cell::new(format::opt_count(c.tier)),
                Cell::new(if c.cpu_less { "none" } else { "yes" }),
                Cell::new(format!("node {}", c.touched_from)),
                Cell::new(format::opt_fixed(c.latency_vs_local_dram, 2)),
                Cell::new(format::opt_fixed(c.bandwidth_vs_local_dram, 2)),
            ]);
        }
        t.note(
            "Tier: the kernel's memory tier (a lower id is faster). A node without CPUs has \
             its latency and bandwidth over those of the local DRAM of the row it was touched \
             from.",
        );
        s.push(t);
    }
    let far: Vec<String> = result
        .memory
        .iter()
        .filter(|c| c.cpu_less)
        .filter_map(|c| {
            let latency = c.latency_vs_local_dram?;
            let bandwidth = c.bandwidth_vs_local_dram?;
            Some(format!(
                "{} node {} (from node {}): {}× latency, {}× bandwidth",
                c.kind.label(),
                c.node,
                c.touched_from,
                format::fixed(latency, 2),
                format::fixed(bandwidth, 2)
            ))
        })
        .collect();
    if !far.is_empty() {
        s.push(Paragraph::callout(
            Text::new()
                .strong("CPU-less memory / local DRAM")
                .add(format!(" (from the nearest CPU node): {}", far.join("; "))),
        ));
    }
    if !result.hmat.is_empty() {
        s.push(beside_firmware(result, axes));
    }
}

/// The cells with HMAT figures: measured latency and bandwidth beside the firmware's (the
/// SLIT distance of each cell is in the distance table below).
fn beside_firmware(result: &NumaResult, axes: &Axes) -> Table {
    let mut t = Table::new(vec![
        Column::text("Threads → memory"),
        Column::quantity("Latency", "ns"),
        Column::quantity("HMAT", "ns"),
        Column::number("Read GB/s"),
        Column::number("HMAT read"),
        Column::number("HMAT write"),
    ])
    .titled("Measured beside the firmware's figures (ACPI HMAT)")
    .overflow(Overflow::Wrap);
    for (i, row) in axes.rows.iter().enumerate() {
        for (j, column) in axes.columns.iter().enumerate() {
            let Some(firmware) = matrix_cell(&result.hmat, i, j).flatten() else {
                continue;
            };
            let measured = |m: &[Vec<f64>]| matrix_cell(m, i, j).unwrap_or(f64::NAN);
            t.row(vec![
                format!("{row} → {column}"),
                format::ns(measured(&result.latency_ns)),
                format::opt_count(firmware.read_latency_ns),
                format::gbs(measured(&result.read_gb_per_s)),
                gbs(firmware.read_bandwidth_mb_s),
                gbs(firmware.write_bandwidth_mb_s),
            ]);
        }
    }
    t.note(format!(
        "Only cells whose threads' node is one of the memory node's initiators have firmware \
         figures (access1, the CPUs, else access0); HMAT bandwidths in GB/s. The measured \
         latency is the page-local chase's; the measured bandwidth is what {} thread(s) \
         read, the firmware's the node's peak.",
        result.threads_per_node
    ));
    t
}

/// `numa.columns` (one row per memory column) and `numa.hmat` (one per cell with firmware
/// figures), each only where the section shows it.
pub(super) fn data_tables(result: &NumaResult) -> Vec<DataTable> {
    let mut tables = Vec::new();
    #[derive(Serialize, Default)]
    struct ColumnRow {
        memory_node: usize,
        kind: &'static str,
        tier: Option<u32>,
        cpu_less: bool,
        touched_from: usize,
        latency_vs_local_dram: Option<Raw>,
        bandwidth_vs_local_dram: Option<Raw>,
    }
    if far_columns(result) {
        tables.push(DataTable::of(
            "numa.columns",
            result.memory.iter().map(|c| ColumnRow {
                memory_node: c.node,
                kind: c.kind.label(),
                tier: c.tier,
                cpu_less: c.cpu_less,
                touched_from: c.touched_from,
                latency_vs_local_dram: c.latency_vs_local_dram.map(Raw),
                bandwidth_vs_local_dram: c.bandwidth_vs_local_dram.map(Raw),
            }),
        ));
    }
    #[derive(Serialize, Default)]
    struct HmatRow {
        cpu_node: usize,
        memory_node: usize,
        class: &'static str,
        read_latency_ns: Option<u64>,
        write_latency_ns: Option<u64>,
        read_bandwidth_mb_s: Option<u64>,
        write_bandwidth_mb_s: Option<u64>,
    }
    if !result.hmat.is_empty() {
        let (rows, columns) = super::node_axes(result);
        let cells = result.hmat.iter().enumerate().flat_map(|(i, row)| {
            row.iter()
                .enumerate()
                .filter_map(move |(j, cell)| cell.as_ref().map(|cell| (i, j, cell)))
        });
        let node = |ids: &[usize], i: usize| ids.get(i).copied().unwrap_or(i);
        tables.push(DataTable::of(
            "numa.hmat",
            cells.map(|(i, j, cell): (usize, usize, &HmatCell)| HmatRow {
                cpu_node: node(&rows, i),
                memory_node: node(&columns, j),
                class: cell.class.label(),
                read_latency_ns: cell.read_latency_ns,
                write_latency_ns: cell.write_latency_ns,
                read_bandwidth_mb_s: cell.read_bandwidth_mb_s,
                write_bandwidth_mb_s: cell.write_bandwidth_mb_s,
            }),
        ));
    }
    tables
}
