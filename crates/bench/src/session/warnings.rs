//! Quality problems found while measuring, as a typed list. Each one's message says what
//! it distorts and what the user can do about it.

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::platform::cpu_time::MIN_OVERLAP;

/// One warning; serialised as `{"code": "...", "message": "..."}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Warning {
    pub code: String,
    pub message: String,
}

/// The kinds of warning memscope raises.
#[derive(Debug, Clone, PartialEq)]
pub enum WarningKind {
    /// Running under a hypervisor (vendor name).
    Hypervisor(String),
    /// THP asked for, but only this fraction of the buffer got huge pages.
    ThpPartial { fraction: f64 },
    /// Points whose trials disagreed more than the threshold even after re-measuring.
    UnstablePoints { count: usize, sizes: String },
    /// No hardware performance counters.
    NoPmu(String),
    /// Other tasks were running when memscope started (average count, and their names;
    /// memscope's own threads and its ancestors are not counted).
    SystemBusy {
        running: f64,
        cpus: usize,
        tasks: Vec<String>,
    },
    /// Other tasks or the hypervisor took a share of the CPUs while an experiment measured.
    Disturbed {
        experiment: String,
        other_runnable: Option<f64>,
        /// Percent of the samples with another task runnable.
        busy_share_pct: Option<f64>,
        steal_pct: Option<f64>,
        tasks: Vec<String>,
    },
    /// Figures that moved between the run's measurement and the drift pass at its end by
    /// more than their own noise.
    Drift { count: usize, worst: String },
    /// Frequency scaling governor other than performance.
    FrequencyScaling(String),
    /// The TSC could not be calibrated; clock_gettime used instead.
    NoTsc(String),
    /// A level found from the data does not match the OS report.
    LevelMismatch(String),
    /// The sweep did not reach past the largest cache by enough to see DRAM.
    SweepTooShort { max: String, needed: String },
    /// Loaded-latency curves whose injectors hardly ran at full load.
    InjectorsStarved(String),
    /// An experiment of the profile that could not run here, and why.
    Skipped { experiment: String, reason: String },
    /// Multi-thread figures whose threads did not run together in any trial: `rows`
    /// names them ("bandwidth: 2 rows"), `lowest` is the smallest overlap (0–1).
    NotConcurrent { rows: String, lowest: f64 },
}

impl WarningKind {
    /// The warning for the figures among `overlaps` (one per row, cell or point called
    /// `what`) whose threads did not run together; None when all did.
    pub(crate) fn not_concurrent(
        what: &str,
        overlaps: impl IntoIterator<Item = f64>,
    ) -> Option<WarningKind> {
        let low: Vec<f64> = overlaps.into_iter().filter(|&o| o < MIN_OVERLAP).collect();
        let lowest = low.iter().copied().fold(f64::INFINITY, f64::min);
        (!low.is_empty()).then(|| WarningKind::NotConcurrent {
            rows: format!(
                "{} {what}{}",
                low.len(),
                if low.len() == 1 { "" } else { "s" }
            ),
            lowest,
        })
    }

    pub fn code(&self) -> &'static str {
        match self {
            WarningKind::Hypervisor(_) => "hypervisor",
            WarningKind::ThpPartial { .. } => "thp_partial",
            WarningKind::UnstablePoints { .. } => "unstable_points",
            WarningKind::NoPmu(_) => "no_pmu",
            WarningKind::SystemBusy { .. } => "system_busy",
            WarningKind::Disturbed { .. } => "disturbed",
            WarningKind::Drift { .. } => "drift",
            WarningKind::FrequencyScaling(_) => "frequency_scaling",
            WarningKind::NoTsc(_) => "no_tsc",
            WarningKind::LevelMismatch(_) => "level_mismatch",
            WarningKind::SweepTooShort { .. } => "sweep_too_short",
            WarningKind::InjectorsStarved(_) => "injectors_starved",
            WarningKind::Skipped { .. } => "skipped",
            WarningKind::NotConcurrent { .. } => "not_concurrent",
        }
    }
}

/// ": a, b" naming the tasks, or nothing.
fn named(tasks: &[String]) -> String {
    if tasks.is_empty() {
        String::new()
    } else {
        format!(" ({})", tasks.join(", "))
    }
}

/// The fixed-rate counter this build times with, as warnings name it.
const COUNTER: &str = if cfg!(target_arch = "aarch64") {
    "CNTVCT"
} else {
    "TSC"
};

/// What shared the machine: other runnable tasks (named) and the hypervisor's steal.
fn sharing_text(
    other_runnable: Option<f64>,
    busy_share_pct: Option<f64>,
    steal_pct: Option<f64>,
    tasks: &[String],
) -> String {
    let mut what = Vec::new();
    if let Some(n) = other_runnable {
        let share = busy_share_pct
            .map(|p| format!(", another task runnable in {p:.0}% of the samples"))
            .unwrap_or_default();
        what.push(format!(
            "{n:.1} other runnable task(s) on average{share}{}",
            named(tasks)
        ));
    }
    if let Some(s) = steal_pct {
        what.push(format!("{s:.1}% of the CPU time stolen by the hypervisor"));
    }
    what.join(", ")
}

