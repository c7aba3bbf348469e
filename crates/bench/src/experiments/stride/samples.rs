//! Synthetic stride results for the tests of the stride view.

use super::{Kernel, Pattern, StrideResult, StrideRow};
use crate::counters::samples::access_counts;
use crate::units::{KIB, MIB};

fn pattern(stride: Option<u64>) -> Pattern {
    if stride.is_some() {
        Pattern::Strided
    } else {
        Pattern::Random
    }
}

/// Read rows at 4 KiB and 1 MiB, strides 8 and 64 and random; with `counted`, each
/// row carries `access_counts` with L1 = 0.125 × stride / 8 (random: 1).
pub fn stride_counted(counted: bool) -> StrideResult {
    let mut rows = Vec::new();
    for bytes in [4 * KIB, MIB] {
        for stride in [Some(8), Some(64), None] {
            rows.push(StrideRow {
                bytes,
                stride_bytes: stride,
                pattern: pattern(stride),
                kernel: Kernel::Read,
                gb_per_s: 8.0,
                ns_per_access: 1.0,
                spread_pct: 1.0,
                counters: counted
                    .then(|| access_counts(stride.map_or(1.0, |s| 0.125 * s as f64 / 8.0))),
            });
        }
    }
    StrideResult { rows }
}

/// Read and SAXPY rows from 2 KiB to `max_bytes`, the default strides and random, with
/// plausible times; the 4 KiB stride is noisy (spread 12 %).
pub fn stride(max_bytes: u64) -> StrideResult {
    let mut strides: Vec<u64> = (1..=31).step_by(2).map(|e| e * 8).collect();
    strides.extend([64, 256, KIB, 4 * KIB]);
    let mut rows = Vec::new();
    let mut bytes = 2 * KIB;
    while bytes <= max_bytes {
        let base = match bytes {
            b if b <= 32 * KIB => 0.08,
            b if b <= MIB => 0.25,
            b if b <= 32 * MIB => 0.6,
            _ => 2.5,
        };
        for kernel in [Kernel::Read, Kernel::Saxpy] {
            let k = if kernel == Kernel::Saxpy { 1.8 } else { 1.0 };
            let mut push = |stride: Option<u64>, ns: f64| {
                let useful = if kernel == Kernel::Saxpy { 24.0 } else { 8.0 };
                rows.push(StrideRow {
                    bytes,
                    stride_bytes: stride,
                    pattern: pattern(stride),
                    kernel,
                    gb_per_s: useful / ns,
                    ns_per_access: ns,
                    spread_pct: if stride == Some(4 * KIB) { 12.0 } else { 2.0 },
                    counters: None,
                });
            };
            for &s in &strides {
                // Past the caches every line holding a used element is fetched again.
                let lines = (s as f64 / 64.0).min(1.0) * 8.0;
                let factor = if bytes > 32 * KIB {
                    lines.max(1.0)
                } else {
                    1.0
                };
                let tlb = if s >= 4 * KIB && bytes > 8 * MIB {
                    6.0
                } else {
                    1.0
                };
                push(Some(s), base * k * factor.sqrt() * tlb);
            }
            push(
                None,
                base * k * 8.0 * if bytes > 8 * MIB { 2.5 } else { 1.0 },
            );
        }
        bytes *= 2;
    }
    StrideResult { rows }
}
