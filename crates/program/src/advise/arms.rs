//! What each arm of `advise` changes about a run of the program: the co-runner's load on
//! its CPU, the CPUs the program may use, the environment (the pages preload library,
//! glibc's tunables), and the resctrl group it runs in (L3 ways, MBA); and which resource
//! it asks about and against which arm it is read.

use serde::{Deserialize, Serialize};

use crate::units::Bytes;

/// An arm's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArmKind {
    /// The program on its CPUs, the co-runner's CPU idle: the baseline.
    Alone,
    /// The program on every CPU memscope may use (the co-runner's too, left idle): does
    /// giving a CPU to the co-runner change the program's speed by itself?
    AllCpus,
    /// A compute-only neighbour on the co-runner's CPU: the control of the pirate and the
    /// bandit (an SMT sibling, a shared power budget or a hypervisor slow a program
    /// beside a busy CPU even when no memory is shared).
    Compute,
    /// A cache pirate holding part of the shared cache.
    Pirate,
    /// A compute-only thread on the program's own CPU in short bursts (0.5 ms of every
    /// 2 ms): the control of the pirate in turns (what being interrupted costs the
    /// program's CPU time).
    ComputeInTurns,
    /// A cache pirate on the program's own CPU in short bursts: where no other CPU shares
    /// the program's last-level cache (or there is no other CPU), every 2 ms it sweeps its
    /// set, and the program refills what it lost at each of its turns. Read by the
    /// program's CPU time, not its wall time (which the bursts lengthen).
    PirateInTurns,
    /// A bandwidth bandit taking part of the DRAM bandwidth with little cache.
    Bandit,
    /// Huge pages under every private anonymous mapping (the pages preload library).
    HugeAll,
    /// Huge pages under the hot regions only.
    HugeTop,
    /// glibc's malloc asks for transparent huge pages (`glibc.malloc.hugetlb=1`).
    MallocHugetlb,
    /// Memory interleaved over every NUMA node with memory.
    Interleave,
    /// Memory interleaved over every NUMA node with memory in the ratio of the system's
    /// weighted-interleave weights (MPOL_WEIGHTED_INTERLEAVE, Linux 6.9+): DRAM and CXL
    /// or HBM in the proportion someone chose (`memscope interleave` measures which).
    WeightedInterleave,
    /// The program restricted to some of the L3's ways by resctrl's cache allocation
    /// (CAT), without a co-runner; its level is the L3 bytes it keeps.
    CatWays,
    /// The program's memory bandwidth throttled by resctrl's MBA; its level is the
    /// percentage it is allowed.
    MbaThrottle,
}

impl ArmKind {
    pub fn resource(self) -> Resource {
        match self {
            ArmKind::Alone | ArmKind::AllCpus | ArmKind::Compute | ArmKind::ComputeInTurns => {
                Resource::Control
            }
            ArmKind::Pirate | ArmKind::PirateInTurns | ArmKind::CatWays => Resource::Cache,
            ArmKind::Bandit | ArmKind::MbaThrottle => Resource::Bandwidth,
            ArmKind::HugeAll | ArmKind::HugeTop | ArmKind::MallocHugetlb => Resource::Tlb,
            ArmKind::Interleave | ArmKind::WeightedInterleave => Resource::Placement,
        }
    }

    /// Its runs ask for huge pages (the TLB remedies): their system time and readied
    /// memory depend on how the kernel (and a VM's host) backs them.
    pub(crate) fn asks_huge_pages(self) -> bool {
        self.resource() == Resource::Tlb
    }

    /// The arm its runs are compared with: the pirate and the bandit against a busy
    /// neighbour that touches no memory, the pirate in turns against a compute thread in
    /// turns, the rest against the program alone.
    pub fn reference(self) -> ArmKind {
        match self {
            ArmKind::Pirate | ArmKind::Bandit => ArmKind::Compute,
            ArmKind::PirateInTurns => ArmKind::ComputeInTurns,
            _ => ArmKind::Alone,
        }
    }

    /// Needs a co-runner thread (on the co-runner's CPU, or in turns on the program's).
    pub(crate) fn uses_co_runner(self) -> bool {
        matches!(
            self,
            ArmKind::Compute
                | ArmKind::Pirate
                | ArmKind::Bandit
                | ArmKind::ComputeInTurns
                | ArmKind::PirateInTurns
        )
    }

    /// The direction of a change that shows a sensitivity: slower for an arm that takes a
    /// resource away, faster for a remedy; `None` for the controls and placement, where
    /// either direction is a finding.
    pub(crate) fn sensitive_when(self) -> Option<Direction> {
        match self {
            ArmKind::Pirate
            | ArmKind::PirateInTurns
            | ArmKind::Bandit
            | ArmKind::CatWays
            | ArmKind::MbaThrottle => Some(Direction::Slower),
            ArmKind::HugeAll | ArmKind::HugeTop | ArmKind::MallocHugetlb => Some(Direction::Faster),
            ArmKind::Alone
            | ArmKind::AllCpus
            | ArmKind::Compute
            | ArmKind::ComputeInTurns
            | ArmKind::Interleave
            | ArmKind::WeightedInterleave => None,
        }
    }

