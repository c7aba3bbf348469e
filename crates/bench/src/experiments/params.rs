//! What every experiment's parameters share: the measuring flags (`MeasureArgs`, clap) and
//! their resolution against the machine (`MeasurePlan`), and the parse helpers each room's
//! `params.rs` uses to turn its own flags into its validated configuration, among them
//! the order threads take CPUs in and the default thread counts of a machine of many
//! cores and nodes (`thread_cpus`, `thread_ladder`), and the DRAM working set of one of
//! many threads (`dram_bytes`). Below the rooms: nothing here imports the command line,
//! the plan or the commands.

use std::time::Duration;

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::experiments::shared::sizing::{
    dram_working_set, level_working_sets, round_to_granule, thread_share,
};
pub use crate::flags::{invalid, parse_count, SaveArgs};
use crate::flags::{CsvArg, JsonArg};
use crate::platform::arena::PagePolicy;
use crate::topology::cpu::format_cpu_list;
use crate::topology::memory::MemoryBound;
use crate::topology::Machine;
use crate::units::{Bytes, KIB, MIB};

/// The flags of an experiment's own subcommand, as the registry's generated
/// `ExperimentCommand` reads them.
pub(crate) trait CommandArgs {
    /// The measuring flags every experiment's subcommand flattens in.
    fn measure(&self) -> &MeasureArgs;

    /// Whether the terminal lists every point (`--points`).
    fn points(&self) -> bool {
        false
    }

    /// Refuses the command before any flag is checked when this machine cannot run it.
    fn available(&self) -> Result<(), UsageError> {
        Ok(())
    }
}

/// Flags shared by every measuring command.
#[derive(Debug, Clone, Default, Args)]
#[command(mut_arg("csv", |a| a.help("Write the result rows as CSV to FILE ('-' for stdout)")))]
pub struct MeasureArgs {
    /// CPU to pin the measuring thread to [default: the last CPU this process may use].
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<String>,

    /// Page policy of the buffers: 4k, thp, 2m or 1g (hugetlbfs) [default: thp when THP is
    /// enabled, else 4k].
    #[arg(long, value_name = "POLICY", value_enum, ignore_case = true)]
    pub pages: Option<PagePolicy>,

    #[command(flatten)]
    pub json: JsonArg,

    #[command(flatten)]
    pub csv: CsvArg,

    /// Fewer trials and shorter ones: a rough answer in a few seconds.
    #[arg(long)]
    pub quick: bool,

    /// Timed trials per point; the median is reported [default: 9, or 5 with --quick].
    #[arg(long, value_name = "N", value_parser = crate::flags::count(1, 1000))]
    pub repetitions: Option<usize>,

    /// Largest working set, e.g. 512M or 1GiB [default: max(256 MiB, 8 × the largest
    /// cache); with --quick max(64 MiB, 4 × the largest cache)].
    #[arg(long, value_name = "SIZE")]
    pub max_size: Option<String>,

    /// With --pages 2m or 1g (or tlb --huge 2m): when the hugetlbfs pool has too few free
    /// pages, reserve what the run needs (root) and restore the pool when memscope exits,
    /// also on error and on Ctrl-C.
    #[arg(long)]
    pub reserve_hugepages: bool,

    /// Repeat the headline figures at the end of the run until two passes in a row agree
    /// within PCT percent (2 when no value is given) or --stable-budget runs out; the report
    /// says which happened. Without it, one drift pass runs.
    #[arg(long, value_name = "PCT", num_args = 0..=1, default_missing_value = "2", value_parser = crate::flags::percent)]
    pub until_stable: Option<f64>,

    /// The time --until-stable's passes may take.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::flags::duration)]
    pub stable_budget: Duration,

    #[command(flatten)]
    pub save: SaveArgs,
}

