//! memscope's ground floor: what every other crate stands on, needing none of them.
//!
//! - `units`, `error`: newtypes and typed errors shared by everything;
//! - `topology`: what the OS and CPUID say about the machine;
//! - `platform`: timer, thread pinning, memory arenas with an explicit page policy, the
//!   journal of what memscope changes on the system, child processes;
//! - `fs`: every path opened relative to a directory handle, with `O_NOFOLLOW`;
//! - `stats`: robust summaries and level (plateau) detection;
//! - `counters`: hardware and software event counters (perf_event_open);
//! - `flags`: the output and save flags and parse helpers every command shares;
//!   `examples`: the EXAMPLES block of every command's `--help`.

pub mod counters;
pub mod error;
pub mod examples;
pub mod flags;
pub mod fs;
pub mod platform;
pub mod stats;
pub mod topology;
pub mod units;
