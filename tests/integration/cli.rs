//! Integration tests through the real binary: what holds on any x86_64 Linux machine,
//! never absolute speeds.

use predicates::prelude::*;
use serde_json::Value;

use crate::util::{
    exclusive, json_of, measured_json, memscope_line as memscope, read_count, PoolGuard, FREE_2M,
    POOL_2M,
};

/// Runs a measuring command (one at a time, see `util::exclusive`) that must succeed and
/// write its JSON report to stdout.
#[test]
fn info_json_lists_l1d_and_another_level() {
    let out = memscope("info --json -").assert().success();
    let report = json_of(&out.get_output().stdout);
    assert_eq!(report["schema_version"], 2);
    assert!(!report["run"]["host"].as_str().unwrap().is_empty());
    assert!(report["run"]["started"].as_str().unwrap().ends_with('Z'));
    assert_eq!(report["tool"]["name"], "memscope");
    let machine = &report["machine"];
    assert!(machine["logical_cpus"].as_u64().unwrap() >= 1);
    let caches = machine["caches"].as_array().unwrap();
    let has = |level: u64, kind: &str| {
        caches.iter().any(|c| {
            c["level"] == level && c["kind"] == kind && c["size_bytes"].as_u64().unwrap() > 0
        })
    };
    assert!(has(1, "data"), "{caches:?}");
    assert!(
        caches.iter().any(|c| c["level"].as_u64().unwrap() >= 2),
        "{caches:?}"
    );
    for key in [
        "cpu_model",
        "numa_nodes",
        "thp",
        "page_sizes_bytes",
        "tsc_hz",
        "core_hz_estimate",
        "hypervisor",
    ] {
        assert!(machine.get(key).is_some(), "machine.{key} missing");
    }
}

#[test]
fn info_prints_a_readable_table() {
    memscope("info")
        .assert()
        .success()
        .stdout(predicate::str::contains("Caches").and(predicate::str::contains("L1d")));
}

#[test]
fn info_fits_the_terminal_width_from_columns_or_80_in_a_pipe() {
    let widest = |columns: Option<&str>| -> (usize, usize) {
        let mut command = memscope("info");
        match columns {
            Some(c) => command.env("COLUMNS", c),
            None => command.env_remove("COLUMNS"),
        };
        let out = command.assert().success().get_output().stdout.clone();
        let text = String::from_utf8(out).expect("UTF-8");
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        (widest, text.lines().count())
    };
    // stdout is a pipe here: 80 without COLUMNS.
    for (columns, limit) in [
        (Some("80"), 80),
        (None, 80),
        (Some("50"), 50),
        (Some("x"), 80),
    ] {
        let (widest, lines) = widest(columns);
        assert!(
            widest <= limit,
            "COLUMNS={columns:?}: a line of {widest} characters"
        );
        assert!(lines > 5, "COLUMNS={columns:?}: {lines} lines");
    }
}

#[test]
fn quick_latency_orders_levels_from_l1d_to_dram() {
    let report = measured_json("latency --quick --json -");
    let latency = &report["experiments"]["latency"];
    let points = latency["points"].as_array().unwrap();
    assert!(points.len() >= 20, "at least 4 points per octave");
    for p in points {
        for key in ["bytes", "ns", "cycles", "spread_pct"] {
            assert!(p.get(key).is_some(), "point.{key} missing");
        }
    }
    let levels = latency["levels"].as_array().unwrap();
    let names: Vec<&str> = levels.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names.first(), Some(&"L1d"), "{levels:?}");
    assert_eq!(names.last(), Some(&"DRAM"), "{levels:?}");
    let ns: Vec<f64> = levels
        .iter()
        .map(|l| l["latency_ns"].as_f64().unwrap())
        .collect();
    assert!(
        ns.windows(2).all(|w| w[0] < w[1]),
        "levels in increasing latency: {ns:?}"
    );
    assert!(levels.last().unwrap()["capacity_bytes"].is_null());
    let dram = &latency["dram"];
    let l1 = ns[0];
    assert!(dram["random_ns"].as_f64().unwrap() > l1);
    assert!(dram["page_local_ns"].as_f64().unwrap() > l1);
    assert!(report["settings"]["cpus"].as_array().unwrap().len() == 1);
}

