//! Fitting text into a width in characters, for the terminal: prose wrapped at spaces,
//! a cell cut short with "…", and which columns of a table stay (the lowest priority
//! hidden first) or how they split into tables one under the other. Pure functions of
//! the widths, so the rules are tested here and the renderer only applies them.

use super::Priority;

/// Width of a text in characters (what a terminal column holds for the text memscope
/// prints: no wide or combining characters).
pub fn width(s: &str) -> usize {
    s.chars().count()
}

/// Width of a table's line: a leading space, the columns, two spaces between them.
pub(crate) fn line_width(widths: impl IntoIterator<Item = usize>) -> usize {
    let (sum, n) = widths
        .into_iter()
        .fold((0, 0), |(sum, n), w| (sum + w, n + 1));
    1 + sum + 2 * n.max(1) - 2
}

/// Splits a line at spaces into lines of at most `max` characters; a word longer than
/// `max` (a path, a list without spaces) is cut into pieces of `max`.
pub fn wrap(line: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut lines = Vec::new();
    let mut current = String::new();
    for word in line.split(' ') {
        let mut word = word.to_string();
        while width(&word) > max {
            if !current.is_empty() {
                lines.push(std::mem::take(&mut current));
            }
            let cut: String = word.chars().take(max).collect();
            word = word.chars().skip(max).collect();
            lines.push(cut);
        }
        if !current.is_empty() && width(&current) + 1 + width(&word) > max {
            lines.push(std::mem::take(&mut current));
        } else if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(&word);
    }
    if !current.is_empty() || lines.is_empty() {
        lines.push(current);
    }
    lines
}

/// The text cut to at most `max` characters at a space, with "…" when anything was cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_string();
    }
    let room = max.saturating_sub(1);
    let head: String = text.chars().take(room).collect();
    // Cut at the last space when there is one in the second half, so no word is split.
    let at_word_end = text.chars().nth(room) == Some(' ');
    let head = match head.rfind(' ') {
        Some(at) if !at_word_end && width(&head[..at]) >= room / 2 => {
            head[..at].trim_end().to_string()
        }
        _ => head.trim_end().to_string(),
    };
    format!("{head}…")
}

/// The order in which columns go when a table is too wide: the lowest priority first,
/// the rightmost first among equals; never the first column (the row's key).
pub(crate) fn drop_order(priorities: &[Priority]) -> Vec<usize> {
    let mut order: Vec<usize> = (1..priorities.len()).rev().collect();
    // A stable sort keeps the rightmost first among equals.
    order.sort_by_key(|&i| priorities[i]);
    order
}

/// How a table's columns fit a width: which stay (by index, in order), and the width the
/// last one wraps its text to, if it must.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fitted {
    pub kept: Vec<usize>,
    pub wrap_last: Option<usize>,
}

/// Fits columns of these widths into `max` characters: when the last column left is
/// text that may wrap (`wraps[i]` is the narrowest it may wrap to) and the room left for
/// it is at least that, it wraps; otherwise the next column in `drop_order` goes. The
/// first column always stays, even when it alone is too wide.
pub(crate) fn fit_columns(
    widths: &[usize],
    priorities: &[Priority],
    wraps: &[Option<usize>],
    max: usize,
) -> Fitted {
    let mut kept: Vec<usize> = (0..widths.len()).collect();
    let mut order = drop_order(priorities).into_iter();
    loop {
        let total = line_width(kept.iter().map(|&i| widths[i]));
        if total <= max {
            return Fitted {
                kept,
                wrap_last: None,
            };
        }
        if let (Some(&last), true) = (kept.last(), kept.len() > 1) {
            let room = max.saturating_sub(total - widths[last]);
            if wraps
                .get(last)
                .copied()
                .flatten()
                .is_some_and(|min| room >= min)
            {
                return Fitted {
                    kept,
                    wrap_last: Some(room),
                };
            }
        }
        match order.next() {
            Some(drop) => kept.retain(|&i| i != drop),
            None => {
                return Fitted {
                    kept,
                    wrap_last: None,
                }
            }
        }
    }
}

