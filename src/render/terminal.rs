//! Terminal renderer: sections as headings, prose lines and aligned text tables. It draws
//! any `view::Section` and knows no experiment; charts and CSV tables are not shown,
//! styles, tooltips and swatches are dropped and their text kept.

use crate::view::{Align, Block, Layout, Medium, Row, Section, Table, Text};

/// Every section, one after the other; `verbose` also shows the blocks meant for
/// `--points` (every point of a sweep).
pub fn render(sections: &[Section], verbose: bool) -> String {
    sections.iter().map(|s| section(s, verbose)).collect()
}

/// Prose is wrapped to this many columns.
const WIDTH: usize = 100;

/// One section: its title underlined, then its blocks.
pub fn section(s: &Section, verbose: bool) -> String {
    let mut out = format!("\n{}\n{}\n", s.title, "═".repeat(width(&s.title)));
    blocks(&mut out, &s.blocks, verbose);
    out
}

fn heading(title: &str) -> String {
    format!("\n{title}\n")
}

fn blocks(out: &mut String, list: &[Block], verbose: bool) {
    for block in list {
        match block {
            Block::Heading(text) => out.push_str(&heading(text)),
            Block::Paragraph(p) => out.push_str(&prose(&p.text)),
            Block::Table(t) => out.push_str(&table(t)),
            Block::Chart(_) | Block::Data(_) => {}
            Block::Details {
                summary,
                blocks: inner,
            } => {
                out.push_str(&heading(summary));
                blocks(out, inner, verbose);
            }
            Block::Verbose(inner) => {
                if verbose {
                    blocks(out, inner, verbose);
                }
            }
            Block::Only(Medium::Terminal, inner) => blocks(out, inner, verbose),
            Block::Only(Medium::Html, _) => {}
        }
    }
}

/// Prose as lines indented by one space and wrapped at `WIDTH` (a line break in the text
/// starts a new line).
fn prose(text: &Text) -> String {
    text.to_plain()
        .lines()
        .flat_map(|line| wrap(line, WIDTH - 1))
        .map(|line| format!(" {line}\n"))
        .collect()
}

/// Splits a line at spaces into lines of at most `max` characters (a longer word stays
/// whole on its own line).
fn wrap(line: &str, max: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for word in line.split(' ') {
        if !current.is_empty() && width(&current) + 1 + width(word) > max {
            lines.push(std::mem::take(&mut current));
        } else if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
    }
    lines.push(current);
    lines
}

/// A table: its title as a heading, the aligned rows, then its footnotes.
pub fn table(t: &Table) -> String {
    let mut out = t.title.as_deref().map(heading).unwrap_or_default();
    out.push_str(&match t.layout {
        Layout::Grid => grid(t),
        Layout::KeyValue => key_value(t),
    });
    for note in &t.notes {
        out.push_str(&prose(note));
    }
    out
}

/// A cell's text on one line.
fn cell_text(text: &Text) -> String {
    text.to_plain().replace('\n', " ")
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// Columns separated by two spaces under a header and a rule; a spanning row's text
/// runs across the other columns without widening them.
fn grid(t: &Table) -> String {
    let header: Vec<String> = t.columns.iter().map(|c| c.header()).collect();
    let rows: Vec<(Vec<String>, Option<String>)> = t
        .rows
        .iter()
        .map(|r| match r {
            Row::Cells(cells) => (cells.iter().map(|c| cell_text(&c.0)).collect(), None),
            Row::Spanning(first, text) => (vec![cell_text(&first.0)], Some(cell_text(text))),
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for (cells, _) in &rows {
        for (w, cell) in widths.iter_mut().zip(cells) {
            *w = (*w).max(width(cell));
        }
    }
    // (`format!` pads to a width in characters, as `width` counts them.)
    let line = |cells: &[String], header: bool| -> String {
        let padded: Vec<String> = (cells.iter().zip(&widths).enumerate())
            .map(|(i, (cell, &w))| {
                if !header && i > 0 && t.columns[i].align == Align::Right {
                    format!("{cell:>w$}")
                } else {
                    format!("{cell:<w$}")
                }
            })
            .collect();
        format!(" {}", padded.join("  ")).trim_end().to_string() + "\n"
    };
    let mut out = line(&header, true);
    let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
    out.push_str(&format!(" {}\n", rule.join("  ")));
    for (cells, span) in &rows {
        match span {
            Some(text) => {
                let (first, w) = (&cells[0], widths.first().copied().unwrap_or(0));
                out.push_str(&format!(" {first:<w$}  {text}\n"));
            }
            None => out.push_str(&line(cells, false)),
        }
    }
    out
}

/// Keys padded to one width, then the values, without a header.
fn key_value(t: &Table) -> String {
    let pairs: Vec<(String, String)> = t
        .rows
        .iter()
        .map(|r| match r {
            Row::Cells(cells) => (
                cells.first().map(|c| cell_text(&c.0)).unwrap_or_default(),
                cells[1..]
                    .iter()
                    .map(|c| cell_text(&c.0))
                    .collect::<Vec<_>>()
                    .join("  "),
            ),
            Row::Spanning(first, text) => (cell_text(&first.0), cell_text(text)),
        })
        .collect();
    let key_width = pairs.iter().map(|(k, _)| width(k)).max().unwrap_or(0);
    // Long values wrap under themselves, clear of the keys.
    let value_width = WIDTH.saturating_sub(key_width + 3).max(40);
    let mut out = String::new();
    for (k, v) in &pairs {
        for (i, line) in wrap(v, value_width).iter().enumerate() {
            let key = if i == 0 { k.as_str() } else { "" };
            out.push_str(format!(" {key:<key_width$}  {line}").trim_end());
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{Cell, Column, Paragraph};

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

    #[test]
    fn tables_align_columns_and_spanning_rows_do_not_widen_them() {
        let text = table(&sample());
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
        let short = section(&s, false);
        assert_eq!(short, "\nTitle\n═════\n always\n a\n b\n");
        assert!(section(&s, true).contains(" points\n"));
    }

    #[test]
    fn prose_and_long_values_wrap_at_the_width_and_keys_are_padded() {
        let words = "word ".repeat(60);
        let text = prose(&Text::plain(words.trim_end()));
        assert!(text.lines().count() >= 3);
        assert!(text.lines().all(|l| width(l) <= WIDTH), "{text}");
        let mut t = Table::key_value();
        t.pair("Sampling", words.trim_end());
        let lines: Vec<String> = key_value(&t).lines().map(str::to_string).collect();
        assert!(lines[0].starts_with(" Sampling  word"));
        assert!(lines[1].starts_with("           word"), "{lines:?}");
        assert!(lines.iter().all(|l| width(l) <= WIDTH));
        let mut t = Table::key_value();
        t.pair("CPU", "EPYC");
        t.pair("Logical CPUs", Cell::new("2"));
        assert_eq!(table(&t), " CPU           EPYC\n Logical CPUs  2\n");
    }
}