#[test]
fn latency_csv_has_one_row_per_point() {
    let _one_at_a_time = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("lat.csv");
    memscope("latency --quick --max-size 1M --csv")
        .arg(&csv)
        .assert()
        .success();
    let text = std::fs::read_to_string(&csv).unwrap();
    // The points come first; the stability tables follow after a blank line.
    let points = text.split("\n\n").next().unwrap();
    let mut lines = points.lines();
    assert_eq!(lines.next(), Some("# latency.points"));
    assert!(lines
        .next()
        .unwrap()
        .starts_with("bytes,order,ns,cycles,spread_pct"));
    // 4 KiB .. 1 MiB at 4 points per octave.
    assert_eq!(lines.count(), 8 * 4 + 1);
    assert!(text.contains("\n# stability.conditions\n"), "{text}");
}

fn fails_with_usage_error(line: &str, names: &str) {
    let assert = memscope(line).assert().code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(
        stderr.contains(names),
        "stderr should name '{names}': {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one-line error: {stderr}");
}

#[test]
fn bad_values_exit_2_naming_the_value() {
    fails_with_usage_error("latency --max-size 12Q", "'12Q'");
    fails_with_usage_error("latency --cpu 4096", "4096");
    fails_with_usage_error("latency --cpu abc", "abc");
    fails_with_usage_error("latency --max-size 1000T", "1000 TiB");
    fails_with_usage_error("latency --pages 3m", "'3m'");
    fails_with_usage_error("latency --repetitions 0", "'0'");
    fails_with_usage_error("latency --order sideways", "'sideways'");
    fails_with_usage_error(
        "latency --json /nonexistent-dir/out.json",
        "/nonexistent-dir/out.json",
    );
    // Only the last part of --out is made: a missing parent is refused.
    fails_with_usage_error("run --out /nonexistent-dir/new", "/nonexistent-dir/new");
    fails_with_usage_error("latency --cpu 0-1", "expected one CPU number");
    fails_with_usage_error("latency --cpu 0,1", "not a list");
    fails_with_usage_error("bandwidth --threads 0", "'0'");
    fails_with_usage_error("bandwidth --threads 1,999", "'999'");
    fails_with_usage_error("bandwidth --threads two", "'two'");
    fails_with_usage_error("bandwidth --isa avx9000", "'avx9000'");
    fails_with_usage_error("bandwidth --kernels read,teleport", "'teleport'");
    fails_with_usage_error("bandwidth --sizes 1Q", "'1Q'");
    fails_with_usage_error("bandwidth --sizes 1K", "--sizes 1 KiB");
    fails_with_usage_error("loaded --mix read,3:1", "'3:1'");
    fails_with_usage_error("loaded --delays 0,-5", "'-5'");
    fails_with_usage_error("loaded --threads 999", "'999'");
    fails_with_usage_error("mlp --max-chains 65", "'65'");
    fails_with_usage_error("mlp --grid-max 1Z", "'1Z'");
    fails_with_usage_error("mlp --sizes 1K", "--sizes 1 KiB");
    fails_with_usage_error("rob --fillers nop,mul", "'mul'");
    fails_with_usage_error("rob --max-k 0", "'0'");
    fails_with_usage_error("stat -e cycels -- true", "'cycels'");
    fails_with_usage_error("stat -e {cycles -- true", "{cycles");
    fails_with_usage_error("stat -e cpu/umask=1/ -- true", "event=0xNN");
    fails_with_usage_error("stat --repeat 0 -- true", "'0'");
}

#[test]
fn run_out_refuses_a_dangling_link_where_the_directory_would_be_made() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("reports");
    std::os::unix::fs::symlink(dir.path().join("elsewhere"), &link).unwrap();
    let assert = memscope("run --quick --out").arg(&link).assert().code(2);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(stderr.contains("not a directory has that name"), "{stderr}");
    assert!(
        !dir.path().join("elsewhere").exists(),
        "made through the link"
    );
}

