//! Caches and TLBs. Caches come from sysfs (what the kernel found, including how many CPUs
//! share each instance), cross-checked against CPUID's deterministic cache leaves; when a VM
//! or container hides the sysfs cache directory, CPUID alone describes them. TLBs exist only
//! in CPUID: AMD's extended leaves 0x80000005/6/19, Intel's leaf 0x18 with leaf 0x2
//! descriptors as the fallback for older parts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::cpu::{cpuid, is_amd_like, parse_cpu_list, CpuidRegs, CPU_SYSFS};
use super::{read_trimmed, CacheInfo, CacheKind, TlbInfo, TlbSource};

const KIB: u64 = 1 << 10;
const PAGE_4K: u64 = 4 << 10;
const PAGE_2M: u64 = 2 << 20;
const PAGE_1G: u64 = 1 << 30;

/// Parses sysfs cache sizes: "32K", "1024K", "32768K", "1M", or a bare byte count.
pub fn parse_sysfs_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, multiplier) = match s.char_indices().last()? {
        (i, 'K' | 'k') => (&s[..i], KIB),
        (i, 'M' | 'm') => (&s[..i], KIB * KIB),
        (i, 'G' | 'g') => (&s[..i], KIB * KIB * KIB),
        _ => (s, 1),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(multiplier)
}

fn kind_from_sysfs(kind: &str) -> Option<CacheKind> {
    match kind {
        "Data" => Some(CacheKind::Data),
        "Instruction" => Some(CacheKind::Instruction),
        "Unified" => Some(CacheKind::Unified),
        _ => None,
    }
}

/// One cache as CPUID describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CpuidCache {
    pub level: u32,
    pub kind: CacheKind,
    pub size_bytes: u64,
    pub line_bytes: u64,
    pub ways: Option<u32>,
    pub sets: Option<u64>,
}

/// One subleaf of Intel leaf 4 or AMD leaf 0x8000001D (same layout). None for the null
/// entry that ends the list, and for cache types this code does not know.
pub(crate) fn decode_deterministic_cache(r: CpuidRegs) -> Option<CpuidCache> {
    let kind = match r.eax & 0x1F {
        1 => CacheKind::Data,
        2 => CacheKind::Instruction,
        3 => CacheKind::Unified,
        _ => return None,
    };
    let line = u64::from(r.ebx & 0xFFF) + 1;
    let partitions = u64::from((r.ebx >> 12) & 0x3FF) + 1;
    let ways = ((r.ebx >> 22) & 0x3FF) + 1;
    let sets = u64::from(r.ecx) + 1;
    Some(CpuidCache {
        level: (r.eax >> 5) & 0x7,
        kind,
        size_bytes: u64::from(ways) * partitions * line * sets,
        line_bytes: line,
        ways: Some(ways),
        sets: Some(sets),
    })
}

/// Walks a deterministic-cache leaf until its null subleaf.
fn deterministic_caches(leaf: u32) -> Vec<CpuidCache> {
    let mut caches = Vec::new();
    // Real CPUs stop after 4–6 subleaves; the bound guards against a hypervisor that never
    // returns the null entry.
    for subleaf in 0..32 {
        let Some(r) = cpuid(leaf, subleaf) else { break };
        if r.eax & 0x1F == 0 {
            break;
        }
        caches.extend(decode_deterministic_cache(r));
    }
    caches
}

/// Associativity as AMD encodes it, either as a full byte (L1 fields) or as the 4-bit
/// code of the L2/L3 cache and L2 TLB fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AmdAssoc {
    Disabled,
    Ways(u32),
    Full,
    /// A code the table leaves reserved; on Zen, 9 means "see leaf 0x8000001D".
    Reserved(u32),
}

impl AmdAssoc {
    /// Ways for a `ways: Option<u32>` field: None when fully associative or unknown.
    fn ways(self) -> Option<u32> {
        match self {
            AmdAssoc::Ways(n) => Some(n),
            _ => None,
        }
    }
}

