//! Each arm's runs read against its reference arm's, paired by block (the runs of one
//! block ran side by side, so the machine's drift between blocks cancels): by wall time,
//! or by CPU time for the arms whose co-runner takes turns with the program on its CPU
//! (both sides by the arm's timing); whether an arm is decided against ±effect; and the
//! pirate's sets it holds alone.

use super::arms::{ArmKind, ArmSpec, Timing};
use super::checks::co_runner_check;
use super::facts::MachineFacts;
use super::{ArmResult, CoRunnerCalibration, RunRecord};
use crate::stats::change::{ratio_interval, MeasureStat, RatioInterval, Verdict};
use crate::stats::interval::median_interval;
use crate::stats::paired::{Decision, Looks, PairedChange};
use crate::stats::summary::Summary;
use serde::{Deserialize, Serialize};

/// The pirate's sets, as shares of the program's share of the last-level cache (its size
/// over the CPUs sharing it). The largest one the pirate holds alone (its calibration)
/// screens: a pirate walking more than it can hold loses its set to the program and to
/// itself, and takes less, not more.
pub(crate) const PIRATE_SHARES: [f64; 4] = [0.25, 0.5, 0.75, 1.0];

/// The arm an arm is read against among `arms`: its kind's reference (the compute
/// neighbour or compute in turns, once that control runs), else the program alone.
pub(crate) fn reference_of(arms: &[ArmSpec], i: usize) -> Option<usize> {
    let find = |kind: ArmKind| {
        arms.iter()
            .position(|a| a.kind == kind && a.level.is_none())
    };
    let alone = find(ArmKind::Alone);
    if Some(i) == alone {
        return None;
    }
    find(arms[i].kind.reference()).filter(|&r| r != i).or(alone)
}

/// The times of the runs that ended normally: wall, or CPU (user + system).
pub fn times(runs: &[RunRecord], normal: i32, timing: Timing) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.termination.shell_status() == normal)
        .map(|r| time_of(r, timing))
        .collect()
}

fn time_of(r: &RunRecord, timing: Timing) -> f64 {
    match timing {
        Timing::Wall => r.elapsed_s,
        Timing::Cpu => r.user_s + r.system_s,
    }
}

/// `own` against `reference` over the blocks where both ended normally, by `timing`.
pub(crate) fn paired(
    own: &[RunRecord],
    reference: &[RunRecord],
    normal: i32,
    timing: Timing,
    looks: Looks,
) -> Option<PairedChange> {
    let ok = |r: &&RunRecord| r.termination.shell_status() == normal;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for r in own.iter().filter(ok) {
        if let Some(base) = reference.iter().filter(ok).find(|x| x.block == r.block) {
            a.push(time_of(r, timing));
            b.push(time_of(base, timing));
        }
    }
    PairedChange::of(&a, &b, looks)
}

/// Every arm but the program alone is decided against ±`effect_pct` (its paired interval
/// wholly within or beyond it), at one look.
#[cfg(test)]
pub fn resolved(arms: &[ArmSpec], runs: &[Vec<RunRecord>], normal: i32, effect_pct: f64) -> bool {
    (0..arms.len()).all(|i| match reference_of(arms, i) {
        None => true,
        Some(r) => paired(
            &runs[i],
            &runs[r],
            normal,
            arms[i].kind.timing(false),
            Looks { count: 1 },
        )
        .is_some_and(|c| c.decision(effect_pct) != Decision::Open),
    })
}

