//! What `pages apply`'s reader should know beside its table, as kinds with their numbers
//! (worded in `pages::view::apply_notes`).

use serde::{Deserialize, Serialize};

use crate::platform::child::Termination;

/// One note of `pages apply`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ApplyNote {
    /// `--from` named a record of another command.
    ForeignRecord { path: String, command: Vec<String> },
    /// Fewer regions of private anonymous memory were accessed than `--top` asked for.
    FewerRegions { found: usize, top: usize },
    /// The regions hold less than `--top P%` of the signal: all of them are chosen.
    ShareBelowTop {
        share_pct: f64,
        signal: String,
        top_pct: f64,
        regions: usize,
    },
    /// The chosen regions hold little of the signal.
    FlatProfile {
        chosen: usize,
        share_pct: f64,
        signal: String,
    },
    /// Too few blocks for the signed-rank test to call a change.
    FewBlocks { blocks: usize, needed: usize },
    /// The first run (of a measured block) that ended with another status than the
    /// accepted one, with the tail of its standard error.
    FailedRun {
        arm: String,
        block: usize,
        termination: Termination,
        accepted: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stderr_tail: Option<String>,
    },
    /// Ctrl-C during the warm-up.
    WarmUpInterrupted,
    /// Ctrl-C after `blocks` of `planned` blocks.
    Interrupted { blocks: usize, planned: usize },
    /// The accepted status is not 0: the program's own (`every` run) or the first run's.
    NormalStatus { code: i32, every: bool },
    /// An arm spent clearly more time in the kernel than the 4 KiB runs.
    KernelTime {
        arm: String,
        system_s: f64,
        baseline_system_s: f64,
    },
    /// The recorded run with huge pages under the chosen regions failed.
    RecordAfterFailed { error: String },
    /// The all-huge arm obtained no huge page (`hugetlb`: it asked for hugetlbfs pages).
    HugeMissing { hugetlb: bool },
    /// A sentence: the notes of reports written before the notes had kinds.
    #[serde(untagged)]
    Said(String),
}
