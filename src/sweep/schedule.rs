//! What runs when: warm-up blocks, then measured blocks, each running every benchmark ×
//! variant once in a shuffled order (`stats::design`), so the machine's drift falls on
//! every variant alike. The first run of each benchmark × variant must succeed and the
//! metrics must be found in the output, else the sweep stops with the command's output
//! (it is the user's to fix). With the adaptive default, blocks continue while a
//! median's interval is wider than ±effect/2, within the time limit. Ctrl-C in a run
//! ends the sweep with the blocks completed before it.

use std::time::Instant;

use super::analysis::{self, Cell};
use super::runner::{self, Outcome, Prepared};
use super::variants::{tail, Built};
use super::{Better, Measure, Schedule, Stop, SweepError, SweepPlan, SweepResult, SweepRun};
use crate::counters::{Probe, Reading};
use crate::counting::{self, Counting};
use crate::platform::child::{ProcessTree, Termination};
use crate::session::progress::Progress;
use crate::stats::design::Shuffler;
use crate::topology::Machine;

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
    let prepared: Vec<Vec<Prepared>> = plan
        .benchmarks
        .iter()
        .map(|b| {
            built
                .variants
                .iter()
                .map(|v| runner::prepare(plan, b, v))
                .collect()
        })
        .collect::<Result<_, _>>()?;
    let measures = measures(plan);
    let mut state = State {
        plan,
        probe,
        counting: &counting,
        prepared: &prepared,
        shuffler: Shuffler::from_clock(),
        runs: Vec::new(),
        readings: Vec::new(),
        checked: vec![false; nb * nv],
        matched: vec![vec![false; plan.metrics.len()]; nb],
        progress: Progress::for_stderr(),
        process_tree: ProcessTree::default(),
    };
    let mut notes = Vec::new();
    for w in 0..plan.warmup {
        built.check_in_place()?;
        if state.block(0, &format!("warm-up {}/{}", w + 1, plan.warmup))? {
            return Err(SweepError("interrupted (Ctrl-C) during the warm-up".into()));
        }
    }
    if plan.warmup > 0 {
        notes.extend(state.check_metrics()?);
    }
    let started = Instant::now();
    let mut block = 0;
    let stop = loop {
        let label = match plan.schedule {
            Schedule::Fixed(n) => format!("block {}/{n}", block + 1),
            Schedule::Adaptive { .. } => format!("block {}", block + 1),
        };
        built.check_in_place()?;
        if state.block(block + 1, &label)? {
            state.drop_block(block + 1);
            break Stop::Interrupted;
        }
        block += 1;
        if block == 1 && plan.warmup == 0 {
            notes.extend(state.check_metrics()?);
        }
        if let Some(stop) = next_step(plan, &state, &measures, block, started) {
            break stop;
        }
    };
    state.progress.finish();
    let measured_s = started.elapsed().as_secs_f64();
    let cells = cells(plan, &state, &measures, line_bytes, &mut notes);
    let result = SweepResult {
        parameters: plan.parameters.clone(),
        variants: built.variants.iter().map(|v| v.info.clone()).collect(),
        baseline: plan.baseline,
        benchmarks: plan.benchmarks.clone(),
        build: plan.build.clone(),
        measures,
        events: counting.events.iter().map(|e| e.name.clone()).collect(),
        warmup_blocks: plan.warmup,
        blocks: block,
        stop,
        effect_pct: plan.effect_pct,
        measured_s,
        runs: state.runs,
        cells,
        notes,
        process_tree: state.process_tree,
    };
    Ok(analysis::with_notes(result))
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

struct State<'a> {
    plan: &'a SweepPlan,
    probe: &'a Probe,
    counting: &'a Counting,
    prepared: &'a [Vec<Prepared>],
    shuffler: Shuffler,
    runs: Vec<SweepRun>,
    /// The counters' readings of each run (for refusal reasons and multiplexing).
    readings: Vec<Vec<Reading>>,
    /// Per benchmark × variant: its first run succeeded.
    checked: Vec<bool>,
    /// Per benchmark and metric: found in some run's output.
    matched: Vec<Vec<bool>>,
    progress: Progress,
    process_tree: ProcessTree,
}

