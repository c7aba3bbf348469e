//! A distribution-free 95% (or any level) confidence interval for a median: the order
//! statistics x(k) and x(n+1−k) with the largest k whose binomial tail keeps the coverage
//! at or above the level. Nothing is assumed about the shape of the distribution (run
//! times are skewed and have outliers), and with fewer than 6 samples no 95% interval
//! exists: `None`, never an interval that pretends.

use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, DiscreteCDF};

/// An interval for the median, with the coverage the order statistics actually give
/// (at least the level asked for, e.g. 97.9% for 10 samples at 95%).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MedianInterval {
    pub low: f64,
    pub high: f64,
    /// Exact coverage of the interval, 0–1.
    pub coverage: f64,
}

impl MedianInterval {
    /// Half the width relative to `median`, percent.
    pub fn half_width_pct(&self, median: f64) -> f64 {
        if median == 0.0 {
            return 0.0;
        }
        (self.high - self.low) / 2.0 / median.abs() * 100.0
    }
}

/// The order-statistic interval for the median of `samples` (NaNs ignored) at `level`
/// (0.95 for 95%); `None` when there are too few samples for that level.
pub fn median_interval(samples: &[f64], level: f64) -> Option<MedianInterval> {
    let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    let k = order_statistic_rank(sorted.len(), level)?;
    let n = sorted.len();
    Some(MedianInterval {
        low: sorted[k - 1],
        high: sorted[n - k],
        coverage: coverage(n, k),
    })
}

/// The largest rank k (1-based) such that [x(k), x(n+1−k)] covers the median with
/// probability ≥ `level`; `None` when even [x(1), x(n)] does not.
pub(crate) fn order_statistic_rank(n: usize, level: f64) -> Option<usize> {
    if n == 0 {
        return None;
    }
    let mut best = None;
    for k in 1..=n.div_ceil(2) {
        if coverage(n, k) >= level {
            best = Some(k);
        } else {
            break;
        }
    }
    best
}

/// P(x(k) ≤ median ≤ x(n+1−k)) = 1 − 2·P(B ≤ k−1), B ~ Binomial(n, ½).
fn coverage(n: usize, k: usize) -> f64 {
    let binomial = Binomial::new(0.5, n as u64).expect("p = 0.5 is valid");
    (1.0 - 2.0 * binomial.cdf(k as u64 - 1)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_match_the_binomial_table() {
        // 95%: no interval below 6 samples; [x1, x6] at 6 (96.9%), [x2, x9] at 10
        // (97.9%), [x6, x15] at 20 (95.9%).
        assert_eq!(order_statistic_rank(5, 0.95), None);
        assert_eq!(order_statistic_rank(6, 0.95), Some(1));
        assert_eq!(order_statistic_rank(8, 0.95), Some(1));
        assert_eq!(order_statistic_rank(9, 0.95), Some(2));
        assert_eq!(order_statistic_rank(10, 0.95), Some(2));
        assert_eq!(order_statistic_rank(20, 0.95), Some(6));
        assert!((coverage(6, 1) - (1.0 - 2.0 / 64.0)).abs() < 1e-12);
        assert!((coverage(10, 2) - (1.0 - 22.0 / 1024.0)).abs() < 1e-12);
        let i = median_interval(&[5.0, 1.0, 3.0, 2.0, 4.0, 9.0, 7.0, 8.0, 6.0, 10.0], 0.95);
        let i = i.unwrap();
        assert_eq!((i.low, i.high), (2.0, 9.0));
        assert!(median_interval(&[1.0, 2.0, 3.0], 0.95).is_none());
    }

    #[test]
    fn the_interval_covers_the_true_median_as_often_as_it_says() {
        // Skewed samples (exponential, median ln 2) from a fixed xorshift stream.
        let mut stream = crate::stats::design::Shuffler::seeded(0x9e37_79b9_7f4a_7c15);
        let mut uniform = || stream.uniform();
        let true_median = std::f64::consts::LN_2;
        for n in [6, 10, 15, 30] {
            let trials = 4000;
            let mut covered = 0;
            let mut claimed = 0.0;
            for _ in 0..trials {
                let samples: Vec<f64> = (0..n).map(|_| -(1.0 - uniform()).ln()).collect();
                let i = median_interval(&samples, 0.95).unwrap();
                claimed = i.coverage;
                covered += usize::from(i.low <= true_median && true_median <= i.high);
            }
            let observed = covered as f64 / trials as f64;
            // 4000 trials: the binomial standard error is ≤ 0.35 percentage points.
            assert!(
                (observed - claimed).abs() < 0.015 && observed >= 0.94,
                "n = {n}: covered {observed}, claimed {claimed}"
            );
        }
    }
}
