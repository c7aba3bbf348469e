//! The one writer: every command's document goes through `write`, which renders and
//! writes each requested output (atomically, by `render::output`'s rules), saves a
//! measuring run in the history when asked, and prints the tables: to stdout, or to
//! stderr when a machine-readable output takes stdout (or the command's own output does,
//! as for `stat` and `pages`). `Outputs` are the files a command was asked for, checked
//! before anything runs.

use anyhow::Context as _;

use crate::error::UsageError;
use crate::flags::{CsvArg, JsonArg, OutputArgs, SaveArgs};
use crate::render::output::Target;
use crate::report::Report;

/// The files a command writes, each checked writable at planning time.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    pub json: Option<Target>,
    pub csv: Option<Target>,
    pub html: Option<Target>,
    /// The headline figures in Prometheus' text format.
    pub prometheus: Option<Target>,
    /// Record the run in the history database.
    pub save: bool,
}

/// The output flags a command was given, as typed: each format's file, and a measuring
/// command's `--save` and `--prometheus`. `Outputs::resolve` checks them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Requested<'a> {
    pub json: Option<&'a str>,
    pub csv: Option<&'a str>,
    pub html: Option<&'a str>,
    /// `--save` and `--prometheus`, for a command that measures or runs a program.
    pub save: Option<&'a SaveArgs>,
}

