//! Tests of `caches.rs`: split out so the module reads as the code it is.

use super::*;

fn regs(eax: u32, ebx: u32, ecx: u32, edx: u32) -> CpuidRegs {
    CpuidRegs { eax, ebx, ecx, edx }
}

#[test]
fn sysfs_sizes_parse() {
    assert_eq!(parse_sysfs_size("32K"), Some(32 << 10));
    assert_eq!(parse_sysfs_size("1024K\n"), Some(1 << 20));
    assert_eq!(parse_sysfs_size("32768K"), Some(32 << 20));
    assert_eq!(parse_sysfs_size("1M"), Some(1 << 20));
    assert_eq!(parse_sysfs_size("2G"), Some(2 << 30));
    assert_eq!(parse_sysfs_size("512"), Some(512));
    assert_eq!(parse_sysfs_size("K"), None);
    assert_eq!(parse_sysfs_size(""), None);
    assert_eq!(parse_sysfs_size("12Q"), None);
}

#[test]
fn amd_associativity_codes_decode() {
    let expected = [
        (0x0, AmdAssoc::Disabled),
        (0x1, AmdAssoc::Ways(1)),
        (0x2, AmdAssoc::Ways(2)),
        (0x4, AmdAssoc::Ways(4)),
        (0x5, AmdAssoc::Ways(6)),
        (0x6, AmdAssoc::Ways(8)),
        (0x7, AmdAssoc::Reserved(7)),
        (0x8, AmdAssoc::Ways(16)),
        (0x9, AmdAssoc::Reserved(9)),
        (0xA, AmdAssoc::Ways(32)),
        (0xB, AmdAssoc::Ways(48)),
        (0xC, AmdAssoc::Ways(64)),
        (0xD, AmdAssoc::Ways(96)),
        (0xE, AmdAssoc::Ways(128)),
        (0xF, AmdAssoc::Full),
    ];
    for (code, assoc) in expected {
        assert_eq!(decode_amd_assoc(code), assoc, "code {code:#x}");
    }
    assert_eq!(decode_amd_l1_assoc(0xFF), AmdAssoc::Full);
    assert_eq!(decode_amd_l1_assoc(8), AmdAssoc::Ways(8));
}

/// Register values read on a Zen 4 EPYC under KVM.
#[test]
fn amd_tlb_leaves_decode() {
    let tlbs = decode_amd_tlbs(
        Some(regs(0xff48_ff40, 0xff48_ff40, 0x2008_0140, 0x2008_0140)),
        Some(regs(0x5c00_2200, 0x6c00_4200, 0x0400_6140, 0x0a00_9140)),
        Some(regs(0, 0, 0, 0)),
    );
    let find = |level, kind: CacheKind, page| {
        tlbs.iter()
            .find(|t| t.level == level && t.kind == kind && t.page_bytes == page)
            .map(|t| (t.entries, t.ways))
    };
    assert_eq!(find(1, CacheKind::Data, PAGE_4K), Some((72, None)));
    assert_eq!(find(1, CacheKind::Instruction, PAGE_4K), Some((64, None)));
    assert_eq!(find(1, CacheKind::Data, PAGE_2M), Some((72, None)));
    assert_eq!(find(2, CacheKind::Data, PAGE_4K), Some((3072, Some(8))));
    assert_eq!(
        find(2, CacheKind::Instruction, PAGE_4K),
        Some((512, Some(4)))
    );
    assert_eq!(find(2, CacheKind::Data, PAGE_2M), Some((3072, Some(6))));
    assert_eq!(
        find(2, CacheKind::Instruction, PAGE_2M),
        Some((512, Some(2)))
    );
    assert_eq!(find(1, CacheKind::Data, PAGE_1G), None);
    assert_eq!(tlbs.len(), 8);
    // 1 GiB TLBs, as a Zen 3 reports them: L1 64-entry fully associative, L2 2048 8-way.
    let giga = decode_amd_tlbs(None, None, Some(regs(0xF040_F040, 0x6800_0000, 0, 0)));
    assert_eq!(giga.len(), 3);
    assert_eq!(giga[0].page_bytes, PAGE_1G);
    assert_eq!((giga[0].entries, giga[0].ways), (64, None));
    assert_eq!((giga[2].level, giga[2].entries), (2, 2048));
    assert_eq!(giga[2].source, TlbSource::Cpuid80000019);
}

