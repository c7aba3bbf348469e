//! The loaded-latency experiment's parameters: its flags (`memscope loaded`) and how they,
//! with the measuring flags, become a `LoadedConfig`.

use clap::Args;

use crate::error::UsageError;
use crate::experiments::loaded::{LoadedConfig, DEFAULT_DELAYS, QUICK_DELAYS};
use crate::experiments::params::{
    check_fits_memory, dram_bytes, dram_floor, invalid, parse_count, parse_list,
    parse_thread_counts, thread_cpus, CommandArgs, MeasureArgs, MeasurePlan,
};
use crate::experiments::shared::membind::MemoryBinding;
use crate::experiments::shared::page_local::DEFAULT_WINDOW_PAGES;
use crate::flags::parse_membind;
use crate::kernels::injector::Mix;
use crate::platform::numa_policy;
use crate::topology::cpu::format_cpu_list;
use crate::topology::Machine;
use crate::units::Bytes;

#[derive(Debug, Clone, Default, Args)]
#[command(after_help = crate::examples::LOADED)]
pub struct LoadedArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Injectors' traffic mixes, comma-separated, or 'all': read, 2:1, 1:1, write-nt
    /// [default: all; with --quick: read].
    #[arg(long, value_name = "LIST")]
    pub mix: Option<String>,

    /// Injector thread counts (the latency thread not counted), comma-separated, or
    /// 'all' for one on every other CPU this process may use.
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub threads: String,

    /// Delays between the injectors' accesses, core cycles, comma-separated [default:
    /// Intel MLC's series 0,2,8,15,50,…,9000,20000; with --quick ten of them].
    #[arg(long, value_name = "LIST")]
    pub delays: Option<String>,

    /// Bind the chase's and every injector's buffer to NUMA node NODE (any node with
    /// memory, also one without CPUs, such as a CXL expander): that node's
    /// latency-vs-bandwidth curve, measured from the CPUs of the run.
    #[arg(long, value_name = "NODE")]
    pub membind: Option<String>,
}

impl CommandArgs for LoadedArgs {
    fn measure(&self) -> &MeasureArgs {
        &self.measure
    }
}

impl LoadedConfig {
    /// The chase on the measuring CPU over the latency ladder's largest working set (so
    /// its idle end compares with `latency`'s DRAM figure), injectors on the other CPUs in
    /// `thread_cpus` order.
    pub fn resolve(
        args: &LoadedArgs,
        measure: &MeasurePlan,
        machine: &Machine,
    ) -> Result<LoadedConfig, UsageError> {
        let cpus = thread_cpus(machine, measure.cpu);
        let injector_cpus = cpus[1..].to_vec();
        if injector_cpus.is_empty() {
            return Err(invalid(
                "--cpu",
                &measure.cpu.to_string(),
                &format!(
                    "a machine with a second CPU to inject load from (this process may use \
                     only CPU {})",
                    format_cpu_list(&machine.allowed_cpus)
                ),
            ));
        }
        let mixes = match args.mix.as_deref() {
            None if measure.quick => vec![Mix::Read],
            None => Mix::ALL.to_vec(),
            Some(text) if text.trim() == "all" => Mix::ALL.to_vec(),
            Some(text) => parse_list(text, |name| {
                Mix::parse(name).ok_or_else(|| {
                    invalid(
                        "--mix",
                        name,
                        &format!("'all' or mixes from: {}", Mix::NAMES),
                    )
                })
            })?,
        };
        let thread_counts = parse_thread_counts(&args.threads, injector_cpus.len())?;
        let delays = match args.delays.as_deref() {
            None if measure.quick => QUICK_DELAYS.to_vec(),
            None => DEFAULT_DELAYS.to_vec(),
            Some(text) => parse_list(text, |part| {
                part.parse::<u64>()
                    .ok()
                    .filter(|d| *d <= 10_000_000)
                    .ok_or_else(|| {
                        invalid(
                            "--delays",
                            part,
                            "delays in core cycles from 0 to 10000000, comma-separated",
                        )
                    })
            })?,
        };
        let membind = match &args.membind {
            None => None,
            Some(text) => Some(MemoryBinding::to(
                parse_membind(text, machine, numa_policy::memory_nodes().as_deref())?,
                machine,
            )),
        };
        // Each injector streams over a buffer well beyond its share of the largest cache
        // (four times the cache, at least 128 MiB, with up to 16 injectors); with more, the
        // buffers of all together stay near 16 of those, within memory (`dram_bytes`).
        let injectors = thread_counts.last().copied().unwrap_or(1);
        let injector_bytes = dram_bytes(machine, injectors);
        check_fits_memory(
            "--threads (× the injectors' buffers) with --max-size",
            Bytes(measure.max_size.0 + injectors as u64 * dram_floor(machine, injectors)),
            machine,
        )?;
        // The page-local window of the latency ladder, so the idle ends agree.
        let window_pages = parse_count("--window-pages", DEFAULT_WINDOW_PAGES, 1, 1 << 20)?;
        Ok(LoadedConfig {
            mixes,
            thread_counts,
            delays,
            latency_cpu: measure.cpu,
            injector_cpus,
            chase_bytes: measure.max_size.0,
            window_bytes: window_pages * 4096,
            injector_bytes,
            membind,
            pages: measure.pages,
            repetitions: measure.repetitions,
            trial_ns: measure.trial_ns,
            seed: 0x6c6f_6164_6564, // "loaded"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::params::defaults;
    use crate::experiments::params::tests::server;
    use crate::units::GIB;

    #[test]
    fn injectors_on_every_cpu_of_a_big_server_stay_within_memory() {
        let machine = server(16, 12);
        let measure = MeasurePlan::resolve(&MeasureArgs::default(), &machine).unwrap();
        let config = LoadedConfig::resolve(&defaults::<LoadedArgs>(), &measure, &machine).unwrap();
        assert_eq!(config.thread_counts, [383]);
        assert_eq!(config.injector_cpus.len(), 383);
        // 383 injectors of the one-thread 128 MiB would map 48 GiB: the bound is 4 GiB,
        // each still four times its share of the L3.
        let total = config.injector_bytes * 383;
        assert!(total <= 4 * GIB, "{total}");
        assert!(config.injector_bytes >= 8 << 20);
        // One injector keeps the one-thread buffer.
        let args = LoadedArgs {
            threads: "1".into(),
            ..defaults::<LoadedArgs>()
        };
        let one = LoadedConfig::resolve(&args, &measure, &machine).unwrap();
        assert_eq!(one.injector_bytes, 128 << 20);
        assert!(one.membind.is_none());
    }
}
