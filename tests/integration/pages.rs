//! `memscope pages` through the real binary, on the demonstration program built with it:
//! the planted hot regions are found, the three arms run, exit statuses pass through,
//! bad input is exit 2. Nothing here asserts a speed.

use serde_json::Value;

use crate::util::{exclusive, memscope, temp_dir, text};

const DEMO: &str = env!("CARGO_BIN_EXE_memscope-hotspot-demo");

/// A small demo: 128 MiB in 16 regions, 3 hot 2 MiB regions; about a second of accesses.
const SMALL_DEMO: &[&str] = &[
    "--regions",
    "16",
    "--region-mib",
    "8",
    "--hot",
    "3",
    "--accesses",
    "12000000",
];

/// Runs memscope with `args` + `-- DEMO SMALL_DEMO`: the JSON report (stdout) and the
/// demo's hot regions (from its stderr).
fn on_demo(args: &[&str]) -> (Value, Vec<u64>) {
    on_demo_with(args, SMALL_DEMO)
}

/// `on_demo` with other demo arguments.
fn on_demo_with(args: &[&str], demo: &[&str]) -> (Value, Vec<u64>) {
    // One sampled run at a time: DAMON runs one kdamond of memscope's, and a second
    // memscope finding it busy would fall back to another source mid-test; nor may a
    // measurement share the CPUs with the demo.
    let _one = exclusive();
    let dir = temp_dir();
    let report = dir.path().join("pages.json");
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--json", report.to_str().unwrap(), "--", DEMO]);
    all.extend(demo);
    let output = memscope(&all).assert().success().get_output().clone();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let mut hot: Vec<u64> = Vec::new();
    for start in stderr
        .lines()
        .filter_map(|l| l.split("hot region 0x").nth(1))
        .filter_map(|r| u64::from_str_radix(r.split('-').next()?, 16).ok())
    {
        if !hot.contains(&start) {
            hot.push(start);
        }
    }
    assert!(!hot.is_empty(), "the demo names its hot regions: {stderr}");
    let json: Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap()).expect("one JSON document");
    (json, hot)
}

fn starts(regions: &Value, n: usize) -> Vec<u64> {
    regions
        .as_array()
        .expect("regions")
        .iter()
        .take(n)
        .map(|r| r["start"].as_u64().expect("start"))
        .collect()
}

#[test]
fn record_finds_the_hot_regions_a_program_plants() {
    // A hot set of 12 regions (6,144 pages, more than any L2 TLB holds): the accessed bits
    // are cleared without a TLB flush, so a hot set that fits the TLB is not re-walked and
    // counts less (3 hot regions, 1,536 pages, were found 1 of 6 times on a Zen 4 guest;
    // 12 of 12 were found every time). A short interval: on a fast idle core every cold
    // page of the small demo is touched within 50 ms, and the ranking would be a draw.
    let hot_regions = 12;
    let demo = [
        "--regions",
        "16",
        "--region-mib",
        "8",
        "--hot",
        "12",
        "--accesses",
        "12000000",
    ];
    let (json, hot) = on_demo_with(
        &["pages", "record", "--top", "12", "--interval", "10"],
        &demo,
    );
    assert_eq!(hot.len(), hot_regions);
    let record = &json["pages"]["record"];
    assert!(record["intervals"].as_u64().unwrap() >= 2, "{record}");
    let top = starts(&record["regions"], hot_regions);
    for region in &hot {
        // A hot region may start inside a 2 MiB region when the mapping is not aligned.
        let bin = region & !((2 << 20) - 1);
        assert!(
            top.contains(&bin) || top.contains(&(bin + (2 << 20))),
            "hot region {region:#x} not in the top {hot_regions} {top:x?}"
        );
    }
    let first = &record["regions"][0];
    assert_eq!(first["mapping"], "anon");
    assert!(first["anonymous"].as_bool().unwrap());
    assert!(record["signal"]["meaning"]
        .as_str()
        .unwrap()
        .contains("ranked"));
}