#[test]
fn a_failed_run_leaves_no_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    memscope("latency --max-size 12Q --json")
        .arg(&json)
        .assert()
        .code(2);
    // Not at `json`, nor anywhere else.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn run_writes_json_and_an_html_report_with_an_svg_plot() {
    let _one_at_a_time = exclusive();
    let parent = tempfile::tempdir().unwrap();
    // --out names a directory not made yet: run makes it. The file reads have tests of
    // their own (files.rs); here they would write 81 MiB into the working directory.
    let dir = parent.path().join("reports");
    memscope("run --quick --no-files --max-size 8M --out")
        .arg(&dir)
        .assert()
        .success()
        .stdout(predicate::str::contains("L1d"));
    let html = std::fs::read_to_string(dir.join("memscope-report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("</html>"));
    let report = json_of(&std::fs::read(dir.join("memscope-report.json")).unwrap());
    assert_eq!(report["settings"]["command"], "run");
    assert!(
        report["experiments"]["latency"]["levels"]
            .as_array()
            .unwrap()
            .len()
            >= 2
    );
    // Only the two reports: no temporary files left behind.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);

    // The cache-miss-impact table: every footprint with every pattern.
    assert!(html.contains("<section id=\"miss-impact\">"));
    let rows = report["experiments"]["miss_impact"]["rows"]
        .as_array()
        .expect("run measures the miss impact");
    assert!(rows.len() >= 6 && rows.len().is_multiple_of(3), "{rows:?}");
    let ns = |level: &str, pattern: &str| {
        rows.iter()
            .find(|r| r["level"] == level && r["pattern"] == pattern)
            .and_then(|r| r["ns_per_access"].as_f64())
            .unwrap_or_else(|| panic!("{level} {pattern}"))
    };
    let largest = rows.last().unwrap()["level"].as_str().unwrap();
    // Dependent loads wait for each other; the same loads made independently overlap.
    assert!(ns(largest, "random") > ns(largest, "random-independent"));
    assert!(ns(largest, "random") > ns("L1d", "random"));
    for row in rows {
        assert!(row["run_time_ns"].as_f64().unwrap() > 0.0, "{row}");
        // Software events need no PMU: the page faults of the pass are counted.
        assert!(row["page_faults"].is_u64(), "{row}");
        assert!(
            row["task_clock_ns"].as_u64().is_some_and(|t| t > 0),
            "{row}"
        );
    }
    if !memscope::counters::Probe::detect().has_hardware_pmu() {
        for row in rows {
            assert!(row["amat_ns"].is_null() && row["llc_miss_rate"].is_null());
            let why = row["amat_not_computed"].as_str().unwrap();
            assert!(why.starts_with("not computed: "), "{why}");
            let llc = row["misses"]["levels"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["level"] == "llc")
                .unwrap();
            let why = llc["not_supported"].as_str().unwrap();
            assert!(why.starts_with("not supported: "), "{why}");
        }
    }
}

#[test]
fn quick_bandwidth_reads_l1d_faster_than_dram() {
    let report = measured_json("bandwidth --quick --kernels read,copy --threads 1,all --json -");
    // Multi-thread trials are timed on a clock every CPU shares, and the settings say which.
    let clock = report["settings"]["team_clock"].as_str().unwrap();
    assert!(
        clock.starts_with("tsc")
            || clock.starts_with("cntvct")
            || clock.starts_with("clock_gettime"),
        "{clock}"
    );
    let rows = report["experiments"]["bandwidth"]["rows"]
        .as_array()
        .unwrap();
    let gbps = |kernel: &str, level: &str| {
        rows.iter()
            .find(|r| r["kernel"] == kernel && r["level"] == level)
            .unwrap_or_else(|| panic!("no {kernel} row at {level}: {rows:?}"))["gb_per_s"]
            .as_f64()
            .unwrap()
    };
    assert!(gbps("read", "L1d") > gbps("read", "DRAM"), "{rows:?}");
    for r in rows {
        for key in [
            "kernel",
            "read_parts",
            "write_parts",
            "nontemporal",
            "isa",
            "threads",
            "bytes_per_thread",
            "level",
            "gb_per_s",
            "bytes_per_cycle",
            "spread_pct",
            "overlap",
            "concurrent",
            "attempts",
        ] {
            assert!(r.get(key).is_some(), "row.{key} missing");
        }
        assert!(r["gb_per_s"].as_f64().unwrap() > 0.0);
        // How much the threads ran together (one thread: how much it was on its CPU); a
        // row is flagged exactly when it stays below 90%.
        let overlap = r["overlap"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&overlap), "{r}");
        assert_eq!(r["concurrent"].as_bool(), Some(overlap >= 0.9), "{r}");
        assert!(r["attempts"].as_u64() >= r["trials"].as_u64(), "{r}");
    }
    let copy = rows.iter().find(|r| r["kernel"] == "copy").unwrap();
    assert_eq!(
        (copy["read_parts"].as_u64(), copy["write_parts"].as_u64()),
        (Some(1), Some(1))
    );
}

