//! Terminal renderer: sections as headings, prose lines and aligned text tables, fitted
//! to the terminal's width. It draws any `view::Section` and knows no experiment; charts
//! and CSV tables are not shown, styles, tooltips and swatches are dropped and their text
//! kept.
//!
//! The width is `COLUMNS` when set, else the terminal's (TIOCGWINSZ), else 80 (a pipe or
//! a file). Prose wraps to it; a table wider than it wraps its last column when that is
//! text, else hides its least important columns and says so under it (`view::fit` holds
//! the rules), or splits into tables one under the other when it asks to. With `--points`
//! (`verbose`) nothing is hidden: such tables split instead.

use std::os::fd::{AsRawFd, RawFd};

use crate::view::fit::{self, width};
use crate::view::{Align, Block, Layout, Medium, Overflow, Row, Section, Table, Text};

/// The width when the text goes to no terminal and `COLUMNS` is not set.
pub(crate) const DEFAULT_WIDTH: usize = 80;

/// The narrowest width honoured: below it, tables could not keep even their first
/// columns apart.
const MIN_WIDTH: usize = 20;

/// Where the text is written, whose terminal sets the width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// The width to fit text written to `stream`: `COLUMNS` when it holds a number, else the
/// terminal's columns when `stream` is a terminal, else `DEFAULT_WIDTH`; at least
/// `MIN_WIDTH`.
pub fn width_of(stream: Stream) -> usize {
    let from_env = std::env::var("COLUMNS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&w| w > 0);
    let fd = match stream {
        Stream::Stdout => std::io::stdout().as_raw_fd(),
        Stream::Stderr => std::io::stderr().as_raw_fd(),
    };
    from_env
        .or_else(|| terminal_columns(fd))
        .unwrap_or(DEFAULT_WIDTH)
        .max(MIN_WIDTH)
}

/// The columns of the terminal `fd` is, or None when it is none (or reports 0).
fn terminal_columns(fd: RawFd) -> Option<usize> {
    // SAFETY: isatty only inspects the descriptor; an invalid one gives 0.
    if unsafe { libc::isatty(fd) } != 1 {
        return None;
    }
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` through the pointer, which points to
    // `size`, alive and writable for the whole call.
    let rc = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size as *mut libc::winsize) };
    (rc == 0 && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// Every section, one after the other, fitted to stdout's width; `verbose` also shows
/// the blocks meant for `--points` (every point of a sweep).
pub fn render(sections: &[Section], verbose: bool) -> String {
    render_width(sections, verbose, width_of(Stream::Stdout))
}

/// Every section fitted to `width` characters.
pub fn render_width(sections: &[Section], verbose: bool, width: usize) -> String {
    let out = Out { width, verbose };
    sections.iter().map(|s| out.section(s)).collect()
}

/// What every block is drawn for.
#[derive(Clone, Copy)]
struct Out {
    width: usize,
    verbose: bool,
}

impl Out {
    /// One section: its title underlined, then its blocks.
    fn section(self, s: &Section) -> String {
        let title = fit::wrap(&escaped(&s.title), self.width);
        let rule = title.iter().map(|l| width(l)).max().unwrap_or(0);
        let mut out = format!("\n{}\n{}\n", title.join("\n"), "═".repeat(rule));
        self.blocks(&mut out, &s.blocks);
        out
    }

    fn heading(self, title: &str) -> String {
        format!("\n{}\n", fit::wrap(&escaped(title), self.width).join("\n"))
    }

    fn blocks(self, out: &mut String, list: &[Block]) {
        for block in list {
            match block {
                Block::Heading(text) => out.push_str(&self.heading(text)),
                Block::Paragraph(p) => out.push_str(&self.prose(&p.text)),
                Block::Table(t) => out.push_str(&self.table(t)),
                Block::Chart(_) | Block::Data(_) => {}
                Block::Details {
                    summary,
                    blocks: inner,
                } => {
                    out.push_str(&self.heading(summary));
                    self.blocks(out, inner);
                }
                Block::Verbose(inner) => {
                    if self.verbose {
                        self.blocks(out, inner);
                    }
                }
                Block::Only(Medium::Terminal, inner) => self.blocks(out, inner),
                Block::Only(Medium::Html, _) => {}
            }
        }
    }

    /// Prose as lines indented by one space and wrapped to the width (a line break in the
    /// text starts a new line).
    fn prose(self, text: &Text) -> String {
        escaped(&text.to_plain())
            .lines()
            .flat_map(|line| fit::wrap(line, self.width.saturating_sub(1)))
            .map(|line| format!(" {line}\n"))
            .collect()
    }

    /// A table: its title as a heading, the aligned rows, then its footnotes.
    fn table(self, t: &Table) -> String {
        let mut out = t
            .title
            .as_deref()
            .map(|title| self.heading(title))
            .unwrap_or_default();
        out.push_str(&match t.layout {
            Layout::Grid => self.grid(t),
            Layout::KeyValue => self.key_value(t),
        });
        for note in &t.notes {
            out.push_str(&self.prose(note));
        }
        out
    }

    /// A grid fitted to the width as its `overflow` asks; `--points` hides nothing.
    fn grid(self, t: &Table) -> String {
        let grid = Grid::of(t);
        let overflow = match t.overflow {
            Overflow::Drop if self.verbose => Overflow::Wrap,
            other => other,
        };
        match overflow {
            Overflow::Wrap => fit::column_groups(&grid.widths, self.width)
                .iter()
                .map(|group| grid.draw(group, None, self.width))
                .collect::<Vec<_>>()
                .join("\n"),
            Overflow::Clip => {
                let all: Vec<usize> = (0..grid.widths.len()).collect();
                let total = fit::line_width(grid.widths.iter().copied());
                let last = grid.widths.last().copied().unwrap_or(0);
                let room = self.width.saturating_sub(total - last).max(8);
                let clip = (total > self.width).then_some(room);
                grid.draw(&all, clip.map(Fold::Clip), self.width)
            }
            Overflow::Drop => {
                let priorities: Vec<_> = t.columns.iter().map(|c| c.priority).collect();
                let wraps: Vec<Option<usize>> = (t.columns.iter().zip(&grid.header))
                    .map(|(c, h)| (c.align == Align::Left).then(|| width(h).max(12)))
                    .collect();
                let fitted = fit::fit_columns(&grid.widths, &priorities, &wraps, self.width);
                let mut out = grid.draw(&fitted.kept, fitted.wrap_last.map(Fold::Wrap), self.width);
                let hidden = grid.widths.len() - fitted.kept.len();
                if hidden > 0 {
                    out.push_str(&self.prose(&Text::plain(format!(
                        "{hidden} column{} hidden to fit {} columns; --points/--csv has them all",
                        if hidden == 1 { "" } else { "s" },
                        self.width
                    ))));
                }
                out
            }
        }
    }

    /// Keys padded to one width, then the values, without a header; a long value wraps
    /// under itself, clear of the keys (or is cut short, for a clipped table).
    fn key_value(self, t: &Table) -> String {
        let pairs: Vec<(String, String)> = t
            .rows
            .iter()
            .map(|r| match r {
                Row::Cells(cells) => (
                    cells.first().map(|c| cell_text(&c.0)).unwrap_or_default(),
                    cells
                        .iter()
                        .skip(1)
                        .map(|c| cell_text(&c.0))
                        .collect::<Vec<_>>()
                        .join("  "),
                ),
                Row::Spanning(first, text) => (cell_text(&first.0), cell_text(text)),
            })
            .collect();
        let key_width = pairs.iter().map(|(k, _)| width(k)).max().unwrap_or(0);
        let value_width = self.width.saturating_sub(key_width + 3).max(MIN_WIDTH / 2);
        let mut out = String::new();
        for (k, v) in &pairs {
            let lines = match t.overflow {
                Overflow::Clip => vec![fit::clip(v, value_width)],
                Overflow::Drop | Overflow::Wrap => fit::wrap(v, value_width),
            };
            // A long value beside wide keys (a paragraph of settings) takes fewer lines
            // under its key, across the width.
            if lines.len() > 4 && key_width > 12 {
                out.push_str(&format!(" {k}\n"));
                for line in fit::wrap(v, self.width.saturating_sub(4)) {
                    out.push_str(&format!("    {line}\n"));
                }
                continue;
            }
            for (i, line) in lines.iter().enumerate() {
                let key = if i == 0 { k.as_str() } else { "" };
                out.push_str(format!(" {}  {line}", pad(key, key_width, false)).trim_end());
                out.push('\n');
            }
        }
        out
    }
}

/// A cell's text on one line.
fn cell_text(text: &Text) -> String {
    escaped(&text.to_plain().replace('\n', " "))
}

/// The text with every control character but the line break shown escaped (`\u{1b}`):
/// a report's host name or CPU model is data, and must not move the cursor, retitle the
/// terminal or clear the screen.
fn escaped(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' => "\n".to_string(),
            c if c.is_control() => c.escape_unicode().to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// `text` padded with spaces to `width` characters, on the left when `right`: as
/// `format!("{text:>width$}")`, which panics past 65,535.
fn pad(text: &str, width: usize, right: bool) -> String {
    let fill = " ".repeat(width.saturating_sub(text.chars().count()));
    if right {
        fill + text
    } else {
        text.to_string() + &fill
    }
}

/// What the last column shown does with text wider than the room left for it.
#[derive(Clone, Copy)]
enum Fold {
    /// Wraps to this many characters, the row taking several lines.
    Wrap(usize),
    /// Is cut to this many characters with "…".
    Clip(usize),
}

/// A grid table's text: the header, the rows and the natural width of every column.
struct Grid<'a> {
    table: &'a Table,
    header: Vec<String>,
    rows: Vec<GridRow>,
    widths: Vec<usize>,
}

enum GridRow {
    Cells(Vec<String>),
    /// A first cell and a text running across the other columns.
    Spanning(String, String),
}

impl<'a> Grid<'a> {
    fn of(table: &'a Table) -> Grid<'a> {
        let header: Vec<String> = table.columns.iter().map(|c| escaped(&c.header())).collect();
        let rows: Vec<GridRow> = (table.rows.iter())
            .map(|r| match r {
                Row::Cells(cells) => {
                    GridRow::Cells(cells.iter().map(|c| cell_text(&c.0)).collect())
                }
                Row::Spanning(first, text) => {
                    GridRow::Spanning(cell_text(&first.0), cell_text(text))
                }
            })
            .collect();
        let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
        for row in &rows {
            match row {
                GridRow::Cells(cells) => {
                    for (w, cell) in widths.iter_mut().zip(cells) {
                        *w = (*w).max(width(cell));
                    }
                }
                GridRow::Spanning(first, _) => {
                    if let Some(w) = widths.first_mut() {
                        *w = (*w).max(width(first));
                    }
                }
            }
        }
        Grid {
            table,
            header,
            rows,
            widths,
        }
    }

    /// The columns `shown` (indexes, in order) under a header and a rule, separated by
    /// two spaces; the last one folded as `fold` says. A spanning row's text runs across
    /// the other columns without widening them, wrapped to `max`.
    fn draw(&self, shown: &[usize], fold: Option<Fold>, max: usize) -> String {
        let mut widths: Vec<usize> = shown.iter().map(|&i| self.widths[i]).collect();
        if let (Some(Fold::Wrap(w) | Fold::Clip(w)), Some(last)) = (fold, widths.last_mut()) {
            *last = (*last).min(w);
        }
        let right = |k: usize| k > 0 && self.table.columns[shown[k]].align == Align::Right;
        // (`format!` pads to a width in characters, as `width` counts them.)
        let line = |cells: &[String], header: bool| -> String {
            let padded: Vec<String> = (cells.iter().zip(&widths).enumerate())
                .map(|(k, (cell, &w))| pad(cell, w, !header && right(k)))
                .collect();
            format!(" {}", padded.join("  ")).trim_end().to_string() + "\n"
        };
        let pick = |cells: &[String]| -> Vec<String> {
            (shown.iter())
                .map(|&i| cells.get(i).cloned().unwrap_or_default())
                .collect()
        };
        let mut out = String::new();
        for header in self.folded(pick(&self.header), fold) {
            out.push_str(&line(&header, true));
        }
        let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
        out.push_str(&format!(" {}\n", rule.join("  ")));
        let first_width = widths.first().copied().unwrap_or(0);
        for row in &self.rows {
            match row {
                GridRow::Spanning(first, text) => {
                    let room = max.saturating_sub(first_width + 3).max(MIN_WIDTH);
                    for (k, piece) in fit::wrap(text, room).iter().enumerate() {
                        let first = if k == 0 { first.as_str() } else { "" };
                        out.push_str(
                            format!(" {}  {piece}", pad(first, first_width, false)).trim_end(),
                        );
                        out.push('\n');
                    }
                }
                GridRow::Cells(cells) => {
                    for cells in self.folded(pick(cells), fold) {
                        out.push_str(&line(&cells, false));
                    }
                }
            }
        }
        out
    }

    /// The row as the lines it takes: one, or more when its last cell wraps.
    fn folded(&self, mut cells: Vec<String>, fold: Option<Fold>) -> Vec<Vec<String>> {
        let Some(last) = cells.pop() else {
            return vec![cells];
        };
        let pieces = match fold {
            Some(Fold::Wrap(w)) => fit::wrap(&last, w),
            Some(Fold::Clip(w)) => vec![fit::clip(&last, w)],
            None => vec![last],
        };
        let blank = vec![String::new(); cells.len()];
        (pieces.into_iter().enumerate())
            .map(|(k, piece)| {
                let mut line = if k == 0 { cells.clone() } else { blank.clone() };
                line.push(piece);
                line
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{Cell, Column, Paragraph, Priority};

    const WIDE: Out = Out {
        width: 100,
        verbose: false,
    };

    fn at(width: usize) -> Out {
        Out {
            width,
            verbose: false,
        }
    }

    fn sample() -> Table {
        let mut t = Table::new(vec![
            Column::text("level"),
            Column::quantity("latency", "ns"),
        ]);
        t.row(["L1d", "1.2"]);
        t.row(["DRAM", "95.0"]);
        t.spanning_row("L3", "not measured: the sweep stopped before it");
        t.note("a footnote");
        t
    }

    fn widest(text: &str) -> usize {
        text.lines().map(width).max().unwrap_or(0)
    }

    #[test]
    fn tables_align_columns_and_spanning_rows_do_not_widen_them() {
        let text = WIDE.table(&sample());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], " level  latency (ns)");
        assert_eq!(lines[2], " L1d             1.2");
        assert_eq!(lines[3], " DRAM           95.0");
        assert!(lines[4].starts_with(" L3     not measured"));
        assert_eq!(lines[5], " a footnote");
        assert!(lines[1].chars().filter(|&c| c == '─').count() == 5 + 12);
    }

    #[test]
    fn verbose_and_html_only_blocks_are_shown_only_when_they_should_be() {
        let mut s = Section::new("x", "X", "Title");
        s.push(Paragraph::note("always"));
        s.push(Block::Verbose(vec![Paragraph::note("points").into()]));
        s.push(Block::Only(
            Medium::Html,
            vec![Paragraph::note("html").into()],
        ));
        s.push(Block::Only(
            Medium::Terminal,
            vec![Paragraph::note(Text::plain("a").line_break().add("b")).into()],
        ));
        let short = WIDE.section(&s);
        assert_eq!(short, "\nTitle\n═════\n always\n a\n b\n");
        let verbose = Out {
            verbose: true,
            ..WIDE
        };
        assert!(verbose.section(&s).contains(" points\n"));
    }

    #[test]
    fn prose_titles_and_long_values_wrap_at_the_width_and_keys_are_padded() {
        let words = "word ".repeat(60);
        for w in [40, 80, 120] {
            let text = at(w).prose(&Text::plain(words.trim_end()));
            assert!(text.lines().count() >= 300 / w, "{text}");
            assert!(widest(&text) <= w, "{text}");
            // Every line but the last is full to within a word.
            assert!(
                text.lines().rev().skip(1).all(|l| width(l) > w - 5),
                "{text}"
            );
        }
        let mut s = Section::new("x", "X", words.trim_end());
        s.push(Block::Heading(words.clone()));
        assert!(widest(&at(50).section(&s)) <= 50);
        let mut t = Table::key_value();
        t.pair("Sampling", words.trim_end());
        let lines: Vec<String> = at(80).key_value(&t).lines().map(str::to_string).collect();
        assert!(lines[0].starts_with(" Sampling  word"));
        assert!(lines[1].starts_with("           word"), "{lines:?}");
        assert!(lines.iter().all(|l| width(l) <= 80));
        // A paragraph beside wide keys goes under its key instead.
        let mut t = Table::key_value();
        t.pair("Clock of multi-thread trials", "tsc");
        t.pair("Sampling", words.trim_end());
        let lines: Vec<String> = at(80).key_value(&t).lines().map(str::to_string).collect();
        assert_eq!(lines[1], " Sampling");
        assert!(lines[2].starts_with("    word word"), "{lines:?}");
        assert!(lines.len() <= 2 + 300 / 70 + 1, "{lines:?}");
        assert!(lines.iter().all(|l| width(l) <= 80));
        let mut t = Table::key_value();
        t.pair("CPU", "EPYC");
        t.pair("Logical CPUs", Cell::new("2"));
        assert_eq!(WIDE.table(&t), " CPU           EPYC\n Logical CPUs  2\n");
    }

    /// A table of a key, a figure that matters, two details and a long text.
    fn wide_table() -> Table {
        let mut t = Table::new(vec![
            Column::text("experiment"),
            Column::quantity("latency", "ns").priority(Priority::High),
            Column::quantity("cycles", "n").priority(Priority::Low),
            Column::quantity("spread", "%"),
            Column::number("trials"),
        ]);
        t.row(["latency", "1.20", "4.4", "0.5", "15"]);
        t.row(["bandwidth", "95.0", "421", "12.1", "15"]);
        t.spanning_row("tlb", "not measured: ".repeat(8).trim_end());
        t
    }

    #[test]
    fn a_table_too_wide_hides_its_least_important_columns_and_says_so() {
        let t = wide_table();
        let full = WIDE.table(&t);
        assert!(!full.contains("hidden"), "{full}");
        // 1 + 10 + 12 + 10 + 10 + 6 + 8 = 57 wide: at 40, cycles goes first, then trials.
        let text = at(40).table(&t);
        assert!(widest(&text) <= 40, "{text}");
        let header = text.lines().next().unwrap_or_default();
        assert_eq!(header, " experiment  latency (ns)  spread (%)");
        assert!(
            text.contains(" bandwidth           95.0        12.1\n"),
            "{text}"
        );
        assert!(
            text.contains("\n 2 columns hidden to fit 40 columns;"),
            "{text}"
        );
        // The spanning row's text wraps clear of the first column.
        assert!(text.contains("\n tlb         not measured:"), "{text}");
        assert!(text.contains("\n             not measured:"), "{text}");
        // --points hides nothing: the columns go to a second table instead.
        let verbose = Out {
            width: 40,
            verbose: true,
        };
        let text = verbose.table(&t);
        assert!(widest(&text) <= 40, "{text}");
        assert!(!text.contains("hidden") && text.contains("cycles (n)") && text.contains("trials"));
    }

    #[test]
    fn a_long_last_text_column_wraps_in_its_cell() {
        let mut t = Table::new(vec![
            Column::text("experiment"),
            Column::quantity("time", "s"),
            Column::text("tasks seen running"),
        ]);
        t.row(["latency", "4.3", &"rustc ×4, ".repeat(10)]);
        t.row(["tlb", "0.6", "–"]);
        let text = at(60).table(&t);
        assert!(widest(&text) <= 60, "{text}");
        assert!(!text.contains("hidden"), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[2].starts_with(" latency          4.3  rustc ×4,"),
            "{text}"
        );
        // The text goes on under itself, clear of the other columns.
        let indent = " latency          4.3  ".chars().count();
        assert!(lines[3].chars().take(indent).all(|c| c == ' '), "{text}");
        assert!(
            lines[3].chars().nth(indent).is_some_and(|c| c != ' '),
            "{text}"
        );
        assert!(
            lines.last().is_some_and(|l| l.starts_with(" tlb")),
            "{text}"
        );
    }

    #[test]
    fn a_wrapping_table_splits_into_tables_that_repeat_the_first_column() {
        let mut columns = vec![Column::text("Working set")];
        columns.extend((1..=20).map(|s| Column::number(format!("{}", s * 8))));
        let mut t = Table::new(columns).overflow(Overflow::Wrap);
        for size in ["24 KiB", "128 MiB"] {
            let mut row = vec![size.to_string()];
            row.extend((1..=20).map(|s| format!("{:.2}", s as f64 * 0.37)));
            t.row(row);
        }
        let text = at(60).table(&t);
        assert!(widest(&text) <= 60, "{text}");
        assert!(!text.contains("hidden"));
        assert!(text.matches(" Working set").count() >= 3, "{text}");
        assert_eq!(
            text.matches(" 128 MiB").count(),
            text.matches(" Working set").count()
        );
        for stride in ["8 ", "80 ", "160"] {
            assert_eq!(
                text.matches(&format!("  {stride}")).count(),
                1,
                "{stride}: {text}"
            );
        }
    }

    #[test]
    fn a_clipped_table_keeps_each_row_on_one_line() {
        let mut t = Table::key_value().overflow(Overflow::Clip);
        t.pair(
            "! disturbed",
            "latency was measured while the machine was shared by many",
        );
        t.pair("", "tlb was measured");
        let text = at(40).table(&t);
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(widest(&text) <= 40 && text.contains("…"), "{text}");
        let mut g =
            Table::new(vec![Column::text("code"), Column::text("gist")]).overflow(Overflow::Clip);
        g.row(["hypervisor", &"running under a hypervisor ".repeat(4)]);
        let text = at(40).table(&g);
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(widest(&text) <= 40 && text.contains("…"), "{text}");
    }

    #[test]
    fn columns_come_from_the_environment_or_default_to_80() {
        // The test process's stdout is a pipe or a file under cargo test, and COLUMNS
        // may be set by the shell: either way the width is a sane number.
        let w = width_of(Stream::Stdout);
        assert!(w >= MIN_WIDTH);
        if std::env::var_os("COLUMNS").is_none() {
            assert!(terminal_columns(-1).is_none());
        }
    }
}
