//! The records of a perf ring buffer, parsed from bytes: PERF_RECORD_SAMPLE walked field
//! by field in the order linux/perf_event.h documents for the `sample_type` bits set,
//! PERF_RECORD_LOST (and LOST_SAMPLES), THROTTLE and UNTHROTTLE; other records are
//! recognised by their header only and skipped.

use crate::counters::sys::{
    RECORD_HEADER_SIZE, RECORD_LOST, RECORD_LOST_SAMPLES, RECORD_SAMPLE, RECORD_THROTTLE,
    RECORD_UNTHROTTLE, SAMPLE_ADDR, SAMPLE_AUX, SAMPLE_BRANCH_STACK, SAMPLE_CALLCHAIN,
    SAMPLE_CGROUP, SAMPLE_CODE_PAGE_SIZE, SAMPLE_CPU, SAMPLE_DATA_PAGE_SIZE, SAMPLE_DATA_SRC,
    SAMPLE_ID, SAMPLE_IDENTIFIER, SAMPLE_IP, SAMPLE_PERIOD, SAMPLE_PHYS_ADDR, SAMPLE_RAW,
    SAMPLE_READ, SAMPLE_REGS_INTR, SAMPLE_REGS_USER, SAMPLE_STACK_USER, SAMPLE_STREAM_ID,
    SAMPLE_TID, SAMPLE_TIME, SAMPLE_TRANSACTION, SAMPLE_WEIGHT, SAMPLE_WEIGHT_STRUCT,
};

/// The `sample_type` bits this parser cannot walk: their length depends on other
/// attributes (read_format, register masks) that a sample does not carry.
pub(crate) const UNSUPPORTED_SAMPLE_BITS: u64 = SAMPLE_READ
    | SAMPLE_BRANCH_STACK
    | SAMPLE_REGS_USER
    | SAMPLE_STACK_USER
    | SAMPLE_REGS_INTR
    | SAMPLE_AUX;

/// The fields of one PERF_RECORD_SAMPLE; `None` for those its `sample_type` lacks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sample {
    /// PERF_SAMPLE_IDENTIFIER (first word) or PERF_SAMPLE_ID: the event's id.
    pub id: Option<u64>,
    pub ip: Option<u64>,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub time: Option<u64>,
    pub addr: Option<u64>,
    pub stream_id: Option<u64>,
    pub cpu: Option<u32>,
    pub period: Option<u64>,
    pub callchain_len: Option<u64>,
    /// PERF_SAMPLE_WEIGHT's value, or the first 32-bit word (latency) of WEIGHT_STRUCT.
    pub weight: Option<u64>,
    /// WEIGHT_STRUCT's second and third words (`var2_w`, `var3_w`).
    pub weight_var2: Option<u16>,
    pub weight_var3: Option<u16>,
    pub data_src: Option<u64>,
    pub transaction: Option<u64>,
    pub phys_addr: Option<u64>,
    pub cgroup: Option<u64>,
    pub data_page_size: Option<u64>,
    pub code_page_size: Option<u64>,
}

/// One record of the ring buffer. Records are handled one at a time as they are read,
/// never stored in bulk, so the large `Sample` variant stays unboxed (no allocation per
/// record).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Sample(Sample),
    /// PERF_RECORD_LOST or LOST_SAMPLES: this many records were dropped.
    Lost(u64),
    Throttle,
    Unthrottle,
    /// Any other record type (MMAP, COMM, EXIT, …), skipped.
    Other(u32),
}

/// Reads the little-endian words of a record body in order.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(format!(
                "a sample record ends before its {what} field ({} bytes, needed {})",
                self.bytes.len(),
                self.at.saturating_add(n)
            ));
        };
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }
    fn u32_pair(&mut self, what: &str) -> Result<(u32, u32), String> {
        let b = self.take(8, what)?;
        Ok((
            u32::from_le_bytes(b[..4].try_into().expect("4 bytes")),
            u32::from_le_bytes(b[4..].try_into().expect("4 bytes")),
        ))
    }
}

