//! The kernel's weighted-interleave weights (`/sys/kernel/mm/mempolicy/weighted_interleave`)
//! written for the length of one run, only when the user asks (`advise --weights`), and
//! written back after. They are global: every process that asks for
//! `MPOL_WEIGHTED_INTERLEAVE` deals its pages by them.
//!
//! Under the journal's lock, `WrittenWeights::write` reads the current values, refuses
//! while another running memscope holds weights it wrote, journals
//! `Change::InterleaveWeights` (the files, what they held, what memscope writes), then
//! turns the auto mode off (Linux 6.16+) and writes each node's weight. The old values
//! go back on drop, on SIGINT/SIGTERM (`cleanup`) and, after a SIGKILL, at the next
//! start (`restore_stale`) — each only where a file still holds what memscope wrote, so a
//! weight someone changed meanwhile is left as it is. Each node's old weight is written
//! back, then the auto mode: where it was on, writing `true` has the kernel compute the
//! weights as before.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::cleanup;
use super::journal::{self, Change, Entry, Outcome, Owner, Record, System};
use super::page_placement::read_system_weights;

/// The most read from one weight file (a number, or true/false).
const READ_CAP: u64 = 64;

/// Why the weights could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    #[error("this kernel has no weighted interleave ({0} is missing; Linux 6.9+)")]
    Missing(String),
    #[error(
        "memscope pid {0} is running and holds the weighted-interleave weights it wrote; \
         run one at a time"
    )]
    Held(u32),
    #[error("could not write {file}: {error}")]
    Write { file: String, error: io::Error },
}

/// Weights memscope wrote; the old ones go back when it is dropped.
#[derive(Debug)]
pub struct WrittenWeights {
    dir: PathBuf,
    previous: Vec<(String, String)>,
    set: Vec<(String, String)>,
    record: Option<Record>,
    token: Option<cleanup::Token>,
}

impl WrittenWeights {
    /// Writes `weights` (node, 1…255) under `dir` (normally
    /// `page_placement::WEIGHTS_DIR`), the auto mode turned off first where the kernel has
    /// one.
    pub fn write(dir: &Path, weights: &[(usize, u32)]) -> Result<WrittenWeights, WeightsError> {
        let Some(system) = read_system_weights(dir) else {
            return Err(WeightsError::Missing(dir.display().to_string()));
        };
        let _lock = journal::lock_for_change("the weighted-interleave weights");
        if let Some(pid) = held_by_another() {
            return Err(WeightsError::Held(pid));
        }
        let mut previous = Vec::new();
        let mut set = Vec::new();
        if let Some(auto) = &system.auto_file {
            previous.push((
                auto.clone(),
                read_value(&dir.join(auto)).unwrap_or_default(),
            ));
            set.push((auto.clone(), "false".to_string()));
        }
        for &(node, weight) in weights {
            let name = format!("node{node}");
            let old = read_value(&dir.join(&name))
                .ok_or_else(|| WeightsError::Missing(dir.join(&name).display().to_string()))?;
            previous.push((name.clone(), old));
            set.push((name, weight.to_string()));
        }
        let record = journal::record(Change::InterleaveWeights {
            dir: dir.to_path_buf(),
            previous: previous.clone(),
            set: set.clone(),
        });
        let mut written = WrittenWeights {
            dir: dir.to_path_buf(),
            previous,
            set,
            record,
            token: None,
        };
        for (name, value) in &written.set {
            if let Err(error) = write_value(&dir.join(name), value) {
                // Drop writes back what was written so far.
                return Err(WeightsError::Write {
                    file: dir.join(name).display().to_string(),
                    error,
                });
            }
        }
        if cleanup::install().is_ok() {
            let (dir, previous, set) = (
                written.dir.clone(),
                written.previous.clone(),
                written.set.clone(),
            );
            let record = written.record.clone();
            written.token = Some(cleanup::register(
                "write back the weighted-interleave weights",
                Box::new(move || {
                    if matches!(restore(&dir, &previous, &set), Outcome::Restored(_)) {
                        if let Some(r) = &record {
                            let _ = r.remove();
                        }
                    }
                }),
            ));
        }
        Ok(written)
    }

