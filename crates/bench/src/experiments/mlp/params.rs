//! The MLP experiment's parameters: its flags (`memscope mlp`) and how they, with the
//! measuring flags, become an `MlpConfig`.

use clap::Args;

use crate::error::UsageError;
use crate::experiments::mlp::MlpConfig;
use crate::experiments::params::{parse_size, CommandArgs, MeasureArgs, MeasurePlan};
use crate::experiments::shared::sizing::level_working_sets;
use crate::topology::Machine;
use crate::units::{KIB, MIB};

#[derive(Debug, Clone, Default, Args)]
#[command(after_help = crate::examples::MLP)]
pub struct MlpArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Working sets of the chain sweep, comma-separated, instead of one inside L2, L3 and
    /// DRAM [with --quick: L2 and DRAM].
    #[arg(long, value_name = "SIZES")]
    pub sizes: Option<String>,

    /// Most chains of the sweep (1 to 64) [default: 32].
    #[arg(long, value_name = "N", value_parser = clap::builder::TypedValueParser::map(crate::flags::count(1, 64), |n| n as u32))]
    pub max_chains: Option<u32>,

    /// Largest working set of the size × chains grid (from 1 KiB in powers of two);
    /// 'none' skips the grid [default: 1G; with --quick none].
    #[arg(long, value_name = "SIZE")]
    pub grid_max: Option<String>,
}

impl CommandArgs for MlpArgs {
    fn measure(&self) -> &MeasureArgs {
        &self.measure
    }
}

impl MlpConfig {
    /// Chains at L2, L3 and DRAM (L2 and DRAM with --quick) or at --sizes, and the size ×
    /// chains grid.
    pub fn resolve(
        args: &MlpArgs,
        measure: &MeasurePlan,
        machine: &Machine,
    ) -> Result<MlpConfig, UsageError> {
        let levels = match &args.sizes {
            Some(text) => {
                let mut levels = Vec::new();
                for part in text.split(',').map(str::trim) {
                    let bytes = parse_size("--sizes", part, 4 * KIB, machine)?;
                    levels.push((bytes.to_string(), bytes.0));
                }
                levels
            }
            None => {
                let mut levels = level_working_sets(machine, 1);
                levels.retain(|(name, _)| !name.starts_with("L1"));
                if measure.quick {
                    levels.retain(|(name, _)| name == "L2" || name == "DRAM");
                }
                if let Some(dram) = levels.iter_mut().find(|(name, _)| name == "DRAM") {
                    dram.1 = measure.dram_working_set(machine);
                }
                // Shared last-level caches behave smaller than their size (other cores,
                // other tenants, slices): well above the level below, far below the OS
                // size.
                let caches: Vec<u64> = machine.data_caches().iter().map(|c| c.size_bytes).collect();
                for (name, bytes) in levels.iter_mut() {
                    let level: Option<usize> = name.strip_prefix('L').and_then(|n| n.parse().ok());
                    if let Some(level) = level.filter(|&l| l >= 3 && l <= caches.len()) {
                        *bytes = (caches[level - 1] / 8).max(4 * caches[level - 2]);
                    }
                }
                levels
            }
        };
        let max_chains = args.max_chains.unwrap_or(32);
        let mut chains: Vec<u32> = MlpConfig::default_chains()
            .into_iter()
            .filter(|&n| n <= max_chains)
            .collect();
        if !chains.contains(&max_chains) {
            chains.push(max_chains);
        }
        let grid_max = match args.grid_max.as_deref() {
            Some("none") => None,
            Some(text) => Some(parse_size("--grid-max", text, KIB, machine)?.0),
            None if measure.quick => None,
            // 1 GiB, or what fits in the memory available now.
            None => Some(
                (1 << 30)
                    .min(machine.available_memory().bytes / 2)
                    .max(64 * MIB),
            ),
        };
        Ok(MlpConfig {
            levels,
            chains,
            grid_sizes: grid_max.map_or_else(Vec::new, MlpConfig::grid_sizes_up_to),
            grid_chains: MlpConfig::default_grid_chains(),
            sequential: true,
            littles_law: true,
            repetitions: measure.repetitions,
            trial_ns: measure.trial_ns,
            seed: 0x006d_6c70, // "mlp"
        })
    }
}