/// Settings shared by measuring commands.
#[derive(Debug, Clone)]
pub struct MeasurePlan {
    pub cpu: usize,
    pub pages: PagePolicy,
    pub quick: bool,
    pub repetitions: usize,
    /// Target length of one timed trial.
    pub trial_ns: f64,
    pub max_size: Bytes,
    /// Whether --max-size was given (else each experiment picks its own default).
    pub max_size_given: bool,
    /// Grow the hugetlbfs pool for this run when it is too small (and restore it after).
    pub reserve_hugepages: bool,
    /// Repeat the drift pass until stable (`--until-stable`).
    pub until_stable: Option<crate::experiments::drift::StableTarget>,
}

/// The `--cpu` of a measuring command: one CPU this process may run on. A list or a
/// range (`0-1`, `0,2`) is refused as such, not as a CPU that does not exist.
fn parse_cpu(text: &str, allowed: &[usize]) -> Result<usize, UsageError> {
    let trimmed = text.trim();
    let is_list = trimmed.contains(',') || trimmed.get(1..).is_some_and(|t| t.contains('-'));
    if is_list {
        return Err(invalid(
            "--cpu",
            text,
            &format!(
                "one CPU number ({}), not a list: the measurement runs on one CPU",
                one_of(allowed)
            ),
        ));
    }
    trimmed
        .parse::<usize>()
        .ok()
        .filter(|c| allowed.contains(c))
        .ok_or_else(|| UsageError::NoSuchCpu {
            cpu: text.to_string(),
            available: format_cpu_list(allowed),
        })
}

/// "0 or 1", "one of 0-7" for the CPUs allowed.
fn one_of(allowed: &[usize]) -> String {
    match allowed {
        [only] => only.to_string(),
        [a, b] => format!("{a} or {b}"),
        _ => format!("one of {}", format_cpu_list(allowed)),
    }
}

impl MeasurePlan {
    /// The DRAM working set of the chases (MLP, ROB, TLB): --max-size when given, else
    /// the bandwidth table's DRAM size.
    pub(crate) fn dram_working_set(&self, machine: &Machine) -> u64 {
        dram_working_set(self.max_size_given.then_some(self.max_size.0), machine)
    }

    /// The measuring flags checked and resolved against the machine: the CPU, the page
    /// policy, the trials and the largest working set.
    pub fn resolve(args: &MeasureArgs, machine: &Machine) -> Result<MeasurePlan, UsageError> {
        let allowed = &machine.allowed_cpus;
        let cpu = match &args.cpu {
            None => crate::platform::affinity::default_cpu(allowed).unwrap_or(0),
            Some(text) => parse_cpu(text, allowed)?,
        };
        let pages = match args.pages {
            Some(policy) => policy,
            None if machine.thp.enabled.offers_huge_pages() => PagePolicy::Thp,
            None => PagePolicy::Base,
        };
        let repetitions = match args.repetitions {
            Some(n) => n,
            None if args.quick => 5,
            None => 9,
        };
        let llc = machine.largest_cache_bytes().unwrap_or(32 * MIB);
        let max_size = match &args.max_size {
            Some(text) => parse_size("--max-size", text, 4 * KIB, machine)?,
            None if args.quick => Bytes((64 * MIB).max(4 * llc)),
            None => Bytes((256 * MIB).max(8 * llc)),
        };
        check_fits_memory("--max-size", max_size, machine)?;
        Ok(MeasurePlan {
            cpu,
            pages,
            quick: args.quick,
            repetitions,
            trial_ns: if args.quick { 1e6 } else { 2e6 },
            max_size,
            max_size_given: args.max_size.is_some(),
            reserve_hugepages: args.reserve_hugepages,
            until_stable: (args.until_stable).map(|within_pct| {
                crate::experiments::drift::StableTarget {
                    within_pct,
                    budget: args.stable_budget,
                }
            }),
        })
    }
}