#[test]
fn quick_stride_reports_throughput_rows() {
    let report = measured_json("stride --quick --max-size 256K --json -");
    let rows = report["experiments"]["stride"]["rows"].as_array().unwrap();
    assert!(rows
        .iter()
        .any(|r| r["pattern"] == "random" && r["stride_bytes"].is_null()));
    assert!(rows.iter().any(|r| r["kernel"] == "saxpy"));
    for r in rows {
        assert!(
            r["gb_per_s"].as_f64().unwrap() > 0.0 && r["ns_per_access"].as_f64().unwrap() > 0.0
        );
    }
}

/// CPUs this test process may use (the loaded-latency test needs a second one).
fn allowed_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn quick_loaded_latency_gives_every_row_with_its_overlap() {
    if allowed_cpus() < 2 {
        eprintln!("skipped: loaded latency needs a second CPU for its injector");
        return;
    }
    let report = measured_json("loaded --quick --max-size 64M --json -");
    let loaded = &report["experiments"]["loaded"];
    let rows = loaded["rows"].as_array().unwrap();
    assert!(rows.len() >= 4, "{rows:?}");
    for r in rows {
        assert!(r["gb_per_s"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["latency_ns"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["concurrency"].as_f64().unwrap() > 0.0, "{r}");
        // The share of each trial the injectors ran, and the flag that goes with it.
        let overlap = r["injector_overlap"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&overlap), "{r}");
        assert_eq!(
            r["injectors_concurrent"].as_bool(),
            Some(overlap >= 0.9),
            "{r}"
        );
    }
    let delay = |r: &Value| r["delay_cycles"].as_u64().unwrap();
    let full = rows.iter().min_by_key(|r| delay(r)).unwrap();
    let idle = rows.iter().max_by_key(|r| delay(r)).unwrap();
    assert_eq!(delay(full), 0);
    // No latency comparison between rows: they are measured one after another, not
    // interleaved, and a shared host's memory moves between them (delay 0 read 116 ns
    // against 159 ns at the idle end on one such afternoon).
    assert!(delay(idle) > 0);
    assert!(loaded["idle_ns"].as_f64().unwrap() > 0.0);
    assert!(loaded["peak_gb_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn quick_mlp_overlaps_dram_misses_with_four_chains() {
    let report = measured_json("mlp --quick --max-size 128M --json -");
    let mlp = &report["experiments"]["mlp"];
    let rows = mlp["rows"].as_array().unwrap();
    let at = |level: &str, chains: u64| {
        rows.iter()
            .find(|r| r["level"] == level && r["chains"] == chains)
            .unwrap_or_else(|| panic!("{level} × {chains} missing: {rows:?}"))
    };
    let four = at("DRAM", 4);
    // Four chains overlap their misses; on a machine shared with other work (a spread of
    // half the figure or more) only that they overlap at all is asserted.
    let least = if four["spread_pct"].as_f64().unwrap_or(100.0) < 50.0 {
        1.5
    } else {
        1.0
    };
    assert!(
        four["parallelism"].as_f64().unwrap() > least,
        "DRAM with 4 chains: {four}"
    );
    assert_eq!(at("DRAM", 1)["parallelism"].as_f64().unwrap(), 1.0);
    let fit = &mlp["sequential_fit"];
    assert!(fit["m_ns"].as_f64().unwrap() > 0.0, "{fit}");
    assert!(fit["r2"].as_f64().unwrap() <= 1.0);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn quick_rob_reports_a_curve_and_a_structure_per_filler() {
    let report = measured_json(
        "rob --quick --fillers nop,store --max-k 128 --no-serialized --max-size 64M --json -",
    );
    let rob = &report["experiments"]["rob"];
    for filler in ["nop", "store"] {
        let rows: Vec<&Value> = rob["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["filler"] == filler)
            .collect();
        assert!(rows.len() >= 4, "{filler}: {rows:?}");
        assert!(rows
            .iter()
            .all(|r| r["ns_per_iter"].as_f64().unwrap() > 0.0));
        assert!(rob["structures"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["filler"] == filler));
    }
}

#[test]
fn hugepage_reservation_is_given_back_after_a_failure_and_after_a_run() {
    // The pool held against every other test that uses it, and set back if this fails.
    let Some(pool) = PoolGuard::take() else {
        return;
    };
    let before = pool.before;
    let pool_2m = || read_count(POOL_2M);
    // A failure in the middle of the run, after the pool was grown.
    let failed = memscope("latency --quick --pages 2m --reserve-hugepages --max-size 8M")
        .env("MEMSCOPE_SIMULATE_FAILURE", "after-reservation")
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&failed.get_output().stderr).to_string();
    assert!(stderr.contains("simulated failure"), "{stderr}");
    assert_eq!(pool_2m(), Some(before), "pool not restored after a failure");
    // A whole run on reserved pages, then the pool as it was.
    let out = memscope("latency --quick --pages 2m --reserve-hugepages --max-size 8M --json -")
        .assert()
        .success();
    let report = json_of(&out.get_output().stdout);
    assert_eq!(report["settings"]["pages_obtained"]["page_bytes"], 2 << 20);
    assert_eq!(pool_2m(), Some(before), "pool not restored after a run");
}

#[test]
fn hugetlbfs_pages_without_a_pool_are_a_clear_error() {
    // No other test may grow the pool (and free pages) meanwhile.
    let Some(_pool) = PoolGuard::lock() else {
        return;
    };
    if read_count(FREE_2M).unwrap_or(0) >= 8 {
        eprintln!("skipped: the 2 MiB pool already has free pages");
        return;
    }
    fails_with_usage_error(
        "latency --quick --pages 2m --max-size 8M",
        "--reserve-hugepages",
    );
}

#[test]
fn quick_tlb_with_small_pages_finds_a_knee_and_dearer_accesses_far_out() {
    let report = measured_json("tlb --quick --huge none --json -");
    let tlb = &report["experiments"]["tlb"];
    let levels = tlb["levels"].as_array().unwrap();
    assert!(
        levels
            .iter()
            .any(|l| l["page_bytes"] == 4096 && l["entries"].as_u64().is_some_and(|e| e > 0)),
        "no knee: {levels:?}"
    );
    let rows = tlb["rows"].as_array().unwrap();
    // Without --counters the rows carry no counters at all.
    assert!(rows.iter().all(|r| r.get("counters").is_none()));
    let at = |pages: u64| {
        rows.iter()
            .find(|r| r["page_bytes"] == 4096 && r["pages"] == pages)
            .unwrap_or_else(|| panic!("no row at {pages} pages: {rows:?}"))["ns"]
            .as_f64()
            .unwrap()
    };
    assert!(
        at(1 << 16) > at(16),
        "2^16 pages: {} ns, 16 pages: {} ns",
        at(1 << 16),
        at(16)
    );
}

/// Checks the `counters` of every row of a `--counters` run: the four levels in order,
/// each either counted or saying why; without a hardware PMU, none counted and every one
/// saying why (nothing is guessed).
fn assert_counted_rows(rows: &[Value], what: &str) {
    assert!(!rows.is_empty(), "{what}: no rows");
    let pmu = memscope::counters::Probe::detect().has_hardware_pmu();
    for row in rows {
        let counters = &row["counters"];
        assert!(
            counters["accesses"].as_u64().is_some_and(|n| n > 0),
            "{what}: {row}"
        );
        let levels = counters["levels"].as_array().expect("levels");
        let names: Vec<&str> = levels.iter().filter_map(|l| l["level"].as_str()).collect();
        assert_eq!(names, ["l1", "l2", "llc", "dtlb"], "{what}: {row}");
        for level in levels {
            let why = level["not_supported"].as_str();
            if pmu {
                // Counted, or refused with a reason (e.g. an event this CPU lacks).
                assert_eq!(level["per_access"].is_null(), why.is_some(), "{level}");
            } else {
                assert!(level["per_access"].is_null(), "{what}: {level}");
            }
            if let Some(why) = why {
                assert!(why.starts_with("not supported: "), "{what}: {why}");
            }
        }
    }
}

#[test]
fn latency_counters_give_every_point_its_misses_or_the_reason() {
    let _one_at_a_time = exclusive();
    let out = memscope("latency --quick --counters --max-size 1M --order page-local --json -")
        .assert()
        .success();
    let report = json_of(&out.get_output().stdout);
    let points = report["experiments"]["latency"]["points"]
        .as_array()
        .unwrap();
    assert_counted_rows(points, "latency");
    // The table (on stderr, since the JSON went to stdout) has the miss columns, and each
    // level not counted is explained once under it.
    let tables = String::from_utf8_lossy(&out.get_output().stderr);
    assert!(
        tables.contains("L1 miss") && tables.contains("dTLB miss"),
        "{tables}"
    );
    // Notes wrap at the terminal width: read them with their lines joined.
    let joined = tables.replace("\n ", " ");
    for level in &points[0]["counters"]["levels"].as_array().unwrap()[..] {
        if let (Some(event), Some(why)) = (level["event"].as_str(), level["not_supported"].as_str())
        {
            let note = format!(" ({event}): {why}");
            assert_eq!(joined.matches(&note).count(), 1, "{note}: {tables}");
        }
    }
    // Where both ends were counted: 1 MiB (far past any L1d) misses L1 more per load
    // than 4 KiB (inside every L1d).
    let l1 = |p: &Value| p["counters"]["levels"][0]["per_access"].as_f64();
    if let (Some(small), Some(large)) = (l1(&points[0]), l1(points.last().unwrap())) {
        assert!(
            large > small,
            "L1 misses per load: {small} at 4 KiB, {large} at 1 MiB"
        );
    }
}

#[test]
fn stride_counters_give_every_row_its_misses_or_the_reason() {
    let report = measured_json("stride --quick --counters --max-size 256K --json -");
    let rows = report["experiments"]["stride"]["rows"].as_array().unwrap();
    assert_counted_rows(rows, "stride");
}

#[test]
fn tlb_counters_give_every_row_of_both_curves_its_misses_or_the_reason() {
    let report = measured_json("tlb --quick --counters --json -");
    let rows = report["experiments"]["tlb"]["rows"].as_array().unwrap();
    assert_counted_rows(rows, "tlb");
}

#[test]
fn stat_passes_the_exit_status_through_and_leaves_stdout_to_the_command() {
    let ok = memscope("stat -- echo hello").assert().success();
    assert_eq!(ok.get_output().stdout, b"hello\n");
    let table = String::from_utf8_lossy(&ok.get_output().stderr).into_owned();
    assert!(table.contains("Counters for \"echo hello\""), "{table}");
    assert!(table.contains("task-clock"), "{table}");
    memscope("stat -- true").assert().code(0);
    memscope("stat -- false").assert().code(1);
    memscope("stat sh -c").arg("exit 7").assert().code(7);
    memscope("stat -- sh -c")
        .arg("kill -TERM $$")
        .assert()
        .code(128 + 15);
}

#[test]
fn stat_names_what_it_could_not_count_once_instead_of_a_row_each() {
    let out = memscope("stat -- true")
        .env("COLUMNS", "1000")
        .assert()
        .success();
    let table = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    // A row would be " event-name   not supported: …" (only spaces between).
    let rows = table.lines().filter(|l| {
        let mut words = l.split_whitespace();
        words.next().is_some() && words.next() == Some("not") && l.contains("not supported")
    });
    assert_eq!(rows.count(), 0, "{table}");
    let reasons = table
        .lines()
        .filter(|l| l.contains("not supported"))
        .count();
    assert!(reasons <= 4, "{table}");
    // What was counted keeps its row, with thousands separators.
    assert!(table.contains("\n task-clock "), "{table}");
}

#[test]
fn stat_of_a_missing_program_is_a_clear_error() {
    for (line, code, says) in [
        (
            "stat -- /nonexistent",
            127,
            "cannot run '/nonexistent': No such file or directory",
        ),
        (
            "stat -- memscope-no-such-program",
            127,
            "cannot run 'memscope-no-such-program'",
        ),
        ("stat", 2, "COMMAND"),
    ] {
        memscope(line)
            .assert()
            .code(code)
            .stderr(predicate::str::contains(says));
    }
}

#[test]
fn stat_counts_software_events_and_explains_hardware_ones() {
    let out = memscope(
        "stat --repeat 3 --json - -e task-clock,page-faults,{cycles,instructions},r01C4 -- sh -c",
    )
    .arg("i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done")
    .assert()
    .success();
    let report = json_of(&out.get_output().stdout);
    assert_eq!(report["settings"]["command"], "stat");
    let stat = &report["stat"];
    assert_eq!(stat["runs"].as_array().unwrap().len(), 3);
    let events = stat["events"].as_array().unwrap();
    let event = |name: &str| {
        events
            .iter()
            .find(|e| e["event"] == name)
            .unwrap_or_else(|| panic!("{name} in {events:?}"))
    };
    assert!(event("task-clock")["count"]["median"].as_f64().unwrap() > 0.0);
    assert!(event("page-faults")["count"]["median"].as_f64().unwrap() > 0.0);
    assert_eq!(event("page-faults")["count"]["count"], 3);
    let pmu = memscope::counters::Probe::detect().has_hardware_pmu();
    for name in ["cycles", "instructions", "r01C4"] {
        let e = event(name);
        match e["not_supported"].as_str() {
            Some(why) => assert!(
                why.starts_with("not supported: ") && (pmu || why.contains("no hardware PMU")),
                "{why}"
            ),
            None => assert!(pmu, "{name} counted without a PMU: {e}"),
        }
    }
    let ipc = stat["derived"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "IPC")
        .expect("IPC is derived from cycles and instructions");
    assert!(pmu || ipc["not_supported"].as_str().is_some(), "{ipc}");
    let table = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(table.contains("median of 3 runs"), "{table}");
}

#[test]
fn stat_csv_has_event_derived_and_time_rows() {
    let out = memscope("stat --csv - -e task-clock,cycles -- true")
        .assert()
        .success();
    let csv = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("kind,name,unit,median,spread_pct,min,max,multiplexed,running_pct,not_supported")
    );
    for row in [
        "event,task-clock,",
        "event,cycles,",
        "derived,CPUs utilized,",
        "time,elapsed,s,",
    ] {
        assert!(csv.lines().any(|l| l.starts_with(row)), "{row}: {csv}");
    }
}

/// Every command's `--help` ends with its EXAMPLES block (`crates/base/src/examples.rs`): the
/// subcommands are listed from the command-line definition itself, nested ones (`pages
/// record`) included, so a command added later without examples fails here.
#[test]
fn every_subcommand_help_ends_with_examples() {
    use clap::{CommandFactory, Parser};

    fn paths(command: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for sub in command.get_subcommands() {
            if sub.get_name() == "help" {
                continue;
            }
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_owned());
            paths(sub, &path, out);
            out.push(path);
        }
    }
    let mut all = Vec::new();
    paths(&memscope::commands::Cli::command(), &[], &mut all);
    assert!(all.len() >= 19, "{all:?}");
    all.push(Vec::new()); // `memscope --help`: the default command's (run's) examples
    for path in all {
        let line = format!("{} --help", path.join(" "));
        // At 80 columns (clap wraps help to the terminal), examples stay whole lines.
        let out = memscope(line.trim())
            .env("COLUMNS", "80")
            .assert()
            .success();
        let help = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        let examples = help
            .find("EXAMPLES:")
            .unwrap_or_else(|| panic!("`memscope {line}` has no EXAMPLES block:\n{help}"));
        let block = &help[examples..];
        // Each example is a command line (continued by a trailing backslash) that clap
        // accepts: an example that no longer parses fails here.
        let joined = block.replace("\\\n", " ");
        let commands: Vec<&str> = joined
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("memscope"))
            .collect();
        assert!(
            !commands.is_empty(),
            "`memscope {line}`: no example command line in\n{block}"
        );
        for example in commands {
            let words = shlex::split(example).expect("an example is a valid shell line");
            if let Err(e) = memscope::commands::Cli::try_parse_from(&words) {
                panic!("`memscope {line}`: the example `{example}` does not parse: {e}");
            }
        }
        assert!(
            !block
                .lines()
                .skip(1)
                .any(|l| l.ends_with(':') && !l.starts_with(' ')),
            "`memscope {line}`: the EXAMPLES block is not the last one:\n{block}"
        );
    }
}
