//! NUMA nodes from /sys/devices/system/node: each node's CPUs, memory, distance row, the
//! firmware's HMAT access figures, its memory tier and what kind of memory it holds
//! (`tiers`). Kernels built without NUMA, and containers that hide the node directory,
//! get one synthetic node 0 holding every CPU and all memory, so callers never handle "no
//! nodes". Everything is read under a sysfs root (`detect_numa_at`) so that tests can
//! describe machines this one is not: two sockets with CXL, HBM, sub-NUMA clustering.

use std::path::Path;

use super::cpu::parse_cpu_list;
use super::memory::parse_meminfo_field;
use super::tiers::{self, HmatAccess, MemoryTier, RegionTargets};
use super::{read_small, read_trimmed, NumaNode};

/// The distance the kernel assigns a node to itself.
const LOCAL_DISTANCE: u32 = 10;

/// Node number from a directory name such as "node3".
fn parse_node_dir_name(name: &str) -> Option<usize> {
    tiers::numbered(name, "node")
}

/// A distance row ("10 21 21"); words that are not numbers are skipped.
pub fn parse_distances(text: &str) -> Vec<u32> {
    text.split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// What `detect_numa_at` needs besides the sysfs root: the online CPUs and /proc/meminfo's
/// totals (only for the synthetic single node used when sysfs has none), the CPU model
/// (for the HBM rule) and the kernel's memory tiers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NumaContext<'a> {
    pub online_cpus: &'a [usize],
    pub mem_total: u64,
    pub mem_free: u64,
    pub cpu_model: &'a str,
    pub tiers: &'a [MemoryTier],
}

/// The machine's NUMA nodes, ordered by id (see `detect_numa_at`).
pub(crate) fn detect_numa(context: NumaContext) -> Vec<NumaNode> {
    detect_numa_at(Path::new("/sys"), context)
}

/// The NUMA nodes under the sysfs root `sys`, ordered by id, each with its HMAT access
/// classes, tier and kind.
pub(crate) fn detect_numa_at(sys: &Path, context: NumaContext) -> Vec<NumaNode> {
    let root = sys.join("devices/system/node");
    let mut nodes: Vec<NumaNode> = std::fs::read_dir(&root)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| {
                    let id = parse_node_dir_name(entry.file_name().to_str()?)?;
                    let dir = entry.path();
                    let meminfo = read_small(dir.join("meminfo")).unwrap_or_default();
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
                        hmat: HmatAccess::read_at(&dir, 0),
                        hmat_cpu: HmatAccess::read_at(&dir, 1),
                        ..NumaNode::default()
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if nodes.is_empty() {
        nodes.push(NumaNode {
            id: 0,
            cpus: context.online_cpus.to_vec(),
            memory_total_bytes: context.mem_total,
            memory_free_bytes: context.mem_free,
            distances: vec![LOCAL_DISTANCE],
            ..NumaNode::default()
        });
    }
    nodes.sort_by_key(|n| n.id);
    for node in &mut nodes {
        node.tier = (context.tiers.iter())
            .find(|t| t.nodes.contains(&node.id))
            .map(|t| t.id);
    }
    tiers::classify(&mut nodes, &RegionTargets::read_at(sys), context.cpu_model);
    nodes
}

#[cfg(test)]
mod scenario_tests;

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
        let nodes = detect_numa(NumaContext {
            online_cpus: &[0],
            mem_total: 1 << 30,
            mem_free: 1 << 29,
            cpu_model: "",
            tiers: &[],
        });
        assert!(!nodes.is_empty());
        assert!(nodes.windows(2).all(|w| w[0].id < w[1].id));
    }
}
