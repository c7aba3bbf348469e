//! Reserving hugetlbfs pages for a run, and always giving them back: `check_pool` turns a
//! pool too small for `--pages 2m|1g` into a one-line error with the command that would
//! reserve the pages, and `HugepageReservation::ensure` (for `--reserve-hugepages`, root
//! only) grows the pool by what the run lacks and gives it back when the guard is
//! dropped, on success, on an error, during a panic's unwinding, and on SIGINT, SIGTERM,
//! SIGHUP or SIGQUIT. memscope never leaves the system changed.
//!
//! The pool is shared by concurrent memscopes, so it is never set back by "each run
//! writes back its own size before". Every run that reserves pages, whether it grew the
//! pool or found the pages there, journals itself as a user of the pool (the size
//! before, the values it set, the pages it holds), and everything (reading, growing,
//! reading back, setting back after a failure, ending) happens under the journal's lock
//! (`platform::journal`). A run that ends while another running memscope still has an
//! entry for the pool leaves the pool as it is and hands the base (the size before the
//! first of them) and the values set on to the running entries; the last one sets the
//! pool back to the base, if it still holds a value memscope set (an admin's resize is
//! left alone). A run that cannot get its pages sets the pool back to the size it found,
//! under the same hold of the lock, and leaves no entry. A killed run's entry is undone
//! by the next start (`restore_stale`), or left to a running memscope using the same pool,
//! which takes it into account when it ends. (Two runs starting at once may still see the
//! same free pages, the second before the first has mapped them; it then fails at its
//! mapping, and the pool is still set back as above.)
//!
//! Every pool this process uses is in one registry (several reservations of a pool share
//! one entry), so the signal path releases them all. The signal path is the process's
//! one signal thread (`platform::cleanup`, started at the first reservation), which runs
//! the pools' release among the other undo actions and exits with 128 + the signal number
//! (130 for Ctrl-C), as a shell reports a command killed by it. SIGKILL and a kernel crash
//! cannot be caught; the journal covers them.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use super::cleanup::{self, signal_name};
use super::journal::{
    self, Change, Entry, Identity, Journal, Lock, Outcome, Owner, Record, System,
};
use crate::error::UsageError;
use crate::topology::HugePagePool;
use crate::units::{Bytes, GIB, MIB};

const HUGEPAGES_SYSFS: &str = "/sys/kernel/mm/hugepages";

/// The sysfs directory of the pool of one huge page size, e.g. `…/hugepages-2048kB`.
pub(crate) fn pool_dir(page_bytes: u64) -> PathBuf {
    Path::new(HUGEPAGES_SYSFS).join(format!("hugepages-{}kB", page_bytes / 1024))
}

/// Huge pages of `page_bytes` that hold `bytes`: whole pages, since a hugetlbfs mapping
/// is a whole number of them.
pub fn pages_for_bytes(bytes: u64, page_bytes: u64) -> u64 {
    bytes.div_ceil(page_bytes.max(1))
}

/// Free pages that no mapping has reserved yet: what new MAP_HUGETLB mappings can have.
/// (`free_hugepages` counts pages reserved at mmap time but not yet touched.)
pub(crate) fn available_pages(pool: &HugePagePool) -> u64 {
    pool.free.saturating_sub(pool.reserved)
}

/// The pool size a write of `nr_hugepages` sets: the persistent pages, not the surplus
/// ones that overcommit lends and takes back. This is the value to restore.
pub(crate) fn persistent_pages(pool: &HugePagePool) -> u64 {
    pool.total.saturating_sub(pool.surplus)
}

/// The `nr_hugepages` to write so that `pages_needed` pages are available, or None when
/// the pool has them already. A larger count first turns surplus pages (all in use) into
/// persistent ones and only then allocates, so the shortfall goes on top of the total.
pub(crate) fn pool_target(pool: &HugePagePool, pages_needed: u64) -> Option<u64> {
    let shortfall = pages_needed.saturating_sub(available_pages(pool));
    (shortfall > 0).then(|| pool.total + shortfall)
}

