//! The DAMON sysfs interface (`/sys/kernel/mm/damon/admin`, kernel 6.x): reading what the
//! kdamonds do, creating one kdamond with a `stat` scheme, reading its tried regions, and
//! removing it again. The root is a parameter so every write can be tested on a fake tree.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::platform::journal::Record;

/// Where the kernel puts the interface.
pub(crate) const ADMIN: &str = "/sys/kernel/mm/damon/admin";

/// DAMON's bounds on the number of regions it adapts between.
pub(crate) const MIN_REGIONS: u64 = 10;
pub(crate) const MAX_REGIONS: u64 = 5000;

/// The writes made through a `Sysfs`, as (path relative to the root, value), for tests.
pub(crate) type Journal = Arc<Mutex<Vec<(String, String)>>>;

/// The DAMON admin directory (or a fake one) and, in tests, a journal of the writes.
#[derive(Debug, Clone)]
pub(crate) struct Sysfs {
    pub root: PathBuf,
    pub journal: Option<Journal>,
}

impl Sysfs {
    pub fn new(root: &Path) -> Sysfs {
        Sysfs {
            root: root.to_path_buf(),
            journal: None,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// A file's content without the trailing newline; errors name the file.
    pub fn read(&self, rel: &str) -> io::Result<String> {
        let path = self.path(rel);
        std::fs::read_to_string(&path)
            .map(|text| text.trim().to_string())
            .map_err(|error| annotate(error, "read", &path))
    }

    pub(crate) fn read_u64(&self, rel: &str) -> io::Result<u64> {
        let text = self.read(rel)?;
        text.parse().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} holds '{text}', not a number", self.path(rel).display()),
            )
        })
    }

    /// Writes a value to an existing file (sysfs files are never created).
    pub fn write(&self, rel: &str, value: &str) -> io::Result<()> {
        if let Some(journal) = &self.journal {
            journal
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((rel.to_string(), value.to_string()));
        }
        let path = self.path(rel);
        OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .and_then(|mut file| file.write_all(value.as_bytes()))
            .map_err(|error| annotate(error, "write to", &path))
    }
}

fn annotate(error: io::Error, verb: &str, path: &Path) -> io::Error {
    io::Error::new(
        error.kind(),
        format!("cannot {verb} {} ({error})", path.display()),
    )
}

/// What one existing kdamond does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KdamondInfo {
    pub index: usize,
    pub on: bool,
    /// The kdamond thread's pid while it runs.
    pub pid: Option<u32>,
    /// Its context 0's operations, empty without a context.
    pub operations: String,
    /// Its context 0's `avail_operations`, empty without a context.
    pub avail_operations: String,
}

