//! `memscope pages record`: runs a command with address-space randomization off and
//! memscope's preload library in it, samples its accesses with the best source this
//! machine has, and bins them into 2 MiB regions per process.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::preload::{Preload, PreloadMode};
use super::regions::{Region, RegionMap, REGION_BYTES};
use super::sources::{self, Signal, SourceChoice, SourceKind};
use crate::platform::child::{self, NodePolicy, Placement, SpawnError, SpawnOptions, Termination};
use crate::topology::process as procfs;
use crate::trials::capture::Capture;

pub use super::notes::RecordNote;

/// What `pages record` runs.
#[derive(Debug, Clone)]
pub struct RecordPlan {
    pub top: Top,
    pub source: SourceChoice,
    /// The sampling interval, or the first one when `adaptive`.
    pub interval: Duration,
    /// Shorten the interval while the hottest regions are saturated (the refs source
    /// only; off when the user chose `--interval`).
    pub adaptive: bool,
    /// Capture the program's standard output and error instead of passing them through.
    pub capture: bool,
    /// `--membind`: the node every run's memory is bound to.
    pub membind: Option<usize>,
    pub command: Vec<OsString>,
}

impl RecordPlan {
    /// Where each run's memory goes: bound to `--membind`'s node, else the default.
    pub fn placement(&self) -> Option<Placement> {
        self.membind.map(|node| Placement {
            policy: NodePolicy::Bind,
            nodes: vec![node],
        })
    }
}

/// The regions `--top` takes: a number, or the fewest of the ranked regions that hold a
/// share of the signal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Top {
    Count(usize),
    /// Percent of the signal's total, in (0, 100].
    Share(f64),
}

/// How many of the hottest regions the adaptive interval watches when `--top` is a share.
const HOT_WATCHED: usize = 8;

impl Top {
    /// How many of `values` (ranked, highest first) this takes, of a signal totalling
    /// `total`: a count as it is; a share, the fewest whose sum reaches it (all of them
    /// when they never do).
    pub fn count(self, values: &[f64], total: f64) -> usize {
        match self {
            Top::Count(n) => n,
            Top::Share(pct) => {
                let want = total * pct / 100.0;
                let mut sum = 0.0;
                for (i, v) in values.iter().enumerate() {
                    sum += v;
                    // A relative tolerance: shares summed in floating point.
                    if sum >= want * (1.0 - 1e-12) {
                        return i + 1;
                    }
                }
                values.len()
            }
        }
    }

    /// How many of the hottest regions must saturate before the interval is shortened.
    fn watched(self) -> usize {
        match self {
            Top::Count(n) => n,
            Top::Share(_) => HOT_WATCHED,
        }
    }
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
    /// The share of the signal asked for with `--top P%`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_share_pct: Option<f64>,
    /// The interval the values were counted at, ms (the last one, when adapted).
    pub interval_ms: f64,
    /// Every interval used, ms, in order, when the interval was adapted: the counts made
    /// at the longer ones (the first `dropped_s` seconds) were dropped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals_used_ms: Vec<f64>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_s: f64,
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
    pub notes: Vec<RecordNote>,
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

