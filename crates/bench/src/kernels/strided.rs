//! Access-pattern kernels: a sum of 8-byte elements read in stride order or through an
//! index array, and SAXPY (`y[i] = a·x[i] + y[i]`, f64) in the same two orders. The loads
//! are independent of one another, so the time per element is a throughput figure (how
//! fast the memory system serves many overlapping accesses in this pattern), not a
//! latency; `chase` measures latency.
//!
//! Every pass visits every element exactly once, whatever the stride: a strided pass
//! visits `0, s, 2s, …`, then `1, 1+s, 1+2s, …`, up to offset `s − 1`. A pass therefore
//! moves the same useful bytes for every stride and the strides compare fairly, while the
//! order decides how many of the bytes each cache line, page and prefetch brings are
//! used before they are evicted. A stride of at least the array's length degenerates into
//! plain sequential order (offset after offset, one element each).
//!
//! The `_offsets` variants run part of a strided pass (a range of offsets, each a sweep
//! through the whole array), and the indexed kernels run part of a random pass when given
//! part of the index array: trials over arrays far larger than the caches can then be
//! shorter than a pass.
//!
//! The loops are the same scalar code for every stride, stride 1 included (the compiler
//! does not vectorise them: the stride is only known at run time), so the strides differ
//! in their pattern alone. The sums keep four independent accumulators so that the adds
//! never limit the loads,
//! and every load feeds the returned sum, so none can be removed; the base pointers go
//! through `black_box` at each pass so the compiler cannot fold passes over unchanged
//! memory into one. The kernels are `#[inline(never)]`: the timed code is the same
//! function whatever calls it.

use std::hint::black_box;

/// Sums `passes` passes over `elements` elements of `a` in stride order (wrapping adds):
/// every element once per pass, see the module documentation.
///
/// # Safety
/// `a` must be valid for reads of `elements` `u64`s and aligned to 8 bytes.
#[inline(never)]
pub(crate) unsafe fn strided_sum(
    a: *const u64,
    elements: usize,
    stride: usize,
    passes: usize,
) -> u64 {
    let offsets = stride.max(1).min(elements);
    let mut total = 0u64;
    for _ in 0..passes {
        total = total.wrapping_add(sum_offsets(black_box(a), elements, stride, 0, offsets));
    }
    total
}

/// Part of a strided pass: the sweeps of offsets `first_offset .. first_offset + offsets`
/// (sweep `o` visits `o, o + stride, o + 2·stride, …` below `elements`). Consecutive
/// calls that together cover offsets `0 .. min(stride, elements)` make one pass.
///
/// # Safety
/// As for [`strided_sum`].
#[inline(never)]
pub(crate) unsafe fn strided_sum_offsets(
    a: *const u64,
    elements: usize,
    stride: usize,
    first_offset: usize,
    offsets: usize,
) -> u64 {
    sum_offsets(black_box(a), elements, stride, first_offset, offsets)
}

#[inline(always)]
unsafe fn sum_offsets(
    a: *const u64,
    elements: usize,
    stride: usize,
    first_offset: usize,
    offsets: usize,
) -> u64 {
    let stride = stride.max(1);
    let (mut s0, mut s1, mut s2, mut s3) = (0u64, 0u64, 0u64, 0u64);
    for offset in first_offset..first_offset + offsets {
        let mut i = offset;
        // Four loads a stride apart per step; the tail takes what is left.
        while i + 3 * stride < elements {
            s0 = s0.wrapping_add(*a.add(i));
            s1 = s1.wrapping_add(*a.add(i + stride));
            s2 = s2.wrapping_add(*a.add(i + 2 * stride));
            s3 = s3.wrapping_add(*a.add(i + 3 * stride));
            i += 4 * stride;
        }
        while i < elements {
            s0 = s0.wrapping_add(*a.add(i));
            i += stride;
        }
    }
    s0.wrapping_add(s1).wrapping_add(s2).wrapping_add(s3)
}

