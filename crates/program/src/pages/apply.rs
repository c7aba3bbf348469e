//! `memscope pages apply`: backs exactly the chosen regions of an unmodified program with
//! huge pages (through the preload library) and measures what that buys, against 4 KiB
//! pages everywhere and huge pages everywhere, in interleaved runs; verifies per region
//! in /proc/PID/smaps what the kernel really gave.

use std::collections::HashMap;
use std::ffi::OsString;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::preload::{Preload, PreloadMode};
use super::record::{self, PagesRecord, RecordError, RecordPlan, Top};
use super::regions::{ranges_of, Region};
use super::sources::SourceKind;
use crate::counters::{CounterGroup, Event, Probe, Scaled, Target};
use crate::platform::child::{self, ProcessTree, SpawnOptions, Termination};
use crate::session::progress::Progress;
use crate::stats::rank_tests::signed_rank;
use crate::stats::summary::Summary;
use crate::topology::process as procfs;
use crate::trials::capture::{Capture, TAIL_LINES};
use crate::trials::{Blocks, Design, Ended, Next, Stop};

/// What `pages apply` runs.
#[derive(Debug, Clone)]
pub struct ApplyPlan {
    pub top: Top,
    /// A record to take the regions from; `None`: record first, with `record`'s settings.
    pub from: Option<PagesRecord>,
    pub from_path: Option<String>,
    pub hugetlb: bool,
    pub repeat: usize,
    /// The exit status of a successful run; `None`: the first 4 KiB warm-up run's.
    pub ok_status: Option<OkStatus>,
    /// The user chose `--interval`: the recorded run with huge pages samples at it.
    pub interval_given: bool,
    pub record: RecordPlan,
}

/// The exit status a run must end with to be timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OkStatus {
    Code(i32),
    /// Any exit (not a death by a signal).
    Any,
}

impl Default for OkStatus {
    fn default() -> OkStatus {
        OkStatus::Code(0)
    }
}

impl OkStatus {
    /// Whether a run that ended so is a successful run.
    pub fn accepts(self, termination: Termination) -> bool {
        match (self, termination) {
            (OkStatus::Code(c), Termination::Exited(e)) => c == e,
            (OkStatus::Any, Termination::Exited(_)) => true,
            (_, Termination::Signaled(_)) => false,
        }
    }

    /// The status the first 4 KiB warm-up run sets when none was given: its exit status
    /// (a death by a signal is no program's normal end).
    pub(crate) fn of_first_run(termination: Termination) -> Option<OkStatus> {
        match termination {
            Termination::Exited(code) => Some(OkStatus::Code(code)),
            Termination::Signaled(_) => None,
        }
    }
}

impl std::fmt::Display for OkStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OkStatus::Code(c) => write!(f, "exit status {c}"),
            OkStatus::Any => write!(f, "any exit status"),
        }
    }
}

/// The three arms of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arm {
    /// 4 KiB pages: transparent huge pages off for the command.
    Baseline,
    /// Huge pages under the chosen regions only.
    Top,
    /// Huge pages under every private anonymous mapping.
    All,
}

impl Arm {
    pub const ALL: [Arm; 3] = [Arm::Baseline, Arm::Top, Arm::All];

    pub fn label(self, top: usize) -> String {
        match self {
            Arm::Baseline => "4 KiB pages".to_string(),
            Arm::Top => format!("top {top} huge"),
            Arm::All => "all huge".to_string(),
        }
    }
}

/// One timed run of one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmRun {
    /// Position in the interleaved sequence (0-based).
    pub order: usize,
    /// The timed block it ran in (1-based; each block runs every arm once).
    #[serde(default)]
    pub block: usize,
    pub elapsed_s: f64,
    pub user_s: f64,
    pub system_s: f64,
    pub termination: Termination,
    /// Peak memory in huge pages over the command's processes, KiB (smaps).
    pub huge_kb: f64,
    /// Peak huge-page memory inside the chosen regions, KiB.
    pub huge_in_regions_kb: f64,
    /// Huge-page memory inside the chosen regions averaged over the run's time, KiB.
    #[serde(default)]
    pub huge_in_regions_mean_kb: f64,
    /// dTLB counts (loads, load misses, store misses) where a PMU counts them.
    #[serde(default)]
    pub dtlb: Vec<Option<f64>>,
}