#[test]
fn apply_runs_three_interleaved_arms_and_verifies_the_huge_pages() {
    // A short sampling interval: on a fast core the demo runs for a third of a second.
    let (json, _) = on_demo(&[
        "pages",
        "apply",
        "--show-output",
        "--top",
        "3",
        "--repeat",
        "2",
        "--interval",
        "25",
    ]);
    let apply = &json["pages"]["apply"];
    let arms = apply["arms"].as_array().unwrap();
    let names: Vec<&str> = arms.iter().map(|a| a["arm"].as_str().unwrap()).collect();
    assert_eq!(names, ["baseline", "top", "all"]);
    let mut orders: Vec<u64> = Vec::new();
    for arm in arms {
        let runs = arm["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{arm}");
        orders.extend(runs.iter().map(|r| r["order"].as_u64().unwrap()));
        assert!(arm["time_s"]["median"].as_f64().unwrap() > 0.0);
    }
    orders.sort_unstable();
    assert_eq!(orders, (0..6).collect::<Vec<u64>>());
    assert_eq!(
        arms[0]["huge_kb"].as_f64().unwrap(),
        0.0,
        "THP is off for 4 KiB"
    );
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if thp.contains("[never]") || thp.is_empty() {
        eprintln!("THP is off on this machine: no huge page to verify");
        return;
    }
    // Huge pages under the chosen regions, fewer than under everything.
    let top_huge = arms[1]["huge_kb"].as_f64().unwrap();
    let all_huge = arms[2]["huge_kb"].as_f64().unwrap();
    assert!(top_huge > 0.0 && top_huge <= 3.0 * 2048.0, "{top_huge}");
    assert!(all_huge > top_huge, "{all_huge} vs {top_huge}");
    let in_regions = arms[1]["runs"][0]["huge_in_regions_kb"].as_f64().unwrap();
    assert!(in_regions > 0.0);
    assert_eq!(apply["regions"].as_array().unwrap().len(), 3);
}

