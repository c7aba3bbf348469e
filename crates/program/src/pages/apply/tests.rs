//! `pages apply`'s pure parts: the accepted exit status, the exit status passed through,
//! the time-weighted huge pages, the flat-profile note.
use super::*;

fn run(block: usize, elapsed_s: f64, ok: bool) -> ArmRun {
    ArmRun {
        order: 0,
        block,
        elapsed_s,
        user_s: 0.0,
        system_s: 0.0,
        termination: if ok {
            Termination::Exited(0)
        } else {
            Termination::Exited(3)
        },
        huge_kb: 0.0,
        huge_in_regions_kb: 0.0,
        huge_in_regions_mean_kb: 0.0,
        dtlb: vec![],
    }
}

#[test]
fn arms_are_summarized_with_speedup_and_a_test() {
    let mut runs = Vec::new();
    // The machine drifts from block to block; the ratios within a block do not.
    for block in 1..=7 {
        let drift = 1.0 + block as f64 * 0.1;
        runs.push((Arm::Baseline, run(block, 2.0 * drift, true)));
        runs.push((Arm::Top, run(block, 1.6 * drift, true)));
        let all_ok = block != 7;
        runs.push((
            Arm::All,
            run(block, if all_ok { 1.5 * drift } else { 9.0 }, all_ok),
        ));
    }
    let arms = summarize(&runs, 8, OkStatus::Code(0));
    assert_eq!(arms.len(), 3);
    assert_eq!(arms[0].speedup, Some(1.0));
    assert!(arms[0].p_value.is_none());
    let top = &arms[1];
    assert!((top.speedup.unwrap() - 1.25).abs() < 1e-9);
    assert!(top.significant, "{:?}", top.p_value);
    assert_eq!(arms[2].failed_runs, 1);
    let all = &arms[2];
    assert_eq!(
        all.time_s.as_ref().unwrap().count,
        6,
        "a failed run is never averaged in"
    );
    assert!((all.speedup.unwrap() - 2.0 / 1.5).abs() < 1e-9);
}

#[test]
fn a_status_the_same_in_every_run_is_the_programs_normal_one() {
    // XSBench exits 1 in every run: with 1 accepted, every run is timed.
    let mut runs = Vec::new();
    for block in 1..=6 {
        for arm in Arm::ALL {
            let mut r = run(block, 2.0, false);
            r.termination = Termination::Exited(1);
            runs.push((arm, r));
        }
    }
    let ok = OkStatus::of_first_run(Termination::Exited(1)).unwrap();
    let arms = summarize(&runs, 8, ok);
    assert!(arms
        .iter()
        .all(|a| a.failed_runs == 0 && a.time_s.is_some()));
    let note = ok_status_note(true, ok, &runs).unwrap();
    assert_eq!(
        note,
        ApplyNote::NormalStatus {
            code: 1,
            every: true
        }
    );
    assert!(note.text().contains("exits 1 in every run") && note.text().contains("--ok-status 1"));
    // Given by the user, or 0: nothing to say.
    assert!(ok_status_note(false, ok, &runs).is_none());
    assert!(ok_status_note(true, OkStatus::Code(0), &runs).is_none());
    // Judged by 0, the same runs all fail.
    assert!(summarize(&runs, 8, OkStatus::Code(0))
        .iter()
        .all(|a| a.time_s.is_none()));
    // A run with another status fails; a signal is never a normal end.
    assert!(!ok.accepts(Termination::Exited(0)));
    assert!(OkStatus::Any.accepts(Termination::Exited(7)));
    assert!(!OkStatus::Any.accepts(Termination::Signaled(11)));
    assert!(OkStatus::of_first_run(Termination::Signaled(11)).is_none());
    runs[4].1.termination = Termination::Exited(0);
    assert!(ok_status_note(true, ok, &runs)
        .unwrap()
        .text()
        .contains("another status are failed runs"));
    assert_eq!(summarize(&runs, 8, ok)[1].failed_runs, 1);
}

#[test]
fn the_exit_status_is_the_failing_runs_else_the_programs_own() {
    let exited = |order, code| ArmRun {
        order,
        termination: Termination::Exited(code),
        ..run(1, 1.0, true)
    };
    let status = |ok, runs: &[ArmRun]| exit_status_of(runs.iter().collect(), ok);
    let ok1 = OkStatus::Code(1);
    assert_eq!(status(ok1, &[exited(1, 1), exited(0, 1)]), 1);
    assert_eq!(status(ok1, &[exited(1, 4), exited(0, 1), exited(2, 5)]), 4);
    assert_eq!(status(OkStatus::Code(0), &[exited(0, 0)]), 0);
    assert_eq!(status(OkStatus::Code(0), &[]), 0);
    assert_eq!(status(OkStatus::Any, &[exited(1, 5), exited(0, 2)]), 2);
}

#[test]
fn huge_pages_obtained_are_averaged_over_the_run() {
    // None for 0.05–0.55 s, 2 MiB from 0.55 s to the end at 1.05 s: half the run.
    let looks = [(0.05, 0.0), (0.3, 0.0), (0.55, 2048.0), (0.8, 2048.0)];
    assert!((time_weighted_mean(&looks, 1.05) - 1024.0).abs() < 1e-9);
    assert_eq!(time_weighted_mean(&[], 1.0), 0.0);
    // One look at the very end: its value.
    assert_eq!(time_weighted_mean(&[(1.0, 512.0)], 1.0), 512.0);
}

#[test]
fn a_flat_profile_is_said() {
    let note = flat_profile_note(8, 9.0, "accesses").unwrap().text();
    assert!(
        note.contains("top 8 region(s) hold only 9.0% of the accesses"),
        "{note}"
    );
    assert!(note.contains("flat"));
    assert!(flat_profile_note(8, 40.0, "accesses").is_none());
}

#[test]
fn notes_carry_their_kind_and_old_sentences_still_read() {
    let notes = vec![
        ApplyNote::NormalStatus {
            code: 1,
            every: true,
        },
        ApplyNote::Said("an old report's sentence".into()),
    ];
    let json = serde_json::to_string(&notes).unwrap();
    assert_eq!(
        json,
        r#"[{"kind":"normal-status","code":1,"every":true},"an old report's sentence"]"#
    );
    let read: Vec<ApplyNote> = serde_json::from_str(&json).unwrap();
    assert_eq!(read, notes);
}
