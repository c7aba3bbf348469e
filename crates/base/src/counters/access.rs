//! Misses per access at each level of the hierarchy, counted around memscope's own
//! kernels (a latency point, a stride row, a TLB row) on the measuring thread.
//!
//! Which event counts a level's misses depends on the CPU, and only some CPUs have an
//! event for every level:
//! - Intel (family 6): `MEM_LOAD_RETIRED.{L1,L2,L3}_MISS` (event 0xd1, umasks 0x08,
//!   0x10, 0x20; `MEM_LOAD_UOPS_RETIRED` before Skylake, same encoding since Ivy Bridge):
//!   retired loads that missed each level.
//! - AMD Zen (family 0x17 and later): demand data-cache fills by source (event 0x43):
//!   all sources (an L1 miss), all but the local L2 (an L2 miss), and all from outside
//!   the core complex, i.e. another complex's cache or DRAM (an L3 miss).
//! - Any other CPU: the generic `L1-dcache-load-misses` and `LLC-load-misses`; L2 has no
//!   generic event and is reported as not supported.
//!
//! The first-level DTLB misses come from the generic `dTLB-load-misses` everywhere.
//! Nothing is estimated: a level without a working event says why.

use serde::{Deserialize, Serialize};

use super::event::Event;
use super::group::{CounterGroup, Target};
use super::probe::Probe;
use super::scale::Scaled;

/// A level whose misses are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MissLevel {
    L1,
    L2,
    Llc,
    Dtlb,
}

impl MissLevel {
    pub const ALL: [MissLevel; 4] = [
        MissLevel::L1,
        MissLevel::L2,
        MissLevel::Llc,
        MissLevel::Dtlb,
    ];

    /// Column heading: "L1 miss", "L2 miss", "LLC miss", "dTLB miss".
    pub fn label(self) -> &'static str {
        match self {
            MissLevel::L1 => "L1 miss",
            MissLevel::L2 => "L2 miss",
            MissLevel::Llc => "LLC miss",
            MissLevel::Dtlb => "dTLB miss",
        }
    }
}

/// The event that counts one level's misses on this CPU, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LevelEvent {
    pub level: MissLevel,
    pub event: Result<Event, String>,
}

fn event(name: &str) -> Result<Event, String> {
    Ok(Event::parse(name).expect("built-in event names parse"))
}

/// The events counting each level's misses on a CPU of `vendor` and `family` (CPUID's
/// vendor string and display family).
pub(crate) fn level_events(vendor: &str, family: Option<u32>) -> Vec<LevelEvent> {
    let amd_zen = matches!(vendor, "AuthenticAMD" | "HygonGenuine") && family >= Some(0x17);
    let intel_core = vendor == "GenuineIntel" && family == Some(6);
    let (l1, l2, llc) = if intel_core {
        (
            event("cpu/event=0xd1,umask=0x08,name=mem_load_retired.l1_miss/"),
            event("cpu/event=0xd1,umask=0x10,name=mem_load_retired.l2_miss/"),
            event("cpu/event=0xd1,umask=0x20,name=mem_load_retired.l3_miss/"),
        )
    } else if amd_zen {
        (
            event("cpu/event=0x43,umask=0x5f,name=ls_dmnd_fills_from_sys.all/"),
            event("cpu/event=0x43,umask=0x5e,name=ls_dmnd_fills_from_sys.not_local_l2/"),
            event("cpu/event=0x43,umask=0x5c,name=ls_dmnd_fills_from_sys.outside_ccx/"),
        )
    } else {
        (
            event("L1-dcache-load-misses"),
            Err(format!(
                "not supported: no generic L2 event, and memscope knows the L2-miss event of \
                 Intel family 6 and AMD Zen only (this CPU: {vendor}, family {})",
                family.map_or("unknown".to_string(), |f| format!("{f:#x}"))
            )),
            event("LLC-load-misses"),
        )
    };
    vec![
        LevelEvent {
            level: MissLevel::L1,
            event: l1,
        },
        LevelEvent {
            level: MissLevel::L2,
            event: l2,
        },
        LevelEvent {
            level: MissLevel::Llc,
            event: llc,
        },
        LevelEvent {
            level: MissLevel::Dtlb,
            event: event("dTLB-load-misses"),
        },
    ]
}

