//! Tests of the bandwidth kernels: every kernel with every instruction set this CPU runs
//! leaves exactly the expected values in its output, reads exactly its inputs, touches
//! nothing outside its arrays, and the registry counts bytes alike for all. On aarch64
//! these are the NEON and SVE correctness tests, run under qemu-user by name
//! (`<test binary> kernels::stream`).

use super::*;
use std::alloc::{alloc, dealloc, Layout};

/// A zero-free, ALIGN-aligned test array.
struct Array {
    ptr: *mut u8,
    layout: Layout,
}

impl Array {
    fn new(bytes: usize, align: usize, seed: u64) -> Array {
        let layout = Layout::from_size_align(bytes, align).unwrap();
        // SAFETY: non-zero size.
        let ptr = unsafe { alloc(layout) };
        assert!(!ptr.is_null());
        #[cfg(target_os = "linux")]
        if bytes >= 2 << 20 {
            // Huge pages if the kernel offers them (before the first touch), as a
            // bandwidth measurement wants; failure only costs TLB misses.
            // SAFETY: advice on our own allocation.
            unsafe { libc::madvise(ptr.cast(), bytes, libc::MADV_HUGEPAGE) };
        }
        let mut array = Array { ptr, layout };
        fill_pattern(array.bytes_mut(), seed);
        array
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the allocation holds layout.size() bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }

    fn words(&self) -> Vec<u64> {
        // SAFETY: as above; 64-byte alignment suits u64.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u64, self.layout.size() / 8) }
            .to_vec()
    }
}

impl Drop for Array {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

fn available_isas() -> Vec<Isa> {
    Isa::ALL.into_iter().filter(|i| i.is_available()).collect()
}

/// What the kernel must leave in its output, word by word, from its inputs.
fn expected(kernel: &KernelSpec, inputs: &[Vec<u64>], i: usize) -> u64 {
    match kernel.op {
        Op::Read => unreachable!(),
        Op::Write => WRITE_PATTERN,
        Op::Zero => 0,
        Op::Copy => inputs[0][i],
        Op::Increment => inputs[0][i].wrapping_add(1),
        Op::Sum => inputs.iter().fold(0u64, |s, w| s.wrapping_add(w[i])),
        Op::Triad => {
            let (b, c) = (f64::from_bits(inputs[0][i]), f64::from_bits(inputs[1][i]));
            (b + 3.0 * c).to_bits()
        }
    }
}

/// Bytes of guard on either side of a [`Guarded`] array: more than a `DC ZVA` block (at
/// most 2 KiB), so a block zeroed past the array's end would show.
const GUARD: usize = 4096;
/// What every guard byte holds: neither the write pattern, nor zero, nor a fill value.
const GUARD_BYTE: u8 = 0xc3;

/// An array of `bytes` filled with [`fill_pattern`], `shift` bytes past a page boundary
/// (ALIGN-aligned, not necessarily aligned to a `DC ZVA` block), between two guards.
struct Guarded {
    region: Array,
    shift: usize,
    bytes: usize,
}

impl Guarded {
    fn new(bytes: usize, shift: usize, seed: u64) -> Guarded {
        let mut region = Array::new(2 * GUARD + bytes, GUARD, seed);
        region.bytes_mut().fill(GUARD_BYTE);
        fill_pattern(&mut region.bytes_mut()[GUARD + shift..][..bytes], seed);
        Guarded {
            region,
            shift,
            bytes,
        }
    }

    fn ptr(&mut self) -> *mut u8 {
        self.region.bytes_mut()[GUARD + self.shift..].as_mut_ptr()
    }

    fn words(&self) -> Vec<u64> {
        let all = self.region.words();
        all[(GUARD + self.shift) / 8..][..self.bytes / 8].to_vec()
    }

