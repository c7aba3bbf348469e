//! The co-runner's checks read for one arm: the medians of what it did over the arm's
//! runs, the share of its set the pirate kept (from its speed between alone and at DRAM
//! latency) and so the cache it left the program. The pirate in turns sweeps its whole set
//! in every burst (its ns per line is what a sweep took), so the program starts each of its
//! turns with the rest of the share.

use super::arms::{ArmKind, ArmSpec};
use super::facts::MachineFacts;
use super::{CoRunnerCalibration, CoRunnerCheck, RunRecord};
use crate::stats::summary::Summary;

/// What the co-runner did over an arm's runs and what that left the program.
pub(crate) fn co_runner_check(
    arm: &ArmSpec,
    runs: &[&RunRecord],
    facts: &MachineFacts,
    calibration: Option<&CoRunnerCalibration>,
) -> Option<CoRunnerCheck> {
    let samples: Vec<(f64, f64)> = runs.iter().filter_map(|r| r.co_runner).collect();
    if samples.is_empty() || !arm.kind.uses_co_runner() {
        return None;
    }
    let median = |f: fn(&(f64, f64)) -> f64| {
        Summary::of(&samples.iter().map(f).collect::<Vec<_>>()).map_or(f64::NAN, |s| s.median)
    };
    let (ns, rate) = (median(|s| s.0), median(|s| s.1));
    let mut check = CoRunnerCheck {
        ns_per_step: ns,
        bytes_per_s: rate,
        held_share: None,
        cache_left_bytes: None,
    };
    match arm.kind {
        ArmKind::PirateInTurns => {
            // Each burst sweeps the whole set, whatever the program took back meanwhile.
            if let Some(share) = facts.llc_share_bytes() {
                check.cache_left_bytes = Some((share as f64 - arm.level.unwrap_or(0.0)).max(0.0));
            }
        }
        ArmKind::Pirate => {
            let size = arm.level.unwrap_or(0.0);
            let alone = calibration.and_then(|c| {
                c.pirate_alone_ns
                    .iter()
                    .find(|(bytes, _)| *bytes as f64 == size)
                    .map(|p| p.1)
            });
            let dram = calibration.map(|c| c.dram_ns).or(facts.dram_ns);
            if let (Some(alone), Some(dram)) = (alone, dram) {
                let held = held_share(ns, alone, dram);
                check.held_share = held;
                if let (Some(h), Some(share)) = (held, facts.llc_share_bytes()) {
                    check.cache_left_bytes = Some((share as f64 - h * size).max(0.0));
                }
            }
        }
        _ => {}
    }
    Some(check)
}

/// The share of its set a pirate kept cached, from its speed between alone (all of it)
/// and at DRAM latency (none): linear in the miss share, clamped to 0..1.
pub(crate) fn held_share(ns: f64, alone_ns: f64, dram_ns: f64) -> Option<f64> {
    if !(ns.is_finite() && alone_ns.is_finite() && dram_ns.is_finite()) || dram_ns <= alone_ns {
        return None;
    }
    Some(((dram_ns - ns) / (dram_ns - alone_ns)).clamp(0.0, 1.0))
}
