//! The report's summary: the headline figures "at a glance" (built once from the result
//! sections, drawn as cards by the HTML report and as plain lines at the end of `run`),
//! and the warnings as a compact block, one line each grouped by kind, for a terminal
//! whose report files hold them in full.

use super::{Headline, Overflow, Paragraph, Section, Table, Text};

/// One headline figure of the summary, with the section it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    pub headline: Headline,
    /// The section's anchor (HTML link target).
    pub anchor: &'static str,
    /// Drawn as a warning: a non-zero warnings count, a figure from fewer trials than
    /// planned, or one the drift pass found moved beyond its noise.
    pub warn: bool,
}

/// A figure the drift pass measured again at the end of the run, as the summary shows it
/// beside its headline.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    /// `Figure::key`.
    pub key: String,
    /// The largest move over the passes against the run's value, percent, with its sign.
    pub pct: f64,
    /// The move exceeds the run's own noise.
    pub beyond_noise: bool,
}

/// The headline figures of every result section, each with the drift pass's
/// disagreement on the figures it shows appended to its detail, then the warnings count
/// (when anything was measured or warned about), each pointing to its section.
pub fn cards(results: &[Section], warnings: usize, drift: &[Drift]) -> Vec<Card> {
    let mut cards: Vec<Card> = results
        .iter()
        .flat_map(|s| {
            s.headlines.iter().map(|h| {
                let mut headline = h.clone();
                let moved = drifted(&mut headline, drift);
                Card {
                    warn: headline.few_trials || moved,
                    headline,
                    anchor: s.id,
                }
            })
        })
        .collect();
    if !cards.is_empty() || warnings > 0 {
        cards.push(Card {
            headline: Headline {
                label: "Warnings".to_string(),
                value: warnings.to_string(),
                detail: if warnings == 0 {
                    "nothing found that distorts these figures".to_string()
                } else {
                    "read them before the figures".to_string()
                },
                ..Headline::default()
            },
            anchor: "warnings",
            warn: warnings > 0,
        });
    }
    cards
}

/// Appends the drift of the headline's figures to its detail ("re-measured at the end:
/// −65.8% (beyond its noise)"); true when one moved beyond its noise.
fn drifted(headline: &mut Headline, drift: &[Drift]) -> bool {
    let found: Vec<(&str, &Drift)> = (headline.keys.iter())
        .filter_map(|k| {
            let d = drift.iter().find(|d| d.key == k.key && d.pct.is_finite())?;
            Some((k.name.as_str(), d))
        })
        .collect();
    if found.is_empty() {
        return false;
    }
    let parts: Vec<String> = (found.iter())
        .map(|(name, d)| {
            let sign = if d.pct > 0.0 {
                "+"
            } else if d.pct < 0.0 {
                "−"
            } else {
                ""
            };
            format!(
                "{name}{}{sign}{:.1}%{}",
                if name.is_empty() { "" } else { " " },
                d.pct.abs(),
                if d.beyond_noise {
                    " (beyond its noise)"
                } else {
                    ""
                }
            )
        })
        .collect();
    let separator = if headline.detail.is_empty() {
        ""
    } else {
        " · "
    };
    headline.detail = format!(
        "{}{separator}re-measured at the end: {}",
        headline.detail,
        parts.join(", ")
    );
    found.iter().any(|(_, d)| d.beyond_noise)
}

/// The cards as plain lines: the label, then the figure and what qualifies it; None when
/// there is none.
pub fn section(cards: &[Card]) -> Option<Section> {
    if cards.is_empty() {
        return None;
    }
    let mut section = Section::new("summary", "At a glance", "At a glance");
    let mut table = Table::key_value();
    // The figures padded to one width, so that what qualifies them lines up.
    let value_width = (cards.iter())
        .map(|c| super::fit::width(&c.headline.value))
        .max()
        .unwrap_or(0);
    for card in cards {
        let h = &card.headline;
        let padded = format!("{:<value_width$}", h.value);
        let value = if card.warn {
            Text::new().warn(padded)
        } else {
            Text::new().strong(padded)
        };
        table.pair(h.label.clone(), value.add("  ").muted(&h.detail));
    }
    section.push(table);
    Some(section)
}

/// The warnings (code, message) one line each, grouped by code in the order the codes
/// first appear: the code once, then the gist of each message, cut to the line.
pub fn compact_warnings<'a>(warnings: impl IntoIterator<Item = (&'a str, &'a str)>) -> Section {
    let warnings: Vec<(&str, &str)> = warnings.into_iter().collect();
    let mut section = Section::new(
        "warnings",
        "Warnings",
        format!(
            "Warnings ({}: one line each, in full in the HTML and JSON reports)",
            warnings.len()
        ),
    );
    if warnings.is_empty() {
        section.push(Paragraph::fine(
            "No warnings: nothing was found that distorts these measurements.",
        ));
        return section;
    }
    let codes = super::format::distinct(warnings.iter().map(|(code, _)| *code));
    let mut table = Table::key_value().overflow(Overflow::Clip);
    for code in codes {
        let group = warnings.iter().filter(|(c, _)| *c == code);
        for (i, (_, message)) in group.enumerate() {
            let key = if i == 0 {
                format!("! {code}")
            } else {
                String::new()
            };
            table.pair(key, gist(message));
        }
    }
    section.push(table);
    section
}

