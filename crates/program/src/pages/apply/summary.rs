//! What `pages apply`'s runs come to: each arm over its runs (median time, the paired
//! speed-up against the 4 KiB runs of the same block and its signed-rank test, CPU times,
//! huge-page memory, dTLB counts), the time-weighted huge-page memory of a run, and the
//! notes the figures call for (the accepted exit status, a flat profile, arms that pay in
//! the kernel).

use super::*;

/// The share of a signal totalling `total` that `regions` hold, percent.
pub(super) fn share_of(regions: &[Region], total: f64) -> f64 {
    if total > 0.0 {
        100.0 * regions.iter().map(|r| r.value).sum::<f64>() / total
    } else {
        0.0
    }
}

/// Below this share of the signal, the chosen regions are too little of the program's
/// memory traffic for huge pages under them alone to be the remedy.
const FLAT_PCT: f64 = 25.0;

/// Says when the chosen regions hold little of the signal: the profile is flat.
pub(super) fn flat_profile_note(chosen: usize, share_pct: f64, signal: &str) -> Option<ApplyNote> {
    (share_pct < FLAT_PCT).then(|| ApplyNote::FlatProfile {
        chosen,
        share_pct,
        signal: signal.to_string(),
    })
}

/// Says when the accepted exit status is not 0 and was taken from the first 4 KiB run
/// (`derived`): the program's normal status, or the one other runs are judged against.
pub(super) fn ok_status_note(
    derived: bool,
    ok: OkStatus,
    runs: &[(Arm, ArmRun)],
) -> Option<ApplyNote> {
    let OkStatus::Code(code) = ok else {
        return None;
    };
    if !derived || code == 0 {
        return None;
    }
    let every = runs
        .iter()
        .all(|(_, r)| r.termination == Termination::Exited(code));
    Some(ApplyNote::NormalStatus { code, every })
}

/// The mean over time of a quantity looked at `(t, value)` from `looks` until `end`
/// (seconds): each look holds until the next (the last until the end), and the time
/// before the first look is left out.
pub(super) fn time_weighted_mean(looks: &[(f64, f64)], end: f64) -> f64 {
    let Some(&(first, _)) = looks.first() else {
        return 0.0;
    };
    let span = end - first;
    if span <= 0.0 || span.is_nan() {
        return looks.iter().map(|l| l.1).sum::<f64>() / looks.len() as f64;
    }
    let mut sum = 0.0;
    for (i, &(t, v)) in looks.iter().enumerate() {
        let next = looks.get(i + 1).map_or(end, |l| l.0).min(end);
        sum += v * (next - t).max(0.0);
    }
    sum / span
}

/// Notes on arms that spent clearly more time in the kernel than the 4 KiB runs.
pub(super) fn kernel_time_notes(arms: &[ArmResult]) -> Vec<ApplyNote> {
    let Some(base) = arms.iter().find(|a| a.arm == Arm::Baseline) else {
        return Vec::new();
    };
    arms.iter()
        .filter(|a| a.arm != Arm::Baseline)
        .filter(|a| a.system_s > base.system_s * 1.5 && a.system_s - base.system_s > 0.2)
        .map(|a| ApplyNote::KernelTime {
            arm: a.label.clone(),
            system_s: a.system_s,
            baseline_system_s: base.system_s,
        })
        .collect()
}

pub(super) fn summarize(runs: &[(Arm, ArmRun)], top: usize, ok_status: OkStatus) -> Vec<ArmResult> {
    let success = |r: &ArmRun| ok_status.accepts(r.termination);
    let times = |arm: Arm| -> Vec<f64> {
        runs.iter()
            .filter(|(a, r)| *a == arm && success(r))
            .map(|(_, r)| r.elapsed_s)
            .collect()
    };
    // Successful run time of `arm` in each block.
    let by_block = |arm: Arm| -> HashMap<usize, f64> {
        runs.iter()
            .filter(|(a, r)| *a == arm && success(r))
            .map(|(_, r)| (r.block, r.elapsed_s))
            .collect()
    };
    let baseline = by_block(Arm::Baseline);
    Arm::ALL
        .iter()
        .map(|&arm| {
            let own: Vec<&ArmRun> = runs
                .iter()
                .filter(|(a, _)| *a == arm)
                .map(|(_, r)| r)
                .collect();
            let time_s = Summary::of(&times(arm));
            let mine = by_block(arm);
            let ratios: Vec<f64> = baseline
                .iter()
                .filter_map(|(block, base)| mine.get(block).map(|t| base / t))
                .filter(|r| r.is_finite() && *r > 0.0)
                .collect();
            let speedup = Summary::of(&ratios).map(|s| s.median);
            let p_value = (arm != Arm::Baseline)
                .then(|| signed_rank(&ratios.iter().map(|r| r.ln()).collect::<Vec<_>>()))
                .flatten();
            let huge: Vec<f64> = own.iter().map(|r| r.huge_kb).collect();
            let ok = || own.iter().filter(|r| success(r));
            let median_of = |v: Vec<f64>| Summary::of(&v).map_or(0.0, |s| s.median);
            let dtlb = (0..DTLB_EVENTS.len())
                .map(|i| {
                    let v: Vec<f64> = own
                        .iter()
                        .filter_map(|r| r.dtlb.get(i).copied().flatten())
                        .collect();
                    Summary::of(&v).map(|s| s.median)
                })
                .collect();
            ArmResult {
                arm,
                label: arm.label(top),
                time_s,
                speedup,
                significant: p_value.is_some_and(|p| p < 0.05),
                p_value,
                user_s: median_of(ok().map(|r| r.user_s).collect()),
                system_s: median_of(ok().map(|r| r.system_s).collect()),
                huge_kb: Summary::of(&huge).map_or(0.0, |s| s.median),
                huge_in_regions_mean_kb: median_of(
                    own.iter().map(|r| r.huge_in_regions_mean_kb).collect(),
                ),
                failed_runs: own.iter().filter(|r| !success(r)).count(),
                dtlb,
                runs: own.into_iter().cloned().collect(),
            }
        })
        .collect()
}
