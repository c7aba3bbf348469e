//! The loaded-latency section of every output: idle latency, peak and knee, the latency
//! vs bandwidth chart, the curves' summary, every point per curve, and the CSV rows.

use serde::Serialize;

use super::{Knee, LoadedResult, LoadedRow};
use crate::kernels::injector::Mix;
use crate::topology::Machine;
use crate::units::Bytes;
use crate::view::chart::{cycles_per_ns, Axis, LineChart, Series, VMarker};
use crate::view::chart::{FOUND_POINT_COLOR, PALETTE, REFERENCE_LINE_COLOR};
use crate::view::data_row::Raw;
use crate::view::format::{self, cpu_list, cycles, distinct, gbs, noisy, ns, rounded};
use crate::view::format::{not_concurrent_mark, not_concurrent_note, DASH, NOISY_SPREAD_PCT};
use crate::view::{Block, Cell, Column, DataTable, Medium, Paragraph, Present, Section};
use crate::view::{Priority, Style, Table, Text};

impl Present for LoadedResult {
    fn section(&self, machine: &Machine) -> Section {
        let mut s = Section::new("loaded", "Loaded latency", "Latency under load");
        s.push(Paragraph::note(intro(self)));
        s.push(Paragraph::callout(headline(self)));
        if self.rows.is_empty() {
            s.push(Paragraph::muted("No loaded latency was measured."));
        } else {
            s.push(chart(self, machine));
            if !self.curves.is_empty() {
                let table = curves_table(self);
                // One curve: its heading in the points says the same.
                if self.curves.len() > 1 {
                    s.push(table);
                } else {
                    s.push(Block::Only(Medium::Html, vec![table.into()]));
                }
            }
            let mut points: Vec<Block> = loaded_curves(self)
                .into_iter()
                .map(|(mix, threads)| points_table(self, mix, threads).into())
                .collect();
            points.push(
                Paragraph::note(format!(
                    "Delay: core cycles between an injector's lines; GB/s: all threads, \
                     latency thread included; concurrency: lines in flight by Little's law \
                     (GB/s × latency / {} B).",
                    self.line_bytes
                ))
                .into(),
            );
            s.push(Block::Details {
                summary: format!("All {} points", self.rows.len()),
                blocks: points,
            });
            if let Some(note) =
                not_concurrent_note("points", self.rows.iter().map(|r| r.injector_overlap))
            {
                s.push(note);
            }
        }
        s.push(csv_rows(self));
        s
    }
}

/// What was measured and how to read it.
fn intro(r: &LoadedResult) -> Text {
    let injector_cpus = cpu_list(&r.injector_cpus);
    let text = Text::new()
        .add(format!(
            "One thread on CPU {} chases pointers through {} in page-local order ({} pages \
             per window, so TLB misses stay out of the figure) while injector threads on CPUs \
             {} each stream a traffic mix over their own {}, waiting a delay of dependent adds \
             between lines. Lowering the delay from the idle end to zero raises the \
             bandwidth; each point is the latency the chase sees at that total bandwidth (as \
             Intel MLC's loaded latency). The ",
            r.latency_cpu,
            Bytes(r.chase_bytes),
            r.chase_window_pages,
            injector_cpus,
            Bytes(r.injector_bytes),
        ))
        .strong("knee")
        .add(
            " is the last point still at the idle latency: beyond it, requests queue in the \
             memory system. ",
        )
        .strong("Concurrency")
        .add(format!(
            " is Little's law, lines in flight = bandwidth × latency / {} B.",
            r.line_bytes
        ));
    match &r.membind {
        Some(binding) => text.add(format!(
            " The chase's and the injectors' buffers: {}.",
            binding.describe()
        )),
        None => text,
    }
}

/// Idle latency, peak bandwidth and the reference curve's knee in one line.
fn headline(r: &LoadedResult) -> Text {
    let text = Text::new()
        .strong("Idle latency")
        .add(format!(
            " {} ns ({} cycles) · ",
            ns(r.idle_ns),
            cycles(r.idle_cycles)
        ))
        .strong("peak")
        .add(format!(" {} GB/s · ", gbs(r.peak_gb_per_s)));
    let text = match &r.knee {
        Some(k) => text.strong("knee").add(format!(" {}", knee_figures(k))),
        None => text
            .strong("no knee")
            .add(": latency stayed at its idle level"),
    };
    if r.reference.is_empty() {
        text
    } else {
        text.add(format!(" (curve {})", r.reference))
    }
}

/// "at 41.7 GB/s (63% of peak), 81.5 ns, delay 200 cycles".
fn knee_figures(k: &Knee) -> String {
    format!(
        "at {} GB/s ({}% of peak), {} ns, delay {} cycles",
        gbs(k.gb_per_s),
        rounded(k.pct_of_peak, 1.0),
        ns(k.latency_ns),
        k.delay
    )
}

