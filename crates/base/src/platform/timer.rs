//! Timing: the CPU's fixed-rate counter, calibrated against CLOCK_MONOTONIC, with
//! `clock_gettime` as the portable fallback; and an estimate of the *core* clock from a
//! chain of dependent one-cycle adds. The counter is the TSC on x86_64 (`lfence; rdtsc;
//! lfence` … `rdtscp; lfence`) and the generic timer's virtual count CNTVCT_EL0 on aarch64
//! (`isb; mrs cntvct_el0; isb` at both ends, its nominal rate in CNTFRQ_EL0).
//!
//! Both counters tick at a fixed rate that is neither the current core clock (turbo, power
//! saving) nor, under a hypervisor, necessarily related to it; latencies are therefore
//! reported in nanoseconds (from the counter) and in core cycles (ns × estimated core
//! clock). The generic timer ticks far slower than a TSC (25 MHz to 1 GHz against a few
//! GHz), so one reading resolves 1 to 40 ns; every timed trial spans many thousands of
//! ticks, as it must for `clock_gettime` too (which reads the same counter on arm64).

use std::time::{Duration, Instant};

/// A calibrated clock. Copy it into measuring threads; reading it does not allocate.
#[derive(Debug, Clone, Copy)]
pub struct Timer {
    source: Source,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Source {
    /// The CPU's fixed-rate counter with its measured rate in ticks per nanosecond.
    Counter { kind: Counter, ticks_per_ns: f64 },
    /// `Instant` (clock_gettime(CLOCK_MONOTONIC)), ticks are nanoseconds.
    Monotonic { epoch: Instant },
}

/// Which fixed-rate counter: one per architecture, so a build only ever makes its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// x86's invariant time-stamp counter.
    Tsc,
    /// aarch64's generic timer (CNTVCT_EL0), with the rate CNTFRQ_EL0 states (0 when the
    /// firmware left it unset).
    Cntvct { nominal_hz: u64 },
}

impl Counter {
    /// The name the kernel gives this counter as its clocksource.
    fn kernel_clocksource(self) -> &'static str {
        match self {
            Counter::Tsc => "tsc",
            Counter::Cntvct { .. } => "arch_sys_counter",
        }
    }

    /// The counter's short name in sentences: "TSC", "CNTVCT".
    pub(crate) fn short_name(self) -> &'static str {
        match self {
            Counter::Tsc => "TSC",
            Counter::Cntvct { .. } => "CNTVCT",
        }
    }

    /// The name in settings and output: "tsc" (as reports have always said), or
    /// "cntvct (generic timer, 25 MHz)" with the nominal rate, and the measured one when
    /// the two differ by more than 1 %.
    fn name(self, measured_hz: f64) -> String {
        match self {
            Counter::Tsc => "tsc".to_string(),
            Counter::Cntvct { nominal_hz } => {
                let mhz = |hz: f64| (hz / 1e4).round() / 100.0;
                if nominal_hz == 0 {
                    format!(
                        "cntvct (generic timer, CNTFRQ_EL0 unset, measured {} MHz)",
                        mhz(measured_hz)
                    )
                } else if (measured_hz / nominal_hz as f64 - 1.0).abs() > 0.01 {
                    format!(
                        "cntvct (generic timer, {} MHz, measured {} MHz)",
                        mhz(nominal_hz as f64),
                        mhz(measured_hz)
                    )
                } else {
                    format!("cntvct (generic timer, {} MHz)", mhz(nominal_hz as f64))
                }
            }
        }
    }
}

impl Timer {
    /// Calibrates the fixed-rate counter when the CPU has a usable one; otherwise falls
    /// back to the monotonic clock and says why.
    pub fn calibrate() -> (Timer, Option<String>) {
        match counter::unusable_reason() {
            None => {
                let hz = counter::calibrate_hz();
                if !(hz.is_finite() && hz > 0.0) {
                    let reason = format!(
                        "the {} did not advance while calibrating",
                        counter::kind().short_name()
                    );
                    return (Timer::monotonic(), Some(reason));
                }
                (
                    Timer {
                        source: Source::Counter {
                            kind: counter::kind(),
                            ticks_per_ns: hz / 1e9,
                        },
                    },
                    None,
                )
            }
            Some(reason) => (Timer::monotonic(), Some(reason)),
        }
    }

