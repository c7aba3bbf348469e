//! advise's sequential design on the trial engine: the screening arms (pure), the
//! follow-ups an arm's reading calls for and whether an arm is decided (pure, tested
//! without running anything), the arms the next block runs, and `measure`, which runs
//! the blocks until nothing is open, the blocks asked for ran, or the time limit.

use std::time::{Duration, Instant};

use super::arms::{ArmKind, ArmSpec, Resource};
use super::results::{paired, reference_of};
use super::trial::{self, CoRunners, Setup};
use super::{AdvisePlan, PirateSite, RunRecord, Stop};
use crate::session::progress::Progress;
use crate::stats::paired::{Decision, Looks, PairedChange};
use crate::topology::ThpMode;
use crate::trials::{Blocks, Design, Ended, Next};

/// The bandit's rates, as shares of its flat-out rate.
const BANDIT_SHARES: [f64; 2] = [0.25, 0.5];

/// What the screening can run here.
pub(crate) struct ScreenSite<'a> {
    pub with_co: bool,
    pub pirate: PirateSite,
    /// The pirate's sets it holds, with their shares, smallest first.
    pub pirate_levels: &'a [(u64, f64)],
    pub cat_arms: &'a [ArmSpec],
    pub mba_arms: &'a [ArmSpec],
    pub thp: ThpMode,
    pub preload: bool,
    pub glibc: Option<(u32, u32)>,
    pub memory_nodes: usize,
    pub weighted_interleave: bool,
    /// The first run kept more than one CPU busy.
    pub parallel: bool,
}

/// The screening: the program alone and, per resource asked for, its strongest arm, with
/// the control a co-runner's arm is read against from the first block (a control that
/// joined later had too few pairs left to decide anything within 3 minutes); with the
/// notes on what cannot be measured here.
pub(crate) fn screening_arms(
    site: &ScreenSite,
    wants: &dyn Fn(Resource) -> bool,
) -> (Vec<ArmSpec>, Vec<String>) {
    let mut arms = vec![ArmSpec::new(ArmKind::Alone)];
    let mut notes = Vec::new();
    // A program that keeps several CPUs busy loses one to the co-runner: measured.
    if site.with_co && site.parallel {
        arms.push(ArmSpec::new(ArmKind::AllCpus));
    }
    if wants(Resource::Cache) {
        match site.pirate {
            PirateSite::Beside if site.with_co => {
                if let Some(&(b, s)) = site.pirate_levels.last() {
                    arms.extend([ArmSpec::new(ArmKind::Compute), ArmSpec::pirate(b, s)]);
                }
            }
            // In turns half the share is enough (at each turn the program refills what
            // the pirate walked), and a larger set makes a cache-bound program's runs
            // many times longer.
            PirateSite::InTurns => {
                if let Some((b, s)) = in_turns_screen(site.pirate_levels) {
                    arms.extend([
                        ArmSpec::new(ArmKind::ComputeInTurns),
                        ArmSpec::pirate_in_turns(b, s),
                    ]);
                }
            }
            _ => {}
        }
        arms.extend(site.cat_arms.first().cloned());
    }
    if wants(Resource::Bandwidth) {
        if site.with_co {
            if !arms.iter().any(|a| a.kind == ArmKind::Compute) {
                arms.push(ArmSpec::new(ArmKind::Compute));
            }
            arms.push(ArmSpec::new(ArmKind::Bandit));
        }
        arms.extend(site.mba_arms.first().cloned());
    }
    let thp = site.thp != ThpMode::Never && wants(Resource::Tlb);
    if thp && site.preload {
        arms.push(ArmSpec::new(ArmKind::HugeAll));
    } else if site.thp == ThpMode::Never {
        notes.push(
            "transparent huge pages are off (never): the huge-page arms are not measured".into(),
        );
    }
    // glibc's THP malloc without huge pages from memscope's library: where one runs
    // without the other (its remedy, when huge pages everywhere buy something, follows).
    if thp && !site.preload && site.glibc.is_some_and(|v| v >= (2, 35)) {
        arms.push(ArmSpec::new(ArmKind::MallocHugetlb));
    }
    if site.memory_nodes > 1 && wants(Resource::Placement) {
        arms.push(ArmSpec::new(ArmKind::Interleave));
        // In the ratio of the system's weights, where the kernel has them (Linux 6.9+):
        // what a machine with CXL or HBM beside its DRAM would be set up with.
        if site.weighted_interleave {
            arms.push(ArmSpec::new(ArmKind::WeightedInterleave));
        } else {
            notes.push(
                "this kernel has no weighted interleave (Linux 6.9+): only even \
                 interleaving is measured"
                    .into(),
            );
        }
    } else if wants(Resource::Placement) {
        notes.push(
            "one NUMA node with memory: placement (local vs interleaved) is not measured".into(),
        );
    }
    (arms, notes)
}

