//! NUMA: a node × node matrix of idle latency and read bandwidth, with the measuring
//! threads on node i and the memory bound to node j (mbind through the system call).
//!
//! Column by column: the buffers of column j are mapped with an MPOL_BIND policy for node
//! j and first touched by a thread on node j (so their page tables are there too), then
//! every row i measures them from its own pinned threads (the chase buffer first; it is
//! unmapped before the reading threads' buffers are mapped):
//! - latency: one thread on node i follows a page-local chase (random lines within 64-page
//!   windows: cache misses without TLB misses, as `latency`'s DRAM level) and then a random
//!   chase over the whole buffer (TLB misses included). The chain continues from cell to
//!   cell, so no cell re-reads lines that another node's caches may still hold.
//! - bandwidth: `threads_per_node` threads on node i, each reading its own buffer on node
//!   j with the registry's `read` kernel, released together; a trial lasts until the
//!   slowest is done (`platform::team`).
//!
//! Each cell's placement is checked afterwards with get_mempolicy on a sample of pages. The
//! remote/local ratios are the mean of the off-diagonal cells over the mean of the
//! diagonal. One node gives the 1×1 matrix and a note that there is nothing remote.

pub mod figures;
#[cfg(test)]
pub(crate) mod samples;
pub mod view;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::experiments::chase_timing::ChaseCursor;
use crate::experiments::shared::sizing::round_to_granule;
use crate::kernels::chase::UNROLL;
use crate::kernels::permutation::{build_chase, ChaseOrder};
use crate::kernels::stream::{self, Isa, KernelSpec};
use crate::platform::affinity;
use crate::platform::arena::{Arena, PagePolicy};
use crate::platform::cpu_time::MIN_OVERLAP;
use crate::platform::numa_policy;
use crate::platform::team::{run_jobs, TeamJob, TrialPolicy};
use crate::platform::timer::Timer;
use crate::session::progress::Progress;
use crate::stats::Summary;
use crate::topology::cpu::format_cpu_list;
use crate::topology::Machine;
use crate::units::{Bytes, MIB};

/// `experiments.numa` of the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NumaResult {
    /// Node ids, in the order of the matrices' rows and columns.
    pub nodes: Vec<usize>,
    /// latency_ns[i][j]: a thread on node i chasing through memory on node j, ns.
    pub latency_ns: Vec<Vec<f64>>,
    /// read_gb_per_s[i][j]: read bandwidth of the threads on node i from node j.
    pub read_gb_per_s: Vec<Vec<f64>>,
    /// read_overlap[i][j]: how much the reading threads of the cell ran together (median
    /// over its trials of their CPU time ÷ (threads × the trial's union interval); with one
    /// thread, the share of the trial it was on its CPU). Below 0.9 the note names the
    /// cell: its bandwidth is what the threads got, not that of threads reading together.
    #[serde(default)]
    pub read_overlap: Vec<Vec<f64>>,
    /// Mean remote latency / mean local latency (None on one node).
    pub remote_local_latency_ratio: Option<f64>,
    /// Mean remote bandwidth / mean local bandwidth (None on one node).
    pub remote_local_bandwidth_ratio: Option<f64>,
    /// The kernel's distance table (node_distance[i][j]) for comparison; 0 where the
    /// kernel gives none.
    pub distances: Vec<Vec<u32>>,
    /// Threads per node in the bandwidth cells.
    pub threads_per_node: usize,
    /// Working set of each latency chase and each bandwidth thread, bytes.
    pub latency_bytes: u64,
    pub bandwidth_bytes: u64,
    /// Fraction of each cell's pages verified on the intended node (get_mempolicy).
    pub placement_verified: Vec<Vec<Option<f64>>>,
    /// What to know when reading the matrix: on a single-node machine, that there is
    /// nothing remote to measure; nodes left out and why; pages that could not be bound or
    /// were found off their node.
    pub note: Option<String>,
    /// random_latency_ns[i][j]: the same cell with a random chase over the whole buffer,
    /// so TLB misses and page walks (whose tables are on node j too) are included, ns.
    pub random_latency_ns: Vec<Vec<f64>>,
    /// Pages per window of the page-local chase behind `latency_ns`.
    pub page_local_window_pages: u64,
    /// CPUs of each row: the latency thread ran on the first, the bandwidth threads on the
    /// first `threads_per_node`.
    pub cpus: Vec<Vec<usize>>,
    /// Instruction set of the read kernel.
    pub isa: Isa,
    /// The widest robust spread (1.4826·MAD/median, %) of any cell's trials, latency or
    /// bandwidth: how far the medians can be trusted.
    pub max_spread_pct: f64,
}

