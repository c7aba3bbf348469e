//! The order of `advise`'s work: the machine's facts, the CPUs, a first run (the
//! program's normal exit status and its time), the profile (a recorded run, the binary's
//! footprint, counters where there is a PMU), the co-runner's calibration, then the
//! sequential design (`design`, on the trial engine): the screening arms (the program
//! alone, each resource's strongest arm and the controls of the co-runner's arms) in
//! shuffled blocks; after each block, an arm at a planned look whose paired interval lies
//! wholly within or beyond ±effect is decided and leaves the blocks, and a resource's
//! curve joins where its screening arm is decided beyond the effect.
//! The measuring ends when nothing is open, at the time limit, or after `--runs` blocks.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use super::arms::{self, ArmKind, ArmSpec, Resource};
#[cfg(test)]
use super::checks::held_share;
use super::design::{measure, screening_arms, FollowUps, Measured, ScreenSite};
use super::facts::MachineFacts;
use super::neighbours::{self, Wanted};
use super::profile::{self, ProgramProfile};
#[cfg(test)]
use super::results::{held_levels, resolved, system_time_modes, times};
use super::results::{results, PIRATE_SHARES};
use super::trial::{self, CoRunners, Setup};
use super::verdict;
use super::RunRecord;
use super::{AdvisePlan, AdviseResult, ArmResult, CoRunnerCalibration, CpuPlan, PirateSite};
use crate::counters::{topdown, Probe};
use crate::counting::{default_groups, Counting};
use crate::error::UsageError;
use crate::kernels::corunner::BURST_PERIOD;
use crate::pages::preload::{Preload, PreloadMode};
use crate::pages::record::{self, RecordPlan};
use crate::pages::sources::SourceChoice;
use crate::platform::child::{ProcessTree, SpawnOptions, STOP_GRACE};
use crate::platform::cleanup;
use crate::platform::exclusive::Exclusive;
use crate::platform::interleave_weights::WrittenWeights;
use crate::platform::page_placement::WEIGHTS_DIR;
use crate::session::progress::Progress;
use crate::topology::memory::{AvailableMemory, MemoryBound};
use crate::topology::{Machine, ThpMode};
use crate::trials::interrupted;

/// `--weights`: the program's node gets LOCAL, every other memory node FAR, written for
/// this run; the old weights come back when the guard drops (at advise's end).
fn written_weights(
    plan: &AdvisePlan,
    machine: &Machine,
    program_cpus: &[usize],
    memory_nodes: &[usize],
    notes: &mut Vec<String>,
) -> Result<Option<WrittenWeights>, UsageError> {
    let Some((local, far)) = plan.weights else {
        return Ok(None);
    };
    let refuse = |why: &str| Err(UsageError::CannotProceed(format!("--weights: {why}")));
    if !plan.resources.contains(&Resource::Placement) {
        return refuse("the weights are for the placement arms; --only leaves placement out");
    }
    if memory_nodes.len() < 2 {
        return refuse("one NUMA node with memory here: interleaving needs two or more");
    }
    let home = (program_cpus.first())
        .and_then(|cpu| machine.numa_nodes.iter().find(|n| n.cpus.contains(cpu)))
        .map(|n| n.id);
    let weights: Vec<(usize, u32)> = (memory_nodes.iter())
        .map(|&n| (n, if Some(n) == home { local } else { far }))
        .collect();
    let written = WrittenWeights::write(Path::new(WEIGHTS_DIR), &weights)
        .map_err(|e| UsageError::CannotProceed(format!("--weights: {e}")))?;
    notes.push(format!(
        "the weighted-interleave arm ran under weights {} written for this run (the old \
         ones were written back at its end)",
        written.describe()
    ));
    Ok(Some(written))
}

