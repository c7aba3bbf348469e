//! System memory as the kernel reports it: totals from /proc/meminfo, the base page size,
//! every huge page size and its hugetlbfs pool, and the transparent-huge-page mode; what
//! bounds the memory available to this process (`AvailableMemory`). It also
//! reads /proc/self/smaps so the arena can check that THP really backed a mapping, since
//! `madvise(MADV_HUGEPAGE)` is only a hint.

use std::path::Path;

use super::cgroup::CgroupMemoryLimit;
use super::{read_trimmed, HugePagePool, ThpInfo, ThpMode};
use crate::units::Bytes;

const HUGEPAGES_SYSFS: &str = "/sys/kernel/mm/hugepages";
const THP_SYSFS: &str = "/sys/kernel/mm/transparent_hugepage";

/// Value of `name` in meminfo-style text, in bytes when the line carries a "kB" unit and as
/// a plain count otherwise (the HugePages_* lines). The key is the last word before the
/// colon, so the per-node files ("Node 0 MemTotal:  N kB") parse the same way.
pub fn parse_meminfo_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        if key.split_whitespace().last()? != name {
            return None;
        }
        let mut words = value.split_whitespace();
        let number: u64 = words.next()?.parse().ok()?;
        match words.next() {
            Some(unit) if unit.eq_ignore_ascii_case("kB") => number.checked_mul(1024),
            _ => Some(number),
        }
    })
}

/// One field of /proc/meminfo (bytes for kB fields), e.g. `read_meminfo_field("MemAvailable")`.
pub(crate) fn read_meminfo_field(name: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_meminfo_field(&text, name)
}

/// The memory this process may allocate now, and which limit that is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AvailableMemory {
    pub bytes: u64,
    pub bound: MemoryBound,
}

/// What bounds the memory available to this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryBound {
    /// MemAvailable of /proc/meminfo (no cgroup limit is tighter).
    MemAvailable,
    /// A cgroup's limit minus what is charged to it.
    Cgroup(CgroupMemoryLimit),
    /// The address-space limit (`ulimit -v`, RLIMIT_AS) minus this process's VmSize.
    AddressSpace { limit_bytes: u64, in_use_bytes: u64 },
}

/// The address-space limit (RLIMIT_AS) and this process's size against it, when one is set.
pub(crate) fn address_space_limit() -> Option<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let in_use = parse_meminfo_field(&status, "VmSize")?;
    Some((limit.rlim_cur, in_use))
}

impl std::fmt::Display for AvailableMemory {
    /// "270 MiB, the memory cgroup /x limit 300 MiB (…) minus 30 MiB in use".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.bound {
            MemoryBound::MemAvailable => {
                write!(f, "{}, MemAvailable of /proc/meminfo", Bytes(self.bytes))
            }
            MemoryBound::Cgroup(limit) => write!(f, "{}, {}", Bytes(self.bytes), limit.describe()),
            MemoryBound::AddressSpace {
                limit_bytes,
                in_use_bytes,
            } => write!(
                f,
                "{}, the address-space limit (ulimit -v) {} minus {} in use",
                Bytes(self.bytes),
                Bytes(*limit_bytes),
                Bytes(*in_use_bytes)
            ),
        }
    }
}

/// The base page size; 4 KiB if sysconf cannot say, which is what nearly every system uses.
pub fn base_page_bytes() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