/// The set the pirate in turns screens with: the half share, else the smallest it holds.
pub(crate) fn in_turns_screen(levels: &[(u64, f64)]) -> Option<(u64, f64)> {
    levels.get(1).or(levels.first()).copied()
}

/// What the arms found may call for.
pub(crate) struct FollowUps<'a> {
    pub pirate_levels: &'a [(u64, f64)],
    pub bandit_max: Option<f64>,
    pub cat_arms: &'a [ArmSpec],
    pub mba_arms: &'a [ArmSpec],
    pub hot_ranges: bool,
    /// glibc's THP malloc can be tried (glibc 2.35 or later).
    pub malloc_hugetlb: bool,
    pub effect_pct: f64,
}

/// The arms to add after a look: a resource's curve where its screening arm is decided
/// beyond the effect against its reference; the hot regions' huge pages where huge pages
/// everywhere decided a gain.
pub(crate) fn follow_ups(
    arms: &[ArmSpec],
    changes: &[Option<PairedChange>],
    decided: &[bool],
    f: &FollowUps,
) -> Vec<ArmSpec> {
    let mut add: Vec<ArmSpec> = Vec::new();
    let push = |arm: ArmSpec, add: &mut Vec<ArmSpec>| {
        if !arms.iter().chain(add.iter()).any(|a| a.same(&arm)) {
            add.push(arm);
        }
    };
    for (i, arm) in arms.iter().enumerate() {
        let Some(c) = &changes[i] else { continue };
        let reference = reference_of(arms, i).map(|r| arms[r].kind);
        let beyond = decided[i] && c.decision(f.effect_pct) == Decision::Beyond;
        let (slower, faster) = (beyond && c.ratio > 1.0, beyond && c.ratio < 1.0);
        match arm.kind {
            ArmKind::Pirate if slower && reference == Some(ArmKind::Compute) => {
                for &(b, s) in f.pirate_levels.iter().rev() {
                    push(ArmSpec::pirate(b, s), &mut add);
                }
            }
            ArmKind::PirateInTurns if slower && reference == Some(ArmKind::ComputeInTurns) => {
                for &(b, s) in f.pirate_levels.iter().rev() {
                    push(ArmSpec::pirate_in_turns(b, s), &mut add);
                }
            }
            ArmKind::Bandit if slower && reference == Some(ArmKind::Compute) => {
                for share in BANDIT_SHARES {
                    if let Some(max) = f.bandit_max {
                        push(ArmSpec::bandit(max * share, share), &mut add);
                    }
                }
            }
            ArmKind::CatWays if slower => {
                for a in f.cat_arms {
                    push(a.clone(), &mut add);
                }
            }
            ArmKind::MbaThrottle if slower => {
                for a in f.mba_arms {
                    push(a.clone(), &mut add);
                }
            }
            // The remedies a user can apply, where huge pages everywhere buy something.
            ArmKind::HugeAll | ArmKind::MallocHugetlb if faster => {
                if f.hot_ranges {
                    push(ArmSpec::new(ArmKind::HugeTop), &mut add);
                }
                if f.malloc_hugetlb {
                    push(ArmSpec::new(ArmKind::MallocHugetlb), &mut add);
                }
            }
            _ => {}
        }
    }
    add
}

