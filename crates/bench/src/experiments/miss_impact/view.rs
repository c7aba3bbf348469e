//! The cache-miss impact's section of every output: what each pattern does and how the
//! AMAT is built, the measured-vs-AMAT chart, one table row per footprint × pattern with
//! its reasons as footnotes, and the `miss_impact.rows` CSV table.

use serde::Serialize;

use super::{MissImpactResult, Pattern};
use crate::counters::MissLevel;
use crate::experiments::misses::{miss_cells, miss_columns};
use crate::topology::Machine;
use crate::units::Bytes;
use crate::view::chart::{level_color, Axis, BarChart, CURVE_COLOR};
use crate::view::data_row::Raw;
use crate::view::format::{distinct, duration, fixed, ns, spread_cell, DASH};
use crate::view::{Cell, Column, DataTable, Paragraph, Present, Section, Table, Text};

impl Present for MissImpactResult {
    fn section(&self, _machine: &Machine) -> Section {
        let mut section = Section::new("miss-impact", "Miss impact", "Cache-miss impact");
        section.push(intro(self));
        if self.rows.is_empty() {
            section.push(Paragraph::muted("No footprint was measured."));
        } else {
            section.push(miss_impact_chart(self));
        }
        section.push(rows_table(self));
        section.push(rows_data(self));
        section
    }
}

/// The patterns, what each row holds, and the AMAT formula with this run's latencies.
fn intro(result: &MissImpactResult) -> Paragraph {
    let window = result
        .window_pages
        .map_or(String::new(), |w| format!(", {w} pages per window"));
    let latencies = result
        .level_latencies
        .iter()
        .map(|l| format!("{} {} ns", l.name, ns(l.ns)))
        .collect::<Vec<_>>()
        .join(", ");
    Paragraph::note(
        Text::plain(format!(
            "One footprint inside each cache level and one in DRAM, each walked one {}-byte \
             line per access: ",
            result.line_bytes
        ))
        .strong("sequential")
        .add(" (every line in address order), ")
        .strong("random")
        .add(format!(
            " (a dependent {} pointer chase{window}: one miss at a time) and ",
            result.random_order
        ))
        .strong("random-independent")
        .add(
            " (the chase's lines as independent loads). Each row has the median time per \
             access over its trials, the run time of one counted pass through every line \
             (repeated to last a few trials), the misses per access counted at each level \
             over that pass (",
        )
        .strong("n/s")
        .add(": not supported here, see below; ")
        .strong("*")
        .add(": multiplexed), the page faults of the pass, and ")
        .strong("AMAT")
        .add(format!(
            " = {} built from the latency ladder's levels ({latencies}) and the row's own \
             miss rates. The chase takes about AMAT per access, as AMAT assumes misses one \
             at a time; sequential and independent loads take far less, since prefetchers \
             and memory-level parallelism overlap their misses.",
            result.amat_formula()
        )),
    )
}

/// Measured ns per access beside the AMAT estimate, one pair of bars per row (log scale:
/// L1 and DRAM differ a hundredfold).
pub(super) fn miss_impact_chart(result: &MissImpactResult) -> BarChart {
    let short = |p: Pattern| match p {
        Pattern::Sequential => "seq",
        Pattern::Random => "chase",
        Pattern::RandomIndependent => "indep",
    };
    let with_amat = result.rows.iter().any(|r| r.amat_ns.is_some());
    let title = if with_amat {
        "Time per access: measured and AMAT"
    } else {
        "Time per access, measured (no AMAT: the miss rates were not counted)"
    };
    let mut chart = BarChart::new(title)
        .size(1000.0, 340.0)
        .y_axis(Axis::log10("ns per access"))
        .categories(
            result
                .rows
                .iter()
                .map(|r| format!("{} {}", r.level, short(r.pattern)))
                .collect(),
        )
        .series(
            "measured",
            result.rows.iter().map(|r| r.ns_per_access).collect(),
            Some(CURVE_COLOR.to_string()),
        );
    if with_amat {
        chart = chart.series(
            "AMAT from the counted miss rates",
            result
                .rows
                .iter()
                .map(|r| r.amat_ns.unwrap_or(f64::NAN))
                .collect(),
            Some(level_color("DRAM").to_string()),
        );
    }
    chart.value_labels(Some(2))
}

