//! Tests of the interleave room: its plan on synthetic topologies (two sockets with CXL,
//! HBM in flat mode, sub-NUMA clustering, one node) and a mix of node 0 with itself.

use super::*;
use crate::topology::tiers::HmatAccess;
use crate::units::MIB;

fn node(id: usize, cpus: Vec<usize>, kind: MemoryKind) -> NumaNode {
    NumaNode {
        id,
        cpus,
        memory_total_bytes: 1 << 36,
        memory_free_bytes: 1 << 36,
        kind,
        ..NumaNode::default()
    }
}

fn hmat(initiators: Vec<usize>, read_mb_s: u64) -> Option<HmatAccess> {
    Some(HmatAccess {
        initiators,
        read_bandwidth_mb_s: Some(read_mb_s),
        ..HmatAccess::default()
    })
}

/// Two sockets (nodes 0, 1) and a CXL expander behind each (nodes 2, 3), with HMAT
/// bandwidths: DRAM 300 GB/s, CXL 64 GB/s from its own socket.
fn two_sockets_two_cxl() -> Machine {
    let mut nodes = vec![
        node(0, (0..8).collect(), MemoryKind::Dram),
        node(1, (8..16).collect(), MemoryKind::Dram),
        node(2, vec![], MemoryKind::Cxl),
        node(3, vec![], MemoryKind::Cxl),
    ];
    nodes[0].hmat_cpu = hmat(vec![0], 300_000);
    nodes[1].hmat_cpu = hmat(vec![1], 300_000);
    nodes[2].hmat_cpu = hmat(vec![0], 64_000);
    nodes[3].hmat_cpu = hmat(vec![1], 64_000);
    Machine {
        numa_nodes: nodes,
        allowed_cpus: (0..16).collect(),
        ..Machine::default()
    }
}

fn plan(
    machine: &Machine,
    cpu: usize,
    chosen: Option<&[usize]>,
) -> Result<(usize, Vec<Mix>, Vec<String>), String> {
    plan_mixes(machine, Some(cpu), chosen, None, "KERNEL STATE.").map_err(|e| e.to_string())
}

#[test]
fn without_cpu_the_reading_node_is_the_one_far_memory_hangs_off() {
    // Far memory behind socket 0 (its HMAT initiator): read from node 0, not from the
    // last CPU's socket.
    let mut machine = two_sockets_two_cxl();
    machine.numa_nodes.pop();
    let home = |m: &Machine| plan_mixes(m, None, None, None, "").map(|p| p.0);
    assert_eq!(home(&machine).unwrap(), 0);
    // Node 1 has CPUs and no memory (the last CPU is there): still node 0, not an error.
    machine.numa_nodes[1].memory_total_bytes = 0;
    assert_eq!(home(&machine).unwrap(), 0);
    // Nothing CPU-less: the last node with CPUs and memory, as the last CPU's was.
    let plain = Machine {
        numa_nodes: vec![
            node(0, vec![0], MemoryKind::Dram),
            node(1, vec![1], MemoryKind::Dram),
        ],
        allowed_cpus: vec![0, 1],
        ..Machine::default()
    };
    assert_eq!(home(&plain).unwrap(), 1);
}

#[test]
fn two_sockets_and_two_cxl_nodes_give_a_mix_per_far_node_with_the_firmware_ratio() {
    let machine = two_sockets_two_cxl();
    let (cpu_node, mixes, left_out) = plan(&machine, 3, None).unwrap();
    assert_eq!(cpu_node, 0);
    assert!(left_out.is_empty());
    let nodes: Vec<&[usize]> = mixes.iter().map(|m| m.nodes.as_slice()).collect();
    assert_eq!(nodes, [&[0, 1][..], &[0, 2], &[0, 3]]);
    assert_eq!(mixes[1].kinds, [MemoryKind::Dram, MemoryKind::Cxl]);
    // 300:64 in small terms; the far socket's CXL is not quoted from node 0.
    assert_eq!(mixes[1].firmware, Ratio::new(14, 3));
    assert_eq!(mixes[2].firmware, None);
    assert_eq!(mixes[0].firmware, None, "node 1's figure is from node 1");
    // From the other socket's CPU.
    let (cpu_node, mixes, _) = plan(&machine, 12, None).unwrap();
    assert_eq!(cpu_node, 1);
    assert_eq!(mixes[2].nodes, [1, 3]);
    assert_eq!(mixes[2].firmware, Ratio::new(14, 3));
    // --nodes: one mix, the rest left out with a reason.
    let (_, mixes, left_out) = plan(&machine, 3, Some(&[0, 2, 3])).unwrap();
    assert_eq!(mixes.len(), 1);
    assert_eq!(mixes[0].nodes, [0, 2, 3]);
    assert_eq!(mixes[0].firmware, None, "three nodes have no one ratio");
    assert_eq!(left_out, ["node 1 is not in --nodes"]);
}

