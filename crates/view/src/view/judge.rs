//! When a difference between two runs' figures is a change: only when it lies outside the
//! noise band of *both* runs (`compare` sets runs side by side with it, `history --check`
//! the latest run against its host's earlier ones). A run's band around a figure is the widest of
//! `NOISE_SIGMAS` × its own spread (from its trials), one step of the grid the figure was
//! read off, how far it drifted between the run's measurement and the drift pass at its
//! end, how far the run's re-measured figures of its kind drifted (`Figure::scatter_pct`:
//! a shared host moves figures between runs far beyond their trials' spread), and
//! `FLOOR_PCT` (what page placement and the clock move between two runs of an unchanged
//! machine). A figure with neither spread nor step in either run is shown but
//! not judged.

use serde::{Deserialize, Serialize};

use crate::view::figure::{Better, Figure};

/// Spreads are robust standard deviations; three of them leave about 0.3% of an
/// unchanged figure's runs outside the band.
pub const NOISE_SIGMAS: f64 = 3.0;

/// The smallest band, percent: below it, two runs of one machine differ by themselves.
pub const FLOOR_PCT: f64 = 1.0;

/// What a difference is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Within the noise of one of the runs: `~`.
    Same,
    Better,
    Worse,
    /// Beyond the noise, for a figure with no better direction (a capacity).
    Changed,
    /// Neither run measured a spread or a grid step for it.
    NotJudged,
}

impl Verdict {
    /// The mark in a table: "~", "better", "worse", "changed", "?".
    pub fn mark(self) -> &'static str {
        match self {
            Verdict::Same => "~",
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Changed => "changed",
            Verdict::NotJudged => "?",
        }
    }

    /// A real difference, either way.
    pub fn is_change(self) -> bool {
        matches!(self, Verdict::Better | Verdict::Worse | Verdict::Changed)
    }
}

/// The band (percent) a run's figure moves within by itself, run to run: its own band
/// (`own_band_pct`) or the scatter of its kind between the run's passes
/// (`Figure::scatter_pct`), whichever is wider; None when the run measured neither a
/// spread nor a step.
pub fn noise_band_pct(f: &Figure) -> Option<f64> {
    own_band_pct(f).map(|band| band.max(f.scatter_pct.unwrap_or(0.0)))
}

/// The band (percent) the figure's own measurement gives: its trials' spread, its step
/// on a ladder of sizes, its own drift; None when it measured neither a spread nor a
/// step. A fleet judges a report with this one: the scatter between runs, which two runs
/// compared borrow from the drift pass of the figure's section, a fleet measures itself,
/// figure by figure, as its robust spread (`compare::fleet`).
pub fn own_band_pct(f: &Figure) -> Option<f64> {
    match (f.spread_pct, f.step_pct, f.drift_pct) {
        (None, None, None) => None,
        (spread, step, drift) => Some(
            (NOISE_SIGMAS * spread.unwrap_or(0.0))
                .max(step.unwrap_or(0.0))
                .max(drift.unwrap_or(0.0))
                .max(FLOOR_PCT),
        ),
    }
}

/// Judges `b` against `a` (the same figure of two runs).
pub fn judge(a: &Figure, b: &Figure) -> Verdict {
    judge_against(a.value, noise_band_pct(a), b, a.better)
}

/// Judges `b` against a reference value with its band in percent (the first run's, or a
/// history's). The difference is taken relative to the smaller of the two values, so one
/// step up a ladder of sizes is one step either way.
pub(crate) fn judge_against(
    reference: f64,
    band_pct: Option<f64>,
    b: &Figure,
    better: Better,
) -> Verdict {
    let bands: Vec<f64> = [band_pct, noise_band_pct(b)]
        .into_iter()
        .flatten()
        .collect();
    let base = reference.abs().min(b.value.abs());
    if bands.is_empty() || !reference.is_finite() || !b.value.is_finite() {
        return Verdict::NotJudged;
    }
    let difference = b.value - reference;
    let relative_pct = if base > 0.0 {
        difference.abs() / base * 100.0
    } else if difference == 0.0 {
        0.0
    } else {
        f64::INFINITY
    };
    // One grid step apart is within a step-wide band (a hair of rounding allowed).
    if bands
        .iter()
        .any(|&band| relative_pct <= band * (1.0 + 1e-6))
    {
        return Verdict::Same;
    }
    Verdict::beyond_noise(better, difference > 0.0)
}

