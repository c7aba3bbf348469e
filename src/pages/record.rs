//! `memscope pages record`: runs a command with address-space randomization off and
//! memscope's preload library in it, samples its accesses with the best source this
//! machine has, and bins them into 2 MiB regions per process.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::preload::{Preload, PreloadMode};
use super::regions::{Region, RegionMap, REGION_BYTES};
use super::sources::{self, Signal, SourceChoice, SourceKind};
use crate::platform::child::{self, SpawnError, SpawnOptions, Termination};
use crate::topology::process as procfs;

/// What `pages record` runs.
#[derive(Debug, Clone)]
pub struct RecordPlan {
    pub top: usize,
    pub source: SourceChoice,
    pub interval: Duration,
    pub command: Vec<OsString>,
}

/// The regions behind the heat-over-time view: the top regions in address order, and
/// their value in each interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    pub interval_ms: f64,
    /// (pid, region start) per row.
    pub regions: Vec<(u32, u64)>,
    pub values: Vec<Vec<f64>>,
}

/// The result of one recorded run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PagesRecord {
    pub command: Vec<String>,
    /// "pmu", "damon" or "refs".
    pub source: SourceKind,
    pub source_description: String,
    /// Why the sources ahead of the one used were not used (with `--source auto`).
    #[serde(default)]
    pub sources_not_used: Vec<String>,
    pub signal: Signal,
    pub region_bytes: u64,
    pub top: usize,
    pub interval_ms: f64,
    pub intervals: usize,
    pub elapsed_s: f64,
    pub user_s: f64,
    pub system_s: f64,
    pub termination: Termination,
    /// Processes sampled: (pid, command name).
    pub processes: Vec<(u32, String)>,
    /// Every region seen, ranked (highest value first).
    pub regions: Vec<Region>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// Things the reader must know about this record (resolution, lost samples …).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl PagesRecord {
    /// The top `n` regions that huge pages can back (private anonymous memory with a
    /// value above zero).
    pub(super) fn top_anonymous(&self, n: usize) -> Vec<Region> {
        self.regions
            .iter()
            .filter(|r| r.anonymous && r.value > 0.0)
            .take(n)
            .cloned()
            .collect()
    }

    pub fn total_value(&self) -> f64 {
        self.regions.iter().map(|r| r.value).sum()
    }
}

/// How many regions the heat-over-time view shows.
const TIMELINE_REGIONS: usize = 32;

/// Why a record could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    #[error("{0}")]
    Source(String),
    #[error("cannot prepare the preload library: {0}")]
    Preload(std::io::Error),
    #[error("sampling the command failed: {0}")]
    Sampling(std::io::Error),
}

/// Runs the command once under the chosen source (and the preload library in `mode`,
/// which also cuts mappings at 2 MiB so per-mapping counts are per region).
pub fn record(plan: &RecordPlan, mode: &PreloadMode) -> Result<PagesRecord, RecordError> {
    let chosen = sources::choose(plan.source).map_err(RecordError::Source)?;
    let preload = Preload::create().map_err(RecordError::Preload)?;
    let mode = PreloadMode {
        split: true,
        ..mode.clone()
    };
    let options = SpawnOptions {
        env: preload.env(&mode),
        no_aslr: true,
        ..SpawnOptions::default()
    };
    let paused = child::spawn_paused_with(&plan.command, &options)?;
    let root = paused.pid() as u32;
    let mut sampler =
        sources::Sampler::open(chosen.kind, root, plan.interval).map_err(RecordError::Source)?;
    let mut map = RegionMap::default();
    let mut running = paused.release()?;
    if let Err(why) = sampler.after_exec() {
        // The command runs already: stop it before reporting why nothing is sampled.
        // SAFETY: signalling our own child, which `running` reaps on drop.
        unsafe { libc::kill(running.pid(), libc::SIGKILL) };
        return Err(RecordError::Source(why));
    }
    let mut processes: Vec<(u32, String)> = Vec::new();
    let finished = loop {
        let deadline = Instant::now() + plan.interval;
        let mut ended = None;
        while Instant::now() < deadline {
            if let Some(f) = running.try_wait()? {
                ended = Some(f);
                break;
            }
            std::thread::sleep(Duration::from_millis(2).min(plan.interval));
        }
        if let Some(f) = ended {
            sampler.finish(&mut map);
            break f;
        }
        let tree = procfs::process_tree(root);
        for &pid in &tree {
            if !processes.iter().any(|(p, _)| *p == pid) {
                processes.push((pid, procfs::command_name(pid)));
            }
        }
        sampler
            .collect(&tree, &mut map)
            .map_err(RecordError::Sampling)?;
        map.end_interval();
    };
    let mut notes = sampler.notes();
    if map.intervals() == 0 {
        notes.push(format!(
            "the command ended after {:.3} s, before the first sample (every {} ms): \
             nothing to rank; a longer run, or a shorter --interval, gives regions",
            finished.elapsed.as_secs_f64(),
            plan.interval.as_millis()
        ));
    }
    if sampler.preload_missing() {
        notes.push(
            "memscope's preload library was not loaded in every process (a static or \
             setuid program ignores LD_PRELOAD): there, a mapping's count is spread evenly \
             over its 2 MiB regions"
                .to_string(),
        );
    }
    let regions = map.ranked();
    if chosen.kind == SourceKind::Refs && hugetlb_seen(&regions) {
        notes.push(
            "some regions are in hugetlb pages, whose accessed bits /proc/PID/smaps does not \
             report: the refs source sees no access there (their value is 0)"
                .to_string(),
        );
    }
    if chosen.kind == SourceKind::Refs {
        notes.extend(saturation_note(&regions, map.intervals(), plan));
    }
    if map.intervals() > 0 && regions.iter().all(|r| r.value <= 0.0) {
        notes.push("no access was seen: the command touched no sampled memory".to_string());
    }
    let timeline = timeline(&map, &regions, plan.interval);
    Ok(PagesRecord {
        command: plan
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        source: chosen.kind,
        source_description: sampler.description(),
        sources_not_used: chosen.not_used,
        signal: chosen.kind.signal(),
        region_bytes: REGION_BYTES,
        top: plan.top,
        interval_ms: plan.interval.as_secs_f64() * 1e3,
        intervals: map.intervals(),
        elapsed_s: finished.elapsed.as_secs_f64(),
        user_s: finished.user.as_secs_f64(),
        system_s: finished.system.as_secs_f64(),
        termination: finished.termination,
        processes,
        regions,
        timeline,
        notes,
    })
}

