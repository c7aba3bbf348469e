//! Measurement buffers: anonymous mmap'ed memory with an explicit page policy, aligned to
//! the page size in use, first-touched by the calling (pinned) thread, and verified after
//! the touch so the report says what the buffer really got.
//!
//! Policies: `4k` (MADV_NOHUGEPAGE: base pages only), `thp` (MADV_HUGEPAGE on a 2 MiB
//! aligned range; verified through AnonHugePages in /proc/self/smaps), `2m` and `1g`
//! (hugetlbfs pages through MAP_HUGETLB). A policy that cannot be had is an error that
//! says why and what to do; there is no silent fallback.
//!
//! A buffer can be bound to one NUMA node (`Arena::new_on_node`): the mapping gets an
//! MPOL_BIND policy before its first touch, so every page comes from that node whichever
//! CPU touches it. Without a node, pages come from the touching thread's node.

use std::fmt;
use std::ptr::NonNull;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::platform::numa_policy::{self, Mode, NodeMask};
use crate::topology::cpu::format_cpu_list;
use crate::topology::memory;
use crate::units::{Bytes, GIB, MIB};

/// How a buffer's pages are backed. In reports it is written as on the command line
/// (`4k`, `thp`, `2m`, `1g`), as `Display` writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum PagePolicy {
    /// Base pages (4 KiB on x86_64), transparent huge pages refused.
    #[serde(rename = "4k")]
    #[value(name = "4k", alias = "base", alias = "small")]
    Base,
    /// Transparent huge pages asked for with madvise.
    #[serde(rename = "thp")]
    #[value(name = "thp")]
    Thp,
    /// hugetlbfs 2 MiB pages.
    #[serde(rename = "2m")]
    #[value(name = "2m")]
    Huge2M,
    /// hugetlbfs 1 GiB pages.
    #[serde(rename = "1g")]
    #[value(name = "1g")]
    Huge1G,
}

impl PagePolicy {
    pub const NAMES: &'static str = "4k, thp, 2m or 1g";

    /// The policy named `text` as `--pages` takes it (any case, with its aliases).
    pub fn parse(text: &str) -> Result<PagePolicy, UsageError> {
        <PagePolicy as clap::ValueEnum>::from_str(text, true).map_err(|_| {
            UsageError::InvalidValue {
                flag: "--pages",
                value: text.to_string(),
                expected: PagePolicy::NAMES.to_string(),
            }
        })
    }

    /// Page size the policy aims for.
    pub fn page_bytes(self) -> u64 {
        match self {
            PagePolicy::Base => memory::base_page_bytes(),
            PagePolicy::Thp | PagePolicy::Huge2M => 2 * MIB,
            PagePolicy::Huge1G => GIB,
        }
    }
}

impl fmt::Display for PagePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PagePolicy::Base => "4k",
            PagePolicy::Thp => "thp",
            PagePolicy::Huge2M => "2m",
            PagePolicy::Huge1G => "1g",
        })
    }
}

/// The page backing that a measurement buffer really had, verified after first touch
/// (reported in the settings).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PagesObtained {
    pub policy: PagePolicy,
    pub page_bytes: u64,
    /// Fraction of the largest buffer backed by huge pages (AnonHugePages / size for THP).
    pub huge_fraction: f64,
}

/// An mmap'ed buffer; unmapped on drop.
pub struct Arena {
    /// Start of the usable, aligned range.
    data: NonNull<u8>,
    len: usize,
    /// The whole mapping (may start before `data` when over-allocated for alignment).
    map_start: *mut u8,
    map_len: usize,
    policy: PagePolicy,
    /// The node the pages are bound to, if any.
    node: Option<usize>,
}

// SAFETY: the arena owns its mapping; callers synchronise access to its contents.
unsafe impl Send for Arena {}
unsafe impl Sync for Arena {}

impl Arena {
    /// Maps `bytes` (rounded up to the policy's page size) with the policy and touches every
    /// page from the calling thread, so its pages come from that thread's NUMA node.
    pub fn new(bytes: Bytes, policy: PagePolicy) -> Result<Arena, UsageError> {
        Self::new_on_node(bytes, policy, None)
    }

