//! How a run drives latency under load: its sampling policy in words, the chase and
//! injector buffers, and the measurement with the injectors' CPUs.

use super::{measure, LoadedConfig, LoadedResult, MAX_RETRIES, SETTLE_NS};
use crate::experiments::{pages_for, Experiment, Results};
use crate::platform::cpu_time::MIN_OVERLAP;
use crate::session::context::Session;
use crate::topology::Machine;
use crate::units::Bytes;

impl Experiment for LoadedConfig {
    type Result = LoadedResult;

    fn sampling(&self) -> Option<String> {
        Some(format!(
            "loaded: per delay, the injectors run {:.0} ms before {} chase trials of ~{:.0} ms; \
             injector bandwidth from their step counts over the same trials; a trial during \
             which the chase was preempted or the injectors ran less than {:.0}% of the time \
             is taken again (up to {} times per point); median; idle latency measured before \
             and after the curves{}",
            SETTLE_NS / 1e6,
            self.repetitions,
            self.trial_ns / 1e6,
            MIN_OVERLAP * 100.0,
            MAX_RETRIES,
            match &self.membind {
                Some(binding) => format!(
                    "; the chase's and injectors' buffers bound to NUMA node {}",
                    binding.node
                ),
                None => String::new(),
            }
        ))
    }

    fn hugepages(&self, _machine: &Machine, page: u64) -> u64 {
        let injectors = self.thread_counts.iter().copied().max().unwrap_or(0) as u64;
        pages_for(self.chase_bytes, page) + injectors * pages_for(self.injector_bytes, page)
    }

    fn measure(&self, s: &mut Session, _earlier: &Results) -> anyhow::Result<LoadedResult> {
        let node = self.membind.as_ref().map(|b| b.node);
        let arena = s.allocate_on_node(Bytes(self.chase_bytes), node)?;
        let (result, found) = measure(self, &arena, s.timer, s.core_hz(), s.progress)?;
        s.warn(found);
        s.used_cpus(result.injector_cpus.iter().copied());
        Ok(result)
    }
}
