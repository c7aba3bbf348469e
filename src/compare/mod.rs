//! `memscope compare`: two or more reports side by side. Every figure the reports share
//! (each result's `Figures`) is set against the first run's with its ratio, and called a
//! change only outside both runs' noise (`view::judge`). Machines and settings that
//! differ (CPU model, kernel, THP, pages …) are named first, so nobody compares apples
//! with oranges unknowingly: the runs' settings too (quick mode, repetitions, largest
//! size, CPUs, trial duration, the command line's other flags, by `history::identity`).
//! Runs measured while the machine was shared are marked `*`. Reports given as a directory are read whole and grouped by
//! CPU model, each group compared within itself (a fleet of hosts of one model). `view`
//! presents it; `load` reads the files.

pub mod fleet;
pub mod fleet_view;
pub mod load;
pub mod params;
pub mod view;

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::history::identity;
use crate::report::Report;
use crate::view::figure::{Better, Figure};
use crate::view::judge::{self, Verdict};

/// A report with where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub file: String,
    pub report: Report,
}

/// One run as the comparison names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// "A", "B" … (or the host names, when every run is of another host).
    pub label: String,
    pub file: String,
    pub host: String,
    /// RFC 3339, or "" for a schema-1 report.
    pub started: String,
    pub command: String,
    pub cpu_model: String,
    pub kernel: String,
    pub tool_version: String,
    pub schema_version: u32,
    /// The series ("stat -- sleep 0.2", `history::identity`).
    #[serde(default)]
    pub identity: String,
    /// The command line as given ("" when the report did not record it).
    #[serde(default)]
    pub command_line: String,
    /// The experiments it measured while other tasks or the hypervisor took a share of
    /// the machine.
    #[serde(default)]
    pub disturbed: Vec<String>,
}

/// What differs between the runs of a group, one value per run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// "CPU model", "kernel", "THP", "pages" …
    pub what: String,
    pub values: Vec<String>,
}

/// One figure in every run of a group; `cells[i]` is run `runs[i]`'s, None when that run
/// did not measure it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub key: String,
    pub section: String,
    pub label: String,
    pub unit: String,
    pub better: Better,
    pub cells: Vec<Option<Cell>>,
    /// The group's median, robust spread and outliers of the figure (`fleet::summarise`),
    /// when at least `fleet::FLEET_MIN_RUNS` runs measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<fleet::FleetFigure>,
}

/// A run's value of a figure, against the group's first run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub value: f64,
    pub spread_pct: Option<f64>,
    pub step_pct: Option<f64>,
    /// This value ÷ the first run's (None for the first run, or when it lacks the figure).
    pub ratio: Option<f64>,
    pub verdict: Option<Verdict>,
    /// This run or the first was measured while other tasks or the hypervisor took a share
    /// of the machine (the experiment's `conditions`): a change may be theirs.
    #[serde(default)]
    pub disturbed: bool,
}

/// Runs of one CPU model (or every run given as files), compared with the first of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub cpu_model: String,
    /// Indices into `Comparison::runs`.
    pub runs: Vec<usize>,
    pub differences: Vec<Difference>,
    pub rows: Vec<Row>,
}

/// The result of `memscope compare`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub runs: Vec<RunInfo>,
    pub groups: Vec<Group>,
    /// How a change is called, in words.
    pub rule: String,
    pub notes: Vec<String>,
}

impl Comparison {
    /// Changes per verdict over every group: (better, worse, changed, same, not judged). A
    /// fleet's (`Group::is_fleet`) are its reports by the outlier rule (an outlier counts
    /// by its direction, the others as the same), the other groups' against their first run.
    pub fn counts(&self) -> [usize; 5] {
        let mut counts = [0; 5];
        let mut count = |verdict: Verdict, n: usize| {
            let i = match verdict {
                Verdict::Better => 0,
                Verdict::Worse => 1,
                Verdict::Changed => 2,
                Verdict::Same => 3,
                Verdict::NotJudged => 4,
            };
            counts[i] += n;
        };
        for group in &self.groups {
            for row in &group.rows {
                match (&row.fleet, group.is_fleet()) {
                    (Some(fleet), true) => {
                        for outlier in &fleet.outliers {
                            count(outlier.verdict, 1);
                        }
                        count(Verdict::Same, fleet.reports - fleet.outliers.len());
                    }
                    (None, true) => count(Verdict::NotJudged, row.cells.iter().flatten().count()),
                    (_, false) => {
                        for verdict in row.cells.iter().flatten().filter_map(|c| c.verdict) {
                            count(verdict, 1);
                        }
                    }
                }
            }
        }
        counts
    }
}

