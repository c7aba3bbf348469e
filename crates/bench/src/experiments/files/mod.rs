//! File reads, from the page cache and from the device: for each file size the whole
//! file read sequentially (warm: from the page cache, also through `mmap`; cold: with
//! `O_DIRECT`, or after `fdatasync` + `posix_fadvise(DONTNEED)` where `O_DIRECT` is
//! refused), random 4 KiB reads over the largest file at several queue depths (a
//! synchronous `pread` baseline and `io_uring`) with latency percentiles, and a block-size
//! sweep of cold sequential reads. The test files live in a fresh directory (`testfiles`)
//! removed on success, error and signals; every file is opened relative to its descriptor
//! (page-cache drops, mmap and io_uring work on those descriptors, never on a path), and a
//! directory renamed or swapped under the run stops it before the next phase. `storage`
//! says what filesystem and device they are on.

pub mod figures;
pub mod params;
pub mod run;
#[cfg(any(test, feature = "test-support"))]
pub mod samples;
pub mod testfiles;
pub mod view;

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::kernels::fileio::{self, AlignedBuffer, DIRECT_ALIGN};
use crate::session::progress::Progress;
use crate::stats::design::Shuffler;
use crate::stats::Summary;
use crate::topology::storage::{self, Storage};
use testfiles::TestFiles;

/// The share of the free space the test files may take.
const MAX_SHARE_OF_FREE: f64 = 0.25;

/// What `files` measures.
#[derive(Debug, Clone)]
pub struct FilesConfig {
    /// The directory the test directory is made in.
    pub dir: PathBuf,
    /// File sizes, ascending, multiples of 4 KiB.
    pub sizes: Vec<u64>,
    /// Sizes given by the user (too little space is then an error, not a smaller set).
    pub sizes_given: bool,
    /// Block sizes of the cold sequential sweep.
    pub blocks: Vec<u64>,
    /// Block of the per-size sequential reads.
    pub read_block: u64,
    /// io_uring queue depths of the random reads.
    pub depths: Vec<usize>,
    /// Random reads per engine and depth.
    pub random_reads: usize,
    /// Bytes read per pass of the block sweep (at most the largest file).
    pub sweep_bytes: u64,
    pub repetitions: usize,
    /// Time each trial runs passes for (at least one pass).
    pub trial_ns: f64,
}

/// The most reads one pass of the block-size sweep makes.
pub(crate) const BLOCK_SWEEP_CALLS: u64 = 512;

/// How cold reads were made to miss the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ColdMethod {
    /// `O_DIRECT`: the page cache is bypassed.
    Direct,
    /// `O_DIRECT` refused: `fdatasync` + `posix_fadvise(DONTNEED)` before each pass.
    DropCache,
}

impl ColdMethod {
    pub fn describe(self) -> &'static str {
        match self {
            ColdMethod::Direct => "O_DIRECT (the page cache bypassed)",
            ColdMethod::DropCache => {
                "O_DIRECT refused here: the file's cached pages dropped by fdatasync + \
                 posix_fadvise(DONTNEED) before each pass"
            }
        }
    }
}

/// Throughput of a whole-file read, over the trials.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReadFigure {
    /// Decimal GB/s (10^9 B/s), median over the trials.
    pub gb_per_s: f64,
    pub spread_pct: f64,
    /// Time per read call (per pass for mmap), µs, median.
    pub latency_us: f64,
    pub trials: usize,
}

/// One file size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeRow {
    pub bytes: u64,
    /// From the page cache with read(2).
    pub warm: ReadFigure,
    /// From the page cache through mmap, touching every cache line (faults included).
    pub mmap: ReadFigure,
    /// From the device.
    pub cold: ReadFigure,
}

/// Random 4 KiB reads at one queue depth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RandomRow {
    /// "pread" (synchronous, one at a time) or "io_uring".
    pub engine: String,
    pub depth: usize,
    pub reads: usize,
    pub iops: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

/// One block size of the cold sequential sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockRow {
    pub block: u64,
    pub gb_per_s: f64,
    pub spread_pct: f64,
    pub latency_us: f64,
}

