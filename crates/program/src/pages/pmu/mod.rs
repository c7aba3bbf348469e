//! Precise memory-access sampling for `pages record` (the PMU source): Intel PEBS
//! `mem-loads`/`mem-stores` or AMD IBS op, opened per CPU for a child process and every
//! task it starts, read from mmap'd ring buffers into `MemSample`s (data address,
//! latency, TLB outcome).
//!
//! - `events`: which events this machine has (from sysfs), or why none;
//! - `record`: PERF_RECORD_SAMPLE / LOST / THROTTLE parsed from bytes;
//! - `ring`: the ring buffer protocol (head, tail, wrapped records);
//! - `datasrc`: `perf_mem_data_src` and its dTLB field as a `TlbOutcome`;
//! - `open`: the `perf_event_attr`s and the reasons an open is refused;
//! - `spe`: Arm SPE, whose samples arrive as packets in the AUX area.
//!
//! Everything but the system calls is tested on synthetic data laid out as the kernel
//! defines it, so it is tested on machines without a PMU too.

pub mod datasrc;
pub mod events;
mod open;
pub mod record;
pub mod ring;
pub mod spe;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::Path;

use crate::pages::access::MemSample;
use datasrc::{DataSrc, TLB_NA};
use events::{choose_events, EventSpec, Keep, Vendor};
use record::{parse_record, Record, Sample};
use ring::Ring;

/// Where the kernel lists its PMUs.
pub(crate) const EVENT_SOURCES: &str = "/sys/bus/event_source/devices";

/// The fields every sampled event records (IDENTIFIER tells which event a sample is
/// from when several share one ring).
pub(crate) const SAMPLE_TYPE: u64 = crate::counters::sys::SAMPLE_IDENTIFIER
    | crate::counters::sys::SAMPLE_TID
    | crate::counters::sys::SAMPLE_TIME
    | crate::counters::sys::SAMPLE_ADDR
    | crate::counters::sys::SAMPLE_WEIGHT
    | crate::counters::sys::SAMPLE_DATA_SRC;

/// What one `drain` moved and what the kernel reported lost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct DrainStats {
    /// Records the kernel dropped because a ring was full (PERF_RECORD_LOST and
    /// LOST_SAMPLES), plus records that could not be parsed.
    pub lost: u64,
    /// PERF_RECORD_THROTTLE: the kernel slowed sampling down (period too small).
    pub throttled: u64,
    /// Samples appended to the output.
    pub samples: u64,
}

/// Precise memory-access sampling of one process tree, one ring buffer per CPU.
pub(crate) struct PmuSampler {
    specs: Vec<EventSpec>,
    /// The period programmed for each spec.
    periods: Vec<u64>,
    sample_type: u64,
    /// Event id → index in `specs`; `None` for group leaders whose samples are dropped.
    ids: HashMap<u64, Option<usize>>,
    rings: Vec<Ring>,
    /// Kept open while sampling; after `rings` so the mappings go first.
    _fds: Vec<OwnedFd>,
}

impl PmuSampler {
    /// Opens precise memory-access sampling of process `pid` (a child paused before its
    /// exec: the events start with it, `enable_on_exec`) and every thread and process it
    /// starts afterwards (`inherit`), one event (or group) per CPU in `cpus`, each CPU
    /// with an mmap'd ring buffer. `period`: sample every N events (0 = each event's
    /// default). The error is one sentence naming what is missing and what would
    /// enable it.
    pub fn open(pid: libc::pid_t, cpus: &[usize], period: u64) -> Result<PmuSampler, String> {
        let specs = choose_events(Path::new(EVENT_SOURCES), Vendor::detect())?;
        open::check_kernel(&specs, &crate::topology::cpu::kernel_release())?;
        if cpus.is_empty() {
            return Err("no CPU to sample on: the CPU list is empty".to_string());
        }
        let periods: Vec<u64> = specs.iter().map(|s| s.period(period)).collect();
        let opened = open::open_all(&specs, &periods, pid, cpus)?;
        Ok(PmuSampler {
            specs,
            periods,
            sample_type: SAMPLE_TYPE,
            ids: opened.ids,
            rings: opened.rings,
            _fds: opened.fds,
        })
    }

    /// Moves every complete record out of the ring buffers: samples into `out`; returns
    /// them counted with the lost records and throttle events.
    pub(crate) fn drain(&mut self, out: &mut Vec<MemSample>) -> DrainStats {
        let mut stats = DrainStats::default();
        let (specs, ids, sample_type) = (&self.specs, &self.ids, self.sample_type);
        for ring in &mut self.rings {
            let pass = ring.read_records(|bytes| match parse_record(sample_type, bytes) {
                Ok(Record::Sample(s)) => {
                    if let Some(m) = to_mem_sample(&s, specs, ids) {
                        out.push(m);
                        stats.samples += 1;
                    }
                }
                Ok(Record::Lost(n)) => stats.lost += n,
                Ok(Record::Throttle) => stats.throttled += 1,
                Ok(Record::Unthrottle | Record::Other(_)) => {}
                Err(_) => stats.lost += 1,
            });
            // Bytes skipped after an impossible header held at least one record.
            if pass.corrupt_bytes > 0 {
                stats.lost += 1;
            }
        }
        stats
    }

    /// Which events sample, in words.
    pub fn description(&self) -> String {
        describe(&self.specs, &self.periods)
    }
}

