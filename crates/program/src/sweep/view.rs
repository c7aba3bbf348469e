//! `memscope sweep` in every output: per benchmark and figure, a table of the variants
//! (median, 95% interval, change against the baseline, p), the resources and counters
//! of each variant beside its per-thread footprint (and the objects whose size differs
//! between the variants, `footprint`), the plots (figure vs parameter with
//! interval bars and the baseline marked; counters vs parameter), the notes, and CSV
//! tables of every run and every cell.

use serde::Serialize;

use super::analysis::primary;
use super::analysis::{MeasureStat, Verdict};
use super::{FootprintSummary, Measure, Stop, SweepResult};
use crate::units::Bytes;
use crate::view::chart::{Axis, BarChart, LineChart, Series, VMarker, PALETTE};
use crate::view::data_row::{Columns, Raw};
use crate::view::format::{self, raw};
use crate::view::{
    Block, Cell, Column, DataTable, Headline, Medium, Paragraph, Section, Style, Table,
};

/// Derived counter figures shown per variant, when measured.
const COUNTER_FIGURES: [&str; 5] = [
    "IPC",
    "L1d load miss ratio",
    "LLC load MPKI",
    "dTLB load miss rate",
    "dTLB load MPKI",
];

/// Counted events shown per variant as counts per run, when counted.
const COUNTED_EVENTS: [&str; 1] = ["page-faults"];

impl SweepResult {
    pub fn section(&self) -> Section {
        let names: Vec<&str> = self.parameters.iter().map(|p| p.name.as_str()).collect();
        let mut section = Section::new(
            "sweep",
            "Sweep",
            format!(
                "Sweep of {}: {} × {}, {} measured block(s)",
                names.join(" × "),
                format::count_of(self.benchmarks.len(), "benchmark"),
                format::count_of(self.variants.len(), "variant"),
                self.blocks
            ),
        );
        section.headlines = self.headlines();
        section.push(Paragraph::note(self.method()));
        for b in 0..self.benchmarks.len() {
            self.push_benchmark(&mut section, b);
        }
        if let Some(table) = self.footprint_differences() {
            section.push(table);
        }
        for note in &self.notes {
            section.push(Paragraph::warning(note.text()));
        }
        for note in format::process_tree_notes(&self.process_tree) {
            section.push(Paragraph::warning(note));
        }
        section.push(self.runs_data());
        section.push(self.cells_data());
        section
    }

    fn baseline_label(&self) -> &str {
        &self.variants[self.baseline].label
    }

    fn method(&self) -> String {
        let stop = match self.stop {
            Stop::Fixed => "the blocks asked for (--runs) ran".to_string(),
            Stop::Resolved => format!(
                "every median was known to ±{:.1}% (95% interval)",
                self.effect_pct / 2.0
            ),
            Stop::TimeLimit => "the time limit was reached".to_string(),
            Stop::MaxBlocks => "the most blocks the adaptive schedule runs".to_string(),
            Stop::Interrupted => "interrupted (Ctrl-C)".to_string(),
        };
        format!(
            "{} warm-up and {} measured block(s) in {} s, each running every benchmark × \
             variant once in a shuffled order; stopped because {stop}. Baseline: {}. median \
             over the successful runs; 95% CI: order statistics (no shape assumed); change = \
             median / baseline median − 1; p: two-sided Mann–Whitney U against the baseline's \
             runs; ~ = not significant (p ≥ 0.05).",
            self.warmup_blocks,
            self.blocks,
            format::rounded(self.measured_s, 10.0),
            self.baseline_label()
        )
    }

