//! (filled in on its branch)

pub mod spe;
