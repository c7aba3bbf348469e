//! The aarch64 NEON kernels: 16-byte Q registers, on every aarch64 CPU. Each pass is one
//! `asm!` loop, so the loads and stores are the `LDP`/`STP` pairs of Q registers the
//! measurement is about (and `STNP`, the non-temporal pair, for the `-nt` kernels) rather
//! than whatever the compiler makes of intrinsics. An iteration moves two 64-byte lines
//! per array (four pairs, eight Q registers), which [`super::GRANULE`] divides.
//!
//! `write-zero` zeroes whole blocks with `DC ZVA` where `DCZID_EL0` allows it (Linux
//! allows it at EL0): the block is zeroed in the cache without first being read from
//! memory, so like a streaming store it saves the read-for-ownership, but the line stays
//! cached. The partial blocks at the array's ends, or the whole array where `DC ZVA` is
//! prohibited, are stored with `STP` of a zero register.

use core::arch::aarch64::{uint64x2_t, vdupq_n_u64, vgetq_lane_u64};
use core::arch::asm;

use super::{operands, pass_barrier, KernelSpec, Op, TRIAD_SCALAR, WRITE_PATTERN};

/// Bytes per array and loop iteration: two cache lines (the `#128` of the loops).
const STEP: usize = 128;
const _: () = assert!(super::GRANULE.is_multiple_of(STEP) && super::ALIGN.is_multiple_of(16));

/// The four pair loads of one iteration of `{$array}` into the eight Q registers named.
#[rustfmt::skip] // one instruction a line
macro_rules! load8 {
    ($array:literal, $r0:literal, $r1:literal, $r2:literal, $r3:literal,
     $r4:literal, $r5:literal, $r6:literal, $r7:literal) => {
        concat!(
            "ldp q", $r0, ", q", $r1, ", [{", $array, "}]\n",
            "ldp q", $r2, ", q", $r3, ", [{", $array, "}, #32]\n",
            "ldp q", $r4, ", q", $r5, ", [{", $array, "}, #64]\n",
            "ldp q", $r6, ", q", $r7, ", [{", $array, "}, #96]\n",
        )
    };
}

/// `v$dst0..7 = v$dst0..7 <op> v$src0..7`, on 64-bit lanes (`$op` "add" or "fadd"): the
/// digit strings are prefixes, so `lanes8!("add", "", "1")` adds v10..v17 to v0..v7.
#[rustfmt::skip] // one instruction a line
macro_rules! lanes8 {
    ($op:literal, $dst:literal, $src:literal) => {
        concat!(
            $op, " v", $dst, "0.2d, v", $dst, "0.2d, v", $src, "0.2d\n",
            $op, " v", $dst, "1.2d, v", $dst, "1.2d, v", $src, "1.2d\n",
            $op, " v", $dst, "2.2d, v", $dst, "2.2d, v", $src, "2.2d\n",
            $op, " v", $dst, "3.2d, v", $dst, "3.2d, v", $src, "3.2d\n",
            $op, " v", $dst, "4.2d, v", $dst, "4.2d, v", $src, "4.2d\n",
            $op, " v", $dst, "5.2d, v", $dst, "5.2d, v", $src, "5.2d\n",
            $op, " v", $dst, "6.2d, v", $dst, "6.2d, v", $src, "6.2d\n",
            $op, " v", $dst, "7.2d, v", $dst, "7.2d, v", $src, "7.2d\n",
        )
    };
}

/// One pass of a storing kernel: `$setup` once, then per iteration `$compute` leaves the
/// two lines to store in v0..v7 and `$st` ("stp" or "stnp") stores them; every pointer
/// named in `[...]` moves on by one iteration.
macro_rules! store_loop {
    ($st:literal, $out:expr, $bytes:expr, [$($input:ident = $pointer:expr),*],
     $setup:expr, $compute:expr $(, $operand:ident = $value:expr)*) => {{
        let out: *mut u8 = $out;
        let end = out.add($bytes);
        // SAFETY: every pointer is valid for `bytes` bytes (the caller's contract), and
        // `bytes` is a non-zero multiple of STEP, so the loop stays inside the arrays.
        asm!(
            $setup,
            "2:",
            $compute,
            concat!($st, " q0, q1, [{out}]"),
            concat!($st, " q2, q3, [{out}, #32]"),
            concat!($st, " q4, q5, [{out}, #64]"),
            concat!($st, " q6, q7, [{out}, #96]"),
            $(concat!("add {", stringify!($input), "}, {", stringify!($input), "}, #128"),)*
            "add {out}, {out}, #128",
            "cmp {out}, {end}",
            "b.lo 2b",
            out = inout(reg) out => _,
            end = in(reg) end,
            $($input = inout(reg) $pointer => _,)*
            $($operand = in(reg) $value,)*
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v10") _, out("v11") _, out("v12") _, out("v13") _,
            out("v14") _, out("v15") _, out("v16") _, out("v17") _,
            out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _,
            out("v31") _,
            options(nostack),
        )
    }};
}

