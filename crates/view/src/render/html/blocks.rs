//! HTML of the presentation model's blocks: prose, tables in boxes that scroll sideways,
//! charts as inline SVG, folded groups. Every text is escaped here; no markup comes from
//! the model.

use std::fmt::Write as _;

use crate::render::svg::{self, escape};
use crate::view::{
    Align, Block, Cell, Inline, Layout, Medium, Row, Section, Style, Table, Text, Tone,
};

/// A section: its `h2` title and its blocks.
pub fn section(s: &Section) -> String {
    let mut out = format!(
        "<section id=\"{}\">\n<h2>{}</h2>\n",
        escape(s.id),
        escape(&s.title)
    );
    blocks(&mut out, &s.blocks);
    out.push_str("</section>\n");
    out
}

fn blocks(out: &mut String, list: &[Block]) {
    for block in list {
        match block {
            Block::Heading(text) => {
                let _ = writeln!(out, "<h3>{}</h3>", escape(text));
            }
            Block::Paragraph(p) => {
                let class = match p.tone {
                    Tone::Note => "note",
                    Tone::Muted => "muted",
                    Tone::Callout => "callout",
                    Tone::Warning => "warnings",
                    Tone::Fine => "ok",
                };
                let _ = writeln!(out, "<p class=\"{class}\">{}</p>", text(&p.text));
            }
            Block::Table(t) => table(out, t),
            Block::Chart(c) => {
                let _ = writeln!(out, "<figure class=\"chart\">\n{}</figure>", svg::render(c));
            }
            Block::Data(_) | Block::Only(Medium::Terminal, _) => {}
            Block::Details {
                summary,
                blocks: inner,
            } => {
                let _ = writeln!(out, "<details>\n<summary>{}</summary>", escape(summary));
                blocks(out, inner);
                out.push_str("</details>\n");
            }
            Block::Verbose(inner) | Block::Only(Medium::Html, inner) => blocks(out, inner),
        }
    }
}

/// Inline content: spans with their style class and tooltip, line breaks, swatches.
pub fn text(t: &Text) -> String {
    let mut out = String::new();
    for inline in &t.0 {
        match inline {
            Inline::Span(span) => {
                let body = escape(&span.text);
                let (open, close) = match span.style {
                    Style::Plain if span.title.is_none() => ("", ""),
                    // A tooltip needs an element to hang on.
                    Style::Plain => ("<span", "</span>"),
                    Style::Strong => ("<b", "</b>"),
                    Style::Code => ("<code", "</code>"),
                    Style::Muted => ("<span class=\"muted\"", "</span>"),
                    Style::Warn => ("<span class=\"unstable\"", "</span>"),
                };
                if open.is_empty() {
                    out.push_str(&body);
                } else {
                    let _ = write!(out, "{open}{}>{body}{close}", title_attr(&span.title));
                }
            }
            Inline::Break => out.push_str("<br>"),
            Inline::Swatch(color) => {
                let _ = write!(
                    out,
                    "<span class=\"swatch\" style=\"background:{}\"></span>",
                    escape(color)
                );
            }
        }
    }
    out
}

/// ` title="…"` (a tooltip), or nothing.
fn title_attr(title: &Option<String>) -> String {
    title
        .as_ref()
        .map_or(String::new(), |t| format!(" title=\"{}\"", escape(t)))
}

fn cell(c: &Cell) -> String {
    text(&c.0)
}

/// A table under its `h3` title, in a box that scrolls sideways when it is wider than
/// the page, then its footnotes.
pub fn table(out: &mut String, t: &Table) {
    if let Some(title) = &t.title {
        let _ = writeln!(out, "<h3>{}</h3>", escape(title));
    }
    match t.layout {
        Layout::KeyValue => key_value(out, t),
        Layout::Grid => grid(out, t),
    }
    if !t.notes.is_empty() {
        let notes: Vec<String> = t.notes.iter().map(text).collect();
        let _ = writeln!(out, "<p class=\"note\">{}</p>", notes.join("<br>"));
    }
}

fn grid(out: &mut String, t: &Table) {
    let numeric: Vec<bool> = t.columns.iter().map(|c| c.align == Align::Right).collect();
    let class = |k: usize| {
        if numeric.get(k).copied().unwrap_or(false) {
            " class=\"num\""
        } else {
            ""
        }
    };
    out.push_str("<div class=\"table-wrap\"><table>\n<thead><tr>");
    for (k, c) in t.columns.iter().enumerate() {
        let (class, title) = (class(k), title_attr(&c.title));
        let _ = write!(
            out,
            "<th scope=\"col\"{class}{title}>{}</th>",
            escape(&c.header())
        );
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        match row {
            Row::Cells(cells) => {
                for (k, c) in cells.iter().enumerate() {
                    let _ = write!(out, "<td{}>{}</td>", class(k), cell(c));
                }
            }
            Row::Spanning(first, rest) => {
                let _ = write!(
                    out,
                    "<td>{}</td><td colspan=\"{}\">{}</td>",
                    cell(first),
                    t.columns.len().saturating_sub(1).max(1),
                    text(rest)
                );
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
}

fn key_value(out: &mut String, t: &Table) {
    out.push_str("<div class=\"table-wrap\"><table class=\"kv\">\n");
    for row in &t.rows {
        let (key, value) = match row {
            Row::Cells(cells) => (
                cells.first().map(cell).unwrap_or_default(),
                cells[1..].iter().map(cell).collect::<Vec<_>>().join(" "),
            ),
            Row::Spanning(first, rest) => (cell(first), text(rest)),
        };
        let _ = writeln!(out, "<tr><th scope=\"row\">{key}</th><td>{value}</td></tr>");
    }
    out.push_str("</table></div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{Column, Paragraph};

    #[test]
    fn text_is_escaped_and_styled() {
        let t = Text::plain("a < b")
            .strong("<b>")
            .titled("n/s", Style::Muted, "no \"PMU\"")
            .line_break()
            .swatch("#123456")
            .warn("unstable");
        assert_eq!(
            text(&t),
            "a &lt; b<b>&lt;b&gt;</b><span class=\"muted\" title=\"no &quot;PMU&quot;\">n/s</span>\
             <br><span class=\"swatch\" style=\"background:#123456\"></span>\
             <span class=\"unstable\">unstable</span>"
        );
    }

    #[test]
    fn sections_render_tables_in_scrolling_boxes_and_skip_terminal_only_blocks() {
        let mut s = Section::new("x", "X", "Title & more");
        let mut t = Table::new(vec![Column::text("k"), Column::quantity("v", "ns")]).titled("T");
        t.row(["a", "1"]);
        t.spanning_row("b", "not measured");
        t.note("n1");
        s.push(t);
        s.push(Block::Only(
            Medium::Terminal,
            vec![Paragraph::note("term").into()],
        ));
        s.push(Block::Details {
            summary: "All".into(),
            blocks: vec![Paragraph::muted("inside").into()],
        });
        let html = section(&s);
        assert!(html.starts_with("<section id=\"x\">\n<h2>Title &amp; more</h2>"));
        assert!(html.contains("<div class=\"table-wrap\"><table>"));
        assert!(html.contains("<th scope=\"col\" class=\"num\">v (ns)</th>"));
        assert!(html.contains("<td class=\"num\">1</td>"));
        assert!(html.contains("<td colspan=\"1\">not measured</td>"));
        assert!(html.contains("<p class=\"note\">n1</p>"));
        assert!(!html.contains("term"));
        assert!(html.contains("<details>\n<summary>All</summary>\n<p class=\"muted\">inside</p>"));
    }
}
