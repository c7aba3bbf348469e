//! The machine as the OS and the CPU describe it: CPU identity, caches, TLBs, NUMA nodes,
//! page sizes and huge-page pools, THP mode, hypervisor and kernel, and the memory
//! this process may use: MemAvailable, or its cgroup's limit when that is tighter
//! (`cgroup`).
//!
//! Everything here is *reported*, not measured: experiments compare what they measure
//! against it. Sources are sysfs and procfs first (they reflect what the kernel actually
//! enabled), CPUID second (x86_64 only) as a cross-check and for what sysfs lacks (TLBs);
//! on Arm the core is named from MIDR_EL1 (`arm`).
//! The clock fields are filled in by `platform::timer` after calibration.

use serde::{Deserialize, Serialize};

pub mod arm;
pub mod balloon;
pub mod caches;
pub mod cgroup;
pub mod cpu;
pub mod memory;
pub mod numa;
pub mod process;
pub mod smaps;
pub mod storage;
pub mod tiers;

/// The `machine` object of the report (see docs/DESIGN.md, "Output contract").
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Machine {
    /// Marketing name, e.g. "AMD EPYC 9R14 96-Core Processor" (CPUID brand string or
    /// /proc/cpuinfo), or on Arm the core named from MIDR_EL1, e.g. "Arm Neoverse N1 r3p1
    /// (MIDR_EL1 0x413fd0c1)".
    pub cpu_model: String,
    /// "AuthenticAMD", "GenuineIntel", or the architecture's vendor.
    pub cpu_vendor: String,
    /// x86 display family/model/stepping, when known.
    pub cpu_family: Option<u32>,
    pub cpu_model_number: Option<u32>,
    pub cpu_stepping: Option<u32>,
    pub architecture: String,
    /// Online logical CPUs.
    pub logical_cpus: usize,
    /// Distinct physical cores among the online CPUs.
    pub physical_cores: usize,
    /// Logical CPUs per core (1 without SMT).
    pub threads_per_core: usize,
    /// Groups of logical CPUs that share one core (only groups of two or more).
    pub smt_sibling_groups: Vec<Vec<usize>>,
    /// CPUs this process may run on (its affinity mask).
    pub allowed_cpus: Vec<usize>,
    /// Data, instruction and unified caches, ordered by level then kind.
    pub caches: Vec<CacheInfo>,
    /// TLB geometry from CPUID (empty when unavailable).
    pub tlbs: Vec<TlbInfo>,
    pub numa_nodes: Vec<NumaNode>,
    /// Memory tiers, demotion, NUMA balancing and weighted interleave (`tiers`).
    #[serde(default)]
    pub memory_tiering: tiers::MemoryTiering,
    /// MemTotal and MemAvailable of /proc/meminfo.
    pub memory_total_bytes: u64,
    pub memory_available_bytes: u64,
    /// The tightest memory limit of this process's cgroups, when one is set (what a
    /// size must fit is `available_memory()`, the smaller of the two).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<cgroup::CgroupMemoryLimit>,
    /// Base page size and every huge page size the kernel offers.
    pub base_page_bytes: u64,
    pub page_sizes_bytes: Vec<u64>,
    /// hugetlbfs pools, one per huge page size.
    pub hugepage_pools: Vec<HugePagePool>,
    pub thp: ThpInfo,
    /// Hypervisor vendor from CPUID leaf 0x40000000 (e.g. "KVMKVMKVM" → "KVM"), if any.
    pub hypervisor: Option<String>,
    pub kernel: String,
    /// Current clock source (/sys/devices/system/clocksource), e.g. "tsc", "kvm-clock".
    pub clocksource: Option<String>,
    /// Calibrated rate of the fixed-rate counter memscope times with, Hz: the TSC on
    /// x86_64, the generic timer (CNTVCT_EL0) on aarch64.
    pub tsc_hz: Option<f64>,
    /// Core clock estimated from a chain of dependent 1-cycle adds, Hz.
    pub core_hz_estimate: Option<f64>,
    /// CPU frequency scaling: governor and min/max of cpufreq, when exposed.
    pub cpufreq: Option<CpuFreq>,
    /// Vector ISA extensions relevant to the kernels ("avx512f", "avx2", "sse2" …).
    pub isa_extensions: Vec<String>,
    /// Performance counters: the core PMUs the kernel lists and perf_event_paranoid.
    #[serde(default)]
    pub perf_counters: Option<crate::counters::Probe>,
    /// The filesystem and block device `files` made its test files on (when it ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<storage::Storage>,
}

