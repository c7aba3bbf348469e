//! The raw `perf_event_open` interface: the `perf_event_attr` struct (defined here, as
//! linux/perf_event.h lays it out up to PERF_ATTR_SIZE_VER5), the constants memscope
//! uses, and thin wrappers for the system call and the ioctls. Nothing here interprets
//! a result; `group` and `probe` do.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// `struct perf_event_attr` through PERF_ATTR_SIZE_VER5 (112 bytes). The kernel accepts
/// any published size and treats the fields it is not given as zero.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PerfEventAttr {
    pub type_: u32,
    pub size: u32,
    pub config: u64,
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    /// The bitfield word: `disabled`, `inherit`, … (the `FLAG_*` constants).
    pub flags: u64,
    pub wakeup_events: u32,
    pub bp_type: u32,
    pub config1: u64,
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved_2: u16,
}

pub const PERF_ATTR_SIZE_VER5: u32 = 112;
const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == PERF_ATTR_SIZE_VER5 as usize);

impl PerfEventAttr {
    /// An attribute with `size` set and everything else zero.
    pub fn new(type_: u32, config: u64) -> PerfEventAttr {
        PerfEventAttr {
            type_,
            size: PERF_ATTR_SIZE_VER5,
            config,
            ..PerfEventAttr::default()
        }
    }
}

// Bits of `PerfEventAttr::flags`.
pub const FLAG_DISABLED: u64 = 1 << 0;
pub const FLAG_INHERIT: u64 = 1 << 1;
pub const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
pub const FLAG_EXCLUDE_HV: u64 = 1 << 6;
pub const FLAG_ENABLE_ON_EXEC: u64 = 1 << 12;
/// `precise_ip` is the two-bit field at bits 15-16 (0 = arbitrary skid … 3 = zero skid).
pub(crate) const FLAG_PRECISE_IP_SHIFT: u32 = 15;
pub const FLAG_PRECISE_IP_MASK: u64 = 3 << FLAG_PRECISE_IP_SHIFT;
/// Non-sample records (LOST, THROTTLE, …) carry the `sample_id` trailer too.
pub const FLAG_SAMPLE_ID_ALL: u64 = 1 << 18;

/// The `flags` bits that set `precise_ip` to `level` (0-3; higher values are clipped).
pub const fn flag_precise_ip(level: u8) -> u64 {
    ((level as u64) & 3) << FLAG_PRECISE_IP_SHIFT
}

// `sample_type` bits (the PERF_SAMPLE_* of linux/perf_event.h).
pub const SAMPLE_IP: u64 = 1 << 0;
pub const SAMPLE_TID: u64 = 1 << 1;
pub const SAMPLE_TIME: u64 = 1 << 2;
pub const SAMPLE_ADDR: u64 = 1 << 3;
pub const SAMPLE_READ: u64 = 1 << 4;
pub const SAMPLE_CALLCHAIN: u64 = 1 << 5;
pub const SAMPLE_ID: u64 = 1 << 6;
pub const SAMPLE_CPU: u64 = 1 << 7;
pub const SAMPLE_PERIOD: u64 = 1 << 8;
pub const SAMPLE_STREAM_ID: u64 = 1 << 9;
pub const SAMPLE_RAW: u64 = 1 << 10;
pub const SAMPLE_BRANCH_STACK: u64 = 1 << 11;
pub const SAMPLE_REGS_USER: u64 = 1 << 12;
pub const SAMPLE_STACK_USER: u64 = 1 << 13;
pub const SAMPLE_WEIGHT: u64 = 1 << 14;
pub const SAMPLE_DATA_SRC: u64 = 1 << 15;
pub const SAMPLE_IDENTIFIER: u64 = 1 << 16;
pub const SAMPLE_TRANSACTION: u64 = 1 << 17;
pub const SAMPLE_REGS_INTR: u64 = 1 << 18;
pub const SAMPLE_PHYS_ADDR: u64 = 1 << 19;
pub const SAMPLE_AUX: u64 = 1 << 20;
pub const SAMPLE_CGROUP: u64 = 1 << 21;
pub const SAMPLE_DATA_PAGE_SIZE: u64 = 1 << 22;
pub const SAMPLE_CODE_PAGE_SIZE: u64 = 1 << 23;
pub const SAMPLE_WEIGHT_STRUCT: u64 = 1 << 24;

// `perf_event_header::type_` of the records in the ring buffer.
pub const RECORD_LOST: u32 = 2;
pub const RECORD_THROTTLE: u32 = 5;
pub const RECORD_UNTHROTTLE: u32 = 6;
pub const RECORD_SAMPLE: u32 = 9;
pub const RECORD_LOST_SAMPLES: u32 = 13;

/// `struct perf_event_header`: 8 bytes ahead of every record in the ring buffer.
pub const RECORD_HEADER_SIZE: usize = 8;

// Byte offsets in `struct perf_event_mmap_page`, the first page of the ring mapping.
pub const MMAP_DATA_HEAD: usize = 1024;
pub const MMAP_DATA_TAIL: usize = 1032;
/// Where the data area starts and how long it is (Linux 4.1+; zero before: then the
/// data area is the rest of the mapping after the first page).
pub const MMAP_DATA_OFFSET: usize = 1040;
pub const MMAP_DATA_SIZE: usize = 1048;

