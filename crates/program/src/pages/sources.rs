//! The access sources of `pages record` and how one is chosen: precise PMU sampling
//! (TLB outcome per sampled access), DAMON (access frequency per region), or the
//! page-table accessed bits through /proc (translations touched per region), which works
//! everywhere.

use std::io;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::access::{AccessSpan, MemSample, TlbOutcome};
use super::damon::{self, DamonMonitor, DamonStatus};
use super::notes::RecordNote;
use super::pmu::{self, DrainStats, PreciseSampler};
use super::refs::RefsSampler;
use super::regions::{RegionMap, REGION_BYTES};
use crate::topology::process as procfs;

/// `--source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SourceChoice {
    Auto,
    Pmu,
    Damon,
    Refs,
}

/// The source a record used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    Pmu,
    Damon,
    Refs,
}

impl SourceKind {
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::Pmu => "pmu",
            SourceKind::Damon => "damon",
            SourceKind::Refs => "refs",
        }
    }

    /// What the source's values mean and how regions are ranked by them.
    pub fn signal(self) -> Signal {
        let (name, meaning) = match self {
            SourceKind::Pmu => (
                "TLB-miss samples",
                "precise samples of loads and stores whose address translation missed a \
                 TLB level (first-level miss or page walk), counted per 2 MiB region; \
                 regions are ranked by that count, an estimate of where the TLB misses are",
            ),
            SourceKind::Damon => (
                "DAMON accesses",
                "DAMON's access frequency (nr_accesses per aggregation interval, summed over \
                 the run) spread over the 2 MiB regions each DAMON region covers; regions \
                 are ranked by how often they are accessed, a heat, not a TLB-miss count",
            ),
            SourceKind::Refs => (
                "translations touched",
                "distinct page translations the program loaded per interval (one per 4 KiB \
                 page, one per huge page), from the page tables' accessed bits, summed over \
                 the intervals; the CPU sets a bit when it walks the page table, and the \
                 bits are cleared without a TLB flush, so a page whose translation stays in \
                 the TLB may not count: regions are ranked by how many translations they \
                 make the TLB load, a heat that leans toward TLB misses, not a miss count",
            ),
        };
        Signal {
            name: name.to_string(),
            meaning: meaning.to_string(),
        }
    }
}

/// The signal a record ranks regions by, in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Signal {
    /// Short name for table headers, e.g. "TLB-miss samples", "translations touched".
    pub name: String,
    /// What it measures and how regions are ranked.
    pub meaning: String,
}

/// The source chosen, and why the ones before it were not.
#[derive(Debug, Clone)]
pub(crate) struct Chosen {
    pub kind: SourceKind,
    pub not_used: Vec<String>,
}

/// Chooses the source: the one asked for (an error saying why it cannot be used), or
/// with `auto` the PMU when it works, else accessed bits (DAMON only when asked for).
pub(super) fn choose(choice: SourceChoice) -> Result<Chosen, String> {
    let pmu = || pmu::precise_availability().map(|_| ());
    let damon = || match damon::status() {
        DamonStatus::Free { .. } => Ok(()),
        other => Err(other.to_string()),
    };
    match choice {
        SourceChoice::Pmu => pmu().map(|_| Chosen {
            kind: SourceKind::Pmu,
            not_used: vec![],
        }),
        SourceChoice::Damon => damon().map(|_| Chosen {
            kind: SourceKind::Damon,
            not_used: vec![],
        }),
        SourceChoice::Refs => Ok(Chosen {
            kind: SourceKind::Refs,
            not_used: vec![],
        }),
        SourceChoice::Auto => {
            let mut not_used = Vec::new();
            match pmu() {
                Ok(()) => {
                    return Ok(Chosen {
                        kind: SourceKind::Pmu,
                        not_used,
                    })
                }
                Err(why) => not_used.push(format!("pmu: {why}")),
            }
            // DAMON is not taken unasked: it checks one sampled page per region, and its
            // checks clear accessed bits without a TLB flush, so a page that stays in the
            // TLB looks idle and the hottest regions can rank lowest (on a KVM guest it
            // found 0–1 of 3 planted hot regions in 9 runs, the accessed bits of every page
            // 3 of 3 in 6).
            not_used.push(
                "damon: not chosen automatically: its access checks do not flush the TLB, so \
                 pages that stay in the TLB look idle and the hottest regions can rank lowest \
                 (--source damon uses it)"
                    .to_string(),
            );
            Ok(Chosen {
                kind: SourceKind::Refs,
                not_used,
            })
        }
    }
}

/// A source sampling one command.
pub(crate) enum Sampler {
    Refs(RefsSampler),
    Pmu {
        sampler: Box<PreciseSampler>,
        samples: Vec<MemSample>,
        totals: DrainStats,
        with_tlb: u64,
    },
    /// memscope's own kdamond, started once the command has exec'd (a `vaddr` target
    /// set up before the exec would start from memscope's address space).
    Damon {
        pid: u32,
        interval: Duration,
        monitor: Option<DamonMonitor>,
    },
}

