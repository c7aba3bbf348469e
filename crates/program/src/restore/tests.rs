//! The restoration pass against fake /proc, hugetlbfs and DAMON trees in temporary
//! directories: what is undone, what is left alone, what waits.

use std::fs;

use super::*;
use crate::platform::fake_files::{get, put};
use crate::platform::journal::{Entry, FORMAT};

const BOOT: &str = "boot-a";
/// A process that is gone (no such directory in the fake /proc).
const DEAD: u32 = 1234;
/// A process running in the fake /proc, started at tick 500.
const ALIVE: u32 = 4321;

struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new() -> Fake {
        let fake = Fake {
            dir: tempfile::tempdir().unwrap(),
        };
        let stat = fake.path("proc").join(ALIVE.to_string());
        fs::create_dir_all(&stat).unwrap();
        let mut fields = vec!["0".to_string(); 18];
        fields.push("500".into());
        fs::write(
            stat.join("stat"),
            format!("{ALIVE} (memscope) S {}\n", fields.join(" ")),
        )
        .unwrap();
        fake.pool(0);
        put(&fake.path("admin"), "kdamonds/nr_kdamonds", "0");
        fake
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn journal(&self) -> Journal {
        Journal::at(&self.path("journal"))
    }

    fn system(&self) -> System {
        System {
            proc_root: self.path("proc"),
            boot_id: BOOT.into(),
        }
    }

    fn roots(&self) -> Roots {
        Roots {
            hugepages: self.path("hugepages"),
            damon_admin: self.path("admin"),
        }
    }

    fn nr_path(&self) -> PathBuf {
        self.path("hugepages/hugepages-2048kB/nr_hugepages")
    }

    fn pool(&self, count: u64) {
        let path = self.nr_path();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, format!("{count}\n")).unwrap();
    }

    fn nr(&self) -> u64 {
        fs::read_to_string(self.nr_path())
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Writes an entry as process `pid` (started at `start`, in `boot`) would have.
    fn entry(&self, pid: u32, start: u64, boot: &str, n: u32, change: Change) -> PathBuf {
        let journal = self.journal();
        journal.prepare().unwrap();
        let entry = Entry {
            format: FORMAT,
            pid,
            start_time: start,
            boot_id: boot.into(),
            time: format!("2026-01-01T00:00:{n:02}.000Z"),
            change,
        };
        let file = journal.dir().join(format!("{pid}-{start}-{n}.json"));
        fs::write(&file, serde_json::to_vec_pretty(&entry).unwrap()).unwrap();
        file
    }

    fn pool_change(&self, previous: u64, set: &[u64]) -> Change {
        Change::HugepagePool {
            path: self.nr_path(),
            page_bytes: 2 << 20,
            previous,
            set: set.to_vec(),
            pages: 4,
        }
    }

    fn sweep(&self) -> Summary {
        sweep(&self.journal(), &self.system(), &self.roots())
    }

    fn entries(&self) -> usize {
        self.journal().list().unwrap().records.len()
    }
}

#[test]
fn a_pool_a_killed_memscope_grew_is_set_back_and_said_in_one_line() {
    let fake = Fake::new();
    fake.pool(64);
    fake.entry(DEAD, 77, BOOT, 0, fake.pool_change(0, &[64]));
    let summary = fake.sweep();
    assert_eq!(
        summary.restored,
        vec![
            "restored the 2 MiB hugetlbfs pool to 0 pages (memscope pid 1234 was killed \
             while it held 64)"
        ]
    );
    assert!(
        summary.left.is_empty() && summary.failed.is_empty(),
        "{summary:?}"
    );
    assert_eq!(fake.nr(), 0);
    assert_eq!(fake.entries(), 0);
    // A second pass finds nothing.
    assert_eq!(fake.sweep(), Summary::default());
}

#[test]
fn a_pool_someone_changed_since_is_left_and_said() {
    let fake = Fake::new();
    fake.pool(100);
    fake.entry(DEAD, 77, BOOT, 0, fake.pool_change(0, &[64]));
    let summary = fake.sweep();
    assert!(summary.restored.is_empty());
    assert_eq!(
        summary.left,
        vec![
            "left the 2 MiB hugetlbfs pool at 100 pages: memscope pid 1234 was killed while \
             it held 64 (and would have set it back to 0), but it has been changed since"
        ]
    );
    assert_eq!(fake.nr(), 100);
    assert_eq!(fake.entries(), 0, "said once, not at every start");
}

