//! The generic renderers and the one atomic output: they draw sections of the
//! presentation model (`view`) and serialise documents without knowing any experiment,
//! command or the report model, so they sit below all of them.
//!
//! `terminal` (headings, prose, aligned tables), `csv` (every `Data` table), `html` (one
//! self-contained page, its charts drawn by `svg`), `json` (any serde document,
//! pretty-printed) and `prometheus` (figures with a metric as the text exposition
//! format). `output` owns the files: each is written atomically (temporary file +
//! rename, relative to a directory handle) by its link rules, so a failed run never
//! leaves a half-written file.

pub mod csv;
pub mod html;
pub mod json;
pub mod output;
pub mod prometheus;
pub mod svg;
pub mod terminal;
