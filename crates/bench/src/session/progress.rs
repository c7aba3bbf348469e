//! Progress on stderr while long commands run. On a terminal it is one bar, redrawn in
//! place. When stderr is not a terminal (a log file, CI, a pipe) a bar cannot be drawn,
//! and a command silent for minutes looks hung, so it prints plain lines instead
//! (`memscope: files: sequential reads: 3/5 (16 MiB), 12 s`), but only once the command
//! has run for one period (10 s; `MEMSCOPE_PROGRESS_PERIOD_MS` sets another, for tests):
//! then one line at each stage's start and one whenever a period passed without one, so
//! short commands, and errors found before a long stage, leave stderr as it was.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest a long command stays silent on a stderr that is not a terminal.
const DEFAULT_PERIOD: Duration = Duration::from_secs(10);

/// Overrides `DEFAULT_PERIOD`, in milliseconds (tests use a short one).
const PERIOD_VARIABLE: &str = "MEMSCOPE_PROGRESS_PERIOD_MS";

/// One progress line, reused by each experiment stage in turn.
pub struct Progress {
    bar: Mutex<Option<ProgressBar>>,
    visible: bool,
    /// Plain lines, when stderr is not a terminal; with the thread that prints a line
    /// when a period passed without one.
    lines: Option<(Arc<Lines>, JoinHandle<()>)>,
}

/// The plain-line form's state, shared with its thread.
struct Lines {
    state: Mutex<LineState>,
    wake: Condvar,
    period: Duration,
    started: Instant,
}

#[derive(Default)]
struct LineState {
    /// The stage running, None between stages.
    stage: Option<String>,
    steps: u64,
    done: u64,
    message: String,
    /// When the last line was printed.
    last: Option<Instant>,
    stop: bool,
}

impl Lines {
    fn state(&self) -> MutexGuard<'_, LineState> {
        // A panic elsewhere while holding the lock leaves a state still fit to print.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// When the next line is due: a period after the start, and after the last line.
    fn due(&self, state: &LineState) -> Instant {
        let first = self.started + self.period;
        state
            .last
            .map_or(first, |last| first.max(last + self.period))
    }

    /// Prints the stage's line now (if a stage runs and the quiet start is over).
    fn print(&self, state: &mut LineState, now: Instant) {
        let Some(stage) = &state.stage else { return };
        if now < self.started + self.period {
            return;
        }
        let line = line_text(
            stage,
            state.done,
            state.steps,
            &state.message,
            now - self.started,
        );
        // A closed or full stderr loses the line, nothing else.
        let _ = writeln!(std::io::stderr().lock(), "{line}");
        state.last = Some(now);
    }

    /// The thread: a line whenever one is due and a stage runs, until told to stop.
    fn watch(&self) {
        let mut state = self.state();
        while !state.stop {
            let now = Instant::now();
            let due = self.due(&state);
            if now >= due {
                self.print(&mut state, now);
                if state.last != Some(now) {
                    // No stage to report: look again a period later.
                    state.last = Some(now);
                }
                continue;
            }
            state = match self.wake.wait_timeout(state, due - now) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }
}

/// `memscope: STAGE: DONE/STEPS (MESSAGE), ELAPSED s`; the count only for stages of more
/// than one step, the message only when set.
fn line_text(stage: &str, done: u64, steps: u64, message: &str, elapsed: Duration) -> String {
    let mut line = format!("memscope: {stage}");
    if steps > 1 {
        line.push_str(&format!(": {done}/{steps}"));
    }
    if !message.is_empty() {
        line.push_str(&format!(" ({message})"));
    }
    line.push_str(&format!(", {} s", elapsed.as_secs()));
    line
}

/// The period from `MEMSCOPE_PROGRESS_PERIOD_MS`, else 10 s.
fn period() -> Duration {
    std::env::var(PERIOD_VARIABLE)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .map_or(DEFAULT_PERIOD, Duration::from_millis)
}

impl Progress {
    /// A bar when stderr is a terminal, plain lines otherwise.
    pub fn for_stderr() -> Progress {
        if std::io::stderr().is_terminal() {
            Progress {
                bar: Mutex::new(None),
                visible: true,
                lines: None,
            }
        } else {
            Progress::with_lines()
        }
    }

