//! Small synthetic MLP results for the tests of the view: two levels with their
//! saturation, a grid and the sequential fit; and one with NaN figures.

use std::collections::BTreeMap;

use super::{
    ChainLayout, LittlesLaw, MlpResult, MlpRow, MlpSaturation, SequentialFit, SequentialPoint,
};
use crate::experiments::shared::level::Level;
use crate::kernels::permutation::ChaseOrderKind;
use crate::platform::arena::PagePolicy;
use crate::units::{KIB, MIB};

fn mlp_row(level: Option<&str>, bytes: u64, chains: u32, t1: f64, saturation: f64) -> MlpRow {
    let parallelism = f64::from(chains).min(saturation + 0.1 * f64::from(chains));
    let ns_per_round = f64::from(chains) * t1 / parallelism;
    MlpRow {
        level: level.map(|name| Level::from(name.to_string())),
        bytes,
        chains,
        ns_per_round,
        ns_per_load: ns_per_round / f64::from(chains),
        parallelism,
        spread_pct: 1.0,
    }
}

/// L2 saturates at 8 chains (parallelism 7.4), DRAM at 10 (parallelism 9.7).
pub fn mlp() -> MlpResult {
    let mut rows = Vec::new();
    for (level, bytes, t1, sat) in [("L2", 512 * KIB, 4.0, 6.6), ("DRAM", 256 * MIB, 90.0, 8.7)] {
        for chains in 1..=12 {
            rows.push(mlp_row(Some(level), bytes, chains, t1, sat));
        }
    }
    let mut grid = Vec::new();
    for (bytes, t1, sat) in [(16 * KIB, 1.2, 0.9), (MIB, 4.0, 6.6), (64 * MIB, 90.0, 8.7)] {
        for chains in [1, 2, 4, 8, 16] {
            grid.push(mlp_row(None, bytes, chains, t1, sat));
        }
    }
    MlpResult {
        rows,
        mlp: BTreeMap::from([("L2".to_string(), 8), ("DRAM".to_string(), 10)]),
        saturation: vec![
            MlpSaturation {
                level: Level::Cache("L2".to_string()),
                bytes: 512 * KIB,
                chains: 8,
                parallelism: 7.4,
                ns_per_load: 0.54,
            },
            MlpSaturation {
                level: Level::Dram,
                bytes: 256 * MIB,
                chains: 10,
                parallelism: 9.7,
                ns_per_load: 9.3,
            },
        ],
        sequential_fit: Some(SequentialFit {
            m_ns: 85.3,
            c_ns: 30.1,
            r2: 0.9987,
            m_cycles: 255.9,
            points: (1..=8)
                .map(|n| SequentialPoint {
                    misses: n,
                    ns: f64::from(n) * 85.3 + 30.1,
                })
                .collect(),
            bytes: 256 * MIB,
        }),
        grid,
        littles_law: Some(LittlesLaw {
            latency_ns: 90.0,
            chase_gb_per_s: 6.9,
            stream_read_gb_per_s: 14.2,
            stream_concurrency: 19.97,
            chase_parallelism: 9.7,
            random_read_gb_per_s: 6.5,
            random_concurrency: 9.1,
        }),
        order: ChainLayout {
            order: ChaseOrderKind::PageLocal,
            pages: PagePolicy::Thp,
        },
    }
}

/// Nothing measured: no rows, no saturation, no fit (random chains on base pages).
pub fn empty_mlp() -> MlpResult {
    MlpResult {
        rows: Vec::new(),
        mlp: BTreeMap::new(),
        saturation: Vec::new(),
        sequential_fit: None,
        grid: Vec::new(),
        littles_law: None,
        order: ChainLayout {
            order: ChaseOrderKind::Random,
            pages: PagePolicy::Base,
        },
    }
}

/// The sample with NaN in every figure and no saturation details (the `mlp` map stays).
pub fn nan_mlp() -> MlpResult {
    let mut m = mlp();
    for r in m.rows.iter_mut().chain(m.grid.iter_mut()) {
        r.parallelism = f64::NAN;
        r.spread_pct = f64::NAN;
    }
    m.saturation.clear();
    if let Some(fit) = &mut m.sequential_fit {
        fit.r2 = f64::NAN;
        fit.m_cycles = f64::NAN;
    }
    m
}