/// Runs advise: the first run, the profile, the co-runners and their checks, the
/// sequential design, the findings.
pub fn run(
    plan: &AdvisePlan,
    machine: &Machine,
    mut facts: MachineFacts,
) -> anyhow::Result<AdviseResult> {
    let started = Instant::now();
    let _alone_and_deferred = one_advise_at_a_time()?;
    let progress = progress_for(plan.show_output);
    let mut notes = Vec::new();
    let mut cpus = cpu_plan(machine, &facts, plan.co_runner_cpu);
    let memory_nodes = memory_nodes(machine);
    let _weights = written_weights(plan, machine, &cpus.program, &memory_nodes, &mut notes)?;
    let preload = Preload::create().ok();
    let (partitioning, cat_arms, mba_arms) = partitioning(&facts, &mut notes);
    let process_tree = std::cell::RefCell::new(ProcessTree::default());
    let mut setup = Setup {
        command: &plan.command,
        program_cpus: &cpus.program,
        all_cpus: &machine.allowed_cpus,
        memory_nodes: &memory_nodes,
        preload: preload.as_ref(),
        hot_ranges: &[],
        show_output: plan.show_output,
        partitioning: partitioning.as_ref(),
        deadline: Some(started + plan.time_limit),
        process_tree: &process_tree,
    };
    let first = first_run(&setup, plan, &progress, &mut notes)?;
    cpus.cpu_bound = first.cpu_bound();
    let (mut profile, hot_ranges) = profile_run(plan, machine, &cpus.program, &progress);
    setup.hot_ranges = &hot_ranges;
    let neighbours = co_runners_checked(
        (machine, &mut facts),
        &cpus,
        plan,
        !cat_arms.is_empty(),
        first.record.max_rss_kib,
        &progress,
        &mut notes,
    );
    cpus.pirate = neighbours.site;
    let calibration = neighbours.calibration.clone();
    // The screening arms, then the measuring: blocks of the arms still open.
    let offer = (
        preload.is_some(),
        memory_nodes.len(),
        !hot_ranges.is_empty(),
    );
    let (screening, follow) = design_inputs(
        plan,
        (machine, &cpus),
        &neighbours,
        (&cat_arms, &mba_arms),
        offer,
        &first,
        &mut notes,
    );
    let measured = measure(
        &setup,
        neighbours.co_runners(),
        &progress,
        plan,
        (screening.clone(), &follow),
        (first.one_run, first.normal_status, cpus.cpu_bound),
        started + plan.time_limit,
    );
    notes.extend(measured.error.clone());
    notes.extend(idle(neighbours.co_runners()));
    progress.finish();
    let (arms, findings, not_memory_bound) = conclude(
        plan,
        &measured,
        (&first, screening.len()),
        (&facts, &mut profile, &cpus),
        calibration.as_ref(),
        &mut notes,
    );
    Ok(AdviseResult {
        command: (plan.command.iter())
            .map(|w| w.to_string_lossy().into_owned())
            .collect(),
        facts,
        cpus,
        profile,
        calibration,
        arms,
        findings,
        not_memory_bound,
        normal_status: first.normal_status,
        blocks: measured.blocks,
        looks: measured.looks.count,
        effect_pct: plan.effect_pct,
        elapsed_s: started.elapsed().as_secs_f64(),
        time_limit_s: plan.time_limit.as_secs_f64(),
        stop: measured.stop,
        notes,
        process_tree: process_tree.into_inner(),
    })
}

/// Lines only where the program's own output shares the terminal (a bar would tear).
fn progress_for(show_output: bool) -> Progress {
    match show_output {
        true => Progress::lines_when_not_terminal(),
        false => Progress::for_stderr(),
    }
}

/// The nodes with memory.
fn memory_nodes(machine: &Machine) -> Vec<usize> {
    machine
        .numa_nodes
        .iter()
        .filter(|n| n.memory_total_bytes > 0)
        .map(|n| n.id)
        .collect()
}

