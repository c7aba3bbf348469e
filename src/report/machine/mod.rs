//! The machine's section of every output: identity, clocks and memory (with the cgroup's
//! memory limit, when one is set) as key/value rows, the caches, TLBs, NUMA nodes (with
//! each node's kind, tier and HMAT figures, and the kernel's memory tiering, where more
//! than one memory node makes them matter) and huge page pools as tables, the distortions of a hypervisor in words, and the caches as the CSV table `machine.caches`; plus the two
//! lines `run` prints about the machine before its results.

use std::fmt::Write as _;

use serde::Serialize;

mod nodes;

use self::nodes::{numa_table, tiered_memory, tiering_table};
use super::virtualization;
use crate::topology::Machine;
use crate::units::{format_hz, Bytes};
use crate::view::format::{self, cpu_list, or_dash, DASH};
use crate::view::{Block, Cell, Column, DataTable, Paragraph, Section, Style, Table};

/// A positive, finite frequency, if any.
fn valid_hz(v: Option<f64>) -> Option<f64> {
    v.filter(|hz| hz.is_finite() && *hz > 0.0)
}

/// A positive, finite frequency, or a dash.
fn opt_hz(v: Option<f64>) -> String {
    valid_hz(v).map_or(DASH.to_string(), format_hz)
}

/// The `info` view and the report's machine section: everything the OS and CPUID report.
pub fn machine_section(m: &Machine) -> Section {
    let mut section = Section::new("machine", "Machine", "Machine");
    section.push(identity_table(m));

    let notes = virtualization::notes(m);
    if !notes.is_empty() {
        section.push(Block::Heading("Virtualization".to_string()));
        for note in notes {
            section.push(Paragraph::note(note));
        }
    }

    if m.caches.is_empty() {
        section.push(Block::Heading("Caches".to_string()));
        section.push(Paragraph::muted("The OS reports no caches."));
    } else {
        section.push(cache_table(m));
    }

    if m.tlbs.is_empty() {
        section.push(Block::Heading("TLBs".to_string()));
        section.push(Paragraph::muted(
            "TLB geometry not available (CPUID does not describe it on this CPU).",
        ));
    } else {
        section.push(tlb_table(m));
    }

    if !m.numa_nodes.is_empty() {
        section.push(numa_table(m));
        if tiered_memory(m) {
            section.push(tiering_table(m));
        }
    }
    if !m.hugepage_pools.is_empty() {
        section.push(hugepage_table(m));
    }
    section.push(cache_data(m));
    section
}

/// The few lines `run` prints about the machine before its results (`info` has the full
/// view).
pub fn machine_summary(m: &Machine) -> Section {
    let mut section = Section::new("machine", "Machine", "Machine");
    let caches: Vec<String> = m
        .data_caches()
        .iter()
        .map(|c| format!("{} {}", c.name(), Bytes(c.size_bytes)))
        .collect();
    section.push(Paragraph::note(format!(
        "{} · {} logical CPUs on {} cores · {} NUMA node(s) · {}",
        m.cpu_model,
        m.logical_cpus,
        m.physical_cores,
        m.numa_nodes.len(),
        m.hypervisor
            .as_ref()
            .map_or("no hypervisor detected".to_string(), |h| format!(
                "{h} guest"
            )),
    )));
    section.push(Paragraph::note(format!(
        "caches {} · THP {} · {} {} · core clock {} (measured)",
        caches.join(", "),
        m.thp.enabled,
        m.counter_name(),
        valid_hz(m.tsc_hz).map_or("not used".into(), format_hz),
        valid_hz(m.core_hz_estimate).map_or("not estimated".into(), format_hz),
    )));
    section
}

