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

/// A process's /proc directory held open: what is read and written through it reaches
/// that very process, or fails once it is gone, even when its pid is reused meanwhile.
pub struct ProcessDir(std::os::fd::OwnedFd);

impl ProcessDir {
    pub fn open(pid: u32) -> io::Result<ProcessDir> {
        let path = format!("/proc/{pid}");
        Ok(ProcessDir(std::fs::File::open(path)?.into()))
    }

    fn file(&self, name: &std::ffi::CStr, flags: libc::c_int) -> io::Result<std::fs::File> {
        use std::os::fd::AsRawFd;
        let fd = crate::fs::open_at(self.0.as_raw_fd(), name, flags, 0)?;
        Ok(std::fs::File::from(fd))
    }

    pub fn read(&self, name: &std::ffi::CStr) -> io::Result<String> {
        io::read_to_string(self.file(name, libc::O_RDONLY)?)
    }

    /// The process's parent and start time (fields 4 and 22 of stat).
    pub fn parent_and_start(&self) -> io::Result<(u32, u64)> {
        let stat = self.read(c"stat")?;
        // The command name (field 2) may hold spaces and parentheses: fields after it.
        let after: Vec<&str> = stat
            .rsplit_once(')')
            .map_or("", |(_, r)| r)
            .split_whitespace()
            .collect();
        match (
            after.get(1).and_then(|p| p.parse().ok()),
            after.get(19).and_then(|s| s.parse().ok()),
        ) {
            (Some(parent), Some(start)) => Ok((parent, start)),
            _ => Err(io::Error::other("an unreadable /proc/PID/stat")),
        }
    }

    /// Clears the accessed bits of every page of the process (`echo 1 > clear_refs`).
    pub fn clear_referenced(&self) -> io::Result<()> {
        use std::io::Write;
        self.file(c"clear_refs", libc::O_WRONLY)?.write_all(b"1")
    }
}

/// The process and every process it started that is still running, parents first.
pub fn process_tree(root: u32) -> Vec<u32> {
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
