//! Co-runners for sensitivity experiments: one thread, pinned to another CPU, that takes a
//! resource away from the program under test while it runs (Eklov et al.'s Cache Pirating,
//! ICPP 2011, and Bandwidth Bandit, CGO 2013), or keeps its CPU busy, or sleeps.
//!
//! - The **pirate** walks a chosen working set in a random cyclic order (Sattolo's
//!   algorithm, so one cycle through every line) with several independent chains
//!   interleaved, as fast as it can, so that LRU keeps its set resident in the shared
//!   cache. Without a PMU it checks itself by timing its own walk: ns per step of one chain
//!   near the cache's latency means it holds its set, near DRAM latency means it cannot
//!   steal that much.
//! - The **bandit** writes a buffer much larger than the LLC (transparent huge pages where
//!   the kernel offers them) line after line with non-temporal stores, so one core takes as
//!   much DRAM bandwidth as it can while allocating nothing in the caches (Bandwidth
//!   Bandit's aim: bandwidth without cache). Stores also cost the memory controller more
//!   than reads (write-to-read turnarounds): on our Zen 5 guests one core wrote 20 GB/s
//!   this way against 10–12 GB/s reading every line, and beside it STREAM ran +57% and
//!   GUPS +24%, where beside the reading bandit they ran +13% and +8% (interleaved, 3
//!   runs each). It can be paced to a target rate: after each chunk of lines it waits
//!   until the time that chunk was due. Loaded DRAM is slower for a program whose data
//!   misses the LLC now and then: `calibrate` measures how much slower the pirate's
//!   smallest set walks beside it, and advise reads the bandwidth arm with that in mind.
//!
//! - **In bursts** (for a co-runner on the program's own CPU): every `BURST_PERIOD` the
//!   thread wakes, runs for `BURST_BUSY` and sleeps again, at real-time priority where it
//!   may (so the program is interrupted on time, whatever the scheduler's slices). The
//!   pirate in bursts sweeps its set line by line (as fast as the prefetchers allow, so a
//!   set of the LLC share's size is swept well within the burst): the program starts each
//!   turn without the data the set displaced. The compute bursts are its control: the same
//!   interruptions, no memory touched. Left to the scheduler, turns last several
//!   milliseconds, long enough for other tenants of a VM's host to take the program's data
//!   while a compute thread runs, and the control then loses as much as the pirate arm.
//!
//! The thread and its buffers are made once (`CoRunner::start`); `set` switches the load
//! and returns once it has warmed up. The hot loops take no lock: they publish their step
//! count and their own clock through atomics (a sequence lock) every chunk, and poll a
//! generation counter to see a new load. `calibrate` measures the co-runner alone (the
//! pirate per size and on a walk far beyond the LLC, the bandit flat out) and the pirate
//! beside a flat-out bandit, so a report can say how much each really took;
//! `sharing_check` tells whether two co-runners' CPUs share a cache. The pirate is timed
//! over its thread's CPU time, so one that takes turns with another thread on its CPU is
//! timed only while it runs.

