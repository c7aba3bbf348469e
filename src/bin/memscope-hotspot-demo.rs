//! A demonstration program for `memscope pages`: it maps about 1 GiB in many separate
//! anonymous regions, touches all of it, then spends most of its random, dependent
//! read-modify-write accesses in a few 2 MiB regions (the hot regions, printed on
//! stderr) and the rest anywhere. In the hot regions it touches a few cache lines of
//! every 4 KiB page (like the headers of page-sized buckets), so the data stays in the
//! caches while the pages outnumber the TLB: its speed is bound by address translation,
//! and huge pages under the hot regions buy most of what huge pages everywhere buy.
//!
//! Usage: memscope-hotspot-demo [--regions N] [--region-mib M] [--hot K]
//!        [--hot-share F] [--lines-per-page L] [--accesses A] [--seed S]

use std::time::Instant;

const CHUNK: usize = 2 << 20;

struct Options {
    regions: usize,
    region_mib: usize,
    hot: usize,
    hot_share: f64,
    lines_per_page: usize,
    accesses: u64,
    seed: u64,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        regions: 128,
        region_mib: 8,
        hot: 8,
        hot_share: 0.99,
        lines_per_page: 2,
        accesses: 100_000_000,
        seed: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = || format!("invalid value '{value}' for {flag}");
        match flag.as_str() {
            "--regions" => o.regions = value.parse().map_err(|_| bad())?,
            "--region-mib" => o.region_mib = value.parse().map_err(|_| bad())?,
            "--hot" => o.hot = value.parse().map_err(|_| bad())?,
            "--hot-share" => o.hot_share = value.parse().map_err(|_| bad())?,
            "--lines-per-page" => o.lines_per_page = value.parse().map_err(|_| bad())?,
            "--accesses" => o.accesses = value.parse().map_err(|_| bad())?,
            "--seed" => o.seed = value.parse().map_err(|_| bad())?,
            _ => return Err(format!("unknown option '{flag}'")),
        }
    }
    if !(1..=64).contains(&o.lines_per_page) {
        return Err("expected 1 ≤ --lines-per-page ≤ 64".into());
    }
    if o.regions == 0 || o.region_mib < 2 || !o.region_mib.is_multiple_of(2) {
        return Err("expected --regions ≥ 1 and an even --region-mib ≥ 2".into());
    }
    let chunks = o.regions * o.region_mib / 2;
    if o.hot == 0 || o.hot > chunks || !(0.0..=1.0).contains(&o.hot_share) {
        return Err(format!(
            "expected 1 ≤ --hot ≤ {chunks} and 0 ≤ --hot-share ≤ 1"
        ));
    }
    Ok(o)
}

fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

fn main() {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("memscope-hotspot-demo: {e}");
            std::process::exit(2);
        }
    };
    let bytes = o.region_mib << 20;
    // Every region is its own mapping, as an allocator's arenas or a program's pools are.
    let regions: Vec<&mut [u64]> = (0..o.regions)
        .map(|_| {
            // SAFETY: a fresh private anonymous mapping; the slice covers exactly it and
            // lives until the process exits.
            unsafe {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                if p == libc::MAP_FAILED {
                    eprintln!("memscope-hotspot-demo: cannot map {bytes} bytes");
                    std::process::exit(1);
                }
                std::slice::from_raw_parts_mut(p.cast::<u64>(), bytes / 8)
            }
        })
        .collect();
    let mut regions = regions;
    for (i, region) in regions.iter_mut().enumerate() {
        for (j, word) in region.iter_mut().enumerate().step_by(512) {
            *word = (i * 7 + j) as u64;
        }
    }
    // The hot chunks: spread over the regions, chosen by the seed.
    let chunks_per_region = bytes / CHUNK;
    let total_chunks = o.regions * chunks_per_region;
    let mut hot: Vec<usize> = Vec::new();
    let mut state = o.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    while hot.len() < o.hot {
        state = xorshift(state);
        let chunk = (state % total_chunks as u64) as usize;
        if !hot.contains(&chunk) {
            hot.push(chunk);
        }
    }
    hot.sort_unstable();
    for &chunk in &hot {
        let region = &regions[chunk / chunks_per_region];
        let start = region.as_ptr() as usize + (chunk % chunks_per_region) * CHUNK;
        eprintln!(
            "memscope-hotspot-demo: hot region {start:#x}-{:#x}",
            start + CHUNK
        );
    }
    let words_per_chunk = CHUNK / 8;
    let threshold = (o.hot_share * u32::MAX as f64) as u64;
    let start = Instant::now();
    let mut x = state;
    for _ in 0..o.accesses {
        x = xorshift(x);
        let y = xorshift(x);
        let (chunk, word) = if (x & 0xffff_ffff) <= threshold {
            let chunk = hot[((x >> 32) % hot.len() as u64) as usize];
            let page = (y % 512) as usize;
            // The page's lines sit at offsets that differ from page to page, so they
            // spread over all cache sets.
            let k = ((y >> 9) % o.lines_per_page as u64) as usize;
            let line = (page * 37 + chunk * 11 + k * 13) % 64;
            (chunk, page * 512 + line * 8)
        } else {
            let chunk = ((x >> 32) % total_chunks as u64) as usize;
            (chunk, (y % words_per_chunk as u64) as usize)
        };
        let slot = &mut regions[chunk / chunks_per_region]
            [(chunk % chunks_per_region) * words_per_chunk + word];
        let v = *slot;
        *slot = v.wrapping_add(1);
        // The next address depends on the value just read: one access at a time.
        x = y ^ (v & 1);
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{} accesses in {seconds:.3} s ({:.1} M accesses/s)",
        o.accesses,
        o.accesses as f64 / seconds / 1e6
    );
}
