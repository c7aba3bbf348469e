//! Decoding hand-built SPE byte streams.

use super::*;

fn with(header: &[u8], payload: u64, len: usize) -> Vec<u8> {
    let mut v = header.to_vec();
    v.extend_from_slice(&payload.to_le_bytes()[..len]);
    v
}
fn pad() -> Vec<u8> {
    vec![0x00]
}
fn end() -> Vec<u8> {
    vec![0x01]
}
fn timestamp(t: u64) -> Vec<u8> {
    with(&[0x71], t, 8)
}
fn pc(a: u64) -> Vec<u8> {
    with(&[0xb0], a | (1 << 63), 8)
}
fn data_va(a: u64) -> Vec<u8> {
    with(&[0xb2], a, 8)
}
fn data_pa(a: u64) -> Vec<u8> {
    with(&[0xb3], a, 8)
}
fn total_latency(c: u64) -> Vec<u8> {
    with(&[0x98], c, 2)
}
fn issue_latency(c: u64) -> Vec<u8> {
    with(&[0x99], c, 2)
}
/// A two-byte Events packet (size bits 01).
fn events(e: u64) -> Vec<u8> {
    with(&[0x52], e, 2)
}
fn context_el1(v: u32) -> Vec<u8> {
    with(&[0x64], u64::from(v), 4)
}
fn context_el2(v: u32) -> Vec<u8> {
    with(&[0x65], u64::from(v), 4)
}
fn load() -> Vec<u8> {
    vec![0x49, 0x00]
}
fn store() -> Vec<u8> {
    vec![0x49, 0x01]
}
fn branch() -> Vec<u8> {
    vec![0x4a, 0x01]
}
fn data_source(v: u64) -> Vec<u8> {
    with(&[0x53], v, 2)
}

fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

/// A load record as a Neoverse core writes it, ended by its timestamp.
fn load_record(va: u64, latency: u64, ev: u64, time: u64) -> Vec<u8> {
    cat(&[
        pc(0x40_1000),
        load(),
        events(ev),
        data_source(0),
        issue_latency(3),
        total_latency(latency),
        data_va(va),
        data_pa(0x8_0000_0000),
        context_el1(4242),
        timestamp(time),
    ])
}

fn run(bytes: &[u8]) -> (Vec<MemSample>, DecodeStats) {
    let mut out = Vec::new();
    let stats = decode(bytes, 77, &mut out);
    (out, stats)
}

#[test]
fn a_load_with_a_table_walk_is_a_tlb_miss() {
    let ev = EV_RETIRED | EV_L1D_ACCESS | EV_L1D_REFILL | EV_TLB_ACCESS | EV_TLB_WALK;
    let (out, stats) = run(&load_record(0x7fff_1234_5678, 321, ev, 987_654));
    assert_eq!(
        out,
        vec![MemSample {
            pid: 77,
            tid: 4242,
            addr: 0x7fff_1234_5678,
            weight: 321,
            tlb: TlbOutcome::Miss,
            time_ns: 987_654,
            event_is_tlb_miss: false,
        }]
    );
    assert_eq!(stats.records, 1);
    assert_eq!(stats.samples, 1);
    assert!(!stats.truncated);
    assert_eq!(stats.consumed, load_record(0, 0, 0, 0).len());
}

#[test]
fn tlb_access_without_walk_is_a_hit_and_no_tlb_bits_are_unknown() {
    let bytes = cat(&[
        load_record(0x1000, 10, EV_RETIRED | EV_TLB_ACCESS | EV_L1D_ACCESS, 1),
        load_record(0x2000, 10, EV_RETIRED | EV_L1D_ACCESS, 2),
        // A walk without the access bit still means the table was walked.
        load_record(0x3000, 10, EV_TLB_WALK, 3),
        cat(&[data_va(0x4000), end()]),
    ]);
    let (out, _) = run(&bytes);
    let tlb: Vec<TlbOutcome> = out.iter().map(|s| s.tlb).collect();
    assert_eq!(
        tlb,
        [
            TlbOutcome::Hit,
            TlbOutcome::Unknown,
            TlbOutcome::Miss,
            TlbOutcome::Unknown
        ]
    );
    assert!(!TlbOutcome::Hit.missed_a_level());
    assert_eq!(
        tlb_outcome(Some(EV_LLC_ACCESS | EV_LLC_MISS)),
        TlbOutcome::Unknown
    );
}

#[test]
fn a_store_ended_by_end_has_no_timestamp_and_the_opened_pid() {
    let bytes = cat(&[
        pc(0x40_2000),
        store(),
        events(EV_RETIRED | EV_TLB_ACCESS),
        total_latency(7),
        data_va(0xdead_b000),
        end(),
    ]);
    let (out, stats) = run(&bytes);
    assert_eq!(out.len(), 1);
    let s = out[0];
    assert_eq!((s.pid, s.tid, s.addr, s.weight), (77, 77, 0xdead_b000, 7));
    assert_eq!((s.tlb, s.time_ns), (TlbOutcome::Hit, 0));
    assert_eq!(stats.consumed, bytes.len());
}

