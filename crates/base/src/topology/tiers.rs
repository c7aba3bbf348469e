//! What kind of memory each NUMA node holds and how the kernel tiers it: the firmware's
//! access figures (ACPI HMAT, `nodeN/access{0,1}/initiators`), the kernel's memory tiers
//! (`/sys/devices/virtual/memory_tiering`), demotion, NUMA balancing, and weighted
//! interleave (`/sys/kernel/mm/mempolicy/weighted_interleave`, Linux 6.9+), read from a
//! sysfs and a procfs root so that tests can hand it a synthetic tree.
//!
//! CXL Type-3 expanders, HBM in flat mode and persistent memory used as RAM all appear as
//! NUMA nodes without CPUs. A node's kind is decided in this order:
//! - **CXL** when it is the `target_node` of a dax device under a CXL region
//!   (`/sys/bus/cxl/devices/regionN/dax_regionN/daxN.M/target_node`, or a
//!   `/sys/bus/dax/devices/daxN.M` whose device path runs through a CXL root decoder);
//! - **PMEM as RAM** when it is the `target_node` of an NVDIMM region
//!   (`/sys/bus/nd/devices/regionN/target_node`) or of a dax device under one (a device path
//!   through `ndbusN`);
//! - **DRAM** when it has CPUs;
//! - **HBM** (HBM-like) when it has no CPUs and its HMAT read bandwidth is above that of
//!   every node with CPUs nearest to it by SLIT distance, else when the kernel put it in
//!   a faster memory tier than every node with CPUs, or, with neither to compare, when the
//!   CPU is an Intel Xeon "Max" (whose CPU-less nodes are its HBM);
//! - **far memory** when it has no CPUs and the HMAT says it reads slower, else when the
//!   kernel put it in a slower tier than every node with CPUs (CXL, hmem, PMEM sysfs did
//!   not name as such);
//! - **unknown** for any other CPU-less node (no HMAT, one tier for all: sysfs does not say).
//!
//! Every file is read bounded and anything unreadable or malformed reads as absent: a
//! kernel without HMAT, tiers or weighted interleave yields None or empty, never an error.
//! The machine this was written on has one node, no CXL, NVDIMM or HMAT: the CXL, NVDIMM
//! and HMAT paths are checked against synthetic trees laid out as the kernel's ABI
//! documents and public sysfs listings show them, not against such hardware.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::cpu::parse_cpu_list;
use super::{read_trimmed, NumaNode};

/// What a node's memory is, as far as sysfs tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryKind {
    /// Ordinary DRAM (a node with CPUs that no CXL or NVDIMM region targets).
    #[default]
    Dram,
    /// A CXL memory expander (the node is the target of a CXL region).
    Cxl,
    /// High-bandwidth memory in flat mode (a CPU-less node with more bandwidth than DRAM).
    Hbm,
    /// Persistent memory onlined as RAM (an NVDIMM region's target node).
    PmemAsRam,
    /// A CPU-less node slower than DRAM per the HMAT or the kernel's tiers, of no kind
    /// sysfs names.
    Far,
    /// A CPU-less node whose kind sysfs does not tell (no HMAT, no tier apart).
    Unknown,
}

