//! Pages placed on NUMA nodes one by one, and the kernel's weighted interleave, for
//! measuring memory spread over several nodes without touching the system's settings:
//! `move_pages(2)` to move (or only ask about) given pages, `set_mempolicy(2)` for the
//! calling thread's policy, a probe of whether the kernel has `MPOL_WEIGHTED_INTERLEAVE`
//! (Linux 6.9+), and the system's weights read from
//! `/sys/kernel/mm/mempolicy/weighted_interleave` (read only here: they are written only
//! when a user asks, by `interleave_weights`).
//!
//! The weights are global, so trying a ratio through the kernel would change every other
//! program's interleaving; moving pages one by one places a buffer in any ratio instead,
//! and the kernel's own policy, with the weights it has now, checks that the two agree.
//! `move_pages` moves only pages this process alone maps (MPOL_MF_MOVE), needs no
//! privilege for the caller's own pages, and ignores the mapping's policy, which stays as
//! it was (bind it to the nodes used, so NUMA balancing leaves the pages where they are).

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::platform::numa_policy::{self, Mode, NodeMask, MPOL_MF_MOVE};
use crate::topology::tiers::WeightedInterleave;

/// Where the kernel keeps the weights (Linux 6.9+).
pub const WEIGHTS_DIR: &str = "/sys/kernel/mm/mempolicy/weighted_interleave";

/// Pages passed to one `move_pages` call: the kernel copies the arrays in, so this bounds
/// the memory each call takes and keeps a call short.
const PAGES_PER_CALL: usize = 16 * 1024;

/// Bytes read at most from one sysfs file; a weight or a boolean is a few bytes.
const SYSFS_READ_CAP: u64 = 4096;

/// What `move_pages` says of one page: the node it is on now, or why it is not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageStatus {
    /// On this node (moved there, or already there).
    Node(usize),
    /// Not placed: the page is not present (ENOENT), busy, or the move failed (an errno).
    Error(i32),
}

impl PageStatus {
    fn from_raw(raw: i32) -> PageStatus {
        match usize::try_from(raw) {
            Ok(node) => PageStatus::Node(node),
            Err(_) => PageStatus::Error(-raw),
        }
    }

    /// The node, when the page is on one.
    pub fn node(self) -> Option<usize> {
        match self {
            PageStatus::Node(node) => Some(node),
            PageStatus::Error(_) => None,
        }
    }
}

/// Moves each page `pages[k]` (any address inside it) to node `nodes[k]`, or with `None`
/// only asks where each page is; returns each page's status afterwards. Pages already on
/// their node stay; a page shared with another process, or one the kernel could not move,
/// gets an error status while the others move. Touch the pages first: an absent page is
/// `Error(ENOENT)`.
///
/// Safe on any addresses: the kernel reads and writes only the arrays given here, and an
/// unmapped address is an error status (EFAULT), not undefined behaviour.
pub fn move_pages(pages: &[*const u8], nodes: Option<&[usize]>) -> io::Result<Vec<PageStatus>> {
    if let Some(nodes) = nodes {
        if nodes.len() != pages.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "move_pages: {} pages but {} target nodes",
                    pages.len(),
                    nodes.len()
                ),
            ));
        }
    }
    let mut statuses = Vec::with_capacity(pages.len());
    for (chunk, start) in pages
        .chunks(PAGES_PER_CALL)
        .zip((0..).step_by(PAGES_PER_CALL))
    {
        // A node id beyond c_int cannot exist: the kernel refuses INT_MAX as one.
        let targets: Option<Vec<libc::c_int>> = nodes.map(|nodes| {
            nodes[start..start + chunk.len()]
                .iter()
                .map(|&n| libc::c_int::try_from(n).unwrap_or(libc::c_int::MAX))
                .collect()
        });
        let mut status = vec![libc::c_int::MIN; chunk.len()];
        // SAFETY: `chunk`, `targets` (when given) and `status` each hold `chunk.len()`
        // elements, which is the count passed; the kernel reads the first two and writes
        // the third only. Pid 0 is this process.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                0 as libc::c_long,
                chunk.len() as libc::c_ulong,
                chunk.as_ptr(),
                targets.as_ref().map_or(std::ptr::null(), |t| t.as_ptr()),
                status.as_mut_ptr(),
                MPOL_MF_MOVE as libc::c_long,
            )
        };
        // A positive return counts pages not moved; their status says why.
        if ret < 0 {
            let error = io::Error::last_os_error();
            let hint = match error.raw_os_error() {
                Some(libc::ENODEV) => "; a target node is offline or has no memory",
                Some(libc::EACCES) => "; a target node is outside this process's cpuset",
                Some(libc::EPERM) => "; not permitted here (a container may forbid it)",
                Some(libc::ENOSYS) => "; this kernel was built without NUMA support",
                _ => "",
            };
            return Err(io::Error::new(
                error.kind(),
                format!("move_pages of {} pages failed: {error}{hint}", chunk.len()),
            ));
        }
        statuses.extend(status.into_iter().map(PageStatus::from_raw));
    }
    Ok(statuses)
}

