//! Hardware partitioning of the last-level cache (L3 CAT ways) and of memory bandwidth
//! (MBA throttling) through the kernel's resctrl filesystem, for a command memscope runs.
//!
//! resctrl is used only where it is already mounted (found in /proc/self/mountinfo by
//! its fs type; memscope never mounts it): `detect` reads `info/L3/{cbm_mask,
//! min_cbm_bits,num_closids,shareable_bits}`, `info/MB/{min_bandwidth,bandwidth_gran,
//! delay_linear,num_closids}` and the default group's `schemata` (the domain ids of each
//! resource), and says why it cannot be used otherwise (not mounted, with the CPU's
//! `rdt_a`/`cat_l3`/`mba` flags; L3 split by CDP; MB not in percent, as on AMD or with
//! `mba_MBps`). A `ResctrlGroup` is a new group `memscope-PID-N` that memscope makes
//! itself (an existing name is refused, never reused), journaled before its `mkdir` as
//! `journal::Change::ResctrlGroup` and registered with `cleanup`, so that it is removed on
//! drop, on SIGINT/SIGTERM, and by the next start (`restore_stale`) after a SIGKILL: its
//! `rmdir` hands its tasks back to the default group. Only the resources it restricts are
//! written to its `schemata`; the default group and groups memscope did not make are
//! never written. Everything is done relative to a descriptor of the resctrl root, which
//! must be a resctrl filesystem (statfs magic `RDTGROUP_SUPER_MAGIC`); tests use a
//! synthetic tree in a temporary directory instead (`Fs::Synthetic`, test builds only),
//! where memscope imitates what the kernel does on mkdir and rmdir.

use std::ffi::{CStr, CString};
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::cleanup;
use super::journal::{self, Change, Entry, Outcome, Record};
use crate::fs::{cvt, open_at, open_dir_path, stat_at, stat_fd};

mod group;
#[cfg(test)]
use group::SYNTHETIC_FILES;
pub use group::{restore_stale, Limit, ResctrlGroup};

/// `RDTGROUP_SUPER_MAGIC` of include/uapi/linux/magic.h: statfs's `f_type` of resctrl.
pub(crate) const RDTGROUP_SUPER_MAGIC: i64 = 0x7655821;

/// Every group memscope makes is named `memscope-PID-N`.
pub(crate) const GROUP_PREFIX: &str = "memscope-";

/// The most read from any resctrl file (they are a line or a few).
const READ_CAP: u64 = 64 * 1024;

/// What the resctrl root is expected to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fs {
    /// The kernel's resctrl filesystem (checked by its statfs magic).
    Resctrl,
    /// A directory tree in a test standing in for it: no magic check, and memscope makes
    /// and removes a group's files itself, as the kernel would.
    #[cfg(any(test, feature = "test-support"))]
    Synthetic,
}

/// The CPU's resource-allocation flags in /proc/cpuinfo (what mounting could offer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuFlags {
    pub rdt_a: bool,
    pub cat_l3: bool,
    pub mba: bool,
}

impl CpuFlags {
    /// The flags of the first `flags` line of /proc/cpuinfo's text.
    pub fn parse(cpuinfo: &str) -> CpuFlags {
        let flags = cpuinfo
            .lines()
            .find_map(|l| {
                let (key, value) = l.split_once(':')?;
                (key.trim() == "flags").then_some(value)
            })
            .unwrap_or("");
        let has = |f: &str| flags.split_whitespace().any(|w| w == f);
        CpuFlags {
            rdt_a: has("rdt_a"),
            cat_l3: has("cat_l3"),
            mba: has("mba"),
        }
    }

    fn describe(self) -> String {
        let present: Vec<&str> = [
            ("rdt_a", self.rdt_a),
            ("cat_l3", self.cat_l3),
            ("mba", self.mba),
        ]
        .iter()
        .filter(|f| f.1)
        .map(|f| f.0)
        .collect();
        if present.is_empty() {
            "this CPU has no cache or bandwidth allocation (no rdt_a, cat_l3 or mba flag in \
             /proc/cpuinfo), so mounting it would not help"
                .to_string()
        } else {
            format!("this CPU has {}", present.join(", "))
        }
    }
}

/// L3 cache allocation (CAT), from `info/L3` and the default group's `L3` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cat {
    /// Every way the groups may be given (contiguous on Intel).
    pub cbm_mask: u64,
    pub min_cbm_bits: u32,
    pub num_closids: u32,
    /// Ways other agents (I/O, GPUs) may use too.
    pub shareable_bits: u64,
    /// The cache domains (L3 instances) of the schemata.
    pub domains: Vec<u32>,
}

