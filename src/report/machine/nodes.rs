//! The NUMA nodes table (with each node's kind, tier and HMAT figures where more than
//! one memory node makes them matter) and the kernel's memory tiering: tiers, demotion,
//! NUMA balancing and weighted interleave.

use std::fmt::Write as _;

use crate::topology::tiers::{MemoryKind, MemoryTiering};
use crate::topology::{Machine, NumaNode};
use crate::units::Bytes;
use crate::view::format::{self, cpu_list, DASH};
use crate::view::{Column, Priority, Table};

/// Whether the machine has more than plain DRAM nodes with CPUs to show: more than one
/// memory node, a node without CPUs, or a node of another kind.
pub(super) fn tiered_memory(m: &Machine) -> bool {
    m.numa_nodes.iter().filter(|n| n.has_memory()).count() > 1
        || m.numa_nodes
            .iter()
            .any(|n| !n.has_cpus() || n.kind != MemoryKind::Dram)
}

/// The firmware's figures for a node, CPU initiators first: "250/260 ns, 60.0/40.0 GB/s
/// from 0" (read/write), a dash for a figure it does not give.
fn hmat_cell(node: &NumaNode) -> String {
    let Some(access) = node.hmat_cpu.as_ref().or(node.hmat.as_ref()) else {
        return DASH.to_string();
    };
    let figure = |v: Option<u64>, f: &dyn Fn(u64) -> String| v.map_or(DASH.to_string(), f);
    let ns = |v: u64| v.to_string();
    let gbs = |v: u64| format::gbs(v as f64 / 1000.0);
    let mut text = format!(
        "{}/{} ns, {}/{} GB/s",
        figure(access.read_latency_ns, &ns),
        figure(access.write_latency_ns, &ns),
        figure(access.read_bandwidth_mb_s, &gbs),
        figure(access.write_bandwidth_mb_s, &gbs),
    );
    if !access.initiators.is_empty() {
        let _ = write!(text, " from {}", cpu_list(&access.initiators));
    }
    text
}

/// The kernel's memory tiers: "tier 4: node 0 · tier 22: nodes 2-3".
fn tiers_text(tiering: &MemoryTiering) -> String {
    if tiering.tiers.is_empty() {
        return "none (the kernel has no memory tiers)".to_string();
    }
    let tiers: Vec<String> = tiering
        .tiers
        .iter()
        .map(|t| {
            let noun = if t.nodes.len() == 1 { "node" } else { "nodes" };
            format!("tier {}: {noun} {}", t.id, cpu_list(&t.nodes))
        })
        .collect();
    tiers.join(" · ")
}

fn demotion_text(tiering: &MemoryTiering) -> &'static str {
    match tiering.demotion_enabled {
        Some(true) => "enabled",
        Some(false) => "disabled",
        None => "not available",
    }
}

fn balancing_text(tiering: &MemoryTiering) -> String {
    tiering
        .numa_balancing
        .map_or("not available".to_string(), |b| {
            format!("{} ({})", b.label(), b.value())
        })
}

/// "auto on; node 0 = 5, node 1 = 5, node 2 = 2", or that the kernel lacks it.
fn interleave_text(tiering: &MemoryTiering) -> String {
    let Some(wi) = &tiering.weighted_interleave else {
        return "not in this kernel (Linux 6.9 and later have it)".to_string();
    };
    let mut parts = Vec::new();
    if let Some(auto) = wi.auto {
        parts.push(format!("auto {}", if auto { "on" } else { "off" }));
    }
    let weights: Vec<String> = wi
        .weights
        .iter()
        .map(|(node, w)| format!("node {node} = {w}"))
        .collect();
    parts.push(if weights.is_empty() {
        "no node weights".to_string()
    } else {
        format!("weights {}", weights.join(", "))
    });
    parts.join("; ")
}

pub(super) fn numa_table(m: &Machine) -> Table {
    let tiered = tiered_memory(m);
    let hmat = m
        .numa_nodes
        .iter()
        .any(|n| n.hmat.is_some() || n.hmat_cpu.is_some());
    let mut columns = vec![
        Column::number("Node"),
        Column::text("CPUs"),
        Column::number("Memory"),
        Column::number("Free"),
        Column::text("Distances"),
    ];
    if tiered {
        columns.push(
            Column::text("Kind")
                .titled("what the node's memory is, as sysfs tells (DRAM, CXL, PMEM as RAM), else for a CPU-less node HBM-like or far memory: faster or slower than DRAM per the HMAT or the kernel's tiers"),
        );
        columns.push(Column::number("Tier").titled("the kernel's memory tier (lower is faster)"));
    }
    if hmat {
        columns.push(
            Column::text("HMAT read/write")
                .titled("the firmware's figures (ACPI HMAT): latency, bandwidth, from the initiator nodes named")
                .priority(Priority::Low),
        );
    }
    let mut t = Table::new(columns).titled("NUMA nodes");
    for node in &m.numa_nodes {
        let distances: Vec<String> = node.distances.iter().map(u32::to_string).collect();
        let mut row = vec![
            node.id.to_string(),
            cpu_list(&node.cpus),
            Bytes(node.memory_total_bytes).to_string(),
            Bytes(node.memory_free_bytes).to_string(),
            distances.join(" "),
        ];
        if tiered {
            row.push(node.kind.label().to_string());
            row.push(node.tier.map_or(DASH.to_string(), |t| t.to_string()));
        }
        if hmat {
            row.push(hmat_cell(node));
        }
        t.row(row);
    }
    if !tiered {
        let tiering = &m.memory_tiering;
        let interleave = match &tiering.weighted_interleave {
            Some(_) => format!("weighted interleave {}", interleave_text(tiering)),
            None => "no weighted interleave in this kernel".to_string(),
        };
        t.note(format!(
            "Weighted interleave and memory tiers need more than one memory node; this machine has one ({}; demotion {}; NUMA balancing {}; {interleave}).",
            tiers_text(tiering),
            demotion_text(tiering),
            balancing_text(tiering),
        ));
    }
    t
}

/// The kernel's memory tiering on a machine with more than one memory node.
pub(super) fn tiering_table(m: &Machine) -> Table {
    let tiering = &m.memory_tiering;
    let mut t = Table::key_value().titled("Memory tiering");
    t.pair("Memory tiers", tiers_text(tiering));
    t.pair("Demotion", demotion_text(tiering));
    t.pair("NUMA balancing", balancing_text(tiering));
    t.pair("Weighted interleave", interleave_text(tiering));
    t
}