/// Quick probe without opening anything for a pid: which precise source this machine
/// would use, or why none (the same sentences as `PmuSampler::open`'s errors).
pub(crate) fn availability() -> Result<String, String> {
    let specs = choose_events(Path::new(EVENT_SOURCES), Vendor::detect())?;
    open::check_kernel(&specs, &crate::topology::cpu::kernel_release())?;
    open::check_permission(&specs, open::read_paranoid(), open::privileged())?;
    let periods: Vec<u64> = specs.iter().map(|s| s.period(0)).collect();
    Ok(describe(&specs, &periods))
}

/// The events and periods in words, e.g. "AMD IBS op (ibs_op PMU type 11), every 65536
/// ops, data-address samples with their TLB outcome".
pub fn describe(specs: &[EventSpec], periods: &[u64]) -> String {
    let parts: Vec<String> = specs
        .iter()
        .zip(periods)
        .map(|(s, p)| match s.encoding {
            datasrc::Encoding::AmdIbs => format!(
                "AMD IBS op ({} PMU type {}), every {p} {}, data-address samples with \
                 their TLB outcome (L1 hit, L2 hit or miss)",
                s.pmu, s.pmu_type, s.unit
            ),
            _ => {
                let lead = s
                    .aux_leader
                    .map(|c| format!(" led by mem-loads-aux ({c:#x})"))
                    .unwrap_or_default();
                format!(
                    "Intel PEBS {} ({} PMU type {}){lead}, every {p} {}, with the data \
                     address and whether the STLB missed",
                    s.name, s.pmu, s.pmu_type, s.unit
                )
            }
        })
        .collect();
    parts.join("; ")
}

/// The `MemSample` of a parsed sample, or `None` when its event's samples are not
/// memory accesses (IBS ops without a data address, the aux group leader).
fn to_mem_sample(
    s: &Sample,
    specs: &[EventSpec],
    ids: &HashMap<u64, Option<usize>>,
) -> Option<MemSample> {
    let index = match s.id.and_then(|id| ids.get(&id)) {
        Some(Some(i)) => *i,
        Some(None) => return None,
        // Unknown or absent id: only unambiguous with a single event.
        None if specs.len() == 1 => 0,
        None => return None,
    };
    let spec = specs.get(index)?;
    let addr = s.addr.unwrap_or(0);
    let src = DataSrc(s.data_src.unwrap_or(0));
    let keep = match spec.keep {
        Keep::WithAddress => addr != 0,
        Keep::AddressAndTlb => addr != 0 && src.dtlb() != 0 && src.dtlb() & TLB_NA == 0,
        Keep::None => false,
    };
    keep.then(|| MemSample {
        pid: s.pid.unwrap_or(0),
        tid: s.tid.unwrap_or(0),
        addr,
        weight: s.weight.unwrap_or(0),
        tlb: src.tlb(spec.encoding),
        time_ns: s.time.unwrap_or(0),
        event_is_tlb_miss: spec.event_is_tlb_miss,
    })
}

/// Whichever precise sampler this machine has: memory events with a data source (Intel
/// PEBS, AMD IBS op) or Arm SPE packets.
pub(crate) enum PreciseSampler {
    Events(PmuSampler),
    Spe(spe::SpeSampler),
}

impl PreciseSampler {
    /// Opens the memory events where the CPU has them, else Arm SPE where it exists; the
    /// error is the memory events' reason (SPE's when only SPE was there and refused).
    pub fn open(pid: libc::pid_t, cpus: &[usize], period: u64) -> Result<PreciseSampler, String> {
        match PmuSampler::open(pid, cpus, period) {
            Ok(sampler) => Ok(PreciseSampler::Events(sampler)),
            Err(_) if spe_present() => {
                spe::SpeSampler::open(pid, cpus, period).map(PreciseSampler::Spe)
            }
            Err(why) => Err(why),
        }
    }

    pub(crate) fn drain(&mut self, out: &mut Vec<MemSample>) -> DrainStats {
        match self {
            PreciseSampler::Events(sampler) => sampler.drain(out),
            PreciseSampler::Spe(sampler) => {
                let before = out.len();
                let lost = sampler.drain(out);
                DrainStats {
                    lost,
                    throttled: 0,
                    samples: (out.len() - before) as u64,
                }
            }
        }
    }

    pub fn description(&self) -> String {
        match self {
            PreciseSampler::Events(sampler) => sampler.description(),
            PreciseSampler::Spe(sampler) => sampler.description(),
        }
    }
}

/// Whether an Arm SPE PMU is listed.
pub(crate) fn spe_present() -> bool {
    !spe::sysfs::find_pmus(Path::new(EVENT_SOURCES)).is_empty()
}

/// `availability`, counting Arm SPE in. On Arm, SPE is the precise source: without it
/// the reason is that no SPE PMU is listed (`spe_absent`), not the x86 events' absence.
pub(crate) fn precise_availability() -> Result<String, String> {
    availability().or_else(|why| {
        if spe_present() {
            Ok(
                "Arm SPE (statistical profiling: load and store packets with their \
                data address, latency and TLB walk)"
                    .to_string(),
            )
        } else if cfg!(target_arch = "aarch64") || Vendor::detect() == Vendor::Arm {
            Err(spe_absent(Path::new(EVENT_SOURCES)))
        } else {
            Err(why)
        }
    })
}

/// Why an Arm machine has no precise source: no `arm_spe*` PMU under `event_sources`.
pub(crate) fn spe_absent(event_sources: &Path) -> String {
    format!(
        "no Arm SPE PMU: the kernel lists no arm_spe_* device under {} (the Statistical \
         Profiling Extension of Neoverse N1, V1, V2 and later cores, on bare metal or passed \
         through to a guest, with the arm_spe_pmu driver, would enable it)",
        event_sources.display()
    )
}