    /// Per benchmark: the variant with the largest significant change of the main figure.
    fn headlines(&self) -> Vec<Headline> {
        let m = primary(&self.measures);
        let measure = &self.measures[m];
        self.benchmarks
            .iter()
            .enumerate()
            .map(|(b, bench)| {
                let best = (0..self.variants.len())
                    .map(|v| (v, &self.cell(b, v).measures[m]))
                    .filter(|(_, s)| matches!(s.verdict, Verdict::Better | Verdict::Worse))
                    .max_by(|x, y| {
                        let size = |s: &MeasureStat| s.change_pct.unwrap_or(0.0).abs();
                        size(x.1).total_cmp(&size(y.1))
                    });
                match best {
                    Some((v, s)) => Headline {
                        label: format!("{}: {}", bench.name, self.variants[v].label),
                        value: signed_pct(s.change_pct.unwrap_or(0.0)),
                        detail: format!(
                            "{} vs {}, p = {}",
                            measure.label,
                            self.baseline_label(),
                            p_text(s.p)
                        ),
                        ..Headline::default()
                    },
                    None => Headline {
                        label: bench.name.clone(),
                        value: "~".to_string(),
                        detail: format!(
                            "no variant's {} differs from {} (p ≥ 0.05)",
                            measure.label,
                            self.baseline_label()
                        ),
                        ..Headline::default()
                    },
                }
            })
            .collect()
    }

    fn push_benchmark(&self, section: &mut Section, b: usize) {
        let bench = &self.benchmarks[b];
        section.push(Block::Heading(format!(
            "Benchmark {}: {}",
            bench.name,
            format::shell_quoted(&bench.words)
        )));
        let shown: Vec<usize> = (0..self.measures.len())
            .filter(|&m| {
                m == 0
                    || (0..self.variants.len())
                        .any(|v| self.cell(b, v).measures[m].summary.is_some())
            })
            .collect();
        let primary = primary(&self.measures);
        if primary == 0 || !shown.contains(&primary) {
            for &m in &shown {
                let measure = &self.measures[m];
                section.push(self.measure_table(b, m, measure));
                if let Some(chart) = self.measure_chart(b, m, measure) {
                    section.push(Block::Only(Medium::Html, vec![chart]));
                }
            }
        } else {
            // The page opens with the user's --metric (table and chart), then the wall
            // time and the rest; the terminal keeps the wall time first.
            let terminal = shown
                .iter()
                .map(|&m| self.measure_table(b, m, &self.measures[m]));
            section.push(Block::Only(
                Medium::Terminal,
                terminal.map(Block::from).collect(),
            ));
            let html_order =
                std::iter::once(primary).chain(shown.iter().copied().filter(|&m| m != primary));
            let mut html = Vec::new();
            for m in html_order {
                let measure = &self.measures[m];
                html.push(self.measure_table(b, m, measure).into());
                html.extend(self.measure_chart(b, m, measure));
            }
            section.push(Block::Only(Medium::Html, html));
        }
        let (resources, charts) = self.resources(b);
        section.push(resources);
        if !charts.is_empty() {
            section.push(Block::Only(Medium::Html, charts));
        }
    }

    /// One column per parameter, holding the variant's values.
    fn parameter_columns(&self) -> Vec<Column> {
        self.parameters
            .iter()
            .map(|p| Column::text(p.name.clone()))
            .collect()
    }

    fn parameter_cells(&self, v: usize) -> Vec<Cell> {
        self.variants[v]
            .values
            .0
            .iter()
            .map(|(_, value)| {
                if v == self.baseline {
                    Cell::styled(value.clone(), Style::Strong)
                } else {
                    Cell::new(value.clone())
                }
            })
            .collect()
    }

