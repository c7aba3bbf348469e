//! `memscope sweep` through the real binary: the shipped example's L1d crossing is found
//! as a significant change, with each variant's per-thread footprint; each variant runs
//! its own kept build; every block holds each variant once; `{NAME}` reaches the build,
//! the environment and the benchmark; the work directory is removed, also on SIGTERM; bad
//! input is a clear message with exit 2 and no output file.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::util::{exclusive, sweep_in, temp_dir, wait_for, ChildGuard, BINARY};

/// Runs a sweep that must succeed and returns its JSON report.
fn sweep(dir: &Path, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--json", "-"]);
    let out = sweep_in(dir, &all).assert().success().get_output().clone();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON document ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn has_cc() -> bool {
    let ok = std::process::Command::new("cc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("no C compiler: the example sweep is not run");
    }
    ok
}

fn cell(report: &Value, benchmark: usize, variant: usize) -> &Value {
    let variants = report["sweep"]["variants"].as_array().unwrap().len();
    &report["sweep"]["cells"][benchmark * variants + variant]
}

#[test]
fn the_example_finds_the_l1d_crossing_as_a_significant_change() {
    if !has_cc() {
        return;
    }
    // Timings compared within the run: no other measurement meanwhile.
    let _one_at_a_time = exclusive();
    let dir = temp_dir();
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/sweep_l1d.c");
    let build = format!("cc -O2 -pthread -DWORK_KIB={{WORK_KIB}} {source} -o sweep_l1d");
    // 8 KiB sits in L1d, 256 KiB in L2: each step waits three times longer or more, far
    // outside any noise, so 6 blocks give exact p = 0.002 whatever the machine's load.
    let report = sweep(
        dir.path(),
        &[
            "-p",
            "WORK_KIB=8,256",
            "--build",
            &build,
            "--keep",
            "sweep_l1d",
            "--metric",
            "ns/step:lower=ns/step=([0-9.]+)",
            "--runs",
            "6",
            "./sweep_l1d 4000000",
        ],
    );
    let s = &report["sweep"];
    assert_eq!(s["blocks"], 6);
    let l2 = cell(&report, 0, 1);
    for m in 0..2 {
        let stat = &l2["measures"][m];
        assert_eq!(stat["verdict"], "worse", "{stat}");
        assert!(stat["p"].as_f64().unwrap() < 0.05, "{stat}");
        assert!(stat["change_pct"].as_f64().unwrap() > 0.0, "{stat}");
    }
    assert_eq!(cell(&report, 0, 0)["measures"][1]["verdict"], "baseline");
    // Each variant's per-thread footprint comes from its own build.
    let tls = |v: usize| s["variants"][v]["footprint"]["tls_bytes"].as_u64().unwrap();
    assert!(tls(0) >= 8 * 1024 && tls(0) < 16 * 1024, "{}", tls(0));
    assert!(tls(1) >= 256 * 1024, "{}", tls(1));
    // The metric is read from every measured run and the wall time is there too.
    let runs = s["runs"].as_array().unwrap();
    assert!(runs.iter().all(|r| r["metrics"][0].as_f64().is_some()));
    assert!(runs.iter().all(|r| r["elapsed_s"].as_f64().unwrap() > 0.0));
}

#[test]
fn each_variant_runs_its_own_build_interleaved_and_the_work_directory_goes() {
    let dir = temp_dir();
    // The build writes a script that reports its variant's value; the last build
    // overwrites it, so only the kept copies can tell the variants apart.
    let build = "printf '#!/bin/sh\\necho built={N} env=$X arg=$1\\n\
                 echo \"$MEMSCOPE_VARIANT_DIR\" >> dirs.txt\\n' > bench.sh && chmod +x bench.sh";
    let report = sweep(
        dir.path(),
        &[
            "-p",
            "N=1,2,3",
            "--build",
            build,
            "--keep",
            "bench.sh",
            "--env",
            "X=x{N}",
            "--metric",
            "built=built=([0-9]+)",
            "--metric",
            "env=env=x([0-9]+)",
            "--metric",
            "arg=arg=a([0-9]+)",
            "--runs",
            "4",
            "--warmup",
            "0",
            "./bench.sh a{N}",
        ],
    );
    let s = &report["sweep"];
    let runs = s["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 12);
    for r in runs {
        let n = s["variants"][r["variant"].as_u64().unwrap() as usize]["values"][0][1]
            .as_str()
            .unwrap()
            .parse::<f64>()
            .unwrap();
        for m in 0..3 {
            assert_eq!(r["metrics"][m].as_f64(), Some(n), "{r}");
        }
    }
    // Every block runs each variant once (the shuffle itself is tested in stats::design).
    for block in 1..=4 {
        let mut variants: Vec<u64> = runs
            .iter()
            .filter(|r| r["block"] == block)
            .map(|r| r["variant"].as_u64().unwrap())
            .collect();
        variants.sort();
        assert_eq!(variants, [0, 1, 2], "block {block}");
    }
    // The copies lived in work directories that are gone now.
    let dirs = std::fs::read_to_string(dir.path().join("dirs.txt")).unwrap();
    let dirs: Vec<&str> = dirs.lines().collect();
    assert_eq!(dirs.len(), 12);
    for d in dirs {
        assert!(d.contains("memscope-sweep-"), "{d}");
        assert!(!Path::new(d).exists(), "{d} left behind");
    }
}

#[test]
fn sigterm_removes_the_work_directory() {
    let dir = temp_dir();
    let marker = dir.path().join("variant-dir");
    let build = "printf '#!/bin/sh\\necho \"$MEMSCOPE_VARIANT_DIR\" > \"$1\"; sleep 3\\n' \
                 > slow.sh && chmod +x slow.sh";
    let bench = format!("./slow.sh {}", marker.display());
    let mut child = ChildGuard::spawn(
        std::process::Command::new(BINARY)
            .current_dir(dir.path())
            .args([
                "sweep", "-p", "N=1,2", "--build", build, "--keep", "slow.sh", "--env", "N={N}",
                "--runs", "2",
            ])
            .arg(&bench)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    // The shell creates the marker before echo writes the line: wait for the whole line.
    wait_for(Duration::from_secs(60), || {
        std::fs::read_to_string(&marker).is_ok_and(|text| text.ends_with('\n'))
    });
    let variant_dir = std::fs::read_to_string(&marker).unwrap();
    let work = Path::new(variant_dir.trim())
        .parent()
        .unwrap()
        .to_path_buf();
    assert!(work.exists(), "{}", work.display());
    // SAFETY: signalling our own unreaped child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status:?}");
    assert!(!work.exists(), "{} left behind", work.display());
}

/// A sweep whose build fails for the first variant, after printing a line.
const FAILING_BUILD: &[&str] = &[
    "-p",
    "N=1,2",
    "--build",
    "echo building {N}; exit 3",
    "--keep",
    "x",
    "true",
];

#[test]
fn bad_input_is_a_clear_error_with_exit_2_and_no_output_file() {
    let dir = temp_dir();
    let cases: &[(&[&str], &str)] = &[
        (
            &["-p", "N=1,2", "true"],
            "put {N} in --build, --env or a benchmark",
        ),
        (&["-p", "N=1,2", "true {M}"], "{M} is not one"),
        (
            FAILING_BUILD,
            "the build of variant N=1 failed (exit status 3)",
        ),
        (
            &["-p", "N=1,2", "memscope-no-such-program {N}"],
            "'memscope-no-such-program' is not on PATH",
        ),
        (
            &["-p", "N=1,2", "sh -c 'echo oops >&2; exit {N}'"],
            "ended with exit status",
        ),
        (
            &["-p", "N=1,2", "--metric", "x=[0-9]+", "echo {N}"],
            "capture group",
        ),
        (
            &["-p", "N=1,2", "--metric", "x=speed ([0-9]+)", "echo {N}"],
            "matched no output of any benchmark",
        ),
    ];
    for (args, want) in cases {
        let mut all = args.to_vec();
        all.extend(["--json", "out.json", "--runs", "2"]);
        let out = sweep_in(dir.path(), &all)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(
            !dir.path().join("out.json").exists(),
            "{args:?} wrote a file"
        );
    }
    // The failed build shows its output; the failing benchmark its stderr.
    let out = sweep_in(dir.path(), FAILING_BUILD)
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("building 1"));
    let out = sweep_in(
        dir.path(),
        &["-p", "N=1,2", "sh -c 'echo oops >&2; exit {N}'"],
    )
    .assert()
    .code(2)
    .get_output()
    .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("oops"));
}
