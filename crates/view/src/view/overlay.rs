//! Several runs' line charts of the same title drawn as one, for `compare`: each run in a
//! colour of its own, its first line solid and its second dashed, the legend naming the
//! run before each line. Charts with more lines per run than that stay apart (one per run,
//! titled with the run), as do heatmaps and bar charts: overlaid, they would not be read.
//! Bands and vertical markers belong to one run's reading of its curve and are left out of
//! an overlay.

use super::chart::{Chart, LineChart, PALETTE};
use super::{Block, Section};

/// The most lines per run an overlay draws (solid and dashed).
const MAX_LINES_PER_RUN: usize = 2;

/// The colour of the `i`-th run in every overlaid chart and legend.
pub fn run_color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Every chart of a section, in reading order (inside folded and per-output groups too,
/// except those for the terminal only).
pub fn charts(section: &Section) -> Vec<&Chart> {
    fn walk<'a>(blocks: &'a [Block], out: &mut Vec<&'a Chart>) {
        for block in blocks {
            match block {
                Block::Chart(c) => out.push(c),
                Block::Details { blocks, .. } | Block::Verbose(blocks) => walk(blocks, out),
                Block::Only(super::Medium::Html, blocks) => walk(blocks, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&section.blocks, &mut out);
    out
}

/// The title a chart is matched by across runs.
pub fn title(chart: &Chart) -> &str {
    match chart {
        Chart::Line(c) => &c.title,
        Chart::Heatmap(h) => &h.title,
        Chart::Bar(b) => &b.title,
    }
}

/// One chart per run (`None` where a run lacks it), labelled, as one or more charts: one
/// overlay when every run's is a line chart with few enough lines, else each run's own,
/// titled with its label.
pub fn overlay(charts: &[(String, Option<&Chart>)]) -> Vec<Chart> {
    let lines: Option<Vec<(usize, &String, &LineChart)>> = charts
        .iter()
        .enumerate()
        .filter_map(|(i, (label, chart))| chart.map(|c| (i, label, c)))
        .map(|(i, label, chart)| match chart {
            Chart::Line(line) if drawn_lines(line) <= MAX_LINES_PER_RUN => Some((i, label, line)),
            _ => None,
        })
        .collect();
    match lines {
        Some(lines) if !lines.is_empty() => vec![Chart::Line(merge(&lines))],
        _ => charts
            .iter()
            .filter_map(|(label, chart)| chart.map(|c| retitled(c, label)))
            .collect(),
    }
}

/// Lines drawn as lines (rings of found points are not counted).
fn drawn_lines(chart: &LineChart) -> usize {
    chart.series.iter().filter(|s| !s.highlight).count()
}

fn merge(runs: &[(usize, &String, &LineChart)]) -> LineChart {
    let first = runs[0].2;
    let mut merged = LineChart {
        series: Vec::new(),
        markers: Vec::new(),
        bands: Vec::new(),
        legend: Vec::new(),
        ..first.clone()
    };
    for &(i, label, chart) in runs {
        let mut line = 0;
        for series in &chart.series {
            let mut s = series.clone();
            s.color = Some(run_color(i).to_string());
            if !s.highlight {
                s.dashed = line > 0;
                line += 1;
            }
            s.unstable.clear();
            s.name = if s.name.is_empty() {
                label.clone()
            } else {
                format!("{label} · {}", s.name)
            };
            merged.series.push(s);
        }
    }
    merged
}

fn retitled(chart: &Chart, label: &str) -> Chart {
    let mut chart = chart.clone();
    let add = |title: &mut String| *title = format!("{title} — {label}");
    match &mut chart {
        Chart::Line(c) => add(&mut c.title),
        Chart::Heatmap(h) => add(&mut h.title),
        Chart::Bar(b) => add(&mut b.title),
    }
    chart
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::chart::{Band, Heatmap, Series};

    fn line(series: usize) -> Chart {
        let mut chart = LineChart::new("Latency").band(Band::new(1.0, 2.0, "L1"));
        for i in 0..series {
            chart = chart.series(Series::new(format!("s{i}"), vec![(1.0, 1.0), (2.0, 3.0)]));
        }
        Chart::Line(chart)
    }

    #[test]
    fn two_runs_of_one_line_each_overlay_in_their_colours_without_bands() {
        let (a, b) = (line(2), line(2));
        let out = overlay(&[("A".into(), Some(&a)), ("B".into(), Some(&b))]);
        assert_eq!(out.len(), 1);
        let Chart::Line(merged) = &out[0] else {
            panic!("a line chart")
        };
        assert!(merged.bands.is_empty());
        let names: Vec<&str> = merged.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["A · s0", "A · s1", "B · s0", "B · s1"]);
        assert_eq!(merged.series[2].color.as_deref(), Some(run_color(1)));
        assert!(!merged.series[0].dashed && merged.series[1].dashed);
    }

    #[test]
    fn busy_charts_and_heatmaps_stay_apart_titled_by_run_and_missing_runs_are_skipped() {
        let (a, b) = (line(4), line(4));
        let out = overlay(&[("A".into(), Some(&a)), ("B".into(), Some(&b))]);
        assert_eq!(out.len(), 2);
        assert_eq!(title(&out[1]), "Latency — B");
        let h = Chart::Heatmap(Heatmap::new("Matrix"));
        let out = overlay(&[("A".into(), Some(&h)), ("B".into(), None)]);
        assert_eq!(out.len(), 1);
        assert_eq!(title(&out[0]), "Matrix — A");
    }
}
