//! `history --check`: each host's latest run against the earlier runs of the same host,
//! series and settings (`identity`): a `stat -- true` run is never set against a
//! `stat -- sleep 0.2` one, nor a `--quick` run against a full one. Up to `window` such
//! earlier runs are used, the newest first.
//!
//! A figure's reference is the median of its earlier values, leaving out those measured
//! while the machine was shared (their experiment `disturbed`) or that drifted within
//! their run, as long as a settled value remains. Its band is the widest of the earlier
//! runs' own noise (their median band, as `view::judge` makes it), the latest run's own,
//! how far the earlier values scatter among themselves (three robust standard deviations,
//! from three runs on), and the floor of the figure's kind (`Kind`): what two quiet runs
//! of one unchanged machine differ by, measured on a shared 2-vCPU VM. A difference
//! within the kind's absolute floor (a tenth of a nanosecond, ten milliseconds of CPU
//! time) is no change whatever its percentage, and a change from or to zero is not judged
//! (no percentage exists). A figure worse beyond the band is a regression unless the
//! latest run measured it while disturbed or drifting: then it is shown, marked, and not
//! counted.

use serde::{Deserialize, Serialize};

use super::identity;
use super::{History, RunRow};
use crate::stats::Summary;
use crate::view::figure::{Better, Figure};
use crate::view::judge::{self, Verdict};

/// What a figure measures, for its noise floor: read off its display unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Time per access or per operation: ns, µs, cycles.
    Latency,
    /// GB/s, IOPS.
    Throughput,
    /// A program's time: s, ms.
    Time,
    /// Capacities and sizes read off a ladder: bytes, entries.
    Size,
    /// A percentage.
    Share,
    /// Events the scheduler decides, not the program (context switches, CPU
    /// migrations): they follow the machine's other load.
    Scheduling,
    /// Counts, ratios and everything else.
    Count,
}

/// The smallest band of a kind: a relative floor (percent) and an absolute one (in the
/// figure's unit), either of which makes a difference no change.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Floor {
    pub pct: f64,
    pub abs: f64,
}

impl Kind {
    /// The kind of a figure, by its unit (and for counts, by its event).
    pub fn of_figure(f: &Figure) -> Kind {
        let scheduling = ["context-switches", "cpu-migrations", ".cs.", ".migrations."];
        match Kind::of(&f.unit) {
            Kind::Count if scheduling.iter().any(|s| f.key.contains(s)) => Kind::Scheduling,
            kind => kind,
        }
    }

    /// The kind of a figure in `unit`.
    pub fn of(unit: &str) -> Kind {
        match unit {
            "ns" | "µs" | "us" | "cycles" => Kind::Latency,
            "GB/s" | "MB/s" | "IOPS" => Kind::Throughput,
            "s" | "ms" => Kind::Time,
            "bytes" | "entries" => Kind::Size,
            "%" => Kind::Share,
            _ => Kind::Count,
        }
    }

    /// The floor for a figure of this kind in `unit`. Measured on a shared 2-vCPU KVM
    /// guest, two quiet `latency --quick` runs a minute apart: L1d 1.08 → 1.18 ns (9%,
    /// a tenth of a nanosecond, under half a cycle), the other levels within ~5% and DRAM
    /// within ~8%; quick bandwidths within ~10%. Program times move by scheduler ticks.
    pub fn floor(self, unit: &str) -> Floor {
        match self {
            // 0.15 ns: under half a cycle at any clock such a VM runs at.
            Kind::Latency => Floor {
                pct: 10.0,
                abs: match unit {
                    "ns" => 0.15,
                    "µs" | "us" => 0.000_15,
                    _ => 0.5,
                },
            },
            Kind::Throughput => Floor {
                pct: 15.0,
                abs: 0.0,
            },
            // Two scheduler ticks at 100 Hz of CPU time.
            Kind::Time => Floor {
                pct: 10.0,
                abs: if unit == "ms" { 20.0 } else { 0.02 },
            },
            Kind::Size => Floor {
                pct: judge::FLOOR_PCT,
                abs: 0.0,
            },
            // Percentage points.
            Kind::Share => Floor { pct: 5.0, abs: 1.0 },
            // A few switches more on a shared machine say nothing of the program.
            Kind::Scheduling => Floor {
                pct: 100.0,
                abs: 20.0,
            },
            // Page faults of one program move by a few pages with address-space layout.
            Kind::Count => Floor {
                pct: 10.0,
                abs: 5.0,
            },
        }
    }
}

