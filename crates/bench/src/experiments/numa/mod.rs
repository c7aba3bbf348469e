//! NUMA: a matrix of idle latency and read bandwidth with the measuring threads on a node
//! with CPUs (a row) and the memory bound to a node with memory (a column) through mbind.
//!
//! Rows are the selected nodes with CPUs this process may use; columns the selected nodes
//! with memory it may use. A node without CPUs (a CXL expander, HBM in flat mode, PMEM as
//! RAM) is a column only, measured from every row; a node with CPUs and no memory is a row
//! only. Each column is labelled with the node's kind and memory tier, and each cell carries
//! the firmware's HMAT figures that apply to it beside the measured ones. This file holds
//! the result and the configuration; `plan` resolves which nodes are rows and columns,
//! `measure` runs the cells, `summary` derives ratios, labels and the note from them.
//!
//! Column by column: the buffers of a column are mapped with an MPOL_BIND policy for its
//! node and first touched by a thread on that node, or, for a column without CPUs, on the
//! row nearest to it (so their page tables are near too), then every row measures them
//! from its own pinned threads (the chase buffer first; it is unmapped before the reading
//! threads' buffers are mapped):
//! - latency: one thread on the row follows a page-local chase (random lines within
//!   64-page windows: cache misses without TLB misses, as `latency`'s DRAM level) and then
//!   a random chase over the whole buffer (TLB misses included). The chain continues from
//!   cell to cell, so no cell re-reads lines that another node's caches may still hold.
//! - bandwidth: `threads_per_node` threads on the row, each reading its own buffer on the
//!   column's node with the registry's `read` kernel, released together; a trial lasts
//!   until the slowest is done (`platform::team`).
//!
//! Each cell's placement is checked afterwards with get_mempolicy on a sample of pages. The
//! remote/local ratios are the mean of the off-diagonal cells over the mean of the diagonal,
//! over the nodes that are both a row and a column; a column without CPUs gets its own
//! ratios against the local DRAM of its nearest row. One node gives the 1×1 matrix and a
//! note that there is nothing remote.

pub mod figures;
mod measure;
pub mod params;
mod plan;
mod run;
#[cfg(any(test, feature = "test-support"))]
pub mod samples;
mod summary;
pub mod view;

use serde::{Deserialize, Serialize};

pub use measure::measure;

use crate::error::UsageError;
use crate::experiments::shared::sizing::round_to_granule;
use crate::kernels::stream::Isa;
use crate::platform::arena::PagePolicy;
use crate::topology::tiers::MemoryKind;
use crate::topology::Machine;
use crate::units::MIB;

/// `experiments.numa` of the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NumaResult {
    /// Every node of the matrix, as a row, a column or both, in the machine's order. In a
    /// report from before rows and columns were told apart it is both axes.
    pub nodes: Vec<usize>,
    /// Nodes with CPUs whose threads measured: the matrices' rows (use `row_nodes`, which
    /// reads an older report's `nodes` when this is missing).
    #[serde(default)]
    pub rows: Vec<usize>,
    /// Nodes with memory that was measured: the matrices' columns (use `column_nodes`).
    #[serde(default)]
    pub columns: Vec<usize>,
    /// latency_ns[r][c]: a thread on row node r chasing through memory on column node c, ns.
    pub latency_ns: Vec<Vec<f64>>,
    /// read_gb_per_s[r][c]: read bandwidth of the threads on row node r from column node c.
    pub read_gb_per_s: Vec<Vec<f64>>,
    /// read_overlap[r][c]: how much the reading threads of the cell ran together (median
    /// over its trials of their CPU time ÷ (threads × the trial's union interval); with one
    /// thread, the share of the trial it was on its CPU). Below 0.9 the note names the
    /// cell: its bandwidth is what the threads got, not that of threads reading together.
    #[serde(default)]
    pub read_overlap: Vec<Vec<f64>>,
    /// Mean remote latency / mean local latency over the nodes that are both a row and a
    /// column (None below two such nodes).
    pub remote_local_latency_ratio: Option<f64>,
    /// Mean remote bandwidth / mean local bandwidth, over the same nodes.
    pub remote_local_bandwidth_ratio: Option<f64>,
    /// The kernel's distance table (node_distance[r][c]) for comparison; 0 where the
    /// kernel gives none.
    pub distances: Vec<Vec<u32>>,
    /// Threads per node in the bandwidth cells.
    pub threads_per_node: usize,
    /// Working set of each latency chase and each bandwidth thread, bytes.
    pub latency_bytes: u64,
    pub bandwidth_bytes: u64,
    /// Fraction of each cell's pages verified on the intended node (get_mempolicy).
    pub placement_verified: Vec<Vec<Option<f64>>>,
    /// What to know when reading the matrix: on a single-node machine, that there is
    /// nothing remote to measure; nodes left out or only a row or a column, and why; pages
    /// that could not be bound or were found off their node.
    pub note: Option<String>,
    /// random_latency_ns[r][c]: the same cell with a random chase over the whole buffer,
    /// so TLB misses and page walks (whose tables are on node c too) are included, ns.
    pub random_latency_ns: Vec<Vec<f64>>,
    /// Pages per window of the page-local chase behind `latency_ns`.
    pub page_local_window_pages: u64,
    /// CPUs of each row: the latency thread ran on the first, the bandwidth threads on the
    /// first `threads_per_node`.
    pub cpus: Vec<Vec<usize>>,
    /// Instruction set of the read kernel.
    pub isa: Isa,
    /// The widest robust spread (1.4826·MAD/median, %) of any cell's trials, latency or
    /// bandwidth: how far the medians can be trusted.
    pub max_spread_pct: f64,
    /// Per column: what its memory is, its tier, where its buffers were touched from and,
    /// for a column without CPUs, how it compares with local DRAM (empty in older reports).
    #[serde(default)]
    pub memory: Vec<MemoryColumn>,
    /// hmat[r][c]: the firmware's (ACPI HMAT) figures for the cell, when the row node is
    /// one of the column node's initiators (empty when the firmware gives none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hmat: Vec<Vec<Option<HmatCell>>>,
}

