//! `memscope history`: saved runs listed, or each host's latest checked against its
//! earlier ones (exit status 1 on a regression); the listing's JSON goes through the one
//! writer.

use std::process::ExitCode;

use super::output::{Format, Outputs, Render, Requested};
use super::{Command, Context, Document};
use crate::history::params::{HistoryArgs, HistoryPlan};

pub struct History;

#[derive(Debug)]
pub struct HistoryCommandPlan {
    pub outputs: Outputs,
    pub history: HistoryPlan,
}

impl Command for History {
    type Args = HistoryArgs;
    type Plan = HistoryCommandPlan;

    fn plan(args: &HistoryArgs, _context: &Context) -> anyhow::Result<HistoryCommandPlan> {
        let outputs = Outputs::resolve(Requested {
            json: args.json.file(),
            ..Requested::default()
        })?;
        let history = args.plan()?;
        Ok(HistoryCommandPlan { outputs, history })
    }

    fn run(plan: HistoryCommandPlan, _context: Context) -> anyhow::Result<(Document, ExitCode)> {
        let listing = crate::history::run(&plan.history)?;
        let code = if listing.regression {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
        let document = Document {
            outputs: plan.outputs,
            text: listing.text,
            body: Box::new(Json(listing.json)),
            text_to_stderr: false,
        };
        Ok((document, code))
    }
}

/// The listing's JSON, rendered already.
struct Json(Vec<u8>);

impl Render for Json {
    fn render(&self, format: Format) -> Vec<u8> {
        match format {
            Format::Json => self.0.clone(),
            Format::Csv | Format::Html | Format::Prometheus => Vec::new(),
        }
    }
}