/// Checks that records with `sample_type` can be walked by `parse_sample`.
pub(crate) fn check_sample_type(sample_type: u64) -> Result<(), String> {
    let bad = sample_type & UNSUPPORTED_SAMPLE_BITS;
    if bad != 0 {
        return Err(format!(
            "sample_type {sample_type:#x} has bits {bad:#x} (read, branch stack, registers, \
             user stack or aux) whose samples this parser cannot walk"
        ));
    }
    if sample_type & SAMPLE_WEIGHT != 0 && sample_type & SAMPLE_WEIGHT_STRUCT != 0 {
        return Err(
            "sample_type has both WEIGHT and WEIGHT_STRUCT, which the kernel refuses".to_string(),
        );
    }
    Ok(())
}

/// Parses the body (after the 8-byte header) of a PERF_RECORD_SAMPLE written for an
/// event with `sample_type`.
pub(crate) fn parse_sample(sample_type: u64, body: &[u8]) -> Result<Sample, String> {
    check_sample_type(sample_type)?;
    let has = |bit: u64| sample_type & bit != 0;
    let mut c = Cursor { bytes: body, at: 0 };
    let mut s = Sample::default();
    if has(SAMPLE_IDENTIFIER) {
        s.id = Some(c.u64("identifier")?);
    }
    if has(SAMPLE_IP) {
        s.ip = Some(c.u64("ip")?);
    }
    if has(SAMPLE_TID) {
        let (pid, tid) = c.u32_pair("pid/tid")?;
        s.pid = Some(pid);
        s.tid = Some(tid);
    }
    if has(SAMPLE_TIME) {
        s.time = Some(c.u64("time")?);
    }
    if has(SAMPLE_ADDR) {
        s.addr = Some(c.u64("addr")?);
    }
    if has(SAMPLE_ID) {
        let id = c.u64("id")?;
        s.id = s.id.or(Some(id));
    }
    if has(SAMPLE_STREAM_ID) {
        s.stream_id = Some(c.u64("stream_id")?);
    }
    if has(SAMPLE_CPU) {
        s.cpu = Some(c.u32_pair("cpu")?.0);
    }
    if has(SAMPLE_PERIOD) {
        s.period = Some(c.u64("period")?);
    }
    if has(SAMPLE_CALLCHAIN) {
        let nr = c.u64("callchain length")?;
        let bytes = usize::try_from(nr)
            .ok()
            .and_then(|n| n.checked_mul(8))
            .ok_or_else(|| format!("a sample's callchain length {nr} is impossible"))?;
        c.take(bytes, "callchain")?;
        s.callchain_len = Some(nr);
    }
    if has(SAMPLE_RAW) {
        // u32 size, then size bytes; the kernel pads the pair to a multiple of 8.
        let size = u32::from_le_bytes(c.take(4, "raw size")?.try_into().expect("4 bytes"));
        let padded = (4 + size as usize).next_multiple_of(8) - 4;
        c.take(padded, "raw data")?;
    }
    if has(SAMPLE_WEIGHT) {
        s.weight = Some(c.u64("weight")?);
    }
    if has(SAMPLE_WEIGHT_STRUCT) {
        let w = c.u64("weight")?;
        s.weight = Some(w & 0xffff_ffff);
        s.weight_var2 = Some((w >> 32) as u16);
        s.weight_var3 = Some((w >> 48) as u16);
    }
    if has(SAMPLE_DATA_SRC) {
        s.data_src = Some(c.u64("data_src")?);
    }
    if has(SAMPLE_TRANSACTION) {
        s.transaction = Some(c.u64("transaction")?);
    }
    if has(SAMPLE_PHYS_ADDR) {
        s.phys_addr = Some(c.u64("phys_addr")?);
    }
    if has(SAMPLE_CGROUP) {
        s.cgroup = Some(c.u64("cgroup")?);
    }
    if has(SAMPLE_DATA_PAGE_SIZE) {
        s.data_page_size = Some(c.u64("data_page_size")?);
    }
    if has(SAMPLE_CODE_PAGE_SIZE) {
        s.code_page_size = Some(c.u64("code_page_size")?);
    }
    Ok(s)
}

