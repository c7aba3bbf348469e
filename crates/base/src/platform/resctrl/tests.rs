//! resctrl against synthetic trees in temporary directories (no machine here need have
//! resctrl): detection, the pure helpers, a group's life and its journal entry, and the
//! removal of a group a killed memscope left.

use std::fs;

use super::*;
use crate::platform::fake_files::{get, put};
use crate::platform::journal::FORMAT;

use super::fake::{mountinfo, synthetic, tree};

/// The journal entries (of the unit tests' journal) naming a group under `root`.
fn entries_under(root: &Path) -> Vec<PathBuf> {
    journal::journal()
        .list()
        .unwrap()
        .records
        .into_iter()
        .filter_map(|r| match r.entry.change {
            Change::ResctrlGroup { path } if path.starts_with(root) => Some(path),
            _ => None,
        })
        .collect()
}

#[test]
fn cat_and_mba_are_read_from_info_and_the_default_schemata() {
    let dir = tree(true, true);
    let r = synthetic(dir.path());
    assert_eq!(r.path(), dir.path());
    assert_eq!(
        r.l3,
        Some(Cat {
            cbm_mask: 0x7ff,
            min_cbm_bits: 1,
            num_closids: 16,
            shareable_bits: 0x600,
            domains: vec![0, 1],
        })
    );
    assert_eq!(r.l3.as_ref().unwrap().ways(), 11);
    assert_eq!(
        r.mb,
        Some(Mba {
            min_bandwidth: 10,
            bandwidth_gran: 10,
            delay_linear: true,
            num_closids: 8,
            domains: vec![0, 1],
        })
    );
    assert!(r.notes.is_empty(), "{:?}", r.notes);
}

#[test]
fn cat_only_none_cdp_and_mb_in_other_units_are_told_apart() {
    let cat_only = tree(true, false);
    let r = synthetic(cat_only.path());
    assert!(r.l3.is_some() && r.mb.is_none());
    assert!(r.mb_schemata(50).is_err());

    let none = tree(false, false);
    let r = synthetic(none.path());
    assert!(r.l3.is_none() && r.mb.is_none() && r.notes.is_empty());
    assert!(r.l3_schemata(2).is_err());

    let cdp = tree(false, false);
    put(cdp.path(), "info/L3CODE/cbm_mask", "7ff");
    let r = synthetic(cdp.path());
    assert!(r.l3.is_none());
    assert!(r.notes[0].contains("CDP"), "{:?}", r.notes);

    let amd = tree(true, true);
    fs::write(
        amd.path().join("schemata"),
        "MB:0=2048;1=2048\nL3:0=7ff;1=7ff\n",
    )
    .unwrap();
    let r = synthetic(amd.path());
    assert!(r.l3.is_some() && r.mb.is_none());
    assert!(r.notes[0].contains("MB:0=2048;1=2048"), "{:?}", r.notes);

    // An info/L3 with a bad mask is said, naming the file and the value.
    let bad = tree(true, false);
    put(bad.path(), "info/L3/cbm_mask", "zz");
    let error = detect_with(&mountinfo(bad.path()), "", Fs::Synthetic).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("cbm_mask") && text.contains("'zz'"), "{text}");
}

#[test]
fn not_mounted_says_how_to_mount_and_what_the_cpu_has() {
    let mounts = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n";
    let none = detect_with(
        mounts,
        "flags\t\t: fpu sse2 rdtscp hypervisor\n",
        Fs::Synthetic,
    )
    .unwrap_err();
    assert_eq!(none, Unavailable::NotMounted(CpuFlags::default()));
    let text = none.to_string();
    assert!(
        text.contains("mount -t resctrl resctrl /sys/fs/resctrl") && text.contains("no rdt_a"),
        "{text}"
    );
    let cpuinfo = "processor: 0\nflags\t\t: fpu cat_l3 cdp_l3 rdt_a mba\nprocessor: 1\n";
    let some = detect_with(mounts, cpuinfo, Fs::Synthetic).unwrap_err();
    assert_eq!(
        some,
        Unavailable::NotMounted(CpuFlags {
            rdt_a: true,
            cat_l3: true,
            mba: true
        })
    );
    assert!(some.to_string().contains("this CPU has rdt_a, cat_l3, mba"));
    // A mount point with a space, escaped by the kernel.
    let escaped = "40 22 0:38 / /mnt/res\\040ctrl rw - resctrl resctrl rw\n";
    assert_eq!(mount_point(escaped), Some(PathBuf::from("/mnt/res ctrl")));
    // This machine: whatever it has, detection answers without a panic.
    let _ = detect();
}

