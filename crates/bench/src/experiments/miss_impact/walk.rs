//! Miss impact's walks: how each pattern walks a footprint (sequential, a chase, independent
//! loads), timed in trials and counted (misses, page faults, task clock), and the row one
//! footprint × pattern gives.

use super::*;

/// How one pattern walks a footprint of `lines` lines from the arena's start, continuing
/// where it stopped on the next call.
pub(super) enum Walk<'a> {
    Sequential {
        base: *mut u8,
        lines: usize,
        line: usize,
        isa: Isa,
        at: usize,
    },
    Chase {
        cursor: ChaseCursor,
        lines: usize,
    },
    Independent {
        base: *const u64,
        /// Element index of each access's line, in the chase's order.
        index: &'a [u32],
        at: usize,
    },
}

impl Walk<'_> {
    fn lines(&self) -> usize {
        match self {
            Walk::Sequential { lines, .. } | Walk::Chase { lines, .. } => *lines,
            Walk::Independent { index, .. } => index.len(),
        }
    }

    /// Accesses per call come in multiples of this.
    fn granule(&self) -> usize {
        match self {
            Walk::Sequential { line, .. } => (GRANULE / line).max(1),
            Walk::Chase { .. } => UNROLL,
            Walk::Independent { .. } => 1,
        }
    }

    /// Makes `accesses` accesses (a multiple of `granule`), untimed; not for the chase,
    /// which `ChaseCursor` drives.
    fn run(&mut self, accesses: usize) {
        let sum = match self {
            Walk::Sequential {
                base,
                lines,
                line,
                isa,
                at,
            } => {
                let read = stream::find("read").expect("the read kernel");
                around(at, *lines, accesses, |first, count, passes| {
                    // SAFETY: the footprint lies in the arena (checked by `measure`), which
                    // is page aligned; every range is whole granules (footprints are whole
                    // pages, `accesses` and `at` whole granules); `isa` is available.
                    unsafe {
                        let start = base.add(first * *line);
                        stream::run(read, *isa, &[start], count * *line, passes)
                    }
                })
            }
            Walk::Independent { base, index, at } => {
                around(at, index.len(), accesses, |first, count, passes| {
                    // SAFETY: every index addresses an element of the footprint.
                    unsafe { indexed_sum(*base, index.as_ptr().add(first), count, passes) }
                })
            }
            Walk::Chase { .. } => unreachable!("the chase runs through its cursor"),
        };
        std::hint::black_box(sum);
    }

    /// Brings the footprint into whatever level holds it: one lap, stopped after
    /// WARM_UP_TRIALS trials (a lap through DRAM warms nothing).
    fn warm_up(&mut self, timer: &Timer, trial_ns: f64) {
        if let Walk::Chase { cursor, lines } = self {
            cursor.warm_up_lap(*lines, timer, trial_ns);
            return;
        }
        let chunk = 64 * self.granule();
        let mut left = self.lines();
        let start = timer.start();
        while left > 0 {
            let n = left.min(chunk);
            self.run(n);
            left -= n;
            if timer.ticks_to_ns(timer.stop().saturating_sub(start)) > WARM_UP_TRIALS * trial_ns {
                break;
            }
        }
    }

    /// `accesses` accesses, timed: total ns.
    fn timed(&mut self, timer: &Timer, accesses: usize) -> f64 {
        if let Walk::Chase { cursor, .. } = self {
            return cursor.trial(timer, accesses / UNROLL) * accesses as f64;
        }
        let t0 = timer.start();
        self.run(accesses);
        let t1 = timer.stop();
        timer.ticks_to_ns(t1.saturating_sub(t0))
    }

    /// `repetitions` trials of about `trial_ns`, in ns per access: the chase through its
    /// cursor, the others sized the same way (runs of doubling length until one lasts a
    /// quarter of a trial).
    fn trials(&mut self, timer: &Timer, trial_ns: f64, repetitions: usize) -> Vec<f64> {
        if let Walk::Chase { cursor, .. } = self {
            return cursor.trials(timer, trial_ns, repetitions);
        }
        let granule = self.granule();
        let mut accesses = 16 * granule;
        let ns_per_access = loop {
            let ns = self.timed(timer, accesses);
            if ns >= trial_ns / 4.0 || accesses >= 1 << 34 {
                break ns.max(1.0) / accesses as f64;
            }
            accesses *= 2;
        };
        let accesses = ((trial_ns / ns_per_access) as usize / granule).max(1) * granule;
        (0..repetitions)
            .map(|_| self.timed(timer, accesses) / accesses as f64)
            .collect()
    }
}

