//! The out-of-order window's section: the method, the curves chart, the structure each
//! filler fills first with its entries, the serialised blocks (window and misses in
//! flight, chart, compact grid), every point on demand, and the CSV tables.

use super::charts::{filler_color, rob_chart, rob_fillers, rob_serialized_chart};
use serde::Serialize;

use super::RobResult;
use crate::kernels::jit::Filler;
use crate::topology::Machine;
use crate::units::Bytes;
use crate::view::data_row::Raw;
use crate::view::format::{self, distinct, k_subset, DASH};
use crate::view::{
    Block, Cell, Column, DataTable, Medium, Paragraph, Present, Section, Style, Table, Text,
};

/// K values (or miss counts) the terminal's compact tables show at most, before the
/// values on either side of a cliff are added.
const COMPACT_COLUMNS: usize = 10;

impl Present for RobResult {
    fn section(&self, machine: &Machine) -> Section {
        let mut s = Section::new("rob", "ROB", "Out-of-order window");
        s.push(Paragraph::note(format!(
            "Each iteration issues two independent cache-missing loads (chases over {}) \
             separated by K filler instructions. While the out-of-order window holds both \
             loads their misses overlap and an iteration costs about one miss latency; once \
             K exceeds the entries of the structure the filler uses up first, the second \
             load cannot issue before the first completes and the time doubles. The K of \
             that cliff estimates the structure's size (Henry Wong's method): nops fill the \
             reorder buffer, adds the integer register file, loads and stores their queues.",
            Bytes(self.chase_bytes)
        )));
        if self.rows.is_empty() {
            s.push(Paragraph::muted("No filler curve was measured."));
        } else {
            s.push(rob_chart(self, machine));
        }
        if self.structures.is_empty() {
            s.push(Paragraph::muted("No cliff was analysed."));
        } else {
            s.push(structures_table(self));
        }
        if let Some(t) = compact_curves(self) {
            s.push(Block::Only(Medium::Terminal, vec![t.into()]));
        }
        if !self.serialized.is_empty() || self.serialized_window.is_some() {
            s.push(Block::Heading("Serialised blocks".into()));
            s.push(Paragraph::note(
                Text::plain(
                    "N−1 misses, K nops and one more miss, timed as one block: the last miss \
                     overlaps the others while K fits in the window. Window read from the \
                     grid: ",
                )
                .strong(self.serialized_window.map_or_else(
                    || "not found".to_string(),
                    |w| format!("≈ {w} instructions"),
                ))
                .add("; misses in flight at K = 0: ")
                .strong(format::opt_fixed(self.serialized_mlp, 1))
                .add("."),
            ));
            if !self.serialized.is_empty() {
                s.push(rob_serialized_chart(self));
                s.push(Block::Only(
                    Medium::Terminal,
                    vec![compact_serialized(self).into()],
                ));
            }
        }
        s.push(Block::Verbose(vec![Block::Details {
            summary: format!("All {} rows", self.rows.len()),
            blocks: all_rows(self),
        }]));
        for t in data_tables(self) {
            s.push(t);
        }
        s
    }
}

/// The structure each filler fills first and its entries.
fn structures_table(result: &RobResult) -> Table {
    let fillers = rob_fillers(result);
    let mut t = Table::new(vec![
        Column::text("Filler"),
        Column::text("Fills first"),
        Column::number("Entries"),
        Column::number("Window at the cliff")
            .titled("Entries in use while both misses were in flight, plus the architectural registers the window can never use"),
        Column::quantity("Below the cliff", "ns"),
        Column::quantity("Above the cliff", "ns"),
        Column::number("Ratio"),
    ])
    .titled("Structures found");
    for st in &result.structures {
        let ratio = st.high_ns / st.low_ns;
        t.row(vec![
            Cell::swatched(filler_color(&fillers, st.filler), st.filler.name()),
            Cell::new(st.structure.name()),
            st.entries.map_or_else(
                || Cell::styled("no cliff", Style::Muted),
                |e| Cell::styled(e.to_string(), Style::Strong),
            ),
            Cell::new(match (st.window_entries, st.architectural) {
                (Some(w), a) if a > 0 => format!("{w} + {a} architectural"),
                (Some(w), _) => w.to_string(),
                (None, _) => DASH.to_string(),
            }),
            Cell::new(format::ns(st.low_ns)),
            Cell::new(format::ns(st.high_ns)),
            Cell::new(format::fixed(ratio, 2)),
        ]);
    }
    t
}

