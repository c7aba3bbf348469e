//! `union perf_mem_data_src`: the data source the kernel attaches to a precise memory
//! sample (PERF_SAMPLE_DATA_SRC), split into its fields, and its dTLB field read as a
//! `TlbOutcome` the way each vendor's driver fills it in.
//!
//! What the kernel writes in the dTLB field (bits 26-32):
//! - AMD IBS op (arch/x86/events/amd/ibs.c, `perf_ibs_get_tlb_lvl`): NA when the data
//!   address is not valid, else L1|HIT, L2|HIT (L1 missed, L2 hit) or L2|MISS;
//! - Intel PEBS load latency and stores from Haswell on (arch/x86/events/intel/ds.c,
//!   `load_latency_data`, `store_latency_data`, `pebs_set_tlb_lock`): L1|L2|HIT when the
//!   access did not miss the STLB, L2|MISS when it did; NA on Nehalem and for events
//!   without a latency record (e.g. MEM_INST_RETIRED.STLB_MISS_LOADS);
//! - Intel Sandy Bridge stores (`precise_store_data`): L2|HIT or L2|MISS, where HIT only
//!   means "did not miss the STLB" — the level is not known.

use crate::pages::access::TlbOutcome;

pub(crate) const TLB_NA: u8 = 0x01;
pub(crate) const TLB_HIT: u8 = 0x02;
pub(crate) const TLB_MISS: u8 = 0x04;
pub(crate) const TLB_L1: u8 = 0x08;
pub(crate) const TLB_L2: u8 = 0x10;
/// Resolved by the hardware page walker.
#[cfg(test)]
pub(crate) const TLB_WK: u8 = 0x20;
/// Resolved by the OS (a fault).
#[cfg(test)]
pub(crate) const TLB_OS: u8 = 0x40;

#[cfg(test)]
pub(crate) const OP_LOAD: u8 = 0x02;
#[cfg(test)]
pub(crate) const OP_STORE: u8 = 0x04;

/// Which driver filled the data source: the same bits mean different things.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Read the bits as the uapi header defines them.
    Generic,
    /// Intel PEBS: only "STLB miss or not" is known.
    IntelPebs,
    /// AMD IBS op: L1 hit, L2 hit or L2 miss.
    AmdIbs,
}

/// One `perf_mem_data_src` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct DataSrc(pub u64);

impl DataSrc {
    fn bits(self, shift: u32, width: u32) -> u64 {
        (self.0 >> shift) & ((1u64 << width) - 1)
    }

    /// `mem_op` (bits 0-4): OP_NA, OP_LOAD, OP_STORE, OP_PFETCH, OP_EXEC.
    #[cfg(test)]
    pub fn op(self) -> u8 {
        self.bits(0, 5) as u8
    }
    /// `mem_lvl` (bits 5-18): the legacy memory-level bits.
    #[cfg(test)]
    pub(crate) fn lvl(self) -> u16 {
        self.bits(5, 14) as u16
    }
    /// `mem_snoop` (bits 19-23).
    #[cfg(test)]
    pub(crate) fn snoop(self) -> u8 {
        self.bits(19, 5) as u8
    }
    /// `mem_lock` (bits 24-25).
    #[cfg(test)]
    pub fn lock(self) -> u8 {
        self.bits(24, 2) as u8
    }
    /// `mem_dtlb` (bits 26-32): the TLB_* bits.
    pub fn dtlb(self) -> u8 {
        self.bits(26, 7) as u8
    }
    /// `mem_lvl_num` (bits 33-36): PERF_MEM_LVLNUM_*.
    #[cfg(test)]
    pub(crate) fn lvl_num(self) -> u8 {
        self.bits(33, 4) as u8
    }
    /// `mem_remote` (bit 37).
    #[cfg(test)]
    pub fn remote(self) -> bool {
        self.bits(37, 1) != 0
    }
    /// `mem_snoopx` (bits 38-39).
    #[cfg(test)]
    pub(crate) fn snoopx(self) -> u8 {
        self.bits(38, 2) as u8
    }
    /// `mem_blk` (bits 40-42).
    #[cfg(test)]
    pub(crate) fn blk(self) -> u8 {
        self.bits(40, 3) as u8
    }
    /// `mem_hops` (bits 43-45).
    #[cfg(test)]
    pub(crate) fn hops(self) -> u8 {
        self.bits(43, 3) as u8
    }

    /// The access's TLB outcome as `encoding`'s driver reports it.
    pub fn tlb(self, encoding: Encoding) -> TlbOutcome {
        tlb_outcome(self.dtlb(), encoding)
    }

    /// Builds a value from its dTLB and op fields (the others zero), e.g. for tests.
    #[cfg(test)]
    pub(crate) fn from_fields(op: u8, dtlb: u8) -> DataSrc {
        DataSrc(u64::from(op & 0x1f) | (u64::from(dtlb & 0x7f) << 26))
    }
}