impl Verdict {
    /// A difference found beyond the noise: better or worse by the figure's direction
    /// (`increased`: the later value is the larger), or only changed when it has none.
    pub fn beyond_noise(better: Better, increased: bool) -> Verdict {
        match (better, increased) {
            (Better::Neither, _) => Verdict::Changed,
            (Better::Higher, true) | (Better::Lower, false) => Verdict::Better,
            _ => Verdict::Worse,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(value: f64, spread: Option<f64>, better: Better) -> Figure {
        let f = Figure::new("latency", "x", "x", "ns", value, better);
        match spread {
            Some(s) => f.spread(s),
            None => f,
        }
    }

    #[test]
    fn a_difference_inside_either_run_s_band_is_no_change() {
        let a = figure(100.0, Some(1.0), Better::Lower);
        // Band of a: 3%; of b: 9%: 4% is inside b's.
        assert_eq!(
            judge(&a, &figure(104.0, Some(3.0), Better::Lower)),
            Verdict::Same
        );
        assert_eq!(
            judge(&a, &figure(104.0, Some(0.5), Better::Lower)),
            Verdict::Worse
        );
        assert_eq!(
            judge(&a, &figure(95.0, Some(0.5), Better::Lower)),
            Verdict::Better
        );
        // The floor: 0.5% apart with tiny spreads is no change.
        let tight = figure(100.0, Some(0.01), Better::Lower);
        assert_eq!(
            judge(&tight, &figure(100.5, Some(0.01), Better::Lower)),
            Verdict::Same
        );
    }

    #[test]
    fn a_figure_that_drifted_within_its_run_widens_that_run_s_band() {
        let a = figure(100.0, Some(1.0), Better::Higher);
        let mut b = figure(85.0, Some(1.0), Better::Higher);
        assert_eq!(judge(&a, &b), Verdict::Worse);
        b.drift_pct = Some(20.0);
        assert_eq!(judge(&a, &b), Verdict::Same);
    }

    #[test]
    fn a_section_s_scatter_widens_a_pair_s_band_but_not_the_figure_s_own() {
        let mut f = figure(100.0, Some(1.0), Better::Lower);
        f.scatter_pct = Some(30.0);
        assert_eq!(noise_band_pct(&f), Some(30.0));
        assert_eq!(own_band_pct(&f), Some(3.0), "3 × its 1% spread");
        f.drift_pct = Some(8.0);
        assert_eq!(own_band_pct(&f), Some(8.0), "its own drift counts");
    }

    #[test]
    fn direction_follows_better_and_unknown_spreads_are_not_judged() {
        let a = figure(10.0, Some(0.1), Better::Higher);
        assert_eq!(
            judge(&a, &figure(12.0, Some(0.1), Better::Higher)),
            Verdict::Better
        );
        let c = figure(10.0, Some(0.1), Better::Neither);
        assert_eq!(
            judge(&c, &figure(20.0, Some(0.1), Better::Neither)),
            Verdict::Changed
        );
        let bare = figure(10.0, None, Better::Higher);
        assert_eq!(
            judge(&bare, &figure(50.0, None, Better::Higher)),
            Verdict::NotJudged
        );
        // One run's band is enough to judge by.
        assert_eq!(
            judge(&bare, &figure(50.0, Some(1.0), Better::Higher)),
            Verdict::Better
        );
        // A grid step counts as a band: 48 KiB vs 32 KiB on a 50% ladder is no change.
        let step = |v: f64| Figure::new("l", "c", "c", "bytes", v, Better::Neither).step(50.0);
        assert_eq!(judge(&step(32.0), &step(48.0)), Verdict::Same);
        assert_eq!(judge(&step(32.0), &step(64.0)), Verdict::Changed);
        // Neighbours on a ×√2 ladder are one step apart, whatever the rounding.
        let root2 =
            |v: f64| Figure::new("l", "c", "c", "bytes", v, Better::Neither).step(41.421356);
        assert_eq!(judge(&root2(8.0), &root2(8.0 * 2f64.sqrt())), Verdict::Same);
    }
}
