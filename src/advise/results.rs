//! Each arm's runs read against its reference arm's: by wall time, or by CPU time for
//! the arms whose co-runner takes turns with the program on its CPU (both sides by the
//! arm's timing); when a stage's arms are resolved; and the pirate's sets it holds alone.

use super::arms::{ArmKind, ArmSpec, Timing};
use super::checks::co_runner_check;
use super::facts::MachineFacts;
use super::{ArmResult, CoRunnerCalibration, RunRecord};
use crate::stats::change::{compare, ratio_interval, Better, RatioInterval};
use crate::stats::summary::Summary;
use serde::{Deserialize, Serialize};

/// A significant change is resolved at this p (stricter than the 0.05 of the verdict,
/// so that a stage does not stop on a lucky early p).
const RESOLVED_P: f64 = 0.01;
/// The pirate's sets, as shares of the program's share of the last-level cache (its size
/// over the CPUs sharing it). The largest one the pirate holds alone (its calibration)
/// screens: a pirate walking more than it can hold loses its set to the program and to
/// itself, and takes less, not more.
pub const PIRATE_SHARES: [f64; 4] = [0.25, 0.5, 0.75, 1.0];

/// Every arm other than the baseline and the controls is resolved: significant at
/// `RESOLVED_P`, or its ratio known to within ±effect/2 of 1 (no sensitivity that large).
pub fn resolved(arms: &[ArmSpec], runs: &[Vec<RunRecord>], normal: i32, effect_pct: f64) -> bool {
    arms.iter().enumerate().all(|(i, arm)| {
        if arm.kind == ArmKind::Alone {
            return true;
        }
        let reference = arms
            .iter()
            .position(|a| a.kind == arm.kind.reference() && a.level.is_none());
        let Some(r) = reference else {
            return true;
        };
        let own = times(&runs[i], normal, arm.kind.timing());
        let base = times(&runs[r], normal, arm.kind.timing());
        let stat = compare(&own, &base, Better::Lower, false);
        if stat.p.is_some_and(|p| p < RESOLVED_P) {
            return true;
        }
        ratio_interval(&own, &base, 0.95).is_some_and(|ri| ri.high - ri.low < effect_pct / 100.0)
    })
}

/// The times of the runs that ended normally: wall, or CPU (user + system).
pub fn times(runs: &[RunRecord], normal: i32, timing: Timing) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.termination.shell_status() == normal)
        .map(|r| match timing {
            Timing::Wall => r.elapsed_s,
            Timing::Cpu => r.user_s + r.system_s,
        })
        .collect()
}

/// Each arm of a stage against its reference, both timed by the arm's timing.
pub fn results(
    stage: usize,
    arms: &[ArmSpec],
    runs: &[Vec<RunRecord>],
    normal: i32,
    facts: &MachineFacts,
    calibration: Option<&CoRunnerCalibration>,
) -> Vec<ArmResult> {
    arms.iter()
        .enumerate()
        .map(|(i, arm)| {
            let reference_kind = arm.kind.reference();
            let reference = arms
                .iter()
                .position(|a| a.kind == reference_kind && a.level.is_none())
                .unwrap_or(0);
            let ok: Vec<&RunRecord> = runs[i]
                .iter()
                .filter(|r| r.termination.shell_status() == normal)
                .collect();
            let timing = arm.kind.timing();
            let own = times(&runs[i], normal, timing);
            let base = times(&runs[reference], normal, timing);
            let is_reference = i == reference;
            let summary = |f: &dyn Fn(&RunRecord) -> f64| {
                Summary::of(&ok.iter().map(|r| f(r)).collect::<Vec<_>>())
            };
            ArmResult {
                kind: arm.kind,
                label: arm.label.clone(),
                resource: arm.kind.resource(),
                stage,
                level: arm.level,
                timing,
                reference: if is_reference {
                    arm.kind
                } else {
                    reference_kind
                },
                time: compare(&own, &base, Better::Lower, is_reference),
                ratio: (!is_reference)
                    .then(|| ratio_interval(&own, &base, 0.95))
                    .flatten(),
                user_s: summary(&|r| r.user_s),
                system_s: summary(&|r| r.system_s),
                max_rss_kib: summary(&|r| r.max_rss_kib as f64),
                huge_kib: summary(&|r| r.huge_kib).map(|s| s.median),
                co_runner: co_runner_check(arm, &ok, facts, calibration),
                system_groups: (arm.kind.asks_huge_pages() && !is_reference)
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
pub fn held_levels(sizes: &[u64], calibration: Option<&CoRunnerCalibration>) -> Vec<(u64, f64)> {
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
pub struct SystemTimeModes {
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
pub fn system_time_groups(
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
pub fn system_time_modes(runs: &[RunRecord], min_gap_s: f64) -> Option<SystemTimeModes> {
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