/// The result of `files`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilesResult {
    pub storage: Storage,
    pub cold_method: ColdMethod,
    pub read_block: u64,
    pub sizes: Vec<SizeRow>,
    /// The file the random reads and the block sweep used.
    pub largest_bytes: u64,
    pub block_size: u64,
    pub random: Vec<RandomRow>,
    pub blocks: Vec<BlockRow>,
    pub sweep_bytes: u64,
    /// Bytes of test files written (and removed).
    pub written_bytes: u64,
    /// One thread's DRAM copy rate from the same report's bandwidth table, in bytes
    /// copied per second (GB/s): what read(2) from the page cache does is a copy, so this
    /// is its ceiling for files larger than the caches (absent when bandwidth did not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_copy_gb_per_s: Option<f64>,
    pub notes: Vec<String>,
}

/// Why the measurement could not be made (exit 2: the directory or its space).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FilesError(pub String);

/// The sizes that fit in the share of the free space: all of them when given by the user
/// (or an error), the largest dropped one by one otherwise.
fn fit_sizes(
    config: &FilesConfig,
    available: u64,
) -> Result<(Vec<u64>, Option<String>), FilesError> {
    let allowed = (available as f64 * MAX_SHARE_OF_FREE) as u64;
    let mut sizes = config.sizes.clone();
    let total = |s: &[u64]| s.iter().sum::<u64>();
    if total(&sizes) <= allowed {
        return Ok((sizes, None));
    }
    let show = |b: u64| crate::units::Bytes(b).to_string();
    if config.sizes_given {
        return Err(FilesError(format!(
            "invalid value for --sizes: the test files take {} in all, more than {:.0}% of the \
             {} free in {}: expected smaller sizes or a --dir with more space",
            show(total(&sizes)),
            MAX_SHARE_OF_FREE * 100.0,
            show(available),
            config.dir.display()
        )));
    }
    while total(&sizes) > allowed && sizes.len() > 1 {
        sizes.pop();
    }
    if total(&sizes) > allowed {
        return Err(FilesError(format!(
            "{} has only {} free: not enough for even a {} test file",
            config.dir.display(),
            show(available),
            show(sizes[0])
        )));
    }
    let note = format!(
        "sizes above {} left out: {:.0}% of the {} free in {} is the most the test files take",
        show(*sizes.last().expect("one size")),
        MAX_SHARE_OF_FREE * 100.0,
        show(available),
        config.dir.display()
    );
    Ok((sizes, Some(note)))
}

/// Runs the measurement; the test files are gone when it returns, whatever happened.
pub fn measure(config: &FilesConfig, progress: &Progress) -> Result<FilesResult, FilesError> {
    let storage = storage::examine(&config.dir).map_err(|e| {
        FilesError(format!(
            "cannot examine --dir {}: {e}",
            config.dir.display()
        ))
    })?;
    if storage.read_only {
        return Err(FilesError(format!(
            "invalid value '{}' for --dir: it is on a read-only filesystem ({} on {}): \
             expected a directory where test files can be written",
            config.dir.display(),
            storage.filesystem,
            storage.mount_point
        )));
    }
    let (sizes, dropped) = fit_sizes(config, storage.available_bytes)?;
    let mut notes: Vec<String> = dropped.into_iter().collect();
    if storage.in_memory {
        notes.push(format!(
            "{} is a {}: the files live in memory, so 'cold' reads never reach a device",
            storage.dir, storage.filesystem
        ));
    }
    progress.start("files: writing test files", 1);
    let files = TestFiles::create(&config.dir, &sizes).map_err(FilesError)?;
    progress.advance();
    let simulated = crate::error::SIMULATED_FAILURE;
    if std::env::var_os(simulated).is_some_and(|v| v == "files-written") {
        return Err(FilesError(format!(
            "simulated failure after the test files were written ({simulated})"
        )));
    }
    let read = read_files(config, &files, progress, &mut notes)?;
    progress.finish();
    let written_bytes = sizes.iter().sum();
    drop(files);
    Ok(FilesResult {
        storage,
        cold_method: read.cold_method,
        read_block: config.read_block,
        sizes: read.sizes,
        largest_bytes: read.largest_bytes,
        block_size: read.block_size,
        random: read.random,
        blocks: read.blocks,
        sweep_bytes: read.sweep_bytes,
        written_bytes,
        dram_copy_gb_per_s: None,
        notes,
    })
}

