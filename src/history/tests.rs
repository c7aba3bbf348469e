//! Tests of `history`: the database, its layouts and the listing, split out of mod.rs.

use super::*;

pub fn report(host: &str, when: u64, scale: f64) -> Report {
    let mut report = Report::new(crate::topology::Machine::default(), Default::default());
    report.run.host = host.to_string();
    report.run.started_unix = when;
    report.run.started = format!("{when}");
    report.settings.command = "run".into();
    let mut latency = crate::experiments::latency::samples::latency();
    for level in &mut latency.levels {
        level.latency_ns *= scale;
    }
    report.experiments.latency = Some(latency);
    report
}

#[test]
fn runs_are_saved_whole_with_their_figures_and_listed_by_host() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/history.sqlite3");
    assert!(History::open(&path, Access::Read).is_err());
    let mut h = History::open(&path, Access::Write).unwrap();
    let a = h.add(&report("b-host", 10, 1.0), "saved").unwrap().id();
    h.add(&report("a-host", 20, 1.0), "x.json").unwrap();
    h.add(&report("b-host", 30, 1.0), "saved").unwrap();
    let runs = h.runs(None, None).unwrap();
    let order: Vec<(&str, i64)> = runs
        .iter()
        .map(|r| (r.host.as_str(), r.started_unix))
        .collect();
    assert_eq!(order, [("a-host", 20), ("b-host", 10), ("b-host", 30)]);
    assert_eq!(h.runs(Some("b-host"), Some(1)).unwrap().len(), 1);
    let figures = h.figures(a).unwrap();
    assert_eq!(figures.len() as i64, runs[1].figures);
    let expected = report("b-host", 10, 1.0).figures();
    assert_eq!(
        figures.len(),
        expected.iter().filter(|f| f.value.is_finite()).count()
    );
    assert_eq!(h.report(a).unwrap().unwrap().run.host, "b-host");
    drop(h);
    // Reopened, the layout is there and the runs too.
    assert_eq!(
        History::open(&path, Access::Read)
            .unwrap()
            .runs(None, None)
            .unwrap()
            .len(),
        3
    );
}

fn refusal(result: anyhow::Result<History>) -> String {
    let error = result.err().expect("refused");
    assert!(error.downcast_ref::<UsageError>().is_some(), "{error:#}");
    format!("{error:#}")
}

#[test]
fn listing_a_missing_database_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/history.sqlite3");
    let error = refusal(History::open(&path, Access::Read));
    assert!(error.contains("does not exist"), "{error}");
    let path = dir.path().join("history.sqlite3");
    let error = refusal(History::open(&path, Access::Read));
    assert!(
        error.contains(path.to_str().unwrap()) && error.contains("save a run first"),
        "{error}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn an_empty_file_behind_a_link_stays_empty_when_listed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("empty");
    std::fs::write(&file, "").unwrap();
    let link = dir.path().join("link.sqlite3");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let error = refusal(History::open(&link, Access::Read));
    assert!(error.contains("it is empty"), "{error}");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 0);
    // Not even a journal file beside it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    if crate::platform::journal::effective_uid() != 0 {
        return eprintln!("the rest of this test needs root to make another user's link");
    }
    // Another user's link is refused for reading and writing alike.
    let c = std::ffi::CString::new(link.to_str().unwrap()).unwrap();
    // SAFETY: lchown reads the NUL-terminated path.
    assert_eq!(unsafe { libc::lchown(c.as_ptr(), 65534, 65534) }, 0);
    for access in [Access::Read, Access::Write] {
        let error = refusal(History::open(&link, access));
        assert!(error.contains("owned by uid 65534"), "{error}");
    }
    assert!(check_for_writing(&link).is_err());
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 0);
}