/// Largest working set of the sweeps that do not default to the latency ladder's size:
/// four times the largest cache, at least 64 MiB.
pub(crate) fn sweep_max(measure: &MeasurePlan, machine: &Machine) -> u64 {
    if measure.max_size_given {
        measure.max_size.0
    } else {
        (64 * MIB).max(4 * machine.largest_cache_bytes().unwrap_or(32 * MIB))
    }
}

/// Thread counts from "1,2", "all" or "auto"; each from 1 to the CPUs this process may
/// use. "auto" is 1 and all of them (see `thread_ladder` for the counts a machine of
/// several NUMA nodes gets).
pub fn parse_thread_counts(text: &str, available: usize) -> Result<Vec<usize>, UsageError> {
    parse_thread_counts_or(text, available, &[1, available])
}

/// As `parse_thread_counts`, with "auto" meaning the counts `auto` (each at most
/// `available`), e.g. the machine's `thread_ladder`.
pub(crate) fn parse_thread_counts_or(
    text: &str,
    available: usize,
    auto: &[usize],
) -> Result<Vec<usize>, UsageError> {
    let expected = format!(
        "thread counts from 1 to {available}, 'all' or 'auto', comma-separated (e.g. 1,{available})"
    );
    if text.trim() == "auto" {
        let mut counts: Vec<usize> = auto.iter().map(|&n| n.clamp(1, available.max(1))).collect();
        counts.sort_unstable();
        counts.dedup();
        return Ok(counts);
    }
    let mut counts = parse_list(text, |part| match part {
        "all" => Ok(available),
        _ => part
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=available).contains(n))
            .ok_or_else(|| invalid("--threads", part, &expected)),
    })?;
    counts.sort_unstable();
    Ok(counts)
}

/// The values of a comma-separated list, each read by `parse`, without repeats, in order.
pub(crate) fn parse_list<T: PartialEq>(
    text: &str,
    parse: impl Fn(&str) -> Result<T, UsageError>,
) -> Result<Vec<T>, UsageError> {
    let mut values = Vec::new();
    for part in text.split(',').map(str::trim) {
        let value = parse(part)?;
        if !values.contains(&value) {
            values.push(value);
        }
    }
    Ok(values)
}

/// A working set of at least `minimum` bytes that fits in the memory available now.
pub fn parse_size(
    flag: &'static str,
    text: &str,
    minimum: u64,
    machine: &Machine,
) -> Result<Bytes, UsageError> {
    let bytes = Bytes::parse(text)?;
    if bytes.0 < minimum {
        return Err(UsageError::SizeTooSmall {
            flag,
            requested: bytes,
            minimum: Bytes(minimum),
        });
    }
    check_fits_memory(flag, bytes, machine)?;
    Ok(bytes)
}

/// CPUs in the order threads take them: the measuring CPU first, then one CPU of every
/// other core, node by node (the measuring CPU's node first, then the others nearest first
/// by SLIT distance, then by id), so that N threads fill whole nodes in turn and no two
/// share a core while a core is free anywhere; then the SMT siblings, node by node. CPUs
/// the topology places on no node come after the nodes' own. Linear in the CPUs.
pub fn thread_cpus(machine: &Machine, first: usize) -> Vec<usize> {
    ThreadOrder::of(machine, first).cpus
}

/// The most thread counts `thread_ladder` gives: each count is a table of every kernel at
/// every level, so the table's time grows with the counts, not with the CPUs.
pub(crate) const MAX_LADDER_COUNTS: usize = 8;

