//! Timing: the TSC on x86_64 (`lfence; rdtsc` … `rdtscp; lfence`), calibrated against
//! CLOCK_MONOTONIC, with `clock_gettime` as the portable fallback; and an estimate of the
//! *core* clock from a chain of dependent one-cycle adds.
//!
//! The TSC ticks at a fixed rate that is neither the current core clock (turbo, power
//! saving) nor, under a hypervisor, necessarily related to it; latencies are therefore
//! reported in nanoseconds (from the TSC) and in core cycles (ns × estimated core clock).

use std::time::{Duration, Instant};

/// A calibrated clock. Copy it into measuring threads; reading it does not allocate.
#[derive(Debug, Clone, Copy)]
pub struct Timer {
    source: Source,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Source {
    /// Invariant TSC with its measured rate in ticks per nanosecond.
    Tsc { ticks_per_ns: f64 },
    /// `Instant` (clock_gettime(CLOCK_MONOTONIC)), ticks are nanoseconds.
    Monotonic { epoch: Instant },
}

impl Timer {
    /// Calibrates the TSC when the CPU has an invariant one; otherwise falls back to the
    /// monotonic clock and says why.
    pub fn calibrate() -> (Timer, Option<String>) {
        match tsc::unusable_reason() {
            None => {
                let hz = tsc::calibrate_hz();
                (
                    Timer {
                        source: Source::Tsc {
                            ticks_per_ns: hz / 1e9,
                        },
                    },
                    None,
                )
            }
            Some(reason) => (Timer::monotonic(), Some(reason)),
        }
    }

    /// The portable clock, for tests and for machines without a usable TSC.
    pub fn monotonic() -> Timer {
        Timer {
            source: Source::Monotonic {
                epoch: Instant::now(),
            },
        }
    }

    /// Reads the clock before a timed region: earlier instructions complete first.
    #[inline(always)]
    pub fn start(&self) -> u64 {
        match self.source {
            Source::Tsc { .. } => tsc::read_start(),
            Source::Monotonic { epoch } => epoch.elapsed().as_nanos() as u64,
        }
    }

    /// Reads the clock after a timed region: waits for the region's instructions.
    #[inline(always)]
    pub fn stop(&self) -> u64 {
        match self.source {
            Source::Tsc { .. } => tsc::read_stop(),
            Source::Monotonic { epoch } => epoch.elapsed().as_nanos() as u64,
        }
    }

    pub fn ticks_to_ns(&self, ticks: u64) -> f64 {
        match self.source {
            Source::Tsc { ticks_per_ns } => ticks as f64 / ticks_per_ns,
            Source::Monotonic { .. } => ticks as f64,
        }
    }

    /// TSC rate in Hz, when the TSC is the clock.
    pub fn tsc_hz(&self) -> Option<f64> {
        match self.source {
            Source::Tsc { ticks_per_ns } => Some(ticks_per_ns * 1e9),
            Source::Monotonic { .. } => None,
        }
    }

    /// "tsc" or "clock_gettime(CLOCK_MONOTONIC)".
    pub fn name(&self) -> &'static str {
        match self.source {
            Source::Tsc { .. } => "tsc",
            Source::Monotonic { .. } => "clock_gettime(CLOCK_MONOTONIC)",
        }
    }

    /// The clock for intervals that start on one CPU and end on another (the union of a
    /// team's trial): the TSC only where the kernel keeps time with it (clocksource "tsc",
    /// which the kernel checks is synchronised across CPUs and drops when it is not), else
    /// CLOCK_MONOTONIC, which every CPU shares.
    pub fn across_cpus(&self) -> Timer {
        match self.source {
            Source::Tsc { .. } if kernel_clocksource().as_deref() == Some("tsc") => *self,
            Source::Tsc { .. } => Timer::monotonic(),
            Source::Monotonic { .. } => *self,
        }
    }

