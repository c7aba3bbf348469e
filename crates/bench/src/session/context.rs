//! The measuring context every experiment receives: the calibrated timer, the machine,
//! progress, the page policy, and what the run gathers besides results (warnings, the
//! CPUs used, the pages the buffers got). Buffers are allocated through it so that each
//! is checked the same way.

use crate::error::UsageError;
use crate::platform::arena::{Arena, PagePolicy, PagesObtained};
use crate::platform::timer::Timer;
use crate::session::conditions::Conditions;
use crate::session::progress::Progress;
use crate::session::warnings::{Warning, WarningKind};
use crate::topology::Machine;
use crate::units::Bytes;

pub struct Session<'a> {
    pub timer: &'a Timer,
    pub machine: &'a Machine,
    pub progress: &'a Progress,
    /// The page policy asked for the measurement buffers.
    pub pages: PagePolicy,
    /// Warnings raised so far, in order, without repeats.
    pub warnings: Vec<Warning>,
    /// CPUs the run measured on: the pinned one first, then helpers in order of first use.
    pub cpus: Vec<usize>,
    /// What the first buffer got, verified after first touch.
    pub pages_obtained: Option<PagesObtained>,
    /// What else ran on the machine during each experiment.
    pub conditions: Conditions,
    /// The largest working set an experiment that sizes its own buffers chased (numa).
    pub working_set: u64,
}

impl<'a> Session<'a> {
    pub fn new(
        timer: &'a Timer,
        machine: &'a Machine,
        progress: &'a Progress,
        pages: PagePolicy,
        cpu: usize,
    ) -> Session<'a> {
        Session {
            timer,
            machine,
            progress,
            pages,
            warnings: Vec::new(),
            cpus: vec![cpu],
            pages_obtained: None,
            conditions: Conditions::start(cpu, &machine.allowed_cpus),
            working_set: 0,
        }
    }

    /// The core clock estimate, when the calibration found one.
    pub(crate) fn core_hz(&self) -> Option<f64> {
        self.machine.core_hz_estimate
    }

    /// Records warnings, each once.
    pub fn warn(&mut self, kinds: impl IntoIterator<Item = WarningKind>) {
        for kind in kinds {
            let warning = Warning::from(kind);
            if !self.warnings.contains(&warning) {
                self.warnings.push(warning);
            }
        }
    }

    /// Records CPUs the experiment used besides the pinned one.
    pub fn used_cpus(&mut self, cpus: impl IntoIterator<Item = usize>) {
        for cpu in cpus {
            if !self.cpus.contains(&cpu) {
                self.cpus.push(cpu);
            }
        }
        self.conditions.use_cpus(&self.cpus);
    }

    /// Maps a measurement buffer on the calling (pinned) thread with the run's page policy
    /// and records what it got: the first buffer's backing goes into the settings; THP
    /// that was not obtained is an error when none of a large buffer got huge pages, a
    /// warning when part of it did.
    pub(crate) fn allocate(&mut self, bytes: Bytes) -> Result<Arena, UsageError> {
        self.allocate_on_node(bytes, None)
    }

    /// As `allocate`, with `Some(node)` the pages bound to that NUMA node
    /// (`Arena::new_on_node`; `--membind`).
    pub(crate) fn allocate_on_node(
        &mut self,
        bytes: Bytes,
        node: Option<usize>,
    ) -> Result<Arena, UsageError> {
        let arena = Arena::new_on_node(bytes, self.pages, node)?;
        let obtained = arena.obtained();
        if self.pages == PagePolicy::Thp && obtained.huge_fraction < 0.9 {
            if obtained.huge_fraction == 0.0 && arena.len() >= 4 << 20 {
                return Err(UsageError::PagesUnavailable {
                    policy: "thp".into(),
                    reason: "none of the buffer was backed by transparent huge pages after \
                             first touch (memory fragmentation, or THP limited by the system)"
                        .into(),
                    advice: "Try --pages 2m with a reserved hugetlbfs pool, or --pages 4k".into(),
                });
            }
            self.warn([WarningKind::ThpPartial {
                fraction: obtained.huge_fraction,
            }]);
        }
        self.pages_obtained.get_or_insert(obtained);
        Ok(arena)
    }
}
