//! Tests of the DAMON source against fake sysfs and proc trees in temporary directories;
//! the real interface is only read.

mod parsing;
mod signal;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::sysfs::{Journal, Sysfs, MAX_REGIONS, MIN_REGIONS};
use super::*;
use crate::platform::fake_files::{get, put};

const PID: u32 = 4242;

/// The files of kdamond `index` as the kernel creates them (one context, one target with
/// `ram_regions` region directories, one scheme).
fn fake_kdamond(
    root: &Path,
    index: usize,
    state: &str,
    pid: &str,
    ops: &str,
    avail: &str,
    ram_regions: usize,
) {
    let k = format!("kdamonds/{index}");
    put(root, &format!("{k}/state"), state);
    put(root, &format!("{k}/pid"), pid);
    put(root, &format!("{k}/contexts/nr_contexts"), "1");
    let c = format!("{k}/contexts/0");
    put(root, &format!("{c}/avail_operations"), avail);
    put(root, &format!("{c}/operations"), ops);
    for file in [
        "intervals/sample_us",
        "intervals/aggr_us",
        "intervals/update_us",
        "nr_regions/min",
        "nr_regions/max",
    ] {
        put(root, &format!("{c}/monitoring_attrs/{file}"), "0");
    }
    put(root, &format!("{c}/targets/nr_targets"), "0");
    put(root, &format!("{c}/targets/0/pid_target"), "0");
    put(root, &format!("{c}/targets/0/regions/nr_regions"), "0");
    for i in 0..ram_regions {
        put(root, &format!("{c}/targets/0/regions/{i}/start"), "0");
        put(root, &format!("{c}/targets/0/regions/{i}/end"), "0");
    }
    put(root, &format!("{c}/schemes/nr_schemes"), "0");
    put(root, &format!("{c}/schemes/0/action"), "pageout");
    for range in ["sz", "nr_accesses", "age"] {
        put(
            root,
            &format!("{c}/schemes/0/access_pattern/{range}/min"),
            "0",
        );
        put(
            root,
            &format!("{c}/schemes/0/access_pattern/{range}/max"),
            "0",
        );
    }
    put(
        root,
        &format!("{c}/schemes/0/tried_regions/total_bytes"),
        "0",
    );
}

/// A fake admin directory with `nr_kdamonds` and, in `proc`, process `PID`.
struct Fake {
    dir: tempfile::TempDir,
    journal: Journal,
}

impl Fake {
    fn new(nr_kdamonds: usize) -> Fake {
        let dir = tempfile::tempdir().unwrap();
        put(
            dir.path(),
            "admin/kdamonds/nr_kdamonds",
            &nr_kdamonds.to_string(),
        );
        put(dir.path(), &format!("proc/{PID}/maps"), "");
        Fake {
            dir,
            journal: Arc::new(Mutex::new(Vec::new())),
        }
    }

    fn admin(&self) -> PathBuf {
        self.dir.path().join("admin")
    }

    fn proc(&self) -> PathBuf {
        self.dir.path().join("proc")
    }

    fn sysfs(&self) -> Sysfs {
        Sysfs {
            root: self.admin(),
            journal: Some(Arc::clone(&self.journal)),
        }
    }

    fn start(&self, pid: libc::pid_t) -> Result<DamonMonitor, String> {
        DamonMonitor::start_in(self.sysfs(), &self.proc(), true, pid, 5_000, 100_000)
    }

    fn writes(&self) -> Vec<(String, String)> {
        self.journal.lock().unwrap().clone()
    }

    /// Every file under the fake tree with its content.
    fn tree(&self) -> BTreeMap<PathBuf, String> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
            for entry in fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, out);
                } else {
                    out.insert(path.clone(), fs::read_to_string(&path).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(self.dir.path(), &mut out);
        out
    }
}

fn w(path: &str, value: &str) -> (String, String) {
    (path.to_string(), value.to_string())
}

const IOMEM: &str = "00000000-00000fff : Reserved\n\
00001000-0009fbff : System RAM\n\
000a0000-000fffff : Reserved\n\
00100000-bffdffff : System RAM\n\
  01000000-01ffffff : Kernel code\n\
100000000-23fffffff : System RAM\n";

