//! `--membind NODE` of `loaded` and `bandwidth`: which NUMA nodes a measurement's buffers
//! may be bound to (any node with memory this process may use, CPU-less ones included:
//! that is how a CXL expander or flat-mode HBM is measured), the binding a result records,
//! and its verification on a sample of each buffer's pages, as the NUMA matrix checks its
//! cells. The binding itself is `Arena::new_on_node` (MPOL_BIND before the first touch).

use serde::{Deserialize, Serialize};

use crate::platform::arena::Arena;
use crate::topology::tiers::MemoryKind;
use crate::topology::Machine;

/// Pages sampled per buffer to verify where a bound buffer's pages live.
pub(crate) const PLACEMENT_SAMPLES: usize = 32;

/// The share of sampled pages on the node below which the output says the binding did not
/// hold (the NUMA matrix's threshold).
const PLACED: f64 = 0.99;

/// The node a measurement's buffers were bound to, as the result records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryBinding {
    pub node: usize,
    /// What the node's memory is, as the topology tells (DRAM unless sysfs says else).
    #[serde(default)]
    pub kind: MemoryKind,
    /// Whether the node has CPUs (a CPU-less node is measured from the CPUs of others).
    #[serde(default)]
    pub cpu_less: bool,
    /// The smallest share, over the buffers, of `PLACEMENT_SAMPLES` sampled pages the
    /// kernel reports on the node (get_mempolicy); None when it could not be asked.
    pub placement: Option<f64>,
}

impl MemoryBinding {
    /// The binding to `node` of `machine` (its kind and CPUs from the topology), placement
    /// not yet verified.
    pub fn to(node: usize, machine: &Machine) -> MemoryBinding {
        let found = machine.numa_nodes.iter().find(|n| n.id == node);
        MemoryBinding {
            node,
            kind: found.map_or(MemoryKind::Dram, |n| n.kind),
            cpu_less: found.is_some_and(|n| n.cpus.is_empty()),
            placement: None,
        }
    }

    /// "memory bound to node 2 (CXL, no CPUs; all sampled pages there)".
    pub fn describe(&self) -> String {
        let mut about = Vec::new();
        if self.kind != MemoryKind::Dram {
            about.push(self.kind.label().to_string());
        }
        if self.cpu_less {
            about.push("no CPUs".to_string());
        }
        let about = if about.is_empty() {
            String::new()
        } else {
            format!("{}; ", about.join(", "))
        };
        let placed = match self.placement {
            None => "placement not verified: get_mempolicy unavailable".to_string(),
            Some(f) if f >= PLACED => "all sampled pages there".to_string(),
            Some(f) => format!(
                "only {:.0}% of the sampled pages there: the binding did not hold",
                f * 100.0
            ),
        };
        format!("memory bound to node {} ({about}{placed})", self.node)
    }

    /// The binding with its placement: the smallest of the buffers' `shares` (each from
    /// `share_on_node`); unknown when any buffer's is, or when there are none.
    pub fn placed(self, shares: impl IntoIterator<Item = Option<f64>>) -> MemoryBinding {
        let shares: Option<Vec<f64>> = shares.into_iter().collect();
        MemoryBinding {
            placement: shares.and_then(|s| s.into_iter().reduce(f64::min)),
            ..self
        }
    }
}

