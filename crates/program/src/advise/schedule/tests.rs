//! The schedule's pure parts on synthetic runs: the pirate's held share, when arms are
//! resolved, each arm against its reference, resctrl's arms, and the whole result's
//! verdict and section.

use super::*;
use crate::advise::facts::MachineFacts;
use crate::advise::{ArmResult, CoRunnerCalibration};
use crate::platform::child::Termination;
use crate::stats::change::Verdict;
use crate::stats::paired::Looks;
use crate::stats::summary::Summary;
use crate::trials::Stop;

/// One look, a 5% effect.
const ONE: (Looks, f64) = (Looks { count: 1 }, 5.0);

/// A co-runner calibration: the pirate alone per set, DRAM, the pirate beside the bandit.
fn calibrated(pirate_alone_ns: Vec<(u64, f64)>, dram_ns: f64, beside: f64) -> CoRunnerCalibration {
    CoRunnerCalibration {
        pirate_alone_ns,
        dram_ns,
        bandit_max_bytes_per_s: 1e10,
        pirate_beside_bandit_ns: beside,
        bandit_huge: true,
        sharing: None,
    }
}

/// The program on CPU 0, one NUMA node, no SMT.
fn cpu_plan_of(co_runner: Option<usize>, shares_llc: bool, pirate: PirateSite) -> CpuPlan {
    CpuPlan {
        program: vec![0],
        co_runner,
        shares_llc,
        smt_sibling: false,
        memory_nodes: 1,
        pirate,
        cpu_bound: false,
    }
}

fn record(block: usize, s: f64) -> RunRecord {
    RunRecord {
        block,
        order: 0,
        elapsed_s: s,
        user_s: s,
        system_s: 0.0,
        max_rss_kib: 0,
        minor_faults: 0,
        major_faults: 0,
        termination: Termination::Exited(0),
        huge_kib: 0.0,
        co_runner: Some((20.0, 0.0)),
        stopped: false,
    }
}

/// The findings of a stage's results, for a program with no profile.
fn findings_of(r: &[ArmResult], facts: &MachineFacts, cpus: &CpuPlan) -> Vec<verdict::Finding> {
    findings_with(r, facts, cpus, None)
}

/// As `findings_of`, with the co-runner's calibration.
fn findings_with(
    r: &[ArmResult],
    facts: &MachineFacts,
    cpus: &CpuPlan,
    calibration: Option<&CoRunnerCalibration>,
) -> Vec<verdict::Finding> {
    verdict::findings(
        r,
        facts,
        &ProgramProfile::default(),
        cpus,
        calibration,
        5.0,
        &[],
    )
    .0
}

/// The finding of one resource.
fn finding_of(
    r: &[ArmResult],
    facts: &MachineFacts,
    cpus: &CpuPlan,
    resource: arms::Resource,
) -> verdict::Finding {
    findings_of(r, facts, cpus)
        .into_iter()
        .find(|f| f.resource == resource)
        .unwrap()
}

#[test]
fn a_pirate_that_slows_towards_dram_holds_less_of_its_set() {
    assert_eq!(held_share(10.0, 10.0, 100.0), Some(1.0));
    assert_eq!(held_share(100.0, 10.0, 100.0), Some(0.0));
    assert!((held_share(55.0, 10.0, 100.0).unwrap() - 0.5).abs() < 1e-12);
    assert_eq!(held_share(5.0, 10.0, 100.0), Some(1.0));
    assert_eq!(held_share(50.0, 100.0, 10.0), None);
    assert_eq!(held_share(f64::NAN, 10.0, 100.0), None);
}

