//! The self-contained HTML report: one HTML5 document with inline CSS and inline SVG
//! charts, drawn from `view::Section`s by a renderer that knows no experiment.
//!
//! No JavaScript, web fonts, images or other external resources are used, so the file can
//! be mailed, archived or opened offline and looks the same years later; it also prints
//! cleanly (charts and tables avoid page breaks, folded point tables unfold where the
//! browser supports `::details-content`). Every text goes through `svg::escape`: CPU
//! model strings, kernel versions and warning messages come from the machine and must not
//! be able to inject markup.
//!
//! Layout: a header (when and where the page was made, by which memscope and command
//! line) with a navigation bar over every section, the headline figures at a glance (each
//! a link to its section), then the sections in the order given. The content takes the
//! window's full width, so that wide tables fit a 1,400 px window without scrolling.

mod blocks;

use std::fmt::Write as _;

use crate::render::svg::escape;
use crate::view::{Headline, Section, Text};

pub use blocks::text;

const CSS: &str = include_str!("style.css");

/// One headline figure of the summary, with the section it links to.
pub struct Glance {
    pub headline: Headline,
    pub anchor: &'static str,
    /// Drawn as a warning (e.g. a non-zero warnings count).
    pub warn: bool,
}

/// When, where and by what the page was made: the header's second line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stamp {
    /// The date and time for a reader ("2026-11-26 13:05 UTC").
    pub when: String,
    /// The host name.
    pub host: String,
    /// The tool and its version ("memscope 0.1.0").
    pub tool: String,
    /// The command line, program name first (empty: not shown).
    pub command_line: Vec<String>,
}

/// What the document holds.
pub struct Page<'a> {
    /// The document's `<title>`.
    pub title: String,
    /// The generator `<meta>`: "memscope 0.1.0".
    pub generator: String,
    /// The page's `h1`: "memscope report", "memscope comparison".
    pub heading: String,
    /// The line under the `h1`.
    pub byline: Text,
    /// Date, host, version and command line, under the byline.
    pub stamp: Option<Stamp>,
    pub glance: Vec<Glance>,
    /// Every section, in reading order; each gets a link in the navigation bar.
    pub sections: Vec<&'a Section>,
    pub footer: String,
}

/// The complete HTML document, UTF-8 encoded.
pub fn render(page: &Page) -> Vec<u8> {
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"{}\">\n\
         <title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n",
        escape(&page.generator),
        escape(&page.title),
    );
    let _ = write!(
        out,
        "<header>\n<h1>{}</h1>\n<p class=\"muted\">{}</p>\n",
        escape(&page.heading),
        text(&page.byline)
    );
    if let Some(stamp) = &page.stamp {
        stamp_line(&mut out, stamp);
    }
    out.push_str("<nav>");
    for s in &page.sections {
        let _ = write!(out, "<a href=\"#{}\">{}</a>", escape(s.id), escape(&s.nav));
    }
    out.push_str("</nav>\n</header>\n");
    glance(&mut out, &page.glance);
    for s in &page.sections {
        out.push_str(&blocks::section(s));
    }
    let _ = write!(
        out,
        "<footer>{}</footer>\n</body>\n</html>\n",
        escape(&page.footer)
    );
    out.into_bytes()
}

/// `<p class="stamp">`: date · host · version, then the command line as code.
fn stamp_line(out: &mut String, stamp: &Stamp) {
    let mut parts = Vec::new();
    for (key, value) in [("", &stamp.when), ("host ", &stamp.host), ("", &stamp.tool)] {
        if !value.is_empty() {
            parts.push(format!("{key}<b>{}</b>", escape(value)));
        }
    }
    if !stamp.command_line.is_empty() {
        // The program as the user typed it may be a long path: its file name is enough.
        let mut argv = stamp.command_line.clone();
        if let Some(name) = argv[0].rsplit('/').next().filter(|n| !n.is_empty()) {
            argv[0] = name.to_string();
        }
        let line = crate::view::format::shell_quoted(&argv);
        let line = line.trim_matches('"');
        parts.push(format!("<code class=\"argv\">{}</code>", escape(line)));
    }
    if !parts.is_empty() {
        let _ = writeln!(out, "<p class=\"stamp\">{}</p>", parts.join(" · "));
    }
}

/// The headline figures as cards, each linking to its section.
fn glance(out: &mut String, cards: &[Glance]) {
    if cards.is_empty() {
        return;
    }
    out.push_str("<section id=\"summary\">\n<h2>At a glance</h2>\n<div class=\"glance\">\n");
    for card in cards {
        let h = &card.headline;
        let _ = writeln!(
            out,
            "<a href=\"#{}\"{}><div class=\"label\">{}</div><div class=\"value\">{}</div>\
             <div class=\"detail\">{}</div></a>",
            escape(card.anchor),
            if card.warn { " class=\"warn\"" } else { "" },
            escape(&h.label),
            escape(&h.value),
            escape(&h.detail)
        );
    }
    out.push_str("</div>\n</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::Paragraph;

    #[test]
    fn the_page_links_every_section_and_the_glance_cards() {
        let mut a = Section::new("latency", "Latency", "Latency ladder");
        a.push(Paragraph::note("<script>"));
        let page = Page {
            heading: "memscope report".into(),
            title: "memscope report: <cpu>".into(),
            generator: "memscope 0.1.0".into(),
            byline: Text::plain("command ").strong("run"),
            stamp: Some(Stamp {
                when: "2026-11-26 13:05 UTC".into(),
                host: "node<7>".into(),
                tool: "memscope 0.1.0".into(),
                command_line: vec![
                    "/usr/local/bin/memscope".into(),
                    "run".into(),
                    "--out".into(),
                    "my dir".into(),
                ],
            }),
            glance: vec![Glance {
                headline: Headline {
                    label: "L1d".into(),
                    value: "1.00 ns".into(),
                    detail: "load-to-use".into(),
                    ..Headline::default()
                },
                anchor: "latency",
                warn: false,
            }],
            sections: vec![&a],
            footer: "Generated by memscope".into(),
        };
        let html = String::from_utf8(render(&page)).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>memscope report: &lt;cpu&gt;</title>"));
        assert!(html.contains("<nav><a href=\"#latency\">Latency</a></nav>"));
        assert!(html.contains("<a href=\"#latency\"><div class=\"label\">L1d</div>"));
        assert!(html.contains("&lt;script&gt;") && !html.contains("<script>"));
        assert!(html.find("id=\"summary\"") < html.find("id=\"latency\""));
        assert!(html.trim_end().ends_with("</html>"));
        // The header: date, host, version and command line, before the navigation.
        let header = &html[html.find("<header>").unwrap()..html.find("</header>").unwrap()];
        assert!(
            header.contains(
                "<p class=\"stamp\"><b>2026-11-26 13:05 UTC</b> · host <b>node&lt;7&gt;</b> · \
                 <b>memscope 0.1.0</b> · <code class=\"argv\">memscope run --out &#39;my dir&#39;</code></p>"
            ),
            "{header}"
        );
        assert!(header.find("class=\"stamp\"") < header.find("<nav>"));
    }

    #[test]
    fn the_content_is_not_capped_at_a_narrow_width() {
        // Wide tables must fit a 1,400 px window: no 1,100 px cap on the page.
        let body = CSS.lines().find(|l| l.starts_with("body")).unwrap();
        assert!(!CSS.contains("max-width: 1100px"), "{body}");
    }
}
