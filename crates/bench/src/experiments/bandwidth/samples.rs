//! Synthetic bandwidth results for the tests of the bandwidth view: plausible GB/s of a
//! registry subset at each level, for given thread counts, with an optional sweep.

use super::{BandwidthResult, BandwidthRow, ChosenBy, IsaChoice, Kernel};
use crate::experiments::shared::level::Level;
use crate::kernels::stream::Isa;
use crate::units::{KIB, MIB};

/// Kernel registry subset: (name, reads, writes, nt).
pub const KERNELS: [(&str, usize, usize, bool); 13] = [
    ("read", 1, 0, false),
    ("write", 0, 1, false),
    ("write-nt", 0, 1, true),
    ("copy", 1, 1, false),
    ("copy-nt", 1, 1, true),
    ("triad", 2, 1, false),
    ("triad-nt", 2, 1, true),
    ("mix-3:1", 3, 1, false),
    ("mix-3:1-nt", 3, 1, true),
    ("mix-2:1", 2, 1, false),
    ("mix-2:1-nt", 2, 1, true),
    ("mix-1:1", 1, 1, false),
    ("mix-1:1-nt", 1, 1, true),
];

/// A plausible bandwidth for a kernel at a working set per thread, on a 3 GHz core
/// with the caches of `Machine::sample`: falls from L1 to DRAM; streaming stores run at DRAM
/// speed everywhere; DRAM saturates with threads.
fn plausible_gbs(kernel: (&str, usize, usize, bool), bytes: u64, threads: usize) -> f64 {
    let (_, reads, writes, nt) = kernel;
    let per_thread_cache = if bytes <= 32 * KIB {
        190.0
    } else if bytes <= MIB {
        95.0
    } else if bytes <= 32 * MIB / threads as u64 {
        48.0
    } else {
        0.0
    };
    let write_share = writes as f64 / (reads + writes) as f64;
    let dram = 60.0_f64.min(24.0 * (threads as f64).sqrt()) * (1.0 - 0.3 * write_share);
    if nt {
        let nt_rate = 28.0 * (threads as f64).min(2.0);
        return if per_thread_cache > 0.0 {
            nt_rate.min(per_thread_cache * threads as f64) * (1.0 + write_share)
        } else {
            nt_rate * (1.0 + write_share)
        };
    }
    if per_thread_cache > 0.0 {
        per_thread_cache * threads as f64 * (1.0 - 0.35 * write_share)
    } else {
        dram
    }
}

/// One row; copy in L3 is noisy (spread 14 %).
pub fn row(
    kernel: (&str, usize, usize, bool),
    threads: usize,
    level: &str,
    bytes: u64,
) -> BandwidthRow {
    let arrays = (kernel.1 + kernel.2) as u64;
    let working_set = bytes;
    // Three-array kernels round down to whole 1 KiB granules per array.
    let bytes = (bytes / arrays / KIB).max(1) * KIB * arrays;
    let gb = plausible_gbs(kernel, bytes, threads);
    BandwidthRow {
        kernel: Kernel::find(kernel.0).expect("a registry kernel"),
        read_parts: kernel.1,
        write_parts: kernel.2,
        nontemporal: kernel.3,
        isa: Isa::Avx2,
        threads,
        working_set_bytes: working_set,
        bytes_per_thread: bytes,
        level: Level::from(level.to_string()),
        gb_per_s: gb,
        bytes_per_cycle: Some(gb / threads as f64 / 3.0),
        spread_pct: if kernel.0 == "copy" && level == "L3" {
            14.0
        } else {
            1.5
        },
        trials: 7,
        overlap: 1.0,
        concurrent: true,
        attempts: 7,
        planned_trials: 7,
        few_trials: false,
    }
}

/// Every kernel at L1d, L2, L3 and DRAM for each thread count; with `sweep_per_octave`
/// above 0, the sweep kernels from 4 KiB to 256 MiB with the first thread count.
pub fn bandwidth(
    thread_counts: &[usize],
    kernels: &[(&str, usize, usize, bool)],
    sweep_kernels: &[(&str, usize, usize, bool)],
    sweep_per_octave: u32,
) -> BandwidthResult {
    let mut rows = Vec::new();
    for &threads in thread_counts {
        for (level, bytes) in [
            ("L1d", 16 * KIB),
            ("L2", 512 * KIB),
            ("L3", 16 * MIB / threads as u64),
            ("DRAM", 128 * MIB),
        ] {
            for &k in kernels {
                rows.push(row(k, threads, level, bytes));
            }
        }
    }
    let mut sweep = Vec::new();
    if sweep_per_octave > 0 {
        let steps = 16 * sweep_per_octave; // 4 KiB .. 256 MiB
        for i in 0..=steps {
            let bytes =
                (4.0 * KIB as f64 * 2f64.powf(f64::from(i) / f64::from(sweep_per_octave))) as u64;
            let bytes = bytes / KIB * KIB;
            let level = match bytes {
                b if b <= 32 * KIB => "L1d",
                b if b <= MIB => "L2",
                b if b <= 32 * MIB => "L3",
                _ => "DRAM",
            };
            for &k in sweep_kernels {
                sweep.push(row(k, thread_counts[0], level, bytes));
            }
        }
    }
    BandwidthResult {
        isa: "avx2".to_string(),
        isa_choice: IsaChoice::fixed(Isa::Avx2, ChosenBy::Flag),
        rows,
        sweep,
        cpus: vec![7, 0, 1, 2, 3, 4, 5, 6],
        ladder: None,
        membind: None,
        zero_block_bytes: None,
    }
}

/// A result without any row.
pub fn empty() -> BandwidthResult {
    BandwidthResult {
        isa: String::new(),
        isa_choice: IsaChoice::fixed(Isa::Portable, ChosenBy::Flag),
        rows: vec![],
        sweep: vec![],
        cpus: vec![],
        ladder: None,
        membind: None,
        zero_block_bytes: None,
    }
}
