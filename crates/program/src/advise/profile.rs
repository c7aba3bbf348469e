//! The program's own figures, set against the machine's: its run times, peak memory and
//! page faults over the runs alone, its private anonymous memory and the 2 MiB regions
//! that hold its accesses (one recorded run, `pages record`'s signal), the binary's
//! per-thread and static data (`footprint`), and, with a PMU, its counters and the
//! top-down breakdown.

use serde::{Deserialize, Serialize};

use super::RunRecord;
use crate::binary::{self, FootprintPlan};
use crate::pages::record::PagesRecord;
use crate::stats::summary::Summary;
use crate::topology::Machine;

/// How many of the hottest regions the profile names.
pub(crate) const HOT_REGIONS: usize = 8;

/// The program's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProgramProfile {
    /// Over the runs alone, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_s: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_s: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_kib: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minor_faults: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub major_faults: Option<Summary>,
    /// Threads the program ran (the most seen in /proc while recording).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// Private anonymous memory resident at its peak, KiB, over the recorded run's
    /// regions, and how many 2 MiB regions had accesses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anonymous_kib: Option<f64>,
    pub regions_accessed: usize,
    /// The hottest regions of private anonymous memory, and the share of the signal the
    /// top `HOT_REGIONS` hold (percent).
    pub hot_regions: Vec<HotRegion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_share_pct: Option<f64>,
    /// The record's source and signal ("refs: translations loaded"), or why no record.
    pub record: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footprint: Option<FootprintBrief>,
    /// With a PMU: derived figures of the counted runs (IPC, miss rates …).
    #[serde(default)]
    pub counters: Vec<(String, String, f64)>,
    /// With a PMU: the top-down breakdown in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topdown: Option<String>,
    /// Why there are no counters, said once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_counters: Option<String>,
}

/// One hot region.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HotRegion {
    pub start: u64,
    pub mapping: String,
    pub share_pct: f64,
    pub resident_kib: f64,
}

/// The binary's data, in brief.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FootprintBrief {
    pub binary: String,
    /// The TLS block per thread, and the data behind its pointers (per thread).
    pub tls_bytes: u64,
    pub tls_pointee_bytes: u64,
    /// .data + .bss.
    pub static_bytes: u64,
    /// "DWARF", "symbols only" …
    pub detail: String,
}

/// Run figures over the runs alone.
pub(crate) fn add_runs(profile: &mut ProgramProfile, runs: &[&RunRecord]) {
    let of =
        |f: &dyn Fn(&RunRecord) -> f64| Summary::of(&runs.iter().map(|r| f(r)).collect::<Vec<_>>());
    profile.wall_s = of(&|r| r.elapsed_s);
    profile.user_s = of(&|r| r.user_s);
    profile.system_s = of(&|r| r.system_s);
    profile.max_rss_kib = of(&|r| r.max_rss_kib as f64);
    profile.minor_faults = of(&|r| r.minor_faults as f64);
    profile.major_faults = of(&|r| r.major_faults as f64);
}

/// The record's regions in the profile.
pub(crate) fn add_record(profile: &mut ProgramProfile, record: &PagesRecord) {
    let anonymous: Vec<_> = record.regions.iter().filter(|r| r.anonymous).collect();
    profile.anonymous_kib = Some(anonymous.iter().map(|r| r.resident_kb).sum());
    profile.regions_accessed = record.regions.iter().filter(|r| r.value > 0.0).count();
    let total = record.total_value();
    let hot: Vec<_> = anonymous
        .iter()
        .filter(|r| r.value > 0.0)
        .take(HOT_REGIONS)
        .collect();
    profile.hot_regions = hot
        .iter()
        .map(|r| HotRegion {
            start: r.start,
            mapping: r.mapping.clone(),
            share_pct: r.share_pct,
            resident_kib: r.resident_kb,
        })
        .collect();
    profile.hot_share_pct =
        (total > 0.0).then(|| hot.iter().map(|r| r.value).sum::<f64>() / total * 100.0);
    profile.threads = Some(record.processes.len()).filter(|n| *n > 0);
    profile.record = format!(
        "{} source, {} every {:.0} ms",
        record.source.name(),
        record.signal.name,
        record.interval_ms
    );
}

/// The program's binary (its path, found through PATH like the exec) read by
/// `footprint`; `None` for a script or what cannot be read.
pub fn footprint(program: &str, machine: &Machine) -> Option<FootprintBrief> {
    let path = resolve(program)?;
    let plan = FootprintPlan {
        binary: path.to_string_lossy().into_owned(),
        pid: None,
        threads: 1,
        top: 8,
        measured: None,
        debug_root: binary::debuginfo::DEFAULT_DEBUG_ROOT.into(),
    };
    let result = binary::footprint(&plan, machine).ok()?;
    let static_bytes = result
        .sections
        .iter()
        .filter(|(name, _)| name == ".data" || name == ".bss")
        .map(|(_, b)| *b)
        .sum();
    Some(FootprintBrief {
        binary: plan.binary,
        tls_bytes: result.tls.map_or(0, |t| t.bytes),
        tls_pointee_bytes: result.tls_pointee_bytes,
        static_bytes,
        detail: result.detail,
    })
}

/// A program name as the exec finds it: a path as given, else the first executable file
/// of that name on PATH.
fn resolve(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        return Some(program.into());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::child::Termination;

    #[test]
    fn the_runs_alone_give_medians_and_a_program_on_path_is_found() {
        let run = |s: f64| RunRecord {
            block: 1,
            order: 0,
            elapsed_s: s,
            user_s: s / 2.0,
            system_s: 0.01,
            max_rss_kib: 1000,
            minor_faults: 50,
            major_faults: 0,
            termination: Termination::Exited(0),
            huge_kib: 0.0,
            co_runner: None,
            stopped: false,
        };
        let runs = [run(1.0), run(2.0), run(3.0)];
        let mut profile = ProgramProfile::default();
        add_runs(&mut profile, &runs.iter().collect::<Vec<_>>());
        assert_eq!(profile.wall_s.unwrap().median, 2.0);
        assert_eq!(profile.user_s.unwrap().median, 1.0);
        assert_eq!(profile.minor_faults.unwrap().median, 50.0);
        assert!(resolve("sh").is_some_and(|p| p.is_absolute()));
        assert!(resolve("memscope-no-such-program").is_none());
        assert_eq!(resolve("./x"), Some("./x".into()));
    }
}
