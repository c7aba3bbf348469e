//! The aarch64 SVE kernels, vector-length agnostic: the same code runs with 128-bit to
//! 2048-bit vectors. A pass is one `asm!` loop over four whole vectors per array and
//! iteration (`LD1D`/`ST1D` at `#k, MUL VL`, or `STNT1D`, the non-temporal store, for the
//! `-nt` kernels) under an all-true predicate, then a predicated loop (`WHILELO`) over
//! what is left, which is nothing for every power-of-two vector length (four vectors are
//! at most 1 KiB, [`super::GRANULE`]).
//!
//! Rust's `asm!` has no operand class for Z registers: the templates name z0..z31 and
//! p0/p1 themselves and declare them clobbered through the overlapping v registers and
//! the p-register class. `write-zero` zeroes with `DC ZVA` where allowed, as the NEON one
//! does (the instruction does not depend on the vector length).

use core::arch::asm;

use super::{neon, operands, pass_barrier, KernelSpec, Op, TRIAD_SCALAR, WRITE_PATTERN};

/// The longest SVE vector, 2048 bits: four of them (an iteration) fit a granule, so the
/// predicated remainder loop only runs for lengths that are not a power of two.
const MAX_VECTOR_BYTES: usize = 256;
const _: () = assert!(super::GRANULE.is_multiple_of(4 * MAX_VECTOR_BYTES));

/// This CPU's SVE vector length in bytes, or None without SVE.
pub(super) fn vector_bytes() -> Option<usize> {
    if !std::arch::is_aarch64_feature_detected!("sve") {
        return None;
    }
    // SAFETY: the CPU has SVE.
    Some(unsafe { rdvl() })
}

#[target_feature(enable = "sve")]
unsafe fn rdvl() -> usize {
    let bytes: usize;
    // SAFETY: RDVL only reads the vector length.
    asm!("rdvl {}, #1", out(reg) bytes, options(nomem, nostack, preserves_flags));
    bytes
}

/// The loads, arithmetic and store of vector `$k` (0..3) of an iteration under predicate
/// `$p`: inputs in z$k, z1$k and z2$k (prefix strings, so vector 2 uses z2, z12, z22),
/// the result in z$k; constants in z28 (zero), z29 (pattern) and z30 (scalar).
#[rustfmt::skip] // the instructions as they read
macro_rules! load {
    ($reg:literal, $array:literal, $p:literal, $k:literal) => {
        concat!("ld1d z", $reg, $k, ".d, ", $p, "/z, [{", $array, "}, #", $k, ", mul vl]\n")
    };
}

#[rustfmt::skip]
macro_rules! store {
    ($st:literal, $reg:literal, $p:literal, $k:literal) => {
        concat!($st, " z", $reg, ".d, ", $p, ", [{out}, #", $k, ", mul vl]\n")
    };
}

macro_rules! write_slot {
    ($st:literal, $p:literal, $k:literal) => {
        store!($st, "29", $p, $k)
    };
}

macro_rules! zero_slot {
    ($st:literal, $p:literal, $k:literal) => {
        store!($st, "28", $p, $k)
    };
}

macro_rules! copy_slot {
    ($st:literal, $p:literal, $k:literal) => {
        concat!(load!("", "a", $p, $k), store!($st, $k, $p, $k))
    };
}

#[rustfmt::skip]
macro_rules! increment_slot {
    ($st:literal, $p:literal, $k:literal) => {
        concat!(
            load!("", "a", $p, $k),
            "add z", $k, ".d, z", $k, ".d, #1\n",
            store!($st, $k, $p, $k),
        )
    };
}

#[rustfmt::skip]
macro_rules! sum2_slot {
    ($st:literal, $p:literal, $k:literal) => {
        concat!(
            load!("", "a", $p, $k),
            load!("1", "b", $p, $k),
            "add z", $k, ".d, z", $k, ".d, z1", $k, ".d\n",
            store!($st, $k, $p, $k),
        )
    };
}