#[test]
fn hbm_in_flat_mode_is_a_far_node_that_may_beat_dram() {
    // Xeon Max in flat mode, one socket, SNC off: DRAM node 0, HBM node 1 without CPUs.
    let mut machine = Machine {
        numa_nodes: vec![
            node(0, (0..56).collect(), MemoryKind::Dram),
            node(1, vec![], MemoryKind::Hbm),
        ],
        allowed_cpus: (0..56).collect(),
        ..Machine::default()
    };
    machine.numa_nodes[0].hmat = hmat(vec![0], 250_000);
    machine.numa_nodes[1].hmat = hmat(vec![0], 1_000_000);
    let (_, mixes, _) = plan(&machine, 55, None).unwrap();
    assert_eq!(mixes.len(), 1);
    assert_eq!(mixes[0].kinds[1], MemoryKind::Hbm);
    // The firmware says the far node is faster: weights 1:4.
    assert_eq!(mixes[0].firmware, Ratio::new(1, 4));
    // The HBM node cannot be where threads read from.
    let error = plan(&machine, 55, Some(&[1, 0])).unwrap_err();
    assert!(
        error.contains("'1,0' for --nodes") && error.contains("node 1 has none"),
        "{error}"
    );
}

#[test]
fn sub_numa_clustering_makes_each_cluster_a_far_node_of_the_others() {
    // Two sockets of four SNC clusters each: nodes 0-7, 4 CPUs each.
    let machine = Machine {
        numa_nodes: (0..8)
            .map(|id| node(id, (id * 4..id * 4 + 4).collect(), MemoryKind::Dram))
            .collect(),
        allowed_cpus: (0..32).collect(),
        ..Machine::default()
    };
    let (cpu_node, mixes, _) = plan(&machine, 9, None).unwrap();
    assert_eq!(cpu_node, 2);
    assert_eq!(mixes.len(), 7);
    assert!(mixes.iter().all(|m| m.nodes[0] == 2 && m.nodes.len() == 2));
    // The reading threads: the cluster's CPUs, highest first.
    assert_eq!(params::reading_cpus(&machine, 2), vec![11, 10, 9, 8]);
}

#[test]
fn one_memory_node_is_not_applicable_and_says_why() {
    let machine = Machine {
        numa_nodes: vec![node(0, vec![0, 1], MemoryKind::Dram)],
        allowed_cpus: vec![0, 1],
        ..Machine::default()
    };
    let error = plan_mixes(&machine, Some(1), None, None, "KERNEL STATE.").unwrap_err();
    assert!(matches!(error, UsageError::Unsupported(_)));
    let text = error.to_string();
    for words in [
        "not supported here",
        "this machine has one (node 0)",
        "Weighted interleave and memory tiers need more than one memory node",
        "KERNEL STATE.",
    ] {
        assert!(text.contains(words), "{words}: {text}");
    }
    // Two nodes, but this process may use the memory of one only.
    let machine = two_sockets_two_cxl();
    let error = plan_mixes(&machine, Some(1), None, Some(&[0]), "").unwrap_err();
    assert!(error.to_string().contains("has one (node 0)"), "{error}");
}

