//! The NUMA matrix's parameters: its flags (`memscope numa`) and how they, with the
//! measuring flags, become a `NumaConfig`.

use clap::Args;

use crate::error::UsageError;
use crate::experiments::numa::{NodeThreads, NumaConfig};
use crate::experiments::params::{CommandArgs, MeasureArgs, MeasurePlan};
use crate::topology::Machine;

#[derive(Debug, Clone, Default, Args)]
#[command(after_help = crate::examples::NUMA)]
pub struct NumaArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Reading threads per node in the bandwidth cells: a number, or 'all' for every CPU
    /// of the node this process may use.
    #[arg(long, value_name = "N", default_value = "1")]
    pub threads: String,
}

impl CommandArgs for NumaArgs {
    fn measure(&self) -> &MeasureArgs {
        &self.measure
    }
}

impl NumaConfig {
    /// The machine's node matrix with --threads readers per node; --max-size, when given,
    /// is the latency cells' working set.
    pub fn resolve(
        args: &NumaArgs,
        measure: &MeasurePlan,
        machine: &Machine,
    ) -> Result<NumaConfig, UsageError> {
        let mut numa = NumaConfig::defaults(machine);
        numa.threads_per_node = NodeThreads::parse(&args.threads)?;
        numa.bandwidth_bytes = NumaConfig::default_bandwidth_bytes(machine, numa.threads_per_node);
        if measure.max_size_given {
            numa.latency_bytes = measure.max_size.0;
        }
        numa.pages = measure.pages;
        numa.repetitions = measure.repetitions;
        numa.trial_ns = measure.trial_ns;
        Ok(numa)
    }
}
