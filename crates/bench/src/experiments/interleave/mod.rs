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
#[cfg(any(test, feature = "test-support"))]
pub mod samples;
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
use bench::Bench;
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
    /// (local, best) read GB/s measured in turn after the first pass (the best ≠ 1:0).
    #[serde(default)]
    pub confirmation: Vec<(f64, f64)>,
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

/// The CPU node and the mixes: with `chosen` (--nodes, without repeats), one mix of those
/// nodes, the first local; else the node of `cpu` (--cpu; without it `home_node`) against
/// every other memory node, one mix each. Memory nodes are those with memory (and, when
/// known, in `with_memory`: this process's Mems_allowed). Fewer than two is
/// `Unsupported`, with the kernel's state in `why_not`.
pub(crate) fn plan_mixes(
    machine: &Machine,
    cpu: Option<usize>,
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
        let node_of = |cpu: usize| machine.numa_nodes.iter().find(|n| n.cpus.contains(&cpu));
        let cpu_node = (cpu.map_or_else(|| home_node(machine, &memory), node_of))
            .map(|n| n.id)
            .filter(|id| memory.contains(id))
            .ok_or_else(|| {
                invalid_nodes(
                    &cpu.map_or("none".into(), |c| c.to_string()),
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
    let nodes = chosen.to_vec();
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
    if node(nodes[0]).is_none_or(|n| !n.cpus.iter().any(|c| machine.allowed_cpus.contains(c))) {
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

/// Without --cpu: of the nodes with memory and CPUs this process may use, the one nearest
/// (SLIT distance, ties to an HMAT initiator) to the most CPU-less memory nodes, so far
/// memory is read from the socket it hangs off; else the last one.
fn home_node<'m>(machine: &'m Machine, memory: &[usize]) -> Option<&'m NumaNode> {
    let nodes = &machine.numa_nodes;
    let homes: Vec<(usize, &NumaNode)> = (nodes.iter().enumerate())
        .filter(|(_, n)| memory.contains(&n.id))
        .filter(|(_, n)| n.cpus.iter().any(|c| machine.allowed_cpus.contains(c)))
        .collect();
    let mut votes = vec![0; homes.len()];
    for far in nodes
        .iter()
        .filter(|n| n.cpus.is_empty() && memory.contains(&n.id))
    {
        let initiator = |id: usize| {
            [&far.hmat, &far.hmat_cpu]
                .into_iter()
                .flatten()
                .any(|a| a.initiators.contains(&id))
        };
        let key = |&(i, h): &(usize, &NumaNode)| {
            (
                far.distances.get(i).copied().unwrap_or(u32::MAX),
                !initiator(h.id),
            )
        };
        if let Some(i) = (0..homes.len()).min_by_key(|&k| key(&homes[k])) {
            votes[i] += 1;
        }
    }
    let best = (0..homes.len()).max_by_key(|&i| votes[i])?;
    Some(homes[best].1)
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
pub(crate) fn kernel_state(kernel: KernelSupport, system: Option<&SystemWeights>) -> String {
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
    let mut notes: Vec<String> = (config.left_out.iter())
        .map(|why| format!("{why}: left out"))
        .collect();
    progress.start(
        "interleave",
        (config.mixes.len() * (config.ratios.len() + 10)) as u64,
    );
    let mixes = (config.mixes.iter())
        .map(|mix| measure_mix(&bench, mix, progress, &mut notes))
        .collect::<Result<Vec<_>, _>>()?;
    progress.finish();
    notes.extend(
        match config.kernel {
            KernelSupport::Available => None,
            KernelSupport::Missing => Some(
                "this kernel has no weighted interleave (MPOL_WEIGHTED_INTERLEAVE needs Linux \
             6.9+): the ratios were measured with pages placed one by one, but the kernel \
             cannot apply them, so the lines below need a newer kernel",
            ),
            KernelSupport::Unknown => Some(
                "whether this kernel has weighted interleave could not be asked, so the kernel's \
             own policy was not measured",
            ),
        }
        .map(String::from),
    );
    let max_spread_pct = (mixes.iter())
        .flat_map(|m| {
            m.points
                .iter()
                .map(|p| p.spread_pct)
                .chain(m.kernel_check.iter().map(|c| c.spread_pct))
        })
        .fold(0.0, f64::max);
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
        max_spread_pct,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    })
}

/// One mix: its ratios (given, the firmware's, refined), the system's weights emulated,
/// the best against local alone in turns, and the kernel's own policy.
fn measure_mix(
    bench: &Bench,
    mix: &Mix,
    progress: &Progress,
    notes: &mut Vec<String>,
) -> Result<MixResult, UsageError> {
    let config = bench.config;
    let (nodes, far_nodes, label) = (&mix.nodes, mix.nodes.len() - 1, format_cpu_list(&mix.nodes));
    progress.message(&format!("placing pages over nodes {label}"));
    let mut placed = bench.buffers(nodes)?;
    let mut point = |ratio: Ratio, weights: &[u32], origin: PointOrigin| {
        progress.message(&format!("read bandwidth over nodes {label} at {ratio}"));
        let point = bench.point(&mut placed, nodes, (ratio, weights), origin);
        progress.advance();
        point
    };
    let mut points: Vec<RatioPoint> = Vec::new();
    for ratio in weights::candidates(&config.ratios, mix.firmware, far_nodes) {
        let origin = match ratio {
            Ratio::LOCAL => PointOrigin::Baseline,
            r if config.ratios.contains(&r) => PointOrigin::Given,
            _ => PointOrigin::Firmware,
        };
        points.push(point(ratio, &ratio.weights(nodes.len()), origin)?);
    }
    let measured: Vec<(Ratio, f64)> = points.iter().map(|p| (p.ratio, p.read_gb_per_s)).collect();
    for ratio in weights::refinements(&measured, far_nodes)
        .into_iter()
        .filter(|_| config.refine)
    {
        points.push(point(
            ratio,
            &ratio.weights(nodes.len()),
            PointOrigin::Refined,
        )?);
    }
    // The system's weights, emulated for the kernel check: the point of the same ratio,
    // else these weights as they are.
    let system = system_weights(config, nodes);
    let mut emulated = None;
    if let Some(weights) = &system {
        let ratio = Ratio::new(weights[0], weights[1]).unwrap_or(Ratio::LOCAL);
        emulated = match points
            .iter()
            .find(|p| p.ratio == ratio && ratio.weights(nodes.len()) == *weights)
        {
            Some(same) => Some(same.read_gb_per_s),
            None => {
                points.push(point(ratio, weights, PointOrigin::System)?);
                points.last().map(|p| p.read_gb_per_s)
            }
        };
    }
    // The best against local alone again, in turns, so that its gain must hold against
    // the baseline's drift and not only against the first pass's trials.
    let best = (points.iter()).max_by(|a, b| a.read_gb_per_s.total_cmp(&b.read_gb_per_s));
    let mut confirmation = Vec::new();
    for (i, best) in (best.map(|p| p.ratio).filter(|&r| r != Ratio::LOCAL))
        .into_iter()
        .flat_map(|best| [best; 3])
        .enumerate()
    {
        let mut read = |r: Ratio| {
            point(r, &r.weights(nodes.len()), PointOrigin::Baseline).map(|p| p.read_gb_per_s)
        };
        // Local alone first, then the best first, then local again: drift hits both.
        let pair = if i == 1 {
            let best = read(best)?;
            (read(Ratio::LOCAL)?, best)
        } else {
            (read(Ratio::LOCAL)?, read(best)?)
        };
        confirmation.push(pair);
    }
    drop(placed);
    let mut kernel_check = None;
    if let Some(weights) = system {
        progress.message(&format!(
            "the kernel's weighted interleave over nodes {label}"
        ));
        kernel_check = Some(bench.kernel_policy(nodes, weights, emulated)?);
        progress.advance();
    }
    points.sort_by(|a, b| b.local_share.total_cmp(&a.local_share));
    let auto_file = config.system.as_ref().and_then(|s| s.auto_file.as_deref());
    let (recommendation, apply) = recommend(&points, &confirmation, nodes, auto_file);
    notes.extend(mix_notes(&label, &points, kernel_check.as_ref()));
    Ok(MixResult {
        nodes: nodes.clone(),
        kinds: mix.kinds.clone(),
        firmware_ratio: mix.firmware,
        points,
        recommendation,
        confirmation,
        apply,
        kernel_check,
    })
}

/// The system's weighted-interleave weights of `nodes`, where the kernel has the policy.
fn system_weights(config: &InterleaveConfig, nodes: &[usize]) -> Option<Vec<u32>> {
    let system = config.system.as_ref()?;
    (config.kernel == KernelSupport::Available)
        .then(|| nodes.iter().map(|&n| system.weight(n)).collect())
}

/// What to know of a mix: pages not placed or moved back, the kernel's policy off its
/// weights.
fn mix_notes(label: &str, points: &[RatioPoint], check: Option<&KernelCheck>) -> Vec<String> {
    let mut notes = Vec::new();
    for p in points {
        let (placed, verified) = (p.placed * 100.0, p.verified.unwrap_or(1.0) * 100.0);
        if placed < 99.0 {
            notes.push(format!(
                "nodes {label} at {}: only {placed:.0}% of the pages could be moved where the \
                 weights put them",
                p.ratio
            ));
        }
        if verified < 99.0 {
            notes.push(format!(
                "nodes {label} at {}: after the trials only {verified:.0}% of the sampled pages \
                 were still where they were put (NUMA balancing or reclaim moved them)",
                p.ratio
            ));
        }
    }
    if let Some(c) = check.filter(|c| {
        (c.shares.iter().zip(&c.expected_shares)).any(|(got, want)| (got - want).abs() > 0.02)
    }) {
        notes.push(format!(
            "nodes {label}: the kernel's weighted interleave put {} of the pages where the \
             weights imply {}",
            percents(&c.shares),
            percents(&c.expected_shares)
        ));
    }
    notes
}

/// The recommendation from a mix's emulated ratios and the confirmation's pairs, and the
/// lines that would apply it when its gain is beyond the noise.
fn recommend(
    points: &[RatioPoint],
    pairs: &[(f64, f64)],
    nodes: &[usize],
    auto_file: Option<&str>,
) -> (Option<Recommendation>, Vec<String>) {
    let measured: Vec<Measured> = (points.iter())
        .map(|p| Measured {
            ratio: p.ratio,
            median: p.read_gb_per_s,
            spread_pct: p.spread_pct,
        })
        .collect();
    let recommendation = weights::recommend(&measured, pairs);
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