/// The figures read from the test files.
struct Read {
    cold_method: ColdMethod,
    sizes: Vec<SizeRow>,
    largest_bytes: u64,
    block_size: u64,
    random: Vec<RandomRow>,
    blocks: Vec<BlockRow>,
    sweep_bytes: u64,
}

/// The reads of every phase over the written test files, each phase after checking that
/// the directory is still in place (a swapped directory stops the run, naming it).
fn read_files(
    config: &FilesConfig,
    files: &TestFiles,
    progress: &Progress,
    notes: &mut Vec<String>,
) -> Result<Read, FilesError> {
    let in_place = || files.check_in_place().map_err(FilesError);
    in_place()?;
    let (largest_bytes, largest_name) = files.files.last().cloned().expect("at least one size");
    let largest = TestFile {
        files,
        name: &largest_name,
    };
    let cold_method = cold_method(largest);
    let fail = |what: &str, e: std::io::Error| FilesError(format!("{what}: {e}"));

    progress.start("files: sequential reads", files.files.len() as u64);
    let mut rows = Vec::new();
    for (bytes, name) in &files.files {
        in_place()?;
        progress.message(&crate::units::Bytes(*bytes).to_string());
        let file = TestFile { files, name };
        let block = config
            .read_block
            .min(bytes.next_multiple_of(DIRECT_ALIGN as u64));
        let warm = warm_read(config, file, *bytes, block).map_err(|e| fail("warm read", e))?;
        let mmap = mapped_read(config, file, *bytes).map_err(|e| fail("mmap read", e))?;
        let cold = cold_read(config, file, *bytes, block, cold_method)
            .map_err(|e| fail("cold read", e))?;
        rows.push(SizeRow {
            bytes: *bytes,
            warm,
            mmap,
            cold,
        });
        progress.advance();
    }

    in_place()?;
    progress.start("files: block sizes", config.blocks.len() as u64);
    let sweep_bytes = config.sweep_bytes.min(largest_bytes);
    let mut blocks = Vec::new();
    for &block in &config.blocks {
        progress.message(&crate::units::Bytes(block).to_string());
        // A pass of BLOCK_SWEEP_CALLS reads at most: at 4 KiB a full sweep's thousands of
        // device round trips add time, not evidence.
        let bytes = sweep_bytes.min(block.saturating_mul(BLOCK_SWEEP_CALLS));
        let figure = cold_read(config, largest, bytes, block, cold_method)
            .map_err(|e| fail("block sweep", e))?;
        blocks.push(BlockRow {
            block,
            gb_per_s: figure.gb_per_s,
            spread_pct: figure.spread_pct,
            latency_us: figure.latency_us,
        });
        progress.advance();
    }
    // The random reads last: the longer after the files were written, the less the
    // device (or a VM host) is still busy writing them back.
    in_place()?;
    progress.start("files: random 4 KiB reads", random_steps(config));
    let block_size = 4096u64;
    // Each row a step, the message naming the one being measured.
    let mut next = config.depths.iter();
    progress.message("pread, depth 1");
    let random = random_reads(
        config,
        largest,
        largest_bytes,
        block_size,
        cold_method,
        notes,
        |_| {
            progress.advance();
            if let Some(depth) = next.next() {
                progress.message(&format!("io_uring, depth {depth}"));
            }
        },
    )
    .map_err(|e| fail("random reads", e))?;
    in_place()?;
    Ok(Read {
        cold_method,
        sizes: rows,
        largest_bytes,
        block_size,
        random,
        blocks,
        sweep_bytes,
    })
}

/// One test file, opened by name relative to the test directory's descriptor.
#[derive(Clone, Copy)]
struct TestFile<'a> {
    files: &'a TestFiles,
    name: &'a str,
}

impl TestFile<'_> {
    fn open(self, direct: bool) -> std::io::Result<File> {
        self.files.open(self.name, direct)
    }
}

