//! The loaded-latency injector: streams a traffic mix through a buffer one step at a time
//! with a delay loop between steps, so the memory traffic it makes can be dialled from
//! full bandwidth (delay 0) down to almost nothing. One step is one line for `read` and
//! `write-nt`, two lines for `1:1` (read one, write another) and three for `2:1` (read
//! two, write one); the delay is a chain of dependent decrements, about one core cycle
//! each.
//!
//! An injector runs until its controller asks it to stop, publishing how many steps it
//! has completed so the controller can compute its bandwidth over any interval without
//! reading another CPU's clock.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// Bytes per line moved by one access of a step.
pub const LINE: usize = 64;

/// The injectors' traffic mix, written in reports by its name (see `name`): a report with
/// any other name is refused when read, naming the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mix {
    /// Reads only.
    #[serde(rename = "read")]
    Read,
    /// Two lines read for every line written (plain stores).
    #[serde(rename = "2:1")]
    TwoToOne,
    /// One line read for every line written (plain stores).
    #[serde(rename = "1:1")]
    OneToOne,
    /// Non-temporal (streaming) stores only.
    #[serde(rename = "write-nt")]
    WriteNt,
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Mix {
    pub const ALL: [Mix; 4] = [Mix::Read, Mix::TwoToOne, Mix::OneToOne, Mix::WriteNt];
    pub const NAMES: &'static str = "read, 2:1, 1:1, write-nt";

    pub fn name(self) -> &'static str {
        match self {
            Mix::Read => "read",
            Mix::TwoToOne => "2:1",
            Mix::OneToOne => "1:1",
            Mix::WriteNt => "write-nt",
        }
    }

    pub fn parse(text: &str) -> Option<Mix> {
        Mix::ALL.into_iter().find(|m| m.name() == text.trim())
    }

    /// Lines read and lines written per step.
    pub fn lines(self) -> (usize, usize) {
        match self {
            Mix::Read => (1, 0),
            Mix::TwoToOne => (2, 1),
            Mix::OneToOne => (1, 1),
            Mix::WriteNt => (0, 1),
        }
    }

    /// Bytes one step reads plus writes (store misses' read-for-ownership not counted,
    /// as in every bandwidth figure memscope reports).
    pub(crate) fn bytes_per_step(self) -> u64 {
        let (read, written) = self.lines();
        ((read + written) * LINE) as u64
    }

    /// Distinct lines of the buffer one step touches.
    fn step_span(self) -> usize {
        let (read, written) = self.lines();
        (read + written) * LINE
    }
}

/// Steps between two looks at the controller's `keep_going` and two updates of the step
/// counter: few enough to stop within microseconds even with the longest delays.
const CHECK_EVERY: u64 = 8;

/// Runs `mix` over `bytes` bytes at `base` with `delay` delay-loop iterations after each
/// step, until `keep_going()` returns false; adds completed steps to `steps` as it goes.
/// Returns a value derived from every line read, so no read can be optimised away.
///
/// # Safety
/// `base` must be valid for reads and writes of `bytes` bytes and 64-byte aligned.
pub unsafe fn inject(
    base: *mut u8,
    bytes: usize,
    mix: Mix,
    delay: u64,
    steps: &AtomicU64,
    keep_going: &dyn Fn() -> bool,
) -> u64 {
    let span = mix.step_span();
    let per_pass = (bytes / span).max(1);
    assert!(
        per_pass * span <= bytes,
        "the buffer holds at least one step"
    );
    let mut sink = 0u64;
    let mut index = 0usize;
    let mut done = 0u64;
    loop {
        for _ in 0..CHECK_EVERY {
            let line = base.add(index * span);
            sink ^= step(line, mix);
            delay_loop(delay);
            index += 1;
            if index == per_pass {
                index = 0;
            }
        }
        done += CHECK_EVERY;
        steps.store(done, Ordering::Relaxed);
        if !keep_going() {
            break;
        }
    }
    finish_stores(mix);
    sink
}

/// One step of the mix at `at` (the step's first line).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn step(at: *mut u8, mix: Mix) -> u64 {
    use core::arch::x86_64::*;
    let read_line = |p: *const u8| -> __m128i {
        let v = p as *const __m128i;
        let a = _mm_xor_si128(_mm_load_si128(v), _mm_load_si128(v.add(1)));
        let b = _mm_xor_si128(_mm_load_si128(v.add(2)), _mm_load_si128(v.add(3)));
        _mm_xor_si128(a, b)
    };
    let pattern = _mm_set1_epi64x(0x5a5a_5a5a_5a5a_5a5a);
    let write_line = |p: *mut u8| {
        let v = p as *mut __m128i;
        for i in 0..4 {
            _mm_store_si128(v.add(i), pattern);
        }
    };
    let value = match mix {
        Mix::Read => read_line(at),
        Mix::TwoToOne => {
            let v = _mm_xor_si128(read_line(at), read_line(at.add(LINE)));
            write_line(at.add(2 * LINE));
            v
        }
        Mix::OneToOne => {
            let v = read_line(at);
            write_line(at.add(LINE));
            v
        }
        Mix::WriteNt => {
            let v = at as *mut __m128i;
            for i in 0..4 {
                _mm_stream_si128(v.add(i), pattern);
            }
            pattern
        }
    };
    _mm_cvtsi128_si64(value) as u64
}