#[test]
fn padding_between_and_around_records_is_skipped() {
    let bytes = cat(&[
        pad(),
        pad(),
        load_record(0x1000, 1, 0, 1),
        pad(),
        load_record(0x2000, 2, 0, 2),
        vec![0; 13],
    ]);
    let (out, stats) = run(&bytes);
    assert_eq!(out.len(), 2);
    assert_eq!(stats.records, 2);
    assert!(!stats.truncated);
    assert_eq!(stats.consumed, bytes.len());
}

#[test]
fn a_truncated_final_packet_stops_cleanly() {
    let first = load_record(0x1000, 5, EV_TLB_ACCESS, 10);
    let mut bytes = cat(&[first.clone(), pc(0x40_0000), load()]);
    bytes.extend_from_slice(&data_va(0x2000)[..5]);
    let (out, stats) = run(&bytes);
    assert_eq!(out.len(), 1);
    assert!(stats.truncated);
    assert_eq!(stats.consumed, first.len());
    // Every cut of a record decodes without panicking and yields no partial sample.
    let record = load_record(0x3000, 5, EV_TLB_WALK, 20);
    for cut in 0..record.len() {
        let (out, stats) = run(&record[..cut]);
        assert!(out.is_empty(), "cut at {cut}");
        assert_eq!(stats.truncated, cut > 0, "cut at {cut}");
        assert_eq!(stats.consumed, 0);
    }
    // A lone extended header byte is truncated too.
    assert!(run(&[0x20]).1.truncated);
}

#[test]
fn extended_headers_carry_address_and_counter_packets() {
    // 0b001000xx then the short header: index = xx << 3 | the header's low 3 bits.
    let bytes = cat(&[
        with(&[0x20, 0xb2], 0x5555_0000, 8), // data VA, index 2
        with(&[0x20, 0x98], 444, 2),         // total latency, index 0
        with(&[0x21, 0xb2], 0x9999_0000, 8), // index 10: not the data VA
        with(&[0x21, 0x98], 999, 2),         // index 8: not the total latency
        events(EV_TLB_ACCESS | EV_TLB_WALK),
        end(),
    ]);
    let (out, stats) = run(&bytes);
    assert_eq!(stats.bad_bytes, 0);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].addr, out[0].weight), (0x5555_0000, 444));
    assert_eq!(out[0].tlb, TlbOutcome::Miss);
    assert_eq!(
        parse_packet(&[0x23, 0xb1, 1, 0, 0, 0, 0, 0, 0, 0], 0),
        Parsed::Packet(
            Packet::Address {
                index: 25,
                payload: 1
            },
            10
        )
    );
}

#[test]
fn alignment_packets_skip_to_their_boundary() {
    // 0x21 0x00 aligns to 4 bytes, counted from the AUX buffer position.
    assert_eq!(
        parse_packet(&[0x21, 0x00, 0, 0], 0),
        Parsed::Packet(Packet::Padding, 4)
    );
    assert_eq!(
        parse_packet(&[0x21, 0x00, 0], 1),
        Parsed::Packet(Packet::Padding, 3)
    );
    assert_eq!(parse_packet(&[0x23, 0x00], 0), Parsed::NeedMore);
    let mut bytes = vec![0x23, 0x00];
    bytes.resize(16, 0xff); // skipped by the alignment, never parsed
    bytes.extend(cat(&[data_va(0x1000), end()]));
    let (out, stats) = run(&bytes);
    assert_eq!(out.len(), 1);
    assert_eq!(stats.bad_bytes, 0);
}

#[test]
fn multiple_records_and_records_without_a_data_address() {
    let branch_record = cat(&[
        pc(0x40_0000),
        branch(),
        with(&[0xb1], 0x40_0100, 8),
        events(EV_RETIRED),
        total_latency(2),
        timestamp(5),
    ]);
    let bytes = cat(&[
        load_record(0x1000, 1, EV_TLB_ACCESS, 1),
        branch_record,
        load_record(0x2000, 2, EV_TLB_WALK, 2),
        load_record(0x3000, 3, EV_TLB_ACCESS, 3),
    ]);
    let (out, stats) = run(&bytes);
    let addrs: Vec<u64> = out.iter().map(|s| s.addr).collect();
    assert_eq!(addrs, [0x1000, 0x2000, 0x3000]);
    let times: Vec<u64> = out.iter().map(|s| s.time_ns).collect();
    assert_eq!(times, [1, 2, 3]);
    assert_eq!(
        (stats.records, stats.samples, stats.without_address),
        (4, 3, 1)
    );
}