/// Parses one whole record (header included); `record.len()` is the header's size.
pub fn parse_record(sample_type: u64, record: &[u8]) -> Result<Record, String> {
    if record.len() < RECORD_HEADER_SIZE {
        return Err(format!(
            "a {}-byte record is shorter than its header",
            record.len()
        ));
    }
    let kind = u32::from_le_bytes(record[..4].try_into().expect("4 bytes"));
    let body = &record[RECORD_HEADER_SIZE..];
    let word = |i: usize| -> Result<u64, String> {
        body.get(i * 8..i * 8 + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .ok_or_else(|| format!("record type {kind} ends before its word {i}"))
    };
    Ok(match kind {
        RECORD_SAMPLE => Record::Sample(parse_sample(sample_type, body)?),
        // LOST: u64 id, u64 lost; LOST_SAMPLES: u64 lost.
        RECORD_LOST => Record::Lost(word(1)?),
        RECORD_LOST_SAMPLES => Record::Lost(word(0)?),
        RECORD_THROTTLE => Record::Throttle,
        RECORD_UNTHROTTLE => Record::Unthrottle,
        other => Record::Other(other),
    })
}

/// The size field of the header at the start of `header` (8 bytes).
pub(crate) fn record_size(header: &[u8; RECORD_HEADER_SIZE]) -> usize {
    u16::from_le_bytes([header[6], header[7]]) as usize
}

/// Test helpers: records laid out as the kernel writes them.
#[cfg(test)]
pub(crate) mod build {
    use super::*;

    /// A record of `kind` whose body is `words`.
    pub fn record(kind: u32, words: &[u64]) -> Vec<u8> {
        let size = RECORD_HEADER_SIZE + words.len() * 8;
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&(size as u16).to_le_bytes());
        for w in words {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// Two u32 packed in one word as the kernel stores them (first in the low half).
    pub fn pair(a: u32, b: u32) -> u64 {
        u64::from(a) | (u64::from(b) << 32)
    }
}

#[cfg(test)]
mod tests {
    use super::build::{pair, record};
    use super::*;
    use crate::counters::sys::SAMPLE_STREAM_ID;

    #[test]
    fn memscope_sample_type() {
        let st = SAMPLE_IDENTIFIER
            | SAMPLE_TID
            | SAMPLE_TIME
            | SAMPLE_ADDR
            | SAMPLE_WEIGHT
            | SAMPLE_DATA_SRC;
        let r = record(
            RECORD_SAMPLE,
            &[77, pair(10, 11), 5000, 0x7f00_1234, 250, 0x55],
        );
        let Record::Sample(s) = parse_record(st, &r).unwrap() else {
            panic!("not a sample");
        };
        assert_eq!(s.id, Some(77));
        assert_eq!((s.pid, s.tid), (Some(10), Some(11)));
        assert_eq!(s.time, Some(5000));
        assert_eq!(s.addr, Some(0x7f00_1234));
        assert_eq!(s.weight, Some(250));
        assert_eq!(s.data_src, Some(0x55));
        assert_eq!(s.ip, None);
        assert_eq!(s.cpu, None);
    }

    #[test]
    fn every_fixed_field_in_kernel_order() {
        let st = SAMPLE_IDENTIFIER
            | SAMPLE_IP
            | SAMPLE_TID
            | SAMPLE_TIME
            | SAMPLE_ADDR
            | SAMPLE_ID
            | SAMPLE_STREAM_ID
            | SAMPLE_CPU
            | SAMPLE_PERIOD
            | SAMPLE_WEIGHT_STRUCT
            | SAMPLE_DATA_SRC
            | SAMPLE_TRANSACTION
            | SAMPLE_PHYS_ADDR
            | SAMPLE_CGROUP
            | SAMPLE_DATA_PAGE_SIZE
            | SAMPLE_CODE_PAGE_SIZE;
        let weight = 300 | (7u64 << 32) | (9u64 << 48);
        let words = [
            1,
            0x40_1000,
            pair(3, 4),
            99,
            0xdead_b000,
            1,
            2,
            pair(5, 0),
            4096,
            weight,
            0x1234,
            6,
            0x1_0000_0000,
            8,
            2 << 20,
            4096,
        ];
        let s = parse_sample(st, &record(RECORD_SAMPLE, &words)[8..]).unwrap();
        assert_eq!(s.id, Some(1));
        assert_eq!(s.ip, Some(0x40_1000));
        assert_eq!((s.pid, s.tid), (Some(3), Some(4)));
        assert_eq!(s.time, Some(99));
        assert_eq!(s.addr, Some(0xdead_b000));
        assert_eq!(s.stream_id, Some(2));
        assert_eq!(s.cpu, Some(5));
        assert_eq!(s.period, Some(4096));
        assert_eq!(s.weight, Some(300));
        assert_eq!((s.weight_var2, s.weight_var3), (Some(7), Some(9)));
        assert_eq!(s.data_src, Some(0x1234));
        assert_eq!(s.transaction, Some(6));
        assert_eq!(s.phys_addr, Some(0x1_0000_0000));
        assert_eq!(s.cgroup, Some(8));
        assert_eq!(s.data_page_size, Some(2 << 20));
        assert_eq!(s.code_page_size, Some(4096));
    }

    #[test]
    fn id_without_identifier_and_skipped_variable_fields() {
        // IP, ADDR, ID, CPU, CALLCHAIN (2 entries), RAW (12 bytes → 4+12 padded to 16),
        // DATA_SRC.
        let st = SAMPLE_IP
            | SAMPLE_ADDR
            | SAMPLE_ID
            | SAMPLE_CPU
            | SAMPLE_CALLCHAIN
            | SAMPLE_RAW
            | SAMPLE_DATA_SRC;
        let raw_head = 12u64 | (0xaaaa_aaaa << 32);
        let words = [7, 0x1000, 42, pair(3, 0), 2, 0xa, 0xb, raw_head, 0, 0xfeed];
        let s = parse_sample(st, &record(RECORD_SAMPLE, &words)[8..]).unwrap();
        assert_eq!(s.id, Some(42));
        assert_eq!(s.addr, Some(0x1000));
        assert_eq!(s.cpu, Some(3));
        assert_eq!(s.callchain_len, Some(2));
        assert_eq!(s.data_src, Some(0xfeed));
    }

    #[test]
    fn short_and_unsupported_samples_are_errors() {
        let st = SAMPLE_TID | SAMPLE_ADDR;
        let err = parse_sample(st, &record(RECORD_SAMPLE, &[pair(1, 1)])[8..]).unwrap_err();
        assert!(err.contains("addr"), "{err}");
        assert!(parse_sample(SAMPLE_READ, &[])
            .unwrap_err()
            .contains("cannot walk"));
        assert!(check_sample_type(SAMPLE_WEIGHT | SAMPLE_WEIGHT_STRUCT).is_err());
        assert!(parse_record(st, &[0; 4]).is_err());
    }

    #[test]
    fn lost_throttle_and_other_records() {
        assert_eq!(
            parse_record(0, &record(RECORD_LOST, &[5, 123, 0])).unwrap(),
            Record::Lost(123)
        );
        assert_eq!(
            parse_record(0, &record(RECORD_LOST_SAMPLES, &[17])).unwrap(),
            Record::Lost(17)
        );
        assert_eq!(
            parse_record(0, &record(RECORD_THROTTLE, &[1, 2, 3])).unwrap(),
            Record::Throttle
        );
        assert_eq!(
            parse_record(0, &record(RECORD_UNTHROTTLE, &[1, 2, 3])).unwrap(),
            Record::Unthrottle
        );
        assert_eq!(
            parse_record(0, &record(3, &[1, 2])).unwrap(),
            Record::Other(3)
        );
        let r = record(RECORD_LOST, &[5, 6]);
        assert_eq!(record_size(r[..8].try_into().unwrap()), 24);
    }
}