/// The time statistic of an arm: its own median and interval, and the paired change
/// against its reference (its p and significance).
fn time_stat(own: &[f64], change: Option<&PairedChange>, is_reference: bool) -> MeasureStat {
    let summary = Summary::of(own);
    let verdict = match (summary, change) {
        (None, _) => Verdict::NoData,
        _ if is_reference => Verdict::Baseline,
        (_, None) => Verdict::NoData,
        (_, Some(c)) if c.interval.is_none() => Verdict::TooFewRuns,
        (_, Some(c)) if c.significant() && c.ratio > 1.0 => Verdict::Worse,
        (_, Some(c)) if c.significant() && c.ratio < 1.0 => Verdict::Better,
        _ => Verdict::NoChange,
    };
    MeasureStat {
        summary,
        interval: median_interval(own, crate::stats::change::LEVEL),
        change_pct: change.map(PairedChange::change_pct),
        u: None,
        p: change.and_then(|c| c.p),
        verdict,
    }
}

/// Each arm against its reference (`reference_of`), both timed by the arm's timing, read
/// with the looks planned; the seconds more runs would take to decide an open arm.
pub fn results(
    arms: &[ArmSpec],
    runs: &[Vec<RunRecord>],
    (normal, cpu_bound): (i32, bool),
    facts: &MachineFacts,
    calibration: Option<&CoRunnerCalibration>,
    (looks, effect_pct): (Looks, f64),
) -> Vec<ArmResult> {
    arms.iter()
        .enumerate()
        .map(|(i, arm)| {
            let reference = reference_of(arms, i);
            let ok: Vec<&RunRecord> = runs[i]
                .iter()
                .filter(|r| r.termination.shell_status() == normal)
                .collect();
            let timing = arm.kind.timing(cpu_bound);
            let own = times(&runs[i], normal, timing);
            let base = reference.map_or_else(Vec::new, |r| times(&runs[r], normal, timing));
            let change = reference.and_then(|r| paired(&runs[i], &runs[r], normal, timing, looks));
            let median = |v: &[f64]| Summary::of(v).map_or(0.0, |s| s.median);
            let more_s = change.as_ref().and_then(|c| {
                let open = c.decision(effect_pct) == Decision::Open;
                let wanted = c.pairs_to_decide(effect_pct).filter(|_| open)?;
                Some((wanted - c.pairs) as f64 * (median(&own) + median(&base)))
            });
            let summary = |f: &dyn Fn(&RunRecord) -> f64| {
                Summary::of(&ok.iter().map(|r| f(r)).collect::<Vec<_>>())
            };
            ArmResult {
                kind: arm.kind,
                label: arm.label.clone(),
                resource: arm.kind.resource(),
                stage: 1,
                level: arm.level,
                timing,
                reference: reference.map_or(arm.kind, |r| arms[r].kind),
                time: time_stat(&own, change.as_ref(), reference.is_none()),
                ratio: change.and_then(|c| {
                    let (low, high) = c.interval?;
                    Some(RatioInterval {
                        ratio: c.ratio,
                        low,
                        high,
                    })
                }),
                paired: change,
                more_s,
                user_s: summary(&|r| r.user_s),
                system_s: summary(&|r| r.system_s),
                max_rss_kib: summary(&|r| r.max_rss_kib as f64),
                huge_kib: summary(&|r| r.huge_kib).map(|s| s.median),
                co_runner: co_runner_check(arm, &ok, facts, calibration),
                system_groups: (arm.kind.asks_huge_pages() && reference.is_some())
                    .then(|| system_time_groups(&runs[i], &base, normal))
                    .flatten(),
                failed_runs: runs[i].len() - ok.len(),
                runs: runs[i].clone(),
            }
        })
        .collect()
}

/// The pirate's sets it holds alone, with their shares, smallest first: a set it walks
/// within a quarter of the way from its smallest set's speed to DRAM's. Without a
/// calibration, all but the whole share.
pub(crate) fn held_levels(
    sizes: &[u64],
    calibration: Option<&CoRunnerCalibration>,
) -> Vec<(u64, f64)> {
    let levels = sizes.iter().copied().zip(PIRATE_SHARES);
    let Some(c) = calibration else {
        return levels.take(sizes.len().saturating_sub(1)).collect();
    };
    let ns = |size: u64| {
        c.pirate_alone_ns
            .iter()
            .find(|(bytes, _)| *bytes == size)
            .map_or(f64::NAN, |p| p.1)
    };
    let fastest = sizes.first().map_or(f64::NAN, |&s| ns(s));
    let limit = fastest + (c.dram_ns - fastest) / 4.0;
    levels.filter(|&(size, _)| ns(size) <= limit).collect()
}

