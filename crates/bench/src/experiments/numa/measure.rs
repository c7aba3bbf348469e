//! Measuring the NUMA matrix: column by column, the buffers mapped bound to the column's
//! node and touched from its nearest row, then each row's pinned threads chase and read
//! them; the placement of every cell is verified afterwards.

use super::plan::{resolve, Matrix};
use super::summary::{hmat_cell, memory_column, note, remote_local_ratio};
use super::{NumaConfig, NumaResult};
use crate::error::UsageError;
use crate::experiments::chase_timing::ChaseCursor;
use crate::experiments::shared::node_reading::{on_cpu, read_isa};
use crate::experiments::shared::sizing::round_to_granule;
use crate::kernels::chase::UNROLL;
use crate::kernels::permutation::{build_chase, ChaseOrder};
use crate::kernels::stream::{self, Isa, KernelSpec};
use crate::platform::arena::{Arena, PagePolicy};
use crate::platform::numa_policy;
use crate::platform::team::{run_jobs, TeamJob, TrialPolicy};
use crate::platform::timer::Timer;
use crate::session::progress::Progress;
use crate::stats::Summary;
use crate::topology::Machine;
use crate::units::Bytes;

/// Bytes between chased slots: one cache line.
const LINE: usize = 64;
/// Pages per window of the page-local chase (as `latency`'s default).
const WINDOW_PAGES: usize = 64;
/// Pages sampled per buffer to verify a cell's placement.
const PLACEMENT_SAMPLES: usize = 32;

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
    let (n_rows, n_columns) = (matrix.rows.len(), matrix.columns.len());
    let isa = read_isa();
    let array_bytes = round_to_granule(config.bandwidth_bytes) as usize;
    let slots = (config.latency_bytes as usize / LINE).max(UNROLL);
    let allowed = &machine.allowed_cpus;
    let full = |value| vec![vec![value; n_columns]; n_rows];
    let mut cells = Cells {
        latency: full(f64::NAN),
        random: full(f64::NAN),
        bandwidth: full(f64::NAN),
        overlap: full(1.0),
        placement: vec![vec![None; n_columns]; n_rows],
        // Whether pages are bound; on one node a system that refuses mbind leaves them
        // unbound (they can only be local), and the note says why.
        unbound: None,
        latency_bytes: (slots * LINE) as u64,
        bandwidth_bytes: array_bytes as u64,
        isa,
        max_spread_pct: 0.0,
    };
    progress.start("NUMA node × node", (n_rows * n_columns) as u64);
    for (j, column_node) in matrix.columns.iter().enumerate() {
        progress.message(&format!("memory on node {}", column_node.id));
        // Buffers are mapped, bound and touched by a thread on the column's node, or on the
        // row nearest to it when it has no CPUs, so their page tables are there or near;
        // the chase buffer is unmapped before the reading threads' buffers are mapped, so a
        // column never needs both at once.
        let builder = matrix.rows[column_node.toucher].cpus.first().copied();
        let map_chase = |node: Option<usize>| {
            on_cpu(builder, allowed, || {
                Arena::new_on_node(Bytes(config.latency_bytes), config.pages, node)
            })
        };
        let chase_buffer = match map_chase(cells.unbound.is_none().then_some(column_node.id)) {
            Err(UsageError::Unsupported(reason))
                if n_rows * n_columns == 1 && machine.numa_nodes.len() <= 1 =>
            {
                cells.unbound = Some(reason);
                map_chase(None)?
            }
            result => result?,
        };
        let bind_to = cells.unbound.is_none().then_some(column_node.id);
        let column = Column {
            j,
            node: column_node.id,
            builder,
            bind_to,
        };
        latency_column(
            config,
            (&matrix, &column),
            &chase_buffer,
            (timer, progress, allowed),
            &mut cells,
        )?;
        let chase_placement = bind_to.and_then(|node| fractions_on_node([&chase_buffer], node));
        drop(chase_buffer);
        bandwidth_column(
            config,
            (&matrix, &column),
            chase_placement.as_deref(),
            (timer, progress, allowed),
            &mut cells,
        )?;
    }
    progress.finish();
    Ok(finish(machine, &matrix, cells))
}

