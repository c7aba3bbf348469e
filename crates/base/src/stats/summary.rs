//! Robust summaries of repeated trials: the median and the median absolute deviation
//! (MAD). The relative spread is 1.4826 × MAD / median, where 1.4826 makes the MAD a
//! consistent estimator of the standard deviation for normally distributed samples
//! (Rousseeuw & Croux, 1993); unlike the standard deviation it ignores a few disturbed
//! trials, which is what an interrupt or a neighbour's burst produces.

use serde::{Deserialize, Serialize};

/// Scale factor that turns a MAD into a standard-deviation estimate for normal data.
pub const MAD_TO_SIGMA: f64 = 1.4826;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub median: f64,
    pub mad: f64,
    pub min: f64,
    pub max: f64,
    pub count: usize,
}

impl Summary {
    /// Summarises samples; NaNs are ignored. None when no finite sample remains.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let mut values: Vec<f64> = samples.iter().copied().filter(|v| v.is_finite()).collect();
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let median = median_of_sorted(&values);
        let mut deviations: Vec<f64> = values.iter().map(|v| (v - median).abs()).collect();
        deviations.sort_by(f64::total_cmp);
        Some(Summary {
            median,
            mad: median_of_sorted(&deviations),
            min: values[0],
            max: values[values.len() - 1],
            count: values.len(),
        })
    }

    /// 1.4826 × MAD / median, in percent (0 for a zero median).
    pub fn spread_pct(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            MAD_TO_SIGMA * self.mad / self.median.abs() * 100.0
        }
    }
}

/// Median of an ascending slice (mean of the two middle values for even lengths).
pub fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Median of any slice of finite values (NaN when empty).
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    median_of_sorted(&sorted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_mad_of_known_samples() {
        let s = Summary::of(&[1.0, 2.0, 3.0, 4.0, 100.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert_eq!(s.mad, 1.0);
        assert_eq!((s.min, s.max, s.count), (1.0, 100.0, 5));
        assert!((s.spread_pct() - 49.42).abs() < 0.01);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn one_disturbed_trial_does_not_move_the_spread_much() {
        let calm = Summary::of(&[10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 10.0]).unwrap();
        let disturbed = Summary::of(&[10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 50.0]).unwrap();
        assert!(disturbed.spread_pct() < 2.0 * calm.spread_pct() + 0.5);
        assert_eq!(calm.median, disturbed.median);
    }

    #[test]
    fn nan_and_empty_are_handled() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[f64::NAN]).is_none());
        assert_eq!(Summary::of(&[f64::NAN, 2.0]).unwrap().median, 2.0);
    }
}
