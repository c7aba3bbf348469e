//! Removing the kdamond a killed memscope left, from its journal entry: only when it is
//! still recognisably the one memscope created. That is: `nr_kdamonds` is the count
//! memscope set (so nobody added or removed kdamonds since), the kdamond is the last one,
//! at the index memscope used, and it is configured as memscope configures it (one
//! context; `vaddr` on the recorded process or `paddr`; the recorded sampling and
//! aggregation intervals; no scheme other than one `stat`), or it is off with no target
//! and no scheme yet (memscope was killed while setting it up, and nothing of anyone's
//! would be lost). Anything else is left as it is, and said.

use std::io;
use std::path::Path;

use super::sysfs::{Created, Sysfs};
use crate::platform::journal::{self, Change, Entry, Outcome};

/// Undoes a journaled kdamond of a memscope that is gone. `admin` is the DAMON admin
/// directory this memscope uses (entries for another one are left alone); `running`
/// whether a running memscope journaled a kdamond there too (then this waits).
pub fn restore_stale(admin: &Path, entry: &Entry, running: bool) -> Outcome {
    let Change::Kdamond {
        admin: recorded,
        index,
        previous_count,
        target_pid,
        sample_us,
        aggr_us,
    } = &entry.change
    else {
        return Outcome::Clean;
    };
    if recorded != admin {
        return Outcome::LeftAlone(format!(
            "left DAMON kdamond {index} under {} alone: memscope uses {}",
            recorded.display(),
            admin.display()
        ));
    }
    if running {
        return Outcome::Deferred;
    }
    let who = journal::killed(entry);
    let sysfs = Sysfs::new(admin);
    let count = match busy_retry(|| sysfs.read_u64("kdamonds/nr_kdamonds")) {
        Ok(count) => count,
        Err(error) => {
            return Outcome::Failed(format!(
                "could not look for DAMON kdamond {index}, which {who} while it ran: {error}"
            ))
        }
    };
    if count == *previous_count {
        // Never created (killed before), or removed since.
        return Outcome::Clean;
    }
    if count != previous_count + 1 || *index != *previous_count {
        return Outcome::LeftAlone(format!(
            "left the DAMON kdamonds alone: there are {count} now, not the {} memscope set \
             when it created kdamond {index} ({who} while it ran), so someone else changed \
             them since",
            previous_count + 1
        ));
    }
    let kdamond = Created {
        sysfs,
        index: *index as usize,
        previous_count: *previous_count,
        journal: None,
    };
    match busy_retry(|| recognise(&kdamond, *target_pid, *sample_us, *aggr_us)) {
        Ok(true) => {}
        Ok(false) => {
            return Outcome::LeftAlone(format!(
                "left DAMON kdamond {index} alone: it is no longer configured as the one \
                 memscope created ({who} while it ran), so it is someone else's now"
            ))
        }
        Err(error) => {
            return Outcome::Failed(format!(
                "could not read DAMON kdamond {index}'s configuration ({who} while it ran): \
                 {error}"
            ))
        }
    }
    match kdamond.remove() {
        Ok(()) => Outcome::Restored(format!(
            "turned off and removed DAMON kdamond {index}, memscope's ({who} while it ran)"
        )),
        Err(error) => Outcome::Failed(format!(
            "could not remove DAMON kdamond {index}, memscope's ({who} while it ran): {error}"
        )),
    }
}

/// Retries a read for a second while DAMON says busy (its files answer EBUSY while
/// another reader or writer holds the interface's lock).
fn busy_retry<T>(mut read: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let mut tries = 0;
    loop {
        match read() {
            Err(error) if error.kind() == io::ErrorKind::ResourceBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            result => return result,
        }
    }
}

/// Whether the kdamond is configured as memscope configures its own (see the module).
fn recognise(kdamond: &Created, target_pid: u32, sample_us: u64, aggr_us: u64) -> io::Result<bool> {
    let sysfs = &kdamond.sysfs;
    let dir = kdamond.dir();
    let off = sysfs.read(&format!("{dir}/state"))? == "off";
    let contexts = sysfs.read_u64(&format!("{dir}/contexts/nr_contexts"))?;
    if contexts == 0 {
        return Ok(off);
    }
    if contexts != 1 {
        return Ok(false);
    }
    let ctx = kdamond.context();
    let targets = sysfs.read_u64(&format!("{ctx}/targets/nr_targets"))?;
    let schemes = sysfs.read_u64(&format!("{ctx}/schemes/nr_schemes"))?;
    if off && targets == 0 && schemes == 0 {
        return Ok(true);
    }
    let intervals = format!("{ctx}/monitoring_attrs/intervals");
    if sysfs.read_u64(&format!("{intervals}/sample_us"))? != sample_us
        || sysfs.read_u64(&format!("{intervals}/aggr_us"))? != aggr_us
        || targets > 1
        || schemes > 1
    {
        return Ok(false);
    }
    let target_ok = match sysfs.read(&format!("{ctx}/operations"))?.as_str() {
        "vaddr" => {
            targets == 0
                || sysfs.read_u64(&format!("{ctx}/targets/0/pid_target"))? == u64::from(target_pid)
        }
        "paddr" => true,
        _ => false,
    };
    let scheme_ok = schemes == 0 || sysfs.read(&format!("{}/action", kdamond.scheme()))? == "stat";
    Ok(target_ok && scheme_ok)
}
