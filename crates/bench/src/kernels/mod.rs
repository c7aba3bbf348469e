//! The timed inner loops and the memory layouts they walk. Kernels never allocate, print
//! or parse: everything they need is prepared before the clock starts.

pub mod chase;
pub mod corunner;
pub mod fileio;
pub mod injector;
pub mod jit;
pub mod multichase;
pub mod pageprobe;
pub mod permutation;
pub mod stream;
pub mod strided;
