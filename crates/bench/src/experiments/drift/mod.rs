//! The drift check at the end of a measuring run: the headline figures measured once more
//! (each experiment's `remeasure`), so that a run can say how far the machine moved while
//! it ran, which its trials' spread cannot know (a shared host's bandwidth was seen to move
//! 2–3× within minutes while each run's trials agreed within a few percent). With
//! `--until-stable`, passes repeat until two in a row agree within a target or a time
//! budget runs out, and the result says which happened. Each figure's drift goes beside it
//! in every output and into `compare`'s noise band.

pub mod view;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{Configs, Results};
use crate::session::context::Session;
use crate::view::figure::{Figure, Remeasured};
use crate::view::glance::Drift;

/// The share of a kind's re-measured figures whose drift its scatter covers.
const SCATTER_QUANTILE: f64 = 0.9;

/// The fewest drifts a scatter is read from (else the whole run's is used).
const SCATTER_FIGURES: usize = 3;

/// What `--until-stable` asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StableTarget {
    /// Two passes in a row must agree within this, percent, on every figure.
    pub within_pct: f64,
    /// The time the passes may take in all.
    pub budget: Duration,
}

/// One figure through the passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftFigure {
    pub key: String,
    pub label: String,
    pub unit: String,
    /// The value the pass repeats, as the run measured it.
    pub before: f64,
    /// The same point in each pass.
    pub passes: Vec<f64>,
    /// The largest |pass − before| / before, percent.
    pub drift_pct: f64,
    /// The figure's own spread from its trials, percent, when it has one.
    pub spread_pct: Option<f64>,
    /// The drift exceeds the run's own noise: 3 × the spread, and at least 1%.
    pub beyond_noise: bool,
}

impl DriftFigure {
    /// The pass farthest from the run's value against it, percent, with its sign (NaN
    /// when the run's value is not a positive number or no pass has a value).
    pub fn signed_pct(&self) -> f64 {
        let farthest = (self.passes.iter())
            .filter(|v| v.is_finite())
            .max_by(|a, b| {
                (*a - self.before)
                    .abs()
                    .total_cmp(&(*b - self.before).abs())
            });
        match farthest {
            Some(&v) if self.before > 0.0 => (v - self.before) / self.before * 100.0,
            _ => f64::NAN,
        }
    }
}

/// How `--until-stable` ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stability {
    pub within_pct: f64,
    pub budget_s: f64,
    /// Two passes in a row agreed within the target (else the budget ran out).
    pub stable: bool,
    /// The largest disagreement between the last two passes, percent, and its figure.
    pub last_disagreement_pct: f64,
    pub last_disagreement: String,
}

/// The drift check's result (`drift` in the report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftResult {
    pub passes: usize,
    pub elapsed_s: f64,
    pub figures: Vec<DriftFigure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_stable: Option<Stability>,
}

impl DriftResult {
    /// The figures that moved beyond their noise.
    pub fn beyond_noise(&self) -> impl Iterator<Item = &DriftFigure> {
        self.figures.iter().filter(|f| f.beyond_noise)
    }

    /// Each figure's drift as the summary shows it beside its headline.
    pub fn glance(&self) -> Vec<Drift> {
        (self.figures.iter())
            .map(|f| Drift {
                key: f.key.clone(),
                pct: f.signed_pct(),
                beyond_noise: f.beyond_noise,
            })
            .collect()
    }

    /// Puts each figure's drift beside it, and on every figure the scatter of its kind:
    /// how far its section's re-measured figures moved (`scatter_pct`).
    pub fn annotate(&self, figures: &mut [Figure]) {
        let everything = self.scatter_pct(|_| true);
        for f in figures {
            if let Some(d) = self.figures.iter().find(|d| d.key == f.key) {
                f.drift_pct = d.drift_pct.is_finite().then_some(d.drift_pct);
            }
            let section = |d: &DriftFigure| d.key.split('.').next() == Some(f.section.as_str());
            f.scatter_pct = self.scatter_pct(section).or(everything);
        }
    }