/// Fails with the command that would reserve the pages when the pool of `page_bytes`
/// pages has fewer than `pages_needed` available: for `--pages 2m|1g` without
/// `--reserve-hugepages`, before a run starts rather than at its first mapping.
pub fn check_pool(page_bytes: u64, pages_needed: u64) -> Result<(), UsageError> {
    check_pool_in(&pool_dir(page_bytes), page_bytes, pages_needed).map_err(UsageError::from)
}

fn check_pool_in(dir: &Path, page_bytes: u64, pages_needed: u64) -> Result<(), ReserveError> {
    let pool = read_pool(dir, page_bytes)?;
    match pool_target(&pool, pages_needed) {
        None => Ok(()),
        Some(target) => Err(ReserveError::TooFew {
            path: dir.join("nr_hugepages"),
            pool,
            needed: pages_needed,
            target,
        }),
    }
}

/// hugetlbfs pages reserved for a run. While it lives the pool has grown by what the run
/// lacked (if anything) and the run is journaled as one of the pool's users; dropping it
/// ends that use, and the last user of the pool (in this process and among concurrent
/// memscopes) sets the pool back to its size before the first of them.
#[derive(Debug)]
#[must_use = "the pool is set back as soon as the reservation is dropped"]
pub struct HugepageReservation {
    page_bytes: u64,
    /// The pool's persistent size before this reservation.
    previous: u64,
    /// The pool's persistent size right after it.
    reserved: u64,
    /// Whether this reservation wrote the pool.
    grew: bool,
    /// The pool's `nr_hugepages` file and the process holding it, the key of the
    /// registry; None once released.
    holder: Option<(PathBuf, Identity)>,
}

/// Who keeps a pool's books: the journal, how a running memscope is told from a gone one,
/// this process as the journal names it, and how a pool size is written. The tests make
/// up a second process (another identity in a fake /proc) and a fake sysfs that grants
/// the pages written.
#[derive(Debug, Clone)]
struct Ledger {
    journal: Journal,
    system: System,
    me: Identity,
    write: fn(&Path, u64) -> io::Result<()>,
}

impl Ledger {
    fn current() -> Ledger {
        Ledger {
            journal: journal::journal(),
            system: System::current(),
            me: journal::this_process().clone(),
            write: write_count,
        }
    }

    /// The journal's lock; None (after the once-only warning) without a journal.
    fn lock(&self) -> Option<Lock> {
        self.journal
            .lock(journal::LOCK_WAIT)
            .map_err(|error| journal::warn_once(&error, "the hugetlbfs pool"))
            .ok()
    }

    fn record(&self, change: Change) -> Option<Record> {
        let what = journal::describe(&change);
        self.journal
            .record_as(&self.me, change)
            .map_err(|error| journal::warn_once(&error, &what))
            .ok()
    }
}

impl HugepageReservation {
    /// Makes `pages_needed` pages of `page_bytes` available, growing the hugetlbfs pool by
    /// the shortfall when it has fewer. Errors (one line, with the values): the kernel
    /// has no such pool; growing it needs root (with the `echo N | sudo tee …` command);
    /// the kernel granted fewer pages than asked (the pool is set back first).
    pub fn ensure(page_bytes: u64, pages_needed: u64) -> Result<HugepageReservation, UsageError> {
        Self::ensure_in(&pool_dir(page_bytes), page_bytes, pages_needed).map_err(UsageError::from)
    }

    fn ensure_in(
        dir: &Path,
        page_bytes: u64,
        pages_needed: u64,
    ) -> Result<HugepageReservation, ReserveError> {
        Self::ensure_with(&Ledger::current(), dir, page_bytes, pages_needed)
    }

