//! Experiments: one room (folder) each. A room holds the experiment's configuration, its
//! measurement (driving the kernels through the platform layer), its typed, serialisable
//! result and that result's presentation (`view.rs`: `impl view::Present`). Experiments
//! never print; progress and warnings go through `session`.
//!
//! The registry below is the one place an experiment is added to the report: its field in
//! `Results` (the JSON's `experiments` object) and its place in every output's reading
//! order.

use serde::{Deserialize, Serialize};

use crate::topology::Machine;
use crate::view::{Present, Section};

pub mod bandwidth;
pub mod chase_timing;
pub mod latency;
pub mod loaded;
pub mod miss_impact;
pub mod mlp;
pub mod numa;
pub mod rob;
pub mod stride;
pub mod tlb;

/// Declares `Results` with one optional field per registered experiment, and the
/// sections of those that ran, in the order listed.
macro_rules! registry {
    ($($field:ident: $result:ty,)*) => {
        /// `experiments` of the report; each experiment is present only when it ran.
        #[derive(Debug, Clone, Serialize, Deserialize, Default)]
        #[serde(deny_unknown_fields)]
        pub struct Results {
            $(
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $field: Option<$result>,
            )*
        }

        impl Results {
            /// The section of every experiment that ran, in reading order.
            pub fn sections(&self, machine: &Machine) -> Vec<Section> {
                let mut sections = Vec::new();
                $(
                    if let Some(result) = &self.$field {
                        sections.push(result.section(machine));
                    }
                )*
                sections
            }
        }
    };
}

// The registry: one line per experiment, in the order the outputs show them.
registry! {
    latency: latency::LatencyResult,
    miss_impact: miss_impact::MissImpactResult,
    bandwidth: bandwidth::BandwidthResult,
    stride: stride::StrideResult,
    loaded: loaded::LoadedResult,
    mlp: mlp::MlpResult,
    rob: rob::RobResult,
    tlb: tlb::TlbResult,
    numa: numa::NumaResult,
}
