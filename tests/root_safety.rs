//! Root-safety tests through the real binary (issue 25): one test binary, one module per
//! part. (A test crate's root resolves `mod x;` beside itself, hence the paths.)

#[path = "root_safety/outputs.rs"]
mod outputs;
