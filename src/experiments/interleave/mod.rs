//! Interleave: read bandwidth with memory spread over a local DRAM node and far nodes
//! (CXL expanders, HBM, another socket) at several weight ratios, the ratio that
//! maximises it, its gain over local DRAM alone, and the lines that would apply it with
//! the kernel's weighted interleave (`MPOL_WEIGHTED_INTERLEAVE`, Linux 6.9+).
//!
//! The kernel's weights are global, so memscope never writes them: it places the pages of
//! its buffers itself. Each reading thread's buffer (base pages) is bound to the mix's
//! nodes and first touched on the local node; for each ratio, page k is moved with
//! `move_pages` to the node the weights deal it to (`weights::node_of_page`: `w` pages of
//! a node in a row, as the kernel deals them), moving only the pages whose node changes
//! from the previous ratio. The threads, pinned to the CPUs of the local node, then read
//! their buffers together (`platform::team`), and a sample of pages is asked where it is
//! afterwards, so a page that moved back is seen. Where the kernel has weighted
//! interleave, one more set of buffers is faulted in under the thread's
//! `MPOL_WEIGHTED_INTERLEAVE` policy with the system's current weights and read the same
//! way: the check that the page-by-page emulation measures what the kernel would do.
//!
//! Fewer than two memory nodes: refused as not applicable here (exit 2) with the reason.
//! The arithmetic of weights and ratios is in `weights`, the buffers, moves and reading
//! team in `bench`; this file plans the mixes and runs them.

mod bench;
pub mod figures;
pub mod params;
mod run;
#[cfg(test)]
pub(crate) mod samples;
pub mod view;
pub mod weights;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::experiments::shared::sizing::round_to_granule;
use crate::kernels::stream::{self, Isa};
use crate::platform::page_placement::{self, SystemWeights};
use crate::platform::timer::Timer;
use crate::session::progress::Progress;
use crate::topology::cpu::format_cpu_list;
use crate::topology::tiers::{HmatAccess, MemoryKind, WeightedInterleave};
use crate::topology::{Machine, NumaNode};
use bench::{read_isa, Bench, Placed};
use weights::{Measured, Ratio, Recommendation};

/// `experiments.interleave` of the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterleaveResult {
    /// The node whose CPUs read (its memory is the local DRAM of every mix).
    pub cpu_node: usize,
    /// The reading CPUs, one thread each.
    pub cpus: Vec<usize>,
    /// Bytes each thread reads (base pages).
    pub bytes_per_thread: u64,
    pub page_bytes: u64,
    pub isa: Isa,
    pub mixes: Vec<MixResult>,
    /// Whether this kernel can apply weights itself.
    pub kernel: KernelSupport,
    /// The system's weights and auto mode as read (never written); None before 6.9.
    pub system_weights: Option<WeightedInterleave>,
    /// Where they live, and the name of the auto-mode file (`auto`; `__auto_type` on
    /// kernels that misnamed it).
    pub weights_dir: String,
    pub auto_file: Option<String>,
    /// Widest spread of any point's trials, %.
    pub max_spread_pct: f64,
    /// What to know: the kernel cannot apply weights, nodes left out, pages not placed.
    pub note: Option<String>,
}

/// Whether the kernel has `MPOL_WEIGHTED_INTERLEAVE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KernelSupport {
    /// It accepts the mode (Linux 6.9+).
    Available,
    /// It refuses the mode as unknown (before 6.9).
    Missing,
    /// The call was refused for another reason (a container's seccomp profile).
    Unknown,
}

/// One set of nodes the memory is spread over: the local node first.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixResult {
    pub nodes: Vec<usize>,
    /// What each node's memory is (sysfs's word; DRAM unless it tells otherwise).
    pub kinds: Vec<MemoryKind>,
    /// The ratio of the firmware's (HMAT) read bandwidths, local:far, when it quotes both.
    pub firmware_ratio: Option<Ratio>,
    /// One point per ratio, from the most local share to the least.
    pub points: Vec<RatioPoint>,
    pub recommendation: Option<Recommendation>,
    /// The lines that would apply the best ratio: printed, never run.
    pub apply: Vec<String>,
    /// The kernel's own policy with the system's weights, beside the emulation.
    pub kernel_check: Option<KernelCheck>,
}

