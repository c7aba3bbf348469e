//! TLB reach and miss cost: a chase that touches one line per page, over more and more
//! pages, with 4 KiB and with 2 MiB pages; the knees of the curve are the TLB levels. Also
//! what huge pages buy a real kernel (SAXPY) and the misses in flight (MLP).

use serde::{Deserialize, Serialize};

/// `experiments.tlb` of the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TlbResult {
    /// One row per page size × page count.
    pub rows: Vec<TlbRow>,
    /// The TLB levels found from each page size's curve.
    pub levels: Vec<TlbLevel>,
    /// SAXPY over the same footprint: sequential, one 4 KiB page apart, and with huge
    /// pages.
    pub saxpy: Vec<SaxpyTlbRow>,
    /// DRAM parallelism with 4 KiB and with huge pages.
    pub mlp_by_page_size: Vec<MlpByPageSize>,
    /// Entries × page size per TLB level, from CPUID and from the measurement.
    pub reach: Vec<TlbReach>,
}

/// One point: `pages` pages, one line touched in each, in a random cyclic order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TlbRow {
    pub page_bytes: u64,
    pub pages: u64,
    /// Median load-to-use latency of the one-line-per-page chase, ns.
    pub ns: f64,
    pub cycles: f64,
    /// The same number of lines packed densely into as few pages as possible (the data
    /// caches' share of `ns`), ns.
    pub dense_ns: f64,
    /// `ns − dense_ns`: what the TLB adds per access at this page count, ns.
    pub tlb_ns: f64,
    pub spread_pct: f64,
}

/// One TLB level found from the data.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TlbLevel {
    pub page_bytes: u64,
    /// "L1 DTLB", "L2 DTLB", … in order.
    pub name: String,
    /// Pages covered before the next knee (None for the page-walk region).
    pub entries: Option<u64>,
    /// entries × page_bytes.
    pub reach_bytes: Option<u64>,
    /// What a miss in this level costs over a hit in it: the step to the next plateau, ns.
    pub miss_ns: Option<f64>,
    pub miss_cycles: Option<f64>,
    /// The entries CPUID reports for this level and page size, if any.
    pub cpuid_entries: Option<u32>,
}

/// SAXPY (y = a·x + y) over the same footprint in one access pattern.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SaxpyTlbRow {
    /// "stride 1", "stride 4 KiB", "stride 4 KiB, huge pages" …
    pub pattern: String,
    pub page_bytes: u64,
    pub stride_bytes: u64,
    /// x and y together, bytes.
    pub footprint_bytes: u64,
    /// Time for one pass over every element, ms.
    pub pass_ms: f64,
    /// ns per element updated.
    pub ns_per_access: f64,
}

/// DRAM MLP with one page size.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MlpByPageSize {
    pub page_bytes: u64,
    pub bytes: u64,
    pub chains: u32,
    pub ns_per_load: f64,
    pub parallelism: f64,
}

/// Entries × page size of one TLB level.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TlbReach {
    pub name: String,
    pub page_bytes: u64,
    pub cpuid_entries: Option<u32>,
    pub cpuid_reach_bytes: Option<u64>,
    pub measured_entries: Option<u64>,
    pub measured_reach_bytes: Option<u64>,
}
