//! The TLB section of every output: the levels found (entries, reach, miss cost beside
//! CPUID's entries), the curves per page size (compact in the terminal, every point in
//! HTML), SAXPY and DRAM parallelism by page size, the reach table, the CSV tables
//! `tlb.rows` / `tlb.levels` / `tlb.saxpy`, and each level's miss cost as a headline.

use super::charts::{page_color, saxpy_chart, tlb_chart};
use super::data::{levels_data, rows_data, saxpy_data};
use super::{TlbResult, TlbRow};
use crate::experiments::misses::Misses;
use crate::topology::Machine;
use crate::units::Bytes;
use crate::view::format::spread_cell;
use crate::view::format::{cycles, fixed, k_subset, ns, opt_bytes, opt_count, rounded};
use crate::view::{
    Block, Cell, Column, Headline, Medium, Paragraph, Present, Priority, Section, Style, Table,
    Text,
};

/// Page counts shown per page size in the terminal's compact curve tables.
const TLB_CURVE_ROWS: usize = 12;

impl Present for TlbResult {
    fn section(&self, machine: &Machine) -> Section {
        let mut s = Section::new("tlb", "TLB", "TLB reach and miss cost");
        s.headlines = headlines(self);
        s.push(Paragraph::note(intro()));
        if self.rows.is_empty() {
            s.push(Paragraph::muted("No page count was measured."));
        } else {
            s.push(tlb_chart(self, machine));
        }
        s.push(levels_table(self));
        if !self.rows.is_empty() {
            s.push(Block::Only(Medium::Terminal, compact_curves(self)));
        }
        if !self.saxpy.is_empty() {
            s.push(Block::Heading("SAXPY with and without huge pages".into()));
            s.push(Paragraph::note(
                "y = a·x + y over the same footprint: sequentially (one TLB miss per 4 KiB \
                 of each array, shared by a whole page of elements), one element per 4 KiB \
                 page (every access a new page, as sparse or column-wise code does) and the \
                 same with huge pages: what huge pages buy a real kernel. The time per \
                 element is a throughput figure: the accesses are independent.",
            ));
            s.push(saxpy_chart(self));
            s.push(saxpy_table(self));
        }
        if !self.mlp_by_page_size.is_empty() {
            s.push(Block::Heading(
                "Memory-level parallelism by page size".into(),
            ));
            s.push(Paragraph::note(
                "Independent pointer chains through DRAM, as in the MLP section, with 4 KiB \
                 and with huge pages. When the chains' misses also miss the TLB (4 KiB pages \
                 over a DRAM-sized working set), each needs a page walk, and a core has only \
                 a few page walkers: if they limit how many misses overlap, the parallelism \
                 is higher with huge pages.",
            ));
            s.push(mlp_table(self));
        }
        if !self.reach.is_empty() {
            s.push(reach_table(self));
        }
        s.push(Block::Verbose(vec![Block::Details {
            summary: format!("All {} points", self.rows.len()),
            blocks: vec![all_points_table(self).into()],
        }]));
        s.push(rows_data(self));
        if !self.levels.is_empty() {
            s.push(levels_data(self));
        }
        if !self.saxpy.is_empty() {
            s.push(saxpy_data(self));
        }
        s
    }
}

fn intro() -> Text {
    Text::plain(
        "A pointer chase touches one cache line in each of N pages, in random order, so \
         every load needs its own translation: the curve steps up where N passes the \
         entries of a TLB level. The same number of lines packed densely into as few pages \
         as possible is timed beside it (",
    )
    .strong("dense")
    .add(": the data caches' share), and the ")
    .strong("TLB part")
    .add(
        " = ns − dense ns isolates what translation adds. Past the L1 DTLB a load is \
         translated by the L2 DTLB; past the L2 DTLB it needs a page walk, whose cost \
         depends on where the page-table entries are cached. Under a hypervisor an L2 DTLB \
         miss is a nested (two-dimensional) page walk: every level of the guest's page \
         table is itself translated through the host's, so it costs more than on bare \
         metal. A 2 MiB page covers 512 × 4 KiB with one entry.",
    )
}

/// Each level with a reach and a finite miss cost: "L1 DTLB (4 KiB pages)", "2.00 ns".
fn headlines(result: &TlbResult) -> Vec<Headline> {
    result
        .levels
        .iter()
        .filter_map(|l| {
            let (reach, miss) = (l.reach_bytes?, l.miss_ns?);
            miss.is_finite().then(|| Headline {
                label: format!("{} ({} pages)", l.name, Bytes(l.page_bytes)),
                value: format!("{} ns", ns(miss)),
                detail: format!("per miss; reach {}", Bytes(reach)),
                ..Headline::default()
            })
        })
        .collect()
}

