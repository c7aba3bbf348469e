//! Opening the chosen events: the `perf_event_attr` of each, one event (or aux-led
//! group) per CPU sharing that CPU's ring buffer, and the sentence to show when the
//! kernel refuses (permissions, no such event, a kernel too old for per-process IBS).

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use super::datasrc::Encoding;
use super::events::EventSpec;
use super::ring::Ring;
use super::SAMPLE_TYPE;
use crate::counters::sys::{
    event_id, flag_precise_ip, perf_event_open, set_output, PerfEventAttr, FLAG_DISABLED,
    FLAG_ENABLE_ON_EXEC, FLAG_EXCLUDE_KERNEL, FLAG_INHERIT, FLAG_SAMPLE_ID_ALL,
};

/// Data pages per CPU ring (a power of two): 256 KiB with 4 KiB pages, within the
/// default `perf_event_mlock_kb` (516 KiB per CPU) for unprivileged users.
const DATA_PAGES: usize = 64;
/// The fallback when the larger mapping is refused (locked-memory limit).
const SMALL_DATA_PAGES: usize = 8;
/// Per-process IBS sampling arrived in Linux 6.2.
const IBS_PER_PROCESS_KERNEL: (u32, u32) = (6, 2);

/// What `open_all` opened.
pub(crate) struct Opened {
    pub ids: HashMap<u64, Option<usize>>,
    pub rings: Vec<Ring>,
    pub fds: Vec<OwnedFd>,
}

/// The attribute of `spec` sampling every `period` events; a group leader starts
/// disabled and is enabled by the exec, a member follows its leader.
pub(crate) fn attr_for(spec: &EventSpec, period: u64, config: u64, leader: bool) -> PerfEventAttr {
    let mut attr = PerfEventAttr::new(spec.pmu_type, config);
    attr.config1 = spec.config1;
    attr.config2 = spec.config2;
    if config != spec.config {
        // The aux leader carries only its own encoding.
        attr.config1 = 0;
        attr.config2 = 0;
    }
    attr.sample_period = period;
    attr.sample_type = SAMPLE_TYPE;
    attr.flags = FLAG_INHERIT | FLAG_SAMPLE_ID_ALL | flag_precise_ip(spec.precise_ip);
    if leader {
        attr.flags |= FLAG_DISABLED | FLAG_ENABLE_ON_EXEC;
    }
    if !spec.needs_kernel {
        attr.flags |= FLAG_EXCLUDE_KERNEL;
    }
    attr
}

/// Whether the release string (e.g. "6.1.0-18-amd64") is at least `major.minor`;
/// unparseable releases pass (the open will tell).
pub(crate) fn kernel_at_least(release: &str, (major, minor): (u32, u32)) -> bool {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let num = |p: Option<&str>| p.and_then(|s| s.parse::<u32>().ok());
    match (num(parts.next()), num(parts.next())) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => true,
    }
}

/// Refuses IBS on kernels that cannot sample it per process.
pub(crate) fn check_kernel(specs: &[EventSpec], release: &str) -> Result<(), String> {
    let ibs = specs.iter().any(|s| s.encoding == Encoding::AmdIbs);
    if ibs && !kernel_at_least(release, IBS_PER_PROCESS_KERNEL) {
        let (a, b) = IBS_PER_PROCESS_KERNEL;
        return Err(format!(
            "kernel {release} is too old for per-process IBS sampling (it samples \
             whole CPUs only); Linux {a}.{b} or later would enable it"
        ));
    }
    Ok(())
}

/// /proc/sys/kernel/perf_event_paranoid.
pub(crate) fn read_paranoid() -> Option<i32> {
    fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Root, or CAP_PERFMON (38) or CAP_SYS_ADMIN (21) in the effective set.
pub(crate) fn privileged() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & ((1 << 38) | (1 << 21)) != 0)
}

/// The highest paranoid level at which an unprivileged user may open `specs`: 2 when
/// they exclude the kernel, 1 when they sample it too.
fn paranoid_limit(specs: &[EventSpec]) -> i32 {
    if specs.iter().any(|s| s.needs_kernel) {
        1
    } else {
        2
    }
}

/// The sentence for a refusal on permission grounds.
pub(crate) fn permission_error(specs: &[EventSpec], paranoid: Option<i32>) -> String {
    let limit = paranoid_limit(specs);
    let level = paranoid.map_or("unreadable".to_string(), |p| p.to_string());
    let why = if limit < 2 {
        " (IBS here cannot leave out kernel mode, so it samples the kernel too)"
    } else {
        ""
    };
    format!(
        "not permitted: perf_event_paranoid is {level} and precise memory sampling needs \
         {limit} or lower{why}, root or CAP_PERFMON; run as root, grant CAP_PERFMON \
         (`sudo setcap cap_perfmon+ep memscope`) or `sudo sysctl \
         kernel.perf_event_paranoid={limit}`"
    )
}