#[test]
fn arms_are_resolved_when_significant_or_known_to_be_small() {
    let arms = [ArmSpec::new(ArmKind::Alone), ArmSpec::new(ArmKind::HugeAll)];
    let base: Vec<RunRecord> = (0..8).map(|i| record(i, 1.0 + 0.001 * i as f64)).collect();
    let slower: Vec<RunRecord> = (0..8).map(|i| record(i, 1.5 + 0.001 * i as f64)).collect();
    assert!(resolved(&arms, &[base.clone(), slower], 0, 5.0));
    // The same times: a ratio interval well inside ±5%.
    assert!(resolved(&arms, &[base.clone(), base.clone()], 0, 5.0));
    // Noisy and not different: unresolved.
    let noisy: Vec<RunRecord> = (0..8)
        .map(|i| record(i, if i % 2 == 0 { 0.8 } else { 1.3 }))
        .collect();
    assert!(!resolved(&arms, &[base.clone(), noisy], 0, 5.0));
}

#[test]
fn results_compare_each_arm_with_its_reference_and_check_the_pirate() {
    let arms = [
        ArmSpec::new(ArmKind::Alone),
        ArmSpec::new(ArmKind::Compute),
        ArmSpec::pirate(8 << 20, 0.25),
    ];
    let runs = vec![
        (0..6)
            .map(|i| record(i, 1.0 + 0.01 * i as f64))
            .collect::<Vec<_>>(),
        (0..6).map(|i| record(i, 1.0 + 0.01 * i as f64)).collect(),
        (0..6).map(|i| record(i, 2.0 + 0.01 * i as f64)).collect(),
    ];
    let machine = Machine::sample();
    let mut facts = super::super::facts::from_topology(&machine);
    facts.llc_bytes = Some(32 << 20);
    facts.llc_cpus = vec![0];
    let calibration = calibrated(vec![(8 << 20, 10.0)], 100.0, f64::NAN);
    let r = results(&arms, &runs, (0, false), &facts, Some(&calibration), ONE);
    assert_eq!(r[0].time.verdict, Verdict::Baseline);
    assert_eq!(r[2].reference, ArmKind::Compute);
    assert_eq!(r[2].time.verdict, Verdict::Worse);
    let ratio = r[2].ratio.unwrap();
    assert!(ratio.low > 1.8 && ratio.high < 2.2, "{ratio:?}");
    // ns 20 between 10 alone and 100 at DRAM: held 8/9 of its 8 MiB.
    let check = r[2].co_runner.unwrap();
    let held = check.held_share.unwrap();
    assert!((held - 80.0 / 90.0).abs() < 1e-9);
    let left = check.cache_left_bytes.unwrap();
    assert!((left - (32.0 - 8.0 * held) * 1048576.0).abs() < 1.0);
    assert_eq!(Stop::Resolved.worse(Stop::TimeLimit), Stop::TimeLimit);
}

#[test]
fn cat_and_mba_arms_are_read_against_the_program_alone_and_make_the_findings() {
    let mib = 1u64 << 20;
    let arms = [
        ArmSpec::new(ArmKind::Alone),
        ArmSpec::cat_ways(3, 12, 2 * mib),
        ArmSpec::cat_ways(6, 12, 4 * mib),
        ArmSpec::mba(20),
    ];
    let times = |base: f64| -> Vec<RunRecord> {
        (0..8).map(|i| record(i, base + 0.001 * i as f64)).collect()
    };
    let runs = vec![times(1.0), times(1.6), times(1.2), times(1.3)];
    let machine = Machine::sample();
    let mut facts = super::super::facts::from_topology(&machine);
    facts.llc_bytes = Some(8 * mib);
    let r = results(&arms, &runs, (0, false), &facts, None, ONE);
    assert!(r[1..].iter().all(|a| a.reference == ArmKind::Alone));
    assert!(r[1..].iter().all(|a| a.co_runner.is_none()));
    assert_eq!(r[1].time.verdict, Verdict::Worse);
    let cpus = cpu_plan_of(None, false, PirateSite::Beside);
    let findings = findings_of(&r, &facts, &cpus);
    let of = |resource| findings.iter().find(|f| f.resource == resource).unwrap();
    let cache = of(arms::Resource::Cache);
    assert_eq!(cache.sensitivity, verdict::Sensitivity::Sensitive);
    assert_eq!(cache.arm.as_deref(), Some("L3 CAT 3 of 12 ways (2 MiB)"));
    assert!(
        cache.summary.contains("restricted by L3 CAT to 2 MiB"),
        "{}",
        cache.summary
    );
    // 2 MiB: +60%, 4 MiB: +20%, all 8 MiB: 0 → within 5% from 7 MiB on.
    let remedy = cache.remedy.as_deref().unwrap();
    assert!(remedy.starts_with("needs ≥ 7"), "{remedy}");
    assert!(remedy.contains("to 2 MiB of the 8 MiB"), "{remedy}");
    let bandwidth = of(arms::Resource::Bandwidth);
    assert_eq!(bandwidth.sensitivity, verdict::Sensitivity::Sensitive);
    assert!(
        bandwidth.summary.starts_with("throttled by MBA to 20%"),
        "{}",
        bandwidth.summary
    );
}