impl fmt::Display for WarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WarningKind::Hypervisor(v) if v.contains("TCG") => {
                write!(f, "emulated by {v}: its timings are no machine's")
            }
            WarningKind::Hypervisor(vendor) => write!(
                f,
                "running under a hypervisor ({vendor}): TLB misses cost a nested page walk, the \
                 last-level cache may be shared with other tenants, and {COUNTER} ticks are not \
                 core cycles; 'memscope tlb' measures what a TLB miss and a page walk cost here"
            ),
            WarningKind::ThpPartial { fraction } => write!(
                f,
                "transparent huge pages were asked for but only {:.0}% of the buffer got them \
                 (memory fragmentation or THP limits); results mix 4 KiB and 2 MiB pages. \
                 Consider --pages 2m with a reserved hugetlbfs pool",
                fraction * 100.0
            ),
            WarningKind::UnstablePoints { count, sizes } => write!(
                f,
                "{count} point(s) kept a spread above the threshold after one more pass ({sizes}). \
                 Near a level's edge this is expected: which lines conflict depends on where \
                 the pages land. Elsewhere another process or tenant was competing for the \
                 caches or memory. Their medians are shown; they take no part in finding \
                 plateaus. Consider more --repetitions or a quieter machine"
            ),
            WarningKind::NoPmu(r) => write!(f, "hardware performance counters unavailable: {r}"),
            WarningKind::SystemBusy {
                running,
                cpus,
                tasks,
            } => write!(
                f,
                "the system is busy: {running:.1} other task(s) were running on its {cpus} CPUs \
                 when memscope started{}; they compete for caches and memory bandwidth, so \
                 results may be noisy",
                named(tasks)
            ),
            WarningKind::Disturbed {
                experiment,
                other_runnable,
                busy_share_pct,
                steal_pct,
                tasks,
            } => write!(
                f,
                "{experiment} was measured while the machine was shared: {}; its figures may \
                 be lower or noisier than this machine's own (see 'conditions' in the JSON)",
                sharing_text(*other_runnable, *busy_share_pct, *steal_pct, tasks)
            ),
            WarningKind::Drift { count, worst } => write!(
                f,
                "{count} headline figure(s) moved between the measurement and the drift pass at \
                 the end of the run by more than their own spread (largest: {worst}): the \
                 machine changed while memscope ran; consider --until-stable, or a quieter \
                 moment"
            ),
            WarningKind::FrequencyScaling(governor) => write!(
                f,
                "CPU frequency governor is '{governor}': the core clock may change during the \
                 run; cycle figures use the clock measured at start. Consider the \
                 'performance' governor"
            ),
            WarningKind::NoTsc(reason) => write!(
                f,
                "{COUNTER} unavailable ({reason}); timing with clock_gettime, whose overhead is \
                 larger"
            ),
            WarningKind::LevelMismatch(what) => write!(f, "{what}"),
            WarningKind::SweepTooShort { max, needed } => write!(
                f,
                "the sweep stops at {max}, which is not far enough past the largest cache to \
                 see DRAM (needs {needed}); use a larger --max-size"
            ),
            WarningKind::Skipped { experiment, reason } => {
                write!(f, "{experiment} was skipped: {reason}")
            }
            WarningKind::NotConcurrent { rows, lowest } => write!(
                f,
                "threads that did not run together or were kept off their CPUs ({rows}, marked \
                 ! in the tables): their overlap (CPU time ÷ threads × trial) stayed below \
                 {:.0}% in every trial even when re-run (down to {:.0}%), because the host ran the \
                 vCPUs in turn or other tasks held the CPUs. Those figures are what the threads \
                 got over the whole interval, not what threads running undisturbed and \
                 together reach; rerun on a quieter machine",
                MIN_OVERLAP * 100.0,
                lowest * 100.0
            ),
            WarningKind::InjectorsStarved(curves) => write!(
                f,
                "loaded latency: the injector threads moved almost no data at delay 0 ({curves}); \
                 another process was holding their CPUs, so those curves show little or no \
                 load. Rerun on a quieter machine"
            ),
        }
    }
}

impl From<WarningKind> for Warning {
    fn from(kind: WarningKind) -> Warning {
        Warning {
            code: kind.code().to_string(),
            message: kind.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_whose_threads_did_not_run_together_are_counted_once() {
        assert_eq!(
            WarningKind::not_concurrent("bandwidth row", [1.0, 0.95]),
            None
        );
        let warning = WarningKind::not_concurrent("bandwidth row", [1.0, 0.5, 0.62]).unwrap();
        assert_eq!(warning.code(), "not_concurrent");
        let text = warning.to_string();
        assert!(text.contains("2 bandwidth rows"), "{text}");
        assert!(text.contains("down to 50%"), "{text}");
    }
}
