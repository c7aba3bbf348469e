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
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::cleanup;
use super::journal::{self, Change, Entry, Outcome, Record};
use super::scratch::{cvt, open_at, stat_at, stat_fd};

/// `RDTGROUP_SUPER_MAGIC` of include/uapi/linux/magic.h: statfs's `f_type` of resctrl.
pub const RDTGROUP_SUPER_MAGIC: i64 = 0x7655821;

/// Every group memscope makes is named `memscope-PID-N`.
pub const GROUP_PREFIX: &str = "memscope-";

/// The most read from any resctrl file (they are a line or a few).
const READ_CAP: u64 = 64 * 1024;

/// What the resctrl root is expected to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fs {
    /// The kernel's resctrl filesystem (checked by its statfs magic).
    Resctrl,
    /// A directory tree in a test standing in for it: no magic check, and memscope makes
    /// and removes a group's files itself, as the kernel would.
    #[cfg(test)]
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
pub fn detect_with(mountinfo: &str, cpuinfo: &str, fs: Fs) -> Result<Resctrl, Unavailable> {
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
        let root = open_path(path, libc::O_RDONLY | libc::O_DIRECTORY)
            .map_err(|e| not_resctrl(e.to_string()))?;
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
    pub fn l3_schemata(&self, ways: u32) -> Result<String, String> {
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
    pub fn mb_schemata(&self, percent: u32) -> Result<String, String> {
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
pub fn parse_schemata(text: &str) -> Vec<(String, Vec<(u32, String)>)> {
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
pub fn contiguous_cbm(cbm_mask: u64, shareable_bits: u64, ways: u32) -> Option<u64> {
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

/// What a group restricts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The group gets this many contiguous L3 ways in every domain.
    L3Ways(u32),
    /// The group's bandwidth is throttled to about this percent in every domain.
    MbPercent(u32),
}

/// A resctrl group memscope made, removed when dropped.
#[derive(Debug)]
pub struct ResctrlGroup {
    root: OwnedFd,
    group: OwnedFd,
    name: CString,
    path: PathBuf,
    /// Device and inode of the group as made.
    id: (u64, u64),
    fs: Fs,
    /// What was written to its schemata.
    pub schemata: String,
    token: Option<cleanup::Token>,
    record: Option<Record>,
}

impl ResctrlGroup {
    /// Makes a new group `memscope-PID-N` under `resctrl`'s root (journaled first; an
    /// existing name is refused) and writes `limit` to its schemata. A failed write
    /// removes the group again and says what the kernel said (`info/last_cmd_status`).
    pub fn create(resctrl: &Resctrl, limit: Limit) -> io::Result<ResctrlGroup> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "{GROUP_PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        Self::create_named(resctrl, limit, &name)
    }

    fn create_named(resctrl: &Resctrl, limit: Limit, name: &str) -> io::Result<ResctrlGroup> {
        let schemata = match limit {
            Limit::L3Ways(ways) => resctrl.l3_schemata(ways),
            Limit::MbPercent(percent) => resctrl.mb_schemata(percent),
        }
        .map_err(|why| io::Error::new(io::ErrorKind::InvalidInput, why))?;
        let c_name = cstring(name)?;
        let path = resctrl.path.join(name);
        let root = resctrl.root.try_clone()?;
        let exists = || {
            io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} exists already: memscope makes a group of its own and leaves others \
                     alone",
                    path.display()
                ),
            )
        };
        if stat_at(root.as_raw_fd(), &c_name).is_ok() {
            return Err(exists());
        }
        // The name first: a SIGKILL right after the mkdir leaves a group the next start
        // knows to remove.
        let record = journal::record(Change::ResctrlGroup { path: path.clone() });
        let drop_record = |record: &Option<Record>| {
            if let Some(r) = record {
                let _ = r.remove();
            }
        };
        // SAFETY: `c_name` is NUL-terminated; mkdirat fails on an existing name (EEXIST),
        // so a group made meanwhile by someone else is never taken over.
        if let Err(error) = cvt(unsafe { libc::mkdirat(root.as_raw_fd(), c_name.as_ptr(), 0o755) })
        {
            drop_record(&record);
            return Err(match error.raw_os_error() {
                Some(libc::EEXIST) => exists(),
                Some(libc::ENOSPC) => io::Error::new(
                    error.kind(),
                    format!(
                        "cannot make {}: every class of service (CLOSID) is in use by other \
                         groups",
                        path.display()
                    ),
                ),
                _ => annotate(error, "cannot make", &path),
            });
        }
        let made = stat_at(root.as_raw_fd(), &c_name);
        let opened = open_at(
            root.as_raw_fd(),
            &c_name,
            libc::O_RDONLY | libc::O_DIRECTORY,
            0,
        );
        let (group, id) = match (made, opened) {
            (Ok(made), Ok(group)) => match stat_fd(group.as_raw_fd()) {
                Ok(st) if (st.st_dev, st.st_ino) == (made.st_dev, made.st_ino) => {
                    (group, (st.st_dev, st.st_ino))
                }
                _ => {
                    drop_record(&record);
                    return Err(io::Error::other(format!(
                        "the new group {} was replaced before memscope could open it",
                        path.display()
                    )));
                }
            },
            (Err(e), _) | (_, Err(e)) => {
                if remove_group(root.as_raw_fd(), &c_name, None, resctrl.fs).is_ok() {
                    drop_record(&record);
                }
                return Err(annotate(e, "cannot open", &path));
            }
        };
        let token = match (cleanup::install(), root.try_clone()) {
            (Ok(()), Ok(root_copy)) => {
                let (c_name, record, fs) = (c_name.clone(), record.clone(), resctrl.fs);
                Some(cleanup::register(
                    &format!("remove the resctrl group {}", path.display()),
                    Box::new(move || {
                        if remove_group(root_copy.as_raw_fd(), &c_name, Some(id), fs).is_ok() {
                            if let Some(r) = &record {
                                let _ = r.remove();
                            }
                        }
                    }),
                ))
            }
            _ => None,
        };
        // From here on, dropping the value removes the group and its entry.
        let group = ResctrlGroup {
            root,
            group,
            name: c_name,
            path,
            id,
            fs: resctrl.fs,
            schemata,
            token,
            record,
        };
        imitate_mkdir(group.fs, group.group.as_raw_fd())?;
        group.write("schemata", &group.schemata).map_err(|error| {
            let status = resctrl
                .read("info/last_cmd_status")
                .map(|s| s.trim().to_string())
                .unwrap_or_default();
            io::Error::new(
                error.kind(),
                format!(
                    "cannot write '{}' to {}/schemata ({error}{}{status})",
                    group.schemata.trim(),
                    group.path.display(),
                    if status.is_empty() { "" } else { ": " }
                ),
            )
        })?;
        Ok(group)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves the task `pid` into the group (a paused child before its exec: what it
    /// starts later stays in the group too).
    pub fn add_task(&self, pid: libc::pid_t) -> io::Result<()> {
        self.write("tasks", &format!("{pid}\n"))
    }

    /// Writes `text` in one write to the group's file `name` (never created, never
    /// through a symlink).
    fn write(&self, name: &str, text: &str) -> io::Result<()> {
        let fd = open_at(self.group.as_raw_fd(), &cstring(name)?, libc::O_WRONLY, 0)
            .map_err(|e| annotate(e, "cannot open", &self.path.join(name)))?;
        File::from(fd).write_all(text.as_bytes())
    }
}

impl Drop for ResctrlGroup {
    fn drop(&mut self) {
        let removal = remove_group(self.root.as_raw_fd(), &self.name, Some(self.id), self.fs);
        if let Some(token) = self.token.take() {
            cleanup::unregister(token);
        }
        match removal {
            Ok(()) => {
                if let Some(record) = self.record.take() {
                    let _ = record.remove();
                }
            }
            // The entry stays: the next start tries again.
            Err(error) => eprintln!(
                "memscope: could not remove the resctrl group {}: {error}",
                self.path.display()
            ),
        }
    }
}

/// Removes the group `name` of the root open as `root`, only while the name is still the
/// group made (`id`, when known). A name already gone is fine.
fn remove_group(root: RawFd, name: &CStr, id: Option<(u64, u64)>, fs: Fs) -> io::Result<()> {
    match stat_at(root, name) {
        Ok(st) if id.is_none_or(|id| id == (st.st_dev, st.st_ino)) => {}
        Ok(_) => {
            return Err(io::Error::other(
                "its name is now another directory, left alone",
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    imitate_rmdir(fs, root, name)?;
    // SAFETY: `name` is NUL-terminated. On resctrl the rmdir moves the group's tasks and
    // CPUs back to the default group.
    match cvt(unsafe { libc::unlinkat(root, name.as_ptr(), libc::AT_REMOVEDIR) }) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The files the kernel puts in a new group, made by hand in a synthetic tree.
fn imitate_mkdir(fs: Fs, group: RawFd) -> io::Result<()> {
    match fs {
        Fs::Resctrl => {
            let _ = group;
            Ok(())
        }
        #[cfg(test)]
        Fs::Synthetic => {
            for name in SYNTHETIC_FILES {
                let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
                open_at(group, &cstring(name)?, flags, 0o644)?;
            }
            Ok(())
        }
    }
}

/// The kernel removes a group with its files; in a synthetic tree they go first.
fn imitate_rmdir(fs: Fs, root: RawFd, name: &CStr) -> io::Result<()> {
    match fs {
        Fs::Resctrl => {
            let _ = (root, name);
            Ok(())
        }
        #[cfg(test)]
        Fs::Synthetic => {
            let group = open_at(root, name, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
            for file in SYNTHETIC_FILES {
                // SAFETY: the name is NUL-terminated.
                let _ = unsafe { libc::unlinkat(group.as_raw_fd(), cstring(file)?.as_ptr(), 0) };
            }
            Ok(())
        }
    }
}

#[cfg(test)]
const SYNTHETIC_FILES: [&str; 3] = ["schemata", "tasks", "cpus"];

/// Removes a group a killed memscope left: the journaled path must still be a directory
/// named `memscope-PID-N` (PID the entry's) directly under a resctrl root (`fs`).
pub fn restore_stale(entry: &Entry, fs: Fs) -> Outcome {
    let Change::ResctrlGroup { path } = &entry.change else {
        return Outcome::Clean;
    };
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let ours = name
        .strip_prefix(&format!("{GROUP_PREFIX}{}-", entry.pid))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let (Some(parent), Ok(c_name), true) =
        (path.parent(), cstring(name), ours && path.is_absolute())
    else {
        return Outcome::LeftAlone(format!(
            "left {} alone: it is not a name memscope gives its resctrl groups",
            path.display()
        ));
    };
    let root = match open_path(parent, libc::O_RDONLY | libc::O_DIRECTORY) {
        Ok(fd) => fd,
        // resctrl unmounted since: its groups went with it.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Outcome::Clean,
        Err(e) => return Outcome::Failed(format!("could not open {} ({e})", parent.display())),
    };
    if let Err(why) = check_fs(root.as_raw_fd(), fs) {
        // Unmounted (and something else there now), or never resctrl: nothing of ours.
        return Outcome::LeftAlone(format!(
            "left {} alone: {} is not a resctrl filesystem now ({why})",
            path.display(),
            parent.display()
        ));
    }
    match stat_at(root.as_raw_fd(), &c_name) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Outcome::Clean,
        Err(e) => return Outcome::Failed(format!("could not look at {} ({e})", path.display())),
        Ok(st) if st.st_mode & libc::S_IFMT != libc::S_IFDIR => {
            return Outcome::LeftAlone(format!(
                "left {} alone: it is not a directory",
                path.display()
            ))
        }
        Ok(_) => {}
    }
    let who = journal::killed(entry);
    match remove_group(root.as_raw_fd(), &c_name, None, fs) {
        Ok(()) => Outcome::Restored(format!(
            "removed the resctrl group {} ({who} while a program ran in it; its tasks went \
             back to the default group)",
            path.display()
        )),
        Err(e) => Outcome::Failed(format!(
            "could not remove the resctrl group {} ({who} while a program ran in it): {e}",
            path.display()
        )),
    }
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
        #[cfg(test)]
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

/// Opens the resctrl root (a path from mountinfo or the journal, written by root only).
fn open_path(path: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the path"))?;
    // SAFETY: `c` is NUL-terminated; the descriptor returned is ours.
    let fd = cvt(unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) })?;
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Synthetic resctrl trees for tests (here and in the modules that use resctrl).
#[cfg(test)]
pub mod fake {
    use std::fs;
    use std::path::Path;

    use super::{detect_with, Fs, Resctrl};
    use crate::platform::fake_files::put;

    /// A resctrl tree with 11 L3 ways (the top two shareable) in two domains, and MBA in
    /// percent steps of 10 from 10, as a two-socket Intel server shows it.
    pub fn tree(l3: bool, mb: bool) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut schemata = String::new();
        if mb {
            schemata.push_str("    MB:0=100;1=100\n");
            put(root, "info/MB/min_bandwidth", "10");
            put(root, "info/MB/bandwidth_gran", "10");
            put(root, "info/MB/delay_linear", "1");
            put(root, "info/MB/num_closids", "8");
        }
        if l3 {
            schemata.push_str("L3:0=7ff;1=7ff\n");
            put(root, "info/L3/cbm_mask", "7ff");
            put(root, "info/L3/min_cbm_bits", "1");
            put(root, "info/L3/num_closids", "16");
            put(root, "info/L3/shareable_bits", "600");
        }
        put(root, "info/last_cmd_status", "ok");
        fs::write(root.join("schemata"), schemata).unwrap();
        put(root, "tasks", "1\n2");
        dir
    }

    /// /proc/self/mountinfo's text with resctrl mounted at `root`.
    pub fn mountinfo(root: &Path) -> String {
        format!(
            "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
             40 22 0:38 / {} rw,relatime shared:20 - resctrl resctrl rw\n",
            root.display()
        )
    }

    /// The synthetic tree at `root`, detected as the mounted resctrl.
    pub fn synthetic(root: &Path) -> Resctrl {
        detect_with(&mountinfo(root), "", Fs::Synthetic).unwrap()
    }
}

#[cfg(test)]
mod tests;