impl State<'_> {
    /// Runs one block; true when a run was interrupted (Ctrl-C).
    fn block(&mut self, block: usize, label: &str) -> Result<bool, SweepError> {
        let nv = self.plan.variants.len();
        let pairs = self.plan.benchmarks.len() * nv;
        self.progress.start(label, pairs as u64);
        for (order, pair) in self.shuffler.block(pairs).into_iter().enumerate() {
            let (benchmark, variant) = (pair / nv, pair % nv);
            let what = || {
                format!(
                    "benchmark '{}' on variant {}",
                    self.plan.benchmarks[benchmark].name,
                    self.plan.variants[variant].label()
                )
            };
            self.progress.message(&what());
            let outcome = runner::run_once(
                &self.prepared[benchmark][variant],
                self.counting,
                self.probe,
            )
            .map_err(|e| e.into_sweep_error(&format!("{} cannot run", what())))?;
            let termination = outcome.counted.finished.termination;
            if interrupted(termination) {
                return Ok(true);
            }
            if !self.checked[pair] {
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
            let finished = outcome.counted.finished;
            self.process_tree.add(&finished);
            self.runs.push(SweepRun {
                block,
                order,
                benchmark,
                variant,
                elapsed_s: finished.elapsed.as_secs_f64(),
                user_s: finished.user.as_secs_f64(),
                system_s: finished.system.as_secs_f64(),
                max_rss_kib: finished.max_rss_kib,
                termination,
                metrics,
                counts: outcome.counted.counts,
            });
            self.readings.push(outcome.counted.readings);
            self.progress.advance();
        }
        Ok(false)
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
    fn check_metrics(&self) -> Result<Vec<String>, SweepError> {
        let mut notes = Vec::new();
        for (i, metric) in self.plan.metrics.iter().enumerate() {
            let found: Vec<bool> = self.matched.iter().map(|m| m[i]).collect();
            if !found.iter().any(|f| *f) {
                let sample = self
                    .runs
                    .first()
                    .map(|r| r.benchmark)
                    .map(|b| self.plan.benchmarks[b].name.clone())
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
                    notes.push(format!(
                        "metric '{}' was not found in the output of benchmark '{}': it has no \
                         value there",
                        metric.label, self.plan.benchmarks[b].name
                    ));
                }
            }
        }
        Ok(notes)
    }

    /// Removes the runs of an interrupted block.
    fn drop_block(&mut self, block: usize) {
        let keep: Vec<bool> = self.runs.iter().map(|r| r.block != block).collect();
        let mut i = 0;
        self.readings.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        self.runs.retain(|r| r.block != block);
    }
}

fn interrupted(termination: Termination) -> bool {
    matches!(termination, Termination::Signaled(s) if s == libc::SIGINT || s == libc::SIGQUIT)
}

/// Whether the measured blocks stop after `blocks` of them, and why.
fn next_step(
    plan: &SweepPlan,
    state: &State,
    measures: &[Measure],
    blocks: usize,
    started: Instant,
) -> Option<Stop> {
    let (min_blocks, max_blocks, limit) = match plan.schedule {
        Schedule::Fixed(n) => return (blocks >= n).then_some(Stop::Fixed),
        Schedule::Adaptive {
            min_blocks,
            max_blocks,
            time_limit,
        } => (min_blocks, max_blocks, time_limit.as_secs_f64()),
    };
    let elapsed = started.elapsed().as_secs_f64();
    let per_block = elapsed / blocks as f64;
    // Fewer than the minimum only when the minimum would not fit the time, never below 6.
    let fitting = ((limit / per_block.max(1e-9)).floor() as usize).max(FEWEST_BLOCKS);
    if blocks < min_blocks.min(fitting) {
        return None;
    }
    if blocks >= max_blocks {
        return Some(Stop::MaxBlocks);
    }
    let m = analysis::primary(measures);
    let nv = plan.variants.len();
    // A cell is settled when its median is known to ±effect/2, or when it already
    // differs significantly from the baseline by more than the effect looked for (more
    // runs would only sharpen a figure whose verdict is clear).
    let all_resolved = (0..plan.benchmarks.len() * nv).all(|pair| {
        let (benchmark, variant) = (pair / nv, pair % nv);
        let own = analysis::values(&analysis::cell_runs(&state.runs, benchmark, variant), m);
        let base = analysis::values(
            &analysis::cell_runs(&state.runs, benchmark, plan.baseline),
            m,
        );
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
    });
    if all_resolved {
        return Some(Stop::Resolved);
    }
    (elapsed + per_block > limit).then_some(Stop::TimeLimit)
}

/// Every benchmark × variant's statistics and counters.
fn cells(
    plan: &SweepPlan,
    state: &State,
    measures: &[Measure],
    line_bytes: u64,
    notes: &mut Vec<String>,
) -> Vec<Cell> {
    let nv = plan.variants.len();
    let mut cells = Vec::new();
    for benchmark in 0..plan.benchmarks.len() {
        let base = analysis::cell_runs(&state.runs, benchmark, plan.baseline);
        for variant in 0..nv {
            // The measured runs of this cell, by index (the readings are kept beside the
            // runs, in the same order).
            let mine: Vec<usize> = (0..state.runs.len())
                .filter(|&i| {
                    let r = &state.runs[i];
                    r.block > 0 && r.benchmark == benchmark && r.variant == variant
                })
                .collect();
            let (own_indices, failed): (Vec<usize>, Vec<usize>) = mine
                .into_iter()
                .partition(|&i| state.runs[i].termination.success());
            let own: Vec<&SweepRun> = own_indices.iter().map(|&i| &state.runs[i]).collect();
            let failures = crate::view::format::distinct(
                failed
                    .iter()
                    .map(|&i| state.runs[i].termination.to_string()),
            );
            let stat_runs: Vec<counting::RunRecord> = own_indices
                .iter()
                .map(|&i| {
                    let r = &state.runs[i];
                    counting::RunRecord {
                        elapsed_s: r.elapsed_s,
                        user_s: r.user_s,
                        system_s: r.system_s,
                        termination: r.termination,
                        counts: r.counts.clone(),
                    }
                })
                .collect();
            let readings: Vec<Vec<Reading>> = own_indices
                .iter()
                .map(|&i| state.readings[i].clone())
                .collect();
            let (events, derived, counter_notes) =
                state.counting.summarize(&stat_runs, &readings, line_bytes);
            // Refusals are named once per figure in the resources table; the other notes
            // (multiplexing, user-only counting) are kept.
            for note in counter_notes {
                if !note.starts_with("not supported:") && !notes.contains(&note) {
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