/// Reading threads per node in the bandwidth cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeThreads {
    Count(usize),
    /// Every CPU of the node this process may use.
    All,
}

impl NodeThreads {
    /// "1", "4" or "all".
    pub fn parse(text: &str) -> Result<NodeThreads, UsageError> {
        let trimmed = text.trim();
        if trimmed.eq_ignore_ascii_case("all") {
            return Ok(NodeThreads::All);
        }
        match trimmed.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(NodeThreads::Count(n)),
            _ => Err(UsageError::InvalidValue {
                flag: "--threads",
                value: text.to_string(),
                expected: "a number of threads per node (1 or more) or 'all'".to_string(),
            }),
        }
    }
}

/// What to measure; resolved from the command line by `plan`.
#[derive(Debug, Clone)]
pub struct NumaConfig {
    /// Nodes of the matrix (from `machine.numa_nodes`). Nodes without CPUs this process may
    /// use, or without memory, are left out and the note says so.
    pub nodes: Vec<usize>,
    /// Working set of the latency chase, bytes.
    pub latency_bytes: u64,
    /// Working set of each bandwidth thread, bytes.
    pub bandwidth_bytes: u64,
    pub threads_per_node: NodeThreads,
    pub pages: PagePolicy,
    /// Timed trials per cell, for latency and bandwidth each.
    pub repetitions: usize,
    /// Target length of one trial, nanoseconds (a bandwidth trial is at least one pass).
    pub trial_ns: f64,
    pub seed: u64,
}

/// Bytes between chased slots: one cache line.
const LINE: usize = 64;
/// Pages per window of the page-local chase (as `latency`'s default).
const WINDOW_PAGES: usize = 64;
/// Pages sampled per buffer to verify a cell's placement.
const PLACEMENT_SAMPLES: usize = 32;

impl NumaConfig {
    /// Defaults: every node, one reading thread per node, transparent huge pages when THP
    /// is enabled (as the other experiments; with base pages a VM's nested page walks can
    /// halve a stream's bandwidth), 9 trials of 2 ms.
    pub fn defaults(machine: &Machine) -> NumaConfig {
        let threads = NodeThreads::Count(1);
        let thp = machine.thp.enabled.offers_huge_pages();
        NumaConfig {
            nodes: machine.numa_nodes.iter().map(|n| n.id).collect(),
            latency_bytes: NumaConfig::default_latency_bytes(machine),
            bandwidth_bytes: NumaConfig::default_bandwidth_bytes(machine, threads),
            threads_per_node: threads,
            pages: if thp {
                PagePolicy::Thp
            } else {
                PagePolicy::Base
            },
            repetitions: 9,
            trial_ns: 2e6,
            seed: 0x6e75_6d61, // "numa"
        }
    }

    /// max(4 × the largest cache, 256 MiB): far beyond the caches, as `latency`'s DRAM end.
    fn default_latency_bytes(machine: &Machine) -> u64 {
        let llc = machine.largest_cache_bytes().unwrap_or(32 * MIB);
        (4 * llc).max(256 * MIB)
    }

    /// Per thread: 256 MiB for one thread; with more, their share of max(4 × the largest
    /// cache, 256 MiB) but at least 32 MiB, so many threads still read far beyond the
    /// caches without mapping gigabytes per node.
    fn default_bandwidth_bytes(machine: &Machine, threads: NodeThreads) -> u64 {
        let threads = match threads {
            NodeThreads::Count(n) => n,
            NodeThreads::All => machine
                .numa_nodes
                .iter()
                .map(|n| {
                    n.cpus
                        .iter()
                        .filter(|c| machine.allowed_cpus.contains(c))
                        .count()
                })
                .max()
                .unwrap_or(1),
        }
        .max(1) as u64;
        let total = NumaConfig::default_latency_bytes(machine);
        round_to_granule((total / threads).max(32 * MIB))
    }
}

