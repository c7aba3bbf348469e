//! The integration tests: one test binary (one link) that runs the real memscope binary,
//! a module per area in tests/integration/, sharing `util` (the command builder, the lock
//! that keeps measuring and machine-wide tests apart, guards, fixtures). Run one area
//! with `cargo test --test integration cli::`, one test by its name.

#[path = "integration/util.rs"]
mod util;

#[path = "integration/advise.rs"]
mod advise;
#[path = "integration/cli.rs"]
mod cli;
#[path = "integration/compare.rs"]
mod compare;
#[path = "integration/faults.rs"]
mod faults;
#[path = "integration/files.rs"]
mod files;
#[path = "integration/fleet.rs"]
mod fleet;
#[path = "integration/footprint.rs"]
mod footprint;
#[path = "integration/hostile_input.rs"]
mod hostile_input;
#[path = "integration/interleave.rs"]
mod interleave;
#[path = "integration/numa.rs"]
mod numa;
#[path = "integration/pages.rs"]
mod pages;
#[path = "integration/root_safety.rs"]
mod root_safety;
#[path = "integration/sweep.rs"]
mod sweep;
