//! Scalar kernels on 8-byte words, for any architecture. Volatile accesses keep them
//! scalar (no auto-vectorisation, no `memcpy`/`memset`), so they measure what one 8-byte
//! load or store per instruction reaches. There is no portable streaming store: the
//! `-nt` kernels store normally here.

use super::{pass_barrier, KernelSpec, Op, TRIAD_SCALAR, WRITE_PATTERN};
use core::ptr::{read_volatile, write_volatile};

const W: usize = 8;
/// Words per stream and iteration (one cache line).
const UNROLL: usize = 8;
const STEP: usize = UNROLL * W;
const ACCUMULATORS: usize = 4;

pub(super) unsafe fn run(
    kernel: &KernelSpec,
    arrays: &[*mut u8],
    bytes: usize,
    passes: usize,
) -> u64 {
    let out = arrays[arrays.len() - 1];
    let a = arrays[0] as *const u8;
    let load = |p: *const u8, at: usize| read_volatile(p.add(at) as *const u64);
    match kernel.op {
        Op::Read => return read(a, bytes, passes),
        Op::Write => stores(out, bytes, passes, |_| WRITE_PATTERN),
        Op::Zero => stores(out, bytes, passes, |_| 0),
        Op::Copy => stores(out, bytes, passes, |at| load(a, at)),
        Op::Increment => stores(out, bytes, passes, |at| load(a, at).wrapping_add(1)),
        Op::Sum if kernel.read_streams == 2 => {
            let b = arrays[1] as *const u8;
            stores(out, bytes, passes, |at| {
                load(a, at).wrapping_add(load(b, at))
            })
        }
        Op::Sum => {
            let (b, c) = (arrays[1] as *const u8, arrays[2] as *const u8);
            stores(out, bytes, passes, |at| {
                load(a, at)
                    .wrapping_add(load(b, at))
                    .wrapping_add(load(c, at))
            })
        }
        Op::Triad => {
            let (b, c) = (a, arrays[1] as *const u8);
            stores(out, bytes, passes, |at| {
                let (vb, vc) = (f64::from_bits(load(b, at)), f64::from_bits(load(c, at)));
                (vb + TRIAD_SCALAR * vc).to_bits()
            })
        }
    }
    0
}

#[inline(always)]
unsafe fn stores(out: *mut u8, bytes: usize, passes: usize, value: impl Fn(usize) -> u64) {
    for _ in 0..passes {
        let mut offset = 0;
        while offset < bytes {
            for j in 0..UNROLL {
                let at = offset + j * W;
                write_volatile(out.add(at) as *mut u64, value(at));
            }
            offset += STEP;
        }
        pass_barrier();
    }
}

#[inline(never)]
unsafe fn read(a: *const u8, bytes: usize, passes: usize) -> u64 {
    let mut sums = [0u64; ACCUMULATORS];
    for _ in 0..passes {
        let mut offset = 0;
        while offset < bytes {
            for j in 0..UNROLL {
                let v = read_volatile(a.add(offset + j * W) as *const u64);
                sums[j % ACCUMULATORS] = sums[j % ACCUMULATORS].wrapping_add(v);
            }
            offset += STEP;
        }
        pass_barrier();
    }
    sums.iter().fold(0u64, |t, &s| t.wrapping_add(s))
}
