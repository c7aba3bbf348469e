//! How a run drives the cache-miss-impact table: its sampling policy in words, its buffer,
//! and the measurement, which builds on the latency ladder measured before it.

use super::{measure, MissImpactConfig, MissImpactResult, COUNTED_TRIALS};
use crate::experiments::{pages_for, Experiment, Results};
use crate::session::context::Session;
use crate::topology::Machine;
use crate::units::Bytes;

impl Experiment for MissImpactConfig {
    type Result = MissImpactResult;

    fn sampling(&self) -> Option<String> {
        Some(format!(
            "miss impact: per footprint × pattern a warm-up lap, then {} trials of ~{:.0} ms \
             (median ns per access), then one counted pass through every line, repeated to \
             last at least {:.0} trials, with the miss counters, page faults and task clock \
             on; AMAT from the latency ladder's levels",
            self.repetitions,
            self.trial_ns / 1e6,
            COUNTED_TRIALS
        ))
    }

    fn hugepages(&self, _machine: &Machine, page: u64) -> u64 {
        pages_for(self.arena_bytes(), page)
    }

    fn measure(&self, s: &mut Session, earlier: &Results) -> anyhow::Result<MissImpactResult> {
        let Some(latency) = &earlier.latency else {
            anyhow::bail!("the cache-miss-impact table needs the latency ladder's levels");
        };
        let arena = s.allocate(Bytes(self.arena_bytes()))?;
        Ok(measure(
            self,
            &arena,
            &latency.levels,
            s.timer,
            s.machine,
            s.progress,
        ))
    }
}
