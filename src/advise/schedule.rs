//! The order of `advise`'s work: the machine's facts, the CPUs, a first run (the
//! program's normal exit status and its time), the profile (a recorded run, the binary's
//! footprint, counters where there is a PMU), the co-runner's calibration, then two
//! stages of interleaved blocks: the screening stage (each resource's strongest arm
//! beside the baseline and the controls, after a warm-up block that is not counted) and
//! the curves of the resources the screening found sensitive. A stage runs blocks (every
//! arm once, in a shuffled order) until each arm is resolved — significant at p < 0.01,
//! or its ratio interval narrower than the effect — or its share of the time limit is
//! spent; at least 6 blocks (fewer only to fit the time limit), or exactly `--runs`.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use super::arms::{self, ArmKind, ArmSpec, Resource};
#[cfg(test)]
use super::checks::held_share;
use super::facts::MachineFacts;
use super::neighbours::{self, Wanted};
use super::profile::{self, ProgramProfile};
#[cfg(test)]
use super::results::{held_levels, system_time_modes, times};
use super::results::{resolved, results, PIRATE_SHARES};
use super::trial::{self, CoRunners, ReadyMemory, Setup};
use super::verdict;
use super::{AdvisePlan, AdviseResult, CpuPlan, PirateSite, ReadiedMemory};
use super::{RunRecord, Stop};
use crate::counters::{topdown, Probe};
use crate::counting::{default_groups, Counting};
use crate::error::UsageError;
use crate::kernels::corunner::BURST_PERIOD;
use crate::pages::preload::{Preload, PreloadMode};
use crate::pages::record::{self, RecordPlan};
use crate::pages::sources::SourceChoice;
use crate::platform::child::{ProcessTree, SpawnOptions, Termination, STOP_GRACE};
use crate::platform::cleanup;
use crate::session::progress::Progress;
use crate::stats::change::Verdict;
use crate::stats::design::Shuffler;
use crate::topology::memory::{AvailableMemory, MemoryBound};
use crate::topology::{Machine, ThpMode};

/// Blocks a stage runs at least (the rank test needs a few runs a side), and at most.
const MIN_BLOCKS: usize = 6;
const MAX_BLOCKS: usize = 30;
/// The bandit's rates, as shares of its flat-out rate.
const BANDIT_SHARES: [f64; 2] = [0.25, 0.5];

