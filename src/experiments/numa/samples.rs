//! Small synthetic `numa` results for the view's tests: two nodes, one node, an empty
//! result, and one with NaN figures, missing values and ragged matrices.

use super::NumaResult;
use crate::kernels::stream::Isa;
use crate::units::MIB;

/// Two nodes: local 90 / 91 ns and 40 / 41 GB/s, remote 140 / 142 ns and 25 / 24 GB/s.
pub fn numa() -> NumaResult {
    NumaResult {
        nodes: vec![0, 1],
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
    }
}

/// One node: a 1 × 1 matrix and the note saying why nothing remote was measured.
pub(super) fn numa_single_node() -> NumaResult {
    NumaResult {
        nodes: vec![0],
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
        ..numa()
    }
}

/// Nothing measured: every matrix empty, no spread.
pub(super) fn empty_numa() -> NumaResult {
    NumaResult {
        nodes: Vec::new(),
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
    }
}

/// The two-node sample with NaN figures, missing values and ragged matrices.
pub(super) fn nan_numa() -> NumaResult {
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
