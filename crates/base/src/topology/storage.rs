//! What lies under a directory (where `files` puts its test files): the directory's filesystem
//! (from /proc/self/mountinfo and statfs), its free space, the block device behind it
//! (from /sys/dev/block: model, rotational, scheduler, driver) and whether the data path
//! is virtualized (virtio, Xen or Hyper-V storage).

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The filesystem and device under the test directory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Storage {
    /// The directory the test files were made in.
    pub dir: String,
    /// Filesystem type ("ext4", "xfs", "tmpfs" …) and what is mounted ("/dev/vda").
    pub filesystem: String,
    pub mount_source: String,
    pub mount_point: String,
    /// The file data lives in memory (tmpfs, ramfs): "cold" reads never reach a device.
    pub in_memory: bool,
    /// Bytes free for an unprivileged user when the run started.
    pub available_bytes: u64,
    /// The filesystem is mounted read-only.
    #[serde(default)]
    pub read_only: bool,
    /// The whole block device ("vda", "nvme0n1"), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// The device is a paravirtual one (virtio_blk, virtio_scsi, xen-blkfront, hv_storvsc):
    /// its latency includes the host's I/O path.
    pub virtualized: bool,
}

impl Storage {
    /// One line for tables and notes: "ext4 on /dev/vda (vda, virtio_blk: virtualized)".
    pub fn describe(&self) -> String {
        let mut text = format!("{} on {}", self.filesystem, self.mount_source);
        let mut device = Vec::new();
        if let Some(d) = &self.device {
            device.push(d.clone());
        }
        if let Some(m) = &self.model {
            device.push(m.clone());
        }
        if let Some(d) = &self.driver {
            device.push(d.clone());
        }
        if let Some(r) = self.rotational {
            device.push(if r { "rotational" } else { "non-rotational" }.to_string());
        }
        if self.virtualized {
            device.push("virtualized data path".to_string());
        }
        if !device.is_empty() {
            text.push_str(&format!(" ({})", device.join(", ")));
        }
        text
    }
}

/// What `dir` is on; errors only when the directory cannot be examined.
pub fn examine(dir: &Path) -> std::io::Result<Storage> {
    let canonical = std::fs::canonicalize(dir)?;
    let mut storage = Storage {
        dir: canonical.to_string_lossy().into_owned(),
        ..Storage::default()
    };
    (storage.available_bytes, storage.read_only) = space(&canonical)?;
    if let Some((point, fstype, source)) = mount_of(&canonical) {
        storage.mount_point = point;
        storage.filesystem = fstype;
        storage.mount_source = source;
    }
    storage.in_memory = matches!(storage.filesystem.as_str(), "tmpfs" | "ramfs" | "hugetlbfs");
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(&canonical)?.dev();
    // SAFETY: major/minor only split the number.
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major != 0 {
        describe_block_device(&mut storage, major, minor);
    }
    Ok(storage)
}

/// statvfs: bytes available to an unprivileged user, and whether the mount is read-only.
pub fn space(dir: &Path) -> std::io::Result<(u64, bool)> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("the path contains a NUL byte"))?;
    // SAFETY: an all-zero statvfs is valid for the call to fill.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and out-pointer.
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let read_only = st.f_flag & libc::ST_RDONLY != 0;
    Ok((st.f_bavail as u64 * st.f_frsize as u64, read_only))
}

/// The mount holding `path` (the longest mount point that is a prefix of it): its mount
/// point, filesystem type and source, from /proc/self/mountinfo.
fn mount_of(path: &Path) -> Option<(String, String, String)> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<(String, String, String)> = None;
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let separator = fields.iter().position(|f| *f == "-")?;
        let point = unescape(fields.get(4)?);
        let (fstype, source) = (fields.get(separator + 1)?, fields.get(separator + 2)?);
        if path.starts_with(&point) && best.as_ref().is_none_or(|(b, _, _)| point.len() >= b.len())
        {
            best = Some((point, fstype.to_string(), unescape(source)));
        }
    }
    best
}

/// mountinfo escapes spaces and the like as \ooo (octal). Bytes, not `str` slices: a
/// backslash before a multi-byte character must not split it.
pub(super) fn unescape(field: &str) -> String {
    String::from_utf8_lossy(&unescape_bytes(field)).into_owned()
}

/// A mountinfo field's bytes with its \ooo escapes undone (a path need not be UTF-8).
pub(crate) fn unescape_bytes(field: &str) -> Vec<u8> {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|digits| {
            std::str::from_utf8(digits)
                .ok()
                .and_then(|d| u8::from_str_radix(d, 8).ok())
        });
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

/// The whole disk of a (partition) device and what sysfs says of it.
fn describe_block_device(storage: &mut Storage, major: u32, minor: u32) {
    let Ok(mut node) = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")) else {
        return;
    };
    if node.join("partition").exists() {
        if let Some(parent) = node.parent() {
            node = parent.to_path_buf();
        }
    }
    let read = |rel: &str| {
        std::fs::read_to_string(node.join(rel))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    storage.device = node.file_name().map(|n| n.to_string_lossy().into_owned());
    storage.model = read("device/model").or_else(|| read("device/name"));
    storage.rotational = read("queue/rotational").map(|r| r == "1");
    storage.scheduler = read("queue/scheduler").map(|s| {
        s.split_whitespace()
            .find(|w| w.starts_with('['))
            .map_or(s.clone(), |w| w.trim_matches(['[', ']']).to_string())
    });
    storage.driver = std::fs::read_link(node.join("device/driver"))
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()));
    // virtio devices sit under a virtioN node whose own driver is virtio_blk.
    if storage.driver.is_none() || storage.driver.as_deref() == Some("virtio_blk") {
        let virtio = std::fs::read_link(node.join("device"))
            .ok()
            .is_some_and(|d| d.to_string_lossy().contains("virtio"));
        if virtio {
            storage.driver = Some("virtio_blk".to_string());
        }
    }
    let name = storage.device.clone().unwrap_or_default();
    storage.virtualized = storage.driver.as_deref().is_some_and(|d| {
        d.starts_with("virtio") || d == "xen-blkfront" || d == "vbd" || d == "hv_storvsc"
    }) || name.starts_with("vd")
        || name.starts_with("xvd");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_fields_are_unescaped() {
        assert_eq!(unescape("/mnt/with\\040space"), "/mnt/with space");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/a\\é\\04"), "/a\\é\\04");
    }

    #[test]
    fn the_current_directory_can_be_examined() {
        let storage = examine(Path::new(".")).unwrap();
        assert!(!storage.filesystem.is_empty(), "{storage:?}");
        assert!(storage.available_bytes > 0);
        assert!(!storage.describe().is_empty());
    }
}
