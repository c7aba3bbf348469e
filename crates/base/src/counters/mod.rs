//! Hardware and software event counters through `perf_event_open` (Linux).
//!
//! - `event`: what to count, and the parser for event names and `-e` lists;
//! - `group`: opening a set of events for a thread or a child process, enabling,
//!   disabling and reading them, with per-event refusals instead of errors;
//! - `scale`: the multiplexing correction `raw × enabled / running`;
//! - `probe`: why the kernel refused an event (no PMU, paranoid level, unsupported
//!   event), which core PMUs a hybrid CPU has, and how a group is spread over them;
//! - `access`: misses per access at L1, L2, the LLC and the DTLB around memscope's own
//!   kernels, with the level events of this CPU;
//! - `topdown`: the top-down (pipeline-slot) events this CPU has, and the breakdown into
//!   retiring, bad speculation, frontend and backend (memory/core) bound from their counts;
//! - `sys`: the raw system call, `perf_event_attr` and ioctls.
//!
//! A command run under these counters is `crate::counting`, a floor up: it forks through
//! `platform::child`, and `platform` stands on `topology`, which reads this `Probe`.
//!
//! Software events (`task-clock`, `page-faults`, …) need no PMU, so everything here
//! also works, and is tested, in a virtual machine without PMU passthrough.

pub mod access;
pub mod event;
pub mod group;
pub mod probe;
#[cfg(any(test, feature = "test-support"))]
pub mod samples;
pub mod scale;
pub mod sys;
pub mod topdown;

pub use access::{AccessCounter, AccessCounts, LevelMisses, MissLevel};
pub use event::{parse_event_list, Event, EventKind, EventParseError};
pub use group::{Count, CounterGroup, Reading, Target, Unavailable};
pub use probe::{CorePmu, Probe, Refusal};
pub use scale::{scale, Scaled};
