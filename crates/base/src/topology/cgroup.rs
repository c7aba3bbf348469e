//! The memory limit of this process's cgroups, which can be far below what
//! /proc/meminfo calls available (a container, a systemd slice, a CI job): the kernel
//! kills the process at the cgroup's limit whatever MemAvailable says.
//!
//! Both hierarchies are read. cgroup v2: the `0::PATH` line of /proc/self/cgroup, the
//! cgroup2 mount found in /proc/self/mountinfo (not always /sys/fs/cgroup), then for the
//! cgroup and each ancestor under the mount `memory.max` ("max" = none) minus
//! `memory.current`. cgroup v1: the `memory` controller's line and mount,
//! `memory.limit_in_bytes` (a value near 2^63 = none) minus `memory.usage_in_bytes`
//! along the same path, and the leaf's `hierarchical_memory_limit` (memory.stat), which
//! also covers ancestors the mount does not show. (`memory.memsw.limit_in_bytes` is never
//! below the memory limit, so it cannot be the tighter one.) Usage counts without the
//! inactive file cache, which the kernel reclaims before it kills. The limit with the
//! least headroom is the one that counts.
//!
//! In a container the cgroup path often reads "/" while the controller is mounted at the
//! container's own cgroup: a path outside the mount's root maps to the mount itself.
//! Everything is a pure function of the two texts and a root directory, so tests run
//! on fake files.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::storage::unescape;
use crate::units::Bytes;

/// The file a limit was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitSource {
    /// cgroup v2 `memory.max`.
    V2MemoryMax,
    /// cgroup v1 `memory.limit_in_bytes`.
    V1LimitInBytes,
    /// cgroup v1 `hierarchical_memory_limit` of the leaf's `memory.stat`: the tightest
    /// limit among its ancestors, also those above the mount.
    V1HierarchicalLimit,
}

impl LimitSource {
    /// The kernel file, for messages.
    pub fn file(self) -> &'static str {
        match self {
            LimitSource::V2MemoryMax => "cgroup v2 memory.max",
            LimitSource::V1LimitInBytes => "cgroup v1 memory.limit_in_bytes",
            LimitSource::V1HierarchicalLimit => "cgroup v1 hierarchical_memory_limit",
        }
    }
}

/// One memory limit on this process and what is charged against it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupMemoryLimit {
    pub source: LimitSource,
    /// The cgroup that sets it, as a path in its hierarchy ("/user.slice/job").
    pub cgroup: String,
    pub limit_bytes: u64,
    /// Charged to the cgroup now, without its inactive file cache.
    pub in_use_bytes: u64,
}

impl CgroupMemoryLimit {
    /// What may still be allocated before the limit.
    pub fn headroom_bytes(&self) -> u64 {
        self.limit_bytes.saturating_sub(self.in_use_bytes)
    }

    /// "the memory cgroup /x limit 300 MiB (cgroup v1 memory.limit_in_bytes) minus 30 MiB
    /// in use".
    pub fn describe(&self) -> String {
        format!(
            "the memory cgroup {} limit {} ({}) minus {} in use",
            self.cgroup,
            Bytes(self.limit_bytes),
            self.source.file(),
            Bytes(self.in_use_bytes)
        )
    }
}

/// A v1 limit at or above this is the kernel's "unlimited" (PAGE_COUNTER_MAX pages,
/// 9223372036854771712 with 4 KiB pages).
const V1_UNLIMITED: u64 = 1 << 62;

/// This process's tightest cgroup memory limit, if any is set.
pub fn detect() -> Option<CgroupMemoryLimit> {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    memory_limit(
        Path::new("/"),
        &read("/proc/self/cgroup"),
        &read("/proc/self/mountinfo"),
    )
}

/// The tightest memory limit (least headroom) of the cgroups `proc_cgroup` (the text of
/// /proc/self/cgroup) names, found through the mounts of `mountinfo`, with every path
/// read under `root`.
pub fn memory_limit(root: &Path, proc_cgroup: &str, mountinfo: &str) -> Option<CgroupMemoryLimit> {
    let memberships = Memberships::parse(proc_cgroup);
    let mounts = parse_mountinfo(mountinfo);
    let mut limits = Vec::new();
    if let Some(path) = &memberships.v2 {
        if let Some(mount) = mounts.iter().find(|m| m.kind == MountKind::V2) {
            for (cgroup, dir) in directories(root, mount, path) {
                if let Some(limit) = v2_limit(&dir, &cgroup) {
                    limits.push(limit);
                }
            }
        }
    }
    if let Some(path) = &memberships.v1_memory {
        if let Some(mount) = mounts.iter().find(|m| m.kind == MountKind::V1Memory) {
            let levels = directories(root, mount, path);
            for (cgroup, dir) in &levels {
                limits.extend(v1_limit(dir, cgroup));
            }
            // Last: on a tie the limit a visible cgroup sets is named (min_by_key keeps
            // the first of equals).
            if let Some((cgroup, leaf)) = levels.first() {
                limits.extend(v1_hierarchical_limit(leaf, cgroup));
            }
        }
    }
    limits.into_iter().min_by_key(|l| l.headroom_bytes())
}