impl MemoryKind {
    /// "DRAM", "CXL", "HBM-like", "PMEM as RAM", "far memory", "unknown".
    pub fn label(self) -> &'static str {
        match self {
            MemoryKind::Dram => "DRAM",
            MemoryKind::Cxl => "CXL",
            MemoryKind::Hbm => "HBM-like",
            MemoryKind::PmemAsRam => "PMEM as RAM",
            MemoryKind::Far => "far memory",
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
    /// (Read from `__auto_type` where a kernel build named it so.)
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

/// Entries read from any one sysfs directory: far more than a machine has regions, tiers,
/// nodes or dax devices, and a bound on what a strange tree can make detection do.
const MAX_DIR_ENTRIES: usize = 4096;

/// How deep below a CXL or NVDIMM region its dax devices are looked for (today
/// `regionN/dax_regionN/daxN.M`, one level more leaves room for an intermediate device).
const MAX_REGION_DEPTH: usize = 4;

/// The number after `prefix` in a name made of it and digits only ("node3", "node" → 3).
pub(crate) fn numbered(name: &str, prefix: &str) -> Option<usize> {
    let digits = name.strip_prefix(prefix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The names of a directory's entries (at most `MAX_DIR_ENTRIES`), each with whether it
/// is a directory itself (a symlink is not: sysfs links lead back up the tree); empty when
/// it cannot be read.
fn entries(dir: &Path) -> Vec<(String, bool)> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    read.flatten()
        .take(MAX_DIR_ENTRIES)
        .filter_map(|e| {
            let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
            Some((e.file_name().into_string().ok()?, is_dir))
        })
        .collect()
}

/// A sysfs figure ("250"); None for anything that is not a whole number.
fn figure(path: &Path) -> Option<u64> {
    read_trimmed(path)?.parse().ok()
}

/// A sysfs flag: "true"/"false" as the kernel writes them, also 1/0 and Y/N.
pub(crate) fn parse_flag(text: &str) -> Option<bool> {
    match text.trim() {
        "true" | "1" | "Y" | "y" => Some(true),
        "false" | "0" | "N" | "n" => Some(false),
        _ => None,
    }
}

impl HmatAccess {
    /// Access class `class` of the node whose sysfs directory is `node_dir`
    /// (`node_dir/access{class}/initiators/`): None when the directory is missing or holds
    /// neither an initiator nor a figure (a kernel or firmware without HMAT).
    pub fn read_at(node_dir: &Path, class: u32) -> Option<HmatAccess> {
        let dir = node_dir.join(format!("access{class}")).join("initiators");
        let mut initiators: Vec<usize> = entries(&dir)
            .iter()
            .filter_map(|(name, _)| numbered(name, "node"))
            .collect();
        initiators.sort_unstable();
        let access = HmatAccess {
            initiators,
            read_latency_ns: figure(&dir.join("read_latency")),
            write_latency_ns: figure(&dir.join("write_latency")),
            read_bandwidth_mb_s: figure(&dir.join("read_bandwidth")),
            write_bandwidth_mb_s: figure(&dir.join("write_bandwidth")),
        };
        (access != HmatAccess::default()).then_some(access)
    }
}

impl MemoryTier {
    /// The kernel's memory tiers under `sys` (`devices/virtual/memory_tiering/memory_tierN/
    /// nodelist`), sorted by id; a tier whose node list does not parse is left out.
    pub(crate) fn read_all_at(sys: &Path) -> Vec<MemoryTier> {
        let dir = sys.join("devices/virtual/memory_tiering");
        let mut tiers: Vec<MemoryTier> = entries(&dir)
            .iter()
            .filter_map(|(name, _)| {
                let id = u32::try_from(numbered(name, "memory_tier")?).ok()?;
                let list = read_trimmed(dir.join(name).join("nodelist"))?;
                let nodes = parse_cpu_list(&list).ok()?;
                Some(MemoryTier { id, nodes })
            })
            .collect();
        tiers.sort_by_key(|t| t.id);
        tiers
    }
}

impl NumaBalancing {
    /// `/proc/sys/kernel/numa_balancing`'s value; None for anything but 0 to 3.
    pub fn parse(text: &str) -> Option<NumaBalancing> {
        match text.trim() {
            "0" => Some(NumaBalancing::Disabled),
            "1" => Some(NumaBalancing::Normal),
            "2" => Some(NumaBalancing::MemoryTiering),
            "3" => Some(NumaBalancing::NormalAndTiering),
            _ => None,
        }
    }

    /// "off", "normal", "memory tiering", "normal and memory tiering".
    pub fn label(self) -> &'static str {
        match self {
            NumaBalancing::Disabled => "off",
            NumaBalancing::Normal => "normal",
            NumaBalancing::MemoryTiering => "memory tiering",
            NumaBalancing::NormalAndTiering => "normal and memory tiering",
        }
    }

    /// The value the kernel file holds.
    pub fn value(self) -> u32 {
        match self {
            NumaBalancing::Disabled => 0,
            NumaBalancing::Normal => 1,
            NumaBalancing::MemoryTiering => 2,
            NumaBalancing::NormalAndTiering => 3,
        }
    }
}

impl WeightedInterleave {
    /// The settings under `sys` (`kernel/mm/mempolicy/weighted_interleave`): None when the
    /// kernel has no such directory; weights sorted by node, unreadable ones left out.
    pub fn read_at(sys: &Path) -> Option<WeightedInterleave> {
        let dir = sys.join("kernel/mm/mempolicy/weighted_interleave");
        if !dir.is_dir() {
            return None;
        }
        let mut weights: Vec<(usize, u32)> = entries(&dir)
            .iter()
            .filter_map(|(name, _)| {
                let node = numbered(name, "node")?;
                let weight = read_trimmed(dir.join(name))?.parse().ok()?;
                Some((node, weight))
            })
            .collect();
        weights.sort_unstable();
        // Some 6.18 builds name the file `__auto_type` (the attribute's name went through
        // the kernel's new `auto` macro); this machine's kernel is one of them.
        let auto = ["auto", "__auto_type"]
            .iter()
            .find_map(|name| read_trimmed(dir.join(name)))
            .and_then(|s| parse_flag(&s));
        Some(WeightedInterleave { auto, weights })
    }
}

impl MemoryTiering {
    /// Tiers, demotion and weighted interleave under `sys`, NUMA balancing under `proc`.
    pub fn read_at(sys: &Path, proc: &Path) -> MemoryTiering {
        MemoryTiering {
            tiers: MemoryTier::read_all_at(sys),
            demotion_enabled: read_trimmed(sys.join("kernel/mm/numa/demotion_enabled"))
                .and_then(|s| parse_flag(&s)),
            numa_balancing: read_trimmed(proc.join("sys/kernel/numa_balancing"))
                .and_then(|s| NumaBalancing::parse(&s)),
            weighted_interleave: WeightedInterleave::read_at(sys),
        }
    }

    /// This machine's, from /sys and /proc.
    pub fn detect() -> MemoryTiering {
        MemoryTiering::read_at(Path::new("/sys"), Path::new("/proc"))
    }
}

/// The nodes sysfs names as targets of device memory: CXL regions and NVDIMM regions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RegionTargets {
    pub cxl: BTreeSet<usize>,
    pub pmem: BTreeSet<usize>,
}

/// A `target_node` file's node (the kernel writes -1 for none).
fn target_node(dir: &Path) -> Option<usize> {
    let node: i64 = read_trimmed(dir.join("target_node"))?.parse().ok()?;
    usize::try_from(node).ok()
}

/// The target nodes of the dax devices (`daxN.M` directories with a `target_node`) at most
/// `depth` levels below `dir`, symlinks not followed.
fn dax_targets_below(dir: &Path, depth: usize, out: &mut BTreeSet<usize>) {
    if depth == 0 {
        return;
    }
    for (name, is_dir) in entries(dir) {
        if !is_dir {
            continue;
        }
        let sub = dir.join(&name);
        if is_dax_device_name(&name) {
            out.extend(target_node(&sub));
        }
        dax_targets_below(&sub, depth - 1, out);
    }
}

/// "dax0.0", "dax12.3".
fn is_dax_device_name(name: &str) -> bool {
    name.strip_prefix("dax")
        .and_then(|rest| rest.split_once('.'))
        .is_some_and(|(a, b)| {
            [a, b]
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()))
        })
}

