//! Root-safety tests through the real binary (issue 25): one test binary, a module per
//! part in tests/root_safety/.

#[path = "root_safety/scratch.rs"]
mod scratch;