/// The cgroup paths of /proc/self/cgroup that concern memory.
#[derive(Debug, Default, PartialEq)]
struct Memberships {
    /// The `0::PATH` line (cgroup v2).
    v2: Option<String>,
    /// The line whose controllers include `memory` (cgroup v1).
    v1_memory: Option<String>,
}

impl Memberships {
    fn parse(text: &str) -> Memberships {
        let mut out = Memberships::default();
        for line in text.lines() {
            let mut fields = line.splitn(3, ':');
            let (Some(id), Some(controllers), Some(path)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            if id == "0" && controllers.is_empty() {
                out.v2 = Some(path.to_string());
            } else if controllers.split(',').any(|c| c == "memory") {
                out.v1_memory = Some(path.to_string());
            }
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MountKind {
    V2,
    V1Memory,
}

/// A cgroup filesystem mount: which part of the hierarchy (`root`) is where.
#[derive(Debug, PartialEq)]
struct Mount {
    kind: MountKind,
    root: String,
    mount_point: PathBuf,
}

/// The cgroup2 mounts and the cgroup v1 mounts of the memory controller, in the order of
/// mountinfo (fields: id, parent, dev, root, mount point, options, optional fields, "-",
/// fs type, source, super options).
fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let mut after = after.split(' ');
            let fs_type = after.next()?;
            let _source = after.next();
            let options = after.next().unwrap_or("");
            let kind = match fs_type {
                "cgroup2" => MountKind::V2,
                "cgroup" if options.split(',').any(|o| o == "memory") => MountKind::V1Memory,
                _ => return None,
            };
            Some(Mount {
                kind,
                root: unescape(fields.get(3)?),
                mount_point: PathBuf::from(unescape(fields.get(4)?)),
            })
        })
        .collect()
}

/// The cgroup `path` and its ancestors that the mount shows, leaf first, each as (its
/// path in the hierarchy, its directory under `root`). A path outside the mount's root
/// (a container whose cgroup reads "/" while the mount is its own cgroup, or a path the
/// namespace shows as "/../x") is the mount itself.
fn directories(root: &Path, mount: &Mount, path: &str) -> Vec<(String, PathBuf)> {
    let mount_root = mount.root.trim_end_matches('/');
    let relative = match path.strip_prefix(mount_root) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ => "",
    };
    let mut parts: Vec<&str> = relative.split('/').filter(|p| !p.is_empty()).collect();
    if parts.iter().any(|p| *p == "." || *p == "..") {
        parts.clear();
    }
    let base = root.join(
        mount
            .mount_point
            .strip_prefix("/")
            .unwrap_or(&mount.mount_point),
    );
    let mut out = Vec::new();
    loop {
        let name = format!("{mount_root}/{}", parts.join("/"));
        let name = if name.len() > 1 {
            name.trim_end_matches('/').to_string()
        } else {
            name
        };
        out.push((name, parts.iter().fold(base.clone(), |dir, p| dir.join(p))));
        if parts.pop().is_none() {
            break;
        }
    }
    out
}