/// Makes `accesses` accesses around a cycle of `lines` lines, starting at `*at` and leaving
/// it where the next call goes on: whole passes while at the start and one fits, else the
/// rest of the cycle or less. `stretch(first, count, passes)` makes `passes` passes over
/// lines `first..first + count` and returns their sum; the sum of all is returned.
pub(super) fn around(
    at: &mut usize,
    lines: usize,
    accesses: usize,
    mut stretch: impl FnMut(usize, usize, usize) -> u64,
) -> u64 {
    let mut left = accesses;
    let mut sum = 0u64;
    while left > 0 {
        sum = sum.wrapping_add(if *at == 0 && left >= lines {
            let passes = left / lines;
            left -= passes * lines;
            stretch(0, lines, passes)
        } else {
            let take = left.min(lines - *at);
            let first = *at;
            *at = (*at + take) % lines;
            left -= take;
            stretch(first, take, 1)
        });
    }
    sum
}

/// Page faults and task clock of one counted pass (None: the event did not count).
pub(super) struct SoftwareCounts {
    page_faults: Option<u64>,
    task_clock_ns: Option<u64>,
}

/// Page faults and task clock of the measuring thread.
pub(super) struct Software {
    group: CounterGroup,
}

impl Software {
    pub(super) fn open(probe: &Probe) -> Software {
        let events = ["page-faults", "task-clock"]
            .map(|name| Event::parse(name).expect("built-in event names parse"));
        Software {
            group: CounterGroup::open(&events, Target::CallingThread, probe),
        }
    }

    /// Runs `work` with the events counting; returns its result, the page faults and the
    /// task clock, or why they were not counted.
    fn count<R>(&self, work: impl FnOnce() -> R) -> (R, Result<SoftwareCounts, String>) {
        let enabled =
            self.group.counting() > 0 && self.group.reset().is_ok() && self.group.enable().is_ok();
        let result = work();
        if !enabled {
            let why = self
                .group
                .failures()
                .next()
                .map(|(_, u)| format!("not supported: {}", u.reason))
                .unwrap_or_else(|| "not supported: the counters could not be enabled".into());
            return (result, Err(why));
        }
        let _ = self.group.disable();
        let readings = match self.group.read() {
            Ok(r) => r,
            Err(e) => return (result, Err(format!("not supported: reading failed: {e}"))),
        };
        let value = |name: &str| {
            readings
                .iter()
                .find(|r| r.event.name == name)
                .and_then(|r| r.result.as_ref().ok())
                .and_then(|c| match c.scaled {
                    Scaled::Counted { value, .. } => Some(value),
                    Scaled::NotCounted => None,
                })
        };
        let counts = SoftwareCounts {
            page_faults: value("page-faults"),
            task_clock_ns: value("task-clock"),
        };
        (result, Ok(counts))
    }
}

/// One footprint × pattern: the walk's time per access in trials, then its misses counted
/// over enough laps, and its AMAT from the ladder's latencies.
pub(super) fn measure_walk(
    mut walk: Walk,
    (level, footprint_bytes, pattern): (Level, u64, Pattern),
    lines: usize,
    (config, timer): (&MissImpactConfig, &Timer),
    (counter, software, level_latencies): (&AccessCounter, &Software, &[LevelLatency]),
) -> MissImpactRow {
    walk.warm_up(timer, config.trial_ns);
    let trials = walk.trials(timer, config.trial_ns, config.repetitions.max(1));
    let summary = Summary::of(&trials).expect("at least one trial");
    let lap_ns = summary.median.max(1e-3) * lines as f64;
    let laps = ((COUNTED_TRIALS * config.trial_ns / lap_ns).ceil() as usize).max(1);
    let accesses = laps * lines;
    let ((run_time_ns, software_counts), misses) = counter.count(accesses as u64, || {
        software.count(|| walk.timed(timer, accesses))
    });
    let (page_faults, task_clock_ns, software_not_supported) = match software_counts {
        Ok(c) => (c.page_faults, c.task_clock_ns, None),
        Err(why) => (None, None, Some(why)),
    };
    let (amat_ns, amat_not_computed) = match amat(level_latencies, &misses) {
        Ok(ns) => (Some(ns), None),
        Err(why) => (None, Some(why)),
    };
    MissImpactRow {
        level,
        footprint_bytes,
        pattern,
        ns_per_access: summary.median,
        spread_pct: summary.spread_pct(),
        trials: summary.count,
        run_time_ns,
        laps: laps as u64,
        llc_miss_rate: misses.per_access(MissLevel::Llc),
        misses,
        page_faults,
        task_clock_ns,
        software_not_supported,
        measured_over_amat: amat_ns.map(|a| summary.median / a),
        amat_ns,
        amat_not_computed,
    }
}
