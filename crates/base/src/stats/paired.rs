//! How much one arm changes a program's time against another, read from runs paired by
//! block (each block runs both, in a shuffled order, so the machine's drift between blocks
//! cancels): the blocks' log time ratios, their mean (the geometric mean of the ratios)
//! and the paired t interval and test around it. One method for both: the interval
//! excludes 1 exactly when the test's p is below 1 − level. The t interval decides from
//! few pairs when the runs agree (4–6 blocks of a 3-minute budget), where the exact
//! signed-rank test cannot pass 5% below 6 pairs whatever the effect; under no effect the
//! paired differences of two equally noisy arms are symmetric, which keeps the test near
//! its level on skewed run times too (tested below on exponential noise).
//!
//! Read sequentially: an arm may be looked at several times while its runs come in, and
//! stopped at the first look that decides it. `Looks` spreads the 5% error over the looks
//! planned before the first run (Bonferroni), so the interval of whichever look stops an
//! arm covers the true ratio with at least 95% probability, and its p is multiplied by
//! the number of looks.

use serde::{Deserialize, Serialize};

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The pairs at which an arm's runs are looked at (beside the last block the time
/// allows): from 5, then sparser (each look costs every look some of the 5% error).
pub(crate) const LOOK_AT: [usize; 5] = [5, 8, 12, 18, 27];

/// The fewest pairs an interval is given for (two degrees of freedom).
const LEAST_PAIRS: usize = 3;

/// The error of a whole sequence of looks at one arm.
pub const ALPHA: f64 = 0.05;

/// The looks planned for an arm: those of `LOOK_AT` up to the most blocks that can run,
/// and the last block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Looks {
    pub count: usize,
}

impl Looks {
    /// The looks when at most `max_blocks` blocks can run (`None`: exactly that many run,
    /// looked at once).
    pub fn planned(max_blocks: usize, fixed: bool) -> Looks {
        if fixed {
            return Looks { count: 1 };
        }
        let interim = LOOK_AT.iter().filter(|&&n| n < max_blocks).count();
        Looks { count: interim + 1 }
    }

    /// Whether the runs are looked at after `blocks` blocks (the last one is always).
    pub fn at(self, blocks: usize) -> bool {
        LOOK_AT.contains(&blocks)
    }

    /// The confidence level of each look's interval.
    pub fn level(self) -> f64 {
        1.0 - ALPHA / self.count as f64
    }
}

/// One arm against its reference over the blocks where both ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairedChange {
    /// Pairs (blocks) read.
    pub pairs: usize,
    /// The arm's time / the reference's: the geometric mean of the blocks' ratios.
    pub ratio: f64,
    /// The t interval of the ratio at `level` (`None` below `LEAST_PAIRS` pairs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<(f64, f64)>,
    /// The level of each look's interval.
    pub level: f64,
    /// The paired t test's two-sided p, multiplied by the number of looks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    /// The standard deviation of the log ratios, for how many more pairs a decision
    /// would take.
    pub log_spread: f64,
}

/// What a change says against ±`effect_pct`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// The whole interval lies beyond +effect (slower) or below −effect (faster).
    Beyond,
    /// The whole interval lies within ±effect.
    Within,
    /// Neither yet.
    Open,
}

