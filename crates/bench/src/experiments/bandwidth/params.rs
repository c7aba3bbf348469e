//! The bandwidth table's parameters: its flags (`memscope bandwidth`) and how they, with
//! the measuring flags, become a `BandwidthConfig`.

use clap::Args;

use crate::error::UsageError;
use crate::experiments::bandwidth::{sweep_working_sets, BandwidthConfig, Sizes};
use crate::experiments::params::{
    check_fits_memory, dram_floor, invalid, parse_list, parse_thread_counts_or, sweep_max,
    thread_cpus, thread_ladder, CommandArgs, MeasureArgs, MeasurePlan,
};
use crate::flags::parse_membind;
use crate::kernels::stream::{self, Isa, KernelSpec};
use crate::platform::numa_policy;
use crate::topology::Machine;
use crate::units::Bytes;

#[derive(Debug, Clone, Default, Args)]
#[command(after_help = crate::examples::BANDWIDTH)]
pub struct BandwidthArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Thread counts, comma-separated; 'all' for every CPU this process may use; 'auto':
    /// 1 and all on one NUMA node, and on several a ladder in whole nodes (1, one node's
    /// cores, 2, 4, … nodes' cores, every core, every CPU; at most 8 counts).
    #[arg(long, value_name = "LIST", default_value = "auto")]
    pub threads: String,

    /// Bind every thread's arrays to NUMA node NODE (any node with memory, also one
    /// without CPUs, such as a CXL expander) instead of each thread's own node.
    #[arg(long, value_name = "NODE")]
    pub membind: Option<String>,

    /// Kernels, comma-separated, or 'all' (see the list in `memscope bandwidth --help`:
    /// read, write, write-nt, copy, copy-nt, triad, triad-nt, mix-3:1, mix-3:1-nt,
    /// mix-2:1, mix-2:1-nt, mix-1:1, mix-1:1-nt, write-zero; 'all' runs write-zero only on
    /// aarch64, where it zeroes with DC ZVA).
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub kernels: String,

    /// Vector instructions: avx512, avx2, sse2 (x86-64), sve, neon (aarch64) or portable
    /// [default: the widest available].
    #[arg(long, value_name = "ISA")]
    pub isa: Option<String>,

    /// Working sets per thread (all of a kernel's arrays together), comma-separated,
    /// instead of one inside each cache level and DRAM.
    #[arg(long, value_name = "SIZES")]
    pub sizes: Option<String>,

    /// Also measure bandwidth vs working-set size (4 KiB to --max-size) for
    /// --sweep-kernels, with the first thread count.
    #[arg(long)]
    pub sweep: bool,

    /// Kernels of the sweep, comma-separated.
    #[arg(long, value_name = "LIST", default_value = "read,copy,write-nt")]
    pub sweep_kernels: String,
}

impl CommandArgs for BandwidthArgs {
    fn measure(&self) -> &MeasureArgs {
        &self.measure
    }
}

impl BandwidthConfig {
    /// The kernels at each level (or --sizes) for each thread count, threads on the CPUs
    /// in `thread_cpus` order, and the optional sweep.
    pub fn resolve(
        args: &BandwidthArgs,
        measure: &MeasurePlan,
        machine: &Machine,
    ) -> Result<BandwidthConfig, UsageError> {
        let isa = match &args.isa {
            None => None,
            Some(text) => {
                let isa = Isa::parse(text).ok_or_else(|| invalid("--isa", text, Isa::NAMES))?;
                if !isa.is_available() {
                    return Err(invalid(
                        "--isa",
                        text,
                        &format!(
                            "an instruction set this CPU supports (the widest here is {})",
                            Isa::best_available()
                        ),
                    ));
                }
                Some(isa)
            }
        };
        let cpus = thread_cpus(machine, measure.cpu);
        let ladder = thread_ladder(machine, measure.cpu);
        let thread_counts = parse_thread_counts_or(&args.threads, cpus.len(), &ladder.counts)?;
        let ladder = (args.threads.trim() == "auto" && ladder.per_node()).then_some(ladder);
        let membind = match &args.membind {
            None => None,
            Some(text) => Some(parse_membind(
                text,
                machine,
                numa_policy::memory_nodes().as_deref(),
            )?),
        };
        let sizes = match &args.sizes {
            None => Sizes::Levels,
            Some(text) => Sizes::Custom(
                text.split(',')
                    .map(|s| Bytes::parse(s.trim()).map(|b| b.0))
                    .collect::<Result<Vec<u64>, _>>()?,
            ),
        };
        let max_threads = *thread_counts.last().expect("at least one count") as u64;
        if let Sizes::Custom(list) = &sizes {
            for &bytes in list {
                if bytes < stream::GRANULE as u64 * 4 {
                    return Err(UsageError::SizeTooSmall {
                        flag: "--sizes",
                        requested: Bytes(bytes),
                        minimum: Bytes(stream::GRANULE as u64 * 4),
                    });
                }
                check_fits_memory("--sizes (× threads)", Bytes(bytes * max_threads), machine)?;
            }
        } else {
            // The DRAM working sets shrink to fit memory, down to a floor: the floor of
            // the most threads must fit.
            let floor = dram_floor(machine, max_threads as usize);
            check_fits_memory(
                "--threads (× the DRAM working set)",
                Bytes(floor * max_threads),
                machine,
            )?;
        }
        let sweep_kernels = if args.sweep {
            Some(parse_kernels("--sweep-kernels", &args.sweep_kernels)?)
        } else {
            None
        };
        let config = BandwidthConfig {
            kernels: parse_kernels("--kernels", &args.kernels)?,
            isa,
            thread_counts,
            ladder,
            cpus,
            membind,
            sizes,
            sweep_kernels: Vec::new(),
            sweep_sizes: Vec::new(),
            pages: measure.pages,
            repetitions: measure.repetitions,
            trial_ns: measure.trial_ns,
        };
        Ok(match sweep_kernels {
            Some(kernels) => config.with_sweep(kernels, measure, machine),
            None => config,
        })
    }