impl<'a> Requested<'a> {
    /// A measuring command's `--json`, `--csv`, `--save` and `--prometheus` (no HTML).
    pub fn measuring(json: &'a JsonArg, csv: &'a CsvArg, save: &'a SaveArgs) -> Requested<'a> {
        Requested {
            json: json.file(),
            csv: csv.file(),
            html: None,
            save: Some(save),
        }
    }

    /// A program command's `--json`, `--csv` and `--html`.
    pub fn program(args: &'a OutputArgs) -> Requested<'a> {
        Requested {
            json: args.json.file(),
            csv: args.csv.file(),
            html: args.html.file(),
            save: None,
        }
    }

    /// With `--save` and `--prometheus`.
    pub fn saving(self, save: &'a SaveArgs) -> Requested<'a> {
        Requested {
            save: Some(save),
            ..self
        }
    }
}

impl Outputs {
    /// The one place output flags become outputs: each file checked in turn (JSON, CSV,
    /// HTML), then whether the history can take the run (`--save`, or MEMSCOPE_SAVE),
    /// then the Prometheus file, which may not share stdout with another output.
    pub fn resolve(requested: Requested) -> Result<Outputs, UsageError> {
        let target = |file: Option<&str>| file.map(Target::parse).transpose();
        let mut outputs = Outputs {
            json: target(requested.json)?,
            csv: target(requested.csv)?,
            html: target(requested.html)?,
            ..Outputs::default()
        };
        let Some(save) = requested.save else {
            return Ok(outputs);
        };
        outputs.save = save.save || crate::history::save_by_default();
        // A database that cannot take the run fails now, not after the measuring.
        if outputs.save {
            crate::history::check_saving()?;
        }
        let prometheus = target(save.prometheus.file())?;
        // Checked before the Prometheus output joins the others, so it does not count
        // itself (`--prometheus -` alone goes to stdout, the tables to stderr).
        if prometheus.as_ref().is_some_and(Target::is_stdout) && outputs.uses_stdout() {
            return Err(UsageError::InvalidValue {
                flag: "--prometheus",
                value: "-".into(),
                expected: "a file, since another output already goes to stdout".into(),
            });
        }
        outputs.prometheus = prometheus;
        Ok(outputs)
    }

    /// True when a machine-readable output goes to stdout, so tables must go to stderr.
    pub fn uses_stdout(&self) -> bool {
        [&self.json, &self.csv, &self.html, &self.prometheus]
            .iter()
            .any(|t| t.as_ref().is_some_and(Target::is_stdout))
    }
}

/// An output format a document renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
    Html,
    Prometheus,
}

/// What renders a document's bytes. Only the formats a command has flags for are asked
/// for; the others may render nothing.
pub trait Render {
    fn render(&self, format: Format) -> Vec<u8>;

    /// The report `--save` records, for a measuring command.
    fn saved(&self) -> Option<&Report> {
        None
    }
}

/// What a command gives the writer: its outputs, its tables as text, and its renderer.
pub struct Document {
    pub outputs: Outputs,
    pub text: String,
    pub body: Box<dyn Render>,
    /// The tables go to stderr whatever the outputs (stdout is the user's command's).
    pub text_to_stderr: bool,
}

impl Document {
    /// A document with nothing to write: only `text` to print.
    pub fn text(text: String) -> Document {
        Document {
            outputs: Outputs::default(),
            text,
            body: Box::new(Nothing),
            text_to_stderr: false,
        }
    }
}

/// The renderer of a document without files.
struct Nothing;

impl Render for Nothing {
    fn render(&self, _format: Format) -> Vec<u8> {
        Vec::new()
    }
}

/// Writes every requested output in order (JSON, CSV, HTML, Prometheus), then saves the
/// run when asked, then prints the text with the files written and the run saved.
pub fn write(document: Document) -> anyhow::Result<()> {
    let Document {
        outputs,
        mut text,
        body,
        text_to_stderr,
    } = document;
    let renderers: [(_, &dyn Fn() -> Vec<u8>); 4] = [
        (&outputs.json, &|| body.render(Format::Json)),
        (&outputs.csv, &|| body.render(Format::Csv)),
        (&outputs.html, &|| body.render(Format::Html)),
        (&outputs.prometheus, &|| body.render(Format::Prometheus)),
    ];
    let files = crate::render::output::write_requested(&renderers)?;
    if !files.is_empty() {
        text.push_str(&format!("\n Wrote {}\n", files.join(", ")));
    }
    if let Some(report) = body.saved().filter(|_| outputs.save) {
        let (db, id) = crate::history::save(report).context("saving the run in the history")?;
        text.push_str(&format!(" Saved as run {id} in {}\n", db.display()));
    }
    if outputs.uses_stdout() || text_to_stderr {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    Ok(())
}

/// A measuring or program command's report and its results' sections, built once and
/// drawn by every output.
struct ReportBody {
    report: Report,
    results: Vec<crate::view::Section>,
}

impl Render for ReportBody {
    fn render(&self, format: Format) -> Vec<u8> {
        use crate::render::json;
        use crate::report::document;
        match format {
            Format::Json => json::to_bytes(&self.report),
            Format::Csv => document::csv(&self.report, &self.results),
            Format::Html => document::html(&self.report, &self.results),
            Format::Prometheus => document::prometheus(&self.report),
        }
    }

    fn saved(&self) -> Option<&Report> {
        Some(&self.report)
    }
}

/// How a report is shown on the terminal.
pub struct Shown {
    pub machine: crate::report::document::MachineView,
    /// Every sweep point, not only the levels.
    pub points: bool,
    /// The tables go to stderr (stdout is the user's command's).
    pub to_stderr: bool,
}

/// The document of a command that made a `Report`: stamped with the command's name, when
/// it started and how long it took.
pub fn report_document(
    mut report: Report,
    command: &str,
    outputs: Outputs,
    shown: Shown,
    context: &super::Context,
) -> Document {
    report.settings.command = command.to_string();
    report.run = crate::report::RunStamp {
        elapsed_s: context.started.elapsed().as_secs_f64(),
        ..context.stamp.clone()
    };
    let results = crate::report::document::result_sections(&report);
    let width = crate::render::terminal::width_of(if outputs.uses_stdout() || shown.to_stderr {
        crate::render::terminal::Stream::Stderr
    } else {
        crate::render::terminal::Stream::Stdout
    });
    let text =
        crate::report::document::terminal(&report, &results, shown.machine, shown.points, width);
    Document {
        outputs,
        text,
        body: Box::new(ReportBody { report, results }),
        text_to_stderr: shown.to_stderr,
    }
}
