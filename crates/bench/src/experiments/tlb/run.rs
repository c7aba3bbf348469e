//! How a run drives the TLB experiment: the huge-page buffers it needs and the
//! measurement through the session (it maps its own buffers per page size).

use super::{measure, TlbConfig, TlbResult};
use crate::experiments::{Experiment, Results};
use crate::platform::arena::PagePolicy;
use crate::session::context::Session;
use crate::topology::Machine;

impl Experiment for TlbConfig {
    type Result = TlbResult;

    fn sampling(&self) -> Option<String> {
        Some(format!(
            "tlb: per page count ({} points per octave, one line per page) and for its dense \
             control (as many consecutive lines), a warm-up lap then {} trials of ~{:.1} ms of \
             a random chase; a layout spreading above {:.0}% is laid out again with another \
             seed and its trials added; median",
            self.points_per_octave,
            self.repetitions,
            self.trial_ns / 1e6,
            crate::experiments::shared::sampling::UNSTABLE_SPREAD_PCT
        ))
    }

    fn counted(&self) -> Option<&'static str> {
        self.counters.then_some("tlb row")
    }

    /// The huge-page sweep, the MLP and the SAXPY buffers, one after the other; none when
    /// the huge-page curve does not use hugetlbfs.
    fn hugepages(&self, _machine: &Machine, page: u64) -> u64 {
        if self.huge != PagePolicy::Huge2M {
            return 0;
        }
        (self.max_pages_huge * PagePolicy::Huge2M.page_bytes())
            .max(self.mlp_bytes)
            .max(self.saxpy_footprint)
            .div_ceil(page)
            + 2
    }

    fn measure(&self, s: &mut Session, _earlier: &Results) -> anyhow::Result<TlbResult> {
        let (result, found) = measure(self, s.timer, s.machine, s.progress)?;
        s.warn(found);
        Ok(result)
    }
}
