//! Top-down plans on synthetic machines and PMUs, and breakdowns of hand-computed counts.
use super::*;
use crate::counters::probe::CorePmu;
use crate::counters::EventKind;
use std::fs;

fn machine(vendor: &str, family: u32, model: u32, name: &str) -> CpuId {
    CpuId {
        cpu_vendor: vendor.to_string(),
        cpu_family: Some(family),
        cpu_model_number: Some(model),
        cpu_model: name.to_string(),
    }
}

fn probe(pmus: &[&str]) -> Probe {
    Probe {
        paranoid: Some(1),
        core_pmus: pmus
            .iter()
            .enumerate()
            .map(|(i, name)| CorePmu {
                name: name.to_string(),
                pmu_type: 4 + i as u32,
            })
            .collect(),
    }
}

/// An event-source directory with `pmu/events/<name>` files holding `terms`.
fn sysfs(pmu: &str, events: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let events_dir = dir.path().join(pmu).join("events");
    fs::create_dir_all(&events_dir).unwrap();
    for (name, terms) in events {
        fs::write(events_dir.join(name), format!("{terms}\n")).unwrap();
    }
    dir
}

/// The kernel's perf-metrics encodings (arch/x86/events/intel/core.c).
const SPR_EVENTS: &[(&str, &str)] = &[
    ("slots", "event=0x00,umask=0x4"),
    ("topdown-retiring", "event=0x00,umask=0x80"),
    ("topdown-bad-spec", "event=0x00,umask=0x81"),
    ("topdown-fe-bound", "event=0x00,umask=0x82"),
    ("topdown-be-bound", "event=0x00,umask=0x83"),
    ("topdown-heavy-ops", "event=0x00,umask=0x84"),
    ("topdown-br-mispredict", "event=0x00,umask=0x85"),
    ("topdown-fetch-lat", "event=0x00,umask=0x86"),
    ("topdown-mem-bound", "event=0x00,umask=0x87"),
];

fn configs(plan: &TopdownPlan) -> Vec<Vec<u64>> {
    plan.groups
        .iter()
        .map(|g| g.iter().map(|e| e.config).collect())
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn sum(b: &Breakdown) -> f64 {
    b.retiring + b.bad_speculation + b.frontend_bound + b.backend_bound
}

#[test]
fn no_pmu_is_said_before_anything_else() {
    let empty = tempfile::tempdir().unwrap();
    let err = plan_in(
        &machine("AuthenticAMD", 0x19, 0x11, "AMD EPYC 9R14"),
        &probe(&[]),
        empty.path(),
    )
    .unwrap_err();
    assert_eq!(err, "no hardware counters (a VM without a virtual PMU?)");
}

#[test]
fn zen4_gets_the_pipeline_utilization_events() {
    let empty = tempfile::tempdir().unwrap();
    let zen4 = machine(
        "AuthenticAMD",
        0x19,
        0x11,
        "AMD EPYC 9R14 96-Core Processor",
    );
    let plan = plan_in(&zen4, &probe(&["cpu"]), empty.path()).unwrap();
    assert_eq!(plan.method, Method::AmdZen4);
    // PMCx1A0's bits 8-11 go to PERF_CTL bits 32-35.
    assert_eq!(
        configs(&plan),
        vec![
            vec![0x1_0000_01a0, 0x1_0000_1ea0, 0x07aa, 0xc1],
            vec![0xa2d6, 0x02d6],
        ]
    );
    assert!(plan
        .groups
        .iter()
        .flatten()
        .all(|e| e.kind == EventKind::Raw && e.pmu.is_none() && !e.name.contains('/')));
    for model in [0x10, 0x61, 0x74, 0xa0] {
        let m = machine("AuthenticAMD", 0x19, model, "");
        assert_eq!(
            plan_in(&m, &probe(&["cpu"]), empty.path()).unwrap().method,
            Method::AmdZen4,
            "model {model:#x}"
        );
    }
    let zen5 = machine("AuthenticAMD", 0x1a, 0x02, "AMD EPYC 9005");
    let plan5 = plan_in(&zen5, &probe(&["cpu"]), empty.path()).unwrap();
    assert_eq!(plan5.method, Method::AmdZen5);
    assert_eq!(configs(&plan5), configs(&plan));
}

#[test]
fn zen3_and_older_amd_are_named_and_refused() {
    let empty = tempfile::tempdir().unwrap();
    for (family, model) in [(0x19, 0x01), (0x19, 0x21), (0x19, 0x50), (0x17, 0x31)] {
        let m = machine("AuthenticAMD", family, model, "AMD Ryzen");
        let err = plan_in(&m, &probe(&["cpu"]), empty.path()).unwrap_err();
        assert!(
            err.contains(&format!("family {family:#x} model {model:#x}")),
            "{err}"
        );
        assert!(err.contains("PMCx1A0"), "{err}");
    }
}

#[test]
fn sapphire_rapids_uses_the_kernels_metrics_with_slots_leading() {
    let dir = sysfs("cpu", SPR_EVENTS);
    let spr = machine("GenuineIntel", 6, 0x8f, "Intel Xeon Platinum 8488C");
    let plan = plan_in(&spr, &probe(&["cpu"]), dir.path()).unwrap();
    assert_eq!(plan.method, Method::IntelPerfMetricsL2);
    assert_eq!(
        configs(&plan),
        vec![vec![0x0400, 0x8000, 0x8100, 0x8200, 0x8300, 0x8700]]
    );
    let names: Vec<&str> = plan.groups[0].iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "slots",
            "topdown-retiring",
            "topdown-bad-spec",
            "topdown-fe-bound",
            "topdown-be-bound",
            "topdown-mem-bound"
        ]
    );
    // Ice Lake: level 1 only.
    let icl = sysfs("cpu", &SPR_EVENTS[..5]);
    let m = machine("GenuineIntel", 6, 0x6a, "Intel Xeon Platinum 8375C");
    let plan = plan_in(&m, &probe(&["cpu"]), icl.path()).unwrap();
    assert_eq!(plan.method, Method::IntelPerfMetrics);
    assert_eq!(plan.groups[0].len(), 5);
}