    pub(crate) fn total_value(&self) -> f64 {
        self.regions.iter().map(|r| r.value).sum()
    }
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// The shortest interval the adaptive interval goes down to: reading and clearing the
/// accessed bits of a large program takes milliseconds of its own.
pub(crate) const FLOOR: Duration = Duration::from_millis(5);

/// Whether the interval is too long for the ranking: the `watched` hottest regions of the
/// last interval each counted (nearly) every translation they can, and the next one at
/// least half of its own, so the ranking squeezes whatever ratio of heat there is between
/// them into less than 2× (of regions that can count at least 64 translations: a few
/// pages of a library's data always count every one). Hot regions that saturate while
/// the next is clearly cooler still rank right, and keep the interval.
pub(super) fn saturated(fill: &[(f64, f64)], watched: usize) -> bool {
    let ranked: Vec<&(f64, f64)> = fill
        .iter()
        .filter(|(value, most)| *value > 0.0 && *most >= 64.0)
        .take(watched.max(1) + 1)
        .collect();
    let Some((next, hottest)) = ranked.split_last() else {
        return false;
    };
    ranked.len() == watched.max(1) + 1
        && hottest.iter().all(|(value, most)| *value >= 0.95 * most)
        && next.0 >= 0.5 * next.1
}

/// Intervals in a row that must tell the hottest regions apart before the interval is
/// kept for the rest of the run.
const SETTLED: usize = 10;

/// The next interval when the hottest regions are saturated at `interval`: half of it,
/// in whole milliseconds, not below the floor; `None` at the floor.
pub(super) fn shorter(interval: Duration) -> Option<Duration> {
    (interval > FLOOR).then(|| Duration::from_millis((interval.as_millis() / 2) as u64).max(FLOOR))
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
    #[error("cannot create a file to capture the program's output: {0}")]
    Capture(std::io::Error),
    /// A run of the warm-up block ended with another status than the accepted one: the
    /// comparison stops before the timed runs.
    #[error(
        "the warm-up run of '{arm}' ended with {termination}, not the program's accepted \
         status ({accepted}); no timed run was made{}",
        stderr_tail.as_ref().map_or(String::new(), |t| format!("\n  {t}"))
    )]
    WarmUp {
        arm: String,
        termination: Termination,
        accepted: String,
        stderr_tail: Option<String>,
    },
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
    let capture = Capture::new(plan.capture).map_err(RecordError::Capture)?;
    let options = capture.options(SpawnOptions {
        env: preload.env(&mode),
        inherit: Some(preload.inherit()),
        placement: plan.placement(),
        no_aslr: true,
        ..SpawnOptions::default()
    });
    let paused = child::spawn_paused_with(&plan.command, &options)?;
    let root = paused.pid() as u32;
    let mut sampler =
        sources::Sampler::open(chosen.kind, root, plan.interval).map_err(RecordError::Source)?;
    let mut running = paused.release()?;
    if let Err(why) = sampler.after_exec() {
        // The command runs already: stop it before reporting why nothing is sampled.
        // SAFETY: signalling our own child, which `running` reaps on drop.
        unsafe { libc::kill(running.pid(), libc::SIGKILL) };
        return Err(RecordError::Source(why));
    }
    let adaptive = plan.adaptive && chosen.kind == SourceKind::Refs;
    let mut map = RegionMap::default();
    let sampled = sample_to_the_end(plan, adaptive, root, &mut running, &mut sampler, &mut map)?;
    let regions = map.ranked();
    let values: Vec<f64> = regions.iter().map(|r| r.value).collect();
    let top = plan.top.count(&values, values.iter().sum()).max(1);
    let notes = record_notes(
        (&sampler, &map, &regions),
        &sampled,
        chosen.kind,
        adaptive,
        top,
    );
    let interval = sampled.interval;
    let used = &sampled.used;
    let timeline = timeline(&map, &regions, interval);
    let finished = &sampled.finished;
    Ok(PagesRecord {
        command: (plan.command.iter())
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        source: chosen.kind,
        source_description: sampler.description(),
        sources_not_used: chosen.not_used,
        signal: chosen.kind.signal(),
        region_bytes: REGION_BYTES,
        top,
        top_share_pct: match plan.top {
            Top::Share(pct) => Some(pct),
            Top::Count(_) => None,
        },
        interval_ms: interval.as_secs_f64() * 1e3,
        intervals_used_ms: match used.len() > 1 {
            true => used.iter().map(|d| d.as_secs_f64() * 1e3).collect(),
            false => Vec::new(),
        },
        dropped_s: sampled.dropped.as_secs_f64(),
        intervals: map.intervals(),
        elapsed_s: finished.elapsed.as_secs_f64(),
        user_s: finished.user.as_secs_f64(),
        system_s: finished.system.as_secs_f64(),
        termination: finished.termination,
        processes: sampled.processes,
        regions,
        timeline,
        notes,
    })
}

/// What sampling a run to its end gave besides the map.
struct SampledRun {
    finished: child::Finished,
    /// Every process of the tree seen, with its command name.
    processes: Vec<(u32, String)>,
    /// The interval at the end, and every one used (the first is the plan's).
    interval: Duration,
    used: Vec<Duration>,
    /// How far into the run the counts were restarted at a shorter interval.
    dropped: Duration,
}