/// With the accessed bits, a region counts at most every one of its 4 KiB pages in every
/// interval. When more regions than the top reach (nearly) that, the interval is too long
/// for this program: a hot region and one touched once per interval count the same, and
/// their order is the address order. Says so, with the interval that would separate them.
fn saturation_note(regions: &[Region], intervals: usize, plan: &RecordPlan) -> Option<String> {
    let most = intervals as f64 * (REGION_BYTES / 4096) as f64;
    let full = regions.iter().filter(|r| r.value >= 0.95 * most).count();
    if intervals == 0 || full <= plan.top {
        return None;
    }
    let shorter = (plan.interval.as_millis() / 10).max(1);
    Some(format!(
        "{full} regions counted (nearly) every page in every interval: at --interval {} ms \
         this program touches them all too often to tell a hot region from a lukewarm \
         one, so their order is only the address order; a shorter interval (--interval \
         {shorter}) separates them",
        plan.interval.as_millis()
    ))
}

/// Whether any region holds hugetlb pages.
fn hugetlb_seen(regions: &[Region]) -> bool {
    regions.iter().any(|r| r.hugetlb_kb > 0.0)
}

fn timeline(map: &RegionMap, regions: &[Region], interval: Duration) -> Option<Timeline> {
    if map.intervals() < 2 {
        return None;
    }
    let mut keys: Vec<(u32, u64)> = regions
        .iter()
        .filter(|r| r.value > 0.0)
        .take(TIMELINE_REGIONS)
        .map(|r| (r.pid, r.start))
        .collect();
    keys.sort_unstable();
    let values = map.timeline(&keys);
    Some(Timeline {
        interval_ms: interval.as_secs_f64() * 1e3,
        regions: keys,
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(start: u64, value: f64) -> Region {
        Region {
            start,
            value,
            ..Region::default()
        }
    }

    fn plan(top: usize) -> RecordPlan {
        RecordPlan {
            top,
            source: SourceChoice::Refs,
            interval: Duration::from_millis(100),
            command: vec!["true".into()],
        }
    }

    #[test]
    fn more_full_regions_than_the_top_are_a_draw_that_a_shorter_interval_separates() {
        // 10 intervals: a region counts at most 5,120 translations.
        let mut regions: Vec<Region> = (0..8).map(|i| region(i << 21, 5_120.0)).collect();
        regions.push(region(9 << 21, 2_000.0));
        let note = saturation_note(&regions, 10, &plan(6)).expect("a draw");
        assert!(note.starts_with("8 regions counted"), "{note}");
        assert!(note.contains("--interval 10)"), "{note}");
        // As many full regions as the top shows: the top is the full ones, no draw.
        assert!(saturation_note(&regions, 10, &plan(8)).is_none());
        // A ranking that separates: no note.
        let ranked = [region(0, 5_000.0), region(1 << 21, 900.0)];
        assert!(saturation_note(&ranked, 10, &plan(1)).is_none());
        assert!(saturation_note(&[], 0, &plan(1)).is_none());
    }
}
