//! What the experiment rooms share, so that no room imports another: working-set sizing
//! (`sizing`), the sampling rules (`sampling`), the latency ladder's level (`ladder`), the
//! hierarchy level a working set lives in (`level`), the page-local chase's defaults
//! (`page_local`), the multi-chain chase engine MLP and TLB both drive (`chains`) and
//! `--membind` of `loaded` and `bandwidth` (`membind`), the pinned thread and read ISA of
//! `numa` and `interleave` (`node_reading`).
//! Shared here means experiment-specific; what is not (kernels, timers, statistics) lives
//! further down in `kernels`, `platform` and `stats`.

pub(crate) mod chains;
pub(crate) mod ladder;
pub mod level;
pub mod membind;
pub mod node_reading;
pub(crate) mod page_local;
pub(crate) mod sampling;
pub(crate) mod sizing;