impl RegionTargets {
    /// The CXL and NVDIMM region targets under `sys` (`bus/cxl`, `bus/nd`, `bus/dax`).
    pub fn read_at(sys: &Path) -> RegionTargets {
        let mut targets = RegionTargets::default();
        // The bus directories hold symlinks to the devices: follow that one link.
        let cxl = sys.join("bus/cxl/devices");
        for (name, _) in entries(&cxl) {
            if numbered(&name, "region").is_some() {
                dax_targets_below(&cxl.join(&name), MAX_REGION_DEPTH, &mut targets.cxl);
            }
        }
        let nd = sys.join("bus/nd/devices");
        for (name, _) in entries(&nd) {
            if numbered(&name, "region").is_some() {
                let region = nd.join(&name);
                targets.pmem.extend(target_node(&region));
                dax_targets_below(&region, MAX_REGION_DEPTH, &mut targets.pmem);
            }
        }
        // A dax device's link says where it hangs: under a CXL root decoder
        // (.../ACPI0017:00/root0/decoder0.0/region0/dax_region0/dax0.0) or an NVDIMM bus
        // (.../ndbus0/region0/dax0.0/dax0.0).
        let dax = sys.join("bus/dax/devices");
        for (name, _) in entries(&dax) {
            let link = dax.join(&name);
            let (Ok(path), Some(node)) = (std::fs::read_link(&link), target_node(&link)) else {
                continue;
            };
            let parts: Vec<String> = path
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let any = |f: &dyn Fn(&str) -> bool| parts.iter().any(|p| f(p));
            if any(&|p| numbered(p, "ndbus").is_some()) {
                targets.pmem.insert(node);
            } else if any(&|p| numbered(p, "region").is_some())
                && any(&|p| p.starts_with("ACPI0017") || p.starts_with("decoder"))
            {
                targets.cxl.insert(node);
            }
        }
        targets
    }
}

