//! The top-down (pipeline-slot) breakdown of a counted run: which events this CPU has
//! for it (`plan`), and the fractions of the pipeline's slots that retired, were wasted
//! by bad speculation, starved by the front end or stalled by the back end, with the back
//! end split into memory and core where the CPU tells them apart (`breakdown`).
//!
//! Three methods, chosen by vendor, family and model, and for Intel by what the kernel
//! exposes under /sys/bus/event_source/devices/<pmu>/events (the root is injectable for
//! tests):
//! - `AmdZen4`/`AmdZen5`: the pipeline-utilization metrics Linux perf defines for these
//!   cores (tools/perf/pmu-events/arch/x86/amdzen4/pipeline.json and amdzen5/pipeline.json,
//!   groups PipelineL1/PipelineL2), built on the per-slot dispatch event PMCx1A0, which
//!   Zen 3 and earlier do not have;
//! - `IntelPerfMetrics`/`IntelPerfMetricsL2`: the PERF_METRICS MSR (Ice Lake and later),
//!   read through the kernel's `slots` and `topdown-*` events; the L2 form (Sapphire Rapids
//!   and later P-cores) adds `topdown-mem-bound`;
//! - `IntelSkylakeFormula`: TMA level 1 and Memory_Bound from ordinary programmable events
//!   on Skylake-class cores (4-wide), as tools/perf/pmu-events/arch/x86/skylake/skl-metrics.json
//!   computes them.
//!
//! Nothing here has run on hardware with these counters: this module is checked by unit
//! tests on synthetic counts only, against the formulas cited at each method.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::event::Event;
use super::probe::Probe;

const EVENT_SOURCES: &str = "/sys/bus/event_source/devices";

/// Which top-down method this CPU supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// AMD family 0x19 Zen 4 models: PMCx1A0 dispatch slots (6 per cycle).
    AmdZen4,
    /// AMD family 0x1A (Zen 5): the same events, 8 dispatch slots per cycle.
    AmdZen5,
    /// Intel PERF_METRICS: `slots` and the four level-1 `topdown-*` metrics.
    IntelPerfMetrics,
    /// Intel PERF_METRICS with the level-2 `topdown-mem-bound` metric as well.
    IntelPerfMetricsL2,
    /// Skylake-class Intel cores: TMA level 1 and Memory_Bound from raw events.
    IntelSkylakeFormula,
}

impl Method {
    /// A short name for reports.
    pub fn label(self) -> &'static str {
        match self {
            Method::AmdZen4 => "AMD Zen 4 pipeline utilization",
            Method::AmdZen5 => "AMD Zen 5 pipeline utilization",
            Method::IntelPerfMetrics => "Intel top-down metrics (level 1)",
            Method::IntelPerfMetricsL2 => "Intel top-down metrics (level 2)",
            Method::IntelSkylakeFormula => "Intel TMA level 1 (Skylake formula)",
        }
    }
}

/// The events to count for the breakdown, as perf groups (each inner list opened as one
/// group, e.g. with `Counting::new`), and the method that reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct TopdownPlan {
    pub method: Method,
    pub groups: Vec<Vec<Event>>,
}

/// Fractions of the pipeline's slots (0..1); `None` where the method has no such split.
///
/// The four level-1 fractions sum to 1. They are shares of the slots the four categories
/// account for: on AMD the slots the other SMT thread took (`smt_contention` in perf)
/// are left out, and on Intel the small gap the hardware's 8-bit metric fractions leave is
/// spread as perf does (each metric over the sum of the four).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    pub retiring: f64,
    pub bad_speculation: f64,
    pub frontend_bound: f64,
    pub backend_bound: f64,
    /// The part of `backend_bound` stalled on memory (loads, and on Intel also stores).
    pub memory_bound: Option<f64>,
    /// `backend_bound - memory_bound`.
    pub core_bound: Option<f64>,
}

/// What identifies the CPU, as the topology reads it (`Machine`'s fields of the same
/// names): counters sit below the topology, so the caller hands these over.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuId {
    pub cpu_vendor: String,
    pub cpu_family: Option<u32>,
    pub cpu_model_number: Option<u32>,
    /// The brand string.
    pub cpu_model: String,
}

/// The plan for this machine, or why there is none (no PMU, a CPU without the events).
pub fn plan(machine: &CpuId, probe: &Probe) -> Result<TopdownPlan, String> {
    plan_in(machine, probe, Path::new(EVENT_SOURCES))
}

