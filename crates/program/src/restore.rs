//! Undoing what killed memscope processes left changed: at the start of every command
//! (`at_start`, one line on stderr per thing restored) and as `memscope restore` (which
//! also says what running memscopes hold, or "nothing to restore"). The journal
//! (`platform::journal`) lists the changes; each kind is undone by its owner's
//! `restore_stale` (hugetlbfs pools, memscope's kdamond, scratch directories, temporary
//! output files, resctrl groups, weighted-interleave weights), which checks that the thing is still as memscope left it. A failure is
//! said and kept for the next start; it never stops the command.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::platform::journal::{self, Change, Journal, Outcome, Owner, Record, System};
use crate::platform::{hugepages, interleave_weights, resctrl, scratch};

/// Where the undone changes live: the real sysfs, or fake trees in tests.
#[derive(Debug, Clone)]
pub struct Roots {
    pub hugepages: PathBuf,
    pub damon_admin: PathBuf,
}

impl Roots {
    pub fn real() -> Roots {
        Roots {
            hugepages: PathBuf::from("/sys/kernel/mm/hugepages"),
            damon_admin: PathBuf::from("/sys/kernel/mm/damon/admin"),
        }
    }
}

/// What one pass over the journal did, as sentences.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub restored: Vec<String>,
    /// Things no longer memscope's, left as they are.
    pub left: Vec<String>,
    /// Things that could not be undone now (kept for the next start), and journal trouble.
    pub failed: Vec<String>,
    /// What running memscopes hold (not touched).
    pub running: Vec<String>,
    /// Journal files this memscope cannot read, kept.
    pub unreadable: Vec<String>,
}

/// Called first by every command but `memscope restore` (which does this as its work):
/// undoes what killed memscopes left, saying so on stderr.
pub fn at_start() {
    let journal = journal::journal();
    // Nothing was ever journaled here: nothing to read, and nothing is created.
    if !journal.dir().is_dir() || !can_tell_who_runs() {
        return;
    }
    let summary = sweep(&journal, &System::current(), &Roots::real());
    for line in summary.restored.iter().chain(&summary.left) {
        eprintln!("memscope: {line}");
    }
    for line in &summary.failed {
        eprintln!("memscope: warning: {line}");
    }
}

/// `memscope restore`: the same pass; returns its report for stdout (failures are said on
/// stderr, exit 1).
pub fn command() -> (String, ExitCode) {
    let mut text = String::new();
    let journal = journal::journal();
    if !can_tell_who_runs() {
        eprintln!(
            "memscope: error: /proc/self/stat cannot be read, so memscope cannot tell which \
             journaled memscopes still run; nothing restored"
        );
        return (text, ExitCode::FAILURE);
    }
    let summary = sweep(&journal, &System::current(), &Roots::real());
    for line in summary
        .restored
        .iter()
        .chain(&summary.left)
        .chain(&summary.running)
        .chain(&summary.unreadable)
    {
        text.push_str(line);
        text.push('\n');
    }
    for line in &summary.failed {
        eprintln!("memscope: warning: {line}");
    }
    if summary.restored.is_empty() && summary.left.is_empty() && summary.failed.is_empty() {
        text.push_str(&format!(
            "nothing to restore (journal: {})\n",
            journal.dir().display()
        ));
    }
    let code = if summary.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    (text, code)
}

/// Without /proc (a container without it), every writer would look gone, and a running
/// memscope's pool would be set back under it: then nothing is restored.
fn can_tell_who_runs() -> bool {
    journal::this_process().start_time != 0
}

/// One pass: under the journal's lock, every entry whose process is gone is undone (or
/// found clean, or left alone) and removed; failed and deferred ones stay.
pub fn sweep(journal: &Journal, system: &System, roots: &Roots) -> Summary {
    sweep_with(journal, system, roots, resctrl::Fs::Resctrl)
}