/// O_DIRECT when the filesystem takes it (opening and one aligned read), else dropping
/// the cached pages.
fn cold_method(file: TestFile) -> ColdMethod {
    let Ok(file) = file.open(true) else {
        return ColdMethod::DropCache;
    };
    let mut buffer = AlignedBuffer::new(DIRECT_ALIGN);
    let slice = buffer.as_mut_slice();
    // SAFETY: reading into our aligned buffer.
    let n = unsafe { libc::pread(file.as_raw_fd(), slice.as_mut_ptr().cast(), slice.len(), 0) };
    if n < 0 {
        ColdMethod::DropCache
    } else {
        ColdMethod::Direct
    }
}

/// Drops the file's pages from the page cache (after writing back anything dirty).
fn drop_cached(fd: RawFd) {
    // SAFETY: plain system calls on our descriptor.
    unsafe {
        libc::fdatasync(fd);
        libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED);
    }
}

/// Trials of passes: each trial runs `pass` (timed by itself; `prepare` before each pass
/// is not timed) until the trial's time is spent, at least once. Returns the figure from
/// (bytes, elapsed ns, calls) per pass.
fn trials(
    config: &FilesConfig,
    bytes: u64,
    mut prepare: impl FnMut(),
    mut pass: impl FnMut() -> std::io::Result<(f64, u64)>,
) -> std::io::Result<ReadFigure> {
    let mut rates = Vec::new();
    let mut latencies = Vec::new();
    for _ in 0..config.repetitions {
        let started = Instant::now();
        let (mut timed, mut calls, mut passes) = (0.0, 0u64, 0u64);
        while passes == 0 || (started.elapsed().as_nanos() as f64) < config.trial_ns {
            prepare();
            let (ns, c) = pass()?;
            timed += ns;
            calls += c.max(1);
            passes += 1;
        }
        rates.push(bytes as f64 * passes as f64 / timed.max(1.0));
        latencies.push(timed / calls as f64 / 1e3);
    }
    let rate = Summary::of(&rates).expect("at least one trial");
    Ok(ReadFigure {
        gb_per_s: rate.median,
        spread_pct: rate.spread_pct(),
        latency_us: Summary::of(&latencies).map_or(f64::NAN, |s| s.median),
        trials: rates.len(),
    })
}

fn warm_read(
    config: &FilesConfig,
    file: TestFile,
    bytes: u64,
    block: u64,
) -> std::io::Result<ReadFigure> {
    let file = file.open(false)?;
    let mut buffer = AlignedBuffer::new(block as usize);
    // The first read brings the file into the page cache.
    fileio::read_sequential(
        file.as_raw_fd(),
        buffer.as_mut_slice(),
        block as usize,
        bytes,
    )?;
    trials(
        config,
        bytes,
        || {},
        || {
            let pass = fileio::read_sequential(
                file.as_raw_fd(),
                buffer.as_mut_slice(),
                block as usize,
                bytes,
            )?;
            Ok((pass.elapsed_ns, pass.calls))
        },
    )
}

fn mapped_read(config: &FilesConfig, file: TestFile, bytes: u64) -> std::io::Result<ReadFigure> {
    let file = file.open(false)?;
    let mut checksum = 0u64;
    let figure = trials(
        config,
        bytes,
        || {},
        || {
            let started = Instant::now();
            // SAFETY: a private read-only mapping of our open file, unmapped below.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    bytes as usize,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    file.as_raw_fd(),
                    0,
                )
            };
            if ptr == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: the mapping is `bytes` long and readable until munmap.
            let region = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), bytes as usize) };
            let (_, sum) = fileio::touch_mapped(region);
            checksum = checksum.wrapping_add(sum);
            // SAFETY: unmapping what was mapped above.
            unsafe { libc::munmap(ptr, bytes as usize) };
            Ok((started.elapsed().as_nanos() as f64, 1))
        },
    )?;
    std::hint::black_box(checksum);
    Ok(figure)
}

