//! What runs when, on the trial engine (`trials`): warm-up blocks, then measured blocks,
//! each running every benchmark × variant once in a shuffled order, so the machine's
//! drift falls on every variant alike. The first run of each benchmark × variant must
//! succeed and the metrics must be found in the output, else the sweep stops with the
//! command's output (it is the user's to fix). With the adaptive default, blocks continue
//! while a median's interval is wider than ±effect/2, within the time limit. Ctrl-C in a
//! run ends the sweep with the blocks completed before it.

use std::time::{Duration, Instant};

use super::analysis::{self, Cell, SweepNote};
use super::runner::{self, Outcome, Prepared};
use super::variants::{tail, Built};
use super::{Better, Measure, Schedule, SweepError, SweepPlan, SweepResult, SweepRun};
use crate::counters::{Probe, Reading};
use crate::counting::{self, Counting, CountingNote};
use crate::platform::child::ProcessTree;
use crate::session::progress::Progress;
use crate::topology::Machine;
use crate::trials::{Blocks, Design, Ended, Next};

/// The fewest measured blocks the adaptive schedule runs: a 95% interval of a median
/// needs 6 runs.
const FEWEST_BLOCKS: usize = 6;

/// Runs the warm-up and measured blocks and analyses them.
pub fn measure(
    plan: &SweepPlan,
    machine: &Machine,
    probe: &Probe,
    built: &Built,
) -> Result<SweepResult, SweepError> {
    let counting = Counting::new(&counting::default_groups(), probe);
    let line_bytes = machine.line_bytes();
    let (nb, nv) = (plan.benchmarks.len(), plan.variants.len());
    let prepared = prepare_all(plan, built)?;
    let measures = measures(plan);
    let runner = std::cell::RefCell::new(Runner {
        plan,
        probe,
        counting: &counting,
        prepared: &prepared,
        checked: vec![false; nb * nv],
        matched: vec![vec![false; plan.metrics.len()]; nb],
        process_tree: ProcessTree::default(),
    });
    let progress = Progress::for_stderr();
    let pairs: Vec<usize> = (0..nb * nv).collect();
    let mut blocks: Blocks<Ran> = Blocks::new(pairs.len());
    let mut notes = Vec::new();
    for w in 0..plan.warmup {
        built.check_in_place()?;
        let label = format!("warm-up {}/{}", w + 1, plan.warmup);
        progress.start(&label, pairs.len() as u64);
        let mut run = |p, _, _| runner.borrow_mut().run(p);
        if blocks.block(0, &pairs, &progress, &mut run)?.is_some() {
            return Err(SweepError("interrupted (Ctrl-C) during the warm-up".into()));
        }
    }
    if plan.warmup > 0 {
        notes.extend(runner.borrow().check_metrics(&blocks)?);
    }
    let started = Instant::now();
    let design = design_of(plan.schedule, started);
    let mut checked_metrics = plan.warmup > 0;
    let stop = blocks.run(
        &design,
        &progress,
        |_| Duration::ZERO,
        |b| {
            built.check_in_place()?;
            if !checked_metrics && b.blocks == 1 {
                checked_metrics = true;
                notes.extend(runner.borrow().check_metrics(b)?);
            }
            progress.start(
                &match plan.schedule {
                    Schedule::Fixed(n) => format!("block {}/{n}", b.blocks + 1),
                    Schedule::Adaptive { .. } => format!("block {}", b.blocks + 1),
                },
                pairs.len() as u64,
            );
            Ok(match settled(plan, b, &measures) {
                true => Next::Run(Vec::new()),
                false => Next::Run(pairs.clone()),
            })
        },
        |p, _, _| runner.borrow_mut().run(p),
    )?;
    if !checked_metrics && blocks.blocks >= 1 {
        notes.extend(runner.borrow().check_metrics(&blocks)?);
    }
    progress.finish();
    let measured_s = started.elapsed().as_secs_f64();
    let (runs, readings) = sweep_runs(blocks, nv);
    let cells = cells(
        plan, &runs, &readings, &counting, &measures, line_bytes, &mut notes,
    );
    let result = SweepResult {
        parameters: plan.parameters.clone(),
        variants: built.variants.iter().map(|v| v.info.clone()).collect(),
        baseline: plan.baseline,
        benchmarks: plan.benchmarks.clone(),
        build: plan.build.clone(),
        measures,
        events: counting.events.iter().map(|e| e.name.clone()).collect(),
        warmup_blocks: plan.warmup,
        blocks: runs.iter().map(|r| r.block).max().unwrap_or(0),
        stop,
        effect_pct: plan.effect_pct,
        measured_s,
        runs,
        cells,
        notes,
        process_tree: runner.into_inner().process_tree,
    };
    Ok(analysis::with_notes(result))
}