/// One pass of `op` with store instruction `$st`: the inputs go to v0..v7, v10..v17 and
/// v20..v27, the result to v0..v7; constants sit in v31.
#[rustfmt::skip] // each kernel's registers and template together
macro_rules! store_pass {
    ($st:literal, $op:expr, $reads:expr, $out:expr, $bytes:expr, $a:expr, $b:expr, $c:expr) => {
        match $op {
            Op::Write => store_loop!(
                $st, $out, $bytes, [],
                concat!(
                    "dup v0.2d, {pattern}\n",
                    "mov v1.16b, v0.16b\nmov v2.16b, v0.16b\nmov v3.16b, v0.16b\n",
                    "mov v4.16b, v0.16b\nmov v5.16b, v0.16b\nmov v6.16b, v0.16b\n",
                    "mov v7.16b, v0.16b",
                ),
                "",
                pattern = WRITE_PATTERN
            ),
            Op::Copy => store_loop!(
                $st, $out, $bytes, [a = $a], "", load8!("a", 0, 1, 2, 3, 4, 5, 6, 7)
            ),
            Op::Increment => store_loop!(
                $st, $out, $bytes, [a = $a],
                "dup v31.2d, {one}",
                concat!(
                    load8!("a", 0, 1, 2, 3, 4, 5, 6, 7),
                    "add v0.2d, v0.2d, v31.2d\nadd v1.2d, v1.2d, v31.2d\n",
                    "add v2.2d, v2.2d, v31.2d\nadd v3.2d, v3.2d, v31.2d\n",
                    "add v4.2d, v4.2d, v31.2d\nadd v5.2d, v5.2d, v31.2d\n",
                    "add v6.2d, v6.2d, v31.2d\nadd v7.2d, v7.2d, v31.2d\n",
                ),
                one = 1u64
            ),
            Op::Sum if $reads == 2 => store_loop!(
                $st, $out, $bytes, [a = $a, b = $b], "",
                concat!(
                    load8!("a", 0, 1, 2, 3, 4, 5, 6, 7),
                    load8!("b", 10, 11, 12, 13, 14, 15, 16, 17),
                    lanes8!("add", "", "1"),
                )
            ),
            Op::Sum => store_loop!(
                $st, $out, $bytes, [a = $a, b = $b, c = $c], "",
                concat!(
                    load8!("a", 0, 1, 2, 3, 4, 5, 6, 7),
                    load8!("b", 10, 11, 12, 13, 14, 15, 16, 17),
                    load8!("c", 20, 21, 22, 23, 24, 25, 26, 27),
                    lanes8!("add", "", "1"),
                    lanes8!("add", "", "2"),
                )
            ),
            // Multiply then add, not FMA, as on x86 and in STREAM's C code.
            Op::Triad => store_loop!(
                $st, $out, $bytes, [a = $a, b = $b],
                "dup v31.2d, {scalar}",
                concat!(
                    load8!("a", 0, 1, 2, 3, 4, 5, 6, 7),
                    load8!("b", 10, 11, 12, 13, 14, 15, 16, 17),
                    "fmul v10.2d, v10.2d, v31.2d\nfmul v11.2d, v11.2d, v31.2d\n",
                    "fmul v12.2d, v12.2d, v31.2d\nfmul v13.2d, v13.2d, v31.2d\n",
                    "fmul v14.2d, v14.2d, v31.2d\nfmul v15.2d, v15.2d, v31.2d\n",
                    "fmul v16.2d, v16.2d, v31.2d\nfmul v17.2d, v17.2d, v31.2d\n",
                    lanes8!("fadd", "", "1"),
                ),
                scalar = TRIAD_SCALAR.to_bits()
            ),
            // Read and Zero do not come here.
            Op::Read | Op::Zero => {}
        }
    };
}

/// Runs `kernel` over `bytes` bytes of each array, `passes` times.
///
/// # Safety
/// As for [`super::run`] (which checked the arrays' count, alignment and size).
pub(super) unsafe fn run(
    kernel: &KernelSpec,
    arrays: &[*mut u8],
    bytes: usize,
    passes: usize,
) -> u64 {
    // The loops test their end at the bottom: an empty array must not enter them.
    if bytes == 0 {
        return 0;
    }
    let (out, a, b, c) = operands(arrays);
    if kernel.op == Op::Read {
        return read(a, bytes, passes);
    }
    let zva = zva_block();
    for _ in 0..passes {
        match (kernel.op, kernel.nontemporal) {
            (Op::Zero, _) => match zva {
                Some(block) => zero_with_zva(out, bytes, block),
                None => zero_lines(out, bytes),
            },
            (op, false) => store_pass!("stp", op, kernel.read_streams, out, bytes, a, b, c),
            (op, true) => {
                store_pass!("stnp", op, kernel.read_streams, out, bytes, a, b, c);
                // Like x86's sfence after streaming stores: the pass ends when its stores
                // are ordered before whatever the thread stores next.
                // SAFETY: a barrier has no operands.
                asm!("dmb ishst", options(nostack, preserves_flags));
            }
        }
        pass_barrier();
    }
    0
}