#[test]
fn a_directory_that_is_not_resctrl_is_refused_by_its_statfs_magic() {
    let dir = tree(true, true);
    let error = detect_with(&mountinfo(dir.path()), "", Fs::Resctrl).unwrap_err();
    assert!(
        matches!(&error, Unavailable::NotResctrl { why, .. } if why.contains("0x7655821")),
        "{error}"
    );
}

#[test]
fn ways_are_contiguous_inside_the_mask_and_off_the_shareable_ones() {
    assert_eq!(contiguous_cbm(0x7ff, 0x600, 4), Some(0xf));
    assert_eq!(contiguous_cbm(0x7ff, 0x600, 11), Some(0x7ff));
    assert_eq!(contiguous_cbm(0x7ff, 0x600, 10), Some(0x3ff));
    // Shareable low ways: the window moves above them.
    assert_eq!(contiguous_cbm(0x7ff, 0x3, 2), Some(0xc));
    assert_eq!(contiguous_cbm(0x7ff, 0, 12), None);
    assert_eq!(contiguous_cbm(0x7ff, 0, 0), None);
    // A mask with a hole: only a run inside one part.
    assert_eq!(contiguous_cbm(0xf0f, 0, 4), Some(0xf));
    assert_eq!(contiguous_cbm(0xf0f, 0x00f, 4), Some(0xf00));
    assert_eq!(contiguous_cbm(0xf0f, 0, 5), None);
    assert_eq!(contiguous_cbm(u64::MAX, 0, 64), Some(u64::MAX));
    let cat = Cat {
        cbm_mask: 0xfff,
        min_cbm_bits: 2,
        num_closids: 16,
        shareable_bits: 0,
        domains: vec![0],
    };
    assert_eq!(cat.mask(1), None);
    assert_eq!(cat.mask(2), Some(0x3));
}

#[test]
fn ways_and_capacity_convert_both_ways() {
    const KIB: u64 = 1024;
    let llc = 11 * 1408 * KIB; // 11 ways of 1408 KiB
    assert_eq!(capacity_of_ways(llc, 4, 11), 4 * 1408 * KIB);
    assert_eq!(ways_for_capacity(llc, 11, 4 * 1408 * KIB), 4);
    assert_eq!(ways_for_capacity(llc, 11, (4 * 1408 + 700) * KIB), 4);
    assert_eq!(ways_for_capacity(llc, 11, (4 * 1408 + 800) * KIB), 5);
    // At least one way, at most all of them.
    assert_eq!(ways_for_capacity(llc, 11, 0), 1);
    assert_eq!(ways_for_capacity(llc, 11, llc * 2), 11);
    assert_eq!(ways_for_capacity(0, 11, 1), 0);
    assert_eq!(capacity_of_ways(llc, 1, 0), 0);
}

#[test]
fn mb_percentages_round_to_the_granularity_within_bounds() {
    assert_eq!(mb_percent(50, 10, 10), 50);
    assert_eq!(mb_percent(25, 10, 10), 20);
    assert_eq!(mb_percent(26, 10, 10), 30);
    assert_eq!(mb_percent(3, 10, 10), 10);
    assert_eq!(mb_percent(150, 10, 10), 100);
    assert_eq!(mb_percent(33, 1, 5), 33);
    assert_eq!(mb_percent(25, 0, 0), 25);
}

