//! Synthetic resctrl trees for tests (here and in the modules that use resctrl).
use std::fs;
use std::path::Path;

use super::{detect_with, Fs, Resctrl};
use crate::platform::fake_files::put;

/// A resctrl tree with 11 L3 ways (the top two shareable) in two domains, and MBA in
/// percent steps of 10 from 10, as a two-socket Intel server shows it.
pub fn tree(l3: bool, mb: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut schemata = String::new();
    if mb {
        schemata.push_str("    MB:0=100;1=100\n");
        put(root, "info/MB/min_bandwidth", "10");
        put(root, "info/MB/bandwidth_gran", "10");
        put(root, "info/MB/delay_linear", "1");
        put(root, "info/MB/num_closids", "8");
    }
    if l3 {
        schemata.push_str("L3:0=7ff;1=7ff\n");
        put(root, "info/L3/cbm_mask", "7ff");
        put(root, "info/L3/min_cbm_bits", "1");
        put(root, "info/L3/num_closids", "16");
        put(root, "info/L3/shareable_bits", "600");
    }
    put(root, "info/last_cmd_status", "ok");
    fs::write(root.join("schemata"), schemata).unwrap();
    put(root, "tasks", "1\n2");
    dir
}

/// /proc/self/mountinfo's text with resctrl mounted at `root`.
pub fn mountinfo(root: &Path) -> String {
    format!(
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
         40 22 0:38 / {} rw,relatime shared:20 - resctrl resctrl rw\n",
        root.display()
    )
}

/// The synthetic tree at `root`, detected as the mounted resctrl.
pub fn synthetic(root: &Path) -> Resctrl {
    detect_with(&mountinfo(root), "", Fs::Synthetic).unwrap()
}