/// Decodes the 4-bit associativity code of AMD's L2/L3 cache and L2 TLB fields
/// (AMD APM vol. 3, CPUID Fn8000_0006).
pub(crate) fn decode_amd_assoc(code: u32) -> AmdAssoc {
    match code & 0xF {
        0x0 => AmdAssoc::Disabled,
        0x1 => AmdAssoc::Ways(1),
        0x2 => AmdAssoc::Ways(2),
        0x3 => AmdAssoc::Ways(3),
        0x4 => AmdAssoc::Ways(4),
        0x5 => AmdAssoc::Ways(6),
        0x6 => AmdAssoc::Ways(8),
        0x8 => AmdAssoc::Ways(16),
        0xA => AmdAssoc::Ways(32),
        0xB => AmdAssoc::Ways(48),
        0xC => AmdAssoc::Ways(64),
        0xD => AmdAssoc::Ways(96),
        0xE => AmdAssoc::Ways(128),
        0xF => AmdAssoc::Full,
        other => AmdAssoc::Reserved(other),
    }
}

/// Decodes the 8-bit associativity of AMD's L1 fields (leaf 0x80000005), which is the way
/// count itself except for 0xFF (fully associative) and 0 (reserved).
pub(crate) fn decode_amd_l1_assoc(byte: u32) -> AmdAssoc {
    match byte & 0xFF {
        0 => AmdAssoc::Reserved(0),
        0xFF => AmdAssoc::Full,
        n => AmdAssoc::Ways(n),
    }
}

/// Caches from AMD's legacy leaves 0x80000005/6, for CPUs (or hypervisors) without
/// topology extensions. Coarser than 0x8000001D: the L3 size is in 512 KiB units.
pub(crate) fn decode_amd_legacy_caches(
    l5: Option<CpuidRegs>,
    l6: Option<CpuidRegs>,
) -> Vec<CpuidCache> {
    let mut caches = Vec::new();
    let mut push = |level, kind, size_bytes: u64, line_bytes: u64, assoc: AmdAssoc| {
        if size_bytes == 0 || assoc == AmdAssoc::Disabled {
            return;
        }
        let ways = assoc.ways();
        let sets = ways
            .filter(|_| line_bytes > 0)
            .map(|w| size_bytes / (line_bytes * u64::from(w)));
        caches.push(CpuidCache {
            level,
            kind,
            size_bytes,
            line_bytes,
            ways,
            sets,
        });
    };
    if let Some(r) = l5 {
        for (kind, reg) in [(CacheKind::Data, r.ecx), (CacheKind::Instruction, r.edx)] {
            push(
                1,
                kind,
                u64::from(reg >> 24) * KIB,
                u64::from(reg & 0xFF),
                decode_amd_l1_assoc(reg >> 16),
            );
        }
    }
    if let Some(r) = l6 {
        push(
            2,
            CacheKind::Unified,
            u64::from(r.ecx >> 16) * KIB,
            u64::from(r.ecx & 0xFF),
            decode_amd_assoc(r.ecx >> 12),
        );
        push(
            3,
            CacheKind::Unified,
            u64::from(r.edx >> 18) * 512 * KIB,
            u64::from(r.edx & 0xFF),
            decode_amd_assoc(r.edx >> 12),
        );
    }
    caches
}

/// Caches as CPUID reports them (empty off x86_64). Each vendor's own leaf is tried first;
/// the other vendor's leaf answers with zeros, so trying it too is harmless.
pub(crate) fn cpuid_caches(vendor: &str) -> Vec<CpuidCache> {
    // AMD defines 0x8000001D only with TopologyExtensions (0x80000001 ECX bit 22).
    let amd_topoext = || cpuid(0x8000_0001, 0).is_some_and(|r| r.ecx & (1 << 22) != 0);
    let amd = || {
        if amd_topoext() {
            deterministic_caches(0x8000_001D)
        } else {
            Vec::new()
        }
    };
    let mut caches = if is_amd_like(vendor) {
        amd()
    } else {
        deterministic_caches(4)
    };
    if caches.is_empty() {
        caches = if is_amd_like(vendor) {
            deterministic_caches(4)
        } else {
            amd()
        };
    }
    if caches.is_empty() && is_amd_like(vendor) {
        caches = decode_amd_legacy_caches(cpuid(0x8000_0005, 0), cpuid(0x8000_0006, 0));
    }
    caches
}

