//! Arm Statistical Profiling Extension (SPE) sampling for `pages record`: the precise
//! sampling source on Arm. The kernel's SPE driver fills no `data_src` and writes no
//! PERF_RECORD_SAMPLE: the hardware writes whole sample records (packets with the data
//! virtual address, the TLB and cache events, the latency, a timestamp) into the perf AUX
//! area, and the ring carries PERF_RECORD_AUX records saying which part of it is new.
//!
//! One SPE event per CPU follows the process (per-task, per-CPU, inherited: what `perf
//! record -e arm_spe//` does), sampling user-space loads and stores. [`decode`] turns
//! the AUX bytes into [`MemSample`]s; `packets` documents the format and the TLB mapping
//! (walk → `Miss`, access without walk → `Hit`, else `Unknown`).

mod packets;
mod ring;
pub mod sysfs;

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

pub use packets::{
    decode, decode_at, DecodeStats, EV_L1D_ACCESS, EV_L1D_REFILL, EV_LLC_ACCESS, EV_LLC_MISS,
    EV_RETIRED, EV_TLB_ACCESS, EV_TLB_WALK,
};

use crate::counters::sys::{perf_event_open, PerfEventAttr};
use crate::pages::access::MemSample;
use ring::{
    Ring, PERF_AUX_FLAG_COLLISION, PERF_AUX_FLAG_TRUNCATED, PERF_RECORD_AUX, PERF_RECORD_LOST,
};
use sysfs::SpePmu;

const EVENT_SOURCES: &str = "/sys/bus/event_source/devices";
const PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";
/// Ring sizes per CPU: the data ring only carries small PERF_RECORD_AUX records; the AUX
/// area is halved (down to 2 pages) while locked-memory limits refuse it.
const DATA_BYTES: usize = 32 << 10;
const AUX_BYTES: usize = 512 << 10;

/// One CPU's event and its buffers.
struct CpuRing {
    cpu: usize,
    // Drop order: the mappings before the descriptor.
    ring: Ring,
    _fd: OwnedFd,
}

/// SPE sampling of one process (and the threads and children it creates) on a set of
/// CPUs.
pub(crate) struct SpeSampler {
    pid: libc::pid_t,
    /// `(name, type, sampling interval)` of each PMU in use.
    pmus: Vec<(String, u32, u64)>,
    rings: Vec<CpuRing>,
    /// Requested CPUs no SPE PMU serves (a big.LITTLE part with SPE on one cluster).
    unserved: Vec<usize>,
    aux_bytes: usize,
    /// The hardware has no load/store filter: every operation is sampled.
    all_operations: bool,
    aux_scratch: Vec<u8>,
    /// Thread id → process id, from /proc (the Context packet gives the thread).
    tgids: HashMap<u32, u32>,
    totals: DecodeStats,
    lost: u64,
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

/// The number of `page`-sized pages, a power of two and at least `min`, closest to
/// `bytes` from below.
fn pages_for(bytes: usize, page: usize, min: usize) -> usize {
    let pages = (bytes / page).max(min);
    if pages.is_power_of_two() {
        pages
    } else {
        pages.next_power_of_two() / 2
    }
}

fn cpu_list(cpus: &[usize]) -> String {
    let names: Vec<String> = cpus.iter().map(usize::to_string).collect();
    names.join(",")
}

/// The sentence for a refused `perf_event_open`.
fn open_error(
    pmu: &SpePmu,
    attr: &PerfEventAttr,
    pid: i32,
    cpu: usize,
    e: &std::io::Error,
) -> String {
    let errno = e.raw_os_error().unwrap_or(0);
    let why = match errno {
        libc::EACCES | libc::EPERM => {
            let paranoid = std::fs::read_to_string(PARANOID)
                .map_or("unreadable".to_string(), |s| s.trim().to_string());
            format!(
                ": not permitted (perf_event_paranoid is {paranoid}); sampling another \
                 process's user space needs perf_event_paranoid 2 or lower, or CAP_PERFMON \
                 (CAP_SYS_ADMIN before Linux 5.8)"
            )
        }
        libc::ENOENT | libc::ENODEV => {
            format!(": CPU {cpu} is offline or not one {} serves", pmu.name)
        }
        libc::EOPNOTSUPP => {
            ": the SPE driver does not support a requested filter or per-task sampling".to_string()
        }
        libc::EINVAL => format!(
            ": the SPE driver rejected the config {:#x} or the interval {}",
            attr.config, attr.sample_period
        ),
        _ => String::new(),
    };
    format!(
        "The kernel refused to open SPE ({}) for process {pid} on CPU {cpu} with errno \
         {errno} ({e}){why}.",
        pmu.name
    )
}

impl SpeSampler {
    /// Opens SPE on every CPU in `cpus` for process `pid` (a child paused before exec:
    /// the events start at its exec and follow its threads and children), sampling
    /// user-space loads and stores every `period` operations (raised to the PMU's
    /// `caps/min_interval`; that minimum when 0), and maps each CPU's ring and AUX area.
    /// CPUs no SPE PMU serves are left out (see `description`). The error is a sentence
    /// saying why SPE cannot be used here.
    pub fn open(pid: libc::pid_t, cpus: &[usize], period: u64) -> Result<SpeSampler, String> {
        Self::open_with(Path::new(EVENT_SOURCES), pid, cpus, period)
    }