/// Each benchmark × variant made ready to run.
fn prepare_all(plan: &SweepPlan, built: &Built) -> Result<Vec<Vec<Prepared>>, SweepError> {
    (plan.benchmarks.iter())
        .map(|b| {
            (built.variants.iter())
                .map(|v| runner::prepare(plan, b, v))
                .collect()
        })
        .collect()
}

/// The engine's design for the schedule: exactly `n` blocks, or adaptive between the
/// fewest that can give an interval and the most, within the time limit from `started`.
fn design_of(schedule: Schedule, started: Instant) -> Design {
    match schedule {
        Schedule::Fixed(n) => Design {
            fixed: Some(n),
            max_blocks: n,
            until: started,
            min_blocks: n,
        },
        Schedule::Adaptive {
            min_blocks,
            max_blocks,
            time_limit,
        } => Design {
            fixed: None,
            max_blocks,
            until: started + time_limit,
            min_blocks: min_blocks.min(FEWEST_BLOCKS),
        },
    }
}

/// One run as the engine keeps it: what `SweepRun` holds but its place, and the counters'
/// readings (for refusal reasons and multiplexing).
struct Ran {
    run: SweepRun,
    readings: Vec<Reading>,
}

/// The engine's runs as the sweep keeps them: each with its block and its position in
/// it, and the readings beside them in the same order.
fn sweep_runs(blocks: Blocks<Ran>, nv: usize) -> (Vec<SweepRun>, Vec<Vec<Reading>>) {
    let mut position = std::collections::HashMap::new();
    blocks
        .trials
        .into_iter()
        .map(|t| {
            let at = position.entry(t.block).or_insert(0usize);
            let mut run = t.run.run;
            run.block = t.block;
            run.order = *at;
            run.benchmark = t.arm / nv;
            run.variant = t.arm % nv;
            *at += 1;
            (run, t.run.readings)
        })
        .unzip()
}

/// The wall time, then each metric.
fn measures(plan: &SweepPlan) -> Vec<Measure> {
    let mut measures = vec![Measure {
        label: "wall time".to_string(),
        unit: "s".to_string(),
        better: Better::Lower,
        source: "wall clock, from the exec to the exit".to_string(),
    }];
    measures.extend(plan.metrics.iter().map(|m| Measure {
        label: m.label.clone(),
        unit: String::new(),
        better: m.better,
        source: format!(
            "output /{}/{}",
            m.pattern,
            if m.better_inferred {
                " (direction guessed: name it LABEL:higher or LABEL:lower)"
            } else {
                ""
            }
        ),
    }));
    measures
}

/// What runs one benchmark × variant and checks its first runs.
struct Runner<'a> {
    plan: &'a SweepPlan,
    probe: &'a Probe,
    counting: &'a Counting,
    prepared: &'a [Vec<Prepared>],
    /// Per benchmark × variant: its first run succeeded.
    checked: Vec<bool>,
    /// Per benchmark and metric: found in some run's output.
    matched: Vec<Vec<bool>>,
    process_tree: ProcessTree,
}