#[test]
fn a_pool_already_back_or_reset_by_a_reboot_is_clean_and_silent() {
    let fake = Fake::new();
    // Killed after journaling, before the write (or after setting it back).
    fake.entry(DEAD, 77, BOOT, 0, fake.pool_change(0, &[64]));
    // Written before a reboot: the pool holds what the boot set, even if that is 64.
    fake.pool(0);
    assert_eq!(fake.sweep(), Summary::default());
    fake.pool(64);
    fake.entry(DEAD, 77, "boot-before", 1, fake.pool_change(0, &[64]));
    assert_eq!(fake.sweep(), Summary::default());
    assert_eq!(fake.nr(), 64);
    assert_eq!(fake.entries(), 0);
}

#[test]
fn a_running_memscope_keeps_its_entries_and_a_reused_pid_does_not_count() {
    let fake = Fake::new();
    fake.pool(64);
    let alive = fake.entry(ALIVE, 500, BOOT, 0, fake.pool_change(0, &[64]));
    let summary = fake.sweep();
    assert!(summary.restored.is_empty());
    assert_eq!(
        summary.running,
        vec!["memscope pid 4321 is running and holds the 2 MiB hugetlbfs pool; left to it"]
    );
    assert_eq!(fake.nr(), 64);
    assert!(alive.exists());
    fs::remove_file(alive).unwrap();
    // Same pid, another start time: the pid was reused; the memscope is gone.
    fake.entry(ALIVE, 499, BOOT, 1, fake.pool_change(0, &[64]));
    let summary = fake.sweep();
    assert_eq!(summary.restored.len(), 1, "{summary:?}");
    assert_eq!(fake.nr(), 0);
}

#[test]
fn a_pool_also_held_by_a_running_memscope_waits_for_it() {
    let fake = Fake::new();
    // A grew it 0 → 64 and was killed; B (running) grew it 64 → 128.
    fake.pool(128);
    let a = fake.entry(DEAD, 77, BOOT, 0, fake.pool_change(0, &[64]));
    fake.entry(ALIVE, 500, BOOT, 1, fake.pool_change(64, &[128]));
    let summary = fake.sweep();
    assert!(
        summary.restored.is_empty() && summary.left.is_empty(),
        "{summary:?}"
    );
    assert!(a.exists(), "A's entry must wait for B");
    assert_eq!(fake.nr(), 128);
    // B ends and sets it back to 64 (removing its entry): now A's entry is undone.
    fake.pool(64);
    for record in fake.journal().list().unwrap().records {
        if record.entry.pid == ALIVE {
            record.remove().unwrap();
        }
    }
    assert_eq!(fake.sweep().restored.len(), 1);
    assert_eq!(fake.nr(), 0);
}

#[test]
fn a_killed_run_that_only_used_pages_already_there_changed_nothing() {
    let fake = Fake::new();
    // A grew it 0 → 64 and was killed; B used pages of it without growing it (its entry
    // has no values set) and was killed too.
    fake.pool(64);
    fake.entry(DEAD, 77, BOOT, 0, fake.pool_change(0, &[64]));
    fake.entry(DEAD + 1, 78, BOOT, 1, fake.pool_change(64, &[]));
    let summary = fake.sweep();
    assert_eq!(summary.restored.len(), 1, "{summary:?}");
    assert!(summary.left.is_empty(), "{summary:?}");
    assert_eq!(fake.nr(), 0);
    assert_eq!(fake.entries(), 0);
}

#[test]
fn two_killed_memscopes_unwind_as_a_chain() {
    let fake = Fake::new();
    fake.pool(130);
    fake.entry(DEAD, 77, BOOT, 0, fake.pool_change(0, &[64]));
    // The second asked for 128, was granted 130 (read back), and was killed too.
    fake.entry(DEAD + 1, 78, BOOT, 1, fake.pool_change(64, &[128, 130]));
    let summary = fake.sweep();
    assert_eq!(
        summary.restored,
        vec![
            "restored the 2 MiB hugetlbfs pool to 64 pages (memscope pid 1235 was killed \
             while it held 130)",
            "restored the 2 MiB hugetlbfs pool to 0 pages (memscope pid 1234 was killed \
             while it held 64)",
        ]
    );
    assert_eq!(fake.nr(), 0);
    assert_eq!(fake.entries(), 0);
}

