//! The accessed-bit source of `pages record`, which needs no PMU, no DAMON and no root:
//! every interval it reads how much of each mapping was touched (smaps `Referenced`,
//! from the page-table accessed bits) and clears the bits again (`clear_refs`). With
//! memscope's preload library in the program, no mapping spans a 2 MiB boundary, so the
//! counts are per region; without it (a static binary), a mapping's count is spread
//! evenly over its regions.
//!
//! The value per region and interval is the number of page translations touched: one
//! per referenced 4 KiB page, one per referenced huge page, which is what the TLB has to
//! hold for the region (and what huge pages reduce). The CPU sets an accessed bit when it
//! walks the page table, and `clear_refs` clears the bits without flushing the TLB (on
//! 6.18 a planted hot set of 1,536 pages, which fits the 3,072-entry L2 TLB of a Zen 4,
//! counted about 150 of its 512 pages per region and interval; one of 6,144 pages all of
//! them): a translation that stays in the TLB may not count, so the signal leans toward
//! the translations the TLB misses.

use std::io;

use super::access::AccessSpan;
use super::regions::RegionMap;
use crate::topology::process as procfs;
use crate::topology::smaps::Mapping;

/// Translations touched in a mapping since the last clear.
pub(super) fn translations_touched(m: &Mapping) -> f64 {
    let huge = m.anon_huge_kb + m.hugetlb_kb;
    let referenced_huge = m.referenced_kb.min(huge);
    let small = (m.referenced_kb - referenced_huge) as f64 / 4.0;
    small + (referenced_huge as f64 / 2048.0).ceil()
}

/// Per-process state: whether the first clear has happened (counts before it cover the
/// program's start, not an interval).
#[derive(Debug, Default)]
pub(crate) struct RefsSampler {
    cleared: Vec<u32>,
    /// Whether the preload library was seen in every process sampled.
    pub preload_everywhere: bool,
    seen_any: bool,
}

impl RefsSampler {
    pub fn new() -> RefsSampler {
        RefsSampler {
            preload_everywhere: true,
            ..RefsSampler::default()
        }
    }

    /// One interval's end for every process of the tree (the root first): adds the
    /// touched translations of each mapping (after its first interval) and clears the
    /// bits for the next one. Each process is held by its /proc directory and checked to
    /// be the tree's (its parent in the tree, started after the root), so a pid reused
    /// by another process meanwhile never gets its bits cleared.
    pub fn collect(&mut self, tree: &[u32], map: &mut RegionMap) -> io::Result<()> {
        let root_start = tree.first().and_then(|&root| {
            let dir = procfs::ProcessDir::open(root).ok()?;
            dir.parent_and_start().ok().map(|(_, start)| start)
        });
        for (i, &pid) in tree.iter().enumerate() {
            let Ok(dir) = procfs::ProcessDir::open(pid) else {
                continue; // it exited meanwhile
            };
            let ours = match (dir.parent_and_start(), root_start) {
                (Ok((parent, start)), Some(root)) => {
                    i == 0 || (start >= root && tree[..i].contains(&parent))
                }
                _ => false,
            };
            let Some(mappings) = ours
                .then(|| dir.read(c"smaps").ok())
                .flatten()
                .map(|text| crate::topology::smaps::parse_smaps(&text))
            else {
                continue;
            };
            if mappings.is_empty() {
                continue; // a zombie: no address space left
            }
            self.seen_any = true;
            // Judged on the first look at each process: one that is exiting may show
            // only part of its mappings.
            if !self.cleared.contains(&pid)
                && !mappings
                    .iter()
                    .any(|m| m.path.contains(super::preload::MAPPING_NAME))
            {
                self.preload_everywhere = false;
            }
            map.name_process(pid, procfs::command_name(pid));
            map.observe_mappings(pid, &mappings);
            if self.cleared.contains(&pid) {
                let own = preload_mappings(&mappings);
                for m in mappings
                    .iter()
                    .filter(|m| m.referenced_kb > 0 && !own.contains(&m.start))
                {
                    map.add_span(&AccessSpan {
                        pid,
                        start: m.start,
                        end: m.end,
                        value: translations_touched(m),
                    });
                }
            }
            match dir.clear_referenced() {
                Ok(()) => {
                    if !self.cleared.contains(&pid) {
                        self.cleared.push(pid);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Whether any process was sampled at all.
    pub(super) fn saw_a_process(&self) -> bool {
        self.seen_any
    }
}

/// Starts of the preload library's own mappings (its file and the .bss right after it,
/// which holds the watcher's stack): their accesses are memscope's, not the program's.
fn preload_mappings(mappings: &[Mapping]) -> Vec<u64> {
    let mut own = Vec::new();
    for (i, m) in mappings.iter().enumerate() {
        if m.path.contains(super::preload::MAPPING_NAME) {
            own.push(m.start);
            if let Some(next) = mappings.get(i + 1) {
                if next.start == m.end && next.path.is_empty() {
                    own.push(next.start);
                }
            }
        }
    }
    own
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_pages_count_as_one_translation_each() {
        let small = Mapping {
            referenced_kb: 400,
            ..Mapping::default()
        };
        assert_eq!(translations_touched(&small), 100.0);
        let huge = Mapping {
            referenced_kb: 2048,
            anon_huge_kb: 2048,
            ..Mapping::default()
        };
        assert_eq!(translations_touched(&huge), 1.0);
        let mixed = Mapping {
            referenced_kb: 2048 + 40,
            anon_huge_kb: 2048,
            ..Mapping::default()
        };
        assert_eq!(translations_touched(&mixed), 11.0);
    }
}