/// One row per footprint × pattern; footnotes: one per distinct reason something was not
/// counted ("n/s") or computed ("n/c").
fn rows_table(result: &MissImpactResult) -> Table {
    let mut columns = vec![
        Column::text("Level"),
        Column::number("Footprint"),
        Column::text("Pattern"),
        Column::quantity("Time per access", "ns"),
        Column::number("Spread %"),
        Column::number("Run time"),
    ];
    columns.extend(miss_columns(""));
    columns.extend([
        Column::number("Page faults"),
        Column::quantity("AMAT", "ns"),
        Column::number("Measured / AMAT"),
    ]);
    let mut table = Table::new(columns);
    for r in &result.rows {
        let mut row = vec![
            Cell::swatched(level_color(r.level.name()), r.level.to_string()),
            Cell::new(Bytes(r.footprint_bytes).to_string()),
            Cell::new(r.pattern.label()),
            Cell::new(ns(r.ns_per_access)),
            spread_cell(r.spread_pct),
            Cell::new(duration(r.run_time_ns)),
        ];
        row.extend(miss_cells(Some(&r.misses)));
        row.extend([
            Cell::new(r.page_faults.map_or("n/s".into(), |f| f.to_string())),
            Cell::new(r.amat_ns.map_or("n/c".into(), ns)),
            Cell::new(r.measured_over_amat.map_or(DASH.into(), |x| fixed(x, 2))),
        ]);
        table.row(row);
    }
    for note in result.notes() {
        let mark = if note.starts_with("AMAT") {
            "n/c"
        } else {
            "n/s"
        };
        table.note(format!("{mark}: {note}"));
    }
    table
}

/// A row of `miss_impact.rows`: the raw figures of one footprint × pattern, the reasons
/// as text.
#[derive(Serialize, Default)]
struct MissImpactCsvRow {
    level: String,
    footprint_bytes: u64,
    pattern: &'static str,
    ns_per_access: Raw,
    spread_pct: Raw,
    run_time_ns: Raw,
    laps: u64,
    accesses: u64,
    l1_misses_per_access: Option<Raw>,
    l2_misses_per_access: Option<Raw>,
    llc_miss_rate: Option<Raw>,
    dtlb_misses_per_access: Option<Raw>,
    multiplexed: bool,
    misses_not_supported: String,
    page_faults: Option<u64>,
    task_clock_ns: Option<u64>,
    amat_ns: Option<Raw>,
    measured_over_amat: Option<Raw>,
    amat_not_computed: String,
}