/// One level's misses over a counted stretch of accesses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelMisses {
    pub level: MissLevel,
    /// The event counted (its `perf` name or memscope's label for a raw encoding).
    pub event: String,
    /// Misses per access, scaled for multiplexing; `None` when not counted.
    pub per_access: Option<f64>,
    /// The PMU was shared with other events, so the count is an estimate.
    #[serde(default)]
    pub multiplexed: bool,
    /// Why this level is not counted: "not supported: <reason>".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_supported: Option<String>,
}

/// Misses per access at every level for one measured point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccessCounts {
    /// The accesses the counts are divided by.
    pub accesses: u64,
    pub levels: Vec<LevelMisses>,
}

impl AccessCounts {
    /// The misses per access of `level`, when it was counted.
    pub fn per_access(&self, level: MissLevel) -> Option<f64> {
        self.levels
            .iter()
            .find(|l| l.level == level)
            .and_then(|l| l.per_access)
    }

    /// Whether any level has a count (false on a machine without a PMU).
    pub fn any_counted(&self) -> bool {
        self.levels.iter().any(|l| l.per_access.is_some())
    }

    /// A table cell for `level`: misses per access with three decimals (`*` when
    /// multiplexed), or "n/s" when not supported.
    pub fn cell(&self, level: MissLevel) -> String {
        match self.levels.iter().find(|l| l.level == level) {
            Some(LevelMisses {
                per_access: Some(v),
                multiplexed,
                ..
            }) => format!("{v:.3}{}", if *multiplexed { "*" } else { "" }),
            _ => "n/s".to_string(),
        }
    }

    /// One line per level that was not counted, with the reason, for table footnotes.
    pub fn unsupported_notes(&self) -> Vec<String> {
        self.levels
            .iter()
            .filter_map(|l| {
                l.not_supported
                    .as_ref()
                    .map(|why| format!("{} ({}): {why}", l.level.label(), l.event))
            })
            .collect()
    }
}

/// The level events, open on the calling thread.
pub struct AccessCounter {
    levels: Vec<LevelEvent>,
    group: CounterGroup,
}

impl AccessCounter {
    /// Opens the level events of this CPU for the calling thread (the measuring thread,
    /// pinned). On a hybrid CPU the generic events are opened on each core PMU and the
    /// copies summed (only the PMU of the core the thread runs on counts); raw events go
    /// to the core PMU their encoding is for, and where the thread runs on the other
    /// kind of core they are reported as never scheduled, not as zero.
    pub fn open(vendor: &str, family: Option<u32>, probe: &Probe) -> AccessCounter {
        AccessCounter::with_events(level_events(vendor, family), probe)
    }

    /// Opens the given level events for the calling thread.
    pub(crate) fn with_events(levels: Vec<LevelEvent>, probe: &Probe) -> AccessCounter {
        let wanted: Vec<Event> = levels.iter().filter_map(|l| l.event.clone().ok()).collect();
        let groups = probe.expand_for_core_pmus(&[wanted]);
        let group = CounterGroup::open_groups(&groups, Target::CallingThread, probe);
        AccessCounter { levels, group }
    }

    /// Whether any level event is open (false on a machine without a PMU).
    pub(crate) fn counts_anything(&self) -> bool {
        self.group.counting() > 0
    }

    /// Runs `work`, which makes `accesses` accesses, with the counters enabled, and
    /// returns its result and the misses per access at each level.
    pub fn count<R>(&self, accesses: u64, work: impl FnOnce() -> R) -> (R, AccessCounts) {
        let counting =
            self.counts_anything() && self.group.reset().is_ok() && self.group.enable().is_ok();
        let result = work();
        let readings = if counting {
            let _ = self.group.disable();
            self.group.read().map_err(|e| e.to_string())
        } else {
            Err(String::new())
        };
        (result, self.assemble(accesses, readings))
    }