#[test]
fn files_that_are_not_memscope_histories_are_refused_and_left_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.sqlite3");
    let bytes = "not a database at all, long enough to be read as one. ".repeat(4);
    std::fs::write(&text, &bytes).unwrap();
    for access in [Access::Read, Access::Write] {
        let error = refusal(History::open(&text, access));
        assert!(
            error.contains(text.to_str().unwrap()) && error.contains("not an SQLite database"),
            "{error}"
        );
    }
    assert!(check_for_writing(&text).is_err());
    assert_eq!(std::fs::read(&text).unwrap(), bytes.as_bytes());
    // Someone else's SQLite database gets no memscope tables.
    let other = dir.path().join("other.sqlite3");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE notes (text TEXT)")
        .unwrap();
    let error = refusal(History::open(&other, Access::Write));
    assert!(error.contains("not a memscope history"), "{error}");
    let tables: i64 = Connection::open(&other)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tables, 1);
    // A dangling link is not created through.
    let link = dir.path().join("link.sqlite3");
    std::os::unix::fs::symlink(dir.path().join("absent"), &link).unwrap();
    let error = refusal(History::open(&link, Access::Write));
    assert!(error.contains("does not exist"), "{error}");
    assert!(!dir.path().join("absent").exists());
}

#[test]
fn a_report_already_held_is_not_added_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = History::open(&dir.path().join("h.sqlite3"), Access::Write).unwrap();
    let r = report("box", 10, 1.0);
    let first = h.add(&r, "a.json").unwrap();
    assert!(matches!(first, Added::New(_)));
    // Read back from its JSON, as `--add` reads a file.
    let again: Report = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(h.add(&again, "b.json").unwrap(), Added::Held(first.id()));
    assert_eq!(h.runs(None, None).unwrap().len(), 1);
    assert!(matches!(
        h.add(&report("box", 11, 1.0), "c.json").unwrap(),
        Added::New(_)
    ));
}

#[test]
fn a_layout_1_database_is_read_as_it_is_and_migrated_when_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite3");
    let mut r = report("box", 10, 1.0);
    r.settings.command = "stat".into();
    r.experiments = Default::default();
    r.stat = Some(identity::tests::stat_result(&["sleep", "0.2"], 0.2, 0.0));
    {
        // The layout as memscope 1 made it.
        let c = Connection::open(&path).unwrap();
        c.execute_batch(
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, host TEXT NOT NULL,
                 cpu_model TEXT NOT NULL, kernel TEXT NOT NULL, command TEXT NOT NULL,
                 started TEXT NOT NULL, started_unix INTEGER NOT NULL,
                 tool_version TEXT NOT NULL, schema_version INTEGER NOT NULL,
                 source TEXT NOT NULL, report TEXT NOT NULL);
             CREATE TABLE figures (run_id INTEGER NOT NULL REFERENCES runs (id),
                 key TEXT NOT NULL, section TEXT NOT NULL, label TEXT NOT NULL,
                 unit TEXT NOT NULL, better TEXT NOT NULL, value REAL NOT NULL,
                 spread_pct REAL, step_pct REAL, drift_pct REAL,
                 PRIMARY KEY (run_id, key));
             PRAGMA user_version = 1;",
        )
        .unwrap();
        c.execute(
            "INSERT INTO runs VALUES (1, 'box', '', '', 'stat', '10', 10, '0', 2, 'saved', ?1)",
            params![serde_json::to_string(&r).unwrap()],
        )
        .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let runs = History::open(&path, Access::Read)
        .unwrap()
        .runs(None, None)
        .unwrap();
    assert_eq!(runs[0].identity, "stat -- sleep 0.2");
    assert_eq!(std::fs::read(&path).unwrap(), before, "read only");
    let mut h = History::open(&path, Access::Write).unwrap();
    let version: i64 = h
        .connection
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, LAYOUT_VERSION);
    assert_eq!(h.runs(None, None).unwrap()[0].identity, "stat -- sleep 0.2");
    // The migrated run's content key finds the same report.
    assert_eq!(h.add(&r, "again.json").unwrap(), Added::Held(1));
}

