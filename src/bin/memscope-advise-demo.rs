//! A demonstration program for `memscope advise`: each mode does a fixed amount of work
//! whose speed is bound, by design, by one thing, so its run time shows what advise takes
//! away or adds:
//!
//! - `compute`: a dependent integer chain in registers (no data): moves with nothing in
//!   memory.
//! - `cache`: a dependent random walk over about half of this CPU's share of the last-level
//!   cache (read from sysfs): fast alone, slower when a co-runner takes cache.
//! - `bandwidth`: streaming reads with independent accumulators over a buffer of 8 × the
//!   LLC (at least 256 MiB): bound by DRAM bandwidth.
//! - `tlb`: 1 GiB of anonymous address space in many mappings, and a dependent walk over
//!   one line of every 4 KiB page of a few hot 2 MiB regions (plus a few lines in a few
//!   warm ones): the lines fit in the caches but the pages outnumber the TLB, so 2 MiB
//!   pages make it much faster. Only the regions it walks are touched, so huge pages cost
//!   little to fault in and the walk, not the setup, is what they change.
//!
//! Memory is plain anonymous memory (no madvise): huge pages come only from whoever runs
//! the program. The timed loops are inline assembly on x86_64, so a debug build runs them
//! at the same speed as a release build. Prints "MODE: X.XXX s" (the timed work) on
//! stdout and what it set up on stderr; bad arguments exit 2.
//!
//! Usage: memscope-advise-demo compute|cache|bandwidth|tlb [--scale F]

use std::process::ExitCode;
use std::time::Instant;

const NAME: &str = "memscope-advise-demo";
const LINE: usize = 64;
const PAGE: usize = 4096;
const HUGE: usize = 2 << 20;
const MIB: usize = 1 << 20;

/// Work at scale 1, sized for about 0.3–0.6 s on the 2-vCPU EPYC VM the project is tested
/// on.
const COMPUTE_STEPS: f64 = 400e6;
const CACHE_STEPS: f64 = 40e6;
const BANDWIDTH_BYTES: f64 = 12e9;
const TLB_STEPS: f64 = 20e6;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Compute,
    Cache,
    Bandwidth,
    Tlb,
}

impl Mode {
    fn parse(text: &str) -> Option<Mode> {
        match text {
            "compute" => Some(Mode::Compute),
            "cache" => Some(Mode::Cache),
            "bandwidth" => Some(Mode::Bandwidth),
            "tlb" => Some(Mode::Tlb),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Compute => "compute",
            Mode::Cache => "cache",
            Mode::Bandwidth => "bandwidth",
            Mode::Tlb => "tlb",
        }
    }
}

const USAGE: &str = "usage: memscope-advise-demo compute|cache|bandwidth|tlb [--scale F]";