/// A whole result from synthetic runs: alone, the compute neighbour, a pirate that slows
/// the program by half, and huge pages that change nothing.
fn synthetic_result() -> AdviseResult {
    synthetic_result_with([1.0, 1.0, 1.5, 1.0])
}

/// The same arms with these times: alone, compute neighbour, pirate, huge pages.
fn synthetic_result_with(bases: [f64; 4]) -> AdviseResult {
    let arms = [
        ArmSpec::new(ArmKind::Alone),
        ArmSpec::new(ArmKind::Compute),
        ArmSpec::pirate(12 << 20, 0.75),
        ArmSpec::new(ArmKind::HugeAll),
    ];
    let times = |base: f64| -> Vec<RunRecord> {
        (0..8)
            .map(|i| record(i + 1, base + 0.002 * i as f64))
            .collect()
    };
    let runs = bases.iter().map(|&b| times(b)).collect::<Vec<_>>();
    let machine = Machine::sample();
    let mut facts = super::super::facts::from_topology(&machine);
    facts.llc_bytes = Some(32 << 20);
    facts.llc_cpus = vec![0, 1];
    let calibration = calibrated(vec![(12 << 20, 15.0)], 150.0, 30.0);
    let arms = results(&arms, &runs, (0, false), &facts, Some(&calibration), ONE);
    let cpus = cpu_plan_of(Some(1), true, PirateSite::Beside);
    let command = vec![OsString::from("./prog")];
    let (findings, not_memory_bound) = verdict::findings(
        &arms,
        &facts,
        &ProgramProfile::default(),
        &cpus,
        Some(&calibration),
        5.0,
        &command,
    );
    AdviseResult {
        looks: 1,
        command: vec!["./prog".into()],
        facts,
        cpus,
        profile: ProgramProfile::default(),
        calibration: Some(calibration),
        arms,
        findings,
        not_memory_bound,
        normal_status: 0,
        blocks: 8,
        effect_pct: 5.0,
        elapsed_s: 30.0,
        time_limit_s: 180.0,
        stop: Stop::Resolved,
        notes: Vec::new(),
        process_tree: Default::default(),
    }
}

#[test]
fn the_verdict_names_the_cache_first_and_rules_out_what_did_not_move() {
    let mut result = synthetic_result();
    result.profile.wall_s = Summary::of(&[1.0, 1.002]);
    let first = &result.findings[0];
    assert_eq!(first.resource, Resource::Cache);
    assert_eq!(first.sensitivity, verdict::Sensitivity::Sensitive);
    assert!(first.change_pct.unwrap() > 40.0, "{first:?}");
    let tlb = result
        .findings
        .iter()
        .find(|f| f.resource == Resource::Tlb)
        .unwrap();
    assert_eq!(
        tlb.sensitivity,
        verdict::Sensitivity::NotSensitive,
        "{tlb:?}"
    );
    assert!(!result.not_memory_bound);
    assert!(
        result.answer().starts_with("Sensitive to: cache capacity"),
        "{}",
        result.answer()
    );
    assert_eq!(result.exit_status(), 0);
    // The section: the answer, then the verdict table, before the arms.
    let section = result.section();
    assert_eq!(section.id, "advise");
    let tables: Vec<&crate::view::Table> = section
        .all_blocks()
        .into_iter()
        .filter_map(|b| match b {
            crate::view::Block::Table(t) => Some(t),
            _ => None,
        })
        .collect();
    assert!(tables[0].title.as_deref().unwrap().starts_with("Verdict"));
    // Its figures: the time alone and each arm's ratio against its reference.
    let figures = crate::view::figure::Figures::figures(&result);
    assert!(figures.iter().any(|f| f.key == "advise.alone.wall_s"));
    assert!(figures
        .iter()
        .any(|f| f.key.ends_with(".time_ratio") && f.value > 1.4));
}