#[test]
fn deterministic_cache_leaf_decodes() {
    // Zen 4 L1d and L3 from leaf 0x8000001D.
    let l1d = decode_deterministic_cache(regs(0x121, 0x01c0_003f, 0x3f, 0)).unwrap();
    assert_eq!(
        (l1d.level, l1d.kind, l1d.size_bytes),
        (1, CacheKind::Data, 32 << 10)
    );
    assert_eq!(
        (l1d.ways, l1d.sets, l1d.line_bytes),
        (Some(8), Some(64), 64)
    );
    let l3 = decode_deterministic_cache(regs(0x4163, 0x03c0_003f, 0x7fff, 1)).unwrap();
    assert_eq!(
        (l3.level, l3.kind, l3.size_bytes),
        (3, CacheKind::Unified, 32 << 20)
    );
    assert_eq!(decode_deterministic_cache(regs(0, 0, 0, 0)), None);
}

#[test]
fn amd_legacy_cache_leaves_decode() {
    let caches = decode_amd_legacy_caches(
        Some(regs(0, 0, 0x2008_0140, 0x2008_0140)),
        Some(regs(0, 0, 0x0400_6140, 0x0a00_9140)),
    );
    assert_eq!(caches.len(), 4);
    assert_eq!((caches[0].level, caches[0].size_bytes), (1, 32 << 10));
    assert_eq!(caches[0].sets, Some(64));
    assert_eq!((caches[2].size_bytes, caches[2].ways), (1 << 20, Some(8)));
    // The legacy L3 field counts the whole package (here 640 x 512 KiB), and Zen's
    // code 9 ("see 0x8000001D") leaves its ways unknown.
    assert_eq!((caches[3].size_bytes, caches[3].ways), (320 << 20, None));
}

#[test]
fn intel_leaf18_decodes() {
    let subleaves = [
        // Subleaf 0: EAX = max subleaf, null type.
        regs(3, 0, 0, 0),
        // L1 DTLB load, 4K, 16 ways x 4 sets.
        regs(0, 0x0010_0001, 4, (1 << 5) | 4),
        // L1 ITLB 2M/4M fully associative, 8 entries.
        regs(0, 0x0008_0006, 1, (1 << 5) | (1 << 8) | 2),
        // STLB 4K+2M+1G, 8 ways x 256 sets.
        regs(0, 0x0008_000B, 256, (2 << 5) | 3),
    ];
    let tlbs = decode_intel_leaf18(&subleaves);
    assert_eq!(tlbs.len(), 5);
    assert_eq!(
        tlbs[0],
        tlb(
            1,
            CacheKind::Data,
            PAGE_4K,
            64,
            Some(16),
            TlbSource::Cpuid18LoadOnly
        )
    );
    assert_eq!(
        tlbs[1],
        tlb(
            1,
            CacheKind::Instruction,
            PAGE_2M,
            8,
            None,
            TlbSource::Cpuid18
        )
    );
    assert_eq!(tlbs[4].page_bytes, PAGE_1G);
    assert_eq!((tlbs[4].entries, tlbs[4].kind), (2048, CacheKind::Unified));
}

#[test]
fn intel_leaf2_descriptors_decode() {
    // Haswell-like: EAX = 0x76036301 (iteration count 1), EBX = 0x00f0b5ff, EDX = 0x00c30000.
    let tlbs = decode_intel_leaf2(regs(0x7603_6301, 0x00f0_b5ff, 0, 0x00c3_0000));
    assert!(tlbs.contains(&tlb(
        1,
        CacheKind::Data,
        PAGE_2M,
        32,
        Some(4),
        TlbSource::Cpuid2
    )));
    assert!(tlbs.contains(&tlb(
        1,
        CacheKind::Data,
        PAGE_1G,
        4,
        Some(4),
        TlbSource::Cpuid2
    )));
    assert!(tlbs.contains(&tlb(
        1,
        CacheKind::Instruction,
        PAGE_2M,
        8,
        None,
        TlbSource::Cpuid2
    )));
    assert!(tlbs.contains(&tlb(
        1,
        CacheKind::Instruction,
        PAGE_4K,
        64,
        Some(8),
        TlbSource::Cpuid2
    )));
    assert!(tlbs.contains(&tlb(
        2,
        CacheKind::Unified,
        PAGE_4K,
        1536,
        Some(6),
        TlbSource::Cpuid2
    )));
    // 0x03 in EAX's second byte is a descriptor (DTLB 4K 64 entries).
    assert!(tlbs.contains(&tlb(
        1,
        CacheKind::Data,
        PAGE_4K,
        64,
        Some(4),
        TlbSource::Cpuid2
    )));
    // The iteration count 0x01 in EAX's low byte is not read as descriptor 0x01.
    assert!(!tlbs.contains(&tlb(
        1,
        CacheKind::Instruction,
        PAGE_4K,
        32,
        Some(4),
        TlbSource::Cpuid2
    )));
    // A register with bit 31 set is ignored.
    assert!(decode_intel_leaf2(regs(0x01, 0x8000_00c3, 0, 0)).is_empty());
}
