//! Machines this one is not, as synthetic sysfs/procfs trees in a temporary directory:
//! two sockets with two CXL expanders, HBM in flat mode, sub-NUMA clustering, a kernel
//! without weighted interleave or memory tiers. Each checks which nodes are rows (CPUs)
//! and columns (memory) of the NUMA matrices, their kinds, tiers and HMAT figures, and the
//! machine-wide tiering settings.

use std::path::Path;

use super::{detect_numa_at, NumaContext};
use crate::platform::fake_files::put;
use crate::topology::tiers::{
    HmatAccess, MemoryKind, MemoryTiering, NumaBalancing, WeightedInterleave,
};
use crate::topology::NumaNode;

/// A synthetic machine under construction: `sys` and `proc` roots.
struct Tree {
    sys: tempfile::TempDir,
    proc: tempfile::TempDir,
}

/// HMAT figures: read/write latency (ns), read/write bandwidth (MB/s).
type Figures = (u64, u64, u64, u64);

impl Tree {
    fn new() -> Tree {
        Tree {
            sys: tempfile::tempdir().unwrap(),
            proc: tempfile::tempdir().unwrap(),
        }
    }

    fn sys(&self, rel: &str, value: &str) {
        put(self.sys.path(), rel, value);
    }

    /// Node `id` with `cpus`, `gib` of memory and its distance row.
    fn node(&self, id: usize, cpus: &str, gib: u64, distances: &str) {
        let dir = format!("devices/system/node/node{id}");
        self.sys(&format!("{dir}/cpulist"), cpus);
        self.sys(
            &format!("{dir}/meminfo"),
            &format!(
                "Node {id} MemTotal:       {} kB\nNode {id} MemFree:        {} kB",
                gib << 20,
                gib << 19
            ),
        );
        self.sys(&format!("{dir}/distance"), distances);
    }

    /// Access class `class` of node `id`: its initiator links and figures.
    fn hmat(&self, id: usize, class: u32, initiators: &[usize], f: Figures) {
        let dir = format!("devices/system/node/node{id}/access{class}/initiators");
        for (file, value) in [
            ("read_latency", f.0),
            ("write_latency", f.1),
            ("read_bandwidth", f.2),
            ("write_bandwidth", f.3),
        ] {
            self.sys(&format!("{dir}/{file}"), &value.to_string());
        }
        for m in initiators {
            std::os::unix::fs::symlink(
                format!("../../../node{m}"),
                self.sys.path().join(format!("{dir}/node{m}")),
            )
            .unwrap();
        }
    }

    fn tier(&self, id: u32, nodelist: &str) {
        self.sys(
            &format!("devices/virtual/memory_tiering/memory_tier{id}/nodelist"),
            nodelist,
        );
    }

