//! The co-runner in bursts, on the program's own CPU (see the co-runner's doc): every
//! `BURST_PERIOD` it wakes at real-time priority where it may, sweeps the pirate's set or
//! runs the compute chain for `BURST_BUSY`, and sleeps until the next period.

use std::sync::atomic::Ordering;

use super::{clock_ns, Shared, BURST_BUSY, BURST_PERIOD, COMPUTE_CHUNK, LINE};
use super::{BURSTS_REALTIME, BURSTS_SCHEDULED};

/// The calling thread's scheduling policy set to SCHED_FIFO (lowest real-time priority)
/// or back to SCHED_OTHER; whether the kernel took it.
fn set_realtime(on: bool) -> bool {
    let param = libc::sched_param {
        sched_priority: i32::from(on),
    };
    let policy = if on {
        libc::SCHED_FIFO
    } else {
        libc::SCHED_OTHER
    };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    unsafe { libc::sched_setscheduler(0, policy, &param) == 0 }
}

/// Sleeps until `deadline` ns on the CLOCK_MONOTONIC clock (absolute, so that the period
/// does not drift with the burst's length).
fn sleep_until(deadline_ns: u64) {
    let at = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `at` is a valid timespec; no remaining time is asked for with TIMER_ABSTIME.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &at,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {}
}

/// CLOCK_MONOTONIC now, ns (the clock `sleep_until` sleeps on).
fn monotonic_ns() -> u64 {
    clock_ns(Some(libc::CLOCK_MONOTONIC)).unwrap_or(0)
}

/// Runs in bursts until the generation changes (see the module's doc): each period,
/// `BURST_BUSY` of sweeps over `sweep` (address, bytes) or, without one, of the compute
/// chain; then asleep until the next period. Ready after the first burst.
pub(super) fn bursts(
    shared: &Shared,
    generation: u64,
    sweep: Option<(*const u8, usize)>,
    steps: &mut u64,
) {
    let realtime = set_realtime(true);
    let policy = if realtime {
        BURSTS_REALTIME
    } else {
        BURSTS_SCHEDULED
    };
    shared.bursts_policy.store(policy, Ordering::Relaxed);
    let period = BURST_PERIOD.as_nanos() as u64;
    let busy = BURST_BUSY.as_nanos() as u64;
    let mut next = monotonic_ns();
    let mut ready = false;
    let mut x = std::hint::black_box(0x9e37_79b9_7f4a_7c15u64);
    while !shared.changed(generation) {
        let until = monotonic_ns() + busy;
        match sweep {
            Some((base, bytes)) => loop {
                let mut sum = 0u64;
                for line in 0..bytes / LINE {
                    // SAFETY: line × 64 < bytes ≤ the pirate arena's length; the arena
                    // stays mapped while the worker runs and no other thread writes it.
                    sum ^= unsafe { std::ptr::read_volatile(base.add(line * LINE) as *const u64) };
                }
                std::hint::black_box(sum);
                *steps += (bytes / LINE) as u64;
                if monotonic_ns() >= until || shared.changed(generation) {
                    break;
                }
            },
            None => {
                while monotonic_ns() < until {
                    for _ in 0..COMPUTE_CHUNK {
                        x ^= x >> 29;
                        x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
                    }
                    x = std::hint::black_box(x);
                    *steps += COMPUTE_CHUNK;
                }
            }
        }
        shared.publish(*steps);
        if !ready {
            ready = true;
            shared.mark_ready(generation);
        }
        // The next period's start; one that has already passed (a burst longer than the
        // period, or the thread kept off its CPU) starts the schedule again from now.
        next += period;
        let now = monotonic_ns();
        if next <= now {
            next = now + period;
        }
        sleep_until(next);
    }
    if realtime {
        set_realtime(false);
    }
    if !ready {
        shared.mark_ready(generation);
    }
}
