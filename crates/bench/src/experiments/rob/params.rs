//! The ROB experiment's parameters: its flags (`memscope rob`) and how they, with the
//! measuring flags, become a `RobConfig`.

use clap::Args;

use crate::error::UsageError;
use crate::experiments::params::{invalid, parse_list, CommandArgs, MeasureArgs, MeasurePlan};
use crate::experiments::rob::RobConfig;
use crate::kernels::jit::Filler;
use crate::topology::Machine;

#[derive(Debug, Clone, Default, Args)]
#[command(after_help = crate::examples::ROB)]
pub struct RobArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Filler instructions, comma-separated, or 'all': nop (reorder buffer), add (integer
    /// registers), xor (vector registers), load (load queue), store (store queue).
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub fillers: String,

    /// Largest K (filler instructions between the two misses) [default: 1024; with
    /// --quick 512].
    #[arg(long, value_name = "K", value_parser = clap::builder::TypedValueParser::map(crate::flags::count(16, 4096), |n| n as u32))]
    pub max_k: Option<u32>,

    /// Skip the serialized N × K grid (misses and nops timed as one block).
    #[arg(long)]
    pub no_serialized: bool,
}

impl CommandArgs for RobArgs {
    fn measure(&self) -> &MeasureArgs {
        &self.measure
    }

    fn available(&self) -> Result<(), UsageError> {
        if crate::experiments::rob::supported() {
            Ok(())
        } else {
            Err(UsageError::Unsupported(
                crate::experiments::rob::UNSUPPORTED.to_string(),
            ))
        }
    }
}

impl RobConfig {
    /// The fillers up to --max-k over a DRAM-sized pair of chases.
    pub fn resolve(
        args: &RobArgs,
        measure: &MeasurePlan,
        machine: &Machine,
    ) -> Result<RobConfig, UsageError> {
        let fillers = if args.fillers.trim() == "all" {
            Filler::ALL.to_vec()
        } else {
            parse_list(&args.fillers, |name| {
                Filler::parse(name).ok_or_else(|| {
                    invalid(
                        "--fillers",
                        name,
                        &format!("'all' or fillers from: {}", Filler::names()),
                    )
                })
            })?
        };
        let max_k = match args.max_k {
            Some(k) => k,
            None if measure.quick => 512,
            None => 1024,
        };
        Ok(RobConfig {
            fillers,
            max_k,
            repetitions: measure.repetitions,
            trial_ns: measure.trial_ns,
            serialized: !args.no_serialized,
            quick: measure.quick,
            // Two chains, each over the DRAM working set.
            chase_bytes: 2 * measure.dram_working_set(machine),
        })
    }
}
