//! What a counted run's reader should know beside its counts, as kinds with their
//! numbers: `stat`'s and `sweep`'s (worded in `text`, the one place for those words).

use serde::{Deserialize, Serialize};

use crate::platform::child::Termination;

/// One note on counted runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CountingNote {
    /// An event the kernel refused, with the full reason (its table row has a short form).
    NotSupported { reason: String },
    /// Counts were multiplexed (marked *).
    Multiplexed,
    /// Counts exclude the kernel (marked (u)).
    UserOnly,
    /// Reading the counters failed in run `run` (from 1).
    ReadFailed { run: usize, error: String },
    /// Run `run` of `planned` ended with `termination`; the rest were not made.
    StoppedEarly {
        run: usize,
        planned: usize,
        termination: Termination,
    },
    /// A sentence: the notes of reports written before the notes had kinds.
    #[serde(untagged)]
    Said(String),
}

impl CountingNote {
    /// The note in words, as `stat`'s and `sweep`'s views show it.
    pub fn text(&self) -> String {
        match self {
            CountingNote::NotSupported { reason } => format!("not supported: {reason}"),
            CountingNote::Multiplexed => {
                "counts marked * were multiplexed: the PMU had fewer counters than events, so \
                 each was counted part of the time and scaled by time enabled / time running"
                    .to_string()
            }
            CountingNote::UserOnly => {
                "counts marked (u) exclude the kernel: counting kernel mode is not permitted at \
                 this perf_event_paranoid level"
                    .to_string()
            }
            CountingNote::ReadFailed { run, error } => {
                format!("reading the counters failed in run {run}: {error}")
            }
            CountingNote::StoppedEarly {
                run,
                planned,
                termination,
            } => format!(
                "run {run} of {planned} ended with {termination}; the remaining runs were not \
                 made"
            ),
            CountingNote::Said(text) => text.clone(),
        }
    }
}