    fn assemble(
        &self,
        accesses: u64,
        readings: Result<Vec<super::group::Reading>, String>,
    ) -> AccessCounts {
        let levels = self
            .levels
            .iter()
            .map(|level| {
                let name = match &level.event {
                    Ok(e) => e.name.clone(),
                    Err(_) => "none".to_string(),
                };
                let mut out = LevelMisses {
                    level: level.level,
                    event: name.clone(),
                    per_access: None,
                    multiplexed: false,
                    not_supported: None,
                };
                if let Err(why) = &level.event {
                    out.not_supported = Some(why.clone());
                    return out;
                }
                let readings = match &readings {
                    Ok(r) => r,
                    Err(e) if e.is_empty() => {
                        out.not_supported = Some(self.first_refusal(&name));
                        return out;
                    }
                    Err(e) => {
                        out.not_supported = Some(format!("not supported: reading failed: {e}"));
                        return out;
                    }
                };
                // The event itself, or its per-PMU copies on a hybrid CPU.
                let mut total = 0.0;
                let mut counted = false;
                let mut refusal = None;
                for r in readings.iter().filter(|r| {
                    r.event.name == name || r.event.name.ends_with(&format!("/{name}/"))
                }) {
                    match &r.result {
                        Ok(c) => {
                            if let Scaled::Counted { value, multiplexed } = c.scaled {
                                total += value as f64;
                                counted = true;
                                out.multiplexed |= multiplexed;
                            }
                        }
                        Err(u) => refusal = Some(format!("not supported: {}", u.reason)),
                    }
                }
                if counted && accesses > 0 {
                    out.per_access = Some(total / accesses as f64);
                } else {
                    out.not_supported = Some(refusal.unwrap_or_else(|| {
                        "not supported: the event never got a hardware counter".to_string()
                    }));
                }
                out
            })
            .collect();
        AccessCounts { accesses, levels }
    }

    fn first_refusal(&self, name: &str) -> String {
        self.group
            .failures()
            .find(|(e, _)| e.name == name || e.name.ends_with(&format!("/{name}/")))
            .map(|(_, u)| format!("not supported: {}", u.reason))
            .unwrap_or_else(|| "not supported: the counters could not be enabled".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_level_has_an_event_or_a_reason() {
        for (vendor, family) in [
            ("GenuineIntel", Some(6)),
            ("AuthenticAMD", Some(0x19)),
            ("AuthenticAMD", Some(0x15)),
            ("ARM", None),
        ] {
            let levels = level_events(vendor, family);
            let order: Vec<MissLevel> = levels.iter().map(|l| l.level).collect();
            assert_eq!(order, MissLevel::ALL);
            let l2 = &levels[1].event;
            let known = vendor == "GenuineIntel" || family == Some(0x19);
            assert_eq!(l2.is_ok(), known, "{vendor} {family:?}: {l2:?}");
            if let Err(why) = l2 {
                assert!(why.starts_with("not supported: "), "{why}");
            }
        }
        let zen = level_events("AuthenticAMD", Some(0x19));
        let configs: Vec<u64> = zen[..3]
            .iter()
            .map(|l| l.event.as_ref().unwrap().config)
            .collect();
        assert_eq!(configs, [0x5f43, 0x5e43, 0x5c43]);
    }

    #[test]
    fn without_a_pmu_every_level_says_why_and_work_still_runs() {
        let probe = Probe::detect();
        let counter = AccessCounter::open("AuthenticAMD", Some(0x19), &probe);
        let (sum, counts) = counter.count(1000, || (0..1000u64).sum::<u64>());
        assert_eq!(sum, 499_500);
        assert_eq!(counts.levels.len(), 4);
        if probe.has_hardware_pmu() {
            return; // counted (or refused for another reason) on a machine with a PMU
        }
        assert!(!counts.any_counted());
        for level in &counts.levels {
            let why = level.not_supported.as_deref().unwrap_or("");
            assert!(why.starts_with("not supported: no hardware PMU"), "{why}");
            assert_eq!(counts.cell(level.level), "n/s");
        }
        assert_eq!(counts.unsupported_notes().len(), 4);
    }

    #[test]
    fn cells_show_counts_and_multiplexing() {
        let counts = AccessCounts {
            accesses: 100,
            levels: vec![
                LevelMisses {
                    level: MissLevel::L1,
                    event: "x".into(),
                    per_access: Some(0.5),
                    multiplexed: true,
                    not_supported: None,
                },
                LevelMisses {
                    level: MissLevel::L2,
                    event: "none".into(),
                    per_access: None,
                    multiplexed: false,
                    not_supported: Some("not supported: no event".into()),
                },
            ],
        };
        assert_eq!(counts.cell(MissLevel::L1), "0.500*");
        assert_eq!(counts.cell(MissLevel::L2), "n/s");
        assert_eq!(counts.cell(MissLevel::Llc), "n/s");
        assert_eq!(counts.per_access(MissLevel::L1), Some(0.5));
        assert_eq!(
            counts.unsupported_notes(),
            ["L2 miss (none): not supported: no event"]
        );
    }
}