/// Refuses, before opening anything, when the paranoid level forbids `specs`.
pub(crate) fn check_permission(
    specs: &[EventSpec],
    paranoid: Option<i32>,
    privileged: bool,
) -> Result<(), String> {
    match paranoid {
        Some(p) if !privileged && p > paranoid_limit(specs) => {
            Err(permission_error(specs, paranoid))
        }
        _ => Ok(()),
    }
}

/// The sentence for `perf_event_open` refusing `spec` with `errno`.
pub(crate) fn explain_errno(spec: &EventSpec, errno: i32, paranoid: Option<i32>) -> String {
    match errno {
        libc::EACCES | libc::EPERM => permission_error(std::slice::from_ref(spec), paranoid),
        libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP | libc::EINVAL => format!(
            "no precise memory event on this CPU: the kernel refused {} ({}); a CPU and \
             kernel whose {} PMU supports it (on bare metal) would enable it",
            spec.name,
            io::Error::from_raw_os_error(errno),
            spec.pmu
        ),
        libc::EBUSY => format!(
            "the {} PMU is in use by another program (e.g. a running perf); stopping it \
             would let {} open",
            spec.pmu, spec.name
        ),
        libc::EMFILE | libc::ENFILE => format!(
            "too many open files to open {} on every CPU; raise the limit with `ulimit -n`",
            spec.name
        ),
        other => format!(
            "perf_event_open refused {}: {} (errno {other}); a kernel with perf events \
             for this PMU would enable it",
            spec.name,
            io::Error::from_raw_os_error(other)
        ),
    }
}

fn open_one(
    attr: &PerfEventAttr,
    spec: &EventSpec,
    pid: libc::pid_t,
    cpu: usize,
    group: Option<RawFd>,
) -> Result<OwnedFd, String> {
    perf_event_open(attr, pid, cpu as i32, group).map_err(|e| {
        explain_errno(
            spec,
            e.raw_os_error().unwrap_or(libc::EINVAL),
            read_paranoid(),
        )
    })
}

/// Maps a ring on `fd` (the first event of a CPU), or sends `fd`'s records to the ring
/// already there.
fn attach(
    fd: &OwnedFd,
    ring_fd: &mut Option<RawFd>,
    rings: &mut Vec<Ring>,
    cpu: usize,
) -> Result<(), String> {
    if let Some(target) = *ring_fd {
        return set_output(fd.as_raw_fd(), target)
            .map_err(|e| format!("could not share CPU {cpu}'s ring buffer between events: {e}"));
    }
    let ring = Ring::map(fd.as_raw_fd(), DATA_PAGES)
        .or_else(|_| Ring::map(fd.as_raw_fd(), SMALL_DATA_PAGES))
        .map_err(|e| {
            format!(
                "could not map a ring buffer for CPU {cpu}: {e}; raising \
                 kernel.perf_event_mlock_kb or `ulimit -l` would allow it"
            )
        })?;
    rings.push(ring);
    *ring_fd = Some(fd.as_raw_fd());
    Ok(())
}

/// Opens every spec on every CPU of `cpus` it runs on, for `pid` and its descendants.
pub(crate) fn open_all(
    specs: &[EventSpec],
    periods: &[u64],
    pid: libc::pid_t,
    cpus: &[usize],
) -> Result<Opened, String> {
    let mut out = Opened {
        ids: HashMap::new(),
        rings: Vec::new(),
        fds: Vec::new(),
    };
    let id_of = |fd: &OwnedFd| {
        event_id(fd.as_raw_fd()).map_err(|e| format!("could not read a sampling event's id: {e}"))
    };
    for &cpu in cpus {
        let mut ring_fd = None;
        for (i, (spec, &period)) in specs.iter().zip(periods).enumerate() {
            if !spec.runs_on(cpu) {
                continue;
            }
            let group = match spec.aux_leader {
                Some(aux) => {
                    let attr = attr_for(spec, period, aux, true);
                    let leader = open_one(&attr, spec, pid, cpu, None)?;
                    attach(&leader, &mut ring_fd, &mut out.rings, cpu)?;
                    out.ids.insert(id_of(&leader)?, None);
                    out.fds.push(leader);
                    out.fds.last().map(|fd| fd.as_raw_fd())
                }
                None => None,
            };
            let attr = attr_for(spec, period, spec.config, group.is_none());
            let fd = open_one(&attr, spec, pid, cpu, group)?;
            attach(&fd, &mut ring_fd, &mut out.rings, cpu)?;
            out.ids.insert(id_of(&fd)?, Some(i));
            out.fds.push(fd);
        }
    }
    if out.rings.is_empty() {
        return Err(
            "no sampling event runs on any of the CPUs given; listing CPUs of a \
                    core type whose PMU has a precise memory event would enable it"
                .to_string(),
        );
    }
    Ok(out)
}
