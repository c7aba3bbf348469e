//! The sampler's parts that run without SPE hardware: the refusals, the ring drain over
//! an anonymous ring laid out as the kernel's, the timer conversion.

use std::fs;

use super::ring::TimeConv;
use super::ring::{AUX_TAIL, CAPABILITIES, DATA_HEAD, DATA_TAIL, TIME_SHIFT, TIME_ZERO};
use super::*;
use crate::pages::access::TlbOutcome;

const PAGE: usize = 4096;

#[test]
fn open_on_a_machine_without_spe_says_so() {
    if sysfs::find_pmus(Path::new(EVENT_SOURCES)).is_empty() {
        let err = SpeSampler::open(std::process::id() as i32, &[0], 0)
            .err()
            .expect("no SPE here");
        assert!(err.starts_with("No Arm SPE PMU"), "{err}");
        assert!(err.contains("CONFIG_ARM_SPE_PMU"), "{err}");
    }
}

fn fake_sysfs(cpumask: Option<&str>, pmu_type: u32) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("arm_spe_0");
    fs::create_dir_all(dir.join("format")).unwrap();
    fs::write(dir.join("type"), pmu_type.to_string()).unwrap();
    if let Some(mask) = cpumask {
        fs::write(dir.join("cpumask"), mask).unwrap();
    }
    for (field, format) in [
        ("ts_enable", "config:0"),
        ("load_filter", "config:33"),
        ("store_filter", "config:34"),
    ] {
        fs::write(dir.join("format").join(field), format).unwrap();
    }
    tmp
}

#[test]
fn open_refusals_are_sentences() {
    let pid = std::process::id() as i32;
    let empty = tempfile::tempdir().unwrap();
    let err = SpeSampler::open_with(empty.path(), pid, &[0], 0)
        .err()
        .unwrap();
    assert!(err.starts_with("No Arm SPE PMU"), "{err}");

    let cluster = fake_sysfs(Some("4-7"), 9);
    let err = SpeSampler::open_with(cluster.path(), pid, &[0, 1], 0)
        .err()
        .unwrap();
    assert!(err.contains("No SPE PMU serves CPUs 0,1"), "{err}");
    assert!(err.contains("only CPUs 4,5,6,7"), "{err}");

    // A PMU type this kernel does not have: the kernel's refusal, with its errno.
    let unknown = fake_sysfs(None, 0x7fff_0000);
    let err = SpeSampler::open_with(unknown.path(), pid, &[0], 0)
        .err()
        .unwrap();
    assert!(
        err.starts_with("The kernel refused to open SPE (arm_spe_0) for process"),
        "{err}"
    );
    assert!(err.contains("errno"), "{err}");
}

#[test]
fn ring_and_aux_sizes_are_powers_of_two() {
    assert_eq!(pages_for(512 << 10, 4096, 2), 128);
    assert_eq!(pages_for(512 << 10, 65536, 2), 8);
    assert_eq!(pages_for(32 << 10, 65536, 1), 1);
    assert_eq!(pages_for(300 << 10, 4096, 2), 64);
}

/// A PERF_RECORD_AUX record as the kernel writes it (no sample_id).
fn aux_record(offset: u64, size: u64, flags: u64) -> Vec<u8> {
    let mut r = Vec::new();
    r.extend_from_slice(&PERF_RECORD_AUX.to_ne_bytes());
    r.extend_from_slice(&0u16.to_ne_bytes());
    r.extend_from_slice(&32u16.to_ne_bytes());
    for v in [offset, size, flags] {
        r.extend_from_slice(&v.to_ne_bytes());
    }
    r
}

fn lost_record(lost: u64) -> Vec<u8> {
    let mut r = Vec::new();
    r.extend_from_slice(&PERF_RECORD_LOST.to_ne_bytes());
    r.extend_from_slice(&0u16.to_ne_bytes());
    r.extend_from_slice(&24u16.to_ne_bytes());
    for v in [7u64, lost] {
        r.extend_from_slice(&v.to_ne_bytes());
    }
    r
}

