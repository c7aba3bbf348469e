//! The Arm SPE packet format (Arm ARM, chapter D10 "Statistical Profiling Extension",
//! section "Statistical Profiling Extension sample record specification") and the
//! decoding of a byte stream of records into [`MemSample`]s.
//!
//! A record is a sequence of packets ended by an End packet, or by a Timestamp packet
//! (which then is the record's last packet). A packet is a one-byte header, or a
//! two-byte extended header (`0b001000xx` followed by the header proper, the `xx` bits
//! being the high bits of the packet's index), then a little-endian payload whose size
//! the header's bits [5:4] give (1, 2, 4 or 8 bytes). The headers:
//!
//! | header (bits)       | packet      | payload                                       |
//! |---------------------|-------------|-----------------------------------------------|
//! | `0000_0000`         | Padding     | none                                          |
//! | `0000_0001`         | End         | none                                          |
//! | `0111_0001`         | Timestamp   | 8 bytes: the generic timer count              |
//! | `01ss_0010`         | Events      | 1–8 bytes: one bit per event (below)          |
//! | `01ss_0011`         | Data source | implementation defined                        |
//! | `0110_01ii`         | Context     | 4 bytes: CONTEXTIDR_EL1 (ii=0) or _EL2 (ii=1) |
//! | `0100_10cc`         | Operation   | 1 byte; class cc: 0 other, 1 load/store, 2 branch |
//! | `1011_0iii`         | Address     | 8 bytes; index 0 PC, 1 branch target, 2 data VA, 3 data PA |
//! | `1001_1iii`         | Counter     | 2 bytes; index 0 total latency, 1 issue, 2 translation |
//! | `0010_00ii 0000_0000` | Alignment | skips to the next multiple of 2^(ii+1) bytes  |
//!
//! Events bits: 0 generated exception, 1 retired, 2 L1D access, 3 L1D refill, 4 TLB
//! access, 5 TLB walk (the "TLB refill" of older texts), 6 not taken, 7 mispredicted,
//! 8 LLC access, 9 LLC miss, 10 remote access, 11 misaligned.
//!
//! The TLB outcome of a sample, from its Events packet:
//! - TLB walk set → [`TlbOutcome::Miss`]: the translation missed every TLB level and the
//!   MMU walked the translation tables;
//! - TLB access set, walk not set → [`TlbOutcome::Hit`]: some TLB level held it (SPE does
//!   not say which, so never `L1Hit`/`L2Hit`);
//! - neither bit, or no Events packet → [`TlbOutcome::Unknown`].

use crate::pages::access::{MemSample, TlbOutcome};

/// Event bits of the Events packet payload this module reads.
pub const EV_RETIRED: u64 = 1 << 1;
pub const EV_L1D_ACCESS: u64 = 1 << 2;
pub const EV_L1D_REFILL: u64 = 1 << 3;
pub const EV_TLB_ACCESS: u64 = 1 << 4;
pub const EV_TLB_WALK: u64 = 1 << 5;
pub const EV_LLC_ACCESS: u64 = 1 << 8;
pub const EV_LLC_MISS: u64 = 1 << 9;

/// Address packet index of the data virtual address.
const ADDR_INDEX_DATA_VA: u8 = 2;
/// Counter packet index of the total latency (issue to completion, in cycles).
const COUNTER_INDEX_TOTAL_LATENCY: u8 = 0;
/// Context packet indexes.
const CONTEXT_EL1: u8 = 0;
const CONTEXT_EL2: u8 = 1;

/// One decoded packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Packet {
    /// Padding or an Alignment packet: nothing to read.
    Padding,
    End,
    Timestamp(u64),
    Events(u64),
    DataSource(u64),
    Context {
        index: u8,
        value: u32,
    },
    Operation {
        class: u8,
        payload: u8,
    },
    Address {
        index: u8,
        payload: u64,
    },
    Counter {
        index: u8,
        value: u64,
    },
}

/// What reading one packet from the front of a buffer gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// The packet and how many bytes it took.
    Packet(Packet, usize),
    /// The buffer ends inside the packet.
    NeedMore,
    /// The first byte starts no packet the specification defines.
    Bad,
}

/// The payload size the header's bits [5:4] say.
fn payload_len(header: u8) -> usize {
    1 << ((header >> 4) & 0b11)
}

