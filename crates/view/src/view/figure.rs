//! A result's comparable figures as data: what `compare` sets side by side, what
//! `history` stores and checks, and what the Prometheus export writes. Each result lists
//! its own (`Figures`, implemented in its room's `figures.rs`); everything that compares
//! or exports walks these lists without knowing any experiment.

use serde::{Deserialize, Serialize};

/// Which way a figure gets better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Better {
    /// Latencies, times, miss costs.
    Lower,
    /// Bandwidths, IOPS, parallelism, speed-ups.
    Higher,
    /// Capacities, entry counts: a change is worth knowing, neither way is worse.
    Neither,
}

/// How a figure is exported for monitoring: its Prometheus metric family (without the
/// `memscope_` prefix, with its base unit as the suffix, as the naming conventions ask),
/// its labels, and the factor from the figure's display unit to the base unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// "level_latency_seconds".
    pub name: String,
    /// The family's HELP text.
    pub help: String,
    /// ("level", "L1d"), ("threads", "2") …
    pub labels: Vec<(String, String)>,
    /// Display value × scale = the metric's value (1e-9 from ns to seconds, 1e9 from GB/s
    /// to bytes per second).
    pub scale: f64,
}

/// One figure of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Stable across runs and versions, unique within a report:
    /// "latency.level.L1d.latency_ns".
    pub key: String,
    /// The id of the section it belongs to ("latency").
    pub section: String,
    /// What a reader sees in a row: "L1d latency".
    pub label: String,
    /// Display unit: "ns", "GB/s", "bytes", "IOPS", "µs", "×", or "" for a count.
    pub unit: String,
    pub value: f64,
    /// This run's own spread of the figure in percent, from its repeated trials (the
    /// robust 1.4826·MAD/median, or a 95% interval's half-width / 1.96); None when the
    /// figure was not measured by repeated trials.
    pub spread_pct: Option<f64>,
    /// For a figure read off a grid (a capacity on a ladder of sizes, a queue depth), one
    /// step of the grid in percent: a difference smaller than a step is not a change.
    pub step_pct: Option<f64>,
    /// How far the figure moved between the run's measurement and its drift pass at the
    /// end of the run, percent (the largest over the passes); None without a pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_pct: Option<f64>,
    /// How far figures of its kind moved by themselves within this run: the drift pass's
    /// scatter over its section's re-measured figures (the whole run's where the section
    /// has too few), percent. Two runs of one machine differ at least this much, which
    /// no figure's own trials can know; None without a drift pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scatter_pct: Option<f64>,
    pub better: Better,
    /// Set on the headline figures that the Prometheus export writes.
    pub metric: Option<Metric>,
}

impl Figure {
    /// A figure without a spread, step or metric yet; the builders below add them.
    pub fn new(
        section: &str,
        key: impl Into<String>,
        label: impl Into<String>,
        unit: &str,
        value: f64,
        better: Better,
    ) -> Figure {
        Figure {
            key: format!("{section}.{}", key.into()),
            section: section.to_string(),
            label: label.into(),
            unit: unit.to_string(),
            value,
            spread_pct: None,
            step_pct: None,
            drift_pct: None,
            scatter_pct: None,
            better,
            metric: None,
        }
    }

    /// The run's own spread (percent); a NaN or negative spread counts as none.
    pub fn spread(mut self, spread_pct: f64) -> Figure {
        self.spread_pct = (spread_pct.is_finite() && spread_pct >= 0.0).then_some(spread_pct);
        self
    }

    /// The grid step (percent) the figure was read off.
    pub fn step(mut self, step_pct: f64) -> Figure {
        self.step_pct = (step_pct.is_finite() && step_pct > 0.0).then_some(step_pct);
        self
    }

    /// Exports the figure as `memscope_<name>{labels}` = value × scale.
    pub fn metric(
        mut self,
        name: &str,
        help: &str,
        labels: &[(&str, String)],
        scale: f64,
    ) -> Figure {
        self.metric = Some(Metric {
            name: name.to_string(),
            help: help.to_string(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            scale,
        });
        self
    }
}

/// A headline figure measured again at the end of a run (the drift pass): its value in
/// the run's result and now. `before` is the point the pass repeats, which for an
/// aggregate (a level's latency, the median of its plateau) is one of its points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Remeasured {
    /// The figure's key (`Figure::key`).
    pub key: String,
    pub label: String,
    pub unit: String,
    pub before: f64,
    pub after: f64,
}

impl Remeasured {
    /// |after − before| / before, percent (NaN when before is not a positive number).
    pub fn drift_pct(&self) -> f64 {
        if self.before > 0.0 && self.after.is_finite() {
            (self.after - self.before).abs() / self.before * 100.0
        } else {
            f64::NAN
        }
    }
}

/// The grid step, in percent, between neighbouring values of an ascending ladder around
/// `value` (the larger of the steps to its neighbours): a capacity found on the ladder
/// 32 KiB, 48 KiB, 64 KiB is known to about 50%.
pub fn ladder_step_pct(ladder: &[u64], value: u64) -> Option<f64> {
    let i = ladder.iter().position(|&v| v >= value)?;
    let step = |a: u64, b: u64| (b as f64 / a.max(1) as f64 - 1.0) * 100.0;
    let below = i.checked_sub(1).map(|j| step(ladder[j], ladder[i]));
    let above = ladder.get(i + 1).map(|&next| step(ladder[i], next));
    match (below, above) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The figure with this key (tests).
#[cfg(any(test, feature = "test-support"))]
pub fn find<'a>(figures: &'a [Figure], key: &str) -> &'a Figure {
    let found = figures.iter().find(|f| f.key == key);
    found.unwrap_or_else(|| panic!("no {key} in {figures:?}"))
}

/// A result that lists its comparable figures.
pub trait Figures {
    fn figures(&self) -> Vec<Figure>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_the_section_and_bad_spreads_count_as_none() {
        let f = Figure::new(
            "latency",
            "level.L1d.latency_ns",
            "L1d",
            "ns",
            1.0,
            Better::Lower,
        )
        .spread(f64::NAN)
        .step(0.0);
        assert_eq!(f.key, "latency.level.L1d.latency_ns");
        assert_eq!((f.spread_pct, f.step_pct), (None, None));
        assert_eq!(f.clone().spread(2.5).spread_pct, Some(2.5));
    }

    #[test]
    fn a_ladder_step_is_the_wider_neighbouring_step() {
        let ladder = [32 << 10, 48 << 10, 64 << 10, 128 << 10];
        assert_eq!(ladder_step_pct(&ladder, 48 << 10), Some(50.0));
        assert_eq!(ladder_step_pct(&ladder, 128 << 10), Some(100.0));
        assert_eq!(ladder_step_pct(&ladder, 1 << 30), None);
        assert_eq!(ladder_step_pct(&[4096], 4096), None);
    }
}
