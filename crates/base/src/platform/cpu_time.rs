//! How long threads were really on a CPU (their CPU-time clocks), and how much a team's
//! workers overlapped in one trial: the sum of what each worker ran ÷ (workers × the union
//! interval, earliest start to latest end). A team whose vCPUs the host ran one after the
//! other, or whose worker waited for a CPU, overlaps far below 1 while each worker's own
//! duration looks normal; timing only those durations would count sequential work as
//! concurrent.
//!
//! The thread CPU clocks (CLOCK_THREAD_CPUTIME_ID, or another thread's clock from
//! pthread_getcpuclockid) leave out the time the kernel knows the vCPU was stolen by the
//! host where it accounts steal time (paravirtual steal clock), so they also catch a worker
//! whose vCPU was descheduled in the middle of a trial.

/// The calling thread's CPU time so far, ns; None where the clock cannot be read.
pub(crate) fn thread_cpu_ns() -> Option<u64> {
    read(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// A thread's CPU-time clock, readable from any thread of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadClock(libc::clockid_t);

impl ThreadClock {
    /// The calling thread's clock, as other threads can read it; None where the system
    /// does not give one.
    pub fn of_current_thread() -> Option<ThreadClock> {
        let mut clock: libc::clockid_t = 0;
        // SAFETY: pthread_self is the calling thread; the id is written into `clock`.
        let status = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
        (status == 0).then_some(ThreadClock(clock))
    }

    /// The raw clock id, to hand through an atomic.
    pub fn id(self) -> libc::clockid_t {
        self.0
    }

    /// The thread's CPU time so far, ns (None once the thread has exited).
    pub fn now_ns(self) -> Option<u64> {
        read(self.0)
    }
}

fn read(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the pointer it is given.
    let status = unsafe { libc::clock_gettime(clock, &mut ts) };
    (status == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// Overlap below which a multi-thread trial is not taken as the threads running together:
/// it is re-run, and a row none of whose trials reach it is flagged.
pub const MIN_OVERLAP: f64 = 0.9;

/// One worker's part of a trial: its start and end on a clock every CPU shares (ns), and
/// the CPU time it got in between (ns) when that could be read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct WorkerSpan {
    pub start_ns: f64,
    pub end_ns: f64,
    pub cpu_ns: Option<f64>,
}

impl WorkerSpan {
    /// The time the worker ran: its CPU time, never more than its own duration (the CPU
    /// clock is read just outside the timed region).
    fn ran_ns(&self) -> f64 {
        let duration = (self.end_ns - self.start_ns).max(0.0);
        self.cpu_ns.map_or(duration, |cpu| cpu.min(duration))
    }
}

/// How much a row's threads ran together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Concurrency {
    /// Median overlap of the trials behind the row (0–1).
    pub overlap: f64,
    /// Whether that reaches `MIN_OVERLAP`.
    pub concurrent: bool,
}

impl Concurrency {
    pub fn of(overlaps: &[f64]) -> Concurrency {
        let overlap = if overlaps.is_empty() {
            1.0
        } else {
            crate::stats::summary::median(overlaps)
        };
        Concurrency {
            overlap,
            concurrent: overlap >= MIN_OVERLAP,
        }
    }
}

/// The lowest of `overlaps` below `MIN_OVERLAP`: None when every figure ran together.
pub fn lowest_not_concurrent(overlaps: impl IntoIterator<Item = f64>) -> Option<f64> {
    overlaps
        .into_iter()
        .filter(|&o| o < MIN_OVERLAP)
        .reduce(f64::min)
}

/// Overlap of workers that each ran `ran_ns` (CPU time) within an interval of
/// `interval_ns`: Σ ran ÷ (workers × interval), each worker's part capped at the interval.
/// 1 for no workers or an empty interval.
pub fn overlap_in(interval_ns: f64, ran_ns: &[f64]) -> f64 {
    if ran_ns.is_empty() || interval_ns <= 0.0 {
        return 1.0;
    }
    let ran: f64 = ran_ns.iter().map(|r| r.clamp(0.0, interval_ns)).sum();
    ran / (ran_ns.len() as f64 * interval_ns)
}

/// Serde default of an overlap in a report written before overlaps were measured.
pub fn whole() -> f64 {
    1.0
}

/// Serde default of a concurrency flag in a report written before it was measured.
pub fn ran_together() -> bool {
    true
}

/// The union interval of a trial (earliest start to latest end, ns) and how much the
/// workers overlapped in it (0–1; 1 for an empty trial). For a team of one it is the share
/// of the trial the worker was on its CPU: a trial the scheduler or the host interrupted
/// is no more a one-thread figure than sequential workers are an N-thread one.
pub(crate) fn union_and_overlap(spans: &[WorkerSpan]) -> (f64, f64) {
    let start = spans
        .iter()
        .map(|s| s.start_ns)
        .fold(f64::INFINITY, f64::min);
    let end = spans
        .iter()
        .map(|s| s.end_ns)
        .fold(f64::NEG_INFINITY, f64::max);
    if spans.is_empty() || end <= start {
        return (0.0, 1.0);
    }
    let union = end - start;
    let ran: Vec<f64> = spans.iter().map(WorkerSpan::ran_ns).collect();
    (union, overlap_in(union, &ran))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: f64, end: f64, cpu: Option<f64>) -> WorkerSpan {
        WorkerSpan {
            start_ns: start,
            end_ns: end,
            cpu_ns: cpu,
        }
    }

    #[test]
    fn workers_in_step_overlap_fully() {
        let (union, overlap) =
            union_and_overlap(&[span(0.0, 100.0, Some(100.0)), span(1.0, 100.0, None)]);
        assert_eq!(union, 100.0);
        assert!(overlap > 0.99, "{overlap}");
    }

    #[test]
    fn workers_one_after_the_other_overlap_half() {
        // The shape of the bug: each worker's own duration is 100, the union is 200.
        let (union, overlap) =
            union_and_overlap(&[span(0.0, 100.0, None), span(100.0, 200.0, None)]);
        assert_eq!(union, 200.0);
        assert!((overlap - 0.5).abs() < 1e-9, "{overlap}");
    }

    #[test]
    fn a_worker_descheduled_inside_its_interval_counts_its_cpu_time_only() {
        // Both spans cover the union, but the second worker ran for a third of it.
        let (_, overlap) =
            union_and_overlap(&[span(0.0, 300.0, Some(300.0)), span(0.0, 300.0, Some(100.0))]);
        assert!((overlap - 4.0 / 6.0).abs() < 1e-9, "{overlap}");
        // CPU time read just outside the region is capped at the duration.
        let (_, overlap) =
            union_and_overlap(&[span(0.0, 10.0, Some(11.0)), span(0.0, 10.0, Some(12.0))]);
        assert_eq!(overlap, 1.0);
    }

    #[test]
    fn a_team_of_one_counts_its_time_on_the_cpu_and_an_empty_trial_is_whole() {
        assert_eq!(
            union_and_overlap(&[span(5.0, 15.0, Some(10.0))]),
            (10.0, 1.0)
        );
        assert_eq!(
            union_and_overlap(&[span(5.0, 15.0, Some(4.0))]),
            (10.0, 0.4)
        );
        assert_eq!(union_and_overlap(&[]), (0.0, 1.0));
    }

    #[test]
    fn overlap_in_an_interval_caps_each_worker_and_lowest_finds_the_flagged() {
        assert_eq!(overlap_in(100.0, &[100.0, 50.0]), 0.75);
        assert_eq!(overlap_in(100.0, &[130.0, 100.0]), 1.0);
        assert_eq!(overlap_in(100.0, &[]), 1.0);
        assert_eq!(overlap_in(0.0, &[1.0]), 1.0);
        assert_eq!(lowest_not_concurrent([1.0, 0.95]), None);
        assert_eq!(lowest_not_concurrent([0.5, 1.0, 0.3]), Some(0.3));
    }

    #[test]
    fn the_cpu_clocks_advance_with_work() {
        let before = thread_cpu_ns().expect("Linux has thread CPU clocks");
        let clock = ThreadClock::of_current_thread().expect("a clock of this thread");
        let other_before = clock.now_ns().expect("readable");
        std::hint::black_box((0..2_000_000u64).fold(0u64, |a, b| a ^ b.wrapping_mul(31)));
        assert!(thread_cpu_ns().unwrap() > before);
        assert!(clock.now_ns().unwrap() > other_before);
        assert_eq!(ThreadClock(clock.id()), clock);
    }
}