/// The default thread counts ("auto"). On one NUMA node (or without NUMA information):
/// 1 and every CPU, as ever. On several nodes with CPUs, a short ladder in whole nodes:
/// 1, one node's cores, 2, 4, 8, … nodes' cores, every core, every CPU (with SMT
/// siblings), at most `MAX_LADDER_COUNTS` of them (the middle rungs thinned evenly), so
/// a 384-CPU machine of 16 nodes runs 7 counts, not 384. Counts are prefixes of
/// `thread_cpus(machine, first)`: "2 nodes' cores" is exactly the cores of the first two
/// nodes in that order.
pub(crate) fn thread_ladder(machine: &Machine, first: usize) -> ThreadLadder {
    let order = ThreadOrder::of(machine, first);
    let all = order.cpus.len();
    let cores: Vec<usize> = order
        .cores_per_node
        .iter()
        .copied()
        .filter(|&c| c > 0)
        .collect();
    if cores.len() < 2 {
        let mut counts = vec![1, all.max(1)];
        counts.dedup();
        return ThreadLadder { counts, nodes: 1 };
    }
    let cumulative: Vec<usize> = cores
        .iter()
        .scan(0, |sum, &c| {
            *sum += c;
            Some(*sum)
        })
        .collect();
    let mut counts = vec![1];
    let mut nodes = 1;
    while nodes < cores.len() {
        counts.push(cumulative[nodes - 1]);
        nodes *= 2;
    }
    counts.push(cumulative[cores.len() - 1]);
    counts.push(all);
    counts.sort_unstable();
    counts.dedup();
    ThreadLadder {
        counts: thin(counts, MAX_LADDER_COUNTS),
        nodes: cores.len(),
    }
}

/// The default thread counts of a machine (`thread_ladder`), as a result records them when
/// they ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadLadder {
    pub counts: Vec<usize>,
    /// NUMA nodes with CPUs this process may use; the counts step in whole nodes when
    /// there are two or more.
    pub nodes: usize,
}

impl ThreadLadder {
    /// Whether the counts step in whole nodes (several nodes), not just 1 and all.
    pub(crate) fn per_node(&self) -> bool {
        self.nodes >= 2
    }

    /// "thread counts 1, 16, 32, 64, 128, 256 ran (the default on 8 NUMA nodes: one
    /// thread, then whole nodes' cores in turn, every core, every CPU)".
    pub fn describe(&self) -> String {
        let counts: Vec<String> = self.counts.iter().map(usize::to_string).collect();
        format!(
            "thread counts {} ran (the default on {} NUMA nodes: one thread, then whole \
             nodes' cores in turn, every core, every CPU; --threads picks others)",
            counts.join(", "),
            self.nodes
        )
    }
}

/// At most `max` (≥ 3) of the ascending `counts`: the first, the last two (every core,
/// every CPU) and evenly spaced ones between.
fn thin(counts: Vec<usize>, max: usize) -> Vec<usize> {
    if counts.len() <= max {
        return counts;
    }
    let n = counts.len();
    let middle = &counts[1..n - 2];
    let keep = max - 3;
    let mut out = vec![counts[0]];
    out.extend((0..keep).map(|k| middle[(k * (middle.len() - 1)) / (keep - 1).max(1)]));
    out.extend_from_slice(&counts[n - 2..]);
    out.dedup();
    out
}

/// The order threads take CPUs in (`thread_cpus`) and how many cores of each node it
/// takes before the first SMT sibling (nodes in that order; CPUs of no node not counted).
struct ThreadOrder {
    cpus: Vec<usize>,
    cores_per_node: Vec<usize>,
}