impl Group {
    /// More runs than a table has room for: shown as a fleet (median, spread, outliers).
    pub fn is_fleet(&self) -> bool {
        self.runs.len() > view::SIDE_BY_SIDE_MAX
    }
}

/// The JSON document of `memscope compare`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareDocument {
    pub schema_version: u32,
    pub tool: crate::report::Tool,
    pub comparison: Comparison,
}

impl CompareDocument {
    pub fn new(comparison: Comparison) -> CompareDocument {
        CompareDocument {
            schema_version: crate::report::SCHEMA_VERSION,
            tool: crate::report::Tool::default(),
            comparison,
        }
    }
}

/// Compares the runs; `grouped` splits them by CPU model first.
pub fn compare(runs: &[Loaded], grouped: bool, notes: Vec<String>) -> Comparison {
    // Sets, not pairwise searches: a fleet has a thousand reports.
    let hosts: HashSet<&str> = runs.iter().map(|r| r.report.run.host.as_str()).collect();
    let distinct_hosts = hosts.len() == runs.len() && !hosts.contains("unknown");
    let stems: HashSet<&str> = runs.iter().map(|r| file_stem(&r.file)).collect();
    let distinct_stems = stems.len() == runs.len();
    let infos: Vec<RunInfo> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| RunInfo {
            label: if distinct_hosts {
                r.report.run.host.clone()
            } else if i >= 26 && distinct_stems {
                // Past the letters, a fleet's reports go by their file names.
                file_stem(&r.file).to_string()
            } else {
                run_letter(i)
            },
            file: r.file.clone(),
            host: r.report.run.host.clone(),
            started: r.report.run.started.clone(),
            command: r.report.settings.command.clone(),
            cpu_model: r.report.machine.cpu_model.clone(),
            kernel: r.report.machine.kernel.clone(),
            tool_version: r.report.tool.version.clone(),
            schema_version: r.report.schema_version,
            identity: identity::identity(&r.report),
            command_line: r.report.run.command_line(),
            disturbed: identity::disturbed(&r.report),
        })
        .collect();
    let mut members: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let model = if grouped {
            r.report.machine.cpu_model.clone()
        } else {
            String::new()
        };
        match members.iter_mut().find(|(m, _)| *m == model) {
            Some((_, list)) => list.push(i),
            None => members.push((model, vec![i])),
        }
    }
    let groups = members
        .into_iter()
        .map(|(model, indices)| {
            let reports: Vec<&Report> = indices.iter().map(|&i| &runs[i].report).collect();
            Group {
                cpu_model: if grouped {
                    model
                } else {
                    reports[0].machine.cpu_model.clone()
                },
                differences: differences(&reports),
                rows: rows(&reports, &indices),
                runs: indices,
            }
        })
        .collect();
    Comparison {
        runs: infos,
        groups,
        rule: format!(
            "a difference is a change only when it lies outside both runs' noise: {} × the \
             run's own spread, one step of the grid a figure was read off, its drift between \
             the measurement and the run's drift pass, or {}%, whichever is wider; '~' \
             otherwise; '?' where neither run measured a spread",
            judge::NOISE_SIGMAS,
            judge::FLOOR_PCT
        ),
        notes,
    }
}

/// "reports/r-7.json" → "r-7".
fn file_stem(file: &str) -> &str {
    let name = file.rsplit('/').next().unwrap_or(file);
    name.strip_suffix(".json").unwrap_or(name)
}

/// "A" … "Z", then "R27" …
fn run_letter(i: usize) -> String {
    if i < 26 {
        ((b'A' + i as u8) as char).to_string()
    } else {
        format!("R{}", i + 1)
    }
}

