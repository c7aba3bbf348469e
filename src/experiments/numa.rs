//! NUMA: a node × node matrix of idle latency and read bandwidth, with the measuring
//! threads on node i and the memory bound to node j (mbind through the system call).

use serde::{Deserialize, Serialize};

/// `experiments.numa` of the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NumaResult {
    /// Node ids, in the order of the matrices' rows and columns.
    pub nodes: Vec<usize>,
    /// latency_ns[i][j]: a thread on node i chasing through memory on node j, ns.
    pub latency_ns: Vec<Vec<f64>>,
    /// read_gb_per_s[i][j]: read bandwidth of the threads on node i from node j.
    pub read_gb_per_s: Vec<Vec<f64>>,
    /// Mean remote latency / mean local latency (None on one node).
    pub remote_local_latency_ratio: Option<f64>,
    /// Mean remote bandwidth / mean local bandwidth (None on one node).
    pub remote_local_bandwidth_ratio: Option<f64>,
    /// The kernel's distance table (node_distance[i][j]) for comparison.
    pub distances: Vec<Vec<u32>>,
    /// Threads per node in the bandwidth cells.
    pub threads_per_node: usize,
    /// Working set of each latency chase and each bandwidth thread, bytes.
    pub latency_bytes: u64,
    pub bandwidth_bytes: u64,
    /// Fraction of each cell's pages verified on the intended node (get_mempolicy).
    pub placement_verified: Vec<Vec<Option<f64>>>,
    /// Why there is nothing remote to measure, on a single-node machine.
    pub note: Option<String>,
}