/// What a cache or TLB holds, written in reports as "data", "instruction" or "unified"; a
/// report with any other kind is refused when read, naming the value. Ordered as caches
/// and TLBs are listed: data, instruction, unified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheKind {
    Data,
    Instruction,
    Unified,
}

impl CacheKind {
    pub fn name(self) -> &'static str {
        match self {
            CacheKind::Data => "data",
            CacheKind::Instruction => "instruction",
            CacheKind::Unified => "unified",
        }
    }
}

impl std::fmt::Display for CacheKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One cache as sysfs reports it, cross-checked with CPUID.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CacheInfo {
    pub level: u32,
    pub kind: CacheKind,
    pub size_bytes: u64,
    pub line_bytes: u64,
    pub ways: Option<u32>,
    pub sets: Option<u64>,
    /// Logical CPUs sharing one instance of this cache (as seen from the first allowed CPU).
    pub shared_with_cpus: Vec<usize>,
    /// Number of instances across the machine.
    pub instances: usize,
    /// Size CPUID reports for this cache, when it could be read; differs from sysfs only
    /// when a hypervisor or kernel presents something else.
    pub cpuid_size_bytes: Option<u64>,
}

impl CacheInfo {
    /// A cache for tests: 64-byte lines, 8 ways, one instance, no CPUID size.
    #[cfg(any(test, feature = "test-support"))]
    pub fn sample(
        level: u32,
        kind: CacheKind,
        size_bytes: u64,
        shared_with_cpus: Vec<usize>,
    ) -> CacheInfo {
        CacheInfo {
            level,
            kind,
            size_bytes,
            line_bytes: 64,
            ways: Some(8),
            sets: None,
            shared_with_cpus,
            instances: 1,
            cpuid_size_bytes: None,
        }
    }

    /// "L1d", "L1i", "L2", "L3" …
    pub fn name(&self) -> String {
        match self.kind {
            CacheKind::Data => format!("L{}d", self.level),
            CacheKind::Instruction => format!("L{}i", self.level),
            CacheKind::Unified => format!("L{}", self.level),
        }
    }

    /// Caches that hold data (data or unified).
    pub fn holds_data(&self) -> bool {
        self.kind != CacheKind::Instruction
    }
}

/// One TLB as CPUID describes it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TlbInfo {
    /// 1 or 2.
    pub level: u32,
    pub kind: CacheKind,
    pub page_bytes: u64,
    pub entries: u32,
    /// None = fully associative or not reported.
    pub ways: Option<u32>,
    pub source: TlbSource,
}

/// The CPUID leaf a TLB's description came from, written in reports as "cpuid 0x2",
/// "cpuid 0x18 (load-only)", "cpuid 0x80000005", ….
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum TlbSource {
    /// Intel's descriptor bytes.
    #[serde(rename = "cpuid 0x2")]
    Cpuid2,
    /// Intel's deterministic address translation leaf.
    #[serde(rename = "cpuid 0x18")]
    Cpuid18,
    /// Leaf 0x18's load-only data TLB.
    #[serde(rename = "cpuid 0x18 (load-only)")]
    Cpuid18LoadOnly,
    /// Leaf 0x18's store-only data TLB.
    #[serde(rename = "cpuid 0x18 (store-only)")]
    Cpuid18StoreOnly,
    /// AMD's L1 TLBs (4 KiB and 2 MiB pages).
    #[serde(rename = "cpuid 0x80000005")]
    Cpuid80000005,
    /// AMD's L2 TLBs (4 KiB and 2 MiB pages).
    #[serde(rename = "cpuid 0x80000006")]
    Cpuid80000006,
    /// AMD's 1 GiB-page TLBs.
    #[serde(rename = "cpuid 0x80000019")]
    Cpuid80000019,
}

impl TlbSource {
    pub fn name(self) -> &'static str {
        match self {
            TlbSource::Cpuid2 => "cpuid 0x2",
            TlbSource::Cpuid18 => "cpuid 0x18",
            TlbSource::Cpuid18LoadOnly => "cpuid 0x18 (load-only)",
            TlbSource::Cpuid18StoreOnly => "cpuid 0x18 (store-only)",
            TlbSource::Cpuid80000005 => "cpuid 0x80000005",
            TlbSource::Cpuid80000006 => "cpuid 0x80000006",
            TlbSource::Cpuid80000019 => "cpuid 0x80000019",
        }
    }
}