    /// Everything happens under the journal's lock, held once: the pool is read, this
    /// run journaled as one of its users, the pool grown, read back, and on failure set
    /// back and the entry removed, so no other memscope (starting, ending or restoring)
    /// sees or changes the pool halfway.
    fn ensure_with(
        ledger: &Ledger,
        dir: &Path,
        page_bytes: u64,
        pages_needed: u64,
    ) -> Result<HugepageReservation, ReserveError> {
        // Held throughout, so the signal thread releases either before the pool grows or
        // after this reservation is registered, never in between.
        let mut raised = registry();
        let _journal = ledger.lock();
        let before = read_pool(dir, page_bytes)?;
        let previous = persistent_pages(&before);
        let target = pool_target(&before, pages_needed);
        install_signal_handler().map_err(ReserveError::SignalHandler)?;
        let path = dir.join("nr_hugepages");
        let key = (path.clone(), ledger.me.clone());
        let existing = raised.iter().position(|r| r.key() == (&key.0, &key.1));
        // Journaled before any write: a SIGKILL after it leaves an entry to undo it. The
        // in-process entry's values as they were, to put back if this call fails.
        let (mut fresh, undo) = match existing {
            Some(i) => {
                let undo = raised[i].set.clone();
                if let Some(target) = target {
                    raised[i].note(Some(target), 0);
                }
                (None, Some(undo))
            }
            None => {
                let set: Vec<u64> = target.into_iter().collect();
                let record = ledger.record(Change::HugepagePool {
                    path: path.clone(),
                    page_bytes,
                    previous,
                    set: set.clone(),
                    pages: pages_needed,
                });
                let entry = Raised {
                    path: path.clone(),
                    ledger: ledger.clone(),
                    previous,
                    set,
                    pages: pages_needed,
                    holders: 0,
                    record,
                };
                (Some(entry), None)
            }
        };
        let failed = |raised: &mut Vec<Raised>, fresh: Option<Raised>| match (fresh, existing) {
            (Some(entry), _) => {
                if let Some(record) = &entry.record {
                    forget(record);
                }
            }
            (None, Some(i)) => raised[i].reset_set(undo.clone().unwrap_or_default()),
            (None, None) => {}
        };
        let mut after = before.clone();
        if let Some(target) = target {
            if let Err(error) = (ledger.write)(&path, target) {
                failed(&mut raised, fresh);
                return Err(ReserveError::WriteFailed {
                    path,
                    pool: before,
                    needed: pages_needed,
                    target,
                    error,
                });
            }
            let read = read_pool(dir, page_bytes);
            if let Ok(read) = &read {
                // The kernel may grant fewer pages than asked; that count is memscope's too.
                match (&mut fresh, existing) {
                    (Some(entry), _) => entry.note(Some(read.total), 0),
                    (None, Some(i)) => raised[i].note(Some(read.total), 0),
                    (None, None) => {}
                }
            }
            match read {
                Ok(read) if available_pages(&read) >= pages_needed => after = read,
                read => {
                    // Undo this call's growth only, under the same hold of the lock: the
                    // pool is as it was before this call, for this process's earlier
                    // reservations and for other memscopes alike.
                    write_back(ledger, &path, previous);
                    failed(&mut raised, fresh);
                    return Err(match read {
                        Ok(after) => ReserveError::NotGranted {
                            path,
                            before,
                            after,
                            needed: pages_needed,
                            target,
                        },
                        Err(error) => error,
                    });
                }
            }
        }
        match (fresh, existing) {
            (Some(mut entry), _) => {
                entry.holders = 1;
                raised.push(entry);
            }
            (None, Some(i)) => {
                raised[i].holders += 1;
                raised[i].note(None, pages_needed);
            }
            (None, None) => {}
        }
        Ok(HugepageReservation {
            page_bytes,
            previous,
            reserved: persistent_pages(&after),
            grew: target.is_some(),
            holder: Some(key),
        })
    }

    pub fn page_bytes(&self) -> u64 {
        self.page_bytes
    }

    /// One line for the report when the pool was changed, e.g. "hugetlbfs pool of 2 MiB
    /// pages grown from 0 to 4 for this run and set back afterwards".
    pub fn summary(&self) -> Option<String> {
        self.grew.then(|| {
            format!(
                "hugetlbfs pool of {} pages grown from {} to {} for this run and set back \
                 afterwards (by the last memscope using it)",
                Bytes(self.page_bytes),
                self.previous,
                self.reserved
            )
        })
    }
}

