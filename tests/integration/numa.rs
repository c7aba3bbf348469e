//! `memscope numa` through the real binary: `--nodes` values refused with exit 2 before
//! anything runs, and this machine's matrix with its rows, columns and memory columns.

use predicates::prelude::*;

use crate::util::{exclusive, json_of, memscope_line as memscope};

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
