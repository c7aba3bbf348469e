//! Access counts as a machine might report them, for the tests of every table with miss
//! columns.

use super::{AccessCounts, LevelMisses, MissLevel};

/// Misses per access over 1000 accesses as a machine might count them: L1 counted
/// (`l1`), no L2 event, the LLC counted on a shared PMU (multiplexed), the DTLB event
/// refused.
pub fn access_counts(l1: f64) -> AccessCounts {
    let level = |level, event: &str, per_access, multiplexed, why: Option<&str>| LevelMisses {
        level,
        event: event.to_string(),
        per_access,
        multiplexed,
        not_supported: why.map(str::to_string),
    };
    AccessCounts {
        accesses: 1000,
        levels: vec![
            level(MissLevel::L1, "l1_event", Some(l1), false, None),
            level(
                MissLevel::L2,
                "none",
                None,
                false,
                Some("not supported: no generic L2 event"),
            ),
            level(MissLevel::Llc, "llc_event", Some(0.01), true, None),
            level(
                MissLevel::Dtlb,
                "dTLB-load-misses",
                None,
                false,
                Some("not supported: the CPU has no such event"),
            ),
        ],
    }
}

/// The counts of a machine without a PMU: every level says why.
pub fn uncounted_access() -> AccessCounts {
    AccessCounts {
        accesses: 1000,
        levels: MissLevel::ALL
            .iter()
            .map(|&level| LevelMisses {
                level,
                event: format!("{}_event", level.label().replace(' ', "_")),
                per_access: None,
                multiplexed: false,
                not_supported: Some("not supported: no hardware PMU (test)".to_string()),
            })
            .collect(),
    }
}