impl Cat {
    /// The number of ways.
    pub fn ways(&self) -> u32 {
        self.cbm_mask.count_ones()
    }

    /// The bit mask of `ways` contiguous ways (see `contiguous_cbm`).
    pub fn mask(&self, ways: u32) -> Option<u64> {
        if ways < self.min_cbm_bits.max(1) {
            return None;
        }
        contiguous_cbm(self.cbm_mask, self.shareable_bits, ways)
    }
}

/// Memory bandwidth allocation (MBA) in percent, from `info/MB` and the `MB` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mba {
    pub min_bandwidth: u32,
    pub bandwidth_gran: u32,
    /// The percentages are applied linearly (else approximately).
    pub delay_linear: bool,
    pub num_closids: u32,
    pub domains: Vec<u32>,
}

/// A mounted resctrl, open, and what it offers.
#[derive(Debug)]
pub struct Resctrl {
    root: OwnedFd,
    path: PathBuf,
    fs: Fs,
    pub l3: Option<Cat>,
    pub mb: Option<Mba>,
    /// Why a resource resctrl shows is not used (CDP, MB not in percent, …).
    pub notes: Vec<String>,
}

/// Why resctrl cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// No resctrl in /proc/self/mountinfo; what the CPU offers.
    NotMounted(CpuFlags),
    /// The mount point is not a resctrl filesystem (or could not be checked).
    NotResctrl { path: PathBuf, why: String },
    /// A file under it could not be read or understood.
    Unreadable { path: PathBuf, why: String },
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::NotMounted(flags) => write!(
                f,
                "resctrl is not mounted (mount -t resctrl resctrl /sys/fs/resctrl); {}",
                flags.describe()
            ),
            Unavailable::NotResctrl { path, why } => {
                write!(f, "{} is not a resctrl filesystem ({why})", path.display())
            }
            Unavailable::Unreadable { path, why } => {
                write!(f, "cannot read resctrl's {} ({why})", path.display())
            }
        }
    }
}

/// Finds and reads the mounted resctrl of this system.
pub fn detect() -> Result<Resctrl, Unavailable> {
    let read = |path: &str| read_capped(Path::new(path)).unwrap_or_default();
    detect_with(
        &read("/proc/self/mountinfo"),
        &read("/proc/cpuinfo"),
        Fs::Resctrl,
    )
}

/// `detect` from the texts of /proc/self/mountinfo and /proc/cpuinfo.
pub(crate) fn detect_with(mountinfo: &str, cpuinfo: &str, fs: Fs) -> Result<Resctrl, Unavailable> {
    let Some(path) = mount_point(mountinfo) else {
        return Err(Unavailable::NotMounted(CpuFlags::parse(cpuinfo)));
    };
    Resctrl::open(&path, fs)
}

/// The mount point of the first resctrl mount of mountinfo's text (fields: id, parent,
/// dev, root, mount point, options, optional fields, "-", fs type, source, options).
pub fn mount_point(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        if after.split(' ').next()? != "resctrl" {
            return None;
        }
        Some(PathBuf::from(unescape(before.split(' ').nth(4)?)))
    })
}

/// mountinfo escapes space, tab, newline and backslash as `\NNN` (octal).
fn unescape(field: &str) -> std::ffi::OsString {
    let bytes = crate::topology::storage::unescape_bytes(field);
    std::ffi::OsString::from(std::ffi::OsStr::from_bytes(&bytes))
}