/// `miss_impact.rows`: the raw figures of every row, the reasons as text.
fn rows_data(result: &MissImpactResult) -> DataTable {
    DataTable::of(
        "miss_impact.rows",
        result.rows.iter().map(|r| {
            let misses = |level| r.misses.per_access(level).map(Raw);
            let reasons = distinct(
                r.misses
                    .levels
                    .iter()
                    .filter_map(|l| l.not_supported.as_deref()),
            );
            MissImpactCsvRow {
                level: r.level.to_string(),
                footprint_bytes: r.footprint_bytes,
                pattern: r.pattern.label(),
                ns_per_access: Raw(r.ns_per_access),
                spread_pct: Raw(r.spread_pct),
                run_time_ns: Raw(r.run_time_ns),
                laps: r.laps,
                accesses: r.misses.accesses,
                l1_misses_per_access: misses(MissLevel::L1),
                l2_misses_per_access: misses(MissLevel::L2),
                llc_miss_rate: misses(MissLevel::Llc),
                dtlb_misses_per_access: misses(MissLevel::Dtlb),
                multiplexed: r.misses.levels.iter().any(|l| l.multiplexed),
                misses_not_supported: reasons.join("; "),
                page_faults: r.page_faults,
                task_clock_ns: r.task_clock_ns,
                amat_ns: r.amat_ns.map(Raw),
                measured_over_amat: r.measured_over_amat.map(Raw),
                amat_not_computed: r.amat_not_computed.clone().unwrap_or_default(),
            }
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::super::samples::sample;
    use super::*;

    #[test]
    fn a_row_per_footprint_and_pattern_and_one_note_per_reason() {
        let s = sample().section(&Machine::default());
        assert_eq!(
            (s.id, s.nav.as_str(), s.title.as_str()),
            ("miss-impact", "Miss impact", "Cache-miss impact")
        );
        let text = s.plain_text();
        for words in [
            "m_LLC·(t_DRAM − t_L3)",
            "AMAT = t_L1d + m_L1·(t_L2 − t_L1d)",
            "(L1d 1.00 ns, L2 4.00 ns, L3 12.0 ns, DRAM 100 ns)",
            "dependent page-local pointer chase, 64 pages per window",
        ] {
            assert!(text.contains(words), "{words}: {text}");
        }
        let tables = s.tables();
        assert_eq!(tables.len(), 1);
        let t = tables[0];
        assert_eq!(t.rows.len(), 3);
        let random = "DRAM|128 MiB|random|101|1.5|4.20 ms|1.000|1.000|1.000|0.000|0|100|1.01";
        assert_eq!(t.row_text(1).join("|"), random);
        let sequential = "DRAM|128 MiB|sequential|5.00|1.5|4.20 ms|n/s|n/s|n/s|0.000|0|n/c|–";
        assert_eq!(t.row_text(2).join("|"), sequential);
        let notes: Vec<String> = t.notes.iter().map(Text::to_plain).collect();
        assert_eq!(
            notes,
            [
                "n/s: L1 miss (L1-event), L2 miss (L2-event), LLC miss (LLC-event): not \
                 supported: no hardware PMU (a VM)",
                "n/c: AMAT: not computed: L1 misses not supported: no hardware PMU (a VM)"
            ]
        );
        // The chart: both series, a category per row.
        let chart = format!("{:?}", s.charts()[0]);
        assert!(chart.contains("AMAT from the counted miss rates"));
        assert!(chart.contains("DRAM chase") && chart.contains("L1d seq"));
    }

    #[test]
    fn without_counts_the_chart_says_why_and_without_rows_there_is_no_chart() {
        let mut uncounted = sample();
        uncounted.rows.retain(|r| r.amat_ns.is_none());
        let chart = format!("{:?}", miss_impact_chart(&uncounted));
        assert!(chart.contains("no AMAT: the miss rates were not counted"));
        assert!(!chart.contains("AMAT from the counted miss rates"));

        let mut empty = sample();
        empty.rows.clear();
        empty.level_latencies.clear();
        let s = empty.section(&Machine::default());
        assert!(s.charts().is_empty());
        let text = s.plain_text();
        assert!(
            text.contains("No footprint was measured.")
                && text.contains("AMAT = no latency levels")
        );
        assert!(s.tables()[0].is_empty() && s.data_tables()[0].rows.is_empty());

        let mut nan = sample();
        let r = &mut nan.rows[0];
        (r.ns_per_access, r.spread_pct, r.run_time_ns) = (f64::NAN, f64::NAN, f64::NAN);
        let s = nan.section(&Machine::default());
        assert_eq!(s.tables()[0].row_text(0)[3..6], ["–", "–", "–"]);
        assert_eq!(s.data_tables()[0].rows[0][3..6], ["", "", ""]);
    }

    #[test]
    fn csv_rows_keep_their_names_and_raw_figures() {
        let s = sample().section(&Machine::default());
        let data = s.data_tables();
        assert_eq!(data.len(), 1);
        let t = data[0];
        assert_eq!(t.name, "miss_impact.rows");
        assert_eq!(
            t.header[..4],
            ["level", "footprint_bytes", "pattern", "ns_per_access"]
        );
        assert_eq!(t.rows.len(), 3);
        // Counted: the AMAT and its ratio; not counted: empty cells and the reasons.
        assert_eq!(
            t.rows[1].join(","),
            "DRAM,134217728,random,101,1.5,4200000,3,1000,1,1,1,0,false,,0,4200000,100,1.01,"
        );
        assert_eq!(
            t.rows[2].join(","),
            "DRAM,134217728,sequential,5,1.5,4200000,3,1000,,,,0,false,not supported: no \
             hardware PMU (a VM),0,4200000,,,not computed: L1 misses not supported: no \
             hardware PMU (a VM)"
        );
        assert!(t.rows.iter().all(|r| r.len() == t.header.len()));
    }
}
