//! The machine's section of every output: identity, clocks and memory (with the cgroup's
//! memory limit, when one is set) as key/value rows, the caches, TLBs, NUMA nodes (with
//! each node's kind, tier and HMAT figures, and the kernel's memory tiering, where more
//! than one memory node makes them matter) and huge page pools as tables, the distortions of a hypervisor in words, and the caches as the CSV table `machine.caches`; plus the two
//! lines `run` prints about the machine before its results.

use std::fmt::Write as _;

use serde::Serialize;

use super::virtualization;
use crate::topology::tiers::{MemoryKind, MemoryTiering};
use crate::topology::{Machine, NumaNode};
use crate::units::{format_hz, Bytes};
use crate::view::format::{self, cpu_list, or_dash, DASH};
use crate::view::{Block, Cell, Column, DataTable, Paragraph, Priority, Section, Style, Table};

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
        "caches {} · THP {} · TSC {} · core clock {} (measured)",
        caches.join(", "),
        m.thp.enabled,
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
        "TSC",
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

/// Whether the machine has more than plain DRAM nodes with CPUs to show: more than one
/// memory node, a node without CPUs, or a node of another kind.
fn tiered_memory(m: &Machine) -> bool {
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

fn numa_table(m: &Machine) -> Table {
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
                .titled("what the node's memory is, as sysfs tells (DRAM, CXL, HBM, PMEM as RAM)"),
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
fn tiering_table(m: &Machine) -> Table {
    let tiering = &m.memory_tiering;
    let mut t = Table::key_value().titled("Memory tiering");
    t.pair("Memory tiers", tiers_text(tiering));
    t.pair("Demotion", demotion_text(tiering));
    t.pair("NUMA balancing", balancing_text(tiering));
    t.pair("Weighted interleave", interleave_text(tiering));
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
mod tests {
    use super::*;
    use crate::topology::{HugePagePool, NumaNode, TlbInfo};
    use crate::units::{KIB, MIB};

    fn sample_machine() -> Machine {
        Machine {
            cpu_vendor: "AuthenticAMD".to_string(),
            physical_cores: 4,
            threads_per_core: 2,
            tsc_hz: Some(2.6e9),
            ..Machine::sample()
        }
    }

    /// The value of the identity row `key`.
    fn value(section: &Section, key: &str) -> String {
        section.tables()[0].row_of(key)[1].clone()
    }

    #[test]
    fn identity_clocks_caches_and_the_csv_table() {
        let mut m = sample_machine();
        (m.cpu_family, m.cpu_model_number, m.cpu_stepping) = (Some(25), Some(17), Some(1));
        // Machine strings stay plain text: the renderers escape them.
        m.cpu_model = "<script>alert(\"x\")</script>".to_string();
        m.kernel = "6.1 & <b>".to_string();
        // Many SMT groups are counted (and listed in the tooltip).
        m.smt_sibling_groups = (0..6).map(|i| vec![i, i + 6]).collect();
        m.tlbs = vec![TlbInfo {
            level: 1,
            kind: crate::topology::CacheKind::Data,
            page_bytes: 4 * KIB,
            entries: 64,
            ways: None,
            source: crate::topology::TlbSource::Cpuid80000005,
        }];
        m.numa_nodes = vec![NumaNode {
            id: 0,
            cpus: vec![0, 1, 2, 3],
            memory_total_bytes: 16 * 1024 * MIB,
            memory_free_bytes: 8 * 1024 * MIB,
            distances: vec![10, 21],
            ..NumaNode::default()
        }];
        m.hugepage_pools = vec![HugePagePool {
            page_bytes: 2 * MIB,
            total: 16,
            free: 8,
            reserved: 0,
            surplus: 0,
        }];
        let s = machine_section(&m);
        assert_eq!(
            (s.id, s.nav.as_str(), s.title.as_str()),
            ("machine", "Machine", "Machine")
        );
        for (key, want) in [
            ("CPU", "<script>alert(\"x\")</script>"),
            ("Kernel", "6.1 & <b>"),
            ("SMT sibling groups", "{0,6} {1,7} {2,8} {3,9} … and 2 more"),
            (
                "Family / model",
                "family 25 (0x19), model 17 (0x11), stepping 1",
            ),
            ("TSC", "2.60 GHz"),
            (
                "Core clock (estimated)",
                "3.00 GHz (measured: dependent adds)",
            ),
            ("Frequency scaling", "not exposed"),
        ] {
            assert_eq!(value(&s, key), want, "{key}");
        }
        let caches = s.table("Caches").expect("caches");
        assert_eq!(caches.column_text(0), ["L1d", "L1i", "L2", "L3"]);
        assert_eq!(caches.column_text(3)[0], "64 B");
        assert_eq!(caches.column_text(6)[0], "0-1 (2 CPUs)");
        let tlbs = s.table("TLBs").expect("tlbs");
        assert_eq!(tlbs.column_text(4), ["fully associative"]);
        assert_eq!(tlbs.column_text(5), ["256 KiB"]);
        assert_eq!(s.table("NUMA nodes").unwrap().column_text(4), ["10 21"]);
        let pools = s.table("Huge page pools (hugetlbfs)").expect("pools");
        assert_eq!(pools.column_text(0), ["2 MiB"]);
        // Bare metal: no virtualization notes.
        assert!(!s.plain_text().contains("Virtualization"));

        let data = s.data_tables();
        assert_eq!(data.len(), 1);
        assert_eq!(data[0].name, "machine.caches");
        let header = "level,kind,size_bytes,line_bytes,ways,shared_with_cpus,instances";
        assert_eq!(data[0].header.join(","), header);
        assert_eq!(data[0].rows[0].join(","), "1,data,32768,64,8,0 1,4");
    }

    #[test]
    fn works_without_machine_data_and_the_csv_stays_one_plain_table() {
        let s = machine_section(&Machine::default());
        assert!(s.charts().is_empty());
        let text = s.plain_text();
        assert!(text.contains("The OS reports no caches."), "{text}");
        assert!(text.contains("TLB geometry not available"), "{text}");
        for (key, want) in [
            ("CPU", DASH.to_string()),
            ("Allowed CPUs", DASH.to_string()),
            ("Page sizes", format!("base {DASH}; offered: {DASH}")),
            ("TSC", "not used".into()),
            ("SMT sibling groups", "none".into()),
        ] {
            assert_eq!(value(&s, key), want, "{key}");
        }
        assert!(s.table("NUMA nodes").is_none());
        assert_eq!(machine_summary(&Machine::default()).blocks.len(), 2);
        let data = s.data_tables();
        assert_eq!(data.len(), 1);
        assert_eq!(data[0].header[0], "level");
        assert!(data[0].rows.is_empty());
    }

    #[test]
    fn a_guest_gets_the_virtualization_notes_and_the_summary_says_so() {
        let mut m = sample_machine();
        m.hypervisor = Some("KVM".into());
        let s = machine_section(&m);
        let heading = |b: &Block| matches!(b, Block::Heading(h) if h == "Virtualization");
        let at = s.blocks.iter().position(heading).expect("heading");
        let kvm = |b: &Block| matches!(b, Block::Paragraph(p) if p.text.to_plain().contains("KVM"));
        assert!(kvm(&s.blocks[at + 1]));
        let summary = machine_summary(&m).plain_text();
        for words in [
            "KVM guest",
            "caches L1d 32 KiB, L2 1 MiB, L3 32 MiB",
            "core clock 3.00 GHz (measured)",
        ] {
            assert!(summary.contains(words), "{words}: {summary}");
        }
    }

    #[test]
    fn a_cgroup_memory_limit_is_shown_when_set() {
        use crate::topology::cgroup::{CgroupMemoryLimit, LimitSource};
        let mut m = sample_machine();
        assert!(!machine_section(&m).plain_text().contains("Memory limit"));
        m.memory_limit = Some(CgroupMemoryLimit {
            source: LimitSource::V2MemoryMax,
            cgroup: "/job".into(),
            limit_bytes: 300 * MIB,
            in_use_bytes: 30 * MIB,
        });
        assert_eq!(
            value(&machine_section(&m), "Memory limit"),
            "300 MiB of cgroup /job (cgroup v2 memory.max), 30 MiB in use: 270 MiB left"
        );
        // The JSON field is additive: absent without a limit, read back when present.
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["memory_limit"]["source"], "v2_memory_max");
        let back: Machine = serde_json::from_value(json).unwrap();
        assert_eq!(back.memory_limit, m.memory_limit);
        m.memory_limit = None;
        assert!(serde_json::to_value(&m)
            .unwrap()
            .get("memory_limit")
            .is_none());
    }

    /// Two sockets with a CXL expander each, as `topology::numa`'s synthetic tree has them.
    fn two_sockets_two_cxl() -> Machine {
        use crate::topology::tiers::{HmatAccess, MemoryTier, NumaBalancing, WeightedInterleave};
        let gib = 1024 * MIB;
        let hmat = |from: usize, lat: u64, bw: u64| HmatAccess {
            initiators: vec![from],
            read_latency_ns: Some(lat),
            write_latency_ns: Some(lat + 5),
            read_bandwidth_mb_s: Some(bw),
            write_bandwidth_mb_s: Some(bw * 2 / 3),
        };
        let node = |id: usize, cpus: Vec<usize>, kind, tier, distances: Vec<u32>, h| NumaNode {
            id,
            cpus,
            memory_total_bytes: 256 * gib,
            memory_free_bytes: 200 * gib,
            distances,
            kind,
            tier: Some(tier),
            hmat: Some(h),
            hmat_cpu: None,
        };
        Machine {
            numa_nodes: vec![
                node(
                    0,
                    (0..64).collect(),
                    MemoryKind::Dram,
                    4,
                    vec![10, 21, 14, 24],
                    hmat(0, 110, 300_000),
                ),
                node(
                    1,
                    (64..128).collect(),
                    MemoryKind::Dram,
                    4,
                    vec![21, 10, 24, 14],
                    hmat(1, 110, 300_000),
                ),
                node(
                    2,
                    vec![],
                    MemoryKind::Cxl,
                    22,
                    vec![14, 24, 10, 26],
                    hmat(0, 250, 60_000),
                ),
                node(
                    3,
                    vec![],
                    MemoryKind::Cxl,
                    22,
                    vec![24, 14, 26, 10],
                    hmat(1, 250, 60_000),
                ),
            ],
            memory_tiering: MemoryTiering {
                tiers: vec![
                    MemoryTier {
                        id: 4,
                        nodes: vec![0, 1],
                    },
                    MemoryTier {
                        id: 22,
                        nodes: vec![2, 3],
                    },
                ],
                demotion_enabled: Some(true),
                numa_balancing: Some(NumaBalancing::MemoryTiering),
                weighted_interleave: Some(WeightedInterleave {
                    auto: Some(false),
                    weights: vec![(0, 5), (1, 5), (2, 2), (3, 2)],
                }),
            },
            ..sample_machine()
        }
    }

    #[test]
    fn memory_nodes_show_their_kind_tier_and_hmat_figures_and_the_tiering() {
        let s = machine_section(&two_sockets_two_cxl());
        let numa = s.table("NUMA nodes").expect("numa");
        let headers: Vec<String> = numa.columns.iter().map(|c| c.header()).collect();
        assert_eq!(
            headers,
            [
                "Node",
                "CPUs",
                "Memory",
                "Free",
                "Distances",
                "Kind",
                "Tier",
                "HMAT read/write"
            ]
        );
        assert_eq!(numa.column_text(1), ["0-63", "64-127", DASH, DASH]);
        assert_eq!(numa.column_text(5), ["DRAM", "DRAM", "CXL", "CXL"]);
        assert_eq!(numa.column_text(6), ["4", "4", "22", "22"]);
        assert_eq!(numa.column_text(7)[2], "250/255 ns, 60.0/40.0 GB/s from 0");
        assert_eq!(
            numa.column_text(7)[1],
            "110/115 ns, 300.0/200.0 GB/s from 1"
        );
        assert!(numa.notes.is_empty());
        let tiering = s.table("Memory tiering").expect("tiering");
        for (key, want) in [
            ("Memory tiers", "tier 4: nodes 0-1 · tier 22: nodes 2-3"),
            ("Demotion", "enabled"),
            ("NUMA balancing", "memory tiering (2)"),
            (
                "Weighted interleave",
                "auto off; weights node 0 = 5, node 1 = 5, node 2 = 2, node 3 = 2",
            ),
        ] {
            assert_eq!(tiering.row_of(key)[1], want, "{key}");
        }
        // An old kernel: no weighted interleave, no tiers, no HMAT column.
        let mut old = two_sockets_two_cxl();
        old.memory_tiering = MemoryTiering::default();
        for node in &mut old.numa_nodes {
            node.hmat = None;
            node.tier = None;
        }
        let s = machine_section(&old);
        let numa = s.table("NUMA nodes").unwrap();
        assert_eq!(numa.columns.len(), 7);
        assert_eq!(numa.column_text(6), [DASH; 4]);
        let tiering = s.table("Memory tiering").unwrap();
        assert_eq!(
            tiering.row_of("Weighted interleave")[1],
            "not in this kernel (Linux 6.9 and later have it)"
        );
        assert_eq!(
            tiering.row_of("Memory tiers")[1],
            "none (the kernel has no memory tiers)"
        );
        assert_eq!(tiering.row_of("Demotion")[1], "not available");
        // What `info` prints for it (docs/info.md shows this rendering).
        let text = crate::render::terminal::render_width(
            &[machine_section(&two_sockets_two_cxl())],
            false,
            120,
        );
        let from = text.find("NUMA nodes").unwrap();
        println!("{}", &text[from..]);
    }

    #[test]
    fn one_memory_node_keeps_its_table_and_says_tiering_needs_more_in_one_line() {
        use crate::topology::tiers::{MemoryTier, NumaBalancing, WeightedInterleave};
        let mut m = sample_machine();
        m.numa_nodes = vec![NumaNode {
            id: 0,
            cpus: vec![0, 1],
            memory_total_bytes: 16 * 1024 * MIB,
            memory_free_bytes: 8 * 1024 * MIB,
            distances: vec![10],
            tier: Some(4),
            ..NumaNode::default()
        }];
        m.memory_tiering = MemoryTiering {
            tiers: vec![MemoryTier {
                id: 4,
                nodes: vec![0],
            }],
            demotion_enabled: Some(false),
            numa_balancing: Some(NumaBalancing::Disabled),
            weighted_interleave: Some(WeightedInterleave {
                auto: Some(true),
                weights: vec![(0, 1)],
            }),
        };
        let s = machine_section(&m);
        let numa = s.table("NUMA nodes").unwrap();
        assert_eq!(numa.columns.len(), 5);
        assert!(s.table("Memory tiering").is_none());
        assert_eq!(numa.notes.len(), 1);
        assert_eq!(
            numa.notes[0].to_plain(),
            "Weighted interleave and memory tiers need more than one memory node; this machine \
             has one (tier 4: node 0; demotion disabled; NUMA balancing off (0); weighted \
             interleave auto on; weights node 0 = 1)."
        );
        m.memory_tiering = MemoryTiering::default();
        let note = machine_section(&m).table("NUMA nodes").unwrap().notes[0].to_plain();
        assert!(
            note.contains("no weighted interleave in this kernel"),
            "{note}"
        );
        assert_eq!(
            s.plain_text().matches("more than one memory node").count(),
            1
        );
    }
}