    /// As [`Arena::new`], and with `Some(node)` every page is bound to that NUMA node
    /// (MPOL_BIND, set before the first touch): the pages come from it whichever thread
    /// touches them. A node without memory for this process, without enough free memory or
    /// free huge pages, or a system that refuses the binding, is an error saying so.
    pub fn new_on_node(
        bytes: Bytes,
        policy: PagePolicy,
        node: Option<usize>,
    ) -> Result<Arena, UsageError> {
        if policy == PagePolicy::Thp {
            let thp = memory::thp_enabled_mode();
            if !thp.offers_huge_pages() {
                return Err(UsageError::PagesUnavailable {
                    policy: policy.to_string(),
                    reason: format!(
                        "transparent huge pages are {thp} (/sys/kernel/mm/transparent_hugepage/enabled)"
                    ),
                    advice: "Enable them with 'echo madvise | sudo tee \
                             /sys/kernel/mm/transparent_hugepage/enabled', or use --pages 4k or 2m"
                        .to_string(),
                });
            }
        }
        let page = policy.page_bytes() as usize;
        let len = (bytes.0 as usize).max(1).div_ceil(page) * page;
        if let Some(node) = node {
            check_node(node, len, policy)?;
        }
        if matches!(policy, PagePolicy::Base | PagePolicy::Thp) {
            // Never past a cgroup's or the address space's limit: the kernel would kill
            // memscope (or the program beside it) without a word.
            let available = crate::topology::Machine::available_memory_now();
            if available.bytes > 0 && len as u64 > available.bytes / 10 * 9 {
                return Err(UsageError::BufferExceedsMemory {
                    requested: Bytes(len as u64),
                    available,
                });
            }
        }
        let mut arena = match policy {
            PagePolicy::Base | PagePolicy::Thp => Self::map_anonymous(len, policy)?,
            PagePolicy::Huge2M | PagePolicy::Huge1G => Self::map_hugetlb(len, policy)?,
        };
        // Not in a child memscope forks (a program before its exec, a run's namespace
        // init): no copy-on-write of the buffers while they are written, and the
        // program's peak resident memory does not count them.
        // SAFETY: advice on the whole of our own mapping.
        unsafe { libc::madvise(arena.map_start.cast(), arena.map_len, libc::MADV_DONTFORK) };
        if let Some(node) = node {
            // Before the touch: a policy only decides where pages are faulted in. On error
            // the arena is dropped, which unmaps it.
            numa_policy::mbind(
                arena.as_ptr(),
                arena.len,
                Mode::Bind,
                &NodeMask::single(node),
                0,
            )
            .map_err(|error| binding_refused(node, policy, &error))?;
            arena.node = Some(node);
        }
        arena.touch();
        Ok(arena)
    }

    fn map_anonymous(len: usize, policy: PagePolicy) -> Result<Arena, UsageError> {
        // Over-allocate by one huge page so the usable range can start on a 2 MiB boundary:
        // only aligned 2 MiB ranges can become huge pages.
        let align = 2 * MIB as usize;
        let map_len = len + align;
        // SAFETY: a fresh private anonymous mapping; checked for failure below.
        let map_start = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if map_start == libc::MAP_FAILED {
            return Err(out_of_memory(len, policy));
        }
        let map_start = map_start as *mut u8;
        let offset = (align - (map_start as usize % align)) % align;
        // SAFETY: offset < align, so data + len stays inside the mapping.
        let data = unsafe { map_start.add(offset) };
        let advice = match policy {
            PagePolicy::Thp => libc::MADV_HUGEPAGE,
            _ => libc::MADV_NOHUGEPAGE,
        };
        // SAFETY: the range lies inside our mapping. A failing madvise is reported as the
        // obtained backing after touch, so its result is checked there, not here.
        unsafe { libc::madvise(data as *mut libc::c_void, len, advice) };
        Ok(Arena {
            data: NonNull::new(data).expect("mmap returned a non-null mapping"),
            len,
            map_start,
            map_len,
            policy,
            node: None,
        })
    }