impl ThreadOrder {
    fn of(machine: &Machine, first: usize) -> ThreadOrder {
        use std::collections::{HashMap, HashSet};
        let allowed: HashSet<usize> = machine.allowed_cpus.iter().copied().collect();
        // The nodes with CPUs this process may use: the first CPU's node, then the others
        // nearest to it first.
        let home = machine
            .numa_nodes
            .iter()
            .position(|n| n.cpus.contains(&first));
        let distance = |index: usize| -> u32 {
            home.and_then(|h| machine.numa_nodes[h].distances.get(index).copied())
                .unwrap_or(u32::MAX)
        };
        let mut nodes: Vec<usize> = (0..machine.numa_nodes.len()).collect();
        nodes.sort_by_key(|&i| (Some(i) != home, distance(i), machine.numa_nodes[i].id));
        let mut placed: HashSet<usize> = HashSet::new();
        // (whether the group is a node, its CPUs in order); the measuring CPU leads.
        let mut groups: Vec<(bool, Vec<usize>)> = Vec::new();
        if home.is_none() {
            groups.push((false, vec![first]));
        }
        for i in nodes {
            let mut cpus: Vec<usize> = (machine.numa_nodes[i].cpus.iter().copied())
                .filter(|c| allowed.contains(c) && *c != first && placed.insert(*c))
                .collect();
            cpus.sort_unstable();
            if Some(i) == home {
                cpus.insert(0, first);
            }
            if !cpus.is_empty() {
                groups.push((true, cpus));
            }
        }
        let rest: Vec<usize> = (machine.allowed_cpus.iter().copied())
            .filter(|&c| c != first && !placed.contains(&c))
            .collect();
        groups.push((false, rest));

        let core_of: HashMap<usize, usize> = (machine.smt_sibling_groups.iter().enumerate())
            .flat_map(|(core, group)| group.iter().map(move |&cpu| (cpu, core)))
            .collect();
        let mut taken_cores = HashSet::new();
        let mut chosen = HashSet::new();
        let mut cpus = Vec::with_capacity(machine.allowed_cpus.len() + 1);
        let mut cores_per_node = Vec::with_capacity(groups.len());
        for (is_node, group) in &groups {
            let before = cpus.len();
            for &cpu in group {
                let free = core_of
                    .get(&cpu)
                    .is_none_or(|&core| taken_cores.insert(core));
                if free && chosen.insert(cpu) {
                    cpus.push(cpu);
                }
            }
            if *is_node {
                cores_per_node.push(cpus.len() - before);
            }
        }
        for (_, group) in &groups {
            cpus.extend(group.iter().copied().filter(|&cpu| chosen.insert(cpu)));
        }
        ThreadOrder {
            cpus,
            cores_per_node,
        }
    }
}

/// Threads up to which each keeps the one-thread DRAM working set; beyond, the DRAM
/// working sets of all threads together stay at this many one-thread sets (2 GiB with a
/// largest cache up to 32 MiB), down to `dram_floor` per thread. Without it, 384 threads
/// each streaming four times the largest cache mapped 48 GiB or more, and one pass over
/// it took longer than a whole trial.
pub(crate) const DRAM_SETS: u64 = 16;

/// The smallest DRAM working set of one of `threads` threads: four times its share of the
/// largest cache (so the cache cannot serve it), at least 8 MiB, at most the one-thread set.
pub(crate) fn dram_floor(machine: &Machine, threads: usize) -> u64 {
    let single = dram_single(machine);
    let share =
        (machine.data_caches().last()).map_or(32 * MIB, |cache| thread_share(cache, threads));
    round_to_granule((4 * share).max(8 * MIB)).min(single)
}

/// The DRAM working set of one thread alone (`level_working_sets`).
fn dram_single(machine: &Machine) -> u64 {
    level_working_sets(machine, 1)
        .last()
        .map_or(128 * MIB, |(_, bytes)| *bytes)
}

/// The DRAM working set of one of `threads` threads: the one-thread set up to `DRAM_SETS`
/// threads, then shrinking so that all together stay at `DRAM_SETS` sets, never below
/// `dram_floor`; and when all threads' sets would not fit the memory available now, the
/// share that does (never below the floor, which `resolve` checked fits).
pub(crate) fn dram_bytes(machine: &Machine, threads: usize) -> u64 {
    let threads = threads.max(1) as u64;
    let single = dram_single(machine);
    let floor = dram_floor(machine, threads as usize);
    let mut bytes = (single * DRAM_SETS / threads).clamp(floor, single);
    let available = machine.available_memory().bytes;
    if available > 0 {
        let fits = (available / 10 * 9 / threads).saturating_sub(64 * KIB);
        bytes = bytes.min(fits).max(floor);
    }
    round_to_granule(bytes)
}