/// One SPE load record: data VA, latency, events, timestamp.
fn spe_record(va: u64, latency: u16, events: u16, time: u64) -> Vec<u8> {
    let mut r = vec![0xb2];
    r.extend_from_slice(&va.to_le_bytes());
    r.push(0x98);
    r.extend_from_slice(&latency.to_le_bytes());
    r.push(0x52);
    r.extend_from_slice(&events.to_le_bytes());
    r.push(0x71);
    r.extend_from_slice(&time.to_le_bytes());
    r
}

#[test]
fn drain_decodes_the_announced_aux_ranges_and_releases_them() {
    let mut ring = Ring::anonymous(PAGE, 1, 2);
    let aux_len = ring.aux_len() as u64;
    let walk = (EV_TLB_ACCESS | EV_TLB_WALK) as u16;
    let first = [
        spe_record(0x1000, 10, walk, 100),
        spe_record(0x2000, 20, EV_TLB_ACCESS as u16, 200),
    ]
    .concat();
    // The second range wraps around the end of the AUX area.
    let second = spe_record(0x3000, 30, 0, 300);
    let second_at = aux_len - 10;
    ring.kernel_writes_bytes(true, 100, &first);
    ring.kernel_writes_bytes(true, second_at as usize, &second);
    let records = [
        aux_record(100, first.len() as u64, 0),
        lost_record(3),
        aux_record(second_at, second.len() as u64, PERF_AUX_FLAG_TRUNCATED),
    ]
    .concat();
    // Place the records so they wrap around the end of the data area too.
    let data_at = PAGE as u64 - 40;
    ring.kernel_writes(DATA_TAIL, data_at);
    ring.kernel_writes_bytes(false, data_at as usize, &records);
    ring.kernel_writes(DATA_HEAD, data_at + records.len() as u64);

    let mut out = Vec::new();
    let mut aux_scratch = Vec::new();
    let drained = drain_ring(&mut ring, 55, &mut out, &mut aux_scratch);
    assert_eq!(drained.lost, 1 + 3);
    assert_eq!(drained.stats.samples, 3);
    let got: Vec<(u64, u64, TlbOutcome, u64)> = out
        .iter()
        .map(|s| (s.addr, s.weight, s.tlb, s.time_ns))
        .collect();
    assert_eq!(
        got,
        [
            (0x1000, 10, TlbOutcome::Miss, 100),
            (0x2000, 20, TlbOutcome::Hit, 200),
            (0x3000, 30, TlbOutcome::Unknown, 300),
        ]
    );
    assert!(out.iter().all(|s| s.pid == 55 && s.tid == 55));
    assert_eq!(ring.header(DATA_TAIL), data_at + records.len() as u64);
    assert_eq!(ring.header(AUX_TAIL), second_at + second.len() as u64);

    // Nothing new: nothing decoded, nothing released twice.
    let drained = drain_ring(&mut ring, 55, &mut out, &mut aux_scratch);
    assert_eq!((drained.lost, drained.stats.records, out.len()), (0, 0, 3));
}