/// Whether `cpu_model` is an Intel Xeon CPU Max (Sapphire Rapids with HBM), e.g.
/// "Intel(R) Xeon(R) CPU Max 9480".
pub(crate) fn is_xeon_max(cpu_model: &str) -> bool {
    let words: Vec<&str> = cpu_model
        .split(|c: char| !c.is_ascii_alphanumeric())
        .collect();
    words.contains(&"Xeon") && words.contains(&"Max")
}

/// The read bandwidth the firmware quotes for a node (CPU initiators first).
fn hmat_read_bandwidth(node: &NumaNode) -> Option<u64> {
    node.hmat_cpu
        .as_ref()
        .and_then(|a| a.read_bandwidth_mb_s)
        .or_else(|| node.hmat.as_ref().and_then(|a| a.read_bandwidth_mb_s))
}

/// Whether the HMAT says CPU-less `node` reads faster than the nodes with CPUs nearest to
/// it; None when there is no figure to compare. `nodes` are the online nodes in id order,
/// the order of a distance row.
fn hmat_says_faster(node: &NumaNode, nodes: &[NumaNode]) -> Option<bool> {
    let own = hmat_read_bandwidth(node)?;
    let with_cpus: Vec<(usize, &NumaNode)> = nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.cpus.is_empty())
        .collect();
    let distance = |k: usize| {
        if node.distances.len() == nodes.len() {
            node.distances[k]
        } else {
            0
        }
    };
    let nearest = with_cpus.iter().map(|&(k, _)| distance(k)).min()?;
    let best = with_cpus
        .iter()
        .filter(|&&(k, _)| distance(k) == nearest)
        .filter_map(|&(_, n)| hmat_read_bandwidth(n))
        .max()?;
    Some(own > best)
}

