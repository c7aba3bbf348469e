//! Typed errors for user input, topology and platform limits.
//!
//! A `UsageError` is the user's to fix: `main` prints it on one line and exits with
//! status 2 (like clap's own argument errors). Each message quotes the bad value and says
//! what was expected.

use crate::topology::memory::AvailableMemory;
use crate::units::{Bytes, SizeParseError};

#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error(transparent)]
    Size(#[from] SizeParseError),

    #[error("invalid value '{value}' for {flag}: expected {expected}")]
    InvalidValue {
        flag: &'static str,
        value: String,
        expected: String,
    },

    #[error(
        "CPU {cpu} does not exist or is not available to this process: expected one of {available}"
    )]
    NoSuchCpu { cpu: String, available: String },

    /// `available` says which limit refused: MemAvailable or a cgroup's.
    #[error(
        "{flag} {requested} is larger than the memory available now ({available}): expected \
         at most {allowed}, nine tenths of it"
    )]
    SizeExceedsMemory {
        flag: &'static str,
        requested: Bytes,
        allowed: Bytes,
        available: AvailableMemory,
    },

    /// A buffer memscope itself would map (the backstop for every command that allocates).
    #[error(
        "memscope would map a buffer of {requested}, more than nine tenths of the memory \
         available now ({available}): give a smaller size, or more memory"
    )]
    BufferExceedsMemory {
        requested: Bytes,
        available: AvailableMemory,
    },

    #[error("{flag} {requested} is too small: expected at least {minimum}")]
    SizeTooSmall {
        flag: &'static str,
        requested: Bytes,
        minimum: Bytes,
    },

    #[error("cannot write output file '{path}': {reason}")]
    OutputPath { path: String, reason: String },

    /// A history database that cannot be used as one (refused link, not SQLite, not
    /// memscope's, missing when only read).
    #[error("cannot use the history database '{path}': {reason}")]
    HistoryDatabase { path: String, reason: String },

    #[error("page size '{policy}' cannot be had: {reason}. {advice}")]
    PagesUnavailable {
        policy: String,
        reason: String,
        advice: String,
    },

    #[error("not supported here: {0}")]
    Unsupported(String),

    /// The run cannot go on for a reason the user must fix that is not one flag's value:
    /// a build or benchmark that fails (the message names the command, the variant and
    /// its output), a test directory without the space or the rights it needs.
    #[error("{0}")]
    CannotProceed(String),
}

/// Environment variable that makes a run fail on purpose at a given point, so tests can
/// check that memscope cleans up after a failure ("after-reservation", "files-written").
pub const SIMULATED_FAILURE: &str = "MEMSCOPE_SIMULATE_FAILURE";

/// Exit status for errors the user can fix (bad flags, sizes, CPUs, paths).
pub const USAGE_EXIT_CODE: u8 = 2;
