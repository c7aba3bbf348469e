//! What the measurements stand on: the clock (`timer`), thread pinning (`affinity`),
//! memory buffers with an explicit page policy (`arena`) and teams of pinned threads that
//! run trials together (`team`).

pub mod affinity;
pub mod arena;
pub mod team;
pub mod timer;
