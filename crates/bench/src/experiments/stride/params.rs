//! The stride study's parameters: its flags (`memscope stride`) and how they, with the
//! measuring flags, become a `StrideConfig`.

use clap::Args;

use crate::error::UsageError;
use crate::experiments::params::{sweep_max, CommandArgs, MeasureArgs, MeasurePlan};
use crate::experiments::shared::sizing::level_working_sets;
use crate::experiments::stride::StrideConfig;
use crate::topology::Machine;

#[derive(Debug, Clone, Default, Args)]
#[command(after_help = crate::examples::STRIDE)]
pub struct StrideArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Count L1, L2, LLC and dTLB misses per access for every point with the hardware
    /// counters (in a short untimed pass after the point's timed trials); on a machine
    /// without a PMU each row says why instead.
    #[arg(long)]
    pub counters: bool,
}

impl CommandArgs for StrideArgs {
    fn measure(&self) -> &MeasureArgs {
        &self.measure
    }
}

impl StrideConfig {
    /// The full matrix: every stride and random order at sizes up to the sweeps' largest
    /// working set, with fewer and shorter trials than the measuring flags ask.
    pub fn resolve(
        args: &StrideArgs,
        measure: &MeasurePlan,
        machine: &Machine,
    ) -> Result<StrideConfig, UsageError> {
        let mut config = StrideConfig::for_machine(
            sweep_max(measure, machine),
            measure.repetitions.min(5),
            measure.trial_ns / 2.0,
        );
        config.counters = args.counters;
        Ok(config)
    }

    /// The same study at one working set inside each level (for `run`).
    pub fn one_size_per_level(mut self, measure: &MeasurePlan, machine: &Machine) -> Self {
        let levels = level_working_sets(machine, 1);
        self.sizes = levels
            .iter()
            .map(|(_, bytes)| (*bytes).min(sweep_max(measure, machine)))
            .collect();
        self.sizes.dedup();
        self
    }
}
