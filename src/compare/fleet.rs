//! The outlier rule of a fleet: for one figure over the reports of one CPU model, the
//! fleet's median and robust spread (1.4826 × the median absolute deviation, Rousseeuw &
//! Croux 1993), and the reports whose value lies outside it. A report is named when its
//! distance from the median exceeds `OUTLIER_K` robust spreads (the modified z-score
//! cutoff of Iglewicz & Hoaglin) *and* exceeds that report's own noise (the band its own
//! trials measured, `judge::own_band_pct`): a host that is far from the others only by
//! its own scatter is not called odd. The scatter between runs, which two runs compared
//! borrow from the drift pass (`judge::noise_band_pct`), is here the fleet's own robust
//! spread of the figure: a section's scatter (an L3 whose share moved with a neighbour)
//! would hide a DRAM figure's real difference. The spread is floored at `judge::FLOOR_PCT` of the
//! median, so a fleet whose reports agree to the last digit (MAD 0) names only real
//! differences, and nothing is ever divided by zero. Pure arithmetic, no I/O: the
//! comparison (`super::rows`) feeds it and `view` shows it.

use serde::{Deserialize, Serialize};

use crate::stats::summary::{median_of_sorted, MAD_TO_SIGMA};
use crate::view::figure::Better;
use crate::view::judge::{self, Verdict};

/// A report is an outlier beyond this many robust spreads from the fleet's median: the
/// usual cutoff of the modified z-score (Iglewicz & Hoaglin, 1993); more in a large
/// fleet (`cutoff`).
pub const OUTLIER_K: f64 = 3.5;

/// Chance outliers allowed per fleet: the cutoff grows with the reports and the figures
/// judged so that, were every host alike with normal scatter, chance would name one in
/// this share of fleets at most (at 1,000 hosts and 170 figures, 3.5 spreads alone would
/// name dozens).
const CHANCE_PER_FLEET: f64 = 0.05;

/// The cutoff in robust spreads for a figure over `reports` values in a fleet judged on
/// `figures` figures: `OUTLIER_K`, or the normal quantile that leaves `CHANCE_PER_FLEET`
/// / (reports × figures) in the two tails together, whichever is larger (3.5 up to about
/// 100 reports × figures; 3.8 at 8 reports × 30 figures, 5.1 at 1,000 × 170).
pub fn cutoff(reports: usize, figures: usize) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    let tests = (reports.max(1) * figures.max(1)) as f64;
    let tail = CHANCE_PER_FLEET / tests / 2.0;
    let z = Normal::standard().inverse_cdf(1.0 - tail);
    if z.is_finite() {
        z.max(OUTLIER_K)
    } else {
        OUTLIER_K
    }
}

/// The fewest reports with a value for which a figure's fleet is summarised: with fewer,
/// a median and a MAD say nothing a side-by-side table does not.
pub const FLEET_MIN_RUNS: usize = 3;

/// One report's value of a figure with the band (percent of the value) its own trials
/// measured; None when it measured no spread, step or drift (it is then held to the
/// floor, `judge::FLOOR_PCT`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub value: f64,
    pub noise_pct: Option<f64>,
}

/// A report named for a figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    /// Index into `Comparison::runs`.
    pub run: usize,
    pub value: f64,
    /// (value − median) ÷ |median|, percent (None for a zero median).
    pub deviation_pct: Option<f64>,
    /// |value − median| in robust spreads (infinite when the spread is 0).
    pub distance: f64,
    /// Worse or better by the figure's direction; changed when it has none.
    pub verdict: Verdict,
}

/// A figure over the reports of a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetFigure {
    /// Reports with a finite value.
    pub reports: usize,
    pub median: f64,
    /// 1.4826 × MAD, in the figure's unit, before the floor.
    pub mad_spread: f64,
    /// The spread the rule used: `mad_spread`, or the floor when that is wider.
    pub spread: f64,
    /// The floor applied (the reports' MAD was below `judge::FLOOR_PCT` of the median).
    pub floored: bool,
    /// The robust spreads beyond which a report is named (`cutoff`).
    #[serde(default = "default_cutoff")]
    pub cutoff: f64,
    /// The reports named, farthest first.
    pub outliers: Vec<Outlier>,
}

fn default_cutoff() -> f64 {
    OUTLIER_K
}

impl FleetFigure {
    /// The robust spread as a percentage of the median (None for a zero median).
    pub fn spread_pct(&self) -> Option<f64> {
        (self.median != 0.0).then(|| self.spread / self.median.abs() * 100.0)
    }
}