/// resctrl's cache and bandwidth partitioning where it can be had (else why not, noted),
/// with its cache (CAT) and bandwidth (MBA) arms.
fn partitioning(
    facts: &MachineFacts,
    notes: &mut Vec<String>,
) -> (Option<trial::Partitioning>, Vec<ArmSpec>, Vec<ArmSpec>) {
    match trial::Partitioning::detect(facts.llc_bytes) {
        Ok(p) => {
            notes.push(p.note());
            let (cat, mba) = (p.cat_arms(), p.mba_arms());
            (Some(p), cat, mba)
        }
        Err(why) => {
            notes.push(why);
            (None, Vec::new(), Vec::new())
        }
    }
}

/// The screening arms and what decides the follow-ups, from what the machine, the
/// co-runners' checks and the first run offer.
fn design_inputs<'a>(
    plan: &AdvisePlan,
    (machine, cpus): (&Machine, &CpuPlan),
    neighbours: &'a neighbours::Neighbours,
    (cat_arms, mba_arms): (&'a [ArmSpec], &'a [ArmSpec]),
    (preload, memory_nodes, hot_ranges): (bool, usize, bool),
    first: &FirstRun,
    notes: &mut Vec<String>,
) -> (Vec<ArmSpec>, FollowUps<'a>) {
    let screen = ScreenSite {
        with_co: neighbours.beside.is_some(),
        pirate: cpus.pirate,
        pirate_levels: &neighbours.levels,
        cat_arms,
        mba_arms,
        thp: machine.thp.enabled,
        preload,
        glibc: arms::glibc_version(),
        memory_nodes,
        weighted_interleave: machine.memory_tiering.weighted_interleave.is_some(),
        parallel: first.cpu_s > 1.2 * first.one_run,
    };
    let (screening, screen_notes) = screening_arms(&screen, &|r| plan.resources.contains(&r));
    notes.extend(screen_notes);
    notes.extend(sibling_note(screen.with_co, cpus.smt_sibling));
    let follow = FollowUps {
        pirate_levels: &neighbours.levels,
        bandit_max: (neighbours.calibration.as_ref())
            .map(|c| c.bandit_max_bytes_per_s)
            .filter(|m| *m > 0.0),
        cat_arms,
        mba_arms,
        hot_ranges,
        malloc_hugetlb: machine.thp.enabled != ThpMode::Never
            && arms::glibc_version().is_some_and(|v| v >= (2, 35)),
        effect_pct: plan.effect_pct,
    };
    (screening, follow)
}

/// The co-runners started and checked (the pirate's sets, the bandit's rates) and where
/// the pirate sits.
fn co_runners_checked(
    (machine, facts): (&Machine, &mut MachineFacts),
    cpus: &CpuPlan,
    plan: &AdvisePlan,
    cache_partitioned: bool,
    first_rss_kib: u64,
    progress: &Progress,
    notes: &mut Vec<String>,
) -> neighbours::Neighbours {
    let wants = |r: Resource| plan.resources.contains(&r);
    progress.start("advise: the co-runners' own checks", 1);
    let pirate_sizes = pirate_sizes(facts, notes);
    let neighbours = neighbours::start(
        machine,
        facts,
        cpus,
        &pirate_sizes,
        Wanted {
            cache: wants(Resource::Cache) && !cache_partitioned,
            bandwidth: wants(Resource::Bandwidth),
            room: room_beside(first_rss_kib),
        },
    );
    progress.advance();
    notes.extend(neighbours.notes.iter().cloned());
    if cpus.co_runner.is_none() && wants(Resource::Bandwidth) {
        notes.push("only one CPU is available to memscope: no bandwidth bandit runs".to_string());
    }
    neighbours
}

/// What a co-runner that is no SMT sibling leaves unmeasured.
fn sibling_note(with_co: bool, smt_sibling: bool) -> Option<String> {
    (with_co && !smt_sibling).then(|| {
        "the co-runner's CPU is no SMT sibling of the program's: a busy sibling is not \
         measured (the compute neighbour shows what a busy CPU next to it costs)"
            .to_string()
    })
}