impl Drop for HugepageReservation {
    fn drop(&mut self) {
        if let Some((path, me)) = self.holder.take() {
            let mut raised = registry();
            if let Some(i) = raised.iter().position(|r| r.key() == (&path, &me)) {
                raised[i].holders -= 1;
                if raised[i].holders == 0 {
                    let entry = raised.swap_remove(i);
                    // Released with the registry held, as `ensure` grows it.
                    release(&entry);
                }
            }
        }
    }
}

/// Ends every use of a pool this process holds (each pool set back if this process is
/// its last user) and forgets them (so a second call, or a reservation dropped later,
/// changes nothing). For the signal path and for tests; a failure to write is printed as
/// a warning with the command that fixes it.
pub(crate) fn restore_all() {
    for entry in registry().drain(..) {
        release(&entry);
    }
}

/// A pool this process uses: its `nr_hugepages` file, who keeps its books, its
/// persistent size before this process's first reservation, the values this process set,
/// the pages its reservations hold, how many live reservations share it, and its journal
/// entry.
#[derive(Debug)]
struct Raised {
    path: PathBuf,
    ledger: Ledger,
    previous: u64,
    set: Vec<u64>,
    pages: u64,
    holders: usize,
    record: Option<Record>,
}

impl Raised {
    fn key(&self) -> (&PathBuf, &Identity) {
        (&self.path, &self.ledger.me)
    }

    /// Adds a value written to (or read back from) the pool, and pages held, to the entry
    /// in memory and in the journal, so the next start knows the pool still holds
    /// memscope's count. The journal's copy is read first: another memscope that ended
    /// may have handed its base on to this entry.
    fn note(&mut self, value: Option<u64>, pages: u64) {
        if let Some(value) = value.filter(|v| !self.set.contains(v)) {
            self.set.push(value);
        }
        self.pages += pages;
        self.rewrite(|set, held| {
            if let Some(value) = value.filter(|v| !set.contains(v)) {
                set.push(value);
            }
            *held += pages;
        });
    }

    /// Puts the values set back to `set` (a reservation that failed wrote nothing that
    /// stays).
    fn reset_set(&mut self, set: Vec<u64>) {
        self.set.clone_from(&set);
        self.rewrite(|values, _| values.retain(|v| set.contains(v)));
    }

    fn rewrite(&mut self, change: impl FnOnce(&mut Vec<u64>, &mut u64)) {
        let Some(record) = &mut self.record else {
            return;
        };
        let result = record.reload().and_then(|()| {
            record.update(|entry| {
                if let Change::HugepagePool { set, pages, .. } = entry {
                    change(set, pages);
                }
            })
        });
        if let Err(error) = result {
            eprintln!("memscope: warning: {error}");
        }
    }
}

/// Removes a journal entry whose change is undone (or was never made).
fn forget(record: &Record) {
    if let Err(error) = record.remove() {
        eprintln!("memscope: warning: {error}");
    }
}

static RAISED: Mutex<Vec<Raised>> = Mutex::new(Vec::new());

/// The registry, also after a panic elsewhere poisoned it: restoring must still work.
fn registry() -> MutexGuard<'static, Vec<Raised>> {
    RAISED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What ending a process's use of a pool did.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Released {
    /// Other running memscopes (these pids) still use the pool: it is left as it is, and
    /// the size to set it back to is theirs now.
    HandedOver(Vec<u32>),
    /// Set back to this size.
    Restored(u64),
    /// It was at its size before already.
    Clean,
    /// It holds a size memscope never set (someone resized it since): left there.
    LeftAlone { current: u64, base: u64 },
    /// Could not be set back; the entry stays for the next start to try.
    Failed,
}