/// Whether an arm is decided: its paired interval at a planned look lies wholly within or
/// beyond ±effect — against its control where it has one (within ±effect against the
/// program alone is enough: its control can only take from the slowdown).
pub fn decides(
    arms: &[ArmSpec],
    changes: &[Option<PairedChange>],
    i: usize,
    looks: Looks,
    effect: f64,
) -> bool {
    let Some(change) = &changes[i] else {
        return false;
    };
    let decision = change.decision(effect);
    let controlled = arms[i].kind.reference() == ArmKind::Alone
        || reference_of(arms, i).is_some_and(|r| arms[r].kind == arms[i].kind.reference());
    looks.at(change.pairs)
        && match decision {
            Decision::Open => false,
            Decision::Within => true,
            Decision::Beyond => controlled,
        }
}

/// The arms the next block runs: the program alone and every arm still open with its
/// reference; none when nothing is open. The compute controls are run only as references.
pub(crate) fn open_arms(arms: &[ArmSpec], decided: &[bool]) -> Vec<usize> {
    let mut run = Vec::new();
    for (i, arm) in arms.iter().enumerate() {
        let control = matches!(
            arm.kind,
            ArmKind::Alone | ArmKind::Compute | ArmKind::ComputeInTurns
        );
        if control || decided[i] {
            continue;
        }
        for j in [Some(i), reference_of(arms, i)].into_iter().flatten() {
            if !run.contains(&j) {
                run.push(j);
            }
        }
    }
    if let (false, Some(alone)) = (
        run.is_empty(),
        arms.iter().position(|a| a.kind == ArmKind::Alone),
    ) {
        if !run.contains(&alone) {
            run.push(alone);
        }
    }
    run
}

/// What the measuring ran.
pub struct Measured {
    pub arms: Vec<ArmSpec>,
    /// Each arm's measured runs.
    pub runs: Vec<Vec<RunRecord>>,
    pub looks: Looks,
    pub blocks: usize,
    pub stop: Stop,
    /// A run that could not be started, said once.
    pub error: Option<String>,
}

/// The most blocks the measuring runs.
const MAX_BLOCKS: usize = 40;

/// After a block: each arm's paired change against its reference, the arms a planned look
/// decides, the follow-ups those decisions call for; the arms still open.
fn still_open(
    arms: &mut Vec<ArmSpec>,
    decided: &mut Vec<bool>,
    b: &Blocks<RunRecord>,
    (normal, cpu_bound, looks): (i32, bool, Looks),
    follow: &FollowUps,
) -> Vec<usize> {
    let runs = runs_of(b, arms.len());
    let changes: Vec<Option<PairedChange>> = (0..arms.len())
        .map(|i| {
            let r = reference_of(arms, i)?;
            let timing = arms[i].kind.timing(cpu_bound);
            paired(&runs[i], &runs[r], normal, timing, looks)
        })
        .collect();
    decided.resize(arms.len(), false);
    for (i, d) in decided.iter_mut().enumerate() {
        *d |= decides(arms, &changes, i, looks, follow.effect_pct);
    }
    let added = follow_ups(arms, &changes, decided, follow);
    arms.extend(added);
    decided.resize(arms.len(), false);
    open_arms(arms, decided)
}

