//! `history --check`: each host's latest run against the earlier runs of the same host and
//! command. A figure's reference is the median of its earlier values; its band is the
//! widest of the earlier runs' own noise (their median band, as `view::judge` makes
//! it) and how far the earlier values scatter among themselves (three robust standard
//! deviations, from three runs on). The latest value is judged against that band and its
//! own, as `compare` judges two runs; a figure worse beyond both is a regression.

use serde::{Deserialize, Serialize};

use super::{History, RunRow};
use crate::stats::Summary;
use crate::view::figure::{Better, Figure};
use crate::view::judge::{self, Verdict};

/// One figure of the latest run against its history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checked {
    pub key: String,
    pub label: String,
    pub unit: String,
    pub better: Better,
    pub latest: f64,
    /// The median of the earlier runs' values.
    pub reference: f64,
    /// The band around the reference, percent.
    pub band_pct: Option<f64>,
    /// Earlier runs that had the figure.
    pub earlier: usize,
    pub verdict: Verdict,
}

/// One host's latest run, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostCheck {
    pub host: String,
    pub command: String,
    pub latest: RunRow,
    /// The ids of the earlier runs used.
    pub earlier_runs: Vec<i64>,
    pub figures: Vec<Checked>,
}

impl HostCheck {
    pub fn regressions(&self) -> impl Iterator<Item = &Checked> {
        self.figures.iter().filter(|f| f.verdict == Verdict::Worse)
    }
}

/// Checks the latest run of every host (or of `host`) against at most `window` earlier
/// runs of the same host and command.
pub fn check(
    history: &History,
    host: Option<&str>,
    window: usize,
) -> anyhow::Result<Vec<HostCheck>> {
    let runs = history.runs(host, None)?;
    let mut hosts: Vec<&str> = Vec::new();
    for r in &runs {
        if !hosts.contains(&r.host.as_str()) {
            hosts.push(&r.host);
        }
    }
    let mut checks = Vec::new();
    for h in hosts {
        let of_host: Vec<&RunRow> = runs.iter().filter(|r| r.host == h).collect();
        let latest = *of_host.last().expect("a host has a run");
        let earlier: Vec<&RunRow> = of_host[..of_host.len() - 1]
            .iter()
            .filter(|r| r.command == latest.command)
            .rev()
            .take(window)
            .copied()
            .collect();
        let earlier_figures: Vec<Vec<Figure>> = earlier
            .iter()
            .map(|r| history.figures(r.id))
            .collect::<anyhow::Result<_>>()?;
        let figures = history
            .figures(latest.id)?
            .iter()
            .filter_map(|f| check_figure(f, &earlier_figures))
            .collect();
        checks.push(HostCheck {
            host: h.to_string(),
            command: latest.command.clone(),
            latest: latest.clone(),
            earlier_runs: earlier.iter().map(|r| r.id).collect(),
            figures,
        });
    }
    Ok(checks)
}

/// The latest figure against the same figure of the earlier runs (None when no earlier run
/// has it).
pub fn check_figure(latest: &Figure, earlier: &[Vec<Figure>]) -> Option<Checked> {
    let past: Vec<&Figure> = earlier
        .iter()
        .filter_map(|run| run.iter().find(|f| f.key == latest.key))
        .filter(|f| f.value.is_finite())
        .collect();
    if past.is_empty() {
        return None;
    }
    let values: Vec<f64> = past.iter().map(|f| f.value).collect();
    let reference = Summary::of(&values).map(|s| s.median)?;
    let own: Vec<f64> = past
        .iter()
        .filter_map(|f| judge::noise_band_pct(f))
        .collect();
    let own_band = Summary::of(&own).map(|s| s.median);
    let scatter = (values.len() >= 3)
        .then(|| Summary::of(&values).map(|s| judge::NOISE_SIGMAS * s.spread_pct()))
        .flatten()
        .filter(|s| s.is_finite());
    let band_pct = match (own_band, scatter) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0).max(b.unwrap_or(0.0)).max(judge::FLOOR_PCT)),
    };
    Some(Checked {
        key: latest.key.clone(),
        label: latest.label.clone(),
        unit: latest.unit.clone(),
        better: latest.better,
        latest: latest.value,
        reference,
        band_pct,
        earlier: past.len(),
        verdict: judge::judge_against(reference, band_pct, latest, latest.better),
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::report;
    use super::*;

    #[test]
    fn a_run_20_percent_slower_is_a_regression_and_a_repeat_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let mut h =
            History::open(&dir.path().join("h.sqlite3"), crate::history::Access::Write).unwrap();
        for (i, scale) in [1.0, 1.002, 0.998].into_iter().enumerate() {
            h.add(&report("box", 10 + i as u64, scale), "saved")
                .unwrap();
        }
        h.add(&report("other", 5, 1.0), "saved").unwrap();
        let quiet = check(&h, None, 10).unwrap();
        assert_eq!(quiet.len(), 2);
        let of = |checks: &[HostCheck], host: &str| {
            checks.iter().find(|c| c.host == host).unwrap().clone()
        };
        assert_eq!(of(&quiet, "box").regressions().count(), 0);
        // "other" has a single run: nothing to check against.
        assert!(of(&quiet, "other").figures.is_empty());

        h.add(&report("box", 20, 1.2), "slower.json").unwrap();
        let slow = of(&check(&h, Some("box"), 10).unwrap(), "box");
        assert_eq!(slow.earlier_runs.len(), 3);
        let worse: Vec<&str> = slow.regressions().map(|f| f.label.as_str()).collect();
        assert!(!worse.is_empty(), "{:?}", slow.figures);
        assert!(slow.regressions().all(|f| f.better == Better::Lower));
    }
}