/// The machine and settings facts that make figures incomparable, where the runs differ:
/// the machine's, then the run's settings (`identity::settings`; one a report did not
/// record shows as such).
fn differences(reports: &[&Report]) -> Vec<Difference> {
    type Fact = fn(&Report) -> String;
    let facts: [(&str, Fact); 10] = [
        ("CPU model", |r| r.machine.cpu_model.clone()),
        ("logical CPUs", |r| r.machine.logical_cpus.to_string()),
        ("NUMA nodes", |r| r.machine.numa_nodes.len().to_string()),
        ("kernel", |r| r.machine.kernel.clone()),
        ("hypervisor", |r| {
            r.machine
                .hypervisor
                .clone()
                .unwrap_or_else(|| "none".into())
        }),
        ("THP", |r| {
            let thp = &r.machine.thp;
            match &thp.defrag {
                Some(d) => format!("enabled {}, defrag {d}", thp.enabled),
                None => format!("enabled {}", thp.enabled),
            }
        }),
        ("command", identity::identity),
        ("pages obtained", |r| match &r.settings.pages_obtained {
            Some(p) => format!(
                "{} ({:.0}% huge)",
                crate::units::Bytes(p.page_bytes),
                p.huge_fraction * 100.0
            ),
            None => "-".into(),
        }),
        ("memory", |r| {
            crate::units::Bytes(r.machine.memory_total_bytes).to_string()
        }),
        ("memscope", |r| r.tool.version.clone()),
    ];
    let settings: Vec<Vec<identity::Setting>> =
        reports.iter().map(|r| identity::settings(r)).collect();
    let mut names: Vec<String> = Vec::new();
    for s in settings.iter().flatten() {
        if !names.contains(&s.what) {
            names.push(s.what.clone());
        }
    }
    let mut rows: Vec<(String, Vec<String>)> = facts
        .iter()
        .map(|(what, fact)| (what.to_string(), reports.iter().map(|r| fact(r)).collect()))
        .collect();
    // The settings after the command, before the memscope version.
    let at = rows.len() - 1;
    let setting_rows = names.into_iter().map(|name| {
        let values = settings
            .iter()
            .map(|of_run| {
                of_run
                    .iter()
                    .find(|s| s.what == name)
                    .map_or_else(|| "(not recorded)".to_string(), |s| s.value.clone())
            })
            .collect();
        (name, values)
    });
    rows.splice(at..at, setting_rows);
    rows.into_iter()
        .filter_map(|(what, values)| {
            values
                .iter()
                .any(|v| *v != values[0])
                .then_some(Difference { what, values })
        })
        .collect()
}