    /// What `across_cpus` chose and why, for the report's settings.
    pub fn across_cpus_description(&self) -> String {
        let clock = self.across_cpus();
        let source = kernel_clocksource().unwrap_or_else(|| "unknown".to_string());
        match (clock.source, self.source) {
            (Source::Tsc { .. }, _) => {
                "tsc (the kernel's clocksource, kept in step across CPUs)".to_string()
            }
            (Source::Monotonic { .. }, Source::Tsc { .. }) => format!(
                "clock_gettime(CLOCK_MONOTONIC) (the kernel's clocksource is {source}, so \
                 TSC readings of different CPUs are not known to agree)"
            ),
            (Source::Monotonic { .. }, Source::Monotonic { .. }) => {
                "clock_gettime(CLOCK_MONOTONIC)".to_string()
            }
        }
    }

    /// Estimates the core clock in Hz: times a long chain of dependent adds (one cycle each
    /// on every core memscope targets) and keeps the fastest of several trials, so a trial
    /// disturbed by an interrupt or a frequency ramp does not count. None where no add chain
    /// is implemented for the architecture.
    pub fn estimate_core_hz(&self) -> Option<f64> {
        // Ramp the core up first: a clock that sleeps between runs starts low.
        let warm_until = Instant::now() + Duration::from_millis(20);
        while Instant::now() < warm_until {
            add_chain::run(10_000)?;
        }
        let mut best: Option<f64> = None;
        for _ in 0..7 {
            let iterations = 20_000;
            let t0 = self.start();
            let adds = add_chain::run(iterations)?;
            let t1 = self.stop();
            let ns = self.ticks_to_ns(t1.saturating_sub(t0));
            if ns > 0.0 {
                let hz = adds as f64 / ns * 1e9;
                best = Some(best.map_or(hz, |b: f64| b.max(hz)));
            }
        }
        best
    }
}