/// Pagemap entries: present with a PFN, absent, present without a PFN (no CAP_SYS_ADMIN).
fn entries(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_ne_bytes()).collect()
}

#[test]
fn an_absent_interface_is_said_with_what_enables_it() {
    let dir = tempfile::tempdir().unwrap();
    let status = status_at(&dir.path().join("admin"));
    assert!(
        matches!(&status, DamonStatus::Absent(why) if why.contains("CONFIG_DAMON_SYSFS")),
        "{status:?}"
    );
    assert!(status.to_string().starts_with("DAMON is not available"));
}

#[test]
fn a_user_who_is_not_root_is_told_so() {
    let fake = Fake::new(0);
    assert_eq!(status_in(&fake.sysfs(), false), DamonStatus::NotRoot);
    assert!(DamonStatus::NotRoot.to_string().contains("root"));
}

#[test]
fn a_running_kdamond_is_occupied_with_its_pid_and_operations() {
    let fake = Fake::new(2);
    fake_kdamond(
        &fake.admin(),
        0,
        "off",
        "-1",
        "vaddr",
        "vaddr fvaddr paddr",
        0,
    );
    fake_kdamond(
        &fake.admin(),
        1,
        "on",
        "77",
        "paddr",
        "vaddr fvaddr paddr",
        1,
    );
    assert_eq!(
        status_in(&fake.sysfs(), true),
        DamonStatus::Occupied {
            kdamond: 1,
            pid: Some(77),
            operations: "paddr".into()
        }
    );
}

#[test]
fn free_says_which_operations_the_kernel_has() {
    let fake = Fake::new(0);
    assert_eq!(
        status_in(&fake.sysfs(), true),
        DamonStatus::Free {
            vaddr: true,
            paddr: true
        }
    );
    let fake = Fake::new(1);
    fake_kdamond(&fake.admin(), 0, "off", "-1", "paddr", "paddr", 0);
    assert_eq!(
        status_in(&fake.sysfs(), true),
        DamonStatus::Free {
            vaddr: false,
            paddr: true
        }
    );
    let fake = Fake::new(1);
    fake_kdamond(
        &fake.admin(),
        0,
        "off",
        "-1",
        "vaddr",
        "vaddr fvaddr paddr",
        0,
    );
    assert_eq!(
        status_in(&fake.sysfs(), true),
        DamonStatus::Free {
            vaddr: true,
            paddr: true
        }
    );
}

#[test]
fn start_refuses_a_running_kdamond_it_did_not_create_and_writes_nothing() {
    let fake = Fake::new(1);
    fake_kdamond(&fake.admin(), 0, "on", "77", "paddr", "paddr", 1);
    let before = fake.tree();
    let error = fake.start(PID as libc::pid_t).err().unwrap();
    assert!(
        error.contains("DAMON is in use by kdamond 0 (pid 77, paddr operations), which memscope did not start and will not touch"),
        "{error}"
    );
    assert!(
        error.contains("accepts no new kdamond while one runs"),
        "{error}"
    );
    assert!(fake.writes().is_empty());
    assert_eq!(fake.tree(), before);
}

#[test]
fn start_refuses_to_recreate_kdamonds_that_are_off_and_writes_nothing() {
    let fake = Fake::new(1);
    fake_kdamond(&fake.admin(), 0, "off", "-1", "paddr", "vaddr paddr", 1);
    let before = fake.tree();
    let error = fake.start(PID as libc::pid_t).err().unwrap();
    assert!(error.contains("lose that configuration"), "{error}");
    assert!(fake.writes().is_empty());
    assert_eq!(fake.tree(), before);
}

#[test]
fn start_refuses_a_process_that_does_not_exist() {
    let fake = Fake::new(0);
    let error = fake.start(999_999).err().unwrap();
    assert!(error.contains("no process 999999"), "{error}");
    assert!(fake.writes().is_empty());
}