impl Resctrl {
    /// Opens the resctrl root at `path` (checked to be `fs`) and reads what it offers.
    pub fn open(path: &Path, fs: Fs) -> Result<Resctrl, Unavailable> {
        let not_resctrl = |why: String| Unavailable::NotResctrl {
            path: path.to_path_buf(),
            why,
        };
        let root = open_dir_path(path).map_err(|e| not_resctrl(e.to_string()))?;
        check_fs(root.as_raw_fd(), fs).map_err(not_resctrl)?;
        let mut resctrl = Resctrl {
            root,
            path: path.to_path_buf(),
            fs,
            l3: None,
            mb: None,
            notes: Vec::new(),
        };
        let schemata = resctrl.read("schemata")?;
        let lines = parse_schemata(&schemata);
        let domains = |name: &str| {
            lines
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, d)| d.clone())
        };
        if resctrl.exists("info/L3") {
            let cbm_mask = resctrl.read_hex("info/L3/cbm_mask")?;
            let Some(l3) = domains("L3") else {
                return Err(resctrl.unreadable("schemata", "no L3 line"));
            };
            resctrl.l3 = Some(Cat {
                cbm_mask,
                min_cbm_bits: resctrl.read_number("info/L3/min_cbm_bits")?,
                num_closids: resctrl.read_number("info/L3/num_closids")?,
                shareable_bits: resctrl.read_hex("info/L3/shareable_bits").unwrap_or(0),
                domains: l3.iter().map(|d| d.0).collect(),
            });
        } else if resctrl.exists("info/L3CODE") {
            resctrl.notes.push(
                "L3 CAT is split into code and data (CDP is on): memscope restricts only a \
                 unified L3"
                    .to_string(),
            );
        }
        if resctrl.exists("info/MB") {
            let Some(mb) = domains("MB") else {
                return Err(resctrl.unreadable("schemata", "no MB line"));
            };
            // In percent the default group holds 100 everywhere; AMD's units (1/8 GB/s)
            // and the mba_MBps mount option show other values, which memscope does not
            // turn into a share.
            if mb.iter().all(|d| d.1 == "100") {
                resctrl.mb = Some(Mba {
                    min_bandwidth: resctrl.read_number("info/MB/min_bandwidth")?,
                    bandwidth_gran: resctrl.read_number("info/MB/bandwidth_gran")?,
                    delay_linear: resctrl.read_number("info/MB/delay_linear").unwrap_or(1) == 1,
                    num_closids: resctrl.read_number("info/MB/num_closids").unwrap_or(0),
                    domains: mb.iter().map(|d| d.0).collect(),
                });
            } else {
                resctrl.notes.push(format!(
                    "MBA's default values are not percentages here (MB:{}: AMD's units or the \
                     mba_MBps mount option): memscope does not throttle with them",
                    mb.iter()
                        .map(|d| format!("{}={}", d.0, d.1))
                        .collect::<Vec<_>>()
                        .join(";")
                ));
            }
        }
        Ok(resctrl)
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schemata line restricting a group to `ways` L3 ways in every domain, or why not.
    pub(crate) fn l3_schemata(&self, ways: u32) -> Result<String, String> {
        let cat = self.l3.as_ref().ok_or("no L3 CAT here")?;
        let mask = cat.mask(ways).ok_or_else(|| {
            format!(
                "no {ways} contiguous ways in cbm_mask {:x} (at least {})",
                cat.cbm_mask, cat.min_cbm_bits
            )
        })?;
        Ok(line("L3", &cat.domains, &format!("{mask:x}")))
    }

    /// The schemata line throttling a group to about `percent` of the bandwidth.
    pub(crate) fn mb_schemata(&self, percent: u32) -> Result<String, String> {
        let mba = self.mb.as_ref().ok_or("no MBA in percent here")?;
        let value = mb_percent(percent, mba.bandwidth_gran, mba.min_bandwidth);
        Ok(line("MB", &mba.domains, &value.to_string()))
    }

    fn exists(&self, rel: &str) -> bool {
        cstring(rel).is_ok_and(|c| stat_at(self.root.as_raw_fd(), &c).is_ok())
    }

    fn unreadable(&self, rel: &str, why: &str) -> Unavailable {
        Unavailable::Unreadable {
            path: self.path.join(rel),
            why: why.to_string(),
        }
    }

    /// A file under the root, read relative to its descriptor (capped).
    fn read(&self, rel: &str) -> Result<String, Unavailable> {
        let opened =
            cstring(rel).and_then(|c| open_at(self.root.as_raw_fd(), &c, libc::O_RDONLY, 0));
        let mut text = String::new();
        opened
            .and_then(|fd| File::from(fd).take(READ_CAP).read_to_string(&mut text))
            .map_err(|e| self.unreadable(rel, &e.to_string()))?;
        Ok(text)
    }

    fn read_hex(&self, rel: &str) -> Result<u64, Unavailable> {
        let text = self.read(rel)?;
        u64::from_str_radix(text.trim(), 16)
            .map_err(|_| self.unreadable(rel, &format!("'{}' is not a hex mask", text.trim())))
    }

    fn read_number(&self, rel: &str) -> Result<u32, Unavailable> {
        let text = self.read(rel)?;
        text.trim()
            .parse()
            .map_err(|_| self.unreadable(rel, &format!("'{}' is not a number", text.trim())))
    }
}

