//! Whether a set of runs differs from a baseline's, as sweep and advise call it: the
//! median and its 95% order-statistic interval, the change of the median against the
//! baseline's, a two-sided Mann–Whitney U test (as in benchstat, p ≥ 0.05 is `~`, not
//! significant; fewer than 4 runs a side can never be significant) and the
//! Hodges–Lehmann interval of the ratio that goes with that test.

use serde::{Deserialize, Serialize};

use super::interval::{median_interval, MedianInterval};
use super::rank_tests::mann_whitney_u;
use super::summary::Summary;

/// Which way a figure gets better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Higher,
    Lower,
}

impl Better {
    pub fn phrase(self) -> &'static str {
        match self {
            Better::Higher => "higher is better",
            Better::Lower => "lower is better",
        }
    }
}

/// The significance level of the change column.
pub const ALPHA: f64 = 0.05;
/// The confidence level of the intervals.
pub const LEVEL: f64 = 0.95;
/// Runs a side below which a Mann–Whitney test can never reach p < 0.05.
pub const MIN_RUNS_FOR_TEST: usize = 4;

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

/// The ratio of one set of runs to another with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RatioInterval {
    /// The Hodges–Lehmann estimate: the median of every own/base ratio.
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
}

/// The ratio of `own` to `base` and its interval at `level` (e.g. 0.95): the order
/// statistics of the m·n pairwise log ratios that the Mann–Whitney test ranks, at the
/// test's critical value (exact for up to 40 runs in all, else its normal
/// approximation), so the interval excludes 1 when the test calls the change significant.
/// `None` with fewer than 2 positive values a side, or too few for an interval at `level`.
pub fn ratio_interval(own: &[f64], base: &[f64], level: f64) -> Option<RatioInterval> {
    let positive = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .filter(|x| x.is_finite() && **x > 0.0)
            .map(|x| x.ln())
            .collect()
    };
    let (own, base) = (positive(own), positive(base));
    if own.len() < 2 || base.len() < 2 || !(0.0..1.0).contains(&level) {
        return None;
    }
    let mut logs: Vec<f64> = own
        .iter()
        .flat_map(|a| base.iter().map(move |b| a - b))
        .collect();
    logs.sort_by(f64::total_cmp);
    let pairs = logs.len();
    let k = lower_rank(own.len(), base.len(), level)?;
    let median = if pairs % 2 == 1 {
        logs[pairs / 2]
    } else {
        (logs[pairs / 2 - 1] + logs[pairs / 2]) / 2.0
    };
    Some(RatioInterval {
        ratio: median.exp(),
        low: logs[k].exp(),
        high: logs[pairs - 1 - k].exp(),
    })
}

/// The 0-based index of the interval's lower end among the m·n sorted pairwise
/// differences: the test's critical value, the largest u with P(U ≤ u) ≤ (1 − level)/2;
/// `None` when even u = 0 is more likely.
fn lower_rank(m: usize, n: usize, level: f64) -> Option<usize> {
    let tail = (1.0 - level) / 2.0;
    if m + n <= 40 {
        let counts = super::rank_tests::u_distribution(m, n);
        let total: f64 = counts.iter().sum();
        let mut below = 0.0;
        counts
            .iter()
            .take_while(|c| {
                below += *c;
                below / total <= tail
            })
            .count()
            .checked_sub(1)
    } else {
        let (m, n) = (m as f64, n as f64);
        let z = statrs::distribution::ContinuousCDF::inverse_cdf(
            &statrs::distribution::Normal::standard(),
            1.0 - tail,
        );
        let reach = m * n / 2.0 - z * (m * n * (m + n + 1.0) / 12.0).sqrt();
        (reach >= 0.0).then(|| reach.floor() as usize)
    }
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
    fn the_ratio_interval_brackets_a_planted_ratio_and_excludes_one_when_they_differ() {
        let base = [1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97];
        let slower: Vec<f64> = base.iter().map(|b| b * 1.5).collect();
        let r = ratio_interval(&slower, &base, 0.95).unwrap();
        assert!((r.ratio - 1.5).abs() < 0.02, "{r:?}");
        assert!(
            r.low > 1.0 && r.low <= r.ratio && r.ratio <= r.high,
            "{r:?}"
        );
        let same = ratio_interval(&base, &base, 0.95).unwrap();
        assert!(same.low < 1.0 && same.high > 1.0, "{same:?}");
        assert!(ratio_interval(&[1.0], &base, 0.95).is_none());
        assert!(ratio_interval(&[0.0, -1.0, f64::NAN], &base, 0.95).is_none());
        // Two a side: no 95% interval exists (the U test cannot reach p < 0.05).
        assert!(ratio_interval(&[2.0, 4.0], &[1.0, 2.0], 0.95).is_none());
        // 7 a side: the exact critical value (U ≤ 8) puts the ends at the 9th and 41st of
        // the 49 ratios.
        let a: Vec<f64> = (0..7).map(|i| 1.0 + f64::from(i) * 0.1).collect();
        let b: Vec<f64> = (0..7).map(|i| 1.05 + f64::from(i) * 0.1).collect();
        let r = ratio_interval(&a, &b, 0.95).unwrap();
        let mut logs: Vec<f64> = a
            .iter()
            .flat_map(|x| b.iter().map(move |y| (x / y).ln()))
            .collect();
        logs.sort_by(f64::total_cmp);
        assert!((r.low - logs[8].exp()).abs() < 1e-12 && (r.high - logs[40].exp()).abs() < 1e-12);
    }
}
