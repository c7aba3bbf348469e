//! Root-safety tests that go through the binary (issue 25): a module per part in
//! tests/integration/root_safety/.

#[path = "root_safety/children.rs"]
mod children;
#[path = "root_safety/memory_guard.rs"]
mod memory_guard;
#[path = "root_safety/outputs.rs"]
mod outputs;
#[path = "root_safety/pool.rs"]
mod pool;
#[path = "root_safety/scratch.rs"]
mod scratch;
#[path = "root_safety/user_files.rs"]
mod user_files;