#[rustfmt::skip]
macro_rules! sum3_slot {
    ($st:literal, $p:literal, $k:literal) => {
        concat!(
            load!("", "a", $p, $k),
            load!("1", "b", $p, $k),
            load!("2", "c", $p, $k),
            "add z", $k, ".d, z", $k, ".d, z1", $k, ".d\n",
            "add z", $k, ".d, z", $k, ".d, z2", $k, ".d\n",
            store!($st, $k, $p, $k),
        )
    };
}

// Multiply then add, not FMA, as on x86 and in STREAM's C code.
#[rustfmt::skip]
macro_rules! triad_slot {
    ($st:literal, $p:literal, $k:literal) => {
        concat!(
            load!("", "a", $p, $k),
            load!("1", "b", $p, $k),
            "fmul z1", $k, ".d, z1", $k, ".d, z30.d\n",
            "fadd z", $k, ".d, z", $k, ".d, z1", $k, ".d\n",
            store!($st, $k, $p, $k),
        )
    };
}

/// One pass of a storing kernel: four vectors per iteration under p0 (all true) while
/// four remain, then one at a time under p1 (`WHILELO` on the 8-byte elements left).
macro_rules! store_loop {
    ($st:literal, $slot:ident, $out:expr, $bytes:expr, [$($input:ident = $pointer:expr),*]) => {
        // SAFETY: every pointer is valid for `bytes` bytes (the caller's contract); the
        // loops store exactly `bytes` bytes from `out` and read as many from each input.
        asm!(
            "dup z28.d, #0",
            "dup z29.d, {pattern}",
            "dup z30.d, {scalar}",
            "ptrue p0.d",
            "rdvl {step}, #4",
            "2:",
            "cmp {left}, {step}",
            "b.lo 3f",
            $slot!($st, "p0", 0),
            $slot!($st, "p0", 1),
            $slot!($st, "p0", 2),
            $slot!($st, "p0", 3),
            $(concat!("addvl {", stringify!($input), "}, {", stringify!($input), "}, #4"),)*
            "addvl {out}, {out}, #4",
            "sub {left}, {left}, {step}",
            "b 2b",
            "3:",
            "lsr {left}, {left}, #3",
            "whilelo p1.d, xzr, {left}",
            // b.eq: no element active ("b.none").
            "b.eq 5f",
            "4:",
            $slot!($st, "p1", 0),
            $(concat!("addvl {", stringify!($input), "}, {", stringify!($input), "}, #1"),)*
            "addvl {out}, {out}, #1",
            "uqdecd {left}",
            "whilelo p1.d, xzr, {left}",
            // b.mi: the first element is active ("b.first").
            "b.mi 4b",
            "5:",
            out = inout(reg) $out => _,
            left = inout(reg) $bytes => _,
            step = out(reg) _,
            pattern = in(reg) WRITE_PATTERN,
            scalar = in(reg) TRIAD_SCALAR.to_bits(),
            $($input = inout(reg) $pointer => _,)*
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v10") _, out("v11") _, out("v12") _, out("v13") _,
            out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v28") _, out("v29") _, out("v30") _,
            out("p0") _, out("p1") _,
            options(nostack),
        )
    };
}

macro_rules! store_pass {
    ($st:literal, $op:expr, $reads:expr, $out:expr, $bytes:expr, $a:expr, $b:expr, $c:expr) => {
        match $op {
            Op::Write => store_loop!($st, write_slot, $out, $bytes, []),
            Op::Copy => store_loop!($st, copy_slot, $out, $bytes, [a = $a]),
            Op::Increment => store_loop!($st, increment_slot, $out, $bytes, [a = $a]),
            Op::Sum if $reads == 2 => store_loop!($st, sum2_slot, $out, $bytes, [a = $a, b = $b]),
            Op::Sum => store_loop!($st, sum3_slot, $out, $bytes, [a = $a, b = $b, c = $c]),
            Op::Triad => store_loop!($st, triad_slot, $out, $bytes, [a = $a, b = $b]),
            // Read and Zero do not come here.
            Op::Read | Op::Zero => {}
        }
    };
}