/// The machine-wide claim that this is the one advise running (two at once would each
/// take the other's co-runner for the program's), and Ctrl-C deferred: it ends the
/// measuring and advise reports what it has (a second one exits at once).
fn one_advise_at_a_time() -> Result<(Exclusive, cleanup::DeferredInterrupt), UsageError> {
    let alone = Exclusive::take("advise").map_err(|pid| {
        UsageError::CannotProceed(format!(
            "another memscope advise is running on this machine{}: its co-runners would \
             disturb this one's runs and this one's its; run one at a time",
            if pid > 0 {
                format!(" (pid {pid})")
            } else {
                String::new()
            }
        ))
    })?;
    Ok((alone, cleanup::defer_interrupt()))
}

/// What the first run told: the record, the status every run must end with, its time.
struct FirstRun {
    record: RunRecord,
    normal_status: i32,
    /// Its wall time (s).
    one_run: f64,
    /// Its CPU time, user and system (s).
    cpu_s: f64,
}

impl FirstRun {
    /// Whether the program keeps one CPU busy (its CPU time within 20% of its wall time).
    fn cpu_bound(&self) -> bool {
        (0.8 * self.one_run..=1.2 * self.one_run).contains(&self.cpu_s)
    }
}

/// The first run: does the program start, how does it end, how long does it take.
fn first_run(
    setup: &Setup,
    plan: &AdvisePlan,
    progress: &Progress,
    notes: &mut Vec<String>,
) -> anyhow::Result<FirstRun> {
    progress.start("advise: first run", 1);
    let first = trial::run(
        setup,
        &ArmSpec::new(ArmKind::Alone),
        CoRunners::default(),
        0,
        0,
    )?;
    progress.advance();
    let normal_status = first_run_status(&first.record, plan.time_limit, notes)?;
    Ok(FirstRun {
        one_run: first.record.elapsed_s.max(1e-3),
        cpu_s: first.record.user_s + first.record.system_s,
        normal_status,
        record: first.record,
    })
}

/// The profile: a recorded run (its hot regions' address ranges too), the binary's
/// footprint, counters where there is a PMU.
fn profile_run(
    plan: &AdvisePlan,
    machine: &Machine,
    program_cpus: &[usize],
    progress: &Progress,
) -> (ProgramProfile, Vec<(u64, u64)>) {
    progress.start("advise: recording the program's accesses", 1);
    let (mut profile, hot_ranges) = record_profile(plan);
    progress.advance();
    if let Some(program) = plan.command.first() {
        profile.footprint = profile::footprint(&program.to_string_lossy(), machine);
    }
    count(&mut profile, &plan.command, program_cpus, machine);
    (profile, hot_ranges)
}

/// The cache pirate's sets, shares of the LLC; none where the LLC's size is unknown.
fn pirate_sizes(facts: &MachineFacts, notes: &mut Vec<String>) -> Vec<u64> {
    match facts.llc_share_bytes() {
        Some(share) => PIRATE_SHARES
            .iter()
            .map(|s| (share as f64 * s) as u64)
            .collect(),
        None => {
            notes
                .push("the last-level cache's size is not known here: no cache pirate runs".into());
            Vec::new()
        }
    }
}

/// The program's runs alone that ended normally (the profile's figures come from them).
fn alone_runs(arms: &[ArmResult], normal_status: i32) -> Vec<&RunRecord> {
    arms.iter()
        .filter(|a| a.kind == ArmKind::Alone)
        .flat_map(|a| &a.runs)
        .filter(|r| r.termination.shell_status() == normal_status)
        .collect()
}