/// Ends this process's use of the pool `raised` describes, under the journal's lock. The
/// journal's entries for the pool are the runs that use it (this one, running memscopes,
/// and gone ones a start left to the running ones); the oldest entry's size before is the
/// pool's base, the size before the first of them. If another running memscope has an
/// entry, the pool is left to it: each running entry takes the base and every value set,
/// and this entry and the gone ones' are removed. Otherwise this is the last user: the
/// pool is set back to the base if it holds one of the values memscope set (an admin's
/// size is left alone), and the entries are removed.
fn release(raised: &Raised) -> Released {
    let ledger = &raised.ledger;
    let _lock = ledger.lock();
    let mut base = raised.previous;
    let mut set = raised.set.clone();
    let mut own = raised.record.clone();
    let mut live: Vec<Record> = Vec::new();
    let mut gone: Vec<Record> = Vec::new();
    let listing = match ledger.journal.list() {
        Ok(listing) => listing.records,
        Err(error) => {
            // Without the journal this process decides alone, as if it were the last.
            if raised.record.is_some() {
                eprintln!("memscope: warning: {error}");
            }
            Vec::new()
        }
    };
    let mut oldest = true;
    for record in listing {
        let Change::HugepagePool {
            path,
            previous,
            set: values,
            ..
        } = &record.entry.change
        else {
            continue;
        };
        if *path != raised.path {
            continue;
        }
        let is_own = own.as_ref().is_some_and(|o| o.file() == record.file());
        let owner = ledger.system.owner(&record.entry);
        if !is_own && owner == Owner::EarlierBoot {
            // The boot reset the pool; the next start's restoration drops the entry.
            continue;
        }
        // Listed oldest first: the first entry's size before is the base.
        if std::mem::take(&mut oldest) {
            base = *previous;
        }
        for value in values {
            if !set.contains(value) {
                set.push(*value);
            }
        }
        if is_own {
            own = Some(record);
        } else if owner == Owner::Running {
            live.push(record);
        } else {
            gone.push(record);
        }
    }
    let settle = |own: &Option<Record>, gone: &[Record]| {
        for record in own.iter().chain(gone) {
            forget(record);
        }
    };
    if !live.is_empty() {
        for record in &mut live {
            let result = record.update(|change| {
                if let Change::HugepagePool {
                    previous,
                    set: values,
                    ..
                } = change
                {
                    *previous = base;
                    values.clone_from(&set);
                }
            });
            if let Err(error) = result {
                eprintln!("memscope: warning: {error}");
            }
        }
        settle(&own, &gone);
        return Released::HandedOver(live.iter().map(|r| r.entry.pid).collect());
    }
    let outcome = match read_count(&raised.path) {
        Ok(current) if current == base => Released::Clean,
        Ok(current) if !set.contains(&current) => Released::LeftAlone { current, base },
        Ok(_) if write_back(ledger, &raised.path, base) => Released::Restored(base),
        Ok(_) => Released::Failed,
        Err(error) => {
            eprintln!(
                "memscope: warning: could not read {} to set it back to {base} ({error})",
                raised.path.display()
            );
            Released::Failed
        }
    };
    if outcome == Released::Failed {
        // This entry carries the base and the values for the next start to try again.
        if let Some(mut record) = own {
            let _ = record.update(|change| {
                if let Change::HugepagePool {
                    previous,
                    set: values,
                    ..
                } = change
                {
                    *previous = base;
                    values.clone_from(&set);
                }
            });
        }
        settle(&None, &gone);
    } else {
        settle(&own, &gone);
    }
    outcome
}

/// Writes a pool size back; a failure is a warning with the command that fixes it.
fn write_back(ledger: &Ledger, path: &Path, count: u64) -> bool {
    let result = (ledger.write)(path, count);
    if let Err(error) = &result {
        eprintln!(
            "memscope: warning: could not set {} back to {count} ({error}); run 'echo {count} \
             | sudo tee {}'",
            path.display(),
            path.display()
        );
    }
    result.is_ok()
}

