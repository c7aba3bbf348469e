//! A sweep's notes in words: what each kind of `SweepNote` tells the reader.

use crate::sweep::analysis::SweepNote;
use crate::sweep::Stop;

impl SweepNote {
    /// The note as the terminal and HTML reports say it.
    pub fn text(&self) -> String {
        match self {
            SweepNote::WideIntervals {
                benchmark,
                measure,
                widest_pct,
                effect_pct,
            } => format!(
                "benchmark '{benchmark}': the 95% intervals of the {measure} medians are up to \
                 ±{widest_pct:.1}% wide, more than the {effect_pct:.1}% effect looked for \
                 (--effect): a change of that size cannot be resolved from these runs; run more \
                 blocks (--runs) or quiet the machine"
            ),
            SweepNote::TooFewRuns {
                benchmark,
                min_runs,
            } => format!(
                "benchmark '{benchmark}': with fewer than {min_runs} successful runs a side, no \
                 change can reach p < 0.05: these are shown as 'too few runs', not as '~'"
            ),
            SweepNote::ManyComparisons {
                comparisons,
                by_chance,
            } => format!(
                "{comparisons} comparisons against the baseline at p < 0.05: about \
                 {by_chance:.1} of them would be called significant by chance alone if nothing \
                 changed; trust a change that fits a trend across neighbouring variants more \
                 than an isolated one"
            ),
            SweepNote::FailedRuns { count } => format!(
                "{count} run(s) failed after their first run succeeded; they are listed in the \
                 runs and never enter a median"
            ),
            SweepNote::Unresolved {
                blocks,
                stop,
                measure,
                within_pct,
            } => format!(
                "the adaptive schedule stopped at {blocks} blocks ({}) before every {measure} \
                 median was known to ±{within_pct:.1}%",
                match stop {
                    Stop::TimeLimit => "time limit",
                    _ => "the most blocks it runs",
                }
            ),
            SweepNote::Interrupted { blocks } => format!(
                "interrupted (Ctrl-C): the {blocks} block(s) completed before it are reported"
            ),
            SweepNote::MetricMissing { metric, benchmark } => format!(
                "metric '{metric}' was not found in the output of benchmark '{benchmark}': it \
                 has no value there"
            ),
            SweepNote::Counting { note } => note.text(),
            SweepNote::Said(text) => text.clone(),
        }
    }
}