/// One `cpuN/cache/indexM` directory.
struct SysfsCache {
    level: u32,
    kind: CacheKind,
    size_bytes: Option<u64>,
    line_bytes: Option<u64>,
    ways: Option<u32>,
    sets: Option<u64>,
    shared: Vec<usize>,
}

/// The caches sysfs lists for `cpu`. With `geometry` false only level, type and sharing
/// are read, which is all the instance count needs on machines with hundreds of CPUs.
fn sysfs_caches(cpu: usize, geometry: bool) -> Vec<SysfsCache> {
    let Ok(entries) = std::fs::read_dir(format!("{CPU_SYSFS}/cpu{cpu}/cache")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .filter_map(|e| {
            let dir = e.path();
            let read = |name: &str| read_trimmed(Path::new(&dir).join(name));
            let number = |name: &str| read(name).and_then(|s| s.parse::<u64>().ok());
            let level = read("level")?.parse().ok()?;
            let kind = kind_from_sysfs(&read("type")?)?;
            let shared = read("shared_cpu_list")
                .and_then(|s| parse_cpu_list(&s).ok())
                .unwrap_or_default();
            let mut cache = SysfsCache {
                level,
                kind,
                size_bytes: None,
                line_bytes: None,
                ways: None,
                sets: None,
                shared,
            };
            if geometry {
                cache.size_bytes = read("size").and_then(|s| parse_sysfs_size(&s));
                cache.line_bytes = number("coherency_line_size").filter(|&n| n > 0);
                // Some hypervisors report 0 ways for "don't know".
                cache.ways = number("ways_of_associativity")
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|&n| n > 0);
                cache.sets = number("number_of_sets").filter(|&n| n > 0);
            }
            Some(cache)
        })
        .collect()
}

/// The line size to assume when neither sysfs nor CPUID gives one: every current x86 and
/// most arm64 cores use 64 bytes, and 0 would only make consumers divide by zero.
const DEFAULT_LINE_BYTES: u64 = 64;

/// Caches seen from the first allowed CPU, with instance counts over all online CPUs and
/// CPUID sizes alongside; from CPUID alone when sysfs has nothing.
pub(crate) fn detect_caches(allowed: &[usize], online: &[usize], vendor: &str) -> Vec<CacheInfo> {
    let from_cpuid = cpuid_caches(vendor);
    let cpuid_match = |level: u32, kind: CacheKind| {
        from_cpuid
            .iter()
            .find(|c| c.level == level && c.kind == kind)
    };
    // A container may hide some CPUs' directories; any CPU we may run on will do.
    let local = allowed
        .iter()
        .chain(online)
        .map(|&cpu| sysfs_caches(cpu, true))
        .find(|caches| !caches.is_empty())
        .unwrap_or_default();

    let mut caches: Vec<CacheInfo> = if local.is_empty() {
        from_cpuid
            .iter()
            .map(|c| CacheInfo {
                level: c.level,
                kind: c.kind,
                size_bytes: c.size_bytes,
                line_bytes: c.line_bytes,
                ways: c.ways,
                sets: c.sets,
                shared_with_cpus: Vec::new(),
                instances: 0,
                cpuid_size_bytes: Some(c.size_bytes),
            })
            .collect()
    } else {
        let mut instances: BTreeMap<(u32, CacheKind), BTreeSet<Vec<usize>>> = BTreeMap::new();
        for &cpu in online {
            for c in sysfs_caches(cpu, false) {
                let sharing = if c.shared.is_empty() {
                    vec![cpu]
                } else {
                    c.shared
                };
                instances
                    .entry((c.level, c.kind))
                    .or_default()
                    .insert(sharing);
            }
        }
        local
            .into_iter()
            .filter_map(|c| {
                let cpuid = cpuid_match(c.level, c.kind);
                let line_bytes = c
                    .line_bytes
                    .or(cpuid.map(|x| x.line_bytes))
                    .unwrap_or(DEFAULT_LINE_BYTES);
                let computed = match (c.ways, c.sets) {
                    (Some(w), Some(s)) => Some(u64::from(w) * s * line_bytes),
                    _ => None,
                };
                let size_bytes = c.size_bytes.or(computed).or(cpuid.map(|x| x.size_bytes))?;
                Some(CacheInfo {
                    level: c.level,
                    kind: c.kind,
                    size_bytes,
                    line_bytes,
                    ways: c.ways,
                    sets: c.sets,
                    instances: instances.get(&(c.level, c.kind)).map_or(1, |set| set.len()),
                    shared_with_cpus: c.shared,
                    cpuid_size_bytes: cpuid.map(|x| x.size_bytes),
                })
            })
            .collect()
    };
    caches.sort_by_key(|c| (c.level, c.kind));
    caches
}