/// A record of one anonymous region (at an address no program here maps), for `apply
/// --from`: the arms run without recording first.
fn synthetic_record(dir: &std::path::Path) -> String {
    let region = serde_json::json!({
        "pid": 1, "process": "sh", "start": 0x7e00_0000_0000u64, "mapping": "anon",
        "anonymous": true, "value": 100.0, "share_pct": 100.0, "cumulative_pct": 100.0,
        "resident_kb": 2048.0, "huge_kb": 0.0
    });
    let record = serde_json::json!({"pages": {"record": {
        "command": ["sh"], "source": "refs", "source_description": "accessed bits",
        "signal": {"name": "translations touched", "meaning": "ranked"},
        "region_bytes": 2097152, "top": 1, "interval_ms": 100.0, "intervals": 1,
        "elapsed_s": 0.1, "user_s": 0.0, "system_s": 0.0, "termination": {"exited": 0},
        "processes": [[1, "sh"]], "regions": [region]
    }}});
    let path = dir.join("record.json");
    std::fs::write(&path, record.to_string()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_program_that_exits_non_zero_every_time_is_timed_and_its_output_kept_out() {
    let _one = exclusive();
    let dir = temp_dir();
    let from = synthetic_record(dir.path());
    let report = dir.path().join("apply.json");
    let out = memscope(&[
        "pages",
        "apply",
        "--from",
        &from,
        "--repeat",
        "2",
        "--json",
        report.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        // Arithmetic, so that what it prints is not in the command line memscope shows.
        "echo program-says-$((40+2)); echo program-complains-$((40+2)) >&2; exit 3",
    ])
    .assert()
    .code(3);
    let output = out.get_output();
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    for said in ["program-says-42", "program-complains-42"] {
        assert!(
            !stdout.contains(said) && !stderr.contains(said),
            "{stdout}{stderr}"
        );
    }
    assert!(
        stderr.contains("exits 3 in every run") && stderr.contains("--ok-status 3"),
        "{stderr}"
    );
    let json = crate::util::read_json(&report);
    let apply = &json["pages"]["apply"];
    assert_eq!(apply["ok_status"]["code"], 3);
    for arm in apply["arms"].as_array().unwrap() {
        assert_eq!(arm["failed_runs"], 0, "{arm}");
        assert!(arm["time_s"]["median"].as_f64().unwrap() > 0.0, "{arm}");
    }
}

#[test]
fn a_warm_up_run_with_another_status_stops_at_once() {
    let _one = exclusive();
    let dir = temp_dir();
    let from = synthetic_record(dir.path());
    let runs = dir.path().join("runs");
    let script = format!(
        "echo run >> '{}'; echo why-it-failed >&2; exit 3",
        runs.display()
    );
    let out = memscope(&[
        "pages",
        "apply",
        "--from",
        &from,
        "--ok-status",
        "0",
        "--",
        "sh",
        "-c",
        &script,
    ])
    .assert()
    .code(3);
    let stderr = text(&out.get_output().stderr);
    assert!(
        stderr.contains("warm-up run of '4 KiB pages' ended with exit status 3"),
        "{stderr}"
    );
    assert!(
        stderr.contains("why-it-failed"),
        "the stderr tail: {stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&runs).unwrap().lines().count(),
        1,
        "no run after the failed one"
    );
    let bad = memscope(&["pages", "apply", "--ok-status", "ok", "--", "true"])
        .assert()
        .code(2);
    assert!(text(&bad.get_output().stderr).contains("--ok-status"));
}

#[test]
fn the_commands_exit_status_passes_through() {
    let _one = exclusive();
    let out = memscope(&["pages", "record", "--", "sh", "-c", "exit 3"])
        .assert()
        .code(3);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(stderr.contains("before the first sample"), "{stderr}");
    memscope(&["pages", "record", "--", "memscope-no-such-program"])
        .assert()
        .code(127);
}

#[test]
fn a_record_read_back_by_apply_must_be_a_pages_report() {
    let _one = exclusive();
    let dir = temp_dir();
    let not_a_report = dir.path().join("x.json");
    std::fs::write(&not_a_report, "{\"schema_version\": 1}").unwrap();
    for (args, names) in [
        (vec!["pages", "record", "--top", "0", "--", "true"], "--top"),
        (
            vec!["pages", "record", "--source", "psychic", "--", "true"],
            "psychic",
        ),
        (
            vec!["pages", "record", "--interval", "1", "--", "true"],
            "--interval",
        ),
        (vec!["pages", "apply", "--huge", "4k", "--", "true"], "4k"),
        (
            vec!["pages", "record", "--top", "120%", "--", "true"],
            "120%",
        ),
        (
            vec!["pages", "apply", "--repeat", "1", "--", "true"],
            "--repeat",
        ),
        (
            vec![
                "pages",
                "apply",
                "--from",
                "/nonexistent.json",
                "--",
                "true",
            ],
            "nonexistent",
        ),
        (
            vec![
                "pages",
                "apply",
                "--from",
                not_a_report.to_str().unwrap(),
                "--",
                "true",
            ],
            "no `pages` object",
        ),
        (
            vec!["pages", "record", "--membind", "4096", "--", "true"],
            "--membind",
        ),
        (
            vec!["pages", "apply", "--membind", "x", "--", "true"],
            "a NUMA node with memory",
        ),
    ] {
        let out = memscope(&args).assert().code(2);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(stderr.contains(names), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_source_this_machine_lacks_is_a_clear_error() {
    let _one = exclusive();
    for source in ["pmu", "damon"] {
        let out = memscope(&["pages", "record", "--source", source, "--", "true"])
            .assert()
            .get_output()
            .clone();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        match out.status.code() {
            Some(0) => {} // this machine has it
            Some(2) => assert!(stderr.contains("not supported here"), "{stderr}"),
            other => panic!("--source {source}: exit {other:?}: {stderr}"),
        }
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