/// The share of `PLACEMENT_SAMPLES` pages of `buffer` on `node`; None when the kernel
/// cannot be asked.
pub(crate) fn share_on_node(buffer: &Arena, node: usize) -> Option<f64> {
    buffer.fraction_on_node(node, PLACEMENT_SAMPLES).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::UsageError;
    use crate::flags::parse_membind;
    use crate::platform::arena::PagePolicy;
    use crate::topology::NumaNode;
    use crate::units::GIB;

    /// Two sockets (nodes 0, 1) and two CPU-less CXL nodes (2, 3); node 4 has CPUs and
    /// no memory.
    fn two_sockets_two_cxl() -> Machine {
        let node = |id: usize, cpus: Vec<usize>, memory: u64, kind| NumaNode {
            id,
            cpus,
            memory_total_bytes: memory,
            kind,
            ..NumaNode::default()
        };
        Machine {
            numa_nodes: vec![
                node(0, (0..4).collect(), 64 * GIB, MemoryKind::Dram),
                node(1, (4..8).collect(), 64 * GIB, MemoryKind::Dram),
                node(2, vec![], 128 * GIB, MemoryKind::Cxl),
                node(3, vec![], 128 * GIB, MemoryKind::Cxl),
                node(4, vec![8], 0, MemoryKind::Dram),
            ],
            ..Machine::default()
        }
    }

    #[test]
    fn a_cpu_less_node_with_memory_is_a_binding_target() {
        let machine = two_sockets_two_cxl();
        assert_eq!(parse_membind("2", &machine, None).unwrap(), 2);
        assert_eq!(
            parse_membind(" 0 ", &machine, Some(&[0, 1, 2, 3])).unwrap(),
            0
        );
        let binding = MemoryBinding::to(3, &machine);
        assert_eq!((binding.kind, binding.cpu_less), (MemoryKind::Cxl, true));
        let placed = MemoryBinding {
            placement: Some(1.0),
            ..binding
        };
        assert_eq!(
            placed.describe(),
            "memory bound to node 3 (CXL, no CPUs; all sampled pages there)"
        );
    }

    #[test]
    fn a_node_without_memory_or_not_usable_or_unknown_is_refused_naming_the_good_ones() {
        let machine = two_sockets_two_cxl();
        for (text, usable) in [
            ("4", None),
            ("7", None),
            ("-1", None),
            ("cxl", None),
            ("3", Some(&[0usize, 1, 2][..])),
        ] {
            let e = parse_membind(text, &machine, usable).unwrap_err();
            let shown = e.to_string();
            assert!(shown.contains(&format!("'{text}'")), "{shown}");
            assert!(shown.contains("--membind"), "{shown}");
            let good = if usable.is_some() { "0-2" } else { "0-3" };
            assert!(shown.contains(good), "{shown}");
            assert!(matches!(e, UsageError::InvalidValue { .. }));
        }
        // No NUMA nodes in the topology: the kernel's list decides.
        let bare = Machine::default();
        assert_eq!(parse_membind("0", &bare, Some(&[0])).unwrap(), 0);
        let e = parse_membind("0", &bare, None).unwrap_err().to_string();
        assert!(e.contains("shows none"), "{e}");
    }

    #[test]
    fn the_lowest_placement_wins_and_an_unknown_one_stays_unknown() {
        let binding = MemoryBinding::to(0, &two_sockets_two_cxl());
        let placed = |shares: Vec<Option<f64>>| binding.clone().placed(shares).placement;
        assert_eq!(placed(vec![Some(1.0), Some(0.5)]), Some(0.5));
        assert_eq!(placed(vec![Some(1.0), None]), None);
        assert_eq!(placed(vec![]), None);
        let partly = binding.placed([Some(0.5)]);
        assert!(
            partly.describe().contains("only 50%"),
            "{}",
            partly.describe()
        );
        assert_eq!(
            MemoryBinding::to(0, &Machine::default()).describe(),
            "memory bound to node 0 (placement not verified: get_mempolicy unavailable)"
        );
    }

    #[test]
    fn a_buffer_bound_to_node_0_is_all_there() {
        let arena = match Arena::new_on_node(crate::units::Bytes::mib(1), PagePolicy::Base, Some(0))
        {
            Ok(arena) => arena,
            Err(error) => return eprintln!("skipped: {error}"),
        };
        let binding = MemoryBinding::to(0, &Machine::default()).placed([share_on_node(&arena, 0)]);
        if let Some(share) = binding.placement {
            assert_eq!(share, 1.0);
        }
    }
}