    fn measure_table(&self, b: usize, m: usize, measure: &Measure) -> Table {
        let unit = (!measure.unit.is_empty()).then(|| measure.unit.clone());
        let mut columns = self.parameter_columns();
        columns.extend([
            Column {
                unit,
                ..Column::number("median")
            },
            Column::number("95% CI").titled("order-statistic interval of the median"),
            Column::number("±").titled("half the interval, relative to the median"),
            Column::number("change").titled("median / baseline median − 1; ~: p ≥ 0.05"),
            Column::number("p").titled("two-sided Mann–Whitney U against the baseline"),
            Column::number("runs"),
        ]);
        let failed = (0..self.variants.len()).any(|v| self.cell(b, v).failed > 0);
        if failed {
            columns.push(Column::text("failed"));
        }
        let mut table = Table::new(columns).titled(format!(
            "{} ({}) — {}",
            measure.label,
            measure.better.phrase(),
            measure.source
        ));
        for v in 0..self.variants.len() {
            let cell = self.cell(b, v);
            let s = &cell.measures[m];
            let mut row = self.parameter_cells(v);
            let median = s.summary.map(|x| x.median);
            row.push(Cell::new(
                median.map_or(format::DASH.to_string(), format::derived),
            ));
            row.push(Cell::new(match s.interval {
                Some(i) => format!("{} … {}", format::derived(i.low), format::derived(i.high)),
                None => format::DASH.to_string(),
            }));
            row.push(Cell::new(match (s.interval, median) {
                (Some(i), Some(med)) => format!("{:.1}%", i.half_width_pct(med)),
                _ => format::DASH.to_string(),
            }));
            row.push(change_cell(s));
            row.push(Cell::new(match s.verdict {
                Verdict::Baseline => String::new(),
                _ => p_text(s.p),
            }));
            row.push(Cell::new(cell.runs.to_string()));
            if failed {
                row.push(Cell::new(if cell.failed > 0 {
                    format!("{} ({})", cell.failed, cell.failures.join(", "))
                } else {
                    String::new()
                }));
            }
            table.row(row);
        }
        table
    }

    /// The figure against the first parameter when its values are numbers (interval bars,
    /// one line per combination of the other parameters, the baseline marked); else bars.
    fn measure_chart(&self, b: usize, m: usize, measure: &Measure) -> Option<Block> {
        let title = format!(
            "{}: {} ({}) per variant",
            self.benchmarks[b].name,
            measure.label,
            measure.better.phrase()
        );
        let y_label = if measure.unit.is_empty() {
            measure.label.clone()
        } else {
            format!("{} ({})", measure.label, measure.unit)
        };
        let value = |v: usize| self.cell(b, v).measures[m].summary.map(|s| s.median);
        let interval = |v: usize| self.cell(b, v).measures[m].interval;
        match self.numeric_x() {
            Some(xs) => {
                let mut chart = LineChart::new(title)
                    .x_axis(self.x_axis(&xs))
                    .y_axis(Axis::linear(y_label));
                for (i, (name, members)) in self.series_groups().into_iter().enumerate() {
                    let points: Vec<(usize, f64)> = members
                        .iter()
                        .filter_map(|&v| Some((v, value(v)?)))
                        .collect();
                    if points.is_empty() {
                        continue;
                    }
                    let errors = points
                        .iter()
                        .map(|&(v, med)| interval(v).map_or((med, med), |i| (i.low, i.high)))
                        .collect();
                    chart = chart.series(
                        Series::new(name, points.iter().map(|&(v, y)| (xs[v], y)).collect())
                            .color(PALETTE[i % PALETTE.len()])
                            .error_bars(errors),
                    );
                }
                chart = chart.marker(VMarker::reference(
                    xs[self.baseline],
                    format!("baseline {}", self.baseline_label()),
                ));
                if let Some(marker) = self.l1d_marker(&xs) {
                    chart = chart.marker(marker);
                }
                Some(chart.into())
            }
            None => {
                let values: Vec<f64> = (0..self.variants.len())
                    .map(|v| value(v).unwrap_or(f64::NAN))
                    .collect();
                let values_for_labels = values.clone();
                let chart = BarChart::new(format!("{title} (baseline {})", self.baseline_label()))
                    .x_label("variant")
                    .y_axis(Axis::linear(y_label))
                    .categories(self.variants.iter().map(|v| v.label.clone()).collect())
                    .series(measure.label.clone(), values, Some(PALETTE[0].to_string()))
                    .value_labels(Some(label_decimals(&values_for_labels)));
                Some(chart.into())
            }
        }
    }

