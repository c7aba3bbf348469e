//! The statistics of a sweep, per benchmark × variant (a cell) and figure: the median and
//! its 95% order-statistic interval, the change against the baseline variant's median and
//! a two-sided Mann–Whitney U test between their runs. As in benchstat, a change whose
//! p ≥ 0.05 is `~` (not significant), and fewer than 4 runs a side can never be
//! significant, which is said rather than shown as `~`. Failed runs never enter a figure.

use serde::{Deserialize, Serialize};

use super::{Better, Measure, SweepRun};
use crate::counting::{DerivedFigure, EventStat};
use crate::stats::interval::{median_interval, MedianInterval};
use crate::stats::rank_tests::mann_whitney_u;
use crate::stats::summary::Summary;

/// The significance level of the change column.
pub(super) const ALPHA: f64 = 0.05;
/// The confidence level of the intervals.
pub(super) const LEVEL: f64 = 0.95;
/// Runs a side below which a Mann–Whitney test can never reach p < 0.05.
pub(super) const MIN_RUNS_FOR_TEST: usize = 4;

/// What the change of a cell against the baseline says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Baseline,
    /// Significant, in the better direction.
    Better,
    /// Significant, in the worse direction.
    Worse,
    /// p ≥ 0.05: `~`.
    NoChange,
    /// Fewer than 4 successful runs on a side: no test can tell.
    TooFewRuns,
    /// No value (every run failed, or the metric was never found).
    NoData,
}

/// One figure of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasureStat {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<MedianInterval>,
    /// Median against the baseline's median, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_pct: Option<f64>,
    /// Mann–Whitney U of this cell's runs against the baseline's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub u: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    pub verdict: Verdict,
}

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

/// The statistics of `own` against `base`.
pub fn compare(own: &[f64], base: &[f64], better: Better, is_baseline: bool) -> MeasureStat {
    let summary = Summary::of(own);
    let interval = median_interval(own, LEVEL);
    let base_median = Summary::of(base).map(|s| s.median);
    let change_pct = match (summary, base_median) {
        (Some(s), Some(b)) if !is_baseline && b != 0.0 => Some((s.median / b - 1.0) * 100.0),
        _ => None,
    };
    let test = (!is_baseline).then(|| mann_whitney_u(own, base)).flatten();
    let verdict = if summary.is_none() {
        Verdict::NoData
    } else if is_baseline {
        Verdict::Baseline
    } else if base.is_empty() {
        Verdict::NoData
    } else if own.len() < MIN_RUNS_FOR_TEST || base.len() < MIN_RUNS_FOR_TEST {
        Verdict::TooFewRuns
    } else {
        match (test, change_pct) {
            (Some(t), Some(change)) if t.p < ALPHA && change != 0.0 => {
                let higher = change > 0.0;
                if higher == (better == Better::Higher) {
                    Verdict::Better
                } else {
                    Verdict::Worse
                }
            }
            _ => Verdict::NoChange,
        }
    };
    MeasureStat {
        summary,
        interval,
        change_pct,
        u: test.map(|t| t.u),
        p: test.map(|t| t.p),
        verdict,
    }
}

/// Whether a cell's figure is known to within ±`half_width_pct` (its 95% interval).
pub fn resolved(stat: &MeasureStat, half_width_pct: f64) -> bool {
    match (stat.summary, stat.interval) {
        (Some(s), Some(i)) => i.half_width_pct(s.median) <= half_width_pct,
        _ => false,
    }
}

/// The figure the sweep is about: the first metric, else the wall time.
pub(super) fn primary(measures: &[Measure]) -> usize {
    usize::from(measures.len() > 1)
}