/// Why a ratio was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PointOrigin {
    /// Local memory alone, the baseline.
    Baseline,
    /// In --ratios (or the default list).
    Given,
    /// The ratio of the firmware's bandwidths.
    Firmware,
    /// Between the best and a neighbour, after the first pass.
    Refined,
    /// The system's current weights (for the kernel check).
    System,
}

/// Read bandwidth at one ratio.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatioPoint {
    pub ratio: Ratio,
    pub origin: PointOrigin,
    /// Share of the pages on the local node.
    pub local_share: f64,
    /// Median over the trials, and their spread (1.4826·MAD/median, %), slowest, fastest.
    pub read_gb_per_s: f64,
    pub spread_pct: f64,
    pub min_gb_per_s: f64,
    pub max_gb_per_s: f64,
    /// Overlap of the reading threads (median over the trials).
    pub overlap: f64,
    /// Share of all pages on their intended node after the moves (move_pages status).
    pub placed: f64,
    /// Share of the sampled pages still on their intended node after the trials.
    pub verified: Option<f64>,
}

/// The kernel's weighted interleave with the system's current weights.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelCheck {
    /// The system's weight of each node of the mix (1 where it has no file).
    pub weights: Vec<u32>,
    /// Share of the pages each node got from the kernel, and what the weights imply.
    pub shares: Vec<f64>,
    pub expected_shares: Vec<f64>,
    pub read_gb_per_s: f64,
    pub spread_pct: f64,
    /// The emulation at the same weights, and (kernel / emulation − 1) × 100.
    pub emulated_gb_per_s: Option<f64>,
    pub difference_pct: Option<f64>,
}

/// What to measure; resolved from the command line by `params`.
#[derive(Debug, Clone)]
pub struct InterleaveConfig {
    pub cpu_node: usize,
    /// The reading CPUs (all of the node's this process may use, or --threads of them).
    pub cpus: Vec<usize>,
    pub mixes: Vec<Mix>,
    pub ratios: Vec<Ratio>,
    /// Measure up to two ratios more around the best of the first pass.
    pub refine: bool,
    pub bytes_per_thread: u64,
    pub repetitions: usize,
    pub trial_ns: f64,
    pub kernel: KernelSupport,
    pub system: Option<SystemWeights>,
    /// Memory nodes not in any mix, and why.
    pub left_out: Vec<String>,
}

/// One set of nodes to spread memory over, the local node first.
#[derive(Debug, Clone, PartialEq)]
pub struct Mix {
    pub nodes: Vec<usize>,
    pub kinds: Vec<MemoryKind>,
    pub firmware: Option<Ratio>,
}

