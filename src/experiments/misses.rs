//! The miss columns that tables of counted rows end with (`--counters`): headers, cells
//! ("n/s" with its reason as a tooltip for a level not counted), the footnotes that
//! explain them, and their raw CSV form.

use crate::counters::{AccessCounts, MissLevel};
use crate::view::format::distinct;
use crate::view::{Cell, Column, Style, Text};

/// The miss columns, each level in `MissLevel::ALL` order, e.g. "Random L1 miss".
pub fn miss_columns(prefix: &str) -> Vec<Column> {
    MissLevel::ALL
        .iter()
        .map(|l| Column::number(format!("{prefix}{}", l.label())))
        .collect()
}

/// The miss cells of a row: misses per access ("*" when multiplexed), "n/s" with the
/// reason as a tooltip for a level not counted, a dash for a row without counts.
pub fn miss_cells(counts: Option<&AccessCounts>) -> Vec<Cell> {
    MissLevel::ALL
        .iter()
        .map(|&level| {
            let Some(counts) = counts else {
                return Cell::dash();
            };
            let why = counts
                .levels
                .iter()
                .find(|l| l.level == level && l.per_access.is_none())
                .map(|l| l.not_supported.clone().unwrap_or_default());
            match why {
                Some(why) => Cell::titled("n/s", Style::Muted, why),
                None => Cell::new(counts.cell(level)),
            }
        })
        .collect()
}

/// The footnotes of a table with miss columns: what the figures are, "*" when any count
/// was multiplexed, then every distinct reason a level was not counted, once however
/// many rows share it.
pub fn miss_notes<'a>(counts: impl IntoIterator<Item = &'a AccessCounts>) -> Vec<Text> {
    let counts: Vec<&AccessCounts> = counts.into_iter().collect();
    let mut notes = vec![Text::plain(
        "Miss columns: misses per access at each level from the hardware counters, counted \
         in an untimed pass after each row's timed trials.",
    )];
    let multiplexed = counts.iter().any(|c| {
        c.levels
            .iter()
            .any(|l| l.multiplexed && l.per_access.is_some())
    });
    if multiplexed {
        notes.push(Text::plain(
            "* the PMU was shared with other events: the count is scaled by the time the \
             event was enabled over the time it counted (an estimate).",
        ));
    }
    for reason in distinct(counts.iter().flat_map(|c| c.unsupported_notes())) {
        notes.push(Text::plain(format!("n/s — {reason}")));
    }
    notes
}

/// CSV column names of the miss columns: the accesses counted, then misses per access
/// at each level, e.g. `random_l1_miss_per_access`.
pub fn miss_data_header(prefix: &str) -> Vec<String> {
    let mut header = vec![format!("{prefix}counted_accesses")];
    header.extend(MissLevel::ALL.iter().map(|l| {
        format!(
            "{prefix}{}_miss_per_access",
            l.label().trim_end_matches(" miss").to_ascii_lowercase()
        )
    }));
    header
}

/// The CSV cells of the miss columns: misses per access to six decimals (a rare miss is
/// still visible), empty when not counted.
pub fn miss_data(counts: Option<&AccessCounts>) -> Vec<String> {
    let mut cells = vec![counts.map(|c| c.accesses.to_string()).unwrap_or_default()];
    cells.extend(MissLevel::ALL.iter().map(|&level| {
        counts
            .and_then(|c| c.per_access(level))
            .filter(|v| v.is_finite())
            .map(|v| format!("{}", (v * 1e6).round() / 1e6))
            .unwrap_or_default()
    }));
    cells
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_header_matches_the_csv_names() {
        assert_eq!(
            miss_data_header("random_"),
            [
                "random_counted_accesses",
                "random_l1_miss_per_access",
                "random_l2_miss_per_access",
                "random_llc_miss_per_access",
                "random_dtlb_miss_per_access",
            ]
        );
        assert_eq!(miss_cells(None)[0], Cell::dash());
    }
}
