//! `memscope numa` through the real binary: `--nodes` values refused with exit 2 before
//! anything runs, and this machine's matrix with its rows, columns and memory columns;
//! `--membind` of `bandwidth` and `loaded`.

use predicates::prelude::*;

use crate::util::{exclusive, json_of, measured_json, memscope_line as memscope};

#[test]
fn bad_nodes_are_refused_naming_the_value() {
    memscope("numa --nodes two")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("'two'").and(predicate::str::contains("--nodes")));
    // A node this machine does not have: the error names it and the nodes there are.
    memscope("numa --nodes 4000").assert().code(2).stderr(
        predicate::str::contains("'4000'")
            .and(predicate::str::contains("NUMA nodes of this machine")),
    );
    memscope("numa --nodes ,")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--nodes"));
}

#[test]
fn the_matrix_has_rows_columns_and_a_memory_column_each() {
    let _one_at_a_time = exclusive();
    let out = memscope("numa --quick --max-size 16M --repetitions 3 --json -")
        .assert()
        .success();
    let report = json_of(&out.get_output().stdout);
    let numa = &report["experiments"]["numa"];
    let ids = |key: &str| -> Vec<u64> {
        numa[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    let (rows, columns) = (ids("rows"), ids("columns"));
    assert!(!rows.is_empty() && !columns.is_empty(), "{numa}");
    let latency = numa["latency_ns"].as_array().unwrap();
    assert_eq!(latency.len(), rows.len());
    assert!(latency
        .iter()
        .all(|row| row.as_array().unwrap().len() == columns.len()));
    let memory = numa["memory"].as_array().unwrap();
    let nodes: Vec<u64> = memory.iter().map(|c| c["node"].as_u64().unwrap()).collect();
    assert_eq!(nodes, columns);
    if rows == [0] && columns == [0] {
        // One node: the note says there is nothing remote, and no firmware cells.
        assert!(numa["note"].as_str().unwrap().contains("nothing remote"));
        assert_eq!(memory[0]["kind"], "dram");
    }
}

#[test]
fn membind_binds_bandwidth_and_loaded_buffers_and_refuses_a_node_without_memory() {
    // A node that does not exist: a usage error naming the nodes that would do.
    for command in ["bandwidth", "loaded"] {
        memscope(&format!("{command} --quick --membind 4000"))
            .assert()
            .code(2)
            .stderr(
                predicate::str::contains("'4000' for --membind")
                    .and(predicate::str::contains("a NUMA node with memory")),
            );
    }
    // Node 0 exists everywhere NUMA does: the result records it and where pages landed.
    let report = measured_json(
        "bandwidth --quick --kernels read --threads 1 --sizes 64K --membind 0 --json -",
    );
    let binding = &report["experiments"]["bandwidth"]["membind"];
    assert_eq!(binding["node"], 0, "{binding}");
    if let Some(share) = binding["placement"].as_f64() {
        assert_eq!(share, 1.0, "{binding}");
    }
    // Without the flag nothing is recorded (the output is as it was).
    let report = measured_json("bandwidth --quick --kernels read --threads 1 --sizes 64K --json -");
    assert!(report["experiments"]["bandwidth"].get("membind").is_none());
    assert!(report["experiments"]["bandwidth"].get("ladder").is_none());
}

#[test]
fn numa_on_one_node_is_a_one_by_one_matrix_with_a_note() {
    let nodes = std::fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("node"))
                .count()
        })
        .unwrap_or(1);
    let report = measured_json("numa --quick --json -");
    let numa = &report["experiments"]["numa"];
    let latency = numa["latency_ns"].as_array().unwrap();
    let bandwidth = numa["read_gb_per_s"].as_array().unwrap();
    assert_eq!(latency.len(), bandwidth.len());
    assert!(latency
        .iter()
        .all(|row| row.as_array().unwrap().len() == latency.len()));
    assert!(latency[0][0].as_f64().unwrap() > 0.0 && bandwidth[0][0].as_f64().unwrap() > 0.0);
    let overlap = numa["read_overlap"][0][0].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&overlap), "{numa}");
    if nodes <= 1 {
        assert_eq!(latency.len(), 1);
        assert!(
            numa["note"].as_str().is_some_and(|n| !n.is_empty()),
            "{numa}"
        );
        assert!(numa["remote_local_latency_ratio"].is_null());
    }
}
