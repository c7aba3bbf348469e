//! What the access sources hand to `pages record`: sampled accesses with an address (a
//! PMU's precise sampling) or spans of a process's memory with an access level (DAMON
//! regions, per-mapping accessed bits). Binning into 2 MiB regions happens elsewhere.

use serde::{Deserialize, Serialize};

/// The TLB outcome of one sampled access, as the PMU's data source reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TlbOutcome {
    /// Hit in the first-level dTLB.
    L1Hit,
    /// Missed the first level, hit the second-level (shared) TLB.
    L2Hit,
    /// Missed every TLB level: a page walk.
    Miss,
    /// Hit, level not said.
    Hit,
    /// The sample carries no TLB information (or an event whose outcome is the miss).
    Unknown,
}

impl TlbOutcome {
    /// Whether the access missed a TLB level (first level or all).
    pub(super) fn missed_a_level(self) -> bool {
        matches!(self, TlbOutcome::L2Hit | TlbOutcome::Miss)
    }
}

/// One sampled memory access from precise sampling (PEBS, IBS op, SPE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemSample {
    pub pid: u32,
    pub tid: u32,
    /// The data's virtual address.
    pub addr: u64,
    /// The sampled cost in cycles (load latency), 0 when not given.
    pub weight: u64,
    pub tlb: TlbOutcome,
    /// When, in perf's clock (nanoseconds, arbitrary origin); 0 when not given.
    pub time_ns: u64,
    /// The sampling event already selects TLB misses (e.g. MEM_INST_RETIRED.STLB_MISS_LOADS).
    pub event_is_tlb_miss: bool,
}

/// A span `[start, end)` of one process's virtual memory and how accessed it was over
/// one interval: DAMON's `nr_accesses` of a region, or the 4 KiB pages of a mapping whose
/// accessed bit was found set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct AccessSpan {
    pub pid: u32,
    pub start: u64,
    pub end: u64,
    /// The source's access level for the span (its unit is the source's).
    pub value: f64,
}