/// The result with the notes its statistics call for: too wide an interval for the
/// effect looked for, many comparisons, failed runs, an unresolved adaptive stop.
pub(super) fn with_notes(mut result: super::SweepResult) -> super::SweepResult {
    let m = primary(&result.measures);
    let measure = &result.measures[m];
    let half = result.effect_pct;
    for (b, bench) in result.benchmarks.iter().enumerate() {
        let widest = (0..result.variants.len())
            .filter_map(|v| {
                let stat = &result.cell(b, v).measures[m];
                Some(stat.interval?.half_width_pct(stat.summary?.median))
            })
            .fold(f64::NAN, f64::max);
        if widest > half {
            result.notes.push(format!(
                "benchmark '{}': the 95% intervals of the {} medians are up to ±{:.1}% wide, \
                 more than the {:.1}% effect looked for (--effect): a change of that size \
                 cannot be resolved from these runs; run more blocks (--runs) or quiet the \
                 machine",
                bench.name, measure.label, widest, half
            ));
        }
        let too_few = (0..result.variants.len())
            .any(|v| result.cell(b, v).measures[m].verdict == Verdict::TooFewRuns);
        if too_few {
            result.notes.push(format!(
                "benchmark '{}': with fewer than {MIN_RUNS_FOR_TEST} successful runs a side, \
                 no change can reach p < 0.05: these are shown as 'too few runs', not as \
                 '~'",
                bench.name
            ));
        }
    }
    let comparisons = result.benchmarks.len() * result.variants.len().saturating_sub(1);
    if comparisons >= 5 {
        result.notes.push(format!(
            "{comparisons} comparisons against the baseline at p < 0.05: about {:.1} of them \
             would be called significant by chance alone if nothing changed; trust a change \
             that fits a trend across neighbouring variants more than an isolated one",
            comparisons as f64 * ALPHA
        ));
    }
    let failed: usize = result.cells.iter().map(|c| c.failed).sum();
    if failed > 0 {
        result.notes.push(format!(
            "{failed} run(s) failed after their first run succeeded; they are listed in the \
             runs and never enter a median"
        ));
    }
    match result.stop {
        super::Stop::TimeLimit | super::Stop::MaxBlocks => result.notes.push(format!(
            "the adaptive schedule stopped at {} blocks ({}) before every {} median was known \
             to ±{:.1}%",
            result.blocks,
            if result.stop == super::Stop::TimeLimit {
                "time limit"
            } else {
                "the most blocks it runs"
            },
            measure.label,
            half / 2.0
        )),
        super::Stop::Interrupted => result.notes.push(format!(
            "interrupted (Ctrl-C): the {} block(s) completed before it are reported",
            result.blocks
        )),
        _ => {}
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clear_change_is_significant_and_noise_is_not() {
        let base = [1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99];
        let slower = [1.20, 1.21, 1.19, 1.22, 1.18, 1.20, 1.21, 1.19];
        let same = [1.005, 0.995, 1.015, 0.985, 1.0, 1.01, 0.99, 1.02];
        let s = compare(&slower, &base, Better::Lower, false);
        assert_eq!(s.verdict, Verdict::Worse);
        assert!((s.change_pct.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(s.u, Some(64.0));
        assert!(s.p.unwrap() < 0.001);
        // The same data as a throughput: higher is better.
        assert_eq!(
            compare(&slower, &base, Better::Higher, false).verdict,
            Verdict::Better
        );
        let n = compare(&same, &base, Better::Lower, false);
        assert_eq!(n.verdict, Verdict::NoChange, "{n:?}");
        assert!(n.p.unwrap() >= ALPHA);
        let b = compare(&base, &base, Better::Lower, true);
        assert_eq!(b.verdict, Verdict::Baseline);
        assert!(b.change_pct.is_none() && b.p.is_none());
        assert!(b.interval.is_some());
    }

    #[test]
    fn too_few_runs_and_no_data_are_said() {
        let three = compare(&[2.0, 2.1, 2.2], &[1.0, 1.1, 1.2], Better::Lower, false);
        assert_eq!(three.verdict, Verdict::TooFewRuns);
        assert!(three.interval.is_none(), "no 95% interval from 3 runs");
        assert_eq!(
            compare(&[], &[1.0; 5], Better::Lower, false).verdict,
            Verdict::NoData
        );
    }

    #[test]
    fn resolution_follows_the_interval_width() {
        let tight = compare(
            &[1.0, 1.001, 0.999, 1.0, 1.002, 0.998],
            &[],
            Better::Lower,
            true,
        );
        assert!(resolved(&tight, 0.5));
        let wide = compare(&[1.0, 1.3, 0.7, 1.0, 1.2, 0.8], &[], Better::Lower, true);
        assert!(!resolved(&wide, 5.0));
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