/// A row × K grid of one figure each (a dash where none was measured), K as columns.
fn k_grid<R: Copy + ToString>(
    first: Column,
    rows: &[R],
    shown: &[u32],
    value: impl Fn(R, u32) -> Option<f64>,
) -> Table {
    let mut columns = vec![first];
    columns.extend(shown.iter().map(|k| Column::number(format!("K={k}"))));
    let mut t = Table::new(columns);
    for &row in rows {
        let cells = shown
            .iter()
            .map(|&k| value(row, k).map_or_else(|| DASH.to_string(), |v| format::fixed(v, 1)));
        t.row(std::iter::once(row.to_string()).chain(cells));
    }
    t
}

/// The terminal's compact curves: ns per iteration by filler at up to ten of the K values
/// every filler was measured at (the coarse sweep; the refinements differ).
fn compact_curves(result: &RobResult) -> Option<Table> {
    let fillers = distinct(result.rows.iter().map(|r| r.filler));
    if fillers.is_empty() {
        return None;
    }
    let mut ks: Vec<u32> = distinct(result.rows.iter().map(|r| r.k))
        .into_iter()
        .filter(|&k| {
            fillers
                .iter()
                .all(|f| result.rows.iter().any(|r| r.filler == *f && r.k == k))
        })
        .collect();
    ks.sort_unstable();
    let shown = k_subset(&ks, &[], COMPACT_COLUMNS);
    let title = if shown.len() < ks.len() {
        format!(
            "ns per iteration by filler and K ({} of {} K values; the HTML report plots all)",
            shown.len(),
            ks.len()
        )
    } else {
        "ns per iteration by filler and K".to_string()
    };
    let ns = |f: Filler, k: u32| {
        let row = result.rows.iter().find(|r| r.filler == f && r.k == k);
        row.map(|r| r.ns_per_iter)
    };
    Some(k_grid(Column::text("Filler"), &fillers, &shown, ns).titled(title))
}

/// The terminal's compact serialised grid: ns per block by miss count at up to ten K
/// values and both sides of the window.
fn compact_serialized(result: &RobResult) -> Table {
    let mut ks = distinct(result.serialized.iter().map(|r| r.k));
    ks.sort_unstable();
    let window: Vec<u32> = result.serialized_window.into_iter().collect();
    let shown = k_subset(&ks, &window, COMPACT_COLUMNS);
    let mut misses = distinct(result.serialized.iter().map(|r| r.misses));
    misses.sort_unstable();
    let ns = |n: u32, k: u32| {
        let cell = result.serialized.iter().find(|r| r.misses == n && r.k == k);
        cell.map(|r| r.ns)
    };
    k_grid(Column::number("Misses"), &misses, &shown, ns).titled("ns per block by misses and K")
}

/// Every point of the curves and, when measured, every cell of the serialised grid.
fn all_rows(result: &RobResult) -> Vec<Block> {
    let mut t = Table::new(vec![
        Column::text("Filler"),
        Column::number("K"),
        Column::number("ns per iteration"),
        Column::number("Cycles per iteration"),
        Column::number("Spread %"),
    ]);
    for r in &result.rows {
        t.row(vec![
            Cell::new(r.filler.name()),
            Cell::new(r.k.to_string()),
            Cell::new(format::ns(r.ns_per_iter)),
            Cell::new(format::cycles(r.cycles_per_iter)),
            format::spread_cell(r.spread_pct),
        ]);
    }
    let mut blocks = vec![Block::Table(t)];
    if !result.serialized.is_empty() {
        let mut t = Table::new(vec![
            Column::number("Misses"),
            Column::number("K"),
            Column::number("ns per block"),
            Column::number("Cycles per block"),
        ]);
        for r in &result.serialized {
            t.row(vec![
                r.misses.to_string(),
                r.k.to_string(),
                format::ns(r.ns),
                format::cycles(r.cycles),
            ]);
        }
        blocks.push(t.into());
    }
    blocks
}

