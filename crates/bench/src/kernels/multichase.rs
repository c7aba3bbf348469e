//! The parallel pointer-chase kernel: N independent chains walked by one thread, one
//! dependent load on every chain per round (`p[i] = *p[i]`). Loads of different chains do
//! not depend on each other, so the core may keep up to N misses in flight; how much
//! faster N chains go than one is the memory-level parallelism the core achieves.
//!
//! Each chain count is its own monomorphised function (`walk::<N>`) with the loop over the
//! chains fully unrolled and the rounds unrolled by [`ROUND_UNROLL`], so the pointers live
//! in registers and nothing but the loads and one loop counter runs between them. The
//! loads are volatile: the compiler may neither drop, merge nor reorder them. x86_64 has
//! 15 usable general registers besides the stack pointer, so beyond about 13 chains some
//! pointers spill to the stack; a spilled chain then also pays a store and a reload per
//! round (forwarded from the store buffer, a few cycles), which is small against a miss
//! and shows only at the fastest levels with many chains. `walk` is dispatched from a
//! runtime chain count for every count in 1..=[`MAX_CHAINS`] (LLVM unrolls the loop over
//! the chains up to about 32 of them; beyond, it stays a loop over an array on the stack,
//! which costs the same as spilled registers).

use std::ptr::read_volatile;

/// Rounds per loop iteration of `walk` (the remainder runs one round at a time).
pub(crate) const ROUND_UNROLL: usize = 4;

/// Largest chain count `multichase` accepts (every count from 1 to this has a kernel).
pub(crate) const MAX_CHAINS: usize = 64;

/// Whether `multichase` has a kernel for `chains` chains.
pub fn supported(chains: usize) -> bool {
    (1..=MAX_CHAINS).contains(&chains)
}

/// One round: one dependent load on every chain. Inlined into `walk`, where `N` is a
/// constant, so the loop is unrolled and the array broken into registers.
#[inline(always)]
unsafe fn round<const N: usize>(p: &mut [*const usize; N]) {
    for q in p.iter_mut() {
        *q = read_volatile(*q) as *const usize;
    }
}

/// Walks `N` chains for `rounds` rounds.
#[inline(never)]
unsafe fn walk<const N: usize>(ptrs: &mut [*const usize; N], rounds: usize) {
    // A local copy, so that the pointers can live in registers rather than behind `ptrs`.
    let mut p = *ptrs;
    for _ in 0..rounds / ROUND_UNROLL {
        round(&mut p);
        round(&mut p);
        round(&mut p);
        round(&mut p);
    }
    for _ in 0..rounds % ROUND_UNROLL {
        round(&mut p);
    }
    *ptrs = p;
}

/// Follows every chain in `ptrs` for `rounds` dependent loads, one load per chain and
/// round, and leaves each pointer where its chain stopped (pass them back in to continue).
///
/// # Panics
/// When `ptrs.len()` is not [`supported`].
///
/// # Safety
/// Every pointer must begin a chain in which each slot holds the address of another slot
/// of the same chain, all valid for reads.
pub(crate) unsafe fn multichase(ptrs: &mut [*const usize], rounds: usize) {
    macro_rules! dispatch {
        ($($n:literal)*) => {
            match ptrs.len() {
                $($n => walk::<$n>(
                    ptrs.try_into().expect("length checked by the match"),
                    rounds,
                ),)*
                n => panic!("multichase has no kernel for {n} chains"),
            }
        };
    }
    dispatch!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28
        29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56
        57 58 59 60 61 62 63 64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::permutation::{build_chase, ChaseOrder};

    #[test]
    fn chains_return_to_their_starts_after_whole_cycles() {
        let slot = 64;
        for chains in 1..=MAX_CHAINS {
            assert!(supported(chains));
            // Chains of odd lengths 1, 3, 5 and 7 (one-slot self loops included), so a
            // multiple of all of them, 105, is k × cycle length for every chain and also
            // exercises the rounds that do not fill an unrolled iteration.
            let lengths: Vec<usize> = (0..chains).map(|i| 1 + 2 * (i % 4)).collect();
            let total: usize = lengths.iter().sum();
            let mut buffer = vec![0u64; total * slot / 8];
            let base = buffer.as_mut_ptr() as *mut u8;
            let mut starts = Vec::new();
            let mut offset = 0;
            for (i, &len) in lengths.iter().enumerate() {
                // SAFETY: each chain's slots lie inside the buffer, disjoint from the others.
                starts.push(unsafe {
                    build_chase(base.add(offset), len, slot, ChaseOrder::Random, i as u64)
                });
                offset += len * slot;
            }
            for rounds in [0, 105, 3 * 105] {
                let mut ptrs = starts.clone();
                // SAFETY: every pointer begins a complete chain in the buffer.
                unsafe { multichase(&mut ptrs, rounds) };
                assert_eq!(ptrs, starts, "chains={chains} rounds={rounds}");
            }
            // One round moves every chain that is longer than one slot.
            let mut ptrs = starts.clone();
            unsafe { multichase(&mut ptrs, 1) };
            for i in 0..chains {
                assert_eq!(ptrs[i] == starts[i], lengths[i] == 1, "chain {i}");
            }
        }
    }

    #[test]
    fn remainder_rounds_are_walked() {
        // A single chain of 5 slots: 5k + r rounds for every r lands r steps on.
        let mut buffer = vec![0u64; 5 * 8];
        let base = buffer.as_mut_ptr() as *mut u8;
        // SAFETY: 5 slots of 64 bytes fit the buffer.
        let start = unsafe { build_chase(base, 5, 64, ChaseOrder::Random, 3) };
        let mut expected = vec![start];
        for _ in 0..5 {
            expected.push(unsafe { *expected[expected.len() - 1] } as *const usize);
        }
        for rounds in 0..40 {
            let mut ptrs = [start];
            unsafe { multichase(&mut ptrs, rounds) };
            assert_eq!(ptrs[0], expected[rounds % 5], "rounds={rounds}");
        }
    }

    #[test]
    #[should_panic(expected = "no kernel for 65 chains")]
    fn unsupported_counts_panic() {
        let mut ptrs = vec![std::ptr::null::<usize>(); 65];
        assert!(!supported(65) && !supported(0));
        // SAFETY: panics before any load.
        unsafe { multichase(&mut ptrs, 1) };
    }
}
