//! Which nodes the NUMA matrix measures: the rows (nodes with CPUs this process may use),
//! the columns (nodes with memory it may use), the CPUs each row's threads take, the row
//! that touches each column's buffers, and why a selected node is only a row, only a
//! column, or left out.

use super::{NodeThreads, NumaConfig};
use crate::error::UsageError;
use crate::topology::cpu::format_cpu_list;
use crate::topology::Machine;

/// A row of the matrix: a node whose CPUs run the measuring threads.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RowNode {
    pub id: usize,
    /// Position in `machine.numa_nodes` (and in its distance rows).
    pub index: usize,
    /// The node's CPUs this process may use, in the order they are used.
    pub cpus: Vec<usize>,
}

/// A column of the matrix: a node whose memory is measured.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ColumnNode {
    pub id: usize,
    /// Position in `machine.numa_nodes`.
    pub index: usize,
    /// Position in the rows of the row whose thread maps and first touches the column's
    /// buffers: the node's own row, else the row nearest to it.
    pub toucher: usize,
}

/// The rows and columns that can be measured, the threads per row, and what the note
/// says about the selection (nodes left out, rows or columns only).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Matrix {
    pub rows: Vec<RowNode>,
    pub columns: Vec<ColumnNode>,
    pub threads: usize,
    pub notes: Vec<String>,
}

/// Resolves the configured nodes against the machine: each must exist; a node with CPUs
/// this process may use is a row, one with memory (among `with_memory` when known:
/// `numa_policy::memory_nodes`) a column; there must be at least one of each.
pub(super) fn resolve(
    config: &NumaConfig,
    machine: &Machine,
    with_memory: Option<&[usize]>,
) -> Result<Matrix, UsageError> {
    let selected = selected_nodes(config, machine)?;
    let mut rows = Vec::new();
    let mut memory = Vec::new();
    let mut notes = Vec::new();
    for &index in &selected {
        let (row, has_memory) = role(machine, index, with_memory, &mut notes);
        rows.extend(row);
        if has_memory {
            memory.push(index);
        }
    }
    let asked = format_cpu_list(&config.nodes);
    let why = || {
        if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join("; "))
        }
    };
    if rows.is_empty() {
        return Err(UsageError::InvalidValue {
            flag: "--nodes",
            value: asked,
            expected: format!(
                "NUMA nodes among which at least one has CPUs this process may use, to run the \
                 measuring threads{}",
                why()
            ),
        });
    }
    if memory.is_empty() {
        return Err(UsageError::InvalidValue {
            flag: "--nodes",
            value: asked,
            expected: format!(
                "NUMA nodes among which at least one has memory this process may use{}",
                why()
            ),
        });
    }
    let columns = memory
        .into_iter()
        .map(|index| ColumnNode {
            id: machine.numa_nodes[index].id,
            index,
            toucher: nearest_row(&rows, index, machine),
        })
        .collect();

    let threads = threads_per_row(config.threads_per_node, &rows)?;
    Ok(Matrix {
        rows,
        columns,
        threads,
        notes,
    })
}

/// The indices of the nodes `--nodes` selects, once each, in the machine's order; each
/// must exist.
fn selected_nodes(config: &NumaConfig, machine: &Machine) -> Result<Vec<usize>, UsageError> {
    let known: Vec<usize> = machine.numa_nodes.iter().map(|n| n.id).collect();
    if let Some(id) = config.nodes.iter().find(|id| !known.contains(id)) {
        return Err(UsageError::InvalidValue {
            flag: "--nodes",
            value: id.to_string(),
            expected: format!("NUMA nodes of this machine: {}", format_cpu_list(&known)),
        });
    }
    Ok((machine.numa_nodes.iter().enumerate())
        .filter(|(_, node)| config.nodes.contains(&node.id))
        .map(|(index, _)| index)
        .collect())
}

