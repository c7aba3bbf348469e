//! Small synthetic `rob` results for the view's tests: four fillers with three cliffs,
//! and one with NaN figures and missing values.

use super::{RobResult, RobRow, RobStructure, SerializedRow};
use crate::kernels::jit::Filler;
use crate::units::MIB;

/// nop cliff at 224 (reorder buffer), add at 180, load at 72; store has no cliff.
pub fn rob() -> RobResult {
    let cliffs = [
        (Filler::Nop, Some(224)),
        (Filler::Add, Some(180)),
        (Filler::Load, Some(72)),
        (Filler::Store, None),
    ];
    let mut rows = Vec::new();
    for (filler, cliff) in cliffs {
        for k in (0..=320).step_by(16) {
            let ns = if cliff.is_some_and(|c| k > c) {
                190.0
            } else {
                100.0
            };
            rows.push(RobRow {
                filler,
                k,
                ns_per_iter: ns,
                cycles_per_iter: ns * 3.0,
                spread_pct: 1.0,
            });
        }
    }
    let structure = |filler: Filler, entries: Option<u32>| RobStructure {
        filler,
        structure: filler.structure(),
        entries,
        window_entries: entries,
        architectural: 0,
        low_ns: 100.0,
        high_ns: if entries.is_some() { 190.0 } else { 100.0 },
    };
    let mut serialized = Vec::new();
    for misses in 1..=4 {
        for k in (0..=320).step_by(32) {
            let ns = if k > 224 {
                95.0 * f64::from(misses)
            } else {
                95.0 + 20.0 * f64::from(misses - 1)
            };
            serialized.push(SerializedRow {
                misses,
                k,
                ns,
                cycles: ns * 3.0,
            });
        }
    }
    RobResult {
        rows,
        structures: vec![
            structure(Filler::Nop, Some(224)),
            structure(Filler::Add, Some(180)),
            structure(Filler::Load, Some(72)),
            structure(Filler::Store, None),
        ],
        serialized,
        serialized_window: Some(224),
        serialized_mlp: Some(3.6),
        chase_bytes: 256 * MIB,
    }
}

/// The sample with NaN in every cycle count and one time, and no window or MLP.
pub fn nan_rob() -> RobResult {
    let mut r = rob();
    for row in &mut r.rows {
        row.cycles_per_iter = f64::NAN;
    }
    r.rows[3].ns_per_iter = f64::NAN;
    r.serialized_mlp = None;
    r.serialized_window = None;
    r
}
