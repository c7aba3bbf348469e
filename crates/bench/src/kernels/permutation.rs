//! Pointer-chase layouts: a buffer cut into slots (one cache line each by default), every
//! slot holding the address of the next, so that all slots form **one** cycle in a random
//! order. Each load depends on the one before and the prefetchers cannot guess the next
//! line.
//!
//! Random orders come from Sattolo's algorithm, which draws uniformly among the cyclic
//! permutations (a plain Fisher–Yates shuffle could split the slots into several short
//! cycles, and a chase would then run around a small one).
//!
//! Two orders: `Random` is one cycle over the whole buffer (cache misses plus TLB misses);
//! `PageLocal` visits a window of a few pages at a time, in random order inside the window
//! and across windows, so DRAM is reached with few TLB misses.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Order in which the chase visits the slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChaseOrder {
    Random,
    /// Random inside windows of this many bytes (a few pages), windows in random order.
    PageLocal {
        window_bytes: usize,
    },
}

impl ChaseOrder {
    /// The order without its window: what a report records.
    pub fn kind(self) -> ChaseOrderKind {
        match self {
            ChaseOrder::Random => ChaseOrderKind::Random,
            ChaseOrder::PageLocal { .. } => ChaseOrderKind::PageLocal,
        }
    }
}

impl fmt::Display for ChaseOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind().fmt(f)
    }
}

/// A chase order by name, as reports write it ("random", "page-local"): a report with any
/// other name is refused when read, naming the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChaseOrderKind {
    Random,
    PageLocal,
}

impl ChaseOrderKind {
    /// Its name in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ChaseOrderKind::Random => "random",
            ChaseOrderKind::PageLocal => "page-local",
        }
    }
}

impl fmt::Display for ChaseOrderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A small, fast, seedable generator (SplitMix64): layouts must be random with respect to
/// the hardware, not cryptographically, and a seed makes a layout reproducible.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in 0..bound (bound > 0), by Lemire's multiply-shift (bias below 2^-32 for
    /// the sizes used here).
    pub fn below(&mut self, bound: usize) -> usize {
        ((self.next_u64() as u128 * bound as u128) >> 64) as usize
    }
}

/// Sattolo's algorithm: `next[i]` is the successor of `i` in a uniformly random cyclic
/// permutation of 0..n (a single cycle through every element).
pub(crate) fn sattolo_cycle(n: usize, rng: &mut SplitMix64) -> Vec<u32> {
    assert!(n <= u32::MAX as usize, "at most 2^32 slots");
    let mut next: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = rng.below(i); // j < i: never the element itself, which is what makes one cycle
        next.swap(i, j);
    }
    next
}

/// Fills `index` with 0..len in a uniformly random order (Fisher–Yates).
pub(crate) fn shuffle_indices(index: &mut [u32], rng: &mut SplitMix64) {
    assert!(index.len() <= u32::MAX as usize, "at most 2^32 slots");
    for (i, slot) in index.iter_mut().enumerate() {
        *slot = i as u32;
    }
    for i in (1..index.len()).rev() {
        index.swap(i, rng.below(i + 1));
    }
}

/// The order of visits of a random cycle, starting at 0: `sequence[k]` is the k-th slot.
/// Every ordering of the other slots after 0 is one cyclic permutation read from 0, so a
/// shuffle of 1..n gives the same uniform cycle as Sattolo's algorithm followed by a walk
/// along it, without that walk's n dependent cache misses.
fn random_sequence(n: usize, rng: &mut SplitMix64) -> Vec<u32> {
    let mut sequence = vec![0u32; n];
    if n > 1 {
        shuffle_indices(&mut sequence[1..], rng);
        for s in &mut sequence[1..] {
            *s += 1;
        }
    }
    sequence
}

/// The visiting order of all `slots` for a chase order: a permutation of 0..slots.
pub(crate) fn visit_order(
    slots: usize,
    slot_bytes: usize,
    order: ChaseOrder,
    rng: &mut SplitMix64,
) -> Vec<u32> {
    match order {
        ChaseOrder::Random => random_sequence(slots, rng),
        ChaseOrder::PageLocal { window_bytes } => {
            let per_window = (window_bytes / slot_bytes).clamp(1, slots.max(1));
            let windows = slots.div_ceil(per_window);
            let mut sequence = Vec::with_capacity(slots);
            for window in random_sequence(windows, rng) {
                let first = window as usize * per_window;
                let count = per_window.min(slots - first);
                sequence.extend(
                    random_sequence(count, rng)
                        .into_iter()
                        .map(|s| (first + s as usize) as u32),
                );
            }
            sequence
        }
    }
}