impl Runner<'_> {
    /// Runs benchmark × variant `pair` once.
    fn run(&mut self, pair: usize) -> Result<(Ran, Ended), SweepError> {
        let nv = self.plan.variants.len();
        let (benchmark, variant) = (pair / nv, pair % nv);
        let what = || {
            format!(
                "benchmark '{}' on variant {}",
                self.plan.benchmarks[benchmark].name,
                self.plan.variants[variant].label()
            )
        };
        let outcome = runner::run_once(
            &self.prepared[benchmark][variant],
            self.counting,
            self.probe,
        )
        .map_err(|e| e.into_sweep_error(&format!("{} cannot run", what())))?;
        let finished = outcome.counted.finished;
        let termination = finished.termination;
        let ended = Ended::of(termination, finished.stopped);
        if ended == Ended::Done && !self.checked[pair] {
            if !termination.success() {
                return Err(self.failure(benchmark, variant, &outcome, &what()));
            }
            self.checked[pair] = true;
        }
        let metrics: Vec<Option<f64>> = self
            .plan
            .metrics
            .iter()
            .map(|m| runner::read_metric(m, &outcome.stdout, &outcome.stderr))
            .collect();
        for (i, v) in metrics.iter().enumerate() {
            self.matched[benchmark][i] |= v.is_some();
        }
        self.process_tree.add(&finished);
        let run = SweepRun {
            block: 0,
            order: 0,
            benchmark,
            variant,
            elapsed_s: finished.elapsed.as_secs_f64(),
            user_s: finished.user.as_secs_f64(),
            system_s: finished.system.as_secs_f64(),
            max_rss_kib: finished.max_rss_kib,
            termination,
            metrics,
            counts: outcome.counted.counts,
        };
        let readings = outcome.counted.readings;
        Ok((Ran { run, readings }, ended))
    }

    /// A benchmark's first run failed: its status and output.
    fn failure(
        &self,
        benchmark: usize,
        variant: usize,
        outcome: &Outcome,
        what: &str,
    ) -> SweepError {
        let command: Vec<String> = self.prepared[benchmark][variant]
            .command
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        SweepError(format!(
            "{what} ended with {} on its first run; a sweep needs benchmarks that succeed. \
             Command: {}{}{}",
            outcome.counted.finished.termination,
            command.join(" "),
            tail("stderr", &outcome.stderr, 20),
            tail("stdout", &outcome.stdout, 10)
        ))
    }

    /// After the first round: a metric found in no benchmark's output is an error; one
    /// missing from some benchmarks is a note.
    fn check_metrics(&self, blocks: &Blocks<Ran>) -> Result<Vec<SweepNote>, SweepError> {
        let mut notes = Vec::new();
        for (i, metric) in self.plan.metrics.iter().enumerate() {
            let found: Vec<bool> = self.matched.iter().map(|m| m[i]).collect();
            if !found.iter().any(|f| *f) {
                let nv = self.plan.variants.len();
                let sample = blocks
                    .trials
                    .first()
                    .map(|t| self.plan.benchmarks[t.arm / nv].name.clone())
                    .unwrap_or_default();
                return Err(SweepError(format!(
                    "invalid value '{}={}' for --metric: expected a regular expression that \
                     matches the benchmarks' standard output or error, with its capture group around a \
                     number; it matched no output of any benchmark (e.g. '{sample}')",
                    metric.label, metric.pattern
                )));
            }
            for (b, found) in found.iter().enumerate() {
                if !found {
                    notes.push(SweepNote::MetricMissing {
                        metric: metric.label.clone(),
                        benchmark: self.plan.benchmarks[b].name.clone(),
                    });
                }
            }
        }
        Ok(notes)
    }
}

