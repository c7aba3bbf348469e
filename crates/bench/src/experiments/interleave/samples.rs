//! Synthetic `interleave` results for the view's tests (and the docs' example, said as
//! such): a socket's DRAM (node 0) mixed with a CXL expander (node 2), where 3:1 gains
//! 21 %, and with the other socket's DRAM (node 1), where nothing beats local memory.

use super::weights::Ratio;
use super::{InterleaveResult, KernelCheck, KernelSupport, MixResult, PointOrigin, RatioPoint};
use crate::kernels::stream::Isa;
use crate::topology::tiers::{MemoryKind, WeightedInterleave};
use crate::units::MIB;

const DIR: &str = "/sys/kernel/mm/mempolicy/weighted_interleave";

fn point(local: u32, far: u32, origin: PointOrigin, gb_per_s: f64, spread_pct: f64) -> RatioPoint {
    let ratio = Ratio::new(local, far).expect("a valid ratio");
    RatioPoint {
        ratio,
        origin,
        local_share: ratio.local_share(1),
        read_gb_per_s: gb_per_s,
        spread_pct,
        min_gb_per_s: gb_per_s * 0.99,
        max_gb_per_s: gb_per_s * 1.01,
        overlap: 0.99,
        placed: 1.0,
        verified: Some(1.0),
    }
}

fn mix(nodes: Vec<usize>, kinds: Vec<MemoryKind>, points: Vec<RatioPoint>) -> MixResult {
    // The confirmation as the measurement would give it: the best against local alone.
    let local = points[0].read_gb_per_s;
    let best = points.iter().map(|p| p.read_gb_per_s).fold(local, f64::max);
    let confirmation = if best > local {
        vec![(local, best); 3]
    } else {
        Vec::new()
    };
    let (recommendation, apply) = super::recommend(&points, &confirmation, &nodes, Some("auto"));
    MixResult {
        nodes,
        kinds,
        firmware_ratio: None,
        points,
        recommendation,
        confirmation,
        apply,
        kernel_check: None,
    }
}

/// Node 0 (DRAM) with node 2 (CXL) and with node 1 (the other socket's DRAM).
pub fn interleave() -> InterleaveResult {
    use PointOrigin::*;
    let mut cxl = mix(
        vec![0, 2],
        vec![MemoryKind::Dram, MemoryKind::Cxl],
        vec![
            point(1, 0, Baseline, 240.0, 1.0),
            point(8, 1, Given, 262.0, 1.1),
            point(14, 3, Firmware, 276.0, 1.2),
            point(4, 1, Given, 281.0, 1.0),
            point(3, 1, Given, 290.0, 1.3),
            point(5, 2, Refined, 286.0, 1.2),
            point(2, 1, Given, 270.0, 1.0),
            point(1, 1, Given, 180.0, 0.9),
            point(1, 2, Given, 120.0, 0.8),
        ],
    );
    cxl.firmware_ratio = Ratio::new(14, 3);
    cxl.kernel_check = Some(KernelCheck {
        weights: vec![1, 1],
        shares: vec![0.5, 0.5],
        expected_shares: vec![0.5, 0.5],
        read_gb_per_s: 183.0,
        spread_pct: 1.1,
        emulated_gb_per_s: Some(180.0),
        difference_pct: Some(183.0 / 180.0 * 100.0 - 100.0),
    });
    let remote = mix(
        vec![0, 1],
        vec![MemoryKind::Dram, MemoryKind::Dram],
        vec![
            point(1, 0, Baseline, 240.0, 1.0),
            point(8, 1, Given, 244.0, 2.0),
            point(4, 1, Given, 236.0, 1.0),
            point(1, 1, Given, 200.0, 1.0),
        ],
    );
    InterleaveResult {
        cpu_node: 0,
        cpus: (0..32).rev().collect(),
        bytes_per_thread: 16 * MIB,
        page_bytes: 4096,
        isa: Isa::Avx2,
        mixes: vec![cxl, remote],
        kernel: KernelSupport::Available,
        system_weights: Some(WeightedInterleave {
            auto: Some(true),
            weights: vec![(0, 1), (1, 1), (2, 1), (3, 1)],
        }),
        weights_dir: DIR.to_string(),
        auto_file: Some("auto".to_string()),
        max_spread_pct: 2.0,
        note: None,
    }
}

/// The same mixes on a kernel without weighted interleave, with a NaN point.
pub fn interleave_old_kernel() -> InterleaveResult {
    let mut r = interleave();
    r.kernel = KernelSupport::Missing;
    r.system_weights = None;
    r.auto_file = None;
    r.mixes[0].kernel_check = None;
    r.mixes[1].points[2].read_gb_per_s = f64::NAN;
    r.note = Some("this kernel has no weighted interleave".to_string());
    r
}
