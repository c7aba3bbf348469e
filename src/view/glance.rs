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
    /// Drawn as a warning (a non-zero warnings count).
    pub warn: bool,
}

/// The headline figures of every result section, then the warnings count (when anything
/// was measured or warned about), each pointing to its section.
pub fn cards(results: &[Section], warnings: usize) -> Vec<Card> {
    let mut cards: Vec<Card> = results
        .iter()
        .flat_map(|s| {
            s.headlines.iter().map(|h| Card {
                headline: h.clone(),
                anchor: s.id,
                warn: false,
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
            },
            anchor: "warnings",
            warn: warnings > 0,
        });
    }
    cards
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
    use crate::view::{Block, Layout};

    fn headline(label: &str) -> Headline {
        Headline {
            label: label.into(),
            value: "1.00 ns".into(),
            detail: "load-to-use".into(),
        }
    }

    #[test]
    fn cards_are_every_headline_then_the_warnings_count() {
        let mut a = Section::new("latency", "Latency", "Latency");
        a.headlines = vec![headline("L1d"), headline("L2")];
        let cards = cards(&[a.clone()], 0);
        assert_eq!(cards.len(), 3);
        assert_eq!((cards[1].anchor, cards[2].anchor), ("latency", "warnings"));
        assert!(!cards[2].warn);
        assert!(super::cards(&[], 2)[0].warn);
        assert!(super::cards(&[], 0).is_empty());
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