/// What the node at `index` can be: a row where it has CPUs this process may use, a
/// column where it has memory it may use; what it cannot be, noted.
fn role(
    machine: &Machine,
    index: usize,
    with_memory: Option<&[usize]>,
    notes: &mut Vec<String>,
) -> (Option<RowNode>, bool) {
    let node = &machine.numa_nodes[index];
    let id = node.id;
    let allowed: Vec<usize> = (node.cpus.iter().copied())
        .filter(|c| machine.allowed_cpus.contains(c))
        .collect();
    let has_memory =
        node.memory_total_bytes > 0 && with_memory.is_none_or(|usable| usable.contains(&id));
    match (allowed.is_empty(), has_memory) {
        (true, false) => notes.push(format!(
            "node {id} has neither CPUs nor memory this process may use: left out"
        )),
        (false, false) => notes.push(format!(
            "node {id} has no memory this process may use: a row only"
        )),
        // A node with CPUs of its own that this process may not use; a CPU-less node
        // (CXL, HBM) is a column by nature and needs no note.
        (true, true) if !node.cpus.is_empty() => notes.push(format!(
            "node {id} has no CPUs this process may use: a column only"
        )),
        _ => {}
    }
    let row = (!allowed.is_empty()).then(|| RowNode {
        id,
        index,
        cpus: use_order(&allowed, &machine.smt_sibling_groups),
    });
    (row, has_memory)
}

/// The threads each row runs: `--threads`, at most the fewest CPUs of a row.
fn threads_per_row(asked: NodeThreads, rows: &[RowNode]) -> Result<usize, UsageError> {
    let fewest = rows.iter().map(|n| n.cpus.len()).min().unwrap_or(1);
    match asked {
        NodeThreads::All => Ok(fewest),
        NodeThreads::Count(n) if n <= fewest => Ok(n),
        NodeThreads::Count(n) => Err(UsageError::InvalidValue {
            flag: "--threads",
            value: n.to_string(),
            expected: format!(
                "at most {fewest}, the fewest CPUs this process may use on one node, or 'all'"
            ),
        }),
    }
}

/// The row nearest to the memory node at `index`: the node itself when it is a row; else
/// the smallest SLIT distance (ties to an HMAT initiator of the node, then the first row);
/// without distances, the first row that is an HMAT access0 (then access1) initiator; else
/// the first row.
fn nearest_row(rows: &[RowNode], index: usize, machine: &Machine) -> usize {
    let node = &machine.numa_nodes[index];
    if let Some(own) = rows.iter().position(|r| r.index == index) {
        return own;
    }
    let initiator = |row: &RowNode| {
        [&node.hmat, &node.hmat_cpu]
            .into_iter()
            .flatten()
            .any(|access| access.initiators.contains(&row.id))
    };
    let distance = |row: &RowNode| {
        machine.numa_nodes[row.index]
            .distances
            .get(index)
            .copied()
            .filter(|&d| d > 0)
    };
    rows.iter()
        .enumerate()
        .filter_map(|(position, row)| distance(row).map(|d| (d, !initiator(row), position)))
        .min()
        .map(|(_, _, position)| position)
        .or_else(|| rows.iter().position(initiator))
        .unwrap_or(0)
}

