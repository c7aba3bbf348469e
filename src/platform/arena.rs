//! Measurement buffers: anonymous mmap'ed memory with an explicit page policy, aligned to
//! the page size in use, first-touched by the calling (pinned) thread, and verified after
//! the touch so the report says what the buffer really got.
//!
//! Policies: `4k` (MADV_NOHUGEPAGE: base pages only), `thp` (MADV_HUGEPAGE on a 2 MiB
//! aligned range; verified through AnonHugePages in /proc/self/smaps), `2m` and `1g`
//! (hugetlbfs pages through MAP_HUGETLB). A policy that cannot be had is an error that
//! says why and what to do; there is no silent fallback.

use std::fmt;
use std::ptr::NonNull;

use crate::error::UsageError;
use crate::report::PagesObtained;
use crate::topology::memory;
use crate::units::{Bytes, GIB, MIB};

/// How a buffer's pages are backed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PagePolicy {
    /// Base pages (4 KiB on x86_64), transparent huge pages refused.
    Base,
    /// Transparent huge pages asked for with madvise.
    Thp,
    /// hugetlbfs 2 MiB pages.
    Huge2M,
    /// hugetlbfs 1 GiB pages.
    Huge1G,
}

impl PagePolicy {
    pub const NAMES: &'static str = "4k, thp, 2m or 1g";

    pub fn parse(text: &str) -> Result<PagePolicy, UsageError> {
        match text.to_ascii_lowercase().as_str() {
            "4k" | "base" | "small" => Ok(PagePolicy::Base),
            "thp" => Ok(PagePolicy::Thp),
            "2m" => Ok(PagePolicy::Huge2M),
            "1g" => Ok(PagePolicy::Huge1G),
            _ => Err(UsageError::InvalidValue {
                flag: "--pages",
                value: text.to_string(),
                expected: PagePolicy::NAMES.to_string(),
            }),
        }
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

/// An mmap'ed buffer; unmapped on drop.
pub struct Arena {
    /// Start of the usable, aligned range.
    data: NonNull<u8>,
    len: usize,
    /// The whole mapping (may start before `data` when over-allocated for alignment).
    map_start: *mut u8,
    map_len: usize,
    policy: PagePolicy,
}

// SAFETY: the arena owns its mapping; callers synchronise access to its contents.
unsafe impl Send for Arena {}
unsafe impl Sync for Arena {}

impl Arena {
    /// Maps `bytes` (rounded up to the policy's page size) with the policy and touches every
    /// page from the calling thread, so its pages come from that thread's NUMA node.
    pub fn new(bytes: Bytes, policy: PagePolicy) -> Result<Arena, UsageError> {
        if policy == PagePolicy::Thp {
            let thp = memory::thp_enabled_mode();
            if thp == "never" || thp == "unavailable" {
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
        let arena = match policy {
            PagePolicy::Base | PagePolicy::Thp => Self::map_anonymous(len, policy)?,
            PagePolicy::Huge2M | PagePolicy::Huge1G => Self::map_hugetlb(len, policy)?,
        };
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
            policy: self.policy.to_string(),
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
                "Reserve pages with 'echo {} | sudo tee {sysfs}' (and set it back to {} \
                 afterwards), or use --pages thp",
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

#[cfg(test)]
mod tests {
    use super::*;

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
        if memory::thp_enabled_mode() == "never" {
            return;
        }
        let arena = Arena::new(Bytes::mib(8), PagePolicy::Thp).unwrap();
        assert_eq!(arena.as_ptr() as usize % (2 * MIB as usize), 0);
        let fraction = arena.obtained().huge_fraction;
        assert!((0.0..=1.0).contains(&fraction));
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