fn tlb(
    level: u32,
    kind: CacheKind,
    page_bytes: u64,
    entries: u32,
    ways: Option<u32>,
    source: TlbSource,
) -> TlbInfo {
    TlbInfo {
        level,
        kind,
        page_bytes,
        entries,
        ways,
        source,
    }
}

/// TLBs from AMD's leaves: 0x80000005 (L1, 8-bit fields), 0x80000006 (L2, 12-bit entries and
/// 4-bit associativity), 0x80000019 (1 GiB pages, L1 and L2, same layout as 0x80000006).
/// The 2M/4M fields are reported as 2 MiB, the page size x86_64 actually uses.
pub(crate) fn decode_amd_tlbs(
    l5: Option<CpuidRegs>,
    l6: Option<CpuidRegs>,
    l19: Option<CpuidRegs>,
) -> Vec<TlbInfo> {
    let mut out = Vec::new();
    let mut push = |level, kind, page, entries: u32, assoc: AmdAssoc, source| {
        if entries > 0 && assoc != AmdAssoc::Disabled {
            out.push(tlb(level, kind, page, entries, assoc.ways(), source));
        }
    };
    if let Some(r) = l5 {
        let src = TlbSource::Cpuid80000005;
        for (page, reg) in [(PAGE_4K, r.ebx), (PAGE_2M, r.eax)] {
            push(
                1,
                CacheKind::Data,
                page,
                (reg >> 16) & 0xFF,
                decode_amd_l1_assoc(reg >> 24),
                src,
            );
            push(
                1,
                CacheKind::Instruction,
                page,
                reg & 0xFF,
                decode_amd_l1_assoc(reg >> 8),
                src,
            );
        }
    }
    // Both leaves split each register into a data half (high) and an instruction half (low).
    let mut split = |level, page, reg: u32, src| {
        push(
            level,
            CacheKind::Data,
            page,
            (reg >> 16) & 0xFFF,
            decode_amd_assoc(reg >> 28),
            src,
        );
        push(
            level,
            CacheKind::Instruction,
            page,
            reg & 0xFFF,
            decode_amd_assoc(reg >> 12),
            src,
        );
    };
    if let Some(r) = l6 {
        split(2, PAGE_4K, r.ebx, TlbSource::Cpuid80000006);
        split(2, PAGE_2M, r.eax, TlbSource::Cpuid80000006);
    }
    if let Some(r) = l19 {
        split(1, PAGE_1G, r.eax, TlbSource::Cpuid80000019);
        split(2, PAGE_1G, r.ebx, TlbSource::Cpuid80000019);
    }
    out
}

/// TLBs from the subleaves of Intel leaf 0x18 (deterministic address translation). Invalid
/// subleaves (type 0) may sit between valid ones, so all are decoded.
pub(crate) fn decode_intel_leaf18(subleaves: &[CpuidRegs]) -> Vec<TlbInfo> {
    let mut out = Vec::new();
    for r in subleaves {
        // Load-only and store-only TLBs (types 4 and 5, hybrid cores) are data TLBs; the
        // source says which half they are.
        let (kind, source) = match r.edx & 0x1F {
            1 => (CacheKind::Data, TlbSource::Cpuid18),
            2 => (CacheKind::Instruction, TlbSource::Cpuid18),
            3 => (CacheKind::Unified, TlbSource::Cpuid18),
            4 => (CacheKind::Data, TlbSource::Cpuid18LoadOnly),
            5 => (CacheKind::Data, TlbSource::Cpuid18StoreOnly),
            _ => continue,
        };
        let level = (r.edx >> 5) & 0x7;
        let fully_associative = r.edx & (1 << 8) != 0;
        let ways = r.ebx >> 16;
        let entries = ways.saturating_mul(r.ecx);
        if entries == 0 {
            continue;
        }
        let ways = (!fully_associative).then_some(ways);
        let mut pages = Vec::new();
        if r.ebx & 0b0001 != 0 {
            pages.push(PAGE_4K);
        }
        if r.ebx & 0b0110 != 0 {
            pages.push(PAGE_2M);
        }
        if r.ebx & 0b1000 != 0 {
            pages.push(PAGE_1G);
        }
        for page in pages {
            out.push(tlb(level, kind, page, entries, ways, source));
        }
    }
    out
}