#[test]
fn bad_nodes_are_named_with_what_was_expected() {
    let machine = two_sockets_two_cxl();
    let error = plan(&machine, 3, Some(&[0, 9])).unwrap_err();
    assert!(
        error.contains("'9' for --nodes") && error.contains("0-3"),
        "{error}"
    );
    let error = plan(&machine, 3, Some(&[2])).unwrap_err();
    assert!(
        error.contains("'2' for --nodes") && error.contains("two or more"),
        "{error}"
    );
}

#[test]
fn the_kernel_state_names_support_weights_and_the_auto_file() {
    let system = SystemWeights {
        settings: WeightedInterleave {
            auto: Some(false),
            weights: vec![(0, 3), (2, 1)],
        },
        dir: WEIGHTS_DIR_FOR_TESTS.into(),
        auto_file: Some("auto".into()),
    };
    let text = kernel_state(KernelSupport::Available, Some(&system));
    assert!(
        text.contains("node 0 = 3, node 2 = 1, auto = false"),
        "{text}"
    );
    let text = kernel_state(KernelSupport::Missing, None);
    assert!(text.contains("needs Linux 6.9+"), "{text}");
}

const WEIGHTS_DIR_FOR_TESTS: &str = "/sys/kernel/mm/mempolicy/weighted_interleave";

/// The whole measurement on this machine: a "mix" of node 0 with itself, so every page
/// can be moved where it already is; the bandwidths are real, the placement trivial.
#[test]
fn a_mix_of_node_0_with_itself_runs_end_to_end() {
    let mut machine = crate::topology::detect().expect("machine");
    machine.allowed_cpus = crate::platform::affinity::allowed_cpus().expect("affinity");
    let Some(&cpu) = machine.numa_nodes[0]
        .cpus
        .iter()
        .rev()
        .find(|c| machine.allowed_cpus.contains(c))
    else {
        return eprintln!("skipped: no CPU of node 0 may be used");
    };
    let kernel = match page_placement::kernel_has_weighted_interleave(0) {
        Ok(true) => KernelSupport::Available,
        Ok(false) => KernelSupport::Missing,
        Err(error) => return eprintln!("skipped: {error}"),
    };
    let config = InterleaveConfig {
        cpu_node: 0,
        cpus: vec![cpu],
        mixes: vec![Mix {
            nodes: vec![0, 0],
            kinds: vec![MemoryKind::Dram; 2],
            firmware: None,
        }],
        ratios: vec![Ratio::new(3, 1).unwrap(), Ratio::new(1, 1).unwrap()],
        refine: true,
        bytes_per_thread: 4 * MIB,
        repetitions: 3,
        trial_ns: 2e5,
        kernel,
        system: page_placement::read_system_weights(std::path::Path::new(
            page_placement::WEIGHTS_DIR,
        )),
        left_out: Vec::new(),
    };
    let timer = Timer::calibrate().0;
    let result = match measure(&config, &timer, &Progress::hidden()) {
        Err(UsageError::Unsupported(why)) => return eprintln!("skipped: {why}"),
        other => other.unwrap(),
    };
    let mix = &result.mixes[0];
    assert!(mix.points.len() >= 3, "1:0, 3:1, 1:1 and refinements");
    assert_eq!(mix.points[0].ratio, Ratio::LOCAL);
    for p in &mix.points {
        assert!(p.read_gb_per_s.is_finite() && p.read_gb_per_s > 0.0);
        assert!(p.min_gb_per_s <= p.read_gb_per_s && p.read_gb_per_s <= p.max_gb_per_s);
        // Both "nodes" are node 0: every page is on node 0, the first of the mix, so
        // the pages dealt to the second count as not on their node.
        assert!((p.placed - p.local_share).abs() < 0.01, "{p:?}");
    }
    let rec = mix.recommendation.unwrap();
    assert!(rec.best_gb_per_s >= rec.local_gb_per_s);
    if kernel == KernelSupport::Available && config.system.is_some() {
        let check = mix.kernel_check.as_ref().unwrap();
        assert!(check.read_gb_per_s > 0.0);
        assert!((check.shares[0] - 1.0).abs() < 1e-9, "all on node 0");
    }
}
