//! How a run drives `files`: no buffers of its own in the arena (the page cache and the
//! device are what is measured), the measurement with its progress.

use super::{measure, FilesConfig, FilesResult};
use crate::error::UsageError;
use crate::experiments::shared::level::Level;
use crate::experiments::{Experiment, Results};
use crate::session::context::Session;
use crate::topology::Machine;

impl Experiment for FilesConfig {
    type Result = FilesResult;

    fn sampling(&self) -> Option<String> {
        Some(format!(
            "files: per size {} trials of whole-file reads (passes repeated for ~{:.0} ms per \
             trial), warm after one untimed read, cold with O_DIRECT where accepted; {} random \
             4 KiB reads per queue depth; median",
            self.repetitions,
            self.trial_ns / 1e6,
            self.random_reads
        ))
    }

    fn hugepages(&self, _machine: &Machine, _page: u64) -> u64 {
        0
    }

    fn measure(&self, s: &mut Session, earlier: &Results) -> anyhow::Result<FilesResult> {
        let mut result = measure(self, s.progress).map_err(|e| UsageError::CannotProceed(e.0))?;
        // One thread copying in DRAM, from the bandwidth table of the same run; the table
        // counts bytes read + written, a copy moves half of them.
        result.dram_copy_gb_per_s = earlier.bandwidth.as_ref().and_then(|b| {
            b.rows
                .iter()
                .filter(|r| r.level == Level::Dram && r.threads == 1 && r.kernel.name() == "copy")
                .map(|r| r.gb_per_s / 2.0)
                .reduce(f64::max)
        });
        Ok(result)
    }
}