/// Eight independent 2 × 64-bit sums over the array, `passes` times; their total.
unsafe fn read(a: *const u8, bytes: usize, passes: usize) -> u64 {
    let mut sums: [uint64x2_t; 8] = [vdupq_n_u64(0); 8];
    for _ in 0..passes {
        let end = a.add(bytes);
        // SAFETY: `a` is valid for `bytes` bytes, a non-zero multiple of STEP.
        asm!(
            "2:",
            load8!("a", 0, 1, 2, 3, 4, 5, 6, 7),
            "add v16.2d, v16.2d, v0.2d",
            "add v17.2d, v17.2d, v1.2d",
            "add v18.2d, v18.2d, v2.2d",
            "add v19.2d, v19.2d, v3.2d",
            "add v20.2d, v20.2d, v4.2d",
            "add v21.2d, v21.2d, v5.2d",
            "add v22.2d, v22.2d, v6.2d",
            "add v23.2d, v23.2d, v7.2d",
            "add {a}, {a}, #128",
            "cmp {a}, {end}",
            "b.lo 2b",
            a = inout(reg) a => _,
            end = in(reg) end,
            inout("v16") sums[0], inout("v17") sums[1], inout("v18") sums[2],
            inout("v19") sums[3], inout("v20") sums[4], inout("v21") sums[5],
            inout("v22") sums[6], inout("v23") sums[7],
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            options(nostack, readonly),
        );
        pass_barrier();
    }
    sums.iter().fold(0u64, |total, &v| {
        total
            .wrapping_add(vgetq_lane_u64::<0>(v))
            .wrapping_add(vgetq_lane_u64::<1>(v))
    })
}

/// Stores zeros over `[out, out + bytes)` with `STP`, one 64-byte line per iteration (the
/// ends of a `DC ZVA` range are only line-aligned).
///
/// # Safety
/// `out` valid for `bytes` bytes, 64-byte aligned; `bytes` a multiple of 64.
pub(super) unsafe fn zero_lines(out: *mut u8, bytes: usize) {
    if bytes == 0 {
        return;
    }
    let end = out.add(bytes);
    // SAFETY: the caller's contract; the loop stores whole lines up to `end`.
    asm!(
        "movi v0.2d, #0",
        "2:",
        "stp q0, q0, [{out}]",
        "stp q0, q0, [{out}, #32]",
        "add {out}, {out}, #64",
        "cmp {out}, {end}",
        "b.lo 2b",
        out = inout(reg) out => _,
        end = in(reg) end,
        out("v0") _,
        options(nostack),
    );
}

/// Zeroes `[out, out + bytes)`: whole `block`-byte blocks with `DC ZVA`, the partial
/// blocks at either end with stores.
///
/// # Safety
/// `out` valid for `bytes` bytes, 64-byte aligned; `bytes` a multiple of 64; `block` the
/// `DC ZVA` block size this CPU reported, allowed at EL0.
pub(super) unsafe fn zero_with_zva(out: *mut u8, bytes: usize, block: usize) {
    let start = out as usize;
    let first = start.next_multiple_of(block);
    let last = (start + bytes) / block * block;
    if first >= last {
        return zero_lines(out, bytes);
    }
    zero_lines(out, first - start);
    let (at, end) = (out.add(first - start), out.add(last - start));
    // SAFETY: `[at, end)` is a whole number of blocks inside the array.
    asm!(
        "2:",
        "dc zva, {at}",
        "add {at}, {at}, {block}",
        "cmp {at}, {end}",
        "b.lo 2b",
        at = inout(reg) at => _,
        end = in(reg) end,
        block = in(reg) block,
        options(nostack),
    );
    zero_lines(end, start + bytes - last);
}

/// The `DC ZVA` block in bytes, or None where `DCZID_EL0.DZP` prohibits the instruction
/// (or the block is smaller than a line, which no CPU has, but the stores around the
/// blocks assume it).
pub(super) fn zva_block() -> Option<usize> {
    let dczid: u64;
    // SAFETY: DCZID_EL0 is readable at EL0 on every aarch64 CPU.
    unsafe { asm!("mrs {}, dczid_el0", out(reg) dczid, options(nomem, nostack, preserves_flags)) };
    // Bit 4: DZP, prohibited; bits 3:0: log2 of the block in 4-byte words.
    let block = 4usize << (dczid & 0xf);
    (dczid & 0x10 == 0 && block >= 64).then_some(block)
}
