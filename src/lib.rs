//! memscope: a memory-hierarchy profiler.
//!
//! The binary (`src/main.rs`) parses the command line (`commands::Cli`, with the flags of
//! `cli` and of the rooms) and hands it to the command registry (`commands`): the command's room turns its flags into a validated
//! `commands::Plan`, runs it, and gives one document to the one writer. The crates, from
//! the bottom (each uses only those below it; docs/DESIGN.md draws them):
//!
//! - `memscope-base` (crates/base): units, errors, topology, platform, fs, stats,
//!   counters, the shared flags and help examples;
//! - `memscope-view` (crates/view): the view model and its renderers;
//! - `memscope-bench` (crates/bench): the kernels, the measuring session and the
//!   experiments;
//! - `memscope-program` (crates/program): a user's program: counting, binary, trials,
//!   stat, footprint, pages, sweep, advise, restore;
//! - this crate: `cli` (the run's flags), `report` (the serde model, which sections each
//!   output shows, and the report read back), `compare` and `history` (reports set side
//!   by side and kept over time), and `commands` (the registry: one line per command,
//!   from which the clap `Subcommand` enum, the `Plan` enum and the dispatch come; the
//!   writer).
//!
//! Every module of the crates below is re-exported here, so `crate::units` and
//! `memscope::units` name the same module as before the split.

pub use memscope_base::{counters, error, examples, flags, fs, platform, stats, topology, units};
pub use memscope_bench::{experiments, kernels, session};
pub use memscope_program::{
    advise, binary, counting, footprint, pages, restore, stat, sweep, trials,
};
pub use memscope_view::{render, view};

pub mod cli;
pub mod commands;
pub mod compare;
pub mod history;
pub mod report;