/// One figure of the latest run against its history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checked {
    pub key: String,
    pub label: String,
    pub unit: String,
    pub better: Better,
    pub kind: Kind,
    pub latest: f64,
    /// The median of the earlier runs' values.
    pub reference: f64,
    /// The band around the reference, percent.
    pub band_pct: Option<f64>,
    /// Earlier runs whose value was used.
    pub earlier: usize,
    /// Earlier values left out: measured while disturbed or drifting, with settled ones
    /// there.
    pub left_out: usize,
    /// Every earlier value there was had been measured while disturbed or drifting.
    pub reference_unsettled: bool,
    /// The latest run measured it while the machine was shared or it drifted within
    /// the run: a worse verdict is shown but not counted as a regression.
    pub unsettled: bool,
    pub verdict: Verdict,
}

impl Checked {
    /// Worse beyond the noise, measured settled: what makes `--check` exit 1.
    pub fn is_regression(&self) -> bool {
        self.verdict == Verdict::Worse && !self.unsettled
    }
}

/// One host's latest run, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostCheck {
    pub host: String,
    pub command: String,
    /// The series (`identity::identity`).
    pub identity: String,
    pub latest: RunRow,
    /// The ids of the earlier runs used.
    pub earlier_runs: Vec<i64>,
    /// Earlier runs of the same series passed over for other settings, and which.
    pub other_settings: usize,
    pub other_settings_what: Vec<String>,
    pub figures: Vec<Checked>,
}

impl HostCheck {
    /// The regressions: worse beyond the noise and measured settled.
    pub fn regressions(&self) -> impl Iterator<Item = &Checked> {
        self.figures.iter().filter(|f| f.is_regression())
    }

    /// Worse figures not counted, as measured while disturbed or drifting.
    pub fn unsettled_worse(&self) -> impl Iterator<Item = &Checked> {
        self.figures
            .iter()
            .filter(|f| f.verdict == Verdict::Worse && f.unsettled)
    }
}

/// Checks the latest run of every host (or of `host`) against at most `window` earlier
/// runs of the same host, series and settings.
pub fn check(
    history: &History,
    host: Option<&str>,
    window: usize,
) -> anyhow::Result<Vec<HostCheck>> {
    let runs = history.runs(host, None)?;
    let mut checks = Vec::new();
    // Sorted by host, then date: each host's runs are one stretch, its latest last.
    for of_host in runs.chunk_by(|a, b| a.host == b.host) {
        let Some((latest, before)) = of_host.split_last() else {
            continue;
        };
        let h = latest.host.as_str();
        let series: Vec<&RunRow> = before
            .iter()
            .filter(|r| r.identity == latest.identity)
            .collect();
        let mut other_settings_what: Vec<String> = Vec::new();
        let mut other_settings = 0;
        let mut earlier: Vec<&RunRow> = Vec::new();
        for r in series.into_iter().rev() {
            let differs = identity::differing(&latest.settings, &r.settings);
            if differs.is_empty() {
                if earlier.len() < window {
                    earlier.push(r);
                }
            } else {
                other_settings += 1;
                for what in differs {
                    if !other_settings_what.contains(&what) {
                        other_settings_what.push(what);
                    }
                }
            }
        }
        let earlier_figures: Vec<(Vec<Figure>, &RunRow)> = earlier
            .iter()
            .map(|r| Ok((history.figures(r.id)?, *r)))
            .collect::<anyhow::Result<_>>()?;
        let figures = history
            .figures(latest.id)?
            .iter()
            .filter_map(|f| check_figure(f, latest, &earlier_figures))
            .collect();
        checks.push(HostCheck {
            host: h.to_string(),
            command: latest.command.clone(),
            identity: latest.identity.clone(),
            latest: latest.clone(),
            earlier_runs: earlier.iter().map(|r| r.id).collect(),
            other_settings,
            other_settings_what,
            figures,
        });
    }
    Ok(checks)
}

/// Whether a run's figure was measured unsettled: its experiment disturbed, or the run's
/// drift pass moved it beyond its kind's floor.
fn unsettled(f: &Figure, run: &RunRow) -> bool {
    identity::section_disturbed(&run.disturbed, &f.section)
        || (run.drift
            && f.drift_pct
                .is_some_and(|d| d > Kind::of_figure(f).floor(&f.unit).pct))
}