/// Whether the adaptive schedule has what it needs after the blocks so far: at least its
/// fewest blocks, and every cell settled — its median known to ±effect/2, or already
/// differing significantly from the baseline by more than the effect looked for (more
/// runs would only sharpen a figure whose verdict is clear).
fn settled(plan: &SweepPlan, blocks: &Blocks<Ran>, measures: &[Measure]) -> bool {
    let min_blocks = match plan.schedule {
        Schedule::Fixed(_) => return false,
        Schedule::Adaptive { min_blocks, .. } => min_blocks,
    };
    if blocks.blocks < min_blocks.max(1) {
        return false;
    }
    let m = analysis::primary(measures);
    let nv = plan.variants.len();
    let cell =
        |pair: usize| -> Vec<SweepRun> { blocks.of_arm(pair).map(|t| t.run.run.clone()).collect() };
    (0..plan.benchmarks.len() * nv).all(|pair| {
        let (benchmark, variant) = (pair / nv, pair % nv);
        let own_runs = cell(pair);
        let base_runs = cell(benchmark * nv + plan.baseline);
        let ok = |runs: &[SweepRun]| -> Vec<f64> {
            let ok: Vec<&SweepRun> = runs.iter().filter(|r| r.termination.success()).collect();
            analysis::values(&ok, m)
        };
        let (own, base) = (ok(&own_runs), ok(&base_runs));
        let alone = analysis::compare(&own, &[], Better::Lower, true);
        let against = analysis::compare(&own, &base, Better::Lower, variant == plan.baseline);
        let clear = matches!(
            against.verdict,
            analysis::Verdict::Better | analysis::Verdict::Worse
        ) && against
            .change_pct
            .is_some_and(|c| c.abs() > plan.effect_pct)
            && against.p.is_some_and(|p| p < analysis::ALPHA / 10.0);
        alone.verdict == analysis::Verdict::NoData
            || analysis::resolved(&alone, plan.effect_pct / 2.0)
            || clear
    })
}

/// Every benchmark × variant's statistics and counters.
fn cells(
    plan: &SweepPlan,
    runs: &[SweepRun],
    readings: &[Vec<Reading>],
    counting: &Counting,
    measures: &[Measure],
    line_bytes: u64,
    notes: &mut Vec<SweepNote>,
) -> Vec<Cell> {
    let nv = plan.variants.len();
    let mut cells = Vec::new();
    for benchmark in 0..plan.benchmarks.len() {
        let base = analysis::cell_runs(runs, benchmark, plan.baseline);
        for variant in 0..nv {
            // The measured runs of this cell, by index (the readings are kept beside the
            // runs, in the same order).
            let mine: Vec<usize> = (0..runs.len())
                .filter(|&i| {
                    let r = &runs[i];
                    r.block > 0 && r.benchmark == benchmark && r.variant == variant
                })
                .collect();
            let (own_indices, failed): (Vec<usize>, Vec<usize>) = mine
                .into_iter()
                .partition(|&i| runs[i].termination.success());
            let own: Vec<&SweepRun> = own_indices.iter().map(|&i| &runs[i]).collect();
            let failures = crate::view::format::distinct(
                failed.iter().map(|&i| runs[i].termination.to_string()),
            );
            let stat_runs: Vec<counting::RunRecord> = own_indices
                .iter()
                .map(|&i| {
                    let r = &runs[i];
                    counting::RunRecord {
                        elapsed_s: r.elapsed_s,
                        user_s: r.user_s,
                        system_s: r.system_s,
                        termination: r.termination,
                        counts: r.counts.clone(),
                    }
                })
                .collect();
            let readings: Vec<Vec<Reading>> =
                own_indices.iter().map(|&i| readings[i].clone()).collect();
            let (events, derived, counter_notes) =
                counting.summarize(&stat_runs, &readings, line_bytes);
            // Refusals are named once per figure in the resources table; the other notes
            // (multiplexing, user-only counting) are kept.
            for note in counter_notes {
                let refused = matches!(note, CountingNote::NotSupported { .. });
                let note = SweepNote::Counting { note };
                if !refused && !notes.contains(&note) {
                    notes.push(note);
                }
            }
            let summary = |f: fn(&SweepRun) -> f64| {
                crate::stats::Summary::of(&own.iter().map(|r| f(r)).collect::<Vec<_>>())
            };
            cells.push(Cell {
                benchmark,
                variant,
                runs: own.len(),
                failed: failed.len(),
                failures,
                measures: analysis::measure_stats(measures, &own, &base, variant == plan.baseline),
                user_s: summary(|r| r.user_s),
                system_s: summary(|r| r.system_s),
                max_rss_kib: summary(|r| r.max_rss_kib as f64),
                events,
                derived,
            });
        }
    }
    cells
}