type Leaf2Row = (u8, u32, CacheKind, u64, u32, Option<u32>);

/// Common TLB descriptors of Intel leaf 0x2: (descriptor, level, kind, page size, entries,
/// ways; None = fully associative). 4 MiB entries are listed as 2 MiB, and a descriptor
/// covering several page sizes has one row per size.
const LEAF2_TLBS: &[Leaf2Row] = &[
    (0x01, 1, CacheKind::Instruction, PAGE_4K, 32, Some(4)),
    (0x02, 1, CacheKind::Instruction, PAGE_2M, 2, None),
    (0x03, 1, CacheKind::Data, PAGE_4K, 64, Some(4)),
    (0x04, 1, CacheKind::Data, PAGE_2M, 8, Some(4)),
    (0x05, 1, CacheKind::Data, PAGE_2M, 32, Some(4)),
    (0x0B, 1, CacheKind::Instruction, PAGE_2M, 4, Some(4)),
    (0x50, 1, CacheKind::Instruction, PAGE_4K, 64, None),
    (0x50, 1, CacheKind::Instruction, PAGE_2M, 64, None),
    (0x51, 1, CacheKind::Instruction, PAGE_4K, 128, None),
    (0x51, 1, CacheKind::Instruction, PAGE_2M, 128, None),
    (0x52, 1, CacheKind::Instruction, PAGE_4K, 256, None),
    (0x52, 1, CacheKind::Instruction, PAGE_2M, 256, None),
    (0x55, 1, CacheKind::Instruction, PAGE_2M, 7, None),
    (0x56, 1, CacheKind::Data, PAGE_2M, 16, Some(4)),
    (0x57, 1, CacheKind::Data, PAGE_4K, 16, Some(4)),
    (0x59, 1, CacheKind::Data, PAGE_4K, 16, None),
    (0x5A, 1, CacheKind::Data, PAGE_2M, 32, Some(4)),
    (0x5B, 1, CacheKind::Data, PAGE_4K, 64, None),
    (0x5B, 1, CacheKind::Data, PAGE_2M, 64, None),
    (0x5C, 1, CacheKind::Data, PAGE_4K, 128, None),
    (0x5C, 1, CacheKind::Data, PAGE_2M, 128, None),
    (0x5D, 1, CacheKind::Data, PAGE_4K, 256, None),
    (0x5D, 1, CacheKind::Data, PAGE_2M, 256, None),
    (0x61, 1, CacheKind::Instruction, PAGE_4K, 48, None),
    (0x63, 1, CacheKind::Data, PAGE_2M, 32, Some(4)),
    (0x63, 1, CacheKind::Data, PAGE_1G, 4, Some(4)),
    (0x64, 1, CacheKind::Data, PAGE_4K, 512, Some(4)),
    (0x6A, 1, CacheKind::Data, PAGE_4K, 64, Some(8)),
    (0x6B, 1, CacheKind::Data, PAGE_4K, 256, Some(8)),
    (0x6C, 1, CacheKind::Data, PAGE_2M, 128, Some(8)),
    (0x6D, 1, CacheKind::Data, PAGE_1G, 16, None),
    (0x76, 1, CacheKind::Instruction, PAGE_2M, 8, None),
    (0xA0, 1, CacheKind::Data, PAGE_4K, 32, None),
    (0xB0, 1, CacheKind::Instruction, PAGE_4K, 128, Some(4)),
    (0xB1, 1, CacheKind::Instruction, PAGE_2M, 8, Some(4)),
    (0xB2, 1, CacheKind::Instruction, PAGE_4K, 64, Some(4)),
    (0xB3, 1, CacheKind::Data, PAGE_4K, 128, Some(4)),
    (0xB4, 1, CacheKind::Data, PAGE_4K, 256, Some(4)),
    (0xB5, 1, CacheKind::Instruction, PAGE_4K, 64, Some(8)),
    (0xB6, 1, CacheKind::Instruction, PAGE_4K, 128, Some(8)),
    (0xBA, 1, CacheKind::Data, PAGE_4K, 64, Some(4)),
    (0xC0, 1, CacheKind::Data, PAGE_4K, 8, Some(4)),
    (0xC0, 1, CacheKind::Data, PAGE_2M, 8, Some(4)),
    (0xC1, 2, CacheKind::Unified, PAGE_4K, 1024, Some(8)),
    (0xC1, 2, CacheKind::Unified, PAGE_2M, 1024, Some(8)),
    (0xC2, 1, CacheKind::Data, PAGE_4K, 16, Some(4)),
    (0xC2, 1, CacheKind::Data, PAGE_2M, 16, Some(4)),
    (0xC3, 2, CacheKind::Unified, PAGE_4K, 1536, Some(6)),
    (0xC3, 2, CacheKind::Unified, PAGE_2M, 1536, Some(6)),
    (0xC3, 2, CacheKind::Unified, PAGE_1G, 16, Some(4)),
    (0xC4, 1, CacheKind::Data, PAGE_2M, 32, Some(4)),
    (0xCA, 2, CacheKind::Unified, PAGE_4K, 512, Some(4)),
];