/// The knee of a curve in words, for the heading of its points.
fn knee_text(knee: Option<&Knee>) -> String {
    match knee {
        Some(k) => format!("knee {}", knee_figures(k)),
        None => "no knee (latency stayed at its idle level)".to_string(),
    }
}

/// "1 injector", "7 injectors".
fn injectors_label(threads: usize) -> String {
    format::count_of(threads, "injector")
}

/// The mix × injector-count curves in order of first appearance.
fn loaded_curves(result: &LoadedResult) -> Vec<(Mix, usize)> {
    distinct(result.rows.iter().map(|r| (r.mix, r.threads)))
}

/// The knee of one curve: from its summary, or the top-level knee when there is one curve.
fn curve_knee(result: &LoadedResult, mix: Mix, threads: usize) -> Option<&Knee> {
    match result
        .curves
        .iter()
        .find(|c| c.mix == mix && c.threads == threads)
    {
        Some(c) => c.knee.as_ref(),
        None if loaded_curves(result).len() == 1 => result.knee.as_ref(),
        None => None,
    }
}

/// The points of one curve, from the idle end (largest delay) to full load.
fn curve_rows(result: &LoadedResult, mix: Mix, threads: usize) -> Vec<&LoadedRow> {
    let mut rows: Vec<&LoadedRow> = result
        .rows
        .iter()
        .filter(|r| r.mix == mix && r.threads == threads)
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.delay_cycles));
    rows
}

/// Idle, peak and knee of every curve.
fn curves_table(r: &LoadedResult) -> Table {
    let mut t = Table::new(vec![
        Column::text("Mix"),
        Column::number("Injectors"),
        Column::quantity("Peak", "GB/s"),
        Column::quantity("Latency at full load", "ns"),
        Column::quantity("Knee delay", "cycles"),
        Column::quantity("Knee", "GB/s"),
        Column::quantity("Knee latency", "ns"),
        Column::number("Knee % of peak"),
    ])
    .titled("Curves");
    for c in &r.curves {
        let k = c.knee.as_ref();
        let knee = |f: fn(&Knee) -> String| k.map_or_else(|| DASH.to_string(), f);
        t.row([
            c.mix.to_string(),
            c.threads.to_string(),
            gbs(c.peak_gb_per_s),
            ns(c.loaded_ns),
            knee(|k| k.delay.to_string()),
            knee(|k| gbs(k.gb_per_s)),
            knee(|k| ns(k.latency_ns)),
            knee(|k| rounded(k.pct_of_peak, 1.0)),
        ]);
    }
    t
}

/// Every point of one curve, the knee marked.
fn points_table(r: &LoadedResult, mix: Mix, threads: usize) -> Table {
    let knee = curve_knee(r, mix, threads);
    let rows = curve_rows(r, mix, threads);
    let is_knee = |row: &LoadedRow| knee.is_some_and(|k| k.delay == row.delay_cycles);
    let marked = rows.iter().any(|row| is_knee(row));
    let mut columns = vec![
        Column::quantity("Delay", "cycles"),
        Column::quantity("Total", "GB/s").priority(Priority::High),
        Column::quantity("Injectors'", "GB/s"),
        Column::quantity("Injectors ran", "%").priority(Priority::Low),
        Column::quantity("Latency", "ns").priority(Priority::High),
        Column::number("Cycles").priority(Priority::Low),
        Column::quantity("Spread", "%").priority(Priority::Low),
        Column::quantity("Concurrency", "lines"),
    ];
    if marked {
        // The knee's mark.
        columns.push(Column::text("").priority(Priority::High));
    }
    let mut t = Table::new(columns).titled(format!(
        "{mix}, {}: {}",
        injectors_label(threads),
        knee_text(knee)
    ));
    for row in rows {
        let mut total = Text::new();
        if !row.injectors_concurrent {
            total = not_concurrent_mark();
        }
        let mut cells = vec![
            Cell::new(row.delay_cycles.to_string()),
            Cell(total.add(gbs(row.gb_per_s))),
            Cell::new(gbs(row.injector_gb_per_s)),
            Cell::new(rounded(row.injector_overlap * 100.0, 1.0)),
            Cell::new(ns(row.latency_ns)),
            Cell::new(cycles(row.latency_cycles)),
            format::spread_cell(row.spread_pct),
            Cell::new(format::fixed(row.concurrency, 1)),
        ];
        if marked {
            cells.push(if is_knee(row) {
                Cell::styled("◀ knee", Style::Strong)
            } else {
                Cell::default()
            });
        }
        t.rows.push(crate::view::Row::Cells(cells));
    }
    t
}