    fn open_with(
        sysfs_root: &Path,
        pid: libc::pid_t,
        cpus: &[usize],
        period: u64,
    ) -> Result<SpeSampler, String> {
        let pmus = sysfs::find_pmus(sysfs_root);
        if pmus.is_empty() {
            return Err(format!(
                "No Arm SPE PMU: {} lists no arm_spe device. SPE needs an Arm CPU with the \
                 Statistical Profiling Extension (Armv8.2 or later, e.g. Neoverse N1/V1/N2), \
                 a kernel built with CONFIG_ARM_SPE_PMU (module arm_spe_pmu loaded), and \
                 bare metal or a hypervisor that passes SPE through.",
                sysfs_root.display()
            ));
        }
        if cpus.is_empty() {
            return Err("No CPUs were given to sample with SPE on.".to_string());
        }
        let (served, unserved): (Vec<usize>, Vec<usize>) = cpus
            .iter()
            .partition(|&&cpu| pmus.iter().any(|p| p.serves(cpu)));
        if served.is_empty() {
            return Err(format!(
                "No SPE PMU serves CPUs {}: {} serve{} only CPUs {}; run the program on \
                 those CPUs (e.g. taskset).",
                cpu_list(cpus),
                pmus.iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                if pmus.len() == 1 { "s" } else { "" },
                pmus.iter()
                    .filter_map(|p| p.cpus.as_deref())
                    .map(cpu_list)
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        }
        let page = page_size();
        let data_pages = pages_for(DATA_BYTES, page, 1);
        let mut aux_pages = pages_for(AUX_BYTES, page, 2);
        let mut sampler = SpeSampler {
            pid,
            pmus: Vec::new(),
            rings: Vec::new(),
            unserved,
            aux_bytes: aux_pages * page,
            all_operations: false,
            aux_scratch: Vec::new(),
            tgids: HashMap::new(),
            totals: DecodeStats::default(),
            lost: 0,
        };
        for cpu in served {
            let Some(pmu) = pmus.iter().find(|p| p.serves(cpu)) else {
                continue;
            };
            let mut attr = sysfs::spe_attr(pmu, period)?;
            if !sampler.pmus.iter().any(|(name, _, _)| *name == pmu.name) {
                sampler
                    .pmus
                    .push((pmu.name.clone(), pmu.pmu_type, attr.sample_period));
            }
            // Wake-ups are not used (drain polls), but the driver ends an AUX record at
            // each watermark: a quarter of the area keeps data flowing while it runs.
            attr.aux_watermark = (aux_pages * page / 4) as u32;
            let fd = match perf_event_open(&attr, pid, cpu as i32, None) {
                // The driver refuses operation-type filters the hardware lacks
                // (PMSIDR_EL1.FT): sample every operation, those without a data address
                // decode to nothing.
                Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                    sysfs::set_field(&mut attr, pmu, "load_filter", 0, true)?;
                    sysfs::set_field(&mut attr, pmu, "store_filter", 0, true)?;
                    sampler.all_operations = true;
                    perf_event_open(&attr, pid, cpu as i32, None)
                }
                other => other,
            }
            .map_err(|e| open_error(pmu, &attr, pid, cpu, &e))?;
            let ring = loop {
                match Ring::map(fd.as_raw_fd(), page, data_pages, aux_pages) {
                    Ok(ring) => break ring,
                    Err(e)
                        if matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOMEM))
                            && aux_pages > 2 =>
                    {
                        aux_pages /= 2;
                    }
                    Err(e) => {
                        return Err(format!(
                            "Mapping the SPE buffers of CPU {cpu} ({} KiB AUX area) was \
                             refused: {e}. Locked perf memory is limited by \
                             /proc/sys/kernel/perf_event_mlock_kb (per CPU) and \
                             RLIMIT_MEMLOCK; raise either, or run with CAP_IPC_LOCK.",
                            aux_pages * page / 1024
                        ))
                    }
                }
            };
            sampler.aux_bytes = aux_pages * page;
            sampler.rings.push(CpuRing { cpu, ring, _fd: fd });
        }
        Ok(sampler)
    }