    /// The portable clock, for tests and for machines without a usable counter.
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
            Source::Counter { .. } => counter::read_start(),
            Source::Monotonic { epoch } => epoch.elapsed().as_nanos() as u64,
        }
    }

    /// Reads the clock after a timed region: waits for the region's instructions.
    #[inline(always)]
    pub fn stop(&self) -> u64 {
        match self.source {
            Source::Counter { .. } => counter::read_stop(),
            Source::Monotonic { epoch } => epoch.elapsed().as_nanos() as u64,
        }
    }

    pub fn ticks_to_ns(&self, ticks: u64) -> f64 {
        match self.source {
            Source::Counter { ticks_per_ns, .. } => ticks as f64 / ticks_per_ns,
            Source::Monotonic { .. } => ticks as f64,
        }
    }

    /// The fixed-rate counter's measured rate in Hz (the TSC's, or CNTVCT's on aarch64),
    /// when a counter is the clock.
    pub fn tsc_hz(&self) -> Option<f64> {
        match self.source {
            Source::Counter { ticks_per_ns, .. } => Some(ticks_per_ns * 1e9),
            Source::Monotonic { .. } => None,
        }
    }

    /// The counter this clock reads, when it is one.
    pub fn counter(&self) -> Option<Counter> {
        match self.source {
            Source::Counter { kind, .. } => Some(kind),
            Source::Monotonic { .. } => None,
        }
    }

    /// "tsc", "cntvct (generic timer, 25 MHz)" or "clock_gettime(CLOCK_MONOTONIC)".
    pub fn name(&self) -> String {
        match self.source {
            Source::Counter { kind, ticks_per_ns } => kind.name(ticks_per_ns * 1e9),
            Source::Monotonic { .. } => "clock_gettime(CLOCK_MONOTONIC)".to_string(),
        }
    }

    /// The clock for intervals that start on one CPU and end on another (the union of a
    /// team's trial): the counter only where the kernel keeps time with it (clocksource
    /// "tsc", which the kernel checks is synchronised across CPUs and drops when it is
    /// not; "arch_sys_counter", one system counter every CPU reads), else
    /// CLOCK_MONOTONIC, which every CPU shares.
    pub(crate) fn across_cpus(&self) -> Timer {
        match self.source {
            Source::Counter { kind, .. }
                if kernel_clocksource().as_deref() == Some(kind.kernel_clocksource()) =>
            {
                *self
            }
            Source::Counter { .. } => Timer::monotonic(),
            Source::Monotonic { .. } => *self,
        }
    }

    /// What `across_cpus` chose and why, for the report's settings.
    pub fn across_cpus_description(&self) -> String {
        let clock = self.across_cpus();
        let source = kernel_clocksource().unwrap_or_else(|| "unknown".to_string());
        match (clock.source, self.source) {
            (Source::Counter { .. }, _) => format!(
                "{} (the kernel's clocksource, kept in step across CPUs)",
                clock.name()
            ),
            (Source::Monotonic { .. }, Source::Counter { kind, .. }) => format!(
                "clock_gettime(CLOCK_MONOTONIC) (the kernel's clocksource is {source}, so \
                 {} readings of different CPUs are not known to agree)",
                kind.short_name()
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
pub(crate) fn kernel_clocksource() -> Option<String> {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Which module reads this architecture's counter.
#[cfg(target_arch = "x86_64")]
use tsc as counter;

#[cfg(target_arch = "aarch64")]
use cntvct as counter;

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
use no_counter as counter;

/// A counter's ticks per second against CLOCK_MONOTONIC: the median of five 20 ms windows.
fn calibrate_hz(read_start: fn() -> u64, read_stop: fn() -> u64) -> f64 {
    let mut rates: Vec<f64> = (0..5)
        .map(|_| {
            let (i0, t0) = (Instant::now(), read_start());
            while i0.elapsed() < Duration::from_millis(20) {
                std::hint::spin_loop();
            }
            let (t1, i1) = (read_stop(), Instant::now());
            t1.saturating_sub(t0) as f64 / (i1 - i0).as_secs_f64()
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

#[cfg(target_arch = "x86_64")]
mod tsc {
    use core::arch::x86_64::{__cpuid, __rdtscp, _mm_lfence, _rdtsc};

    pub fn kind() -> super::Counter {
        super::Counter::Tsc
    }

    /// None when the TSC is invariant (constant rate, keeps ticking in sleep states), else why not.
    pub(crate) fn unusable_reason() -> Option<String> {
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
    pub(crate) fn read_start() -> u64 {
        // SAFETY: lfence/rdtsc have no memory effects; lfence keeps rdtsc after earlier work.
        unsafe {
            _mm_lfence();
            let t = _rdtsc();
            _mm_lfence();
            t
        }
    }

    #[inline(always)]
    pub(crate) fn read_stop() -> u64 {
        let mut aux = 0u32;
        // SAFETY: rdtscp waits for earlier instructions; lfence keeps later ones after it.
        unsafe {
            let t = __rdtscp(&mut aux);
            _mm_lfence();
            t
        }
    }

    /// Ticks per second against CLOCK_MONOTONIC.
    pub(crate) fn calibrate_hz() -> f64 {
        super::calibrate_hz(read_start, read_stop)
    }
}

#[cfg(target_arch = "aarch64")]
mod cntvct {
    use core::arch::asm;

    pub fn kind() -> super::Counter {
        super::Counter::Cntvct {
            nominal_hz: frequency(),
        }
    }

    /// CNTFRQ_EL0: the counter's rate as the firmware programmed it (0 when it did not).
    fn frequency() -> u64 {
        let hz: u64;
        // SAFETY: reads a system register Linux makes readable at EL0; no memory effects.
        unsafe {
            asm!("mrs {hz}, cntfrq_el0", hz = out(reg) hz, options(nomem, nostack, preserves_flags))
        };
        hz
    }

    /// None: the generic timer is architectural (Armv8-A), runs at a fixed rate and Linux
    /// lets EL0 read its virtual count (CNTKCTL_EL1.EL0VCTEN; the vDSO's clock_gettime
    /// reads it too).
    pub(crate) fn unusable_reason() -> Option<String> {
        None
    }

    #[inline(always)]
    pub(crate) fn read_start() -> u64 {
        let t: u64;
        // SAFETY: `isb` and reading CNTVCT_EL0 have no memory effects. The first `isb`
        // makes earlier instructions complete before the read (which may otherwise happen
        // speculatively, early), the second keeps the timed region from starting before
        // it, as `lfence; rdtsc; lfence` does on x86. Not `nomem`: the asm also keeps the
        // compiler from moving the region's loads and stores across it.
        unsafe {
            asm!("isb", "mrs {t}, cntvct_el0", "isb", t = out(reg) t, options(nostack, preserves_flags))
        };
        t
    }

    #[inline(always)]
    pub(crate) fn read_stop() -> u64 {
        let t: u64;
        // SAFETY: as in `read_start`: the region's instructions complete before the read
        // (`rdtscp` on x86), later ones start after it (the `lfence` after `rdtscp`).
        unsafe {
            asm!("isb", "mrs {t}, cntvct_el0", "isb", t = out(reg) t, options(nostack, preserves_flags))
        };
        t
    }

    /// Ticks per second against CLOCK_MONOTONIC (which Linux keeps with this counter, so
    /// it agrees with CNTFRQ_EL0 unless firmware stated a wrong rate and the device tree
    /// corrected it).
    pub(crate) fn calibrate_hz() -> f64 {
        super::calibrate_hz(read_start, read_stop)
    }
}

/// Architectures without a counter memscope reads: CLOCK_MONOTONIC is the clock.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod no_counter {
    pub fn kind() -> super::Counter {
        super::Counter::Tsc
    }
    pub(crate) fn unusable_reason() -> Option<String> {
        Some(format!(
            "memscope reads no fixed-rate counter on {}",
            std::env::consts::ARCH
        ))
    }
    pub(crate) fn read_start() -> u64 {
        0
    }
    pub(crate) fn read_stop() -> u64 {
        0
    }
    pub(crate) fn calibrate_hz() -> f64 {
        0.0
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
        if let Some(counter) = across.counter() {
            assert_eq!(
                kernel_clocksource().as_deref(),
                Some(counter.kernel_clocksource())
            );
        }
        assert_eq!(
            Timer::monotonic().across_cpus().name(),
            Timer::monotonic().name()
        );
        assert!(timer.across_cpus_description().starts_with(&across.name()));
    }

    #[test]
    fn core_clock_estimate_is_plausible() {
        let (timer, _) = Timer::calibrate();
        if let Some(hz) = timer.estimate_core_hz() {
            // From embedded cores to the fastest desktop parts (a trial can only be slowed).
            assert!(hz > 2e8 && hz < 1e10, "{hz} Hz");
        }
    }

    #[test]
    fn counter_names_say_which_counter_and_its_rate() {
        let cntvct = |nominal_hz| Counter::Cntvct { nominal_hz };
        assert_eq!(Counter::Tsc.name(2.6e9), "tsc");
        assert_eq!(
            cntvct(25_000_000).name(25.01e6),
            "cntvct (generic timer, 25 MHz)"
        );
        assert_eq!(
            cntvct(1_000_000_000).name(0.999e9),
            "cntvct (generic timer, 1000 MHz)"
        );
        // A firmware that states the wrong rate is shown with what was measured.
        assert_eq!(
            cntvct(100_000_000).name(62.5e6),
            "cntvct (generic timer, 100 MHz, measured 62.5 MHz)"
        );
        assert_eq!(
            cntvct(0).name(121.875e6),
            "cntvct (generic timer, CNTFRQ_EL0 unset, measured 121.88 MHz)"
        );
        assert_eq!(Counter::Tsc.kernel_clocksource(), "tsc");
        assert_eq!(cntvct(1).kernel_clocksource(), "arch_sys_counter");
        assert_eq!(cntvct(1).short_name(), "CNTVCT");
    }

    #[test]
    fn the_counter_of_this_architecture_is_the_clock_and_never_runs_backwards() {
        let (timer, problem) = Timer::calibrate();
        let name = timer.name();
        if cfg!(target_arch = "aarch64") {
            // The generic timer is architectural: every aarch64 Linux has it.
            assert!(problem.is_none(), "{problem:?}");
            assert!(name.starts_with("cntvct (generic timer, "), "{name}");
            assert!(matches!(timer.counter(), Some(Counter::Cntvct { .. })));
        } else if cfg!(target_arch = "x86_64") {
            assert!(name == "tsc" || problem.is_some(), "{name} {problem:?}");
        }
        if let Some(hz) = timer.tsc_hz() {
            assert!(hz.is_finite() && hz > 0.0, "{hz}");
        }
        let mut last = timer.start();
        for _ in 0..1000 {
            let now = timer.stop();
            assert!(now >= last, "{now} after {last}");
            last = timer.start();
            assert!(last >= now, "{last} after {now}");
        }
    }
}
