//! The latency ladder's section of every output: how it was measured, the chart, the
//! levels found, DRAM both ways, every point of the sweep (folded in HTML, terminal only
//! with `--points`), the `latency.points` CSV table and each level's headline.

use serde::Serialize;

use super::charts::latency_chart;
use super::{LatencyLevel, LatencyPoint, LatencyResult};
use crate::counters::AccessCounts;
use crate::experiments::misses::{miss_notes, Misses};
use crate::kernels::permutation::ChaseOrderKind;
use crate::topology::Machine;
use crate::units::Bytes;
use crate::view::chart::level_color;
use crate::view::data_row::{cells_of, header_of, Columns, Raw};
use crate::view::format::{cycles, ns, opt_bytes, spread};
use crate::view::{
    Block, Cell, Column, DataTable, Headline, Paragraph, Present, Section, Style, Table, Text,
};

impl Present for LatencyResult {
    fn section(&self, machine: &Machine) -> Section {
        let mut section = Section::new("latency", "Latency", "Latency ladder");
        section.headlines = headlines(self);
        section.push(intro(self));
        section.push(latency_chart(self, machine));
        if self.levels.is_empty() {
            section.push(Block::Heading("Levels found".to_string()));
            section.push(Paragraph::muted("No plateau was found in the curve."));
        } else {
            section.push(levels_table(self));
        }
        if let Some(dram) = dram_paragraph(self) {
            section.push(dram);
        }
        section.push(Block::Verbose(vec![Block::Details {
            summary: format!("All {} points of the sweep", self.points.len()),
            blocks: vec![sweep_table(self).into()],
        }]));
        section.push(points_data(self));
        section
    }
}

/// How the curve was measured: chase order, stride, trials, and the dashed random curve.
fn intro(result: &LatencyResult) -> Paragraph {
    let trials = result.points.iter().map(|p| p.trials).max().unwrap_or(0);
    let order = match result.order {
        ChaseOrderKind::PageLocal => {
            "page-local order (random lines within a small window of pages at a time, so the \
             caches are measured without TLB misses)"
        }
        ChaseOrderKind::Random => "random order over the whole buffer",
    };
    let mut text = format!(
        "Dependent pointer chase in {order} with a {} stride: every load's address comes \
         from the previous load, so each step costs the full load-to-use latency of the \
         level the working set fits in. Each point is the median of up to {trials} timed \
         trials; bars show the robust spread.",
        Bytes(result.stride_bytes)
    );
    if result.random_points.as_ref().is_some_and(|r| !r.is_empty()) {
        text.push_str(
            " The dashed curve repeats the sweep with a random chase over the whole buffer: \
             the gap between the two curves is what TLB misses and page walks cost at each \
             size.",
        );
    }
    Paragraph::note(text)
}

/// The point of a curve nearest the middle (on a log scale) of the plateau from `first`
/// to `last` bytes.
pub(super) fn plateau_centre(
    points: &[LatencyPoint],
    first: u64,
    last: u64,
) -> Option<&LatencyPoint> {
    let centre = ((first.max(1) as f64).log2() + (last.max(1) as f64).log2()) / 2.0;
    points
        .iter()
        .filter(|p| (first..=last).contains(&p.bytes))
        .min_by(|a, b| {
            let distance = |p: &LatencyPoint| ((p.bytes.max(1) as f64).log2() - centre).abs();
            distance(a).total_cmp(&distance(b))
        })
}