    /// The `SCATTER_QUANTILE` of the drifts of the figures `which` picks, when at least
    /// `SCATTER_FIGURES` of them have one: between a figure's measurement and its repeat
    /// a few seconds later, the machine moved its figures of this kind this much.
    fn scatter_pct(&self, which: impl Fn(&DriftFigure) -> bool) -> Option<f64> {
        let mut drifts: Vec<f64> = (self.figures.iter())
            .filter(|d| which(d) && d.drift_pct.is_finite())
            .map(|d| d.drift_pct)
            .collect();
        if drifts.len() < SCATTER_FIGURES {
            return None;
        }
        drifts.sort_by(f64::total_cmp);
        let rank = (SCATTER_QUANTILE * (drifts.len() - 1) as f64).round() as usize;
        Some(drifts[rank])
    }
}

/// Runs the drift pass (and, with a target, more until stable); None when no planned
/// experiment has headline figures to repeat.
pub fn check(
    configs: &Configs,
    session: &mut Session,
    results: &Results,
    until: Option<StableTarget>,
) -> anyhow::Result<Option<DriftResult>> {
    let started = Instant::now();
    let mut passes = vec![configs.remeasure(session, results)?];
    if passes[0].is_empty() {
        return Ok(None);
    }
    let mut stability = None;
    if let Some(target) = until {
        loop {
            let agreement = match passes.as_slice() {
                [.., a, b] => Some(disagreement(a, b)),
                _ => None,
            };
            if let Some((pct, figure)) = &agreement {
                let stable = *pct <= target.within_pct;
                if stable || started.elapsed() >= target.budget {
                    stability = Some(Stability {
                        within_pct: target.within_pct,
                        budget_s: target.budget.as_secs_f64(),
                        stable,
                        last_disagreement_pct: *pct,
                        last_disagreement: figure.clone(),
                    });
                    break;
                }
            }
            passes.push(configs.remeasure(session, results)?);
        }
    }
    let own = results.figures();
    Ok(Some(DriftResult {
        passes: passes.len(),
        elapsed_s: started.elapsed().as_secs_f64(),
        figures: summarise(&passes, &own),
        until_stable: stability,
    }))
}

/// The largest disagreement between two passes, percent of the smaller value, and the
/// figure's label.
fn disagreement(a: &[Remeasured], b: &[Remeasured]) -> (f64, String) {
    let mut worst = (0.0, String::new());
    for x in a {
        let Some(y) = b.iter().find(|y| y.key == x.key) else {
            continue;
        };
        let base = x.after.abs().min(y.after.abs());
        let pct = if base > 0.0 {
            (x.after - y.after).abs() / base * 100.0
        } else {
            0.0
        };
        if pct > worst.0 || !pct.is_finite() {
            worst = (pct, x.label.clone());
        }
    }
    worst
}

