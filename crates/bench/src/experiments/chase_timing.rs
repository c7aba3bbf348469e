//! How every pointer-chase experiment times its chase: an untimed warm-up, trials sized
//! from runs of doubling length, then timed trials in ns per load. The chain continues
//! across calls, so a trial never re-walks lines the previous one brought into the cache.
//! With hardware counters, a point's misses are counted in a separate untimed pass after
//! its trials (`counted`), so counting never perturbs the timed figures.

use crate::counters::{AccessCounter, AccessCounts};
use crate::kernels::chase::{chase, UNROLL};
use crate::platform::timer::Timer;

/// The longest a warm-up lap may run, in trials. A chase was just written in its own order
/// (`permutation::link`), which leaves a set the caches can hold where a lap would; the
/// warm-up adds the TLB and the lines the writing evicted, and a lap through a DRAM-sized
/// buffer would warm nothing.
pub(crate) const WARM_UP_TRIALS: f64 = 2.0;

/// A chase in progress: where the chain has got to.
pub(crate) struct ChaseCursor(*const usize);

impl ChaseCursor {
    /// # Safety
    /// `start` must begin a complete chain (every slot holds the address of another slot
    /// of the chain) that stays valid for as long as the cursor is used.
    pub unsafe fn new(start: *const usize) -> ChaseCursor {
        ChaseCursor(start)
    }

    /// Where the chain has got to (to continue it elsewhere).
    pub fn position(&self) -> *const usize {
        std::hint::black_box(self.0)
    }

    fn run(&mut self, iterations: usize) {
        // SAFETY: the chain is complete and valid (the contract of `new`).
        self.0 = unsafe { chase(self.0, iterations) };
    }

    /// Follows the chain untimed for one lap of `slots` slots, stopping early after
    /// WARM_UP_TRIALS trials of `trial_ns`.
    pub(crate) fn warm_up_lap(&mut self, slots: usize, timer: &Timer, trial_ns: f64) {
        let mut remaining = slots.div_ceil(UNROLL);
        let start = timer.start();
        while remaining > 0 {
            let chunk = remaining.min(1024);
            self.run(chunk);
            remaining -= chunk;
            if timer.ticks_to_ns(timer.stop().saturating_sub(start)) > WARM_UP_TRIALS * trial_ns {
                break;
            }
        }
    }

    /// Follows the chain untimed for about `ns` nanoseconds.
    pub(crate) fn run_for(&mut self, timer: &Timer, ns: f64) {
        let start = timer.start();
        while timer.ticks_to_ns(timer.stop().saturating_sub(start)) < ns {
            self.run(256);
        }
    }

    /// Iterations (of UNROLL loads each) that make one trial last about `trial_ns`: runs
    /// of doubling length until one lasts a quarter of that.
    pub(crate) fn iterations_for(&mut self, timer: &Timer, trial_ns: f64) -> usize {
        let mut iterations = 16usize;
        let ns_per_iteration = loop {
            let t0 = timer.start();
            self.run(iterations);
            let ns = timer.ticks_to_ns(timer.stop().saturating_sub(t0));
            if ns >= trial_ns / 4.0 || iterations >= 1 << 30 {
                break ns.max(1.0) / iterations as f64;
            }
            iterations *= 2;
        };
        ((trial_ns / ns_per_iteration) as usize).max(1)
    }

    /// One timed trial of `iterations` × UNROLL loads, in ns per load.
    pub fn trial(&mut self, timer: &Timer, iterations: usize) -> f64 {
        let t0 = timer.start();
        self.run(iterations);
        let t1 = timer.stop();
        timer.ticks_to_ns(t1.saturating_sub(t0)) / (iterations * UNROLL) as f64
    }

    /// Follows the chain untimed for about one trial (`trial_ns` at the trials' median of
    /// `ns_per_load`) with `counter` enabled, and returns the misses per load at each level
    /// over exactly the loads it made. Run it after a point's trials: the chain continues
    /// where they stopped, so the caches and TLBs are as the trials left them.
    pub fn counted(
        &mut self,
        counter: &AccessCounter,
        trial_ns: f64,
        ns_per_load: f64,
    ) -> AccessCounts {
        let iterations = counted_iterations(trial_ns, ns_per_load);
        let loads = (iterations * UNROLL) as u64;
        counter.count(loads, || self.run(iterations)).1
    }

    /// `repetitions` trials sized to `trial_ns`, in ns per load.
    pub fn trials(&mut self, timer: &Timer, trial_ns: f64, repetitions: usize) -> Vec<f64> {
        let iterations = self.iterations_for(timer, trial_ns);
        (0..repetitions)
            .map(|_| self.trial(timer, iterations))
            .collect()
    }
}

/// Iterations (of UNROLL loads) of a counted pass lasting about `trial_ns` at
/// `ns_per_load`: at least one, at most 2^30 (as `iterations_for`).
pub(crate) fn counted_iterations(trial_ns: f64, ns_per_load: f64) -> usize {
    let iterations = trial_ns / (ns_per_load * UNROLL as f64);
    if iterations.is_finite() && iterations >= 1.0 {
        (iterations.round() as usize).min(1 << 30)
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::permutation::{build_chase, ChaseOrder};

    #[test]
    fn trials_are_positive_and_the_chain_stays_on_its_cycle() {
        let slots = 4096;
        let mut buffer = vec![0u64; slots * 8];
        let timer = Timer::monotonic();
        // SAFETY: 64-byte slots fit the buffer, which outlives the cursor.
        let mut cursor = unsafe {
            let start = build_chase(
                buffer.as_mut_ptr() as *mut u8,
                slots,
                64,
                ChaseOrder::Random,
                3,
            );
            ChaseCursor::new(start)
        };
        cursor.warm_up_lap(slots, &timer, 1e5);
        let trials = cursor.trials(&timer, 1e5, 3);
        assert_eq!(trials.len(), 3);
        assert!(trials.iter().all(|&t| t > 0.0 && t.is_finite()));
        let base = buffer.as_ptr() as usize;
        let at = cursor.position() as usize;
        assert!(at >= base && at < base + slots * 64 && (at - base).is_multiple_of(64));
    }

    #[test]
    fn a_counted_pass_counts_whole_iterations_and_continues_the_chain() {
        assert_eq!(counted_iterations(1e6, 1.0), 62_500);
        assert_eq!(counted_iterations(1e6, f64::NAN), 1);
        assert_eq!(counted_iterations(1.0, 100.0), 1);
        assert_eq!(counted_iterations(1e18, 1e-9), 1 << 30);

        let slots = 256;
        let mut buffer = vec![0u64; slots * 8];
        // SAFETY: 64-byte slots fit the buffer, which outlives the cursor.
        let mut cursor = unsafe {
            ChaseCursor::new(build_chase(
                buffer.as_mut_ptr() as *mut u8,
                slots,
                64,
                ChaseOrder::Random,
                5,
            ))
        };
        let before = cursor.position();
        let probe = crate::counters::Probe::detect();
        let counter = AccessCounter::open("AuthenticAMD", Some(0x19), &probe);
        // 960 ns at 1 ns per load: 60 iterations of 16 loads.
        let counts = cursor.counted(&counter, 960.0, 1.0);
        assert_eq!(counts.accesses, 60 * UNROLL as u64);
        assert_eq!(counts.levels.len(), 4);
        // 960 loads = 3 laps of 256 slots and 192 more: not back at the start.
        assert_ne!(cursor.position(), before);
        if !probe.has_hardware_pmu() {
            assert!(!counts.any_counted());
        }
    }
}