// `read_format` bits.
pub(crate) const FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
pub(crate) const FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
pub(crate) const FORMAT_ID: u64 = 1 << 2;
pub(crate) const FORMAT_GROUP: u64 = 1 << 3;

const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

// ioctl requests: _IO('$', n), and _IOR('$', 7, u64) whose direction bits differ on the
// architectures with the old ioctl layout.
const IOC_ENABLE: u64 = 0x2400;
const IOC_DISABLE: u64 = 0x2401;
const IOC_RESET: u64 = 0x2403;
const IOC_SET_OUTPUT: u64 = 0x2405;
#[cfg(any(
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc64"
))]
const IOC_ID: u64 = 0x4008_2407;
#[cfg(not(any(
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc64"
)))]
const IOC_ID: u64 = 0x8008_2407;
const PERF_IOC_FLAG_GROUP: libc::c_ulong = 1;

/// `perf_event_open(attr, pid, cpu, group_fd, FD_CLOEXEC)`; the error is the errno.
pub fn perf_event_open(
    attr: &PerfEventAttr,
    pid: libc::pid_t,
    cpu: i32,
    group_fd: Option<RawFd>,
) -> io::Result<OwnedFd> {
    // SAFETY: `attr` is a valid, initialised perf_event_attr of the size it declares;
    // the other arguments are plain integers.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid,
            cpu,
            group_fd.unwrap_or(-1),
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Opens on any CPU; when counting the kernel too is not permitted (EACCES/EPERM, e.g.
/// `perf_event_paranoid` ≥ 2 without CAP_PERFMON) retries user space only, as `perf
/// stat` does. Returns the descriptor and whether it counts user space only.
pub(crate) fn open_with_fallback(
    attr: &PerfEventAttr,
    pid: libc::pid_t,
    group_fd: Option<RawFd>,
) -> io::Result<(OwnedFd, bool)> {
    match perf_event_open(attr, pid, -1, group_fd) {
        Ok(fd) => Ok((fd, attr.flags & FLAG_EXCLUDE_KERNEL != 0)),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => {
            let user_only = PerfEventAttr {
                flags: attr.flags | FLAG_EXCLUDE_KERNEL,
                ..*attr
            };
            // Report the first error if the retry fails too: it names the real cause.
            perf_event_open(&user_only, pid, -1, group_fd)
                .map(|fd| (fd, true))
                .map_err(|_| e)
        }
        Err(e) => Err(e),
    }
}

fn ioctl(fd: RawFd, request: u64, arg: libc::c_ulong) -> io::Result<()> {
    // SAFETY: the perf ioctls used here take an integer argument.
    let rc = unsafe { libc::ioctl(fd, request as _, arg) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Enables the group led by `leader`: the leader only, as `perf` does. Members are opened
/// enabled and count whenever their leader does; enabling them too (PERF_IOC_FLAG_GROUP)
/// would pair with a group disable that switches them off, after which the kernel (seen
/// on Linux 6.18) does not schedule them back in with the leader: they read 0 from the
/// second interval on.
pub(crate) fn enable_group(leader: RawFd) -> io::Result<()> {
    ioctl(leader, IOC_ENABLE, 0)
}

/// Disables the group led by `leader` (the leader only: its members stop with it).
pub(crate) fn disable_group(leader: RawFd) -> io::Result<()> {
    ioctl(leader, IOC_DISABLE, 0)
}

/// Sets the counts of the group led by `leader` to zero (the times keep running).
pub(crate) fn reset_group(leader: RawFd) -> io::Result<()> {
    ioctl(leader, IOC_RESET, PERF_IOC_FLAG_GROUP)
}

/// Sends the records of `fd` to the ring buffer mapped for `target` (same CPU, or
/// same task): one mapping serves every event opened on a CPU.
pub fn set_output(fd: RawFd, target: RawFd) -> io::Result<()> {
    ioctl(fd, IOC_SET_OUTPUT, target as libc::c_ulong)
}

/// The kernel's id of one event, as it appears in `FORMAT_ID` reads.
pub fn event_id(fd: RawFd) -> io::Result<u64> {
    let mut id = 0u64;
    // SAFETY: PERF_EVENT_IOC_ID writes one u64 through the pointer, which is valid.
    let rc = unsafe { libc::ioctl(fd, IOC_ID as _, &mut id as *mut u64) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(id)
}

/// Reads a group (`FORMAT_GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING | ID`) of at
/// most `members` events into `nr, time_enabled, time_running, {value, id} × nr`.
pub(crate) fn read_group(leader: RawFd, members: usize) -> io::Result<Vec<u64>> {
    let mut buf = vec![0u64; 3 + 2 * members];
    let bytes = std::mem::size_of_val(buf.as_slice());
    // SAFETY: the buffer is valid for `bytes` bytes of writes.
    let n = unsafe { libc::read(leader, buf.as_mut_ptr().cast(), bytes) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let words = n as usize / 8;
    if words < 3 || buf[0] as usize > members || words < 3 + 2 * buf[0] as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("short perf group read: {n} bytes for {members} events"),
        ));
    }
    buf.truncate(words);
    Ok(buf)
}