fn parse(args: &[String]) -> Result<(Mode, f64), String> {
    let mut mode = None;
    let mut scale = 1.0;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--scale" {
            let value = rest.next().ok_or("--scale needs a value")?;
            scale = match value.parse::<f64>() {
                Ok(f) if f.is_finite() && f > 0.0 && f <= 1e4 => f,
                _ => {
                    return Err(format!(
                        "invalid value '{value}' for --scale, expected a number in (0, 10000]"
                    ))
                }
            };
        } else if mode.is_none() {
            mode = Some(Mode::parse(arg).ok_or_else(|| {
                format!("invalid mode '{arg}', expected compute, cache, bandwidth or tlb")
            })?);
        } else {
            return Err(format!("unexpected argument '{arg}'"));
        }
    }
    Ok((mode.ok_or("a mode is needed")?, scale))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, scale) = match parse(&args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("{NAME}: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let seconds = match mode {
        Mode::Compute => compute((COMPUTE_STEPS * scale) as u64),
        Mode::Cache => cache((CACHE_STEPS * scale) as u64),
        Mode::Bandwidth => bandwidth(BANDWIDTH_BYTES * scale),
        Mode::Tlb => tlb((TLB_STEPS * scale) as u64),
    };
    match seconds {
        Ok(seconds) => {
            println!("{}: {seconds:.3} s", mode.name());
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("{NAME}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A small xorshift generator: the layouts need randomness with respect to the hardware
/// only.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        ((self.next() as u128 * bound as u128) >> 64) as usize
    }
}

/// Plain anonymous memory, every page written once (as a program's data would be).
struct Mapping {
    base: *mut u8,
    len: usize,
}

impl Mapping {
    /// A mapping of `len` bytes; `touch` writes every page first (the process holds it).
    fn new(len: usize, touch: bool) -> Result<Mapping, String> {
        // SAFETY: a fresh private anonymous mapping, checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(format!(
                "cannot map {} MiB: {}",
                len / MIB,
                std::io::Error::last_os_error()
            ));
        }
        let base = base as *mut u8;
        for offset in (0..len).step_by(PAGE).filter(|_| touch) {
            // SAFETY: offset < len, inside the read-write mapping.
            unsafe { (base.add(offset) as *mut u64).write_volatile(offset as u64) };
        }
        Ok(Mapping { base, len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

/// Links the lines at `addresses` (distinct, 8-byte aligned) into one cycle in a random
/// order (Sattolo's shuffle): each holds the address of the next. Returns the first.
///
/// # Safety
/// Every address must be 8 writable bytes of a live mapping.
unsafe fn link(addresses: &mut [usize], rng: &mut Rng) -> usize {
    for i in (1..addresses.len()).rev() {
        let j = rng.below(i);
        addresses.swap(i, j);
    }
    for k in 0..addresses.len() {
        let next = addresses[(k + 1) % addresses.len()];
        (addresses[k] as *mut usize).write(next);
    }
    addresses[0]
}

/// Follows the chain from `start` for `steps` dependent loads; returns where it ended.
///
/// # Safety
/// `start` must be a line of a cycle made by `link` that stays mapped.
unsafe fn chase(start: usize, steps: u64) -> usize {
    let mut p = start;
    if steps == 0 {
        return p;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: every address loaded is a line of the cycle (the caller's promise).
    std::arch::asm!(
        "2:",
        "mov {p}, qword ptr [{p}]",
        "dec {n}",
        "jnz 2b",
        p = inout(reg) p,
        n = inout(reg) steps => _,
        options(nostack, readonly),
    );
    #[cfg(not(target_arch = "x86_64"))]
    for _ in 0..steps {
        p = std::ptr::read_volatile(p as *const usize);
    }
    p
}

fn timed(work: impl FnOnce() -> u64) -> f64 {
    let start = Instant::now();
    std::hint::black_box(work());
    start.elapsed().as_secs_f64()
}

fn compute(steps: u64) -> Result<f64, String> {
    Ok(timed(|| {
        let mut x = std::hint::black_box(0x9e37_79b9_7f4a_7c15u64);
        if steps == 0 {
            return x;
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: registers only.
        unsafe {
            std::arch::asm!(
                "2:",
                "imul {x}, {k}",
                "rol {x}, 17",
                "dec {n}",
                "jnz 2b",
                x = inout(reg) x,
                k = in(reg) 0xbf58_476d_1ce4_e5b9u64,
                n = inout(reg) steps => _,
                options(nomem, nostack),
            )
        };
        #[cfg(not(target_arch = "x86_64"))]
        for _ in 0..steps {
            x = std::hint::black_box(x.wrapping_mul(0xbf58_476d_1ce4_e5b9).rotate_left(17));
        }
        x
    }))
}

/// The last-level cache's size and how many CPUs share it, from sysfs.
fn llc() -> Option<(usize, usize)> {
    let mut best: Option<(u32, usize, usize)> = None;
    for index in 0..16 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{index}");
        let read = |name: &str| std::fs::read_to_string(format!("{dir}/{name}")).ok();
        let Some(level) = read("level").and_then(|l| l.trim().parse::<u32>().ok()) else {
            continue;
        };
        if read("type").is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        let Some(size) = read("size").and_then(|s| parse_size(s.trim())) else {
            continue;
        };
        let sharing = read("shared_cpu_list")
            .map(|list| count_cpus(list.trim()))
            .unwrap_or(1)
            .max(1);
        if best.is_none_or(|(l, _, _)| level > l) {
            best = Some((level, size, sharing));
        }
    }
    best.map(|(_, size, sharing)| (size, sharing))
}

/// "32768K", "1M", "512" → bytes.
fn parse_size(text: &str) -> Option<usize> {
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, ""),
    };
    let n: usize = digits.parse().ok()?;
    match unit {
        "" => Some(n),
        "K" => Some(n << 10),
        "M" => Some(n << 20),
        "G" => Some(n << 30),
        _ => None,
    }
}

/// How many CPUs "0-3,8,10-11" names.
fn count_cpus(list: &str) -> usize {
    list.split(',')
        .filter_map(|part| match part.split_once('-') {
            Some((a, b)) => Some(b.parse::<usize>().ok()? + 1 - a.parse::<usize>().ok()?),
            None => part.parse::<usize>().ok().map(|_| 1),
        })
        .sum()
}

fn cache(steps: u64) -> Result<f64, String> {
    let share = match llc() {
        Some((size, sharing)) => (size / sharing).max(MIB),
        None => MIB,
    };
    let set = (share / 2).max(PAGE) / LINE * LINE;
    eprintln!(
        "{NAME}: cache walk over {:.1} MiB (half of a {:.1} MiB LLC share)",
        set as f64 / MIB as f64,
        share as f64 / MIB as f64
    );
    let mapping = Mapping::new(set, true)?;
    let mut lines: Vec<usize> = (0..set / LINE)
        .map(|line| mapping.base as usize + line * LINE)
        .collect();
    // SAFETY: every address is a line inside the mapping.
    let start = unsafe { link(&mut lines, &mut Rng(0x2545_f491_4f6c_dd1d)) };
    // One untimed lap brings the set into the caches.
    // SAFETY: `start` is on the cycle just linked, which stays mapped.
    unsafe { chase(start, lines.len() as u64) };
    // SAFETY: as above.
    Ok(timed(|| unsafe { chase(start, steps) } as u64))
}

fn bandwidth(bytes: f64) -> Result<f64, String> {
    let llc_bytes = llc().map_or(0, |(size, _)| size);
    let len = (8 * llc_bytes).max(256 * MIB).next_multiple_of(HUGE);
    let passes = ((bytes / len as f64).round() as u64).max(1);
    eprintln!("{NAME}: {passes} streaming passes over {} MiB", len / MIB);
    let mapping = Mapping::new(len, true)?;
    Ok(timed(|| {
        (0..passes)
            // SAFETY: the mapping holds `len` bytes, a multiple of 64, page aligned.
            .map(|_| unsafe { sum(mapping.base, len) })
            .fold(0, u64::wrapping_add)
    }))
}

/// Sums `len` bytes at `base` as 64-bit words with four independent accumulators.
///
/// # Safety
/// `base` must be 16-byte aligned and valid for reads of `len` bytes, `len` a multiple of
/// 64 and not 0.
unsafe fn sum(base: *const u8, len: usize) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut a = _mm_setzero_si128();
        let mut b = _mm_setzero_si128();
        let mut c = _mm_setzero_si128();
        let mut d = _mm_setzero_si128();
        // SAFETY: reads 64 bytes per iteration from base up to base + len (the caller's
        // promise), aligned for the 16-byte operands.
        std::arch::asm!(
            "2:",
            "paddq {a}, xmmword ptr [{p}]",
            "paddq {b}, xmmword ptr [{p} + 16]",
            "paddq {c}, xmmword ptr [{p} + 32]",
            "paddq {d}, xmmword ptr [{p} + 48]",
            "add {p}, 64",
            "cmp {p}, {end}",
            "jne 2b",
            p = inout(reg) base => _,
            end = in(reg) base.add(len),
            a = inout(xmm_reg) a,
            b = inout(xmm_reg) b,
            c = inout(xmm_reg) c,
            d = inout(xmm_reg) d,
            options(nostack, readonly),
        );
        let total = _mm_add_epi64(_mm_add_epi64(a, b), _mm_add_epi64(c, d));
        (_mm_cvtsi128_si64(total) as u64).wrapping_add(_mm_extract_epi64::<1>(total) as u64)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let words = base as *const u64;
        let mut acc = [0u64; 4];
        for i in (0..len / 8).step_by(4) {
            for (j, a) in acc.iter_mut().enumerate() {
                *a = a.wrapping_add(std::ptr::read_volatile(words.add(i + j)));
            }
        }
        acc.iter().fold(0, |s, &a| s.wrapping_add(a))
    }
}

/// Mappings of the tlb mode: 128 of 8 MiB (1 GiB), 16 hot 2 MiB regions among them.
const TLB_REGIONS: usize = 128;
const TLB_REGION_BYTES: usize = 8 * MIB;
const TLB_HOT: usize = 16;
/// One chain line in this many lies in a random page of one of the warm regions.
const TLB_COLD_EVERY: usize = 64;
const TLB_WARM: usize = 16;

fn tlb(steps: u64) -> Result<f64, String> {
    // Every region its own mapping, as an allocator's arenas or a program's pools are;
    // only what the walk visits is touched (by the linking below).
    let regions = (0..TLB_REGIONS)
        .map(|_| Mapping::new(TLB_REGION_BYTES, false))
        .collect::<Result<Vec<_>, _>>()?;
    let chunks_per_region = TLB_REGION_BYTES / HUGE;
    let total_chunks = TLB_REGIONS * chunks_per_region;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let chunk_address = |chunk: usize| -> usize {
        let region = &regions[chunk / chunks_per_region];
        // The first 2 MiB boundary of the region, then whole 2 MiB chunks: a region of
        // 8 MiB holds at least 3 aligned chunks, so only the first 3 are used.
        let aligned = (region.base as usize).next_multiple_of(HUGE);
        aligned + (chunk % chunks_per_region) * HUGE
    };
    let usable_chunks = |chunk: usize| chunk % chunks_per_region < chunks_per_region - 1;
    let mut hot = Vec::new();
    while hot.len() < TLB_HOT {
        let chunk = rng.below(total_chunks);
        if usable_chunks(chunk) && !hot.contains(&chunk) {
            hot.push(chunk);
        }
    }
    hot.sort_unstable();
    let mut addresses = Vec::new();
    for &chunk in &hot {
        let start = chunk_address(chunk);
        eprintln!("{NAME}: hot region {start:#x}-{:#x}", start + HUGE);
        for page in 0..HUGE / PAGE {
            // The line differs from page to page so the lines spread over the cache sets.
            let line = (page * 37 + chunk * 11) % (PAGE / LINE);
            addresses.push(start + page * PAGE + line * LINE);
        }
    }
    let mut warm = Vec::new();
    while warm.len() < TLB_WARM {
        let chunk = rng.below(total_chunks);
        if usable_chunks(chunk) && !hot.contains(&chunk) && !warm.contains(&chunk) {
            warm.push(chunk);
        }
    }
    for _ in 0..addresses.len() / TLB_COLD_EVERY {
        let chunk = warm[rng.below(TLB_WARM)];
        let page = rng.below(HUGE / PAGE);
        let line = rng.below(PAGE / LINE);
        addresses.push(chunk_address(chunk) + page * PAGE + line * LINE);
    }
    addresses.sort_unstable();
    addresses.dedup();
    // SAFETY: every address is a line inside one of the mappings, which live until the
    // end of this function.
    let start = unsafe { link(&mut addresses, &mut rng) };
    // SAFETY: `start` is on the cycle just linked.
    unsafe { chase(start, addresses.len() as u64) };
    // SAFETY: as above.
    let seconds = timed(|| unsafe { chase(start, steps) } as u64);
    drop(regions);
    Ok(seconds)
}