/// A page size with its colour swatch (HTML).
fn page_cell(page_bytes: u64) -> Cell {
    Cell::swatched(page_color(page_bytes), Bytes(page_bytes).to_string())
}

/// The levels found, or a muted line when there are none.
fn levels_table(result: &TlbResult) -> Block {
    if result.levels.is_empty() {
        return Paragraph::muted("No TLB level was found.").into();
    }
    let mut t = Table::new(vec![
        Column::text("Page"),
        Column::text("Level"),
        Column::number("Entries found"),
        Column::number("Rise"),
        Column::number("CPUID entries"),
        Column::number("Reach"),
        Column::quantity("Miss cost", "ns"),
        Column::quantity("Miss cost", "cycles"),
    ])
    .titled("Levels found");
    for l in &result.levels {
        t.row(vec![
            page_cell(l.page_bytes),
            Cell::new(l.name.clone()),
            l.entries
                .map_or_else(Cell::dash, |e| Cell::styled(e.to_string(), Style::Strong)),
            l.transition_pages
                .map_or_else(Cell::dash, |(lo, hi)| Cell::new(format!("{lo}–{hi}"))),
            Cell::new(opt_count(l.cpuid_entries)),
            Cell::new(opt_bytes(l.reach_bytes)),
            Cell::new(ns(l.miss_ns.unwrap_or(f64::NAN))),
            Cell::new(cycles(l.miss_cycles.unwrap_or(f64::NAN))),
        ]);
    }
    t.note(
        "Entries: pages covered before the next knee. Rise: the page counts over which the \
         curve climbs from the plateau (a quarter of the way to the miss cost) to three \
         quarters of it; a wide rise (a replacement that is not LRU, a TLB shared with a \
         sibling) means the knee can land anywhere in it from run to run, and compare counts \
         that as the figure's noise. Miss cost: the step from this level's plateau to the \
         next one (past the last TLB, a page walk; nested under a hypervisor).",
    );
    t.into()
}

/// The cells every curve table shows of a point: pages, memory spanned, ns, cycles,
/// dense ns, TLB part, spread (marked when noisy), then the miss cells when counted.
fn curve_cells(r: &TlbRow, misses: &Misses) -> Vec<Cell> {
    let mut cells = vec![
        Cell::new(r.pages.to_string()),
        Cell::new(Bytes(r.pages.saturating_mul(r.page_bytes)).to_string()),
        Cell::new(ns(r.ns)),
        Cell::new(cycles(r.cycles)),
        Cell::new(ns(r.dense_ns)),
        Cell::new(ns(r.tlb_ns)),
        spread_cell(r.spread_pct),
    ];
    cells.extend(misses.cells(r.counters.as_ref()));
    cells
}

/// The columns of `curve_cells`.
fn curve_columns(misses: &Misses) -> Vec<Column> {
    let mut columns = vec![
        Column::number("Pages"),
        Column::number("Memory spanned"),
        Column::quantity("Latency", "ns").priority(Priority::High),
        Column::number("Cycles").priority(Priority::Low),
        Column::quantity("Dense", "ns").priority(Priority::Low),
        Column::quantity("TLB part", "ns").priority(Priority::High),
        Column::number("Spread %").priority(Priority::Low),
    ];
    columns.extend(misses.columns());
    columns
}