/// Runs advise.
pub fn run(
    plan: &AdvisePlan,
    machine: &Machine,
    facts: MachineFacts,
) -> anyhow::Result<AdviseResult> {
    let started = Instant::now();
    let deadline = started + plan.time_limit;
    // Ctrl-C ends the measuring and reports what it has (a second one exits at once).
    let _deferred = cleanup::defer_interrupt();
    let progress = if plan.show_output {
        Progress::lines_when_not_terminal()
    } else {
        Progress::for_stderr()
    };
    let mut notes = Vec::new();
    let mut facts = facts;
    let mut cpus = cpu_plan(machine, &facts, plan.co_runner_cpu);
    let all_cpus = machine.allowed_cpus.clone();
    let memory_nodes: Vec<usize> = machine
        .numa_nodes
        .iter()
        .filter(|n| n.memory_total_bytes > 0)
        .map(|n| n.id)
        .collect();
    let preload = Preload::create().ok();
    let partitioning = match trial::Partitioning::detect(facts.llc_bytes) {
        Ok(p) => {
            notes.push(p.note());
            Some(p)
        }
        Err(why) => {
            notes.push(why);
            None
        }
    };
    let cat_arms = partitioning
        .as_ref()
        .map_or_else(Vec::new, |p| p.cat_arms());
    let mba_arms = partitioning
        .as_ref()
        .map_or_else(Vec::new, |p| p.mba_arms());
    let process_tree = std::cell::RefCell::new(ProcessTree::default());
    let mut setup = Setup {
        command: &plan.command,
        program_cpus: &cpus.program,
        all_cpus: &all_cpus,
        memory_nodes: &memory_nodes,
        preload: preload.as_ref(),
        hot_ranges: &[],
        show_output: plan.show_output,
        partitioning: partitioning.as_ref(),
        ready: None,
        deadline: Some(deadline),
        process_tree: &process_tree,
    };

    // The first run: does the program start, how does it end, how long does it take.
    progress.start("advise: first run", 1);
    let first = trial::run(
        &setup,
        &ArmSpec::new(ArmKind::Alone),
        CoRunners::default(),
        0,
        0,
    )?;
    progress.advance();
    let normal_status = first.record.termination.shell_status();
    if first.record.stopped {
        return Err(UsageError::CannotProceed(format!(
            "the program's first run was still running at the time limit ({}) and was \
             stopped with its descendants (SIGTERM, then SIGKILL after {} s): give a larger \
             --time-limit, or a command that ends",
            humantime::format_duration(plan.time_limit),
            STOP_GRACE.as_secs()
        ))
        .into());
    }
    if interrupted(first.record.termination) {
        return Err(
            UsageError::CannotProceed("interrupted (Ctrl-C) in the first run".into()).into(),
        );
    }
    if normal_status != 0 {
        notes.push(format!(
            "the program ended with status {normal_status} in its first run: taken as its \
             normal status (a run that ends otherwise is a failed run)"
        ));
    }
    let one_run = first.record.elapsed_s.max(1e-3);

    // The profile.
    let mut profile = ProgramProfile::default();
    progress.start("advise: recording the program's accesses", 1);
    let record_plan = RecordPlan {
        top: record::Top::Count(profile::HOT_REGIONS),
        source: SourceChoice::Auto,
        interval: Duration::from_millis(100),
        adaptive: true,
        capture: !plan.show_output,
        command: plan.command.clone(),
    };
    let no_huge = PreloadMode {
        split: true,
        no_huge: false,
        huge: None,
        hugetlb: false,
    };
    let hot_ranges: Vec<(u64, u64)> = match record::record(&record_plan, &no_huge) {
        Ok(rec) => {
            profile::add_record(&mut profile, &rec);
            rec.regions
                .iter()
                .filter(|r| r.anonymous && r.value > 0.0)
                .take(profile::HOT_REGIONS)
                .map(|r| (r.start, r.start + rec.region_bytes))
                .collect()
        }
        Err(e) => {
            profile.record = format!("not recorded: {e}");
            Vec::new()
        }
    };
    progress.advance();
    setup.hot_ranges = &hot_ranges;
    if let Some(program) = plan.command.first() {
        profile.footprint = profile::footprint(&program.to_string_lossy(), machine);
    }
    count(&mut profile, &plan.command, &cpus.program, machine);

    // The co-runner and its checks.
    // No pirate where the LLC's size is unknown: its sets are shares of it.
    let pirate_sizes: Vec<u64> = match facts.llc_share_bytes() {
        Some(share) => PIRATE_SHARES
            .iter()
            .map(|s| (share as f64 * s) as u64)
            .collect(),
        None => {
            notes
                .push("the last-level cache's size is not known here: no cache pirate runs".into());
            Vec::new()
        }
    };
    let wants = |r: Resource| plan.resources.contains(&r);
    progress.start("advise: the co-runners' own checks", 1);
    let neighbours = neighbours::start(
        machine,
        &mut facts,
        &cpus,
        &pirate_sizes,
        Wanted {
            cache: wants(Resource::Cache) && cat_arms.is_empty(),
            bandwidth: wants(Resource::Bandwidth),
            room: room_beside(first.record.max_rss_kib),
        },
    );
    progress.advance();
    notes.extend(neighbours.notes.iter().cloned());
    cpus.pirate = neighbours.site;
    let calibration = neighbours.calibration.clone();
    let pirate_levels = neighbours.levels.clone();
    let co_runners = CoRunners {
        beside: neighbours.beside.as_ref(),
        in_turns: neighbours.in_turns.as_ref(),
    };
    if cpus.co_runner.is_none() && wants(Resource::Bandwidth) {
        notes.push("only one CPU is available to memscope: no bandwidth bandit runs".to_string());
    }

    // Where the host takes free memory back, every huge-page run from here on finds its
    // memory readied (see ReadyMemory): a quarter more than the first run's peak.
    let ready = (facts.free_page_reporting && machine.thp.enabled != ThpMode::Never).then(|| {
        let room = room_beside(first.record.max_rss_kib).bytes;
        ReadyMemory::new(ready_bytes(first.record.max_rss_kib).min(room / 2))
    });
    setup.ready = ready.as_ref();

    // Stage 1: each resource's strongest arm.
    let with_co = co_runners.beside.is_some();
    let thp = machine.thp.enabled != ThpMode::Never;
    let mut stage1 = vec![ArmSpec::new(ArmKind::Alone)];
    if with_co {
        stage1.push(ArmSpec::new(ArmKind::Compute));
        stage1.push(ArmSpec::new(ArmKind::AllCpus));
        if wants(Resource::Bandwidth) {
            stage1.push(ArmSpec::new(ArmKind::Bandit));
        }
    }
    // Beside the program the pirate screens with its largest set. In turns half the
    // share is enough (at each turn the program refills what the pirate walked), and a
    // larger set makes a cache-bound program's runs many times longer.
    let in_turns_screen = pirate_levels.get(1).or(pirate_levels.first()).copied();
    match cpus.pirate {
        PirateSite::Beside if with_co => {
            if let Some(&(top, share)) = pirate_levels.last() {
                stage1.push(ArmSpec::pirate(top, share));
            }
        }
        PirateSite::InTurns => {
            if let Some((size, share)) = in_turns_screen {
                stage1.push(ArmSpec::new(ArmKind::ComputeInTurns));
                stage1.push(ArmSpec::pirate_in_turns(size, share));
            }
        }
        _ => {}
    }
    // resctrl's arms need no co-runner: their strongest level screens.
    if wants(Resource::Cache) {
        stage1.extend(cat_arms.first().cloned());
    }
    if wants(Resource::Bandwidth) {
        stage1.extend(mba_arms.first().cloned());
    }
    let thp = thp && wants(Resource::Tlb);
    if thp && preload.is_some() {
        stage1.push(ArmSpec::new(ArmKind::HugeAll));
    } else if machine.thp.enabled == ThpMode::Never {
        notes.push(
            "transparent huge pages are off (never): the huge-page arms are not measured".into(),
        );
    }
    let glibc = arms::glibc_version();
    if thp && glibc.is_some_and(|v| v >= (2, 35)) {
        stage1.push(ArmSpec::new(ArmKind::MallocHugetlb));
    }
    if memory_nodes.len() > 1 && wants(Resource::Placement) {
        stage1.push(ArmSpec::new(ArmKind::Interleave));
        // In the ratio of the system's weights, where the kernel has them (Linux 6.9+):
        // what a machine with CXL or HBM beside its DRAM would be set up with.
        if machine.memory_tiering.weighted_interleave.is_some() {
            stage1.push(ArmSpec::new(ArmKind::WeightedInterleave));
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
    if with_co && !cpus.smt_sibling {
        notes.push(
            "the co-runner's CPU is no SMT sibling of the program's: a busy sibling is not \
             measured (the compute neighbour shows what a busy CPU next to it costs)"
                .to_string(),
        );
    }

    let mut order = 1;
    let mut shuffler = Shuffler::from_clock();
    let remaining = deadline.saturating_duration_since(Instant::now());
    // The screening gets 55% of what is left when curves may follow.
    let curves_may_follow = with_co
        || cpus.pirate == PirateSite::InTurns
        || !hot_ranges.is_empty()
        || partitioning.is_some();
    let stage1_budget = remaining.mul_f64(if curves_may_follow { 0.55 } else { 1.0 });
    let mut ctx = StageContext {
        setup: &setup,
        co_runners,
        progress: &progress,
        shuffler: &mut shuffler,
        order: &mut order,
        plan,
        one_run,
        normal_status,
    };
    let mut runs1 = vec![Vec::new(); stage1.len()];
    let stop1 = ctx.measure(1, &stage1, Instant::now() + stage1_budget, &mut runs1);
    let mut arms = results(
        1,
        &stage1,
        &runs1,
        normal_status,
        &facts,
        calibration.as_ref(),
    );
    let mut stop = stop1;

    // Stage 2: the curves of what the screening found.
    // A co-runner that slows it, a remedy that speeds it up.
    let sensitive = |kind: ArmKind| {
        let wanted = if kind.uses_co_runner() {
            Verdict::Worse
        } else {
            Verdict::Better
        };
        arms.iter()
            .any(|a| a.kind == kind && a.time.verdict == wanted)
    };
    let mut stage2 = Vec::new();
    if sensitive(ArmKind::Pirate) {
        for &(size, share) in pirate_levels.iter().rev().skip(1) {
            stage2.push(ArmSpec::pirate(size, share));
        }
    }
    let in_turns_curve = sensitive(ArmKind::PirateInTurns);
    if in_turns_curve {
        for &(size, share) in pirate_levels.iter().rev() {
            if Some((size, share)) != in_turns_screen {
                stage2.push(ArmSpec::pirate_in_turns(size, share));
            }
        }
    }
    if sensitive(ArmKind::Bandit) {
        if let Some(max) = calibration
            .as_ref()
            .map(|c| c.bandit_max_bytes_per_s)
            .filter(|m| *m > 0.0)
        {
            for share in BANDIT_SHARES {
                stage2.push(ArmSpec::bandit(max * share, share));
            }
        }
    }
    if sensitive(ArmKind::CatWays) {
        stage2.extend(cat_arms.iter().skip(1).cloned());
    }
    if sensitive(ArmKind::MbaThrottle) {
        stage2.extend(mba_arms.iter().skip(1).cloned());
    }
    if (sensitive(ArmKind::HugeAll) || sensitive(ArmKind::MallocHugetlb)) && !hot_ranges.is_empty()
    {
        stage2.push(ArmSpec::new(ArmKind::HugeTop));
    }
    // No curves to measure: the screening goes on with the rest of the time.
    if stage2.is_empty() && stop == Stop::TimeLimit && plan.runs.is_none() {
        stop = ctx.measure(1, &stage1, deadline, &mut runs1);
        arms = results(
            1,
            &stage1,
            &runs1,
            normal_status,
            &facts,
            calibration.as_ref(),
        );
    }
    let mut blocks = runs1.iter().flatten().map(|r| r.block).max().unwrap_or(0);
    if !stage2.is_empty() && stop != Stop::Interrupted {
        let needs_compute = stage2
            .iter()
            .any(|a| a.kind.uses_co_runner() && !a.kind.in_turns());
        let needs_turns = stage2.iter().any(|a| a.kind.in_turns());
        stage2.insert(0, ArmSpec::new(ArmKind::Alone));
        if needs_compute {
            stage2.insert(1, ArmSpec::new(ArmKind::Compute));
        }
        if needs_turns {
            stage2.insert(1, ArmSpec::new(ArmKind::ComputeInTurns));
        }
        let mut runs2 = vec![Vec::new(); stage2.len()];
        let stop2 = ctx.measure(2, &stage2, deadline, &mut runs2);
        arms.extend(results(
            2,
            &stage2,
            &runs2,
            normal_status,
            &facts,
            calibration.as_ref(),
        ));
        blocks += runs2.iter().flatten().map(|r| r.block).max().unwrap_or(0);
        stop = worse_stop(stop, stop2);
    }
    for c in [co_runners.beside, co_runners.in_turns]
        .into_iter()
        .flatten()
    {
        c.set(crate::kernels::corunner::Load::Idle);
    }
    if let Some(t) = co_runners
        .in_turns
        .filter(|t| t.bursts_realtime() == Some(false))
    {
        notes.push(format!(
            "the co-runner in turns on CPU {} could not take real-time priority (SCHED_FIFO \
             needs root or CAP_SYS_NICE): the scheduler placed its bursts, so some of the \
             program's turns were longer than {} ms",
            t.cpu(),
            BURST_PERIOD.as_millis()
        ));
    }
    progress.finish();
    let alone: Vec<&RunRecord> = arms
        .iter()
        .filter(|a| a.kind == ArmKind::Alone)
        .flat_map(|a| &a.runs)
        .filter(|r| r.termination.shell_status() == normal_status)
        .collect();
    profile::add_runs(&mut profile, &alone);
    let (mut findings, not_memory_bound) = verdict::findings(
        &arms,
        &facts,
        &profile,
        &cpus,
        calibration.as_ref(),
        plan.effect_pct,
        &plan.command,
    );
    for f in findings.iter_mut() {
        if f.resource != Resource::Control && !wants(f.resource) {
            *f = verdict::Finding::not_measured(f.resource, "not asked for (--only)");
        }
    }
    let ready_memory = ready.as_ref().and_then(ReadiedMemory::of);
    if let Some(r) = &ready_memory {
        notes.push(format!(
            "this VM's balloon hands free memory back to the host (virtio free page \
             reporting): before each run with huge pages advise touched and freed {} MiB in \
             huge pages, so that every such run found its memory backed, as a run right \
             after another huge-page run does. The \
             first readying, after the memory had been free a while, took {:.2} s: about the \
             system time a program started cold pays here for its huge pages; the {} others \
             {:.2} s (median, at most {:.2} s)",
            r.bytes >> 20,
            r.first_s,
            r.runs.saturating_sub(1),
            r.median_s,
            r.max_s
        ));
    }
    notes.extend(verdict::cpus_note(&arms, plan.effect_pct));
    notes.extend(verdict::budget_note(
        stop,
        plan.time_limit,
        one_run,
        stage1.len(),
    ));
    Ok(AdviseResult {
        command: plan
            .command
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect(),
        facts,
        cpus,
        profile,
        calibration,
        arms,
        findings,
        not_memory_bound,
        normal_status,
        blocks,
        effect_pct: plan.effect_pct,
        elapsed_s: started.elapsed().as_secs_f64(),
        time_limit_s: plan.time_limit.as_secs_f64(),
        stop,
        notes,
        process_tree: process_tree.into_inner(),
        ready_memory,
    })
}

/// What readying memory before each run costs: a quarter more than the program's peak
/// resident memory, in whole 2 MiB blocks, at least 64 MiB.
fn ready_bytes(max_rss_kib: u64) -> u64 {
    const BLOCK: u64 = 2 << 20;
    let wanted = (max_rss_kib * 1024).saturating_mul(5) / 4;
    wanted.max(64 << 20).div_ceil(BLOCK) * BLOCK
}

impl ReadiedMemory {
    fn of(ready: &ReadyMemory) -> Option<ReadiedMemory> {
        let took = ready.took();
        let summary = crate::stats::summary::Summary::of(&took)?;
        Some(ReadiedMemory {
            bytes: ready.bytes,
            runs: summary.count,
            first_s: took[0],
            median_s: summary.median,
            max_s: summary.max,
        })
    }
}

/// The program's CPUs and the co-runner's.
fn cpu_plan(machine: &Machine, facts: &MachineFacts, chosen: Option<usize>) -> CpuPlan {
    let allowed = &machine.allowed_cpus;
    let memory_nodes = machine
        .numa_nodes
        .iter()
        .filter(|n| n.memory_total_bytes > 0)
        .count();
    if allowed.len() < 2 {
        return CpuPlan {
            program: allowed.clone(),
            co_runner: None,
            shares_llc: false,
            smt_sibling: false,
            memory_nodes,
            pirate: PirateSite::Nowhere,
        };
    }
    let first = allowed[0];
    let sharing: Vec<usize> = facts
        .llc_cpus
        .iter()
        .copied()
        .filter(|c| allowed.contains(c) && *c != first)
        .collect();
    let co = chosen.unwrap_or_else(|| {
        sharing
            .last()
            .copied()
            .unwrap_or(allowed[allowed.len() - 1])
    });
    let program: Vec<usize> = allowed.iter().copied().filter(|c| *c != co).collect();
    let shares_llc =
        facts.llc_cpus.contains(&co) && program.iter().any(|c| facts.llc_cpus.contains(c));
    let smt_sibling = machine
        .smt_sibling_groups
        .iter()
        .any(|g| g.contains(&co) && program.iter().any(|c| g.contains(c)));
    CpuPlan {
        program,
        co_runner: Some(co),
        shares_llc,
        smt_sibling,
        memory_nodes,
        pirate: PirateSite::Nowhere,
    }
}

/// Counters of one run where there is a PMU; else why not, said once.
fn count(profile: &mut ProgramProfile, command: &[OsString], cpus: &[usize], machine: &Machine) {
    let probe = Probe::detect();
    if !probe.has_hardware_pmu() {
        profile.no_counters = Some(format!(
            "no hardware performance counters here ({}): no top-down breakdown or miss \
             rates; the verdict rests on the experiments alone",
            probe.summary()
        ));
        return;
    }
    let options = SpawnOptions {
        cpus: Some(cpus.to_vec()),
        ..SpawnOptions::default()
    };
    let counting = Counting::new(&default_groups(), &probe);
    if let Ok(run) = counting.run(command, &options, &probe) {
        let line = machine.caches.first().map_or(64, |c| c.line_bytes);
        let (_, derived, _) = counting.summarize(&[run.record()], &[run.readings], line);
        profile.counters = derived
            .iter()
            .filter_map(|d| Some((d.name.clone(), d.unit.clone(), d.value?.median)))
            .collect();
    }
    // The top-down breakdown in a run of its own: its groups need counters of their own.
    let cpu = topdown::CpuId {
        cpu_vendor: machine.cpu_vendor.clone(),
        cpu_family: machine.cpu_family,
        cpu_model_number: machine.cpu_model_number,
        cpu_model: machine.cpu_model.clone(),
    };
    match topdown::plan(&cpu, &probe) {
        Ok(td) => {
            let counting = Counting::new(&td.groups, &probe);
            profile.topdown = match counting.run(command, &options, &probe) {
                Ok(run) => topdown::breakdown(&td, &run.counts).map(|b| b.describe()),
                Err(e) => Some(format!("not counted: {e}")),
            }
            .or_else(|| Some("not counted: the events could not all be read".to_string()));
        }
        Err(why) => profile.topdown = Some(format!("not available: {why}")),
    }
}

/// What one stage needs.
struct StageContext<'a, 'b> {
    setup: &'a Setup<'a>,
    co_runners: CoRunners<'a>,
    progress: &'a Progress,
    shuffler: &'b mut Shuffler,
    order: &'b mut usize,
    plan: &'a AdvisePlan,
    one_run: f64,
    normal_status: i32,
}

impl StageContext<'_, '_> {
    /// Runs blocks of `arms` until they are resolved, the blocks asked for have run, or
    /// `until`, adding each arm's runs to `runs` (one list per arm; a stage given runs
    /// already goes on from its last block).
    fn measure(
        &mut self,
        stage: usize,
        arms: &[ArmSpec],
        until: Instant,
        runs: &mut [Vec<RunRecord>],
    ) -> Stop {
        let going_on = runs.iter().any(|r| !r.is_empty());
        // A block's time, until one has run: a run in turns takes twice its wall time and
        // more (what the pirate costs it); then the longest block seen.
        let mut block_s = self.one_run
            * arms
                .iter()
                .map(|a| if a.kind.in_turns() { 3.0 } else { 1.0 })
                .sum::<f64>();
        let mut longest: f64 = 0.0;
        // The blocks that fit the stage's time, for the progress bar's length.
        let fit = until
            .saturating_duration_since(Instant::now())
            .as_secs_f64()
            / block_s;
        let planned = self
            .plan
            .runs
            .unwrap_or_else(|| (fit as usize).clamp(MIN_BLOCKS, MAX_BLOCKS));
        self.progress.start(
            &format!("advise: stage {stage}, {} arms", arms.len()),
            (planned * arms.len()) as u64,
        );
        // The screening starts with a warm-up block, not counted: a first run in an arm
        // pays what later ones do not (huge pages compacted, files cached).
        if stage == 1 && !going_on {
            self.progress.message("warm-up block");
            let mut sequence: Vec<usize> = (0..arms.len()).collect();
            self.shuffler.shuffle(&mut sequence);
            for a in sequence {
                match trial::run(self.setup, &arms[a], self.co_runners, 0, *self.order) {
                    Ok(t) if t.record.stopped => return Stop::TimeLimit,
                    Ok(t)
                        if !interrupted(t.record.termination)
                            && !cleanup::interrupt_requested() => {}
                    _ => return Stop::Interrupted,
                }
                *self.order += 1;
            }
        }
        let mut block = runs.iter().flatten().map(|r| r.block).max().unwrap_or(0);
        let stop = loop {
            if let Some(fixed) = self.plan.runs {
                if block >= fixed {
                    break Stop::Fixed;
                }
            } else if block >= MIN_BLOCKS
                && resolved(arms, runs, self.normal_status, self.plan.effect_pct)
            {
                break Stop::Resolved;
            } else if block >= MAX_BLOCKS {
                break Stop::TimeLimit;
            }
            let left = until
                .saturating_duration_since(Instant::now())
                .as_secs_f64();
            // The time limit holds, except that the screening runs at least two blocks
            // (a verdict needs them); the curves and a screening going on stop at once.
            // A block may run longer than the longest so far (a cache-bound program's
            // runs beside the pirate vary severalfold on a shared host): a margin.
            if left < block_s * BLOCK_MARGIN && (block >= 2 || stage > 1 || going_on) {
                break Stop::TimeLimit;
            }
            if cleanup::interrupt_requested() {
                break Stop::Interrupted;
            }
            block += 1;
            let started = Instant::now();
            let mut sequence: Vec<usize> = (0..arms.len()).collect();
            self.shuffler.shuffle(&mut sequence);
            let mut stopped = None;
            for a in sequence {
                self.progress
                    .message(&format!("block {block}, {}", arms[a].label));
                match trial::run(self.setup, &arms[a], self.co_runners, block, *self.order) {
                    Ok(t) if t.record.stopped => stopped = Some(Stop::TimeLimit),
                    Ok(t) => {
                        if interrupted(t.record.termination) || cleanup::interrupt_requested() {
                            stopped = Some(Stop::Interrupted);
                        }
                        runs[a].push(t.record);
                    }
                    Err(_) => stopped = Some(Stop::Interrupted),
                }
                *self.order += 1;
                self.progress.advance();
                if stopped.is_some() {
                    break;
                }
            }
            if let Some(stop) = stopped {
                // The block is dropped whole: its arms ran unequally often.
                for r in runs.iter_mut() {
                    r.retain(|run| run.block != block);
                }
                break stop;
            }
            longest = longest.max(started.elapsed().as_secs_f64());
            block_s = longest;
        };
        stop
    }
}

/// The memory memscope may take now and leave the program half again its peak resident
/// memory (`peak_kib`), with what bounds it.
/// Unknown (no MemAvailable, no limit): no bound.
fn room_beside(peak_kib: u64) -> AvailableMemory {
    let mut room = Machine::available_memory_now();
    room.bytes = match (room.bytes, &room.bound) {
        (0, MemoryBound::MemAvailable) => u64::MAX,
        (bytes, _) => bytes.saturating_sub(peak_kib * 1024 * 3 / 2),
    };
    room
}

/// A block starts only where the time left holds the longest block so far this many
/// times over.
const BLOCK_MARGIN: f64 = 1.25;

fn interrupted(termination: Termination) -> bool {
    matches!(termination, Termination::Signaled(s) if s == libc::SIGINT || s == libc::SIGQUIT)
}

/// The stop that says most: an interruption, else the time limit, else the others.
fn worse_stop(a: Stop, b: Stop) -> Stop {
    let rank = |s: Stop| match s {
        Stop::Interrupted => 3,
        Stop::TimeLimit => 2,
        Stop::Fixed => 1,
        Stop::Resolved => 0,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests;