/// Latency against total bandwidth, one line per mix × injector count from the idle end
/// to full load, with the idle latency as a dashed reference, every knee ringed and the
/// reference curve's knee labelled.
fn chart(result: &LoadedResult, machine: &Machine) -> LineChart {
    let mut chart = LineChart::new("Latency vs bandwidth under load")
        .size(1000.0, 540.0)
        .x_axis(
            Axis::linear("Total bandwidth (decimal GB/s, latency thread included)").include_zero(),
        )
        .y_axis(Axis::linear("Load-to-use latency (ns)").include_zero())
        .unstable_label(format!("latency spread > {NOISY_SPREAD_PCT:.0}%"));
    if let Some(f) = cycles_per_ns(machine, [result.idle_cycles / result.idle_ns]) {
        chart = chart.secondary_y("Latency (core cycles)", f);
    }
    let mut knees = Vec::new();
    for (i, &(mix, threads)) in loaded_curves(result).iter().enumerate() {
        let rows = curve_rows(result, mix, threads);
        chart = chart.series(
            Series::new(
                format!("{mix}, {}", injectors_label(threads)),
                rows.iter().map(|r| (r.gb_per_s, r.latency_ns)).collect(),
            )
            .color(PALETTE[i % PALETTE.len()])
            .unstable(rows.iter().map(|r| noisy(r.spread_pct)).collect()),
        );
        if let Some(k) = curve_knee(result, mix, threads) {
            knees.push((k.gb_per_s, k.latency_ns));
        }
    }
    if result.idle_ns.is_finite() && result.idle_ns > 0.0 {
        let right = result
            .rows
            .iter()
            .map(|r| r.gb_per_s)
            .filter(|v| v.is_finite())
            .reduce(f64::max)
            .or(Some(result.peak_gb_per_s).filter(|v| v.is_finite()))
            .unwrap_or(1.0)
            .max(1.0);
        chart = chart.series(
            Series::new(
                format!("idle latency {} ns", ns(result.idle_ns)),
                vec![(0.0, result.idle_ns), (right, result.idle_ns)],
            )
            .color(REFERENCE_LINE_COLOR)
            .dashed()
            .without_markers(),
        );
    }
    if !knees.is_empty() {
        chart = chart.series(
            Series::new("knee: last point at the idle latency", knees)
                .color(FOUND_POINT_COLOR)
                .highlight(),
        );
    }
    if let Some(k) = &result.knee {
        chart = chart.marker(VMarker::found(
            k.gb_per_s,
            format!(
                "knee {} GB/s ({}% of peak)",
                gbs(k.gb_per_s),
                rounded(k.pct_of_peak, 1.0)
            ),
            FOUND_POINT_COLOR,
        ));
    }
    chart
}