/// The terminal's curves: per page size at most about `TLB_CURVE_ROWS` page counts, evenly
/// spread, with both sides of every knee and the last point of each level marked.
fn compact_curves(result: &TlbResult) -> Vec<Block> {
    let mut blocks = Vec::new();
    for page in result.page_sizes() {
        let rows = result.curve(page);
        let pages: Vec<u64> = rows.iter().map(|r| r.pages).collect();
        // Each level's last page count: the point before its knee.
        let knees: Vec<(u64, &str)> = result
            .levels
            .iter()
            .filter(|l| l.page_bytes == page)
            .filter_map(|l| Some((l.entries?, l.name.as_str())))
            .collect();
        let cliffs: Vec<u64> = knees.iter().map(|k| k.0).collect();
        let even = TLB_CURVE_ROWS.saturating_sub(2 * cliffs.len()).max(4);
        let shown = k_subset(&pages, &cliffs, even);
        let subset = if shown.len() < pages.len() {
            format!(
                " ({} of {} page counts; the HTML report plots all, --points lists them)",
                shown.len(),
                pages.len()
            )
        } else {
            String::new()
        };
        let misses = Misses::of("", rows.iter().map(|r| r.counters.as_ref()));
        let mut columns = curve_columns(&misses);
        // The level marks ("◀ last in L1 DTLB") say where the knees are.
        columns.push(Column::text("").priority(Priority::High));
        let mut t = Table::new(columns).titled(format!(
            "{} pages: ns per load by pages touched (TLB = ns − dense, the same lines packed \
             densely){subset}",
            Bytes(page)
        ));
        for r in rows.iter().filter(|r| shown.contains(&r.pages)) {
            let last_of: Vec<String> = knees
                .iter()
                .filter(|(entries, _)| {
                    pages.iter().rev().find(|&&p| p <= *entries) == Some(&r.pages)
                })
                .map(|(entries, name)| format!("◀ last in {name} ({entries} entries)"))
                .collect();
            let mut cells = curve_cells(r, &misses);
            cells.push(Cell::new(last_of.join(", ")));
            t.row(cells);
        }
        t.notes = misses.notes();
        blocks.push(t.into());
    }
    blocks
}

/// Every point of every page size, with its page size first.
fn all_points_table(result: &TlbResult) -> Table {
    let misses = Misses::of("", result.rows.iter().map(|r| r.counters.as_ref()));
    let mut columns = vec![Column::text("Page")];
    columns.extend(curve_columns(&misses));
    let mut t = Table::new(columns);
    for r in &result.rows {
        let mut cells = vec![page_cell(r.page_bytes)];
        cells.extend(curve_cells(r, &misses));
        t.row(cells);
    }
    t.notes = misses.notes();
    t
}

fn saxpy_table(result: &TlbResult) -> Table {
    let mut t = Table::new(vec![
        Column::text("Pattern"),
        Column::text("Page"),
        Column::number("Stride"),
        Column::number("Footprint (x and y)"),
        Column::number("ms per pass"),
        Column::number("ns per element"),
    ]);
    for r in &result.saxpy {
        t.row(vec![
            Cell::new(r.pattern.clone()),
            page_cell(r.page_bytes),
            Cell::new(Bytes(r.stride_bytes).to_string()),
            Cell::new(Bytes(r.footprint_bytes).to_string()),
            Cell::new(rounded(r.pass_ms, 100.0)),
            Cell::new(ns(r.ns_per_access)),
        ]);
    }
    t
}

fn mlp_table(result: &TlbResult) -> Table {
    let mut t = Table::new(vec![
        Column::text("Page"),
        Column::number("Working set"),
        Column::number("Chains"),
        Column::number("ns per load"),
        Column::number("Parallelism"),
    ]);
    for m in &result.mlp_by_page_size {
        t.row(vec![
            page_cell(m.page_bytes),
            Cell::new(Bytes(m.bytes).to_string()),
            Cell::new(m.chains.to_string()),
            Cell::new(ns(m.ns_per_load)),
            Cell::new(fixed(m.parallelism, 1)),
        ]);
    }
    t
}

