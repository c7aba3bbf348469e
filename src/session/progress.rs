//! Progress on stderr while experiments run, hidden when stderr is not a terminal (so
//! pipes, CI logs and tests see only results).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;

/// One progress line, reused by each experiment stage in turn.
pub struct Progress {
    bar: Mutex<Option<ProgressBar>>,
    visible: bool,
}

impl Progress {
    /// Visible only when stderr is a terminal.
    pub fn for_stderr() -> Progress {
        Progress {
            bar: Mutex::new(None),
            visible: std::io::stderr().is_terminal(),
        }
    }

    pub fn hidden() -> Progress {
        Progress {
            bar: Mutex::new(None),
            visible: false,
        }
    }

    /// Starts a stage of `steps` steps.
    pub fn start(&self, stage: &str, steps: u64) {
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
        if let Some(old) = self.bar.lock().expect("progress lock").replace(bar) {
            old.finish_and_clear();
        }
    }

    pub fn message(&self, text: &str) {
        if let Some(bar) = self.bar.lock().expect("progress lock").as_ref() {
            bar.set_message(text.to_string());
        }
    }

    pub fn advance(&self) {
        if let Some(bar) = self.bar.lock().expect("progress lock").as_ref() {
            bar.inc(1);
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = self.bar.lock().expect("progress lock").take() {
            bar.finish_and_clear();
        }
    }
}
