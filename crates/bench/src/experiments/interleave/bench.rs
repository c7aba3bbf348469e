//! The machinery of one interleave measurement: each thread's buffer bound to a mix's
//! nodes and touched on the local node (`Bench::buffers`), its pages moved where a set of
//! weights deals them (`place`) and asked where they are afterwards (`verify`), the
//! reading team (`read`), and the buffers the kernel's own weighted interleave places
//! (`kernel_policy`).

use super::{weights, InterleaveConfig, KernelCheck, PointOrigin, RatioPoint};
use crate::error::UsageError;
use crate::experiments::shared::node_reading::on_cpu;
use crate::kernels::stream::{self, Isa, KernelSpec};
use crate::platform::arena::{Arena, PagePolicy};
use crate::platform::numa_policy::{self, Mode, NodeMask};
use crate::platform::page_placement::{self, PageStatus};
use crate::platform::team::{run_jobs, TeamJob, TrialPolicy};
use crate::platform::timer::Timer;
use crate::stats::Summary;
use crate::units::Bytes;

/// Pages per buffer asked where they are after a ratio's trials.
const VERIFY_SAMPLES: usize = 256;

/// Worker `w` reads its own buffer `buffers[w]`; the team's own arenas are not used.
struct ReadJob<'a> {
    kernel: &'static KernelSpec,
    isa: Isa,
    array_bytes: usize,
    buffers: &'a [Arena],
}

impl TeamJob for ReadJob<'_> {
    fn prepare(&self, worker: usize, arena: &Arena) {
        self.work(worker, arena, 1);
    }

    fn work(&self, worker: usize, _arena: &Arena, repeats: usize) {
        let array = self.buffers[worker].as_ptr();
        // SAFETY: the buffer is page aligned and holds array_bytes (a multiple of
        // GRANULE), read only; the ISA was checked available by `read_isa`.
        let sum =
            unsafe { stream::run(self.kernel, self.isa, &[array], self.array_bytes, repeats) };
        std::hint::black_box(sum);
    }
}

/// The bandwidth figures of one set of trials.
pub(super) struct Trials {
    pub summary: Summary,
    pub overlap: f64,
}

/// The emulation's buffers and where each of their pages is now (an index into the mix's
/// nodes; `usize::MAX` when unknown).
pub(super) struct Placed {
    pub buffers: Vec<Arena>,
    current: Vec<Vec<usize>>,
}

/// What one measurement of a mix needs.
pub(super) struct Bench<'a> {
    pub config: &'a InterleaveConfig,
    pub timer: &'a Timer,
    pub kernel: &'static KernelSpec,
    pub isa: Isa,
    pub array_bytes: usize,
    pub page: usize,
}