/// `sweep`, with the filesystem a journaled resctrl group's parent must be (a synthetic
/// tree in tests).
fn sweep_with(
    journal: &Journal,
    system: &System,
    roots: &Roots,
    resctrl_fs: resctrl::Fs,
) -> Summary {
    let mut summary = Summary::default();
    // No journal yet: nothing was ever changed, and nothing is created just to look.
    if !journal.dir().exists() {
        return summary;
    }
    let _lock = match journal.lock(journal::LOCK_WAIT) {
        Ok(lock) => lock,
        Err(error) => {
            summary
                .failed
                .push(format!("nothing restored from the journal: {error}"));
            return summary;
        }
    };
    let listing = match journal.list() {
        Ok(listing) => listing,
        Err(error) => {
            summary.failed.push(error.to_string());
            return summary;
        }
    };
    for path in &listing.leftovers {
        let _ = std::fs::remove_file(path);
    }
    // Kept: another memscope version may read (and undo) what this one cannot.
    for (path, why) in &listing.unreadable {
        summary.unreadable.push(format!(
            "kept the journal entry {}, which this memscope cannot read ({why})",
            path.display()
        ));
    }
    let (running, stale): (Vec<&Record>, Vec<&Record>) = listing
        .records
        .iter()
        .partition(|r| system.owner(&r.entry) == Owner::Running);
    for record in &running {
        summary.running.push(format!(
            "memscope pid {} is running and holds {}; left to it",
            record.entry.pid,
            journal::describe(&record.entry.change)
        ));
    }
    let mut outcomes: Vec<(&Record, Outcome)> = Vec::new();
    // Pools: all entries of one pool together, so a chain of kills unwinds in order.
    let mut pools: Vec<&Path> = Vec::new();
    for record in &stale {
        if let Change::HugepagePool { path, .. } = &record.entry.change {
            if !pools.contains(&path.as_path()) {
                pools.push(path);
            }
        }
    }
    for pool in pools {
        let of_pool = |r: &Record| matches!(&r.entry.change, Change::HugepagePool { path, .. } if path == pool);
        let (earlier, this_boot): (Vec<&Record>, Vec<&Record>) = stale
            .iter()
            .filter(|r| of_pool(r))
            .partition(|r| system.owner(&r.entry) == Owner::EarlierBoot);
        // A reboot reset the pool to the boot's own size: nothing of memscope's is left.
        outcomes.extend(earlier.into_iter().map(|r| (r, Outcome::Clean)));
        let entries: Vec<&journal::Entry> = this_boot.iter().map(|r| &r.entry).collect();
        let held = running.iter().any(|r| of_pool(r));
        let results = hugepages::restore_stale(&roots.hugepages, &entries, held);
        outcomes.extend(results.into_iter().map(|(i, o)| (this_boot[i], o)));
    }
    for record in &stale {
        let outcome = match &record.entry.change {
            Change::HugepagePool { .. } => continue,
            Change::Kdamond { .. } if system.owner(&record.entry) == Owner::EarlierBoot => {
                Outcome::Clean
            }
            Change::Kdamond { admin, .. } => {
                let held = running.iter().any(
                    |r| matches!(&r.entry.change, Change::Kdamond { admin: a, .. } if a == admin),
                );
                crate::pages::damon::restore_stale(&roots.damon_admin, &record.entry, held)
            }
            // Files outlive a reboot.
            Change::ScratchDir { .. } => scratch::restore_stale(&record.entry),
            Change::OutputTemp { .. } => crate::render::output::restore_stale(&record.entry),
            // resctrl lives in memory: a reboot removed its groups.
            Change::ResctrlGroup { .. } if system.owner(&record.entry) == Owner::EarlierBoot => {
                Outcome::Clean
            }
            Change::ResctrlGroup { .. } => resctrl::restore_stale(&record.entry, resctrl_fs),
            Change::InterleaveWeights { .. } => {
                interleave_weights::restore_stale(&record.entry, system)
            }
        };
        outcomes.push((record, outcome));
    }
    for (record, outcome) in outcomes {
        if outcome.settles() {
            if let Err(error) = record.remove() {
                summary.failed.push(error.to_string());
            }
        }
        match outcome {
            Outcome::Restored(line) => summary.restored.push(line),
            Outcome::LeftAlone(line) => summary.left.push(line),
            Outcome::Failed(line) => summary.failed.push(line),
            Outcome::Clean | Outcome::Deferred => {}
        }
    }
    summary
}

#[cfg(test)]
mod tests;
