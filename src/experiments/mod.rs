//! Experiments: one room (folder) each. A room holds the experiment's configuration, its
//! parameters (`params.rs`: its clap flags and `<X>Config::resolve`, which checks them
//! against the machine), its measurement (driving the kernels through the platform layer),
//! its typed, serialisable result and that result's presentation (`view.rs`: `impl
//! view::Present`). The flags every measuring command shares, and the parse helpers the
//! rooms use, are in `params`. Experiments never print; progress and warnings go through
//! `session`; nothing here imports the command line, the plan or the commands.
//!
//! The registry below is the one place an experiment is added to a run: its config's place
//! in the plan (`Configs`), its result's field in the report (`Results`, the JSON's
//! `experiments` object), its section in every output, and its place in the order
//! experiments run and are shown.

use serde::{Deserialize, Serialize};

use crate::session::context::Session;
use crate::topology::Machine;
use crate::view::{Present, Section};

pub mod bandwidth;
pub mod chase_timing;
pub mod latency;
pub mod loaded;
pub mod miss_impact;
pub mod mlp;
pub mod numa;
pub mod params;
pub mod rob;
pub mod stride;
pub mod tlb;

/// What a run needs of an experiment, implemented by its validated configuration.
pub trait Experiment {
    type Result;

    /// How it samples, in words, for the report's settings.
    fn sampling(&self) -> Option<String> {
        None
    }

    /// What one counted row is called ("latency point") when hardware counters are on.
    fn counted(&self) -> Option<&'static str> {
        None
    }

    /// The most hugetlbfs pages of `page` bytes its buffers hold at the same time.
    fn hugepages(&self, machine: &Machine, page: u64) -> u64;

    /// Runs it on the pinned thread; `earlier` holds the results of the experiments
    /// registered before it.
    fn measure(&self, session: &mut Session, earlier: &Results) -> anyhow::Result<Self::Result>;
}

/// Hugetlbfs pages of `page` bytes that a buffer of `bytes` takes.
pub fn pages_for(bytes: u64, page: u64) -> u64 {
    crate::platform::hugepages::pages_for_bytes(bytes, page)
}

/// Declares `Configs` (what the plan runs) and `Results` (what the report holds) with one
/// optional field per registered experiment, and runs them in the order listed.
macro_rules! registry {
    ($($field:ident: $config:ty => $result:ty,)*) => {
        /// The experiments a plan runs, each with its validated configuration.
        #[derive(Debug, Clone, Default)]
        pub struct Configs {
            $(pub $field: Option<$config>,)*
        }

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

        impl Configs {
            /// Each planned experiment's sampling policy, in order.
            pub fn sampling(&self) -> Vec<String> {
                let mut parts = Vec::new();
                $(parts.extend(self.$field.as_ref().and_then(Experiment::sampling));)*
                parts
            }

            /// What a counted row is called, for each experiment with counters on.
            pub fn counted(&self) -> Vec<&'static str> {
                let mut rows = Vec::new();
                $(rows.extend(self.$field.as_ref().and_then(Experiment::counted));)*
                rows
            }

            /// The most hugetlbfs pages of `page` bytes any one experiment holds at once.
            pub fn hugepages(&self, machine: &Machine, page: u64) -> u64 {
                let mut most = 0;
                $(if let Some(c) = &self.$field { most = most.max(c.hugepages(machine, page)); })*
                most
            }

            /// Runs every planned experiment, in the registry's order.
            pub fn measure(&self, session: &mut Session) -> anyhow::Result<Results> {
                let mut results = Results::default();
                $(
                    if let Some(c) = &self.$field {
                        results.$field = Some(c.measure(session, &results)?);
                    }
                )*
                Ok(results)
            }
        }
    };
}

// The registry: one line per experiment, in the order they run and are shown.
registry! {
    latency: latency::LatencyConfig => latency::LatencyResult,
    miss_impact: miss_impact::MissImpactConfig => miss_impact::MissImpactResult,
    bandwidth: bandwidth::BandwidthConfig => bandwidth::BandwidthResult,
    stride: stride::StrideConfig => stride::StrideResult,
    loaded: loaded::LoadedConfig => loaded::LoadedResult,
    mlp: mlp::MlpConfig => mlp::MlpResult,
    rob: rob::RobConfig => rob::RobResult,
    tlb: tlb::TlbConfig => tlb::TlbResult,
    numa: numa::NumaConfig => numa::NumaResult,
}

impl Results {
    /// What one experiment's figures say about another's, once all have run: the TLB's
    /// own share of the latency ladder's DRAM gap between random and page-local chases.
    pub fn link(&mut self, pages: Option<&crate::platform::arena::PagesObtained>) {
        let (Some(latency), Some(tlb), Some(pages)) = (self.latency.as_mut(), &self.tlb, pages)
        else {
            return;
        };
        if let Some(dram) = latency.dram.as_mut() {
            // The latency buffer's page size: huge when most of it got huge pages.
            let page = if pages.huge_fraction >= 0.9 {
                pages.page_bytes.max(2 << 20)
            } else {
                4096
            };
            dram.tlb_measured_ns = tlb::tlb_ns_at(tlb, page, dram.bytes / page);
        }
    }
}