    /// Where the per-thread data (the variants' TLS blocks) first reaches the L1d size.
    fn l1d_marker(&self, xs: &[f64]) -> Option<VMarker> {
        let (v, l1d) = self.variants.iter().enumerate().find_map(|(v, info)| {
            let f = info.footprint.as_ref()?;
            let l1d = f.l1d_bytes.filter(|&l| l > 0)?;
            (f.tls_bytes + f.tls_pointee_bytes >= l1d).then_some((v, l1d))
        })?;
        Some(VMarker::found(
            xs[v],
            format!("per-thread data ≥ L1d ({})", Bytes(l1d)),
            PALETTE[3],
        ))
    }

    /// The parameter plotted on the x axis: the first whose values are all numbers.
    fn x_parameter(&self) -> Option<usize> {
        self.parameters
            .iter()
            .position(|p| p.values.iter().all(|v| v.parse::<f64>().is_ok()))
    }

    /// Each variant's value of the x parameter, when there is one.
    fn numeric_x(&self) -> Option<Vec<f64>> {
        let x = self.x_parameter()?;
        self.variants
            .iter()
            .map(|v| v.values.0.get(x)?.1.parse::<f64>().ok())
            .collect()
    }

    fn x_axis(&self, xs: &[f64]) -> Axis {
        let name = self
            .x_parameter()
            .map_or_else(String::new, |x| self.parameters[x].name.clone());
        let (min, max) = xs
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            });
        if min > 0.0 && max / min >= 16.0 {
            Axis::log2(format!("{name} (log scale)"))
        } else {
            Axis::linear(name)
        }
    }

    /// Variants grouped by the values of every parameter but the x one (one line each).
    fn series_groups(&self) -> Vec<(String, Vec<usize>)> {
        let x = self.x_parameter();
        let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
        for (v, variant) in self.variants.iter().enumerate() {
            let rest: Vec<String> = (variant.values.0.iter().enumerate())
                .filter(|(i, _)| Some(*i) != x)
                .map(|(_, (n, val))| format!("{n}={val}"))
                .collect();
            let name = if rest.is_empty() {
                "median".to_string()
            } else {
                rest.join(" ")
            };
            match groups.iter_mut().find(|(n, _)| *n == name) {
                Some((_, members)) => members.push(v),
                None => groups.push((name, vec![v])),
            }
        }
        groups
    }

    /// CPU time, peak RSS, the per-thread footprint and the counters of each variant, and
    /// a plot of each counter figure against the parameter.
    fn resources(&self, b: usize) -> (Table, Vec<Block>) {
        let nv = self.variants.len();
        let shown: Vec<&str> = COUNTER_FIGURES
            .iter()
            .chain(&COUNTED_EVENTS)
            .copied()
            .filter(|name| (0..nv).any(|v| derived_value(self, b, v, name).is_some()))
            .collect();
        // The per-thread column only when some variant's binary has per-thread data.
        let footprints = self
            .variants
            .iter()
            .any(|v| v.footprint.as_ref().is_some_and(|f| f.tls_bytes > 0));
        let mut columns = self.parameter_columns();
        columns.extend([
            Column::quantity("user", "s"),
            Column::quantity("system", "s"),
            Column::quantity("peak RSS", "MiB"),
        ]);
        if footprints {
            columns.push(
                Column::text("per-thread data")
                    .titled("the binary's TLS block (memscope footprint) and its share of L1d"),
            );
        }
        // What the TLS pointers point to, per thread, outside the TLS block.
        let pointees = self.variants.iter().any(|v| {
            v.footprint
                .as_ref()
                .is_some_and(|f| f.tls_pointee_bytes > 0)
        });
        if pointees {
            columns.push(Column::text("behind TLS pointers").titled(
                "per-thread data the TLS pointers point to (memscope footprint), outside the \
                 TLS block, and its share of L1d",
            ));
        }
        for name in &shown {
            let unit = figure_unit(self, b, name);
            columns.push(if unit.is_empty() {
                Column::number(*name)
            } else {
                Column::quantity(*name, unit)
            });
        }
        let mut table = Table::new(columns).titled("Resources, counters and footprint (medians)");
        for v in 0..nv {
            let cell = self.cell(b, v);
            let mut row = self.parameter_cells(v);
            let med = |s: Option<crate::stats::Summary>| s.map(|s| s.median);
            row.push(Cell::new(format::opt_fixed(med(cell.user_s), 3)));
            row.push(Cell::new(format::opt_fixed(med(cell.system_s), 3)));
            row.push(Cell::new(format::opt_fixed(
                med(cell.max_rss_kib).map(|k| k / 1024.0),
                1,
            )));
            let footprint = self.variants[v].footprint.as_ref();
            if footprints {
                row.push(Cell::new(per_thread_cell(footprint, |f| f.tls_bytes)));
            }
            if pointees {
                row.push(Cell::new(per_thread_cell(footprint, |f| {
                    f.tls_pointee_bytes
                })));
            }
            for name in &shown {
                row.push(Cell::new(match derived_value(self, b, v, name) {
                    Some(count) if COUNTED_EVENTS.contains(name) => format::thousands(count),
                    Some(figure) => format::derived(figure),
                    None => format::DASH.to_string(),
                }));
            }
            table.row(row);
        }
        self.missing_figures_notes(b, &shown, &mut table);
        self.per_thread_note(footprints, &mut table);
        let charts = self.resource_charts(b, &shown);
        (table, charts)
    }

    /// The counter figures not measured, grouped by why, as notes of `table`.
    fn missing_figures_notes(&self, b: usize, shown: &[&str], table: &mut Table) {
        let nv = self.variants.len();
        let mut missing: Vec<(String, Vec<&str>)> = Vec::new();
        for d in &self.cells[b * nv].derived {
            let name = d.name.as_str();
            let (true, Some(why)) = (
                COUNTER_FIGURES.contains(&name) && !shown.contains(&name),
                d.not_supported.clone(),
            ) else {
                continue;
            };
            match missing.iter_mut().find(|(w, _)| *w == why) {
                Some((_, names)) => names.push(name),
                None => missing.push((why, vec![name])),
            }
        }
        for (why, names) in missing {
            table.note(format!("{}: {why}", names.join(", ")));
        }
    }

    /// What the per-thread column shows, or why there is none.
    fn per_thread_note(&self, footprints: bool, table: &mut Table) {
        let Some(f) = self.variants.iter().find_map(|v| v.footprint.as_ref()) else {
            return;
        };
        if !footprints {
            table.note(format!(
                "per-thread data: {} has no thread-local (TLS) data in any variant; its working \
                 memory is on the stack or the heap, which `memscope pages` and the peak RSS \
                 show",
                f.binary
            ));
            return;
        }
        let largest: Vec<String> = (f.largest_tls.iter())
            .map(|(n, bytes)| format!("{n} {}", Bytes(*bytes)))
            .collect();
        table.note(format!(
            "per-thread data: the TLS block of {} per variant ({}: {})",
            f.binary,
            self.variants[0].label,
            if largest.is_empty() {
                "no TLS objects".to_string()
            } else {
                largest.join(", ")
            }
        ));
    }

    /// A plot of each counter figure and the peak RSS against a numeric parameter.
    fn resource_charts(&self, b: usize, shown: &[&str]) -> Vec<Block> {
        let nv = self.variants.len();
        let Some(xs) = self.numeric_x() else {
            return Vec::new();
        };
        let mut figures: Vec<(String, Vec<Option<f64>>)> = (shown.iter())
            .map(|name| {
                let unit = figure_unit(self, b, name);
                (
                    format!("{name} ({unit})"),
                    (0..nv).map(|v| derived_value(self, b, v, name)).collect(),
                )
            })
            .collect();
        figures.push((
            "peak RSS (MiB)".to_string(),
            (0..nv)
                .map(|v| self.cell(b, v).max_rss_kib.map(|s| s.median / 1024.0))
                .collect(),
        ));
        let mut charts = Vec::new();
        for (i, (label, values)) in figures.into_iter().enumerate() {
            let mut chart =
                LineChart::new(format!("{}: {label} per variant", self.benchmarks[b].name))
                    .size(480.0, 300.0)
                    .x_axis(self.x_axis(&xs))
                    .y_axis(Axis::linear(label.clone()).include_zero());
            for (name, members) in self.series_groups() {
                let points: Vec<(f64, f64)> = (members.iter())
                    .filter_map(|&v| Some((xs[v], values[v]?)))
                    .collect();
                if !points.is_empty() {
                    chart = chart
                        .series(Series::new(name, points).color(PALETTE[(i + 1) % PALETTE.len()]));
                }
            }
            charts.push(chart.into());
        }
        charts
    }

    fn runs_data(&self) -> DataTable {
        let mut after: Vec<String> = self.measures[1..]
            .iter()
            .map(|m| metric_column(&m.label))
            .collect();
        after.extend(self.events.iter().map(|e| metric_column(e)));
        let columns = Columns {
            before: self.parameter_names(),
            after,
        };
        DataTable::of_around(
            "sweep_runs",
            columns,
            self.runs.iter().map(|r| {
                let row = RunCsvRow {
                    benchmark: &self.benchmarks[r.benchmark].name,
                    block: r.block,
                    order: r.order,
                    elapsed_s: Raw(r.elapsed_s),
                    user_s: Raw(r.user_s),
                    system_s: Raw(r.system_s),
                    max_rss_kib: r.max_rss_kib,
                    exit: r.termination.shell_status(),
                };
                let figures = r.metrics.iter().chain(&r.counts);
                let after = figures.map(|c| c.map(raw).unwrap_or_default()).collect();
                (self.parameter_values(r.variant), row, after)
            }),
        )
    }

    fn cells_data(&self) -> DataTable {
        let columns = Columns {
            before: self.parameter_names(),
            after: Vec::new(),
        };
        let rows = self.cells.iter().flat_map(|cell| {
            self.measures.iter().enumerate().map(move |(m, measure)| {
                let s = &cell.measures[m];
                let row = CellCsvRow {
                    benchmark: &self.benchmarks[cell.benchmark].name,
                    figure: &measure.label,
                    better: format!("{:?}", measure.better).to_lowercase(),
                    runs: cell.runs,
                    failed: cell.failed,
                    median: s.summary.map(|x| Raw(x.median)),
                    ci_low: s.interval.map(|i| Raw(i.low)),
                    ci_high: s.interval.map(|i| Raw(i.high)),
                    ci_coverage: s.interval.map(|i| Raw(i.coverage)),
                    change_pct: s.change_pct.map(Raw),
                    u: s.u.map(Raw),
                    p: s.p.map(|p| format!("{p:.6}")),
                    verdict: verdict_word(s.verdict),
                };
                (self.parameter_values(cell.variant), row, Vec::new())
            })
        });
        DataTable::of_around("sweep_cells", columns, rows)
    }

    /// The parameters' names: the first columns of the CSV tables.
    fn parameter_names(&self) -> Vec<String> {
        self.parameters.iter().map(|p| p.name.clone()).collect()
    }

    /// Variant `variant`'s parameter values, one cell per parameter.
    fn parameter_values(&self, variant: usize) -> Vec<String> {
        let values = &self.variants[variant].values.0;
        values.iter().map(|(_, v)| v.clone()).collect()
    }
}

