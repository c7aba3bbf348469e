//! What the measurements stand on: the clock (`timer`), thread pinning (`affinity`),
//! memory buffers with an explicit page policy (`arena`) and teams of pinned threads that
//! run trials together (`team`), and whether a trial was preempted (`preemption`).

pub mod affinity;
pub mod arena;
pub mod preemption;
pub mod team;
pub mod timer;