/// Samples the running command's process tree every interval into `map` until it ends;
/// `adaptive`: shortens the interval while the hottest regions count every page.
fn sample_to_the_end(
    plan: &RecordPlan,
    adaptive: bool,
    root: u32,
    running: &mut child::RunningChild,
    sampler: &mut sources::Sampler,
    map: &mut RegionMap,
) -> Result<SampledRun, RecordError> {
    let mut processes: Vec<(u32, String)> = Vec::new();
    let started = Instant::now();
    let mut interval = plan.interval;
    let mut used = vec![interval];
    let mut dropped = Duration::ZERO;
    let mut last_look = started;
    // Intervals in a row that told the hottest regions apart at the current interval.
    let mut calm = 0;
    let finished = loop {
        let deadline = Instant::now() + interval;
        let mut ended = None;
        while Instant::now() < deadline {
            if let Some(f) = running.try_wait()? {
                ended = Some(f);
                break;
            }
            std::thread::sleep(Duration::from_millis(2).min(interval));
        }
        if let Some(f) = ended {
            sampler.finish(map);
            break f;
        }
        let tree = procfs::process_tree(root);
        for &pid in &tree {
            if !processes.iter().any(|(p, _)| *p == pid) {
                processes.push((pid, procfs::command_name(pid)));
            }
        }
        map.weigh_looks(last_look.elapsed());
        last_look = Instant::now();
        sampler.collect(&tree, map).map_err(RecordError::Sampling)?;
        map.end_interval();
        // As DAMON adapts its sampling: an interval in which the hottest regions and the
        // next count every page tells them apart from nothing; a shorter one may. Once
        // an interval has separated them `SETTLED` times in a row it is kept, so that a
        // passing burst late in the run does not drop what was counted.
        if adaptive && calm < SETTLED {
            if !saturated(&map.last_interval_fill(), plan.top.watched()) {
                calm += usize::from(map.last_interval_fill().iter().any(|f| f.0 > 0.0));
            } else if let Some(next) = shorter(interval) {
                interval = next;
                used.push(next);
                map.restart_counts();
                dropped = started.elapsed();
                calm = 0;
            }
        }
    };
    Ok(SampledRun {
        finished,
        processes,
        interval,
        used,
        dropped,
    })
}

/// What the record's reader needs told: no sample, a shortened interval, a process the
/// preload library missed, hugetlb pages the accessed bits cannot see, saturated counts,
/// no access at all.
fn record_notes(
    (sampler, map, regions): (&sources::Sampler, &RegionMap, &[Region]),
    sampled: &SampledRun,
    kind: SourceKind,
    adaptive: bool,
    top: usize,
) -> Vec<RecordNote> {
    let (interval, used) = (sampled.interval, &sampled.used);
    let mut notes = sampler.notes();
    if map.intervals() == 0 {
        notes.push(RecordNote::BeforeFirstSample {
            elapsed_s: sampled.finished.elapsed.as_secs_f64(),
            interval_ms: interval.as_millis() as u64,
        });
    }
    if used.len() > 1 {
        notes.push(RecordNote::IntervalShortened {
            tried_ms: (used[..used.len() - 1].iter())
                .map(|d| d.as_millis() as u64)
                .collect(),
            interval_ms: interval.as_millis() as u64,
            dropped_s: sampled.dropped.as_secs_f64(),
        });
    }
    if sampler.preload_missing() {
        notes.push(RecordNote::PreloadMissing);
    }
    if kind == SourceKind::Refs && hugetlb_seen(regions) {
        notes.push(RecordNote::HugetlbUnseen);
    }
    if kind == SourceKind::Refs {
        let at_floor = adaptive && used.len() > 1 && interval <= FLOOR;
        notes.extend(saturation_note(
            regions,
            map.intervals(),
            top,
            interval,
            at_floor,
        ));
    }
    if map.intervals() > 0 && regions.iter().all(|r| r.value <= 0.0) {
        notes.push(RecordNote::NoAccess);
    }
    notes
}