impl NumaResult {
    /// The matrices' row nodes (`nodes` in a report from before rows and columns).
    pub(crate) fn row_nodes(&self) -> &[usize] {
        if self.rows.is_empty() {
            &self.nodes
        } else {
            &self.rows
        }
    }

    /// The matrices' column nodes (`nodes` in a report from before rows and columns).
    pub(crate) fn column_nodes(&self) -> &[usize] {
        if self.columns.is_empty() {
            &self.nodes
        } else {
            &self.columns
        }
    }
}

/// One column of the matrix: the memory node and what is known about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryColumn {
    pub node: usize,
    /// DRAM, CXL, HBM, … as the topology tells.
    pub kind: MemoryKind,
    /// The kernel's memory tier, when it has tiers (a lower id is a faster tier).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<u32>,
    /// The node has no CPUs at all: far memory (CXL, HBM, PMEM as RAM), a column only.
    pub cpu_less: bool,
    /// The row node whose thread mapped and first touched the column's buffers: the node
    /// itself when it is a row, else the row nearest to it (smallest SLIT distance, else
    /// its HMAT initiator).
    pub touched_from: usize,
    /// For a CPU-less column: its latency from `touched_from` ÷ that row's local latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_vs_local_dram: Option<f64>,
    /// For a CPU-less column: its read bandwidth from `touched_from` ÷ that row's local
    /// bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_vs_local_dram: Option<f64>,
}

/// Which HMAT access class a cell's firmware figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HmatClass {
    /// access0: the nearest initiators of any kind.
    Access0,
    /// access1: the nearest CPUs.
    Access1,
}

impl HmatClass {
    /// "access0" or "access1", as sysfs names them.
    pub fn label(self) -> &'static str {
        match self {
            HmatClass::Access0 => "access0",
            HmatClass::Access1 => "access1",
        }
    }
}

/// The firmware's figures for one cell: from the column node's HMAT access class whose
/// initiators include the row node (access1, the CPUs, preferred).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HmatCell {
    pub class: HmatClass,
    pub read_latency_ns: Option<u64>,
    pub write_latency_ns: Option<u64>,
    /// MB/s, as the kernel gives them.
    pub read_bandwidth_mb_s: Option<u64>,
    pub write_bandwidth_mb_s: Option<u64>,
}

/// Reading threads per node in the bandwidth cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeThreads {
    Count(usize),
    /// Every CPU of the node this process may use.
    All,
}