/// One row per level found; with counters, the misses per load at the sweep point
/// nearest the middle of each plateau.
fn levels_table(result: &LatencyResult) -> Table {
    let misses = Misses::of("", result.points.iter().map(|p| p.counters.as_ref()));
    let mut columns = vec![
        Column::text("Level"),
        Column::quantity("Latency", "ns"),
        Column::number("Cycles"),
        Column::number("Plateau"),
        Column::number("Measured capacity"),
        Column::number("OS size"),
        Column::number("Points"),
    ];
    columns.extend(misses.columns());
    let mut table = Table::new(columns).titled("Levels found");
    let mut level_counts: Vec<&AccessCounts> = Vec::new();
    for level in &result.levels {
        let counts = plateau_centre(&result.points, level.first_bytes, level.last_bytes)
            .and_then(|p| p.counters.as_ref());
        let mut row = level_cells(level);
        row.extend(misses.cells(counts));
        level_counts.extend(counts);
        table.row(row);
    }
    if misses.counted() {
        // The first note says what the columns are: here, the plateaus' middle points.
        table.notes = miss_notes(level_counts);
        table.notes[0] = Text::plain(
            "Miss columns: misses per load at the sweep point nearest the middle of each \
             plateau (hardware counters, an untimed pass after the point's trials).",
        );
    }
    table
}

fn level_cells(level: &LatencyLevel) -> Vec<Cell> {
    vec![
        Cell::swatched(level_color(level.name.name()), level.name.to_string()),
        Cell::new(ns(level.latency_ns)),
        Cell::new(cycles(level.latency_cycles)),
        Cell::new(format!(
            "{} – {}",
            Bytes(level.first_bytes),
            Bytes(level.last_bytes)
        )),
        Cell::new(opt_bytes(level.capacity_bytes)),
        Cell::new(opt_bytes(level.os_size_bytes)),
        Cell::new(level.points.to_string()),
    ]
}

/// DRAM measured both ways at the largest working set, and what the TLB's own share of
/// the difference is when the TLB experiment measured it.
fn dram_paragraph(result: &LatencyResult) -> Option<Paragraph> {
    let d = result.dram.as_ref()?;
    let mut text = Text::new()
        .strong("DRAM")
        .add(format!(" at {}: random chase ", Bytes(d.bytes)))
        .strong(format!("{} ns", ns(d.random_ns)))
        .add(format!(
            " ({} cycles), page-local chase ",
            cycles(d.random_cycles)
        ))
        .strong(format!("{} ns", ns(d.page_local_ns)))
        .add(format!(
            " ({} cycles, {} pages per window). ",
            cycles(d.page_local_cycles),
            d.page_local_window_pages
        ));
    // Random no slower than page-local (a sweep that stops inside a cache, or noise):
    // no cost to name, never a negative one.
    if d.tlb_penalty_ns.is_nan() || d.tlb_penalty_ns <= 0.0 {
        let text = text.add(
            "The random chase is no slower here: TLB misses and page walks add nothing \
             measurable at this working set",
        );
        return Some(Paragraph::callout(text.add(".")));
    }
    text = text
        .add("TLB misses and page walks add ")
        .strong(format!("{} ns", ns(d.tlb_penalty_ns)))
        .add(" per access");
    if let Some(tlb) = d.tlb_measured_ns {
        text = text
            .add(
                ", together with DRAM locality: the TLB experiment puts the TLB's own share \
                 at ",
            )
            .strong(format!("{} ns", ns(tlb)))
            .add(format!(
                " here, so about {} ns come from the page-local window's open DRAM rows and \
                 fewer bank conflicts",
                ns((d.tlb_penalty_ns - tlb).max(0.0))
            ));
    }
    Some(Paragraph::callout(text.add(".")))
}

/// "unstable" in red, or nothing.
fn stability(p: &LatencyPoint) -> Cell {
    if p.unstable {
        Cell::styled("unstable", Style::Warn)
    } else {
        Cell::default()
    }
}