    /// The same table with a bandwidth-vs-size sweep of `kernels` (4 KiB to the sweeps'
    /// largest working set) at the first thread count: `--sweep`, and `run`'s profile.
    pub fn with_sweep(
        mut self,
        kernels: Vec<&'static KernelSpec>,
        measure: &MeasurePlan,
        machine: &Machine,
    ) -> BandwidthConfig {
        self.sweep_kernels = kernels;
        self.sweep_sizes = sweep_working_sets(
            sweep_max(measure, machine),
            if measure.quick { 1 } else { 2 },
        );
        self
    }
}

/// Kernel names, comma-separated, or 'all'.
fn parse_kernels(flag: &'static str, text: &str) -> Result<Vec<&'static KernelSpec>, UsageError> {
    if text.trim() == "all" {
        return Ok(stream::all_kernels().collect());
    }
    parse_list(text, |name| {
        stream::find(name).ok_or_else(|| {
            invalid(
                flag,
                name,
                &format!("'all' or kernel names from: {}", stream::names()),
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::params::tests::server;
    use crate::experiments::params::{defaults, MAX_LADDER_COUNTS};
    use crate::units::{GIB, MIB};

    #[test]
    fn a_384_cpu_server_runs_a_few_counts_within_a_bounded_footprint() {
        for (nodes, cores) in [(8, 16), (16, 12)] {
            let machine = server(nodes, cores);
            let measure = MeasurePlan::resolve(&MeasureArgs::default(), &machine).unwrap();
            let config =
                BandwidthConfig::resolve(&defaults::<BandwidthArgs>(), &measure, &machine).unwrap();
            assert!(config.thread_counts.len() <= MAX_LADDER_COUNTS);
            assert_eq!(config.ladder.as_ref().unwrap().counts, config.thread_counts);
            assert_eq!(*config.thread_counts.last().unwrap(), 2 * nodes * cores);
            // The bound: every count maps at most 4 GiB in all (16 one-thread DRAM sets,
            // or 8 MiB per thread beyond 256 threads, plus the arrays' padding), where 384
            // threads of 128 MiB each mapped 48 GiB.
            for (threads, bytes) in config.footprint(&machine) {
                assert!(
                    bytes <= 4 * GIB,
                    "{threads} threads map {} MiB",
                    bytes / MIB
                );
            }
            // Each count's points: every kernel at 4 levels, so the table's time is
            // counts × kernels × levels trials, whatever the CPUs.
            let page = 2 * MIB;
            let most = <BandwidthConfig as crate::experiments::Experiment>::hugepages(
                &config, &machine, page,
            );
            assert!(most * page <= 5 * GIB, "{most} huge pages");
        }
    }

    #[test]
    fn membind_names_the_nodes_that_would_do() {
        let machine = crate::topology::Machine::default();
        let measure = MeasurePlan::resolve(&MeasureArgs::default(), &machine).unwrap();
        let args = BandwidthArgs {
            membind: Some("4000".into()),
            ..defaults::<BandwidthArgs>()
        };
        let e = BandwidthConfig::resolve(&args, &measure, &machine).unwrap_err();
        assert!(
            matches!(
                e,
                UsageError::InvalidValue {
                    flag: "--membind",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("'4000'"), "{e}");
    }
}