use std::sync::atomic::{fence, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::kernels::permutation::{sattolo_cycle, SplitMix64};
use crate::platform::affinity::pin_current_thread;
use crate::platform::arena::{Arena, PagePolicy};
use crate::units::{Bytes, MIB};

/// Bytes of a cache line.
const LINE: usize = 64;
/// Independent chains the pirate interleaves: enough to walk several times faster than one
/// chain, few enough that each stays a latency measurement.
const CHAINS: usize = 4;
/// The smallest bandit buffer (one huge page).
const HUGE_PAGE: usize = 2 * MIB as usize;
/// Pirate steps per chain between two publications (and looks at the generation).
const PIRATE_CHUNK: u64 = 256;
/// Compute steps between two publications.
const COMPUTE_CHUNK: u64 = 4096;
/// Bandit lines between two publications and pacing decisions (128 KiB, ≈ 6 µs flat out):
/// a publication's locked instructions wait for the write-combining buffers to drain, and
/// every 128 lines they cost a third of the rate.
const BANDIT_CHUNK: usize = 2048;
/// How long a bandit runs before `set` returns.
const BANDIT_WARM_UP: Duration = Duration::from_millis(20);
/// A paced bandit further behind its schedule than this catches up this much only, not the
/// whole debt in one burst. About two scheduler time slices: a bandit that shares its CPU
/// (on a busy machine) still makes up for the slices it lost; one stopped for longer does
/// not flood the memory afterwards.
const MAX_LAG_NS: u64 = 10_000_000;
/// Huge-page share of the bandit's buffer above which `bandit_huge` says yes.
const HUGE_ENOUGH: f64 = 0.9;
/// A co-runner in bursts wakes this often...
pub const BURST_PERIOD: Duration = Duration::from_millis(2);
/// ...and runs this long (a pirate at least one whole sweep of its set).
pub const BURST_BUSY: Duration = Duration::from_micros(500);
/// `Shared::bursts_policy`'s values.
const BURSTS_NOT_RUN: u8 = 0;
const BURSTS_REALTIME: u8 = 1;
const BURSTS_SCHEDULED: u8 = 2;

/// What the co-runner does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// Nothing: the thread sleeps (blocked, not spinning).
    Idle,
    /// A dependent integer chain in registers: keeps its CPU busy, touches no memory.
    Compute,
    /// Cache pirate: walks `bytes` of its buffer in a random cyclic order (several
    /// independent chains interleaved), as fast as it can. 0 bytes is `Idle`; more than
    /// the setup's `pirate_max_bytes` walks `pirate_max_bytes`.
    Pirate { bytes: u64 },
    /// Bandwidth bandit: writes every line of its buffer in order (non-temporal stores where
    /// the CPU has them), rate-limited to
    /// `bytes_per_s` (None: flat out) by pacing between chunks. A rate that is not a
    /// positive number is `Idle`.
    Bandit { bytes_per_s: Option<f64> },
    /// In bursts (see the module's doc): every `BURST_PERIOD`, `BURST_BUSY` of the compute
    /// chain, then asleep.
    ComputeBursts,
    /// In bursts: every `BURST_PERIOD`, sweeps of its first `bytes` (at least one whole
    /// sweep, for at least `BURST_BUSY`), then asleep. 0 bytes is `Idle`.
    PirateBursts { bytes: u64 },
}

/// Where the co-runner runs and the buffers it allocates once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoRunnerSetup {
    pub cpu: usize,
    /// The largest pirate set (the pirate's buffer).
    pub pirate_max_bytes: u64,
    /// The bandit's buffer (much larger than the LLC); also the DRAM probe's, linked anew
    /// for each probe (the bandit overwrites it).
    pub bandit_buffer_bytes: u64,
}

/// What the co-runner did over an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadStats {
    /// The interval, on the controller's clock.
    pub seconds: f64,
    /// Steps done: compute iterations, lines read (all pirate chains together), or lines
    /// the bandit wrote.
    pub steps: u64,
    /// Pirate: ns per step of one chain (≈ its access latency) over the thread's own CPU
    /// time, so a pirate that shares its CPU (runs in turns) is timed only while it runs;
    /// pirate in bursts: ns of its CPU time per line swept; 0 otherwise.
    pub ns_per_step: f64,
    /// The share of the interval the thread was on its CPU (its CPU time over the
    /// interval; NaN where the thread's CPU clock cannot be read).
    #[serde(default)]
    pub cpu_share: f64,
    /// Bytes the bandit wrote per second (lines × 64); 0 otherwise.
    pub bytes_per_s: f64,
}

/// What the worker runs (the public `Load` resolved, plus what only `calibrate` and `drop`
/// ask for).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Work {
    Idle,
    Compute,
    /// A pirate walk over the first `bytes` of the pirate buffer.
    Pirate {
        bytes: usize,
    },
    /// The same walk over the whole bandit buffer: the DRAM probe.
    DramWalk,
    Bandit {
        bytes_per_s: Option<f64>,
    },
    ComputeBursts,
    PirateBursts {
        bytes: usize,
    },
    Stop,
}