/// A row of `sweep_runs` after the parameters' values: one run of a benchmark; its
/// metrics and counted events follow.
#[derive(Serialize, Default)]
struct RunCsvRow<'a> {
    benchmark: &'a str,
    block: usize,
    order: usize,
    elapsed_s: Raw,
    user_s: Raw,
    system_s: Raw,
    max_rss_kib: u64,
    exit: i32,
}

/// A row of `sweep_cells` after the parameters' values: one figure of one benchmark in
/// one variant, with its interval and verdict against the baseline.
#[derive(Serialize, Default)]
struct CellCsvRow<'a> {
    benchmark: &'a str,
    figure: &'a str,
    better: String,
    runs: usize,
    failed: usize,
    median: Option<Raw>,
    ci_low: Option<Raw>,
    ci_high: Option<Raw>,
    ci_coverage: Option<Raw>,
    change_pct: Option<Raw>,
    u: Option<Raw>,
    p: Option<String>,
    verdict: &'static str,
}

/// A counter figure's median in one cell: a derived figure by name, or an event's count
/// per run.
fn derived_value(r: &SweepResult, b: usize, v: usize, name: &str) -> Option<f64> {
    let cell = r.cell(b, v);
    if COUNTED_EVENTS.contains(&name) {
        return cell
            .events
            .iter()
            .find(|e| e.event == name)
            .and_then(|e| e.count)
            .map(|s| s.median);
    }
    cell.derived
        .iter()
        .find(|d| d.name == name)
        .and_then(|d| d.value)
        .map(|s| s.median)
}