fn identity_table(m: &Machine) -> Table {
    let mut identity = Vec::new();
    if let Some(family) = m.cpu_family {
        identity.push(format!("family {family} (0x{family:x})"));
    }
    if let Some(model) = m.cpu_model_number {
        identity.push(format!("model {model} (0x{model:x})"));
    }
    if let Some(stepping) = m.cpu_stepping {
        identity.push(format!("stepping {stepping}"));
    }
    let mut t = Table::key_value();
    t.pair("CPU", or_dash(&m.cpu_model));
    t.pair("Vendor", or_dash(&m.cpu_vendor));
    t.pair("Family / model", or_dash(&identity.join(", ")).to_string());
    t.pair("Architecture", or_dash(&m.architecture));
    t.pair(
        "CPUs",
        format!(
            "{} logical, {} physical cores, {} thread(s) per core",
            m.logical_cpus, m.physical_cores, m.threads_per_core
        ),
    );
    t.pair("SMT sibling groups", smt_groups(m));
    t.pair("Allowed CPUs", cpu_list(&m.allowed_cpus));
    t.pair(
        "Memory",
        format!(
            "{} total, {} available",
            Bytes(m.memory_total_bytes),
            Bytes(m.memory_available_bytes)
        ),
    );
    if let Some(limit) = &m.memory_limit {
        t.pair(
            "Memory limit",
            format!(
                "{} of cgroup {} ({}), {} in use: {} left",
                Bytes(limit.limit_bytes),
                limit.cgroup,
                limit.source.file(),
                Bytes(limit.in_use_bytes),
                Bytes(limit.headroom_bytes())
            ),
        );
    }
    t.pair("NUMA nodes", m.numa_nodes.len().to_string());
    let offered: Vec<String> = m
        .page_sizes_bytes
        .iter()
        .map(|&b| Bytes(b).to_string())
        .collect();
    t.pair(
        "Page sizes",
        format!(
            "base {}; offered: {}",
            format::opt_bytes(Some(m.base_page_bytes).filter(|&b| b > 0)),
            or_dash(&offered.join(", "))
        ),
    );
    let mut thp = m.thp.enabled.to_string();
    if let Some(defrag) = &m.thp.defrag {
        let _ = write!(thp, ", defrag: {defrag}");
    }
    if let Some(pmd) = m.thp.pmd_bytes {
        let _ = write!(thp, ", huge page size {}", Bytes(pmd));
    }
    t.pair("Transparent huge pages", thp);
    t.pair(
        "Hypervisor",
        m.hypervisor.as_deref().unwrap_or("none detected"),
    );
    t.pair("Kernel", or_dash(&m.kernel));
    if let Some(storage) = &m.storage {
        t.pair("Storage (files)", storage.describe());
    }
    t.pair("Clock source", m.clocksource.as_deref().unwrap_or(DASH));
    t.pair(
        m.counter_name(),
        valid_hz(m.tsc_hz).map_or("not used".into(), format_hz),
    );
    t.pair(
        "Core clock (estimated)",
        valid_hz(m.core_hz_estimate).map_or("not estimated".into(), |hz| {
            format!("{} (measured: dependent adds)", format_hz(hz))
        }),
    );
    t.pair("Frequency scaling", cpufreq(m));
    if !m.isa_extensions.is_empty() {
        t.pair("Vector extensions", m.isa_extensions.join(", "));
    }
    if let Some(counters) = &m.perf_counters {
        t.pair("Performance counters", counters.summary());
    }
    t
}

/// A handful of SMT groups shows the numbering scheme; all of them would be a wall of
/// text, so the rest are counted (and listed in the tooltip).
fn smt_groups(m: &Machine) -> Cell {
    if m.smt_sibling_groups.is_empty() {
        return Cell::new("none");
    }
    let groups: Vec<String> = m
        .smt_sibling_groups
        .iter()
        .map(|g| format!("{{{}}}", cpu_list(g)))
        .collect();
    let more = groups.len().saturating_sub(4);
    let shown = groups[..groups.len().min(4)].join(" ");
    if more > 0 {
        Cell::titled(
            format!("{shown} … and {more} more"),
            Style::Plain,
            groups.join(" "),
        )
    } else {
        Cell::new(shown)
    }
}