/// A whole number from a cgroup file.
fn number(dir: &Path, file: &str) -> Option<u64> {
    std::fs::read_to_string(dir.join(file))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// A `key value` line of a memory.stat.
fn stat_field(stat: &str, key: &str) -> Option<u64> {
    stat.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

fn memory_stat(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("memory.stat")).unwrap_or_default()
}

fn v2_limit(dir: &Path, cgroup: &str) -> Option<CgroupMemoryLimit> {
    // "max" (no limit) does not parse; no file means no memory controller at this level.
    let limit_bytes = number(dir, "memory.max")?;
    let current = number(dir, "memory.current").unwrap_or(0);
    let inactive = stat_field(&memory_stat(dir), "inactive_file").unwrap_or(0);
    Some(CgroupMemoryLimit {
        source: LimitSource::V2MemoryMax,
        cgroup: cgroup.to_string(),
        limit_bytes,
        in_use_bytes: current.saturating_sub(inactive),
    })
}

/// The v1 usage without inactive file cache (`total_` counts the cgroup's children too,
/// as usage_in_bytes does).
fn v1_in_use(dir: &Path) -> u64 {
    let usage = number(dir, "memory.usage_in_bytes").unwrap_or(0);
    let stat = memory_stat(dir);
    let inactive = stat_field(&stat, "total_inactive_file")
        .or_else(|| stat_field(&stat, "inactive_file"))
        .unwrap_or(0);
    usage.saturating_sub(inactive)
}

fn v1_limit(dir: &Path, cgroup: &str) -> Option<CgroupMemoryLimit> {
    let limit_bytes = number(dir, "memory.limit_in_bytes").filter(|&l| l < V1_UNLIMITED)?;
    Some(CgroupMemoryLimit {
        source: LimitSource::V1LimitInBytes,
        cgroup: cgroup.to_string(),
        limit_bytes,
        in_use_bytes: v1_in_use(dir),
    })
}

/// The leaf's hierarchical limit, with the leaf's own usage (a lower bound of the
/// usage of the ancestor that sets it, when that one is not visible).
fn v1_hierarchical_limit(dir: &Path, cgroup: &str) -> Option<CgroupMemoryLimit> {
    let limit_bytes =
        stat_field(&memory_stat(dir), "hierarchical_memory_limit").filter(|&l| l < V1_UNLIMITED)?;
    Some(CgroupMemoryLimit {
        source: LimitSource::V1HierarchicalLimit,
        cgroup: cgroup.to_string(),
        limit_bytes,
        in_use_bytes: v1_in_use(dir),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::fake_files::put;
    use crate::units::MIB;

    const V1_MOUNTS: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const V1_CGROUP: &str = "4:memory:/jobs/one\n1:cpu:/\n0::/\n";
    const UNLIMITED: &str = "9223372036854771712";

    fn mb(n: u64) -> String {
        (n * MIB).to_string()
    }

    #[test]
    fn proc_cgroup_and_mountinfo_lines_are_read() {
        let m = Memberships::parse("12:memory:/a/b\n3:cpu,cpuacct:/\n0::/user.slice/x\n");
        assert_eq!(m.v1_memory.as_deref(), Some("/a/b"));
        assert_eq!(m.v2.as_deref(), Some("/user.slice/x"));
        assert_eq!(Memberships::parse("garbage\n"), Memberships::default());
        let mounts = parse_mountinfo(
            "1 0 0:1 /docker/abc /my\\040cg rw shared:3 - cgroup2 cgroup2 rw,nsdelegate\n",
        );
        assert_eq!(
            mounts,
            vec![Mount {
                kind: MountKind::V2,
                root: "/docker/abc".into(),
                mount_point: PathBuf::from("/my cg"),
            }]
        );
        assert_eq!(parse_mountinfo(V1_MOUNTS).len(), 2);
    }

    #[test]
    fn v1_the_tightest_limit_along_the_path_counts_and_unlimited_is_none() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let mem = "sys/fs/cgroup/memory";
        put(r, &format!("{mem}/memory.limit_in_bytes"), UNLIMITED);
        put(r, &format!("{mem}/jobs/memory.limit_in_bytes"), &mb(1024));
        put(r, &format!("{mem}/jobs/memory.usage_in_bytes"), &mb(900));
        put(
            r,
            &format!("{mem}/jobs/one/memory.limit_in_bytes"),
            &mb(300),
        );
        put(r, &format!("{mem}/jobs/one/memory.usage_in_bytes"), &mb(50));
        put(
            r,
            &format!("{mem}/jobs/one/memory.stat"),
            &format!("cache 1\ntotal_inactive_file {}\n", mb(20)),
        );
        // The parent has 124 MiB left, the leaf 270 MiB: the parent counts.
        let limit = memory_limit(r, V1_CGROUP, V1_MOUNTS).unwrap();
        assert_eq!(limit.cgroup, "/jobs");
        assert_eq!(limit.source, LimitSource::V1LimitInBytes);
        assert_eq!(limit.headroom_bytes(), 124 * MIB);
        put(r, &format!("{mem}/jobs/memory.usage_in_bytes"), &mb(100));
        let limit = memory_limit(r, V1_CGROUP, V1_MOUNTS).unwrap();
        assert_eq!(limit.cgroup, "/jobs/one");
        assert_eq!(
            (limit.limit_bytes, limit.in_use_bytes),
            (300 * MIB, 30 * MIB)
        );
        assert!(
            limit.describe().contains("/jobs/one limit 300 MiB")
                && limit.describe().contains("minus 30 MiB in use"),
            "{}",
            limit.describe()
        );
        // The kernel's hierarchical limit equal to the leaf's own: the leaf's file is named.
        put(
            r,
            &format!("{mem}/jobs/one/memory.stat"),
            &format!(
                "hierarchical_memory_limit {}\ntotal_inactive_file {}\n",
                mb(300),
                mb(20)
            ),
        );
        let tie = memory_limit(r, V1_CGROUP, V1_MOUNTS).unwrap();
        assert_eq!(tie.source, LimitSource::V1LimitInBytes);
        put(r, &format!("{mem}/jobs/one/memory.stat"), "");
        // No limit anywhere: none.
        put(r, &format!("{mem}/jobs/memory.limit_in_bytes"), UNLIMITED);
        put(
            r,
            &format!("{mem}/jobs/one/memory.limit_in_bytes"),
            UNLIMITED,
        );
        assert_eq!(memory_limit(r, V1_CGROUP, V1_MOUNTS), None);
        // A limit above the mount shows in the leaf's hierarchical_memory_limit.
        put(
            r,
            &format!("{mem}/jobs/one/memory.stat"),
            &format!("hierarchical_memory_limit {}\n", mb(200)),
        );
        let limit = memory_limit(r, V1_CGROUP, V1_MOUNTS).unwrap();
        assert_eq!(limit.source, LimitSource::V1HierarchicalLimit);
        assert_eq!(limit.headroom_bytes(), 150 * MIB);
    }

    #[test]
    fn v2_nested_paths_max_and_a_mount_elsewhere() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let mounts = "29 1 0:26 / /run/cg2 rw - cgroup2 cgroup2 rw\n";
        let cgroup = "0::/a/b/c\n";
        put(r, "run/cg2/a/memory.max", &mb(512));
        put(r, "run/cg2/a/memory.current", &mb(100));
        put(r, "run/cg2/a/b/memory.max", "max");
        put(r, "run/cg2/a/b/memory.current", &mb(90));
        put(r, "run/cg2/a/b/c/memory.max", "max");
        let limit = memory_limit(r, cgroup, mounts).unwrap();
        assert_eq!(limit.cgroup, "/a");
        assert_eq!(limit.source, LimitSource::V2MemoryMax);
        assert_eq!(limit.headroom_bytes(), 412 * MIB);
        put(r, "run/cg2/a/b/c/memory.max", &mb(64));
        put(r, "run/cg2/a/b/c/memory.current", &mb(16));
        put(
            r,
            "run/cg2/a/b/c/memory.stat",
            &format!("inactive_file {}", mb(6)),
        );
        let limit = memory_limit(r, cgroup, mounts).unwrap();
        assert_eq!(limit.cgroup, "/a/b/c");
        assert_eq!(limit.headroom_bytes(), 54 * MIB);
        // All "max": none; no memory controller (no memory.max files): none.
        put(r, "run/cg2/a/memory.max", "max");
        put(r, "run/cg2/a/b/c/memory.max", "max");
        assert_eq!(memory_limit(r, cgroup, mounts), None);
        assert_eq!(memory_limit(r, "0::/other\n", mounts), None);
        assert_eq!(memory_limit(r, cgroup, ""), None);
        assert_eq!(memory_limit(r, "", mounts), None);
    }

    #[test]
    fn a_container_whose_cgroup_reads_slash_uses_the_mount_itself() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        // cgroup namespace: the path is "/", the mount is the container's cgroup.
        let mounts = "29 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        put(r, "sys/fs/cgroup/memory.max", &mb(300));
        put(r, "sys/fs/cgroup/memory.current", &mb(10));
        let limit = memory_limit(r, "0::/\n", mounts).unwrap();
        assert_eq!(
            (limit.cgroup.as_str(), limit.headroom_bytes()),
            ("/", 290 * MIB)
        );
        // No namespace, the container's cgroup bind-mounted: its path is outside the
        // mount's root ("/docker/abc" vs "/"), or the mount's root is the path.
        let bound = "29 1 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let limit = memory_limit(r, "0::/docker/abc\n", bound).unwrap();
        assert_eq!(limit.cgroup, "/docker/abc");
        assert_eq!(limit.headroom_bytes(), 290 * MIB);
        let limit = memory_limit(r, "0::/elsewhere\n", bound).unwrap();
        assert_eq!(limit.headroom_bytes(), 290 * MIB);
        // A path climbing out of the mount is not followed.
        assert_eq!(
            directories(r, &parse_mountinfo(mounts)[0], "/../x")[0].1,
            r.join("sys/fs/cgroup")
        );
    }

    #[test]
    fn this_process_reads_without_error() {
        // Whatever this machine's cgroups are, the headroom is at most the limit.
        if let Some(limit) = detect() {
            assert!(limit.headroom_bytes() <= limit.limit_bytes);
        }
    }
}
