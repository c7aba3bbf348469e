//! memscope's presentation, knowing no experiment, command or report.
//!
//! - `view`: the presentation model as data (sections of prose, tables, charts, CSV
//!   tables) and the shared number formats;
//! - `render`: the renderers (terminal, CSV, HTML + SVG, JSON of any document,
//!   Prometheus text) and the atomic output files.
//!
//! The modules of the floor below are re-exported, so that `crate::units` names the same
//! module in every crate.

pub use memscope_base::{counters, error, examples, flags, fs, platform, stats, topology, units};

pub mod render;
pub mod view;