#[test]
fn a_program_nothing_moves_is_not_memory_bound_and_a_noisy_one_is_unresolved() {
    let mut result = synthetic_result();
    // Every arm as fast as alone.
    for arm in result.arms.iter_mut() {
        for (i, run) in arm.runs.iter_mut().enumerate() {
            run.elapsed_s = 1.0 + 0.002 * i as f64;
        }
    }
    let spec: Vec<ArmSpec> = result
        .arms
        .iter()
        .map(|a| ArmSpec {
            kind: a.kind,
            level: a.level,
            label: a.label.clone(),
        })
        .collect();
    let runs: Vec<Vec<RunRecord>> = result.arms.iter().map(|a| a.runs.clone()).collect();
    let arms = results(
        &spec,
        &runs,
        (0, false),
        &result.facts,
        result.calibration.as_ref(),
        ONE,
    );
    let command = vec![OsString::from("./prog")];
    let (findings, quiet) = verdict::findings(
        &arms,
        &result.facts,
        &ProgramProfile::default(),
        &result.cpus,
        result.calibration.as_ref(),
        5.0,
        &command,
    );
    assert!(quiet, "{findings:?}");
    // Noisy runs that do not differ: nothing is ruled out.
    let noisy: Vec<Vec<RunRecord>> = (0..spec.len())
        .map(|k| {
            (0..8)
                .map(|i| record(i + 1, if (i + k) % 2 == 0 { 0.6 } else { 1.6 }))
                .collect()
        })
        .collect();
    let arms = results(
        &spec,
        &noisy,
        (0, false),
        &result.facts,
        result.calibration.as_ref(),
        ONE,
    );
    let (findings, quiet) = verdict::findings(
        &arms,
        &result.facts,
        &ProgramProfile::default(),
        &result.cpus,
        result.calibration.as_ref(),
        5.0,
        &command,
    );
    assert!(!quiet);
    assert!(findings
        .iter()
        .any(|f| f.sensitivity == verdict::Sensitivity::Unresolved));
}

#[test]
fn the_pirate_screens_with_the_largest_set_it_holds_alone() {
    let mib = 1u64 << 20;
    let sizes = [4 * mib, 8 * mib, 12 * mib, 16 * mib];
    let calibration = |at_16: f64| {
        calibrated(
            vec![
                (4 * mib, 12.0),
                (8 * mib, 13.0),
                (12 * mib, 14.0),
                (16 * mib, at_16),
            ],
            160.0,
            25.0,
        )
    };
    let held = held_levels(&sizes, Some(&calibration(24.0)));
    assert_eq!(held.last(), Some(&(16 * mib, 1.0)));
    let lost = held_levels(&sizes, Some(&calibration(122.0)));
    assert_eq!(lost.last(), Some(&(12 * mib, 0.75)));
    assert_eq!(held_levels(&sizes, None).len(), 3);
}

