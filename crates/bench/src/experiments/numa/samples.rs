//! Small synthetic `numa` results for the view's tests: two nodes, one node, two sockets
//! with a CXL expander each (illustrative figures, not a measurement), an empty result, and
//! one with NaN figures, missing values and ragged matrices.

use super::{HmatCell, HmatClass, MemoryColumn, NumaResult};
use crate::kernels::stream::Isa;
use crate::topology::tiers::MemoryKind;
use crate::units::MIB;

/// A DRAM column with CPUs of its own.
fn dram(node: usize) -> MemoryColumn {
    MemoryColumn {
        node,
        kind: MemoryKind::Dram,
        tier: None,
        cpu_less: false,
        touched_from: node,
        latency_vs_local_dram: None,
        bandwidth_vs_local_dram: None,
    }
}

/// Two nodes: local 90 / 91 ns and 40 / 41 GB/s, remote 140 / 142 ns and 25 / 24 GB/s.
pub fn numa() -> NumaResult {
    NumaResult {
        nodes: vec![0, 1],
        rows: vec![0, 1],
        columns: vec![0, 1],
        latency_ns: vec![vec![90.0, 140.0], vec![142.0, 91.0]],
        read_gb_per_s: vec![vec![40.0, 25.0], vec![24.0, 41.0]],
        read_overlap: vec![vec![0.99, 0.98], vec![0.97, 0.99]],
        remote_local_latency_ratio: Some(1.56),
        remote_local_bandwidth_ratio: Some(0.60),
        distances: vec![vec![10, 21], vec![21, 10]],
        threads_per_node: 4,
        latency_bytes: 256 * MIB,
        bandwidth_bytes: 128 * MIB,
        placement_verified: vec![vec![Some(1.0), Some(0.998)], vec![Some(0.999), None]],
        note: None,
        random_latency_ns: vec![vec![105.0, 171.0], vec![173.0, 106.0]],
        page_local_window_pages: 64,
        cpus: vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]],
        isa: Isa::Avx2,
        max_spread_pct: 2.5,
        memory: vec![dram(0), dram(1)],
        hmat: Vec::new(),
    }
}

/// One node: a 1 × 1 matrix and the note saying why nothing remote was measured.
pub fn numa_single_node() -> NumaResult {
    NumaResult {
        nodes: vec![0],
        rows: vec![0],
        columns: vec![0],
        latency_ns: vec![vec![95.0]],
        read_gb_per_s: vec![vec![38.5]],
        read_overlap: vec![vec![1.0]],
        remote_local_latency_ratio: None,
        remote_local_bandwidth_ratio: None,
        distances: vec![vec![10]],
        threads_per_node: 2,
        placement_verified: vec![vec![Some(1.0)]],
        note: Some("one NUMA node: there is no remote memory to measure".to_string()),
        random_latency_ns: vec![vec![112.0]],
        cpus: vec![vec![0, 1]],
        isa: Isa::Avx512,
        max_spread_pct: 14.0,
        memory: vec![dram(0)],
        ..numa()
    }
}

/// Nothing measured: every matrix empty, no spread.
pub fn empty_numa() -> NumaResult {
    NumaResult {
        nodes: Vec::new(),
        rows: Vec::new(),
        columns: Vec::new(),
        latency_ns: Vec::new(),
        read_gb_per_s: Vec::new(),
        read_overlap: Vec::new(),
        remote_local_latency_ratio: None,
        remote_local_bandwidth_ratio: None,
        distances: Vec::new(),
        threads_per_node: 0,
        latency_bytes: 0,
        bandwidth_bytes: 0,
        placement_verified: Vec::new(),
        note: None,
        random_latency_ns: Vec::new(),
        page_local_window_pages: 0,
        cpus: Vec::new(),
        isa: Isa::Portable,
        max_spread_pct: f64::NAN,
        memory: Vec::new(),
        hmat: Vec::new(),
    }
}

/// Two sockets (DRAM nodes 0 and 1) and a CXL expander behind each (node 2 on socket 0,
/// node 3 on socket 1), four readers per node. Illustrative figures in the proportions CXL
/// studies report (a near CXL node at about 2.3× the latency and 0.45× the bandwidth of
/// local DRAM), with the HMAT and SLIT a firmware would give: not a measurement.
pub fn numa_cxl() -> NumaResult {
    let cxl = |node: usize, from: usize, latency: f64, bandwidth: f64| MemoryColumn {
        node,
        kind: MemoryKind::Cxl,
        tier: Some(22),
        cpu_less: true,
        touched_from: from,
        latency_vs_local_dram: Some(latency),
        bandwidth_vs_local_dram: Some(bandwidth),
    };
    let dram = |node: usize| MemoryColumn {
        tier: Some(4),
        ..dram(node)
    };
    let firmware = |latency: u64, bandwidth: u64| {
        Some(HmatCell {
            class: HmatClass::Access1,
            read_latency_ns: Some(latency),
            write_latency_ns: Some(latency),
            read_bandwidth_mb_s: Some(bandwidth),
            write_bandwidth_mb_s: Some(bandwidth * 3 / 4),
        })
    };
    NumaResult {
        nodes: vec![0, 1, 2, 3],
        rows: vec![0, 1],
        columns: vec![0, 1, 2, 3],
        latency_ns: vec![
            vec![112.0, 196.0, 258.0, 371.0],
            vec![195.0, 113.0, 369.0, 262.0],
        ],
        read_gb_per_s: vec![vec![60.0, 38.0, 27.0, 17.5], vec![37.5, 61.0, 17.0, 27.5]],
        read_overlap: vec![vec![0.99; 4]; 2],
        remote_local_latency_ratio: Some(1.74),
        remote_local_bandwidth_ratio: Some(0.62),
        distances: vec![vec![10, 21, 14, 24], vec![21, 10, 24, 14]],
        threads_per_node: 4,
        latency_bytes: 256 * MIB,
        bandwidth_bytes: 64 * MIB,
        placement_verified: vec![vec![Some(1.0); 4]; 2],
        note: None,
        random_latency_ns: vec![
            vec![131.0, 221.0, 297.0, 418.0],
            vec![219.0, 133.0, 415.0, 301.0],
        ],
        page_local_window_pages: 64,
        cpus: vec![vec![31, 30, 29, 28], vec![63, 62, 61, 60]],
        isa: Isa::Avx2,
        max_spread_pct: 1.8,
        memory: vec![
            dram(0),
            dram(1),
            cxl(2, 0, 2.30, 0.45),
            cxl(3, 1, 2.32, 0.45),
        ],
        hmat: vec![
            vec![firmware(110, 120_000), None, firmware(250, 32_000), None],
            vec![None, firmware(110, 120_000), None, firmware(250, 32_000)],
        ],
    }
}

/// The two-node sample with NaN figures, missing values and ragged matrices.
pub fn nan_numa() -> NumaResult {
    let mut n = numa();
    n.latency_ns[0][1] = f64::NAN;
    n.read_gb_per_s[1].pop();
    n.remote_local_latency_ratio = Some(f64::NAN);
    n.remote_local_bandwidth_ratio = None;
    n.placement_verified = vec![vec![None, Some(f64::NAN)]];
    n.random_latency_ns = vec![vec![f64::NAN]];
    n.cpus = vec![vec![], vec![4]];
    n.max_spread_pct = f64::INFINITY;
    n
}
