//! Layouts for the TLB chase: one probe (a cache line) in each of P pages, linked into one
//! random cycle, so every load needs its own translation; and the "dense" control, the
//! same number of lines packed into as few pages as possible, whose latency is the data
//! caches' share.
//!
//! Where a probe sits inside its page decides which cache set it uses. Probe `i` (in page
//! `i`) takes line `(i·LINE_STEP + rotation) mod lines_per_page`: with an odd step this is
//! a permutation of the lines of a page over any `lines_per_page` consecutive probes, and
//! the same holds for every power-of-two window of lines inside a page. The probes thus
//! spread evenly over the sets of any cache indexed by page-offset bits (the L1d with 4 KiB
//! pages: 64 sets × 64 B = one page; the L2 too with 2 MiB pages), no two neighbouring
//! probes share a set, and the L1d fills only when it holds as many probes as it has lines
//! (not at 8 probes per set, as if every probe sat at offset 0). Pages are consecutive in
//! virtual memory, so a set-associative TLB indexed by the low bits of the page number
//! sees them evenly spread over its sets too.
//!
//! Offsets are byte offsets from the start of the buffer; `link` writes the cycle. The
//! visiting order is a uniformly random cyclic permutation (Sattolo's algorithm, see
//! `permutation`), so no prefetcher can follow it.

use super::permutation::{sattolo_cycle, SplitMix64};

/// Bytes per probe: one cache line.
pub(crate) const LINE_BYTES: usize = 64;

/// Lines between the probes of neighbouring pages (odd, so every line of a page is used
/// once per `lines_per_page` probes; far from 0 and 1 so neighbours share no set and no
/// adjacent-line pair).
pub(crate) const LINE_STEP: usize = 29;

/// Byte offset, inside its page, of the probe in page `i`.
pub(crate) fn line_offset(i: usize, page_bytes: usize, rotation: usize) -> usize {
    let lines = (page_bytes / LINE_BYTES).max(1);
    (i.wrapping_mul(LINE_STEP).wrapping_add(rotation) % lines) * LINE_BYTES
}

/// Byte offsets of `pages` probes, one in each of the first `pages` pages of
/// `page_bytes` (a power of two, at least one line) of a buffer.
pub(crate) fn sparse_offsets(pages: usize, page_bytes: usize, rotation: usize) -> Vec<usize> {
    assert!(
        page_bytes.is_power_of_two() && page_bytes >= LINE_BYTES,
        "a page is a power of two of at least one line"
    );
    (0..pages)
        .map(|i| i * page_bytes + line_offset(i, page_bytes, rotation))
        .collect()
}

/// Byte offsets of `lines` consecutive lines from the start of a buffer: the dense control.
pub(crate) fn dense_offsets(lines: usize) -> Vec<usize> {
    (0..lines).map(|i| i * LINE_BYTES).collect()
}

