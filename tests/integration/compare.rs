//! `memscope compare`, `history` and `--prometheus` through the real binary: one real
//! latency report, copies of it edited to be slower or of another machine, and reports
//! that are not reports.

use std::path::{Path, PathBuf};

use predicates::prelude::*;
use serde_json::Value;

use crate::util::{latency_report, memscope, read_json as read, temp_dir};

/// The shared measured latency report (`util::latency_report`): (directory, report path).
fn measured() -> (&'static Path, &'static Path) {
    let report = latency_report();
    (&report.dir, &report.json)
}

/// A copy of the report with every latency × `scale`, started `later` seconds later.
fn edited(name: &str, scale: f64, later: u64, edit: impl Fn(&mut Value)) -> PathBuf {
    edited_from(name, scale, 0, later, edit)
}

/// A copy with the latencies of the levels from `first_level` on (and their points) ×
/// `scale`, started `later` seconds later, then `edit`ed.
fn edited_from(
    name: &str,
    scale: f64,
    first_level: usize,
    later: u64,
    edit: impl Fn(&mut Value),
) -> PathBuf {
    let (dir, json) = measured();
    let mut report = read(json);
    let latency = &mut report["experiments"]["latency"];
    let mut from_bytes = u64::MAX;
    for level in latency["levels"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .skip(first_level)
    {
        level["latency_ns"] = (level["latency_ns"].as_f64().unwrap() * scale).into();
        from_bytes = from_bytes.min(level["first_bytes"].as_u64().unwrap());
    }
    for point in latency["points"].as_array_mut().unwrap() {
        if point["bytes"].as_u64().unwrap() >= from_bytes {
            point["ns"] = (point["ns"].as_f64().unwrap() * scale).into();
        }
    }
    let started = report["run"]["started_unix"].as_u64().unwrap() + later;
    report["run"]["started_unix"] = started.into();
    edit(&mut report);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(&report).unwrap()).unwrap();
    path
}

/// Every latency point's spread set to 1%, the drift pass dropped and the run's
/// conditions quiet (a run measured on a busy machine is disturbed, and a check does not
/// count its worse figures).
fn quiet(report: &mut Value) {
    report["drift"] = Value::Null;
    report["conditions"] = serde_json::json!([]);
    if let Some(warnings) = report["warnings"].as_array_mut() {
        warnings.retain(|w| w["code"] != "drift" && w["code"] != "disturbed");
    }
    let latency = &mut report["experiments"]["latency"];
    for curve in ["points", "random_points"] {
        for point in latency[curve].as_array_mut().into_iter().flatten() {
            point["spread_pct"] = 1.0.into();
            point["unstable"] = false.into();
        }
    }
}