    /// Plain lines when stderr is not a terminal, nothing on a terminal: for a command
    /// whose child program writes to the same terminal, where a bar would be torn.
    pub fn lines_when_not_terminal() -> Progress {
        if std::io::stderr().is_terminal() {
            Progress::hidden()
        } else {
            Progress::with_lines()
        }
    }

    pub fn hidden() -> Progress {
        Progress {
            bar: Mutex::new(None),
            visible: false,
            lines: None,
        }
    }

    fn with_lines() -> Progress {
        let lines = Arc::new(Lines {
            state: Mutex::new(LineState::default()),
            wake: Condvar::new(),
            period: period(),
            started: Instant::now(),
        });
        let watched = Arc::clone(&lines);
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || watched.watch());
        Progress {
            bar: Mutex::new(None),
            visible: false,
            // Without the thread (none could be made) there are no lines; the run goes on.
            lines: thread.ok().map(|t| (lines, t)),
        }
    }

    fn bar(&self) -> MutexGuard<'_, Option<ProgressBar>> {
        self.bar.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a stage of `steps` steps.
    pub fn start(&self, stage: &str, steps: u64) {
        if let Some((lines, _)) = &self.lines {
            let mut state = lines.state();
            state.stage = Some(stage.to_string());
            (state.steps, state.done) = (steps, 0);
            state.message.clear();
            lines.print(&mut state, Instant::now());
            lines.wake.notify_one();
            return;
        }
        let bar = ProgressBar::with_draw_target(
            Some(steps),
            if self.visible {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        bar.set_style(
            ProgressStyle::with_template("{prefix:>28} [{bar:30}] {pos}/{len} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(stage.to_string());
        if let Some(old) = self.bar().replace(bar) {
            old.finish_and_clear();
        }
    }

    pub fn message(&self, text: &str) {
        if let Some((lines, _)) = &self.lines {
            lines.state().message = text.to_string();
        } else if let Some(bar) = self.bar().as_ref() {
            bar.set_message(text.to_string());
        }
    }

    pub fn advance(&self) {
        if let Some((lines, _)) = &self.lines {
            lines.state().done += 1;
        } else if let Some(bar) = self.bar().as_ref() {
            bar.inc(1);
        }
    }

    pub fn finish(&self) {
        if let Some((lines, _)) = &self.lines {
            lines.state().stage = None;
        } else if let Some(bar) = self.bar().take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some((lines, thread)) = self.lines.take() {
            lines.state().stop = true;
            lines.wake.notify_one();
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_the_stage_its_count_and_the_time() {
        let d = Duration::from_millis(12_400);
        assert_eq!(
            line_text("files: sequential reads", 3, 5, "16 MiB", d),
            "memscope: files: sequential reads: 3/5 (16 MiB), 12 s"
        );
        assert_eq!(
            line_text("pages apply: recording", 0, 1, "", d),
            "memscope: pages apply: recording, 12 s"
        );
    }

    #[test]
    fn lines_are_due_a_period_after_the_start_and_after_the_last() {
        let lines = Lines {
            state: Mutex::new(LineState::default()),
            wake: Condvar::new(),
            period: Duration::from_secs(10),
            started: Instant::now(),
        };
        let mut state = lines.state();
        assert_eq!(lines.due(&state), lines.started + lines.period);
        // Within the quiet start nothing is printed, even at a stage's start.
        state.stage = Some("x".into());
        lines.print(&mut state, lines.started + Duration::from_secs(1));
        assert_eq!(state.last, None);
        let later = lines.started + Duration::from_secs(25);
        lines.print(&mut state, later);
        assert_eq!(state.last, Some(later));
        assert_eq!(lines.due(&state), later + lines.period);
    }

    #[test]
    fn dropping_stops_the_thread() {
        let progress = Progress::with_lines();
        progress.start("a stage", 2);
        progress.advance();
        progress.finish();
        drop(progress);
    }
}
