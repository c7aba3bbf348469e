//! The bandwidth section's tables: one kernel × level table per thread count and the
//! sweep as working set × kernel, every figure with its marks (`!` threads not together,
//! `?` fewer trials kept than planned, `~` noisy) and its spread, trials, size and overlap as a tooltip.

use super::{BandwidthResult, BandwidthRow};
use crate::experiments::shared::level::Level;
use crate::topology::cpu::format_cpu_list;
use crate::units::Bytes;
use crate::view::format::{self, count_of, distinct, gbs, noisy, not_concurrent_mark, DASH};
use crate::view::{Cell, Column, Overflow, Style, Table, Text};

/// ", threads overlapped 97 % (7 attempts)" for a figure's tooltip.
fn overlap_title(threads: usize, overlap: f64, attempts: usize) -> String {
    format!(
        ", {} {:.0} % ({attempts} attempts)",
        if threads == 1 {
            "on its CPU"
        } else {
            "threads overlapped"
        },
        overlap * 100.0
    )
}

/// A figure's marks and GB/s, with its spread, trials, size and overlap as a tooltip:
/// `!` when its threads did not run together, `?` (and no spread) when it kept fewer
/// trials than planned, `~` when noisy.
fn marked_gbs(r: &BandwidthRow) -> Text {
    let mut text = Text::new();
    if !r.concurrent {
        text = text.extend(not_concurrent_mark());
    }
    if let Some(few) = r.few_trials_text() {
        // Too few kept trials: no spread to speak of, so none is shown.
        return text.warn("?").titled(
            gbs(r.gb_per_s),
            Style::Plain,
            format!(
                "{few}, {} per thread{}",
                Bytes(r.bytes_per_thread),
                overlap_title(r.threads, r.overlap, r.attempts)
            ),
        );
    }
    if noisy(r.spread_pct) {
        text = text.warn("~");
    }
    text.titled(
        gbs(r.gb_per_s),
        Style::Plain,
        format!(
            "spread {} %, {} trials, {} per thread{}",
            format::spread(r.spread_pct),
            r.trials,
            Bytes(r.bytes_per_thread),
            overlap_title(r.threads, r.overlap, r.attempts)
        ),
    )
}

/// The marked GB/s, then bytes per cycle per thread in parentheses when known (and, with
/// `caches_only`, when the figure is a cache level's).
fn gbs_cell(r: &BandwidthRow, caches_only: bool) -> Cell {
    let mut text = marked_gbs(r);
    if let Some(bpc) = r.bytes_per_cycle.filter(|b| b.is_finite() && *b > 0.0) {
        if !caches_only || r.level.is_cache() {
            text = text.muted(format!(" ({})", format::rounded(bpc, f64::INFINITY)));
        }
    }
    Cell(text)
}

/// One column of a per-level table: a level, or one custom size. Kernels with three or
/// four arrays round their working set down to whole granules, so the measured sizes in a
/// column span a few %.
struct LevelColumn<'a> {
    level: &'a Level,
    working_set: u64,
    min_bytes: u64,
    max_bytes: u64,
}

fn level_columns<'a>(rows: &[&'a BandwidthRow]) -> Vec<LevelColumn<'a>> {
    let mut columns: Vec<LevelColumn<'a>> = Vec::new();
    for r in rows {
        match columns.iter_mut().find(|c| c.holds(r)) {
            Some(c) => {
                c.min_bytes = c.min_bytes.min(r.bytes_per_thread);
                c.max_bytes = c.max_bytes.max(r.bytes_per_thread);
            }
            None => columns.push(LevelColumn {
                level: &r.level,
                working_set: r.working_set_bytes,
                min_bytes: r.bytes_per_thread,
                max_bytes: r.bytes_per_thread,
            }),
        }
    }
    columns
}

