//! memscope's entry point: parse the command line, run it, map errors to exit codes
//! (2 for the user's errors, 126/127 for a command `stat` cannot start, as a shell does,
//! 1 for other failures), and treat a closed stdout as success.

use std::process::ExitCode;

use clap::Parser;
use memscope::error::{UsageError, USAGE_EXIT_CODE};
use memscope::platform::child::SpawnError;

fn main() -> ExitCode {
    let cli = match memscope::commands::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return clap_error(error),
    };
    let result = memscope::commands::execute(&cli);
    // A signal being handled decides the exit status (128 + the signal), not this thread.
    memscope::platform::cleanup::wait_if_exiting();
    match result {
        Ok(code) => code,
        Err(error) => {
            if is_broken_pipe(&error) {
                return ExitCode::SUCCESS;
            }
            eprintln!("memscope: error: {error:#}");
            if let Some(spawn) = error.downcast_ref::<SpawnError>() {
                ExitCode::from(spawn.exit_code())
            } else if error.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(USAGE_EXIT_CODE)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// A value clap refused (an enumerated flag's, or one its value parser refused) is one
/// line naming the value, the flag and what it takes, as memscope's own usage errors are,
/// exit 2; help, version and clap's other errors (a missing or unknown argument, with the
/// usage) as clap prints them.
fn clap_error(error: clap::Error) -> ExitCode {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let text = |kind| match error.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(list)) => Some(list.join(", ")),
        _ => None,
    };
    let expected = match error.kind() {
        // An empty value of an enumerated flag: clap's own message says a value is needed.
        ErrorKind::InvalidValue
            if text(ContextKind::InvalidValue).is_some_and(|v| v.is_empty()) =>
        {
            None
        }
        ErrorKind::InvalidValue => text(ContextKind::ValidValue)
            .filter(|v| !v.is_empty())
            .map(|valid| format!("one of {valid}")),
        ErrorKind::ValueValidation => std::error::Error::source(&error).map(|e| e.to_string()),
        _ => None,
    };
    let (Some(flag), Some(value), Some(expected)) = (
        text(ContextKind::InvalidArg),
        text(ContextKind::InvalidValue),
        expected,
    ) else {
        error.exit()
    };
    eprintln!("memscope: error: invalid value '{value}' for {flag}: expected {expected}");
    ExitCode::from(USAGE_EXIT_CODE)
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