    /// Its co-runner runs in turns with the program on the program's CPU.
    pub(crate) fn in_turns(self) -> bool {
        matches!(self, ArmKind::ComputeInTurns | ArmKind::PirateInTurns)
    }

    /// What its runs are timed by (and its reference's, when compared with it).
    /// How its runs are timed: by the program's CPU time where a co-runner takes turns
    /// with it, or where the program keeps one CPU busy (`cpu_bound`: then the time it ran,
    /// which a host's steal or a busy run queue does not stretch, and which holds every
    /// memory stall); every CPU against the program alone always by the wall clock.
    pub fn timing(self, cpu_bound: bool) -> Timing {
        if self.in_turns() || (cpu_bound && self != ArmKind::AllCpus) {
            Timing::Cpu
        } else {
            Timing::Wall
        }
    }
}

/// Which way an arm moves the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Slower,
    Faster,
}

/// What a run is timed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Timing {
    /// Wall-clock time from start to exit.
    Wall,
    /// The program's CPU time (user + system, all its threads): where a co-runner takes
    /// turns with it on its CPU, the time it ran, not the time it waited.
    Cpu,
}

/// What an arm asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resource {
    /// Baseline and controls.
    Control,
    /// Shared-cache capacity.
    Cache,
    /// DRAM bandwidth.
    Bandwidth,
    /// Address translation (the TLB), answered by huge pages.
    Tlb,
    /// Where memory is placed (NUMA).
    Placement,
}

impl Resource {
    pub fn name(self) -> &'static str {
        match self {
            Resource::Control => "control",
            Resource::Cache => "cache capacity",
            Resource::Bandwidth => "DRAM bandwidth",
            Resource::Tlb => "TLB (huge pages)",
            Resource::Placement => "NUMA placement",
        }
    }
}

/// One arm to run: its kind and level.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmSpec {
    pub kind: ArmKind,
    /// The pirate's set (bytes) or the bandit's rate (bytes/s); `None`: flat out.
    pub level: Option<f64>,
    pub label: String,
}

impl ArmSpec {
    pub fn new(kind: ArmKind) -> ArmSpec {
        let label = match kind {
            ArmKind::Alone => "alone".to_string(),
            ArmKind::AllCpus => "on every CPU".to_string(),
            ArmKind::Compute => "compute neighbour".to_string(),
            ArmKind::Pirate => "cache pirate".to_string(),
            ArmKind::ComputeInTurns => "compute in turns (CPU time)".to_string(),
            ArmKind::PirateInTurns => "cache pirate in turns (CPU time)".to_string(),
            ArmKind::Bandit => "bandwidth bandit, flat out".to_string(),
            ArmKind::HugeAll => "huge pages, all".to_string(),
            ArmKind::HugeTop => "huge pages, hot regions".to_string(),
            ArmKind::MallocHugetlb => "glibc.malloc.hugetlb=1".to_string(),
            ArmKind::Interleave => "memory interleaved".to_string(),
            ArmKind::WeightedInterleave => "memory weighted-interleaved".to_string(),
            ArmKind::CatWays => "L3 CAT ways".to_string(),
            ArmKind::MbaThrottle => "MBA throttle".to_string(),
        };
        ArmSpec {
            kind,
            level: None,
            label,
        }
    }

    /// A pirate holding `bytes`, given as a share of the program's LLC share.
    pub fn pirate(bytes: u64, share: f64) -> ArmSpec {
        ArmSpec {
            kind: ArmKind::Pirate,
            level: Some(bytes as f64),
            label: format!(
                "pirate {} ({:.0}% of LLC share)",
                Bytes(bytes),
                share * 100.0
            ),
        }
    }

    /// A pirate sweeping `bytes` in bursts on the program's CPU, given as a share of the
    /// program's LLC share.
    pub(crate) fn pirate_in_turns(bytes: u64, share: f64) -> ArmSpec {
        ArmSpec {
            kind: ArmKind::PirateInTurns,
            level: Some(bytes as f64),
            label: format!(
                "pirate {} in turns ({:.0}% of LLC share, CPU time)",
                Bytes(bytes),
                share * 100.0
            ),
        }
    }

    /// A bandit streaming at `bytes_per_s`, given as a share of its flat-out rate.
    pub fn bandit(bytes_per_s: f64, share: f64) -> ArmSpec {
        ArmSpec {
            kind: ArmKind::Bandit,
            level: Some(bytes_per_s),
            label: format!(
                "bandit {:.1} GB/s ({:.0}% of flat out)",
                bytes_per_s / 1e9,
                share * 100.0
            ),
        }
    }

