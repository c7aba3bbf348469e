//! Sweep values reach a shell only quoted (issue 25, row 10): a value holding shell syntax
//! is one literal word in the build line and in a benchmark's `sh -c` script and runs
//! nothing; a value that cannot be quoted where it sits is exit 2 before anything runs.
//! The scratch directories' own safety (swapped directories, symlinks inside) is tested
//! at unit level in `platform::scratch` and `experiments::files`.

use crate::util::{sweep_in, temp_dir};

#[test]
fn a_sweep_value_with_shell_syntax_runs_nothing() {
    let dir = temp_dir();
    let pwned = dir.path().join("pwned");
    let value = format!("a;touch {} #", pwned.display());
    let param = format!("X={value}");
    let out = sweep_in(
        dir.path(),
        &[
            "-p",
            &param,
            "--build",
            "printf '%s\\n' {X} > built.txt && printf '#!/bin/sh\\n' > b.sh && chmod +x b.sh",
            "--keep",
            "b.sh",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--json",
            "-",
            "./b.sh",
            "script=sh -c 'echo {X} > script.txt'",
        ],
    )
    .assert()
    .success()
    .get_output()
    .clone();
    assert!(!pwned.exists(), "a value ran as a command");
    let built = std::fs::read_to_string(dir.path().join("built.txt")).unwrap();
    assert_eq!(built, format!("{value}\n"));
    let script = std::fs::read_to_string(dir.path().join("script.txt")).unwrap();
    assert_eq!(script, format!("{value}\n"));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["sweep"]["variants"][0]["values"][0][1],
        value.as_str()
    );
}

#[test]
fn a_value_that_cannot_be_quoted_where_it_sits_is_exit_2_before_the_build() {
    let dir = temp_dir();
    let out = sweep_in(
        dir.path(),
        &[
            "-p",
            "X=a b",
            "--build",
            "touch built; echo $(echo {X})",
            "--keep",
            "built",
            "true",
        ],
    )
    .assert()
    .code(2)
    .get_output()
    .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--build") && stderr.contains("'a b' of X") && stderr.contains("$(…)"),
        "{stderr}"
    );
    assert!(!dir.path().join("built").exists(), "the build ran");
}
