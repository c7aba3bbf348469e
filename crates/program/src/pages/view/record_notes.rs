//! `pages record`'s notes in words.

use crate::pages::record::RecordNote;

impl RecordNote {
    /// The note as the terminal and HTML reports say it.
    pub fn text(&self) -> String {
        match self {
            RecordNote::LostSamples { lost, throttled } => format!(
                "the kernel dropped {lost} sample record(s) (ring buffer full) and throttled \
                 sampling {throttled} time(s): counts are a lower bound, spread as the losses \
                 fell"
            ),
            RecordNote::NoTlbOutcome => {
                "no sample carried a TLB outcome: this CPU's memory events do not report TLB \
                 hits and misses, so no region is ranked"
                    .to_string()
            }
            RecordNote::BeforeFirstSample {
                elapsed_s,
                interval_ms,
            } => format!(
                "the command ended after {elapsed_s:.3} s, before the first sample (every \
                 {interval_ms} ms): nothing to rank; a longer run, or a shorter --interval, \
                 gives regions"
            ),
            RecordNote::IntervalShortened {
                tried_ms,
                interval_ms,
                dropped_s,
            } => format!(
                "the hottest regions counted every page in every interval of {} ms: the \
                 interval was shortened to {interval_ms} ms (the counts of the first \
                 {dropped_s:.3} s, made at the longer intervals, are left out of the ranking)",
                tried_ms
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            RecordNote::PreloadMissing => {
                "memscope's preload library was not loaded in every process (a static or \
                 setuid program ignores LD_PRELOAD): there, a mapping's count is spread evenly \
                 over its 2 MiB regions"
                    .to_string()
            }
            RecordNote::HugetlbUnseen => {
                "some regions are in hugetlb pages, whose accessed bits /proc/PID/smaps does \
                 not report: the refs source sees no access there (their value is 0)"
                    .to_string()
            }
            RecordNote::Saturated {
                regions,
                interval_ms,
                at_floor: true,
            } => format!(
                "{regions} regions counted (nearly) every page in every interval even at \
                 {interval_ms} ms, the shortest interval memscope samples at: this program \
                 touches them all too often to tell a hot region from a lukewarm one, so their \
                 order is only the address order (a draw)"
            ),
            RecordNote::Saturated {
                regions,
                interval_ms,
                at_floor: false,
            } => format!(
                "{regions} regions counted (nearly) every page in every interval: at \
                 --interval {interval_ms} ms this program touches them all too often to tell a \
                 hot region from a lukewarm one, so their order is only the address order; a \
                 shorter interval (--interval {}) separates them",
                (interval_ms / 10).max(1)
            ),
            RecordNote::NoAccess => {
                "no access was seen: the command touched no sampled memory".to_string()
            }
            RecordNote::Said(text) => text.clone(),
        }
    }
}