#[test]
fn a_pirate_in_turns_is_read_by_cpu_time_against_a_compute_thread_in_turns() {
    // Wall time doubles in turns; the CPU time shows the pirate's effect alone.
    let run = |block: usize, wall: f64, cpu: f64| RunRecord {
        elapsed_s: wall,
        user_s: cpu,
        ..record(block, wall)
    };
    let arms = [
        ArmSpec::new(ArmKind::Alone),
        ArmSpec::new(ArmKind::ComputeInTurns),
        ArmSpec::pirate_in_turns(8 << 20, 0.5),
    ];
    let jitter = |i: usize| 0.001 * i as f64;
    let runs = vec![
        (0..8)
            .map(|i| run(i, 1.0 + jitter(i), 1.0 + jitter(i)))
            .collect(),
        (0..8)
            .map(|i| run(i, 2.0 + jitter(i), 1.0 + jitter(i)))
            .collect(),
        (0..8)
            .map(|i| run(i, 2.6 + jitter(i), 1.3 + jitter(i)))
            .collect(),
    ];
    let machine = Machine::sample();
    let mut facts = super::super::facts::from_topology(&machine);
    facts.llc_bytes = Some(32 << 20);
    facts.llc_cpus = vec![0, 1];
    let calibration = calibrated(vec![(8 << 20, 12.0)], 120.0, f64::NAN);
    let r = results(&arms, &runs, (0, false), &facts, Some(&calibration), ONE);
    assert_eq!(r[1].timing, arms::Timing::Cpu);
    // Sharing the CPU costs no CPU time: the control does not move.
    assert_ne!(r[1].time.verdict, Verdict::Worse);
    assert_eq!(r[2].reference, ArmKind::ComputeInTurns);
    assert_eq!(r[2].time.verdict, Verdict::Worse);
    let ratio = r[2].ratio.unwrap();
    assert!(ratio.low > 1.25 && ratio.high < 1.35, "{ratio:?}");
    // In turns the pirate starts the program's turns holding its whole set.
    let left = r[2].co_runner.unwrap().cache_left_bytes.unwrap();
    assert!((left - 8.0 * 1048576.0).abs() < 1.0, "{left}");
    assert!(resolved(&arms, &runs, 0, 5.0));
    assert_eq!(times(&runs[1], 0, arms::Timing::Wall)[0], 2.0);
    let cpus = cpu_plan_of(Some(1), true, PirateSite::InTurns);
    let findings = findings_with(&r, &facts, &cpus, Some(&calibration));
    let cache = findings
        .iter()
        .find(|f| f.resource == arms::Resource::Cache)
        .unwrap();
    assert_eq!(cache.sensitivity, verdict::Sensitivity::Sensitive);
    assert!(cache.summary.contains("in turns"), "{}", cache.summary);
    assert!(cache.summary.contains("CPU time"), "{}", cache.summary);
}

#[test]
fn the_pirate_runs_beside_only_where_the_check_finds_a_shared_cache_and_not_on_a_vm() {
    use crate::kernels::corunner::SharingCheck;
    let cpus = |shares_llc| cpu_plan_of(Some(1), shares_llc, PirateSite::Nowhere);
    let check = |beside_ns| SharingCheck {
        bytes: 8 << 20,
        other_bytes: 32 << 20,
        alone_ns: 12.0,
        beside_ns,
    };
    let levels = [(8u64 << 20, 0.5)];
    let site = neighbours::pirate_site;
    // Shared: the other CPU's walk evicted the pirate's set.
    assert_eq!(
        site(&cpus(true), true, true, &levels, Some(check(60.0)), false),
        PirateSite::Beside
    );
    // The OS says shared, the check says not: in turns.
    assert_eq!(
        site(&cpus(true), true, true, &levels, Some(check(12.5)), false),
        PirateSite::InTurns
    );
    // No check (no co-runner in turns): the OS is believed.
    assert_eq!(
        site(&cpus(true), true, false, &levels, None, false),
        PirateSite::Beside
    );
    assert_eq!(
        site(&cpus(false), true, true, &levels, None, false),
        PirateSite::InTurns
    );
    // One CPU: in turns; no set held: nowhere.
    assert_eq!(
        site(&cpus(false), false, true, &levels, None, false),
        PirateSite::InTurns
    );
    assert_eq!(
        site(&cpus(true), true, true, &[], Some(check(60.0)), false),
        PirateSite::Nowhere
    );
    assert_eq!(check(f64::NAN).shared(), None);
    // Under a hypervisor in turns, even where the check found one shared cache (the host
    // moves vCPUs during a run); beside only without a co-runner in turns.
    assert_eq!(
        site(&cpus(true), true, true, &levels, Some(check(60.0)), true),
        PirateSite::InTurns
    );
    assert_eq!(
        site(&cpus(true), true, false, &levels, None, true),
        PirateSite::Beside
    );
}