/// `loaded.rows`: every point with the knee of its curve flagged (from the curves'
/// summaries only).
fn csv_rows(r: &LoadedResult) -> DataTable {
    let knee_delay = |mix: Mix, threads: usize| {
        r.curves
            .iter()
            .find(|c| c.mix == mix && c.threads == threads)
            .and_then(|c| c.knee.as_ref())
            .map(|k| k.delay)
    };
    #[derive(Serialize, Default)]
    struct Row {
        mix: &'static str,
        threads: usize,
        delay_cycles: u64,
        gb_per_s: Raw,
        injector_gb_per_s: Raw,
        latency_ns: Raw,
        latency_cycles: Raw,
        spread_pct: Raw,
        concurrency: Raw,
        injector_overlap: Raw,
        injectors_concurrent: bool,
        knee: bool,
    }
    DataTable::of(
        "loaded.rows",
        r.rows.iter().map(|row| Row {
            mix: row.mix.name(),
            threads: row.threads,
            delay_cycles: row.delay_cycles,
            gb_per_s: Raw(row.gb_per_s),
            injector_gb_per_s: Raw(row.injector_gb_per_s),
            latency_ns: Raw(row.latency_ns),
            latency_cycles: Raw(row.latency_cycles),
            spread_pct: Raw(row.spread_pct),
            concurrency: Raw(row.concurrency),
            injector_overlap: Raw(row.injector_overlap),
            injectors_concurrent: row.injectors_concurrent,
            knee: knee_delay(row.mix, row.threads) == Some(row.delay_cycles),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::super::samples;
    use super::*;

    fn section(r: &LoadedResult) -> Section {
        r.section(&Machine::default())
    }

    /// The CSV as text: header, then rows, cells joined by commas.
    fn csv(s: &Section) -> String {
        let t = s.data_tables()[0];
        let mut out = format!("{}\n", t.header.join(","));
        for row in &t.rows {
            out.push_str(&format!("{}\n", row.join(",")));
        }
        out
    }

    #[test]
    fn headline_knee_and_one_mark_per_curve() {
        let s = section(&samples::loaded());
        assert_eq!((s.id, s.nav.as_str()), ("loaded", "Loaded latency"));
        assert!(s.headlines.is_empty());
        let text = s.plain_text();
        for words in [
            "Idle latency 79.5 ns (238 cycles) · peak 66.0 GB/s",
            "knee at 41.7 GB/s (63% of peak), 81.5 ns, delay 200 cycles",
            "(curve read, 3 injector(s))",
            "Little's law",
            "page-local order (16 pages per window",
            "CPUs 1-3",
            "1:1, 3 injectors: knee at 10.0 GB/s",
        ] {
            assert!(text.contains(words), "{words}: {text}");
        }
        assert_eq!(text.matches("◀ knee").count(), 2, "{text}");
        let knee_line = text.lines().find(|l| l.contains("◀ knee")).unwrap();
        assert!(knee_line.starts_with("200 | 41.7 |"), "{knee_line}");
        assert!(knee_line.contains("81.5"), "{knee_line}");
        // Rows from the idle end to full load.
        let read = "read, 3 injectors: knee at 41.7 GB/s (63% of peak), 81.5 ns, delay 200 cycles";
        let read = s.table(read).unwrap();
        assert_eq!(read.column_text(0), ["400", "200", "100", "50", "0"]);
        let curves = s.table("Curves").unwrap();
        assert_eq!(curves.column_text(7), ["63", "20"]);
        assert!(s
            .all_blocks()
            .iter()
            .any(|b| matches!(b, Block::Details { summary, .. } if summary == "All 10 points")));
        // Nothing is marked when every point ran together.
        assert!(!text.contains("did not run together"));
    }

    #[test]
    fn chart_has_every_curve_the_idle_line_and_the_knees() {
        let s = section(&samples::loaded());
        let charts = s.charts();
        assert_eq!(charts.len(), 1);
        let chart = format!("{:?}", charts[0]);
        // No core clock: cycles per ns from the idle figures.
        for label in [
            "Latency vs bandwidth under load",
            "read, 3 injectors",
            "1:1, 3 injectors",
            "idle latency 79.5 ns",
            "knee 41.7 GB/s (63% of peak)",
            "knee: last point at the idle latency",
            "Latency (core cycles)",
        ] {
            assert!(chart.contains(label), "{label}");
        }
    }

    #[test]
    fn points_whose_injectors_did_not_run_together_are_marked() {
        let mut loaded = samples::loaded();
        loaded.rows[0].injectors_concurrent = false;
        loaded.rows[0].injector_overlap = 0.4;
        let s = section(&loaded);
        let text = s.plain_text();
        assert!(text.contains("down to 40 %"), "{text}");
        assert!(text.contains("\n400 | !12.5 |"), "{text}");
        assert_eq!(text.matches('!').count(), 2, "{text}");
    }

    #[test]
    fn csv_rows_flag_one_knee_per_curve() {
        let s = section(&samples::loaded());
        let names: Vec<&str> = s.data_tables().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["loaded.rows"]);
        let text = csv(&s);
        assert!(text.starts_with(
            "mix,threads,delay_cycles,gb_per_s,injector_gb_per_s,latency_ns,latency_cycles,\
             spread_pct,concurrency,injector_overlap,injectors_concurrent,knee\n"
        ));
        let knee = "read,3,200,41.7,40.9,81.5,244.5,1,53.1023,1,true,true\n";
        assert!(text.contains(knee), "{text}");
        assert_eq!(text.matches(",true\n").count(), 2, "one knee per curve");
        let columns = s.data_tables()[0].header.len();
        assert!(s.data_tables()[0].rows.iter().all(|r| r.len() == columns));
    }

    #[test]
    fn empty_and_nan_results_give_dashes() {
        let s = section(&samples::empty_loaded());
        let text = s.plain_text();
        for words in [
            "Idle latency – ns (– cycles)",
            "no knee: latency stayed at its idle level",
            "No loaded latency was measured.",
        ] {
            assert!(text.contains(words), "{words}: {text}");
        }
        assert!(s.charts().is_empty() && s.data_tables()[0].rows.is_empty());

        let s = section(&samples::nan_loaded());
        let text = s.plain_text();
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
        assert!(text.contains(DASH), "{text}");
        assert!(text.contains("1:1, 3 injectors: no knee"), "{text}");
        let csv = csv(&s);
        assert!(!csv.contains("NaN") && !csv.contains("inf"), "{csv}");
    }
}