#[test]
fn a_database_is_checked_for_saving_without_being_written() {
    let dir = tempfile::tempdir().unwrap();
    // Missing, in a directory still to be made: fine, and nothing is made.
    check_for_writing(&dir.path().join("a/b/h.sqlite3")).unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let path = dir.path().join("h.sqlite3");
    std::fs::write(&path, "").unwrap();
    check_for_writing(&path).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    History::open(&path, Access::Write)
        .unwrap()
        .add(&report("box", 1, 1.0), "saved")
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    check_for_writing(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let error = check_for_writing(dir.path()).unwrap_err().to_string();
    assert!(error.contains("expected a file path"), "{error}");
}

/// A plan that adds the directory `dir` (or only checks, with `check`).
fn directory_plan(db: &Path, dir: Option<&Path>, check: bool) -> params::HistoryPlan {
    params::HistoryPlan {
        db: db.to_path_buf(),
        host: None,
        last: None,
        check,
        add: dir
            .map(|d| params::AddSource::Directory {
                dir: d.display().to_string(),
                files: crate::report::read::json_files(d).unwrap(),
            })
            .into_iter()
            .collect(),
    }
}

#[test]
fn a_directory_of_many_reports_is_added_in_one_go_and_every_host_checked() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    std::fs::create_dir(&fleet).unwrap();
    // 25 hosts with two runs each; the last host's latest run is 50% slower.
    for i in 0..50u64 {
        let host = format!("node{:04}", i % 25);
        let scale = if i == 49 {
            1.5
        } else {
            1.0 + (i % 5) as f64 * 0.002
        };
        let text = serde_json::to_string(&report(&host, 100 + i, scale)).unwrap();
        std::fs::write(fleet.join(format!("r{i:03}.json")), text).unwrap();
    }
    std::fs::write(fleet.join("manifest.json"), r#"{"not": "a report"}"#).unwrap();
    let db = dir.path().join("h.sqlite3");

    let added = run(&directory_plan(&db, Some(&fleet), false)).unwrap();
    assert!(
        added.text.contains("Added 50 report(s) from"),
        "{}",
        added.text
    );
    assert!(
        added.text.contains("Passed over 1 file(s)"),
        "{}",
        added.text
    );
    assert!(added.text.contains("manifest.json"), "{}", added.text);
    // Fifty runs are counted, not listed.
    assert!(
        added.text.contains("50 run(s) of 25 host(s)") && !added.text.contains("node0003"),
        "{}",
        added.text
    );
    let h = History::open(&db, Access::Read).unwrap();
    let runs = h.runs(None, None).unwrap();
    assert_eq!(runs.len(), 50);
    assert_eq!(h.runs(None, Some(1)).unwrap().len(), 25);
    assert!(runs
        .iter()
        .all(|r| r.source.starts_with(fleet.to_str().unwrap())));
    drop(h);

    // Again: the database holds every one, and says so in one line.
    let again = run(&directory_plan(&db, Some(&fleet), false)).unwrap();
    assert!(
        again.text.contains("Added 0 report(s)")
            && again.text.contains("Skipped 50 report(s)")
            && again.text.contains("runs 1–50"),
        "{}",
        again.text
    );

    let checked = run(&directory_plan(&db, None, true)).unwrap();
    assert!(checked.regression);
    let checks: Vec<check::HostCheck> = serde_json::from_slice(&checked.json).unwrap();
    assert_eq!(checks.len(), 25);
    assert!(checks.iter().all(|c| c.earlier_runs.len() == 1));
    let regressed: Vec<&str> = (checks.iter())
        .filter(|c| c.regressions().count() > 0)
        .map(|c| c.host.as_str())
        .collect();
    assert_eq!(regressed, ["node0024"]);
    // The terminal shows the host that moved, and counts the 24 quiet ones in one line.
    assert!(
        checked.text.contains("node0024: run 50"),
        "{}",
        checked.text
    );
    assert!(!checked.text.contains("node0003: run"), "{}", checked.text);
    assert!(
        checked
            .text
            .contains("24 host(s) with every figure within the noise"),
        "{}",
        checked.text
    );
}

#[test]
fn a_batch_not_committed_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.sqlite3");
    let mut h = History::open(&db, Access::Write).unwrap();
    {
        let batch = h.batch().unwrap();
        let prepared = Prepared::of(&report("a", 1, 1.0)).unwrap();
        assert!(matches!(
            batch.add(&prepared, "x.json").unwrap(),
            Added::New(_)
        ));
        // The same report again within the batch is held already.
        assert!(matches!(
            batch.add(&prepared, "y.json").unwrap(),
            Added::Held(_)
        ));
    }
    assert!(h.runs(None, None).unwrap().is_empty());
}