/// With the accessed bits, a region counts at most every one of its 4 KiB pages in every
/// interval. When more regions than the top reach (nearly) that, the interval is too long
/// for this program: a hot region and one touched once per interval count the same, and
/// their order is the address order. Says so, with the interval that would separate them.
/// `at_floor`: the interval was shortened down to the floor and stayed saturated there.
fn saturation_note(
    regions: &[Region],
    intervals: usize,
    top: usize,
    interval: Duration,
    at_floor: bool,
) -> Option<RecordNote> {
    let most = intervals as f64 * (REGION_BYTES / 4096) as f64;
    let full = regions.iter().filter(|r| r.value >= 0.95 * most).count();
    if intervals == 0 || full <= top {
        return None;
    }
    Some(RecordNote::Saturated {
        regions: full,
        interval_ms: interval.as_millis() as u64,
        at_floor,
    })
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

    const MS100: Duration = Duration::from_millis(100);

    #[test]
    fn more_full_regions_than_the_top_are_a_draw_that_a_shorter_interval_separates() {
        // 10 intervals: a region counts at most 5,120 translations.
        let mut regions: Vec<Region> = (0..8).map(|i| region(i << 21, 5_120.0)).collect();
        regions.push(region(9 << 21, 2_000.0));
        let note = saturation_note(&regions, 10, 6, MS100, false)
            .expect("a draw")
            .text();
        assert!(note.starts_with("8 regions counted"), "{note}");
        assert!(note.contains("--interval 10)"), "{note}");
        // Still saturated at the adaptive interval's floor: a draw, no shorter advice.
        let floor = saturation_note(&regions, 10, 6, FLOOR, true)
            .expect("a draw")
            .text();
        assert!(floor.contains("even at 5 ms") && !floor.contains("--interval"));
        // As many full regions as the top shows: the top is the full ones, no draw.
        assert!(saturation_note(&regions, 10, 8, MS100, false).is_none());
        // A ranking that separates: no note.
        let ranked = [region(0, 5_000.0), region(1 << 21, 900.0)];
        assert!(saturation_note(&ranked, 10, 1, MS100, false).is_none());
        assert!(saturation_note(&[], 0, 1, MS100, false).is_none());
    }

    #[test]
    fn a_share_takes_the_fewest_regions_that_hold_it() {
        let values = [50.0, 30.0, 10.0, 10.0];
        assert_eq!(Top::Share(50.0).count(&values, 100.0), 1);
        assert_eq!(Top::Share(50.1).count(&values, 100.0), 2);
        assert_eq!(Top::Share(80.0).count(&values, 100.0), 2);
        assert_eq!(Top::Share(100.0).count(&values, 100.0), 4);
        // Regions that never reach the share (the rest of the signal is elsewhere): all.
        assert_eq!(Top::Share(90.0).count(&values[..2], 100.0), 2);
        assert_eq!(Top::Count(3).count(&values, 100.0), 3);
    }

    #[test]
    fn the_interval_shortens_while_the_hottest_regions_are_saturated() {
        // The 3 hottest count all 512 pages, the next 300 of its 512: too close to tell.
        let draw = [
            (512.0, 512.0),
            (510.0, 512.0),
            (500.0, 512.0),
            (300.0, 512.0),
        ];
        assert!(saturated(&draw, 3));
        // The next one counts 40: the hot ones stand out, the interval is right.
        let apart = [
            (512.0, 512.0),
            (510.0, 512.0),
            (500.0, 512.0),
            (40.0, 512.0),
        ];
        assert!(!saturated(&apart, 3));
        // Watching 4: the fourth is not saturated.
        assert!(!saturated(&draw, 4));
        // No region past the watched ones: nothing to tell apart.
        assert!(!saturated(&draw[..3], 3));
        // Tiny regions (a library's few data pages) always count every page: not watched.
        let tiny = [(8.0, 8.0), (4.0, 4.0), (512.0, 512.0), (400.0, 512.0)];
        assert!(saturated(&tiny, 1));
        assert!(!saturated(&tiny, 2));
        assert!(!saturated(&[], 8));
        assert_eq!(shorter(MS100), Some(Duration::from_millis(50)));
        assert_eq!(
            shorter(Duration::from_millis(25)),
            Some(Duration::from_millis(12))
        );
        assert_eq!(shorter(Duration::from_millis(6)), Some(FLOOR));
        assert_eq!(shorter(FLOOR), None);
    }
}
