//! memscope on a user's program.
//!
//! - `counting`: a user's command run under counters, and the count model (`stat`,
//!   `sweep`); `stat`: `memscope stat`, counting around a user's command;
//! - `binary`: what a built binary holds (ELF, DWARF) against the caches; `footprint`: a
//!   binary's per-thread and static data against the caches (its flags and sections);
//! - `trials`: the trial engine every command that runs a user's program again and again
//!   uses (randomized blocks, interrupted blocks dropped, the time limit, the output tail);
//! - `pages`: `memscope pages`, a user's command's hot 2 MiB regions and huge pages
//!   applied to them; `sweep`: build or runtime knobs swept over interleaved runs, with
//!   confidence intervals and rank tests;
//! - `advise`: what holds a user's program back in memory (a cache pirate, a bandwidth
//!   bandit and huge pages, run interleaved with the program), and the remedies measured;
//! - `restore`: what killed memscope processes left changed, undone from the journal at
//!   every start and by `memscope restore`.
//!
//! The modules of the floors below are re-exported, so that `crate::units` names the same
//! module in every crate.

pub use memscope_base::{counters, error, examples, flags, fs, platform, stats, topology, units};
pub use memscope_bench::{experiments, kernels, session};
pub use memscope_view::{render, view};

pub mod advise;
pub mod binary;
pub mod counting;
pub mod footprint;
pub mod pages;
pub mod restore;
pub mod stat;
pub mod sweep;
pub mod trials;
