//! Multiplexing correction. When more events are open than the PMU has counters, the
//! kernel rotates them and each event counts only part of the time it was enabled; the
//! estimate for the whole interval is `raw × time_enabled / time_running` (the same
//! extrapolation `perf stat` makes). It assumes the event rate was steady, so a scaled
//! value is flagged `multiplexed` and a report should say so.

/// A count corrected for multiplexing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum Scaled {
    /// The event never ran on a counter while enabled: there is no estimate at all.
    NotCounted,
    Counted {
        /// `raw × time_enabled / time_running`, rounded to the nearest integer.
        value: u64,
        /// True when the event ran for only part of the time it was enabled, so `value`
        /// is an extrapolation rather than a count.
        multiplexed: bool,
    },
}

impl Scaled {
    /// The (estimated) count, `None` when not counted.
    pub fn value(self) -> Option<u64> {
        match self {
            Scaled::NotCounted => None,
            Scaled::Counted { value, .. } => Some(value),
        }
    }
}

/// Scales a raw count by `time_enabled / time_running` (both in ns, as the kernel
/// reports them). Exact: the product is formed in 128 bits and rounded half up, and a
/// result beyond `u64::MAX` saturates. A running time above the enabled time (which the
/// kernel does not report) is taken as "ran all the time".
pub fn scale(raw: u64, time_enabled: u64, time_running: u64) -> Scaled {
    if time_running == 0 {
        return Scaled::NotCounted;
    }
    if time_running >= time_enabled {
        return Scaled::Counted {
            value: raw,
            multiplexed: false,
        };
    }
    let running = u128::from(time_running);
    let scaled = (u128::from(raw) * u128::from(time_enabled) + running / 2) / running;
    Scaled::Counted {
        value: u64::try_from(scaled).unwrap_or(u64::MAX),
        multiplexed: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(value: u64, multiplexed: bool) -> Scaled {
        Scaled::Counted { value, multiplexed }
    }

    #[test]
    fn full_time_is_the_raw_count() {
        assert_eq!(scale(1234, 1000, 1000), counted(1234, false));
        assert_eq!(scale(0, 1000, 1000), counted(0, false));
    }

    #[test]
    fn partial_time_extrapolates_exactly() {
        assert_eq!(scale(1000, 200, 100), counted(2000, true));
        assert_eq!(scale(300, 1000, 250), counted(1200, true));
        // 10 × 3 / 2 = 15; 10 × 7 / 3 = 23.33 → 23; 1 × 3 / 2 = 1.5 → 2 (half up).
        assert_eq!(scale(10, 3, 2), counted(15, true));
        assert_eq!(scale(10, 7, 3), counted(23, true));
        assert_eq!(scale(1, 3, 2), counted(2, true));
        assert_eq!(scale(0, 1000, 1), counted(0, true));
    }

    #[test]
    fn large_values_do_not_overflow() {
        let raw = u64::MAX / 4;
        assert_eq!(
            scale(raw, 4_000_000_000, 2_000_000_000),
            counted(raw * 2, true)
        );
        assert_eq!(scale(u64::MAX, 2, 1), counted(u64::MAX, true));
    }

    #[test]
    fn zero_running_is_not_counted() {
        assert_eq!(scale(0, 0, 0), Scaled::NotCounted);
        assert_eq!(scale(0, 5000, 0), Scaled::NotCounted);
        assert_eq!(scale(42, 5000, 0).value(), None);
    }

    #[test]
    fn running_above_enabled_is_not_multiplexed() {
        assert_eq!(scale(77, 100, 101), counted(77, false));
    }
}