#[test]
fn only_a_faster_run_on_every_cpu_that_is_significant_or_parallel_is_noted() {
    let arms = [ArmSpec::new(ArmKind::Alone), ArmSpec::new(ArmKind::AllCpus)];
    let machine = Machine::sample();
    let facts = super::super::facts::from_topology(&machine);
    // A single-threaded program (CPU time = wall time) 8% faster by the estimate but
    // with overlapping runs: noise, no note.
    let noisy = |i: usize, base: f64| record(i, base + [0.0, 0.3, -0.2, 0.25][i % 4]);
    let shifted = |i: usize, base: f64| RunRecord {
        block: i,
        ..noisy(i + 2, base)
    };
    let runs = vec![
        (0..4).map(|i| noisy(i, 1.0)).collect::<Vec<_>>(),
        (0..4).map(|i| shifted(i, 0.92)).collect(),
    ];
    let r = results(&arms, &runs, (0, false), &facts, None, ONE);
    assert_ne!(r[1].time.verdict, Verdict::Better);
    assert_eq!(verdict::cpus_note(&r, 5.0), None);
    // The same program keeping two CPUs busy (CPU time twice its wall time): noted.
    let parallel = |i: usize, base: f64| RunRecord {
        user_s: 2.0 * base,
        ..noisy(i, base)
    };
    let runs = vec![
        (0..4).map(|i| parallel(i, 1.0)).collect::<Vec<_>>(),
        (0..4).map(|i| parallel(i, 0.92)).collect(),
    ];
    let r = results(&arms, &runs, (0, false), &facts, None, ONE);
    assert!(verdict::cpus_note(&r, 5.0).is_some());
}

#[test]
fn a_change_counts_only_the_way_its_arm_shows_a_sensitivity() {
    // Faster beside the pirate: nothing about the cache. Slower with huge pages: a cost.
    let result = synthetic_result_with([1.0, 1.0, 0.8, 1.3]);
    let of = |resource| {
        result
            .findings
            .iter()
            .find(|f| f.resource == resource)
            .unwrap()
            .sensitivity
    };
    assert_eq!(of(arms::Resource::Cache), verdict::Sensitivity::Unresolved);
    assert_eq!(of(arms::Resource::Tlb), verdict::Sensitivity::Hurts);
    let answer = result.answer();
    assert!(
        answer.contains("Slower with huge pages, all (+"),
        "{answer}"
    );
    assert!(
        answer.starts_with("Nothing taken away slowed it"),
        "{answer}"
    );
    assert!(!answer.starts_with("Sensitive to"), "{answer}");
    // No arm with runs to compare (the time limit ended the first block): nothing is
    // claimed about what slowed it.
    let mut unmeasured = result.clone();
    for finding in &mut unmeasured.findings {
        finding.change_pct = None;
        finding.sensitivity = verdict::Sensitivity::Unresolved;
    }
    unmeasured.blocks = 0;
    let answer = unmeasured.answer();
    assert!(
        answer.starts_with("Not measured yet: the time limit ended")
            && answer.contains("(0 block(s) completed)"),
        "{answer}"
    );
    // Faster with huge pages: the TLB is what it is sensitive to.
    let result = synthetic_result_with([1.0, 1.0, 1.0, 0.7]);
    assert!(
        result.answer().starts_with("Sensitive to: the TLB"),
        "{}",
        result.answer()
    );
}