/// Sets the calling thread's memory policy: the pages it faults in afterwards, in
/// mappings without a policy of their own, follow `mode` over `nodes`
/// (`Mode::WeightedInterleave` uses the system's weights). `Mode::Default` with an empty
/// mask sets it back. Run it on a thread of its own, or set the policy back after use.
pub fn set_mempolicy(mode: Mode, nodes: &NodeMask) -> io::Result<()> {
    let words = nodes.words();
    let mask = if words.is_empty() {
        std::ptr::null()
    } else {
        words.as_ptr()
    };
    // SAFETY: maxnode() is derived from the mask's length, so the kernel reads only the
    // words the mask holds (none for a null mask with maxnode 0).
    let ret = unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            mode.raw() as libc::c_long,
            mask,
            nodes.maxnode(),
        )
    };
    if ret == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    let hint = match (error.raw_os_error(), mode) {
        (Some(libc::EINVAL), Mode::WeightedInterleave) => {
            "; this kernel has no MPOL_WEIGHTED_INTERLEAVE (Linux 6.9+), or a node has no memory"
        }
        (Some(libc::EINVAL), _) => "; a node does not exist or has no memory",
        (Some(libc::EPERM), _) => "; not permitted here (a container may forbid it)",
        _ => "",
    };
    Err(io::Error::new(
        error.kind(),
        format!(
            "set_mempolicy({mode}, {}) failed: {error}{hint}",
            nodes.describe()
        ),
    ))
}

/// Whether the kernel accepts `MPOL_WEIGHTED_INTERLEAVE`: asked by setting it on one
/// unused page of a mapping of its own (the mapping's policy, not the thread's, so
/// nothing else changes). Err with the reason when the call is refused for another cause
/// (a container's seccomp profile, a kernel without NUMA).
pub fn kernel_has_weighted_interleave(node: usize) -> io::Result<bool> {
    let page = crate::topology::memory::base_page_bytes() as usize;
    // SAFETY: a fresh private anonymous mapping of one page, checked for failure below and
    // unmapped before returning; nothing reads or writes it.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let result = numa_policy::mbind(
        ptr as *mut u8,
        page,
        Mode::WeightedInterleave,
        &NodeMask::single(node),
        0,
    );
    // SAFETY: unmaps exactly the page mapped above.
    unsafe { libc::munmap(ptr, page) };
    match result {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == io::ErrorKind::InvalidInput => Ok(false),
        Err(error) => Err(error),
    }
}

/// The system's weighted interleave settings, as read (never written) from sysfs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SystemWeights {
    /// The weights and `auto` (None when the kernel has no such file).
    pub settings: WeightedInterleave,
    /// The directory they were read from.
    pub dir: PathBuf,
    /// The name of the auto-mode file: `auto` (Linux 6.16+), or `__auto_type` where a
    /// kernel built with `#define auto __auto_type` named it so (seen on 6.18); None
    /// without one.
    pub auto_file: Option<String>,
}

impl SystemWeights {
    /// The weight of `node` (1, the kernel's default, when it has no file).
    pub fn weight(&self, node: usize) -> u32 {
        self.settings
            .weights
            .iter()
            .find(|(n, _)| *n == node)
            .map_or(1, |&(_, w)| w)
    }
}

/// The weights under `dir` (normally [`WEIGHTS_DIR`]): each `nodeN` file's weight, and
/// the auto-mode file. None when the directory does not exist (a kernel before 6.9);
/// unreadable or malformed files are left out.
pub fn read_system_weights(dir: &Path) -> Option<SystemWeights> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut weights = Vec::new();
    let mut auto_file = None;
    let mut auto = None;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(node) = name
            .strip_prefix("node")
            .and_then(|n| n.parse::<usize>().ok())
        {
            if let Some(weight) = read_small(&dir.join(&name)).and_then(|t| t.parse().ok()) {
                weights.push((node, weight));
            }
        } else if name == "auto" || name == "__auto_type" {
            auto = read_small(&dir.join(&name)).and_then(|t| match t.as_str() {
                "true" | "1" | "Y" => Some(true),
                "false" | "0" | "N" => Some(false),
                _ => None,
            });
            auto_file = Some(name);
        }
    }
    weights.sort_unstable();
    Some(SystemWeights {
        settings: WeightedInterleave { auto, weights },
        dir: dir.to_path_buf(),
        auto_file,
    })
}

