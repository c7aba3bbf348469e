//! `memscope interleave`: bad flags are named (exit 2) wherever it runs, and a machine
//! with one memory node (as the test VM) gets a clear "not applicable" message, also
//! exit 2, without measuring anything.

use crate::util::{memscope_line, text};

/// Runs `line`, expects exit 2 and returns stderr (one line, no panic).
fn usage_error(line: &str) -> String {
    let output = memscope_line(line).assert().code(2).get_output().clone();
    let stderr = text(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one-line error: {stderr}");
    assert!(
        output.stdout.is_empty(),
        "nothing measured: {}",
        text(&output.stdout)
    );
    stderr
}

#[test]
fn bad_ratios_and_nodes_exit_2_naming_the_value() {
    for (line, names) in [
        ("interleave --ratios 4:1,0:0", "'0:0' for --ratios"),
        ("interleave --ratios 300:1", "each 0 to 255"),
        ("interleave --ratios fast", "LOCAL:FAR"),
        ("interleave --nodes 0,x", "'x' for --nodes"),
        ("interleave --nodes=-1", "'-1' for --nodes"),
    ] {
        let stderr = usage_error(line);
        assert!(stderr.contains(names), "{line}: {stderr}");
    }
}

#[test]
fn one_memory_node_is_not_applicable_with_the_reason() {
    let nodes = std::fs::read_to_string("/sys/devices/system/node/has_memory")
        .unwrap_or_else(|_| "0".to_string());
    let one = nodes.trim().split([',', '-']).count() == 1;
    if !one {
        return eprintln!("skipped: this machine has more than one memory node ({nodes})");
    }
    let stderr = usage_error("interleave --quick");
    for words in [
        "not supported here",
        "this machine has one (node",
        "Weighted interleave and memory tiers need more than one memory node",
    ] {
        assert!(stderr.contains(words), "{words}: {stderr}");
    }
    // The kernel's state is said too: with weights (read only) or without the mode.
    assert!(
        stderr.contains("read only, never written") || stderr.contains("weighted interleave"),
        "{stderr}"
    );
}