/// Links the probes at `offsets` into one random cycle (seeded) and returns the address of
/// the first probe, where a chase starts. Each probe holds the address of the next.
///
/// # Safety
/// `buffer` must be valid for writes of one `usize` at every offset, and aligned so that
/// every `buffer + offset` is aligned for a `usize`; `offsets` must not be empty, and no
/// two may be closer than 8 bytes.
pub unsafe fn link(buffer: *mut u8, offsets: &[usize], seed: u64) -> *const usize {
    assert!(!offsets.is_empty(), "a chase has at least one probe");
    let next = sattolo_cycle(offsets.len(), &mut SplitMix64::new(seed));
    for (from, &to) in next.iter().enumerate() {
        let slot = buffer.add(offsets[from]) as *mut usize;
        slot.write(buffer.add(offsets[to as usize]) as usize);
    }
    buffer.add(offsets[0]) as *const usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes of buffer `sparse_offsets(pages, page_bytes, _)` needs.
    fn sparse_bytes(pages: usize, page_bytes: usize) -> usize {
        pages * page_bytes
    }
    use crate::kernels::chase::{chase, UNROLL};
    use std::collections::HashSet;

    const PAGE_SIZES: [usize; 3] = [4096, 16384, 2 << 20];

    #[test]
    fn no_two_probes_share_a_line_and_each_stays_in_its_page() {
        for page in PAGE_SIZES {
            for pages in [
                1usize, 2, 3, 4, 63, 64, 65, 72, 73, 512, 1000, 3072, 4097, 6144,
            ] {
                for rotation in [0, 1, 17, 63, 1000] {
                    let offsets = sparse_offsets(pages, page, rotation);
                    assert_eq!(offsets.len(), pages);
                    let lines: HashSet<usize> = offsets.iter().map(|o| o / LINE_BYTES).collect();
                    assert_eq!(
                        lines.len(),
                        pages,
                        "page {page}, {pages} pages, rot {rotation}"
                    );
                    for (i, &o) in offsets.iter().enumerate() {
                        assert_eq!(o / page, i, "probe {i} in its own page");
                        assert_eq!(o % LINE_BYTES, 0, "probes start lines");
                    }
                }
            }
        }
        // The largest 4 KiB sweep too (2^17 pages), once.
        let offsets = sparse_offsets(1 << 17, 4096, 5);
        let lines: HashSet<usize> = offsets.iter().map(|o| o / LINE_BYTES).collect();
        assert_eq!(lines.len(), 1 << 17);
    }

    #[test]
    fn probes_spread_evenly_over_page_offset_sets() {
        // 64 sets of 64 B (an L1d indexed by the page offset) with 4 KiB pages, and 2048
        // sets (a 1 MiB, 8-way L2) with 2 MiB pages: no set holds more than its share
        // rounded up, and neighbouring probes never share a set.
        for (page, sets) in [(4096usize, 64usize), (2 << 20, 64), (2 << 20, 2048)] {
            for pages in [10usize, 64, 100, 511, 512, 3000, 6144] {
                let offsets = sparse_offsets(pages, page, 3);
                let mut count = vec![0usize; sets];
                for o in &offsets {
                    count[(o / LINE_BYTES) % sets] += 1;
                }
                let most = *count.iter().max().unwrap();
                assert!(most <= pages.div_ceil(sets), "page {page}, {pages}: {most}");
                for w in offsets.windows(2) {
                    assert_ne!((w[0] / LINE_BYTES) % sets, (w[1] / LINE_BYTES) % sets);
                }
            }
        }
    }

    #[test]
    fn the_chase_is_one_cycle_through_every_probe() {
        for (pages, page) in [
            (1usize, 4096usize),
            (2, 4096),
            (7, 4096),
            (300, 4096),
            (5, 2 << 20),
        ] {
            let offsets = sparse_offsets(pages, page, 11);
            let mut buffer = vec![0u64; sparse_bytes(pages, page) / 8];
            let base = buffer.as_mut_ptr() as *mut u8;
            // SAFETY: every offset is 64-byte aligned and inside the buffer.
            let start = unsafe { link(base, &offsets, 42) };
            let mut seen = HashSet::new();
            let mut p = start;
            for _ in 0..pages {
                assert!(
                    seen.insert(p as usize),
                    "a probe visited twice before the lap ended"
                );
                // SAFETY: p is a probe of the chain.
                p = unsafe { *p } as *const usize;
            }
            assert_eq!(p, start, "the lap closes after every probe");
            let expected: HashSet<usize> = offsets.iter().map(|&o| base as usize + o).collect();
            assert_eq!(seen, expected);
            // The assembly chase agrees: whole laps land on the start again.
            // SAFETY: as above.
            assert_eq!(
                unsafe { chase(start, pages) },
                start,
                "{pages} × {UNROLL} loads"
            );
        }
    }

    #[test]
    fn dense_lines_are_consecutive() {
        let offsets = dense_offsets(100);
        assert_eq!(offsets[99], 99 * 64);
        let mut buffer = vec![0u64; 100 * 8];
        // SAFETY: 100 lines fit the buffer.
        let start = unsafe { link(buffer.as_mut_ptr() as *mut u8, &offsets, 1) };
        assert_eq!(unsafe { chase(start, 100) }, start);
    }
}
