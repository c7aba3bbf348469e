//! What the measured matrix adds up to, as pure functions of it and the topology: the
//! remote/local ratios over the nodes that are both a row and a column, each column's
//! label (kind, tier) and its ratios against local DRAM when it has no CPUs, the firmware's
//! HMAT figures that apply to each cell, and the note.

use super::{HmatCell, HmatClass, MemoryColumn};
use crate::platform::cpu_time::MIN_OVERLAP;
use crate::topology::tiers::HmatAccess;
use crate::topology::NumaNode;

/// Mean of the remote cells over the mean of the local ones, among the nodes that are both
/// a row and a column (a cell is local when its row and column are the same node); None
/// below two such nodes.
pub(super) fn remote_local_ratio(
    rows: &[usize],
    columns: &[usize],
    matrix: &[Vec<f64>],
) -> Option<f64> {
    let both: Vec<usize> = rows
        .iter()
        .copied()
        .filter(|id| columns.contains(id))
        .collect();
    if both.len() < 2 {
        return None;
    }
    let (mut local, mut remote) = (Vec::new(), Vec::new());
    for (i, row) in rows.iter().enumerate() {
        for (j, column) in columns.iter().enumerate() {
            if !both.contains(row) || !both.contains(column) {
                continue;
            }
            let Some(&value) = matrix.get(i).and_then(|r| r.get(j)) else {
                continue;
            };
            if row == column {
                local.push(value);
            } else {
                remote.push(value);
            }
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    (!local.is_empty() && !remote.is_empty()).then(|| mean(&remote) / mean(&local))
}

/// The column of `node` in the result: kind and tier from the topology, `touched_from` the
/// row node that touched its buffers and, when the node has no CPUs, its latency and
/// bandwidth from that row over the row's own local cell (None when the row has no memory).
pub(super) fn memory_column(
    node: &NumaNode,
    touched_from: usize,
    rows: &[usize],
    columns: &[usize],
    latency: &[Vec<f64>],
    bandwidth: &[Vec<f64>],
) -> MemoryColumn {
    let cpu_less = node.cpus.is_empty();
    let against_local = |matrix: &[Vec<f64>]| {
        let row = rows.iter().position(|&r| r == touched_from)?;
        let far = columns.iter().position(|&c| c == node.id)?;
        let local = columns.iter().position(|&c| c == touched_from)?;
        let cells = matrix.get(row)?;
        let ratio = cells.get(far)? / cells.get(local)?;
        ratio.is_finite().then_some(ratio)
    };
    MemoryColumn {
        node: node.id,
        kind: node.kind,
        tier: node.tier,
        cpu_less,
        touched_from,
        latency_vs_local_dram: cpu_less.then(|| against_local(latency)).flatten(),
        bandwidth_vs_local_dram: cpu_less.then(|| against_local(bandwidth)).flatten(),
    }
}

/// The firmware's figures for threads on `row` reading memory on `column`: the column's
/// access1 class (CPUs) when `row` is one of its initiators, else access0 when it is one
/// of those; None otherwise or when the firmware gives no figure at all.
pub(super) fn hmat_cell(row: usize, column: &NumaNode) -> Option<HmatCell> {
    let from = |class: HmatClass, access: &Option<HmatAccess>| {
        let access = access.as_ref().filter(|a| a.initiators.contains(&row))?;
        let cell = HmatCell {
            class,
            read_latency_ns: access.read_latency_ns,
            write_latency_ns: access.write_latency_ns,
            read_bandwidth_mb_s: access.read_bandwidth_mb_s,
            write_bandwidth_mb_s: access.write_bandwidth_mb_s,
        };
        let any = cell.read_latency_ns.is_some()
            || cell.write_latency_ns.is_some()
            || cell.read_bandwidth_mb_s.is_some()
            || cell.write_bandwidth_mb_s.is_some();
        any.then_some(cell)
    };
    from(HmatClass::Access1, &column.hmat_cpu).or_else(|| from(HmatClass::Access0, &column.hmat))
}

/// What the reader of the matrix should know: one node (nothing remote), the selection's
/// notes (nodes left out, rows or columns only), pages that could not be bound, cells
/// whose pages were not all where they should be, cells whose reading threads did not run
/// together.
pub(super) fn note(
    rows: &[usize],
    columns: &[usize],
    selection: &[String],
    unbound: Option<&str>,
    placement: &[Vec<Option<f64>>],
    overlap: &[Vec<f64>],
) -> Option<String> {
    let mut parts = Vec::new();
    if let ([row], [column]) = (rows, columns) {
        if row == column {
            parts.push(format!(
                "one NUMA node (node {row}): nothing remote to measure, so the matrix is the \
                 local cell alone and there are no remote/local ratios"
            ));
        }
    }
    parts.extend(selection.iter().cloned());
    if let Some(reason) = unbound {
        parts.push(format!(
            "pages were not bound ({reason}); on one node they are local all the same"
        ));
    }
    let cell = |i: usize, j: usize| (rows.get(i).copied(), columns.get(j).copied());
    for (i, row) in placement.iter().enumerate() {
        for (j, &fraction) in row.iter().enumerate() {
            if let (Some(fraction), (Some(from), Some(to))) =
                (fraction.filter(|&f| f < 0.99), cell(i, j))
            {
                parts.push(format!(
                    "cell node {from} → node {to}: only {:.0}% of the sampled pages were on \
                     node {to}",
                    fraction * 100.0,
                ));
            }
        }
    }
    for (i, row) in overlap.iter().enumerate() {
        for (j, &overlap) in row.iter().enumerate() {
            if let (true, (Some(from), Some(to))) = (overlap < MIN_OVERLAP, cell(i, j)) {
                parts.push(format!(
                    "cell node {from} → node {to}: the reading threads did not run together \
                     (overlap {:.0}%, below {:.0}%, in every trial); its bandwidth is what \
                     they got over the whole interval",
                    overlap * 100.0,
                    MIN_OVERLAP * 100.0
                ));
            }
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::numa::plan::tests::two_sockets_two_cxl;
    use crate::topology::tiers::MemoryKind;

    #[test]
    fn ratios_compare_remote_with_local_cells_of_nodes_with_cpus_and_memory() {
        assert_eq!(remote_local_ratio(&[0], &[0], &[vec![90.0]]), None);
        let latency = vec![vec![100.0, 150.0], vec![170.0, 100.0]];
        assert_eq!(remote_local_ratio(&[0, 1], &[0, 1], &latency), Some(1.6));
        // CXL columns 2 and 3 stay out of remote/local.
        let latency = vec![
            vec![100.0, 150.0, 250.0, 400.0],
            vec![170.0, 100.0, 390.0, 260.0],
        ];
        assert_eq!(
            remote_local_ratio(&[0, 1], &[0, 1, 2, 3], &latency),
            Some(1.6)
        );
        // One CPU node and a CXL node: nothing remote among DRAM nodes.
        assert_eq!(
            remote_local_ratio(&[0], &[0, 2], &[vec![100.0, 250.0]]),
            None
        );
        // A ragged matrix does not panic: the cells there are count.
        assert_eq!(
            remote_local_ratio(&[0, 1], &[0, 1], &[vec![100.0, 150.0]]),
            Some(1.5)
        );
    }

    #[test]
    fn a_cxl_column_is_labelled_and_compared_with_the_local_dram_of_its_row() {
        let machine = two_sockets_two_cxl();
        let latency = vec![
            vec![100.0, 150.0, 250.0, 400.0],
            vec![170.0, 110.0, 390.0, 264.0],
        ];
        let bandwidth = vec![vec![40.0, 25.0, 18.0, 9.0], vec![24.0, 44.0, 9.0, 22.0]];
        let (rows, columns) = ([0, 1], [0, 1, 2, 3]);
        let column = |id: usize, from: usize| {
            memory_column(
                &machine.numa_nodes[id],
                from,
                &rows,
                &columns,
                &latency,
                &bandwidth,
            )
        };
        let cxl = column(3, 1);
        assert_eq!(
            (cxl.kind, cxl.tier, cxl.cpu_less),
            (MemoryKind::Cxl, Some(22), true)
        );
        assert_eq!(cxl.latency_vs_local_dram, Some(2.4));
        assert_eq!(cxl.bandwidth_vs_local_dram, Some(0.5));
        let dram = column(0, 0);
        assert_eq!((dram.kind, dram.cpu_less), (MemoryKind::Dram, false));
        assert_eq!(dram.latency_vs_local_dram, None);
        // Touched from a row with no memory: no local DRAM to compare with.
        let cxl = memory_column(&machine.numa_nodes[2], 5, &[5], &[2], &latency, &bandwidth);
        assert_eq!(cxl.latency_vs_local_dram, None);
    }

    #[test]
    fn hmat_figures_apply_where_the_row_is_an_initiator() {
        let mut machine = two_sockets_two_cxl();
        let cell = hmat_cell(0, &machine.numa_nodes[2]).unwrap();
        assert_eq!(cell.class, HmatClass::Access1);
        assert_eq!(
            (cell.read_latency_ns, cell.read_bandwidth_mb_s),
            (Some(250), Some(30_000))
        );
        assert_eq!(hmat_cell(1, &machine.numa_nodes[2]), None);
        // access0 only (a kernel or firmware without the CPU class).
        machine.numa_nodes[2].hmat_cpu = None;
        let cell = hmat_cell(0, &machine.numa_nodes[2]).unwrap();
        assert_eq!(cell.class, HmatClass::Access0);
        // An access class with no figure at all is no cell.
        if let Some(access) = machine.numa_nodes[2].hmat.as_mut() {
            *access = HmatAccess {
                initiators: vec![0],
                ..HmatAccess::default()
            };
        }
        assert_eq!(hmat_cell(0, &machine.numa_nodes[2]), None);
    }

    #[test]
    fn notes_say_nothing_is_remote_and_name_misplaced_or_not_together_cells() {
        let whole = vec![vec![1.0; 2]; 2];
        let placed = vec![vec![Some(1.0); 2]; 2];
        let text = note(&[0], &[0], &[], None, &[vec![Some(1.0)]], &[vec![1.0]]).unwrap();
        assert!(text.contains("nothing remote to measure"), "{text}");
        assert_eq!(note(&[0, 1], &[0, 1], &[], None, &placed, &whole), None);
        let half = vec![vec![Some(1.0), Some(0.5)]; 2];
        let text = note(&[0, 1], &[0, 1], &[], None, &half, &whole).unwrap();
        assert!(text.contains("node 0 → node 1: only 50%"), "{text}");
        // A cell whose readers did not run together is named.
        let overlap = vec![vec![0.95, 1.0], vec![1.0, 0.52]];
        let text = note(&[0, 1], &[0, 1], &[], None, &placed, &overlap).unwrap();
        let cell = "cell node 1 → node 1: the reading threads did not run together (overlap 52%";
        assert!(text.contains(cell), "{text}");
        assert!(!text.contains("node 0 → node 0"), "{text}");
        // One CPU node and a CXL node: something remote; columns name the memory.
        let text = note(
            &[0],
            &[0, 2],
            &[],
            None,
            &[vec![Some(1.0), Some(0.9)]],
            &[vec![1.0; 2]],
        )
        .unwrap();
        assert!(!text.contains("nothing remote"), "{text}");
        assert!(text.contains("cell node 0 → node 2: only 90%"), "{text}");
        let selection = ["node 3 has no memory this process may use: a row only".to_string()];
        let text = note(&[0, 3], &[0], &selection, None, &[], &[]).unwrap();
        assert_eq!(text, selection[0]);
    }
}