#[test]
fn a_pool_that_cannot_be_restored_is_said_and_kept_for_the_next_start() {
    let fake = Fake::new();
    fs::remove_file(fake.nr_path()).unwrap();
    fs::create_dir(fake.nr_path()).unwrap();
    let entry = fake.entry(DEAD, 77, BOOT, 0, fake.pool_change(0, &[64]));
    let summary = fake.sweep();
    assert_eq!(summary.failed.len(), 1, "{summary:?}");
    assert!(
        summary.failed[0].starts_with(&format!(
            "could not read {} to restore the 2 MiB hugetlbfs pool",
            fake.nr_path().display()
        )),
        "{summary:?}"
    );
    assert!(entry.exists());
}

#[test]
fn only_the_hugetlbfs_pool_files_are_ever_written() {
    let fake = Fake::new();
    let elsewhere = fake.path("not-a-pool");
    fs::write(&elsewhere, "64\n").unwrap();
    fake.entry(
        DEAD,
        77,
        BOOT,
        0,
        Change::HugepagePool {
            path: elsewhere.clone(),
            page_bytes: 2 << 20,
            previous: 0,
            set: vec![64],
            pages: 4,
        },
    );
    let summary = fake.sweep();
    assert_eq!(summary.left.len(), 1, "{summary:?}");
    assert!(summary.left[0].contains("is not the hugetlbfs pool file memscope writes"));
    assert_eq!(fs::read_to_string(&elsewhere).unwrap(), "64\n");
}

/// Kdamond 0 as memscope configures it for a vaddr target.
fn memscopes_kdamond(admin: &Path, state: &str, target: u32) {
    put(admin, "kdamonds/nr_kdamonds", "1");
    let k = "kdamonds/0";
    put(admin, &format!("{k}/state"), state);
    put(admin, &format!("{k}/contexts/nr_contexts"), "1");
    let c = format!("{k}/contexts/0");
    put(admin, &format!("{c}/operations"), "vaddr");
    put(
        admin,
        &format!("{c}/monitoring_attrs/intervals/sample_us"),
        "5000",
    );
    put(
        admin,
        &format!("{c}/monitoring_attrs/intervals/aggr_us"),
        "100000",
    );
    put(admin, &format!("{c}/targets/nr_targets"), "1");
    put(
        admin,
        &format!("{c}/targets/0/pid_target"),
        &target.to_string(),
    );
    put(admin, &format!("{c}/schemes/nr_schemes"), "1");
    put(admin, &format!("{c}/schemes/0/action"), "stat");
}

fn kdamond_change(fake: &Fake, target: u32) -> Change {
    Change::Kdamond {
        admin: fake.path("admin"),
        index: 0,
        previous_count: 0,
        target_pid: target,
        sample_us: 5000,
        aggr_us: 100_000,
    }
}

#[test]
fn memscopes_kdamond_is_turned_off_and_removed() {
    let fake = Fake::new();
    let admin = fake.path("admin");
    memscopes_kdamond(&admin, "on", 999);
    fake.entry(DEAD, 77, BOOT, 0, kdamond_change(&fake, 999));
    let summary = fake.sweep();
    assert_eq!(
        summary.restored,
        vec![
            "turned off and removed DAMON kdamond 0, memscope's (memscope pid 1234 was \
             killed while it ran)"
        ]
    );
    assert_eq!(get(&admin, "kdamonds/0/state"), "off");
    assert_eq!(get(&admin, "kdamonds/nr_kdamonds"), "0");
    assert_eq!(fake.entries(), 0);
}

#[test]
fn a_kdamond_killed_while_being_set_up_is_removed() {
    let fake = Fake::new();
    let admin = fake.path("admin");
    put(&admin, "kdamonds/nr_kdamonds", "1");
    put(&admin, "kdamonds/0/state", "off");
    put(&admin, "kdamonds/0/contexts/nr_contexts", "0");
    fake.entry(DEAD, 77, BOOT, 0, kdamond_change(&fake, 999));
    assert_eq!(fake.sweep().restored.len(), 1);
    assert_eq!(get(&admin, "kdamonds/nr_kdamonds"), "0");
}