impl std::fmt::Display for TlbSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct NumaNode {
    pub id: usize,
    pub cpus: Vec<usize>,
    pub memory_total_bytes: u64,
    pub memory_free_bytes: u64,
    /// Row of /sys/devices/system/node/nodeN/distance.
    pub distances: Vec<u32>,
    /// What the node's memory is (DRAM unless sysfs tells otherwise).
    #[serde(default)]
    pub kind: tiers::MemoryKind,
    /// The kernel's memory tier of the node, when it has tiers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<u32>,
    /// The firmware's (ACPI HMAT) figures: access0 (any initiator), access1 (CPUs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hmat: Option<tiers::HmatAccess>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hmat_cpu: Option<tiers::HmatAccess>,
}

impl NumaNode {
    /// Whether threads can run here (a row of the NUMA matrices).
    pub fn has_cpus(&self) -> bool {
        !self.cpus.is_empty()
    }

    /// Whether memory can be bound here (a column of the NUMA matrices).
    pub fn has_memory(&self) -> bool {
        self.memory_total_bytes > 0
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HugePagePool {
    pub page_bytes: u64,
    pub total: u64,
    pub free: u64,
    pub reserved: u64,
    pub surplus: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ThpInfo {
    pub enabled: ThpMode,
    pub defrag: Option<String>,
    /// THP size (usually 2 MiB).
    pub pmd_bytes: Option<u64>,
}

/// The transparent-huge-page mode: the bracketed choice of
/// /sys/kernel/mm/transparent_hugepage/enabled, or `Unavailable` on a kernel without THP
/// (no such file); written in reports as "always", "madvise", "never" or "unavailable".
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ThpMode {
    Always,
    Madvise,
    Never,
    #[default]
    Unavailable,
}

impl ThpMode {
    pub fn name(self) -> &'static str {
        match self {
            ThpMode::Always => "always",
            ThpMode::Madvise => "madvise",
            ThpMode::Never => "never",
            ThpMode::Unavailable => "unavailable",
        }
    }

    /// The mode named by the kernel's bracketed choice; None for a word the kernel does
    /// not write there.
    pub fn parse(choice: &str) -> Option<ThpMode> {
        [ThpMode::Always, ThpMode::Madvise, ThpMode::Never]
            .into_iter()
            .find(|m| m.name() == choice)
    }

    /// Whether a process can get huge pages by asking (`madvise`) or without asking.
    pub fn offers_huge_pages(self) -> bool {
        matches!(self, ThpMode::Always | ThpMode::Madvise)
    }
}

impl std::fmt::Display for ThpMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CpuFreq {
    pub governor: Option<String>,
    pub min_hz: Option<f64>,
    pub max_hz: Option<f64>,
    /// Whether boost/turbo is enabled (cpufreq/boost), when exposed.
    pub boost: Option<bool>,
}

impl Machine {
    /// The fixed-rate counter's name in output: "TSC", or "CNTVCT" (the generic timer) for
    /// a report made on aarch64.
    pub fn counter_name(&self) -> &'static str {
        if self.architecture == "aarch64" {
            "CNTVCT"
        } else {
            "TSC"
        }
    }

    /// The cache line size the OS reports (64 when it reports none).
    pub fn line_bytes(&self) -> u64 {
        self.caches
            .iter()
            .map(|c| c.line_bytes)
            .find(|&l| l > 0)
            .unwrap_or(64)
    }

    /// A machine for tests: 8 CPUs at 3 GHz with a 32 KiB L1d and L1i, a 1 MiB L2 and a
    /// 32 MiB L3 (8 ways, four instances each shared by CPUs 0 and 1, CPUID agreeing).
    #[cfg(any(test, feature = "test-support"))]
    pub fn sample() -> Machine {
        use crate::units::{KIB, MIB};
        let cache = |level, kind, size: u64| CacheInfo {
            sets: Some(size / 64 / 8),
            instances: 4,
            cpuid_size_bytes: Some(size),
            ..CacheInfo::sample(level, kind, size, vec![0, 1])
        };
        Machine {
            cpu_model: "Test CPU 9000".to_string(),
            logical_cpus: 8,
            caches: vec![
                cache(1, CacheKind::Data, 32 * KIB),
                cache(1, CacheKind::Instruction, 32 * KIB),
                cache(2, CacheKind::Unified, MIB),
                cache(3, CacheKind::Unified, 32 * MIB),
            ],
            core_hz_estimate: Some(3.0e9),
            ..Machine::default()
        }
    }

    /// The memory this process may allocate: MemAvailable, or the headroom of its
    /// cgroup's limit or of its address-space limit (`ulimit -v`, read now) when that is
    /// smaller, and which it is.
    pub fn available_memory(&self) -> memory::AvailableMemory {
        tightest(self.memory_available_bytes, self.memory_limit.clone())
    }

    /// The same, every figure read now (before a buffer is mapped).
    pub fn available_memory_now() -> memory::AvailableMemory {
        let available = memory::read_meminfo_field("MemAvailable").unwrap_or(0);
        tightest(available, cgroup::detect())
    }

    /// Data-holding caches (L1d, L2, L3 …) ordered by level.
    pub fn data_caches(&self) -> Vec<&CacheInfo> {
        let mut caches: Vec<&CacheInfo> = self.caches.iter().filter(|c| c.holds_data()).collect();
        caches.sort_by_key(|c| c.level);
        caches
    }

    /// The largest data cache, or None when the OS reports no caches.
    pub fn largest_cache_bytes(&self) -> Option<u64> {
        self.data_caches().iter().map(|c| c.size_bytes).max()
    }
}

/// The least of MemAvailable (0: unknown), a cgroup's headroom and the address-space
/// limit's, with what it is.
fn tightest(available: u64, cgroup: Option<cgroup::CgroupMemoryLimit>) -> memory::AvailableMemory {
    use memory::{AvailableMemory, MemoryBound};
    let mut best = AvailableMemory {
        bytes: available,
        bound: MemoryBound::MemAvailable,
    };
    let mut consider = |bytes: u64, bound: MemoryBound| {
        let unknown = best.bytes == 0 && best.bound == MemoryBound::MemAvailable;
        if unknown || bytes < best.bytes {
            best = AvailableMemory { bytes, bound };
        }
    };
    if let Some(limit) = cgroup {
        consider(limit.headroom_bytes(), MemoryBound::Cgroup(limit));
    }
    if let Some((limit_bytes, in_use_bytes)) = memory::address_space_limit() {
        let bound = MemoryBound::AddressSpace {
            limit_bytes,
            in_use_bytes,
        };
        consider(limit_bytes.saturating_sub(in_use_bytes), bound);
    }
    best
}

/// The most a small sysfs/procfs file may hold: sysfs attributes are at most a page, and
/// even a node's `meminfo` or an 8192-CPU list is far below this.
const SMALL_FILE_LIMIT: u64 = 64 * 1024;

/// First `key : value` line of `/proc/cpuinfo` (i.e. CPU 0's), value trimmed.
pub fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// Contents of a small sysfs/procfs file, trimmed; None when it is missing, unreadable, not
/// UTF-8 or longer than `SMALL_FILE_LIMIT` (never read past it), which on VMs and in
/// containers is normal rather than an error.
fn read_trimmed(path: impl AsRef<std::path::Path>) -> Option<String> {
    read_small(path).map(|s| s.trim().to_string())
}

/// Contents of a small sysfs/procfs file, read no further than `SMALL_FILE_LIMIT`; None
/// when it is missing, unreadable, not UTF-8 or longer than that.
fn read_small(path: impl AsRef<std::path::Path>) -> Option<String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    file.take(SMALL_FILE_LIMIT + 1)
        .read_to_string(&mut text)
        .ok()?;
    (text.len() as u64 <= SMALL_FILE_LIMIT).then_some(text)
}

