//! Hardware and software event counters through `perf_event_open` (Linux).
//!
//! - `event`: what to count, and the parser for event names;
//! - `group`: opening a set of events for a thread or a child process, enabling,
//!   disabling and reading them, with per-event refusals instead of errors;
//! - `scale`: the multiplexing correction `raw × enabled / running`;
//! - `probe`: why the kernel refused an event (no PMU, paranoid level, unsupported
//!   event) and which core PMUs a hybrid CPU has;
//! - `sys`: the raw system call, `perf_event_attr` and ioctls.
//!
//! Software events (`task-clock`, `page-faults`, …) need no PMU, so everything here
//! also works, and is tested, in a virtual machine without PMU passthrough.

pub mod event;
pub mod group;
pub mod probe;
pub mod scale;
pub mod sys;

pub use event::{Event, EventKind, EventParseError};
pub use group::{Count, CounterGroup, Reading, Target, Unavailable};
pub use probe::{CorePmu, Probe, Refusal};
pub use scale::{scale, Scaled};
