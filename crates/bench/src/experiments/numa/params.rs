//! The NUMA matrix's parameters: its flags (`memscope numa`) and how they, with the
//! measuring flags, become a `NumaConfig`.

use clap::Args;

use super::plan;
use crate::error::UsageError;
use crate::experiments::numa::{NodeThreads, NumaConfig};
use crate::experiments::params::{CommandArgs, MeasureArgs, MeasurePlan};
use crate::platform::numa_policy;
use crate::topology::cpu::parse_cpu_list;
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

    /// Nodes of the matrix, e.g. 0,2 or 0-3: those with CPUs are its rows (threads there),
    /// those with memory its columns (memory bound there), so a CPU-less CXL or HBM node is
    /// a column measured from every row [default: every node]
    #[arg(long, value_name = "LIST")]
    pub nodes: Option<String>,
}

impl CommandArgs for NumaArgs {
    fn measure(&self) -> &MeasureArgs {
        &self.measure
    }
}

impl NumaConfig {
    /// The machine's node matrix (or the --nodes among them) with --threads readers per
    /// node; --max-size, when given, is the latency cells' working set. The nodes and
    /// threads are resolved against the machine here, so a bad one stops the command first.
    pub fn resolve(
        args: &NumaArgs,
        measure: &MeasurePlan,
        machine: &Machine,
    ) -> Result<NumaConfig, UsageError> {
        let mut numa = NumaConfig::defaults(machine);
        numa.threads_per_node = NodeThreads::parse(&args.threads)?;
        if let Some(list) = &args.nodes {
            numa.nodes = parse_cpu_list(list)
                .ok()
                .filter(|nodes| !nodes.is_empty())
                .ok_or_else(|| UsageError::InvalidValue {
                    flag: "--nodes",
                    value: list.clone(),
                    expected: "NUMA node ids, comma-separated, with ranges (e.g. 0,2 or 0-3)"
                        .to_string(),
                })?;
        }
        numa.bandwidth_bytes = NumaConfig::default_bandwidth_bytes(machine, numa.threads_per_node);
        if measure.max_size_given {
            numa.latency_bytes = measure.max_size.0;
        }
        numa.pages = measure.pages;
        numa.repetitions = measure.repetitions;
        numa.trial_ns = measure.trial_ns;
        // The nodes and threads checked against the machine now, before anything runs.
        plan::resolve(&numa, machine, numa_policy::memory_nodes().as_deref())?;
        Ok(numa)
    }
}