#[test]
fn a_kdamond_that_is_not_recognisably_memscopes_is_never_touched() {
    let fake = Fake::new();
    let admin = fake.path("admin");
    // Reconfigured since (another target), another count, or never created.
    for (setup, left) in [
        (
            Box::new(|a: &Path| memscopes_kdamond(a, "on", 555)) as Box<dyn Fn(&Path)>,
            "it is no longer configured as the one memscope created",
        ),
        (
            Box::new(|a: &Path| {
                memscopes_kdamond(a, "on", 999);
                put(a, "kdamonds/0/contexts/0/schemes/0/action", "pageout");
            }),
            "it is no longer configured as the one memscope created",
        ),
        (
            Box::new(|a: &Path| {
                memscopes_kdamond(a, "on", 999);
                put(a, "kdamonds/nr_kdamonds", "2");
            }),
            "there are 2 now, not the 1 memscope set",
        ),
    ] {
        setup(&admin);
        fake.entry(DEAD, 77, BOOT, 0, kdamond_change(&fake, 999));
        let summary = fake.sweep();
        assert!(summary.restored.is_empty(), "{summary:?}");
        assert_eq!(summary.left.len(), 1, "{summary:?}");
        assert!(summary.left[0].contains(left), "{summary:?}");
        assert_eq!(get(&admin, "kdamonds/0/state"), "on");
        assert_ne!(get(&admin, "kdamonds/nr_kdamonds"), "0");
        assert_eq!(fake.entries(), 0);
    }
    // Killed before it created one: nothing there, nothing said.
    put(&admin, "kdamonds/nr_kdamonds", "0");
    fake.entry(DEAD, 77, BOOT, 0, kdamond_change(&fake, 999));
    assert_eq!(fake.sweep(), Summary::default());
}

#[test]
fn a_kdamond_of_a_running_memscope_waits() {
    let fake = Fake::new();
    let admin = fake.path("admin");
    memscopes_kdamond(&admin, "on", 999);
    fake.entry(ALIVE, 500, BOOT, 0, kdamond_change(&fake, 999));
    let summary = fake.sweep();
    assert_eq!(summary.running.len(), 1);
    assert!(summary.restored.is_empty());
    assert_eq!(get(&admin, "kdamonds/nr_kdamonds"), "1");
}

#[test]
fn scratch_directories_go_and_unreadable_entries_are_kept() {
    let fake = Fake::new();
    let left = fake.path("memscope-files-Ab3dE6gH9k");
    fs::create_dir_all(left.join("sub")).unwrap();
    fs::write(left.join("sub/file-1"), b"x").unwrap();
    // A scratch directory outlives a reboot, so an earlier boot's entry counts too.
    fake.entry(
        DEAD,
        77,
        "boot-before",
        0,
        Change::ScratchDir {
            path: left.clone(),
            prefix: "memscope-files-".into(),
        },
    );
    let journal = fake.journal();
    fs::write(journal.dir().join("9-9-9.json"), "{\"format\": 99}").unwrap();
    let summary = fake.sweep();
    assert_eq!(
        summary.restored,
        vec![format!(
            "removed the scratch directory {} (memscope pid 1234 was killed while it used it)",
            left.display()
        )]
    );
    assert!(!left.exists());
    assert!(summary.left.is_empty(), "{summary:?}");
    assert_eq!(
        summary.unreadable,
        vec![format!(
            "kept the journal entry {}, which this memscope cannot read (entry format 99, \
             this memscope reads format 1)",
            journal.dir().join("9-9-9.json").display()
        )]
    );
    let mut names: Vec<String> = fs::read_dir(journal.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [".lock", "9-9-9.json"]);
}

#[test]
fn entries_this_process_writes_are_its_own_until_it_is_gone() {
    let fake = Fake::new();
    let journal = fake.journal();
    fake.pool(64);
    let record = journal.record(fake.pool_change(0, &[64])).unwrap();
    // Judged against the real /proc, this process is running.
    let real = System {
        proc_root: PathBuf::from("/proc"),
        boot_id: journal::this_process().boot_id.clone(),
    };
    let summary = sweep(&journal, &real, &fake.roots());
    assert_eq!(summary.running.len(), 1, "{summary:?}");
    assert_eq!(fake.nr(), 64);
    // Against a /proc without it (in the same boot), it is gone: its pool is set back.
    let gone = System {
        proc_root: fake.path("proc"),
        ..real
    };
    let summary = sweep(&journal, &gone, &fake.roots());
    assert_eq!(summary.restored.len(), 1, "{summary:?}");
    assert!(!record.file().exists());
    assert_eq!(fake.nr(), 0);
}