fn cold_read(
    config: &FilesConfig,
    file: TestFile,
    bytes: u64,
    block: u64,
    method: ColdMethod,
) -> std::io::Result<ReadFigure> {
    let file = file.open(method == ColdMethod::Direct)?;
    let fd = file.as_raw_fd();
    let mut buffer = AlignedBuffer::new(block as usize);
    let prepare = || {
        if method == ColdMethod::DropCache {
            drop_cached(fd);
        }
    };
    trials(config, bytes, prepare, || {
        let pass = fileio::read_sequential(fd, buffer.as_mut_slice(), block as usize, bytes)?;
        Ok((pass.elapsed_ns, pass.calls))
    })
}

/// Random block reads over the file: pread at depth 1, then io_uring at each depth.
fn random_reads(
    config: &FilesConfig,
    file: TestFile,
    bytes: u64,
    block: u64,
    method: ColdMethod,
    notes: &mut Vec<String>,
    mut measured: impl FnMut(&RandomRow),
) -> std::io::Result<Vec<RandomRow>> {
    let file = file.open(method == ColdMethod::Direct)?;
    let fd = file.as_raw_fd();
    let slots = (bytes / block).max(1);
    let mut stream = Shuffler::from_clock();
    // Fresh offsets for every row, so no row reads blocks an earlier one just brought
    // into a cache below the file system (the host's, on a VM).
    let mut offsets = Vec::with_capacity(config.random_reads);
    let mut draw = |offsets: &mut Vec<u64>| {
        offsets.clear();
        offsets.extend(
            (0..config.random_reads)
                .map(|_| ((stream.uniform() * slots as f64) as u64).min(slots - 1) * block),
        );
    };
    draw(&mut offsets);
    if method == ColdMethod::DropCache {
        notes.push(
            "random reads without O_DIRECT: the file's pages are dropped before each depth, \
             but a block read twice within one depth comes from the page cache"
                .to_string(),
        );
    }
    let mut rows = Vec::new();
    let mut latencies = Vec::with_capacity(offsets.len());
    let mut buffer = AlignedBuffer::new(block as usize);
    if method == ColdMethod::DropCache {
        drop_cached(fd);
    }
    let total = fileio::random_pread(
        fd,
        buffer.as_mut_slice(),
        block as usize,
        &offsets,
        &mut latencies,
    )?;
    rows.push(random_row("pread", 1, &latencies, total));
    measured(&rows[0]);
    let mut buffers: Vec<AlignedBuffer> = (0..config.depths.iter().copied().max().unwrap_or(1))
        .map(|_| AlignedBuffer::new(block as usize))
        .collect();
    for &depth in &config.depths {
        draw(&mut offsets);
        if method == ColdMethod::DropCache {
            drop_cached(fd);
        }
        match fileio::random_uring(
            fd,
            &mut buffers,
            block as usize,
            &offsets,
            depth,
            &mut latencies,
        ) {
            Ok(total) => {
                let row = random_row("io_uring", depth, &latencies, total);
                measured(&row);
                rows.push(row);
            }
            Err(e) => {
                notes.push(format!(
                    "io_uring is not available here ({e}): only the pread baseline was measured"
                ));
                break;
            }
        }
    }
    Ok(rows)
}

/// The rows `random_reads` measures, one progress step each: the pread baseline, then
/// one per io_uring depth.
fn random_steps(config: &FilesConfig) -> u64 {
    config.depths.len() as u64 + 1
}

