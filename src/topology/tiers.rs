//! What kind of memory each NUMA node holds and how the kernel tiers it: the firmware's
//! access figures (ACPI HMAT, `nodeN/access{0,1}/initiators`), the kernel's memory tiers
//! (`/sys/devices/virtual/memory_tiering`), demotion, NUMA balancing, and weighted
//! interleave (`/sys/kernel/mm/mempolicy/weighted_interleave`, Linux 6.9+).
//!
//! CXL Type-3 expanders, HBM in flat mode and persistent memory used as RAM all appear as
//! NUMA nodes without CPUs; these types say which is which where sysfs tells, and carry the
//! firmware's figures so measured ones can be set beside them. Only the types live here
//! for now; detection fills them from sysfs.

use serde::{Deserialize, Serialize};

/// What a node's memory is, as far as sysfs tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryKind {
    /// Ordinary DRAM (a node with CPUs, or one in the default tier with no other sign).
    #[default]
    Dram,
    /// A CXL memory expander (the node is the target of a CXL region).
    Cxl,
    /// High-bandwidth memory in flat mode (a CPU-less node with more bandwidth than DRAM).
    Hbm,
    /// Persistent memory onlined as RAM (an NVDIMM region's target node).
    PmemAsRam,
    /// A CPU-less node whose kind sysfs does not tell (e.g. in a slower tier).
    Unknown,
}

impl MemoryKind {
    /// "DRAM", "CXL", "HBM", "PMEM as RAM", "unknown".
    pub fn label(self) -> &'static str {
        match self {
            MemoryKind::Dram => "DRAM",
            MemoryKind::Cxl => "CXL",
            MemoryKind::Hbm => "HBM",
            MemoryKind::PmemAsRam => "PMEM as RAM",
            MemoryKind::Unknown => "unknown",
        }
    }
}

/// One access class of a memory node from the ACPI HMAT
/// (`/sys/devices/system/node/nodeN/accessK/initiators/`): the nodes whose CPUs (or other
/// initiators) are nearest to it and the performance the firmware quotes from them.
/// access0 counts any initiator, access1 only CPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct HmatAccess {
    /// Initiator nodes (the `nodeM` links in the initiators directory).
    pub initiators: Vec<usize>,
    /// Nanoseconds.
    pub read_latency_ns: Option<u64>,
    pub write_latency_ns: Option<u64>,
    /// MB/s, as the kernel gives them.
    pub read_bandwidth_mb_s: Option<u64>,
    pub write_bandwidth_mb_s: Option<u64>,
}

/// A memory tier of the kernel (`memory_tierN/nodelist`); a lower id is a faster tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryTier {
    pub id: u32,
    pub nodes: Vec<usize>,
}

/// `/proc/sys/kernel/numa_balancing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NumaBalancing {
    /// 0.
    Disabled,
    /// 1: pages move toward the node of the CPU that uses them.
    Normal,
    /// 2: hot pages are promoted from slower tiers.
    MemoryTiering,
    /// 3: both.
    NormalAndTiering,
}

/// The kernel's weighted interleave settings (`/sys/kernel/mm/mempolicy/weighted_interleave`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct WeightedInterleave {
    /// The `auto` file (Linux 6.16+): weights derived from the firmware's bandwidths.
    pub auto: Option<bool>,
    /// (node, weight) for every `nodeN` file.
    pub weights: Vec<(usize, u32)>,
}

/// The machine's memory tiering as the kernel has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct MemoryTiering {
    /// Tiers by id (empty when the kernel has no memory_tiering directory).
    pub tiers: Vec<MemoryTier>,
    /// `/sys/kernel/mm/numa/demotion_enabled`, when present.
    pub demotion_enabled: Option<bool>,
    pub numa_balancing: Option<NumaBalancing>,
    /// None: the kernel has no weighted interleave (before Linux 6.9).
    pub weighted_interleave: Option<WeightedInterleave>,
}