/// Sums `passes` passes of `a[index[k]]` for k in 0..count (wrapping adds). The index
/// array is read sequentially beside the random loads of `a`.
///
/// # Safety
/// `index` must be valid for reads of `count` `u32`s, and every index must address an
/// element of `a`, which must be valid for reads and aligned to 8 bytes.
#[inline(never)]
pub(crate) unsafe fn indexed_sum(
    a: *const u64,
    index: *const u32,
    count: usize,
    passes: usize,
) -> u64 {
    let mut sums = [0u64; 4];
    for _ in 0..passes {
        let a = black_box(a);
        let mut k = 0;
        while k + 4 <= count {
            sums[0] = sums[0].wrapping_add(*a.add(*index.add(k) as usize));
            sums[1] = sums[1].wrapping_add(*a.add(*index.add(k + 1) as usize));
            sums[2] = sums[2].wrapping_add(*a.add(*index.add(k + 2) as usize));
            sums[3] = sums[3].wrapping_add(*a.add(*index.add(k + 3) as usize));
            k += 4;
        }
        while k < count {
            sums[0] = sums[0].wrapping_add(*a.add(*index.add(k) as usize));
            k += 1;
        }
    }
    sums.iter().fold(0, |total, &s| total.wrapping_add(s))
}

/// `y[i] = a·x[i] + y[i]` for every one of `elements` elements, `passes` times, in stride
/// order (see the module documentation). Every update is a store the caller can read, so
/// none can be removed.
///
/// # Safety
/// `x` must be valid for reads and `y` for reads and writes of `elements` `f64`s, both
/// aligned to 8 bytes; they may not overlap.
#[inline(never)]
pub(crate) unsafe fn saxpy_strided(
    x: *const f64,
    y: *mut f64,
    elements: usize,
    stride: usize,
    a: f64,
    passes: usize,
) {
    let offsets = stride.max(1).min(elements);
    for _ in 0..passes {
        saxpy_offsets(black_box(x), black_box(y), elements, stride, 0, offsets, a);
    }
}

/// Part of a strided SAXPY pass: the sweeps of offsets `first_offset .. first_offset +
/// offsets`, as in [`strided_sum_offsets`].
///
/// # Safety
/// As for [`saxpy_strided`].
#[inline(never)]
pub(crate) unsafe fn saxpy_strided_offsets(
    x: *const f64,
    y: *mut f64,
    elements: usize,
    stride: usize,
    first_offset: usize,
    offsets: usize,
    a: f64,
) {
    saxpy_offsets(
        black_box(x),
        black_box(y),
        elements,
        stride,
        first_offset,
        offsets,
        a,
    );
}

#[inline(always)]
unsafe fn saxpy_offsets(
    x: *const f64,
    y: *mut f64,
    elements: usize,
    stride: usize,
    first_offset: usize,
    offsets: usize,
    a: f64,
) {
    let stride = stride.max(1);
    for offset in first_offset..first_offset + offsets {
        let mut i = offset;
        while i < elements {
            *y.add(i) = a * *x.add(i) + *y.add(i);
            i += stride;
        }
    }
}