    fn map_hugetlb(len: usize, policy: PagePolicy) -> Result<Arena, UsageError> {
        let page = policy.page_bytes();
        let shift = page.trailing_zeros() as i32;
        let flags = libc::MAP_PRIVATE
            | libc::MAP_ANONYMOUS
            | libc::MAP_HUGETLB
            | (shift << libc::MAP_HUGE_SHIFT);
        // SAFETY: a fresh mapping; checked for failure below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            let os_error = std::io::Error::last_os_error();
            return Err(hugetlb_unavailable(len, policy, &os_error));
        }
        let data = ptr as *mut u8;
        Ok(Arena {
            data: NonNull::new(data).expect("mmap returned a non-null mapping"),
            len,
            map_start: data,
            map_len: len,
            policy,
            node: None,
        })
    }

    /// Writes one word in every 4 KiB so every page is faulted in by this thread.
    fn touch(&self) {
        let base = self.data.as_ptr();
        let mut offset = 0;
        while offset < self.len {
            // SAFETY: offset < len; the range is mapped read-write.
            unsafe {
                std::ptr::write_volatile(base.add(offset) as *mut u64, 0x5a5a_5a5a_5a5a_5a5a)
            };
            offset += 4096;
        }
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.data.as_ptr()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn policy(&self) -> PagePolicy {
        self.policy
    }

    /// The NUMA node the pages are bound to (None: where the touching thread ran).
    pub fn node(&self) -> Option<usize> {
        self.node
    }

    /// The fraction of `samples` pages, spread over the buffer, that the kernel reports on
    /// `node` (get_mempolicy): whether a binding, or first touch, put them where intended.
    pub fn fraction_on_node(&self, node: usize, samples: usize) -> std::io::Result<f64> {
        numa_policy::fraction_on_node(self.data.as_ptr(), self.len, node, samples)
    }

    /// What the buffer really got. For THP this reads AnonHugePages of the mapping; for
    /// hugetlbfs the mapping succeeded, so every page is huge.
    pub fn obtained(&self) -> PagesObtained {
        let (page_bytes, huge_fraction) = match self.policy {
            PagePolicy::Base => (memory::base_page_bytes(), 0.0),
            PagePolicy::Huge2M | PagePolicy::Huge1G => (self.policy.page_bytes(), 1.0),
            PagePolicy::Thp => {
                let start = self.data.as_ptr() as usize;
                let huge =
                    memory::thp_anon_huge_bytes_in_range(start, start + self.len).unwrap_or(0);
                let fraction = (huge as f64 / self.len as f64).min(1.0);
                let page = if fraction > 0.0 {
                    2 * MIB
                } else {
                    memory::base_page_bytes()
                };
                (page, fraction)
            }
        };
        PagesObtained {
            policy: self.policy,
            page_bytes,
            huge_fraction,
        }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping this arena created.
        unsafe { libc::munmap(self.map_start as *mut libc::c_void, self.map_len) };
    }
}

fn out_of_memory(len: usize, policy: PagePolicy) -> UsageError {
    UsageError::PagesUnavailable {
        policy: policy.to_string(),
        reason: format!(
            "mmap of {} failed ({})",
            Bytes(len as u64),
            std::io::Error::last_os_error()
        ),
        advice: "Use a smaller --max-size or free some memory".to_string(),
    }
}

