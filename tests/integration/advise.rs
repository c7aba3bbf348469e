//! `memscope advise` through the real binary, on the demonstration program built with it:
//! a TLB-bound mode gains from huge pages (by design, on any machine with transparent
//! huge pages), every output is written, a program that cannot start is named, bad
//! input is exit 2, a second advise beside a first is refused. Nothing here asserts a speed beyond the planted one; the other modes'
//! classifications are measured by scripts/advise-benchmark.

use serde_json::Value;

use crate::util::{exclusive, memscope, read_json, temp_dir, text};

const DEMO: &str = env!("CARGO_BIN_EXE_memscope-advise-demo");

fn finding<'a>(report: &'a Value, resource: &str) -> &'a Value {
    report["advise"]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["resource"] == resource)
        .unwrap_or_else(|| panic!("no {resource} finding: {report}"))
}

#[test]
fn a_tlb_bound_program_gains_from_huge_pages_and_every_output_is_written() {
    let _one = exclusive();
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if thp.contains("[never]") || thp.is_empty() {
        eprintln!("skipped: transparent huge pages are off here");
        return;
    }
    let dir = temp_dir();
    let (json, csv) = (dir.path().join("a.json"), dir.path().join("a.csv"));
    // Only the huge-page arms (no co-runner): 8 blocks of three short runs.
    let out = memscope(&[
        "advise",
        "--only",
        "tlb",
        "--runs",
        "8",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--",
        DEMO,
        "tlb",
        "--scale",
        "0.3",
    ])
    .env("COLUMNS", "160")
    .assert()
    .success()
    .get_output()
    .clone();
    let stdout = text(&out.stdout);
    // The verdict comes first; the demo's own output is kept out of memscope's.
    assert!(stdout.contains("Verdict"), "{stdout}");
    assert!(!stdout.contains("tlb:"), "{stdout}");
    let report = read_json(&json);
    // The planted gain: huge pages under its walk make it faster. A run now and then pays
    // for compacting memory into huge pages, so the test asks the medians and the
    // estimate, not the significance.
    let tlb = finding(&report, "tlb");
    assert!(tlb["change_pct"].as_f64().unwrap() < 0.0, "{tlb}");
    assert_ne!(tlb["sensitivity"], "not-measured", "{tlb}");
    let arms = report["advise"]["arms"].as_array().unwrap();
    let median = |kind: &str| {
        let arm = arms
            .iter()
            .find(|a| a["kind"] == kind && a["stage"] == 1)
            .unwrap();
        arm["time"]["summary"]["median"].as_f64().unwrap()
    };
    assert!(median("huge-all") < median("alone"), "{arms:?}");
    // What was not asked for is said so; every screening arm ran 8 times.
    assert!(finding(&report, "cache")["summary"]
        .as_str()
        .unwrap()
        .contains("--only"));
    assert!(arms
        .iter()
        .filter(|a| a["stage"] == 1)
        .all(|a| a["runs"].as_array().unwrap().len() == 8));
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(
        csv.contains("advise.arms") && csv.contains("advise.runs"),
        "{csv}"
    );
    // Two advise reports compare (before and after a change): here the same one.
    let same = memscope(&["compare", json.to_str().unwrap(), json.to_str().unwrap()])
        .env("COLUMNS", "160")
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = text(&same.stdout);
    assert!(stdout.contains("time alone"), "{stdout}");
}

#[test]
fn a_program_that_cannot_start_and_bad_flags_are_named() {
    let _one = exclusive();
    let out = memscope(&["advise", "--", "memscope-no-such-program"])
        .assert()
        .code(127)
        .get_output()
        .clone();
    assert!(text(&out.stderr).contains("memscope-no-such-program"));
    for (args, names) in [
        (vec!["advise", "--runs", "1", "--", "true"], "--runs"),
        (
            vec!["advise", "--time-limit", "3", "--", "true"],
            "--time-limit",
        ),
        (vec!["advise", "--cpu", "9999", "--", "true"], "9999"),
        (vec!["advise", "--effect", "-2", "--", "true"], "--effect"),
        (vec!["advise", "--only", "disk", "--", "true"], "--only"),
        (
            vec!["advise", "--weights", "3:0", "--", "true"],
            "--weights",
        ),
        // Refused before anything is written, whatever the machine.
        (
            vec![
                "advise",
                "--weights",
                "3:1",
                "--only",
                "cache",
                "--",
                "true",
            ],
            "placement",
        ),
    ] {
        let out = memscope(&args).assert().code(2).get_output().clone();
        let stderr = text(&out.stderr);
        assert!(stderr.contains(names), "{args:?}: {stderr}");
    }
}

#[test]
fn ctrl_c_reports_what_was_measured_and_exits_130() {
    let _one = exclusive();
    let dir = temp_dir();
    let json = dir.path().join("a.json");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_memscope"))
        .args(["advise", "--only", "tlb", "--runs", "100", "--json"])
        .arg(&json)
        .args(["--", "sleep", "0.3"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Ctrl-C on a terminal reaches the program memscope runs, which dies of it; memscope
    // (ignoring SIGINT while a program runs, as `time` does) stops there and reports.
    // Wait for a run of a measured block (after the first run, the recorded run and the
    // warm-up block, about 2 s), then interrupt that program.
    std::thread::sleep(std::time::Duration::from_secs(4));
    // A second advise meanwhile is refused, naming the first.
    let second = memscope(&["advise", "--", "true"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let said = text(&second.stderr);
    assert!(
        said.contains("another memscope advise is running")
            && said.contains(&child.id().to_string()),
        "{said}"
    );
    // A `sleep` found near its end may exit on its own before the signal lands; then
    // memscope goes on to its next run, whose `sleep` is signalled in turn.
    let status = (0..20)
        .find_map(|_| {
            let pid = running_sleep(child.id())?;
            // SAFETY: signalling memscope's child, which it has not reaped yet.
            unsafe { libc::kill(pid, libc::SIGINT) };
            (0..100).find_map(|_| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                child.try_wait().unwrap()
            })
        })
        .expect("memscope stops after its program is interrupted");
    assert_eq!(status.code(), Some(130), "{status:?}");
    let report = read_json(&json);
    assert_eq!(report["advise"]["stop"], "interrupted", "{report}");
    assert!(report["advise"]["blocks"].as_u64().unwrap() >= 1);
}

/// The `sleep` memscope (pid `parent`) runs now, not the init of its run's PID
/// namespace (a fork of memscope); polled for up to 2 s.
fn running_sleep(parent: u32) -> Option<libc::pid_t> {
    let children = format!("/proc/{parent}/task/{parent}/children");
    (0..200).find_map(|_| {
        let pids = std::fs::read_to_string(&children).unwrap_or_default();
        let pid = pids.split_whitespace().find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "sleep")
        });
        if pid.is_none() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        pid.and_then(|p| p.parse().ok())
    })
}