/// A small sysfs file, trimmed, read to a cap; None when it cannot be read.
fn read_small(path: &Path) -> Option<String> {
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(SYSFS_READ_CAP)
        .read_to_string(&mut text)
        .ok()?;
    Some(text.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::arena::UntouchedMapping;

    fn page_addresses(mapping: &UntouchedMapping) -> Vec<*const u8> {
        let page = crate::topology::memory::base_page_bytes() as usize;
        (0..mapping.len / page)
            // SAFETY: inside the mapping.
            .map(|k| unsafe { mapping.ptr.add(k * page) } as *const u8)
            .collect()
    }

    /// True (after saying why) when the system refuses the call for a reason of its own.
    fn refused(error: &io::Error) -> bool {
        let text = error.to_string();
        let skip = text.contains("not permitted") || text.contains("without NUMA");
        if skip {
            eprintln!("skipped: {error}");
        }
        skip
    }

    #[test]
    fn pages_move_to_node_0_and_their_status_is_read_back() {
        let mapping = UntouchedMapping::new(16);
        let pages = page_addresses(&mapping);
        // Not touched yet: no page to report.
        let before = match move_pages(&pages, None) {
            Ok(statuses) => statuses,
            Err(error) if refused(&error) => return,
            Err(error) => panic!("{error}"),
        };
        assert!(before.iter().all(|s| *s == PageStatus::Error(libc::ENOENT)));
        mapping.touch();
        let moved = move_pages(&pages, Some(&vec![0; pages.len()])).unwrap();
        assert_eq!(moved, vec![PageStatus::Node(0); 16]);
        let now = move_pages(&pages, None).unwrap();
        assert!(now.iter().all(|s| s.node() == Some(0)));
        // The same answer as get_mempolicy's.
        assert_eq!(numa_policy::node_of_page(pages[3]).unwrap(), 0);
    }

    #[test]
    fn mismatched_arrays_and_absent_nodes_are_errors() {
        let mapping = UntouchedMapping::new(2);
        mapping.touch();
        let pages = page_addresses(&mapping);
        let error = move_pages(&pages, Some(&[0])).unwrap_err();
        assert!(
            error.to_string().contains("2 pages but 1 target"),
            "{error}"
        );
        // A node that cannot exist: the call fails or the pages say why, but none moves.
        match move_pages(&pages, Some(&[4000, 4000])) {
            Ok(statuses) => assert!(statuses.iter().all(|s| s.node() != Some(4000))),
            Err(error) => assert!(error.to_string().contains("move_pages of 2 pages")),
        }
    }

    #[test]
    fn weighted_interleave_on_node_0_is_accepted_by_this_kernel() {
        match kernel_has_weighted_interleave(0) {
            Ok(true) => {}
            Ok(false) => return eprintln!("skipped: this kernel has no weighted interleave"),
            Err(error) => return eprintln!("skipped: {error}"),
        }
        // The thread's own policy, on a thread of its own, then a page faulted in there.
        let node = std::thread::spawn(|| {
            set_mempolicy(Mode::WeightedInterleave, &NodeMask::single(0))?;
            let mapping = UntouchedMapping::new(4);
            mapping.touch();
            let node = numa_policy::node_of_page(mapping.ptr);
            set_mempolicy(Mode::Default, &NodeMask::default())?;
            node
        })
        .join()
        .unwrap()
        .unwrap();
        assert_eq!(node, 0);
    }

    #[test]
    fn weights_are_read_from_node_files_and_either_auto_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("node0"), "3\n").unwrap();
        std::fs::write(dir.path().join("node2"), "1\n").unwrap();
        std::fs::write(dir.path().join("node5"), "junk\n").unwrap();
        std::fs::write(dir.path().join("__auto_type"), "true\n").unwrap();
        let read = read_system_weights(dir.path()).unwrap();
        assert_eq!(read.settings.weights, vec![(0, 3), (2, 1)]);
        assert_eq!(read.settings.auto, Some(true));
        assert_eq!(read.auto_file.as_deref(), Some("__auto_type"));
        assert_eq!((read.weight(0), read.weight(2), read.weight(7)), (3, 1, 1));

        std::fs::remove_file(dir.path().join("__auto_type")).unwrap();
        std::fs::write(dir.path().join("auto"), "false").unwrap();
        let read = read_system_weights(dir.path()).unwrap();
        assert_eq!(
            (read.settings.auto, read.auto_file.as_deref()),
            (Some(false), Some("auto"))
        );
        // Before 6.9 there is no directory at all.
        assert_eq!(read_system_weights(&dir.path().join("absent")), None);
    }

    #[test]
    fn this_system_weights_if_any_are_between_1_and_255() {
        if let Some(read) = read_system_weights(Path::new(WEIGHTS_DIR)) {
            assert!(read
                .settings
                .weights
                .iter()
                .all(|&(_, w)| (1..=255).contains(&w)));
        }
    }
}
