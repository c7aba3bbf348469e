//! memscope: a memory-hierarchy profiler.
//!
//! The binary (`src/main.rs`) parses the command line (`cli`), resolves it against the
//! machine into a validated `plan::Plan`, runs the experiments, and hands one
//! `report::Report` to the exporters. The layers, from the bottom:
//!
//! - `units`, `error`: newtypes and typed errors shared by everything;
//! - `topology`: what the OS and CPUID say about the machine;
//! - `platform`: timer, thread pinning, memory arenas with an explicit page policy;
//! - `kernels`: the timed inner loops and the layouts they walk;
//! - `stats`: robust summaries and level (plateau) detection;
//! - `session`: progress on stderr and the typed warnings raised while measuring;
//! - `experiments`: one file per experiment, each returning a typed result;
//! - `counters`, `stat`: hardware and software event counters (perf_event_open), and
//!   `memscope stat`, which counts them around a user's command;
//! - `report`: the serde model and its exporters (terminal, JSON, CSV, HTML + SVG).

pub mod cli;
pub mod commands;
pub mod counters;
pub mod error;
pub mod experiments;
pub mod kernels;
pub mod plan;
pub mod platform;
pub mod report;
pub mod session;
pub mod stat;
pub mod stats;
pub mod topology;
pub mod units;
pub mod view;