/// State shared by the controller and the worker thread.
struct Shared {
    /// Bumped by every command; the worker's hot loops poll it to see a new one.
    generation: AtomicU64,
    /// The latest command and its generation; the worker reads it when the generation
    /// changes (never inside a hot loop).
    command: Mutex<(u64, Work)>,
    wake: Condvar,
    /// The generation the worker has warmed up for.
    ready: Mutex<u64>,
    ready_changed: Condvar,
    /// Sequence lock around (`steps`, `ns`): odd while the worker writes them.
    sequence: AtomicU64,
    /// Steps done since the thread started (all loads).
    steps: AtomicU64,
    /// The worker's clock (ns since `epoch`) when it last published `steps`.
    ns: AtomicU64,
    epoch: Instant,
    /// Whether the worker got real-time priority for its last bursts: `BURSTS_NOT_RUN`,
    /// `BURSTS_REALTIME` or `BURSTS_SCHEDULED`.
    bursts_policy: AtomicU8,
}

impl Shared {
    fn publish(&self, steps: u64) {
        let ns = self.epoch.elapsed().as_nanos() as u64;
        self.sequence.fetch_add(1, Ordering::AcqRel);
        self.steps.store(steps, Ordering::Relaxed);
        self.ns.store(ns, Ordering::Relaxed);
        self.sequence.fetch_add(1, Ordering::Release);
    }

    /// The last published (steps, ns) pair, consistent.
    fn published(&self) -> (u64, u64) {
        loop {
            let before = self.sequence.load(Ordering::Acquire);
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let steps = self.steps.load(Ordering::Relaxed);
            let ns = self.ns.load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            if self.sequence.load(Ordering::Relaxed) == before {
                return (steps, ns);
            }
        }
    }

    fn changed(&self, generation: u64) -> bool {
        self.generation.load(Ordering::Relaxed) != generation
    }

    fn mark_ready(&self, generation: u64) {
        *lock(&self.ready) = generation;
        self.ready_changed.notify_all();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The controller's view of the interval being measured.
#[derive(Debug, Clone, Copy)]
struct Mark {
    at: Instant,
    steps: u64,
    ns: u64,
    load: Work,
    /// The thread's CPU time then, ns.
    cpu_ns: Option<u64>,
}

/// A co-runner: a thread pinned to `setup.cpu`, its buffers allocated once.
pub struct CoRunner {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    setup: CoRunnerSetup,
    bandit_huge: bool,
    bandit: Arc<Arena>,
    mark: Mutex<Mark>,
    /// The worker thread's CPU-time clock.
    cpu_clock: Option<libc::clockid_t>,
}

/// The calling thread's CPU-time clock.
fn own_cpu_clock() -> Option<libc::clockid_t> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: pthread_self is the calling thread; `clock` is a valid out pointer.
    (unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) } == 0).then_some(clock)
}

/// A clock's time in ns (None when it cannot be read, as after its thread ended).
fn clock_ns(clock: Option<libc::clockid_t>) -> Option<u64> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid out pointer; a stale clock id only makes the call fail.
    (unsafe { libc::clock_gettime(clock?, &mut now) } == 0)
        .then(|| now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64)
}

/// The worker's buffers.
struct Buffers {
    /// None when `pirate_max_bytes` is 0.
    pirate: Option<Arena>,
    bandit: Arc<Arena>,
    /// The pirate set currently linked in the pirate buffer, in lines, and its chain starts.
    pirate_linked: Option<(usize, [usize; CHAINS])>,
}

/// Maps a buffer with transparent huge pages where the kernel offers them, else base pages.
fn map(bytes: u64) -> std::io::Result<Arena> {
    Arena::new(Bytes(bytes), PagePolicy::Thp)
        .or_else(|_| Arena::new(Bytes(bytes), PagePolicy::Base))
        .map_err(|error| std::io::Error::other(error.to_string()))
}

impl CoRunner {
    /// Starts the pinned thread (Idle) with its buffers allocated and touched.
    pub fn start(setup: CoRunnerSetup) -> std::io::Result<CoRunner> {
        Self::start_with(setup, None)
    }