/// What the first group's "What differs" names, in order.
fn differences(comparison: &Value) -> Vec<&str> {
    comparison["comparison"]["groups"][0]["differences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["what"].as_str().unwrap())
        .collect()
}

fn compare_json(files: &[&Path]) -> Value {
    let mut args = vec!["compare"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend(["--json", "-"]);
    let out = memscope(&args).assert().success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

/// The verdicts of run `run` in the comparison, by figure key.
fn verdicts(comparison: &Value, run: usize) -> Vec<(String, String)> {
    comparison["comparison"]["groups"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|row| {
            let verdict = row["cells"][run]["verdict"].as_str()?;
            Some((row["key"].as_str()?.to_string(), verdict.to_string()))
        })
        .collect()
}

#[test]
fn a_report_against_itself_is_unchanged_and_a_slower_copy_is_worse() {
    let (_, a) = measured();
    let same = compare_json(&[a, a]);
    let v = verdicts(&same, 1);
    assert!(!v.is_empty());
    assert!(
        v.iter().all(|(_, v)| v == "same" || v == "not-judged"),
        "{v:?}"
    );

    let base = edited("quiet-base.json", 1.0, 0, quiet);
    let slow = edited("slow.json", 1.5, 60, quiet);
    let c = compare_json(&[&base, &slow]);
    let worse: Vec<String> = verdicts(&c, 1)
        .into_iter()
        .filter(|(_, v)| v == "worse")
        .map(|(k, _)| k)
        .collect();
    assert!(
        worse.iter().any(|k| k.starts_with("latency.level.")),
        "{worse:?}"
    );
    // The terminal table says it too.
    memscope(&["compare", base.to_str().unwrap(), slow.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("worse"));
}

#[test]
fn machines_that_differ_are_named_and_a_directory_is_grouped_by_cpu_model() {
    let other = edited("other.json", 1.0, 120, |r| {
        r["machine"]["cpu_model"] = "Another CPU 9000".into();
        r["machine"]["kernel"] = "9.9.9-test".into();
    });
    let (_, a) = measured();
    let c = compare_json(&[a, &other]);
    let what = differences(&c);
    assert!(
        what.contains(&"CPU model") && what.contains(&"kernel"),
        "{what:?}"
    );

    let dir = temp_dir();
    for (i, file) in [a, a, other.as_path()].into_iter().enumerate() {
        std::fs::copy(file, dir.path().join(format!("r{i}.json"))).unwrap();
    }
    std::fs::write(dir.path().join("notes.json"), "{\"hello\": 1}").unwrap();
    let out = memscope(&["compare", dir.path().to_str().unwrap(), "--json", "-"])
        .assert()
        .success();
    let grouped: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let groups = grouped["comparison"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{groups:?}");
    let notes = grouped["comparison"]["notes"].to_string();
    assert!(notes.contains("notes.json"), "{notes}");
}

#[test]
fn history_check_flags_a_report_20_percent_slower_and_passes_a_repeat() {
    // The measured run's own noise (its spreads, its drift) can be anything on a busy
    // machine: set it to 1% so that the edit alone decides.
    let a = &edited("quiet.json", 1.0, 0, quiet);
    let dir = temp_dir();
    let db = dir.path().join("h.sqlite3");
    let db = db.to_str().unwrap();
    let again = edited("again.json", 1.0, 3600, quiet);
    memscope(&["history", "--db", db, "--add", a.to_str().unwrap()])
        .assert()
        .success();
    memscope(&[
        "history",
        "--db",
        db,
        "--add",
        again.to_str().unwrap(),
        "--check",
    ])
    .assert()
    .success()
    .stdout(predicate::str::contains("No regression"));
    // The slowest level (DRAM when the ladder reaches it) 20% slower, the others as they
    // were: that level, and only it, is the regression.
    let levels = read(a)["experiments"]["latency"]["levels"]
        .as_array()
        .unwrap()
        .clone();
    let last = levels.last().unwrap()["name"].as_str().unwrap().to_string();
    let slow = edited_from("slow20.json", 1.2, levels.len() - 1, 7200, quiet);
    memscope(&["history", "--db", db, "--add", slow.to_str().unwrap()])
        .assert()
        .success();
    let out = memscope(&["history", "--db", db, "--check", "--json", "-"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("regression"));
    let checks: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let worse: Vec<&str> = checks[0]["figures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["verdict"] == "worse")
        .map(|f| f["label"].as_str().unwrap())
        .collect();
    assert!(
        worse.contains(&format!("{last} latency").as_str()),
        "{worse:?}"
    );
    assert!(worse.iter().all(|w| !w.starts_with("L1d")), "{worse:?}");
    let out = memscope(&["history", "--db", db, "--json", "-"])
        .assert()
        .success();
    let runs: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 3);
}

#[test]
fn a_saved_run_is_listed_and_its_prometheus_file_parses() {
    let report = latency_report();
    memscope(&["history"])
        .env("MEMSCOPE_HISTORY", &report.history)
        .assert()
        .success()
        .stdout(predicate::str::contains("latency"));
    let text = std::fs::read_to_string(&report.prometheus).unwrap();
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).unwrap();
    let levels: Vec<_> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == "memscope_level_latency_seconds")
        .collect();
    assert!(levels.len() >= 2, "{text}");
    assert!(levels.iter().all(|s| s.labels.get("host").is_some()));
    assert!(levels.iter().any(|s| s.labels.get("level") == Some("L1d")));
}

#[test]
fn files_that_are_not_readable_reports_are_refused_with_exit_2() {
    let (_, a) = measured();
    let dir = temp_dir();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let mut future = read(a);
    future["schema_version"] = 99.into();
    let cases = [
        (write("text.json", "not json at all"), "not JSON"),
        (write("fio.json", r#"{"fio version": "3.33"}"#), "tool.name"),
        (write("future.json", &future.to_string()), "schema 99"),
        (dir.path().join("missing.json"), "cannot open"),
        (PathBuf::from("/dev/zero"), "is a character device"),
    ];
    for (file, says) in &cases {
        memscope(&["compare", a.to_str().unwrap(), file.to_str().unwrap()])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(*says));
        memscope(&[
            "history",
            "--db",
            dir.path().join("h.db").to_str().unwrap(),
            "--add",
        ])
        .arg(file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(*says));
    }
    memscope(&["compare", a.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("at least two"));
    // Nothing was created by the refused imports.
    assert!(!dir.path().join("h.db").exists());
}

/// `memscope stat --save -- PROGRAM` into the database `db`.
fn stat_saved(db: &Path, program: &[&str]) {
    memscope(&["stat", "--save", "--"])
        .args(program)
        .env("MEMSCOPE_HISTORY", db)
        .assert()
        .success();
}

#[test]
fn stat_runs_of_two_programs_are_two_series_and_the_check_passes() {
    let dir = temp_dir();
    let db = dir.path().join("h.sqlite3");
    stat_saved(&db, &["true"]);
    stat_saved(&db, &["true"]);
    stat_saved(&db, &["sleep", "0.2"]);
    let out = memscope(&["history", "--db", db.to_str().unwrap(), "--check"])
        .args(["--json", "-"])
        .assert()
        .success();
    let checks: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    // The latest run is `sleep 0.2`: no earlier run of it, nothing set against `true`.
    assert_eq!(checks[0]["identity"], "stat -- sleep 0.2", "{checks}");
    assert_eq!(checks[0]["earlier_runs"].as_array().unwrap().len(), 0);
    let listed = memscope(&["history", "--db", db.to_str().unwrap(), "--json", "-"])
        .assert()
        .success();
    let runs: Value = serde_json::from_slice(&listed.get_output().stdout).unwrap();
    let identities: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["identity"].as_str().unwrap())
        .collect();
    assert_eq!(
        identities,
        ["stat -- true", "stat -- true", "stat -- sleep 0.2"]
    );
}

#[test]
fn a_report_added_twice_is_stored_once() {
    let (_, a) = measured();
    let dir = temp_dir();
    let db = dir.path().join("h.sqlite3");
    let db = db.to_str().unwrap();
    memscope(&["history", "--db", db, "--add", a.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("Added"));
    memscope(&["history", "--db", db, "--add", a.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("Skipped").and(predicate::str::contains("holds it")));
    let out = memscope(&["history", "--db", db, "--json", "-"])
        .assert()
        .success();
    let runs: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1);
    // The run saved by the measurement itself is the same report: not added again.
    let report = latency_report();
    memscope(&["history", "--add", a.to_str().unwrap()])
        .env("MEMSCOPE_HISTORY", &report.history)
        .assert()
        .success()
        .stdout(predicate::str::contains("Skipped"));
}

#[test]
fn a_run_and_a_footprint_share_no_figure_and_are_refused() {
    let (_, a) = measured();
    let dir = temp_dir();
    let footprint = dir.path().join("footprint.json");
    memscope(&["footprint", "/bin/true", "--json"])
        .arg(&footprint)
        .assert()
        .success();
    memscope(&["compare", a.to_str().unwrap(), footprint.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("share none")
                .and(predicate::str::contains(footprint.to_str().unwrap())),
        );
}

#[test]
fn settings_that_differ_are_named_and_disturbed_runs_marked() {
    let quick = edited("settings-a.json", 1.0, 0, |_| {});
    let other = edited("settings-b.json", 1.0, 60, |r| {
        r["settings"]["quick"] = (!r["settings"]["quick"].as_bool().unwrap()).into();
        r["settings"]["repetitions"] = 99.into();
        r["conditions"] = serde_json::json!([{
            "experiment": "latency", "elapsed_s": 1.0, "other_runnable_mean": 2.0,
            "other_runnable_max": 3.0, "samples": 10, "tasks": ["cc1"], "steal_pct": null,
            "disturbed": true
        }]);
    });
    let c = compare_json(&[&quick, &other]);
    let what = differences(&c);
    assert!(
        what.contains(&"quick") && what.contains(&"repetitions"),
        "{what:?}"
    );
    assert_eq!(c["comparison"]["runs"][1]["disturbed"][0], "latency");
    let text = memscope(&["compare", quick.to_str().unwrap(), other.to_str().unwrap()])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&text.get_output().stdout).to_string();
    assert!(text.contains("What differs"), "{text}");
    assert!(text.contains("B *"), "{text}");
}
