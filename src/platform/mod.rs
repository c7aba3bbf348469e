//! What the measurements stand on: the clock (`timer`), thread pinning (`affinity`) and
//! memory buffers with an explicit page policy (`arena`).

pub mod affinity;
pub mod arena;
pub mod timer;