#[test]
fn a_resctrl_group_a_killed_memscope_left_is_removed_and_a_reboot_is_clean() {
    let fake = Fake::new();
    let root = fake.path("resctrl");
    let make = |name: &str| {
        for file in ["schemata", "tasks", "cpus"] {
            put(&root, &format!("{name}/{file}"), "");
        }
        root.join(name)
    };
    let group = make(&format!("memscope-{DEAD}-0"));
    fake.entry(
        DEAD,
        77,
        BOOT,
        0,
        Change::ResctrlGroup {
            path: group.clone(),
        },
    );
    // Its process ran before the last boot: resctrl forgot the group; nothing touched.
    let older = make(&format!("memscope-{DEAD}-1"));
    fake.entry(
        DEAD,
        77,
        "boot-0",
        1,
        Change::ResctrlGroup {
            path: older.clone(),
        },
    );
    let summary = sweep_with(
        &fake.journal(),
        &fake.system(),
        &fake.roots(),
        crate::platform::resctrl::Fs::Synthetic,
    );
    assert_eq!(summary.restored.len(), 1, "{summary:?}");
    assert!(
        summary.restored[0].starts_with(&format!("removed the resctrl group {}", group.display())),
        "{summary:?}"
    );
    assert!(
        summary.failed.is_empty() && summary.left.is_empty(),
        "{summary:?}"
    );
    assert!(!group.exists() && older.exists());
    assert_eq!(fake.entries(), 0);
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A journal in `dir` with an entry of a process that is gone (or `running`) for the
/// temporary file `name` in `out`.
fn journal_with(dir: &Path, out: &Path, name: &str, running: bool) -> (Journal, System) {
    let journal = Journal::at(&dir.join("journal"));
    journal.prepare().unwrap();
    let me = journal::this_process();
    let (pid, start_time) = if running {
        (me.pid, me.start_time)
    } else {
        // A start time the real process with this pid does not have: it is gone.
        (me.pid, me.start_time + 1)
    };
    let entry = Entry {
        format: FORMAT,
        pid,
        start_time,
        boot_id: me.boot_id.clone(),
        time: "2026-01-01T00:00:00.000Z".into(),
        change: Change::OutputTemp {
            dir: out.to_path_buf(),
            name: name.into(),
        },
    };
    fs::write(
        journal.dir().join(format!("{pid}-{start_time}-0.json")),
        serde_json::to_vec(&entry).unwrap(),
    )
    .unwrap();
    (journal, System::current())
}

fn restore(journal: &Journal, system: &System, dir: &Path) -> Summary {
    let roots = Roots {
        hugepages: dir.join("no-hugepages"),
        damon_admin: dir.join("no-damon"),
    };
    sweep(journal, system, &roots)
}

#[test]
fn a_killed_writes_temporary_file_is_removed_by_restore_once_its_writer_is_gone() {
    let work = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let out_dir = fs::canonicalize(out.path()).unwrap();
    let name = crate::render::output::temporary_name(c"r.csv");
    fs::write(out_dir.join(&name), "half a rep").unwrap();
    // Its writer runs: left to it.
    let (journal, system) = journal_with(work.path(), &out_dir, &name, true);
    let summary = restore(&journal, &system, work.path());
    assert_eq!(summary.running.len(), 1, "{summary:?}");
    assert!(out_dir.join(&name).exists());
    fs::remove_dir_all(journal.dir()).unwrap();
    // Its writer is gone: removed, said in one line, the entry settled.
    let (journal, system) = journal_with(work.path(), &out_dir, &name, false);
    let summary = restore(&journal, &system, work.path());
    assert_eq!(
        summary.restored,
        [format!(
            "removed the temporary output file {} (memscope pid {} was killed while writing it)",
            out_dir.join(&name).display(),
            std::process::id()
        )]
    );
    assert_eq!(names(&out_dir), Vec::<String>::new());
    assert!(journal.list().unwrap().records.is_empty());
}
