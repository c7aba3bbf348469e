//! How a run drives the NUMA matrix: the buffers of a node's threads and the measurement
//! with its not-concurrent warnings.

use super::{measure, NodeThreads, NumaConfig, NumaResult};
use crate::experiments::{pages_for, Experiment, Results};
use crate::session::context::Session;
use crate::session::warnings::WarningKind;
use crate::topology::Machine;

impl Experiment for NumaConfig {
    type Result = NumaResult;

    fn sampling(&self) -> Option<String> {
        Some(format!(
            "numa: per node × node cell, a page-local and a random chase ({} trials of ~{:.1} \
             ms after two trials' worth of warm-up) and a read-bandwidth team ({} trials timed \
             over their union, like bandwidth's); median",
            self.repetitions,
            self.trial_ns / 1e6,
            self.repetitions
        ))
    }

    fn hugepages(&self, machine: &Machine, page: u64) -> u64 {
        let threads = match self.threads_per_node {
            NodeThreads::Count(n) => n,
            NodeThreads::All => machine
                .numa_nodes
                .iter()
                .map(|n| n.cpus.len())
                .max()
                .unwrap_or(1),
        } as u64;
        pages_for(self.latency_bytes, page).max(threads * pages_for(self.bandwidth_bytes, page))
    }

    fn measure(&self, s: &mut Session, _earlier: &Results) -> anyhow::Result<NumaResult> {
        let result = measure(self, s.machine, s.timer, s.progress)?;
        s.working_set = s.working_set.max(result.latency_bytes);
        s.warn(WarningKind::not_concurrent(
            "NUMA cell",
            result.read_overlap.iter().flatten().copied(),
        ));
        Ok(result)
    }
}
