//! Tests of the PMU source as a whole: event choice from fake sysfs trees, attributes,
//! refusals, and `drain` over fake rings holding records laid out as the kernel writes
//! them; plus `open` on the machine running the tests (a clear error without a PMU).

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use super::datasrc::{DataSrc, Encoding, OP_LOAD, TLB_HIT, TLB_L1, TLB_L2, TLB_MISS, TLB_NA};
use super::events::{apply_format, choose_events, event_configs, EventSpec, Keep, Vendor};
use super::open::{attr_for, check_kernel, check_permission, explain_errno, kernel_at_least};
use super::record::build::{pair, record};
use super::ring::fake::FakeRing;
use super::*;
use crate::counters::sys::{
    FLAG_DISABLED, FLAG_ENABLE_ON_EXEC, FLAG_EXCLUDE_KERNEL, FLAG_INHERIT, FLAG_PRECISE_IP_MASK,
    FLAG_SAMPLE_ID_ALL, RECORD_LOST, RECORD_SAMPLE, RECORD_THROTTLE, RECORD_UNTHROTTLE,
};
use crate::pages::access::TlbOutcome;

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// The format files of an Intel core PMU.
fn intel_pmu(root: &Path, pmu: &str, ty: u32) {
    write(root, &format!("{pmu}/type"), &format!("{ty}\n"));
    for (term, spec) in [
        ("event", "config:0-7"),
        ("umask", "config:8-15"),
        ("cmask", "config:24-31"),
        ("ldlat", "config1:0-15"),
        ("frontend", "config1:0-23"),
    ] {
        write(root, &format!("{pmu}/format/{term}"), &format!("{spec}\n"));
    }
}

fn base_tree(root: &Path) {
    for (pmu, ty) in [("software", "1"), ("tracepoint", "2"), ("breakpoint", "5")] {
        write(root, &format!("{pmu}/type"), ty);
    }
}

#[test]
fn intel_core_pmu_gives_loads_and_stores() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    base_tree(root);
    intel_pmu(root, "cpu", 4);
    write(
        root,
        "cpu/events/mem-loads",
        "event=0xcd,umask=0x1,ldlat=3\n",
    );
    write(root, "cpu/events/mem-stores", "event=0xcd,umask=0x2\n");
    let specs = choose_events(root, Vendor::Intel).unwrap();
    assert_eq!(specs.len(), 2);
    let loads = &specs[0];
    assert_eq!(loads.name, "cpu/mem-loads,ldlat=30/");
    assert_eq!(
        (loads.pmu_type, loads.config, loads.config1),
        (4, 0x1cd, 30)
    );
    assert_eq!(loads.precise_ip, 2);
    assert_eq!(loads.aux_leader, None);
    assert_eq!(loads.encoding, Encoding::IntelPebs);
    assert_eq!(loads.keep, Keep::WithAddress);
    assert_eq!(loads.cpus, None);
    assert!(!loads.needs_kernel);
    let stores = &specs[1];
    assert_eq!((stores.config, stores.config1), (0x2cd, 0));
    // An AMD-less guess from an unknown vendor still finds PEBS.
    assert_eq!(choose_events(root, Vendor::Other).unwrap().len(), 2);
    let text = describe(&specs, &[10007, 100003]);
    assert!(text.contains("Intel PEBS cpu/mem-loads,ldlat=30/ (cpu PMU type 4), every 10007 loads slower than 30 cycles"), "{text}");
}

#[test]
fn sapphire_rapids_leads_loads_with_the_aux_event() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    intel_pmu(root, "cpu", 4);
    write(root, "cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3");
    write(root, "cpu/events/mem-loads-aux", "event=0x03,umask=0x82");
    let specs = choose_events(root, Vendor::Intel).unwrap();
    assert_eq!(specs.len(), 1, "no mem-stores listed, none opened");
    assert_eq!(specs[0].aux_leader, Some(0x8203));
    let leader = attr_for(&specs[0], 5000, 0x8203, true);
    assert_eq!((leader.config, leader.config1), (0x8203, 0));
    let member = attr_for(&specs[0], 5000, specs[0].config, false);
    assert_eq!((member.config, member.config1), (0x1cd, 30));
    assert_eq!(member.flags & (FLAG_DISABLED | FLAG_ENABLE_ON_EXEC), 0);
    assert!(describe(&specs, &[5000]).contains("led by mem-loads-aux (0x8203)"));
}

