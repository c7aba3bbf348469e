//! The TLB experiment's parameters: its flags (`memscope tlb`) and how they, with the
//! measuring flags, become a `TlbConfig`.

use clap::Args;

use crate::error::UsageError;
use crate::experiments::params::{
    check_fits_memory, parse_size, CommandArgs, MeasureArgs, MeasurePlan,
};
use crate::experiments::tlb::TlbConfig;
use crate::platform::arena::PagePolicy;
use crate::topology::Machine;
use crate::units::{Bytes, MIB};

/// `--huge`: the pages of the second curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SecondCurve {
    Thp,
    #[value(name = "2m")]
    Huge2m,
    // No second curve: 4 KiB pages only.
    None,
}

#[derive(Debug, Clone, Default, Args)]
#[command(after_help = crate::examples::TLB)]
pub struct TlbArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Huge pages of the second curve: thp, 2m (hugetlbfs) or none [default: thp when THP
    /// is enabled, else 2m when its pool has pages, else none].
    #[arg(long, value_name = "PAGES", value_enum)]
    pub huge: Option<SecondCurve>,

    /// Most 4 KiB pages of the sweep [default: 131072 (2^17); with --quick 65536].
    #[arg(long, value_name = "N", value_parser = clap::builder::TypedValueParser::map(crate::flags::count(16, 1 << 24), |n| n as u64))]
    pub max_pages: Option<u64>,

    /// Most 2 MiB pages of the sweep [default: twice the largest 2 MiB TLB CPUID reports,
    /// at most half the free memory; with --quick 256].
    #[arg(long, value_name = "N", value_parser = clap::builder::TypedValueParser::map(crate::flags::count(16, 1 << 20), |n| n as u64))]
    pub max_huge_pages: Option<u64>,

    /// Footprint of x and y together in the SAXPY comparison, or 'none' [default: 1G;
    /// with --quick none].
    #[arg(long, value_name = "SIZE")]
    pub saxpy_footprint: Option<String>,

    /// Count L1, L2, LLC and dTLB misses per access for every point with the hardware
    /// counters (in a short untimed pass after the point's timed trials); on a machine
    /// without a PMU each row says why instead.
    #[arg(long)]
    pub counters: bool,
}

impl CommandArgs for TlbArgs {
    fn measure(&self) -> &MeasureArgs {
        &self.measure
    }
}

impl TlbConfig {
    /// 4 KiB pages always, and THP or hugetlbfs 2 MiB pages.
    pub fn resolve(
        args: &TlbArgs,
        measure: &MeasurePlan,
        machine: &Machine,
    ) -> Result<TlbConfig, UsageError> {
        let thp = machine.thp.enabled.offers_huge_pages();
        let pool_has_pages =
            crate::topology::memory::hugepage_pool(2 * MIB).is_some_and(|pool| pool.total > 0);
        let huge = match args.huge {
            None if thp => PagePolicy::Thp,
            None if pool_has_pages || measure.reserve_hugepages => PagePolicy::Huge2M,
            None | Some(SecondCurve::None) => PagePolicy::Base,
            Some(SecondCurve::Thp) => PagePolicy::Thp,
            Some(SecondCurve::Huge2m) => PagePolicy::Huge2M,
        };
        let mut config = TlbConfig::new(
            machine,
            huge,
            measure.quick,
            measure.repetitions,
            measure.trial_ns,
            0x0074_6c62, // "tlb"
        );
        if let Some(pages) = args.max_pages {
            config.max_pages_base = pages;
        }
        // At most half the free memory, in 2 MiB pages.
        let memory_pages = (machine.available_memory().bytes / 2 / (2 * MIB)).max(16);
        match args.max_huge_pages {
            Some(pages) => {
                check_fits_memory(
                    "--max-huge-pages (× 2 MiB)",
                    Bytes(pages * 2 * MIB),
                    machine,
                )?;
                config.max_pages_huge = pages;
            }
            None => config.max_pages_huge = config.max_pages_huge.min(memory_pages),
        }
        match args.saxpy_footprint.as_deref() {
            Some("none") => config.saxpy_footprint = 0,
            Some(text) => {
                config.saxpy_footprint = parse_size("--saxpy-footprint", text, 2 * MIB, machine)?.0;
            }
            None => {
                config.saxpy_footprint = config
                    .saxpy_footprint
                    .min(machine.available_memory().bytes / 2)
            }
        }
        if !measure.quick {
            config.mlp_bytes = measure.dram_working_set(machine);
        }
        config.counters = args.counters;
        Ok(config)
    }
}