/// TLBs named by the descriptor bytes of Intel leaf 0x2. A register with bit 31 set holds
/// no descriptors, and the low byte of EAX is an iteration count, not a descriptor.
pub(crate) fn decode_intel_leaf2(r: CpuidRegs) -> Vec<TlbInfo> {
    let mut out: Vec<TlbInfo> = Vec::new();
    for (index, reg) in [r.eax, r.ebx, r.ecx, r.edx].into_iter().enumerate() {
        if reg & (1 << 31) != 0 {
            continue;
        }
        let bytes = reg.to_le_bytes();
        let skip = usize::from(index == 0);
        for &descriptor in &bytes[skip..] {
            for &(d, level, kind, page, entries, ways) in LEAF2_TLBS {
                let entry = tlb(level, kind, page, entries, ways, TlbSource::Cpuid2);
                if d == descriptor && !out.contains(&entry) {
                    out.push(entry);
                }
            }
        }
    }
    out
}

fn intel_tlbs() -> Vec<TlbInfo> {
    if let Some(first) = cpuid(0x18, 0) {
        // EAX of subleaf 0 is the highest subleaf; the bound guards against nonsense values.
        let subleaves: Vec<CpuidRegs> = (0..=first.eax.min(63))
            .filter_map(|s| cpuid(0x18, s))
            .collect();
        let tlbs = decode_intel_leaf18(&subleaves);
        if !tlbs.is_empty() {
            return tlbs;
        }
    }
    cpuid(2, 0).map(decode_intel_leaf2).unwrap_or_default()
}

fn amd_tlbs() -> Vec<TlbInfo> {
    decode_amd_tlbs(
        cpuid(0x8000_0005, 0),
        cpuid(0x8000_0006, 0),
        // cpuid() already returns None when the maximum extended leaf is below 0x80000019.
        cpuid(0x8000_0019, 0),
    )
}

/// TLB geometry from CPUID, ordered by level, kind and page size; empty off x86_64. The
/// vendor's own leaves go first; the other vendor's read as zeros, so they are a safe
/// fallback for CPUs of a third vendor.
pub(crate) fn detect_tlbs(vendor: &str) -> Vec<TlbInfo> {
    let mut tlbs = if is_amd_like(vendor) {
        amd_tlbs()
    } else {
        intel_tlbs()
    };
    if tlbs.is_empty() {
        tlbs = if is_amd_like(vendor) {
            intel_tlbs()
        } else {
            amd_tlbs()
        };
    }
    tlbs.sort_by_key(|t| (t.level, t.kind, t.page_bytes));
    tlbs
}

#[cfg(test)]
mod tests;