    /// Reads the PERF_RECORD_AUX records each CPU's ring holds, decodes the AUX bytes they
    /// announce into `out` (timestamps converted to perf's clock when the kernel publishes
    /// the conversion, processes resolved from thread ids), and releases those bytes.
    /// Returns how many AUX records were truncated (the AUX area was full: data dropped)
    /// or flagged collisions (the hardware dropped samples), plus the data records the
    /// kernel reported lost.
    ///
    /// The driver announces AUX data when a quarter of a CPU's area has filled or the
    /// process leaves that CPU; an area left full stops sampling there until the process
    /// is scheduled in again. Call this every few milliseconds while the program runs,
    /// and once after it exits (its events then flush what is left).
    pub(crate) fn drain(&mut self, out: &mut Vec<MemSample>) -> u64 {
        let start = out.len();
        let mut lost = 0;
        for cpu_ring in &mut self.rings {
            let drained = drain_ring(
                &mut cpu_ring.ring,
                self.pid as u32,
                out,
                &mut self.aux_scratch,
            );
            lost += drained.lost;
            add_stats(&mut self.totals, &drained.stats);
        }
        for sample in &mut out[start..] {
            if sample.tid != sample.pid {
                sample.pid = *self
                    .tgids
                    .entry(sample.tid)
                    .or_insert_with(|| tgid_of(sample.tid).unwrap_or(sample.pid));
            }
        }
        self.lost += lost;
        lost
    }

    /// What is sampled and what has been read so far, in one line.
    pub fn description(&self) -> String {
        let pmus: Vec<String> = self
            .pmus
            .iter()
            .map(|(name, ty, interval)| format!("{name} (type {ty}, every {interval} ops)"))
            .collect();
        let cpus: Vec<usize> = self.rings.iter().map(|r| r.cpu).collect();
        let unserved = if self.unserved.is_empty() {
            String::new()
        } else {
            format!(", not on CPUs {} (no SPE there)", cpu_list(&self.unserved))
        };
        let t = &self.totals;
        let what = if self.all_operations {
            "all user-space operations (no load/store filter in this SPE)"
        } else {
            "user-space loads and stores"
        };
        format!(
            "Arm SPE {} on CPUs {}{unserved}: {what} of process {}, \
             {} KiB AUX area per CPU; {} samples from {} records, {} without a data \
             address, {} corrupt, {} AUX records truncated or lost",
            pmus.join(", "),
            cpu_list(&cpus),
            self.pid,
            self.aux_bytes / 1024,
            t.samples,
            t.records,
            t.without_address,
            t.corrupt_records,
            self.lost
        )
    }
}

fn add_stats(total: &mut DecodeStats, s: &DecodeStats) {
    total.records += s.records;
    total.samples += s.samples;
    total.without_address += s.without_address;
    total.corrupt_records += s.corrupt_records;
    total.bad_bytes += s.bad_bytes;
    total.truncated |= s.truncated;
}

/// The process a thread belongs to (`Tgid:` of /proc/TID/status), if it still exists.
fn tgid_of(tid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// What one ring's drain gave.
struct Drained {
    lost: u64,
    stats: DecodeStats,
}

fn field(record: &[u8], offset: usize) -> u64 {
    record
        .get(offset..offset + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

/// Decodes what one ring's PERF_RECORD_AUX records announce. Each announced range is
/// decoded on its own: the driver ends a range where it stopped the hardware, so a range
/// holds whole records unless it was truncated, and a record cut there is dropped.
fn drain_ring(
    ring: &mut Ring,
    default_pid: u32,
    out: &mut Vec<MemSample>,
    aux_scratch: &mut Vec<u8>,
) -> Drained {
    let start = out.len();
    let mut ranges = Vec::new();
    let mut lost = 0;
    ring.read_records(|kind, record| match kind {
        // header (8), aux_offset, aux_size, flags
        PERF_RECORD_AUX => {
            let (offset, size, flags) = (field(record, 8), field(record, 16), field(record, 24));
            if flags & (PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_COLLISION) != 0 {
                lost += 1;
            }
            ranges.push((offset, size));
        }
        // header (8), id, lost
        PERF_RECORD_LOST => lost += field(record, 16),
        _ => {}
    });
    let mut stats = DecodeStats::default();
    for (offset, size) in ranges {
        let size = size.min(ring.aux_len() as u64);
        ring.copy_aux(offset, size, aux_scratch);
        let s = decode_at(aux_scratch, offset, default_pid, out);
        add_stats(&mut stats, &s);
        ring.release_aux(offset + size);
    }
    if let Some(conv) = ring.time_conv() {
        for sample in &mut out[start..] {
            if sample.time_ns != 0 {
                sample.time_ns = conv.to_ns(sample.time_ns);
            }
        }
    }
    Drained { lost, stats }
}

#[cfg(test)]
mod tests;
