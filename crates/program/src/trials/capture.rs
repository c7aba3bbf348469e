//! A run's own output: captured in two anonymous temporary files (no name on disk
//! another user could swap) so that it stays out of memscope's tables, and only its tail
//! read back (bounded): to show why a run failed, and for the figures a sweep reads.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;

use crate::platform::child::SpawnOptions;

/// At most this much of a captured stream is read back: only its tail is shown.
pub(crate) const TAIL_BYTES: u64 = 1 << 20;

/// Lines of the program's standard error shown with a failed run.
pub(crate) const TAIL_LINES: usize = 20;

/// Standard output and error of one run, or nothing when the output passes through.
pub(crate) struct Capture {
    files: Option<(File, File)>,
}

impl Capture {
    /// Two fresh anonymous files when `capture`, else a pass-through.
    pub fn new(capture: bool) -> io::Result<Capture> {
        let files = if capture {
            Some((tempfile::tempfile()?, tempfile::tempfile()?))
        } else {
            None
        };
        Ok(Capture { files })
    }

    /// `options` with the run's standard output and error sent to the files (they stay
    /// open as long as `self`, past the run's end).
    pub fn options(&self, options: SpawnOptions) -> SpawnOptions {
        match &self.files {
            Some((out, err)) => SpawnOptions {
                stdout: Some(out.as_raw_fd()),
                stderr: Some(err.as_raw_fd()),
                ..options
            },
            None => options,
        }
    }

    /// The last `lines` lines the run wrote to its standard error, indented under a
    /// heading; `None` when it was not captured (the user saw it).
    pub(crate) fn stderr_tail(&self, lines: usize) -> Option<String> {
        let (_, err) = self.files.as_ref()?;
        Some(tail("the program's standard error", &read_tail(err), lines))
    }

    /// The end of what the run wrote (standard output, standard error), at most
    /// `TAIL_BYTES` of each; empty when it was not captured.
    pub fn texts(&self) -> (String, String) {
        match &self.files {
            Some((out, err)) => (read_tail(out), read_tail(err)),
            None => (String::new(), String::new()),
        }
    }
}

/// The last `TAIL_BYTES` of a file (from its start when shorter).
pub(crate) fn read_tail(file: &File) -> String {
    let mut file = file;
    let len = file.metadata().map_or(0, |m| m.len());
    let mut bytes = Vec::new();
    let _ = file
        .seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))
        .and_then(|_| file.take(TAIL_BYTES).read_to_end(&mut bytes));
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The last `lines` lines of `output`, indented under a heading.
pub fn tail(what: &str, output: &str, lines: usize) -> String {
    let all: Vec<&str> = output.lines().collect();
    if all.is_empty() {
        return format!("(no {what})");
    }
    let start = all.len().saturating_sub(lines);
    let mut text = if start > 0 {
        format!("{what} (last {lines} of {} lines):", all.len())
    } else {
        format!("{what}:")
    };
    for line in &all[start..] {
        text.push_str("\n    ");
        text.push_str(line);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_tail_of_a_captured_stream_is_bounded_and_indented() {
        let capture = Capture::new(true).unwrap();
        let (_, err) = capture.files.as_ref().unwrap();
        let mut w = err;
        for i in 0..30 {
            writeln!(w, "line {i}").unwrap();
        }
        let text = capture.stderr_tail(3).unwrap();
        assert!(text.starts_with("the program's standard error (last 3 of 30 lines):"));
        assert!(text.ends_with("\n    line 29"), "{text}");
        assert!(!text.contains("line 26"));
        assert!(Capture::new(false).unwrap().stderr_tail(3).is_none());
        assert_eq!(tail("output", "", 3), "(no output)");
    }
}
