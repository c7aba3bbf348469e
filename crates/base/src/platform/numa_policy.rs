//! NUMA memory policy through the raw system calls `mbind` and `get_mempolicy` (issued
//! with the generic `syscall`, so libnuma is not needed): bind a range of pages to a node
//! before it is first touched, and ask which node a touched page lives on.
//!
//! The trap of this interface is `maxnode`: the kernel decrements it before reading, so it
//! reads `maxnode - 1` bits of the node mask. A mask of `w` 64-bit words is therefore
//! passed with `maxnode = 64·w + 1`, as libnuma does; passing `64·w` would silently drop
//! the highest node a full mask can name (node 63 of a one-word mask).

use std::fmt;
use std::io;

use crate::topology::cpu::{format_cpu_list, parse_cpu_list};

/// Memory policy modes (linux/mempolicy.h), defined here rather than taken from a library.
pub(crate) const MPOL_DEFAULT: i32 = 0;
pub(crate) const MPOL_PREFERRED: i32 = 1;
pub const MPOL_BIND: i32 = 2;
pub(crate) const MPOL_INTERLEAVE: i32 = 3;
pub(crate) const MPOL_LOCAL: i32 = 4;
/// Linux 6.9+: interleave page by page in proportion to the system's per-node weights
/// (`/sys/kernel/mm/mempolicy/weighted_interleave/nodeN`); EINVAL on older kernels.
pub const MPOL_WEIGHTED_INTERLEAVE: i32 = 6;

/// `mbind` flags: fail if pages already present are on other nodes (STRICT); move them
/// (MOVE, only pages mapped by this process alone).
#[cfg(test)]
pub(crate) const MPOL_MF_STRICT: u32 = 1 << 0;
pub(crate) const MPOL_MF_MOVE: u32 = 1 << 1;

/// `get_mempolicy` flags: return a node id instead of the policy (NODE), of the page or
/// the mapping at `addr` rather than of the thread (ADDR).
const MPOL_F_NODE: libc::c_ulong = 1 << 0;
const MPOL_F_ADDR: libc::c_ulong = 1 << 1;

/// Mode flags the kernel may OR into a returned mode (STATIC_NODES, RELATIVE_NODES,
/// NUMA_BALANCING); masked off before the mode is named.
const MPOL_MODE_FLAGS: i32 = (1 << 15) | (1 << 14) | (1 << 13);

const NODE_SYSFS: &str = "/sys/devices/system/node";

/// A memory policy mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The thread's (or the system's) policy.
    Default,
    /// Allocate on the node if it can; fall back to others.
    Preferred,
    /// Allocate only on the nodes of the mask; fail (or reclaim, or OOM) otherwise.
    Bind,
    /// Round-robin over the nodes of the mask, page by page.
    Interleave,
    /// On the node of the CPU that faults the page in.
    Local,
    /// Round-robin over the nodes of the mask, `weight` pages of a node in a row, with the
    /// system's weights (Linux 6.9+).
    WeightedInterleave,
    /// A mode this module does not name (newer kernels have more).
    Other(i32),
}

impl Mode {
    pub fn raw(self) -> i32 {
        match self {
            Mode::Default => MPOL_DEFAULT,
            Mode::Preferred => MPOL_PREFERRED,
            Mode::Bind => MPOL_BIND,
            Mode::Interleave => MPOL_INTERLEAVE,
            Mode::Local => MPOL_LOCAL,
            Mode::WeightedInterleave => MPOL_WEIGHTED_INTERLEAVE,
            Mode::Other(raw) => raw,
        }
    }

    pub fn from_raw(raw: i32) -> Mode {
        match raw & !MPOL_MODE_FLAGS {
            MPOL_DEFAULT => Mode::Default,
            MPOL_PREFERRED => Mode::Preferred,
            MPOL_BIND => Mode::Bind,
            MPOL_INTERLEAVE => Mode::Interleave,
            MPOL_LOCAL => Mode::Local,
            MPOL_WEIGHTED_INTERLEAVE => Mode::WeightedInterleave,
            other => Mode::Other(other),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::Default => f.write_str("MPOL_DEFAULT"),
            Mode::Preferred => f.write_str("MPOL_PREFERRED"),
            Mode::Bind => f.write_str("MPOL_BIND"),
            Mode::Interleave => f.write_str("MPOL_INTERLEAVE"),
            Mode::Local => f.write_str("MPOL_LOCAL"),
            Mode::WeightedInterleave => f.write_str("MPOL_WEIGHTED_INTERLEAVE"),
            Mode::Other(raw) => write!(f, "mode {raw}"),
        }
    }
}