    /// Whether every byte outside the array still holds the guard.
    fn guards_intact(&mut self) -> bool {
        let (shift, bytes) = (self.shift, self.bytes);
        let all = self.region.bytes_mut();
        let (before, rest) = all.split_at(GUARD + shift);
        before
            .iter()
            .chain(&rest[bytes..])
            .all(|&b| b == GUARD_BYTE)
    }
}

#[test]
fn every_kernel_computes_its_result_with_every_available_isa() {
    let isas = available_isas();
    eprintln!("instruction sets tested: {isas:?}");
    #[cfg(target_arch = "aarch64")]
    eprintln!(
        "SVE vector: {} bytes; DC ZVA block: {:?}",
        Isa::Sve.vector_bytes(),
        super::neon::zva_block()
    );
    for isa in isas {
        for kernel in KERNELS {
            // Odd and even pass counts; sizes of one and of several granules; arrays on a
            // page boundary and three lines past one.
            for (bytes, passes, shift) in [
                (GRANULE, 1, 0),
                (GRANULE, 3, 3 * ALIGN),
                (3 * GRANULE, 2, ALIGN),
                (8 * GRANULE, 3, 0),
                (5 * GRANULE, 1, 5 * ALIGN),
            ] {
                let mut arrays: Vec<Guarded> = (0..kernel.arrays())
                    .map(|i| Guarded::new(bytes, shift, 100 + i as u64))
                    .collect();
                let pointers: Vec<*mut u8> = arrays.iter_mut().map(Guarded::ptr).collect();
                let inputs: Vec<Vec<u64>> = arrays[..kernel.read_streams]
                    .iter()
                    .map(Guarded::words)
                    .collect();
                // SAFETY: distinct, aligned arrays of `bytes` bytes, a GRANULE multiple.
                let checksum = unsafe { run(kernel, isa, &pointers, bytes, passes) };
                let context = format!(
                    "{} with {isa} over {bytes} B {shift} B past a page, {passes} passes",
                    kernel.name
                );
                for (i, array) in arrays.iter_mut().enumerate() {
                    assert!(array.guards_intact(), "{context}: array {i} wrote outside");
                }
                for (input, array) in inputs.iter().zip(&arrays) {
                    assert_eq!(&array.words(), input, "{context}: an input changed");
                }
                if kernel.op == Op::Read {
                    let sum = inputs[0].iter().fold(0u64, |s, &w| s.wrapping_add(w));
                    assert_eq!(checksum, sum.wrapping_mul(passes as u64), "{context}");
                    continue;
                }
                assert_eq!(checksum, 0, "{context}");
                let output = arrays.last().unwrap().words();
                for (i, &word) in output.iter().enumerate() {
                    assert_eq!(word == 0, kernel.op == Op::Zero, "{context}: word {i}");
                    assert_eq!(word, expected(kernel, &inputs, i), "{context}: word {i}");
                }
                // Bytes counted: every array once, read or written.
                let streams = (kernel.read_streams + kernel.write_streams) as u64;
                assert_eq!(kernel.bytes_per_pass(bytes), streams * bytes as u64);
                assert_eq!(kernel.write_streams, 1, "{context}");
            }
        }
    }
}

/// The stores `write-zero` falls back on where `DC ZVA` is prohibited (never under Linux,
/// so the kernel tests above do not reach them): every byte zeroed, nothing else.
#[cfg(target_arch = "aarch64")]
#[test]
fn zero_stores_without_dc_zva_zero_exactly_the_array() {
    for bytes in [64, GRANULE, 3 * GRANULE + 64] {
        for shift in [0, ALIGN, 7 * ALIGN] {
            type Zeroer = unsafe fn(*mut u8, usize);
            let zeroers: [(&str, Zeroer); 2] = [
                ("neon", super::neon::zero_lines),
                ("sve", super::sve::store_zeros),
            ];
            for (isa, zero) in zeroers {
                if isa == "sve" && !Isa::Sve.is_available() {
                    continue;
                }
                let mut array = Guarded::new(bytes, shift, 7);
                // SAFETY: the array holds `bytes` bytes, 64-byte aligned; SVE checked.
                unsafe { zero(array.ptr(), bytes) };
                let context = format!("{isa}: {bytes} B {shift} B past a page");
                assert!(array.guards_intact(), "{context}");
                assert!(array.words().iter().all(|&w| w == 0), "{context}");
            }
        }
    }
}

#[test]
fn triad_is_exact_on_the_fill_pattern() {
    let mut arrays: Vec<Array> = (0..3).map(|i| Array::new(GRANULE, ALIGN, i)).collect();
    let pointers: Vec<*mut u8> = arrays.iter_mut().map(|a| a.ptr).collect();
    let triad = find("triad").unwrap();
    // SAFETY: as in the test above.
    unsafe { run(triad, Isa::best_available(), &pointers, GRANULE, 1) };
    let [b, c, a] = [0, 1, 2].map(|i| arrays[i].words());
    for i in 0..a.len() {
        let (fb, fc) = (f64::from_bits(b[i]), f64::from_bits(c[i]));
        assert_eq!(f64::from_bits(a[i]), fb + 3.0 * fc);
        // Integers below 2^22: the sum is exact, whatever the rounding mode.
        assert_eq!(f64::from_bits(a[i]) as u64, fb as u64 + 3 * fc as u64);
    }
}

#[test]
fn zero_passes_and_empty_arrays_touch_nothing() {
    for kernel in KERNELS {
        let mut arrays: Vec<Array> = (0..kernel.arrays())
            .map(|i| Array::new(GRANULE, ALIGN, i as u64))
            .collect();
        let before: Vec<Vec<u64>> = arrays.iter().map(Array::words).collect();
        let pointers: Vec<*mut u8> = arrays.iter_mut().map(|a| a.ptr).collect();
        for isa in available_isas() {
            // SAFETY: as above.
            assert_eq!(unsafe { run(kernel, isa, &pointers, GRANULE, 0) }, 0);
            // SAFETY: as above; with 0 bytes no byte may be touched.
            assert_eq!(unsafe { run(kernel, isa, &pointers, 0, 3) }, 0);
            let after: Vec<Vec<u64>> = arrays.iter().map(Array::words).collect();
            assert_eq!(after, before, "{} with {isa}", kernel.name);
        }
    }
}

#[test]
fn bytes_per_pass_counts_reads_and_writes_alike() {
    const MIB: usize = 1 << 20;
    let expected_streams = [
        ("read", 1, "1:0"),
        ("write", 1, "0:1"),
        ("write-nt", 1, "0:1"),
        ("copy", 2, "1:1"),
        ("copy-nt", 2, "1:1"),
        ("triad", 3, "2:1"),
        ("triad-nt", 3, "2:1"),
        ("mix-3:1", 4, "3:1"),
        ("mix-3:1-nt", 4, "3:1"),
        ("mix-2:1", 3, "2:1"),
        ("mix-2:1-nt", 3, "2:1"),
        ("mix-1:1", 2, "1:1"),
        ("mix-1:1-nt", 2, "1:1"),
        ("write-zero", 1, "0:1"),
    ];
    assert_eq!(expected_streams.len(), KERNELS.len());
    for (name, arrays, ratio) in expected_streams {
        let kernel = find(name).unwrap();
        assert_eq!(kernel.arrays(), arrays, "{name}");
        assert_eq!(kernel.ratio(), ratio, "{name}");
        assert_eq!(kernel.bytes_per_pass(MIB), (arrays * MIB) as u64, "{name}");
        assert_eq!(kernel.nontemporal, name.ends_with("-nt"), "{name}");
    }
    assert_eq!(find("triad").unwrap().bytes_per_pass(MIB), 3 * MIB as u64);
    // No overflow for arrays beyond 4 GiB.
    assert_eq!(find("mix-3:1").unwrap().bytes_per_pass(1 << 33), 1 << 35);
}

#[test]
fn registry_names_are_unique_and_found() {
    for (i, kernel) in KERNELS.iter().enumerate() {
        assert!(KERNELS[..i].iter().all(|k| k.name != kernel.name));
        assert!(std::ptr::eq(find(kernel.name).unwrap(), kernel));
        assert!(!kernel.description.is_empty() && kernel.description.len() < 60);
        assert!(names().split(", ").any(|n| n == kernel.name));
    }
    assert_eq!(find("COPY-NT").unwrap().name, "copy-nt");
    assert!(find("memcpy").is_none());
    assert!(find("").is_none());
    assert!(names().starts_with("read, write, write-nt, copy"));
}

#[test]
fn isa_names_round_trip_and_junk_is_rejected() {
    for isa in Isa::ALL {
        assert_eq!(Isa::parse(isa.name()), Some(isa));
        assert_eq!(Isa::parse(&isa.to_string().to_uppercase()), Some(isa));
        assert!(Isa::NAMES.contains(isa.name()));
        let json = serde_json::to_string(&isa).unwrap();
        assert_eq!(json, format!("\"{}\"", isa.name()));
    }
    assert_eq!(Isa::parse("AVX-512"), Some(Isa::Avx512));
    assert_eq!(Isa::parse(" NEON "), Some(Isa::Neon));
    for junk in ["", "avx", "avx512f", "sve2", "asimd", "sse", "portable2"] {
        assert_eq!(Isa::parse(junk), None, "{junk}");
    }
    let sve = Isa::Sve.vector_bytes();
    assert!((16..=256).contains(&sve) && sve.is_multiple_of(16), "{sve}");
    assert_eq!(
        Isa::ALL.map(Isa::vector_bytes),
        [64, 32, 16, sve, 16, 8],
        "each architecture's widest first"
    );
    assert!(Isa::best_available().is_available());
    assert!(Isa::Portable.is_available());
    #[cfg(target_arch = "x86_64")]
    assert!(Isa::Sse2.is_available(), "SSE2 is part of x86_64");
    #[cfg(target_arch = "aarch64")]
    {
        assert!(Isa::Neon.is_available(), "NEON is part of aarch64");
        assert!(!Isa::Avx2.is_available());
        let best = if Isa::Sve.is_available() {
            Isa::Sve
        } else {
            Isa::Neon
        };
        assert_eq!(Isa::best_available(), best);
    }
    #[cfg(not(target_arch = "aarch64"))]
    assert!(!Isa::Neon.is_available() && !Isa::Sve.is_available());
    // DC ZVA only with NEON and SVE, and there exactly where DCZID_EL0 allows it.
    assert_eq!(zero_block(Isa::Portable), None);
    #[cfg(target_arch = "aarch64")]
    assert_eq!(zero_block(Isa::Neon), super::neon::zva_block());
    #[cfg(not(target_arch = "aarch64"))]
    assert!(Isa::ALL.into_iter().all(|isa| zero_block(isa).is_none()));
}

#[test]
fn fill_pattern_is_non_zero_seeded_and_page_distinct() {
    let mut a = vec![0u8; 3 * 4096 + 5];
    let mut b = a.clone();
    fill_pattern(&mut a, 1);
    fill_pattern(&mut b, 2);
    assert!(a.chunks_exact(8).all(|w| w != [0; 8]));
    assert!(a[3 * 4096..].iter().all(|&x| x != 0));
    assert_ne!(a, b);
    assert_ne!(a[..4096], a[4096..8192]);
    let mut again = vec![0u8; a.len()];
    fill_pattern(&mut again, 1);
    assert_eq!(a, again);
}

/// Single-thread bandwidth of a few kernels, L1- and DRAM-sized: a measurement, not a
/// check. Run it pinned and on a quiet machine:
/// `taskset -c 1 cargo test --release --lib stream::tests::measure -- --ignored --nocapture`
#[test]
#[ignore]
fn measure_bandwidth() {
    use std::time::Instant;
    for (bytes, sample_secs, samples) in [(16 << 10, 0.002, 200), (1 << 30, 0.0, 20)] {
        // One region, arrays placed as the module documentation advises.
        let stride = bytes + 7680;
        let mut region = Array::new(3 * stride, 2 << 20, 9);
        let arrays: Vec<*mut u8> = (0..3)
            .map(|i| region.bytes_mut()[i * stride..].as_mut_ptr())
            .collect();
        for name in ["read", "copy", "write-nt", "write", "copy-nt", "triad"] {
            let kernel = find(name).unwrap();
            for isa in available_isas() {
                let time = |passes: usize| {
                    let start = Instant::now();
                    // SAFETY: the arrays lie inside the region, apart, ALIGN-aligned.
                    let sum =
                        unsafe { run(kernel, isa, &arrays[..kernel.arrays()], bytes, passes) };
                    std::hint::black_box(sum);
                    start.elapsed().as_secs_f64()
                };
                // Calibrate: the fewest passes that last `sample_secs`; then keep the
                // best of many short samples, the ones no other process interrupted.
                let mut passes = 1;
                while time(passes) < sample_secs {
                    passes *= 2;
                }
                let mut times: Vec<f64> = (0..samples).map(|_| time(passes)).collect();
                times.sort_by(f64::total_cmp);
                let moved = kernel.bytes_per_pass(bytes) as f64 * passes as f64;
                println!(
                    "{name:>9} {isa:>8} {:>8} KiB/array: best {:6.1} GB/s, median {:6.1} GB/s",
                    bytes >> 10,
                    moved / times[0] / 1e9,
                    moved / times[samples / 2] / 1e9,
                );
            }
        }
    }
}