impl PairedChange {
    /// The change of `arm` against `reference`, paired by position (both the same length,
    /// positive times); `looks` as planned. `None` with fewer than 2 pairs.
    pub fn of(arm: &[f64], reference: &[f64], looks: Looks) -> Option<PairedChange> {
        let logs: Vec<f64> = arm
            .iter()
            .zip(reference)
            .filter(|(a, r)| a.is_finite() && r.is_finite() && **a > 0.0 && **r > 0.0)
            .map(|(a, r)| a.ln() - r.ln())
            .collect();
        let n = logs.len();
        if n < 2 {
            return None;
        }
        let mean = logs.iter().sum::<f64>() / n as f64;
        let sd = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
        let level = looks.level();
        let (mut interval, mut p) = (None, None);
        if n >= LEAST_PAIRS {
            let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).ok()?;
            let se = sd / (n as f64).sqrt();
            let half = t.inverse_cdf(1.0 - (1.0 - level) / 2.0) * se;
            interval = Some(((mean - half).exp(), (mean + half).exp()));
            // Identical ratios: no spread, so any change is certain and none is nothing.
            let two_sided = match (se > 0.0, mean == 0.0) {
                (true, _) => 2.0 * t.sf((mean / se).abs()),
                (false, true) => 1.0,
                (false, false) => 0.0,
            };
            p = Some((two_sided * looks.count as f64).min(1.0));
        }
        Some(PairedChange {
            pairs: n,
            ratio: mean.exp(),
            interval,
            level,
            p,
            log_spread: sd,
        })
    }

    /// The change in percent (+: slower).
    pub fn change_pct(&self) -> f64 {
        (self.ratio - 1.0) * 100.0
    }

    /// The interval in percent.
    pub fn interval_pct(&self) -> Option<(f64, f64)> {
        self.interval
            .map(|(lo, hi)| ((lo - 1.0) * 100.0, (hi - 1.0) * 100.0))
    }

    /// Significant: the interval excludes no change (the same as p < 0.05 after the looks).
    pub fn significant(&self) -> bool {
        self.interval.is_some_and(|(lo, hi)| lo > 1.0 || hi < 1.0)
    }

    /// Beyond, within or still open against ±`effect_pct`.
    pub fn decision(&self, effect_pct: f64) -> Decision {
        match self.interval_pct() {
            Some((lo, hi)) if lo > effect_pct || hi < -effect_pct => Decision::Beyond,
            Some((lo, hi)) if lo > -effect_pct && hi < effect_pct => Decision::Within,
            _ => Decision::Open,
        }
    }

    /// About how many pairs in all would decide it against ±`effect_pct`, from the
    /// spread so far: the interval narrows as 1/√pairs until it clears the nearer edge of
    /// ±effect; `None` when the estimate sits on an edge (no number of runs would tell).
    pub fn pairs_to_decide(&self, effect_pct: f64) -> Option<usize> {
        // The interval's half width on the log scale at this many pairs; from the spread
        // with the normal quantile where there is no interval yet.
        let half = match self.interval {
            Some((lo, hi)) => (hi.ln() - lo.ln()) / 2.0,
            None => {
                let z = statrs::distribution::Normal::standard()
                    .inverse_cdf(1.0 - (1.0 - self.level) / 2.0);
                z * self.log_spread / (self.pairs as f64).sqrt()
            }
        };
        let edge = (1.0 + effect_pct / 100.0).ln();
        let room = (self.ratio.ln().abs() - edge).abs();
        if room < edge / 20.0 || half <= 0.0 || !half.is_finite() {
            return None;
        }
        let wanted = self.pairs as f64 * (half / room).powi(2);
        Some(
            (wanted.ceil() as usize)
                .max(self.pairs + 1)
                .max(LEAST_PAIRS),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_and_the_test_agree_at_every_size() {
        let mut stream = crate::stats::design::Shuffler::seeded(7);
        for n in 2..=30 {
            for _ in 0..50 {
                let base: Vec<f64> = (0..n).map(|_| 1.0 + stream.uniform()).collect();
                let shift = 1.0 + (stream.uniform() - 0.4) * 0.3;
                let arm: Vec<f64> = base
                    .iter()
                    .map(|b| b * shift * (0.9 + 0.2 * stream.uniform()))
                    .collect();
                let c = PairedChange::of(&arm, &base, Looks { count: 1 }).unwrap();
                let rejects = c.p.is_some_and(|p| p < ALPHA);
                assert_eq!(c.significant(), rejects, "n = {n}: {c:?}");
                assert_eq!(c.interval.is_some(), n >= LEAST_PAIRS);
                if let Some((lo, hi)) = c.interval {
                    assert!(lo <= c.ratio && c.ratio <= hi, "{c:?}");
                }
            }
        }
    }

    #[test]
    fn an_interval_covers_a_true_change_as_often_as_it_says() {
        // A +20% change in runs with skewed (exponential) noise, 5 pairs a time: the 95%
        // interval holds 1.2 in at least 94% of 4000 tries.
        let mut stream = crate::stats::design::Shuffler::seeded(5);
        let noise = |s: &mut crate::stats::design::Shuffler| 1.0 - 0.1 * (1.0 - s.uniform()).ln();
        let tries = 4000;
        let mut covered = 0;
        for _ in 0..tries {
            let base: Vec<f64> = (0..5).map(|_| noise(&mut stream)).collect();
            let arm: Vec<f64> = (0..5).map(|_| 1.2 * noise(&mut stream)).collect();
            let c = PairedChange::of(&arm, &base, Looks { count: 1 }).unwrap();
            let (lo, hi) = c.interval.unwrap();
            covered += usize::from(lo <= 1.2 && 1.2 <= hi);
        }
        let rate = covered as f64 / tries as f64;
        assert!(rate >= 0.94, "{rate}");
    }

    #[test]
    fn sequential_looks_cover_as_often_as_they_say() {
        // No effect, skewed noise; an arm looked at after 5, 8 and 12 blocks and at 18,
        // stopped at the first interval that excludes 1: at most 5% of the time.
        let mut stream = crate::stats::design::Shuffler::seeded(11);
        let looks = Looks::planned(18, false);
        assert_eq!(looks.count, 4);
        let trials = 2000;
        let mut false_calls = 0;
        for _ in 0..trials {
            let noise = |s: &mut crate::stats::design::Shuffler| -(1.0 - s.uniform()).ln();
            let base: Vec<f64> = (0..18).map(|_| 1.0 + noise(&mut stream)).collect();
            let arm: Vec<f64> = (0..18).map(|_| 1.0 + noise(&mut stream)).collect();
            let called = (1..=18).filter(|&b| looks.at(b) || b == 18).any(|b| {
                PairedChange::of(&arm[..b], &base[..b], looks).is_some_and(|c| c.significant())
            });
            false_calls += usize::from(called);
        }
        let rate = false_calls as f64 / trials as f64;
        assert!(rate <= 0.05, "{rate}");
    }

    #[test]
    fn decisions_and_the_runs_they_need() {
        let base = [1.0, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.0, 1.01, 0.99];
        let slower: Vec<f64> = base.iter().map(|b| b * 1.5).collect();
        let c = PairedChange::of(&slower, &base, Looks { count: 1 }).unwrap();
        assert!((c.ratio - 1.5).abs() < 1e-9);
        assert_eq!(c.decision(5.0), Decision::Beyond);
        let same: Vec<f64> = base.iter().rev().copied().collect();
        let s = PairedChange::of(&same, &base, Looks { count: 1 }).unwrap();
        assert_eq!(s.decision(10.0), Decision::Within);
        // Noisy, an estimate near +20% against ±5%: more pairs, not infinitely many.
        let noisy = [1.4, 0.9, 1.5, 1.0, 1.3, 1.2, 1.35, 0.95];
        let n = PairedChange::of(&noisy, &[1.0; 8], Looks { count: 1 }).unwrap();
        assert_eq!(n.decision(5.0), Decision::Open);
        let wanted = n.pairs_to_decide(5.0).unwrap();
        assert!(wanted > 8 && wanted < 200, "{wanted}");
        assert!(PairedChange::of(&[1.0], &[1.0], Looks { count: 1 }).is_none());
    }
}