/// A set of nodes as the kernel's bitmap: bit `n % 64` of word `n / 64` is node `n`.
///
/// The kernel reads the mask as `unsigned long`s; 64-bit words have the same layout on
/// every 64-bit target and on little-endian 32-bit ones.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeMask {
    words: Vec<u64>,
}

impl NodeMask {
    /// An empty mask with room for nodes below `nodes`.
    pub fn with_capacity(nodes: usize) -> NodeMask {
        NodeMask {
            words: vec![0; nodes.div_ceil(64)],
        }
    }

    /// The mask of one node, sized for it.
    pub fn single(node: usize) -> NodeMask {
        NodeMask::from_nodes(&[node])
    }

    /// The mask of `nodes`, sized for the highest of them.
    pub fn from_nodes(nodes: &[usize]) -> NodeMask {
        let mut mask = NodeMask::with_capacity(nodes.iter().max().map_or(0, |&n| n + 1));
        for &node in nodes {
            mask.insert(node);
        }
        mask
    }

    pub fn insert(&mut self, node: usize) {
        let word = node / 64;
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << (node % 64);
    }

    pub fn contains(&self, node: usize) -> bool {
        self.words
            .get(node / 64)
            .is_some_and(|w| w & (1 << (node % 64)) != 0)
    }

    /// The nodes in the mask, ascending.
    pub fn nodes(&self) -> Vec<usize> {
        (0..self.words.len() * 64)
            .filter(|&n| self.contains(n))
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The `maxnode` argument for this mask: the kernel reads `maxnode - 1` bits, so one
    /// more than the bits the words hold (0 for no mask at all).
    pub(crate) fn maxnode(&self) -> libc::c_ulong {
        if self.words.is_empty() {
            0
        } else {
            (self.words.len() * 64 + 1) as libc::c_ulong
        }
    }

    /// "node 1", "nodes 0-3" or "no node", for messages.
    pub fn describe(&self) -> String {
        match self.nodes().as_slice() {
            [] => "no node".to_string(),
            [one] => format!("node {one}"),
            _ => format!("nodes {self}"),
        }
    }

    fn as_ptr(&self) -> *const u64 {
        if self.words.is_empty() {
            std::ptr::null()
        } else {
            self.words.as_ptr()
        }
    }
}

impl fmt::Display for NodeMask {
    /// As the kernel lists nodes: "0", "0-3,6".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nodes = self.nodes();
        if nodes.is_empty() {
            f.write_str("(none)")
        } else {
            f.write_str(&format_cpu_list(&nodes))
        }
    }
}

/// A mapping's memory policy as `get_mempolicy` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg(test)]
pub(crate) struct Policy {
    pub mode: Mode,
    pub nodes: NodeMask,
}

/// Sets the memory policy of the pages in `[addr, addr + len)`: with `Mode::Bind` and a
/// one-node mask, every page faulted in afterwards comes from that node. Pages already
/// present stay where they are unless `flags` has [`MPOL_MF_MOVE`] ([`MPOL_MF_STRICT`]
/// turns a page that is and stays elsewhere into an error). `addr` must be page aligned.
///
/// Safe to call on any range: a policy never changes what memory holds, and a range that
/// is not mapped is an error (EFAULT), not undefined behaviour.
pub fn mbind(
    addr: *mut u8,
    len: usize,
    mode: Mode,
    nodes: &NodeMask,
    flags: u32,
) -> io::Result<()> {
    let page = crate::topology::memory::base_page_bytes() as usize;
    if !(addr as usize).is_multiple_of(page) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("mbind: address {addr:p} is not aligned to the {page}-byte page"),
        ));
    }
    // SAFETY: maxnode() is derived from the mask's length, so the kernel reads only words
    // the mask holds.
    let result = unsafe {
        raw_mbind(
            addr as usize,
            len,
            mode,
            nodes.as_ptr(),
            nodes.maxnode(),
            flags,
        )
    };
    if let Err(error) = result {
        let hint = explain(&error, nodes);
        return Err(io::Error::new(
            error.kind(),
            format!(
                "mbind of {len} bytes at {addr:p} to {} ({mode}) failed: {error}{hint}",
                nodes.describe()
            ),
        ));
    }
    Ok(())
}