/// The column being measured: its index, its node, the CPU that maps and touches its
/// buffers, and the node they are bound to (none where the system refuses).
struct Column {
    j: usize,
    node: usize,
    builder: Option<usize>,
    bind_to: Option<usize>,
}

/// The column's latency cells from every row, page-local then random; each chain
/// continues from cell to cell.
fn latency_column(
    config: &NumaConfig,
    (matrix, column): (&Matrix, &Column),
    chase_buffer: &Arena,
    (timer, progress, allowed): (&Timer, &Progress, &[usize]),
    cells: &mut Cells,
) -> Result<(), UsageError> {
    let slots = cells.latency_bytes as usize / LINE;
    let seed = config.seed ^ ((column.node as u64) << 32);
    let window_bytes = WINDOW_PAGES * 4096;
    for (order, random) in [
        (ChaseOrder::PageLocal { window_bytes }, false),
        (ChaseOrder::Random, true),
    ] {
        let mut position = on_cpu(column.builder, allowed, || {
            Ok(build(chase_buffer, slots, order, seed))
        })?;
        for (i, row_node) in matrix.rows.iter().enumerate() {
            progress.message(&format!(
                "latency, {order} chase: node {} → node {}",
                row_node.id, column.node
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
            let value = cells.summarise(&trials);
            let matrix = if random {
                &mut cells.random
            } else {
                &mut cells.latency
            };
            matrix[i][column.j] = value;
        }
    }
    Ok(())
}

/// The column's read-bandwidth cells from every row, and the share of each cell's
/// buffers on the column's node (the chase's, checked after its cells, and the readers').
fn bandwidth_column(
    config: &NumaConfig,
    (matrix, column): (&Matrix, &Column),
    chase_placement: Option<&[f64]>,
    (timer, progress, allowed): (&Timer, &Progress, &[usize]),
    cells: &mut Cells,
) -> Result<(), UsageError> {
    let (threads, array_bytes) = (matrix.threads, cells.bandwidth_bytes as usize);
    let kernel = stream::find("read").expect("the registry has a read kernel");
    let readers = on_cpu(column.builder, allowed, || {
        reader_buffers(config, column.bind_to, threads, array_bytes)
    })?;
    let job = ReadJob {
        kernel,
        isa: cells.isa,
        array_bytes,
        readers: &readers,
    };
    let j = column.j;
    for (i, row_node) in matrix.rows.iter().enumerate() {
        progress.message(&format!(
            "read bandwidth: node {} → node {}",
            row_node.id, column.node
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
        cells.bandwidth[i][j] = cells.summarise(&rates);
        cells.overlap[i][j] = timing.concurrency().overlap;
        if let (Some(node), Some(chase)) = (column.bind_to, chase_placement) {
            cells.placement[i][j] = fractions_on_node(&readers, node).map(|readers| {
                let all: Vec<f64> = chase.iter().chain(&readers).copied().collect();
                all.iter().sum::<f64>() / all.len() as f64
            });
        }
        progress.advance();
    }
    Ok(())
}

/// What a run measured: the matrices [row][column] and how.
struct Cells {
    latency: Vec<Vec<f64>>,
    random: Vec<Vec<f64>>,
    bandwidth: Vec<Vec<f64>>,
    overlap: Vec<Vec<f64>>,
    placement: Vec<Vec<Option<f64>>>,
    /// Why pages were not bound (one node whose system refuses mbind).
    unbound: Option<String>,
    latency_bytes: u64,
    bandwidth_bytes: u64,
    isa: Isa,
    max_spread_pct: f64,
}

impl Cells {
    /// The median of a cell's trials, its spread kept if it is the largest so far.
    fn summarise(&mut self, samples: &[f64]) -> f64 {
        let summary = Summary::of(samples).expect("every cell has trials");
        self.max_spread_pct = self.max_spread_pct.max(summary.spread_pct());
        summary.median
    }
}

/// The result from the measured cells: the distances, labels and firmware figures of the
/// rows and columns, the ratios and the note.
fn finish(machine: &Machine, matrix: &Matrix, cells: Cells) -> NumaResult {
    let rows: Vec<usize> = matrix.rows.iter().map(|n| n.id).collect();
    let columns: Vec<usize> = matrix.columns.iter().map(|n| n.id).collect();
    let node = |index: usize| &machine.numa_nodes[index];
    let distances = matrix
        .rows
        .iter()
        .map(|row| {
            let distances = &node(row.index).distances;
            matrix
                .columns
                .iter()
                .map(|column| distances.get(column.index).copied().unwrap_or(0))
                .collect()
        })
        .collect();
    let hmat: Vec<Vec<_>> = matrix
        .rows
        .iter()
        .map(|row| {
            matrix
                .columns
                .iter()
                .map(|column| hmat_cell(row.id, node(column.index)))
                .collect()
        })
        .collect();
    let memory = matrix
        .columns
        .iter()
        .map(|column| {
            memory_column(
                node(column.index),
                matrix.rows[column.toucher].id,
                &rows,
                &columns,
                &cells.latency,
                &cells.bandwidth,
            )
        })
        .collect();
    let note = note(
        &rows,
        &columns,
        &matrix.notes,
        cells.unbound.as_deref(),
        &cells.placement,
        &cells.overlap,
    );
    // The union of rows and columns, in the machine's order.
    let nodes = machine
        .numa_nodes
        .iter()
        .map(|n| n.id)
        .filter(|id| rows.contains(id) || columns.contains(id))
        .collect();
    NumaResult {
        nodes,
        remote_local_latency_ratio: remote_local_ratio(&rows, &columns, &cells.latency),
        remote_local_bandwidth_ratio: remote_local_ratio(&rows, &columns, &cells.bandwidth),
        rows,
        columns,
        latency_ns: cells.latency,
        read_gb_per_s: cells.bandwidth,
        read_overlap: cells.overlap,
        distances,
        threads_per_node: matrix.threads,
        latency_bytes: cells.latency_bytes,
        bandwidth_bytes: cells.bandwidth_bytes,
        placement_verified: cells.placement,
        note,
        random_latency_ns: cells.random,
        page_local_window_pages: WINDOW_PAGES as u64,
        cpus: matrix.rows.iter().map(|n| n.cpus.clone()).collect(),
        isa: cells.isa,
        max_spread_pct: cells.max_spread_pct,
        memory,
        hmat: if hmat.iter().flatten().any(Option::is_some) {
            hmat
        } else {
            Vec::new()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::numa::plan::tests::{
        hbm_flat, resolved, sub_numa_clustering, two_sockets_two_cxl,
    };
    use crate::experiments::numa::plan::{ColumnNode, RowNode};
    use crate::experiments::numa::{HmatClass, NodeThreads};
    use crate::topology::tiers::MemoryKind;
    use crate::units::MIB;

    /// Synthetic cells for `matrix` on `machine`: latency 100 ns and 40 GB/s local, 150 ns
    /// and 25 GB/s remote DRAM; a CPU-less column costs its distance from the row over 10
    /// times the local latency, and gives 40 GB/s × 12 / that distance (HBM nearer than
    /// CXL, and both nearer than across the sockets).
    fn synthetic_cells(machine: &Machine, matrix: &Matrix) -> Cells {
        let value = |row: &RowNode, column: &ColumnNode| {
            let cpu_less = machine.numa_nodes[column.index].cpus.is_empty();
            let distance = machine.numa_nodes[row.index].distances[column.index] as f64;
            match (row.id == column.id, cpu_less) {
                (true, _) => (100.0, 40.0),
                (false, false) => (150.0, 25.0),
                (false, true) => (10.0 * distance, 480.0 / distance),
            }
        };
        let grid = |pick: &dyn Fn((f64, f64)) -> f64| -> Vec<Vec<f64>> {
            matrix
                .rows
                .iter()
                .map(|r| matrix.columns.iter().map(|c| pick(value(r, c))).collect())
                .collect()
        };
        let (n, m) = (matrix.rows.len(), matrix.columns.len());
        Cells {
            latency: grid(&|v| v.0),
            random: grid(&|v| v.0 + 20.0),
            bandwidth: grid(&|v| v.1),
            overlap: vec![vec![1.0; m]; n],
            placement: vec![vec![Some(1.0); m]; n],
            unbound: None,
            latency_bytes: 256 * MIB,
            bandwidth_bytes: 256 * MIB,
            isa: Isa::Avx2,
            max_spread_pct: 1.0,
        }
    }

    #[test]
    fn two_sockets_and_two_cxl_nodes_give_a_2_by_4_matrix_with_labels_and_hmat() {
        let machine = two_sockets_two_cxl();
        let matrix = resolved(&machine, vec![0, 1, 2, 3], NodeThreads::Count(1)).unwrap();
        let result = finish(&machine, &matrix, synthetic_cells(&machine, &matrix));
        assert_eq!(result.nodes, [0, 1, 2, 3]);
        assert_eq!(
            (result.rows.as_slice(), result.columns.as_slice()),
            (&[0, 1][..], &[0, 1, 2, 3][..])
        );
        for m in [
            &result.latency_ns,
            &result.random_latency_ns,
            &result.read_gb_per_s,
        ] {
            assert_eq!(m.len(), 2);
            assert!(m.iter().all(|row| row.len() == 4));
        }
        assert_eq!(result.distances, [[10, 21, 14, 24], [21, 10, 24, 14]]);
        assert_eq!(result.cpus, [[3, 2, 1, 0], [7, 6, 5, 4]]);
        // Remote/local over the DRAM nodes only: 150 / 100.
        assert_eq!(result.remote_local_latency_ratio, Some(1.5));
        assert_eq!(result.remote_local_bandwidth_ratio, Some(25.0 / 40.0));

        let kinds: Vec<MemoryKind> = result.memory.iter().map(|c| c.kind).collect();
        use MemoryKind::{Cxl, Dram};
        assert_eq!(kinds, [Dram, Dram, Cxl, Cxl]);
        let touched: Vec<usize> = result.memory.iter().map(|c| c.touched_from).collect();
        assert_eq!(touched, [0, 1, 0, 1]);
        let cxl = &result.memory[3];
        assert_eq!((cxl.tier, cxl.cpu_less), (Some(22), true));
        assert_eq!(cxl.latency_vs_local_dram, Some(1.4));
        assert_eq!(cxl.bandwidth_vs_local_dram, Some(480.0 / 14.0 / 40.0));
        assert_eq!(result.memory[0].latency_vs_local_dram, None);

        // HMAT: each socket is the initiator of its own DRAM and CXL node.
        let filled: Vec<Vec<bool>> = result
            .hmat
            .iter()
            .map(|row| row.iter().map(Option::is_some).collect())
            .collect();
        assert_eq!(
            filled,
            [[true, false, true, false], [false, true, false, true]]
        );
        let cell = result.hmat[1][3].as_ref().unwrap();
        assert_eq!(cell.class, HmatClass::Access1);
        assert_eq!(
            (cell.read_latency_ns, cell.read_bandwidth_mb_s),
            (Some(250), Some(30_000))
        );
        assert_eq!(result.note, None);
    }

    #[test]
    fn hbm_columns_and_an_8_by_8_sub_numa_matrix() {
        let machine = hbm_flat();
        let matrix = resolved(&machine, vec![0, 1, 2, 3], NodeThreads::All).unwrap();
        let result = finish(&machine, &matrix, synthetic_cells(&machine, &matrix));
        assert_eq!((result.rows.len(), result.columns.len()), (2, 4));
        let hbm = &result.memory[2];
        assert_eq!(
            (hbm.kind, hbm.cpu_less, hbm.touched_from),
            (MemoryKind::Hbm, true, 0)
        );
        assert_eq!(hbm.latency_vs_local_dram, Some(1.3));
        // The synthetic HBM column reads at 480 / 13 GB/s against local DRAM's 40.
        assert!(hbm.bandwidth_vs_local_dram.is_some_and(|r| r > 0.9));
        assert!(result.hmat.is_empty(), "no HMAT in this machine");
        assert_eq!(result.remote_local_latency_ratio, Some(1.5));

        let machine = sub_numa_clustering();
        let matrix = resolved(&machine, (0..8).collect(), NodeThreads::Count(1)).unwrap();
        let result = finish(&machine, &matrix, synthetic_cells(&machine, &matrix));
        assert_eq!(result.rows, (0..8).collect::<Vec<_>>());
        assert_eq!(result.columns, result.rows);
        assert!(result.latency_ns.iter().all(|row| row.len() == 8));
        assert_eq!(result.distances[0][3], 12);
        assert_eq!(result.distances[0][4], 21);
        assert!(result
            .memory
            .iter()
            .all(|c| !c.cpu_less && c.kind == MemoryKind::Dram));
        assert!(result
            .memory
            .iter()
            .all(|c| c.latency_vs_local_dram.is_none()));
        assert_eq!(result.remote_local_latency_ratio, Some(1.5));
        assert_eq!(result.note, None);
    }

    #[test]
    fn one_node_keeps_its_square_result_and_writes_no_hmat() {
        let machine = crate::topology::Machine {
            numa_nodes: vec![crate::experiments::numa::plan::tests::node(
                0,
                vec![0, 1],
                1 << 34,
                vec![10],
            )],
            allowed_cpus: vec![0, 1],
            ..crate::topology::Machine::default()
        };
        let matrix = resolved(&machine, vec![0], NodeThreads::Count(1)).unwrap();
        let result = finish(&machine, &matrix, synthetic_cells(&machine, &matrix));
        assert_eq!(
            (
                result.nodes.clone(),
                result.rows.clone(),
                result.columns.clone()
            ),
            (vec![0], vec![0], vec![0])
        );
        assert!(result.hmat.is_empty());
        let json = serde_json::to_value(&result).unwrap();
        assert!(json.get("hmat").is_none(), "{json}");
        assert!(result.note.unwrap().contains("nothing remote"));
    }

    #[test]
    fn this_machine_gives_a_full_matrix_with_pages_where_they_belong() {
        let mut machine = crate::topology::detect().expect("machine");
        machine.allowed_cpus = crate::platform::affinity::allowed_cpus().expect("affinity");
        let timer = Timer::calibrate().0;
        let config = NumaConfig {
            latency_bytes: 8 * MIB,
            bandwidth_bytes: 4 * MIB,
            repetitions: 3,
            trial_ns: 2e5,
            ..NumaConfig::defaults(&machine)
        };
        let result = measure(&config, &machine, &timer, &Progress::hidden()).unwrap();
        let (rows, columns) = (result.rows.len(), result.columns.len());
        assert!(rows >= 1 && columns >= 1);
        for matrix in [
            &result.latency_ns,
            &result.random_latency_ns,
            &result.read_gb_per_s,
        ] {
            assert_eq!(matrix.len(), rows);
            assert!(matrix.iter().all(|row| row.len() == columns));
            assert!(matrix.iter().flatten().all(|v| v.is_finite() && *v > 0.0));
        }
        assert_eq!(result.distances.len(), rows);
        assert_eq!(result.memory.len(), columns);
        let n = result.nodes.len();
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
