//! `memscope pages`: where a program's TLB misses and hot pages are (`record`), and huge
//! pages applied to exactly those regions and re-measured (`apply`).

pub mod access;
pub mod apply;
pub mod damon;
pub mod figures;
pub mod notes;
pub mod params;
pub mod pmu;
pub mod preload;
pub mod record;
pub mod refs;
pub mod regions;
pub mod sources;
pub mod view;

use serde::{Deserialize, Serialize};

/// What `memscope pages` runs.
#[derive(Debug, Clone)]
pub enum PagesPlan {
    Record(record::RecordPlan),
    Apply(Box<apply::ApplyPlan>),
}

/// The result of `memscope pages`, in the report's `pages` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PagesResult {
    Record(Box<record::PagesRecord>),
    Apply(Box<apply::PagesApply>),
}

impl PagesResult {
    /// memscope's exit status: the command's (of the failing run, for `apply`).
    pub fn exit_status(&self) -> u8 {
        match self {
            PagesResult::Record(r) => r.termination.shell_status().clamp(0, 255) as u8,
            PagesResult::Apply(a) => a.exit_status(),
        }
    }
}

/// Runs the plan.
pub fn run(plan: &PagesPlan) -> Result<PagesResult, record::RecordError> {
    Ok(match plan {
        PagesPlan::Record(p) => PagesResult::Record(Box::new(record::record(
            p,
            &preload::PreloadMode::default(),
        )?)),
        PagesPlan::Apply(p) => PagesResult::Apply(Box::new(apply::apply(p)?)),
    })
}