/// Reads the dTLB field (TLB_* bits) as a `TlbOutcome`.
///
/// Generic reading: NA or nothing → Unknown; a hit at L1 only → L1Hit; a hit at L2 only,
/// or MISS|HIT with both levels ("L1 miss, L2 hit") → L2Hit; a hit at both levels or
/// at no named level → Hit; any other MISS (with L2, WK or OS, or alone) → Miss. A miss
/// said at L1 only is read as Miss too: a level was missed and none is said to hit.
/// Intel PEBS knows only whether the STLB was missed: every hit is Hit. AMD IBS follows
/// the generic reading (its three values are L1|HIT, L2|HIT and L2|MISS).
pub(crate) fn tlb_outcome(dtlb: u8, encoding: Encoding) -> TlbOutcome {
    let has = |bit: u8| dtlb & bit != 0;
    if dtlb == 0 || (has(TLB_NA) && !has(TLB_HIT) && !has(TLB_MISS)) {
        return TlbOutcome::Unknown;
    }
    if has(TLB_HIT) && has(TLB_MISS) {
        // Only meaningful as "missed the first level, hit the second".
        return if has(TLB_L1) && has(TLB_L2) {
            TlbOutcome::L2Hit
        } else {
            TlbOutcome::Unknown
        };
    }
    if has(TLB_MISS) {
        return TlbOutcome::Miss;
    }
    if !has(TLB_HIT) {
        // Only level or resolver bits: no outcome said.
        return TlbOutcome::Unknown;
    }
    if encoding == Encoding::IntelPebs {
        return TlbOutcome::Hit;
    }
    match (has(TLB_L1), has(TLB_L2)) {
        (true, false) => TlbOutcome::L1Hit,
        (false, true) => TlbOutcome::L2Hit,
        _ => TlbOutcome::Hit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shifted(dtlb: u8) -> DataSrc {
        DataSrc(u64::from(dtlb) << 26)
    }

    #[test]
    fn fields_come_from_their_bits() {
        // op LOAD, lvl L1|HIT (0x08|0x02 at bit 5), snoop NONE (0x02 at 19), lock NA (1 at
        // 24), dtlb L1|HIT, lvl_num L1 (1 at 33), remote, snoopx FWD (1 at 38), blk NA
        // (1 at 40), hops 2 at 43.
        let v = 0x02
            | (0x0a << 5)
            | (0x02 << 19)
            | (1 << 24)
            | (0x0a << 26)
            | (1u64 << 33)
            | (1u64 << 37)
            | (1u64 << 38)
            | (1u64 << 40)
            | (2u64 << 43);
        let d = DataSrc(v);
        assert_eq!(d.op(), OP_LOAD);
        assert_eq!(d.lvl(), 0x0a);
        assert_eq!(d.snoop(), 0x02);
        assert_eq!(d.lock(), 1);
        assert_eq!(d.dtlb(), TLB_L1 | TLB_HIT);
        assert_eq!(d.lvl_num(), 1);
        assert!(d.remote());
        assert_eq!(d.snoopx(), 1);
        assert_eq!(d.blk(), 1);
        assert_eq!(d.hops(), 2);
        // dtlb spans bit 32: the top bit (OS) is not cut off.
        assert_eq!(shifted(TLB_OS | TLB_MISS).dtlb(), 0x44);
        assert_eq!(
            DataSrc::from_fields(OP_STORE, TLB_L2 | TLB_MISS).op(),
            OP_STORE
        );
    }

    #[test]
    fn amd_ibs_values() {
        let amd = Encoding::AmdIbs;
        assert_eq!(shifted(TLB_NA).tlb(amd), TlbOutcome::Unknown);
        assert_eq!(shifted(TLB_L1 | TLB_HIT).tlb(amd), TlbOutcome::L1Hit);
        assert_eq!(shifted(TLB_L2 | TLB_HIT).tlb(amd), TlbOutcome::L2Hit);
        assert_eq!(shifted(TLB_L2 | TLB_MISS).tlb(amd), TlbOutcome::Miss);
        assert_eq!(shifted(0).tlb(amd), TlbOutcome::Unknown);
    }

    #[test]
    fn intel_pebs_values() {
        let intel = Encoding::IntelPebs;
        // load_latency_data / store_latency_data / pebs_set_tlb_lock.
        assert_eq!(
            shifted(TLB_HIT | TLB_L1 | TLB_L2).tlb(intel),
            TlbOutcome::Hit
        );
        assert_eq!(shifted(TLB_MISS | TLB_L2).tlb(intel), TlbOutcome::Miss);
        // precise_store_data (Sandy Bridge): HIT means "not an STLB miss".
        assert_eq!(shifted(TLB_HIT | TLB_L2).tlb(intel), TlbOutcome::Hit);
        // Nehalem, or events without a latency record (STLB_MISS_LOADS).
        assert_eq!(shifted(TLB_NA).tlb(intel), TlbOutcome::Unknown);
        assert!(shifted(TLB_MISS | TLB_L2).tlb(intel).missed_a_level());
        assert!(!shifted(TLB_HIT | TLB_L1 | TLB_L2)
            .tlb(intel)
            .missed_a_level());
    }

    #[test]
    fn generic_reading_of_other_combinations() {
        let g = Encoding::Generic;
        assert_eq!(shifted(TLB_HIT | TLB_L1 | TLB_L2).tlb(g), TlbOutcome::Hit);
        assert_eq!(shifted(TLB_HIT).tlb(g), TlbOutcome::Hit);
        assert_eq!(
            shifted(TLB_MISS | TLB_L1 | TLB_HIT | TLB_L2).tlb(g),
            TlbOutcome::L2Hit
        );
        assert_eq!(shifted(TLB_MISS | TLB_WK).tlb(g), TlbOutcome::Miss);
        assert_eq!(shifted(TLB_MISS | TLB_OS).tlb(g), TlbOutcome::Miss);
        assert_eq!(shifted(TLB_MISS | TLB_L1).tlb(g), TlbOutcome::Miss);
        assert_eq!(shifted(TLB_MISS).tlb(g), TlbOutcome::Miss);
        assert_eq!(shifted(TLB_L1 | TLB_L2).tlb(g), TlbOutcome::Unknown);
        assert_eq!(shifted(TLB_HIT | TLB_MISS).tlb(g), TlbOutcome::Unknown);
    }
}