#[test]
fn huge_page_runs_whose_system_time_falls_in_two_groups_are_said_with_the_cheap_gain() {
    let run = |block: usize, wall: f64, sys: f64| RunRecord {
        system_s: sys,
        ..record(block, wall)
    };
    // Six cheap runs 20% faster, three that paid 0.45 s of system time.
    let huge: Vec<RunRecord> = (0..9)
        .map(|i| match i % 3 {
            2 => run(i, 1.15 + 0.001 * i as f64, 0.45 + 0.001 * i as f64),
            _ => run(i, 0.8 + 0.001 * i as f64, 0.02),
        })
        .collect();
    let modes = system_time_modes(&huge, 0.05).unwrap();
    assert_eq!((modes.cheap.len(), modes.costly.len()), (6, 3));
    assert!(modes.cheap_sys_s < 0.03 && modes.costly_sys_s >= 0.45);
    // One group, or a lone outlier: no split.
    assert_eq!(system_time_modes(&huge[..2], 0.05), None);
    let flat: Vec<RunRecord> = (0..6).map(|i| run(i, 1.0, 0.1 + 0.01 * i as f64)).collect();
    assert_eq!(system_time_modes(&flat, 0.05), None);
    let mut lone = flat.clone();
    lone[0].system_s = 0.9;
    assert_eq!(system_time_modes(&lone, 0.05), None);

    let arms = [ArmSpec::new(ArmKind::Alone), ArmSpec::new(ArmKind::HugeAll)];
    let alone: Vec<RunRecord> = (0..9)
        .map(|i| run(i, 1.0 + 0.001 * i as f64, 0.1))
        .collect();
    let machine = Machine::sample();
    let facts = super::super::facts::from_topology(&machine);
    let r = results(&arms, &[alone, huge], (0, false), &facts, None, ONE);
    let cpus = cpu_plan_of(None, false, PirateSite::Nowhere);
    let tlb = finding_of(&r, &facts, &cpus, arms::Resource::Tlb);
    assert!(
        tlb.summary.contains("two groups: 6 run(s)"),
        "{}",
        tlb.summary
    );
    assert!(tlb.summary.contains("ran -20"), "{}", tlb.summary);
}

#[test]
fn the_placement_finding_takes_the_interleave_that_buys_most_and_says_how_to_apply_it() {
    let arms = [
        ArmSpec::new(ArmKind::Alone),
        ArmSpec::new(ArmKind::Interleave),
        ArmSpec::new(ArmKind::WeightedInterleave),
    ];
    let times = |base: f64| -> Vec<RunRecord> {
        (0..8).map(|i| record(i, base + 0.001 * i as f64)).collect()
    };
    let machine = Machine::sample();
    let facts = super::super::facts::from_topology(&machine);
    let cpus = CpuPlan {
        memory_nodes: 3,
        ..cpu_plan_of(None, false, PirateSite::Nowhere)
    };
    let placement = |runs: Vec<Vec<RunRecord>>| {
        let r = results(&arms, &runs, (0, false), &facts, None, ONE);
        finding_of(&r, &facts, &cpus, arms::Resource::Placement)
    };
    // Weighted interleave buys 25%, even interleave 10%: the weighted one is the answer.
    let f = placement(vec![times(1.0), times(0.9), times(0.75)]);
    assert!(
        f.summary.contains("weighted-interleave weights"),
        "{}",
        f.summary
    );
    assert!(
        f.apply.iter().any(|a| a.contains("--weighted-interleave")),
        "{:?}",
        f.apply
    );
    // Neither buys anything: the even one is said, with nothing to apply.
    let f = placement(vec![times(1.0), times(1.0), times(1.01)]);
    assert!(f.summary.contains("evenly"), "{}", f.summary);
    assert!(f.apply.is_empty(), "{:?}", f.apply);
}