/// The CPU node and the mixes: with `chosen` (--nodes), one mix of those nodes, the first
/// local; else the node of `cpu` against every other memory node, one mix each. Memory
/// nodes are those with memory (and, when known, in `with_memory`: this process's
/// Mems_allowed). Fewer than two is `Unsupported`, with the kernel's state in `why_not`.
pub fn plan_mixes(
    machine: &Machine,
    cpu: usize,
    chosen: Option<&[usize]>,
    with_memory: Option<&[usize]>,
    why_not: &str,
) -> Result<(usize, Vec<Mix>, Vec<String>), UsageError> {
    let has_memory = |n: &NumaNode| {
        n.memory_total_bytes > 0 && with_memory.is_none_or(|usable| usable.contains(&n.id))
    };
    let memory: Vec<usize> = (machine.numa_nodes.iter())
        .filter(|n| has_memory(n))
        .map(|n| n.id)
        .collect();
    if memory.len() < 2 {
        let which = match memory.as_slice() {
            [one] => format!("one (node {one})"),
            _ => "none that this process may use".to_string(),
        };
        return Err(UsageError::Unsupported(format!(
            "interleave spreads memory over two or more NUMA nodes with memory, and this \
             machine has {which}: there is nothing to interleave across. Weighted interleave \
             and memory tiers need more than one memory node (a second socket, CXL or HBM \
             memory). {why_not}"
        )));
    }
    let node = |id: usize| machine.numa_nodes.iter().find(|n| n.id == id);
    let cpus_of = |id: usize| -> Vec<usize> {
        node(id).map_or_else(Vec::new, |n| {
            (n.cpus.iter().copied())
                .filter(|c| machine.allowed_cpus.contains(c))
                .collect()
        })
    };
    let mix = |nodes: Vec<usize>| {
        let kinds = nodes
            .iter()
            .map(|&id| node(id).map_or(MemoryKind::Dram, |n| n.kind))
            .collect();
        let firmware = match nodes.as_slice() {
            [local, far] => firmware_ratio(node(*local), node(*far), *local),
            _ => None,
        };
        Mix {
            nodes,
            kinds,
            firmware,
        }
    };
    let Some(chosen) = chosen else {
        let cpu_node = (machine.numa_nodes.iter())
            .find(|n| n.cpus.contains(&cpu))
            .map(|n| n.id)
            .filter(|id| memory.contains(id))
            .ok_or_else(|| {
                invalid_nodes(
                    &cpu.to_string(),
                    "--cpu",
                    "a CPU on a NUMA node with memory (its memory is the local DRAM), or \
                     --nodes LOCAL,FAR,…",
                )
            })?;
        let mixes = (memory.iter().copied())
            .filter(|&id| id != cpu_node)
            .map(|far| mix(vec![cpu_node, far]))
            .collect();
        return Ok((cpu_node, mixes, Vec::new()));
    };
    let list = format_cpu_list(&memory);
    for &id in chosen {
        if node(id).is_none() || !memory.contains(&id) {
            return Err(invalid_nodes(
                &id.to_string(),
                "--nodes",
                &format!("NUMA nodes with memory this process may use: {list}"),
            ));
        }
    }
    let mut nodes: Vec<usize> = Vec::new();
    for &id in chosen {
        if !nodes.contains(&id) {
            nodes.push(id);
        }
    }
    let text = (nodes.iter().map(ToString::to_string))
        .collect::<Vec<_>>()
        .join(",");
    if nodes.len() < 2 {
        return Err(invalid_nodes(
            &text,
            "--nodes",
            &format!("two or more nodes, the local one first (from {list})"),
        ));
    }
    if cpus_of(nodes[0]).is_empty() {
        return Err(invalid_nodes(
            &text,
            "--nodes",
            &format!(
                "a first node with CPUs this process may use (the threads read from there); \
                 node {} has none",
                nodes[0]
            ),
        ));
    }
    let left_out = (memory.iter())
        .filter(|id| !nodes.contains(id))
        .map(|id| format!("node {id} is not in --nodes"))
        .collect();
    Ok((nodes[0], vec![mix(nodes)], left_out))
}

fn invalid_nodes(value: &str, flag: &'static str, expected: &str) -> UsageError {
    UsageError::InvalidValue {
        flag,
        value: value.to_string(),
        expected: expected.to_string(),
    }
}

/// The firmware's read-bandwidth ratio local:far: the local node's own figure and the far
/// node's as seen from the local node (its HMAT initiators include it). CPU initiators
/// (access1) first, any initiator (access0) else.
fn firmware_ratio(
    local: Option<&NumaNode>,
    far: Option<&NumaNode>,
    cpu_node: usize,
) -> Option<Ratio> {
    let access = |n: &NumaNode| -> Option<HmatAccess> {
        n.hmat_cpu
            .clone()
            .filter(|a| a.read_bandwidth_mb_s.is_some())
            .or_else(|| n.hmat.clone())
    };
    let local = access(local?)?;
    let far = access(far?)?;
    if !far.initiators.contains(&cpu_node) {
        return None;
    }
    weights::bandwidth_ratio(local.read_bandwidth_mb_s, far.read_bandwidth_mb_s)
}

/// The kernel's weighted interleave, in words, for messages.
pub fn kernel_state(kernel: KernelSupport, system: Option<&SystemWeights>) -> String {
    let weights = system.map(|s| {
        let mut parts: Vec<String> = (s.settings.weights.iter())
            .map(|(n, w)| format!("node {n} = {w}"))
            .collect();
        if let (Some(file), Some(auto)) = (&s.auto_file, s.settings.auto) {
            parts.push(format!("{file} = {auto}"));
        }
        parts.join(", ")
    });
    match (kernel, weights) {
        (KernelSupport::Available, Some(w)) => format!(
            "This kernel has weighted interleave (MPOL_WEIGHTED_INTERLEAVE); its weights now: \
             {w} (read only, never written)."
        ),
        (KernelSupport::Available, None) => {
            "This kernel has weighted interleave (MPOL_WEIGHTED_INTERLEAVE).".to_string()
        }
        (KernelSupport::Missing, _) => {
            "This kernel has no weighted interleave (MPOL_WEIGHTED_INTERLEAVE needs Linux 6.9+)."
                .to_string()
        }
        (KernelSupport::Unknown, _) => {
            "Whether this kernel has weighted interleave could not be asked.".to_string()
        }
    }
}