/// A message's first clause: up to the first ": ", "; " or ". " outside parentheses that
/// leaves a dozen characters or more, each parenthesis cut at its first ", " ("(20
/// bandwidth rows…)").
fn gist(message: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let mut skipping = false;
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        match c {
            '(' => {
                depth += 1;
                if !skipping {
                    out.push(c);
                }
            }
            ')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 && skipping {
                    skipping = false;
                    out.push('…');
                }
                if !skipping {
                    out.push(c);
                }
            }
            ',' if depth > 0 && next == Some(' ') => skipping = true,
            ':' | ';' | '.' if depth == 0 && next == Some(' ') && out.chars().count() >= 12 => {
                break
            }
            _ if !skipping => out.push(c),
            _ => {}
        }
    }
    out.trim_end_matches(['.', ' ']).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{Block, Layout, Row};

    fn headline(label: &str) -> Headline {
        Headline {
            label: label.into(),
            value: "1.00 ns".into(),
            detail: "load-to-use".into(),
            ..Headline::default()
        }
    }

    #[test]
    fn cards_are_every_headline_then_the_warnings_count() {
        let mut a = Section::new("latency", "Latency", "Latency");
        a.headlines = vec![headline("L1d"), headline("L2")];
        let cards = cards(&[a.clone()], 0, &[]);
        assert_eq!(cards.len(), 3);
        assert_eq!((cards[1].anchor, cards[2].anchor), ("latency", "warnings"));
        assert!(!cards[2].warn);
        assert!(super::cards(&[], 2, &[])[0].warn);
        assert!(super::cards(&[], 0, &[]).is_empty());
        assert!(section(&[]).is_none());
        let s = section(&cards).expect("cards");
        let text = s.plain_text();
        assert!(
            text.contains("L2") && text.contains("1.00 ns  load-to-use"),
            "{text}"
        );
        assert!(text.contains("Warnings | 0        nothing found"), "{text}");
        assert!(matches!(&s.blocks[0], Block::Table(t) if t.layout == Layout::KeyValue));
    }

    #[test]
    fn the_drift_goes_beside_its_headline_and_moved_or_thin_figures_warn() {
        let mut a = Section::new("bandwidth", "Bandwidth", "Bandwidth");
        a.headlines = vec![
            headline("L1d").key("lat.L1d"),
            headline("L2").key("lat.L2"),
            Headline {
                few_trials: true,
                ..headline("Bandwidth, 2 threads")
            }
            .key("bw.peak")
            .also("DRAM", "bw.dram"),
            headline("MLP"),
        ];
        let drift = |key: &str, pct: f64, beyond_noise: bool| Drift {
            key: key.into(),
            pct,
            beyond_noise,
        };
        let drift = [
            drift("lat.L1d", 0.4, false),
            drift("lat.L2", -65.8, true),
            drift("bw.dram", 2.0, false),
            drift("bw.peak", f64::NAN, false),
        ];
        let cards = cards(&[a], 0, &drift);
        let details: Vec<&str> = cards.iter().map(|c| c.headline.detail.as_str()).collect();
        assert_eq!(details[0], "load-to-use · re-measured at the end: +0.4%");
        assert_eq!(
            details[1],
            "load-to-use · re-measured at the end: −65.8% (beyond its noise)"
        );
        assert_eq!(
            details[2],
            "load-to-use · re-measured at the end: DRAM +2.0%"
        );
        assert_eq!(details[3], "load-to-use", "no figure, no drift");
        let warn: Vec<bool> = cards.iter().map(|c| c.warn).collect();
        assert_eq!(warn, [false, true, true, false, false]);
        // The terminal's lines draw the warning cards' figures as warnings.
        let s = section(&cards).expect("cards");
        let Block::Table(t) = &s.blocks[0] else {
            panic!("no table")
        };
        let styled: Vec<bool> = (t.rows.iter())
            .map(|r| matches!(r, Row::Cells(c) if format!("{:?}", c[1]).contains("Warn")))
            .collect();
        assert_eq!(styled, warn);
    }

    #[test]
    fn warnings_are_grouped_by_code_one_gist_each() {
        let w = [
            (
                "disturbed",
                "latency was measured while the machine was shared: 5.8 other",
            ),
            (
                "hypervisor",
                "running under a hypervisor (KVM): TLB misses cost more",
            ),
            (
                "disturbed",
                "tlb was measured while the machine was shared: 11.6 other",
            ),
        ];
        let s = compact_warnings(w);
        assert!(s.title.starts_with("Warnings (3:"), "{}", s.title);
        let Block::Table(t) = &s.blocks[0] else {
            panic!("no table")
        };
        assert_eq!(t.overflow, Overflow::Clip);
        let keys = t.column_text(0);
        assert_eq!(keys, ["! disturbed", "", "! hypervisor"]);
        let gists = t.column_text(1);
        assert_eq!(gists[1], "tlb was measured while the machine was shared");
        assert_eq!(gists[2], "running under a hypervisor (KVM)");
        assert!(compact_warnings([]).plain_text().contains("No warnings"));
    }

    #[test]
    fn a_gist_is_the_first_clause_with_short_parentheses() {
        assert_eq!(
            gist("L3: the plateau ends at 11.3 MiB but the OS reports 32 MiB: it is shared"),
            "L3: the plateau ends at 11.3 MiB but the OS reports 32 MiB"
        );
        assert_eq!(
            gist("threads that did not run (20 bandwidth rows, marked ! in the tables): x"),
            "threads that did not run (20 bandwidth rows…)"
        );
        assert_eq!(
            gist("3 figure(s) moved (largest: L3 latency +1106.2%): the machine changed"),
            "3 figure(s) moved (largest: L3 latency +1106.2%)"
        );
        assert_eq!(gist("the system is busy; rerun."), "the system is busy");
        assert_eq!(gist("no clause at all."), "no clause at all");
    }
}