/// A working set that must fit in the memory available now (MemAvailable, or the
/// cgroup's headroom when that is smaller), leaving a tenth of it for everything else.
pub(crate) fn check_fits_memory(
    flag: &'static str,
    bytes: Bytes,
    machine: &Machine,
) -> Result<(), UsageError> {
    let available = machine.available_memory();
    let unknown = available.bytes == 0 && available.bound == MemoryBound::MemAvailable;
    let allowed = Bytes(available.bytes / 10 * 9);
    if !unknown && bytes > allowed {
        return Err(UsageError::SizeExceedsMemory {
            flag,
            requested: bytes,
            allowed,
            available,
        });
    }
    Ok(())
}

/// A command's flags at their defaults, for `run`, which runs the experiments without
/// exposing their flags: the defaults live once, in the clap definitions.
pub fn defaults<A: clap::Args + clap::FromArgMatches>() -> A {
    let command = A::augment_args(clap::Command::new("memscope"));
    A::from_arg_matches(&command.get_matches_from(["memscope"]))
        .expect("the clap definitions give every flag a default")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::topology::cgroup::{CgroupMemoryLimit, LimitSource};
    use crate::topology::{CacheInfo, CacheKind, NumaNode};
    use crate::units::GIB;

    /// A server numbered as Linux numbers them: `nodes` nodes of `cores` cores each, two
    /// SMT threads per core (CPU c and c + all cores), two sockets of `nodes / 2` nodes
    /// (SLIT 10 local, 12 same socket, 32 across), an L3 of 32 MiB per 8 cores, 64 GiB
    /// per node.
    pub(crate) fn server(nodes: usize, cores: usize) -> Machine {
        let total = nodes * cores;
        let socket = |n: usize| n / (nodes / 2).max(1);
        let numa_nodes = (0..nodes)
            .map(|n| NumaNode {
                id: n,
                cpus: (n * cores..(n + 1) * cores)
                    .flat_map(|c| [c, c + total])
                    .collect(),
                memory_total_bytes: 64 * GIB,
                distances: (0..nodes)
                    .map(|m| match (m == n, socket(m) == socket(n)) {
                        (true, _) => 10,
                        (false, true) => 12,
                        (false, false) => 32,
                    })
                    .collect(),
                ..NumaNode::default()
            })
            .collect();
        let l3_cpus: Vec<usize> = (0..8).flat_map(|c| [c, c + total]).collect();
        Machine {
            logical_cpus: 2 * total,
            physical_cores: total,
            threads_per_core: 2,
            smt_sibling_groups: (0..total).map(|c| vec![c, c + total]).collect(),
            allowed_cpus: (0..2 * total).collect(),
            caches: vec![
                CacheInfo::sample(1, CacheKind::Data, 48 * KIB, vec![0, total]),
                CacheInfo::sample(2, CacheKind::Unified, 2 * MIB, vec![0, total]),
                CacheInfo::sample(3, CacheKind::Unified, 32 * MIB, l3_cpus),
            ],
            numa_nodes,
            memory_total_bytes: nodes as u64 * 64 * GIB,
            memory_available_bytes: nodes as u64 * 60 * GIB,
            ..Machine::default()
        }
    }

    fn node_of(machine: &Machine, cpu: usize) -> usize {
        (machine.numa_nodes.iter())
            .find(|n| n.cpus.contains(&cpu))
            .map(|n| n.id)
            .unwrap()
    }

    #[test]
    fn the_default_counts_of_big_servers_are_a_short_ladder_of_whole_nodes() {
        for (nodes, cores, want) in [
            (8, 16, vec![1, 16, 32, 64, 128, 256]),
            (16, 12, vec![1, 12, 24, 48, 96, 192, 384]),
        ] {
            let machine = server(nodes, cores);
            let last = *machine.allowed_cpus.last().unwrap();
            let ladder = thread_ladder(&machine, last);
            assert_eq!(ladder.counts, want, "{nodes} nodes");
            assert_eq!(ladder.nodes, nodes);
            assert!(ladder.counts.len() <= MAX_LADDER_COUNTS);
            assert!(ladder
                .describe()
                .contains(&format!("on {nodes} NUMA nodes")));
            assert_eq!(
                parse_thread_counts_or("auto", 2 * nodes * cores, &ladder.counts).unwrap(),
                want
            );
        }
        // 64 nodes would make 9 rungs: thinned to 8, keeping 1, every core and every CPU.
        let ladder = thread_ladder(&server(64, 4), 0);
        assert_eq!(
            ladder.counts.len(),
            MAX_LADDER_COUNTS,
            "{:?}",
            ladder.counts
        );
        assert_eq!(ladder.counts[0], 1);
        assert_eq!(ladder.counts[MAX_LADDER_COUNTS - 2..], [256, 512]);
        assert!(
            ladder.counts.windows(2).all(|w| w[0] < w[1]),
            "{:?}",
            ladder.counts
        );
        // One node, or no NUMA information: 1 and all, as before.
        let one = server(1, 4);
        assert_eq!(thread_ladder(&one, 7).counts, [1, 8]);
        assert!(!thread_ladder(&one, 7).per_node());
        let bare = Machine {
            allowed_cpus: vec![0, 1],
            ..Machine::default()
        };
        assert_eq!(thread_ladder(&bare, 1).counts, [1, 2]);
        assert_eq!(parse_thread_counts("auto", 2).unwrap(), [1, 2]);
    }

    #[test]
    fn threads_fill_whole_nodes_in_turn_and_take_no_sibling_before_a_free_core() {
        for (nodes, cores) in [(8, 16), (16, 12)] {
            let machine = server(nodes, cores);
            let total = nodes * cores;
            let first = 2 * total - 1; // the default CPU: the last, an SMT sibling
            let order = thread_cpus(&machine, first);
            // Every allowed CPU once, the measuring one first.
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, machine.allowed_cpus);
            assert_eq!(order[0], first);
            // The first `total` threads are one per core.
            let core = |c: usize| c % total;
            let mut cores_seen: Vec<usize> = order[..total].iter().map(|&c| core(c)).collect();
            cores_seen.sort_unstable();
            cores_seen.dedup();
            assert_eq!(
                cores_seen.len(),
                total,
                "{nodes} nodes: a sibling before a free core"
            );
            // Each ladder count up to every core uses whole nodes: k nodes' cores are on k
            // nodes, `cores` threads on each; the first is the measuring CPU's node, the
            // second one of its socket.
            let home = node_of(&machine, first);
            for k in [1, 2, 4, nodes] {
                let mut per_node = vec![0; nodes];
                for &cpu in &order[..k * cores] {
                    per_node[node_of(&machine, cpu)] += 1;
                }
                let used: Vec<usize> = per_node.iter().copied().filter(|&n| n > 0).collect();
                assert_eq!(
                    used,
                    vec![cores; k],
                    "{nodes} nodes, {k} node(s): {per_node:?}"
                );
                assert_eq!(per_node[home], cores);
            }
            let second = node_of(&machine, order[cores]);
            assert_eq!(machine.numa_nodes[home].distances[second], 12);
            // The siblings follow in the same node order.
            assert_eq!(node_of(&machine, order[total]), home);
        }
        // Without NUMA nodes: the old order (first, other cores, siblings).
        let bare = Machine {
            allowed_cpus: (0..4).collect(),
            smt_sibling_groups: vec![vec![0, 2], vec![1, 3]],
            ..Machine::default()
        };
        assert_eq!(thread_cpus(&bare, 3), [3, 0, 1, 2]);
        assert_eq!(thread_cpus(&bare, 9), [9, 0, 1, 2, 3]);
    }

    #[test]
    fn many_threads_share_a_bounded_dram_working_set() {
        let machine = server(16, 12);
        // One thread, and up to DRAM_SETS: the one-thread set (4 × 32 MiB).
        assert_eq!(dram_bytes(&machine, 1), 128 * MIB);
        assert_eq!(dram_bytes(&machine, DRAM_SETS as usize), 128 * MIB);
        for threads in [32, 96, 192, 384] {
            let each = dram_bytes(&machine, threads);
            // Beyond its share of the L3 (32 MiB over at most 16 CPUs) four times over.
            assert!(each >= 8 * MIB, "{threads}: {each}");
            // All together: at most DRAM_SETS one-thread sets, or the floor per thread.
            let total = each * threads as u64;
            assert!(
                total <= (DRAM_SETS * 128 * MIB).max(threads as u64 * 8 * MIB),
                "{threads}: {total}"
            );
            assert!(total <= 4 * GIB, "{threads}: {total}");
        }
        // Little memory: the sets shrink to fit, not below the floor.
        let tight = Machine {
            memory_available_bytes: 2 * GIB,
            ..machine
        };
        let each = dram_bytes(&tight, 96);
        assert!(
            each * 96 <= 2 * GIB / 10 * 9 && each >= dram_floor(&tight, 96),
            "{each}"
        );
    }

    #[test]
    fn a_cpu_list_is_refused_as_a_list() {
        let e = parse_cpu("0-1", &[0, 1]).unwrap_err().to_string();
        assert!(
            e.contains("'0-1'") && e.contains("one CPU number (0 or 1), not a list"),
            "{e}"
        );
        let e = parse_cpu("0,2", &[0, 1, 2, 3]).unwrap_err().to_string();
        assert!(e.contains("one of 0-3") && e.contains("not a list"), "{e}");
        let e = parse_cpu("7", &[0, 1]).unwrap_err().to_string();
        assert!(e.contains("CPU 7 does not exist"), "{e}");
        let e = parse_cpu("-1", &[0, 1]).unwrap_err().to_string();
        assert!(e.contains("CPU -1 does not exist"), "{e}");
        assert_eq!(parse_cpu(" 1 ", &[0, 1]).unwrap(), 1);
    }

    #[test]
    fn the_memory_guard_names_the_limit_that_refused() {
        let mut machine = Machine {
            memory_available_bytes: 17 * GIB,
            ..Machine::default()
        };
        check_fits_memory("--max-size", Bytes(GIB), &machine).unwrap();
        let e = check_fits_memory("--max-size", Bytes(16 * GIB), &machine)
            .unwrap_err()
            .to_string();
        assert!(e.contains("MemAvailable"), "{e}");
        machine.memory_limit = Some(CgroupMemoryLimit {
            source: LimitSource::V1LimitInBytes,
            cgroup: "/x".into(),
            limit_bytes: 300 * MIB,
            in_use_bytes: 30 * MIB,
        });
        let e = check_fits_memory("--max-size", Bytes(GIB), &machine)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--max-size 1 GiB is larger than the memory available now (270 MiB, the memory cgroup /x limit 300 MiB")
                && e.contains("minus 30 MiB in use")
                && e.contains("expected at most 243 MiB"),
            "{e}"
        );
        check_fits_memory("--max-size", Bytes(200 * MIB), &machine).unwrap();
        // A cgroup limit looser than MemAvailable does not count.
        machine.memory_available_bytes = 100 * MIB;
        let e = check_fits_memory("--max-size", Bytes(200 * MIB), &machine)
            .unwrap_err()
            .to_string();
        assert!(e.contains("MemAvailable") && !e.contains("cgroup"), "{e}");
        // Unknown MemAvailable (a sample machine) checks nothing.
        check_fits_memory("--max-size", Bytes(GIB), &Machine::default()).unwrap();
    }
}
