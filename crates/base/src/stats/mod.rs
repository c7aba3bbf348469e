//! Statistics: robust summaries of repeated trials (`summary`), confidence intervals of a
//! median (`interval`), finding structure in a measured curve (`segment`: optimal
//! piecewise-constant segmentation, plateaus), whether two sets of runs differ
//! (`rank_tests`) and by how much (`change`; `paired` for runs paired by block, read
//! sequentially), and the shuffled run order of randomized blocks (`design`).

pub mod change;
pub mod design;
pub mod interval;
pub mod paired;
pub mod rank_tests;
pub mod segment;
pub mod summary;

pub use summary::Summary;
