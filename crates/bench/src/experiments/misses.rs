//! The miss columns that tables of counted rows end with (`--counters`): headers, cells
//! ("n/s" with its reason as a tooltip for a level not counted), the footnotes that
//! explain them, and their raw CSV form.

use crate::counters::{AccessCounts, MissLevel};
use crate::view::format::distinct;
use crate::view::{Cell, Column, Style, Text};

/// The miss columns of a table whose rows may carry counts: shown only when some row was
/// counted, each name after a prefix ("Random " for a second curve; its CSV form
/// "random_").
pub(crate) struct Misses<'a> {
    prefix: &'static str,
    /// The counts of the rows that have them.
    counts: Vec<&'a AccessCounts>,
}

impl<'a> Misses<'a> {
    pub fn of(
        prefix: &'static str,
        counts: impl IntoIterator<Item = Option<&'a AccessCounts>>,
    ) -> Misses<'a> {
        let counts = counts.into_iter().flatten().collect();
        Misses { prefix, counts }
    }

    pub fn counted(&self) -> bool {
        !self.counts.is_empty()
    }

    pub fn columns(&self) -> Vec<Column> {
        self.when_counted(|| miss_columns(self.prefix))
    }

    pub fn cells(&self, counts: Option<&AccessCounts>) -> Vec<Cell> {
        self.when_counted(|| miss_cells(counts))
    }

    /// `miss_notes` of every row counted.
    pub fn notes(&self) -> Vec<Text> {
        self.when_counted(|| miss_notes(self.counts.iter().copied()))
    }

    /// CSV column names: the accesses counted, then misses per access at each level, e.g.
    /// `random_l1_miss_per_access`.
    pub(crate) fn data_header(&self) -> Vec<String> {
        let prefix = self.prefix.to_ascii_lowercase().replace(' ', "_");
        let levels = MissLevel::ALL.iter().map(|l| {
            let name = l.label().trim_end_matches(" miss").to_ascii_lowercase();
            format!("{prefix}{name}_miss_per_access")
        });
        let header = std::iter::once(format!("{prefix}counted_accesses")).chain(levels);
        self.when_counted(|| header.collect())
    }

    /// The CSV cells: misses per access to six decimals (a rare miss is still visible),
    /// empty when not counted.
    pub fn data(&self, counts: Option<&AccessCounts>) -> Vec<String> {
        let accesses = counts.map(|c| c.accesses.to_string()).unwrap_or_default();
        let levels = MissLevel::ALL.iter().map(|&level| {
            counts
                .and_then(|c| c.per_access(level))
                .filter(|v| v.is_finite())
                .map(|v| format!("{}", (v * 1e6).round() / 1e6))
                .unwrap_or_default()
        });
        self.when_counted(|| std::iter::once(accesses).chain(levels).collect())
    }

    fn when_counted<T>(&self, items: impl FnOnce() -> Vec<T>) -> Vec<T> {
        self.counted().then(items).unwrap_or_default()
    }
}

/// The miss columns, each level in `MissLevel::ALL` order, e.g. "Random L1 miss".
pub(crate) fn miss_columns(prefix: &str) -> Vec<Column> {
    MissLevel::ALL
        .iter()
        .map(|l| Column::number(format!("{prefix}{}", l.label())))
        .collect()
}

/// The miss cells of a row: misses per access ("*" when multiplexed), "n/s" with the
/// reason as a tooltip for a level not counted, a dash for a row without counts.
pub(crate) fn miss_cells(counts: Option<&AccessCounts>) -> Vec<Cell> {
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
pub(crate) fn miss_notes<'a>(counts: impl IntoIterator<Item = &'a AccessCounts>) -> Vec<Text> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::samples::uncounted_access;

    #[test]
    fn data_header_matches_the_csv_names() {
        let random = uncounted_access();
        assert_eq!(
            Misses::of("Random ", [None, Some(&random)]).data_header(),
            [
                "random_counted_accesses",
                "random_l1_miss_per_access",
                "random_l2_miss_per_access",
                "random_llc_miss_per_access",
                "random_dtlb_miss_per_access",
            ]
        );
        assert_eq!(miss_cells(None)[0], Cell::dash());
        assert!(Misses::of("", [None]).data_header().is_empty());
    }
}