/// The rule in words, for the outputs' legends.
pub fn rule_text() -> String {
    format!(
        "a report is an outlier for a figure when its value lies more than {OUTLIER_K} robust \
         spreads (more in a large fleet, so that chance names a host in one fleet of twenty \
         at most: 5.1 at 1,000 reports of 170 figures) from the fleet's median (spread: 1.4826 × the median absolute deviation over \
         the reports of one CPU model, at least {}% of the median) and outside the noise its \
         own trials measured ({} × its spread, a grid step or its drift, at least {}%)",
        judge::FLOOR_PCT,
        judge::NOISE_SIGMAS,
        judge::FLOOR_PCT
    )
}

/// Summarises one figure over a group: `samples[i]` is the value of the report
/// `runs[i]` (an index into `Comparison::runs`), None when it lacks the figure. Values that
/// are not finite are passed over. None when fewer than `FLEET_MIN_RUNS` values remain.
pub fn summarise(
    samples: &[Option<Sample>],
    runs: &[usize],
    better: Better,
    figures: usize,
) -> Option<FleetFigure> {
    let mut values: Vec<f64> = samples
        .iter()
        .flatten()
        .map(|s| s.value)
        .filter(|v| v.is_finite())
        .collect();
    if values.len() < FLEET_MIN_RUNS {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let median = median_of_sorted(&values);
    let mut deviations: Vec<f64> = values.iter().map(|v| (v - median).abs()).collect();
    deviations.sort_by(f64::total_cmp);
    let mad_spread = MAD_TO_SIGMA * median_of_sorted(&deviations);
    let floor = median.abs() * judge::FLOOR_PCT / 100.0;
    let floored = mad_spread < floor;
    let spread = mad_spread.max(floor);
    let k = cutoff(values.len(), figures);
    let mut outliers: Vec<Outlier> = samples
        .iter()
        .zip(runs)
        .filter_map(|(sample, &run)| {
            let s = sample.filter(|s| s.value.is_finite())?;
            let difference = s.value - median;
            let beyond_fleet = difference.abs() > k * spread;
            let own_band = s
                .noise_pct
                .unwrap_or(judge::FLOOR_PCT)
                .max(judge::FLOOR_PCT);
            let beyond_own = difference.abs() > s.value.abs() * own_band / 100.0;
            (beyond_fleet && beyond_own).then(|| Outlier {
                run,
                value: s.value,
                deviation_pct: (median != 0.0).then(|| difference / median.abs() * 100.0),
                distance: if spread > 0.0 {
                    difference.abs() / spread
                } else {
                    f64::INFINITY
                },
                verdict: Verdict::beyond_noise(better, difference > 0.0),
            })
        })
        .collect();
    outliers.sort_by(|a, b| b.distance.total_cmp(&a.distance).then(a.run.cmp(&b.run)));
    Some(FleetFigure {
        reports: values.len(),
        median,
        mad_spread,
        spread,
        floored,
        cutoff: k,
        outliers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic scatter in [-1, 1] (no RNG dependency in tests).
    fn jitter(i: usize) -> f64 {
        (((i * 7919 + 13) % 1000) as f64 / 500.0) - 1.0
    }

    fn sample(value: f64, noise_pct: f64) -> Option<Sample> {
        Some(Sample {
            value,
            noise_pct: Some(noise_pct),
        })
    }

    fn indices(n: usize) -> Vec<usize> {
        (0..n).collect()
    }

    fn named(f: &FleetFigure) -> Vec<usize> {
        let mut runs: Vec<usize> = f.outliers.iter().map(|o| o.run).collect();
        runs.sort_unstable();
        runs
    }

    #[test]
    fn a_fleet_of_fifty_names_its_two_planted_outliers_and_nobody_else() {
        // 100 ns ± 2 ns, 1% own noise each; run 7 is 30% slower, run 31 20% faster.
        let mut samples: Vec<Option<Sample>> = (0..50)
            .map(|i| sample(100.0 + 2.0 * jitter(i), 1.0))
            .collect();
        samples[7] = sample(130.0, 1.0);
        samples[31] = sample(80.0, 1.0);
        let f = summarise(&samples, &indices(50), Better::Lower, 1).unwrap();
        assert_eq!(f.reports, 50);
        assert_eq!(named(&f), [7, 31]);
        // Farthest first, direction by the figure's.
        assert_eq!(f.outliers[0].run, 7);
        assert_eq!(f.outliers[0].verdict, Verdict::Worse);
        assert_eq!(f.outliers[1].verdict, Verdict::Better);
        assert!((f.median - 100.0).abs() < 2.0, "{}", f.median);
        assert!(!f.floored);
        // The same fleet of a figure where higher is better: the directions swap.
        let g = summarise(&samples, &indices(50), Better::Higher, 1).unwrap();
        assert_eq!(g.outliers[0].verdict, Verdict::Better);
        let h = summarise(&samples, &indices(50), Better::Neither, 1).unwrap();
        assert!(h.outliers.iter().all(|o| o.verdict == Verdict::Changed));
    }

    #[test]
    fn a_fleet_that_agrees_exactly_uses_the_floor_and_divides_by_nothing() {
        let mut samples: Vec<Option<Sample>> = (0..20).map(|_| sample(64.0, 0.0)).collect();
        // 2% away: inside 3.5 × the 1% floor, so not named although the MAD is 0.
        samples[3] = sample(65.28, 0.0);
        // 10% away: named.
        samples[9] = sample(70.4, 0.0);
        let f = summarise(&samples, &indices(20), Better::Neither, 1).unwrap();
        assert_eq!(f.mad_spread, 0.0);
        assert!(f.floored);
        assert!((f.spread - 0.64).abs() < 1e-9, "{}", f.spread);
        assert_eq!(named(&f), [9]);
        assert!(f.outliers[0].distance.is_finite());
        // A median of zero: the floor is 0 too; a non-zero value is infinitely far, and
        // nothing panics or turns NaN.
        let mut zeros: Vec<Option<Sample>> = (0..10).map(|_| sample(0.0, 0.0)).collect();
        zeros[4] = sample(1.0, 0.0);
        let z = summarise(&zeros, &indices(10), Better::Lower, 1).unwrap();
        assert_eq!(named(&z), [4]);
        assert_eq!(z.outliers[0].distance, f64::INFINITY);
        assert_eq!(z.outliers[0].deviation_pct, None);
        assert_eq!(z.spread_pct(), None);
    }

    #[test]
    fn an_outlier_within_its_own_noise_is_not_named() {
        let mut samples: Vec<Option<Sample>> = (0..7)
            .map(|i| sample(50.0 + 0.2 * jitter(i), 0.5))
            .collect();
        // 40% away from the fleet, but its own trials scattered by ±60%.
        samples[5] = sample(70.0, 60.0);
        let f = summarise(&samples, &indices(7), Better::Higher, 1).unwrap();
        assert!(f.outliers.is_empty(), "{:?}", f.outliers);
        // The same value measured tightly is named.
        samples[5] = sample(70.0, 0.5);
        let f = summarise(&samples, &indices(7), Better::Higher, 1).unwrap();
        assert_eq!(named(&f), [5]);
    }

    #[test]
    fn missing_and_non_finite_values_are_passed_over() {
        let mut samples: Vec<Option<Sample>> = (0..12)
            .map(|i| sample(10.0 + 0.05 * jitter(i), 1.0))
            .collect();
        samples[2] = None;
        samples[3] = sample(f64::NAN, 1.0);
        samples[4] = sample(f64::INFINITY, 1.0);
        samples[6] = Some(Sample {
            value: 20.0,
            noise_pct: None,
        });
        // The runs are global indices: they come back as given.
        let runs: Vec<usize> = (100..112).collect();
        let f = summarise(&samples, &runs, Better::Lower, 1).unwrap();
        assert_eq!(f.reports, 9);
        assert!(f.median.is_finite());
        assert_eq!(named(&f), [106]);
        // Too few values: no summary.
        let two = [
            sample(1.0, 1.0),
            None,
            sample(f64::NAN, 1.0),
            sample(2.0, 1.0),
        ];
        assert_eq!(summarise(&two, &indices(4), Better::Lower, 1), None);
    }

    #[test]
    fn the_cutoff_grows_with_the_fleet_so_chance_names_few() {
        assert_eq!(cutoff(7, 1), OUTLIER_K);
        assert_eq!(cutoff(40, 1), OUTLIER_K);
        assert!((3.7..3.9).contains(&cutoff(8, 30)), "{}", cutoff(8, 30));
        let large = cutoff(1000, 170);
        assert!((5.0..5.2).contains(&large), "{large}");
        assert!(cutoff(10_000, 170) > large);
        // 1,000 values spread evenly over ±4 sigma by their normal quantiles: the 3.5
        // cutoff would name the extreme few, the fleet's cutoff none.
        use statrs::distribution::{ContinuousCDF, Normal};
        let normal = Normal::standard();
        let samples: Vec<Option<Sample>> = (0..1000)
            .map(|i| {
                let z = normal.inverse_cdf((i as f64 + 0.5) / 1000.0);
                Some(Sample {
                    value: 100.0 + 2.0 * z,
                    noise_pct: None,
                })
            })
            .collect();
        let runs: Vec<usize> = (0..1000).collect();
        let f = summarise(&samples, &runs, Better::Lower, 1).unwrap();
        assert!(f.outliers.is_empty(), "{:?}", f.outliers);
        assert_eq!(f.cutoff, cutoff(1000, 1));
        assert!(f.cutoff > OUTLIER_K);
    }
}