/// The clocksource the kernel keeps time with ("tsc", "kvm-clock", "hpet" …).
pub fn kernel_clocksource() -> Option<String> {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

#[cfg(target_arch = "x86_64")]
mod tsc {
    use core::arch::x86_64::{__cpuid, __rdtscp, _mm_lfence, _rdtsc};
    use std::time::{Duration, Instant};

    /// None when the TSC is invariant (constant rate, keeps ticking in sleep states), else why not.
    pub fn unusable_reason() -> Option<String> {
        // SAFETY: cpuid is available on every x86_64 CPU (the intrinsic is safe on newer
        // compilers, hence the allow).
        #[allow(unused_unsafe)]
        let max_ext = unsafe { __cpuid(0x8000_0000) }.eax;
        if max_ext < 0x8000_0007 {
            return Some("CPUID does not report whether the TSC is invariant".into());
        }
        // SAFETY: leaf checked above.
        #[allow(unused_unsafe)]
        let edx = unsafe { __cpuid(0x8000_0007) }.edx;
        if edx & (1 << 8) == 0 {
            // Hypervisors often hide the bit while the kernel still trusts the TSC as its
            // clock source; trust the kernel's judgement then.
            if super::kernel_clocksource().as_deref() != Some("tsc") {
                return Some(
                    "the TSC is not invariant and the kernel does not use it as clock source"
                        .into(),
                );
            }
        }
        None
    }

    #[inline(always)]
    pub fn read_start() -> u64 {
        // SAFETY: lfence/rdtsc have no memory effects; lfence keeps rdtsc after earlier work.
        unsafe {
            _mm_lfence();
            let t = _rdtsc();
            _mm_lfence();
            t
        }
    }

    #[inline(always)]
    pub fn read_stop() -> u64 {
        let mut aux = 0u32;
        // SAFETY: rdtscp waits for earlier instructions; lfence keeps later ones after it.
        unsafe {
            let t = __rdtscp(&mut aux);
            _mm_lfence();
            t
        }
    }

    /// Ticks per second against CLOCK_MONOTONIC: the median of five 20 ms windows.
    pub fn calibrate_hz() -> f64 {
        let mut rates: Vec<f64> = (0..5)
            .map(|_| {
                let (i0, t0) = (Instant::now(), read_start());
                while i0.elapsed() < Duration::from_millis(20) {
                    std::hint::spin_loop();
                }
                let (t1, i1) = (read_stop(), Instant::now());
                (t1 - t0) as f64 / (i1 - i0).as_secs_f64()
            })
            .collect();
        rates.sort_by(f64::total_cmp);
        rates[rates.len() / 2]
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod tsc {
    pub fn unusable_reason() -> Option<String> {
        Some(format!("no TSC on {}", std::env::consts::ARCH))
    }
    pub fn read_start() -> u64 {
        unreachable!("the TSC source is only built on x86_64")
    }
    pub fn read_stop() -> u64 {
        unreachable!("the TSC source is only built on x86_64")
    }
    pub fn calibrate_hz() -> f64 {
        unreachable!("the TSC source is only built on x86_64")
    }
}

mod add_chain {
    /// Adds per loop iteration; the loop counter runs beside the chain, not in it.
    const ADDS_PER_ITERATION: u64 = 200;

    /// Runs `iterations` × 200 dependent register adds and returns how many adds ran.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub fn run(iterations: u64) -> Option<u64> {
        let mut acc: u64 = 0;
        let mut n = iterations;
        // The addend is a register: Golden Cove and later Intel cores execute adds of small
        // immediates at rename, several per cycle, which made a chain of `add acc, 1` read
        // 8–17 GHz on a Sapphire Rapids guest.
        let one: u64 = std::hint::black_box(1);
        // SAFETY: register-only arithmetic.
        unsafe {
            #[cfg(target_arch = "x86_64")]
            core::arch::asm!(
                "2:",
                ".rept 200",
                "add {acc}, {one}",
                ".endr",
                "dec {n}",
                "jnz 2b",
                acc = inout(reg) acc,
                n = inout(reg) n,
                one = in(reg) one,
                options(nomem, nostack),
            );
            #[cfg(target_arch = "aarch64")]
            core::arch::asm!(
                "2:",
                ".rept 200",
                "add {acc}, {acc}, {one}",
                ".endr",
                "subs {n}, {n}, #1",
                "b.ne 2b",
                acc = inout(reg) acc,
                n = inout(reg) n,
                one = in(reg) one,
                options(nomem, nostack),
            );
        }
        std::hint::black_box((acc, n));
        Some(iterations * ADDS_PER_ITERATION)
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    pub fn run(_iterations: u64) -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_measures_a_sleep_roughly() {
        let (timer, _) = Timer::calibrate();
        let t0 = timer.start();
        std::thread::sleep(Duration::from_millis(20));
        let ns = timer.ticks_to_ns(timer.stop() - t0);
        // Sleeps only overshoot; allow a very loaded machine plenty of slack.
        assert!(ns >= 19e6, "{ns} ns");
        assert!(ns < 2e9, "{ns} ns");
    }

    #[test]
    fn the_cross_cpu_clock_is_the_tsc_only_with_the_kernels_blessing() {
        let (timer, _) = Timer::calibrate();
        let across = timer.across_cpus();
        if across.name() == "tsc" {
            assert_eq!(kernel_clocksource().as_deref(), Some("tsc"));
        }
        assert_eq!(
            Timer::monotonic().across_cpus().name(),
            Timer::monotonic().name()
        );
        assert!(timer.across_cpus_description().starts_with(across.name()));
    }

    #[test]
    fn core_clock_estimate_is_plausible() {
        let (timer, _) = Timer::calibrate();
        if let Some(hz) = timer.estimate_core_hz() {
            // From embedded cores to the fastest desktop parts (a trial can only be slowed).
            assert!(hz > 2e8 && hz < 1e10, "{hz} Hz");
        }
    }
}