    /// The program restricted to `ways` of the L3's `total` ways, keeping `bytes` of it.
    pub(crate) fn cat_ways(ways: u32, total: u32, bytes: u64) -> ArmSpec {
        ArmSpec {
            kind: ArmKind::CatWays,
            level: Some(bytes as f64),
            label: format!("L3 CAT {ways} of {total} ways ({})", Bytes(bytes)),
        }
    }

    /// The program's bandwidth throttled to `percent` by MBA.
    pub(crate) fn mba(percent: u32) -> ArmSpec {
        ArmSpec {
            kind: ArmKind::MbaThrottle,
            level: Some(f64::from(percent)),
            label: format!("MBA throttled to {percent}%"),
        }
    }

    /// The same arm (kind and level).
    pub fn same(&self, other: &ArmSpec) -> bool {
        self.kind == other.kind && self.level == other.level
    }
}

/// The environment variable and value glibc (≥ 2.35) reads to madvise its heap for THP.
pub(crate) const MALLOC_HUGETLB: (&str, &str) = ("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1");

/// glibc's version from `gnu_get_libc_version`, when memscope runs on glibc.
pub(crate) fn glibc_version() -> Option<(u32, u32)> {
    extern "C" {
        fn gnu_get_libc_version() -> *const libc::c_char;
    }
    // SAFETY: glibc returns a pointer to a static NUL-terminated string.
    let text = unsafe { std::ffi::CStr::from_ptr(gnu_get_libc_version()) };
    let mut parts = text.to_str().ok()?.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.trim().parse().ok()?;
    Some((major, minor))
}

/// The tunable value with an existing GLIBC_TUNABLES kept (tunables are `:`-separated).
pub(crate) fn malloc_hugetlb_tunables(existing: Option<&str>) -> String {
    match existing.filter(|e| !e.is_empty()) {
        Some(e) => format!("{e}:{}", MALLOC_HUGETLB.1),
        None => MALLOC_HUGETLB.1.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn co_runner_arms_are_read_against_the_compute_neighbour() {
        assert_eq!(ArmKind::Pirate.reference(), ArmKind::Compute);
        assert_eq!(ArmKind::Bandit.reference(), ArmKind::Compute);
        assert_eq!(ArmKind::HugeAll.reference(), ArmKind::Alone);
        assert_eq!(ArmKind::Compute.reference(), ArmKind::Alone);
        assert!(ArmKind::Compute.uses_co_runner() && !ArmKind::HugeAll.uses_co_runner());
        // The pirate in turns: read by CPU time against a compute thread in turns.
        assert_eq!(ArmKind::PirateInTurns.reference(), ArmKind::ComputeInTurns);
        assert_eq!(ArmKind::ComputeInTurns.reference(), ArmKind::Alone);
        assert_eq!(ArmKind::PirateInTurns.resource(), Resource::Cache);
        assert_eq!(ArmKind::PirateInTurns.timing(false), Timing::Cpu);
        assert_eq!(ArmKind::Pirate.timing(false), Timing::Wall);
        assert_eq!(ArmKind::Pirate.timing(true), Timing::Cpu);
        assert_eq!(ArmKind::AllCpus.timing(true), Timing::Wall);
        assert!(ArmKind::ComputeInTurns.in_turns() && !ArmKind::Compute.in_turns());
        assert!(ArmSpec::pirate_in_turns(4 << 20, 0.25)
            .label
            .contains("4 MiB in turns"));
        assert_eq!(ArmKind::MallocHugetlb.resource(), Resource::Tlb);
        // resctrl's arms take the resource from the program itself: read against it alone.
        assert_eq!(ArmKind::CatWays.resource(), Resource::Cache);
        assert_eq!(ArmKind::MbaThrottle.resource(), Resource::Bandwidth);
        assert_eq!(ArmKind::CatWays.reference(), ArmKind::Alone);
        assert_eq!(ArmKind::MbaThrottle.reference(), ArmKind::Alone);
        assert!(!ArmKind::CatWays.uses_co_runner() && !ArmKind::MbaThrottle.uses_co_runner());
        let cat = ArmSpec::cat_ways(3, 11, 3 << 20);
        assert_eq!(cat.label, "L3 CAT 3 of 11 ways (3 MiB)");
        assert_eq!(cat.level, Some(f64::from(3 << 20)));
        assert_eq!(ArmSpec::mba(30).label, "MBA throttled to 30%");
    }

    #[test]
    fn tunables_are_appended_and_glibc_is_known() {
        assert_eq!(malloc_hugetlb_tunables(None), "glibc.malloc.hugetlb=1");
        assert_eq!(
            malloc_hugetlb_tunables(Some("glibc.malloc.arena_max=2")),
            "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"
        );
        let (major, _) = glibc_version().expect("tests run on glibc");
        assert!(major >= 2);
        assert!(ArmSpec::pirate(8 << 20, 0.25).label.contains("25%"));
        let b = ArmSpec::bandit(5e9, 0.5);
        assert!(b.same(&b.clone()) && !b.same(&ArmSpec::new(ArmKind::Bandit)));
    }
}