/// The system call itself.
///
/// # Safety
/// `mask` must be valid for reads of `maxnode - 1` bits, rounded up to whole 64-bit words
/// (or null with `maxnode` 0).
unsafe fn raw_mbind(
    addr: usize,
    len: usize,
    mode: Mode,
    mask: *const u64,
    maxnode: libc::c_ulong,
    flags: u32,
) -> io::Result<()> {
    let ret = libc::syscall(
        libc::SYS_mbind,
        addr as libc::c_ulong,
        len as libc::c_ulong,
        mode.raw() as libc::c_ulong,
        mask,
        maxnode,
        flags as libc::c_ulong,
    );
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Why a policy call failed, in words, for the errors that have a usual cause.
fn explain(error: &io::Error, nodes: &NodeMask) -> String {
    match error.raw_os_error() {
        Some(libc::EINVAL) => {
            let Some(usable) = memory_nodes() else {
                return String::new();
            };
            let missing: Vec<usize> = nodes
                .nodes()
                .into_iter()
                .filter(|n| !usable.contains(n))
                .collect();
            if missing.is_empty() {
                String::new()
            } else {
                let (which, verb) = match missing.as_slice() {
                    [one] => (format!("node {one}"), "does not exist or has"),
                    _ => (
                        format!("nodes {}", format_cpu_list(&missing)),
                        "do not exist or have",
                    ),
                };
                format!(
                    "; {which} {verb} no memory this process may use (nodes with memory: {})",
                    format_cpu_list(&usable)
                )
            }
        }
        Some(libc::EPERM) => "; the system call is not permitted here (a container's default \
             seccomp profile allows it only with CAP_SYS_NICE, e.g. docker run --cap-add SYS_NICE)"
            .to_string(),
        Some(libc::ENOSYS) => "; this kernel was built without NUMA support".to_string(),
        Some(libc::EIO) => "; some pages are on other nodes and could not be moved".to_string(),
        Some(libc::EFAULT) => "; part of the range is not mapped".to_string(),
        _ => String::new(),
    }
}

/// The node of the page that holds `addr`. Touch the page first: the query faults an
/// absent page in for reading, which maps the shared zero page and reports *its* node.
pub fn node_of_page(addr: *const u8) -> io::Result<usize> {
    let mut node: libc::c_int = -1;
    // SAFETY: `node` is a valid int to write; no mask is passed (null, maxnode 0), so the
    // kernel writes nothing else.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut node as *mut libc::c_int,
            std::ptr::null_mut::<u64>(),
            0 as libc::c_ulong,
            addr as libc::c_ulong,
            MPOL_F_NODE | MPOL_F_ADDR,
        )
    };
    if ret != 0 {
        let error = io::Error::last_os_error();
        let hint = explain(&error, &NodeMask::default());
        return Err(io::Error::new(
            error.kind(),
            format!("get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) for the page at {addr:p} failed: {error}{hint}"),
        ));
    }
    usize::try_from(node).map_err(|_| {
        io::Error::other(format!(
            "get_mempolicy returned node {node} for the page at {addr:p}"
        ))
    })
}

/// The fraction of `samples` pages, spread evenly over `[start, start + len)`, that live
/// on `node`. The pages must have been touched.
pub fn fraction_on_node(
    start: *const u8,
    len: usize,
    node: usize,
    samples: usize,
) -> io::Result<f64> {
    let page = crate::topology::memory::base_page_bytes() as usize;
    let pages = len.div_ceil(page).max(1);
    let samples = samples.clamp(1, pages);
    let mut on_node = 0usize;
    for k in 0..samples {
        // Evenly spread, including the first and (for several samples) the last page.
        let index = if samples == 1 {
            0
        } else {
            k * (pages - 1) / (samples - 1)
        };
        // Only passed to the kernel as an address, never dereferenced.
        let addr = (start as usize + index * page) as *const u8;
        if node_of_page(addr)? == node {
            on_node += 1;
        }
    }
    Ok(on_node as f64 / samples as f64)
}