/// The sequential design: a warm-up of the huge-page arms (not counted), then blocks of
/// the arms still open until none is, the blocks asked for (`--runs`) ran, or the time
/// limit; after each block the arms at a planned look are decided or left open, and the
/// follow-ups they call for join.
pub(crate) fn measure(
    setup: &Setup,
    co_runners: CoRunners,
    progress: &Progress,
    plan: &AdvisePlan,
    (screening, follow): (Vec<ArmSpec>, &FollowUps),
    (one_run, normal, cpu_bound): (f64, i32, bool),
    deadline: Instant,
) -> Measured {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .as_secs_f64();
    // The looks are planned before any run, from the blocks of the screening that fit
    // (arms decided early leave room for more blocks; those are read at the last look).
    let fit = ((left / (screening.len() as f64 * one_run)) as usize).min(MAX_BLOCKS);
    let looks = Looks::planned(fit, plan.runs.is_some());
    let design = Design {
        fixed: plan.runs,
        max_blocks: MAX_BLOCKS,
        until: deadline,
        min_blocks: 2,
    };
    let arms = std::cell::RefCell::new(screening);
    let mut decided: Vec<bool> = Vec::new();
    let mut blocks: Blocks<RunRecord> = Blocks::new(arms.borrow().len());
    progress.start(
        &format!(
            "advise: {} arms, then those still open",
            arms.borrow().len()
        ),
        (fit.min(12) * arms.borrow().len()) as u64,
    );
    let mut run = |arm: usize, block: usize, order: usize| {
        let spec = arms.borrow()[arm].clone();
        progress.message(&match block {
            0 => format!("warm-up, {}", spec.label),
            _ => format!("block {block}, {}", spec.label),
        });
        trial::run(setup, &spec, co_runners, block, order).map(|t| {
            let ended = Ended::of(t.record.termination, t.record.stopped);
            (t.record, ended)
        })
    };
    // A first run in a huge-page arm pays what later ones do not (huge pages compacted).
    let warm: Vec<usize> = (0..arms.borrow().len())
        .filter(|&i| arms.borrow()[i].kind.asks_huge_pages())
        .collect();
    let stop = match blocks.block(0, &warm, progress, &mut run) {
        Ok(Some(stop)) => Ok(stop),
        Ok(None) => {
            let guess = |arm: usize| {
                let turns = arms.borrow().get(arm).is_some_and(|a| a.kind.in_turns());
                Duration::from_secs_f64(one_run * if turns { 3.0 } else { 1.0 })
            };
            let rule = |b: &Blocks<RunRecord>| {
                let mut arms = arms.borrow_mut();
                Ok(Next::Run(match plan.runs {
                    Some(_) => (0..arms.len()).collect(),
                    None => still_open(
                        &mut arms,
                        &mut decided,
                        b,
                        (normal, cpu_bound, looks),
                        follow,
                    ),
                }))
            };
            blocks.run(&design, progress, guess, rule, &mut run)
        }
        Err(e) => Err(e),
    };
    let (stop, error) = match stop {
        Ok(stop) => (stop, None),
        Err(e) => (
            Stop::Interrupted,
            Some(format!(
                "a run could not be started, so the measuring stopped: {e}"
            )),
        ),
    };
    let arms = arms.into_inner();
    Measured {
        runs: runs_of(&blocks, arms.len()),
        arms,
        looks,
        blocks: blocks.blocks,
        stop,
        error,
    }
}

/// Each arm's measured runs.
pub(crate) fn runs_of(blocks: &Blocks<RunRecord>, arms: usize) -> Vec<Vec<RunRecord>> {
    (0..arms)
        .map(|a| blocks.of_arm(a).map(|t| t.run.clone()).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(pirate: PirateSite) -> ScreenSite<'static> {
        ScreenSite {
            with_co: true,
            pirate,
            pirate_levels: &[(4 << 20, 0.25), (8 << 20, 0.5)],
            cat_arms: &[],
            mba_arms: &[],
            thp: ThpMode::Madvise,
            preload: true,
            glibc: Some((2, 36)),
            memory_nodes: 1,
            weighted_interleave: false,
            parallel: false,
        }
    }

    #[test]
    fn the_screening_holds_each_co_runner_arm_with_its_control() {
        let kinds = |pirate| {
            let (arms, _) = screening_arms(&site(pirate), &|_| true);
            arms.iter().map(|a| a.kind).collect::<Vec<_>>()
        };
        let beside = kinds(PirateSite::Beside);
        assert_eq!(
            beside,
            [
                ArmKind::Alone,
                ArmKind::Compute,
                ArmKind::Pirate,
                ArmKind::Bandit,
                ArmKind::HugeAll
            ]
        );
        let in_turns = kinds(PirateSite::InTurns);
        assert_eq!(
            in_turns,
            [
                ArmKind::Alone,
                ArmKind::ComputeInTurns,
                ArmKind::PirateInTurns,
                ArmKind::Compute,
                ArmKind::Bandit,
                ArmKind::HugeAll
            ]
        );
        // Every co-runner arm is read against its control from the first block.
        let (arms, _) = screening_arms(&site(PirateSite::InTurns), &|_| true);
        for (i, arm) in arms.iter().enumerate() {
            if let Some(r) = reference_of(&arms, i) {
                assert_eq!(arms[r].kind, arm.kind.reference(), "{arm:?}");
            }
        }
    }
}
