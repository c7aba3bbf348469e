//! The comparable figures of `memscope advise` (for compare and history, e.g. before and
//! after a code change): the program's time alone, and per arm of the screening its time
//! against the reference arm's (a ratio, with the spread its 95% interval implies). They describe the
//! program, not the machine, so none is exported.

use super::AdviseResult;
use crate::view::figure::{Better, Figure, Figures};

impl Figures for AdviseResult {
    fn figures(&self) -> Vec<Figure> {
        let id = |text: &str| {
            text.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_ascii_lowercase()
                    } else {
                        '_'
                    }
                })
                .collect::<String>()
        };
        let mut figures = Vec::new();
        if let Some(wall) = self.profile.wall_s {
            figures.push(
                Figure::new(
                    "advise",
                    "alone.wall_s",
                    "time alone",
                    "s",
                    wall.median,
                    Better::Lower,
                )
                .spread(wall.spread_pct()),
            );
        }
        for a in self
            .arms
            .iter()
            .filter(|a| a.reference != a.kind && a.stage == 1)
        {
            let Some(ratio) = a.ratio else {
                continue;
            };
            // Half the interval's width / 1.96, relative to the ratio.
            let spread = (ratio.high - ratio.low) / 2.0 / 1.96 / ratio.ratio * 100.0;
            figures.push(
                Figure::new(
                    "advise",
                    format!("{}.time_ratio", id(&a.label)),
                    format!(
                        "{}: time / {}",
                        a.label,
                        super::arms::ArmSpec::new(a.reference).label
                    ),
                    "×",
                    ratio.ratio,
                    Better::Neither,
                )
                .spread(spread),
            );
        }
        figures.retain(|f| f.value.is_finite());
        figures
    }
}