#[test]
fn hybrid_intel_opens_each_core_pmu_on_its_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    intel_pmu(root, "cpu_core", 4);
    intel_pmu(root, "cpu_atom", 10);
    write(root, "cpu_core/cpus", "0-7\n");
    write(root, "cpu_atom/cpus", "8-15\n");
    write(
        root,
        "cpu_core/events/mem-loads",
        "event=0xcd,umask=0x1,ldlat=3",
    );
    write(root, "cpu_core/events/mem-stores", "event=0xcd,umask=0x2");
    write(
        root,
        "cpu_atom/events/mem-loads",
        "event=0xd0,umask=0x5,ldlat=3",
    );
    let specs = choose_events(root, Vendor::Intel).unwrap();
    let names: Vec<(&str, u32)> = specs
        .iter()
        .map(|s| (s.name.as_str(), s.pmu_type))
        .collect();
    assert_eq!(
        names,
        [
            ("cpu_atom/mem-loads,ldlat=30/", 10),
            ("cpu_core/mem-loads,ldlat=30/", 4),
            ("cpu_core/mem-stores/", 4),
        ]
    );
    assert_eq!(specs[0].config, 0x5d0);
    assert!(specs[0].runs_on(9) && !specs[0].runs_on(3));
    assert!(specs[1].runs_on(3) && !specs[1].runs_on(9));
}

#[test]
fn amd_uses_ibs_op_with_its_format_bits() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    base_tree(root);
    write(root, "cpu/type", "4");
    write(root, "ibs_op/type", "11\n");
    write(root, "ibs_op/format/cnt_ctl", "config:19\n");
    let specs = choose_events(root, Vendor::Amd).unwrap();
    assert_eq!(specs.len(), 1);
    let ibs = &specs[0];
    assert_eq!(ibs.name, "ibs_op/cnt_ctl=1/");
    assert_eq!((ibs.pmu_type, ibs.config, ibs.precise_ip), (11, 1 << 19, 0));
    assert_eq!(
        (ibs.encoding, ibs.keep),
        (Encoding::AmdIbs, Keep::AddressAndTlb)
    );
    assert!(ibs.needs_kernel, "no swfilt: IBS cannot exclude the kernel");
    // The period's low 4 bits are zero.
    assert_eq!(ibs.period(0), 65536);
    assert_eq!(ibs.period(1000), 1008);
    let attr = attr_for(ibs, ibs.period(0), ibs.config, true);
    assert_eq!(attr.flags & FLAG_PRECISE_IP_MASK, 0);
    assert_eq!(attr.flags & FLAG_EXCLUDE_KERNEL, 0);
    assert_eq!(
        describe(&specs, &[65536]),
        "AMD IBS op (ibs_op PMU type 11), every 65536 ops, data-address samples with \
         their TLB outcome (L1 hit, L2 hit or miss)"
    );
    // With swfilt (config2:0) user-only sampling is possible.
    write(root, "ibs_op/format/swfilt", "config2:0\n");
    let ibs = &choose_events(root, Vendor::Amd).unwrap()[0];
    assert_eq!((ibs.config2, ibs.needs_kernel), (1, false));
    assert_eq!(ibs.name, "ibs_op/cnt_ctl=1,swfilt=1/");
    // Kernels before 6.2 cannot sample IBS per process.
    let err = check_kernel(&specs, "6.1.0-18-amd64").unwrap_err();
    assert!(
        err.contains("too old for per-process IBS") && err.contains("6.2"),
        "{err}"
    );
    assert!(check_kernel(&specs, "6.2.0").is_ok());
}

#[test]
fn missing_pmus_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    base_tree(root);
    write(root, "msr/type", "12");
    for vendor in [Vendor::Intel, Vendor::Amd, Vendor::Other] {
        let err = choose_events(root, vendor).unwrap_err();
        assert!(err.starts_with("no hardware PMU"), "{err}");
        assert!(err.contains("passthrough"), "{err}");
    }
    assert!(choose_events(&root.join("absent"), Vendor::Intel).is_err());
    // A core PMU without PEBS memory events.
    intel_pmu(root, "cpu", 4);
    let err = choose_events(root, Vendor::Intel).unwrap_err();
    assert!(
        err.starts_with("no precise memory event on this CPU: the cpu PMU"),
        "{err}"
    );
    let err = choose_events(root, Vendor::Amd).unwrap_err();
    assert!(err.contains("no ibs_op PMU"), "{err}");
    // Arm SPE is declined, not implemented.
    write(root, "arm_spe_0/type", "8");
    let err = choose_events(root, Vendor::Arm).unwrap_err();
    assert!(err.starts_with("Arm SPE sampling (arm_spe_0 PMU)"), "{err}");
    assert!(err.contains("not handled by this module"), "{err}");
}

