//! The latency ladder's parameters: its flags (`memscope latency`) and how they, with the
//! measuring flags, become a `LatencyConfig`.

use clap::Args;

use crate::error::UsageError;
use crate::experiments::latency::LatencyConfig;
use crate::experiments::params::{invalid, CommandArgs, MeasureArgs, MeasurePlan};
use crate::experiments::shared::page_local::DEFAULT_WINDOW_PAGES;
use crate::experiments::shared::sizing::sweep_sizes;
use crate::kernels::permutation::ChaseOrder;
use crate::topology::Machine;
use crate::units::{Bytes, MIB};

/// `--order`: the chase order of the ladder, or both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OrderChoice {
    #[default]
    Both,
    PageLocal,
    Random,
}

#[derive(Debug, Clone, Default, Args)]
#[command(after_help = crate::examples::LATENCY)]
pub struct LatencyArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Chase order: 'page-local' (random lines, a window of pages at a time: cache misses
    /// without TLB misses; the levels are found from this sweep), 'random' (one cycle over
    /// the whole buffer: cache plus TLB misses; levels from this sweep), or 'both'.
    #[arg(long, value_name = "ORDER", value_enum, default_value_t = OrderChoice::Both)]
    pub order: OrderChoice,

    /// Bytes between chased slots (a multiple of 8; 64 = one cache line).
    #[arg(long, value_name = "BYTES", default_value = "64")]
    pub stride: String,

    /// Smallest working set.
    #[arg(long, value_name = "SIZE", default_value = "4K")]
    pub min_size: String,

    /// Sweep points per doubling of the working set.
    #[arg(long, value_name = "N", default_value = "4", value_parser = clap::builder::TypedValueParser::map(crate::flags::count(1, 32), |n| n as u32))]
    pub points_per_octave: u32,

    /// Pages (4 KiB) per window of the page-local order (64 fits every first-level DTLB
    /// memscope knows of; it is also multichase's default locality).
    #[arg(long, value_name = "N", default_value = DEFAULT_WINDOW_PAGES, value_parser = crate::flags::count(1, 1 << 20))]
    pub window_pages: usize,

    /// Also print every point of the sweep.
    #[arg(long)]
    pub points: bool,

    /// Count L1, L2, LLC and dTLB misses per access for every point with the hardware
    /// counters (in a short untimed pass after the point's timed trials); on a machine
    /// without a PMU each row says why instead.
    #[arg(long)]
    pub counters: bool,
}

impl CommandArgs for LatencyArgs {
    fn measure(&self) -> &MeasureArgs {
        &self.measure
    }

    fn points(&self) -> bool {
        self.points
    }
}

impl LatencyConfig {
    /// The sweep from --min-size to --max-size in the chosen chase order and stride.
    pub fn resolve(
        args: &LatencyArgs,
        measure: &MeasurePlan,
        _machine: &Machine,
    ) -> Result<LatencyConfig, UsageError> {
        let stride = Bytes::parse(&args.stride)?.0 as usize;
        if stride < 8 || !stride.is_multiple_of(8) || stride as u64 > MIB {
            return Err(invalid(
                "--stride",
                &args.stride,
                "a multiple of 8 bytes from 8 to 1M",
            ));
        }
        let window_pages = args.window_pages;
        let page_local = ChaseOrder::PageLocal {
            window_bytes: window_pages * 4096,
        };
        let (order, random_curve) = match args.order {
            OrderChoice::Both => (page_local, true),
            OrderChoice::PageLocal => (page_local, false),
            OrderChoice::Random => (ChaseOrder::Random, false),
        };
        let min_size = Bytes::parse(&args.min_size)?;
        if min_size.0 < stride as u64 || min_size > measure.max_size {
            return Err(invalid(
                "--min-size",
                &args.min_size,
                &format!(
                    "a size of at least one stride ({stride} B) and at most --max-size ({})",
                    measure.max_size
                ),
            ));
        }
        let per_octave = args.points_per_octave;
        Ok(LatencyConfig {
            sizes: sweep_sizes(min_size.0, measure.max_size.0, per_octave, stride as u64),
            arena_bytes: measure.max_size.0,
            order,
            random_curve,
            stride_bytes: stride,
            repetitions: measure.repetitions,
            passes: if measure.quick { 1 } else { 3 },
            trial_ns: measure.trial_ns,
            page_local_window_bytes: window_pages * 4096,
            seed: 0x6d65_6d73_636f_7065, // "memscope"
            counters: args.counters,
        })
    }
}