/// Makes sure the pools are set back on a signal: starts the process's signal thread
/// (`cleanup`) and registers, once, the action that restores every pool this process grew.
fn install_signal_handler() -> io::Result<()> {
    static REGISTERED: OnceLock<()> = OnceLock::new();
    cleanup::install()?;
    REGISTERED.get_or_init(|| {
        // Registered for the life of the process: the action releases whatever the
        // registry holds when it runs, nothing when it is empty.
        let _ = cleanup::register("hugetlbfs pools", Box::new(restore_for_cleanup));
    });
    Ok(())
}

/// The pools' undo action. On a signal it keeps the registry locked until the process is
/// gone, so no thread can grow a pool after this release, and says what it did.
fn restore_for_cleanup() {
    let Some(signo) = cleanup::signal_being_handled() else {
        restore_all();
        return;
    };
    let mut raised = registry();
    for entry in raised.drain(..) {
        let path = entry.path.display();
        match release(&entry) {
            Released::Restored(base) => {
                eprintln!(
                    "memscope: {}: set {path} back to {base}",
                    signal_name(signo)
                )
            }
            Released::HandedOver(pids) => eprintln!(
                "memscope: {}: left {path} to the memscope(s) still using it (pid {})",
                signal_name(signo),
                pids.iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => {}
        }
    }
    std::mem::forget(raised);
}

/// Sets back one pool that memscope processes, now gone, left grown: `stale` are their
/// journal entries for that pool (the same `path`), `running` whether a running memscope
/// uses it too (then nothing is touched: the running one takes these entries into account
/// when it ends, see `release`). Each entry whose values the
/// pool holds is undone in turn, newest change first, so entries of several killed
/// processes unwind as a chain; a pool that holds none of memscope's values was changed by
/// someone else since and is left as it is. Each outcome comes with its entry's index in
/// `stale`, the ones restored first and in the order they were.
pub fn restore_stale(
    hugepages_root: &Path,
    stale: &[&Entry],
    running: bool,
) -> Vec<(usize, Outcome)> {
    let all = |outcome: Outcome| (0..stale.len()).map(|i| (i, outcome.clone())).collect();
    let Some(Change::HugepagePool {
        path, page_bytes, ..
    }) = stale.first().map(|e| &e.change)
    else {
        return Vec::new();
    };
    let expected = hugepages_root
        .join(format!("hugepages-{}kB", page_bytes / 1024))
        .join("nr_hugepages");
    if *path != expected {
        let why = format!(
            "left {} alone: it is not the hugetlbfs pool file memscope writes ({})",
            path.display(),
            expected.display()
        );
        return all(Outcome::LeftAlone(why));
    }
    if running {
        return all(Outcome::Deferred);
    }
    let pool = format!("the {} hugetlbfs pool", Bytes(*page_bytes));
    let mut current = match read_count(path) {
        Ok(current) => current,
        Err(error) => {
            let why = format!(
                "could not read {} to restore {pool} ({error})",
                path.display()
            );
            return all(Outcome::Failed(why));
        }
    };
    // (previous, values set) of each entry; the caller passes pool entries only.
    let fields: Vec<(u64, &[u64])> = stale
        .iter()
        .map(|entry| match &entry.change {
            Change::HugepagePool { previous, set, .. } => (*previous, set.as_slice()),
            _ => (u64::MAX, &[][..]),
        })
        .collect();
    let mut outcomes: Vec<(usize, Outcome)> = Vec::new();
    let decided = |outcomes: &[(usize, Outcome)], i: usize| outcomes.iter().any(|o| o.0 == i);
    // Newest entry first when two could match; each restore moves `current` down a link.
    while let Some(i) = (0..stale.len()).rev().find(|&i| {
        let (previous, set) = fields[i];
        !decided(&outcomes, i) && previous != current && set.contains(&current)
    }) {
        let previous = fields[i].0;
        let who = journal::killed(stale[i]);
        match write_count(path, previous) {
            Ok(()) => {
                outcomes.push((
                    i,
                    Outcome::Restored(format!(
                        "restored {pool} to {previous} pages ({who} while it held {current})"
                    )),
                ));
                current = previous;
            }
            Err(error) => {
                outcomes.push((
                    i,
                    Outcome::Failed(format!(
                        "could not restore {pool} to {previous} pages ({who} while it held \
                         {current}): {error}; run 'echo {previous} | sudo tee {}'",
                        path.display()
                    )),
                ));
                break;
            }
        }
    }
    for (i, (previous, set)) in fields.into_iter().enumerate() {
        if decided(&outcomes, i) {
            continue;
        }
        // A run that only used pages already there (or whose base equals the size now).
        let outcome = if previous == current || set.is_empty() {
            Outcome::Clean
        } else {
            let held = set.last().copied().unwrap_or(previous);
            Outcome::LeftAlone(format!(
                "left {pool} at {current} pages: {} while it held {held} (and would have set \
                 it back to {previous}), but it has been changed since",
                journal::killed(stale[i])
            ))
        };
        outcomes.push((i, outcome));
    }
    outcomes
}

/// The `nr_hugepages` count alone, for restoring.
fn read_count(path: &Path) -> io::Result<u64> {
    std::fs::read_to_string(path)?
        .trim()
        .parse()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not a count"))
}

/// The pool's counters; unlike the topology's reader, a missing or unparsable
/// `nr_hugepages` is an error here, since a size is about to be written from it.
fn read_pool(dir: &Path, page_bytes: u64) -> Result<HugePagePool, ReserveError> {
    if !dir.is_dir() {
        return Err(ReserveError::NoSuchPool {
            dir: dir.to_path_buf(),
            page_bytes,
        });
    }
    let count = |file: &str| -> Result<u64, ReserveError> {
        let path = dir.join(file);
        std::fs::read_to_string(&path)
            .and_then(|text| {
                text.trim()
                    .parse()
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not a count"))
            })
            .map_err(|error| ReserveError::Unreadable { path, error })
    };
    Ok(HugePagePool {
        page_bytes,
        total: count("nr_hugepages")?,
        free: count("free_hugepages")?,
        reserved: count("resv_hugepages")?,
        surplus: count("surplus_hugepages")?,
    })
}

/// Writes a pool size the way `echo N > nr_hugepages` does (one write, no O_CREAT).
fn write_count(path: &Path, count: u64) -> io::Result<()> {
    OpenOptions::new()
        .write(true)
        .open(path)?
        .write_all(format!("{count}\n").as_bytes())
}

/// Why pages could not be had; becomes a `UsageError::PagesUnavailable`.
#[derive(Debug)]
enum ReserveError {
    NoSuchPool {
        dir: PathBuf,
        page_bytes: u64,
    },
    Unreadable {
        path: PathBuf,
        error: io::Error,
    },
    /// The pool is too small and memscope was not asked to grow it.
    TooFew {
        path: PathBuf,
        pool: HugePagePool,
        needed: u64,
        target: u64,
    },
    WriteFailed {
        path: PathBuf,
        pool: HugePagePool,
        needed: u64,
        target: u64,
        error: io::Error,
    },
    /// The kernel grew the pool by less than asked (fragmented memory), or another
    /// process took the new pages first. The pool has been set back.
    NotGranted {
        path: PathBuf,
        before: HugePagePool,
        after: HugePagePool,
        needed: u64,
        target: u64,
    },
    SignalHandler(io::Error),
}

/// "2m" and "1g" as `--pages` spells them; other sizes as a size.
fn policy_name(page_bytes: u64) -> String {
    match page_bytes {
        b if b == 2 * MIB => "2m".to_string(),
        b if b == GIB => "1g".to_string(),
        b => Bytes(b).to_string(),
    }
}

/// "'echo 4 | sudo tee /sys/…/nr_hugepages' (and 'echo 0 | sudo tee …' afterwards)".
fn tee_commands(path: &Path, target: u64, previous: u64) -> String {
    let path = path.display();
    format!(
        "'echo {target} | sudo tee {path}' (and 'echo {previous} | sudo tee {path}' afterwards)"
    )
}

fn is_permission_error(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::PermissionDenied
        || matches!(
            error.raw_os_error(),
            Some(libc::EACCES | libc::EPERM | libc::EROFS)
        )
}

impl ReserveError {
    fn page_bytes(&self) -> Option<u64> {
        match self {
            ReserveError::NoSuchPool { page_bytes, .. } => Some(*page_bytes),
            ReserveError::TooFew { pool, .. } | ReserveError::WriteFailed { pool, .. } => {
                Some(pool.page_bytes)
            }
            ReserveError::NotGranted { before, .. } => Some(before.page_bytes),
            ReserveError::Unreadable { .. } | ReserveError::SignalHandler(_) => None,
        }
    }
}

impl From<ReserveError> for UsageError {
    fn from(error: ReserveError) -> UsageError {
        let policy = error
            .page_bytes()
            .map(policy_name)
            .unwrap_or_else(|| "huge pages".to_string());
        let (reason, advice) = match error {
            ReserveError::NoSuchPool { dir, page_bytes } => (
                format!(
                    "this kernel offers no {} huge pages (no {})",
                    Bytes(page_bytes),
                    dir.display()
                ),
                "Use --pages thp or 4k".to_string(),
            ),
            ReserveError::Unreadable { path, error } => (
                format!("cannot read {} ({error})", path.display()),
                "Use --pages thp or 4k".to_string(),
            ),
            ReserveError::TooFew {
                path,
                pool,
                needed,
                target,
            } => (
                format!(
                    "{needed} page(s) of {} are needed but the hugetlbfs pool has {} free of {}",
                    Bytes(pool.page_bytes),
                    available_pages(&pool),
                    pool.total
                ),
                format!(
                    "Pass --reserve-hugepages (as root) to reserve them for this run, or run {}, \
                     or use --pages thp",
                    tee_commands(&path, target, persistent_pages(&pool))
                ),
            ),
            ReserveError::WriteFailed {
                path,
                pool,
                needed,
                target,
                error,
            } => {
                let why = if is_permission_error(&error) {
                    "growing it needs root"
                } else {
                    "growing it failed"
                };
                (
                    format!(
                        "{needed} page(s) of {} are needed but the hugetlbfs pool has {} free \
                         of {} and {why} (writing {target} to {}: {error})",
                        Bytes(pool.page_bytes),
                        available_pages(&pool),
                        pool.total,
                        path.display()
                    ),
                    format!(
                        "Run memscope as root, or reserve them yourself with {}",
                        tee_commands(&path, target, persistent_pages(&pool))
                    ),
                )
            }
            ReserveError::NotGranted {
                path,
                before,
                after,
                needed,
                target,
            } => {
                let what = if after.total < target {
                    format!(
                        "the kernel granted {} (memory is too fragmented)",
                        after.total
                    )
                } else {
                    format!(
                        "only {} of them stayed free (another process took the rest)",
                        available_pages(&after)
                    )
                };
                let size = if before.page_bytes == GIB { "1G" } else { "2M" };
                (
                    format!(
                        "asked the kernel to grow the pool of {} pages from {} to {target} \
                         for {needed} free page(s), {what}; {} was set back to {}",
                        Bytes(before.page_bytes),
                        before.total,
                        path.display(),
                        persistent_pages(&before)
                    ),
                    format!(
                        "Compact memory ('echo 1 | sudo tee /proc/sys/vm/compact_memory') and \
                         retry, reserve them at boot (hugepagesz={size} hugepages={target} on \
                         the kernel command line), or use --pages thp"
                    ),
                )
            }
            ReserveError::SignalHandler(error) => (
                format!("cannot install the handler that gives the pages back on Ctrl-C ({error})"),
                "Reserve the pages yourself and run without --reserve-hugepages".to_string(),
            ),
        };
        UsageError::PagesUnavailable {
            policy,
            reason,
            advice,
        }
    }
}

#[cfg(test)]
mod tests;