/// The kdamonds that exist now (`nr_kdamonds` of them), read only.
pub fn kdamonds(sysfs: &Sysfs) -> io::Result<Vec<KdamondInfo>> {
    let count = sysfs.read_u64("kdamonds/nr_kdamonds")?;
    (0..count as usize)
        .map(|index| {
            let dir = format!("kdamonds/{index}");
            let on = sysfs.read(&format!("{dir}/state"))? == "on";
            let pid = sysfs
                .read(&format!("{dir}/pid"))
                .ok()
                .and_then(|pid| pid.parse::<u32>().ok())
                .filter(|&pid| on && pid > 0);
            let context = format!("{dir}/contexts/0");
            Ok(KdamondInfo {
                index,
                on,
                pid,
                operations: sysfs
                    .read(&format!("{context}/operations"))
                    .unwrap_or_default(),
                avail_operations: sysfs
                    .read(&format!("{context}/avail_operations"))
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// What a created kdamond monitors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A process's virtual address space.
    Vaddr(u32),
    /// Physical address ranges `[start, end)`: the system's RAM.
    Paddr(Vec<(u64, u64)>),
}

/// A kdamond memscope created: where it is, the `nr_kdamonds` to restore, and its entry
/// in memscope's journal (removed with it).
#[derive(Debug, Clone)]
pub(crate) struct Created {
    pub sysfs: Sysfs,
    pub index: usize,
    pub previous_count: u64,
    pub journal: Option<Record>,
}

/// Adds kdamond `previous_count` (the caller checked that none runs and none exists whose
/// configuration would be lost, and journaled it as `journal`). Returns it created but not
/// configured, so the caller can read its `avail_operations` before choosing a target. On
/// an error nothing is left: the count was not changed, or the new kdamond is removed
/// again (and the entry with it).
pub(crate) fn add_kdamond(
    sysfs: &Sysfs,
    previous_count: u64,
    journal: Option<Record>,
) -> io::Result<Created> {
    if let Err(error) = sysfs.write("kdamonds/nr_kdamonds", &(previous_count + 1).to_string()) {
        if let Some(record) = &journal {
            let _ = record.remove();
        }
        return Err(error);
    }
    let created = Created {
        sysfs: sysfs.clone(),
        index: previous_count as usize,
        previous_count,
        journal,
    };
    if let Err(error) = sysfs.write(&format!("{}/nr_contexts", created.contexts()), "1") {
        if let Err(undo) = created.remove() {
            eprintln!("memscope: warning: {undo}");
        }
        return Err(error);
    }
    Ok(created)
}

impl Created {
    pub fn dir(&self) -> String {
        format!("kdamonds/{}", self.index)
    }

    fn contexts(&self) -> String {
        format!("{}/contexts", self.dir())
    }

    pub fn context(&self) -> String {
        format!("{}/contexts/0", self.dir())
    }

    pub fn scheme(&self) -> String {
        format!("{}/schemes/0", self.context())
    }

    pub(crate) fn avail_operations(&self) -> io::Result<String> {
        self.sysfs
            .read(&format!("{}/avail_operations", self.context()))
    }

    /// Configures context 0 (operations, intervals, target, one `stat` scheme matching
    /// every region) and turns the kdamond on.
    pub(crate) fn configure_and_start(
        &self,
        target: &Target,
        sample_us: u64,
        aggr_us: u64,
    ) -> io::Result<()> {
        let sysfs = &self.sysfs;
        let ctx = self.context();
        let operations = match target {
            Target::Vaddr(_) => "vaddr",
            Target::Paddr(_) => "paddr",
        };
        sysfs.write(&format!("{ctx}/operations"), operations)?;
        let attrs = format!("{ctx}/monitoring_attrs");
        sysfs.write(
            &format!("{attrs}/intervals/sample_us"),
            &sample_us.to_string(),
        )?;
        sysfs.write(&format!("{attrs}/intervals/aggr_us"), &aggr_us.to_string())?;
        let update_us = aggr_us.max(1_000_000);
        sysfs.write(
            &format!("{attrs}/intervals/update_us"),
            &update_us.to_string(),
        )?;
        sysfs.write(&format!("{attrs}/nr_regions/min"), &MIN_REGIONS.to_string())?;
        sysfs.write(&format!("{attrs}/nr_regions/max"), &MAX_REGIONS.to_string())?;
        let targets = format!("{ctx}/targets");
        sysfs.write(&format!("{targets}/nr_targets"), "1")?;
        match target {
            Target::Vaddr(pid) => {
                sysfs.write(&format!("{targets}/0/pid_target"), &pid.to_string())?;
            }
            Target::Paddr(ranges) => {
                let regions = format!("{targets}/0/regions");
                sysfs.write(&format!("{regions}/nr_regions"), &ranges.len().to_string())?;
                for (i, (start, end)) in ranges.iter().enumerate() {
                    sysfs.write(&format!("{regions}/{i}/start"), &start.to_string())?;
                    sysfs.write(&format!("{regions}/{i}/end"), &end.to_string())?;
                }
            }
        }
        sysfs.write(&format!("{ctx}/schemes/nr_schemes"), "1")?;
        let scheme = self.scheme();
        sysfs.write(&format!("{scheme}/action"), "stat")?;
        let pattern = format!("{scheme}/access_pattern");
        for (range, max) in [
            ("sz", u64::MAX),
            ("nr_accesses", u64::from(u32::MAX)),
            ("age", u64::from(u32::MAX)),
        ] {
            sysfs.write(&format!("{pattern}/{range}/min"), "0")?;
            sysfs.write(&format!("{pattern}/{range}/max"), &max.to_string())?;
        }
        sysfs.write(&format!("{}/state", self.dir()), "on")?;
        match sysfs.read(&format!("{}/state", self.dir()))?.as_str() {
            "on" => Ok(()),
            state => Err(io::Error::other(format!(
                "kdamond {} is '{state}' after being turned on",
                self.index
            ))),
        }
    }

    pub(crate) fn is_on(&self) -> io::Result<bool> {
        Ok(self.sysfs.read(&format!("{}/state", self.dir()))? == "on")
    }

    /// Asks the kdamond for the regions of its latest aggregation and reads them.
    pub(crate) fn tried_regions(&self) -> io::Result<Vec<TriedRegion>> {
        self.sysfs.write(
            &format!("{}/state", self.dir()),
            "update_schemes_tried_regions",
        )?;
        read_tried_regions(&self.sysfs, &format!("{}/tried_regions", self.scheme()))
    }

    /// Turns the kdamond off and sets `nr_kdamonds` back, which removes its directory.
    /// Retried for a second while the kernel still says busy (the thread ending).
    pub fn remove(&self) -> io::Result<()> {
        let state = format!("{}/state", self.dir());
        if self.sysfs.read(&state)? != "off" {
            self.sysfs.write(&state, "off")?;
        }
        let count = self.sysfs.read_u64("kdamonds/nr_kdamonds")?;
        if count != self.previous_count + 1 {
            return Err(io::Error::other(format!(
                "nr_kdamonds is {count}, not the {} memscope set: someone else changed the \
                 kdamonds, so memscope left kdamond {} off but in place",
                self.previous_count + 1,
                self.index
            )));
        }
        // The kernel refuses a new count while any kdamond runs; never try it while one
        // memscope did not create does.
        for other in (0..count as usize).filter(|&i| i != self.index) {
            if self.sysfs.read(&format!("kdamonds/{other}/state"))? == "on" {
                return Err(io::Error::other(format!(
                    "kdamond {other}, which memscope did not create, is running now, so \
                     memscope left its kdamond {} off but in place",
                    self.index
                )));
            }
        }
        let mut tries = 0;
        loop {
            match self
                .sysfs
                .write("kdamonds/nr_kdamonds", &self.previous_count.to_string())
            {
                Err(error) if error.kind() == io::ErrorKind::ResourceBusy && tries < 50 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Ok(()) => {
                    // Gone, so nothing is left for the next start to undo.
                    if let Some(record) = &self.journal {
                        if let Err(error) = record.remove() {
                            eprintln!("memscope: warning: {error}");
                        }
                    }
                    return Ok(());
                }
                result => return result,
            }
        }
    }
}

/// One region of a scheme's tried_regions directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TriedRegion {
    pub start: u64,
    pub end: u64,
    pub nr_accesses: u64,
    pub age: u64,
}

/// Reads `dir/N/{start,end,nr_accesses,age}` for every numbered N, in address order.
pub(crate) fn read_tried_regions(sysfs: &Sysfs, dir: &str) -> io::Result<Vec<TriedRegion>> {
    let path = sysfs.path(dir);
    let entries = std::fs::read_dir(&path).map_err(|error| annotate(error, "list", &path))?;
    let mut regions = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str().filter(|n| n.parse::<u64>().is_ok()) else {
            continue;
        };
        let field = |file: &str| sysfs.read_u64(&format!("{dir}/{name}/{file}"));
        regions.push(TriedRegion {
            start: field("start")?,
            end: field("end")?,
            nr_accesses: field("nr_accesses")?,
            age: field("age")?,
        });
    }
    regions.sort_by_key(|r| r.start);
    Ok(regions)
}
