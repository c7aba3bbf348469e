//! How a run drives the stride matrix: its sampling policy in words, its buffer, and the
//! measurement through the session.

use super::{measure, StrideConfig, StrideResult};
use crate::experiments::{pages_for, Experiment, Results};
use crate::session::context::Session;
use crate::topology::Machine;
use crate::units::Bytes;

impl Experiment for StrideConfig {
    type Result = StrideResult;

    fn sampling(&self) -> Option<String> {
        Some(format!(
            "stride: a warm-up pass, then {} trials of ~{:.1} ms per row; median",
            self.repetitions,
            self.trial_ns / 1e6
        ))
    }

    fn counted(&self) -> Option<&'static str> {
        self.counters.then_some("stride row")
    }

    fn hugepages(&self, _machine: &Machine, page: u64) -> u64 {
        pages_for(self.arena_bytes(), page)
    }

    fn measure(&self, s: &mut Session, _earlier: &Results) -> anyhow::Result<StrideResult> {
        let arena = s.allocate(Bytes(self.arena_bytes()))?;
        let (result, found) = measure(self, &arena, s.timer, s.machine, s.progress);
        s.warn(found);
        Ok(result)
    }
}