/// One arm over its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmResult {
    pub arm: Arm,
    pub label: String,
    pub runs: Vec<ArmRun>,
    /// Run time of the successful runs, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_s: Option<Summary>,
    /// Median over the blocks of the 4 KiB run's time / this arm's run's time in the same
    /// block (the baseline's is 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup: Option<f64>,
    /// Two-sided Wilcoxon signed-rank test of the blocks' log time ratios (paired by
    /// block, so drift of the machine between blocks cancels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    pub significant: bool,
    /// Median user and system CPU time of the successful runs, seconds: a huge-page arm
    /// that pays in the kernel (faults, zeroing, compaction) shows it here.
    #[serde(default)]
    pub user_s: f64,
    #[serde(default)]
    pub system_s: f64,
    /// Median of the runs' peak huge-page memory, KiB.
    pub huge_kb: f64,
    /// Median of the runs' time-weighted huge-page memory inside the chosen regions, KiB.
    #[serde(default)]
    pub huge_in_regions_mean_kb: f64,
    pub failed_runs: usize,
    /// Median dTLB counts (loads, load misses, store misses), or why not counted.
    #[serde(default)]
    pub dtlb: Vec<Option<f64>>,
}

/// A chosen region before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionOutcome {
    pub pid: u32,
    pub start: u64,
    pub mapping: String,
    /// The record's value before (4 KiB pages) and in a recorded run with the region's
    /// huge pages, in the signal's unit.
    pub before: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<f64>,
    /// Huge-page memory the region got (peak in the recorded top-N run), KiB of 2048.
    pub huge_kb: f64,
    /// The same averaged over the recorded top-N run's time, KiB of 2048.
    #[serde(default)]
    pub huge_mean_kb: f64,
}

/// The result of `pages apply`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PagesApply {
    pub command: Vec<String>,
    /// "thp" (madvise + collapse) or "2m" (hugetlb pool).
    pub huge: String,
    pub top: usize,
    /// The share of the signal asked for with `--top P%`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_share_pct: Option<f64>,
    /// The share of the record's signal the chosen regions hold, percent.
    #[serde(default)]
    pub chosen_share_pct: f64,
    /// The exit status a run had to end with to be timed.
    #[serde(default)]
    pub ok_status: OkStatus,
    /// Where the regions came from: a record made just before, or a file.
    pub regions_from: String,
    pub record: PagesRecord,
    /// The address ranges handed to the preload library.
    pub ranges: Vec<(u64, u64)>,
    pub repeat: usize,
    pub arms: Vec<ArmResult>,
    pub regions: Vec<RegionOutcome>,
    /// The record of the top-N arm (huge pages under the chosen regions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_after: Option<PagesRecord>,
    /// What share of the all-huge speed-up the top-N arm buys, and for what share of the
    /// all-huge arm's huge-page memory, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_of_speedup_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_of_huge_memory_pct: Option<f64>,
    /// Why dTLB counts are missing, when they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtlb_not_counted: Option<String>,
    pub notes: Vec<ApplyNote>,
    /// What the runs left running.
    #[serde(default)]
    pub process_tree: ProcessTree,
}

impl PagesApply {
    /// The command's exit status for memscope: the first failing run's, else the
    /// program's own (its accepted status), else 0.
    pub fn exit_status(&self) -> u8 {
        exit_status_of(
            self.arms.iter().flat_map(|a| &a.runs).collect(),
            self.ok_status,
        )
    }
}

/// The first run (in the order they ran) whose status is not `ok`'s, else the first run's.
fn exit_status_of(mut runs: Vec<&ArmRun>, ok: OkStatus) -> u8 {
    runs.sort_by_key(|r| r.order);
    runs.iter()
        .map(|r| r.termination)
        .find(|&t| !ok.accepts(t))
        .or_else(|| runs.first().map(|r| r.termination))
        .map_or(0, |t| t.shell_status().clamp(0, 255) as u8)
}

/// The dTLB events counted per run where the machine has them.
const DTLB_EVENTS: [&str; 3] = ["dTLB-loads", "dTLB-load-misses", "dTLB-store-misses"];

/// What the preload library does in an arm: nothing but keep transparent huge pages
/// away (baseline), huge pages for the chosen ranges, or for everything.
fn mode_of(arm: Arm, ranges: &[(u64, u64)], hugetlb: bool) -> PreloadMode {
    PreloadMode {
        split: false,
        no_huge: arm == Arm::Baseline,
        huge: match arm {
            Arm::Baseline => None,
            Arm::Top => Some(ranges.to_vec()),
            Arm::All => Some(Vec::new()),
        },
        hugetlb,
    }
}

