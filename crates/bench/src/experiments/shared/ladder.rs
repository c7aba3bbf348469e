//! One level of the latency ladder: what `latency` finds as a plateau of its curve and
//! reports, and what `miss_impact` (which runs after it) builds its AMAT and footprints
//! from. It lives here so the two rooms share the type without importing each other.

use serde::{Deserialize, Serialize};

use crate::experiments::shared::level::Level;

/// One level of the hierarchy, found as a plateau of the curve.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LatencyLevel {
    /// "L1d", "L2", "L3", "L4" or "DRAM".
    pub name: Level,
    pub latency_ns: f64,
    pub latency_cycles: f64,
    /// Largest working set still on this plateau (where the level ends); null for DRAM.
    pub capacity_bytes: Option<u64>,
    /// Size of the matching cache as the OS reports it; null for DRAM or when unknown.
    pub os_size_bytes: Option<u64>,
    /// Smallest and largest working set of the plateau.
    pub first_bytes: u64,
    pub last_bytes: u64,
    /// Points of the sweep that make up the plateau.
    pub points: usize,
}