impl LevelColumn<'_> {
    fn holds(&self, r: &BandwidthRow) -> bool {
        r.level == *self.level && r.working_set_bytes == self.working_set
    }

    /// "L1d (≈ 16 KiB per thread)".
    fn column(&self) -> Column {
        // Granule rounding moves three- and four-array kernels a few % below the others:
        // "≈" says so without a range that reads like two sizes.
        let (lo, hi) = (
            Bytes(self.min_bytes).to_string(),
            Bytes(self.max_bytes).to_string(),
        );
        let size = if lo == hi {
            hi
        } else if (self.max_bytes as f64) < 1.1 * self.min_bytes as f64 {
            format!("≈ {hi}")
        } else {
            format!("{lo} – {hi}")
        };
        Column::quantity(self.level.name(), format!("{size} per thread")).titled(format!(
            "GB/s at a working set of {} per thread",
            Bytes(self.working_set)
        ))
    }
}

/// The kernel × level table of one thread count.
pub(crate) fn level_table(result: &BandwidthResult, threads: usize) -> Table {
    let rows: Vec<&BandwidthRow> = result
        .rows
        .iter()
        .filter(|r| r.threads == threads)
        .collect();
    let columns = level_columns(&rows);
    let cpus: Vec<usize> = result.cpus.iter().copied().take(threads).collect();
    let title = if cpus.is_empty() {
        count_of(threads, "thread")
    } else {
        format!(
            "{} (CPU{} {})",
            count_of(threads, "thread"),
            if cpus.len() == 1 { "" } else { "s" },
            format_cpu_list(&cpus)
        )
    };
    let mut header = vec![
        Column::text("Kernel"),
        Column::text("R:W"),
        Column::text("Stores"),
    ];
    header.extend(columns.iter().map(LevelColumn::column));
    // Too wide for a terminal, the levels go on under the kernels: none matters less.
    let mut table = Table::new(header).titled(title).overflow(Overflow::Wrap);
    for kernel in distinct(rows.iter().map(|r| r.kernel.name())) {
        let mine: Vec<&BandwidthRow> = rows
            .iter()
            .copied()
            .filter(|r| r.kernel.name() == kernel)
            .collect();
        let Some(first) = mine.first() else {
            continue;
        };
        let stores = if first.write_parts == 0 {
            DASH
        } else if first.nontemporal {
            "streaming (nt)"
        } else {
            "normal"
        };
        let mut cells = vec![
            Cell::styled(kernel, Style::Strong),
            Cell::new(format!("{}:{}", first.read_parts, first.write_parts)),
            Cell::new(stores),
        ];
        cells.extend(columns.iter().map(|c| {
            mine.iter()
                .find(|r| c.holds(r))
                .map_or_else(Cell::dash, |r| gbs_cell(r, true))
        }));
        table.row(cells);
    }
    table
}

/// The sweep as working set × kernel: GB/s with marks and bytes per cycle per thread,
/// every figure's details in its tooltip.
pub(crate) fn sweep_table(sweep: &[BandwidthRow]) -> Table {
    let kernels = distinct(sweep.iter().map(|r| r.kernel.name()));
    let mut sizes = distinct(sweep.iter().map(|r| r.working_set_bytes));
    sizes.sort_unstable();
    let mut header = vec![
        Column::number("Working set per thread"),
        Column::text("Level"),
    ];
    header.extend(kernels.iter().map(|k| Column::quantity(*k, "GB/s")));
    let mut table = Table::new(header);
    for bytes in sizes {
        let level = sweep
            .iter()
            .find(|r| r.working_set_bytes == bytes)
            .map_or("", |r| r.level.name());
        let mut cells = vec![Cell::new(Bytes(bytes).to_string()), Cell::new(level)];
        cells.extend(kernels.iter().map(|kernel| {
            sweep
                .iter()
                .find(|r| r.kernel.name() == *kernel && r.working_set_bytes == bytes)
                .map_or_else(Cell::dash, |r| gbs_cell(r, false))
        }));
        table.row(cells);
    }
    table
}
