//! Whether the calling thread was taken off its CPU: the count of involuntary context
//! switches (getrusage RUSAGE_THREAD). A trial during which the scheduler ran something
//! else on the measuring CPU timed that other work too; comparing the count before and
//! after lets an experiment retry such a trial instead of reporting it.

/// Involuntary context switches of the calling thread so far, or None where the system
/// does not count them per thread.
pub(crate) fn involuntary_switches() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes a rusage struct into the pointer it is given.
        let status = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
        if status != 0 {
            return None;
        }
        // SAFETY: initialised by the successful call above.
        let usage = unsafe { usage.assume_init() };
        Some(usage.ru_nivcsw as u64)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// Counts preemptions across a piece of work.
#[derive(Debug, Clone, Copy)]
pub struct PreemptionWatch(Option<u64>);

impl PreemptionWatch {
    pub fn start() -> PreemptionWatch {
        PreemptionWatch(involuntary_switches())
    }

    /// True when the thread was preempted since `start` (never true where the count is
    /// unavailable).
    pub fn preempted(&self) -> bool {
        match (self.0, involuntary_switches()) {
            (Some(before), Some(after)) => after > before,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_is_available_and_never_falls() {
        let before = involuntary_switches().expect("Linux counts involuntary switches");
        std::hint::black_box((0..100_000u64).sum::<u64>());
        assert!(involuntary_switches().unwrap() >= before);
        let watch = PreemptionWatch::start();
        let _ = watch.preempted();
    }
}
