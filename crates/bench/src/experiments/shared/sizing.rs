//! Working-set sizing shared by the experiment rooms: the geometric sweep of sizes (the
//! latency ladder, the stride and TLB sweeps, bandwidth's `--sweep`), one working set
//! inside each cache level and DRAM (bandwidth's table, the MLP and stride levels), the
//! DRAM working set of the chases (MLP, ROB, TLB) and the rounding to whole kernel
//! granules. Pure arithmetic on the machine's cache table; nothing here measures.

use crate::kernels::stream::GRANULE;
use crate::topology::{CacheInfo, Machine};
use crate::units::MIB;

/// Sizes from `min` to `max` with `per_octave` points per doubling (always including the
/// powers of two and `max` itself), rounded to whole slots.
pub(crate) fn sweep_sizes(min: u64, max: u64, per_octave: u32, slot: u64) -> Vec<u64> {
    let mut sizes = Vec::new();
    let (lo, hi) = ((min.max(slot) as f64).log2(), (max as f64).log2());
    let mut k = (lo * per_octave as f64).ceil() as i64;
    loop {
        let log2 = k as f64 / per_octave as f64;
        if log2 > hi + 1e-9 {
            break;
        }
        let bytes = (2f64.powf(log2) / slot as f64).round() as u64 * slot;
        if bytes >= min && sizes.last() != Some(&bytes) {
            sizes.push(bytes);
        }
        k += 1;
    }
    let last = max / slot * slot;
    if sizes.last() != Some(&last) && last >= min {
        sizes.push(last);
    }
    sizes
}

/// A working set inside each level, per thread: half of a private cache; for a shared one,
/// half of this thread's share but at least twice the level below (so it is not served by
/// the level below); DRAM four times the largest cache and at least 128 MiB.
pub(crate) fn level_working_sets(machine: &Machine, threads: usize) -> Vec<(String, u64)> {
    let mut sets = Vec::new();
    let mut below = 0u64;
    for cache in machine.data_caches() {
        let share = thread_share(cache, threads);
        let bytes = (share / 2).max(2 * below).min(share);
        sets.push((cache.name(), round_to_granule(bytes)));
        below = share;
    }
    let llc = machine.largest_cache_bytes().unwrap_or(32 * MIB);
    sets.push((
        "DRAM".to_string(),
        round_to_granule((4 * llc).max(128 * MIB)),
    ));
    sets
}

/// The part of a cache one of `threads` threads can count on: all of a private cache, an
/// equal share of one shared with other threads of the run.
pub(crate) fn thread_share(cache: &CacheInfo, threads: usize) -> u64 {
    let sharing = cache.shared_with_cpus.len().clamp(1, threads.max(1));
    cache.size_bytes / sharing as u64
}

pub(crate) fn round_to_granule(bytes: u64) -> u64 {
    (bytes / GRANULE as u64).max(1) * GRANULE as u64
}

/// The DRAM working set of the MLP and ROB chases: `given` (--max-size) when there is
/// one, else the bandwidth table's DRAM size (four times the largest cache, at least
/// 128 MiB).
pub(crate) fn dram_working_set(given: Option<u64>, machine: &Machine) -> u64 {
    if let Some(bytes) = given {
        return bytes;
    }
    level_working_sets(machine, 1)
        .last()
        .map_or(128 * MIB, |(_, bytes)| *bytes)
}