/// Sets every node's kind by the rule in the module doc. `nodes` are the online nodes in id
/// order (their HMAT figures and tiers already read).
pub(crate) fn classify(nodes: &mut [NumaNode], targets: &RegionTargets, cpu_model: &str) {
    let xeon_max = is_xeon_max(cpu_model);
    let cpu_tiers: Vec<u32> = (nodes.iter().filter(|n| n.has_cpus()))
        .filter_map(|n| n.tier)
        .collect();
    let tier_says_faster = |node: &NumaNode| match node.tier.filter(|_| !cpu_tiers.is_empty()) {
        Some(t) if cpu_tiers.iter().all(|&d| t != d) => Some(cpu_tiers.iter().all(|&d| t < d)),
        _ => None,
    };
    let kinds: Vec<MemoryKind> = nodes
        .iter()
        .map(|node| {
            if targets.cxl.contains(&node.id) {
                MemoryKind::Cxl
            } else if targets.pmem.contains(&node.id) {
                MemoryKind::PmemAsRam
            } else if !node.cpus.is_empty() {
                MemoryKind::Dram
            } else {
                match hmat_says_faster(node, nodes).or_else(|| tier_says_faster(node)) {
                    Some(true) => MemoryKind::Hbm,
                    Some(false) => MemoryKind::Far,
                    None if xeon_max => MemoryKind::Hbm,
                    None => MemoryKind::Unknown,
                }
            }
        })
        .collect();
    for (node, kind) in nodes.iter_mut().zip(kinds) {
        node.kind = kind;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::fake_files::put;

    #[test]
    fn names_flags_and_balancing_modes_parse() {
        assert_eq!(numbered("node3", "node"), Some(3));
        assert_eq!(numbered("memory_tier22", "memory_tier"), Some(22));
        for bad in ["node", "nodeX", "node-1", "has_cpu", "node3a"] {
            assert_eq!(numbered(bad, "node"), None, "{bad}");
        }
        assert!(is_dax_device_name("dax0.0") && is_dax_device_name("dax12.3"));
        for bad in ["dax0", "dax.0", "dax0.", "dax_region0", "daxa.b"] {
            assert!(!is_dax_device_name(bad), "{bad}");
        }
        assert_eq!(parse_flag("true\n"), Some(true));
        assert_eq!(parse_flag("false"), Some(false));
        assert_eq!(parse_flag("maybe"), None);
        for (text, mode) in [
            ("0", NumaBalancing::Disabled),
            ("1", NumaBalancing::Normal),
            ("2\n", NumaBalancing::MemoryTiering),
            ("3", NumaBalancing::NormalAndTiering),
        ] {
            assert_eq!(NumaBalancing::parse(text), Some(mode));
            assert_eq!(
                NumaBalancing::parse(text).map(NumaBalancing::value),
                text.trim().parse().ok()
            );
        }
        for bad in ["4", "-1", "", "two"] {
            assert_eq!(NumaBalancing::parse(bad), None, "{bad}");
        }
        assert!(is_xeon_max("Intel(R) Xeon(R) CPU Max 9480"));
        assert!(!is_xeon_max("Intel(R) Xeon(R) Platinum 8480+"));
        assert!(!is_xeon_max("AMD EPYC 9654 96-Core Processor"));
    }

    #[test]
    fn hmat_access_classes_parse_and_missing_or_garbage_reads_as_none() {
        let root = tempfile::tempdir().unwrap();
        let node = root.path().join("node2");
        // No access directory at all: no HMAT.
        std::fs::create_dir_all(&node).unwrap();
        assert_eq!(HmatAccess::read_at(&node, 0), None);
        // A full access class: figures and the initiator links.
        let init = "node2/access0/initiators";
        put(root.path(), &format!("{init}/read_latency"), "250");
        put(root.path(), &format!("{init}/write_latency"), "260");
        put(root.path(), &format!("{init}/read_bandwidth"), "30000");
        put(root.path(), &format!("{init}/write_bandwidth"), "20000");
        for m in [1, 0] {
            std::os::unix::fs::symlink(
                format!("../../../node{m}"),
                node.join(format!("access0/initiators/node{m}")),
            )
            .unwrap();
        }
        assert_eq!(
            HmatAccess::read_at(&node, 0),
            Some(HmatAccess {
                initiators: vec![0, 1],
                read_latency_ns: Some(250),
                write_latency_ns: Some(260),
                read_bandwidth_mb_s: Some(30000),
                write_bandwidth_mb_s: Some(20000),
            })
        );
        // Garbage and missing figures read as None, never a panic; an empty directory is
        // no HMAT at all.
        std::fs::create_dir_all(node.join("access1/initiators")).unwrap();
        assert_eq!(HmatAccess::read_at(&node, 1), None);
        put(root.path(), "node2/access1/initiators/read_latency", "fast");
        put(root.path(), "node2/access1/initiators/read_bandwidth", "-5");
        put(
            root.path(),
            "node2/access1/initiators/write_bandwidth",
            "99999999999999999999999",
        );
        assert_eq!(HmatAccess::read_at(&node, 1), None);
        put(root.path(), "node2/access1/initiators/write_latency", "300");
        let partial = HmatAccess::read_at(&node, 1).unwrap();
        assert_eq!(partial.write_latency_ns, Some(300));
        assert_eq!(partial.read_latency_ns, None);
        assert!(partial.initiators.is_empty());
        // A file far larger than any sysfs attribute is not read (bounded read).
        put(
            root.path(),
            "node2/access1/initiators/read_bandwidth",
            &"7".repeat(200_000),
        );
        assert_eq!(
            HmatAccess::read_at(&node, 1).unwrap().read_bandwidth_mb_s,
            None
        );
    }

    #[test]
    fn memory_tier_nodelists_parse_sorted_by_id() {
        let sys = tempfile::tempdir().unwrap();
        let tiering = "devices/virtual/memory_tiering";
        put(
            sys.path(),
            &format!("{tiering}/memory_tier22/nodelist"),
            "2-3",
        );
        put(
            sys.path(),
            &format!("{tiering}/memory_tier4/nodelist"),
            "0,1",
        );
        put(
            sys.path(),
            &format!("{tiering}/memory_tier9/nodelist"),
            "garbage",
        );
        put(sys.path(), &format!("{tiering}/uevent"), "");
        std::fs::create_dir_all(sys.path().join(format!("{tiering}/power"))).unwrap();
        let tiers = MemoryTier::read_all_at(sys.path());
        assert_eq!(
            tiers,
            vec![
                MemoryTier {
                    id: 4,
                    nodes: vec![0, 1]
                },
                MemoryTier {
                    id: 22,
                    nodes: vec![2, 3]
                },
            ]
        );
        let tiering = MemoryTiering {
            tiers,
            ..MemoryTiering::default()
        };
        let tier_of = |node| {
            tiering
                .tiers
                .iter()
                .find(|t| t.nodes.contains(&node))
                .map(|t| t.id)
        };
        assert_eq!(tier_of(3), Some(22));
        assert_eq!(tier_of(5), None);
    }

    #[test]
    fn a_kernel_without_tiers_or_weighted_interleave_reads_as_none() {
        let sys = tempfile::tempdir().unwrap();
        let proc = tempfile::tempdir().unwrap();
        assert_eq!(
            MemoryTiering::read_at(sys.path(), proc.path()),
            MemoryTiering::default()
        );
        // The directory without `auto` (Linux 6.9 to 6.15), one weight unreadable.
        let wi = "kernel/mm/mempolicy/weighted_interleave";
        put(sys.path(), &format!("{wi}/node1"), "2");
        put(sys.path(), &format!("{wi}/node0"), "5");
        put(sys.path(), &format!("{wi}/node7"), "heavy");
        put(proc.path(), "sys/kernel/numa_balancing", "7");
        let read = MemoryTiering::read_at(sys.path(), proc.path());
        assert_eq!(
            read.weighted_interleave,
            Some(WeightedInterleave {
                auto: None,
                weights: vec![(0, 5), (1, 2)],
            })
        );
        assert_eq!(read.numa_balancing, None);
        // `auto` as some 6.18 kernels name it.
        put(sys.path(), &format!("{wi}/__auto_type"), "true");
        let read = WeightedInterleave::read_at(sys.path()).unwrap();
        assert_eq!(read.auto, Some(true));
    }

    #[test]
    fn this_machines_tiering_reads_without_error() {
        let tiering = MemoryTiering::detect();
        // Every tier holds a node and the tiers come sorted.
        assert!(tiering.tiers.iter().all(|t| !t.nodes.is_empty()));
        assert!(tiering.tiers.windows(2).all(|w| w[0].id < w[1].id));
        if Path::new("/sys/kernel/mm/mempolicy/weighted_interleave").is_dir() {
            assert!(tiering.weighted_interleave.is_some());
        }
        println!("{tiering:#?}");
    }
}
