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
//! `experiments` object), its section in every output, its subcommand (`ExperimentCommand`,
//! which the command line flattens in), and its place in the order experiments run and are
//! shown.

use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::session::context::Session;
use crate::topology::Machine;
use crate::view::figure::{Figure, Figures, Remeasured};
use crate::view::{Present, Section};
use params::{CommandArgs, MeasureArgs, MeasurePlan};

pub mod bandwidth;
pub mod chase_timing;
pub mod drift;
pub mod files;
pub mod interleave;
pub mod latency;
pub mod loaded;
pub mod miss_impact;
pub mod misses;
pub mod mlp;
pub mod numa;
pub mod params;
pub mod rob;
pub mod shared;
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

    /// Measures its headline figures once more, briefly, for the drift check at the end of
    /// a run: each figure's key with its value in `result` and now. An experiment without
    /// such a pass leaves its figures without a drift.
    fn remeasure(
        &self,
        _session: &mut Session,
        _result: &Self::Result,
    ) -> anyhow::Result<Vec<Remeasured>> {
        Ok(Vec::new())
    }
}

/// Hugetlbfs pages of `page` bytes that a buffer of `bytes` takes.
pub fn pages_for(bytes: u64, page: u64) -> u64 {
    crate::platform::hugepages::pages_for_bytes(bytes, page)
}