/// Page size in bytes from a hugepages directory name such as "hugepages-2048kB".
pub fn parse_hugepages_dir_name(name: &str) -> Option<u64> {
    let kb: u64 = name
        .strip_prefix("hugepages-")?
        .strip_suffix("kB")?
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

/// Counters of the hugetlbfs pool in one `hugepages-NkB` directory; missing files read 0.
fn read_pool(dir: &Path, page_bytes: u64) -> HugePagePool {
    let count = |file: &str| {
        read_trimmed(dir.join(file))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    };
    HugePagePool {
        page_bytes,
        total: count("nr_hugepages"),
        free: count("free_hugepages"),
        reserved: count("resv_hugepages"),
        surplus: count("surplus_hugepages"),
    }
}

/// One hugetlbfs pool per huge page size, smallest first. Empty when the kernel has no
/// hugetlbfs (or /sys is not mounted).
pub fn hugepage_pools() -> Vec<HugePagePool> {
    let Ok(entries) = std::fs::read_dir(HUGEPAGES_SYSFS) else {
        return Vec::new();
    };
    let mut pools: Vec<HugePagePool> = entries
        .flatten()
        .filter_map(|entry| {
            let page_bytes = parse_hugepages_dir_name(entry.file_name().to_str()?)?;
            Some(read_pool(&entry.path(), page_bytes))
        })
        .collect();
    pools.sort_by_key(|p| p.page_bytes);
    pools
}

/// The pool of one huge page size as it is now (read fresh, since other processes take and
/// return pages), or None when the kernel does not offer that size.
pub fn hugepage_pool(page_bytes: u64) -> Option<HugePagePool> {
    let dir = Path::new(HUGEPAGES_SYSFS).join(format!("hugepages-{}kB", page_bytes / 1024));
    dir.is_dir().then(|| read_pool(&dir, page_bytes))
}

/// The base page size followed by every huge page size, ascending and distinct.
pub fn page_sizes(base_page_bytes: u64, pools: &[HugePagePool]) -> Vec<u64> {
    let mut sizes: Vec<u64> = std::iter::once(base_page_bytes)
        .chain(pools.iter().map(|p| p.page_bytes))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// The selected value of a sysfs multiple-choice file: "always [madvise] never" → "madvise".
pub fn parse_bracketed_choice(text: &str) -> Option<String> {
    let start = text.find('[')? + 1;
    let len = text[start..].find(']')?;
    Some(text[start..start + len].trim().to_string()).filter(|s| !s.is_empty())
}

/// The current THP mode; `Unavailable` without THP (no file, or no choice in it the
/// kernel writes there).
pub(crate) fn thp_enabled_mode() -> ThpMode {
    read_trimmed(Path::new(THP_SYSFS).join("enabled"))
        .and_then(|s| parse_bracketed_choice(&s))
        .and_then(|choice| ThpMode::parse(&choice))
        .unwrap_or(ThpMode::Unavailable)
}

/// THP mode, defrag policy and PMD size. A kernel without THP has no directory at all,
/// which is reported as "unavailable" rather than as an error.
pub(crate) fn thp_info() -> ThpInfo {
    let dir = Path::new(THP_SYSFS);
    ThpInfo {
        enabled: thp_enabled_mode(),
        defrag: read_trimmed(dir.join("defrag")).and_then(|s| parse_bracketed_choice(&s)),
        pmd_bytes: read_trimmed(dir.join("hpage_pmd_size")).and_then(|s| s.parse().ok()),
    }
}

/// Sum of AnonHugePages (bytes) over the mappings of `smaps` text that overlap
/// [start, end). A mapping that only partly overlaps counts whole: smaps gives no finer
/// detail, and the arena asks about ranges it mapped itself.
pub fn parse_smaps_anon_huge_bytes(smaps: &str, start: usize, end: usize) -> u64 {
    super::smaps::parse_smaps(smaps)
        .iter()
        .filter(|m| (m.start as usize) < end && start < m.end as usize)
        .map(|m| m.anon_huge_kb.saturating_mul(1024))
        .fold(0u64, u64::saturating_add)
}

/// Bytes of this process's memory in [start, end) backed by transparent huge pages.
pub(crate) fn thp_anon_huge_bytes_in_range(start: usize, end: usize) -> std::io::Result<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps")?;
    Ok(parse_smaps_anon_huge_bytes(&smaps, start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_fields_parse_with_and_without_units() {
        let text = "MemTotal:       16318412 kB\nMemAvailable:   12000000 kB\n\
                    HugePages_Total:       4\nHugepagesize:       2048 kB\n";
        assert_eq!(parse_meminfo_field(text, "MemTotal"), Some(16318412 * 1024));
        assert_eq!(
            parse_meminfo_field(text, "MemAvailable"),
            Some(12000000 * 1024)
        );
        assert_eq!(parse_meminfo_field(text, "HugePages_Total"), Some(4));
        assert_eq!(parse_meminfo_field(text, "MemFree"), None);
        let node = "Node 0 MemTotal:        4417740 kB\nNode 0 MemFree:         3819236 kB\n";
        assert_eq!(parse_meminfo_field(node, "MemFree"), Some(3819236 * 1024));
    }

    #[test]
    fn thp_selection_is_the_bracketed_word() {
        assert_eq!(
            parse_bracketed_choice("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        assert_eq!(
            parse_bracketed_choice("always defer defer+madvise [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(
            parse_bracketed_choice("[always] madvise never").as_deref(),
            Some("always")
        );
        assert_eq!(parse_bracketed_choice("always madvise never"), None);
        assert_eq!(parse_bracketed_choice("[never"), None);
    }

    #[test]
    fn hugepage_dir_names_give_page_sizes() {
        assert_eq!(parse_hugepages_dir_name("hugepages-2048kB"), Some(2 << 20));
        assert_eq!(
            parse_hugepages_dir_name("hugepages-1048576kB"),
            Some(1 << 30)
        );
        assert_eq!(parse_hugepages_dir_name("hugepages-64kB"), Some(64 << 10));
        assert_eq!(parse_hugepages_dir_name("hugepages-x"), None);
        assert_eq!(parse_hugepages_dir_name("nothing"), None);
        let pools = [HugePagePool {
            page_bytes: 2 << 20,
            total: 0,
            free: 0,
            reserved: 0,
            surplus: 0,
        }];
        assert_eq!(page_sizes(4096, &pools), vec![4096, 2 << 20]);
    }

    const SMAPS: &str = "\
55d0a0000000-55d0a0021000 rw-p 00000000 00:00 0                          [heap]
Size:                132 kB
AnonHugePages:         0 kB
VmFlags: rd wr mr mw me ac
7f0000000000-7f0000800000 rw-p 00000000 00:00 0 
Size:               8192 kB
Rss:                8192 kB
AnonHugePages:      6144 kB
THPeligible:    1
VmFlags: rd wr mr mw me ac hg
7f0000800000-7f0000a00000 rw-p 00000000 00:00 0 
Size:               2048 kB
AnonHugePages:      2048 kB
VmFlags: rd wr mr mw me ac
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
AnonHugePages:         0 kB
";

    #[test]
    fn smaps_sums_anon_huge_pages_of_overlapping_mappings() {
        let base = 0x7f00_0000_0000usize;
        assert_eq!(
            parse_smaps_anon_huge_bytes(SMAPS, base, base + 0x80_0000),
            6144 * 1024
        );
        // Overlaps the first big mapping's tail and the next one.
        assert_eq!(
            parse_smaps_anon_huge_bytes(SMAPS, base + 0x7f_0000, base + 0x90_0000),
            (6144 + 2048) * 1024
        );
        // The end is exclusive: a range ending where a mapping starts does not touch it.
        assert_eq!(parse_smaps_anon_huge_bytes(SMAPS, base - 0x1000, base), 0);
        assert_eq!(
            parse_smaps_anon_huge_bytes(SMAPS, 0, usize::MAX),
            8192 * 1024
        );
        assert_eq!(parse_smaps_anon_huge_bytes("", 0, usize::MAX), 0);
    }
}