/// What the runs add up to: each arm's result (the arms after the screening's are
/// follow-ups), the profile's figures from the runs alone, and the findings, most
/// important first, with the resources `--only` left out marked so; the notes on the CPUs
/// and the budget.
fn conclude(
    plan: &AdvisePlan,
    measured: &Measured,
    (first, screening): (&FirstRun, usize),
    (facts, profile, cpus): (&MachineFacts, &mut ProgramProfile, &CpuPlan),
    calibration: Option<&CoRunnerCalibration>,
    notes: &mut Vec<String>,
) -> (Vec<ArmResult>, Vec<verdict::Finding>, bool) {
    let mut arms = results(
        &measured.arms,
        &measured.runs,
        (first.normal_status, cpus.cpu_bound),
        facts,
        calibration,
        (measured.looks, plan.effect_pct),
    );
    arms.iter_mut().skip(screening).for_each(|a| a.stage = 2);
    profile::add_runs(profile, &alone_runs(&arms, first.normal_status));
    notes.extend(verdict::cpus_note(&arms, plan.effect_pct));
    let budget = verdict::budget_note(measured.stop, plan.time_limit, first.one_run, screening);
    notes.extend(budget);
    let (mut findings, not_memory_bound) = verdict::findings(
        &arms,
        facts,
        profile,
        cpus,
        calibration,
        plan.effect_pct,
        &plan.command,
    );
    for f in findings.iter_mut() {
        if f.resource != Resource::Control && !plan.resources.contains(&f.resource) {
            *f = verdict::Finding::not_measured(f.resource, "not asked for (--only)");
        }
    }
    (arms, findings, not_memory_bound)
}

/// The co-runners idle after the measuring; what the one in turns could not have, said.
fn idle(co_runners: CoRunners) -> Option<String> {
    for c in [co_runners.beside, co_runners.in_turns]
        .into_iter()
        .flatten()
    {
        c.set(crate::kernels::corunner::Load::Idle);
    }
    let t = co_runners
        .in_turns
        .filter(|t| t.bursts_realtime() == Some(false))?;
    Some(format!(
        "the co-runner in turns on CPU {} could not take real-time priority (SCHED_FIFO \
         needs root or CAP_SYS_NICE): the scheduler placed its bursts, so some of the \
         program's turns were longer than {} ms",
        t.cpu(),
        BURST_PERIOD.as_millis()
    ))
}

/// The first run's end as the normal status of every run; an error where it was stopped
/// at the time limit or interrupted (nothing to measure against).
fn first_run_status(
    first: &RunRecord,
    limit: Duration,
    notes: &mut Vec<String>,
) -> Result<i32, UsageError> {
    if first.stopped {
        return Err(UsageError::CannotProceed(format!(
            "the program's first run was still running at the time limit ({}) and was \
             stopped with its descendants (SIGTERM, then SIGKILL after {} s): give a larger \
             --time-limit, or a command that ends",
            humantime::format_duration(limit),
            STOP_GRACE.as_secs()
        )));
    }
    if interrupted(first.termination) {
        return Err(UsageError::CannotProceed(
            "interrupted (Ctrl-C) in the first run".into(),
        ));
    }
    let normal = first.termination.shell_status();
    if normal != 0 {
        notes.push(format!(
            "the program ended with status {normal} in its first run: taken as its normal \
             status (a run that ends otherwise is a failed run)"
        ));
    }
    Ok(normal)
}

/// One recorded run: the program's anonymous memory and hot regions (their address
/// ranges, for the huge pages of the hot regions), or why not.
fn record_profile(plan: &AdvisePlan) -> (ProgramProfile, Vec<(u64, u64)>) {
    let mut profile = ProgramProfile::default();
    let record_plan = RecordPlan {
        top: record::Top::Count(profile::HOT_REGIONS),
        source: SourceChoice::Auto,
        interval: Duration::from_millis(100),
        adaptive: true,
        capture: !plan.show_output,
        membind: None,
        command: plan.command.clone(),
    };
    let no_huge = PreloadMode {
        split: true,
        no_huge: false,
        huge: None,
        hugetlb: false,
    };
    let hot_ranges = match record::record(&record_plan, &no_huge) {
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
    (profile, hot_ranges)
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
            cpu_bound: false,
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
        cpu_bound: false,
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

#[cfg(test)]
mod tests;