/// The writes of a vaddr start of kdamond 0, in order.
fn vaddr_start_writes() -> Vec<(String, String)> {
    let c = "kdamonds/0/contexts/0";
    let a = format!("{c}/monitoring_attrs");
    let s = format!("{c}/schemes/0");
    vec![
        w("kdamonds/nr_kdamonds", "1"),
        w("kdamonds/0/contexts/nr_contexts", "1"),
        w(&format!("{c}/operations"), "vaddr"),
        w(&format!("{a}/intervals/sample_us"), "5000"),
        w(&format!("{a}/intervals/aggr_us"), "100000"),
        w(&format!("{a}/intervals/update_us"), "1000000"),
        w(&format!("{a}/nr_regions/min"), &MIN_REGIONS.to_string()),
        w(&format!("{a}/nr_regions/max"), &MAX_REGIONS.to_string()),
        w(&format!("{c}/targets/nr_targets"), "1"),
        w(&format!("{c}/targets/0/pid_target"), &PID.to_string()),
        w(&format!("{c}/schemes/nr_schemes"), "1"),
        w(&format!("{s}/action"), "stat"),
        w(&format!("{s}/access_pattern/sz/min"), "0"),
        w(&format!("{s}/access_pattern/sz/max"), &u64::MAX.to_string()),
        w(&format!("{s}/access_pattern/nr_accesses/min"), "0"),
        w(
            &format!("{s}/access_pattern/nr_accesses/max"),
            &u32::MAX.to_string(),
        ),
        w(&format!("{s}/access_pattern/age/min"), "0"),
        w(
            &format!("{s}/access_pattern/age/max"),
            &u32::MAX.to_string(),
        ),
        w("kdamonds/0/state", "on"),
    ]
}

#[test]
fn start_writes_the_vaddr_kdamond_in_order_and_drop_removes_it() {
    let fake = Fake::new(0);
    fake_kdamond(&fake.admin(), 0, "off", "-1", "", "vaddr fvaddr paddr", 0);
    let monitor = fake.start(PID as libc::pid_t).unwrap();
    assert_eq!(fake.writes(), vaddr_start_writes());
    assert_eq!(get(&fake.admin(), "kdamonds/nr_kdamonds"), "1");
    assert_eq!(
        monitor.description(),
        "DAMON vaddr on pid 4242 (processes it starts are not watched: a vaddr target is one process), kdamond 0 (memscope's), sampling 5 ms, aggregation 100 ms"
    );
    assert!(cleanup::registered().contains(&"DAMON kdamond".to_string()));
    drop(monitor);
    let mut expected = vaddr_start_writes();
    expected.extend([w("kdamonds/0/state", "off"), w("kdamonds/nr_kdamonds", "0")]);
    assert_eq!(fake.writes(), expected);
    assert_eq!(get(&fake.admin(), "kdamonds/nr_kdamonds"), "0");
    assert_eq!(get(&fake.admin(), "kdamonds/0/state"), "off");
}

/// This process's journal entries for kdamonds under `admin`.
fn journaled(admin: &Path) -> Vec<crate::platform::journal::Record> {
    crate::platform::journal::journal()
        .list()
        .unwrap()
        .records
        .into_iter()
        .filter(|r| r.entry.pid == std::process::id())
        .filter(|r| matches!(&r.entry.change, Change::Kdamond { admin: a, .. } if a == admin))
        .collect()
}