fn little_endian(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// Reads the packet at the front of `buf`. `position` is where `buf[0]` is in the AUX
/// buffer (its offset from a page boundary is enough): Alignment packets pad to a
/// multiple of their alignment counted from there.
pub(crate) fn parse_packet(buf: &[u8], position: u64) -> Parsed {
    let Some(&first) = buf.first() else {
        return Parsed::NeedMore;
    };
    // (header byte, header length, index bits from an extended header)
    let (header, header_len, high_index) = if first & 0b1111_1100 == 0b0010_0000 {
        let Some(&second) = buf.get(1) else {
            return Parsed::NeedMore;
        };
        if second == 0 {
            let alignment = 1u64 << ((first & 0b11) + 1);
            let skip = alignment - (position % alignment);
            return if buf.len() as u64 >= skip {
                Parsed::Packet(Packet::Padding, skip as usize)
            } else {
                Parsed::NeedMore
            };
        }
        (second, 2, (first & 0b11) << 3)
    } else {
        (first, 1, 0)
    };
    let with_payload = |make: &dyn Fn(u64) -> Packet| {
        let len = payload_len(header);
        match buf.get(header_len..header_len + len) {
            Some(bytes) => Parsed::Packet(make(little_endian(bytes)), header_len + len),
            None => Parsed::NeedMore,
        }
    };
    if header_len == 1 {
        match header {
            0x00 => return Parsed::Packet(Packet::Padding, 1),
            0x01 => return Parsed::Packet(Packet::End, 1),
            0x71 => return with_payload(&Packet::Timestamp),
            _ => {}
        }
        match header & 0b1100_1111 {
            0x42 => return with_payload(&Packet::Events),
            0x43 => return with_payload(&Packet::DataSource),
            _ => {}
        }
        match header & 0b1111_1100 {
            0x64 => {
                let index = header & 0b11;
                return with_payload(&|v| Packet::Context {
                    index,
                    value: v as u32,
                });
            }
            0x48 => {
                let class = header & 0b11;
                return with_payload(&|v| Packet::Operation {
                    class,
                    payload: v as u8,
                });
            }
            _ => {}
        }
    }
    // Address and Counter packets may come with either header form.
    let index = high_index | (header & 0b111);
    match header & 0b1111_1000 {
        0xb0 => with_payload(&|payload| Packet::Address { index, payload }),
        0x98 => with_payload(&|v| Packet::Counter {
            index,
            value: v & 0xffff,
        }),
        _ => Parsed::Bad,
    }
}

/// The data virtual address of an Address packet payload: bits [55:0], the top byte (a
/// TBI tag) replaced by the sign extension of bit 55.
fn data_address(payload: u64) -> u64 {
    let addr = payload & ((1 << 56) - 1);
    if addr & (1 << 55) != 0 {
        addr | (0xff << 56)
    } else {
        addr
    }
}

/// The TLB outcome an Events payload says (see the module documentation).
pub(crate) fn tlb_outcome(events: Option<u64>) -> TlbOutcome {
    match events {
        Some(ev) if ev & EV_TLB_WALK != 0 => TlbOutcome::Miss,
        Some(ev) if ev & EV_TLB_ACCESS != 0 => TlbOutcome::Hit,
        _ => TlbOutcome::Unknown,
    }
}

/// What [`decode`] went through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecodeStats {
    /// Complete records (ended by End or Timestamp).
    pub records: u64,
    /// Samples produced: records with a data virtual address.
    pub samples: u64,
    /// Complete records without one (branches, other operations).
    pub without_address: u64,
    /// Records (complete or not) dropped because a byte inside them started no known
    /// packet.
    pub corrupt_records: u64,
    /// Bytes skipped because they started no known packet.
    pub bad_bytes: u64,
    /// Bytes up to the end of the last complete record (or padding after it).
    pub consumed: usize,
    /// The bytes ended inside a packet or a record; that part was not used.
    pub truncated: bool,
}

/// The packets of the record being read.
#[derive(Default)]
struct Record {
    started: bool,
    corrupt: bool,
    data_va: Option<u64>,
    latency: Option<u64>,
    events: Option<u64>,
    timestamp: Option<u64>,
    context_el1: Option<u32>,
    context_el2: Option<u32>,
}