    /// As `start`, reading `bandit` instead of a buffer of its own when given (the second
    /// thread of `calibrate`).
    fn start_with(setup: CoRunnerSetup, bandit: Option<Arc<Arena>>) -> std::io::Result<CoRunner> {
        let shared = Arc::new(Shared {
            generation: AtomicU64::new(0),
            command: Mutex::new((0, Work::Idle)),
            wake: Condvar::new(),
            ready: Mutex::new(0),
            ready_changed: Condvar::new(),
            sequence: AtomicU64::new(0),
            steps: AtomicU64::new(0),
            ns: AtomicU64::new(0),
            epoch: Instant::now(),
            bursts_policy: AtomicU8::new(BURSTS_NOT_RUN),
        });
        let (sender, receiver) = std::sync::mpsc::channel();
        let worker_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(format!("memscope-corunner-{}", setup.cpu))
            .spawn(move || {
                // Pinned before the buffers are touched, so their pages come from this
                // CPU's node.
                let made = pin_current_thread(setup.cpu).and_then(|()| {
                    let pirate = match setup.pirate_max_bytes {
                        0 => None,
                        bytes => Some(map(bytes)?),
                    };
                    let bandit = match bandit {
                        Some(shared) => shared,
                        None => Arc::new(map(setup.bandit_buffer_bytes.max(HUGE_PAGE as u64))?),
                    };
                    Ok(Buffers {
                        pirate,
                        bandit,
                        pirate_linked: None,
                    })
                });
                match made {
                    Ok(buffers) => {
                        let bandit = Arc::clone(&buffers.bandit);
                        if sender.send(Ok((bandit, own_cpu_clock()))).is_ok() {
                            run(&worker_shared, buffers);
                        }
                    }
                    Err(error) => {
                        let _ = sender.send(Err(error));
                    }
                }
            })?;
        let (bandit, cpu_clock) = match receiver.recv() {
            Ok(Ok(started)) => started,
            Ok(Err(error)) => {
                let _ = thread.join();
                return Err(error);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(std::io::Error::other("the co-runner thread died at start"));
            }
        };
        let bandit_huge = bandit.obtained().huge_fraction >= HUGE_ENOUGH;
        Ok(CoRunner {
            shared,
            thread: Some(thread),
            setup,
            bandit_huge,
            bandit,
            mark: Mutex::new(Mark {
                at: Instant::now(),
                steps: 0,
                ns: 0,
                load: Work::Idle,
                cpu_ns: clock_ns(cpu_clock),
            }),
            cpu_clock,
        })
    }

    /// Switches to `load` and returns once it has warmed up (a pirate has walked its set
    /// at least twice; a bandit has run ~20 ms). Resets the stats.
    pub fn set(&self, load: Load) {
        let work = match load {
            Load::Idle => Work::Idle,
            Load::Compute => Work::Compute,
            Load::Pirate { bytes } => self
                .pirate_bytes(bytes)
                .map_or(Work::Idle, |bytes| Work::Pirate { bytes }),
            Load::Bandit { bytes_per_s } => match bytes_per_s {
                Some(rate) if rate.is_nan() || rate <= 0.0 => Work::Idle,
                _ => Work::Bandit { bytes_per_s },
            },
            Load::ComputeBursts => Work::ComputeBursts,
            Load::PirateBursts { bytes } => self
                .pirate_bytes(bytes)
                .map_or(Work::Idle, |bytes| Work::PirateBursts { bytes }),
        };
        self.command(work);
    }

    /// A pirate set of `bytes`, capped at the pirate buffer and cut to whole lines; None
    /// when no line is left.
    fn pirate_bytes(&self, bytes: u64) -> Option<usize> {
        let lines = bytes.min(self.setup.pirate_max_bytes) as usize / LINE;
        (lines > 0).then_some(lines * LINE)
    }

    /// Whether its last bursts ran at real-time priority (SCHED_FIFO), so that they
    /// interrupted the program on time; false where the policy was refused (no
    /// CAP_SYS_NICE) and the scheduler placed them; None before any bursts ran.
    pub fn bursts_realtime(&self) -> Option<bool> {
        match self.shared.bursts_policy.load(Ordering::Relaxed) {
            BURSTS_REALTIME => Some(true),
            BURSTS_SCHEDULED => Some(false),
            _ => None,
        }
    }