/// An arm whose runs' system time falls in two clear groups: in some runs the kernel
/// (or the hypervisor behind it) had what the arm asks for ready, in others it paid for
/// it — as huge pages on a VM whose host backs guest memory at first touch.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SystemTimeModes {
    /// The runs of the cheap group, and the largest system time among them.
    pub cheap: Vec<RunRecord>,
    pub cheap_sys_s: f64,
    /// The runs that paid, and the smallest system time among them.
    pub costly: Vec<RunRecord>,
    pub costly_sys_s: f64,
}

/// A huge-page arm's two groups of runs by system time (`SystemTimeModes`), each read
/// against the reference's runs: what the remedy buys when the memory is ready, and what
/// it costs when it is not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemTimeGroups {
    pub cheap_runs: usize,
    /// The largest system time of the cheap group, seconds.
    pub cheap_max_sys_s: f64,
    /// The cheap group's time / the reference's (Hodges–Lehmann, 95% interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cheap_ratio: Option<RatioInterval>,
    pub costly_runs: usize,
    /// The smallest system time of the costly group, seconds.
    pub costly_min_sys_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub costly_ratio: Option<RatioInterval>,
}

/// Faulting a program's memory in costs some system time anyway: a group apart is at
/// least this much more, seconds.
const GROUP_GAP_S: f64 = 0.05;

/// The groups of an arm's runs that ended normally, each against `base` (the reference's
/// times, by wall: the huge-page arms are timed so); None in one group.
pub(crate) fn system_time_groups(
    runs: &[RunRecord],
    base: &[f64],
    normal: i32,
) -> Option<SystemTimeGroups> {
    let ok: Vec<RunRecord> = runs
        .iter()
        .filter(|r| r.termination.shell_status() == normal)
        .cloned()
        .collect();
    let modes = system_time_modes(&ok, GROUP_GAP_S)?;
    let wall = |runs: &[RunRecord]| runs.iter().map(|r| r.elapsed_s).collect::<Vec<_>>();
    Some(SystemTimeGroups {
        cheap_runs: modes.cheap.len(),
        cheap_max_sys_s: modes.cheap_sys_s,
        cheap_ratio: ratio_interval(&wall(&modes.cheap), base, 0.95),
        costly_runs: modes.costly.len(),
        costly_min_sys_s: modes.costly_sys_s,
        costly_ratio: ratio_interval(&wall(&modes.costly), base, 0.95),
    })
}

/// Splits runs at the largest gap between their sorted system times, when that gap is
/// at least `min_gap_s`, more than half the largest system time, and each side has at
/// least two runs; else `None` (one mode).
pub(crate) fn system_time_modes(runs: &[RunRecord], min_gap_s: f64) -> Option<SystemTimeModes> {
    let mut sorted: Vec<&RunRecord> = runs.iter().collect();
    sorted.sort_by(|a, b| a.system_s.total_cmp(&b.system_s));
    let top = sorted.last()?.system_s;
    let (at, gap) = sorted
        .windows(2)
        .enumerate()
        .map(|(i, w)| (i + 1, w[1].system_s - w[0].system_s))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if gap < min_gap_s || gap <= top / 2.0 || at < 2 || sorted.len() - at < 2 {
        return None;
    }
    Some(SystemTimeModes {
        cheap: sorted[..at].iter().map(|r| (*r).clone()).collect(),
        cheap_sys_s: sorted[at - 1].system_s,
        costly: sorted[at..].iter().map(|r| (*r).clone()).collect(),
        costly_sys_s: sorted[at].system_s,
    })
}