/// `y[j] = a·x[j] + y[j]` for j = index[k], k in 0..count, `passes` times.
///
/// # Safety
/// `index` must be valid for reads of `count` `u32`s; every index must address an
/// element of both `x` (valid for reads) and `y` (valid for reads and writes), which are
/// aligned to 8 bytes and do not overlap.
#[inline(never)]
pub(crate) unsafe fn saxpy_indexed(
    x: *const f64,
    y: *mut f64,
    index: *const u32,
    count: usize,
    a: f64,
    passes: usize,
) {
    for _ in 0..passes {
        let (x, y) = (black_box(x), black_box(y));
        for k in 0..count {
            let j = *index.add(k) as usize;
            *y.add(j) = a * *x.add(j) + *y.add(j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::permutation::{sattolo_cycle, SplitMix64};

    fn values(n: usize, seed: u64) -> Vec<u64> {
        let mut rng = SplitMix64::new(seed);
        (0..n).map(|_| rng.next_u64()).collect()
    }

    fn plain_sum(a: &[u64]) -> u64 {
        a.iter().fold(0, |t, &v| t.wrapping_add(v))
    }

    #[test]
    fn strided_sum_visits_every_element_once_per_pass() {
        // Strides that divide n, that do not, equal to n, larger than n, and n below 4.
        for (n, stride) in [
            (1000, 1),
            (1000, 3),
            (1000, 8),
            (1000, 7),
            (1001, 31),
            (1000, 1000),
            (256, 512),
            (3, 2),
            (1, 5),
            (0, 3),
        ] {
            let a = values(n, n as u64 ^ stride as u64);
            let expected = plain_sum(&a);
            // SAFETY: a holds n elements.
            let one = unsafe { strided_sum(a.as_ptr(), n, stride, 1) };
            let three = unsafe { strided_sum(a.as_ptr(), n, stride, 3) };
            assert_eq!(one, expected, "n={n} stride={stride}");
            assert_eq!(three, expected.wrapping_mul(3), "n={n} stride={stride}");
        }
    }

    #[test]
    fn offset_ranges_make_up_a_pass() {
        for (n, stride) in [(1000, 8), (1001, 31), (100, 512), (1000, 3)] {
            let a = values(n, 5);
            let (x, y0) = saxpy_inputs(n);
            let mut y = y0.clone();
            let offsets = stride.min(n);
            let mut sum = 0u64;
            let mut first = 0;
            // Uneven pieces, as trials that continue where the last one stopped.
            for piece in [1, 2, 8].iter().cycle() {
                if first == offsets {
                    break;
                }
                let count = (*piece).min(offsets - first);
                // SAFETY: a, x and y hold n elements each.
                unsafe {
                    sum =
                        sum.wrapping_add(strided_sum_offsets(a.as_ptr(), n, stride, first, count));
                    saxpy_strided_offsets(x.as_ptr(), y.as_mut_ptr(), n, stride, first, count, 0.5);
                }
                first += count;
            }
            assert_eq!(sum, plain_sum(&a), "n={n} stride={stride}");
            for i in 0..n {
                assert_eq!(y[i], y0[i] + 0.5 * x[i], "n={n} stride={stride} i={i}");
            }
        }
    }

    #[test]
    fn indexed_sum_over_a_permutation_is_the_plain_sum() {
        for n in [1usize, 3, 4, 5, 1000, 4099] {
            let a = values(n, 9);
            let index = sattolo_cycle(n, &mut SplitMix64::new(n as u64));
            // SAFETY: every index is below n.
            let sum = unsafe { indexed_sum(a.as_ptr(), index.as_ptr(), n, 2) };
            assert_eq!(sum, plain_sum(&a).wrapping_mul(2), "n={n}");
        }
    }

    /// Integers and a = 0.5 keep every result exact, so equality is the right test.
    fn saxpy_inputs(n: usize) -> (Vec<f64>, Vec<f64>) {
        let x = (0..n).map(|i| (i % 97) as f64 + 1.0).collect();
        let y = (0..n).map(|i| (i % 13) as f64 * 4.0 + 2.0).collect();
        (x, y)
    }

    #[test]
    fn saxpy_strided_updates_every_element_once_per_pass() {
        let a = 0.5;
        for (n, stride) in [
            (1000, 1),
            (1000, 3),
            (1000, 8),
            (1001, 31),
            (100, 512),
            (1, 2),
        ] {
            let (x, y0) = saxpy_inputs(n);
            let mut y = y0.clone();
            // SAFETY: x and y hold n elements each and are separate vectors.
            unsafe { saxpy_strided(x.as_ptr(), y.as_mut_ptr(), n, stride, a, 2) };
            for i in 0..n {
                assert_eq!(y[i], y0[i] + 2.0 * a * x[i], "n={n} stride={stride} i={i}");
            }
        }
    }

    #[test]
    fn saxpy_indexed_updates_every_element_once_per_pass() {
        let a = 0.5;
        for n in [1usize, 7, 1000] {
            let (x, y0) = saxpy_inputs(n);
            let mut y = y0.clone();
            let index = sattolo_cycle(n, &mut SplitMix64::new(3));
            // SAFETY: every index is below n; x and y hold n elements each.
            unsafe { saxpy_indexed(x.as_ptr(), y.as_mut_ptr(), index.as_ptr(), n, a, 2) };
            for i in 0..n {
                assert_eq!(y[i], y0[i] + 2.0 * a * x[i], "n={n} i={i}");
            }
        }
    }
}