/// One node of the matrix.
#[derive(Debug, Clone, PartialEq)]
struct MatrixNode {
    id: usize,
    /// Position in `machine.numa_nodes` (and in its distance rows).
    index: usize,
    /// The node's CPUs this process may use, in the order they are used.
    cpus: Vec<usize>,
}

/// The nodes that can be measured, the threads per node, and why others were left out.
#[derive(Debug, Clone, PartialEq)]
struct Matrix {
    nodes: Vec<MatrixNode>,
    threads: usize,
    left_out: Vec<String>,
}

/// Resolves the configured nodes against the machine: each must exist; a node needs CPUs
/// this process may use (for its row) and memory (for its column, among `with_memory` when
/// known: `numa_policy::memory_nodes`), else it is left out.
fn resolve(
    config: &NumaConfig,
    machine: &Machine,
    with_memory: Option<&[usize]>,
) -> Result<Matrix, UsageError> {
    let known: Vec<usize> = machine.numa_nodes.iter().map(|n| n.id).collect();
    let mut nodes = Vec::new();
    let mut left_out = Vec::new();
    for &id in &config.nodes {
        let Some(index) = machine.numa_nodes.iter().position(|n| n.id == id) else {
            return Err(UsageError::InvalidValue {
                flag: "--nodes",
                value: id.to_string(),
                expected: format!("NUMA nodes of this machine: {}", format_cpu_list(&known)),
            });
        };
        if nodes.iter().any(|n: &MatrixNode| n.id == id) {
            continue;
        }
        let node = &machine.numa_nodes[index];
        let allowed: Vec<usize> = node
            .cpus
            .iter()
            .copied()
            .filter(|c| machine.allowed_cpus.contains(c))
            .collect();
        let has_memory =
            node.memory_total_bytes > 0 && with_memory.is_none_or(|usable| usable.contains(&id));
        if allowed.is_empty() {
            left_out.push(format!("node {id} has no CPUs this process may use"));
        } else if !has_memory {
            left_out.push(format!("node {id} has no memory this process may use"));
        } else {
            nodes.push(MatrixNode {
                id,
                index,
                cpus: use_order(&allowed, &machine.smt_sibling_groups),
            });
        }
    }
    if nodes.is_empty() {
        return Err(UsageError::InvalidValue {
            flag: "--nodes",
            value: format_cpu_list(&config.nodes),
            expected: format!(
                "NUMA nodes with both memory and CPUs this process may use ({})",
                left_out.join("; ")
            ),
        });
    }
    let fewest = nodes.iter().map(|n| n.cpus.len()).min().unwrap_or(1);
    let threads = match config.threads_per_node {
        NodeThreads::All => fewest,
        NodeThreads::Count(n) if n <= fewest => n,
        NodeThreads::Count(n) => {
            return Err(UsageError::InvalidValue {
                flag: "--threads",
                value: n.to_string(),
                expected: format!(
                    "at most {fewest}, the fewest CPUs this process may use on one node, or 'all'"
                ),
            })
        }
    };
    Ok(Matrix {
        nodes,
        threads,
        left_out,
    })
}

/// The order a node's CPUs are used in: the highest first (CPU 0 takes most interrupts),
/// one per core before any SMT sibling, so a few threads get a core each.
fn use_order(cpus: &[usize], sibling_groups: &[Vec<usize>]) -> Vec<usize> {
    let mut first = Vec::new();
    let mut siblings = Vec::new();
    for &cpu in cpus.iter().rev() {
        let core_taken = sibling_groups
            .iter()
            .find(|group| group.contains(&cpu))
            .is_some_and(|group| group.iter().any(|c| first.contains(c)));
        if core_taken {
            siblings.push(cpu);
        } else {
            first.push(cpu);
        }
    }
    first.extend(siblings);
    first
}

