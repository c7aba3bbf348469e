//! memscope: a memory-hierarchy profiler.
//!
//! The binary (`src/main.rs`) parses the command line (`commands::Cli`, with the flags of
//! `cli` and of the rooms) and hands it to the command registry (`commands`): the command's room turns its flags into a validated
//! `commands::Plan`, runs it, and gives one document to the one writer. The layers, from
//! the bottom:
//!
//! - `units`, `error`: newtypes and typed errors shared by everything;
//! - `topology`: what the OS and CPUID say about the machine;
//! - `platform`: timer, thread pinning, memory arenas with an explicit page policy;
//! - `kernels`: the timed inner loops and the layouts they walk;
//! - `stats`: robust summaries and level (plateau) detection;
//! - `session`: progress on stderr, the typed warnings raised while measuring, and the
//!   measuring context (`session::context::Session`) every experiment runs in;
//! - `counters`: hardware and software event counters (perf_event_open);
//! - `counting`: a user's command run under counters, and the count model (`stat`, `sweep`);
//! - `flags`: the output and save flags and parse helpers every room shares; `examples`:
//!   the EXAMPLES block of every command's `--help`;
//! - `view`: the presentation model as data (sections of prose, tables, charts, CSV
//!   tables) and the shared number formats;
//! - `binary`: what a built binary holds (ELF, DWARF) against the caches, for
//!   `footprint` and `sweep`;
//! - `render`: the renderers that know no experiment, command or report (terminal, CSV,
//!   HTML + SVG, JSON of any document, Prometheus text) and the atomic output files;
//! - `experiments`: one room per experiment (parameters, measurement, result,
//!   presentation) and the registry that lists them; `stat`: `memscope stat`, counting
//!   around a user's command; `pages`: `memscope pages`, a user's command's hot 2 MiB
//!   regions and huge pages applied to them; `footprint`: a binary's per-thread and
//!   static data against the caches (its flags and sections; the analysis is
//!   `binary`'s); `sweep`: build or runtime knobs swept over
//!   interleaved runs, with confidence intervals and rank tests;
//! - `trials`: the trial engine every command that runs a user's program again and
//!   again uses (randomized blocks, interrupted blocks dropped, the time limit, the
//!   output tail);
//! - `advise`: what holds a user's program back in memory (a cache pirate, a bandwidth
//!   bandit and huge pages, run interleaved with the program), and the remedies measured;
//! - `report`: the serde model (JSON is the model itself), which sections each output
//!   shows, and the report read back;
//! - `compare`, `history`: reports read back, set side by side and kept over time;
//! - `commands`: the registry (`registry!`: one line per command, from which the clap
//!   `Subcommand` enum, the `Plan` enum and the dispatch come; the writer);
//! - `restore`: what killed memscope processes left changed, undone from the journal at
//!   every start and by `memscope restore`.

pub mod advise;
pub mod binary;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod counters;
pub mod counting;
pub mod error;
pub mod examples;
pub mod experiments;
pub mod flags;
pub mod footprint;
pub mod fs;
pub mod history;
pub mod kernels;
pub mod pages;
pub mod platform;
pub mod render;
pub mod report;
pub mod restore;
pub mod session;
pub mod stat;
pub mod stats;
pub mod sweep;
pub mod topology;
pub mod trials;
pub mod units;
pub mod view;