/// Percentiles of the latencies (ns) through an HDR histogram (3 significant digits).
fn random_row(engine: &str, depth: usize, latencies_ns: &[u64], total_ns: f64) -> RandomRow {
    let mut histogram = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3)
        .expect("valid bounds");
    for &l in latencies_ns {
        let _ = histogram.record(l.max(1));
    }
    let us = |ns: u64| ns as f64 / 1e3;
    RandomRow {
        engine: engine.to_string(),
        depth,
        reads: latencies_ns.len(),
        iops: latencies_ns.len() as f64 / (total_ns / 1e9).max(1e-9),
        mean_us: histogram.mean() / 1e3,
        p50_us: us(histogram.value_at_quantile(0.5)),
        p90_us: us(histogram.value_at_quantile(0.9)),
        p99_us: us(histogram.value_at_quantile(0.99)),
        p999_us: us(histogram.value_at_quantile(0.999)),
        max_us: us(histogram.max()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn config(dir: &Path) -> FilesConfig {
        FilesConfig {
            dir: dir.to_path_buf(),
            sizes: vec![4096, 65536, 1 << 20],
            sizes_given: true,
            blocks: vec![4096, 65536],
            read_block: 1 << 20,
            depths: vec![1, 4],
            random_reads: 64,
            sweep_bytes: 1 << 20,
            repetitions: 2,
            trial_ns: 1e5,
        }
    }

    #[test]
    fn every_figure_is_measured_and_the_files_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let result = measure(&config(dir.path()), &Progress::hidden()).unwrap();
        assert_eq!(result.sizes.len(), 3);
        for row in &result.sizes {
            for f in [row.warm, row.mmap, row.cold] {
                assert!(f.gb_per_s > 0.0 && f.gb_per_s.is_finite(), "{row:?}");
            }
        }
        assert_eq!(result.random[0].engine, "pread");
        for r in &result.random {
            assert_eq!(r.reads, 64);
            assert!(r.p50_us <= r.p99_us && r.p99_us <= r.max_us, "{r:?}");
        }
        assert_eq!(result.blocks.len(), 2);
        assert_eq!(result.written_bytes, 4096 + 65536 + (1 << 20));
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "files left behind: {left:?}");
    }

    #[test]
    fn every_random_read_row_is_a_progress_step() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path());
        let files = TestFiles::create(dir.path(), &c.sizes).unwrap();
        let (bytes, name) = files.files.last().cloned().unwrap();
        let file = TestFile {
            files: &files,
            name: &name,
        };
        let mut steps = Vec::new();
        let rows = random_reads(
            &c,
            file,
            bytes,
            4096,
            cold_method(file),
            &mut Vec::new(),
            |r| steps.push((r.engine.clone(), r.depth)),
        )
        .unwrap();
        let seen: Vec<(String, usize)> =
            (rows.iter()).map(|r| (r.engine.clone(), r.depth)).collect();
        assert_eq!(steps, seen, "one step per row, in order");
        // Without io_uring only the baseline is measured; with it, every planned step.
        if rows.len() > 1 {
            assert_eq!(steps.len() as u64, random_steps(&c));
        }
        assert_eq!(steps[0], ("pread".to_string(), 1));
    }

    #[test]
    fn sizes_that_do_not_fit_are_refused_or_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(dir.path());
        c.sizes = vec![4096, 1 << 20, 1 << 30];
        assert!(fit_sizes(&c, 1 << 30).unwrap_err().0.contains("--sizes"));
        c.sizes_given = false;
        let (sizes, note) = fit_sizes(&c, 1 << 30).unwrap();
        assert_eq!(sizes, vec![4096, 1 << 20]);
        assert!(note.unwrap().contains("left out"));
        assert!(fit_sizes(&c, 1000).is_err());
    }

    #[test]
    fn a_directory_swapped_during_the_run_stops_it_and_the_victim_is_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path());
        let files = TestFiles::create(dir.path(), &c.sizes).unwrap();
        let path = files.path().to_path_buf();
        // Another user renames the directory away and puts a symlink in its place to a
        // directory of `file-<size>` entries that must not change.
        std::fs::rename(&path, dir.path().join("moved")).unwrap();
        let victim = dir.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        for size in &c.sizes {
            std::fs::write(victim.join(format!("file-{size}")), b"victim").unwrap();
        }
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        let mut notes = Vec::new();
        let error = match read_files(&c, &files, &Progress::hidden(), &mut notes) {
            Err(FilesError(e)) => e,
            Ok(_) => panic!("a swapped directory was measured"),
        };
        assert!(error.contains("renamed or replaced"), "{error}");
        assert!(error.contains(&path.display().to_string()), "{error}");
        drop(files);
        for size in &c.sizes {
            assert_eq!(
                std::fs::read(victim.join(format!("file-{size}"))).unwrap(),
                b"victim"
            );
        }
        assert!(path.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(
            std::fs::read_dir(dir.path().join("moved")).unwrap().count(),
            0
        );
    }
}
