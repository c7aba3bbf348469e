//! How a run drives memory-level parallelism: its sampling policy in words, its buffer,
//! and the measurement through the session.

use super::{measure, MlpConfig, MlpResult};
use crate::experiments::{pages_for, Experiment, Results};
use crate::session::context::Session;
use crate::topology::Machine;
use crate::units::Bytes;

impl Experiment for MlpConfig {
    type Result = MlpResult;

    fn sampling(&self) -> Option<String> {
        Some(format!(
            "mlp: a warm-up lap, then {} trials of ~{:.0} ms per level × chains (grid: fewer, \
             shorter trials); median",
            self.repetitions,
            self.trial_ns / 1e6
        ))
    }

    fn hugepages(&self, _machine: &Machine, page: u64) -> u64 {
        pages_for(self.arena_bytes(), page)
    }

    fn measure(&self, s: &mut Session, _earlier: &Results) -> anyhow::Result<MlpResult> {
        let arena = s.allocate(Bytes(self.arena_bytes()))?;
        Ok(measure(self, &arena, s.timer, s.core_hz(), s.progress))
    }
}