/// One step of the mix at `at` (the step's first line), with NEON: Q-register loads and
/// stores, and `STNP` (the non-temporal store pair) for `write-nt`.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
unsafe fn step(at: *mut u8, mix: Mix) -> u64 {
    use core::arch::aarch64::*;
    let read_line = |p: *const u8| -> uint64x2_t {
        let v = p as *const u64;
        let a = veorq_u64(vld1q_u64(v), vld1q_u64(v.add(2)));
        let b = veorq_u64(vld1q_u64(v.add(4)), vld1q_u64(v.add(6)));
        veorq_u64(a, b)
    };
    let pattern = vdupq_n_u64(0x5a5a_5a5a_5a5a_5a5a);
    let write_line = |p: *mut u8| {
        let v = p as *mut u64;
        for i in 0..4 {
            vst1q_u64(v.add(2 * i), pattern);
        }
    };
    let value = match mix {
        Mix::Read => read_line(at),
        Mix::TwoToOne => {
            let v = veorq_u64(read_line(at), read_line(at.add(LINE)));
            write_line(at.add(2 * LINE));
            v
        }
        Mix::OneToOne => {
            let v = read_line(at);
            write_line(at.add(LINE));
            v
        }
        Mix::WriteNt => {
            // SAFETY: the line at `at` is inside the buffer (the caller's contract).
            core::arch::asm!(
                "stnp {v:q}, {v:q}, [{p}]",
                "stnp {v:q}, {v:q}, [{p}, #32]",
                p = in(reg) at,
                v = in(vreg) pattern,
                options(nostack, preserves_flags),
            );
            pattern
        }
    };
    vgetq_lane_u64::<0>(value)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
unsafe fn step(at: *mut u8, mix: Mix) -> u64 {
    let words = LINE / 8;
    let read_line = |p: *const u8| -> u64 {
        let p = p as *const u64;
        (0..words).fold(0, |acc, i| acc ^ std::ptr::read_volatile(p.add(i)))
    };
    let write_line = |p: *mut u8| {
        let p = p as *mut u64;
        for i in 0..words {
            std::ptr::write_volatile(p.add(i), 0x5a5a_5a5a_5a5a_5a5a);
        }
    };
    match mix {
        Mix::Read => read_line(at),
        Mix::TwoToOne => {
            let v = read_line(at) ^ read_line(at.add(LINE));
            write_line(at.add(2 * LINE));
            v
        }
        Mix::OneToOne => {
            let v = read_line(at);
            write_line(at.add(LINE));
            v
        }
        // No portable streaming store: plain stores stand in.
        Mix::WriteNt => {
            write_line(at);
            0
        }
    }
}

/// Streaming stores are weakly ordered: fence them before reporting the work done.
fn finish_stores(mix: Mix) {
    #[cfg(target_arch = "x86_64")]
    if mix == Mix::WriteNt {
        // SAFETY: sfence has no operands and is available on every x86_64 CPU.
        unsafe { core::arch::x86_64::_mm_sfence() };
    }
    #[cfg(target_arch = "aarch64")]
    if mix == Mix::WriteNt {
        // SAFETY: a barrier has no operands. STNP stores may be reordered with later
        // accesses: order them before the work is reported done, as sfence does on x86.
        unsafe { core::arch::asm!("dmb ishst", options(nostack, preserves_flags)) };
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = mix;
}

/// About `iterations` core cycles of dependent decrements (none when 0).
#[inline(always)]
fn delay_loop(iterations: u64) {
    if iterations == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: touches only its own register.
    unsafe {
        core::arch::asm!(
            "2:",
            "dec {n}",
            "jnz 2b",
            n = inout(reg) iterations => _,
            options(nomem, nostack),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut n = iterations;
        while std::hint::black_box(n) > 0 {
            n -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[repr(align(64))]
    struct Lines([u8; 64 * 48]);

    #[test]
    fn every_mix_counts_steps_and_writes_what_it_should() {
        for mix in Mix::ALL {
            let mut buffer = Lines([0; 64 * 48]);
            let steps = AtomicU64::new(0);
            let calls = AtomicUsize::new(0);
            // Three checks: 3 × CHECK_EVERY steps.
            let keep_going = || calls.fetch_add(1, Ordering::Relaxed) < 2;
            // SAFETY: the buffer is 64-byte aligned and 3 KiB long.
            unsafe {
                inject(
                    buffer.0.as_mut_ptr(),
                    buffer.0.len(),
                    mix,
                    3,
                    &steps,
                    &keep_going,
                )
            };
            assert_eq!(
                steps.load(Ordering::Relaxed),
                3 * CHECK_EVERY,
                "{}",
                mix.name()
            );
            let written = buffer.0.iter().filter(|&&b| b == 0x5a).count();
            let (_, writes) = mix.lines();
            // 24 steps wrap over the buffer's steps; every written line is fully written.
            assert_eq!(written > 0, writes > 0, "{}", mix.name());
            assert_eq!(written % LINE, 0, "{}", mix.name());
        }
    }

    #[test]
    fn mixes_parse_by_name_and_count_their_bytes() {
        for mix in Mix::ALL {
            assert_eq!(Mix::parse(mix.name()), Some(mix));
        }
        assert_eq!(Mix::parse("3:1"), None);
        assert_eq!(Mix::TwoToOne.bytes_per_step(), 192);
        assert_eq!(Mix::WriteNt.bytes_per_step(), 64);
    }
}
