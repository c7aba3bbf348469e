//! A team of pinned worker threads that run a list of jobs together: each worker pins
//! itself to its CPU, maps and first-touches its own arena (so its pages come from its
//! node), and then every timed trial starts for all workers at one barrier. A trial's
//! elapsed time is the slowest worker's, as in STREAM and Intel MLC.
//!
//! Workers meet at a spinning barrier: a parked thread takes tens to hundreds of
//! microseconds to wake (more under a hypervisor), which would skew the start of a
//! millisecond trial across threads and understate the bandwidth of short trials.
//!
//! Trial length adapts per job: the workers run doubling repetition counts together until
//! one trial lasts a quarter of the target, then size every trial to the target.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::error::UsageError;
use crate::platform::affinity;
use crate::platform::arena::{Arena, PagePolicy};
use crate::platform::timer::Timer;
use crate::units::Bytes;

/// A barrier whose waiters spin (then yield, so a team with more workers than CPUs still
/// makes progress): all workers leave it within a fraction of a microsecond.
struct SpinBarrier {
    workers: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

impl SpinBarrier {
    fn new(workers: usize) -> SpinBarrier {
        SpinBarrier {
            workers,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }
    }

    fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.workers {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            if spins < 1 << 16 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// What every worker does for one job: `work(worker, arena, repeats)` runs the job's
/// kernel `repeats` times over the worker's arena.
pub trait TeamJob: Sync {
    /// Prepares the worker's arena for this job (fill inputs, warm up); untimed.
    fn prepare(&self, worker: usize, arena: &Arena);
    /// The timed work: `repeats` repetitions of the kernel.
    fn work(&self, worker: usize, arena: &Arena, repeats: usize);
}

/// Timing of one job: `repeats` per trial, and each trial's elapsed nanoseconds.
#[derive(Debug, Clone)]
pub struct JobTiming {
    pub repeats: usize,
    pub trials_ns: Vec<f64>,
}

/// How trials are sized and counted.
#[derive(Debug, Clone, Copy)]
pub struct TrialPolicy {
    pub trial_ns: f64,
    pub trials: usize,
}

/// Runs `jobs` on one pinned worker per CPU in `cpus`, each with an arena of
/// `arena_bytes` and page policy `pages`. `on_job_done` is called (on worker 0) after each
/// job, for progress. Returns one timing per job, in order.
pub fn run_jobs(
    cpus: &[usize],
    arena_bytes: Bytes,
    pages: PagePolicy,
    timer: &Timer,
    policy: TrialPolicy,
    jobs: &[&dyn TeamJob],
    on_job_done: &(dyn Fn(usize) + Sync),
) -> Result<Vec<JobTiming>, UsageError> {
    let workers = cpus.len().max(1);
    let barrier = SpinBarrier::new(workers);
    let failed: Mutex<Option<UsageError>> = Mutex::new(None);
    let any_failed = AtomicBool::new(false);
    let starts: Vec<AtomicU64> = (0..workers).map(|_| AtomicU64::new(0)).collect();
    let ends: Vec<AtomicU64> = (0..workers).map(|_| AtomicU64::new(0)).collect();
    let repeats = AtomicUsize::new(1);
    let timings: Mutex<Vec<JobTiming>> = Mutex::new(Vec::with_capacity(jobs.len()));

    std::thread::scope(|scope| {
        for (worker, &cpu) in cpus.iter().enumerate() {
            let (barrier, failed, any_failed) = (&barrier, &failed, &any_failed);
            let (starts, ends, repeats, timings) = (&starts, &ends, &repeats, &timings);
            scope.spawn(move || {
                // Pin before mapping: the first touch decides where the pages live.
                let arena = affinity::pin_or_explain(cpu, cpus)
                    .and_then(|_| Arena::new(arena_bytes, pages));
                let arena = match arena {
                    Ok(arena) => Some(arena),
                    Err(error) => {
                        any_failed.store(true, Ordering::SeqCst);
                        failed.lock().expect("error slot").get_or_insert(error);
                        None
                    }
                };
                barrier.wait();
                let Some(arena) = arena.filter(|_| !any_failed.load(Ordering::SeqCst)) else {
                    return;
                };

                // Elapsed time of the trial just run: the slowest worker's own duration.
                // Each duration is read from one CPU's TSC; comparing readings across CPUs
                // (latest end − earliest start) would add any offset between their TSCs,
                // which hypervisors do not always keep in step.
                let elapsed = || {
                    let slowest = starts
                        .iter()
                        .zip(ends)
                        .map(|(s, e)| {
                            e.load(Ordering::SeqCst)
                                .saturating_sub(s.load(Ordering::SeqCst))
                        })
                        .max()
                        .unwrap_or(0);
                    timer.ticks_to_ns(slowest)
                };
                let timed = |job: &dyn TeamJob, count: usize| {
                    barrier.wait();
                    let t0 = timer.start();
                    job.work(worker, &arena, count);
                    let t1 = timer.stop();
                    starts[worker].store(t0, Ordering::SeqCst);
                    ends[worker].store(t1, Ordering::SeqCst);
                    barrier.wait();
                };

                for (index, job) in jobs.iter().enumerate() {
                    job.prepare(worker, &arena);
                    // Calibration: worker 0 decides, everyone reads the decision.
                    let mut count = 1usize;
                    loop {
                        timed(*job, count);
                        if worker == 0 {
                            let ns = elapsed();
                            let next = if ns >= policy.trial_ns / 4.0 || count >= 1 << 30 {
                                let per = ns.max(1.0) / count as f64;
                                ((policy.trial_ns / per) as usize).max(1) | (1 << 62)
                            } else {
                                count * 2
                            };
                            repeats.store(next, Ordering::SeqCst);
                        }
                        barrier.wait();
                        let decision = repeats.load(Ordering::SeqCst);
                        barrier.wait();
                        if decision & (1 << 62) != 0 {
                            count = decision & !(1 << 62);
                            break;
                        }
                        count = decision;
                    }
                    let mut trials_ns = Vec::with_capacity(policy.trials);
                    for _ in 0..policy.trials {
                        timed(*job, count);
                        if worker == 0 {
                            trials_ns.push(elapsed());
                        }
                    }
                    if worker == 0 {
                        timings.lock().expect("timings").push(JobTiming {
                            repeats: count,
                            trials_ns,
                        });
                        on_job_done(index);
                    }
                }
            });
        }
    });
    if let Some(error) = failed.into_inner().expect("error slot") {
        return Err(error);
    }
    Ok(timings.into_inner().expect("timings"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Counts calls per worker and checks each worker runs on its own CPU.
    struct Probe {
        calls: Vec<AtomicUsize>,
        cpus: Vec<usize>,
        wrong_cpu: AtomicBool,
    }

    impl TeamJob for Probe {
        fn prepare(&self, _worker: usize, arena: &Arena) {
            assert!(arena.len() >= 4096);
        }
        fn work(&self, worker: usize, _arena: &Arena, repeats: usize) {
            if affinity::current_cpu() != Some(self.cpus[worker]) {
                self.wrong_cpu.store(true, Ordering::SeqCst);
            }
            self.calls[worker].fetch_add(repeats, Ordering::SeqCst);
            std::hint::black_box((0..repeats * 1000).sum::<usize>());
        }
    }

    fn team_of(workers: usize) {
        let allowed = affinity::allowed_cpus().unwrap();
        let cpus: Vec<usize> = allowed.iter().copied().cycle().take(workers).collect();
        let probe = Probe {
            calls: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
            cpus: cpus.clone(),
            wrong_cpu: AtomicBool::new(false),
        };
        let done = AtomicUsize::new(0);
        let timings = run_jobs(
            &cpus,
            Bytes(64 << 10),
            PagePolicy::Base,
            &Timer::monotonic(),
            TrialPolicy {
                trial_ns: 2e5,
                trials: 3,
            },
            &[&probe, &probe],
            &|_| {
                done.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap();
        assert_eq!(timings.len(), 2);
        assert_eq!(done.load(Ordering::SeqCst), 2);
        for timing in &timings {
            assert_eq!(timing.trials_ns.len(), 3);
            assert!(timing.trials_ns.iter().all(|&ns| ns > 0.0));
        }
        // Every worker ran the same repetitions as worker 0 (one barrier-released team).
        let first = probe.calls[0].load(Ordering::SeqCst);
        assert!(probe
            .calls
            .iter()
            .all(|c| c.load(Ordering::SeqCst) == first));
        assert!(
            !probe.wrong_cpu.load(Ordering::SeqCst),
            "a worker ran off its CPU"
        );
    }

    #[test]
    fn a_team_of_one_runs_every_job() {
        team_of(1);
    }

    #[test]
    fn a_team_of_two_runs_in_step_on_their_cpus() {
        team_of(2);
    }

    #[test]
    fn a_failed_allocation_is_an_error_not_a_hang() {
        let cpus = affinity::allowed_cpus().unwrap();
        let result = run_jobs(
            &cpus[..1],
            Bytes(4096),
            PagePolicy::Huge1G,
            &Timer::monotonic(),
            TrialPolicy {
                trial_ns: 1e5,
                trials: 1,
            },
            &[],
            &|_| {},
        );
        // Succeeds only where a 1 GiB hugetlbfs page is reserved.
        if let Err(error) = result {
            assert!(error.to_string().contains("1g"), "{error}");
        }
    }
}