#[test]
fn hybrid_intel_reads_the_p_core_pmu_and_ignores_atom_topdown_events() {
    let dir = sysfs("cpu_core", SPR_EVENTS);
    let atom = dir.path().join("cpu_atom").join("events");
    fs::create_dir_all(&atom).unwrap();
    fs::write(atom.join("topdown-be-bound"), "event=0x74,umask=0x0\n").unwrap();
    let adl = machine("GenuineIntel", 6, 0x97, "12th Gen Intel Core i9-12900K");
    let plan = plan_in(&adl, &probe(&["cpu_atom", "cpu_core"]), dir.path()).unwrap();
    assert_eq!(plan.method, Method::IntelPerfMetricsL2);
    assert!(plan.groups[0]
        .iter()
        .all(|e| e.pmu.as_deref() == Some("cpu_core")));
    // Atom-style topdown events (ordinary event codes) are not perf metrics.
    let only_atom = sysfs(
        "cpu",
        &[
            ("slots", "event=0x00,umask=0x4"),
            ("topdown-retiring", "event=0xc2,umask=0x0"),
            ("topdown-bad-spec", "event=0x73,umask=0x0"),
            ("topdown-fe-bound", "event=0x71,umask=0x0"),
            ("topdown-be-bound", "event=0x74,umask=0x0"),
        ],
    );
    let m = machine("GenuineIntel", 6, 0xbe, "Intel N100");
    let err = plan_in(&m, &probe(&["cpu"]), only_atom.path()).unwrap_err();
    assert!(err.contains("model 0xbe"), "{err}");
}

#[test]
fn skylake_without_metrics_uses_the_formula_events() {
    let empty = tempfile::tempdir().unwrap();
    let skx = machine("GenuineIntel", 6, 0x55, "Intel Xeon Gold 6148");
    let plan = plan_in(&skx, &probe(&["cpu"]), empty.path()).unwrap();
    assert_eq!(plan.method, Method::IntelSkylakeFormula);
    assert_eq!(
        configs(&plan),
        vec![
            vec![0x003c, 0x019c, 0x010e, 0x02c2],
            vec![0x010d, 0x1400_14a3, 0x0400_04a3],
            vec![0x40a6, 0x02a6, 0x04a6],
        ]
    );
    // Hardware with metrics in sysfs takes them, whatever the model.
    let dir = sysfs("cpu", SPR_EVENTS);
    assert_eq!(
        plan_in(&skx, &probe(&["cpu"]), dir.path()).unwrap().method,
        Method::IntelPerfMetricsL2
    );
}

