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
pub fn pool_dir(page_bytes: u64) -> PathBuf {
    Path::new(HUGEPAGES_SYSFS).join(format!("hugepages-{}kB", page_bytes / 1024))
}

/// Huge pages of `page_bytes` that hold `bytes`: whole pages, since a hugetlbfs mapping
/// is a whole number of them.
pub fn pages_for_bytes(bytes: u64, page_bytes: u64) -> u64 {
    bytes.div_ceil(page_bytes.max(1))
}

/// Free pages that no mapping has reserved yet: what new MAP_HUGETLB mappings can have.
/// (`free_hugepages` counts pages reserved at mmap time but not yet touched.)
pub fn available_pages(pool: &HugePagePool) -> u64 {
    pool.free.saturating_sub(pool.reserved)
}

/// The pool size a write of `nr_hugepages` sets: the persistent pages, not the surplus
/// ones that overcommit lends and takes back. This is the value to restore.
pub fn persistent_pages(pool: &HugePagePool) -> u64 {
    pool.total.saturating_sub(pool.surplus)
}

/// The `nr_hugepages` to write so that `pages_needed` pages are available, or None when
/// the pool has them already. A larger count first turns surplus pages (all in use) into
/// persistent ones and only then allocates, so the shortfall goes on top of the total.
pub fn pool_target(pool: &HugePagePool, pages_needed: u64) -> Option<u64> {
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
    pages_needed: u64,
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
            pages_needed,
            previous,
            reserved: persistent_pages(&after),
            grew: target.is_some(),
            holder: Some(key),
        })
    }

    pub fn page_bytes(&self) -> u64 {
        self.page_bytes
    }

    pub fn pages_needed(&self) -> u64 {
        self.pages_needed
    }

    /// Whether this reservation grew the pool.
    pub fn changed_pool(&self) -> bool {
        self.grew
    }

    /// The pool's persistent size before the reservation.
    pub fn previous_pool(&self) -> u64 {
        self.previous
    }

    /// The pool's persistent size while the reservation lives.
    pub fn reserved_pool(&self) -> u64 {
        self.reserved
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
pub fn restore_all() {
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
mod tests {
    use std::io::{BufRead, BufReader};
    use std::os::fd::AsRawFd;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use super::*;
    use crate::platform::arena::{Arena, PagePolicy};
    use crate::platform::fake_files::put;

    const PAGE_2M: u64 = 2 * MIB;
    /// Set in the child process of `a_signal_sets_the_pool_back_before_exit`.
    const CHILD_ENV: &str = "MEMSCOPE_HUGEPAGES_SIGNAL_CHILD";
    const CHILD_TEST: &str = "platform::hugepages::tests::signal_child_reserves_and_waits";
    const CHILD_READY: &str = "memscope-hugepages-child-ready";

    /// Tests that use the registry or the real pool run one at a time.
    fn serial() -> MutexGuard<'static, ()> {
        static SERIAL: Mutex<()> = Mutex::new(());
        SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn pool(total: u64, free: u64, reserved: u64, surplus: u64) -> HugePagePool {
        HugePagePool {
            page_bytes: PAGE_2M,
            total,
            free,
            reserved,
            surplus,
        }
    }

    /// A directory laid out like a sysfs pool. Writing its nr_hugepages allocates
    /// nothing, so growing it always ends "not granted".
    fn fake_pool(total: u64, free: u64) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (file, value) in [
            ("nr_hugepages", total),
            ("free_hugepages", free),
            ("resv_hugepages", 0),
            ("surplus_hugepages", 0),
        ] {
            std::fs::write(dir.path().join(file), format!("{value}\n")).unwrap();
        }
        dir
    }

    /// This process's journal entries for the pool in `dir`.
    fn journaled(dir: &Path) -> Vec<Change> {
        journal::journal()
            .list()
            .unwrap()
            .records
            .into_iter()
            .filter(|r| r.entry.pid == std::process::id())
            .map(|r| r.entry.change)
            .filter(|c| matches!(c, Change::HugepagePool { path, .. } if path.starts_with(dir)))
            .collect()
    }

    fn read_nr(dir: &Path) -> u64 {
        read_pool(dir, PAGE_2M).unwrap().total
    }

    /// Asserts that `text` is one line holding every one of `parts`.
    fn assert_one_line_with(text: &str, parts: &[&str]) {
        assert!(!text.contains('\n'), "{text}");
        for part in parts {
            assert!(text.contains(part), "{part:?} is not in {text}");
        }
    }

    /// Held by the tests that resize the real pool, so two test runs on one machine (two
    /// work trees, say) do not see each other's pages. Released when the file closes.
    struct MachineLock {
        _file: std::fs::File,
    }

    fn machine_lock() -> MachineLock {
        let path = std::env::temp_dir().join("memscope-hugepage-pool-tests.lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .or_else(|_| std::fs::File::open(&path))
            .unwrap();
        // SAFETY: flock on a descriptor this function owns.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        assert_eq!(locked, 0, "{}", io::Error::last_os_error());
        MachineLock { _file: file }
    }

    /// The real 2 MiB pool when this process may resize it; otherwise why not.
    fn writable_2m_pool() -> Result<PathBuf, String> {
        let dir = pool_dir(PAGE_2M);
        if !dir.is_dir() {
            return Err(format!("{} does not exist", dir.display()));
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("not running as root".into());
        }
        OpenOptions::new()
            .write(true)
            .open(dir.join("nr_hugepages"))
            .map_err(|e| {
                format!(
                    "cannot open {}/nr_hugepages for writing: {e}",
                    dir.display()
                )
            })?;
        Ok(dir)
    }

    /// The real 2 MiB pool, locked against other tests and snapshotted, when this process
    /// may resize it; otherwise None, having said why the test is skipped.
    fn real_2m_pool() -> Option<PoolSnapshot> {
        let dir = writable_2m_pool()
            .map_err(|why| eprintln!("skipped (needs root and a 2 MiB pool): {why}"))
            .ok()?;
        let locks = (machine_lock(), serial());
        Some(PoolSnapshot::take(&dir, locks))
    }

    /// Sets the real pool back to its size at creation when dropped, whatever a test did:
    /// the tests leave the machine as they found it even when an assertion fails.
    /// The locks it holds are released after that, when its fields drop.
    struct PoolSnapshot {
        dir: PathBuf,
        persistent: u64,
        total: u64,
        _locks: (MachineLock, MutexGuard<'static, ()>),
    }

    impl PoolSnapshot {
        fn take(dir: &Path, locks: (MachineLock, MutexGuard<'static, ()>)) -> PoolSnapshot {
            let now = read_pool(dir, PAGE_2M).unwrap();
            PoolSnapshot {
                dir: dir.to_path_buf(),
                persistent: persistent_pages(&now),
                total: now.total,
                _locks: locks,
            }
        }

        /// Also checks that no page stayed behind as surplus once its mapping was gone.
        fn assert_restored(&self) {
            let now = read_pool(&self.dir, PAGE_2M).unwrap();
            assert_eq!(
                (persistent_pages(&now), now.total),
                (self.persistent, self.total),
                "pool not set back: {now:?}"
            );
        }
    }

    impl Drop for PoolSnapshot {
        fn drop(&mut self) {
            restore_all();
            let now = read_pool(&self.dir, PAGE_2M).map(|p| persistent_pages(&p));
            if now.as_ref().ok() != Some(&self.persistent) {
                eprintln!("test cleanup: setting the pool back to {}", self.persistent);
                write_count(&self.dir.join("nr_hugepages"), self.persistent).unwrap();
            }
        }
    }

    /// Two memscopes, A (pid 100) and B (pid 200), running in a fake /proc, sharing a
    /// journal and a fake sysfs pool that grants every page written.
    struct Two {
        dir: tempfile::TempDir,
        a: Ledger,
        b: Ledger,
    }

    const BOOT: &str = "boot-a";

    /// Writes `nr_hugepages` and lets the pool's free count follow, as the kernel does
    /// when it can allocate every page.
    fn granting_write(path: &Path, count: u64) -> io::Result<()> {
        let dir = path.parent().unwrap();
        let old = read_count(path)?;
        let free = read_count(&dir.join("free_hugepages"))?;
        let free = (free + count).saturating_sub(old);
        std::fs::write(dir.join("free_hugepages"), format!("{free}\n"))?;
        write_count(path, count)
    }

    impl Two {
        fn new(total: u64, free: u64) -> Two {
            let dir = tempfile::tempdir().unwrap();
            let pool = dir.path().join("hugepages/hugepages-2048kB");
            for (file, value) in [
                ("nr_hugepages", total),
                ("free_hugepages", free),
                ("resv_hugepages", 0),
                ("surplus_hugepages", 0),
            ] {
                put(&pool, file, &value.to_string());
            }
            let ledger = |pid: u32, start: u64| {
                let mut fields = vec!["0".to_string(); 18];
                fields.push(start.to_string());
                put(
                    &dir.path().join("proc"),
                    &format!("{pid}/stat"),
                    &format!("{pid} (memscope) S {}", fields.join(" ")),
                );
                Ledger {
                    journal: Journal::at(&dir.path().join("journal")),
                    system: System {
                        proc_root: dir.path().join("proc"),
                        boot_id: BOOT.into(),
                    },
                    me: Identity {
                        pid,
                        start_time: start,
                        boot_id: BOOT.into(),
                    },
                    write: granting_write,
                }
            };
            let (a, b) = (ledger(100, 1000), ledger(200, 2000));
            Two { dir, a, b }
        }

        fn pool(&self) -> PathBuf {
            self.dir.path().join("hugepages/hugepages-2048kB")
        }

        fn nr(&self) -> u64 {
            read_nr(&self.pool())
        }

        /// The run mapped its pages: they are no longer free.
        fn set_free(&self, free: u64) {
            put(&self.pool(), "free_hugepages", &free.to_string());
        }

        fn reserve(&self, ledger: &Ledger, pages: u64) -> HugepageReservation {
            HugepageReservation::ensure_with(ledger, &self.pool(), PAGE_2M, pages).unwrap()
        }

        /// (pid, previous, set) of each entry, oldest first.
        fn entries(&self) -> Vec<(u32, u64, Vec<u64>)> {
            self.a
                .journal
                .list()
                .unwrap()
                .records
                .into_iter()
                .map(|r| match r.entry.change {
                    Change::HugepagePool { previous, set, .. } => (r.entry.pid, previous, set),
                    other => panic!("{other:?}"),
                })
                .collect()
        }

        /// `ledger`'s process is SIGKILLed: it releases nothing, and its pid is gone.
        fn kill(&self, ledger: &Ledger, reservation: HugepageReservation) {
            std::mem::forget(reservation);
            registry().retain(|r| r.ledger.me != ledger.me);
            std::fs::remove_dir_all(self.dir.path().join(format!("proc/{}", ledger.me.pid)))
                .unwrap();
        }
    }

    #[test]
    fn the_first_run_to_end_leaves_the_pool_to_the_second_and_the_last_sets_it_back() {
        let _serial = serial();
        let two = Two::new(0, 0);
        let a = two.reserve(&two.a, 4);
        assert!(a.changed_pool());
        assert_eq!(two.nr(), 4);
        two.set_free(0);
        let b = two.reserve(&two.b, 2);
        assert_eq!((b.previous_pool(), b.reserved_pool(), two.nr()), (4, 6, 6));
        assert_eq!(two.entries(), vec![(100, 0, vec![4]), (200, 4, vec![6])]);
        // A ends while B runs: the pool stays, and B's entry now holds A's base.
        drop(a);
        assert_eq!(two.nr(), 6);
        assert_eq!(two.entries(), vec![(200, 0, vec![4, 6])]);
        // B ends last: back to the size before A.
        drop(b);
        assert_eq!(two.nr(), 0);
        assert_eq!(two.entries(), vec![]);
    }

    #[test]
    fn a_run_that_found_its_pages_in_the_pool_is_a_user_of_it_too() {
        let _serial = serial();
        for a_ends_first in [true, false] {
            let two = Two::new(0, 0);
            let a = two.reserve(&two.a, 4);
            // B's pages are there (A has not mapped its own yet): nothing grows, but B is
            // journaled as a user.
            let b = two.reserve(&two.b, 2);
            assert!(!b.changed_pool() && b.summary().is_none());
            assert_eq!(two.entries(), vec![(100, 0, vec![4]), (200, 4, vec![])]);
            if a_ends_first {
                drop(a);
                assert_eq!(two.nr(), 4, "A's end took the pages B uses");
                assert_eq!(two.entries(), vec![(200, 0, vec![4])]);
                drop(b);
            } else {
                drop(b);
                assert_eq!(two.nr(), 4);
                assert_eq!(two.entries(), vec![(100, 0, vec![4])]);
                drop(a);
            }
            assert_eq!(two.nr(), 0, "A ended first: {a_ends_first}");
            assert_eq!(two.entries(), vec![]);
        }
    }

    #[test]
    fn a_killed_runs_entry_is_left_to_the_running_one_which_sets_the_pool_back() {
        let _serial = serial();
        // A (the first, whose entry holds the base) killed while B runs, and B killed
        // while A runs.
        for killed_first in [true, false] {
            let two = Two::new(0, 0);
            let a = two.reserve(&two.a, 4);
            two.set_free(0);
            let b = two.reserve(&two.b, 2);
            assert_eq!(two.nr(), 6);
            let (dead, victim, survivor) = if killed_first {
                (&two.a, a, b)
            } else {
                (&two.b, b, a)
            };
            two.kill(dead, victim);
            // A start in the meantime defers the dead run's entry to the running one.
            let roots = crate::restore::Roots {
                hugepages: two.dir.path().join("hugepages"),
                damon_admin: two.dir.path().join("admin"),
            };
            let summary = crate::restore::sweep(&two.a.journal, &two.a.system, &roots);
            assert!(
                summary.restored.is_empty() && summary.left.is_empty(),
                "{summary:?}"
            );
            assert_eq!(two.nr(), 6);
            assert_eq!(two.entries().len(), 2);
            drop(survivor);
            assert_eq!(two.nr(), 0, "killed first: {killed_first}");
            assert_eq!(two.entries(), vec![]);
        }
    }

    #[test]
    fn a_run_that_cannot_get_its_pages_leaves_the_pool_and_the_journal_as_they_were() {
        let _serial = serial();
        let two = Two::new(0, 0);
        let a = two.reserve(&two.a, 4);
        two.set_free(0);
        // The kernel grants B nothing (a plain file: its free count stays 0).
        let stingy = Ledger {
            write: write_count,
            ..two.b.clone()
        };
        let error = HugepageReservation::ensure_with(&stingy, &two.pool(), PAGE_2M, 2).unwrap_err();
        assert!(
            matches!(error, ReserveError::NotGranted { target: 6, .. }),
            "{error:?}"
        );
        assert_eq!(two.nr(), 4);
        assert_eq!(two.entries(), vec![(100, 0, vec![4])]);
        assert!(registry().iter().all(|r| r.ledger.me != two.b.me));
        drop(a);
        assert_eq!(two.nr(), 0);
    }

    #[test]
    fn reservations_in_one_process_are_one_user_and_an_admins_resize_is_left() {
        let _serial = serial();
        let two = Two::new(0, 0);
        let first = two.reserve(&two.a, 4);
        two.set_free(0);
        let second = two.reserve(&two.a, 2);
        assert_eq!(two.nr(), 6);
        assert_eq!(two.entries(), vec![(100, 0, vec![4, 6])]);
        drop(first);
        assert_eq!(two.nr(), 6);
        drop(second);
        assert_eq!((two.nr(), two.entries()), (0, vec![]));

        // Someone resized the pool while it was in use: it is not memscope's to set back.
        let third = two.reserve(&two.a, 4);
        write_count(&two.pool().join("nr_hugepages"), 10).unwrap();
        drop(third);
        assert_eq!((two.nr(), two.entries()), (10, vec![]));
    }

    #[test]
    fn pages_for_bytes_rounds_up_to_whole_pages() {
        assert_eq!(pages_for_bytes(0, PAGE_2M), 0);
        assert_eq!(pages_for_bytes(1, PAGE_2M), 1);
        assert_eq!(pages_for_bytes(PAGE_2M, PAGE_2M), 1);
        assert_eq!(pages_for_bytes(PAGE_2M + 1, PAGE_2M), 2);
        assert_eq!(pages_for_bytes(3 * GIB, GIB), 3);
        assert_eq!(pages_for_bytes(512 * MIB, GIB), 1);
    }

    #[test]
    fn the_pool_grows_by_the_shortfall_only() {
        // Enough available: nothing to write.
        assert_eq!(pool_target(&pool(8, 8, 0, 0), 8), None);
        assert_eq!(pool_target(&pool(8, 6, 0, 0), 0), None);
        // Empty pool: exactly the pages needed.
        assert_eq!(pool_target(&pool(0, 0, 0, 0), 4), Some(4));
        // Partly free: the difference on top.
        assert_eq!(pool_target(&pool(10, 3, 0, 0), 5), Some(12));
        // Free pages reserved by a mapping are not available.
        assert_eq!(pool_target(&pool(10, 6, 4, 0), 5), Some(13));
        // Surplus pages in use are absorbed first, so the shortfall goes on the total,
        // and the size to restore is the persistent count.
        let with_surplus = pool(10, 0, 0, 2);
        assert_eq!(pool_target(&with_surplus, 4), Some(14));
        assert_eq!(persistent_pages(&with_surplus), 8);
        assert_eq!(available_pages(&pool(4, 2, 3, 0)), 0);
    }

    #[test]
    fn a_small_pool_is_one_line_with_the_command_that_grows_it() {
        let dir = fake_pool(2, 1);
        assert!(check_pool_in(dir.path(), PAGE_2M, 1).is_ok());
        let text = UsageError::from(check_pool_in(dir.path(), PAGE_2M, 4).unwrap_err()).to_string();
        let nr = dir.path().join("nr_hugepages").display().to_string();
        assert!(text.starts_with("page size '2m' cannot be had"), "{text}");
        assert_one_line_with(
            &text,
            &[
                "4 page(s) of 2 MiB are needed but the hugetlbfs pool has 1 free of 2",
                &format!("'echo 5 | sudo tee {nr}'"),
                &format!("'echo 2 | sudo tee {nr}' afterwards"),
                "--reserve-hugepages",
            ],
        );
        assert_eq!(read_nr(dir.path()), 2, "a check never writes");
    }

    #[test]
    fn a_missing_pool_names_the_size() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("hugepages-1048576kB");
        let text = UsageError::from(check_pool_in(&missing, GIB, 1).unwrap_err()).to_string();
        assert!(
            text.starts_with(
                "page size '1g' cannot be had: this kernel offers no 1 GiB huge pages"
            ),
            "{text}"
        );
    }

    #[test]
    fn pages_not_granted_set_the_pool_back_and_say_how_many() {
        let _serial = serial();
        let dir = fake_pool(3, 1);
        let error = HugepageReservation::ensure_in(dir.path(), PAGE_2M, 4).unwrap_err();
        assert!(matches!(error, ReserveError::NotGranted { target: 6, .. }));
        assert_eq!(read_nr(dir.path()), 3, "the pool was not set back");
        assert!(registry().iter().all(|r| !r.path.starts_with(dir.path())));
        assert!(
            journaled(dir.path()).is_empty(),
            "the entry outlived the change"
        );
        assert_one_line_with(
            &UsageError::from(error).to_string(),
            &[
                "grow the pool of 2 MiB pages from 3 to 6 for 4 free page(s)",
                "was set back to 3",
            ],
        );
    }

    #[test]
    fn a_pool_that_is_big_enough_is_left_alone() {
        let _serial = serial();
        let dir = fake_pool(8, 8);
        let reservation = HugepageReservation::ensure_in(dir.path(), PAGE_2M, 8).unwrap();
        assert!(!reservation.changed_pool());
        assert_eq!(reservation.summary(), None);
        drop(reservation);
        assert_eq!(read_nr(dir.path()), 8);
    }

    #[test]
    fn a_pool_that_cannot_be_written_asks_for_root_with_the_command() {
        // A read-only sysfs file refuses writes even from root, so this runs everywhere
        // sysfs has a 2 MiB pool.
        let real = pool_dir(PAGE_2M).join("free_hugepages");
        if !real.exists() {
            eprintln!("skipped: {} does not exist", real.display());
            return;
        }
        let _serial = serial();
        let dir = fake_pool(0, 0);
        let nr = dir.path().join("nr_hugepages");
        std::fs::remove_file(&nr).unwrap();
        std::os::unix::fs::symlink(&real, &nr).unwrap();
        let before = read_nr(dir.path());
        let needed = available_pages(&read_pool(dir.path(), PAGE_2M).unwrap()) + 4;
        let error = HugepageReservation::ensure_in(dir.path(), PAGE_2M, needed).unwrap_err();
        assert!(
            matches!(&error, ReserveError::WriteFailed { error, .. } if is_permission_error(error)),
            "{error:?}"
        );
        let command = format!("'echo {} | sudo tee {}'", before + 4, nr.display());
        assert_one_line_with(
            &UsageError::from(error).to_string(),
            &["growing it needs root", &command],
        );
        assert!(
            journaled(dir.path()).is_empty(),
            "an entry for a write that failed"
        );
    }

    /// One simulated run: reserve, map and touch the pages, then fail midway.
    fn run_that_fails(needed: u64, grown: &mut Option<u64>) -> Result<(), String> {
        let reservation =
            HugepageReservation::ensure(PAGE_2M, needed).map_err(|e| e.to_string())?;
        *grown = Some(read_nr(&pool_dir(PAGE_2M)));
        assert!(reservation.summary().is_some());
        let _buffer =
            Arena::new(Bytes(4 * PAGE_2M), PagePolicy::Huge2M).map_err(|e| e.to_string())?;
        Err("simulated failure in the middle of the run".into())
    }

    #[test]
    fn the_pool_is_set_back_after_a_failure_in_the_middle_of_a_run() {
        let Some(snapshot) = real_2m_pool() else {
            return;
        };
        let before = read_pool(&snapshot.dir, PAGE_2M).unwrap();
        // Always more than is free, so the pool must grow.
        let needed = available_pages(&before) + 4;
        let mut grown = None;
        let result = run_that_fails(needed, &mut grown);
        snapshot.assert_restored();
        match (result, grown) {
            (Err(e), Some(grown)) => {
                assert_eq!(e, "simulated failure in the middle of the run");
                assert!(grown >= before.total + 4, "{grown} after {before:?}");
            }
            (Err(e), None) if e.contains("memory is too fragmented") => {
                eprintln!("skipped: the kernel could not give 4 pages of 2 MiB now: {e}")
            }
            other => panic!("unexpected: {other:?}"),
        }
    }

    #[test]
    fn reservations_of_one_pool_set_it_back_when_the_last_one_ends() {
        let Some(snapshot) = real_2m_pool() else {
            return;
        };
        let dir = &snapshot.dir;
        let need_two_more = || available_pages(&read_pool(dir, PAGE_2M).unwrap()) + 2;
        let first = HugepageReservation::ensure(PAGE_2M, need_two_more()).unwrap();
        // Journaled: the size before and the size set, for the next start after a SIGKILL.
        match journaled(dir).as_slice() {
            [Change::HugepagePool { previous, set, .. }] => {
                assert_eq!(*previous, snapshot.persistent);
                assert!(set.contains(&first.reserved_pool()), "{set:?}");
            }
            other => panic!("{other:?}"),
        }
        let second = HugepageReservation::ensure(PAGE_2M, need_two_more()).unwrap();
        assert_eq!(first.previous_pool(), snapshot.persistent);
        assert_eq!(second.previous_pool(), first.reserved_pool());
        assert!(second.reserved_pool() >= snapshot.persistent + 4);
        // One entry for the pool, holding both sizes set.
        match journaled(dir).as_slice() {
            [Change::HugepagePool { previous, set, .. }] => {
                assert_eq!(*previous, snapshot.persistent);
                assert!(set.contains(&first.reserved_pool()), "{set:?}");
                assert!(set.contains(&second.reserved_pool()), "{set:?}");
            }
            other => panic!("{other:?}"),
        }
        // Dropped out of order: the first one's end must not undo the second's pages.
        drop(first);
        assert_eq!(read_nr(dir), second.reserved_pool());
        assert_eq!(journaled(dir).len(), 1);
        drop(second);
        snapshot.assert_restored();
        assert!(
            journaled(dir).is_empty(),
            "the entry outlived the reservations"
        );

        // restore_all gives everything back and is idempotent; a later drop does nothing.
        let third = HugepageReservation::ensure(PAGE_2M, need_two_more()).unwrap();
        assert!(read_nr(dir) > snapshot.persistent);
        restore_all();
        restore_all();
        snapshot.assert_restored();
        assert!(journaled(dir).is_empty());
        drop(third);
        snapshot.assert_restored();
    }

    #[test]
    fn a_panic_sets_the_pool_back() {
        let Some(snapshot) = real_2m_pool() else {
            return;
        };
        let dir = &snapshot.dir;
        let needed = available_pages(&read_pool(dir, PAGE_2M).unwrap()) + 2;
        let unwound = std::panic::catch_unwind(|| {
            let _reservation = HugepageReservation::ensure(PAGE_2M, needed).unwrap();
            assert!(read_nr(dir) > snapshot.persistent);
            panic!("simulated panic in the middle of the run");
        });
        assert!(unwound.is_err());
        snapshot.assert_restored();
    }

    /// Kills and reaps the child if a test ends early.
    struct ChildGuard(Child);

    impl Drop for ChildGuard {
        fn drop(&mut self) {
            if let Ok(None) = self.0.try_wait() {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }
    }

    #[test]
    fn a_signal_sets_the_pool_back_before_exit() {
        let Some(snapshot) = real_2m_pool() else {
            return;
        };
        let dir = &snapshot.dir;
        for signo in cleanup::SIGNALS {
            let mut child = ChildGuard(
                Command::new(std::env::current_exe().unwrap())
                    .args([CHILD_TEST, "--exact", "--ignored", "--nocapture"])
                    .env(CHILD_ENV, "1")
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap(),
            );
            // The child says when its pages are reserved and mapped; read on a thread so
            // a child that never says so fails the test instead of hanging it.
            let stdout = child.0.stdout.take().unwrap();
            let (ready_tx, ready) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if line.starts_with(CHILD_READY) {
                        let _ = ready_tx.send(line);
                    }
                }
            });
            let line = ready.recv_timeout(Duration::from_secs(60));
            let mut stderr = String::new();
            if line.is_err() {
                let _ = child.0.kill();
                let _ = child.0.wait();
                io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut stderr).unwrap();
                panic!("the child did not reserve its pages: {stderr}");
            }
            assert!(read_nr(dir) > snapshot.persistent, "the child grew nothing");

            // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
            assert_eq!(unsafe { libc::kill(child.0.id() as libc::pid_t, signo) }, 0);
            let deadline = Instant::now() + Duration::from_secs(30);
            let status = loop {
                if let Some(status) = child.0.try_wait().unwrap() {
                    break status;
                }
                assert!(
                    Instant::now() < deadline,
                    "the child ignored signal {signo}"
                );
                std::thread::sleep(Duration::from_millis(5));
            };
            io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut stderr).unwrap();
            assert_eq!(status.code(), Some(128 + signo), "{status:?}: {stderr}");
            assert!(
                stderr.contains(&format!(
                    "{}: set {}/nr_hugepages back to {}",
                    signal_name(signo),
                    dir.display(),
                    snapshot.persistent
                )),
                "{stderr}"
            );
            snapshot.assert_restored();
        }
    }

    /// The child of `a_signal_sets_the_pool_back_before_exit`: reserves four more pages
    /// than are free, maps and touches them, says so, and waits for its signal.
    #[test]
    #[ignore = "the child process of a_signal_sets_the_pool_back_before_exit"]
    fn signal_child_reserves_and_waits() {
        if std::env::var_os(CHILD_ENV).is_none() {
            return;
        }
        let needed = available_pages(&read_pool(&pool_dir(PAGE_2M), PAGE_2M).unwrap()) + 4;
        let reservation = HugepageReservation::ensure(PAGE_2M, needed).unwrap();
        let _buffer = Arena::new(Bytes(4 * PAGE_2M), PagePolicy::Huge2M).unwrap();
        let mut stdout = io::stdout().lock();
        writeln!(stdout, "{CHILD_READY} {}", reservation.reserved_pool()).unwrap();
        stdout.flush().unwrap();
        drop(stdout);
        // The parent signals long before this ends; if it does not, its test fails.
        std::thread::sleep(Duration::from_secs(120));
    }
}
