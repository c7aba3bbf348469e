//! What `pages record`'s reader should know beside its regions, as kinds with their
//! numbers (worded in `pages::view::record_notes`); here, below both the record and its
//! sources, which make them.

use serde::{Deserialize, Serialize};

/// One note of `pages record`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RecordNote {
    /// The kernel dropped sample records (ring buffer full) or throttled sampling.
    LostSamples { lost: u64, throttled: u64 },
    /// No sample carried a TLB outcome: nothing could be ranked.
    NoTlbOutcome,
    /// The command ended before the first sample.
    BeforeFirstSample { elapsed_s: f64, interval_ms: u64 },
    /// The adaptive interval was shortened from `tried_ms` to `interval_ms`; the counts
    /// of the first `dropped_s` are left out of the ranking.
    IntervalShortened {
        tried_ms: Vec<u64>,
        interval_ms: u64,
        dropped_s: f64,
    },
    /// The preload library was not loaded in every process.
    PreloadMissing,
    /// Regions in hugetlb pages, whose accessed bits smaps does not report.
    HugetlbUnseen,
    /// `regions` regions counted (nearly) every page in every interval: a draw.
    /// `at_floor`: even at the shortest interval memscope samples at.
    Saturated {
        regions: usize,
        interval_ms: u64,
        at_floor: bool,
    },
    /// No access was seen at all.
    NoAccess,
    /// A sentence: the notes of reports written before the notes had kinds.
    #[serde(untagged)]
    Said(String),
}
