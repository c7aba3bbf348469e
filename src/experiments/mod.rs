//! Experiments: one file each. An experiment takes a validated `plan::Plan`, drives the
//! kernels through the platform layer, and returns a typed, serialisable result; it never
//! prints (progress goes through `report::progress`).

pub mod bandwidth;
pub mod chase_timing;
pub mod latency;
pub mod loaded;
pub mod miss_impact;
pub mod mlp;
pub mod numa;
pub mod rob;
pub mod stride;
pub mod tlb;
