//! Statistics: robust summaries of repeated trials (`summary`) and finding structure in a
//! measured curve (`segment`: optimal piecewise-constant segmentation, plateaus).

pub mod segment;
pub mod summary;

pub use summary::Summary;