/// Runs `kernel` over `bytes` bytes of each array, `passes` times.
///
/// # Safety
/// As for [`super::run`] (which checked the arrays and that the CPU has SVE).
#[target_feature(enable = "sve")]
pub(super) unsafe fn run(
    kernel: &KernelSpec,
    arrays: &[*mut u8],
    bytes: usize,
    passes: usize,
) -> u64 {
    let (out, a, b, c) = operands(arrays);
    if kernel.op == Op::Read {
        return read(a, bytes, passes);
    }
    let zva = neon::zva_block();
    for _ in 0..passes {
        match (kernel.op, kernel.nontemporal) {
            (Op::Zero, _) => match zva {
                Some(block) => neon::zero_with_zva(out, bytes, block),
                None => store_zeros(out, bytes),
            },
            (op, false) => store_pass!("st1d", op, kernel.read_streams, out, bytes, a, b, c),
            (op, true) => {
                store_pass!("stnt1d", op, kernel.read_streams, out, bytes, a, b, c);
                // As after x86's streaming stores: the pass ends when its stores are
                // ordered before whatever the thread stores next.
                // SAFETY: a barrier has no operands.
                asm!("dmb ishst", options(nostack, preserves_flags));
            }
        }
        pass_barrier();
    }
    0
}

/// Stores zeros over `[out, out + bytes)` with `ST1D` (where `DC ZVA` is prohibited).
///
/// # Safety
/// `out` valid for `bytes` bytes; the CPU has SVE.
#[target_feature(enable = "sve")]
pub(super) unsafe fn store_zeros(out: *mut u8, bytes: usize) {
    store_loop!("st1d", zero_slot, out, bytes, []);
}

/// Four 64-bit-lane sums (z10..z13) over the array, `passes` times; their total.
#[target_feature(enable = "sve")]
unsafe fn read(a: *const u8, bytes: usize, passes: usize) -> u64 {
    let total: u64;
    // SAFETY: `a` is valid for `bytes` bytes; the loops read exactly those, every pass.
    asm!(
        "ptrue p0.d",
        "rdvl {step}, #4",
        "dup z10.d, #0",
        "dup z11.d, #0",
        "dup z12.d, #0",
        "dup z13.d, #0",
        "6:",
        "cbz {passes}, 9f",
        "mov {p}, {a}",
        "mov {left}, {bytes}",
        "2:",
        "cmp {left}, {step}",
        "b.lo 3f",
        "ld1d z0.d, p0/z, [{p}]",
        "ld1d z1.d, p0/z, [{p}, #1, mul vl]",
        "ld1d z2.d, p0/z, [{p}, #2, mul vl]",
        "ld1d z3.d, p0/z, [{p}, #3, mul vl]",
        "add z10.d, z10.d, z0.d",
        "add z11.d, z11.d, z1.d",
        "add z12.d, z12.d, z2.d",
        "add z13.d, z13.d, z3.d",
        "addvl {p}, {p}, #4",
        "sub {left}, {left}, {step}",
        "b 2b",
        "3:",
        "lsr {left}, {left}, #3",
        "whilelo p1.d, xzr, {left}",
        "b.eq 5f",
        "4:",
        // Zeroing loads: inactive lanes add nothing.
        "ld1d z0.d, p1/z, [{p}]",
        "add z10.d, z10.d, z0.d",
        "addvl {p}, {p}, #1",
        "uqdecd {left}",
        "whilelo p1.d, xzr, {left}",
        "b.mi 4b",
        "5:",
        "sub {passes}, {passes}, #1",
        "b 6b",
        "9:",
        "add z10.d, z10.d, z11.d",
        "add z12.d, z12.d, z13.d",
        "add z10.d, z10.d, z12.d",
        "uaddv d10, p0, z10.d",
        "fmov {total}, d10",
        a = in(reg) a,
        bytes = in(reg) bytes,
        passes = inout(reg) passes => _,
        p = out(reg) _,
        left = out(reg) _,
        step = out(reg) _,
        total = out(reg) total,
        out("v0") _, out("v1") _, out("v2") _, out("v3") _,
        out("v10") _, out("v11") _, out("v12") _, out("v13") _,
        out("p0") _, out("p1") _,
        options(nostack, readonly),
    );
    total
}
