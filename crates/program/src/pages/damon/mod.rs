//! DAMON (the kernel's Data Access MONitor) as an access source for `pages record` when
//! there is no PMU: a kdamond memscope creates through the sysfs interface, monitoring one
//! process with `vaddr` operations, or the system's RAM with `paddr` operations and the
//! regions attributed to the process's pages through /proc/PID/pagemap. Its regions are
//! read through a `stat` scheme's tried_regions.
//!
//! memscope never touches a kdamond it did not create: while any other kdamond runs (the
//! kernel then accepts no new one) or exists switched off (adding one would recreate its
//! directory and lose its configuration), `start` refuses and says why. The kdamond it
//! creates is removed, and `nr_kdamonds` set back, on `stop`, on drop, on an error in
//! `start`, and on SIGINT, SIGTERM, SIGHUP and SIGQUIT (through `platform::cleanup`). It is
//! journaled before it is created (`platform::journal`), so when memscope is killed by
//! SIGKILL the next start removes it, if it is still recognisably memscope's (`stale`).

mod pagemap;
mod stale;
mod sysfs;
#[cfg(test)]
mod tests;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

pub use self::stale::restore_stale;
use self::sysfs::{Created, Sysfs, Target};
use super::access::AccessSpan;
use crate::platform::cleanup::{self, Token};
use crate::platform::journal::{self, Change};

/// What the DAMON interface looks like here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DamonStatus {
    /// No DAMON sysfs interface; why, as a sentence.
    Absent(String),
    /// The interface exists but only root may use it.
    NotRoot,
    /// A kdamond memscope did not start is running.
    Occupied {
        kdamond: usize,
        pid: Option<u32>,
        operations: String,
    },
    /// No kdamond runs. Which operations the kernel offers is known from an existing
    /// kdamond's `avail_operations`; without one both are assumed until `start` creates
    /// its own and reads them.
    Free { vaddr: bool, paddr: bool },
}

impl fmt::Display for DamonStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DamonStatus::Absent(why) => write!(f, "DAMON is not available: {why}"),
            DamonStatus::NotRoot => write!(
                f,
                "DAMON's sysfs interface ({}) is for root only; run memscope as root",
                sysfs::ADMIN
            ),
            DamonStatus::Occupied {
                kdamond,
                pid,
                operations,
            } => {
                let pid = pid.map(|pid| format!("pid {pid}, ")).unwrap_or_default();
                write!(
                    f,
                    "DAMON is in use by kdamond {kdamond} ({pid}{operations} operations), \
                     which memscope did not start and will not touch; the kernel accepts no \
                     new kdamond while one runs, so DAMON can be used once its owner stops it"
                )
            }
            DamonStatus::Free { vaddr, paddr } => {
                let ops: Vec<&str> = [(*vaddr, "vaddr"), (*paddr, "paddr")]
                    .iter()
                    .filter(|(has, _)| *has)
                    .map(|(_, name)| *name)
                    .collect();
                write!(f, "DAMON is free (operations: {})", ops.join(", "))
            }
        }
    }
}

/// The status of the real interface, read only.
pub fn status() -> DamonStatus {
    status_at(Path::new(sysfs::ADMIN))
}

