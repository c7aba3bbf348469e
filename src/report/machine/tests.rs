//! Tests of the machine section: identity, clocks, caches and the CSV table, a guest's
//! notes, a cgroup limit, and memory nodes with their kinds, tiers and HMAT figures.

use super::*;
use crate::topology::tiers::{MemoryKind, MemoryTiering};
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