/// Every point of the sweep; beside it the random curve at the same size (when measured)
/// and the misses per load of either (when counted).
fn sweep_table(result: &LatencyResult) -> Table {
    let random = result.random_points.as_deref().unwrap_or(&[]);
    // The random sweep, when measured, shares the sizes of the main one: matched by size.
    let random_at = |bytes: u64| random.iter().find(|r| r.bytes == bytes);
    let misses = Misses::of("", result.points.iter().map(|p| p.counters.as_ref()));
    let random_misses = Misses::of("Random ", random.iter().map(|p| p.counters.as_ref()));
    let mut columns = vec![
        Column::number("Working set"),
        Column::number("Bytes"),
        Column::number("ns"),
        Column::number("Cycles"),
        Column::number("Spread %"),
        Column::number("Trials"),
        Column::text("Stability"),
    ];
    if !random.is_empty() {
        columns.extend([
            Column::number("Random ns"),
            Column::number("Random cycles"),
            Column::number("TLB cost ns"),
            Column::number("Random spread %"),
            Column::text("Random stability"),
        ]);
    }
    columns.extend(misses.columns());
    columns.extend(random_misses.columns());
    let mut table = Table::new(columns);
    for p in &result.points {
        let mut row = vec![
            Cell::new(Bytes(p.bytes).to_string()),
            Cell::new(p.bytes.to_string()),
            Cell::new(ns(p.ns)),
            Cell::new(cycles(p.cycles)),
            Cell::new(spread(p.spread_pct)),
            Cell::new(p.trials.to_string()),
            stability(p),
        ];
        if !random.is_empty() {
            match random_at(p.bytes) {
                Some(r) => row.extend([
                    Cell::new(ns(r.ns)),
                    Cell::new(cycles(r.cycles)),
                    Cell::new(ns(r.ns - p.ns)),
                    Cell::new(spread(r.spread_pct)),
                    stability(r),
                ]),
                None => {
                    row.extend(vec![Cell::dash(); 4]);
                    row.push(Cell::default());
                }
            }
        }
        row.extend(misses.cells(p.counters.as_ref()));
        row.extend(random_misses.cells(random_at(p.bytes).and_then(|r| r.counters.as_ref())));
        table.row(row);
    }
    // Both curves' notes, once.
    let all = result.points.iter().chain(random);
    table.notes = Misses::of("", all.map(|p| p.counters.as_ref())).notes();
    table
}

/// `latency.points`: one row per size of the sweep, the random curve's figures beside it
/// (matched by position), the level the point belongs to, and the misses when counted.
fn points_data(result: &LatencyResult) -> DataTable {
    #[derive(Serialize, Default)]
    struct Point<'a> {
        bytes: u64,
        order: &'static str,
        ns: Raw,
        cycles: Raw,
        spread_pct: Raw,
        trials: usize,
        unstable: bool,
        level: &'a str,
    }
    /// The random curve's columns, there only when it ran (a row past its end has none).
    #[derive(Serialize, Default)]
    struct RandomPoint {
        random_ns: Raw,
        random_cycles: Raw,
        random_spread_pct: Raw,
        random_unstable: bool,
    }
    let random = result.random_points.as_deref().unwrap_or(&[]);
    let misses = Misses::of("", result.points.iter().map(|p| p.counters.as_ref()));
    let random_misses = Misses::of("Random ", random.iter().map(|p| p.counters.as_ref()));
    let mut after = Vec::new();
    if !random.is_empty() {
        after.extend(header_of::<RandomPoint>());
    }
    after.extend(misses.data_header());
    after.extend(random_misses.data_header());
    let columns = Columns::after(after);
    let rows = result.points.iter().enumerate().map(|(i, p)| {
        let level = result
            .levels
            .iter()
            .find(|l| (l.first_bytes..=l.last_bytes).contains(&p.bytes))
            .map_or("", |l| l.name.name());
        let row = Point {
            bytes: p.bytes,
            order: result.order.name(),
            ns: Raw(p.ns),
            cycles: Raw(p.cycles),
            spread_pct: Raw(p.spread_pct),
            trials: p.trials,
            unstable: p.unstable,
            level,
        };
        let mut after = Vec::new();
        if let Some(r) = random.get(i) {
            after.extend(cells_of(&RandomPoint {
                random_ns: Raw(r.ns),
                random_cycles: Raw(r.cycles),
                random_spread_pct: Raw(r.spread_pct),
                random_unstable: r.unstable,
            }));
        }
        after.extend(misses.data(p.counters.as_ref()));
        after.extend(random_misses.data(random.get(i).and_then(|r| r.counters.as_ref())));
        (Vec::new(), row, after)
    });
    DataTable::of_around("latency.points", columns, rows)
}

