//! The statistics of a sweep, per benchmark × variant (a cell) and figure: the median and
//! its 95% order-statistic interval, the change against the baseline variant's median and
//! a two-sided Mann–Whitney U test between their runs. As in benchstat, a change whose
//! p ≥ 0.05 is `~` (not significant), and fewer than 4 runs a side can never be
//! significant, which is said rather than shown as `~`. Failed runs never enter a figure.

use serde::{Deserialize, Serialize};

use super::{Measure, SweepRun};
use crate::counting::{DerivedFigure, EventStat};
pub use crate::stats::change::{compare, resolved, MeasureStat, Verdict};
pub(super) use crate::stats::change::{ALPHA, MIN_RUNS_FOR_TEST};
use crate::stats::summary::Summary;

/// One benchmark on one variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub benchmark: usize,
    pub variant: usize,
    /// Successful runs in the measured blocks.
    pub runs: usize,
    /// Runs that failed, and how (distinct terminations).
    pub failed: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// One per `SweepResult::measures`.
    pub measures: Vec<MeasureStat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_s: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_s: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_kib: Option<Summary>,
    /// `stat`'s counters over the successful runs.
    pub events: Vec<EventStat>,
    pub derived: Vec<DerivedFigure>,
}

/// The successful measured runs of one cell.
pub(super) fn cell_runs(runs: &[SweepRun], benchmark: usize, variant: usize) -> Vec<&SweepRun> {
    runs.iter()
        .filter(|r| r.block > 0 && r.benchmark == benchmark && r.variant == variant)
        .filter(|r| r.termination.success())
        .collect()
}

/// The values of measure `m` over some runs (runs without it left out).
pub fn values(runs: &[&SweepRun], m: usize) -> Vec<f64> {
    runs.iter().filter_map(|r| r.measure(m)).collect()
}

/// Every figure of a cell against the baseline's runs of the same benchmark.
pub(super) fn measure_stats(
    measures: &[Measure],
    own: &[&SweepRun],
    baseline: &[&SweepRun],
    is_baseline: bool,
) -> Vec<MeasureStat> {
    measures
        .iter()
        .enumerate()
        .map(|(m, measure)| {
            compare(
                &values(own, m),
                &values(baseline, m),
                measure.better,
                is_baseline,
            )
        })
        .collect()
}

/// The figure the sweep is about: the first metric, else the wall time.
pub(super) fn primary(measures: &[Measure]) -> usize {
    usize::from(measures.len() > 1)
}

/// What a sweep's reader should know beside its table, with its numbers; the view words
/// it (`view::notes`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SweepNote {
    /// A benchmark's 95% intervals of its primary measure are wider than the effect.
    WideIntervals {
        benchmark: String,
        measure: String,
        widest_pct: f64,
        effect_pct: f64,
    },
    /// A variant of the benchmark had too few successful runs for the test.
    TooFewRuns { benchmark: String, min_runs: usize },
    /// So many comparisons against the baseline that some are significant by chance.
    ManyComparisons { comparisons: usize, by_chance: f64 },
    /// Runs that failed after the first run succeeded.
    FailedRuns { count: usize },
    /// The adaptive schedule stopped (`stop`) before every median was known to `within_pct`.
    Unresolved {
        blocks: usize,
        stop: super::Stop,
        measure: String,
        within_pct: f64,
    },
    /// Ctrl-C after `blocks` blocks.
    Interrupted { blocks: usize },
    /// A metric missing from one benchmark's output.
    MetricMissing { metric: String, benchmark: String },
    /// The counters' own notes (multiplexing, user-only counting).
    Counting { note: crate::counting::CountingNote },
    /// A sentence: the notes of reports written before the notes had kinds.
    #[serde(untagged)]
    Said(String),
}

/// The result with the notes its statistics call for: too wide an interval for the
/// effect looked for, many comparisons, failed runs, an unresolved adaptive stop.
pub(super) fn with_notes(mut result: super::SweepResult) -> super::SweepResult {
    let m = primary(&result.measures);
    let measure = result.measures[m].label.clone();
    let half = result.effect_pct;
    for (b, bench) in result.benchmarks.iter().enumerate() {
        let widest = (0..result.variants.len())
            .filter_map(|v| {
                let stat = &result.cell(b, v).measures[m];
                Some(stat.interval?.half_width_pct(stat.summary?.median))
            })
            .fold(f64::NAN, f64::max);
        if widest > half {
            result.notes.push(SweepNote::WideIntervals {
                benchmark: bench.name.clone(),
                measure: measure.clone(),
                widest_pct: widest,
                effect_pct: half,
            });
        }
        let too_few = (0..result.variants.len())
            .any(|v| result.cell(b, v).measures[m].verdict == Verdict::TooFewRuns);
        if too_few {
            result.notes.push(SweepNote::TooFewRuns {
                benchmark: bench.name.clone(),
                min_runs: MIN_RUNS_FOR_TEST,
            });
        }
    }
    let comparisons = result.benchmarks.len() * result.variants.len().saturating_sub(1);
    if comparisons >= 5 {
        result.notes.push(SweepNote::ManyComparisons {
            comparisons,
            by_chance: comparisons as f64 * ALPHA,
        });
    }
    let failed: usize = result.cells.iter().map(|c| c.failed).sum();
    if failed > 0 {
        result.notes.push(SweepNote::FailedRuns { count: failed });
    }
    let blocks = result.blocks;
    match result.stop {
        stop @ (super::Stop::TimeLimit | super::Stop::MaxBlocks) => {
            result.notes.push(SweepNote::Unresolved {
                blocks,
                stop,
                measure,
                within_pct: half / 2.0,
            })
        }
        super::Stop::Interrupted => result.notes.push(SweepNote::Interrupted { blocks }),
        _ => {}
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::change::Better;

    #[test]
    fn notes_carry_their_kind_and_old_sentences_still_read() {
        let notes = vec![
            SweepNote::FailedRuns { count: 2 },
            SweepNote::Counting {
                note: crate::counting::CountingNote::Multiplexed,
            },
            SweepNote::Said("multiplexed".into()),
        ];
        let json = serde_json::to_string(&notes).unwrap();
        assert_eq!(
            json,
            r#"[{"kind":"failed-runs","count":2},{"kind":"counting","note":{"kind":"multiplexed"}},"multiplexed"]"#
        );
        let read: Vec<SweepNote> = serde_json::from_str(&json).unwrap();
        assert_eq!(read, notes);
        assert!(notes[0].text().contains("2 run(s) failed"));
    }

    #[test]
    fn under_no_change_about_one_in_twenty_is_called_significant() {
        // 400 sweeps of two variants drawn from one distribution, 10 runs each.
        let mut stream = crate::stats::design::Shuffler::seeded(0x2545_f491_4f6c_dd1d);
        let mut uniform = || stream.uniform();
        let mut called = 0;
        for _ in 0..400 {
            let a: Vec<f64> = (0..10).map(|_| 1.0 + 0.05 * uniform()).collect();
            let b: Vec<f64> = (0..10).map(|_| 1.0 + 0.05 * uniform()).collect();
            let s = compare(&a, &b, Better::Lower, false);
            called += usize::from(matches!(s.verdict, Verdict::Better | Verdict::Worse));
        }
        // Expected 20 of 400 (α = 5%); binomial 99.9% bounds are about 6–37.
        assert!(
            (4..=40).contains(&called),
            "{called} of 400 called significant"
        );
    }
}