/// `plan` with the event-source directory (normally /sys/bus/event_source/devices) given.
pub(crate) fn plan_in(
    machine: &CpuId,
    probe: &Probe,
    event_sources: &Path,
) -> Result<TopdownPlan, String> {
    if !probe.has_hardware_pmu() {
        return Err("no hardware counters (a VM without a virtual PMU?)".to_string());
    }
    let family = machine.cpu_family;
    let model = machine.cpu_model_number;
    match machine.cpu_vendor.as_str() {
        "AuthenticAMD" => amd_plan(machine, family, model),
        "GenuineIntel" => intel_plan(machine, probe, event_sources, family, model),
        _ => Err(format!(
            "{} has no top-down events memscope knows (AMD Zen 4/5 and Intel Skylake or \
             later only)",
            cpu_name(machine)
        )),
    }
}

/// "AMD EPYC 9R14 (AuthenticAMD family 0x19 model 0x11)", for messages.
fn cpu_name(machine: &CpuId) -> String {
    let hex = |v: Option<u32>| v.map_or("?".to_string(), |v| format!("{v:#x}"));
    let brand = if machine.cpu_model.trim().is_empty() {
        "this CPU"
    } else {
        machine.cpu_model.trim()
    };
    format!(
        "{brand} ({} family {} model {})",
        if machine.cpu_vendor.is_empty() {
            "unknown vendor"
        } else {
            &machine.cpu_vendor
        },
        hex(machine.cpu_family),
        hex(machine.cpu_model_number)
    )
}

// AMD: the encodings are those of tools/perf/pmu-events/arch/x86/amdzen4/other.json
// (de_no_dispatch_per_slot.* = PMCx1A0: no_ops_from_frontend umask 0x01, backend_stalls
// umask 0x1e; de_src_op_disp.all = PMCx0AA umask 0x07) and amdzen4/core.json (ex_ret_ops =
// PMCx0C1; ex_no_retire.* = PMCx0D6: not_complete umask 0x02, load_not_complete umask
// 0xa2). The Zen 5 files (amdzen5/decode.json, amdzen5/execution.json) list the same codes
// and masks. Which family 0x19 models are Zen 4 follows perf's
// tools/perf/pmu-events/arch/x86/mapfile.csv: models 0x00-0x0f, 0x20-0x2f and 0x40-0x5f
// are Zen 3, every other family 0x19 model is Zen 4; family 0x1a is Zen 5.
const AMD_GROUPS: &[&[&str]] = &[
    &[
        "cpu/event=0x1a0,umask=0x01,name=de_no_dispatch_per_slot.no_ops_from_frontend/",
        "cpu/event=0x1a0,umask=0x1e,name=de_no_dispatch_per_slot.backend_stalls/",
        "cpu/event=0xaa,umask=0x07,name=de_src_op_disp.all/",
        "cpu/event=0xc1,name=ex_ret_ops/",
    ],
    &[
        "cpu/event=0xd6,umask=0xa2,name=ex_no_retire.load_not_complete/",
        "cpu/event=0xd6,umask=0x02,name=ex_no_retire.not_complete/",
    ],
];

fn amd_plan(
    machine: &CpuId,
    family: Option<u32>,
    model: Option<u32>,
) -> Result<TopdownPlan, String> {
    let method = match (family, model) {
        (Some(0x19), Some(m)) if is_zen3_model(m) => {
            return Err(format!(
                "{} is a Zen 3 core, which has no per-slot dispatch event (PMCx1A0, Zen 4 and \
                 later): no top-down breakdown",
                cpu_name(machine)
            ))
        }
        (Some(0x19), Some(_)) => Method::AmdZen4,
        (Some(0x1a), _) => Method::AmdZen5,
        _ => {
            return Err(format!(
                "{} has no per-slot dispatch event (PMCx1A0, AMD Zen 4 and later): no \
                 top-down breakdown",
                cpu_name(machine)
            ))
        }
    };
    Ok(TopdownPlan {
        method,
        groups: parse_groups(AMD_GROUPS),
    })
}

/// Family 0x19 models perf's mapfile.csv assigns to Zen 3.
fn is_zen3_model(model: u32) -> bool {
    matches!(model, 0x00..=0x0f | 0x20..=0x2f | 0x40..=0x5f)
}