/// Every figure of any run, in the order they first appear, judged against the first run,
/// and over the group (`fleet::summarise`; `runs` are the reports' indices into
/// `Comparison::runs`). Figures are looked up by key through one index, so the work grows
/// with reports × figures, not with their square.
fn rows(reports: &[&Report], runs: &[usize]) -> Vec<Row> {
    let figures: Vec<Vec<Figure>> = reports.iter().map(|r| r.figures()).collect();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut order: Vec<&Figure> = Vec::new();
    for f in figures.iter().flatten() {
        if !index.contains_key(f.key.as_str()) {
            index.insert(&f.key, order.len());
            order.push(f);
        }
    }
    // table[row][run]: the run's figure of that key (its first, should a key repeat).
    let mut table: Vec<Vec<Option<&Figure>>> = vec![vec![None; reports.len()]; order.len()];
    for (i, run) in figures.iter().enumerate() {
        for f in run {
            let slot = &mut table[index[f.key.as_str()]][i];
            if slot.is_none() {
                *slot = Some(f);
            }
        }
    }
    // Which runs measured while the machine was shared, per section, asked once each.
    let disturbed: Vec<Vec<String>> = reports.iter().map(|r| identity::disturbed(r)).collect();
    let figure_count = order.len();
    let disturbed_in =
        |i: usize, section: &str| identity::section_disturbed(&disturbed[i], section);
    order
        .into_iter()
        .zip(&table)
        .map(|(first, of_runs)| {
            let baseline = of_runs[0];
            let cells = of_runs
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    f.map(|f| {
                        let against = baseline.filter(|_| i > 0);
                        let disturbed =
                            disturbed_in(i, &f.section) || (i > 0 && disturbed_in(0, &f.section));
                        Cell {
                            disturbed,
                            value: f.value,
                            spread_pct: f.spread_pct,
                            step_pct: f.step_pct,
                            ratio: against
                                .filter(|b| b.value != 0.0)
                                .map(|b| f.value / b.value),
                            verdict: against.map(|b| judge::judge(b, f)),
                        }
                    })
                })
                .collect();
            let samples: Vec<Option<fleet::Sample>> = of_runs
                .iter()
                .map(|f| {
                    f.map(|f| fleet::Sample {
                        value: f.value,
                        noise_pct: judge::own_band_pct(f),
                    })
                })
                .collect();
            Row {
                key: first.key.clone(),
                section: first.section.clone(),
                label: first.label.clone(),
                unit: first.unit.clone(),
                better: first.better,
                cells,
                fleet: fleet::summarise(&samples, runs, first.better, figure_count),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::latency::samples;

    fn loaded(host: &str, scale: f64) -> Loaded {
        let mut report = Report::new(crate::topology::detect().unwrap(), Default::default());
        report.run.host = host.to_string();
        let mut latency = samples::latency();
        for level in &mut latency.levels {
            level.latency_ns *= scale;
        }
        for point in &mut latency.points {
            point.ns *= scale;
        }
        report.experiments.latency = Some(latency);
        Loaded {
            file: format!("{host}.json"),
            report,
        }
    }

    #[test]
    fn a_slower_run_is_worse_and_an_identical_one_the_same() {
        let runs = [loaded("a", 1.0), loaded("b", 1.0), loaded("c", 1.3)];
        let c = compare(&runs, false, Vec::new());
        assert_eq!(c.groups.len(), 1);
        assert_eq!(
            c.runs.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        let rows = &c.groups[0].rows;
        assert!(!rows.is_empty());
        let latency = rows
            .iter()
            .find(|r| r.unit == "ns" && r.better == Better::Lower)
            .expect("a latency row");
        let verdict = |i: usize| latency.cells[i].as_ref().unwrap().verdict;
        assert_eq!(verdict(0), None);
        assert_eq!(verdict(1), Some(Verdict::Same));
        assert_eq!(verdict(2), Some(Verdict::Worse));
        let ratio = latency.cells[2].as_ref().unwrap().ratio.unwrap();
        assert!((ratio - 1.3).abs() < 1e-9, "{ratio}");
    }

    #[test]
    fn differences_name_what_differs_and_groups_split_by_cpu_model() {
        let mut other = loaded("b", 1.0);
        other.report.machine.kernel = "7.0.0-other".into();
        other.report.machine.cpu_model = "Other CPU".into();
        let runs = [loaded("a", 1.0), other];
        let one = compare(&runs, false, Vec::new());
        let what: Vec<&str> = one.groups[0]
            .differences
            .iter()
            .map(|d| d.what.as_str())
            .collect();
        assert!(
            what.contains(&"kernel") && what.contains(&"CPU model"),
            "{what:?}"
        );
        let split = compare(&runs, true, Vec::new());
        assert_eq!(split.groups.len(), 2);
        assert!(split.groups.iter().all(|g| g.differences.is_empty()));
    }

    #[test]
    fn settings_that_differ_are_named_with_the_machine_s() {
        let mut full = loaded("h", 1.0);
        full.report.settings.quick = false;
        full.report.settings.repetitions = 7;
        full.report.settings.cpus = vec![1];
        full.report.run.argv = vec!["latency".into(), "--cpu".into(), "1".into()];
        let mut quick = loaded("h", 1.0);
        quick.report.settings.quick = true;
        quick.report.settings.repetitions = 3;
        quick.report.settings.max_size_bytes = 1 << 24;
        quick.report.settings.cpus = vec![0];
        quick.report.run.argv = vec!["latency".into(), "--quick".into()];
        let c = compare(&[full, quick], false, Vec::new());
        let what: Vec<&str> = c.groups[0]
            .differences
            .iter()
            .map(|d| d.what.as_str())
            .collect();
        for setting in ["quick", "repetitions", "max size", "CPUs", "command line"] {
            assert!(what.contains(&setting), "{setting} in {what:?}");
        }
        let quick_row = c.groups[0]
            .differences
            .iter()
            .find(|d| d.what == "quick")
            .unwrap();
        assert_eq!(quick_row.values, ["no", "yes"]);
        // The same settings: nothing named.
        let same = compare(&[loaded("h", 1.0), loaded("h", 1.0)], false, Vec::new());
        assert!(same.groups[0].differences.is_empty());
    }

    #[test]
    fn reports_that_share_no_figure_are_refused_naming_both() {
        let run = loaded("a", 1.0);
        let mut footprint = loaded("b", 1.0);
        footprint.report.experiments = Default::default();
        footprint.report.settings.command = "footprint".into();
        footprint.file = "fp.json".into();
        let error = load::share_a_figure(&[run.clone(), footprint]).unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("a.json") && text.contains("fp.json") && text.contains("share none"),
            "{text}"
        );
        load::share_a_figure(&[run.clone(), loaded("c", 1.2)]).unwrap();
    }

    #[test]
    fn disturbed_runs_are_named_and_their_values_marked() {
        let mut busy = loaded("b", 1.0);
        busy.report
            .conditions
            .push(crate::session::conditions::ExperimentConditions {
                experiment: "latency".into(),
                elapsed_s: 1.0,
                other_runnable_mean: Some(2.0),
                other_runnable_max: Some(3.0),
                other_runnable_share_pct: None,
                samples: 5,
                tasks: Vec::new(),
                steal_pct: None,
                disturbed: true,
            });
        let runs = [loaded("a", 1.0), busy];
        let c = compare(&runs, false, Vec::new());
        assert_eq!(c.runs[1].disturbed, ["latency"]);
        let sections = view::sections(&c, &runs);
        let text = crate::render::terminal::render(&sections, false);
        assert!(text.contains("b *"), "{text}");
        // Explained once, under the runs.
        assert_eq!(text.matches("* measured while").count(), 1, "{text}");
    }

    #[test]
    fn runs_of_one_host_are_lettered() {
        let c = compare(&[loaded("h", 1.0), loaded("h", 1.0)], false, Vec::new());
        assert_eq!(c.runs[0].label, "A");
        assert_eq!(c.runs[1].label, "B");
        assert_eq!(run_letter(26), "R27");
    }

    /// A fleet of `n` hosts of one model with a small deterministic scatter; the hosts in
    /// `slow` are 40% slower at everything.
    fn fleet(model: &str, n: usize, slow: &[usize]) -> Vec<Loaded> {
        (0..n)
            .map(|i| {
                let scale = if slow.contains(&i) {
                    1.4
                } else {
                    1.0 + 0.004 * ((i * 37 % 11) as f64 - 5.0) / 5.0
                };
                let mut run = loaded(&format!("{model}-node{i:03}"), scale);
                run.report.machine.cpu_model = model.to_string();
                run
            })
            .collect()
    }

    #[test]
    fn two_cpu_models_are_fleets_apart_and_only_the_planted_host_is_named() {
        let mut runs = fleet("Alpha", 12, &[5]);
        runs.extend(fleet("Beta", 9, &[]));
        let c = compare(&runs, true, Vec::new());
        assert_eq!(c.groups.len(), 2);
        assert!(c.groups.iter().all(Group::is_fleet));
        let named = fleet_view::named_reports(&c);
        let hosts: Vec<&str> = named
            .iter()
            .map(|(i, _)| c.runs[*i].host.as_str())
            .collect();
        assert_eq!(hosts, ["Alpha-node005"]);
        // Named for the latencies it moved, as worse.
        let (_, list) = &named[0];
        assert!(
            list.iter().all(|(_, o)| o.verdict == Verdict::Worse),
            "{list:?}"
        );
        assert!(list.iter().any(|(row, _)| row.unit == "ns"));
        // Beta's fleet is summarised over its own nine reports.
        let beta = &c.groups[1];
        let summarised = beta.rows.iter().find_map(|r| r.fleet.as_ref()).unwrap();
        assert_eq!(summarised.reports, 9);
        assert!(summarised.outliers.is_empty());
    }

    #[test]
    fn a_fleet_s_terminal_output_does_not_grow_with_its_reports() {
        let text = |n: usize| {
            let runs = fleet("Alpha", n, &[3, n - 2]);
            let c = compare(&runs, true, Vec::new());
            let sections = view::sections(&c, &runs);
            let mut text = crate::render::terminal::render(&sections, false);
            text.push_str(&view::summary_line(&c).to_plain());
            text
        };
        let (small, large) = (text(20), text(60));
        assert_eq!(small.lines().count(), large.lines().count(), "{large}");
        for host in ["Alpha-node003", "Alpha-node058"] {
            assert!(large.contains(host), "{host} in {large}");
        }
        // Not a column or a row per report: an unremarkable host is not listed.
        assert!(!large.contains("Alpha-node010"), "{large}");
        assert!(large.contains("A fleet of 60 reports"), "{large}");
        assert!(large.contains("2 report(s) named as outliers"), "{large}");
    }
}
