//! The memory-level-parallelism section of every output: parallelism against chains per
//! level with the saturation points, Little's law at DRAM, the working-set × chains grid,
//! the sequential fit, every row per level, the CSV tables and the DRAM MLP headline.

use serde::Serialize;

use super::{MlpResult, MlpRow, SequentialFit};
use crate::experiments::shared::level::Level;
use crate::topology::Machine;
use crate::units::Bytes;
use crate::view::chart::{level_color, Axis, Heatmap, LineChart, Series, TickFormat, PALETTE};
use crate::view::chart::{CURVE_COLOR, FOUND_POINT_COLOR, REFERENCE_LINE_COLOR};
use crate::view::data_row::Raw;
use crate::view::format::{self, cycles, distinct, fixed, gbs, noisy, ns, rounded};
use crate::view::format::{DASH, NOISY_SPREAD_PCT};
use crate::view::{Block, Cell, Column, DataTable, Headline, Medium, Paragraph, Present};
use crate::view::{Section, Table, Text};

impl Present for MlpResult {
    fn section(&self, _machine: &Machine) -> Section {
        let mut s = Section::new("mlp", "MLP", "Memory-level parallelism");
        s.headlines.extend(headline(self));
        s.push(Paragraph::note(intro(self)));
        if self.rows.is_empty() {
            s.push(Paragraph::muted("No chain count was measured."));
        } else {
            s.push(chart(self));
        }
        if let Some(t) = saturation_table(self) {
            s.push(t);
        }
        if let Some(law) = littles_law(self) {
            s.push(Paragraph::callout(law));
        }
        if !self.grid.is_empty() {
            s.push(Block::Heading("Working set × chains".to_string()));
            s.push(Paragraph::note(
                "Parallelism for every working set and chain count. While the chains fit in \
                 L1 there are no misses: the overlap is the load pipeline's (several loads \
                 start each cycle and each takes a few cycles). From L2 on it is misses in \
                 flight, bounded by the miss buffers of the level above; the DRAM rows are the \
                 memory-level parallelism.",
            ));
            s.push(grid_heatmap(self));
            s.push(Block::Only(Medium::Terminal, vec![grid_table(self).into()]));
        }
        if let Some(fit) = &self.sequential_fit {
            s.push(Block::Heading(
                "Dependent misses one run at a time".to_string(),
            ));
            s.push(Paragraph::note(fit_text(fit)));
            s.push(sequential_fit_chart(fit));
        }
        s.push(Block::Details {
            summary: format!("All {} rows", self.rows.len()),
            blocks: mlp_levels(self)
                .into_iter()
                .map(|(level, bytes)| level_table(self, level, bytes).into())
                .collect(),
        });
        for t in csv_tables(self) {
            s.push(t);
        }
        s
    }
}

/// DRAM MLP: the parallelism on DRAM's plateau, when it was found.
fn headline(r: &MlpResult) -> Option<Headline> {
    let dram = r.saturation.iter().find(|s| s.level == Level::Dram)?;
    dram.parallelism.is_finite().then(|| Headline {
        label: "DRAM MLP".to_string(),
        value: format!("{} misses", ns(dram.parallelism)),
        detail: format!("in flight per thread, reached at {} chains", dram.chains),
        ..Headline::default()
    })
}

fn intro(r: &MlpResult) -> Text {
    let order = r.order;
    Text::new()
        .add(format!(
            "One thread walks N independent pointer chains ({order}), one load of each per \
             round, so up to N misses can be outstanding at once. "
        ))
        .strong("Parallelism")
        .add(
            " = N × t(1) / t(N) counts the misses that effectively overlap: it follows the \
             ideal y = N while the core can track every miss, and flattens where a structure \
             (miss buffers, request queues) is full. The ringed point is where the curve \
             stops growing: the core's memory-level parallelism at that level.",
        )
}

/// A level's name: rows without one are a custom working set.
fn level_name(row: &MlpRow) -> &str {
    row.level.as_ref().map_or("custom", Level::name)
}

/// The level × working set groups of the MLP rows, in order of first appearance.
fn mlp_levels(result: &MlpResult) -> Vec<(&str, u64)> {
    distinct(result.rows.iter().map(|r| (level_name(r), r.bytes)))
}