/// The order a node's CPUs are used in: the highest first (CPU 0 takes most interrupts),
/// one per core before any SMT sibling, so a few threads get a core each.
fn use_order(cpus: &[usize], sibling_groups: &[Vec<usize>]) -> Vec<usize> {
    let mut first = Vec::new();
    let mut siblings = Vec::new();
    for &cpu in cpus.iter().rev() {
        let core_taken = sibling_groups
            .iter()
            .find(|group| group.contains(&cpu))
            .is_some_and(|group| group.iter().any(|c| first.contains(c)));
        if core_taken {
            siblings.push(cpu);
        } else {
            first.push(cpu);
        }
    }
    first.extend(siblings);
    first
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::topology::tiers::{HmatAccess, MemoryKind};
    use crate::topology::NumaNode;

    const GIB: u64 = 1 << 30;

    /// A node with `cpus`, `memory` bytes and a SLIT row `distances`.
    pub fn node(id: usize, cpus: Vec<usize>, memory: u64, distances: Vec<u32>) -> NumaNode {
        NumaNode {
            id,
            cpus,
            memory_total_bytes: memory,
            memory_free_bytes: memory,
            distances,
            ..NumaNode::default()
        }
    }

    /// HMAT access figures from `initiators`: read latency ns and read bandwidth MB/s.
    pub fn hmat(initiators: Vec<usize>, latency: u64, bandwidth: u64) -> HmatAccess {
        HmatAccess {
            initiators,
            read_latency_ns: Some(latency),
            write_latency_ns: Some(latency + 10),
            read_bandwidth_mb_s: Some(bandwidth),
            write_bandwidth_mb_s: Some(bandwidth / 2),
        }
    }

    fn machine(numa_nodes: Vec<NumaNode>, cpus: usize) -> Machine {
        Machine {
            numa_nodes,
            allowed_cpus: (0..cpus).collect(),
            ..Machine::default()
        }
    }

    pub(crate) fn two_sockets() -> Machine {
        Machine {
            smt_sibling_groups: vec![vec![0, 2], vec![1, 3], vec![4, 6], vec![5, 7]],
            ..machine(
                vec![
                    node(0, vec![0, 1, 2, 3], 16 * GIB, vec![10, 21]),
                    node(1, vec![4, 5, 6, 7], 16 * GIB, vec![10, 21]),
                ],
                8,
            )
        }
    }

    /// Two sockets (nodes 0, 1) and a CXL expander behind each (node 2 on socket 0, node 3
    /// on socket 1), with the SLIT and HMAT a Xeon 6 / EPYC 9005 firmware would give.
    pub fn two_sockets_two_cxl() -> Machine {
        let slit = [
            vec![10, 21, 14, 24],
            vec![21, 10, 24, 14],
            vec![14, 24, 10, 26],
            vec![24, 14, 26, 10],
        ];
        let mut nodes = vec![
            node(0, vec![0, 1, 2, 3], 64 * GIB, slit[0].clone()),
            node(1, vec![4, 5, 6, 7], 64 * GIB, slit[1].clone()),
            node(2, vec![], 128 * GIB, slit[2].clone()),
            node(3, vec![], 128 * GIB, slit[3].clone()),
        ];
        for (id, socket) in [(0, 0), (1, 1), (2, 0), (3, 1)] {
            let far = id >= 2;
            let figures = if far { (250, 30_000) } else { (110, 120_000) };
            nodes[id].kind = if far {
                MemoryKind::Cxl
            } else {
                MemoryKind::Dram
            };
            nodes[id].tier = Some(if far { 22 } else { 4 });
            nodes[id].hmat = Some(hmat(vec![socket], figures.0, figures.1));
            nodes[id].hmat_cpu = Some(hmat(vec![socket], figures.0, figures.1));
        }
        machine(nodes, 8)
    }

    /// `resolve` of `nodes` with `threads` per node against `machine`.
    pub fn resolved(
        machine: &Machine,
        nodes: Vec<usize>,
        threads: NodeThreads,
    ) -> Result<Matrix, String> {
        let config = NumaConfig {
            nodes,
            threads_per_node: threads,
            ..NumaConfig::defaults(machine)
        };
        resolve(&config, machine, None).map_err(|e| e.to_string())
    }

    fn ids(matrix: &Matrix) -> (Vec<usize>, Vec<usize>) {
        (
            matrix.rows.iter().map(|r| r.id).collect(),
            matrix.columns.iter().map(|c| c.id).collect(),
        )
    }

    #[test]
    fn cpus_are_used_highest_first_one_per_core_before_siblings() {
        let machine = two_sockets();
        assert_eq!(
            use_order(&[0, 1, 2, 3], &machine.smt_sibling_groups),
            vec![3, 2, 1, 0]
        );
        // Cores {0,2} and {1,3}: 3 then 2 take both cores; 1 and 0 are siblings.
        let groups = vec![vec![0, 1], vec![2, 3]];
        assert_eq!(use_order(&[0, 1, 2, 3], &groups), vec![3, 1, 2, 0]);
        assert_eq!(use_order(&[5], &[]), vec![5]);
    }

    #[test]
    fn nodes_resolve_against_the_machine() {
        let machine = two_sockets();
        // A process restricted to CPUs 0-5 has two CPUs on node 1: 'all' means two there.
        let restricted = Machine {
            allowed_cpus: (0..6).collect(),
            ..two_sockets()
        };
        let matrix = resolved(&restricted, vec![0, 1], NodeThreads::All).unwrap();
        assert_eq!(matrix.threads, 2);
        assert_eq!(matrix.rows[1].cpus, vec![5, 4]);
        assert!(matrix.notes.is_empty());
        assert_eq!(ids(&matrix), (vec![0, 1], vec![0, 1]));

        let error = resolved(&machine, vec![0, 2], NodeThreads::Count(1)).unwrap_err();
        assert!(error.contains("'2'") && error.contains("0-1"), "{error}");
        assert!(error.contains("--nodes"), "{error}");
        let error = resolved(&machine, vec![0, 1], NodeThreads::Count(5)).unwrap_err();
        assert!(error.contains("at most 4"), "{error}");
    }

    #[test]
    fn cxl_nodes_are_columns_touched_from_their_nearest_socket() {
        let machine = two_sockets_two_cxl();
        let all = vec![0, 1, 2, 3];
        let matrix = resolved(&machine, all, NodeThreads::Count(2)).unwrap();
        assert_eq!(ids(&matrix), (vec![0, 1], vec![0, 1, 2, 3]));
        assert!(matrix.notes.is_empty(), "{:?}", matrix.notes);
        let touchers: Vec<usize> = matrix.columns.iter().map(|c| c.toucher).collect();
        assert_eq!(touchers, [0, 1, 0, 1]);
        // `--nodes` selects among both: node 1's threads, node 3's memory and node 1's.
        let matrix = resolved(&machine, vec![3, 1], NodeThreads::Count(1)).unwrap();
        assert_eq!(ids(&matrix), (vec![1], vec![1, 3]));
        // Only CPU-less nodes: nothing can run the threads, and the error says so.
        let error = resolved(&machine, vec![2, 3], NodeThreads::Count(1)).unwrap_err();
        assert!(
            error.contains("'2-3'") && error.contains("at least one has CPUs"),
            "{error}"
        );
    }

    #[test]
    fn without_distances_the_hmat_initiator_touches_a_cpu_less_node() {
        let mut machine = two_sockets_two_cxl();
        for node in &mut machine.numa_nodes {
            node.distances.clear();
        }
        let matrix = resolved(&machine, vec![0, 1, 2, 3], NodeThreads::Count(1)).unwrap();
        let touchers: Vec<usize> = matrix.columns.iter().map(|c| c.toucher).collect();
        assert_eq!(touchers, [0, 1, 0, 1]);
        // Neither distances nor HMAT: the first row.
        machine.numa_nodes[3].hmat = None;
        machine.numa_nodes[3].hmat_cpu = None;
        let matrix = resolved(&machine, vec![0, 1, 3], NodeThreads::Count(1)).unwrap();
        assert_eq!(matrix.columns[2].toucher, 0);
    }

    /// Two sockets with DRAM (nodes 0, 1) and an HBM node behind each (2, 3): a Xeon Max
    /// in flat mode.
    pub(crate) fn hbm_flat() -> Machine {
        let slit = [
            vec![10, 21, 13, 23],
            vec![21, 10, 23, 13],
            vec![13, 23, 10, 23],
            vec![23, 13, 23, 10],
        ];
        let mut nodes: Vec<NumaNode> = (0..4)
            .map(|id| {
                let cpus = if id < 2 {
                    (id * 4..id * 4 + 4).collect()
                } else {
                    vec![]
                };
                node(id, cpus, 64 * GIB, slit[id].clone())
            })
            .collect();
        nodes[2].kind = MemoryKind::Hbm;
        nodes[3].kind = MemoryKind::Hbm;
        machine(nodes, 8)
    }

    /// Sub-NUMA clustering: two sockets of 4 nodes each, every node with CPUs and memory
    /// (SLIT 10 local, 12 on the socket, 21 across).
    pub(crate) fn sub_numa_clustering() -> Machine {
        let nodes: Vec<NumaNode> = (0..8)
            .map(|id| {
                let distances = (0..8)
                    .map(|other| match (id == other, id / 4 == other / 4) {
                        (true, _) => 10,
                        (false, true) => 12,
                        _ => 21,
                    })
                    .collect();
                node(id, (id * 4..id * 4 + 4).collect(), 32 * GIB, distances)
            })
            .collect();
        machine(nodes, 32)
    }

    #[test]
    fn hbm_flat_mode_and_sub_numa_clustering() {
        let matrix = resolved(&hbm_flat(), vec![0, 1, 2, 3], NodeThreads::All).unwrap();
        assert_eq!(ids(&matrix), (vec![0, 1], vec![0, 1, 2, 3]));
        assert_eq!(matrix.columns[3].toucher, 1);
        assert_eq!(matrix.threads, 4);

        let snc = sub_numa_clustering();
        let matrix = resolved(&snc, (0..8).collect(), NodeThreads::Count(1)).unwrap();
        assert_eq!(ids(&matrix), ((0..8).collect(), (0..8).collect()));
        assert!(matrix
            .columns
            .iter()
            .enumerate()
            .all(|(j, c)| c.toucher == j));
    }

    #[test]
    fn nodes_without_cpus_or_memory_are_rows_or_columns_or_left_out_with_a_reason() {
        let mut machine = two_sockets();
        machine.numa_nodes.push(node(2, vec![], 16 * GIB, vec![])); // CXL memory, no CPUs
        machine.numa_nodes.push(node(3, vec![8, 9], 0, vec![])); // CPUs, no memory
        machine.numa_nodes.push(node(4, vec![], 0, vec![])); // neither
        machine.allowed_cpus.extend([8, 9]);
        let matrix = resolved(&machine, vec![0, 1, 2, 3, 4], NodeThreads::Count(1)).unwrap();
        assert_eq!(ids(&matrix), (vec![0, 1, 3], vec![0, 1, 2]));
        assert_eq!(
            matrix.notes,
            [
                "node 3 has no memory this process may use: a row only",
                "node 4 has neither CPUs nor memory this process may use: left out"
            ]
        );
        let error = resolved(&machine, vec![3], NodeThreads::Count(1)).unwrap_err();
        assert!(error.contains("at least one has memory"), "{error}");
        assert!(error.contains("node 3 has no memory"), "{error}");
        // Memory the cpuset does not allow is no column.
        let config = NumaConfig {
            nodes: vec![0, 1, 2],
            ..NumaConfig::defaults(&machine)
        };
        let matrix = resolve(&config, &machine, Some(&[0, 1])).unwrap();
        assert_eq!(ids(&matrix), (vec![0, 1], vec![0, 1]));
        // A node whose CPUs this process may not use is a column only, and said so.
        let restricted = Machine {
            allowed_cpus: (0..4).collect(),
            ..two_sockets()
        };
        let matrix = resolved(&restricted, vec![0, 1], NodeThreads::Count(1)).unwrap();
        assert_eq!(ids(&matrix), (vec![0], vec![0, 1]));
        assert_eq!(
            matrix.notes,
            ["node 1 has no CPUs this process may use: a column only"]
        );
    }
}