#[test]
fn format_terms_spread_over_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "p/format/event", "config:0-7,32-35");
    write(root, "p/format/edge", "config:18");
    write(root, "p/format/bad", "conf:x");
    let mut c = [0u64; 3];
    apply_format(&root.join("p"), "event", 0x1d3, &mut c).unwrap();
    apply_format(&root.join("p"), "edge", 1, &mut c).unwrap();
    assert_eq!(c[0], 0xd3 | (1 << 32) | (1 << 18));
    assert!(apply_format(&root.join("p"), "bad", 1, &mut c).is_err());
    assert!(apply_format(&root.join("p"), "none", 1, &mut c).is_err());
    write(root, "p/events/x", "event=0x1d3,edge");
    assert_eq!(event_configs(&root.join("p"), "x", &[]).unwrap()[0], c[0]);
    write(root, "p/events/y", "event=zz");
    assert!(event_configs(&root.join("p"), "y", &[]).is_err());
}

#[test]
fn attributes_sample_what_the_parser_reads() {
    let dir = tempfile::tempdir().unwrap();
    intel_pmu(dir.path(), "cpu", 4);
    write(
        dir.path(),
        "cpu/events/mem-loads",
        "event=0xcd,umask=0x1,ldlat=3",
    );
    let spec = &choose_events(dir.path(), Vendor::Intel).unwrap()[0];
    let attr = attr_for(spec, spec.period(0), spec.config, true);
    assert_eq!(attr.sample_type, SAMPLE_TYPE);
    assert_eq!(attr.sample_period, 10007);
    let want = FLAG_DISABLED
        | FLAG_INHERIT
        | FLAG_ENABLE_ON_EXEC
        | FLAG_SAMPLE_ID_ALL
        | FLAG_EXCLUDE_KERNEL
        | (2 << 15);
    assert_eq!(attr.flags, want);
    assert!(record::check_sample_type(SAMPLE_TYPE).is_ok());
}

#[test]
fn refusals_name_the_cause_and_the_remedy() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ibs_op/type", "11");
    let ibs = choose_events(dir.path(), Vendor::Amd).unwrap();
    let err = check_permission(&ibs, Some(2), false).unwrap_err();
    assert!(
        err.contains("perf_event_paranoid is 2") && err.contains("needs 1 or lower"),
        "{err}"
    );
    assert!(err.contains("CAP_PERFMON"), "{err}");
    assert!(check_permission(&ibs, Some(2), true).is_ok());
    assert!(check_permission(&ibs, Some(1), false).is_ok());
    let err = explain_errno(&ibs[0], libc::EACCES, Some(3));
    assert!(err.contains("perf_event_paranoid is 3"), "{err}");
    let err = explain_errno(&ibs[0], libc::ENOENT, Some(1));
    assert!(
        err.starts_with("no precise memory event on this CPU"),
        "{err}"
    );
    assert!(explain_errno(&ibs[0], libc::EBUSY, None).contains("in use"));
    assert!(kernel_at_least("6.18.44-fc", (6, 2)));
    assert!(!kernel_at_least("5.15.0", (6, 2)));
    assert!(kernel_at_least("unknown", (6, 2)));
}

/// A sampler over fake rings, with `specs` and event ids as `open` would record them.
fn fake_sampler(
    specs: Vec<EventSpec>,
    ids: &[(u64, Option<usize>)],
    rings: Vec<Ring>,
) -> PmuSampler {
    let periods = specs.iter().map(|s| s.period(0)).collect();
    PmuSampler {
        specs,
        periods,
        sample_type: SAMPLE_TYPE,
        ids: ids.iter().copied().collect::<HashMap<_, _>>(),
        rings,
        _fds: Vec::new(),
    }
}

/// A PERF_RECORD_SAMPLE of SAMPLE_TYPE: identifier, pid/tid, time, addr, weight, data_src.
fn sample(id: u64, tid: u32, addr: u64, weight: u64, dtlb: u8) -> Vec<u8> {
    let src = DataSrc::from_fields(OP_LOAD, dtlb).0;
    record(
        RECORD_SAMPLE,
        &[id, pair(100, tid), 1_000 + weight, addr, weight, src],
    )
}

