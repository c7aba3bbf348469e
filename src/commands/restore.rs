//! `memscope restore`: undoes what killed memscopes left changed, from the journal
//! (`crate::restore`), and says what it did on stdout.

use std::process::ExitCode;

use super::{Command, Context, Document};

pub struct Restore;

/// `restore` has no flags.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(after_help = crate::examples::RESTORE)]
pub struct RestoreArgs {}

impl Command for Restore {
    type Args = RestoreArgs;
    type Plan = ();

    fn plan(_args: &RestoreArgs, _context: &Context) -> anyhow::Result<()> {
        Ok(())
    }

    fn run(_plan: (), _context: Context) -> anyhow::Result<(Document, ExitCode)> {
        let (text, code) = crate::restore::command();
        Ok((Document::text(text), code))
    }
}