/// The rows of one group, by chain count.
fn level_rows<'a>(result: &'a MlpResult, level: &str, bytes: u64) -> Vec<&'a MlpRow> {
    let mut rows: Vec<&MlpRow> = result
        .rows
        .iter()
        .filter(|r| r.bytes == bytes && level_name(r) == level)
        .collect();
    rows.sort_by_key(|r| r.chains);
    rows
}

/// Where each level saturates: from the saturation details, else from the `mlp` map.
fn saturation_table(r: &MlpResult) -> Option<Table> {
    let mut t = Table::new(vec![
        Column::text("Level"),
        Column::number("Working set"),
        Column::number("Saturates at N"),
        Column::number("Parallelism on the plateau"),
        Column::number("ns per load on the plateau"),
    ])
    .titled("Saturation per level");
    for s in &r.saturation {
        t.row([
            Cell::swatched(level_color(s.level.name()), s.level.to_string()),
            Cell::new(Bytes(s.bytes).to_string()),
            Cell::new(s.chains.to_string()),
            Cell::new(fixed(s.parallelism, 1)),
            Cell::new(ns(s.ns_per_load)),
        ]);
    }
    for (level, n) in &r.mlp {
        if !r.saturation.iter().any(|s| s.level.name() == level) {
            t.row([
                Cell::new(level.clone()),
                Cell::dash(),
                Cell::new(n.to_string()),
                Cell::dash(),
                Cell::dash(),
            ]);
        }
    }
    (!t.is_empty()).then_some(t)
}

/// Little's law at DRAM: the lines in flight implied by random and streaming reads, set
/// against the chains' parallelism.
fn littles_law(r: &MlpResult) -> Option<Text> {
    let law = r.littles_law.as_ref()?;
    let mut text = Text::new()
        .strong("Little's law at DRAM")
        .add(format!(
            " (lines in flight = bandwidth × latency / 64 B, latency {} ns): independent \
             loads from random lines at {} GB/s imply ",
            ns(law.latency_ns),
            gbs(law.random_read_gb_per_s)
        ))
        .strong(fixed(law.random_concurrency, 1))
        .add(" lines in flight, and the chains reach a parallelism of ")
        .strong(fixed(law.chase_parallelism, 1))
        .add(format!(
            " ({} GB/s): both are demand misses, so they should agree. Streaming reads at {} \
             GB/s imply {}.",
            gbs(law.chase_gb_per_s),
            gbs(law.stream_read_gb_per_s),
            fixed(law.stream_concurrency, 1)
        ));
    if law.stream_concurrency > 1.2 * law.chase_parallelism {
        text = text.add(
            " Streaming keeps more lines in flight than the chains: hardware prefetchers \
             issue requests of their own, which dependent chains cannot trigger.",
        );
    }
    Some(text)
}

/// The sorted working sets and chain counts of the grid.
fn grid_axes(r: &MlpResult) -> (Vec<u64>, Vec<u32>) {
    let mut sizes = distinct(r.grid.iter().map(|g| g.bytes));
    sizes.sort_unstable();
    let mut chains = distinct(r.grid.iter().map(|g| g.chains));
    chains.sort_unstable();
    (sizes, chains)
}

fn grid_value(r: &MlpResult, bytes: u64, chains: u32) -> Option<f64> {
    r.grid
        .iter()
        .find(|g| g.bytes == bytes && g.chains == chains)
        .map(|g| g.parallelism)
}

