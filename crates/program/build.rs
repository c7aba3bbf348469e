//! Builds the preload library of `memscope pages` (crates/program/src/pages/preload.c) as a shared
//! object with the system's C compiler (found by the `cc` crate), for `include_bytes!`
//! in crates/program/src/pages/preload.rs: the library ships inside the memscope binary.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let source = "src/pages/preload.c";
    println!("cargo:rerun-if-changed={source}");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let library = out.join("libmemscope_pages_preload.so");
    let compiler = cc::Build::new()
        .opt_level(2)
        .cargo_metadata(false)
        .get_compiler();
    let mut command: Command = compiler.to_command();
    command
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-o"])
        .arg(&library)
        .arg(source)
        .args(["-ldl", "-pthread"]);
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler for {source}: {e}"));
    assert!(status.success(), "building {source} failed: {status}");
}