/// Each figure of the first pass through every pass, against the run's own noise.
fn summarise(passes: &[Vec<Remeasured>], own: &[Figure]) -> Vec<DriftFigure> {
    passes[0]
        .iter()
        .map(|first| {
            let values: Vec<f64> = passes
                .iter()
                .filter_map(|p| p.iter().find(|r| r.key == first.key).map(|r| r.after))
                .collect();
            let drift_pct = values
                .iter()
                .map(|&v| {
                    Remeasured {
                        after: v,
                        ..first.clone()
                    }
                    .drift_pct()
                })
                .fold(0.0, f64::max);
            let spread_pct = own
                .iter()
                .find(|f| f.key == first.key)
                .and_then(|f| f.spread_pct);
            let noise = (3.0 * spread_pct.unwrap_or(0.0)).max(1.0);
            DriftFigure {
                key: first.key.clone(),
                label: first.label.clone(),
                unit: first.unit.clone(),
                before: first.before,
                passes: values,
                drift_pct,
                spread_pct,
                beyond_noise: drift_pct > noise,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::figure::Better;

    fn again(key: &str, before: f64, after: f64) -> Remeasured {
        Remeasured {
            key: key.into(),
            label: key.into(),
            unit: "ns".into(),
            before,
            after,
        }
    }

    #[test]
    fn drift_is_the_largest_move_over_the_passes_judged_against_the_spread() {
        let passes = vec![
            vec![again("a", 100.0, 101.0), again("b", 10.0, 12.0)],
            vec![again("a", 100.0, 99.5), again("b", 10.0, 10.1)],
        ];
        let own = vec![Figure::new("x", "y", "a", "ns", 100.0, Better::Lower).spread(0.5)];
        let mut own = own;
        own[0].key = "a".into();
        let s = summarise(&passes, &own);
        assert_eq!(s[0].passes, [101.0, 99.5]);
        assert!((s[0].drift_pct - 1.0).abs() < 1e-9);
        assert!(!s[0].beyond_noise, "1% is within 3 × 0.5%");
        assert!((s[1].drift_pct - 20.0).abs() < 1e-9);
        assert!(
            s[1].beyond_noise,
            "20% with no spread is beyond the 1% floor"
        );
        let (pct, figure) = disagreement(&passes[0], &passes[1]);
        assert_eq!(figure, "b");
        assert!((pct - 18.8118).abs() < 1e-3, "{pct}");
    }

    #[test]
    fn a_result_annotates_the_figures_it_measured_again() {
        let d = DriftResult {
            passes: 1,
            elapsed_s: 0.1,
            figures: summarise(&[vec![again("k", 10.0, 11.0)]], &[]),
            until_stable: None,
        };
        let mut figures = vec![Figure::new("s", "k", "k", "ns", 10.0, Better::Lower)];
        figures[0].key = "k".into();
        figures.push(Figure::new("s", "other", "o", "ns", 1.0, Better::Lower));
        d.annotate(&mut figures);
        assert_eq!(figures[0].drift_pct, Some(10.0));
        assert_eq!(figures[1].drift_pct, None);
        assert_eq!(d.beyond_noise().count(), 1);
    }

    #[test]
    fn the_summary_gets_the_farthest_pass_with_its_sign() {
        let passes = vec![
            vec![again("down", 20.0, 19.0), again("up", 10.0, 10.5)],
            vec![again("down", 20.0, 7.0), again("up", 10.0, 9.9)],
        ];
        let d = DriftResult {
            passes: 2,
            elapsed_s: 0.1,
            figures: summarise(&passes, &[]),
            until_stable: None,
        };
        let glance = d.glance();
        assert_eq!(glance[0].key, "down");
        assert!((glance[0].pct + 65.0).abs() < 1e-9, "{}", glance[0].pct);
        assert!((glance[1].pct - 5.0).abs() < 1e-9, "{}", glance[1].pct);
        assert!(glance[0].beyond_noise && glance[1].beyond_noise);
        let nothing = DriftFigure {
            before: 0.0,
            ..d.figures[0].clone()
        };
        assert!(nothing.signed_pct().is_nan());
    }

    #[test]
    fn every_figure_carries_the_scatter_of_its_kind() {
        let passes = vec![vec![
            again("latency.level.L1d.latency_ns", 1.0, 1.05),
            again("latency.level.L2.latency_ns", 4.0, 4.4),
            again("latency.level.L3.latency_ns", 10.0, 12.0),
            again("bandwidth.read.1t", 100.0, 101.0),
        ]];
        let d = DriftResult {
            passes: 1,
            elapsed_s: 0.1,
            figures: summarise(&passes, &[]),
            until_stable: None,
        };
        let figure =
            |section: &str, key: &str| Figure::new(section, key, key, "ns", 1.0, Better::Lower);
        let mut figures = vec![
            figure("latency", "level.L2.latency_ns"),
            figure("stride", "read.64"),
        ];
        d.annotate(&mut figures);
        // Latency's own three drifts (5, 10, 20%): their 90th percentile.
        assert!((figures[0].scatter_pct.unwrap() - 20.0).abs() < 1e-9);
        assert!((figures[0].drift_pct.unwrap() - 10.0).abs() < 1e-9);
        // No stride figure was re-measured: the whole run's (1, 5, 10, 20%).
        assert!((figures[1].scatter_pct.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(figures[1].drift_pct, None);
        // And the band holds it.
        let band = crate::view::judge::noise_band_pct(&figures[1]);
        assert_eq!(band, None, "a figure without spread or step is not judged");
        let judged = figures[0].clone().spread(1.0);
        assert!(crate::view::judge::noise_band_pct(&judged).unwrap() >= 20.0);
    }
}
