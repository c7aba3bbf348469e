//! Statistics: robust summaries of repeated trials (`summary`) and finding structure in a
//! measured curve (`segment`: optimal piecewise-constant segmentation, plateaus), and
//! whether two sets of runs differ (`rank_tests`).

pub mod rank_tests;
pub mod segment;
pub mod summary;

pub use summary::Summary;
