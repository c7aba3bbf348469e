//! How a run drives interleave: its sampling policy in words, its buffers (base pages, so
//! no hugetlbfs pool), and the measurement with its not-concurrent warnings.

use super::{measure, InterleaveConfig, InterleaveResult};
use crate::experiments::{Experiment, Results};
use crate::session::context::Session;
use crate::session::warnings::WarningKind;
use crate::topology::Machine;

impl Experiment for InterleaveConfig {
    type Result = InterleaveResult;

    fn sampling(&self) -> Option<String> {
        Some(format!(
            "interleave: per ratio, pages moved where the weights deal them, then {} \
             thread(s) on node {} reading together ({} trials of ~{:.1} ms after one untimed \
             pass); median{}",
            self.cpus.len(),
            self.cpu_node,
            self.repetitions,
            self.trial_ns / 1e6,
            if self.refine {
                "; up to two ratios more around the best"
            } else {
                ""
            }
        ))
    }

    fn hugepages(&self, _machine: &Machine, _page: u64) -> u64 {
        // Base pages only: a page is the unit the weights deal.
        0
    }

    fn measure(&self, s: &mut Session, _earlier: &Results) -> anyhow::Result<InterleaveResult> {
        let result = measure(self, s.timer, s.progress)?;
        s.used_cpus(self.cpus.iter().copied());
        s.warn(WarningKind::not_concurrent(
            "interleave ratio",
            result
                .mixes
                .iter()
                .flat_map(|m| m.points.iter().map(|p| p.overlap)),
        ));
        Ok(result)
    }
}