fn reach_table(result: &TlbResult) -> Table {
    let mut t = Table::new(vec![
        Column::text("Level"),
        Column::text("Page"),
        Column::number("CPUID entries"),
        Column::number("CPUID reach"),
        Column::number("Measured entries"),
        Column::number("Measured reach"),
    ])
    .titled("Reach: entries × page size");
    for r in &result.reach {
        t.row(vec![
            Cell::new(r.name.clone()),
            page_cell(r.page_bytes),
            Cell::new(opt_count(r.cpuid_entries)),
            Cell::new(opt_bytes(r.cpuid_reach_bytes)),
            Cell::new(opt_count(r.measured_entries)),
            Cell::new(opt_bytes(r.measured_reach_bytes)),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::super::samples;
    use super::*;
    use crate::counters::samples::uncounted_access;
    use crate::view::format::DASH;
    use crate::view::Row;

    fn section(result: &TlbResult) -> Section {
        result.section(&Machine::default())
    }

    fn curve<'a>(s: &'a Section, page: &str) -> &'a Table {
        let title = format!("{page} pages: ns per load");
        let titled = |t: &&Table| t.title.as_deref().is_some_and(|t| t.starts_with(&title));
        s.tables().into_iter().find(titled).unwrap()
    }

    /// The table of every point: the last one, in the `--points` group.
    fn all_points(s: &Section) -> &Table {
        s.tables().pop().unwrap()
    }

    #[test]
    fn levels_headlines_compact_curves_saxpy_mlp_and_reach() {
        let s = section(&samples::tlb());
        assert_eq!(
            (s.id, s.nav.as_str(), s.title.as_str()),
            ("tlb", "TLB", "TLB reach and miss cost")
        );
        let levels = s.table("Levels found").unwrap();
        let first = "4 KiB | L1 DTLB | 64 | 64–72 | 72 | 256 KiB | 2.00 | 6.0";
        assert_eq!(levels.row_text(0).join(" | "), first);
        let strong = Cell::styled("64", Style::Strong);
        assert!(matches!(&levels.rows[0], Row::Cells(c) if c[2] == strong));
        assert_eq!(levels.row_text(2).iter().filter(|c| *c == DASH).count(), 6);
        // A headline per level with a reach: its miss cost.
        assert_eq!(s.headlines.len(), 4);
        assert_eq!(
            s.headlines[1],
            Headline {
                label: "L2 DTLB (4 KiB pages)".into(),
                value: "23.0 ns".into(),
                detail: "per miss; reach 8 MiB".into(),
                ..Headline::default()
            }
        );

        // The terminal's compact curves: at most about 12 page counts per page size, evenly
        // spread, with both sides of every knee and the last point of each level marked.
        let compact = |b: &Block| matches!(b, Block::Only(Medium::Terminal, c) if c.len() == 2);
        assert!(s.blocks.iter().any(compact));
        let small = curve(&s, "4 KiB");
        let title = small.title.as_deref().unwrap();
        assert!(title.contains("(11 of 30 page counts"));
        let pages = small.column_text(0);
        assert_eq!((pages.len(), &*pages[0], &*pages[10]), (11, "1", "32768"));
        for row in [
            "64 | 256 KiB | 1.20 | 3.6 | 1.20 | 0.00 | 1.0 | ◀ last in L1 DTLB (64 entries)",
            "96 | 384 KiB | 3.20 | 9.6 | 1.20 | 2.00 | 1.0 | ",
            "2048 | 8 MiB | 6.00 | 18.0 | 4.00 | 2.00 | 1.0 | ◀ last in L2 DTLB (2048 entries)",
            "3072 | 12 MiB | 29.0 | 87.0 | 4.00 | 25.0 | 1.0 | ",
        ] {
            let pages = row.split(" | ").next().unwrap();
            assert_eq!(small.row_of(pages).join(" | "), row);
        }
        let huge = curve(&s, "2 MiB");
        assert!(huge.rows.len() <= 12);
        let marks = huge.column_text(huge.columns.len() - 1);
        assert_eq!(marks.iter().filter(|m| m.contains("◀ last in")).count(), 2);

        // Every point in the HTML details, with its page size; the noisy spread flagged.
        let text = s.plain_text();
        assert!(text.contains("All 43 points"));
        assert_eq!(all_points(&s).rows.len(), 43);
        assert!(all_points(&s).rows.iter().any(|r| matches!(r,
            Row::Cells(c) if c[7] == Cell::styled("14.0", Style::Warn))));
        for words in [
            "nested (two-dimensional) page walk",
            "stride 4 KiB, huge pages",
            "2 MiB | 256 MiB | 16 | 7.60 | 11.2",
            "72 GiB",
        ] {
            assert!(text.contains(words), "{words}: {text}");
        }
    }

    #[test]
    fn charts_carry_curves_knees_and_cpuid_references() {
        let s = section(&samples::tlb());
        let charts = s.charts();
        assert_eq!(charts.len(), 2);
        let tlb = format!("{:?}", charts[0]);
        for label in [
            "4 KiB pages",
            "2 MiB pages",
            "4 KiB pages: TLB part (ns − dense ns)",
            "4 KiB L1 DTLB: 64",
            "2 MiB L2 DTLB: 1024",
            "4 KiB L2 DTLB: 2048 (CPUID 3072)",
            "entries found (knee)",
            "entries CPUID reports",
            "Latency (core cycles)",
        ] {
            assert!(tlb.contains(label), "{label}");
        }
        assert!(format!("{:?}", charts[1]).contains("SAXPY: ns per element updated"));
    }

    #[test]
    fn empty_and_nan_results_give_dashes_and_do_not_panic() {
        let s = section(&TlbResult::default());
        let text = s.plain_text();
        assert!(text.contains("No TLB level was found") && text.contains("No page count"));
        assert!(s.charts().is_empty() && s.headlines.is_empty());
        assert_eq!(s.data_tables().len(), 1);
        assert_eq!(s.data_tables()[0].name, "tlb.rows");

        let s = section(&samples::nan_tlb());
        let text = s.plain_text();
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
        let has_parallelism = |t: &&Table| t.columns.iter().any(|c| c.name == "Parallelism");
        let mlp = s.tables().into_iter().find(has_parallelism).unwrap();
        assert_eq!(mlp.column_text(4), [DASH, "11.2"], "parallelism");
        // No cycles anywhere and no core clock: no cycles axis.
        assert!(!format!("{:?}", s.charts()[0]).contains("core cycles"));
        for row in s.data_tables().iter().flat_map(|t| &t.rows) {
            assert!(row.iter().all(|c| !c.contains("NaN") && !c.contains("inf")));
        }
        assert!(s.headlines.is_empty(), "NaN miss costs give no headline");
    }

    #[test]
    fn counted_curves_have_miss_columns_and_one_note_per_reason() {
        let mut result = samples::tlb();
        assert!(!section(&result).plain_text().contains("L1 miss"));
        for r in &mut result.rows {
            r.counters = Some(uncounted_access());
        }
        let s = section(&result);
        // The compact curves and all points: no level counted, so four "n/s" in every row,
        // each with its reason as a tooltip, and one note per level.
        let reason = "not supported: no hardware PMU (test)";
        let n_s = Cell::titled("n/s", Style::Muted, reason);
        for t in [curve(&s, "4 KiB"), curve(&s, "2 MiB"), all_points(&s)] {
            assert!(t.columns.iter().any(|c| c.name == "dTLB miss"));
            let notes = t.notes.iter().map(Text::to_plain);
            assert_eq!(notes.filter(|n| n.starts_with("n/s — ")).count(), 4);
            let n_s_cells = |r: &Row| match r {
                Row::Cells(c) => c.iter().filter(|c| **c == n_s).count(),
                Row::Spanning(..) => 0,
            };
            assert!(t.rows.iter().all(|r| n_s_cells(r) == 4));
        }
    }

    #[test]
    fn csv_tables_keep_their_names_headers_and_cells() {
        let s = section(&samples::tlb());
        let data = s.data_tables();
        let names: Vec<&str> = data.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["tlb.rows", "tlb.levels", "tlb.saxpy"]);
        let lines =
            |i: usize| -> Vec<String> { data[i].rows.iter().map(|r| r.join(",")).collect() };
        let headers = [
            "page_bytes,pages,ns,cycles,dense_ns,tlb_ns,spread_pct,level",
            "page_bytes,name,entries,reach_bytes,miss_ns,miss_cycles,cpuid_entries,\
             rise_from_pages,rise_to_pages,miss_ns_low,miss_ns_high",
            "pattern,page_bytes,stride_bytes,footprint_bytes,pass_ms,ns_per_access",
        ];
        // Each point names the TLB level its page count falls in.
        let lines_in = [
            &[
                "4096,64,1.2,3.6,1.2,0,1,L1 DTLB",
                "4096,96,3.2,9.6,1.2,2,1,L2 DTLB",
                "4096,3072,29,87,4,25,1,page walk",
            ][..],
            &[
                "4096,L1 DTLB,64,262144,2,6,72,64,72,2,2",
                "4096,page walk,,,,,,,,,",
            ][..],
        ];
        for (i, t) in data.iter().enumerate() {
            assert_eq!(t.header.join(","), headers[i]);
            for line in lines_in.get(i).copied().unwrap_or_default() {
                assert!(lines(i).contains(&line.to_string()), "{line}");
            }
            assert!(
                t.rows.iter().all(|r| r.len() == t.header.len()),
                "{}",
                t.name
            );
        }
        let huge = ["stride 4 KiB, huge pages", "2097152", "4096", "268435456"];
        assert_eq!(data[2].rows[2][..4], huge);

        // With counters: the miss columns, empty cells for rows without counts.
        let mut result = samples::tlb();
        result.rows[0].counters = Some(uncounted_access());
        let s = section(&result);
        let rows = s.data_tables()[0].clone();
        let misses = Misses::of("", [result.rows[0].counters.as_ref()]);
        assert_eq!(
            rows.header[8..],
            misses.data_header(),
            "counted_accesses, …"
        );
        assert_eq!((&*rows.rows[0][8], &*rows.rows[1][8]), ("1000", ""));
        assert!(rows.rows.iter().all(|r| r.len() == rows.header.len()));
    }
}