/// Runs `work` on a scoped thread pinned to `cpu` (unpinned with None) and returns what it
/// returns; a panic in it is resumed here.
fn on_cpu<T: Send>(
    cpu: Option<usize>,
    allowed: &[usize],
    work: impl FnOnce() -> Result<T, UsageError> + Send,
) -> Result<T, UsageError> {
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            if let Some(cpu) = cpu {
                affinity::pin_or_explain(cpu, allowed)?;
            }
            work()
        });
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The read kernel's instruction set: AVX2 when the CPU has it, beyond the caches 256-bit
/// loads are as fast as any, and 512-bit streams reach DRAM 10–20 % slower on Zen 4
/// (docs/DESIGN.md, Bandwidth); else the widest available.
fn read_isa() -> Isa {
    if Isa::Avx2.is_available() {
        Isa::Avx2
    } else {
        Isa::best_available()
    }
}

/// One array per reading thread, mapped, bound to `node` (when given), touched and filled.
/// Call it on a CPU of the node, so the page tables are there too.
fn reader_buffers(
    config: &NumaConfig,
    node: Option<usize>,
    threads: usize,
    array_bytes: usize,
) -> Result<Vec<Arena>, UsageError> {
    (0..threads)
        .map(|worker| {
            let arena = Arena::new_on_node(Bytes(array_bytes as u64), config.pages, node)?;
            // SAFETY: the arena holds at least array_bytes, and nothing else uses it yet.
            let array = unsafe { std::slice::from_raw_parts_mut(arena.as_ptr(), array_bytes) };
            stream::fill_pattern(array, worker as u64 + 1);
            Ok(arena)
        })
        .collect()
}

/// Lays a chase of `slots` lines in `order` over `arena`; returns its start.
fn build(arena: &Arena, slots: usize, order: ChaseOrder, seed: u64) -> usize {
    assert!(slots * LINE <= arena.len());
    // SAFETY: the slots lie inside the arena (asserted), which is page aligned; LINE is a
    // multiple of 8.
    unsafe { build_chase(arena.as_ptr(), slots, LINE, order, seed) as usize }
}

/// Fraction of sampled pages of each buffer on `node`; None when it cannot be asked.
fn fractions_on_node<'a>(
    buffers: impl IntoIterator<Item = &'a Arena>,
    node: usize,
) -> Option<Vec<f64>> {
    buffers
        .into_iter()
        .map(|arena| arena.fraction_on_node(node, PLACEMENT_SAMPLES).ok())
        .collect()
}

/// Follows the chase from `start` for a short warm-up, sizes the trials to `trial_ns` and
/// times `repetitions` of them. Returns ns per load and where the chain stopped (the next
/// cell continues from there, so it reads lines no cell has touched yet).
fn chase_trials(
    start: usize,
    timer: &Timer,
    trial_ns: f64,
    repetitions: usize,
) -> (Vec<f64>, usize) {
    // SAFETY: `start` is inside a complete chain laid by `build` in an arena that outlives
    // this function.
    let mut cursor = unsafe { ChaseCursor::new(start as *const usize) };
    // Warm-up: TLB and page-walk caches for the first windows; a DRAM-sized chain has
    // nothing else to warm, so two trials' worth is enough.
    cursor.run_for(timer, 2.0 * trial_ns);
    let trials = cursor.trials(timer, trial_ns, repetitions);
    (trials, cursor.position() as usize)
}

/// The bandwidth cell's job: worker `w` reads its own buffer `readers[w]` of the column.
/// The team's own (tiny) arenas are not used.
struct ReadJob<'a> {
    kernel: &'static KernelSpec,
    isa: Isa,
    array_bytes: usize,
    readers: &'a [Arena],
}

