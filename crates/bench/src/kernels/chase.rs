//! The pointer-chase kernel: `p = *p`, unrolled, so each load's address comes from the
//! previous load and the time per load is the load-to-use latency of wherever the lines
//! live. On x86_64 the loop is written in assembly so the compiler can neither drop nor
//! reorder the loads; elsewhere volatile reads do the same job.

/// Loads per loop iteration. `chase` runs a multiple of this.
pub(crate) const UNROLL: usize = 16;

/// Follows the chain for `iterations × UNROLL` dependent loads from `start` and returns
/// where it stopped (pass it back in to continue the same cycle).
///
/// # Safety
/// `start` must begin a chain in which every slot holds the address of another slot, all
/// valid for reads.
#[inline(never)]
pub unsafe fn chase(start: *const usize, iterations: usize) -> *const usize {
    if iterations == 0 {
        return start;
    }
    chase_impl(start, iterations)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn chase_impl(start: *const usize, iterations: usize) -> *const usize {
    let mut p = start;
    let mut n = iterations;
    core::arch::asm!(
        ".p2align 5",
        "2:",
        ".rept 16",
        "mov {p}, qword ptr [{p}]",
        ".endr",
        "dec {n}",
        "jnz 2b",
        p = inout(reg) p,
        n = inout(reg) n,
        options(nostack, readonly),
    );
    let _ = n;
    p
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn chase_impl(start: *const usize, iterations: usize) -> *const usize {
    let mut p = start;
    for _ in 0..iterations {
        for _ in 0..UNROLL {
            p = std::ptr::read_volatile(p) as *const usize;
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::permutation::{build_chase, ChaseOrder};

    #[test]
    fn chase_returns_to_start_after_whole_cycles() {
        let slots = 64 * UNROLL;
        let mut buffer = vec![0u64; slots * 8];
        let base = buffer.as_mut_ptr() as *mut u8;
        // SAFETY: 64-byte slots fit the buffer.
        unsafe {
            let start = build_chase(base, slots, 64, ChaseOrder::Random, 7);
            // Going around the cycle an exact number of times lands on the start again.
            assert_eq!(chase(start, 3 * slots / UNROLL), start);
            assert_ne!(chase(start, 1), start);
            assert_eq!(chase(start, 0), start);
        }
    }
}
