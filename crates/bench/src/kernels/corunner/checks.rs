//! The co-runner's own checks: its calibration before the program runs (the pirate alone
//! per set and over a buffer far beyond the LLC, the bandit flat out, the pirate beside a
//! flat-out bandit) and whether two co-runners' CPUs share a cache.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{CoRunner, CoRunnerSetup, Load, Work};
use crate::units::Bytes;

/// Self-checks run before the program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The pirate alone: (set bytes, ns per step of one chain) for each size asked.
    pub pirate_alone_ns: Vec<(u64, f64)>,
    /// The same walk over the bandit's whole buffer (far beyond the LLC): ≈ DRAM latency.
    pub dram_ns: f64,
    /// The bandit alone, flat out.
    pub bandit_max_bytes_per_s: f64,
    /// The pirate at `probe_bytes` beside a flat-out bandit on another CPU, ns per step:
    /// how much of the cache the bandit evicts (NaN when not measured).
    pub pirate_beside_bandit_ns: f64,
}

/// Whether two co-runners' CPUs share a cache, seen by the first one's pirate: its walk
/// alone, then while the other walks a set so large that the two could not both keep
/// theirs in one shared cache.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SharingCheck {
    /// The first co-runner's set, and the other's.
    pub bytes: u64,
    pub other_bytes: u64,
    /// The first one's ns per step alone and beside the other.
    pub alone_ns: f64,
    pub beside_ns: f64,
}

impl SharingCheck {
    /// Slower than this beside the other: the two evict each other, so they share.
    pub(crate) const SHARED_ABOVE: f64 = 1.3;

    /// The other's walk slowed this one down: they share a cache (None: not measured).
    pub fn shared(&self) -> Option<bool> {
        let ratio = self.beside_ns / self.alone_ns;
        ratio.is_finite().then_some(ratio > Self::SHARED_ABOVE)
    }
}

impl CoRunner {
    /// Whether this co-runner's CPU shares a cache with `other`'s: this one's pirate walks
    /// `bytes` alone, then while `other`'s pirate walks `other_bytes` (at most its
    /// `pirate_max_bytes`). Pick `bytes` + `other_bytes` beyond the cache's size, so that
    /// in one shared cache the two evict each other. Leaves both idle.
    pub fn sharing_check(&self, other: &CoRunner, bytes: u64, other_bytes: u64) -> SharingCheck {
        let measure = Duration::from_millis(150);
        other.set(Load::Idle);
        self.set(Load::Pirate { bytes });
        std::thread::sleep(measure);
        let alone_ns = self.take_stats().ns_per_step;
        other.set(Load::Pirate { bytes: other_bytes });
        self.take_stats();
        std::thread::sleep(measure);
        let beside_ns = self.take_stats().ns_per_step;
        other.set(Load::Idle);
        self.set(Load::Idle);
        SharingCheck {
            bytes: bytes.min(self.setup.pirate_max_bytes),
            other_bytes: other_bytes.min(other.setup.pirate_max_bytes),
            alone_ns,
            beside_ns,
        }
    }

    /// The CPU it runs on.
    pub fn cpu(&self) -> usize {
        self.setup.cpu
    }

    /// Whether the bandit's buffer got (≥ 90%) 2 MiB pages (without them its stream pays a
    /// TLB miss every 4 KiB, and takes less bandwidth).
    pub fn bandit_huge(&self) -> bool {
        self.bandit_huge
    }

    /// Self-checks: the pirate's ns/step alone for each of `pirate_sizes` and for a walk
    /// over the whole bandit buffer (≈ DRAM latency), the bandit's flat-out rate, and —
    /// with `beside_cpu` — the pirate at `probe_bytes` beside a flat-out bandit run by a
    /// second, temporary thread on that CPU (reading this co-runner's bandit buffer).
    /// Sizes beyond `pirate_max_bytes` and a `beside_cpu` equal to this one's are refused.
    /// Leaves the co-runner idle.
    pub fn calibrate(
        &self,
        pirate_sizes: &[u64],
        probe_bytes: u64,
        beside_cpu: Option<usize>,
    ) -> std::io::Result<Calibration> {
        let max = self.setup.pirate_max_bytes;
        if let Some(&size) = pirate_sizes
            .iter()
            .chain([&probe_bytes])
            .find(|&&size| size > max)
        {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "a pirate of {} exceeds its buffer of {}",
                    Bytes(size),
                    Bytes(max)
                ),
            ));
        }
        if beside_cpu == Some(self.setup.cpu) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "the bandit beside the pirate needs another CPU than {}",
                    self.setup.cpu
                ),
            ));
        }
        let measure = Duration::from_millis(100);
        let hold = |load: Work, time: Duration| {
            self.command(load);
            std::thread::sleep(time);
            self.take_stats()
        };
        let mut pirate_alone_ns = Vec::new();
        for &size in pirate_sizes {
            self.set(Load::Pirate { bytes: size });
            std::thread::sleep(measure);
            pirate_alone_ns.push((size, self.take_stats().ns_per_step));
        }
        let dram_ns = hold(Work::DramWalk, measure).ns_per_step;
        let bandit_max_bytes_per_s = hold(Work::Bandit { bytes_per_s: None }, measure).bytes_per_s;
        let mut pirate_beside_bandit_ns = f64::NAN;
        if let Some(cpu) = beside_cpu {
            let bandit = CoRunner::start_with(
                CoRunnerSetup {
                    cpu,
                    pirate_max_bytes: 0,
                    bandit_buffer_bytes: self.setup.bandit_buffer_bytes,
                },
                Some(Arc::clone(&self.bandit)),
            )?;
            self.set(Load::Pirate { bytes: probe_bytes });
            bandit.set(Load::Bandit { bytes_per_s: None });
            self.take_stats();
            std::thread::sleep(2 * measure);
            pirate_beside_bandit_ns = self.take_stats().ns_per_step;
            // The second thread stops before this one is told to walk its buffer again.
            drop(bandit);
        }
        self.set(Load::Idle);
        Ok(Calibration {
            pirate_alone_ns,
            dram_ns,
            bandit_max_bytes_per_s,
            pirate_beside_bandit_ns,
        })
    }
}