impl Bench<'_> {
    /// One ratio: the pages moved where `weights` deal them, read, and verified after.
    pub(super) fn point(
        &self,
        placed: &mut Placed,
        nodes: &[usize],
        (ratio, weights): (weights::Ratio, &[u32]),
        origin: PointOrigin,
    ) -> Result<RatioPoint, UsageError> {
        let share = self.place(placed, nodes, weights)?;
        let trials = self.read(&placed.buffers)?;
        let total: u32 = weights.iter().sum();
        Ok(RatioPoint {
            ratio,
            origin,
            local_share: f64::from(weights[0]) / f64::from(total.max(1)),
            read_gb_per_s: trials.summary.median,
            spread_pct: trials.summary.spread_pct(),
            min_gb_per_s: trials.summary.min,
            max_gb_per_s: trials.summary.max,
            overlap: trials.overlap,
            placed: share,
            verified: self.verify(placed, nodes, weights),
        })
    }

    /// Reads `buffers` with the configured CPUs, together, for the configured trials.
    pub(super) fn read(&self, buffers: &[Arena]) -> Result<Trials, UsageError> {
        let job = ReadJob {
            kernel: self.kernel,
            isa: self.isa,
            array_bytes: self.array_bytes,
            buffers,
        };
        let timings = run_jobs(
            &self.config.cpus,
            Bytes(4096),
            PagePolicy::Base,
            self.timer,
            TrialPolicy {
                trial_ns: self.config.trial_ns,
                trials: self.config.repetitions,
            },
            &[&job],
            &|_| {},
        )?;
        let timing = &timings[0];
        let bytes = self.kernel.bytes_per_pass(self.array_bytes) as f64
            * timing.repeats as f64
            * self.config.cpus.len() as f64;
        let rates: Vec<f64> = timing.trials_ns.iter().map(|&ns| bytes / ns).collect();
        let summary = Summary::of(&rates).ok_or_else(|| {
            UsageError::CannotProceed("interleave: no bandwidth trial gave a figure".into())
        })?;
        Ok(Trials {
            summary,
            overlap: timing.concurrency().overlap,
        })
    }

    /// One buffer of base pages per reading thread, first touched (filled) by the calling
    /// thread: bound to `node` when given, else placed by the thread's policy.
    fn filled_buffers(&self, node: Option<usize>) -> Result<Vec<Arena>, UsageError> {
        (0..self.config.cpus.len())
            .map(|worker| {
                let arena =
                    Arena::new_on_node(Bytes(self.array_bytes as u64), PagePolicy::Base, node)?;
                // SAFETY: the arena holds at least array_bytes and nothing else uses it.
                let array =
                    unsafe { std::slice::from_raw_parts_mut(arena.as_ptr(), self.array_bytes) };
                stream::fill_pattern(array, worker as u64 + 1);
                Ok(arena)
            })
            .collect()
    }

    /// One buffer per thread, bound to the local node, touched on it, filled, then bound to
    /// all of the mix's nodes (which moves nothing) so pages moved there may stay.
    pub(super) fn buffers(&self, nodes: &[usize]) -> Result<Placed, UsageError> {
        let local = nodes[0];
        let cpu = self.config.cpus[0];
        let buffers = on_cpu(Some(cpu), &self.config.cpus, || {
            self.filled_buffers(Some(local))
        })?;
        for arena in &buffers {
            numa_policy::mbind(
                arena.as_ptr(),
                arena.len(),
                Mode::Bind,
                &NodeMask::from_nodes(nodes),
                0,
            )
            .map_err(|e| UsageError::Unsupported(format!("binding the buffers: {e}")))?;
        }
        let current = (buffers.iter())
            .map(|a| vec![0; a.len() / self.page])
            .collect();
        Ok(Placed { buffers, current })
    }

    /// Moves the pages whose node changes so `weights` deal them; returns the share of all
    /// pages on their intended node afterwards.
    pub(super) fn place(
        &self,
        placed: &mut Placed,
        nodes: &[usize],
        weights: &[u32],
    ) -> Result<f64, UsageError> {
        let mut on_target = 0usize;
        let mut total = 0usize;
        for (arena, current) in placed.buffers.iter().zip(&mut placed.current) {
            let base = arena.as_ptr() as usize;
            let mut pages = Vec::new();
            let mut targets = Vec::new();
            let mut which = Vec::new();
            for (k, now) in current.iter().enumerate() {
                let target = weights::node_of_page(k, weights);
                if *now != target {
                    pages.push((base + k * self.page) as *const u8);
                    targets.push(nodes[target]);
                    which.push(k);
                }
            }
            if !pages.is_empty() {
                let statuses = page_placement::move_pages(&pages, Some(&targets))
                    .map_err(|e| UsageError::Unsupported(e.to_string()))?;
                for (k, status) in which.into_iter().zip(statuses) {
                    if let PageStatus::Node(node) = status {
                        current[k] = nodes.iter().position(|&n| n == node).unwrap_or(usize::MAX);
                    }
                }
            }
            total += current.len();
            on_target += (current.iter().enumerate())
                .filter(|&(k, &now)| now == weights::node_of_page(k, weights))
                .count();
        }
        Ok(on_target as f64 / total.max(1) as f64)
    }

    /// The share of a sample of pages still on the node `weights` deal them to.
    pub(super) fn verify(&self, placed: &Placed, nodes: &[usize], weights: &[u32]) -> Option<f64> {
        let mut matched = 0usize;
        let mut asked = 0usize;
        for arena in &placed.buffers {
            let count = arena.len() / self.page;
            let samples = VERIFY_SAMPLES.clamp(1, count.max(1));
            let indices: Vec<usize> = (0..samples)
                .map(|s| s * count.saturating_sub(1) / samples.saturating_sub(1).max(1))
                .collect();
            let base = arena.as_ptr() as usize;
            let pages: Vec<*const u8> = (indices.iter())
                .map(|&k| (base + k * self.page) as *const u8)
                .collect();
            let statuses = page_placement::move_pages(&pages, None).ok()?;
            for (&k, status) in indices.iter().zip(statuses) {
                asked += 1;
                if status.node() == Some(nodes[weights::node_of_page(k, weights)]) {
                    matched += 1;
                }
            }
        }
        (asked > 0).then(|| matched as f64 / asked as f64)
    }

    /// The kernel's own policy with the system's `weights`: buffers faulted in on a thread
    /// of the local node under MPOL_WEIGHTED_INTERLEAVE, where each page went, and their
    /// read bandwidth beside the emulation's at the same weights.
    pub(super) fn kernel_policy(
        &self,
        nodes: &[usize],
        weights: Vec<u32>,
        emulated: Option<f64>,
    ) -> Result<KernelCheck, UsageError> {
        let mask = NodeMask::from_nodes(nodes);
        let buffers = on_cpu(Some(self.config.cpus[0]), &self.config.cpus, || {
            // The thread's policy: it ends with the thread, so nothing else inherits it.
            page_placement::set_mempolicy(Mode::WeightedInterleave, &mask)
                .map_err(|e| UsageError::Unsupported(e.to_string()))?;
            self.filled_buffers(None)
        })?;
        let mut counts = vec![0usize; nodes.len()];
        let mut total = 0usize;
        for arena in &buffers {
            let base = arena.as_ptr() as usize;
            let pages: Vec<*const u8> = (0..arena.len() / self.page)
                .map(|k| (base + k * self.page) as *const u8)
                .collect();
            let statuses = page_placement::move_pages(&pages, None)
                .map_err(|e| UsageError::Unsupported(e.to_string()))?;
            for status in statuses {
                total += 1;
                if let Some(i) = status
                    .node()
                    .and_then(|n| nodes.iter().position(|&m| m == n))
                {
                    counts[i] += 1;
                }
            }
        }
        let trials = self.read(&buffers)?;
        let sum: f64 = weights.iter().map(|&w| f64::from(w)).sum();
        Ok(KernelCheck {
            expected_shares: weights.iter().map(|&w| f64::from(w) / sum).collect(),
            weights,
            shares: (counts.iter())
                .map(|&c| c as f64 / total.max(1) as f64)
                .collect(),
            read_gb_per_s: trials.summary.median,
            spread_pct: trials.summary.spread_pct(),
            difference_pct: emulated.map(|e| (trials.summary.median / e - 1.0) * 100.0),
            emulated_gb_per_s: emulated,
        })
    }
}