/// The latest figure against the same figure of the earlier runs (None when no earlier run
/// has it).
pub fn check_figure(
    latest: &Figure,
    latest_run: &RunRow,
    earlier: &[(Vec<Figure>, &RunRow)],
) -> Option<Checked> {
    let all: Vec<(&Figure, bool)> = earlier
        .iter()
        .filter_map(|(figures, run)| {
            let f = figures.iter().find(|f| f.key == latest.key)?;
            Some((f, unsettled(f, run)))
        })
        .filter(|(f, _)| f.value.is_finite())
        .collect();
    if all.is_empty() {
        return None;
    }
    let settled: Vec<&Figure> = all.iter().filter(|(_, u)| !u).map(|(f, _)| *f).collect();
    let reference_unsettled = settled.is_empty();
    let past: Vec<&Figure> = if reference_unsettled {
        all.iter().map(|(f, _)| *f).collect()
    } else {
        settled
    };
    let kind = Kind::of_figure(latest);
    let floor = kind.floor(&latest.unit);
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
    let latest_band = judge::noise_band_pct(latest);
    let band_pct = [own_band, scatter, latest_band]
        .into_iter()
        .flatten()
        .fold(floor.pct, f64::max);
    Some(Checked {
        key: latest.key.clone(),
        label: latest.label.clone(),
        unit: latest.unit.clone(),
        better: latest.better,
        kind,
        latest: latest.value,
        reference,
        band_pct: Some(band_pct),
        earlier: past.len(),
        left_out: all.len() - past.len(),
        reference_unsettled,
        unsettled: unsettled(latest, latest_run),
        verdict: verdict(reference, latest.value, band_pct, floor, latest.better),
    })
}

/// The verdict on `latest` against `reference` with a band in percent and the kind's
/// floor: within the band (at least the floor's percentage) or the absolute floor is the
/// same; from or to zero, beyond
/// the absolute floor, is not judged (no percentage of zero exists, and a zero is as
/// often a figure that was not measured as one that was none).
pub fn verdict(
    reference: f64,
    latest: f64,
    band_pct: f64,
    floor: Floor,
    better: Better,
) -> Verdict {
    if !reference.is_finite() || !latest.is_finite() {
        return Verdict::NotJudged;
    }
    let difference = latest - reference;
    if difference.abs() <= floor.abs {
        return Verdict::Same;
    }
    // Relative to the smaller value, so one step up a ladder is one step either way.
    let base = reference.abs().min(latest.abs());
    if base == 0.0 {
        return Verdict::NotJudged;
    }
    if difference.abs() / base * 100.0 <= band_pct.max(floor.pct) * (1.0 + 1e-6) {
        return Verdict::Same;
    }
    Verdict::beyond_noise(better, difference > 0.0)
}

#[cfg(test)]
mod tests {
    use super::super::tests::report;
    use super::*;
    use crate::history::identity::tests::stat_result;
    use crate::history::Access;
    use crate::report::Report;
    use crate::session::conditions::ExperimentConditions;

    fn open(dir: &tempfile::TempDir) -> History {
        History::open(&dir.path().join("h.sqlite3"), Access::Write).unwrap()
    }

    fn of(checks: &[HostCheck], host: &str) -> HostCheck {
        checks.iter().find(|c| c.host == host).unwrap().clone()
    }

    #[test]
    fn a_run_20_percent_slower_is_a_regression_and_a_repeat_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = open(&dir);
        for (i, scale) in [1.0, 1.002, 0.998].into_iter().enumerate() {
            h.add(&report("box", 10 + i as u64, scale), "saved")
                .unwrap();
        }
        h.add(&report("other", 5, 1.0), "saved").unwrap();
        let quiet = check(&h, None, 10).unwrap();
        assert_eq!(quiet.len(), 2);
        assert_eq!(of(&quiet, "box").regressions().count(), 0);
        // "other" has a single run: nothing to check against.
        assert!(of(&quiet, "other").figures.is_empty());