/// Runs the comparison: the regions to back, the interleaved blocks, the recorded run with
/// huge pages, and what they add up to.
pub fn apply(plan: &ApplyPlan) -> Result<PagesApply, RecordError> {
    // Lines only: the program's own output shares the terminal, where a bar would tear.
    let progress = Progress::lines_when_not_terminal();
    let mut notes = Vec::new();
    let (record, regions_from) = source_record(plan, &progress, &mut notes)?;
    let chosen = choose_regions(plan, &record, &mut notes)?;
    let ranges = ranges_of(&chosen.regions);
    let top = chosen.top;
    let timed = run_blocks(plan, top, &ranges, &progress, &mut notes)?;
    let ok_status = timed.ok_status.unwrap_or_default();
    notes.extend(ok_status_note(
        plan.ok_status.is_none(),
        ok_status,
        &timed.runs,
    ));
    let arms = summarize(&timed.runs, top, ok_status);
    notes.extend(kernel_time_notes(&arms));
    let record_after = (timed.stop != Stop::Interrupted)
        .then(|| record_with_huge_pages(plan, &record, &ranges, &mut notes))
        .flatten();
    let regions = region_outcomes(&chosen.regions, record_after.as_ref());
    let (share_of_speedup_pct, share_of_huge_memory_pct) = shares(&arms);
    if arms
        .iter()
        .find(|a| a.arm == Arm::All)
        .map_or(0.0, |a| a.huge_kb)
        == 0.0
    {
        notes.push(ApplyNote::HugeMissing {
            hugetlb: plan.hugetlb,
        });
    }
    Ok(PagesApply {
        command: lossy(&plan.record.command),
        huge: if plan.hugetlb { "2m" } else { "thp" }.to_string(),
        top,
        top_share_pct: match plan.top {
            Top::Share(pct) => Some(pct),
            Top::Count(_) => None,
        },
        chosen_share_pct: chosen.share_pct,
        ok_status,
        regions_from,
        record,
        ranges,
        repeat: plan.repeat,
        arms,
        regions,
        record_after,
        share_of_speedup_pct,
        share_of_huge_memory_pct,
        dtlb_not_counted: timed.dtlb_not_counted,
        notes,
        process_tree: timed.process_tree,
    })
}

/// The record the regions come from (the user's file, or one made now) and the words
/// naming it.
fn source_record(
    plan: &ApplyPlan,
    progress: &Progress,
    notes: &mut Vec<ApplyNote>,
) -> Result<(PagesRecord, String), RecordError> {
    match &plan.from {
        Some(record) => {
            let path = plan.from_path.clone().unwrap_or_default();
            if record.command != lossy(&plan.record.command) {
                notes.push(ApplyNote::ForeignRecord {
                    path: path.clone(),
                    command: record.command.clone(),
                });
            }
            Ok((record.clone(), format!("the record in {path}")))
        }
        None => {
            progress.start("pages apply: recording the program's accesses", 1);
            let record = record::record(&plan.record, &mode_of(Arm::Baseline, &[], plan.hugetlb))?;
            let from = format!(
                "a record made just before, with the {} source",
                record.source.name()
            );
            Ok((record, from))
        }
    }
}

/// The regions `--top` chose, how many it asked for, and their share of the accesses.
struct Chosen {
    regions: Vec<Region>,
    top: usize,
    share_pct: f64,
}

