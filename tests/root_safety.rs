//! Root-safety tests that go through the binary: each part of issue 25 in its module
//! (tests/root_safety/*.rs).

#[path = "root_safety/memory_guard.rs"]
mod memory_guard;
#[path = "root_safety/user_files.rs"]
mod user_files;