impl Sampler {
    /// Opens the source for the command `pid` (paused before its exec).
    pub fn open(kind: SourceKind, pid: u32, interval: Duration) -> Result<Sampler, String> {
        match kind {
            SourceKind::Refs => Ok(Sampler::Refs(RefsSampler::new())),
            SourceKind::Pmu => {
                let cpus = crate::topology::cpu::online_cpus();
                Ok(Sampler::Pmu {
                    sampler: Box::new(PreciseSampler::open(pid as libc::pid_t, &cpus, 0)?),
                    samples: Vec::new(),
                    totals: DrainStats::default(),
                    with_tlb: 0,
                })
            }
            SourceKind::Damon => Ok(Sampler::Damon {
                pid,
                interval,
                monitor: None,
            }),
        }
    }

    /// After the command's exec: starts what must watch the new program.
    pub(super) fn after_exec(&mut self) -> Result<(), String> {
        if let Sampler::Damon {
            pid,
            interval,
            monitor,
        } = self
        {
            let aggr_us = interval.as_micros().max(1000) as u64;
            let sample_us = (aggr_us / 20).max(100);
            *monitor = Some(DamonMonitor::start(
                *pid as libc::pid_t,
                sample_us,
                aggr_us,
            )?);
        }
        Ok(())
    }

    /// One interval's end: moves what the source saw into `map`.
    pub fn collect(&mut self, tree: &[u32], map: &mut RegionMap) -> io::Result<()> {
        match self {
            Sampler::Refs(refs) => refs.collect(tree, map),
            Sampler::Pmu { .. } => {
                observe(tree, map);
                self.drain_pmu(map);
                Ok(())
            }
            Sampler::Damon { monitor, .. } => {
                observe(tree, map);
                let Some(monitor) = monitor else {
                    return Ok(());
                };
                // nr_accesses is a frequency per DAMON region: every 2 MiB region the
                // span covers gets it (in proportion to how much of it is covered).
                for span in monitor.snapshot_of(tree)? {
                    let regions = (span.end - span.start) as f64 / REGION_BYTES as f64;
                    map.add_span(&AccessSpan {
                        value: span.value * regions,
                        ..span
                    });
                }
                Ok(())
            }
        }
    }

    /// After the command ended: whatever the source still holds.
    pub(crate) fn finish(&mut self, map: &mut RegionMap) {
        self.drain_pmu(map);
    }

    /// Moves the PMU's samples into the regions: every sample counts, those that missed
    /// a TLB level rank the regions.
    fn drain_pmu(&mut self, map: &mut RegionMap) {
        if let Sampler::Pmu {
            sampler,
            samples,
            totals,
            with_tlb,
        } = self
        {
            samples.clear();
            let stats = sampler.drain(samples);
            totals.lost += stats.lost;
            totals.throttled += stats.throttled;
            totals.samples += stats.samples;
            for sample in samples.iter() {
                if sample.tlb != TlbOutcome::Unknown || sample.event_is_tlb_miss {
                    *with_tlb += 1;
                }
                map.add_sample(sample, true);
            }
        }
    }

    pub fn description(&self) -> String {
        match self {
            Sampler::Pmu { sampler, .. } => sampler.description(),
            Sampler::Damon { monitor, .. } => monitor.as_ref().map_or_else(
                || "DAMON (not started)".to_string(),
                DamonMonitor::description,
            ),
            Sampler::Refs(_) => "page-table accessed bits of every mapping, read from \
                                 /proc/PID/smaps (Referenced) and cleared through \
                                 /proc/PID/clear_refs each interval"
                .to_string(),
        }
    }

    /// Whether the record's per-region resolution suffered from a process without the
    /// preload library.
    pub(super) fn preload_missing(&self) -> bool {
        match self {
            Sampler::Refs(refs) => refs.saw_a_process() && !refs.preload_everywhere,
            Sampler::Pmu { .. } | Sampler::Damon { .. } => false,
        }
    }

    pub fn notes(&self) -> Vec<RecordNote> {
        let mut notes = Vec::new();
        if let Sampler::Pmu {
            totals, with_tlb, ..
        } = self
        {
            if totals.lost > 0 || totals.throttled > 0 {
                notes.push(RecordNote::LostSamples {
                    lost: totals.lost,
                    throttled: totals.throttled,
                });
            }
            if totals.samples > 0 && *with_tlb == 0 {
                notes.push(RecordNote::NoTlbOutcome);
            }
        }
        notes
    }
}

/// Names and resident memory of every process's regions (for sources that give no
/// mappings of their own).
fn observe(tree: &[u32], map: &mut RegionMap) {
    for &pid in tree {
        if let Ok(mappings) = procfs::smaps(pid) {
            map.name_process(pid, procfs::command_name(pid));
            map.observe_mappings(pid, &mappings);
        }
    }
}