fn cpufreq(m: &Machine) -> String {
    let Some(f) = &m.cpufreq else {
        return "not exposed".to_string();
    };
    let mut parts = Vec::new();
    if let Some(g) = &f.governor {
        parts.push(format!("governor {g}"));
    }
    if f.min_hz.is_some() || f.max_hz.is_some() {
        parts.push(format!("{} – {}", opt_hz(f.min_hz), opt_hz(f.max_hz)));
    }
    if let Some(boost) = f.boost {
        parts.push(format!("boost {}", if boost { "on" } else { "off" }));
    }
    or_dash(&parts.join(", ")).to_string()
}

fn cache_table(m: &Machine) -> Table {
    let mut t = Table::new(vec![
        Column::text("Cache"),
        Column::text("Kind"),
        Column::number("Size"),
        Column::number("Line"),
        Column::number("Ways"),
        Column::number("Sets"),
        Column::text("Shared with CPUs"),
        Column::number("Instances"),
        Column::number("CPUID size")
            .titled("The size CPUID reports; it differs only when a hypervisor or the kernel presents something else"),
    ])
    .titled("Caches");
    for c in &m.caches {
        let cpuid = match c.cpuid_size_bytes {
            Some(b) if b != c.size_bytes => format!("{} (differs)", Bytes(b)),
            Some(b) => Bytes(b).to_string(),
            None => DASH.to_string(),
        };
        let shared = match c.shared_with_cpus.len() {
            0 => DASH.to_string(),
            1 => format!("{} (1 CPU)", cpu_list(&c.shared_with_cpus)),
            count => format!("{} ({count} CPUs)", cpu_list(&c.shared_with_cpus)),
        };
        t.row([
            c.name(),
            c.kind.to_string(),
            Bytes(c.size_bytes).to_string(),
            Bytes(c.line_bytes).to_string(),
            format::opt_count(c.ways),
            format::opt_count(c.sets),
            shared,
            c.instances.to_string(),
            cpuid,
        ]);
    }
    t
}

fn tlb_table(m: &Machine) -> Table {
    let mut t = Table::new(vec![
        Column::text("Level"),
        Column::text("Kind"),
        Column::number("Page"),
        Column::number("Entries"),
        Column::number("Ways"),
        Column::number("Reach").titled("Entries × page size"),
        Column::text("Source"),
    ])
    .titled("TLBs");
    for tlb in &m.tlbs {
        t.row([
            format!("L{}", tlb.level),
            tlb.kind.to_string(),
            Bytes(tlb.page_bytes).to_string(),
            tlb.entries.to_string(),
            tlb.ways
                .map_or_else(|| "fully associative".to_string(), |w| w.to_string()),
            Bytes(tlb.page_bytes.saturating_mul(u64::from(tlb.entries))).to_string(),
            tlb.source.to_string(),
        ]);
    }
    t
}

fn hugepage_table(m: &Machine) -> Table {
    let mut t = Table::new(vec![
        Column::number("Page size"),
        Column::number("Total"),
        Column::number("Free"),
        Column::number("Reserved"),
        Column::number("Surplus"),
    ])
    .titled("Huge page pools (hugetlbfs)");
    for p in &m.hugepage_pools {
        t.row([
            Bytes(p.page_bytes).to_string(),
            p.total.to_string(),
            p.free.to_string(),
            p.reserved.to_string(),
            p.surplus.to_string(),
        ]);
    }
    t
}

/// A row of `machine.caches`: one cache, the CPUs sharing it space-separated.
#[derive(Serialize, Default)]
struct CacheCsvRow {
    level: u32,
    kind: &'static str,
    size_bytes: u64,
    line_bytes: u64,
    ways: Option<u32>,
    shared_with_cpus: String,
    instances: usize,
}

/// The CSV table of the caches (the whole CSV output of `info`).
fn cache_data(m: &Machine) -> DataTable {
    DataTable::of(
        "machine.caches",
        m.caches.iter().map(|c| CacheCsvRow {
            level: c.level,
            kind: c.kind.name(),
            size_bytes: c.size_bytes,
            line_bytes: c.line_bytes,
            ways: c.ways,
            shared_with_cpus: c
                .shared_with_cpus
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            instances: c.instances,
        }),
    )
}

#[cfg(test)]
mod tests;
