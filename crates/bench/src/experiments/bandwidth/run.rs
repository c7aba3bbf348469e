//! How a run drives the bandwidth table: its sampling policy in words, the buffers of its
//! threads, and the measurement with its not-concurrent warnings.

use super::{figures, measure, remeasure_rows, BandwidthConfig, BandwidthResult};
use crate::experiments::{pages_for, Experiment, Results};
use crate::platform::cpu_time::MIN_OVERLAP;
use crate::platform::team;
use crate::session::context::Session;
use crate::session::warnings::WarningKind;
use crate::topology::Machine;
use crate::view::figure::Remeasured;

impl BandwidthConfig {
    fn most_threads(&self) -> usize {
        self.thread_counts.iter().copied().max().unwrap_or(1)
    }
}

impl Experiment for BandwidthConfig {
    type Result = BandwidthResult;

    fn sampling(&self) -> Option<String> {
        let counts = self
            .thread_counts
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>();
        let mut extra = String::new();
        if let Some(ladder) = &self.ladder {
            extra += &format!(
                "; thread counts {} (whole NUMA nodes of {} in turn)",
                counts.join(", "),
                ladder.nodes
            );
        }
        if let Some(node) = self.membind {
            extra += &format!("; every array bound to NUMA node {node}");
        }
        Some(format!(
            "bandwidth: one untimed pass, then {} trials of ~{:.0} ms (repetitions doubled \
             until a trial lasts a quarter of that), all threads released together, each \
             trial timed from the first thread's start to the last one's end on a clock all \
             CPUs share; a trial whose threads overlapped less than {:.0}% (their CPU time \
             ÷ threads × the trial; one thread: its time on the CPU) is run again (up to {}× \
             the trials), and a row none of whose trials reach it is marked !; median and \
             1.4826·MAD/median{extra}",
            self.repetitions,
            self.trial_ns / 1e6,
            MIN_OVERLAP * 100.0,
            team::ATTEMPTS_PER_TRIAL
        ))
    }

    fn hugepages(&self, machine: &Machine, page: u64) -> u64 {
        // Each count's team maps its arenas afresh: the most any count needs at once.
        (self.thread_counts.iter())
            .map(|&t| t as u64 * pages_for(self.largest_arena_bytes(machine, t), page))
            .max()
            .unwrap_or(0)
    }

    fn measure(&self, s: &mut Session, _earlier: &Results) -> anyhow::Result<BandwidthResult> {
        let result = measure(self, s.timer, s.machine, s.progress)?;
        s.used_cpus(result.cpus.iter().copied().take(self.most_threads()));
        s.warn(WarningKind::not_concurrent(
            "bandwidth row",
            result.rows.iter().chain(&result.sweep).map(|r| r.overlap),
        ));
        Ok(result)
    }

    fn remeasure(
        &self,
        s: &mut Session,
        result: &BandwidthResult,
    ) -> anyhow::Result<Vec<Remeasured>> {
        let pairs = remeasure_rows(self, result, s.timer, s.machine, s.progress)?;
        Ok(pairs
            .into_iter()
            .map(|(before, now)| {
                let figure = figures::row_figure(&before);
                Remeasured {
                    key: figure.key,
                    label: figure.label,
                    unit: figure.unit,
                    before: before.gb_per_s,
                    after: now.gb_per_s,
                }
            })
            .collect())
    }
}