    /// The node weights written, as `node0=3, node2=1`.
    pub fn describe(&self) -> String {
        (self.set.iter())
            .filter(|(name, _)| name.starts_with("node"))
            .map(|(name, value)| format!("{name}={value}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Drop for WrittenWeights {
    fn drop(&mut self) {
        if let Some(token) = self.token.take() {
            cleanup::unregister(token);
        }
        match restore(&self.dir, &self.previous, &self.set) {
            Outcome::Failed(why) => eprintln!("memscope: warning: {why}"),
            Outcome::LeftAlone(why) => eprintln!("memscope: {why}"),
            _ => {
                if let Some(record) = self.record.take() {
                    let _ = record.remove();
                }
            }
        }
    }
}

/// The pid of a running memscope (not this one) that journaled weights it wrote.
fn held_by_another() -> Option<u32> {
    let listing = journal::journal().list().ok()?;
    let system = System::current();
    let me = std::process::id();
    (listing.records.iter())
        .filter(|r| matches!(r.entry.change, Change::InterleaveWeights { .. }))
        .filter(|r| r.entry.pid != me && system.owner(&r.entry) == Owner::Running)
        .map(|r| r.entry.pid)
        .next()
}

/// Writes `previous` back where each file still holds what memscope `set` (all of them
/// or none: a weight changed by someone else since leaves the whole set as it is). The
/// auto mode last: writing a node's weight turns it off, and turning it on again has the
/// kernel recompute every weight.
fn restore(dir: &Path, previous: &[(String, String)], set: &[(String, String)]) -> Outcome {
    let changed: Vec<&str> = (set.iter())
        .filter(|(name, value)| read_value(&dir.join(name)).as_deref() != Some(value.as_str()))
        .map(|(name, _)| name.as_str())
        .collect();
    if changed.len() == set.len() && previous == set {
        return Outcome::Clean;
    }
    if !changed.is_empty() {
        // Already back (a cleanup action ran, or the same values were there).
        if (previous.iter()).all(|(n, v)| read_value(&dir.join(n)).as_deref() == Some(v)) {
            return Outcome::Clean;
        }
        return Outcome::LeftAlone(format!(
            "left the weighted-interleave weights in {} as they are: {} changed since \
             memscope wrote them",
            dir.display(),
            changed.join(", ")
        ));
    }
    let mut order: Vec<&(String, String)> = previous
        .iter()
        .filter(|(name, _)| name.starts_with("node"))
        .collect();
    order.extend(
        previous
            .iter()
            .filter(|(name, _)| !name.starts_with("node")),
    );
    for (name, value) in order {
        if let Err(error) = write_value(&dir.join(name), value) {
            return Outcome::Failed(format!(
                "could not write back {}: {error}",
                dir.join(name).display()
            ));
        }
    }
    let old: Vec<String> = (previous.iter())
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    Outcome::Restored(format!(
        "wrote back the weighted-interleave weights in {} ({})",
        dir.display(),
        old.join(", ")
    ))
}

/// Undoes a killed memscope's weights (`crate::restore`). A reboot set them back.
pub fn restore_stale(entry: &Entry, system: &System) -> Outcome {
    let Change::InterleaveWeights { dir, previous, set } = &entry.change else {
        return Outcome::Clean;
    };
    if system.owner(entry) == Owner::EarlierBoot {
        return Outcome::Clean;
    }
    match restore(dir, previous, set) {
        Outcome::Restored(line) => {
            Outcome::Restored(format!("{} ({line})", journal::killed(entry)))
        }
        other => other,
    }
}

/// A weight file's value, trimmed; None when it cannot be read.
fn read_value(path: &Path) -> Option<String> {
    let mut text = String::new();
    (File::open(path).ok()?)
        .take(READ_CAP)
        .read_to_string(&mut text)
        .ok()?;
    Some(text.trim().to_string())
}

/// Writes `value` to an existing file (never created, no link followed).
fn write_value(path: &Path, value: &str) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    file.write_all(value.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A weights directory as the kernel shows it: auto on, nodes 0 and 2.
    fn sysfs(auto: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        if let Some(auto) = auto {
            std::fs::write(dir.path().join("auto"), format!("{auto}\n")).unwrap();
        }
        std::fs::write(dir.path().join("node0"), "1\n").unwrap();
        std::fs::write(dir.path().join("node2"), "1\n").unwrap();
        dir
    }

    fn value(dir: &Path, name: &str) -> String {
        read_value(&dir.join(name)).unwrap()
    }

    #[test]
    fn weights_are_written_for_the_run_and_the_old_ones_come_back() {
        for auto in [Some("true"), Some("false"), None] {
            let dir = sysfs(auto);
            let written = WrittenWeights::write(dir.path(), &[(0, 3), (2, 1)]).unwrap();
            assert_eq!(written.describe(), "node0=3, node2=1");
            assert_eq!(value(dir.path(), "node0"), "3");
            if auto.is_some() {
                assert_eq!(value(dir.path(), "auto"), "false");
            }
            drop(written);
            assert_eq!(value(dir.path(), "node0"), "1");
            if let Some(auto) = auto {
                assert_eq!(value(dir.path(), "auto"), auto);
            }
        }
    }

    #[test]
    fn a_weight_changed_by_someone_else_is_left_as_it_is() {
        let dir = sysfs(None);
        let previous = vec![("node0".to_string(), "1".to_string())];
        let set = vec![("node0".to_string(), "3".to_string())];
        std::fs::write(dir.path().join("node0"), "7").unwrap();
        let outcome = restore(dir.path(), &previous, &set);
        assert!(
            matches!(outcome, Outcome::LeftAlone(ref s) if s.contains("node0")),
            "{outcome:?}"
        );
        assert_eq!(value(dir.path(), "node0"), "7");
        // Already back: nothing to do.
        std::fs::write(dir.path().join("node0"), "1").unwrap();
        assert_eq!(restore(dir.path(), &previous, &set), Outcome::Clean);
        // Still memscope's: written back.
        std::fs::write(dir.path().join("node0"), "3").unwrap();
        assert!(matches!(
            restore(dir.path(), &previous, &set),
            Outcome::Restored(_)
        ));
        assert_eq!(value(dir.path(), "node0"), "1");
    }

    #[test]
    fn no_weights_directory_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("weighted_interleave");
        let error = WrittenWeights::write(&missing, &[(0, 3)])
            .unwrap_err()
            .to_string();
        assert!(error.contains("Linux 6.9+"), "{error}");
    }
}