/// The status of the interface rooted at `root` (the `admin` directory), read only.
pub(crate) fn status_at(root: &Path) -> DamonStatus {
    status_in(&Sysfs::new(root), is_root())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn status_in(sysfs: &Sysfs, root: bool) -> DamonStatus {
    if !sysfs.path("kdamonds/nr_kdamonds").exists() {
        return DamonStatus::Absent(format!(
            "{} does not exist; it needs a kernel built with CONFIG_DAMON_SYSFS and sysfs \
             mounted",
            sysfs.path("kdamonds/nr_kdamonds").display()
        ));
    }
    if !root {
        return DamonStatus::NotRoot;
    }
    let kdamonds = match sysfs::kdamonds(sysfs) {
        Ok(kdamonds) => kdamonds,
        Err(error) => return DamonStatus::Absent(format!("its state cannot be read: {error}")),
    };
    if let Some(running) = kdamonds.iter().find(|k| k.on) {
        return DamonStatus::Occupied {
            kdamond: running.index,
            pid: running.pid,
            operations: running.operations.clone(),
        };
    }
    match kdamonds.iter().find(|k| !k.avail_operations.is_empty()) {
        Some(known) => {
            let ops: Vec<&str> = known.avail_operations.split_whitespace().collect();
            DamonStatus::Free {
                vaddr: ops.contains(&"vaddr"),
                paddr: ops.contains(&"paddr"),
            }
        }
        None => DamonStatus::Free {
            vaddr: true,
            paddr: true,
        },
    }
}

/// A kdamond memscope created, monitoring one process. Removed (state off, nr_kdamonds
/// back to what it was) on drop, on error and on SIGINT/SIGTERM/SIGHUP/SIGQUIT.
pub(crate) struct DamonMonitor {
    /// The kdamond while it exists; whoever takes it (stop, drop, the signal action)
    /// removes it.
    created: Arc<Mutex<Option<Created>>>,
    token: Option<Token>,
    index: usize,
    pid: u32,
    /// The RAM ranges a `paddr` kdamond monitors; `None` for `vaddr`.
    ram_ranges: Option<usize>,
    sample_us: u64,
    aggr_us: u64,
    proc_root: PathBuf,
    page_bytes: u64,
}

impl DamonMonitor {
    /// Creates a kdamond monitoring `pid` with `vaddr` operations if the kernel has them
    /// (its `avail_operations`), else `paddr` over the system RAM ranges with results
    /// attributed to `pid`'s virtual pages through /proc/PID/pagemap. `sample_us` /
    /// `aggr_us`: DAMON's sampling and aggregation intervals. Err: why not, as a sentence.
    pub fn start(pid: libc::pid_t, sample_us: u64, aggr_us: u64) -> Result<DamonMonitor, String> {
        Self::start_in(
            Sysfs::new(Path::new(sysfs::ADMIN)),
            Path::new("/proc"),
            is_root(),
            pid,
            sample_us,
            aggr_us,
        )
    }

    fn start_in(
        sysfs: Sysfs,
        proc_root: &Path,
        root: bool,
        pid: libc::pid_t,
        sample_us: u64,
        aggr_us: u64,
    ) -> Result<DamonMonitor, String> {
        let pid = u32::try_from(pid)
            .ok()
            .filter(|&pid| pid > 0 && proc_root.join(pid.to_string()).is_dir())
            .ok_or_else(|| format!("there is no process {pid} for DAMON to monitor"))?;
        if sample_us == 0 || aggr_us < sample_us {
            return Err(format!(
                "DAMON needs a sampling interval above zero and an aggregation interval of \
                 at least one sample; got {sample_us} µs and {aggr_us} µs"
            ));
        }
        // Held until the kdamond is set up, so a memscope starting meanwhile does not take
        // it for a killed run's leftover (`platform::journal`).
        let _journal = journal::lock_for_change("memscope's DAMON kdamond");
        match status_in(&sysfs, root) {
            DamonStatus::Free { .. } => {}
            other => return Err(other.to_string()),
        }
        let previous_count = sysfs
            .read_u64("kdamonds/nr_kdamonds")
            .map_err(|error| format!("DAMON's kdamond count cannot be read: {error}"))?;
        if previous_count > 0 {
            return Err(format!(
                "DAMON has {previous_count} kdamond(s) switched off but configured by \
                 someone else; adding one would recreate their directories and lose that \
                 configuration, so memscope will not. If they are not needed, 'echo 0 > \
                 {}' frees DAMON for memscope",
                sysfs.path("kdamonds/nr_kdamonds").display()
            ));
        }
        cleanup::install().map_err(|error| {
            format!(
                "memscope could not install the signal handler that removes its kdamond on \
                 Ctrl-C ({error}), so it does not create one"
            )
        })?;

        let created: Arc<Mutex<Option<Created>>> = Arc::new(Mutex::new(None));
        let action_state = Arc::clone(&created);
        let token = cleanup::register(
            "DAMON kdamond",
            Box::new(move || remove_on_signal(&action_state)),
        );
        let mut monitor = DamonMonitor {
            created,
            token: Some(token),
            index: previous_count as usize,
            pid,
            ram_ranges: None,
            sample_us,
            aggr_us,
            proc_root: proc_root.to_path_buf(),
            page_bytes: page_bytes(),
        };
        // Held throughout, so the signal action removes the kdamond either before it is
        // created or once it is set up, never in between.
        let mut slot = lock(&monitor.created);
        let record = journal::record(Change::Kdamond {
            admin: sysfs.root.clone(),
            index: previous_count,
            previous_count,
            target_pid: pid,
            sample_us,
            aggr_us,
        });
        let kdamond = match sysfs::add_kdamond(&sysfs, previous_count, record) {
            Ok(kdamond) => kdamond,
            Err(error) => {
                drop(slot);
                return Err(format!("DAMON refused a new kdamond: {error}"));
            }
        };
        *slot = Some(kdamond.clone());
        let target = match choose_target(&kdamond, pid, proc_root) {
            Ok(target) => target,
            Err(why) => {
                drop(slot);
                return Err(why);
            }
        };
        if let Target::Paddr(ranges) = &target {
            monitor.ram_ranges = Some(ranges.len());
        }
        if let Err(error) = kdamond.configure_and_start(&target, sample_us, aggr_us) {
            drop(slot);
            return Err(format!(
                "DAMON did not start memscope's kdamond {}: {error}",
                kdamond.index
            ));
        }
        drop(slot);
        Ok(monitor)
    }

    /// Regions of the latest aggregation, as spans of the process's virtual memory with
    /// DAMON's `nr_accesses`: directly for `vaddr`, through pagemap for `paddr`.
    #[cfg(test)]
    pub(crate) fn snapshot(&mut self) -> io::Result<Vec<AccessSpan>> {
        let pid = self.pid;
        self.snapshot_of(&[pid])
    }

    /// `snapshot` for several processes: with `paddr`, the physical regions are
    /// attributed to the pages of every process listed (the command and what it
    /// started); a `vaddr` kdamond watches only the process it was started for.
    pub(crate) fn snapshot_of(&mut self, processes: &[u32]) -> io::Result<Vec<AccessSpan>> {
        let kdamond = lock(&self.created).clone().ok_or_else(|| {
            io::Error::other(format!(
                "memscope's kdamond {} is removed already",
                self.index
            ))
        })?;
        if !kdamond.is_on()? {
            return Err(io::Error::other(format!(
                "memscope's kdamond {} has stopped (DAMON stops when its target process {} \
                 exits)",
                self.index, self.pid
            )));
        }
        let regions = kdamond.tried_regions()?;
        match self.ram_ranges {
            None => Ok(regions
                .iter()
                .map(|region| AccessSpan {
                    pid: self.pid,
                    start: region.start,
                    end: region.end,
                    value: region.nr_accesses as f64,
                })
                .collect()),
            Some(_) => {
                let mut spans = Vec::new();
                for &pid in processes {
                    // A process that exited meanwhile has no pages left to attribute.
                    let Ok(pages) = pagemap::process_pages(&self.proc_root, pid, self.page_bytes)
                    else {
                        continue;
                    };
                    spans.extend(pagemap::attribute(pid, &regions, &pages, self.page_bytes));
                }
                Ok(spans)
            }
        }
    }

    /// E.g. "DAMON paddr over 3 System RAM range(s), attributed to …, kdamond 1 (memscope's),
    /// sampling 5 ms, aggregation 100 ms".
    pub fn description(&self) -> String {
        let operations = match self.ram_ranges {
            None => format!(
                "vaddr on pid {} (processes it starts are not watched: a vaddr target is \
                 one process)",
                self.pid
            ),
            Some(ranges) => format!(
                "paddr over {ranges} System RAM range(s), attributed to the pages of pid {} \
                 and the processes it starts through their pagemaps",
                self.pid
            ),
        };
        format!(
            "DAMON {operations}, kdamond {} (memscope's), sampling {}, aggregation {}",
            self.index,
            duration(self.sample_us),
            duration(self.aggr_us)
        )
    }

    /// Removes the kdamond (state off, `nr_kdamonds` back) and says if that failed.
    #[cfg(test)]
    pub fn stop(mut self) -> io::Result<()> {
        self.remove()
    }

    fn remove(&mut self) -> io::Result<()> {
        let taken = lock(&self.created).take();
        let result = taken.map_or(Ok(()), |kdamond| kdamond.remove());
        if let Some(token) = self.token.take() {
            cleanup::unregister(token);
        }
        result
    }
}

impl Drop for DamonMonitor {
    fn drop(&mut self) {
        if let Err(error) = self.remove() {
            eprintln!("memscope: warning: could not remove its DAMON kdamond: {error}");
        }
    }
}

/// The kdamond's undo action: removes it if it still exists; on a signal, says so.
fn remove_on_signal(created: &Mutex<Option<Created>>) {
    let Some(kdamond) = lock(created).take() else {
        return;
    };
    let result = kdamond.remove();
    if let Some(signo) = cleanup::signal_being_handled() {
        match result {
            Ok(()) => eprintln!(
                "memscope: {}: removed DAMON kdamond {} (memscope's)",
                cleanup::signal_name(signo),
                kdamond.index
            ),
            Err(error) => eprintln!(
                "memscope: {}: could not remove DAMON kdamond {}: {error}",
                cleanup::signal_name(signo),
                kdamond.index
            ),
        }
    }
}

/// `vaddr` on `pid` when the kernel has it, else `paddr` over the system RAM.
fn choose_target(kdamond: &Created, pid: u32, proc_root: &Path) -> Result<Target, String> {
    let avail = kdamond
        .avail_operations()
        .map_err(|error| format!("DAMON's available operations cannot be read: {error}"))?;
    let avail: Vec<&str> = avail.split_whitespace().collect();
    if avail.contains(&"vaddr") {
        return Ok(Target::Vaddr(pid));
    }
    if !avail.contains(&"paddr") {
        return Err(format!(
            "this kernel's DAMON offers neither vaddr nor paddr operations (only '{}'); it \
             needs CONFIG_DAMON_VADDR or CONFIG_DAMON_PADDR",
            avail.join(" ")
        ));
    }
    let iomem = std::fs::read_to_string(proc_root.join("iomem")).map_err(|error| {
        format!("DAMON has only paddr operations here, which need /proc/iomem: {error}")
    })?;
    pagemap::system_ram(&iomem)
        .map(Target::Paddr)
        .map_err(|why| {
            format!("DAMON has only paddr operations here, which need the RAM ranges: {why}")
        })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn page_bytes() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let bytes = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(bytes).ok().filter(|&b| b > 0).unwrap_or(4096)
}

/// "5 ms", "0.5 ms", "2 s".
fn duration(us: u64) -> String {
    if us >= 1_000_000 && us.is_multiple_of(1_000_000) {
        format!("{} s", us / 1_000_000)
    } else if us.is_multiple_of(1000) {
        format!("{} ms", us / 1000)
    } else {
        format!("{} ms", us as f64 / 1000.0)
    }
}