    /// CXL RAM region `region` onlined through its dax device onto `node`, laid out as the
    /// kernel does: the bus entry links to the device under the CXL root decoder.
    fn cxl_region(&self, region: usize, node: usize) {
        let device = format!("devices/platform/ACPI0017:00/root0/decoder0.{region}/region{region}");
        let dax = format!("{device}/dax_region{region}/dax{region}.0");
        self.sys(&format!("{device}/mode"), "ram");
        self.sys(&format!("{dax}/target_node"), &node.to_string());
        self.sys(&format!("{dax}/numa_node"), "-1");
        for (bus, target) in [
            (format!("bus/cxl/devices/region{region}"), device.clone()),
            (format!("bus/dax/devices/dax{region}.0"), dax.clone()),
        ] {
            let link = self.sys.path().join(bus);
            std::fs::create_dir_all(link.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(format!("../../../{target}"), link).unwrap();
        }
    }

    fn detect(&self, cpu_model: &str) -> (Vec<NumaNode>, MemoryTiering) {
        let tiering = MemoryTiering::read_at(self.sys.path(), self.proc.path());
        let nodes = detect_numa_at(
            self.sys.path(),
            NumaContext {
                online_cpus: &[0],
                mem_total: 1 << 30,
                mem_free: 1 << 29,
                cpu_model,
                tiers: &tiering.tiers,
            },
        );
        (nodes, tiering)
    }
}

fn rows(nodes: &[NumaNode]) -> Vec<usize> {
    nodes
        .iter()
        .filter(|n| n.has_cpus())
        .map(|n| n.id)
        .collect()
}

fn columns(nodes: &[NumaNode]) -> Vec<usize> {
    nodes
        .iter()
        .filter(|n| n.has_memory())
        .map(|n| n.id)
        .collect()
}

fn kinds(nodes: &[NumaNode]) -> Vec<MemoryKind> {
    nodes.iter().map(|n| n.kind).collect()
}

/// Two sockets (nodes 0 and 1, SLIT 10/21) with a CXL expander each (nodes 2 and 3).
fn two_sockets_two_cxl() -> Tree {
    let t = Tree::new();
    t.node(0, "0-63", 256, "10 21 14 24");
    t.node(1, "64-127", 256, "21 10 24 14");
    t.node(2, "", 128, "14 24 10 26");
    t.node(3, "", 128, "24 14 26 10");
    let dram = (110, 115, 300_000, 250_000);
    let cxl = (250, 260, 60_000, 40_000);
    for id in 0..2 {
        t.hmat(id, 0, &[id], dram);
        t.hmat(id, 1, &[id], dram);
    }
    t.hmat(2, 0, &[0], cxl);
    t.hmat(3, 0, &[1], cxl);
    t.cxl_region(0, 2);
    t.cxl_region(1, 3);
    t.tier(4, "0-1");
    t.tier(22, "2-3");
    t.sys("kernel/mm/numa/demotion_enabled", "true");
    put(t.proc.path(), "sys/kernel/numa_balancing", "2");
    let wi = "kernel/mm/mempolicy/weighted_interleave";
    t.sys(&format!("{wi}/auto"), "false");
    for (node, weight) in [(0, 5), (1, 5), (2, 2), (3, 2)] {
        t.sys(&format!("{wi}/node{node}"), &weight.to_string());
    }
    t
}

#[test]
fn two_sockets_with_two_cxl_nodes() {
    let (nodes, tiering) = two_sockets_two_cxl().detect("Intel(R) Xeon(R) 6980P");
    assert_eq!(rows(&nodes), [0, 1]);
    assert_eq!(columns(&nodes), [0, 1, 2, 3]);
    assert_eq!(
        kinds(&nodes),
        [
            MemoryKind::Dram,
            MemoryKind::Dram,
            MemoryKind::Cxl,
            MemoryKind::Cxl
        ]
    );
    let tiers: Vec<Option<u32>> = nodes.iter().map(|n| n.tier).collect();
    assert_eq!(tiers, [Some(4), Some(4), Some(22), Some(22)]);
    assert_eq!(
        nodes[2].hmat,
        Some(HmatAccess {
            initiators: vec![0],
            read_latency_ns: Some(250),
            write_latency_ns: Some(260),
            read_bandwidth_mb_s: Some(60_000),
            write_bandwidth_mb_s: Some(40_000),
        })
    );
    assert_eq!(nodes[3].hmat.as_ref().unwrap().initiators, [1]);
    // access1 was written for the DRAM nodes only.
    assert!(nodes[2].hmat_cpu.is_none());
    assert_eq!(
        nodes[0].hmat_cpu.as_ref().unwrap().read_latency_ns,
        Some(110)
    );
    assert_eq!(nodes[2].distances, [14, 24, 10, 26]);

    assert_eq!(tiering.tiers.len(), 2);
    assert_eq!(tiering.demotion_enabled, Some(true));
    assert_eq!(tiering.numa_balancing, Some(NumaBalancing::MemoryTiering));
    assert_eq!(
        tiering.weighted_interleave,
        Some(WeightedInterleave {
            auto: Some(false),
            weights: vec![(0, 5), (1, 5), (2, 2), (3, 2)],
        })
    );
    // The JSON of a node carries the new fields and reads back.
    let json = serde_json::to_value(&nodes[2]).unwrap();
    assert_eq!(json["kind"], "cxl");
    assert_eq!(json["tier"], 22);
    assert_eq!(json["hmat"]["read_latency_ns"], 250);
    let back: NumaNode = serde_json::from_value(json).unwrap();
    assert_eq!(back, nodes[2]);
}

#[test]
fn cxl_is_found_through_the_dax_bus_alone() {
    // A kernel whose /sys/bus/cxl lists no regions: the dax device's link still runs
    // through the CXL root decoder.
    let t = two_sockets_two_cxl();
    for region in 0..2 {
        std::fs::remove_file(t.sys.path().join(format!("bus/cxl/devices/region{region}"))).unwrap();
    }
    let (nodes, _) = t.detect("");
    assert_eq!(nodes[2].kind, MemoryKind::Cxl);
    assert_eq!(nodes[3].kind, MemoryKind::Cxl);
}

#[test]
fn persistent_memory_onlined_as_ram() {
    let t = Tree::new();
    t.node(0, "0-7", 64, "10 17");
    t.node(1, "", 256, "17 10");
    // An NVDIMM region and the dax device under it, onlined by kmem onto node 1.
    let region = "devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0012:00/ndbus0/region0";
    t.sys(&format!("{region}/target_node"), "1");
    t.sys(&format!("{region}/dax0.0/dax0.0/target_node"), "1");
    let link = t.sys.path().join("bus/nd/devices/region0");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(format!("../../../{region}"), link).unwrap();
    let (nodes, _) = t.detect("");
    assert_eq!(kinds(&nodes), [MemoryKind::Dram, MemoryKind::PmemAsRam]);
    assert_eq!(columns(&nodes), [0, 1]);
}

#[test]
fn hbm_in_flat_mode() {
    // Xeon Max style: DRAM with the CPUs (nodes 0-1), HBM without (nodes 2-3), the HMAT
    // quoting more bandwidth and a little more latency for HBM.
    let t = Tree::new();
    t.node(0, "0-55", 256, "10 21 13 23");
    t.node(1, "56-111", 256, "21 10 23 13");
    t.node(2, "", 64, "13 23 10 23");
    t.node(3, "", 64, "23 13 23 10");
    for id in 0..2 {
        t.hmat(id, 0, &[id], (100, 100, 250_000, 200_000));
    }
    t.hmat(2, 0, &[0], (120, 120, 800_000, 600_000));
    t.hmat(3, 0, &[1], (120, 120, 800_000, 600_000));
    let (nodes, _) = t.detect("Intel(R) Xeon(R) Platinum 8480+");
    assert_eq!(rows(&nodes), [0, 1]);
    assert_eq!(columns(&nodes), [0, 1, 2, 3]);
    assert_eq!(
        kinds(&nodes),
        [
            MemoryKind::Dram,
            MemoryKind::Dram,
            MemoryKind::Hbm,
            MemoryKind::Hbm
        ]
    );
    // No tiers on this tree: none claimed.
    assert!(nodes.iter().all(|n| n.tier.is_none()));

    // Without HMAT, only the CPU model tells HBM from anything else.
    let bare = Tree::new();
    bare.node(0, "0-55", 256, "10 13");
    bare.node(1, "", 64, "13 10");
    let (nodes, _) = bare.detect("Intel(R) Xeon(R) CPU Max 9480");
    assert_eq!(kinds(&nodes), [MemoryKind::Dram, MemoryKind::Hbm]);
    let (nodes, _) = bare.detect("Intel(R) Xeon(R) Platinum 8480+");
    assert_eq!(kinds(&nodes), [MemoryKind::Dram, MemoryKind::Unknown]);

    // A CPU-less node the HMAT calls slower is not HBM, whatever the CPU.
    let slow = Tree::new();
    slow.node(0, "0-55", 256, "10 13");
    slow.node(1, "", 64, "13 10");
    slow.hmat(0, 0, &[0], (100, 100, 250_000, 200_000));
    slow.hmat(1, 0, &[0], (200, 200, 50_000, 40_000));
    let (nodes, _) = slow.detect("Intel(R) Xeon(R) CPU Max 9480");
    assert_eq!(kinds(&nodes), [MemoryKind::Dram, MemoryKind::Far]);

    // Without HMAT the kernel's tiers tell: a slower tier is far memory, a faster one
    // HBM-like, one tier for all says nothing.
    for (tiers, kind) in [
        ([(4, "0"), (22, "1")], MemoryKind::Far),
        ([(4, "0"), (1, "1")], MemoryKind::Hbm),
        ([(4, "0-1"), (9, "")], MemoryKind::Unknown),
    ] {
        let t = Tree::new();
        t.node(0, "0-55", 256, "10 13");
        t.node(1, "", 64, "13 10");
        for (id, nodes) in tiers {
            t.tier(id, nodes);
        }
        assert_eq!(kinds(&t.detect("").0), [MemoryKind::Dram, kind]);
    }
}

#[test]
fn sub_numa_clustering_four_nodes_per_socket() {
    let t = Tree::new();
    for id in 0..8 {
        let row: Vec<String> = (0..8)
            .map(|j| {
                let d = if j == id {
                    10
                } else if j / 4 != id / 4 {
                    21
                } else if (j % 4) / 2 == (id % 4) / 2 {
                    11
                } else {
                    12
                };
                d.to_string()
            })
            .collect();
        let cpus = format!("{}-{}", id * 16, id * 16 + 15);
        t.node(id, &cpus, 32, &row.join(" "));
    }
    t.tier(4, "0-7");
    let (nodes, tiering) = t.detect("Intel(R) Xeon(R) Platinum 8480+");
    let all: Vec<usize> = (0..8).collect();
    assert_eq!(rows(&nodes), all);
    assert_eq!(columns(&nodes), all);
    assert!(nodes.iter().all(|n| n.kind == MemoryKind::Dram));
    assert!(nodes.iter().all(|n| n.tier == Some(4)));
    assert!(nodes
        .iter()
        .all(|n| n.hmat.is_none() && n.hmat_cpu.is_none()));
    assert_eq!(nodes[0].distances, [10, 11, 12, 12, 21, 21, 21, 21]);
    assert_eq!(nodes[5].distances, [21, 21, 21, 21, 11, 10, 12, 12]);
    assert_eq!(tiering.tiers.len(), 1);
}

#[test]
fn a_kernel_without_weighted_interleave_or_memory_tiers() {
    let t = Tree::new();
    t.node(0, "0-3", 16, "10 20");
    t.node(1, "", 16, "20 10");
    let (nodes, tiering) = t.detect("");
    assert_eq!(tiering, MemoryTiering::default());
    assert!(tiering.weighted_interleave.is_none());
    assert_eq!(kinds(&nodes), [MemoryKind::Dram, MemoryKind::Unknown]);
    assert!(nodes.iter().all(|n| n.tier.is_none()));
}

#[test]
fn an_empty_sysfs_gets_the_single_synthetic_node() {
    let t = Tree::new();
    let (nodes, _) = t.detect("");
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].cpus, [0]);
    assert_eq!(nodes[0].kind, MemoryKind::Dram);
}

#[test]
fn this_machine_its_cpu_nodes_are_dram_and_tiered_where_the_kernel_tiers() {
    let tiering = MemoryTiering::detect();
    let nodes = super::detect_numa(NumaContext {
        online_cpus: &[0],
        mem_total: 1 << 30,
        mem_free: 1 << 29,
        cpu_model: "",
        tiers: &tiering.tiers,
    });
    let tiered = Path::new("/sys/devices/virtual/memory_tiering").is_dir();
    for node in &nodes {
        if node.has_cpus() && ![MemoryKind::Cxl, MemoryKind::PmemAsRam].contains(&node.kind) {
            assert_eq!(node.kind, MemoryKind::Dram, "{node:?}");
        }
        if tiered && node.has_memory() && !tiering.tiers.is_empty() {
            assert!(node.tier.is_some(), "{node:?} not in {:?}", tiering.tiers);
        }
    }
}
