//! How a run drives the out-of-order window probe: its sampling policy in words, its
//! buffer, the check that generated code may run, and the measurement.

use super::{RobConfig, RobResult};
use crate::experiments::{pages_for, Experiment, Results};
use crate::session::context::Session;
use crate::topology::Machine;

impl Experiment for RobConfig {
    type Result = RobResult;

    fn sampling(&self) -> Option<String> {
        Some(format!(
            "rob: {} trials of ~{:.0} ms per filler × K, a coarse sweep then steps of 2 around \
             each cliff; median",
            self.repetitions,
            self.trial_ns / 1e6
        ))
    }

    fn hugepages(&self, _machine: &Machine, page: u64) -> u64 {
        pages_for(self.chase_bytes, page)
    }

    #[cfg(target_arch = "x86_64")]
    fn measure(&self, s: &mut Session, _earlier: &Results) -> anyhow::Result<RobResult> {
        crate::kernels::jit::probe().map_err(|e| {
            crate::error::UsageError::Unsupported(format!(
                "rob generates machine code at run time and could not map executable memory \
                 ({e}); a security policy (SELinux, PaX, a noexec container) may forbid it"
            ))
        })?;
        let arena = s.allocate(crate::units::Bytes(self.chase_bytes))?;
        Ok(super::measure(
            self,
            &arena,
            s.timer,
            s.core_hz(),
            s.progress,
        ))
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn measure(&self, _s: &mut Session, _earlier: &Results) -> anyhow::Result<RobResult> {
        Err(crate::error::UsageError::Unsupported(super::UNSUPPORTED.to_string()).into())
    }
}