/// The columns split into groups that each fit `max` characters with the first column
/// repeated in front: every group starts with column 0, then as many of the next
/// columns, in order, as fit (at least one, even when too wide).
pub(crate) fn column_groups(widths: &[usize], max: usize) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut current = vec![0];
    for i in 1..widths.len() {
        let with = line_width(current.iter().chain([&i]).map(|&c| widths[c]));
        if with > max && current.len() > 1 {
            groups.push(std::mem::replace(&mut current, vec![0]));
        }
        current.push(i);
    }
    groups.push(current);
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use Priority::{High, Low, Normal};

    #[test]
    fn wrapping_keeps_every_line_within_the_width_and_every_word() {
        let text = "one two three four five six seven eight nine ten";
        let lines = wrap(text, 14);
        assert_eq!(
            lines,
            ["one two three", "four five six", "seven eight", "nine ten"]
        );
        assert_eq!(lines.join(" "), text);
        // A word longer than the width is cut into pieces of the width.
        let lines = wrap("see /usr/lib/debug/.build-id/ab/cdef.debug now", 12);
        assert!(lines.iter().all(|l| width(l) <= 12), "{lines:?}");
        assert_eq!(
            lines.concat().replace(' ', ""),
            "see/usr/lib/debug/.build-id/ab/cdef.debugnow"
        );
        assert_eq!(wrap("", 10), [""]);
        assert_eq!(wrap("µs ns", 2), ["µs", "ns"]);
    }

    #[test]
    fn clipping_cuts_at_a_space_and_marks_the_cut() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(
            clip("the system is busy: 6 other tasks", 20),
            "the system is busy:…"
        );
        assert_eq!(clip("abcdefghijkl", 6), "abcde…");
        assert!(width(&clip(&"word ".repeat(40), 33)) <= 33);
    }

    fn kept(widths: &[usize], priorities: &[Priority], max: usize) -> Vec<usize> {
        fit_columns(widths, priorities, &[], max).kept
    }

    #[test]
    fn the_lowest_priority_goes_first_then_the_rightmost_and_never_the_key() {
        // line widths: 1 + columns + 2 per gap.
        assert_eq!(line_width([5, 10, 3]), 1 + 18 + 4);
        assert_eq!(line_width([]), 1);
        let widths = [10, 10, 10, 10, 10];
        let all = [Normal; 5];
        assert_eq!(drop_order(&all), [4, 3, 2, 1]);
        assert_eq!(kept(&widths, &all, 100), [0, 1, 2, 3, 4]);
        assert_eq!(kept(&widths, &all, 40), [0, 1, 2]);
        let mixed = [Low, High, Low, Normal, Normal];
        assert_eq!(drop_order(&mixed), [2, 4, 3, 1]);
        // The key (column 0) stays although it is Low; column 2 goes first, then 4.
        assert_eq!(kept(&widths, &mixed, 50), [0, 1, 3, 4]);
        assert_eq!(kept(&widths, &mixed, 40), [0, 1, 3]);
        assert_eq!(kept(&widths, &mixed, 5), [0]);
        for max in 1..80 {
            let kept = kept(&widths, &mixed, max);
            let fits = line_width(kept.iter().map(|&i| widths[i])) <= max;
            assert!(fits || kept == [0], "{max}: {kept:?}");
        }
    }

    #[test]
    fn a_last_text_column_wraps_before_any_column_goes() {
        let widths = [10, 6, 6, 60];
        let wraps = [None, None, None, Some(12)];
        let all = [Normal; 4];
        // 1 + 82 + 6 = 89 > 80: the text wraps into what is left, 80 - 29 = 51.
        let fitted = fit_columns(&widths, &all, &wraps, 80);
        assert_eq!(
            fitted,
            Fitted {
                kept: vec![0, 1, 2, 3],
                wrap_last: Some(51)
            }
        );
        // Too narrow for even 12 characters of it: it goes (the rightmost, all Normal).
        assert_eq!(fit_columns(&widths, &all, &wraps, 38).kept, [0, 1, 2]);
        // Once a column went, the text wraps in the room that freed.
        let text_high = [Normal, Normal, Normal, High];
        let fitted = fit_columns(&widths, &text_high, &wraps, 33);
        assert_eq!(
            fitted,
            Fitted {
                kept: vec![0, 1, 3],
                wrap_last: Some(12)
            }
        );
    }

    #[test]
    fn wrapped_tables_repeat_the_first_column_and_keep_the_order() {
        let widths = [11, 4, 4, 4, 4, 4, 4, 6];
        assert_eq!(column_groups(&widths, 80), [vec![0, 1, 2, 3, 4, 5, 6, 7]]);
        let groups = column_groups(&widths, 26);
        assert_eq!(
            groups,
            [vec![0, 1, 2], vec![0, 3, 4], vec![0, 5, 6], vec![0, 7]]
        );
        for g in &groups {
            assert!(line_width(g.iter().map(|&i| widths[i])) <= 26);
        }
        // A column too wide for any group still gets one of its own.
        assert_eq!(column_groups(&[10, 50, 3], 30), [vec![0, 1], vec![0, 2]]);
        assert_eq!(column_groups(&[10], 30), [vec![0]]);
    }
}