/// The private anonymous regions `--top` asks for, with notes where the record cannot give
/// what was asked.
fn choose_regions(
    plan: &ApplyPlan,
    record: &PagesRecord,
    notes: &mut Vec<ApplyNote>,
) -> Result<Chosen, RecordError> {
    let anonymous: Vec<f64> = record
        .top_anonymous(usize::MAX)
        .iter()
        .map(|r| r.value)
        .collect();
    let regions: Vec<Region> =
        record.top_anonymous(plan.top.count(&anonymous, record.total_value()));
    if regions.is_empty() {
        return Err(RecordError::Source(format!(
            "the record has no region of private anonymous memory with accesses to back with \
             huge pages ({} regions in all); the command may be too short to sample (see \
             `memscope pages record`)",
            record.regions.len()
        )));
    }
    let top = match plan.top {
        Top::Count(n) => n,
        Top::Share(_) => regions.len(),
    };
    if regions.len() < top {
        notes.push(ApplyNote::FewerRegions {
            found: regions.len(),
            top,
        });
    }
    let share_pct = share_of(&regions, record.total_value());
    if let Top::Share(pct) = plan.top {
        if share_pct < pct * (1.0 - 1e-9) {
            notes.push(ApplyNote::ShareBelowTop {
                share_pct,
                signal: record.signal.name.clone(),
                top_pct: pct,
                regions: regions.len(),
            });
        }
    }
    notes.extend(flat_profile_note(
        regions.len(),
        share_pct,
        &record.signal.name,
    ));
    if plan.repeat < 6 {
        notes.push(ApplyNote::FewBlocks {
            blocks: plan.repeat,
            needed: 6,
        });
    }
    Ok(Chosen {
        regions,
        top,
        share_pct,
    })
}

/// What the interleaved blocks gave: the timed runs in their order, why they stopped, and
/// what was learnt on the way.
struct Timed {
    runs: Vec<(Arm, ArmRun)>,
    stop: Stop,
    ok_status: Option<OkStatus>,
    /// Why the dTLB counters were not counted, if they were not.
    dtlb_not_counted: Option<String>,
    process_tree: ProcessTree,
}

/// The chosen regions with their huge pages, recorded once more, untimed, at the interval
/// the regions were counted at (so that the two counts compare) unless the user chose one.
fn record_with_huge_pages(
    plan: &ApplyPlan,
    record: &PagesRecord,
    ranges: &[(u64, u64)],
    notes: &mut Vec<ApplyNote>,
) -> Option<PagesRecord> {
    let after_plan = RecordPlan {
        source: <crate::pages::sources::SourceChoice as clap::ValueEnum>::from_str(
            record.source.name(),
            false,
        )
        .unwrap_or(plan.record.source),
        // (A record read from a file is the user's: its interval is held to the range
        // `--interval` accepts, and the adaptive floor.)
        interval: if plan.interval_given || !record.interval_ms.is_finite() {
            plan.record.interval
        } else {
            let ms = record
                .interval_ms
                .clamp(record::FLOOR.as_secs_f64() * 1e3, 60_000.0);
            Duration::from_micros((ms * 1e3).round() as u64)
        },
        adaptive: false,
        ..plan.record.clone()
    };
    match record::record(&after_plan, &mode_of(Arm::Top, ranges, plan.hugetlb)) {
        Ok(r) => Some(r),
        Err(e) => {
            notes.push(ApplyNote::RecordAfterFailed {
                error: e.to_string(),
            });
            None
        }
    }
}

/// Each chosen region before and after: its accesses in both records and the huge pages the
/// kernel gave it.
fn region_outcomes(chosen: &[Region], record_after: Option<&PagesRecord>) -> Vec<RegionOutcome> {
    // The accessed-bit source cannot see into hugetlb pages: no value there.
    let blind = |a: &PagesRecord, x: &Region| a.source == SourceKind::Refs && x.hugetlb_kb > 0.0;
    chosen
        .iter()
        .map(|r| {
            let after = record_after.and_then(|a| {
                let mine: Vec<&Region> = a.regions.iter().filter(|x| x.start == r.start).collect();
                (!mine.iter().any(|x| blind(a, x))).then(|| mine.iter().map(|x| x.value).sum())
            });
            let obtained = record_after.and_then(|a| a.regions.iter().find(|x| x.start == r.start));
            RegionOutcome {
                pid: r.pid,
                start: r.start,
                mapping: r.mapping.clone(),
                before: r.value,
                after,
                huge_kb: obtained.map_or(0.0, |x| x.huge_kb),
                huge_mean_kb: obtained.map_or(0.0, |x| x.huge_mean_kb),
            }
        })
        .collect()
}