// Intel Skylake class: the encodings of tools/perf/pmu-events/arch/x86/skylake/pipeline.json
// and frontend.json (IDQ_UOPS_NOT_DELIVERED.CORE 0x9c/0x01, UOPS_ISSUED.ANY 0x0e/0x01,
// UOPS_RETIRED.RETIRE_SLOTS 0xc2/0x02, INT_MISC.RECOVERY_CYCLES 0x0d/0x01,
// CYCLE_ACTIVITY.STALLS_MEM_ANY 0xa3/0x14 cmask 20, CYCLE_ACTIVITY.STALLS_TOTAL 0xa3/0x04
// cmask 4, EXE_ACTIVITY.BOUND_ON_STORES 0xa6/0x40, EXE_ACTIVITY.1_PORTS_UTIL 0xa6/0x02,
// EXE_ACTIVITY.2_PORTS_UTIL 0xa6/0x04). CPU_CLK_UNHALTED.THREAD is 0x3c/0x00, which the
// kernel places on fixed counter 1. Groups hold at most three programmable events so that
// each fits in the four a thread has with Hyper-Threading on, even when the NMI watchdog
// holds the fixed cycles counter and cycles takes a programmable one.
const SKYLAKE_GROUPS: &[&[&str]] = &[
    &[
        "cpu/event=0x3c,umask=0x00,name=CPU_CLK_UNHALTED.THREAD/",
        "cpu/event=0x9c,umask=0x01,name=IDQ_UOPS_NOT_DELIVERED.CORE/",
        "cpu/event=0x0e,umask=0x01,name=UOPS_ISSUED.ANY/",
        "cpu/event=0xc2,umask=0x02,name=UOPS_RETIRED.RETIRE_SLOTS/",
    ],
    &[
        "cpu/event=0x0d,umask=0x01,name=INT_MISC.RECOVERY_CYCLES/",
        "cpu/event=0xa3,umask=0x14,cmask=0x14,name=CYCLE_ACTIVITY.STALLS_MEM_ANY/",
        "cpu/event=0xa3,umask=0x04,cmask=0x04,name=CYCLE_ACTIVITY.STALLS_TOTAL/",
    ],
    &[
        "cpu/event=0xa6,umask=0x40,name=EXE_ACTIVITY.BOUND_ON_STORES/",
        "cpu/event=0xa6,umask=0x02,name=EXE_ACTIVITY.1_PORTS_UTIL/",
        "cpu/event=0xa6,umask=0x04,name=EXE_ACTIVITY.2_PORTS_UTIL/",
    ],
];

/// Family 6 models perf's mapfile.csv assigns to `skylake` (client: Skylake, Kaby Lake,
/// Coffee Lake, Comet Lake) and `skylakex` (Skylake-SP, Cascade Lake, Cooper Lake).
fn is_skylake_model(model: u32) -> bool {
    matches!(model, 0x4e | 0x5e | 0x8e | 0x9e | 0xa5 | 0xa6 | 0x55)
}

/// The kernel's perf-metrics events, in the order `breakdown` reads them; `slots` must
/// lead the group (the kernel refuses a metric event whose leader is not `slots`).
const PERF_METRICS_L1: &[&str] = &[
    "slots",
    "topdown-retiring",
    "topdown-bad-spec",
    "topdown-fe-bound",
    "topdown-be-bound",
];
const PERF_METRICS_MEM: &str = "topdown-mem-bound";

fn intel_plan(
    machine: &CpuId,
    probe: &Probe,
    event_sources: &Path,
    family: Option<u32>,
    model: Option<u32>,
) -> Result<TopdownPlan, String> {
    // On a hybrid CPU only the P-core PMU (cpu_core) has PERF_METRICS; elsewhere it is `cpu`.
    let pmu = if probe.core_pmus.iter().any(|p| p.name == "cpu_core") {
        "cpu_core"
    } else {
        "cpu"
    };
    if let Some(plan) = perf_metrics_plan(&event_sources.join(pmu).join("events"), pmu) {
        return Ok(plan);
    }
    match (family, model) {
        (Some(6), Some(m)) if is_skylake_model(m) && pmu == "cpu" => Ok(TopdownPlan {
            method: Method::IntelSkylakeFormula,
            groups: parse_groups(SKYLAKE_GROUPS),
        }),
        _ => Err(format!(
            "{} has neither the kernel's top-down metric events (no \
             {pmu}/events/topdown-be-bound) nor a Skylake-class core memscope has the \
             formula for: no top-down breakdown",
            cpu_name(machine)
        )),
    }
}