/// "50 %, 50 %" for shares.
fn percents(shares: &[f64]) -> String {
    (shares.iter().map(|s| format!("{:.0} %", s * 100.0)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Measures every mix. Errors are the user's to fix (memory a node cannot give, a
/// system that refuses the moves) or say the machine cannot do it.
pub fn measure(
    config: &InterleaveConfig,
    timer: &Timer,
    progress: &Progress,
) -> Result<InterleaveResult, UsageError> {
    let page = crate::topology::memory::base_page_bytes() as usize;
    let bench = Bench {
        config,
        timer,
        kernel: stream::find("read").expect("the registry has a read kernel"),
        isa: read_isa(),
        array_bytes: round_to_granule(config.bytes_per_thread) as usize,
        page,
    };
    let system_ratio = |nodes: &[usize]| -> Option<Vec<u32>> {
        let system = config.system.as_ref()?;
        Some(nodes.iter().map(|&n| system.weight(n)).collect())
    };
    let mut notes: Vec<String> = config
        .left_out
        .iter()
        .map(|why| format!("{why}: left out"))
        .collect();
    let mut max_spread = 0f64;
    let steps: usize = config.mixes.len() * (config.ratios.len() + 4);
    progress.start("interleave", steps as u64);
    let mut mixes = Vec::new();
    for mix in &config.mixes {
        let nodes = &mix.nodes;
        let far_nodes = nodes.len() - 1;
        let label = format_cpu_list(nodes);
        progress.message(&format!("placing pages over nodes {label}"));
        let mut placed = bench.buffers(nodes)?;
        let mut points: Vec<RatioPoint> = Vec::new();
        let mut measure_point = |ratio: Ratio,
                                 weights: &[u32],
                                 origin: PointOrigin,
                                 placed: &mut Placed|
         -> Result<RatioPoint, UsageError> {
            progress.message(&format!("read bandwidth over nodes {label} at {ratio}"));
            let share = bench.place(placed, nodes, weights)?;
            let trials = bench.read(&placed.buffers)?;
            let verified = bench.verify(placed, nodes, weights);
            progress.advance();
            max_spread = max_spread.max(trials.summary.spread_pct());
            let local_share = weights[0] as f64 / weights.iter().map(|&w| w as f64).sum::<f64>();
            Ok(RatioPoint {
                ratio,
                origin,
                local_share,
                read_gb_per_s: trials.summary.median,
                spread_pct: trials.summary.spread_pct(),
                min_gb_per_s: trials.summary.min,
                max_gb_per_s: trials.summary.max,
                overlap: trials.overlap,
                placed: share,
                verified,
            })
        };
        for ratio in weights::candidates(&config.ratios, mix.firmware, far_nodes) {
            let origin = if ratio == Ratio::LOCAL {
                PointOrigin::Baseline
            } else if config.ratios.contains(&ratio) {
                PointOrigin::Given
            } else {
                PointOrigin::Firmware
            };
            points.push(measure_point(
                ratio,
                &ratio.weights(nodes.len()),
                origin,
                &mut placed,
            )?);
        }
        if config.refine {
            let measured: Vec<(Ratio, f64)> =
                points.iter().map(|p| (p.ratio, p.read_gb_per_s)).collect();
            for ratio in weights::refinements(&measured, far_nodes) {
                let point = measure_point(
                    ratio,
                    &ratio.weights(nodes.len()),
                    PointOrigin::Refined,
                    &mut placed,
                )?;
                points.push(point);
            }
        }
        // The system's weights, emulated, for the kernel check.
        let system = system_ratio(nodes).filter(|_| config.kernel == KernelSupport::Available);
        let mut emulated = None;
        if let Some(weights) = &system {
            // Reuse the point of the same ratio, else measure these weights as they are.
            let ratio = Ratio::new(weights[0], weights[1]);
            let same = ratio.filter(|r| r.weights(nodes.len()) == *weights);
            match same.and_then(|r| points.iter().find(|p| p.ratio == r)) {
                Some(point) => emulated = Some(point.read_gb_per_s),
                None => {
                    let ratio = ratio.unwrap_or(Ratio::LOCAL);
                    let point = measure_point(ratio, weights, PointOrigin::System, &mut placed)?;
                    emulated = Some(point.read_gb_per_s);
                    points.push(point);
                }
            }
        }
        drop(placed);
        let kernel_check = match system {
            Some(weights) => {
                progress.message(&format!(
                    "the kernel's weighted interleave over nodes {label}"
                ));
                let (shares, trials) = bench.kernel_policy(nodes)?;
                progress.advance();
                max_spread = max_spread.max(trials.summary.spread_pct());
                let total: f64 = weights.iter().map(|&w| f64::from(w)).sum();
                Some(KernelCheck {
                    expected_shares: weights.iter().map(|&w| f64::from(w) / total).collect(),
                    weights,
                    shares,
                    read_gb_per_s: trials.summary.median,
                    spread_pct: trials.summary.spread_pct(),
                    difference_pct: emulated.map(|e| (trials.summary.median / e - 1.0) * 100.0),
                    emulated_gb_per_s: emulated,
                })
            }
            None => None,
        };
        if let Some(check) = &kernel_check {
            let off = (check.shares.iter().zip(&check.expected_shares))
                .any(|(got, want)| (got - want).abs() > 0.02);
            if off {
                notes.push(format!(
                    "nodes {label}: the kernel's weighted interleave put {} of the pages                      where the weights imply {}",
                    percents(&check.shares),
                    percents(&check.expected_shares)
                ));
            }
        }
        points.sort_by(|a, b| b.local_share.total_cmp(&a.local_share));
        let measured: Vec<Measured> = (points.iter())
            .filter(|p| p.origin != PointOrigin::System)
            .map(|p| Measured {
                ratio: p.ratio,
                median: p.read_gb_per_s,
                spread_pct: p.spread_pct,
            })
            .collect();
        let recommendation = weights::recommend(&measured);
        let apply = match &recommendation {
            Some(rec) if !rec.within_noise => weights::apply_lines(
                rec.best,
                nodes,
                page_placement::WEIGHTS_DIR,
                config.system.as_ref().and_then(|s| s.auto_file.as_deref()),
            ),
            _ => Vec::new(),
        };
        for point in &points {
            if point.placed < 0.99 {
                notes.push(format!(
                    "nodes {label} at {}: only {:.0}% of the pages could be moved where the \
                     weights put them",
                    point.ratio,
                    point.placed * 100.0
                ));
            }
            if let Some(verified) = point.verified.filter(|&v| v < 0.99) {
                notes.push(format!(
                    "nodes {label} at {}: after the trials only {:.0}% of the sampled pages \
                     were still where they were put (NUMA balancing or reclaim moved them)",
                    point.ratio,
                    verified * 100.0
                ));
            }
        }
        mixes.push(MixResult {
            nodes: nodes.clone(),
            kinds: mix.kinds.clone(),
            firmware_ratio: mix.firmware,
            points,
            recommendation,
            apply,
            kernel_check,
        });
    }
    progress.finish();
    match config.kernel {
        KernelSupport::Available => {}
        KernelSupport::Missing => notes.push(
            "this kernel has no weighted interleave (MPOL_WEIGHTED_INTERLEAVE needs Linux \
             6.9+): the ratios were measured with pages placed one by one, but the kernel \
             cannot apply them, so the lines below need a newer kernel"
                .to_string(),
        ),
        KernelSupport::Unknown => notes.push(
            "whether this kernel has weighted interleave could not be asked, so the kernel's \
             own policy was not measured"
                .to_string(),
        ),
    }
    Ok(InterleaveResult {
        cpu_node: config.cpu_node,
        cpus: config.cpus.clone(),
        bytes_per_thread: bench.array_bytes as u64,
        page_bytes: page as u64,
        isa: bench.isa,
        mixes,
        kernel: config.kernel,
        system_weights: config.system.as_ref().map(|s| s.settings.clone()),
        weights_dir: page_placement::WEIGHTS_DIR.to_string(),
        auto_file: config.system.as_ref().and_then(|s| s.auto_file.clone()),
        max_spread_pct: max_spread,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    })
}

#[cfg(test)]
mod tests {
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
        plan_mixes(machine, cpu, chosen, None, "KERNEL STATE.").map_err(|e| e.to_string())
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
        let error = plan_mixes(&machine, 1, None, None, "KERNEL STATE.").unwrap_err();
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
        let error = plan_mixes(&machine, 1, None, Some(&[0]), "").unwrap_err();
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
        let error = plan(&machine, 3, Some(&[2, 2])).unwrap_err();
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
}