#[test]
fn timestamps_convert_with_the_kernels_published_conversion() {
    let conv = TimeConv {
        shift: 10,
        mult: 41_666_667, // a 24.576 MHz timer: 40.69 ns per count, × 2^10
        zero: 1_000,
        short: None,
    };
    // quot·mult + (rem·mult >> shift) + zero
    let cycles = 5 * 1024 + 512;
    assert_eq!(
        conv.to_ns(cycles),
        1_000 + 5 * 41_666_667 + ((512 * 41_666_667) >> 10)
    );
    let short = TimeConv {
        short: Some((0x1_0000_0000, 0xffff_ffff)),
        ..conv
    };
    assert_eq!(short.to_ns(0x10), conv.to_ns(0x1_0000_0010));

    let mut ring = Ring::anonymous(PAGE, 1, 2);
    assert_eq!(ring.time_conv(), None);
    // capabilities: cap_user_time_zero; time_shift 0, time_mult 2: ns = 2·count + zero.
    ring.kernel_writes(CAPABILITIES, 1 << 4);
    ring.kernel_writes(TIME_SHIFT - 2, 2u64 << 32);
    ring.kernel_writes(TIME_ZERO, 7);
    assert_eq!(ring.time_conv().map(|c| c.to_ns(100)), Some(207));

    let record = spe_record(0x1000, 1, 0, 100);
    ring.kernel_writes_bytes(true, 0, &record);
    let aux = aux_record(0, record.len() as u64, 0);
    ring.kernel_writes_bytes(false, 0, &aux);
    ring.kernel_writes(DATA_HEAD, aux.len() as u64);
    let mut out = Vec::new();
    drain_ring(&mut ring, 1, &mut out, &mut Vec::new());
    assert_eq!(out[0].time_ns, 207);
}

#[test]
fn threads_resolve_to_their_process() {
    let me = std::process::id();
    assert_eq!(tgid_of(me), Some(me));
    assert_eq!(tgid_of(u32::MAX), None);
}

/// A sampler over one anonymous ring, as `open` would build it for CPU 3.
fn fake_sampler(pid: i32, ring: Ring) -> SpeSampler {
    SpeSampler {
        pid,
        pmus: vec![("arm_spe_0".to_string(), 9, 1024)],
        rings: vec![CpuRing {
            cpu: 3,
            ring,
            _fd: OwnedFd::from(fs::File::open("/dev/null").unwrap()),
        }],
        unserved: vec![8, 9],
        aux_bytes: 2 * PAGE,
        all_operations: false,
        aux_scratch: Vec::new(),
        tgids: HashMap::new(),
        totals: DecodeStats::default(),
        lost: 0,
    }
}

#[test]
fn drain_names_the_process_of_the_thread_in_the_context_packet_and_counts() {
    let me = std::process::id();
    let ring = Ring::anonymous(PAGE, 1, 2);
    // One record from a thread of this test process (CONTEXTIDR_EL1 = its tid), one
    // without a Context packet, one from a thread that no longer exists.
    let mut aux = spe_record(0x1000, 1, EV_TLB_ACCESS as u16, 1);
    aux.splice(0..0, [0x64].into_iter().chain(me.to_le_bytes()));
    aux.extend(spe_record(0x2000, 2, 0, 2));
    let mut gone = spe_record(0x3000, 3, 0, 3);
    gone.splice(0..0, [0x64].into_iter().chain(u32::MAX.to_le_bytes()));
    aux.extend(gone);
    ring.kernel_writes_bytes(true, 0, &aux);
    let records = [aux_record(0, aux.len() as u64, 0), lost_record(2)].concat();
    ring.kernel_writes_bytes(false, 0, &records);
    ring.kernel_writes(DATA_HEAD, records.len() as u64);

    let mut sampler = fake_sampler(1, ring);
    let mut out = Vec::new();
    assert_eq!(sampler.drain(&mut out), 2);
    let who: Vec<(u32, u32)> = out.iter().map(|s| (s.pid, s.tid)).collect();
    assert_eq!(who, [(me, me), (1, 1), (1, u32::MAX)]);
    assert_eq!(sampler.drain(&mut out), 0);

    let text = sampler.description();
    for part in [
        "arm_spe_0 (type 9, every 1024 ops)",
        "on CPUs 3, not on CPUs 8,9 (no SPE there)",
        "loads and stores of process 1",
        "8 KiB AUX area",
        "3 samples from 3 records",
        "2 AUX records truncated or lost",
    ] {
        assert!(text.contains(part), "{part:?} not in {text:?}");
    }
}