/// Declares `Configs` (what the plan runs) and `Results` (what the report holds) with one
/// optional field per registered experiment, and runs them in the order listed.
macro_rules! registry {
    ($(
        $field:ident: $config:ty => $result:ty
        $(, command $(#[$doc:meta])* $variant:ident($args:ty))?;
    )*) => {
        /// The experiments' own subcommands (`memscope latency` …), flattened into the
        /// command tree; each variant's doc comment is its `--help` summary.
        #[derive(Debug, clap::Subcommand)]
        pub enum ExperimentCommand {
            $($($(#[$doc])* $variant($args),)?)*
        }

        impl ExperimentCommand {
            /// The subcommand's name, also the experiment's.
            pub fn name(&self) -> &'static str {
                match self {
                    $($(ExperimentCommand::$variant(_) => stringify!($field),)?)*
                }
            }

            fn args(&self) -> &dyn CommandArgs {
                match self {
                    $($(ExperimentCommand::$variant(args) => args as &dyn CommandArgs,)?)*
                }
            }

            /// The measuring flags of the command.
            pub fn measure(&self) -> &MeasureArgs {
                self.args().measure()
            }

            /// Whether the terminal lists every point (`--points`).
            pub fn points(&self) -> bool {
                self.args().points()
            }

            /// The command's one experiment, its flags checked and resolved against the
            /// machine (an unavailable experiment is refused before any flag is read).
            pub fn resolve(&self, machine: &Machine) -> Result<(MeasurePlan, Configs), UsageError> {
                self.args().available()?;
                let measure = MeasurePlan::resolve(self.measure(), machine)?;
                let mut configs = Configs::default();
                match self {
                    $($(ExperimentCommand::$variant(args) => {
                        configs.$field = Some(<$config>::resolve(args, &measure, machine)?);
                    })?)*
                }
                Ok((measure, configs))
            }
        }

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
            /// The comparable figures of every experiment that ran, in reading order.
            pub fn figures(&self) -> Vec<Figure> {
                let mut figures = Vec::new();
                $(figures.extend(self.$field.as_ref().map(Figures::figures).unwrap_or_default());)*
                figures
            }

            /// The section of every experiment that ran, in reading order.
            pub fn sections(&self, machine: &Machine) -> Vec<Section> {
                let mut sections = Vec::new();
                $(sections.extend(self.$field.as_ref().map(|result| result.section(machine)));)*
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

            /// Runs every planned experiment, in the registry's order, noting what else ran
            /// on the machine during each (`session.conditions`).
            pub fn measure(&self, session: &mut Session) -> anyhow::Result<Results> {
                let mut results = Results::default();
                $(
                    if let Some(c) = &self.$field {
                        let mark = session.conditions.mark();
                        results.$field = Some(c.measure(session, &results)?);
                        session.conditions.record(stringify!($field), mark);
                    }
                )*
                Ok(results)
            }

            /// One drift pass: every planned experiment's headline figures measured again.
            pub(crate) fn remeasure(
                &self,
                session: &mut Session,
                results: &Results,
            ) -> anyhow::Result<Vec<Remeasured>> {
                let mut again = Vec::new();
                $(
                    if let (Some(c), Some(r)) = (&self.$field, &results.$field) {
                        again.extend(c.remeasure(session, r)?);
                    }
                )*
                Ok(again)
            }
        }
    };
}

// The registry: one entry per experiment, in the order they run and are shown; an
// experiment with its own subcommand names its variant, args type and help summary.
registry! {
    latency: latency::LatencyConfig => latency::LatencyResult, command
        /// Load-to-use latency vs working-set size, and the levels found from the curve.
        Latency(latency::params::LatencyArgs);
    miss_impact: miss_impact::MissImpactConfig => miss_impact::MissImpactResult;
    bandwidth: bandwidth::BandwidthConfig => bandwidth::BandwidthResult, command
        /// Bandwidth of read/write/copy/triad and read:write mixes per level and thread count.
        Bandwidth(bandwidth::params::BandwidthArgs);
    stride: stride::StrideConfig => stride::StrideResult, command
        /// Access cost vs stride and random order (read and SAXPY): a throughput study.
        Stride(stride::params::StrideArgs);
    loaded: loaded::LoadedConfig => loaded::LoadedResult, command
        /// Latency under load: a pointer chase while injector threads stream a traffic mix
        /// with a falling delay; the latency-vs-bandwidth curve, its knee and Little's law.
        Loaded(loaded::params::LoadedArgs);
    mlp: mlp::MlpConfig => mlp::MlpResult, command
        /// Memory-level parallelism: N independent pointer chains in one thread at L2, L3 and
        /// DRAM; where parallelism saturates, and n dependent misses in a row.
        Mlp(mlp::params::MlpArgs);
    rob: rob::RobConfig => rob::RobResult, command
        /// The out-of-order window (x86_64): two misses separated by K generated filler
        /// instructions; the K where they stop overlapping sizes the ROB, register files,
        /// load and store queues.
        Rob(rob::params::RobArgs);
    tlb: tlb::TlbConfig => tlb::TlbResult, command
        /// TLB levels, reach and miss cost with 4 KiB and 2 MiB pages, what huge pages buy a
        /// SAXPY and the misses in flight.
        Tlb(tlb::params::TlbArgs);
    numa: numa::NumaConfig => numa::NumaResult, command
        /// Node × node matrix of latency and read bandwidth (threads on node i, memory on j).
        Numa(numa::params::NumaArgs);
    interleave: interleave::InterleaveConfig => interleave::InterleaveResult, command
        /// Read bandwidth with memory spread over a local and far nodes (CXL, HBM, another
        /// socket) at several weight ratios; the best ratio, its gain, and the weighted
        /// interleave lines that would apply it (printed, never run).
        Interleave(interleave::params::InterleaveArgs);
    files: files::FilesConfig => files::FilesResult, command
        /// File reads by file size, warm (page cache, read and mmap) and cold (O_DIRECT),
        /// random 4 KiB read latency percentiles by io_uring queue depth, and a block-size
        /// sweep; the test files are removed afterwards.
        Files(files::params::FilesArgs);
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_chase_orders_read_and_write_as_their_names() {
        use crate::kernels::permutation::ChaseOrderKind;
        for (kind, name) in [
            (ChaseOrderKind::Random, "\"random\""),
            (ChaseOrderKind::PageLocal, "\"page-local\""),
        ] {
            assert_eq!(serde_json::to_string(&kind).unwrap(), name);
            assert_eq!(serde_json::from_str::<ChaseOrderKind>(name).unwrap(), kind);
            assert_eq!(format!("\"{kind}\""), name);
        }
        let err = serde_json::from_str::<ChaseOrderKind>("\"zigzag\"").unwrap_err();
        assert!(err.to_string().contains("zigzag"), "{err}");
    }
}
