//! How a run drives the latency ladder: its sampling policy in words, its buffer, and the
//! measurement through the session.

use super::{
    figures, measure, remeasure_bytes, remeasure_levels, LatencyConfig, LatencyResult, LAYOUT_STEP,
    UNSTABLE_SPREAD_PCT,
};
use crate::experiments::{pages_for, Experiment, Results};
use crate::session::context::Session;
use crate::topology::Machine;
use crate::units::Bytes;
use crate::view::figure::Remeasured;

impl Experiment for LatencyConfig {
    type Result = LatencyResult;

    fn sampling(&self) -> Option<String> {
        let passes = self.passes.max(1);
        let trials = self.repetitions.div_ceil(passes) * passes;
        Some(format!(
            "latency: {trials} timed trials of ~{:.0} ms per point in {passes} pass(es) through \
             the sweep, each pass a fresh random layout after a warm-up lap; median reported, \
             spread = 1.4826·MAD/median; points above {:.0}% spread get one more pass and are \
             flagged if still above",
            self.trial_ns / 1e6,
            UNSTABLE_SPREAD_PCT
        ))
    }

    fn counted(&self) -> Option<&'static str> {
        self.counters.then_some("latency point")
    }

    fn hugepages(&self, _machine: &Machine, page: u64) -> u64 {
        pages_for(self.arena_bytes, page)
    }

    fn measure(&self, s: &mut Session, _earlier: &Results) -> anyhow::Result<LatencyResult> {
        let arena = s.allocate(Bytes(self.arena_bytes))?;
        let (result, found) = measure(self, &arena, s.timer, s.machine, s.progress);
        s.warn(found);
        Ok(result)
    }

    fn remeasure(
        &self,
        s: &mut Session,
        result: &LatencyResult,
    ) -> anyhow::Result<Vec<Remeasured>> {
        let bytes = remeasure_bytes(result);
        if bytes == 0 {
            return Ok(Vec::new());
        }
        // Room for every pass's offset as the sweep had it (its arena had room to move
        // them without wrapping, except at the largest sizes), so each layout sits on
        // the cache sets it sat on in the sweep.
        let room = (self.passes as u64 + 1) * LAYOUT_STEP;
        let arena = s.allocate(Bytes((bytes + room).min(self.arena_bytes)))?;
        s.progress.start("drift pass: latency levels", 1);
        let again = remeasure_levels(self, &arena, s.timer, result);
        s.progress.finish();
        Ok(again
            .into_iter()
            .map(|(level, before, after)| Remeasured {
                key: figures::level_latency_key(&level),
                label: format!("{level} latency"),
                unit: "ns".into(),
                before,
                after,
            })
            .collect())
    }
}
