//! Arm SPE sampling (placeholder while being written).

mod packets;

pub use packets::{decode, DecodeStats};
mod sysfs;