#[test]
fn a_group_is_made_written_given_a_task_and_removed_on_drop() {
    let dir = tree(true, true);
    let r = synthetic(dir.path());
    let default_schemata = fs::read_to_string(dir.path().join("schemata")).unwrap();
    let group = ResctrlGroup::create(&r, Limit::L3Ways(4)).unwrap();
    let path = group.path().to_path_buf();
    let name = path.file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        name.starts_with(&format!("memscope-{}-", std::process::id())),
        "{name}"
    );
    assert_eq!(path.parent(), Some(dir.path()));
    // Only the L3 line, the lowest four ways (the top two are shareable), every domain.
    assert_eq!(get(dir.path(), &format!("{name}/schemata")), "L3:0=f;1=f");
    group.add_task(4242).unwrap();
    assert_eq!(get(dir.path(), &format!("{name}/tasks")), "4242");
    assert_eq!(entries_under(dir.path()), vec![path.clone()]);
    assert!(crate::platform::cleanup::registered()
        .contains(&format!("remove the resctrl group {}", path.display())));
    drop(group);
    assert!(!path.exists());
    assert!(entries_under(dir.path()).is_empty());
    assert!(!crate::platform::cleanup::registered()
        .contains(&format!("remove the resctrl group {}", path.display())));
    // The default group is never written.
    assert_eq!(
        fs::read_to_string(dir.path().join("schemata")).unwrap(),
        default_schemata
    );
    assert_eq!(get(dir.path(), "tasks"), "1\n2");

    let throttled = ResctrlGroup::create(&r, Limit::MbPercent(25)).unwrap();
    assert_eq!(
        get(
            dir.path(),
            &format!(
                "{}/schemata",
                throttled.path().file_name().unwrap().to_str().unwrap()
            )
        ),
        "MB:0=20;1=20"
    );
    assert_ne!(throttled.path(), path);
}

#[test]
fn an_existing_name_is_refused_and_left_as_it_is() {
    let dir = tree(true, false);
    let r = synthetic(dir.path());
    let name = format!("memscope-{}-999999", std::process::id());
    put(dir.path(), &format!("{name}/schemata"), "L3:0=7ff;1=7ff");
    let error = ResctrlGroup::create_named(&r, Limit::L3Ways(2), &name).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::AlreadyExists, "{error}");
    assert!(error.to_string().contains("exists already"), "{error}");
    assert_eq!(
        get(dir.path(), &format!("{name}/schemata")),
        "L3:0=7ff;1=7ff"
    );
    assert!(entries_under(dir.path()).is_empty());
    // A restriction the tree cannot give is refused before anything is made.
    let error = ResctrlGroup::create(&r, Limit::L3Ways(12)).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{error}");
    assert!(ResctrlGroup::create(&r, Limit::MbPercent(50)).is_err());
    // info, schemata, tasks and the other group: nothing new.
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 4);
}

fn entry(pid: u32, path: PathBuf) -> Entry {
    Entry {
        format: FORMAT,
        pid,
        start_time: 1,
        boot_id: "boot".into(),
        time: "2026-01-01T00:00:00.000Z".into(),
        change: Change::ResctrlGroup { path },
    }
}

/// A group as the kernel would show it after the memscope that made it was killed.
fn left_group(root: &Path, name: &str) -> PathBuf {
    let path = root.join(name);
    for file in SYNTHETIC_FILES {
        put(root, &format!("{name}/{file}"), "");
    }
    put(root, &format!("{name}/tasks"), "777");
    path
}

#[test]
fn a_group_a_killed_memscope_left_is_removed_and_others_are_left_alone() {
    let dir = tree(true, true);
    let path = left_group(dir.path(), "memscope-1234-0");
    let outcome = restore_stale(&entry(1234, path.clone()), Fs::Synthetic);
    assert!(
        matches!(&outcome, Outcome::Restored(line) if line.contains("memscope pid 1234 was killed")),
        "{outcome:?}"
    );
    assert!(!path.exists());
    // Gone already: clean.
    assert_eq!(
        restore_stale(&entry(1234, path), Fs::Synthetic),
        Outcome::Clean
    );
    // Another process's name, or not a memscope name: left alone.
    let other = left_group(dir.path(), "memscope-99-0");
    let outcome = restore_stale(&entry(1234, other.clone()), Fs::Synthetic);
    assert!(matches!(outcome, Outcome::LeftAlone(_)), "{outcome:?}");
    let foreign = left_group(dir.path(), "database");
    let outcome = restore_stale(&entry(1234, foreign.clone()), Fs::Synthetic);
    assert!(matches!(outcome, Outcome::LeftAlone(_)), "{outcome:?}");
    assert!(other.exists() && foreign.exists());
    // Where the parent is not resctrl (unmounted, something else there now): left alone.
    let ours = left_group(dir.path(), "memscope-1234-1");
    let outcome = restore_stale(&entry(1234, ours.clone()), Fs::Resctrl);
    assert!(
        matches!(&outcome, Outcome::LeftAlone(line) if line.contains("not a resctrl filesystem")),
        "{outcome:?}"
    );
    assert!(ours.exists());
    // The whole root gone: clean.
    let gone = dir.path().join("unmounted/memscope-1234-0");
    assert_eq!(
        restore_stale(&entry(1234, gone), Fs::Synthetic),
        Outcome::Clean
    );
}
