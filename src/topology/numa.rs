//! NUMA nodes from /sys/devices/system/node: each node's CPUs, memory and distance row.
//! Kernels built without NUMA, and containers that hide the node directory, get one
//! synthetic node 0 holding every CPU and all memory, so callers never handle "no nodes".

use super::cpu::parse_cpu_list;
use super::memory::parse_meminfo_field;
use super::{read_trimmed, NumaNode};

const NODE_SYSFS: &str = "/sys/devices/system/node";

/// The distance the kernel assigns a node to itself.
const LOCAL_DISTANCE: u32 = 10;

/// Node number from a directory name such as "node3".
fn parse_node_dir_name(name: &str) -> Option<usize> {
    let digits = name.strip_prefix("node")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A distance row ("10 21 21"); words that are not numbers are skipped.
pub fn parse_distances(text: &str) -> Vec<u32> {
    text.split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// The machine's NUMA nodes, ordered by id. `online_cpus`, `mem_total` and `mem_free` only
/// feed the synthetic single node used when sysfs has none.
pub fn detect_numa(online_cpus: &[usize], mem_total: u64, mem_free: u64) -> Vec<NumaNode> {
    let mut nodes: Vec<NumaNode> = std::fs::read_dir(NODE_SYSFS)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| {
                    let id = parse_node_dir_name(entry.file_name().to_str()?)?;
                    let dir = entry.path();
                    let meminfo = std::fs::read_to_string(dir.join("meminfo")).unwrap_or_default();
                    Some(NumaNode {
                        id,
                        cpus: read_trimmed(dir.join("cpulist"))
                            .and_then(|s| parse_cpu_list(&s).ok())
                            .unwrap_or_default(),
                        memory_total_bytes: parse_meminfo_field(&meminfo, "MemTotal").unwrap_or(0),
                        memory_free_bytes: parse_meminfo_field(&meminfo, "MemFree").unwrap_or(0),
                        distances: read_trimmed(dir.join("distance"))
                            .map(|s| parse_distances(&s))
                            .unwrap_or_default(),
                        ..NumaNode::default()
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if nodes.is_empty() {
        nodes.push(NumaNode {
            id: 0,
            cpus: online_cpus.to_vec(),
            memory_total_bytes: mem_total,
            memory_free_bytes: mem_free,
            distances: vec![LOCAL_DISTANCE],
            ..NumaNode::default()
        });
    }
    nodes.sort_by_key(|n| n.id);
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_dir_names_and_distances_parse() {
        assert_eq!(parse_node_dir_name("node0"), Some(0));
        assert_eq!(parse_node_dir_name("node12"), Some(12));
        assert_eq!(parse_node_dir_name("node"), None);
        assert_eq!(parse_node_dir_name("nodeX"), None);
        assert_eq!(parse_node_dir_name("has_cpu"), None);
        assert_eq!(parse_distances("10 21 21\n"), vec![10, 21, 21]);
        assert_eq!(parse_distances(""), Vec::<u32>::new());
    }

    #[test]
    fn numa_detection_always_yields_a_node() {
        let nodes = detect_numa(&[0], 1 << 30, 1 << 29);
        assert!(!nodes.is_empty());
        assert!(nodes.windows(2).all(|w| w[0].id < w[1].id));
    }
}