        h.add(&report("box", 20, 1.3), "slower.json").unwrap();
        let slow = of(&check(&h, Some("box"), 10).unwrap(), "box");
        assert_eq!(slow.earlier_runs.len(), 3);
        let worse: Vec<&str> = slow.regressions().map(|f| f.label.as_str()).collect();
        assert!(!worse.is_empty(), "{:?}", slow.figures);
        assert!(slow.regressions().all(|f| f.better == Better::Lower));
    }

    fn stat_run(host: &str, when: u64, program: &[&str], elapsed: f64, user: f64) -> Report {
        let mut r = report(host, when, 1.0);
        r.experiments = Default::default();
        r.settings.command = "stat".into();
        r.stat = Some(stat_result(program, elapsed, user));
        r
    }

    #[test]
    fn runs_of_another_program_are_another_series_and_a_zero_baseline_is_not_judged() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = open(&dir);
        for i in 0..3 {
            h.add(&stat_run("box", 10 + i, &["ls", "-R"], 0.05, 0.0), "saved")
                .unwrap();
        }
        h.add(&stat_run("box", 20, &["sleep", "0.2"], 0.2, 0.001), "saved")
            .unwrap();
        let c = of(&check(&h, None, 10).unwrap(), "box");
        assert_eq!(c.identity, "stat -- sleep 0.2");
        assert!(c.earlier_runs.is_empty() && c.figures.is_empty(), "{c:?}");
        // The same program again: user time 0.001 s → 0.05 s is beyond the floor, from a
        // zero baseline not judged, never a regression.
        h.add(&stat_run("box", 30, &["ls", "-R"], 0.05, 0.05), "saved")
            .unwrap();
        let c = of(&check(&h, None, 10).unwrap(), "box");
        assert_eq!(c.earlier_runs.len(), 3);
        assert_eq!(c.regressions().count(), 0, "{:?}", c.figures);
        let user = c.figures.iter().find(|f| f.key.contains("user")).unwrap();
        assert_eq!(user.verdict, Verdict::NotJudged, "{user:?}");
    }

    #[test]
    fn runs_with_other_settings_are_passed_over_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = open(&dir);
        let mut full = report("box", 10, 1.0);
        full.settings.quick = false;
        full.settings.repetitions = 7;
        h.add(&full, "full.json").unwrap();
        let mut quick = report("box", 20, 1.5);
        quick.settings.quick = true;
        quick.settings.repetitions = 3;
        h.add(&quick, "quick.json").unwrap();
        let c = of(&check(&h, None, 10).unwrap(), "box");
        assert!(c.earlier_runs.is_empty() && c.figures.is_empty());
        assert_eq!(c.other_settings, 1);
        assert_eq!(c.other_settings_what, ["quick", "repetitions"]);
    }

    #[test]
    fn a_disturbed_latest_run_is_marked_not_counted_and_disturbed_references_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = open(&dir);
        let disturbed = |mut r: Report| {
            r.conditions.push(ExperimentConditions {
                experiment: "latency".into(),
                elapsed_s: 1.0,
                other_runnable_mean: Some(1.5),
                other_runnable_max: Some(2.0),
                other_runnable_share_pct: Some(90.0),
                samples: 10,
                tasks: vec!["cc1".into()],
                steal_pct: None,
                disturbed: true,
            });
            r
        };
        h.add(&report("box", 10, 1.0), "a").unwrap();
        // A disturbed earlier run, much slower: left out of the reference.
        h.add(&disturbed(report("box", 20, 2.0)), "b").unwrap();
        h.add(&disturbed(report("box", 30, 1.5)), "c").unwrap();
        let c = of(&check(&h, None, 10).unwrap(), "box");
        assert_eq!(c.earlier_runs.len(), 2);
        assert!(c.regressions().count() == 0);
        let worse: Vec<&Checked> = c.unsettled_worse().collect();
        assert!(!worse.is_empty(), "{:?}", c.figures);
        assert!(worse
            .iter()
            .all(|f| f.left_out == 1 && f.earlier == 1 && !f.reference_unsettled));
    }

    #[test]
    fn floors_suit_the_kind_of_figure() {
        let floor = |unit: &str| Kind::of(unit).floor(unit);
        let lower = Better::Lower;
        // L1d 1.08 → 1.18 ns on a quiet VM: under the absolute floor.
        assert_eq!(verdict(1.08, 1.18, 1.0, floor("ns"), lower), Verdict::Same);
        assert_eq!(verdict(80.0, 84.0, 1.0, floor("ns"), lower), Verdict::Same);
        assert_eq!(
            verdict(80.0, 100.0, 1.0, floor("ns"), lower),
            Verdict::Worse
        );
        // CPU time from nothing: no percentage, not judged; within ticks: the same.
        assert_eq!(
            verdict(0.0, 0.5, 1.0, floor("s"), lower),
            Verdict::NotJudged
        );
        assert_eq!(verdict(0.0, 0.01, 1.0, floor("s"), lower), Verdict::Same);
        assert_eq!(
            verdict(20.0, 15.0, 1.0, floor("GB/s"), Better::Higher),
            Verdict::Worse
        );
        assert_eq!(
            verdict(20.0, 18.0, 1.0, floor("GB/s"), Better::Higher),
            Verdict::Same
        );
        assert_eq!(Kind::of(""), Kind::Count);
    }
}