    /// Sends `work`, waits until the worker has warmed up for it, and resets the stats.
    fn command(&self, work: Work) {
        let generation = {
            let mut command = lock(&self.shared.command);
            let generation = command.0 + 1;
            *command = (generation, work);
            self.shared.generation.store(generation, Ordering::Relaxed);
            generation
        };
        self.shared.wake.notify_all();
        let mut ready = lock(&self.shared.ready);
        while *ready < generation {
            if self.thread.as_ref().is_none_or(|t| t.is_finished()) {
                break;
            }
            ready = self
                .shared
                .ready_changed
                .wait_timeout(ready, Duration::from_millis(50))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        drop(ready);
        self.reset(work);
    }

    fn reset(&self, load: Work) {
        let (steps, ns) = self.shared.published();
        *lock(&self.mark) = Mark {
            at: Instant::now(),
            steps,
            ns,
            load,
            cpu_ns: clock_ns(self.cpu_clock),
        };
    }

    /// The stats since the last `set` or `take_stats`, and resets them.
    pub fn take_stats(&self) -> LoadStats {
        let now = Instant::now();
        let (steps, ns) = self.shared.published();
        let mut mark = lock(&self.mark);
        let done = steps.saturating_sub(mark.steps);
        let worker_seconds = ns.saturating_sub(mark.ns) as f64 * 1e-9;
        let cpu_ns = clock_ns(self.cpu_clock);
        let cpu_seconds = match (cpu_ns, mark.cpu_ns) {
            (Some(now), Some(then)) => Some(now.saturating_sub(then) as f64 * 1e-9),
            _ => None,
        };
        let seconds = now.duration_since(mark.at).as_secs_f64();
        let mut stats = LoadStats {
            seconds,
            steps: done,
            ns_per_step: 0.0,
            bytes_per_s: 0.0,
            cpu_share: cpu_seconds.map_or(f64::NAN, |c| (c / seconds).min(1.0)),
        };
        if done > 0 && worker_seconds > 0.0 {
            match mark.load {
                Work::Pirate { .. } | Work::DramWalk => {
                    // Timed while it ran: its CPU time where it is known, else its clock.
                    let ran = cpu_seconds.filter(|c| *c > 0.0).unwrap_or(worker_seconds);
                    stats.ns_per_step = ran * 1e9 * CHAINS as f64 / done as f64;
                }
                Work::PirateBursts { .. } => {
                    let ran = cpu_seconds.filter(|c| *c > 0.0).unwrap_or(worker_seconds);
                    stats.ns_per_step = ran * 1e9 / done as f64;
                }
                Work::Bandit { .. } => {
                    stats.bytes_per_s = (done * LINE as u64) as f64 / worker_seconds;
                }
                Work::Idle | Work::Compute | Work::ComputeBursts | Work::Stop => {}
            }
        }
        *mark = Mark {
            at: now,
            steps,
            ns,
            load: mark.load,
            cpu_ns,
        };
        stats
    }
}

impl Drop for CoRunner {
    fn drop(&mut self) {
        {
            let mut command = lock(&self.shared.command);
            let generation = command.0 + 1;
            *command = (generation, Work::Stop);
            self.shared.generation.store(generation, Ordering::Relaxed);
        }
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The worker: waits for a command, runs it until the next one, until told to stop.
fn run(shared: &Shared, mut buffers: Buffers) {
    let mut seen = 0;
    let mut steps = 0u64;
    loop {
        let (generation, work) = {
            let mut command = lock(&shared.command);
            while command.0 == seen {
                command = shared
                    .wake
                    .wait(command)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            *command
        };
        seen = generation;
        match work {
            Work::Stop => {
                shared.mark_ready(generation);
                return;
            }
            Work::Idle => shared.mark_ready(generation),
            Work::Compute => compute(shared, generation, &mut steps),
            Work::Pirate { bytes } => {
                let Some(arena) = buffers.pirate.as_ref() else {
                    shared.mark_ready(generation);
                    continue;
                };
                let lines = bytes / LINE;
                let starts = match buffers.pirate_linked {
                    Some((linked, starts)) if linked == lines => starts,
                    _ => {
                        // SAFETY: the arena holds at least `bytes` (≤ pirate_max_bytes)
                        // bytes, page aligned, and only this thread uses it.
                        let starts = unsafe { link_cycle(arena.as_ptr(), lines, lines as u64) };
                        buffers.pirate_linked = Some((lines, starts));
                        starts
                    }
                };
                // SAFETY: the chain was linked in this arena just above or earlier.
                unsafe { walk(shared, generation, starts, lines, &mut steps) };
            }
            Work::DramWalk => {
                let arena = &buffers.bandit;
                let lines = arena.len() / LINE;
                // Linked anew each time: a bandit (this one, or a second co-runner given
                // the same buffer) overwrites it.
                // SAFETY: the buffer holds `lines` lines; no other thread touches it now
                // (`calibrate` runs its second thread only while this one walks the
                // pirate buffer).
                let starts = unsafe { link_cycle(arena.as_ptr(), lines, 0xd4a3) };
                // SAFETY: as just above.
                unsafe { walk(shared, generation, starts, lines, &mut steps) };
            }
            Work::Bandit { bytes_per_s } => {
                bandit(shared, generation, &buffers.bandit, bytes_per_s, &mut steps)
            }
            Work::ComputeBursts => bursts(shared, generation, None, &mut steps),
            Work::PirateBursts { bytes } => match buffers.pirate.as_ref() {
                Some(arena) => bursts(
                    shared,
                    generation,
                    Some((arena.as_ptr() as *const u8, bytes)),
                    &mut steps,
                ),
                None => shared.mark_ready(generation),
            },
        }
    }
}

/// A dependent multiply-xorshift chain in registers until the generation changes.
fn compute(shared: &Shared, generation: u64, steps: &mut u64) {
    shared.mark_ready(generation);
    let mut x = std::hint::black_box(0x9e37_79b9_7f4a_7c15u64);
    while !shared.changed(generation) {
        for _ in 0..COMPUTE_CHUNK {
            x ^= x >> 29;
            x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        }
        x = std::hint::black_box(x);
        *steps += COMPUTE_CHUNK;
        shared.publish(*steps);
    }
}

/// Links `lines` lines at `base` into one random cycle (line i holds the address of its
/// successor) and returns `CHAINS` starting points spread evenly along the cycle.
///
/// # Safety
/// `base` must be valid for writes of `lines` × 64 bytes, 8-byte aligned, and not be
/// accessed by another thread meanwhile.
unsafe fn link_cycle(base: *mut u8, lines: usize, seed: u64) -> [usize; CHAINS] {
    let next = sattolo_cycle(lines, &mut SplitMix64::new(seed));
    for (i, &successor) in next.iter().enumerate() {
        let to = base.add(successor as usize * LINE) as usize;
        (base.add(i * LINE) as *mut usize).write(to);
    }
    let mut starts = [base as usize; CHAINS];
    let spacing = (lines / CHAINS).max(1);
    let mut slot = 0usize;
    for start in starts.iter_mut().skip(1) {
        for _ in 0..spacing {
            slot = next[slot] as usize;
        }
        *start = base.add(slot * LINE) as usize;
    }
    starts
}

/// Walks the cycle from `starts` with `CHAINS` interleaved chains until the generation
/// changes, marking the worker ready once the set has been walked twice.
///
/// # Safety
/// Every start must be a line of a cycle linked by `link_cycle` that stays mapped.
unsafe fn walk(
    shared: &Shared,
    generation: u64,
    starts: [usize; CHAINS],
    lines: usize,
    steps: &mut u64,
) {
    let [mut a, mut b, mut c, mut d] = starts;
    let warm_up = 2 * lines as u64;
    let mut walked = 0u64;
    let mut ready = false;
    while !shared.changed(generation) {
        for _ in 0..PIRATE_CHUNK {
            // Each line holds the address of the next one of its cycle; volatile so the
            // loads stay even though only the final addresses are used.
            a = std::ptr::read_volatile(a as *const usize);
            b = std::ptr::read_volatile(b as *const usize);
            c = std::ptr::read_volatile(c as *const usize);
            d = std::ptr::read_volatile(d as *const usize);
        }
        walked += PIRATE_CHUNK * CHAINS as u64;
        *steps += PIRATE_CHUNK * CHAINS as u64;
        shared.publish(*steps);
        if !ready && walked >= warm_up {
            ready = true;
            shared.mark_ready(generation);
        }
    }
    std::hint::black_box((a, b, c, d));
    if !ready {
        shared.mark_ready(generation);
    }
}

/// Writes the bandit's buffer line after line, over and over, until the generation
/// changes, paced to `bytes_per_s` when given.
fn bandit(
    shared: &Shared,
    generation: u64,
    arena: &Arena,
    bytes_per_s: Option<f64>,
    steps: &mut u64,
) {
    let base = arena.as_ptr();
    let total_lines = arena.len() / LINE;
    let ns_per_line = bytes_per_s.map(|rate| LINE as f64 * 1e9 / rate);
    let started = Instant::now();
    let mut ready = false;
    let mut schedule_start = shared.epoch.elapsed().as_nanos() as u64;
    let mut lines_scheduled = 0u64;
    let mut next = 0usize;
    while !shared.changed(generation) {
        for _ in 0..BANDIT_CHUNK {
            // SAFETY: next < total_lines, so the line lies inside the arena, which stays
            // mapped while the worker runs; no other thread reads it meanwhile.
            unsafe { store_line(base.add(next * LINE), *steps) };
            next += 1;
            if next == total_lines {
                next = 0;
            }
        }
        *steps += BANDIT_CHUNK as u64;
        shared.publish(*steps);
        if !ready && started.elapsed() >= BANDIT_WARM_UP {
            ready = true;
            shared.mark_ready(generation);
        }
        let Some(ns_per_line) = ns_per_line else {
            continue;
        };
        lines_scheduled += BANDIT_CHUNK as u64;
        let due = schedule_start + (lines_scheduled as f64 * ns_per_line) as u64;
        let mut now = shared.epoch.elapsed().as_nanos() as u64;
        if now > due + MAX_LAG_NS {
            // Far behind (descheduled): forgive all but MAX_LAG_NS of the debt.
            schedule_start += now - due - MAX_LAG_NS;
            continue;
        }
        while now < due && !shared.changed(generation) {
            let left = due - now;
            if left > 2_000_000 {
                std::thread::sleep(Duration::from_nanos(left - 1_000_000));
            } else {
                std::hint::spin_loop();
            }
            now = shared.epoch.elapsed().as_nanos() as u64;
        }
    }
    // Fenced once at the end, not per chunk: a fence waits for the write-combining buffers
    // to drain, and per chunk it halved the rate.
    store_fence();
    if !ready {
        shared.mark_ready(generation);
    }
}

/// Writes the 64-byte line at `line` with non-temporal stores (they bypass the caches).
///
/// # Safety
/// `line` is 64-byte aligned and writable.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn store_line(line: *mut u8, value: u64) {
    use std::arch::x86_64::{_mm_set1_epi64x, _mm_stream_si128};
    let v = _mm_set1_epi64x(value as i64);
    for k in 0..4 {
        _mm_stream_si128(line.add(16 * k) as *mut _, v);
    }
}

/// Writes the 64-byte line at `line` with non-temporal store pairs (a hint the core may
/// take to write around the caches).
///
/// # Safety
/// `line` is 64-byte aligned and writable.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
unsafe fn store_line(line: *mut u8, value: u64) {
    for k in 0..4 {
        std::arch::asm!(
            "stnp {v}, {v}, [{p}]",
            v = in(reg) value,
            p = in(reg) line.add(16 * k),
            options(nostack, preserves_flags)
        );
    }
}

/// Writes the 64-byte line at `line` with plain stores (no non-temporal store here).
///
/// # Safety
/// `line` is 64-byte aligned and writable.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
unsafe fn store_line(line: *mut u8, value: u64) {
    for k in 0..8 {
        std::ptr::write_volatile((line as *mut u64).add(k), value);
    }
}

/// Orders the non-temporal stores before whatever the thread does next.
#[inline(always)]
fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no preconditions (SSE, part of x86_64's baseline).
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
    #[cfg(not(target_arch = "x86_64"))]
    fence(Ordering::Release);
}

mod bursts;
mod checks;
use bursts::bursts;
pub use checks::{Calibration, SharingCheck};

#[cfg(test)]
mod tests;