#[test]
fn an_unknown_cpu_is_named() {
    let empty = tempfile::tempdir().unwrap();
    let err = plan_in(
        &machine("GenuineIntel", 6, 0x3c, "Intel Core i7-4770"),
        &probe(&["cpu"]),
        empty.path(),
    )
    .unwrap_err();
    assert!(
        err.starts_with("Intel Core i7-4770 (GenuineIntel family 0x6 model 0x3c)"),
        "{err}"
    );
    assert!(err.contains("cpu/events/topdown-be-bound"), "{err}");
    let arm = CpuId {
        cpu_vendor: "ARM".to_string(),
        ..CpuId::default()
    };
    let err = plan_in(&arm, &probe(&["armv8_pmuv3_0"]), empty.path()).unwrap_err();
    assert!(err.starts_with("this CPU (ARM family ? model ?)"), "{err}");
}

fn plan_for(method: Method) -> TopdownPlan {
    let empty = tempfile::tempdir().unwrap();
    match method {
        Method::AmdZen4 => plan_in(
            &machine("AuthenticAMD", 0x19, 0x11, ""),
            &probe(&["cpu"]),
            empty.path(),
        ),
        Method::IntelSkylakeFormula => plan_in(
            &machine("GenuineIntel", 6, 0x5e, ""),
            &probe(&["cpu"]),
            empty.path(),
        ),
        _ => {
            let dir = sysfs("cpu", SPR_EVENTS);
            plan_in(
                &machine("GenuineIntel", 6, 0x8f, ""),
                &probe(&["cpu"]),
                dir.path(),
            )
        }
    }
    .unwrap()
}

#[test]
fn zen4_breakdown_matches_perfs_formulas() {
    let plan = plan_for(Method::AmdZen4);
    // 1e9 cycles × 6 = 6e9 slots: frontend 0.6e9, backend 3.0e9, dispatched 2.4e9,
    // retired 1.8e9 (bad speculation 0.6e9). The four sum to 6.0e9: no SMT share.
    // Memory: 0.75 of the no-retire cycles wait for loads.
    let counts = [
        Some(0.6e9),
        Some(3.0e9),
        Some(2.4e9),
        Some(1.8e9),
        Some(0.3e9),
        Some(0.4e9),
    ];
    let b = breakdown(&plan, &counts).unwrap();
    assert!(close(b.frontend_bound, 0.1), "{b:?}");
    assert!(close(b.backend_bound, 0.5), "{b:?}");
    assert!(close(b.retiring, 0.3), "{b:?}");
    assert!(close(b.bad_speculation, 0.1), "{b:?}");
    assert!(close(b.memory_bound.unwrap(), 0.375), "{b:?}");
    assert!(close(b.core_bound.unwrap(), 0.125), "{b:?}");
    assert!(close(sum(&b), 1.0));
    assert_eq!(
        b.describe(),
        "backend bound 50% (memory 38%, core 12%), retiring 30%, frontend 10%, bad \
         speculation 10%"
    );
    // Without the no-retire counts the level-1 split stands alone.
    let mut partial = counts;
    partial[5] = None;
    let b = breakdown(&plan, &partial).unwrap();
    assert_eq!((b.memory_bound, b.core_bound), (None, None));
    assert_eq!(b.describe().split(", ").next(), Some("backend bound 50%"));
}

#[test]
fn perf_metrics_breakdown_normalizes_over_the_four() {
    let plan = plan_for(Method::IntelPerfMetricsL2);
    // Slot counts as the kernel reports them (fraction/255 × slots, rounding leaves
    // 1000 of 1e6 slots unaccounted): retiring 380e3, bad 70e3, fe 90e3, be 459e3,
    // of which memory 310e3.
    let counts = [
        Some(1e6),
        Some(380e3),
        Some(70e3),
        Some(90e3),
        Some(459e3),
        Some(310e3),
    ];
    let b = breakdown(&plan, &counts).unwrap();
    let total = 999e3;
    assert!(close(b.retiring, 380e3 / total), "{b:?}");
    assert!(close(b.bad_speculation, 70e3 / total), "{b:?}");
    assert!(close(b.frontend_bound, 90e3 / total), "{b:?}");
    assert!(close(b.backend_bound, 459e3 / total), "{b:?}");
    assert!(close(b.memory_bound.unwrap(), 310e3 / total), "{b:?}");
    assert!(close(b.core_bound.unwrap(), 149e3 / total), "{b:?}");
    assert!(close(sum(&b), 1.0));
    assert_eq!(
        b.describe(),
        "backend bound 46% (memory 31%, core 15%), retiring 38%, frontend 9%, bad \
         speculation 7%"
    );
    // Level 1 only (Ice Lake): no memory split.
    let mut l1 = plan.clone();
    l1.method = Method::IntelPerfMetrics;
    l1.groups[0].pop();
    let b = breakdown(&l1, &counts[..5]).unwrap();
    assert_eq!(b.memory_bound, None);
    // slots leads the group; not counted means the group never ran.
    let mut no_slots = counts;
    no_slots[0] = None;
    assert_eq!(breakdown(&plan, &no_slots), None);
}

