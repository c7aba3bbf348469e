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
use super::design::{measure, screening_arms, FollowUps, ScreenSite};
use super::facts::MachineFacts;
use super::neighbours::{self, Wanted};
use super::profile::{self, ProgramProfile};
#[cfg(test)]
use super::results::{held_levels, resolved, system_time_modes, times};
use super::results::{results, PIRATE_SHARES};
use super::trial::{self, CoRunners, Setup};
use super::verdict;
use super::RunRecord;
use super::{AdvisePlan, AdviseResult, CpuPlan, PirateSite};
use crate::counters::{topdown, Probe};
use crate::counting::{default_groups, Counting};
use crate::error::UsageError;
use crate::kernels::corunner::BURST_PERIOD;
use crate::pages::preload::{Preload, PreloadMode};
use crate::pages::record::{self, RecordPlan};
use crate::pages::sources::SourceChoice;
use crate::platform::child::{ProcessTree, SpawnOptions, STOP_GRACE};
use crate::platform::cleanup;
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

/// Runs advise.
pub fn run(
    plan: &AdvisePlan,
    machine: &Machine,
    facts: MachineFacts,
) -> anyhow::Result<AdviseResult> {
    let started = Instant::now();
    let deadline = started + plan.time_limit;
    // Two advise runs at once would each take the other's co-runner for the program's.
    let _alone = crate::platform::exclusive::Exclusive::take("advise").map_err(|pid| {
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
    let _weights = written_weights(plan, machine, &cpus.program, &memory_nodes, &mut notes)?;
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
    let normal_status = first_run_status(&first.record, plan.time_limit, &mut notes)?;
    let one_run = first.record.elapsed_s.max(1e-3);
    let first_cpu_s = first.record.user_s + first.record.system_s;
    cpus.cpu_bound = (0.8 * one_run..=1.2 * one_run).contains(&first_cpu_s);

    // The profile.
    progress.start("advise: recording the program's accesses", 1);
    let (mut profile, hot_ranges) = record_profile(plan);
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

    // The screening arms, then the measuring: blocks of the arms still open.
    let with_co = co_runners.beside.is_some();
    let screen = ScreenSite {
        with_co,
        pirate: cpus.pirate,
        pirate_levels: &pirate_levels,
        cat_arms: &cat_arms,
        mba_arms: &mba_arms,
        thp: machine.thp.enabled,
        preload: preload.is_some(),
        glibc: arms::glibc_version(),
        memory_nodes: memory_nodes.len(),
        weighted_interleave: machine.memory_tiering.weighted_interleave.is_some(),
        parallel: first_cpu_s > 1.2 * one_run,
    };
    let (screening, screen_notes) = screening_arms(&screen, &wants);
    notes.extend(screen_notes);
    if with_co && !cpus.smt_sibling {
        notes.push(
            "the co-runner's CPU is no SMT sibling of the program's: a busy sibling is not \
             measured (the compute neighbour shows what a busy CPU next to it costs)"
                .to_string(),
        );
    }
    let follow = FollowUps {
        pirate_levels: &pirate_levels,
        bandit_max: calibration
            .as_ref()
            .map(|c| c.bandit_max_bytes_per_s)
            .filter(|m| *m > 0.0),
        cat_arms: &cat_arms,
        mba_arms: &mba_arms,
        hot_ranges: !hot_ranges.is_empty(),
        malloc_hugetlb: machine.thp.enabled != ThpMode::Never
            && arms::glibc_version().is_some_and(|v| v >= (2, 35)),
        effect_pct: plan.effect_pct,
    };
    let measured = measure(
        &setup,
        co_runners,
        &progress,
        plan,
        (screening.clone(), &follow),
        (one_run, normal_status, cpus.cpu_bound),
        deadline,
    );
    notes.extend(measured.error.clone());
    let stop = measured.stop;
    let blocks = measured.blocks;
    let mut arms = results(
        &measured.arms,
        &measured.runs,
        (normal_status, cpus.cpu_bound),
        &facts,
        calibration.as_ref(),
        (measured.looks, plan.effect_pct),
    );
    for a in arms.iter_mut().skip(screening.len()) {
        a.stage = 2;
    }
    notes.extend(idle(co_runners));
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
    notes.extend(verdict::cpus_note(&arms, plan.effect_pct));
    notes.extend(verdict::budget_note(
        stop,
        plan.time_limit,
        one_run,
        screening.len(),
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
        looks: measured.looks.count,
        effect_pct: plan.effect_pct,
        elapsed_s: started.elapsed().as_secs_f64(),
        time_limit_s: plan.time_limit.as_secs_f64(),
        stop,
        notes,
        process_tree: process_tree.into_inner(),
    })
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