impl NodeThreads {
    /// "1", "4" or "all".
    pub fn parse(text: &str) -> Result<NodeThreads, UsageError> {
        let trimmed = text.trim();
        if trimmed.eq_ignore_ascii_case("all") {
            return Ok(NodeThreads::All);
        }
        match trimmed.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(NodeThreads::Count(n)),
            _ => Err(UsageError::InvalidValue {
                flag: "--threads",
                value: text.to_string(),
                expected: "a number of threads per node (1 or more) or 'all'".to_string(),
            }),
        }
    }
}

/// What to measure; resolved from the command line by `plan`.
#[derive(Debug, Clone)]
pub struct NumaConfig {
    /// Nodes of the matrix (from `machine.numa_nodes`, or `--nodes`): those with CPUs this
    /// process may use are rows, those with memory it may use columns; a node with neither
    /// is left out and the note says so.
    pub nodes: Vec<usize>,
    /// Working set of the latency chase, bytes.
    pub latency_bytes: u64,
    /// Working set of each bandwidth thread, bytes.
    pub bandwidth_bytes: u64,
    pub threads_per_node: NodeThreads,
    pub pages: PagePolicy,
    /// Timed trials per cell, for latency and bandwidth each.
    pub repetitions: usize,
    /// Target length of one trial, nanoseconds (a bandwidth trial is at least one pass).
    pub trial_ns: f64,
    pub seed: u64,
}

impl NumaConfig {
    /// Defaults: every node, one reading thread per node, transparent huge pages when THP
    /// is enabled (as the other experiments; with base pages a VM's nested page walks can
    /// halve a stream's bandwidth), 9 trials of 2 ms.
    pub fn defaults(machine: &Machine) -> NumaConfig {
        let threads = NodeThreads::Count(1);
        let thp = machine.thp.enabled.offers_huge_pages();
        NumaConfig {
            nodes: machine.numa_nodes.iter().map(|n| n.id).collect(),
            latency_bytes: NumaConfig::default_latency_bytes(machine),
            bandwidth_bytes: NumaConfig::default_bandwidth_bytes(machine, threads),
            threads_per_node: threads,
            pages: if thp {
                PagePolicy::Thp
            } else {
                PagePolicy::Base
            },
            repetitions: 9,
            trial_ns: 2e6,
            seed: 0x6e75_6d61, // "numa"
        }
    }

    /// max(4 × the largest cache, 256 MiB): far beyond the caches, as `latency`'s DRAM end.
    fn default_latency_bytes(machine: &Machine) -> u64 {
        let llc = machine.largest_cache_bytes().unwrap_or(32 * MIB);
        (4 * llc).max(256 * MIB)
    }

    /// Per thread: 256 MiB for one thread; with more, their share of max(4 × the largest
    /// cache, 256 MiB) but at least 32 MiB, so many threads still read far beyond the
    /// caches without mapping gigabytes per node.
    fn default_bandwidth_bytes(machine: &Machine, threads: NodeThreads) -> u64 {
        let threads = match threads {
            NodeThreads::Count(n) => n,
            NodeThreads::All => machine
                .numa_nodes
                .iter()
                .map(|n| {
                    n.cpus
                        .iter()
                        .filter(|c| machine.allowed_cpus.contains(c))
                        .count()
                })
                .max()
                .unwrap_or(1),
        }
        .max(1) as u64;
        let total = NumaConfig::default_latency_bytes(machine);
        round_to_granule((total / threads).max(32 * MIB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_per_node_parse() {
        assert_eq!(NodeThreads::parse("all").unwrap(), NodeThreads::All);
        assert_eq!(NodeThreads::parse(" 3 ").unwrap(), NodeThreads::Count(3));
        let error = NodeThreads::parse("0").unwrap_err().to_string();
        assert!(error.contains("'0'") && error.contains("'all'"), "{error}");
        assert!(NodeThreads::parse("many").is_err());
    }

    #[test]
    fn an_older_report_reads_its_nodes_as_rows_and_columns() {
        let mut json = serde_json::to_value(samples::numa()).unwrap();
        let object = json.as_object_mut().unwrap();
        for field in ["rows", "columns", "memory", "hmat"] {
            object.remove(field);
        }
        let old: NumaResult = serde_json::from_value(json).unwrap();
        assert!(old.rows.is_empty() && old.memory.is_empty());
        assert_eq!(
            (old.row_nodes(), old.column_nodes()),
            (&[0, 1][..], &[0, 1][..])
        );
        let far = samples::numa_cxl();
        assert_eq!(
            (far.row_nodes(), far.column_nodes()),
            (&[0, 1][..], &[0, 1, 2, 3][..])
        );
    }
}
