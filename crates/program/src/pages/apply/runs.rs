//! `pages apply`'s timed runs: one arm at a time, the warm-up block and the `--repeat`
//! interleaved blocks on the trial engine, and what the runs teach on the way.

use super::*;

/// Runs one arm at a time, keeping what the runs teach: the exit status that counts as a
/// success, why the dTLB counters could not count, every process the program started.
struct ArmRunner<'a> {
    plan: &'a ApplyPlan,
    top: usize,
    ranges: &'a [(u64, u64)],
    progress: &'a Progress,
    preload: Preload,
    probe: Probe,
    dtlb_groups: Vec<Vec<Event>>,
    ok_status: Option<OkStatus>,
    failure_shown: bool,
    dtlb_refusal: Option<String>,
    process_tree: ProcessTree,
    notes: &'a mut Vec<ApplyNote>,
}

impl ArmRunner<'_> {
    /// One run of arm number `arm` in `block` (0: the warm-up), `order`-th of the session.
    fn run(
        &mut self,
        arm: usize,
        block: usize,
        order: usize,
    ) -> Result<(ArmRun, Ended), RecordError> {
        let (plan, top) = (self.plan, self.top);
        let arm = Arm::ALL[arm];
        self.progress.message(&match block {
            0 => format!("warm-up, {}", arm.label(top)),
            _ => format!("block {block}, {}", arm.label(top)),
        });
        let capture = Capture::new(plan.record.capture).map_err(RecordError::Capture)?;
        let options = capture.options(SpawnOptions {
            env: self.preload.env(&mode_of(arm, self.ranges, plan.hugetlb)),
            inherit: Some(self.preload.inherit()),
            placement: plan.record.placement(),
            no_aslr: true,
            ..SpawnOptions::default()
        });
        let (finished, sampled, dtlb, refusal) = run_sampled(
            &plan.record.command,
            &options,
            self.ranges,
            &self.probe,
            &self.dtlb_groups,
        )?;
        self.process_tree.add(&finished);
        if let Some(why) = refusal {
            self.dtlb_refusal.get_or_insert(why);
        }
        let ended = Ended::of(finished.termination, finished.stopped);
        if block == 0 && ended == Ended::Done {
            if self.ok_status.is_none() {
                self.ok_status = OkStatus::of_first_run(finished.termination);
            }
            // A run the timed blocks would count as failed: stop before making them.
            if !self
                .ok_status
                .is_some_and(|ok| ok.accepts(finished.termination))
            {
                return Err(RecordError::WarmUp {
                    arm: arm.label(top),
                    termination: finished.termination,
                    accepted: self
                        .ok_status
                        .map_or("an exit, not a death by a signal".to_string(), |ok| {
                            ok.to_string()
                        }),
                    stderr_tail: capture.stderr_tail(TAIL_LINES),
                });
            }
        }
        let ok = self.ok_status.unwrap_or_default();
        if block > 0
            && ended == Ended::Done
            && !ok.accepts(finished.termination)
            && !self.failure_shown
        {
            self.failure_shown = true;
            self.notes.push(ApplyNote::FailedRun {
                arm: arm.label(top),
                block,
                termination: finished.termination,
                accepted: ok.to_string(),
                stderr_tail: capture.stderr_tail(TAIL_LINES),
            });
        }
        let run = ArmRun {
            order,
            block,
            elapsed_s: finished.elapsed.as_secs_f64(),
            user_s: finished.user.as_secs_f64(),
            system_s: finished.system.as_secs_f64(),
            termination: finished.termination,
            huge_kb: sampled.peak_all_kb,
            huge_in_regions_kb: sampled.peak_inside_kb,
            huge_in_regions_mean_kb: sampled.mean_inside_kb,
            dtlb,
        };
        Ok((run, ended))
    }
}

/// The warm-up block (each arm once, untimed) and `--repeat` timed blocks of the three arms
/// in a shuffled order.
pub(super) fn run_blocks(
    plan: &ApplyPlan,
    top: usize,
    ranges: &[(u64, u64)],
    progress: &Progress,
    notes: &mut Vec<ApplyNote>,
) -> Result<Timed, RecordError> {
    let mut runner = ArmRunner {
        plan,
        top,
        ranges,
        progress,
        preload: Preload::create().map_err(RecordError::Preload)?,
        probe: Probe::detect(),
        dtlb_groups: vec![DTLB_EVENTS
            .iter()
            .map(|n| Event::parse(n).expect("built-in event names parse"))
            .collect()],
        ok_status: plan.ok_status,
        failure_shown: false,
        dtlb_refusal: None,
        process_tree: ProcessTree::default(),
        notes,
    };
    progress.start(
        "pages apply: runs",
        ((plan.repeat + 1) * Arm::ALL.len()) as u64,
    );
    let mut run = |arm: usize, block: usize, order: usize| runner.run(arm, block, order);
    // Block 0 warms up (each arm once, untimed): the program's files are cached and the
    // kernel has handed out huge pages once before the timed blocks. The 4 KiB run
    // first: its exit status is the program's normal one when the user gave none.
    let mut blocks: Blocks<ArmRun> = Blocks::new(Arm::ALL.len());
    let mut stop = blocks.block(0, &[0], progress, &mut run)?;
    if stop.is_none() {
        stop = blocks.block(0, &[1, 2], progress, &mut run)?;
    }
    let warm_up_interrupted = stop.is_some();
    let stop = match stop {
        Some(_) => Stop::Interrupted,
        None => blocks.run(
            &Design {
                fixed: Some(plan.repeat),
                max_blocks: plan.repeat,
                until: Instant::now(),
                min_blocks: plan.repeat,
            },
            progress,
            |_| Duration::ZERO,
            |_| Ok(Next::Run(vec![0, 1, 2])),
            &mut run,
        )?,
    };
    if warm_up_interrupted {
        runner.notes.push(ApplyNote::WarmUpInterrupted);
    } else if stop == Stop::Interrupted {
        runner.notes.push(ApplyNote::Interrupted {
            blocks: blocks.blocks,
            planned: plan.repeat,
        });
    }
    Ok(timed(runner, blocks, stop))
}

/// The timed runs, numbered in their order (the warm-up's not counted), and what the runner
/// learnt.
fn timed(runner: ArmRunner, blocks: Blocks<ArmRun>, stop: Stop) -> Timed {
    let runs = blocks
        .trials
        .into_iter()
        .filter(|t| t.block > 0)
        .enumerate()
        .map(|(order, t)| (Arm::ALL[t.arm], ArmRun { order, ..t.run }))
        .collect();
    let dtlb_not_counted = if runner.probe.has_hardware_pmu() {
        runner.dtlb_refusal
    } else {
        Some("no hardware PMU (e.g. a VM without PMU passthrough)".to_string())
    };
    Timed {
        runs,
        stop,
        ok_status: runner.ok_status,
        dtlb_not_counted,
        process_tree: runner.process_tree,
    }
}
