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
use crate::experiments::shared::node_reading::read_isa;
use crate::experiments::shared::sizing::round_to_granule;
use crate::kernels::stream::{self, Isa};
use crate::platform::page_placement::{self, SystemWeights};
use crate::platform::timer::Timer;
use crate::session::progress::Progress;
use crate::topology::cpu::format_cpu_list;
use crate::topology::tiers::{HmatAccess, MemoryKind, WeightedInterleave};
use crate::topology::{Machine, NumaNode};
use bench::{Bench, Placed};
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
                    "nodes {label}: the kernel's weighted interleave put {} of the pages \
                     where the weights imply {}",
                    percents(&check.shares),
                    percents(&check.expected_shares)
                ));
            }
        }
        points.sort_by(|a, b| b.local_share.total_cmp(&a.local_share));
        let (recommendation, apply) = recommend(
            &points,
            nodes,
            config.system.as_ref().and_then(|s| s.auto_file.as_deref()),
        );
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

/// The recommendation from a mix's emulated ratios (the kernel's own check left out), and
/// the lines that would apply it when its gain is beyond the noise.
fn recommend(
    points: &[RatioPoint],
    nodes: &[usize],
    auto_file: Option<&str>,
) -> (Option<Recommendation>, Vec<String>) {
    let measured: Vec<Measured> = points
        .iter()
        .filter(|p| p.origin != PointOrigin::System)
        .map(|p| Measured {
            ratio: p.ratio,
            median: p.read_gb_per_s,
            spread_pct: p.spread_pct,
        })
        .collect();
    let recommendation = weights::recommend(&measured);
    let apply = match &recommendation {
        Some(rec) if !rec.within_noise => {
            weights::apply_lines(rec.best, nodes, page_placement::WEIGHTS_DIR, auto_file)
        }
        _ => Vec::new(),
    };
    (recommendation, apply)
}

#[cfg(test)]
mod tests;
