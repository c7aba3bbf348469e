//! What /proc says about a running process: its process tree (threads share a process's
//! address space, so processes are what is followed), its command name, its mappings
//! with their sizes and accessed-page counts from /proc/PID/smaps (parsed by `smaps`),
//! and the reset of those counts through /proc/PID/clear_refs. Read by `pages` (the
//! profiled command's processes) and `footprint` (--pid).

use std::io;

use super::smaps::{parse_smaps, Mapping};

/// The mappings of a process; an error when it is gone or not readable.
pub fn smaps(pid: u32) -> io::Result<Vec<Mapping>> {
    std::fs::read_to_string(format!("/proc/{pid}/smaps")).map(|t| parse_smaps(&t))
}

/// Clears the accessed bits of every page of the process (`echo 1 > clear_refs`).
pub(crate) fn clear_referenced(pid: u32) -> io::Result<()> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "1")
}

/// The process and every process it started that is still running, parents first.
pub(crate) fn process_tree(root: u32) -> Vec<u32> {
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        for child in children(out[i]) {
            if !out.contains(&child) {
                out.push(child);
            }
        }
        i += 1;
    }
    out
}

/// The process's children: through /proc/PID/task/TID/children (each thread's), or, on
/// a kernel without that file, every process whose parent it is (/proc/*/stat).
pub(crate) fn children(pid: u32) -> Vec<u32> {
    let numbers = |text: &str| -> Vec<u32> {
        text.split_whitespace()
            .filter_map(|c| c.parse().ok())
            .collect()
    };
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for task in tasks.flatten() {
        match std::fs::read_to_string(task.path().join("children")) {
            Ok(text) => found.extend(numbers(&text)),
            Err(_) => return children_by_scan(pid),
        }
    }
    found
}

/// Every process whose parent (field 4 of /proc/PID/stat) is `pid`.
fn children_by_scan(pid: u32) -> Vec<u32> {
    let Ok(all) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    all.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            // The command name (field 2) may hold spaces and parentheses: fields after it.
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            after.split_whitespace().nth(1) == Some(pid.to_string().as_str())
        })
        .collect()
}

/// The process's command name (/proc/PID/comm), or its pid in words.
pub fn command_name(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().to_string())
        .unwrap_or_else(|_| format!("pid {pid}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_in_its_own_tree_and_has_mappings() {
        let me = std::process::id();
        assert_eq!(process_tree(me)[0], me);
        let maps = smaps(me).unwrap();
        assert!(maps.iter().any(|m| m.path == "[stack]"));
    }
}