/// `NAME:0=v;1=v`.
fn line(name: &str, domains: &[u32], value: &str) -> String {
    let parts: Vec<String> = domains.iter().map(|d| format!("{d}={value}")).collect();
    format!("{name}:{}\n", parts.join(";"))
}

/// Each line of a schemata text as (resource, [(domain, value)]); lines that do not parse
/// are skipped.
pub(crate) fn parse_schemata(text: &str) -> Vec<(String, Vec<(u32, String)>)> {
    text.lines()
        .filter_map(|l| {
            let (name, rest) = l.trim().split_once(':')?;
            let domains = rest
                .split(';')
                .filter_map(|d| {
                    let (id, value) = d.split_once('=')?;
                    Some((id.trim().parse().ok()?, value.trim().to_string()))
                })
                .collect();
            Some((name.trim().to_string(), domains))
        })
        .collect()
}

/// `ways` contiguous bits inside `cbm_mask` (Intel's CAT takes contiguous masks only),
/// placed where they overlap `shareable_bits` least (ways other agents use), the lowest
/// such place on a tie; `None` when there are not that many ways.
pub(crate) fn contiguous_cbm(cbm_mask: u64, shareable_bits: u64, ways: u32) -> Option<u64> {
    if ways == 0 || ways > cbm_mask.count_ones() {
        return None;
    }
    let window = if ways >= 64 {
        u64::MAX
    } else {
        (1u64 << ways) - 1
    };
    let mut best: Option<(u32, u64)> = None;
    for shift in 0..=(64 - ways) {
        let mask = window << shift;
        if mask & cbm_mask != mask {
            continue;
        }
        let overlap = (mask & shareable_bits).count_ones();
        if best.is_none_or(|(o, _)| overlap < o) {
            best = Some((overlap, mask));
        }
    }
    best.map(|(_, mask)| mask)
}

/// The bytes of an L3 of `llc_bytes` in `ways` of its `total_ways` ways.
pub fn capacity_of_ways(llc_bytes: u64, ways: u32, total_ways: u32) -> u64 {
    if total_ways == 0 {
        return 0;
    }
    (u128::from(llc_bytes) * u128::from(ways) / u128::from(total_ways)) as u64
}

/// The ways (1..=total) that hold nearest to `bytes` of an L3 of `llc_bytes`.
pub fn ways_for_capacity(llc_bytes: u64, total_ways: u32, bytes: u64) -> u32 {
    if llc_bytes == 0 || total_ways == 0 {
        return 0;
    }
    let ways = (bytes as f64 * f64::from(total_ways) / llc_bytes as f64).round();
    (ways as u32).clamp(1, total_ways)
}

/// `percent` as MBA takes it: a multiple of `gran` (the nearer one, the lower on a tie),
/// at least `min` and at most 100.
pub fn mb_percent(percent: u32, gran: u32, min: u32) -> u32 {
    let gran = gran.max(1);
    let rounded = (percent + (gran - 1) / 2) / gran * gran;
    rounded.max(min).min(100)
}

/// Checks that the directory open as `fd` is what `fs` says.
fn check_fs(fd: RawFd, fs: Fs) -> Result<(), String> {
    match fs {
        Fs::Resctrl => {
            // SAFETY: an all-zero statfs is a valid value of the plain C struct.
            let mut st: libc::statfs = unsafe { std::mem::zeroed() };
            // SAFETY: fstatfs fills the struct it is given from an open descriptor.
            cvt(unsafe { libc::fstatfs(fd, &mut st) }).map_err(|e| e.to_string())?;
            let magic = st.f_type as i64;
            if magic == RDTGROUP_SUPER_MAGIC {
                Ok(())
            } else {
                Err(format!(
                    "statfs type {magic:#x}, not resctrl's {RDTGROUP_SUPER_MAGIC:#x}"
                ))
            }
        }
        #[cfg(any(test, feature = "test-support"))]
        Fs::Synthetic => Ok(()),
    }
}

fn annotate(error: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(error.kind(), format!("{what} {} ({error})", path.display()))
}

fn read_capped(path: &Path) -> io::Result<String> {
    let mut text = String::new();
    File::open(path)?.take(4 << 20).read_to_string(&mut text)?;
    Ok(text)
}

fn cstring(name: &str) -> io::Result<CString> {
    CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("'{name}' holds a NUL")))
}

/// Synthetic resctrl trees for tests (here and in the modules that use resctrl).
#[cfg(any(test, feature = "test-support"))]
pub mod fake;
#[cfg(test)]
mod tests;