#[test]
fn drain_turns_ibs_records_into_samples() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ibs_op/type", "11");
    let specs = choose_events(dir.path(), Vendor::Amd).unwrap();
    let mut f = FakeRing::new(4096);
    let recs = vec![
        sample(7, 101, 0x7f00_0000_1000, 40, TLB_L1 | TLB_HIT),
        sample(7, 101, 0x7f00_0020_0000, 90, TLB_L2 | TLB_HIT),
        sample(7, 102, 0x7f00_0040_0000, 300, TLB_L2 | TLB_MISS),
        // Ops without a data access: NA, or no address.
        sample(7, 102, 0x7f00_0000_2000, 0, TLB_NA),
        sample(7, 102, 0, 0, TLB_L1 | TLB_HIT),
        record(RECORD_LOST, &[7, 12, 0, 0]),
        record(RECORD_THROTTLE, &[5, 7, 7]),
        record(RECORD_UNTHROTTLE, &[6, 7, 7]),
        record(3, &[1, 2, 3]), // COMM: skipped by size
    ];
    // Start 100 bytes before the end so records wrap.
    f.fill(4096 * 5 - 100, &recs);
    let mut s = fake_sampler(specs, &[(7, Some(0))], vec![f.ring()]);
    let mut out = Vec::new();
    let stats = s.drain(&mut out);
    assert_eq!(
        stats,
        DrainStats {
            lost: 12,
            throttled: 1,
            samples: 3
        }
    );
    let tlb: Vec<TlbOutcome> = out.iter().map(|m| m.tlb).collect();
    assert_eq!(
        tlb,
        [TlbOutcome::L1Hit, TlbOutcome::L2Hit, TlbOutcome::Miss]
    );
    assert_eq!(out[2].addr, 0x7f00_0040_0000);
    assert_eq!((out[2].pid, out[2].tid, out[2].weight), (100, 102, 300));
    assert_eq!(out[2].time_ns, 1_300);
    assert!(!out[2].event_is_tlb_miss);
    // Drained: nothing more.
    assert_eq!(s.drain(&mut out), DrainStats::default());
    assert!(s
        .description()
        .starts_with("AMD IBS op (ibs_op PMU type 11), every 65536"));
}

#[test]
fn drain_reads_every_ring_and_tells_events_apart() {
    let dir = tempfile::tempdir().unwrap();
    intel_pmu(dir.path(), "cpu", 4);
    write(
        dir.path(),
        "cpu/events/mem-loads",
        "event=0xcd,umask=0x1,ldlat=3",
    );
    write(
        dir.path(),
        "cpu/events/mem-loads-aux",
        "event=0x03,umask=0x82",
    );
    write(dir.path(), "cpu/events/mem-stores", "event=0xcd,umask=0x2");
    let specs = choose_events(dir.path(), Vendor::Intel).unwrap();
    let (mut a, mut b) = (FakeRing::new(4096), FakeRing::new(8192));
    a.fill(
        0,
        &[
            sample(1, 5, 0x1000, 50, TLB_MISS | TLB_L2),
            sample(2, 5, 0x2000, 0, 0), // the aux leader: dropped
            sample(9, 5, 0x3000, 0, 0), // an unknown id with two events: dropped
        ],
    );
    b.fill(
        8192 - 8,
        &[
            sample(3, 6, 0x4000, 0, TLB_HIT | TLB_L1 | TLB_L2),
            record(RECORD_LOST, &[3, 2]),
        ],
    );
    let ids = [(1, Some(0)), (2, None), (3, Some(1))];
    let mut s = fake_sampler(specs, &ids, vec![a.ring(), b.ring()]);
    let mut out = Vec::new();
    let stats = s.drain(&mut out);
    assert_eq!(
        stats,
        DrainStats {
            lost: 2,
            throttled: 0,
            samples: 2
        }
    );
    assert_eq!((out[0].addr, out[0].tlb), (0x1000, TlbOutcome::Miss));
    assert_eq!((out[1].addr, out[1].tlb), (0x4000, TlbOutcome::Hit));
    let text = s.description();
    assert!(
        text.contains("cpu/mem-stores/") && text.contains("every 100003 stores"),
        "{text}"
    );
}

#[test]
fn open_on_this_machine_fails_clearly_or_samples() {
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    match PmuSampler::open(me, &[0], 0) {
        Err(reason) => {
            eprintln!("no precise sampling here (expected in a VM): {reason}");
            assert!(!reason.is_empty() && !reason.contains("panicked"));
            assert_eq!(reason.lines().count(), 1, "{reason}");
        }
        Ok(mut s) => {
            let mut out = Vec::new();
            s.drain(&mut out);
            assert!(!s.description().is_empty());
        }
    }
    match availability() {
        Ok(text) => assert!(!text.is_empty()),
        Err(reason) => eprintln!("availability: {reason}"),
    }
}

#[test]
fn an_arm_machine_says_whether_it_has_an_spe_pmu() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // A Neoverse guest: the core PMU is listed, SPE is not passed through.
    write(root, "armv8_pmuv3_0/type", "8");
    assert!(spe::sysfs::find_pmus(root).is_empty());
    let why = spe_absent(root);
    assert!(why.starts_with("no Arm SPE PMU: "), "{why}");
    assert!(why.contains("arm_spe_*"), "{why}");
    assert!(why.contains(&root.display().to_string()), "{why}");
    assert_eq!(why.lines().count(), 1, "{why}");
    // Bare metal with the driver loaded.
    write(root, "arm_spe_0/type", "9");
    let pmus = spe::sysfs::find_pmus(root);
    assert_eq!(pmus.len(), 1);
    assert_eq!((pmus[0].name.as_str(), pmus[0].pmu_type), ("arm_spe_0", 9));
}