#[test]
fn a_bad_byte_drops_its_record_and_decoding_resumes() {
    let bytes = cat(&[
        pc(0x40_0000),
        vec![0x02], // no packet starts with 0b0000_0010
        data_va(0x1000),
        end(),
        load_record(0x2000, 1, 0, 1),
    ]);
    let (out, stats) = run(&bytes);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].addr, 0x2000);
    assert_eq!((stats.bad_bytes, stats.corrupt_records), (1, 1));
}

#[test]
fn data_addresses_lose_their_tag_and_kernel_ones_sign_extend() {
    let tagged = (0x5au64 << 56) | 0x7f00_0000_1000;
    let kernel = 0x00ff_8000_0000_2000;
    let bytes = cat(&[data_va(tagged), end(), data_va(kernel), end()]);
    let (out, _) = run(&bytes);
    assert_eq!(out[0].addr, 0x7f00_0000_1000);
    assert_eq!(out[1].addr, 0xffff_8000_0000_2000);
}

#[test]
fn the_thread_comes_from_contextidr_el1_then_el2_and_zero_means_unset() {
    let rec = |ctx: Vec<u8>| cat(&[data_va(0x1000), ctx, end()]);
    let bytes = cat(&[
        rec(context_el1(0)),
        rec(context_el2(900)),
        rec(cat(&[context_el2(900), context_el1(901)])),
    ]);
    let (out, _) = run(&bytes);
    let tids: Vec<u32> = out.iter().map(|s| s.tid).collect();
    assert_eq!(tids, [77, 900, 901]);
    assert!(out.iter().all(|s| s.pid == 77));
}

#[test]
fn payload_sizes_follow_the_header_size_bits() {
    // One-, four- and eight-byte Events packets.
    assert_eq!(
        parse_packet(&[0x42, 0x30], 0),
        Parsed::Packet(Packet::Events(0x30), 2)
    );
    assert_eq!(
        parse_packet(&[0x62, 1, 2, 3, 4], 0),
        Parsed::Packet(Packet::Events(0x0403_0201), 5)
    );
    assert_eq!(
        parse_packet(&[0x72, 1, 0, 0, 0, 0, 0, 0, 0x80], 0),
        Parsed::Packet(Packet::Events(0x8000_0000_0000_0001), 9)
    );
    assert_eq!(parse_packet(&[0x72, 1, 0], 0), Parsed::NeedMore);
    assert_eq!(parse_packet(&[], 0), Parsed::NeedMore);
    assert_eq!(parse_packet(&[0xff], 0), Parsed::Bad);
}

/// Kernel-written bytes are input too: any stream at any AUX position decodes without a
/// panic, and what it says adds up.
mod hostile {
    use super::*;
    use proptest::prelude::*;

    /// Bytes that are mostly packet headers, so that streams reach deep into records.
    fn stream() -> impl Strategy<Value = Vec<u8>> {
        let byte = prop_oneof![
            3 => prop::sample::select(
                &[0x00u8, 0x01, 0x71, 0x42, 0x52, 0x62, 0x72, 0x43, 0x64, 0x65, 0x48, 0x49,
                  0xb0, 0xb2, 0xb3, 0x98, 0x99, 0x20, 0x21, 0x22, 0x23][..]
            ),
            1 => any::<u8>(),
        ];
        prop::collection::vec(byte, 0..300)
    }

    proptest! {
        // The failures found have their own tests: no regression files in the tree.
        #![proptest_config(ProptestConfig {
            cases: 512,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn any_stream_at_any_position_decodes(
            bytes in stream(),
            position in prop_oneof![0u64..4096, any::<u64>(), (u64::MAX - 512)..=u64::MAX],
        ) {
            let mut out = Vec::new();
            let stats = decode_at(&bytes, position, 77, &mut out);
            prop_assert!(stats.consumed <= bytes.len());
            prop_assert_eq!(stats.samples, out.len() as u64);
            prop_assert!(stats.bad_bytes <= bytes.len() as u64);
            for at in 0..bytes.len() {
                if let Parsed::Packet(_, len) = parse_packet(&bytes[at..], position) {
                    prop_assert!(len >= 1 && len <= bytes.len() - at);
                }
            }
        }
    }

    #[test]
    fn an_aux_position_near_the_top_of_u64_wraps() {
        // Found by the property above: position + offset overflowed (a panic in debug
        // builds) for an AUX position within a record of 2^64.
        // Only the position modulo an alignment counts: 2^64 - 2 is 14 modulo 16 (the
        // Alignment packet at 16 then pads over the End packets after it).
        let bytes = cat(&[pad(), end(), with(&[0x21, 0x00], 0, 0), end(), end()]);
        let top = decode_at(&bytes, u64::MAX - 1, 77, &mut Vec::new());
        assert_eq!(top, decode_at(&bytes, 14, 77, &mut Vec::new()));
        assert_eq!(top.records, 1);
    }
}