/// Writes the chase into `buffer`: slot `sequence[k]` points to slot `sequence[k+1]`, the
/// last back to the first. Returns the address of the first slot (where a chase starts).
///
/// # Safety
/// `buffer` must be valid for writes of `slots × slot_bytes` bytes, aligned to 8 bytes,
/// `slot_bytes` a multiple of 8 and at least 8, and `sequence` a permutation of 0..slots.
pub unsafe fn link(buffer: *mut u8, slot_bytes: usize, sequence: &[u32]) -> *const usize {
    let n = sequence.len();
    for k in 0..n {
        let from = buffer.add(sequence[k] as usize * slot_bytes) as *mut usize;
        let to = buffer.add(sequence[(k + 1) % n] as usize * slot_bytes);
        from.write(to as usize);
    }
    buffer.add(sequence[0] as usize * slot_bytes) as *const usize
}

/// Writes a chase along a cyclic permutation: slot `i` points to slot `next[i]`, written
/// in address order (one sequential pass over the buffer, where writing in visiting order
/// would miss the cache at every store of a DRAM-sized chase). Returns slot 0's address.
///
/// # Safety
/// As for [`link`], with `next` a single cycle through 0..slots.
pub(crate) unsafe fn link_cycle(buffer: *mut u8, slot_bytes: usize, next: &[u32]) -> *const usize {
    for (i, &to) in next.iter().enumerate() {
        let from = buffer.add(i * slot_bytes) as *mut usize;
        from.write(buffer.add(to as usize * slot_bytes) as usize);
    }
    buffer as *const usize
}

/// Builds a chase of `slots` slots of `slot_bytes` in `buffer` in the given order.
///
/// # Safety
/// As for [`link`].
pub(crate) unsafe fn build_chase(
    buffer: *mut u8,
    slots: usize,
    slot_bytes: usize,
    order: ChaseOrder,
    seed: u64,
) -> *const usize {
    let mut rng = SplitMix64::new(seed);
    match order {
        ChaseOrder::Random => link_cycle(buffer, slot_bytes, &sattolo_cycle(slots, &mut rng)),
        ChaseOrder::PageLocal { .. } => {
            let sequence = visit_order(slots, slot_bytes, order, &mut rng);
            link(buffer, slot_bytes, &sequence)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Follows `next` from 0 and returns the cycle length.
    fn cycle_length(next: &[u32]) -> usize {
        let mut slot = 0usize;
        for step in 1..=next.len() {
            slot = next[slot] as usize;
            if slot == 0 {
                return step;
            }
        }
        usize::MAX
    }

    #[test]
    fn sattolo_gives_a_single_cycle_for_every_size_and_seed() {
        for n in [1usize, 2, 3, 7, 64, 1000, 4097] {
            for seed in 0..20 {
                let next = sattolo_cycle(n, &mut SplitMix64::new(seed));
                assert_eq!(cycle_length(&next), n, "n={n} seed={seed}");
                let mut sorted = next.clone();
                sorted.sort_unstable();
                assert!(sorted.iter().enumerate().all(|(i, &v)| v as usize == i));
            }
        }
    }

    #[test]
    fn sattolo_is_not_the_identity_shift() {
        // A trivial "cycle" i -> i+1 would be one cycle too, but defeats the prefetcher's
        // blindness; random cycles of 1000 elements essentially never have 10% sequential steps.
        let next = sattolo_cycle(1000, &mut SplitMix64::new(1));
        let sequential = (0..1000)
            .filter(|&i| next[i] as usize == (i + 1) % 1000)
            .count();
        assert!(sequential < 100, "{sequential}");
    }

    fn chase_visits(order: ChaseOrder, slots: usize, slot_bytes: usize) -> Vec<usize> {
        let mut buffer = vec![0u64; slots * slot_bytes / 8];
        let base = buffer.as_mut_ptr() as *mut u8;
        // SAFETY: the buffer holds slots × slot_bytes bytes.
        let start = unsafe { build_chase(base, slots, slot_bytes, order, 42) };
        let mut visits = Vec::new();
        let mut p = start;
        for _ in 0..slots {
            visits.push((p as usize - base as usize) / slot_bytes);
            // SAFETY: every slot holds the address of another slot of the buffer.
            p = unsafe { *p } as *const usize;
        }
        assert_eq!(
            p, start,
            "the chase must come back to its start after all slots"
        );
        visits
    }

    #[test]
    fn random_chase_through_memory_is_one_cycle() {
        let visits = chase_visits(ChaseOrder::Random, 3000, 64);
        let mut sorted = visits.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 3000);
    }

    #[test]
    fn page_local_chase_is_one_cycle_and_stays_in_its_window() {
        let window_bytes = 4 * 4096;
        let slots = 1000; // not a multiple of the window: the last window is partial
        let visits = chase_visits(ChaseOrder::PageLocal { window_bytes }, slots, 64);
        let mut sorted = visits.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), slots);
        let per_window = window_bytes / 64;
        // Every run of `per_window` consecutive visits (aligned to window starts in the
        // sequence) stays inside one window of the buffer.
        let mut k = 0;
        while k < visits.len() {
            let window = visits[k] / per_window;
            let len = per_window.min(slots - window * per_window);
            assert!(visits[k..k + len].iter().all(|v| v / per_window == window));
            k += len;
        }
    }
}