/// Parallelism by working set (rows) × chains (columns).
fn grid_heatmap(r: &MlpResult) -> Heatmap {
    let (sizes, chains) = grid_axes(r);
    let values = sizes
        .iter()
        .map(|&bytes| {
            chains
                .iter()
                .map(|&n| grid_value(r, bytes, n).unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    Heatmap::new("Parallelism by working set and chains")
        .x_label("Independent chains N")
        .y_label("Working set of all chains")
        .columns(chains.iter().map(|n| n.to_string()).collect())
        .rows(sizes.iter().map(|&b| Bytes(b).to_string()).collect())
        .values(values)
        .value_label("parallelism")
        .decimals(1)
}

/// The grid as a table, for the terminal (HTML has the heatmap).
fn grid_table(r: &MlpResult) -> Table {
    let (sizes, chains) = grid_axes(r);
    let mut columns = vec![Column::text("Working set")];
    columns.extend(chains.iter().map(|n| Column::number(format!("N={n}"))));
    let mut t =
        Table::new(columns).titled("Parallelism by working set (rows) × chains N (columns)");
    for bytes in sizes {
        let mut cells = vec![Bytes(bytes).to_string()];
        cells.extend(
            chains.iter().map(|&n| {
                grid_value(r, bytes, n).map_or_else(|| DASH.to_string(), |p| fixed(p, 1))
            }),
        );
        t.row(cells);
    }
    t
}

fn r2_text(r2: f64) -> String {
    fixed(r2, 4)
}

/// The fit in a sentence: the working set, the runs, M, C and r².
fn fit_text(fit: &SequentialFit) -> String {
    format!(
        "Runs of n dependent misses over {} ({}) timed one at a time: T(n) = n·M + C with \
         M = {} ns ({} cycles), C = {} ns, r² = {}. The slope M is the cost of one more miss \
         and the intercept C the fixed cost of timing a run.",
        Bytes(fit.bytes),
        format::count_of(fit.points.len(), "run"),
        ns(fit.m_ns),
        cycles(fit.m_cycles),
        ns(fit.c_ns),
        r2_text(fit.r2)
    )
}

/// Every row of one level, with where it saturates.
fn level_table(r: &MlpResult, level: &str, bytes: u64) -> Table {
    let mut t = Table::new(vec![
        Column::number("Chains"),
        Column::number("ns per round"),
        Column::number("ns per load"),
        Column::number("Parallelism"),
        Column::quantity("Spread", "%"),
    ])
    .titled(format!(
        "{level} ({}): parallelism = N × t(1) / t(N)",
        Bytes(bytes)
    ));
    for row in level_rows(r, level, bytes) {
        t.row([
            Cell::new(row.chains.to_string()),
            Cell::new(ns(row.ns_per_round)),
            Cell::new(ns(row.ns_per_load)),
            Cell::new(rounded(row.parallelism, 100.0)),
            format::spread_cell(row.spread_pct),
        ]);
    }
    t.note(
        match r.saturation.iter().find(|s| s.level.name() == level) {
            Some(s) => format!(
                "Saturates at {} chains: parallelism {}, {} ns per load.",
                s.chains,
                fixed(s.parallelism, 1),
                ns(s.ns_per_load)
            ),
            None => match r.mlp.get(level) {
                Some(n) => format!("Saturates at {n} chains."),
                None => "No saturation found within the chains measured.".to_string(),
            },
        },
    );
    t
}

/// Parallelism against the number of chains, one line per level, with the ideal y = x
/// (every miss overlapped) and each level's saturation point ringed.
fn chart(result: &MlpResult) -> LineChart {
    let max_chains = result
        .rows
        .iter()
        .map(|r| r.chains)
        .max()
        .unwrap_or(1)
        .max(1);
    let mut chart = LineChart::new("Parallelism vs independent chains")
        .size(1000.0, 500.0)
        .x_axis(
            Axis::linear("Independent chains N")
                .format(TickFormat::Integer)
                .range(0.0, f64::from(max_chains)),
        )
        .y_axis(Axis::linear("Parallelism: N × t(1) / t(N)").include_zero())
        .unstable_label(format!("spread > {NOISY_SPREAD_PCT:.0}%"));
    let mut saturation = Vec::new();
    for (level, bytes) in mlp_levels(result) {
        let rows = level_rows(result, level, bytes);
        chart = chart.series(
            Series::new(
                format!("{level} ({})", Bytes(bytes)),
                rows.iter()
                    .map(|r| (f64::from(r.chains), r.parallelism))
                    .collect(),
            )
            .color(level_color(level))
            .unstable(rows.iter().map(|r| noisy(r.spread_pct)).collect()),
        );
        let chains = result
            .saturation
            .iter()
            .find(|s| s.level.name() == level)
            .map(|s| (s.chains, s.parallelism))
            .or_else(|| result.mlp.get(level).map(|&n| (n, f64::NAN)));
        if let Some((n, plateau)) = chains {
            let y = rows
                .iter()
                .find(|r| r.chains == n)
                .map_or(plateau, |r| r.parallelism);
            saturation.push((f64::from(n), y));
        }
    }
    chart = chart.series(
        Series::new(
            "ideal: every miss overlapped (y = N)",
            vec![(1.0, 1.0), (f64::from(max_chains), f64::from(max_chains))],
        )
        .color(REFERENCE_LINE_COLOR)
        .dashed()
        .without_markers(),
    );
    if !saturation.is_empty() {
        chart = chart.series(
            Series::new("saturation point", saturation)
                .color(FOUND_POINT_COLOR)
                .highlight(),
        );
    }
    chart
}

/// T(n) of dependent misses, measured points and the fitted line n·M + C.
fn sequential_fit_chart(fit: &SequentialFit) -> LineChart {
    let mut points: Vec<(f64, f64)> = fit
        .points
        .iter()
        .map(|p| (f64::from(p.misses), p.ns))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let max_n = points.iter().map(|p| p.0).fold(1.0, f64::max);
    let mut chart = LineChart::new(format!(
        "Dependent misses: T(n) = n·M + C, M = {} ns, C = {} ns",
        ns(fit.m_ns),
        ns(fit.c_ns)
    ))
    .size(1000.0, 420.0)
    .x_axis(
        Axis::linear("Dependent misses n")
            .format(TickFormat::Integer)
            .include_zero(),
    )
    .y_axis(Axis::linear("Time of the run (ns)").include_zero());
    // The fit first, so that its dashed line stays visible over the measured one.
    if fit.m_ns.is_finite() && fit.c_ns.is_finite() {
        chart = chart.series(
            Series::new(
                format!("fit, r² = {}", r2_text(fit.r2)),
                vec![(0.0, fit.c_ns), (max_n, max_n * fit.m_ns + fit.c_ns)],
            )
            .color(PALETTE[1])
            .dashed()
            .without_markers(),
        );
    }
    chart.series(Series::new("measured (median)", points).color(CURVE_COLOR))
}

/// One row of `mlp.rows` and `mlp.grid`.
#[derive(Serialize, Default)]
struct DataRow<'a> {
    level: &'a str,
    bytes: u64,
    chains: u32,
    ns_per_round: Raw,
    ns_per_load: Raw,
    parallelism: Raw,
    spread_pct: Raw,
}

/// `mlp.rows`, and `mlp.grid` when the grid was measured.
fn csv_tables(r: &MlpResult) -> Vec<DataTable> {
    let table = |name: &str, rows: &[MlpRow]| {
        DataTable::of(
            name,
            rows.iter().map(|row| DataRow {
                level: row.level.as_ref().map_or("", Level::name),
                bytes: row.bytes,
                chains: row.chains,
                ns_per_round: Raw(row.ns_per_round),
                ns_per_load: Raw(row.ns_per_load),
                parallelism: Raw(row.parallelism),
                spread_pct: Raw(row.spread_pct),
            }),
        )
    };
    let mut out = vec![table("mlp.rows", &r.rows)];
    if !r.grid.is_empty() {
        out.push(table("mlp.grid", &r.grid));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::samples;
    use super::*;

    fn section(r: &MlpResult) -> Section {
        r.section(&Machine::default())
    }

    #[test]
    fn levels_saturation_fit_littles_law_and_grid() {
        let s = section(&samples::mlp());
        assert_eq!((s.id, s.nav.as_str()), ("mlp", "MLP"));
        let text = s.plain_text();
        for words in [
            "(page-local, thp pages)",
            "L2 (512 KiB): parallelism",
            "DRAM (256 MiB): parallelism",
            "Saturates at 8 chains: parallelism 7.4",
            "Saturates at 10 chains: parallelism 9.7",
            "M = 85.3 ns (256 cycles), C = 30.1 ns, r² = 0.9987",
            "(8 runs)",
            "imply 9.1 lines in flight",
            "GB/s imply 20.0.",
            "prefetchers issue requests",
        ] {
            assert!(text.contains(words), "{words}: {text}");
        }
        let sat = s.table("Saturation per level").unwrap();
        assert_eq!(sat.column_text(0), ["L2", "DRAM"]);
        assert_eq!(sat.column_text(2), ["8", "10"]);
        assert_eq!(sat.column_text(3), ["7.4", "9.7"]);
        let grid = s.table("Parallelism by working set (rows) × chains N (columns)");
        let grid = grid.unwrap();
        assert_eq!(grid.columns.last().unwrap().name, "N=16");
        assert!(grid.column_text(5).contains(&"10.3".to_string()), "{text}");
        // Every row, grouped per level, by chains.
        let l2 = s
            .table("L2 (512 KiB): parallelism = N × t(1) / t(N)")
            .unwrap();
        assert_eq!(l2.rows.len(), 12);
        assert_eq!(l2.column_text(0)[..3], ["1", "2", "3"]);
        assert!(s
            .all_blocks()
            .iter()
            .any(|b| matches!(b, Block::Details { summary, .. } if summary == "All 24 rows")));
    }

    #[test]
    fn charts_have_the_levels_the_ideal_the_saturation_the_grid_and_the_fit() {
        let s = section(&samples::mlp());
        let charts: Vec<String> = s.charts().iter().map(|c| format!("{c:?}")).collect();
        assert_eq!(charts.len(), 3);
        for label in [
            "L2 (512 KiB)",
            "DRAM (256 MiB)",
            "ideal: every miss overlapped",
            "saturation point",
        ] {
            assert!(charts[0].contains(label), "{label}");
        }
        assert!(charts[1].contains("Parallelism by working set and chains"));
        assert!(charts[2].contains("M = 85.3 ns") && charts[2].contains("r² = 0.9987"));
    }

    #[test]
    fn dram_mlp_is_the_headline() {
        let s = section(&samples::mlp());
        assert_eq!(
            s.headlines,
            [Headline {
                label: "DRAM MLP".to_string(),
                value: "9.70 misses".to_string(),
                detail: "in flight per thread, reached at 10 chains".to_string(),
                ..Headline::default()
            }]
        );
        assert!(section(&samples::nan_mlp()).headlines.is_empty());
        assert!(section(&samples::empty_mlp()).headlines.is_empty());
    }

    #[test]
    fn csv_has_rows_and_grid_with_exact_headers() {
        let s = section(&samples::mlp());
        let tables = s.data_tables();
        let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["mlp.rows", "mlp.grid"]);
        for t in &tables {
            assert_eq!(
                t.header.join(","),
                "level,bytes,chains,ns_per_round,ns_per_load,parallelism,spread_pct"
            );
            assert!(t.rows.iter().all(|r| r.len() == t.header.len()));
        }
        assert!(tables[0]
            .rows
            .iter()
            .any(|r| r[..3] == ["L2", "524288", "8"]));
        assert!(tables[1].rows.iter().any(|r| r[..3] == ["", "16384", "1"]));
    }

    #[test]
    fn empty_and_nan_results_give_dashes() {
        let s = section(&samples::empty_mlp());
        let text = s.plain_text();
        assert!(text.contains("chains (random, 4k pages)"), "{text}");
        assert!(text.contains("No chain count was measured."));
        assert!(s.charts().is_empty() && s.table("Saturation per level").is_none());
        let empty_tables = s.data_tables();
        assert_eq!(empty_tables.len(), 1);
        assert_eq!(empty_tables[0].name, "mlp.rows");

        let s = section(&samples::nan_mlp());
        let text = s.plain_text();
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
        // Saturation comes from the `mlp` map when its details are missing.
        assert!(text.contains("Saturates at 8 chains."), "{text}");
        let saturation = s.table("Saturation per level").unwrap();
        assert_eq!(saturation.column_text(1), [DASH, DASH]);
        let mut csv = s.data_tables().into_iter().flat_map(|t| t.rows.concat());
        assert!(csv.all(|c| !c.contains("NaN") && !c.contains("inf")));
    }
}
