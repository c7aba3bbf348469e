//! Interleave's parameters: its flags (`memscope interleave`) and how they, with the
//! measuring flags and what the kernel offers, become an `InterleaveConfig`.

use clap::Args;

use crate::error::UsageError;
use crate::experiments::interleave::weights::{self, Ratio, DEFAULT_RATIOS};
use crate::experiments::interleave::{kernel_state, plan_mixes, InterleaveConfig, KernelSupport};
use crate::experiments::params::{
    check_fits_memory, invalid, parse_list, CommandArgs, MeasureArgs, MeasurePlan,
};
use crate::experiments::shared::sizing::round_to_granule;
use crate::platform::numa_policy;
use crate::platform::page_placement::{self, read_system_weights, WEIGHTS_DIR};
use crate::topology::Machine;
use crate::units::{Bytes, MIB};

#[derive(Debug, Clone, Default, Args)]
#[command(after_help = crate::examples::INTERLEAVE)]
pub struct InterleaveArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Nodes to spread memory over, comma-separated, the local node (whose CPUs read)
    /// first [default: the node of --cpu against each other memory node in turn].
    #[arg(long, value_name = "NODES")]
    pub nodes: Option<String>,

    /// Weight ratios LOCAL:FAR to measure, comma-separated; local memory alone (1:0) is
    /// always measured [default: 8:1,4:1,3:1,2:1,1:1,1:2, and the firmware's bandwidth
    /// ratio where the HMAT quotes it].
    #[arg(long, value_name = "LIST")]
    pub ratios: Option<String>,

    /// Reading threads on the local node: a number, or 'all' for every CPU of the node this
    /// process may use.
    #[arg(long, value_name = "N", default_value = "all")]
    pub threads: String,

    /// Measure only the listed ratios, not two more around the best.
    #[arg(long)]
    pub no_refine: bool,
}

impl CommandArgs for InterleaveArgs {
    fn measure(&self) -> &MeasureArgs {
        &self.measure
    }
}

/// `--nodes`: node numbers, comma-separated, in order, without repeats.
pub(crate) fn parse_nodes(text: &str) -> Result<Vec<usize>, UsageError> {
    parse_list(text, |part| {
        part.parse::<usize>().map_err(|_| {
            invalid(
                "--nodes",
                part,
                "NUMA node numbers, comma-separated, the local node first (e.g. 0,2)",
            )
        })
    })
}

/// `--threads` against the CPUs of the local node.
fn parse_threads(text: &str, available: usize) -> Result<usize, UsageError> {
    let trimmed = text.trim();
    if trimmed.eq_ignore_ascii_case("all") {
        return Ok(available);
    }
    trimmed
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=available).contains(n))
        .ok_or_else(|| {
            invalid(
                "--threads",
                text,
                &format!(
                    "a number of threads from 1 to {available} (the local node's CPUs this \
                     process may use) or 'all'"
                ),
            )
        })
}

impl InterleaveConfig {
    /// The mixes, ratios, threads and buffer sizes, checked against the machine.
    pub fn resolve(
        args: &InterleaveArgs,
        measure: &MeasurePlan,
        machine: &Machine,
    ) -> Result<InterleaveConfig, UsageError> {
        // Flags first, so a bad value is named even where nothing can be measured.
        let chosen = args.nodes.as_deref().map(parse_nodes).transpose()?;
        let ratios = match &args.ratios {
            Some(text) => weights::parse_ratios(text)?,
            None => (DEFAULT_RATIOS.iter())
                .filter_map(|&(l, f)| Ratio::new(l, f))
                .collect(),
        };
        let with_memory = numa_policy::memory_nodes();
        let probe_node = (with_memory.as_deref())
            .and_then(|nodes| nodes.first().copied())
            .unwrap_or(0);
        let kernel = match page_placement::kernel_has_weighted_interleave(probe_node) {
            Ok(true) => KernelSupport::Available,
            Ok(false) => KernelSupport::Missing,
            Err(_) => KernelSupport::Unknown,
        };
        let system = read_system_weights(std::path::Path::new(WEIGHTS_DIR));
        let why_not = kernel_state(kernel, system.as_ref());
        let (cpu_node, mixes, left_out) = plan_mixes(
            machine,
            args.measure.cpu.is_some().then_some(measure.cpu),
            chosen.as_deref(),
            with_memory.as_deref(),
            &why_not,
        )?;
        let cpus = reading_cpus(machine, cpu_node);
        let threads = parse_threads(&args.threads, cpus.len())?;
        let cpus = cpus[..threads].to_vec();
        let bytes_per_thread = bytes_per_thread(machine, measure, threads);
        check_fits_memory(
            "--max-size",
            Bytes(bytes_per_thread * threads as u64),
            machine,
        )?;
        Ok(InterleaveConfig {
            cpu_node,
            cpus,
            mixes,
            ratios,
            refine: !args.no_refine && !measure.quick,
            bytes_per_thread,
            repetitions: measure.repetitions,
            trial_ns: measure.trial_ns,
            kernel,
            system,
            left_out,
        })
    }
}

/// The node's CPUs this process may use, highest first (CPU 0 takes most interrupts).
pub(super) fn reading_cpus(machine: &Machine, node: usize) -> Vec<usize> {
    let mut cpus: Vec<usize> = (machine.numa_nodes.iter())
        .find(|n| n.id == node)
        .map(|n| n.cpus.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|c| machine.allowed_cpus.contains(c))
        .collect();
    cpus.sort_unstable_by(|a, b| b.cmp(a));
    cpus
}

/// Each thread's share of max(4 × the largest cache, 256 MiB) (64 MiB with --quick, or
/// --max-size), at least 16 MiB so every thread reads far beyond its caches.
fn bytes_per_thread(machine: &Machine, measure: &MeasurePlan, threads: usize) -> u64 {
    let llc = machine.largest_cache_bytes().unwrap_or(32 * MIB);
    let total = if measure.max_size_given {
        measure.max_size.0
    } else if measure.quick {
        (2 * llc).max(64 * MIB)
    } else {
        (4 * llc).max(256 * MIB)
    };
    round_to_granule((total / threads.max(1) as u64).max(16 * MIB))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_and_threads_parse_with_clear_errors() {
        assert_eq!(parse_nodes("0, 2,0").unwrap(), vec![0, 2]);
        for bad in ["x", "0,,2", "-1"] {
            let error = parse_nodes(bad).unwrap_err().to_string();
            assert!(
                error.contains("for --nodes") && error.contains("e.g. 0,2"),
                "{error}"
            );
        }
        assert_eq!(parse_threads("all", 8).unwrap(), 8);
        assert_eq!(parse_threads(" 3", 8).unwrap(), 3);
        let error = parse_threads("9", 8).unwrap_err().to_string();
        assert!(
            error.contains("'9'") && error.contains("from 1 to 8"),
            "{error}"
        );
        assert!(parse_threads("0", 8).is_err());
    }
}