/// Describes this machine from procfs, sysfs and CPUID. Only an unreadable /proc/meminfo is
/// an error: every later size check depends on it. Anything else missing (cpufreq in a VM,
/// cache directories in a container, CPUID off x86_64) leaves its field empty or None.
/// `tsc_hz` and `core_hz_estimate` stay None for the timer to fill in.
pub fn detect() -> anyhow::Result<Machine> {
    use anyhow::Context as _;

    let meminfo = std::fs::read_to_string("/proc/meminfo").context("reading /proc/meminfo")?;
    let memory_total_bytes = memory::parse_meminfo_field(&meminfo, "MemTotal")
        .context("/proc/meminfo has no MemTotal line")?;
    let mem_free = memory::parse_meminfo_field(&meminfo, "MemFree").unwrap_or(0);
    // Kernels before 3.14 lack MemAvailable; free memory is the conservative stand-in.
    let memory_available_bytes =
        memory::parse_meminfo_field(&meminfo, "MemAvailable").unwrap_or(mem_free);

    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let identity = cpu::identity(&cpuinfo);
    let online = cpu::online_cpus();
    let allowed = cpu::allowed_cpus();
    let layout = cpu::core_layout(&online);

    let base_page_bytes = memory::base_page_bytes();
    let hugepage_pools = memory::hugepage_pools();
    let memory_tiering = tiers::MemoryTiering::detect();
    let numa_nodes = numa::detect_numa(numa::NumaContext {
        online_cpus: &online,
        mem_total: memory_total_bytes,
        mem_free,
        cpu_model: &identity.model,
        tiers: &memory_tiering.tiers,
    });

    Ok(Machine {
        caches: caches::detect_caches(&allowed, &online, &identity.vendor),
        tlbs: caches::detect_tlbs(&identity.vendor),
        numa_nodes,
        memory_tiering,
        cpu_model: identity.model,
        cpu_vendor: identity.vendor,
        cpu_family: identity.family,
        cpu_model_number: identity.model_number,
        cpu_stepping: identity.stepping,
        architecture: std::env::consts::ARCH.to_string(),
        logical_cpus: online.len(),
        physical_cores: layout.physical_cores,
        threads_per_core: layout.threads_per_core,
        smt_sibling_groups: layout.smt_sibling_groups,
        allowed_cpus: allowed,
        memory_total_bytes,
        memory_available_bytes,
        memory_limit: cgroup::detect(),
        base_page_bytes,
        page_sizes_bytes: memory::page_sizes(base_page_bytes, &hugepage_pools),
        hugepage_pools,
        thp: memory::thp_info(),
        hypervisor: cpu::detect_hypervisor(&cpuinfo),
        kernel: cpu::kernel_release(),
        clocksource: cpu::clocksource(),
        tsc_hz: None,
        core_hz_estimate: None,
        cpufreq: cpu::cpufreq(),
        isa_extensions: cpu::isa_extensions(&cpuinfo),
        perf_counters: Some(crate::counters::Probe::detect()),
        storage: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thp_modes_and_tlb_sources_keep_the_names_reports_hold() {
        for (mode, name) in [
            (ThpMode::Always, "always"),
            (ThpMode::Madvise, "madvise"),
            (ThpMode::Never, "never"),
            (ThpMode::Unavailable, "unavailable"),
        ] {
            let json = format!("\"{name}\"");
            assert_eq!(serde_json::to_string(&mode).unwrap(), json);
            assert_eq!(serde_json::from_str::<ThpMode>(&json).unwrap(), mode);
        }
        assert_eq!(ThpMode::parse("madvise"), Some(ThpMode::Madvise));
        assert_eq!(ThpMode::parse("unavailable"), None);
        assert_eq!(ThpMode::parse("defer"), None);
        let sources = [
            TlbSource::Cpuid2,
            TlbSource::Cpuid18,
            TlbSource::Cpuid18LoadOnly,
            TlbSource::Cpuid18StoreOnly,
            TlbSource::Cpuid80000005,
            TlbSource::Cpuid80000006,
            TlbSource::Cpuid80000019,
        ];
        for source in sources {
            let json = format!("\"{}\"", source.name());
            assert_eq!(serde_json::to_string(&source).unwrap(), json);
            assert_eq!(serde_json::from_str::<TlbSource>(&json).unwrap(), source);
        }
        for bad in ["\"Always\"", "\"\""] {
            let err = serde_json::from_str::<ThpMode>(bad)
                .unwrap_err()
                .to_string();
            assert!(err.contains(bad.trim_matches('"')), "{err}");
        }
        let err = serde_json::from_str::<TlbSource>("\"sysfs\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("sysfs"), "{err}");
    }

    #[test]
    fn the_counter_is_named_by_the_architecture_the_report_was_made_on() {
        let mut machine = Machine {
            architecture: "aarch64".into(),
            ..Machine::default()
        };
        assert_eq!(machine.counter_name(), "CNTVCT");
        machine.architecture = "x86_64".into();
        assert_eq!(machine.counter_name(), "TSC");
    }

    #[test]
    fn detect_describes_this_machine() {
        let machine = detect().expect("detect() on a Linux host");
        assert!(machine.logical_cpus >= 1);
        assert!(!machine.allowed_cpus.is_empty());
        assert!(machine.memory_total_bytes > 0);
        assert!(machine.base_page_bytes >= 4096);
        assert_eq!(machine.page_sizes_bytes[0], machine.base_page_bytes);
        assert!(!machine.numa_nodes.is_empty());
        assert!(
            machine
                .caches
                .iter()
                .any(|c| c.level == 1 && c.kind == CacheKind::Data),
            "no L1d in {:#?}",
            machine.caches
        );
        assert!(machine.tsc_hz.is_none() && machine.core_hz_estimate.is_none());
        println!("{machine:#?}");
    }
}