/// Each level's load-to-use latency and measured capacity.
fn headlines(result: &LatencyResult) -> Vec<Headline> {
    result
        .levels
        .iter()
        .filter(|l| l.latency_ns.is_finite())
        .map(|level| {
            Headline {
                label: level.name.to_string(),
                value: format!("{} ns", ns(level.latency_ns)),
                detail: match level.capacity_bytes {
                    Some(bytes) => format!("load-to-use; measured capacity {}", Bytes(bytes)),
                    None => "load-to-use".to_string(),
                },
                ..Headline::default()
            }
            .key(super::figures::level_latency_key(level.name.name()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::samples;
    use super::*;
    use crate::counters::samples::uncounted_access;
    use crate::view::Row;

    fn section(result: &LatencyResult) -> Section {
        result.section(&Machine::sample())
    }

    /// The sweep table: the last table, inside the `--points` group.
    fn sweep(section: &Section) -> &Table {
        section.tables().pop().unwrap()
    }

    #[test]
    fn levels_headlines_dram_chart_and_folded_sweep() {
        let result = samples::latency();
        let s = section(&result);
        assert_eq!(
            (s.id, s.nav.as_str(), s.title.as_str()),
            ("latency", "Latency", "Latency ladder")
        );
        let levels = s.table("Levels found").unwrap();
        assert_eq!(levels.column_text(0), ["L1d", "L2", "L3", "DRAM"]);
        let l2 = "L2 | 4.10 | 12.3 | 64 KiB – 1 MiB | 1 MiB | 1 MiB | 4";
        assert_eq!(levels.row_of("L2").join(" | "), l2);
        assert_eq!(levels.column_text(4)[3], "–", "DRAM has no capacity");
        // Each level is a headline: its latency and measured capacity.
        let labels: Vec<&str> = s.headlines.iter().map(|h| h.label.as_str()).collect();
        assert_eq!(labels, ["L1d", "L2", "L3", "DRAM"]);
        assert_eq!(s.headlines[1].value, "4.10 ns");
        let detail = "load-to-use; measured capacity 1 MiB";
        assert_eq!(s.headlines[1].detail, detail);
        assert_eq!(s.headlines[3].detail, "load-to-use");
        // Each by the key of its figure, which the drift pass measures again.
        assert_eq!(s.headlines[1].keys[0].key, "latency.level.L2.latency_ns");
        let figures = crate::view::figure::Figures::figures(&result);
        crate::view::figure::find(&figures, &s.headlines[1].keys[0].key);
        let text = s.plain_text();
        assert!(text.contains("random order over the whole buffer with a 64 B stride"));
        assert!(text.contains("up to 7 timed trials"));
        assert!(text.contains(
            "DRAM at 256 MiB: random chase 95.0 ns (285 cycles), page-local chase 80.0 ns \
             (240 cycles, 16 pages per window). TLB misses and page walks add 15.0 ns per \
             access, together with DRAM locality: the TLB experiment puts the TLB's own share \
             at 9.50 ns here, so about 5.50 ns come from"
        ));
        assert!(!text.contains("L1 miss"), "no counters, no miss columns");
        // The sweep: every point, folded, only with --points in the terminal.
        let sweep = sweep(&s);
        assert_eq!(sweep.rows.len(), result.points.len());
        assert_eq!(sweep.columns.len(), 7);
        let Some(Block::Verbose(folded)) = s.blocks.iter().find(|b| matches!(b, Block::Verbose(_)))
        else {
            panic!("no --points group")
        };
        assert!(matches!(&folded[..], [Block::Details { summary, blocks }]
            if summary == "All 17 points of the sweep" && matches!(blocks[..], [Block::Table(_)])));
        assert_eq!(sweep.column_text(6)[9], "unstable");
        // The chart: found ends, OS sizes, the cycles axis.
        let charts = s.charts();
        assert_eq!(charts.len(), 1);
        let chart = format!("{:?}", charts[0]);
        for label in [
            "L1d ends",
            "L1d 32 KiB",
            "Latency (core cycles)",
            "L3 14.0 ns",
        ] {
            assert!(chart.contains(label), "{label}");
        }
    }

    #[test]
    fn empty_and_nan_results_give_dashes_and_do_not_panic() {
        let empty = LatencyResult {
            points: vec![],
            levels: vec![],
            dram: None,
            ..samples::latency()
        };
        let s = empty.section(&Machine::default());
        let text = s.plain_text();
        assert!(text.contains("No plateau was found in the curve."));
        assert!(s.headlines.is_empty());
        assert!(sweep(&s).is_empty());
        assert!(!format!("{:?}", s.charts()[0]).contains("core cycles"));

        let mut one = samples::latency();
        one.points.truncate(1);
        let p = &mut one.points[0];
        (p.ns, p.cycles, p.spread_pct) = (f64::NAN, f64::NAN, f64::NAN);
        one.levels[0].latency_ns = f64::NAN;
        let s = section(&one);
        assert_eq!(sweep(&s).row_of("4 KiB")[2..5], ["–", "–", "–"]);
        assert_eq!(s.table("Levels found").unwrap().column_text(1)[0], "–");
        assert_eq!(
            s.headlines.len(),
            3,
            "a level without a latency: no headline"
        );
        assert_eq!(s.data_tables()[0].rows[0][2..5], ["", "", ""]);
    }

    #[test]
    fn random_curve_is_tabulated_next_to_the_page_local_one() {
        let mut result = samples::latency();
        result.order = ChaseOrderKind::PageLocal;
        let random = result.points.iter().map(|p| LatencyPoint {
            ns: p.ns * 1.2,
            ..p.clone()
        });
        result.random_points = Some(random.collect());
        let s = section(&result);
        let chart = format!("{:?}", s.charts()[0]);
        assert!(chart.contains("random chase over the whole buffer"));
        assert!(s.plain_text().contains("page-local order") && s.plain_text().contains("dashed"));
        // 95 ns page-local vs 114 ns random at the largest size: 19 ns of TLB cost.
        let sweep = sweep(&s);
        assert_eq!(sweep.headers()[9], "TLB cost ns");
        let last = sweep.row_of("256 MiB");
        assert_eq!(last[7..12], ["114", "285", "19.0", "1.0", ""]);
    }

    #[test]
    fn a_random_chase_no_slower_names_no_tlb_cost() {
        let mut result = samples::latency();
        let dram = result.dram.as_mut().unwrap();
        dram.random_ns = dram.page_local_ns - 8.49;
        dram.tlb_penalty_ns = -8.49;
        let text = section(&result).plain_text();
        assert!(
            text.contains("The random chase is no slower here"),
            "{text}"
        );
        assert!(!text.contains("-8.49") && !text.contains("−8.49"), "{text}");
    }

    #[test]
    fn counted_points_get_miss_columns_and_each_note_once_per_table() {
        let plain = section(&samples::latency_counted(false));
        let text = plain.plain_text();
        assert!(!text.contains("L1 miss") && !text.contains("n/s"), "{text}");

        let result = samples::latency_counted(true);
        let s = section(&result);
        let levels = s.table("Levels found").unwrap();
        let misses = ["L1 miss", "L2 miss", "LLC miss", "dTLB miss"];
        assert!(levels.headers().ends_with(&misses.map(String::from)));
        // Each level shows the point nearest its plateau's middle: 8 KiB (L1 0.1), 256 KiB
        // (0.6) and 8 MiB (1.1); L2 and the DTLB were not counted, the LLC multiplexed.
        for (name, l1) in [("L1d", "0.100"), ("L2", "0.600"), ("DRAM", "1.100")] {
            let row = levels.row_of(name);
            assert_eq!(row[7..], [l1, "n/s", "0.010*", "n/s"], "{name}");
        }
        let l2_note = "n/s — L2 miss (none): not supported: no generic L2 event";
        let dtlb_note =
            "n/s — dTLB miss (dTLB-load-misses): not supported: the CPU has no such event";
        // Four notes: the columns, "*", L2 and dTLB (not the random curve's: not shown).
        let level_notes: Vec<String> = levels.notes.iter().map(Text::to_plain).collect();
        assert_eq!(level_notes.len(), 4);
        assert!(level_notes[0].contains("nearest the middle of each plateau"));
        assert!(level_notes[1].starts_with("* the PMU was shared"));
        for note in [l2_note, dtlb_note] {
            assert_eq!(levels.note_count(note), 1, "{note}");
        }
        // A level's "n/s" carries its reason as a tooltip.
        let n_s = Cell::titled("n/s", Style::Muted, "not supported: no generic L2 event");
        assert!(matches!(&levels.rows[0], Row::Cells(c) if c[8] == n_s));

        // The sweep: both curves' misses in one table, the notes once after it.
        let sweep = sweep(&s);
        assert_eq!(sweep.rows.len(), result.points.len());
        assert!(sweep.headers().contains(&"Random dTLB miss".to_string()));
        let l1_note = "n/s — L1 miss (L1_miss_event): not supported: no hardware PMU (test)";
        for note in [l2_note, dtlb_note, l1_note] {
            assert_eq!(sweep.note_count(note), 1, "{note}");
        }
        let first = sweep.row_of("4 KiB");
        let n = first.len();
        assert_eq!(first[n - 8..n - 4], ["0.000", "n/s", "0.010*", "n/s"]);
        assert!((0..sweep.rows.len()).all(|i| sweep.row_text(i)[n - 4..] == ["n/s"; 4]));
    }

    #[test]
    fn csv_has_miss_columns_only_with_counters_and_empty_where_not_counted() {
        let plain = section(&samples::latency_counted(false));
        let data = plain.data_tables();
        assert_eq!(data.len(), 1);
        assert_eq!(data[0].name, "latency.points");
        assert_eq!(
            data[0].header.join(","),
            "bytes,order,ns,cycles,spread_pct,trials,unstable,level,\
             random_ns,random_cycles,random_spread_pct,random_unstable"
        );
        let first = "4096,page-local,1,4,1,5,false,L1d,1.2,4,1,false";
        assert_eq!(data[0].rows[0].join(","), first);

        let counted = section(&samples::latency_counted(true));
        let t = counted.data_tables()[0];
        let counts = uncounted_access();
        let random = Misses::of("Random ", [Some(&counts)]);
        assert!(t.header.ends_with(&random.data_header()));
        let cell = |row: usize, column: &str| {
            let at = t.header.iter().position(|h| h == column).unwrap();
            t.rows[row][at].clone()
        };
        // 16 KiB: L1 0.2, no L2 event, the LLC counted (multiplexed), the DTLB refused.
        for (column, value) in [
            ("counted_accesses", "1000"),
            ("l1_miss_per_access", "0.2"),
            ("l2_miss_per_access", ""),
            ("llc_miss_per_access", "0.01"),
            ("dtlb_miss_per_access", ""),
            ("random_counted_accesses", "1000"),
            ("random_l1_miss_per_access", ""),
        ] {
            assert_eq!(cell(2, column), value, "{column}");
        }
        assert!(t.rows.iter().all(|r| r.len() == t.header.len()));
    }
}
