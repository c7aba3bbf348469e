//! Where a command's memory goes: a NUMA policy (bind, interleave, weighted
//! interleave) over nodes, and the node mask `set_mempolicy` takes, set in the child
//! before its exec.

/// A NUMA memory policy for the command, over `nodes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub policy: NodePolicy,
    pub nodes: Vec<usize>,
}

/// How `Placement` places the command's pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodePolicy {
    /// MPOL_BIND: only on these nodes (`numactl --membind`). The caller checks the nodes
    /// first: the kernel's refusal would leave the default policy.
    Bind,
    /// MPOL_INTERLEAVE: one page per node in turn (`numactl --interleave`).
    Interleave,
    /// MPOL_WEIGHTED_INTERLEAVE (Linux 6.9+): in the ratio of the system's weights in
    /// /sys/kernel/mm/mempolicy/weighted_interleave (`numactl --weighted-interleave`).
    WeightedInterleave,
}

impl NodePolicy {
    /// The MPOL_* mode of linux/mempolicy.h.
    pub(super) fn raw(self) -> libc::c_int {
        match self {
            NodePolicy::Bind => 2,
            NodePolicy::Interleave => 3,
            NodePolicy::WeightedInterleave => 6,
        }
    }
}

/// A node mask for set_mempolicy: bit n of word n / 64 for each node n.
pub(super) fn node_mask(nodes: &[usize]) -> Vec<libc::c_ulong> {
    let bits = libc::c_ulong::BITS as usize;
    let words = nodes.iter().max().map_or(1, |m| m / bits + 1);
    let mut mask = vec![0; words];
    for &n in nodes {
        mask[n / bits] |= 1 << (n % bits);
    }
    mask
}