/// The perf-metrics plan when `events` (a PMU's sysfs events directory) lists `slots` and
/// the four level-1 metrics in the PERF_METRICS encoding (the kernel's
/// arch/x86/events/intel/core.c: `slots` = event 0x00 umask 0x04, the metrics event 0x00
/// with umasks 0x80-0x87). The cpu_atom PMU of a hybrid CPU names ordinary events
/// `topdown-*` (e.g. event 0x74); those are not metrics and are not taken. On a hybrid
/// CPU the events are aimed at `cpu_core`, so they count only while the program runs on
/// P-cores.
fn perf_metrics_plan(events: &Path, pmu: &str) -> Option<TopdownPlan> {
    let read = |name: &str| -> Option<Event> {
        let terms = read_small(&events.join(name))?;
        let event = Event::parse(&format!("{pmu}/{},name={name}/", terms.trim())).ok()?;
        // The low byte is the event select: 0x00 for every perf-metrics pseudo-event.
        let umask = (event.config >> 8) & 0xff;
        let is_metric = event.config & 0xff == 0 && (umask == 0x04 || umask >= 0x80);
        is_metric.then_some(event)
    };
    let mut group = PERF_METRICS_L1
        .iter()
        .map(|name| read(name))
        .collect::<Option<Vec<Event>>>()?;
    let method = match read(PERF_METRICS_MEM) {
        Some(mem) => {
            group.push(mem);
            Method::IntelPerfMetricsL2
        }
        None => Method::IntelPerfMetrics,
    };
    Some(TopdownPlan {
        method,
        groups: vec![group],
    })
}