impl Record {
    /// The thread the record's Context packet names. Linux writes the running thread's
    /// id (`task_pid_nr`) into CONTEXTIDR when built with CONFIG_PID_IN_CONTEXTIDR:
    /// CONTEXTIDR_EL1, or CONTEXTIDR_EL2 for a kernel running at EL2 (VHE). When both
    /// packets come (a guest whose hypervisor also collects EL2's), EL1's is the guest
    /// kernel's. 0 is taken as "not set": the kernel was built without that option.
    fn thread(&self) -> Option<u32> {
        self.context_el1
            .filter(|&v| v != 0)
            .or(self.context_el2.filter(|&v| v != 0))
    }

    fn sample(&self, default_pid: u32) -> Option<MemSample> {
        let addr = self.data_va?;
        Some(MemSample {
            pid: default_pid,
            tid: self.thread().unwrap_or(default_pid),
            addr,
            weight: self.latency.unwrap_or(0),
            tlb: tlb_outcome(self.events),
            time_ns: self.timestamp.unwrap_or(0),
            event_is_tlb_miss: false,
        })
    }
}

/// Decodes a byte stream of SPE records into one [`MemSample`] per record that has a
/// data virtual address (Address packet index 2):
/// - `tlb` from the Events packet (see the module documentation for the mapping);
/// - `weight` the total latency in cycles (Counter packet index 0), 0 without one;
/// - `time_ns` the Timestamp packet's raw value (the generic timer count: `SpeSampler`
///   converts it to perf's clock), 0 without one;
/// - `tid` the thread id from a Context packet (see [`Record::thread`]), else
///   `default_pid`; `pid` is `default_pid` (a thread id does not say its process).
///
/// Padding and Alignment packets are skipped. A byte that starts no packet is skipped and
/// the record it is in dropped. The stream may end inside a packet or a record: what is
/// complete is decoded, and `truncated` and `consumed` say where it stopped.
pub fn decode(bytes: &[u8], default_pid: u32, out: &mut Vec<MemSample>) -> DecodeStats {
    decode_at(bytes, 0, default_pid, out)
}

/// [`decode`] for bytes that start at `position` in the AUX buffer (for Alignment).
pub fn decode_at(
    bytes: &[u8],
    position: u64,
    default_pid: u32,
    out: &mut Vec<MemSample>,
) -> DecodeStats {
    let mut stats = DecodeStats::default();
    let mut record = Record::default();
    let mut at = 0usize;
    while at < bytes.len() {
        // Wrapping: only the position modulo an alignment (a power of two) matters.
        let (packet, len) = match parse_packet(&bytes[at..], position.wrapping_add(at as u64)) {
            Parsed::Packet(packet, len) => (packet, len),
            Parsed::NeedMore => {
                stats.truncated = true;
                break;
            }
            Parsed::Bad => {
                stats.bad_bytes += 1;
                record.corrupt = true;
                record.started = true;
                at += 1;
                continue;
            }
        };
        at += len;
        let mut ends = false;
        match packet {
            Packet::Padding => {
                if !record.started {
                    stats.consumed = at;
                }
                continue;
            }
            Packet::End => ends = true,
            Packet::Timestamp(t) => {
                record.timestamp = Some(t);
                ends = true;
            }
            Packet::Events(ev) => record.events = Some(ev),
            Packet::Context { index, value } => match index {
                CONTEXT_EL1 => record.context_el1 = Some(value),
                CONTEXT_EL2 => record.context_el2 = Some(value),
                _ => {}
            },
            Packet::Address { index, payload } if index == ADDR_INDEX_DATA_VA => {
                record.data_va = Some(data_address(payload));
            }
            Packet::Counter { index, value } if index == COUNTER_INDEX_TOTAL_LATENCY => {
                record.latency = Some(value);
            }
            Packet::Address { .. }
            | Packet::Counter { .. }
            | Packet::Operation { .. }
            | Packet::DataSource(_) => {}
        }
        record.started = true;
        if ends {
            if record.corrupt {
                stats.corrupt_records += 1;
            } else {
                stats.records += 1;
                match record.sample(default_pid) {
                    Some(sample) => {
                        out.push(sample);
                        stats.samples += 1;
                    }
                    None => stats.without_address += 1,
                }
            }
            record = Record::default();
            stats.consumed = at;
        }
    }
    if record.started {
        stats.truncated = true;
        if record.corrupt {
            stats.corrupt_records += 1;
        }
    }
    stats
}

#[cfg(test)]
#[path = "packets_tests.rs"]
mod tests;