/// The chosen regions' share of the gain of huge pages everywhere (only where that gain is
/// significant: a share of a gain that is not there is noise divided by noise), and of its
/// huge-page memory.
fn shares(arms: &[ArmResult]) -> (Option<f64>, Option<f64>) {
    let of = |arm: Arm| arms.iter().find(|a| a.arm == arm);
    let speedup_of = |arm: Arm| of(arm).and_then(|a| a.speedup);
    let huge_of = |arm: Arm| of(arm).map_or(0.0, |a| a.huge_kb);
    let all_gains = of(Arm::All).is_some_and(|a| a.significant);
    let speedup = match (speedup_of(Arm::Top), speedup_of(Arm::All)) {
        (Some(top), Some(all)) if all > 1.0 && all_gains => Some(100.0 * (top - 1.0) / (all - 1.0)),
        _ => None,
    };
    let memory = (huge_of(Arm::All) > 0.0).then(|| 100.0 * huge_of(Arm::Top) / huge_of(Arm::All));
    (speedup, memory)
}

/// The huge-page memory a run had: its peak over all its mappings and inside the chosen
/// regions, and inside them averaged over its time (KiB).
struct Sampled {
    peak_all_kb: f64,
    peak_inside_kb: f64,
    mean_inside_kb: f64,
}

/// Runs the command once with `options`, sampling its huge-page memory (smaps) every
/// 250 ms and counting its dTLB events where a PMU counts them (else why not).
#[allow(clippy::type_complexity)]
fn run_sampled(
    command: &[OsString],
    options: &SpawnOptions,
    ranges: &[(u64, u64)],
    probe: &Probe,
    dtlb_groups: &[Vec<Event>],
) -> Result<(child::Finished, Sampled, Vec<Option<f64>>, Option<String>), RecordError> {
    let paused = child::spawn_paused_with(command, options)?;
    let counters = probe.has_hardware_pmu().then(|| {
        CounterGroup::open_groups(dtlb_groups, Target::ChildBeforeExec(paused.pid()), probe)
    });
    let mut running = paused.release()?;
    let root = running.pid() as u32;
    let started = Instant::now();
    let mut peak = (0.0f64, 0.0f64);
    // (seconds since the start, huge-page KiB inside the chosen regions).
    let mut looks: Vec<(f64, f64)> = Vec::new();
    let mut next_look = started + Duration::from_millis(50);
    let finished = loop {
        if let Some(f) = running.try_wait()? {
            break f;
        }
        if Instant::now() >= next_look {
            let (all, inside) = huge_memory(root, ranges);
            looks.push((started.elapsed().as_secs_f64(), inside));
            peak = (peak.0.max(all), peak.1.max(inside));
            next_look = Instant::now() + Duration::from_millis(250);
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let mean_inside_kb = time_weighted_mean(&looks, finished.elapsed.as_secs_f64());
    let mut refusal = None;
    let dtlb = match counters.map(|c| c.read()) {
        Some(Ok(readings)) => readings
            .iter()
            .map(|r| match &r.result {
                Ok(count) => match count.scaled {
                    Scaled::Counted { value, .. } => Some(value as f64),
                    Scaled::NotCounted => None,
                },
                Err(u) => {
                    refusal.get_or_insert_with(|| u.reason.to_string());
                    None
                }
            })
            .collect(),
        Some(Err(e)) => {
            refusal = Some(e.to_string());
            Vec::new()
        }
        None => Vec::new(),
    };
    let sampled = Sampled {
        peak_all_kb: peak.0,
        peak_inside_kb: peak.1,
        mean_inside_kb,
    };
    Ok((finished, sampled, dtlb, refusal))
}

/// Huge-page memory of the command's processes (KiB): all of it, and the part inside
/// the chosen ranges.
fn huge_memory(root: u32, ranges: &[(u64, u64)]) -> (f64, f64) {
    let mut all = 0.0;
    let mut inside = 0.0;
    for pid in procfs::process_tree(root) {
        for m in procfs::smaps(pid).unwrap_or_default() {
            let huge = (m.anon_huge_kb + m.hugetlb_kb) as f64;
            if huge == 0.0 {
                continue;
            }
            all += huge;
            let size = (m.end - m.start) as f64;
            let overlap: u64 = ranges
                .iter()
                .map(|&(s, e)| e.min(m.end).saturating_sub(s.max(m.start)))
                .sum();
            inside += huge * overlap as f64 / size;
        }
    }
    (all, inside)
}

fn lossy(command: &[OsString]) -> Vec<String> {
    command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

mod notes;
mod runs;
mod summary;

pub use notes::ApplyNote;

use runs::run_blocks;

use summary::{
    flat_profile_note, kernel_time_notes, ok_status_note, share_of, summarize, time_weighted_mean,
};

#[cfg(test)]
mod tests;