/// The unit of a counter figure as shown.
fn figure_unit(r: &SweepResult, b: usize, name: &str) -> String {
    if COUNTED_EVENTS.contains(&name) {
        return "per run".to_string();
    }
    r.cells[b * r.variants.len()]
        .derived
        .iter()
        .find(|d| d.name == name)
        .map(|d| d.unit.clone())
        .unwrap_or_default()
}

/// A CSV column name from a label: lower case, words joined by '_'.
fn metric_column(label: &str) -> String {
    let words: Vec<String> = label
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    words.join("_")
}

/// Decimals that show three significant digits of the largest value (0.0163, 1.68, 812).
fn label_decimals(values: &[f64]) -> usize {
    let largest = values
        .iter()
        .filter(|v| v.is_finite())
        .fold(0.0f64, |a, &v| a.max(v.abs()));
    if largest <= 0.0 {
        return 2;
    }
    (2 - largest.log10().floor() as i64).clamp(0, 6) as usize
}

fn signed_pct(change: f64) -> String {
    format!(
        "{}{:.1}%",
        if change > 0.0 { "+" } else { "−" },
        change.abs()
    )
}

fn p_text(p: Option<f64>) -> String {
    match p {
        Some(p) if p < 0.001 => "<0.001".to_string(),
        Some(p) => format!("{p:.3}"),
        None => format::DASH.to_string(),
    }
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Baseline => "baseline",
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::NoChange => "~",
        Verdict::TooFewRuns => "too few runs",
        Verdict::NoData => "no data",
    }
}