#[test]
fn skylake_breakdown_matches_the_tma_formulas() {
    let plan = plan_for(Method::IntelSkylakeFormula);
    // cycles 1e9 → 4e9 slots. frontend 0.4e9 → 0.1; retired 1.2e9 → 0.3;
    // issued 1.4e9, recovery 0.05e9 → bad (1.4 - 1.2 + 0.2)e9 / 4e9 = 0.1;
    // backend 1 - 0.5 = 0.5. Memory fraction (300 + 100) / (500 + 150 + 0.3 × 500 + 100)
    // = 400 / 900; memory 0.5 × 4/9.
    let counts = [
        Some(1e9),
        Some(0.4e9),
        Some(1.4e9),
        Some(1.2e9),
        Some(0.05e9),
        Some(300e6),
        Some(500e6),
        Some(100e6),
        Some(150e6),
        Some(500e6),
    ];
    let b = breakdown(&plan, &counts).unwrap();
    assert!(close(b.frontend_bound, 0.1), "{b:?}");
    assert!(close(b.bad_speculation, 0.1), "{b:?}");
    assert!(close(b.retiring, 0.3), "{b:?}");
    assert!(close(b.backend_bound, 0.5), "{b:?}");
    assert!(close(b.memory_bound.unwrap(), 0.5 * 400.0 / 900.0), "{b:?}");
    assert!(close(b.core_bound.unwrap(), 0.5 * 500.0 / 900.0), "{b:?}");
    assert!(close(sum(&b), 1.0));
    // Counting noise past 1: the backend share is clamped at 0, the rest renormalized.
    let mut over = counts;
    over[1] = Some(2.8e9);
    let b = breakdown(&plan, &over).unwrap();
    assert_eq!(b.backend_bound, 0.0);
    assert!(close(sum(&b), 1.0));
    assert!(b.retiring > 0.0 && b.frontend_bound > b.retiring);
}

#[test]
fn missing_or_zero_counts_give_none() {
    for method in [
        Method::AmdZen4,
        Method::IntelPerfMetricsL2,
        Method::IntelSkylakeFormula,
    ] {
        let plan = plan_for(method);
        let n: usize = plan.groups.iter().map(Vec::len).sum();
        assert_eq!(breakdown(&plan, &vec![None; n]), None, "{method:?}");
        assert_eq!(breakdown(&plan, &vec![Some(0.0); n]), None, "{method:?}");
        // The wrong number of counts is not read at all.
        assert_eq!(
            breakdown(&plan, &vec![Some(1.0); n - 1]),
            None,
            "{method:?}"
        );
        // One missing level-1 count is enough.
        let mut one_missing = vec![Some(1e6); n];
        one_missing[1] = None;
        assert_eq!(breakdown(&plan, &one_missing), None, "{method:?}");
        let mut negative = vec![Some(1e6); n];
        negative[1] = Some(-1.0);
        assert_eq!(breakdown(&plan, &negative), None, "{method:?}");
    }
    // Skylake with zero cycles has no slots to divide by.
    let plan = plan_for(Method::IntelSkylakeFormula);
    let mut counts = vec![Some(1e6); 10];
    counts[0] = Some(0.0);
    assert_eq!(breakdown(&plan, &counts), None);
}

#[test]
fn breakdown_round_trips_through_json() {
    let b = Breakdown {
        retiring: 0.3,
        bad_speculation: 0.1,
        frontend_bound: 0.1,
        backend_bound: 0.5,
        memory_bound: Some(0.4),
        core_bound: Some(0.1),
    };
    let json = serde_json::to_string(&b).unwrap();
    assert_eq!(serde_json::from_str::<Breakdown>(&json).unwrap(), b);
    assert_eq!(
        serde_json::to_string(&Method::IntelSkylakeFormula).unwrap(),
        "\"intel-skylake-formula\""
    );
}