impl TeamJob for ReadJob<'_> {
    fn prepare(&self, worker: usize, arena: &Arena) {
        // One untimed pass: TLBs and prefetchers in the state the trials will see.
        self.work(worker, arena, 1);
    }

    fn work(&self, worker: usize, _arena: &Arena, repeats: usize) {
        let array = self.readers[worker].as_ptr();
        // SAFETY: the array is page aligned, valid for array_bytes (a multiple of GRANULE)
        // and read only; the ISA was checked available by `read_isa`.
        let sum =
            unsafe { stream::run(self.kernel, self.isa, &[array], self.array_bytes, repeats) };
        std::hint::black_box(sum);
    }
}

/// Mean of the off-diagonal cells over the mean of the diagonal; None below two nodes.
fn remote_local_ratio(matrix: &[Vec<f64>]) -> Option<f64> {
    if matrix.len() < 2 {
        return None;
    }
    let (mut local, mut remote) = (Vec::new(), Vec::new());
    for (i, row) in matrix.iter().enumerate() {
        for (j, &value) in row.iter().enumerate() {
            if i == j {
                local.push(value);
            } else {
                remote.push(value);
            }
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    Some(mean(&remote) / mean(&local))
}

/// Measures the matrix. Errors are the user's to fix: a node that does not exist, more
/// threads than a node has CPUs, memory or huge pages a node cannot give, or a binding the
/// system refuses on a machine with several nodes.
pub fn measure(
    config: &NumaConfig,
    machine: &Machine,
    timer: &Timer,
    progress: &Progress,
) -> Result<NumaResult, UsageError> {
    let matrix = resolve(config, machine, numa_policy::memory_nodes().as_deref())?;
    let n = matrix.nodes.len();
    let threads = matrix.threads;
    let kernel = stream::find("read").expect("the registry has a read kernel");
    let isa = read_isa();
    let array_bytes = round_to_granule(config.bandwidth_bytes) as usize;
    let slots = (config.latency_bytes as usize / LINE).max(UNROLL);
    let window_bytes = WINDOW_PAGES * 4096;
    let allowed = &machine.allowed_cpus;

    let mut latency = vec![vec![f64::NAN; n]; n];
    let mut random = vec![vec![f64::NAN; n]; n];
    let mut bandwidth = vec![vec![f64::NAN; n]; n];
    let mut overlap = vec![vec![1.0; n]; n];
    let mut placement = vec![vec![None; n]; n];
    let mut max_spread = 0f64;
    let mut summarise = |samples: &[f64]| -> f64 {
        let summary = Summary::of(samples).expect("every cell has trials");
        max_spread = max_spread.max(summary.spread_pct());
        summary.median
    };
    // Whether pages are bound; on one node a system that refuses mbind leaves them unbound
    // (they can only be local), and the note says why.
    let mut unbound: Option<String> = None;

    progress.start("NUMA node × node", (n * n) as u64);
    for (j, column_node) in matrix.nodes.iter().enumerate() {
        progress.message(&format!("memory on node {}", column_node.id));
        // Buffers are mapped, bound and touched by a thread on node j, so their page tables
        // are there too; the chase buffer is unmapped before the reading threads' buffers
        // are mapped, so a column never needs both at once.
        let builder = column_node.cpus.first().copied();
        let map_chase = |node: Option<usize>| {
            on_cpu(builder, allowed, || {
                Arena::new_on_node(Bytes(config.latency_bytes), config.pages, node)
            })
        };
        let chase_buffer = match map_chase(unbound.is_none().then_some(column_node.id)) {
            Err(UsageError::Unsupported(reason)) if n == 1 && machine.numa_nodes.len() <= 1 => {
                unbound = Some(reason);
                map_chase(None)?
            }
            result => result?,
        };
        let bind_to = unbound.is_none().then_some(column_node.id);
        let seed = config.seed ^ ((column_node.id as u64) << 32);

        // Latency, page-local then random; each chain continues from cell to cell.
        for (order, cells) in [
            (ChaseOrder::PageLocal { window_bytes }, &mut latency),
            (ChaseOrder::Random, &mut random),
        ] {
            let buffer = &chase_buffer;
            let mut position = on_cpu(builder, allowed, || Ok(build(buffer, slots, order, seed)))?;
            for (i, row_node) in matrix.nodes.iter().enumerate() {
                progress.message(&format!(
                    "latency, {order} chase: node {} → node {}",
                    row_node.id, column_node.id
                ));
                let (trials, next) = on_cpu(Some(row_node.cpus[0]), allowed, || {
                    Ok(chase_trials(
                        position,
                        timer,
                        config.trial_ns,
                        config.repetitions,
                    ))
                })?;
                position = next;
                cells[i][j] = summarise(&trials);
            }
        }

        let chase_placement = bind_to.and_then(|node| fractions_on_node([&chase_buffer], node));
        drop(chase_buffer);

        // Read bandwidth.
        let readers = on_cpu(builder, allowed, || {
            reader_buffers(config, bind_to, threads, array_bytes)
        })?;
        let job = ReadJob {
            kernel,
            isa,
            array_bytes,
            readers: &readers,
        };
        for (i, row_node) in matrix.nodes.iter().enumerate() {
            progress.message(&format!(
                "read bandwidth: node {} → node {}",
                row_node.id, column_node.id
            ));
            let timings = run_jobs(
                &row_node.cpus[..threads],
                Bytes(4096),
                PagePolicy::Base,
                timer,
                TrialPolicy {
                    trial_ns: config.trial_ns,
                    trials: config.repetitions,
                },
                &[&job],
                &|_| {},
            )?;
            let timing = &timings[0];
            let bytes =
                kernel.bytes_per_pass(array_bytes) as f64 * timing.repeats as f64 * threads as f64;
            let rates: Vec<f64> = timing.trials_ns.iter().map(|&ns| bytes / ns).collect();
            bandwidth[i][j] = summarise(&rates);
            overlap[i][j] = timing.concurrency().overlap;
            // The cell's buffers: the chase (checked after its cells) and the readers' now.
            if let (Some(node), Some(chase)) = (bind_to, &chase_placement) {
                placement[i][j] = fractions_on_node(&readers, node).map(|readers| {
                    let all: Vec<f64> = chase.iter().chain(&readers).copied().collect();
                    all.iter().sum::<f64>() / all.len() as f64
                });
            }
            progress.advance();
        }
    }
    progress.finish();

    let distances = matrix
        .nodes
        .iter()
        .map(|row| {
            let distances = &machine.numa_nodes[row.index].distances;
            matrix
                .nodes
                .iter()
                .map(|column| distances.get(column.index).copied().unwrap_or(0))
                .collect()
        })
        .collect();
    let node_ids: Vec<usize> = matrix.nodes.iter().map(|n| n.id).collect();
    let note = note(
        &node_ids,
        &matrix.left_out,
        unbound.as_deref(),
        &placement,
        &overlap,
    );
    Ok(NumaResult {
        nodes: node_ids,
        remote_local_latency_ratio: remote_local_ratio(&latency),
        remote_local_bandwidth_ratio: remote_local_ratio(&bandwidth),
        latency_ns: latency,
        read_gb_per_s: bandwidth,
        read_overlap: overlap,
        distances,
        threads_per_node: threads,
        latency_bytes: (slots * LINE) as u64,
        bandwidth_bytes: array_bytes as u64,
        placement_verified: placement,
        note,
        random_latency_ns: random,
        page_local_window_pages: WINDOW_PAGES as u64,
        cpus: matrix.nodes.iter().map(|n| n.cpus.clone()).collect(),
        isa,
        max_spread_pct: max_spread,
    })
}

/// What the reader of the matrix should know: one node (nothing remote), nodes left out,
/// pages that could not be bound, cells whose pages were not all where they should be,
/// cells whose reading threads did not run together.
fn note(
    nodes: &[usize],
    left_out: &[String],
    unbound: Option<&str>,
    placement: &[Vec<Option<f64>>],
    overlap: &[Vec<f64>],
) -> Option<String> {
    let mut parts = Vec::new();
    if let [node] = nodes {
        parts.push(format!(
            "one NUMA node (node {node}): nothing remote to measure, so the matrix is the \
             local cell alone and there are no remote/local ratios"
        ));
    }
    parts.extend(left_out.iter().map(|why| format!("{why}: left out")));
    if let Some(reason) = unbound {
        parts.push(format!(
            "pages were not bound ({reason}); on one node they are local all the same"
        ));
    }
    for (i, row) in placement.iter().enumerate() {
        for (j, &fraction) in row.iter().enumerate() {
            if let Some(fraction) = fraction.filter(|&f| f < 0.99) {
                parts.push(format!(
                    "cell node {} → node {}: only {:.0}% of the sampled pages were on node {}",
                    nodes[i],
                    nodes[j],
                    fraction * 100.0,
                    nodes[j]
                ));
            }
        }
    }
    for (i, row) in overlap.iter().enumerate() {
        for (j, &overlap) in row.iter().enumerate() {
            if overlap < MIN_OVERLAP {
                parts.push(format!(
                    "cell node {} → node {}: the reading threads did not run together \
                     (overlap {:.0}%, below {:.0}%, in every trial); its bandwidth is what \
                     they got over the whole interval",
                    nodes[i],
                    nodes[j],
                    overlap * 100.0,
                    MIN_OVERLAP * 100.0
                ));
            }
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::NumaNode;

    fn node(id: usize, cpus: Vec<usize>, memory: u64) -> NumaNode {
        NumaNode {
            id,
            cpus,
            memory_total_bytes: memory,
            memory_free_bytes: memory,
            distances: vec![10, 21],
            ..NumaNode::default()
        }
    }

    fn two_sockets() -> Machine {
        Machine {
            numa_nodes: vec![
                node(0, vec![0, 1, 2, 3], 1 << 34),
                node(1, vec![4, 5, 6, 7], 1 << 34),
            ],
            allowed_cpus: (0..8).collect(),
            smt_sibling_groups: vec![vec![0, 2], vec![1, 3], vec![4, 6], vec![5, 7]],
            ..Machine::default()
        }
    }

    /// `resolve` of `nodes` with `threads` per node against `machine`.
    fn resolved(
        machine: &Machine,
        nodes: Vec<usize>,
        threads: NodeThreads,
    ) -> Result<Matrix, String> {
        let config = NumaConfig {
            nodes,
            threads_per_node: threads,
            ..NumaConfig::defaults(machine)
        };
        resolve(&config, machine, None).map_err(|e| e.to_string())
    }

    #[test]
    fn threads_per_node_parse() {
        assert_eq!(NodeThreads::parse("all").unwrap(), NodeThreads::All);
        assert_eq!(NodeThreads::parse(" 3 ").unwrap(), NodeThreads::Count(3));
        let error = NodeThreads::parse("0").unwrap_err().to_string();
        assert!(error.contains("'0'") && error.contains("'all'"), "{error}");
        assert!(NodeThreads::parse("many").is_err());
    }

    #[test]
    fn cpus_are_used_highest_first_one_per_core_before_siblings() {
        let machine = two_sockets();
        assert_eq!(
            use_order(&[0, 1, 2, 3], &machine.smt_sibling_groups),
            vec![3, 2, 1, 0]
        );
        // Cores {0,2} and {1,3}: 3 then 2 take both cores; 1 and 0 are siblings.
        let groups = vec![vec![0, 1], vec![2, 3]];
        assert_eq!(use_order(&[0, 1, 2, 3], &groups), vec![3, 1, 2, 0]);
        assert_eq!(use_order(&[5], &[]), vec![5]);
    }

    #[test]
    fn nodes_resolve_against_the_machine() {
        let machine = two_sockets();
        // A process restricted to CPUs 0-5 has two CPUs on node 1: 'all' means two there.
        let restricted = Machine {
            allowed_cpus: (0..6).collect(),
            ..two_sockets()
        };
        let matrix = resolved(&restricted, vec![0, 1], NodeThreads::All).unwrap();
        assert_eq!(matrix.threads, 2);
        assert_eq!(matrix.nodes[1].cpus, vec![5, 4]);
        assert!(matrix.left_out.is_empty());

        let error = resolved(&machine, vec![0, 2], NodeThreads::Count(1)).unwrap_err();
        assert!(error.contains("'2'") && error.contains("0-1"), "{error}");
        let error = resolved(&machine, vec![0, 1], NodeThreads::Count(5)).unwrap_err();
        assert!(error.contains("at most 4"), "{error}");
    }

    #[test]
    fn nodes_without_cpus_or_memory_are_left_out_with_a_reason() {
        let mut machine = two_sockets();
        machine.numa_nodes.push(node(2, vec![], 1 << 34)); // CXL memory, no CPUs
        let matrix = resolved(&machine, vec![0, 1, 2], NodeThreads::Count(1)).unwrap();
        assert_eq!(matrix.nodes.len(), 2);
        assert_eq!(matrix.left_out, ["node 2 has no CPUs this process may use"]);
        let error = resolved(&machine, vec![2], NodeThreads::Count(1)).unwrap_err();
        assert!(error.contains("no CPUs"), "{error}");
    }

    #[test]
    fn ratios_compare_off_diagonal_with_diagonal_cells() {
        assert_eq!(remote_local_ratio(&[vec![90.0]]), None);
        let latency = vec![vec![100.0, 150.0], vec![170.0, 100.0]];
        assert_eq!(remote_local_ratio(&latency), Some(1.6));
    }

    #[test]
    fn notes_say_nothing_is_remote_and_name_misplaced_or_not_together_cells() {
        let whole = vec![vec![1.0; 2]; 2];
        let text = note(&[0], &[], None, &[vec![Some(1.0)]], &[vec![1.0]]).unwrap();
        assert!(text.contains("nothing remote to measure"), "{text}");
        assert_eq!(
            note(&[0, 1], &[], None, &vec![vec![Some(1.0); 2]; 2], &whole),
            None
        );
        let half = vec![vec![Some(1.0), Some(0.5)]; 2];
        let text = note(&[0, 1], &[], None, &half, &whole).unwrap();
        assert!(text.contains("node 0 → node 1: only 50%"), "{text}");
        // A cell whose readers did not run together is named.
        let overlap = vec![vec![0.95, 1.0], vec![1.0, 0.52]];
        let text = note(&[0, 1], &[], None, &vec![vec![Some(1.0); 2]; 2], &overlap).unwrap();
        let cell = "cell node 1 → node 1: the reading threads did not run together (overlap 52%";
        assert!(text.contains(cell), "{text}");
        assert!(!text.contains("node 0 → node 0"), "{text}");
    }

    #[test]
    fn this_machine_gives_a_full_matrix_with_pages_where_they_belong() {
        let mut machine = crate::topology::detect().expect("machine");
        machine.allowed_cpus = affinity::allowed_cpus().expect("affinity");
        let timer = Timer::calibrate().0;
        let config = NumaConfig {
            latency_bytes: 8 * MIB,
            bandwidth_bytes: 4 * MIB,
            repetitions: 3,
            trial_ns: 2e5,
            ..NumaConfig::defaults(&machine)
        };
        let result = measure(&config, &machine, &timer, &Progress::hidden()).unwrap();
        let n = result.nodes.len();
        assert!(n >= 1);
        for matrix in [
            &result.latency_ns,
            &result.random_latency_ns,
            &result.read_gb_per_s,
        ] {
            assert_eq!(matrix.len(), n);
            assert!(matrix.iter().flatten().all(|v| v.is_finite() && *v > 0.0));
        }
        assert_eq!(result.distances.len(), n);
        assert_eq!(result.threads_per_node, 1);
        for fraction in result.placement_verified.iter().flatten().flatten() {
            assert_eq!(*fraction, 1.0);
        }
        if n == 1 {
            assert!(result.note.unwrap().contains("nothing remote"));
            assert_eq!(result.remote_local_latency_ratio, None);
            assert_eq!(result.remote_local_bandwidth_ratio, None);
        }
        let json = serde_json::to_string(&result.latency_ns).unwrap();
        assert!(json.starts_with("[["), "{json}");
    }
}

pub mod params;
mod run;