fn change_cell(s: &MeasureStat) -> Cell {
    let change = s.change_pct.map(signed_pct).unwrap_or_default();
    match s.verdict {
        Verdict::Baseline => Cell::styled("baseline", Style::Muted),
        Verdict::Better => Cell::styled(change, Style::Strong),
        Verdict::Worse => Cell::styled(change, Style::Warn),
        Verdict::NoChange => Cell::titled(
            "~",
            Style::Muted,
            format!("{change}, not significant (p ≥ 0.05)"),
        ),
        Verdict::TooFewRuns => Cell::styled("too few runs", Style::Muted),
        Verdict::NoData => Cell::dash(),
    }
}

/// A variant's per-thread bytes (its TLS block, or what its TLS pointers point to) with
/// their share of L1d: "3 KiB (6% of L1d)"; a dash without a footprint.
fn per_thread_cell(
    footprint: Option<&FootprintSummary>,
    bytes: impl Fn(&FootprintSummary) -> u64,
) -> String {
    let Some(f) = footprint else {
        return format::DASH.to_string();
    };
    let b = bytes(f);
    match f.l1d_bytes {
        Some(l1) if l1 > 0 => format!("{} ({:.0}% of L1d)", Bytes(b), 100.0 * b as f64 / l1 as f64),
        _ => Bytes(b).to_string(),
    }
}

mod notes;
#[cfg(test)]
mod tests;
