//! `memscope pages`: where a program's TLB misses and hot pages are (`record`), and huge
//! pages applied to exactly those regions and re-measured (`apply`).

pub mod access;
pub mod damon;
pub mod pmu;