#[test]
fn the_kdamond_is_journaled_while_it_exists_and_recognised_after_a_kill() {
    let fake = Fake::new(0);
    fake_kdamond(&fake.admin(), 0, "off", "-1", "", "vaddr paddr", 0);
    let monitor = fake.start(PID as libc::pid_t).unwrap();
    let records = journaled(&fake.admin());
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].entry.change,
        Change::Kdamond {
            admin: fake.admin(),
            index: 0,
            previous_count: 0,
            target_pid: PID,
            sample_us: 5_000,
            aggr_us: 100_000,
        }
    );
    // As if memscope were killed now: the monitor forgets its kdamond without removing
    // it, and the next start finds the entry and the kdamond as memscope configured it.
    drop(lock(&monitor.created).take());
    drop(monitor);
    assert_eq!(get(&fake.admin(), "kdamonds/nr_kdamonds"), "1");
    put(&fake.admin(), "kdamonds/0/state", "on");
    let entry = records[0].entry.clone();
    match restore_stale(&fake.admin(), &entry, false) {
        journal::Outcome::Restored(line) => assert!(
            line.starts_with("turned off and removed DAMON kdamond 0, memscope's"),
            "{line}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(get(&fake.admin(), "kdamonds/0/state"), "off");
    assert_eq!(get(&fake.admin(), "kdamonds/nr_kdamonds"), "0");
    records[0].remove().unwrap();

    // A normal start and stop leaves no entry.
    let monitor = fake.start(PID as libc::pid_t).unwrap();
    assert_eq!(journaled(&fake.admin()).len(), 1);
    monitor.stop().unwrap();
    assert!(journaled(&fake.admin()).is_empty());
}

#[test]
fn stop_removes_once_even_after_the_signal_action_ran() {
    let fake = Fake::new(0);
    fake_kdamond(&fake.admin(), 0, "off", "-1", "", "vaddr", 0);
    let monitor = fake.start(PID as libc::pid_t).unwrap();
    remove_on_signal(&monitor.created);
    assert_eq!(get(&fake.admin(), "kdamonds/nr_kdamonds"), "0");
    let writes = fake.writes().len();
    monitor.stop().unwrap();
    assert_eq!(fake.writes().len(), writes);
}

#[test]
fn a_failure_in_the_middle_of_start_removes_the_kdamond() {
    let fake = Fake::new(0);
    fake_kdamond(&fake.admin(), 0, "off", "-1", "", "vaddr", 0);
    fs::remove_file(fake.admin().join("kdamonds/0/contexts/0/schemes/0/action")).unwrap();
    let error = fake.start(PID as libc::pid_t).err().unwrap();
    assert!(
        error.contains("did not start memscope's kdamond 0") && error.contains("action"),
        "{error}"
    );
    assert_eq!(get(&fake.admin(), "kdamonds/nr_kdamonds"), "0");
    assert_eq!(
        fake.writes().last().unwrap(),
        &w("kdamonds/nr_kdamonds", "0")
    );
}

#[test]
fn a_vaddr_snapshot_asks_for_the_regions_and_maps_them_directly() {
    let fake = Fake::new(0);
    fake_kdamond(&fake.admin(), 0, "off", "-1", "", "vaddr", 0);
    let mut monitor = fake.start(PID as libc::pid_t).unwrap();
    let dir = "kdamonds/0/contexts/0/schemes/0/tried_regions/0";
    put(&fake.admin(), &format!("{dir}/start"), "4096");
    put(&fake.admin(), &format!("{dir}/end"), "8192");
    put(&fake.admin(), &format!("{dir}/nr_accesses"), "5");
    put(&fake.admin(), &format!("{dir}/age"), "1");
    let spans = monitor.snapshot().unwrap();
    assert_eq!(
        spans,
        vec![AccessSpan {
            pid: PID,
            start: 4096,
            end: 8192,
            value: 5.0
        }]
    );
    assert_eq!(
        fake.writes().last().unwrap(),
        &w("kdamonds/0/state", "update_schemes_tried_regions")
    );
    // The fake state is not "on" any more, as the kernel's would stay: the next snapshot
    // sees a stopped kdamond.
    assert!(monitor
        .snapshot()
        .unwrap_err()
        .to_string()
        .contains("has stopped"));
}

#[test]
fn without_vaddr_start_monitors_the_ram_and_snapshot_goes_through_pagemap() {
    let fake = Fake::new(0);
    fake_kdamond(&fake.admin(), 0, "off", "-1", "", "paddr", 3);
    put(&fake.proc(), "iomem", IOMEM);
    put(
        &fake.proc(),
        &format!("{PID}/maps"),
        "00002000-00004000 rw-p 00000000 00:00 0 [heap]",
    );
    let present = 1u64 << 63;
    // Entries for virtual pages 0, 1 (unmapped) and 2, 3 (frames 0x200, 0x201).
    let mut pagemap = entries(&[0, 0]);
    pagemap.extend(entries(&[present | 0x200, present | 0x201]));
    fs::write(fake.proc().join(format!("{PID}/pagemap")), pagemap).unwrap();
    let mut monitor = fake.start(PID as libc::pid_t).unwrap();
    monitor.page_bytes = 4096;
    let written = fake.writes();
    assert!(written.contains(&w("kdamonds/0/contexts/0/operations", "paddr")));
    let regions = "kdamonds/0/contexts/0/targets/0/regions";
    assert!(written.contains(&w(&format!("{regions}/nr_regions"), "3")));
    assert!(written.contains(&w(&format!("{regions}/2/start"), "4294967296")));
    assert!(written.contains(&w(&format!("{regions}/2/end"), "9663676416")));
    assert!(monitor.description().starts_with(
        "DAMON paddr over 3 System RAM range(s), attributed to the pages of pid 4242"
    ));
    let dir = "kdamonds/0/contexts/0/schemes/0/tried_regions/0";
    put(
        &fake.admin(),
        &format!("{dir}/start"),
        &0x201_000u64.to_string(),
    );
    put(
        &fake.admin(),
        &format!("{dir}/end"),
        &0x300_000u64.to_string(),
    );
    put(&fake.admin(), &format!("{dir}/nr_accesses"), "4");
    put(&fake.admin(), &format!("{dir}/age"), "0");
    let spans = monitor.snapshot().unwrap();
    assert_eq!(
        spans,
        vec![AccessSpan {
            pid: PID,
            start: 0x3000,
            end: 0x4000,
            value: 4.0
        }]
    );
    drop(monitor);
    assert_eq!(get(&fake.admin(), "kdamonds/nr_kdamonds"), "0");
}

#[test]
fn the_real_interface_is_read_without_panicking() {
    // Read only: status() never writes. On the project's VMs a system kdamond runs.
    let status = status();
    eprintln!("DAMON here: {status}");
    if let DamonStatus::Occupied { operations, .. } = &status {
        assert!(!operations.is_empty());
    }
}

#[test]
fn a_kdamond_without_its_contexts_directory_is_removed_again() {
    let fake = Fake::new(0);
    put(&fake.admin(), "kdamonds/0/state", "off");
    let error = fake.start(PID as libc::pid_t).err().unwrap();
    assert!(
        error.contains("DAMON refused a new kdamond") && error.contains("nr_contexts"),
        "{error}"
    );
    assert_eq!(
        fake.writes(),
        vec![
            w("kdamonds/nr_kdamonds", "1"),
            w("kdamonds/0/contexts/nr_contexts", "1"),
            w("kdamonds/nr_kdamonds", "0"),
        ]
    );
    assert_eq!(get(&fake.admin(), "kdamonds/nr_kdamonds"), "0");
}

#[test]
fn removal_leaves_the_count_alone_while_a_kdamond_it_did_not_create_runs() {
    let fake = Fake::new(0);
    fake_kdamond(&fake.admin(), 0, "off", "-1", "", "vaddr", 0);
    let monitor = fake.start(PID as libc::pid_t).unwrap();
    // Someone else added and started kdamond 1 meanwhile (as if the kernel allowed it).
    put(&fake.admin(), "kdamonds/nr_kdamonds", "2");
    fake_kdamond(&fake.admin(), 1, "on", "99", "paddr", "vaddr", 1);
    let error = monitor.stop().unwrap_err().to_string();
    assert!(error.contains("nr_kdamonds is 2"), "{error}");
    assert_eq!(get(&fake.admin(), "kdamonds/nr_kdamonds"), "2");
    assert_eq!(get(&fake.admin(), "kdamonds/1/state"), "on");
    assert_eq!(get(&fake.admin(), "kdamonds/0/state"), "off");
    assert!(!fake
        .writes()
        .iter()
        .any(|(path, _)| path.starts_with("kdamonds/1/")));
    // Not removed, so its entry stays for the next start (which will find the count
    // changed and leave the kdamonds alone); this test clears it itself.
    let records = journaled(&fake.admin());
    assert_eq!(records.len(), 1);
    records[0].remove().unwrap();
}