/// Refuses a node binding that cannot work before anything is mapped: a node this process
/// cannot allocate from, less free memory on the node than the buffer needs (a bound
/// allocation does not fall back to other nodes: it reclaims, then invokes the OOM killer),
/// or too few free huge pages on the node (a hugetlbfs fault that finds none is SIGBUS).
fn check_node(node: usize, len: usize, policy: PagePolicy) -> Result<(), UsageError> {
    if let Some(usable) = numa_policy::memory_nodes() {
        if !usable.contains(&node) {
            return Err(UsageError::InvalidValue {
                flag: "--nodes",
                value: node.to_string(),
                expected: format!(
                    "a NUMA node with memory this process may use: {}",
                    format_cpu_list(&usable)
                ),
            });
        }
    }
    let node_dir = format!("/sys/devices/system/node/node{node}");
    match policy {
        PagePolicy::Base | PagePolicy::Thp => {
            let Ok(meminfo) = std::fs::read_to_string(format!("{node_dir}/meminfo")) else {
                return Ok(());
            };
            // Free memory plus the page cache the kernel can drop for it.
            let available: u64 = ["MemFree", "Active(file)", "Inactive(file)", "SReclaimable"]
                .iter()
                .filter_map(|field| memory::parse_meminfo_field(&meminfo, field))
                .sum();
            if len as u64 > available {
                return Err(UsageError::PagesUnavailable {
                    policy: policy.to_string(),
                    reason: format!(
                        "{} bound to NUMA node {node} are needed but the node has about {} \
                         free or reclaimable",
                        Bytes(len as u64),
                        Bytes(available)
                    ),
                    advice: "Use a smaller size or fewer threads per node".to_string(),
                });
            }
        }
        PagePolicy::Huge2M | PagePolicy::Huge1G => {
            let page = policy.page_bytes();
            let pool = format!("{node_dir}/hugepages/hugepages-{}kB", page / 1024);
            let read = |name: &str| -> Option<u64> {
                std::fs::read_to_string(format!("{pool}/{name}"))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()
            };
            let (Some(free), Some(total)) = (read("free_hugepages"), read("nr_hugepages")) else {
                return Ok(());
            };
            let needed = (len as u64).div_ceil(page);
            if needed > free {
                return Err(UsageError::PagesUnavailable {
                    policy: policy.to_string(),
                    reason: format!(
                        "{needed} page(s) of {} are needed on NUMA node {node} but its \
                         hugetlbfs pool has {free} free of {total}",
                        Bytes(page)
                    ),
                    advice: format!(
                        "Reserve pages on that node with 'echo {} | sudo tee \
                         {pool}/nr_hugepages' (and set it back to {total} afterwards), or use \
                         --pages thp",
                        total + needed - free
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The error for an mbind the kernel refused.
fn binding_refused(node: usize, policy: PagePolicy, error: &std::io::Error) -> UsageError {
    match error.kind() {
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::Unsupported => {
            UsageError::Unsupported(format!("binding memory to NUMA node {node}: {error}"))
        }
        std::io::ErrorKind::InvalidInput => UsageError::InvalidValue {
            flag: "--nodes",
            value: node.to_string(),
            expected: format!("a NUMA node the kernel lets this process bind memory to ({error})"),
        },
        _ => UsageError::PagesUnavailable {
            policy: policy.to_string(),
            reason: error.to_string(),
            advice: "Use another node or a smaller size".to_string(),
        },
    }
}

fn hugetlb_unavailable(len: usize, policy: PagePolicy, os_error: &std::io::Error) -> UsageError {
    let page = policy.page_bytes();
    let needed = (len as u64).div_ceil(page);
    let pool = memory::hugepage_pool(page);
    let sysfs = format!(
        "/sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages",
        page / 1024
    );
    let (reason, advice) = match pool {
        None => (
            format!("this kernel offers no {} huge pages", Bytes(page)),
            "Use --pages thp or 4k".to_string(),
        ),
        Some(pool) => (
            format!(
                "{needed} page(s) of {} are needed but the hugetlbfs pool has {} free of {} \
                 (mmap: {os_error})",
                Bytes(page),
                pool.free,
                pool.total
            ),
            format!(
                "Pass --reserve-hugepages (as root) to reserve them for the run, or reserve \
                 pages with 'echo {} | sudo tee {sysfs}' (and set it back to {} afterwards), \
                 or use --pages thp",
                pool.total + needed.saturating_sub(pool.free),
                pool.total
            ),
        ),
    };
    UsageError::PagesUnavailable {
        policy: policy.to_string(),
        reason,
        advice,
    }
}

/// A private anonymous mapping of base pages that nothing has touched yet, for tests that
/// must act before the first touch (a NUMA policy, counting page faults); unmapped on
/// drop. THP is advised off, so every page is faulted in on its own.
#[cfg(any(test, feature = "test-support"))]
pub struct UntouchedMapping {
    pub ptr: *mut u8,
    pub len: usize,
}

#[cfg(any(test, feature = "test-support"))]
impl UntouchedMapping {
    pub fn new(pages: usize) -> UntouchedMapping {
        let len = pages * crate::topology::memory::base_page_bytes() as usize;
        // SAFETY: a fresh anonymous mapping, checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(ptr, libc::MAP_FAILED);
        // Best effort: kernels without THP refuse the advice.
        // SAFETY: the range is the mapping just created.
        unsafe { libc::madvise(ptr, len, libc::MADV_NOHUGEPAGE) };
        UntouchedMapping {
            ptr: ptr as *mut u8,
            len,
        }
    }

    /// Writes one byte to each of the first `pages` pages (all of them with `usize::MAX`).
    pub fn touch_pages(&self, pages: usize) {
        let page = crate::topology::memory::base_page_bytes() as usize;
        for offset in (0..self.len).step_by(page).take(pages) {
            // SAFETY: inside the mapping.
            unsafe { std::ptr::write_volatile(self.ptr.add(offset), 1) };
        }
    }

    pub fn touch(&self) {
        self.touch_pages(usize::MAX);
    }
}

#[cfg(any(test, feature = "test-support"))]
impl Drop for UntouchedMapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new().
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_obtained_keeps_the_policy_as_reports_wrote_it() {
        for (policy, name) in [
            (PagePolicy::Base, "4k"),
            (PagePolicy::Thp, "thp"),
            (PagePolicy::Huge2M, "2m"),
            (PagePolicy::Huge1G, "1g"),
        ] {
            let json = format!(r#"{{"policy":"{name}","page_bytes":4096,"huge_fraction":0.5}}"#);
            let obtained: PagesObtained = serde_json::from_str(&json).unwrap();
            assert_eq!(obtained.policy, policy);
            assert_eq!(policy.to_string(), name);
            assert_eq!(serde_json::to_string(&obtained).unwrap(), json);
        }
        let err = serde_json::from_str::<PagesObtained>(
            r#"{"policy":"8k","page_bytes":4096,"huge_fraction":0.5}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("8k"), "{err}");
    }

    #[test]
    fn base_pages_are_aligned_and_writable() {
        let arena = Arena::new(Bytes(10_000), PagePolicy::Base).unwrap();
        assert_eq!(arena.as_ptr() as usize % 4096, 0);
        assert!(arena.len() >= 10_000);
        let obtained = arena.obtained();
        assert_eq!(obtained.huge_fraction, 0.0);
        // SAFETY: inside the mapping.
        unsafe { *arena.as_ptr().add(9_999) = 7 };
    }

    #[test]
    fn thp_buffers_start_on_a_huge_page_boundary() {
        if memory::thp_enabled_mode() == crate::topology::ThpMode::Never {
            return;
        }
        let arena = Arena::new(Bytes::mib(8), PagePolicy::Thp).unwrap();
        assert_eq!(arena.as_ptr() as usize % (2 * MIB as usize), 0);
        let fraction = arena.obtained().huge_fraction;
        assert!((0.0..=1.0).contains(&fraction));
    }

    #[test]
    fn an_arena_bound_to_node_0_has_its_pages_there() {
        let arena = match Arena::new_on_node(Bytes::mib(4), PagePolicy::Base, Some(0)) {
            Ok(arena) => arena,
            // A container may forbid mbind; a kernel may lack NUMA.
            Err(UsageError::Unsupported(reason)) => return eprintln!("skipped: {reason}"),
            Err(error) => panic!("{error}"),
        };
        assert_eq!(arena.node(), Some(0));
        assert_eq!(arena.fraction_on_node(0, 32).unwrap(), 1.0);
        assert_eq!(
            Arena::new(Bytes(4096), PagePolicy::Base).unwrap().node(),
            None
        );
    }

    #[test]
    fn an_arena_on_a_node_without_memory_is_a_usage_error() {
        let error = Arena::new_on_node(Bytes::mib(1), PagePolicy::Base, Some(4000))
            .err()
            .expect("node 4000 does not exist");
        if let UsageError::Unsupported(reason) = error {
            return eprintln!("skipped: {reason}");
        }
        let text = error.to_string();
        assert!(
            text.contains("'4000'") && text.contains("--nodes"),
            "{text}"
        );
    }

    #[test]
    fn a_node_that_cannot_hold_the_buffer_is_refused_before_mapping() {
        let too_much = Bytes(1 << 50);
        let Err(error) = Arena::new_on_node(too_much, PagePolicy::Base, Some(0)) else {
            panic!("a PiB on node 0");
        };
        let text = error.to_string();
        if std::path::Path::new("/sys/devices/system/node/node0/meminfo").exists() {
            assert!(text.contains("bound to NUMA node 0 are needed"), "{text}");
        }
        let pool = "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages";
        let free: u64 = std::fs::read_to_string(pool)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(u64::MAX);
        if free < 1 << 20 {
            let huge = Bytes((free + 1) * 2 * MIB);
            let Err(error) = Arena::new_on_node(huge, PagePolicy::Huge2M, Some(0)) else {
                panic!("more 2 MiB pages than node 0's pool has free");
            };
            let text = error.to_string();
            assert!(
                text.contains("on NUMA node 0") && text.contains("nr_hugepages"),
                "{text}"
            );
        }
    }

    #[test]
    fn bad_policy_names_the_value() {
        let err = PagePolicy::parse("3m").unwrap_err().to_string();
        assert!(
            err.contains("'3m'") && err.contains("4k, thp, 2m or 1g"),
            "{err}"
        );
    }
}
