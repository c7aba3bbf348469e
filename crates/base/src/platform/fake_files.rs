//! Test helpers for code that reads and writes kernel files under a root it is given (a
//! temporary directory standing in for /sys or /proc): write one, read one back.

use std::fs;
use std::path::Path;

/// Writes `value` and a newline to `root/rel`, creating its directories.
pub fn put(root: &Path, rel: &str, value: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, format!("{value}\n")).unwrap();
}

/// The trimmed contents of `root/rel`.
pub fn get(root: &Path, rel: &str) -> String {
    fs::read_to_string(root.join(rel))
        .unwrap()
        .trim()
        .to_string()
}