/// A sysfs attribute of at most a few hundred bytes (an event's terms); `None` when
/// absent or unreadable. The read is bounded: a sysfs file is small, but nothing here
/// trusts that.
fn read_small(path: &Path) -> Option<String> {
    let mut text = String::new();
    File::open(path)
        .ok()?
        .take(512)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

fn parse_groups(groups: &[&[&str]]) -> Vec<Vec<Event>> {
    groups
        .iter()
        .map(|group| {
            group
                .iter()
                .map(|name| Event::parse(name).expect("built-in top-down events parse"))
                .collect()
        })
        .collect()
}

/// The breakdown from the counts of `plan.groups` flattened in order (`None`: not
/// counted). `None` when a count the level-1 split needs is missing, or a denominator is
/// zero; the memory/core split alone is `None` when only its counts are missing.
pub fn breakdown(plan: &TopdownPlan, counts: &[Option<f64>]) -> Option<Breakdown> {
    let expected: usize = plan.groups.iter().map(Vec::len).sum();
    if counts.len() != expected {
        return None;
    }
    // An index past the plan's events (the memory count of a level-1-only plan) is
    // simply not counted.
    let at = |i: usize| {
        counts
            .get(i)
            .copied()
            .flatten()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    match plan.method {
        Method::AmdZen4 | Method::AmdZen5 => amd_breakdown(at),
        Method::IntelPerfMetrics | Method::IntelPerfMetricsL2 => perf_metrics_breakdown(at),
        Method::IntelSkylakeFormula => skylake_breakdown(at),
    }
}

// amdzen4/pipeline.json (amdzen5 the same with 8 slots instead of 6), each over
// total_dispatch_slots = width × ls_not_halted_cyc:
//   frontend_bound  = de_no_dispatch_per_slot.no_ops_from_frontend
//   bad_speculation = de_src_op_disp.all - ex_ret_ops
//   backend_bound   = de_no_dispatch_per_slot.backend_stalls
//   retiring        = ex_ret_ops
//   backend_bound_memory = backend_bound × ex_no_retire.load_not_complete / ex_no_retire.not_complete
// Normalizing the four over their sum cancels the common denominator, so cycles are not
// counted; what the sum leaves out is perf's smt_contention.
fn amd_breakdown(at: impl Fn(usize) -> Option<f64>) -> Option<Breakdown> {
    let frontend = at(0)?;
    let backend = at(1)?;
    let dispatched = at(2)?;
    let retired = at(3)?;
    // Scaled (multiplexed) counts can leave dispatched a little under retired.
    let bad = (dispatched - retired).max(0.0);
    let mut b = normalized(retired, bad, frontend, backend)?;
    let memory_share = match (at(4), at(5)) {
        (Some(load), Some(all)) if all > 0.0 => Some((load / all).min(1.0)),
        _ => None,
    };
    b.split_backend(memory_share);
    Some(b)
}

// The kernel reads each topdown-* event as the number of slots it accounts for (the
// metric's 8-bit fraction of PERF_METRICS times the slots count). perf's
// sapphirerapids/spr-metrics.json and icelake metrics divide each by the sum of the four:
//   tma_retiring = topdown-retiring / (fe + bad-spec + retiring + be), and so on;
//   tma_memory_bound = topdown-mem-bound / (the same sum).
fn perf_metrics_breakdown(at: impl Fn(usize) -> Option<f64>) -> Option<Breakdown> {
    // Index 0 is `slots`: it must be counted (it leads the group), but the fractions come
    // from the metrics alone.
    at(0)?;
    let (retiring, bad, frontend, backend) = (at(1)?, at(2)?, at(3)?, at(4)?);
    let sum = retiring + bad + frontend + backend;
    let mut b = normalized(retiring, bad, frontend, backend)?;
    let memory_share = at(5).and_then(|mem| {
        let memory = mem / sum;
        (b.backend_bound > 0.0).then(|| (memory / b.backend_bound).min(1.0))
    });
    b.split_backend(memory_share);
    Some(b)
}

// skylake/skl-metrics.json, per thread (perf's form when SMT is off; memscope counts one
// process's threads, not the core, so the *_ANY core-wide variants do not apply):
//   slots           = 4 × CPU_CLK_UNHALTED.THREAD
//   frontend_bound  = IDQ_UOPS_NOT_DELIVERED.CORE / slots
//   bad_speculation = (UOPS_ISSUED.ANY - UOPS_RETIRED.RETIRE_SLOTS + 4 × INT_MISC.RECOVERY_CYCLES) / slots
//   retiring        = UOPS_RETIRED.RETIRE_SLOTS / slots
//   backend_bound   = 1 - the other three
//   memory_bound    = (STALLS_MEM_ANY + BOUND_ON_STORES)
//                     / (STALLS_TOTAL + 1_PORTS_UTIL + retiring × 2_PORTS_UTIL + BOUND_ON_STORES)
//                     × backend_bound
fn skylake_breakdown(at: impl Fn(usize) -> Option<f64>) -> Option<Breakdown> {
    let cycles = at(0)?;
    let not_delivered = at(1)?;
    let issued = at(2)?;
    let retire_slots = at(3)?;
    let recovery = at(4)?;
    let slots = 4.0 * cycles;
    if slots <= 0.0 {
        return None;
    }
    let frontend = not_delivered / slots;
    let bad = ((issued - retire_slots + 4.0 * recovery) / slots).max(0.0);
    let retiring = retire_slots / slots;
    // Counting noise can push the three past 1; the backend then has no share left.
    let backend = (1.0 - frontend - bad - retiring).max(0.0);
    let mut b = normalized(retiring, bad, frontend, backend)?;
    let memory_share = match (at(5), at(6), at(7), at(8), at(9)) {
        (
            Some(stalls_mem),
            Some(stalls_total),
            Some(on_stores),
            Some(one_port),
            Some(two_ports),
        ) => {
            let denominator = stalls_total + one_port + b.retiring * two_ports + on_stores;
            (denominator > 0.0).then(|| ((stalls_mem + on_stores) / denominator).min(1.0))
        }
        _ => None,
    };
    b.split_backend(memory_share);
    Some(b)
}

/// The four level-1 shares over their sum; `None` when the sum is zero.
fn normalized(retiring: f64, bad: f64, frontend: f64, backend: f64) -> Option<Breakdown> {
    let sum = retiring + bad + frontend + backend;
    if !(sum > 0.0 && sum.is_finite()) {
        return None;
    }
    Some(Breakdown {
        retiring: retiring / sum,
        bad_speculation: bad / sum,
        frontend_bound: frontend / sum,
        backend_bound: backend / sum,
        memory_bound: None,
        core_bound: None,
    })
}

impl Breakdown {
    /// Splits `backend_bound` into memory and core by `memory_share` (0..1 of it).
    fn split_backend(&mut self, memory_share: Option<f64>) {
        if let Some(share) = memory_share {
            let memory = self.backend_bound * share.clamp(0.0, 1.0);
            self.memory_bound = Some(memory);
            self.core_bound = Some(self.backend_bound - memory);
        }
    }

    /// One line, largest share first: "backend bound 46% (memory 31%, core 15%),
    /// retiring 38%, frontend 9%, bad speculation 7%".
    pub fn describe(&self) -> String {
        let pct = |v: f64| format!("{:.0}%", v * 100.0);
        let backend = match (self.memory_bound, self.core_bound) {
            (Some(memory), Some(core)) => format!(
                "backend bound {} (memory {}, core {})",
                pct(self.backend_bound),
                pct(memory),
                pct(core)
            ),
            _ => format!("backend bound {}", pct(self.backend_bound)),
        };
        let mut parts = [
            (self.backend_bound, backend),
            (self.retiring, format!("retiring {}", pct(self.retiring))),
            (
                self.frontend_bound,
                format!("frontend {}", pct(self.frontend_bound)),
            ),
            (
                self.bad_speculation,
                format!("bad speculation {}", pct(self.bad_speculation)),
            ),
        ];
        // Stable: equal shares keep the order above.
        parts.sort_by(|a, b| b.0.total_cmp(&a.0));
        parts
            .into_iter()
            .map(|(_, text)| text)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests;
