//! The cache-miss-impact table's parameters: no flags of its own; it follows the latency
//! ladder's chase order and the measuring flags.

use crate::experiments::miss_impact::{footprints, MissImpactConfig};
use crate::experiments::params::MeasurePlan;
use crate::kernels::permutation::ChaseOrder;
use crate::topology::Machine;

impl MissImpactConfig {
    /// One footprint inside each cache and one in DRAM (within --max-size), its random
    /// patterns in the latency ladder's chase order (`order`, the ladder's).
    pub fn resolve(
        order: ChaseOrder,
        measure: &MeasurePlan,
        machine: &Machine,
    ) -> MissImpactConfig {
        let line = machine
            .data_caches()
            .first()
            .map(|c| c.line_bytes as usize)
            .filter(|l| l.is_power_of_two() && (8..=1024).contains(l))
            .unwrap_or(64);
        MissImpactConfig {
            footprints: footprints(&machine.data_caches(), measure.max_size.0),
            line_bytes: line,
            order,
            repetitions: measure.repetitions,
            trial_ns: measure.trial_ns,
            seed: 0x6d69_7373, // "miss"
        }
    }
}