/// `rob.rows` always, `rob.serialized` when the grid was measured.
fn data_tables(result: &RobResult) -> Vec<DataTable> {
    #[derive(Serialize, Default)]
    struct Row<'a> {
        filler: &'a str,
        k: u32,
        ns_per_iter: Raw,
        cycles_per_iter: Raw,
        spread_pct: Raw,
    }
    #[derive(Serialize, Default)]
    struct Serialized {
        misses: u32,
        k: u32,
        ns: Raw,
        cycles: Raw,
    }
    let rows = DataTable::of(
        "rob.rows",
        result.rows.iter().map(|r| Row {
            filler: r.filler.name(),
            k: r.k,
            ns_per_iter: Raw(r.ns_per_iter),
            cycles_per_iter: Raw(r.cycles_per_iter),
            spread_pct: Raw(r.spread_pct),
        }),
    );
    let mut out = vec![rows];
    if !result.serialized.is_empty() {
        out.push(DataTable::of(
            "rob.serialized",
            result.serialized.iter().map(|r| Serialized {
                misses: r.misses,
                k: r.k,
                ns: Raw(r.ns),
                cycles: Raw(r.cycles),
            }),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::rob::samples;

    fn terminal_tables(s: &Section) -> Vec<&Table> {
        s.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Only(Medium::Terminal, blocks) => Some(blocks),
                _ => None,
            })
            .flatten()
            .filter_map(|b| match b {
                Block::Table(t) => Some(t),
                _ => None,
            })
            .collect()
    }

    fn row_text(t: &Table, first: &str) -> String {
        t.row_of(first).join(" | ")
    }

    #[test]
    fn section_has_cliffs_charts_a_compact_curve_and_the_serialised_grid() {
        let s = samples::rob().section(&Machine::default());
        assert_eq!((s.id, s.nav.as_str()), ("rob", "ROB"));
        assert!(s.headlines.is_empty());
        let charts = format!("{:?}", s.charts());
        assert_eq!(s.charts().len(), 2);
        for label in [
            "nop: reorder buffer ≈ 224",
            "load: load queue ≈ 72",
            "window ≈ 224",
            "Core cycles per iteration",
        ] {
            assert!(charts.contains(label), "{label}");
        }

        let structures = s.table("Structures found").unwrap();
        let nop = row_text(structures, "nop");
        assert!(nop.contains("reorder buffer | 224"), "{nop}");
        assert_eq!(structures.column_text(2)[1], "180");
        assert!(row_text(structures, "store").contains("no cliff"));
        assert_eq!(structures.column_text(6)[0], "1.90");

        // 21 K values shown as an evenly spaced subset, one line per filler.
        let terminal = terminal_tables(&s);
        let curves = terminal[0];
        assert!(curves.title.as_ref().unwrap().contains("10 of 21 K values"));
        let add = row_text(curves, "add");
        assert!(add.contains("100.0") && add.contains("190.0"), "{add}");
        let text = s.plain_text();
        let window = "≈ 224 instructions; misses in flight at K = 0: 3.6";
        assert!(text.contains(window), "{text}");
        let grid = terminal[1];
        let headers = grid.headers();
        assert!(headers.contains(&"K=224".into()) && headers.contains(&"K=256".into()));
        assert_eq!(grid.rows.len(), 4);

        // Every point, behind --points in the terminal and folded away in HTML.
        let verbose = s
            .blocks
            .iter()
            .find_map(|b| match b {
                Block::Verbose(v) => Some(v),
                _ => None,
            })
            .unwrap();
        assert!(matches!(&verbose[0], Block::Details { summary, .. } if summary == "All 84 rows"));
        assert_eq!(s.tables().len(), 5);
    }

    #[test]
    fn csv_tables_keep_their_names_headers_and_cells() {
        let s = samples::rob().section(&Machine::default());
        let data = s.data_tables();
        let names: Vec<&str> = data.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["rob.rows", "rob.serialized"]);
        let expected = [
            (
                "filler,k,ns_per_iter,cycles_per_iter,spread_pct",
                "nop,224,100,300,1",
            ),
            ("misses,k,ns,cycles", "4,320,380,1140"),
        ];
        for (t, (header, line)) in data.iter().zip(expected) {
            assert_eq!(t.header.join(","), header);
            assert!(t.rows.iter().any(|r| r.join(",") == line), "{line}");
            assert!(t.rows.iter().all(|r| r.len() == t.header.len()));
        }
    }

    #[test]
    fn empty_and_nan_results_give_dashes_and_do_not_panic() {
        let s = RobResult::default().section(&Machine::default());
        let text = s.plain_text();
        assert!(
            text.contains("No filler curve was measured") && text.contains("No cliff was analysed")
        );
        assert!(s.charts().is_empty());
        let names: Vec<&str> = s.data_tables().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["rob.rows"]);

        let s = samples::nan_rob().section(&Machine::default());
        let text = s.plain_text();
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
        assert!(text.contains(DASH), "{text}");
        assert!(
            text.contains("Window read from the grid: not found"),
            "{text}"
        );
        for t in s.data_tables() {
            assert!(t.rows.iter().flatten().all(|c| c != "NaN" && c != "inf"));
        }
    }
}