#[test]
fn one_remedy_slower_while_another_looks_faster_does_not_rule_huge_pages_out() {
    let arms = [
        ArmSpec::new(ArmKind::Alone),
        ArmSpec::new(ArmKind::HugeAll),
        ArmSpec::new(ArmKind::MallocHugetlb),
    ];
    let of = |walls: [f64; 8]| -> Vec<RunRecord> {
        walls
            .iter()
            .enumerate()
            .map(|(i, &s)| record(i, s))
            .collect()
    };
    // Huge pages for everything look 3% faster within the noise; the malloc tunable is
    // 20% slower, clearly.
    let alone = of([0.90, 1.10, 0.92, 1.08, 0.95, 1.05, 0.97, 1.03]);
    let huge = of([0.93, 1.06, 0.88, 1.10, 0.90, 1.02, 0.99, 0.98]);
    let malloc = of([1.20, 1.21, 1.19, 1.22, 1.18, 1.20, 1.21, 1.19]);
    let machine = Machine::sample();
    let facts = super::super::facts::from_topology(&machine);
    let r = results(&arms, &[alone, huge, malloc], (0, false), &facts, None, ONE);
    assert_eq!(r[2].time.verdict, Verdict::Worse);
    assert_ne!(r[1].time.verdict, Verdict::Better);
    let cpus = cpu_plan_of(None, false, PirateSite::Nowhere);
    let tlb = finding_of(&r, &facts, &cpus, arms::Resource::Tlb);
    assert_eq!(
        tlb.arm.as_deref(),
        Some("huge pages, all"),
        "{}",
        tlb.summary
    );
    assert_ne!(tlb.sensitivity, verdict::Sensitivity::Hurts);
}

#[test]
fn a_bandit_that_takes_cache_does_not_make_a_cache_sensitive_program_bandwidth_bound() {
    let arms = [
        ArmSpec::new(ArmKind::Alone),
        ArmSpec::new(ArmKind::Compute),
        ArmSpec::pirate(8 << 20, 0.5),
        ArmSpec::new(ArmKind::Bandit),
    ];
    let jitter = |i: usize| 0.001 * i as f64;
    let arm_runs = |s: f64| (0..8).map(|i| record(i + 1, s + jitter(i))).collect();
    let mut facts = super::super::facts::from_topology(&Machine::sample());
    facts.llc_bytes = Some(32 << 20);
    facts.llc_cpus = vec![0, 1];
    let bandwidth = |pirate_s: f64, beside_bandit_ns: f64, site: PirateSite| {
        // The OS says the co-runner shares the LLC only where the pirate ran beside.
        let cpus = cpu_plan_of(Some(1), site == PirateSite::Beside, site);
        let runs = vec![
            arm_runs(1.0),
            arm_runs(1.0),
            arm_runs(pirate_s),
            arm_runs(1.5),
        ];
        let calibration = calibrated(vec![(8 << 20, 12.0)], 150.0, beside_bandit_ns);
        let r = results(&arms, &runs, (0, false), &facts, Some(&calibration), ONE);
        let findings = findings_with(&r, &facts, &cpus, Some(&calibration));
        findings
            .into_iter()
            .find(|f| f.resource == arms::Resource::Bandwidth)
            .unwrap()
    };
    // The bandit slowed the pirate's cached set 2×, or streams through the cache the
    // pirate found shared, and the pirate slows the program: the bandit arm's +50% may be
    // the cache it took.
    for (beside_bandit_ns, site) in [(25.0, PirateSite::InTurns), (12.5, PirateSite::Beside)] {
        let unresolved = bandwidth(2.0, beside_bandit_ns, site);
        assert_eq!(unresolved.sensitivity, verdict::Sensitivity::Unresolved);
        assert!(
            unresolved.summary.contains("not told apart"),
            "{}",
            unresolved.summary
        );
    }
    // A bandit that leaves the cache alone (on another cache, its probe not slowed), or a
    // program the pirate does not move: the bandit arm stands.
    let apart = bandwidth(2.0, 12.5, PirateSite::InTurns);
    assert_eq!(apart.sensitivity, verdict::Sensitivity::Sensitive);
    let streaming = bandwidth(1.0, 25.0, PirateSite::Beside);
    assert_eq!(streaming.sensitivity, verdict::Sensitivity::Sensitive);
    assert!(
        streaming.summary.contains("slows what the cache holds too"),
        "{}",
        streaming.summary
    );
}
