//! Small synthetic loaded-latency results for the tests of the view: two curves, an empty
//! result and one with NaN figures.

use super::{Knee, LoadedCurve, LoadedResult, LoadedRow};
use crate::kernels::injector::Mix;
use crate::units::MIB;

/// Two curves; the read curve's knee is at 41.7 GB/s (delay 200), the 1:1 curve's at
/// its idle end.
pub fn loaded() -> LoadedResult {
    let mut rows = Vec::new();
    // (mix, GB/s, latency ns) at delays 400, 200, 100, 50 and 0.
    let curves = [
        (
            Mix::Read,
            [12.5, 41.7, 55.0, 63.0, 66.0],
            [80.0, 81.5, 95.0, 140.0, 210.0],
        ),
        (
            Mix::OneToOne,
            [10.0, 30.2, 41.0, 47.0, 49.0],
            [82.0, 90.0, 120.0, 180.0, 260.0],
        ),
    ];
    for (mix, gbs, nss) in curves {
        for ((delay, gb), ns) in [400, 200, 100, 50, 0].into_iter().zip(gbs).zip(nss) {
            rows.push(LoadedRow {
                mix,
                threads: 3,
                delay_cycles: delay,
                gb_per_s: gb,
                injector_gb_per_s: gb - 0.8,
                latency_ns: ns,
                latency_cycles: ns * 3.0,
                spread_pct: if delay == 0 { 14.0 } else { 1.0 },
                concurrency: gb * ns / 64.0,
                injector_overlap: 1.0,
                injectors_concurrent: true,
            });
        }
    }
    let read_knee = Knee {
        delay: 200,
        gb_per_s: 41.7,
        latency_ns: 81.5,
        pct_of_peak: 63.2,
    };
    LoadedResult {
        membind: None,
        idle_ns: 79.5,
        idle_cycles: 238.5,
        peak_gb_per_s: 66.0,
        knee: Some(read_knee.clone()),
        reference: "read, 3 injector(s)".to_string(),
        rows,
        curves: vec![
            LoadedCurve {
                mix: Mix::Read,
                threads: 3,
                peak_gb_per_s: 66.0,
                loaded_ns: 210.0,
                knee: Some(read_knee),
            },
            LoadedCurve {
                mix: Mix::OneToOne,
                threads: 3,
                peak_gb_per_s: 49.0,
                loaded_ns: 260.0,
                knee: Some(Knee {
                    delay: 400,
                    gb_per_s: 10.0,
                    latency_ns: 82.0,
                    pct_of_peak: 20.4,
                }),
            },
        ],
        chase_bytes: 512 * MIB,
        chase_window_pages: 16,
        injector_bytes: 256 * MIB,
        latency_cpu: 0,
        injector_cpus: vec![1, 2, 3],
        line_bytes: 64,
    }
}

/// Every vector empty, every option None, every figure NaN.
pub fn empty_loaded() -> LoadedResult {
    LoadedResult {
        idle_ns: f64::NAN,
        idle_cycles: f64::NAN,
        peak_gb_per_s: f64::NAN,
        line_bytes: 64,
        ..LoadedResult::default()
    }
}

/// The sample with NaN in every figure and missing values where they can be missing.
pub fn nan_loaded() -> LoadedResult {
    let mut l = loaded();
    for r in &mut l.rows {
        r.latency_cycles = f64::NAN;
        r.spread_pct = f64::NAN;
        r.concurrency = f64::NAN;
    }
    l.rows[1].gb_per_s = f64::NAN;
    l.rows[2].latency_ns = f64::NAN;
    l.idle_cycles = f64::NAN;
    l.curves[1].knee = None;
    l
}