/// Nodes that have memory and that this process may allocate from (its cpuset's
/// Mems_allowed), ascending; None when neither can be read.
pub fn memory_nodes() -> Option<Vec<usize>> {
    let with_memory = std::fs::read_to_string(format!("{NODE_SYSFS}/has_memory"))
        .ok()
        .and_then(|s| parse_cpu_list(&s).ok());
    let allowed = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Mems_allowed_list:"))
                .and_then(|list| parse_cpu_list(list).ok())
        });
    match (with_memory, allowed) {
        (Some(memory), Some(allowed)) => {
            Some(memory.into_iter().filter(|n| allowed.contains(n)).collect())
        }
        (one, other) => one.or(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nodes a mask is sized for when sysfs does not say how many nodes are possible: the
    /// largest MAX_NUMNODES of common kernel configurations (NODES_SHIFT = 10).
    const FALLBACK_POSSIBLE_NODES: usize = 1024;

    /// How many node ids the kernel may use (the highest possible node + 1).
    fn possible_nodes() -> Option<usize> {
        let text = std::fs::read_to_string(format!("{NODE_SYSFS}/possible")).ok()?;
        parse_cpu_list(&text).ok()?.last().map(|&n| n + 1)
    }

    /// The memory policy of the mapping that holds `addr` (MPOL_DEFAULT with no nodes when
    /// none was set).
    fn policy_of(addr: *const u8) -> io::Result<Policy> {
        // The kernel refuses a mask shorter than the number of possible nodes.
        let mut nodes =
            NodeMask::with_capacity(possible_nodes().unwrap_or(FALLBACK_POSSIBLE_NODES));
        let mut mode: libc::c_int = 0;
        // SAFETY: the kernel writes `maxnode - 1` bits into the mask, which holds that many,
        // and one int into `mode`.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_get_mempolicy,
                &mut mode as *mut libc::c_int,
                nodes.words.as_mut_ptr(),
                nodes.maxnode(),
                addr as libc::c_ulong,
                MPOL_F_ADDR,
            )
        };
        if ret != 0 {
            let error = io::Error::last_os_error();
            let hint = explain(&error, &NodeMask::default());
            return Err(io::Error::new(
                error.kind(),
                format!("get_mempolicy(MPOL_F_ADDR) for {addr:p} failed: {error}{hint}"),
            ));
        }
        Ok(Policy {
            mode: Mode::from_raw(mode),
            nodes,
        })
    }
    use crate::platform::arena::UntouchedMapping;

    /// True (after saying why) when the policy calls are unavailable here: a container
    /// may forbid them, a kernel may lack NUMA.
    fn unavailable(error: &io::Error) -> bool {
        let skip = matches!(error.raw_os_error(), Some(libc::EPERM | libc::ENOSYS));
        if skip {
            eprintln!("skipped: {error}");
        }
        skip
    }

    #[test]
    fn masks_are_sized_for_the_highest_node_and_maxnode_counts_one_more_bit() {
        let zero = NodeMask::single(0);
        assert_eq!(zero.words(), &[1]);
        assert_eq!(zero.maxnode(), 65);
        // Node 63 is the last bit of word 0: the kernel reads 64 bits, so it is seen.
        assert_eq!(NodeMask::single(63).words(), &[1 << 63]);
        assert_eq!(NodeMask::single(63).maxnode(), 65);
        let mask = NodeMask::from_nodes(&[1, 64, 3]);
        assert_eq!(mask.words(), &[0b1010, 1]);
        assert_eq!(mask.maxnode(), 129);
        assert_eq!(mask.nodes(), vec![1, 3, 64]);
        assert!(mask.contains(64) && !mask.contains(2) && !mask.contains(1000));
        assert_eq!(mask.to_string(), "1,3,64");
        assert_eq!(mask.describe(), "nodes 1,3,64");
        assert_eq!(zero.describe(), "node 0");
        assert_eq!(NodeMask::default().maxnode(), 0);
        assert!(NodeMask::with_capacity(130).is_empty());
        assert_eq!(NodeMask::with_capacity(130).words().len(), 3);
    }

    #[test]
    fn modes_round_trip_and_ignore_mode_flags() {
        for mode in [
            Mode::Default,
            Mode::Preferred,
            Mode::Bind,
            Mode::Interleave,
            Mode::Local,
            Mode::WeightedInterleave,
        ] {
            assert_eq!(Mode::from_raw(mode.raw()), mode);
        }
        assert_eq!(Mode::from_raw(MPOL_BIND | (1 << 15)), Mode::Bind);
        assert_eq!(Mode::from_raw(9), Mode::Other(9));
    }

    #[test]
    fn a_mapping_bound_to_node_0_gets_its_pages_there() {
        let mapping = UntouchedMapping::new(64);
        if let Err(error) = mbind(
            mapping.ptr,
            mapping.len,
            Mode::Bind,
            &NodeMask::single(0),
            0,
        ) {
            assert!(unavailable(&error), "{error}");
            return;
        }
        let policy = policy_of(mapping.ptr).unwrap();
        assert_eq!(policy.mode, Mode::Bind);
        assert_eq!(policy.nodes.nodes(), vec![0]);
        mapping.touch();
        for page in [0, 1, 31, 63] {
            // SAFETY: inside the mapping.
            let addr = unsafe { mapping.ptr.add(page * 4096) };
            assert_eq!(node_of_page(addr).unwrap(), 0);
        }
        let fraction = fraction_on_node(mapping.ptr, mapping.len, 0, 16).unwrap();
        assert_eq!(fraction, 1.0);
    }

    #[test]
    fn the_kernel_reads_one_bit_less_than_maxnode() {
        let mapping = UntouchedMapping::new(4);
        let mask = NodeMask::single(0);
        // maxnode 1: the kernel reads no bit at all, so the mask is empty and MPOL_BIND
        // has no node to bind to. maxnode 2 reads bit 0: node 0.
        // SAFETY: the mask holds one word, more than either call reads.
        let none = unsafe {
            raw_mbind(
                mapping.ptr as usize,
                mapping.len,
                Mode::Bind,
                mask.as_ptr(),
                1,
                0,
            )
        };
        let error = none.unwrap_err();
        if unavailable(&error) {
            return;
        }
        assert_eq!(error.raw_os_error(), Some(libc::EINVAL));
        // SAFETY: as above.
        unsafe {
            raw_mbind(
                mapping.ptr as usize,
                mapping.len,
                Mode::Bind,
                mask.as_ptr(),
                2,
                0,
            )
        }
        .unwrap();
        assert_eq!(policy_of(mapping.ptr).unwrap().nodes.nodes(), vec![0]);
    }

    #[test]
    fn moving_touched_pages_to_their_own_node_succeeds() {
        let mapping = UntouchedMapping::new(8);
        mapping.touch();
        let flags = MPOL_MF_STRICT | MPOL_MF_MOVE;
        let result = mbind(
            mapping.ptr,
            mapping.len,
            Mode::Preferred,
            &NodeMask::single(0),
            flags,
        );
        if let Err(error) = result {
            assert!(unavailable(&error), "{error}");
            return;
        }
        assert_eq!(policy_of(mapping.ptr).unwrap().mode, Mode::Preferred);
        assert_eq!(node_of_page(mapping.ptr).unwrap(), 0);
    }

    #[test]
    fn binding_to_a_node_that_does_not_exist_fails_and_says_so() {
        let mapping = UntouchedMapping::new(4);
        let absent = possible_nodes().unwrap_or(1);
        for node in [absent, 5000] {
            let error = mbind(
                mapping.ptr,
                mapping.len,
                Mode::Bind,
                &NodeMask::single(node),
                0,
            )
            .unwrap_err();
            if unavailable(&error) {
                return;
            }
            let text = error.to_string();
            assert_eq!(
                error.raw_os_error(),
                None,
                "context replaces the bare errno"
            );
            assert!(
                text.contains(&format!("to node {node} (MPOL_BIND)")),
                "{text}"
            );
            assert!(
                text.contains(&format!("; node {node} does not exist or has no memory")),
                "{text}"
            );
            assert!(text.contains("nodes with memory: "), "{text}");
        }
    }

    #[test]
    fn an_unaligned_address_is_refused_before_the_kernel_sees_it() {
        let mapping = UntouchedMapping::new(2);
        // SAFETY: inside the mapping.
        let inside = unsafe { mapping.ptr.add(8) };
        let error = mbind(inside, 4096, Mode::Bind, &NodeMask::single(0), 0).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        assert!(error.to_string().contains("not aligned"), "{error}");
    }

    #[test]
    fn this_process_may_use_some_node_with_memory() {
        if let Some(nodes) = memory_nodes() {
            assert!(!nodes.is_empty());
        }
    }
}
