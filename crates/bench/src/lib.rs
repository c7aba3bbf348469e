//! memscope's measurements of the machine.
//!
//! - `kernels`: the timed inner loops, the layouts they walk and the co-runner threads;
//! - `session`: progress on stderr, the typed warnings raised while measuring, and the
//!   measuring context (`session::context::Session`) every experiment runs in;
//! - `experiments`: one room per experiment (parameters, measurement, result,
//!   presentation) and the registry that lists them.
//!
//! The modules of the floors below are re-exported, so that `crate::units` names the same
//! module in every crate.

pub use memscope_base::{counters, error, examples, flags, fs, platform, stats, topology, units};
pub use memscope_view::{render, view};

pub mod experiments;
pub mod kernels;
pub mod session;
