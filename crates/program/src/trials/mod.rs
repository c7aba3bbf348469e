//! The trial engine: every command that runs a user's program again and again (`sweep`,
//! `pages apply`, `advise`) describes its arms and a rule for which of them the next
//! block needs; the engine runs the blocks — each arm asked for once, in a shuffled
//! order, so the machine's drift falls on all alike — drops a block that an interruption
//! or the time limit cut short (its arms ran unequally often), keeps to the time limit
//! (a block starts only where the longest block of those arms fits, with a margin), and
//! says why it stopped. The program's output tail is kept by `capture`; starting the
//! program (the process-tree rules) is `platform::child`'s. The statistics the rules
//! read are `stats::change` (independent runs) and `stats::paired` (runs paired by block).

pub mod capture;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::platform::child::Termination;
use crate::platform::cleanup;
use crate::session::progress::Progress;
use crate::stats::design::Shuffler;

/// Why the blocks stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// The rule had nothing left to run: every arm decided.
    Resolved,
    /// The blocks asked for (`--runs`, `--repeat`) ran.
    Fixed,
    /// Another block would have passed the time limit.
    TimeLimit,
    /// The most blocks the design runs.
    MaxBlocks,
    /// Ctrl-C: the blocks completed before it are kept.
    Interrupted,
}

impl Stop {
    /// The stop that says most of two: an interruption, then the time limit, then others.
    pub fn worse(self, other: Stop) -> Stop {
        let rank = |s: Stop| match s {
            Stop::Interrupted => 3,
            Stop::TimeLimit => 2,
            Stop::MaxBlocks => 1,
            Stop::Fixed => 1,
            Stop::Resolved => 0,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

/// How one run ended, for the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// It ran to its end (whatever its exit status).
    Done,
    /// Ctrl-C (SIGINT or SIGQUIT to the program, or to memscope).
    Interrupted,
    /// Still going at the time limit: stopped with all it started.
    Stopped,
}

impl Ended {
    /// How a run that ended with `termination` (and was `stopped` at the limit) ended.
    pub fn of(termination: Termination, stopped: bool) -> Ended {
        if stopped {
            Ended::Stopped
        } else if interrupted(termination) || cleanup::interrupt_requested() {
            Ended::Interrupted
        } else {
            Ended::Done
        }
    }
}

/// A program killed by the keyboard's interrupt or quit: the user's Ctrl-C.
pub fn interrupted(termination: Termination) -> bool {
    matches!(termination, Termination::Signaled(s) if s == libc::SIGINT || s == libc::SIGQUIT)
}

/// What the next block runs, as the command's rule decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// These arms (indices), in an order the engine shuffles.
    Run(Vec<usize>),
}

/// The limits of a sequence of blocks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Design {
    /// Exactly this many blocks (the time limit does not apply).
    pub fixed: Option<usize>,
    /// At most this many blocks.
    pub max_blocks: usize,
    /// No block starts that would end after this (beyond `min_blocks`).
    pub until: Instant,
    /// Blocks run even past `until` (a verdict needs some).
    pub min_blocks: usize,
}

/// A block starts only where the time left holds the longest block of its arms so far
/// this many times over.
const BLOCK_MARGIN: f64 = 1.25;

/// One run of one arm in one block.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial<R> {
    /// 0: warm-up (never read); then 1, 2, …
    pub block: usize,
    /// Position in the whole interleaved sequence.
    pub order: usize,
    pub arm: usize,
    pub run: R,
}

/// The runs so far, and what the engine keeps to schedule the next block.
pub(crate) struct Blocks<R> {
    pub trials: Vec<Trial<R>>,
    /// Measured blocks completed.
    pub blocks: usize,
    order: usize,
    shuffler: Shuffler,
    /// The longest run of each arm so far (seconds), for whether a block fits.
    longest: Vec<f64>,
}

impl<R> Blocks<R> {
    /// No runs yet, for `arms` arms.
    pub fn new(arms: usize) -> Blocks<R> {
        Blocks {
            trials: Vec::new(),
            blocks: 0,
            order: 0,
            shuffler: Shuffler::from_clock(),
            longest: vec![0.0; arms],
        }
    }

    /// Room for arms added after the start (their index is their position).
    pub(crate) fn add_arms(&mut self, arms: usize) {
        if self.longest.len() < arms {
            self.longest.resize(arms, 0.0);
        }
    }

    /// The measured runs of one arm, by block.
    pub(crate) fn of_arm(&self, arm: usize) -> impl Iterator<Item = &Trial<R>> {
        self.trials
            .iter()
            .filter(move |t| t.arm == arm && t.block > 0)
    }

    /// Runs `arms` once each in a shuffled order as block `block` (0: warm-up) with
    /// `run`; the block's runs are kept only when every one ran to its end. The first
    /// run that did not is the answer: `Some(Stop)`.
    pub fn block<E>(
        &mut self,
        block: usize,
        arms: &[usize],
        progress: &Progress,
        run: &mut impl FnMut(usize, usize, usize) -> Result<(R, Ended), E>,
    ) -> Result<Option<Stop>, E> {
        let mut sequence = arms.to_vec();
        self.shuffler.shuffle(&mut sequence);
        let kept = self.trials.len();
        for arm in sequence {
            let started = Instant::now();
            let (r, ended) = run(arm, block, self.order)?;
            self.add_arms(arm + 1);
            self.longest[arm] = self.longest[arm].max(started.elapsed().as_secs_f64());
            self.trials.push(Trial {
                block,
                order: self.order,
                arm,
                run: r,
            });
            self.order += 1;
            progress.advance();
            let stop = match ended {
                Ended::Done => continue,
                Ended::Interrupted => Stop::Interrupted,
                Ended::Stopped => Stop::TimeLimit,
            };
            self.trials.truncate(kept);
            return Ok(Some(stop));
        }
        if block > 0 {
            self.blocks = block;
        }
        Ok(None)
    }

    /// Measured blocks until the rule `next` (asked before each block) stops or the
    /// design's limits do; `guess` is how long a run of an arm not run yet may take.
    pub fn run<E>(
        &mut self,
        design: &Design,
        progress: &Progress,
        guess: impl Fn(usize) -> Duration,
        mut next: impl FnMut(&Blocks<R>) -> Result<Next, E>,
        mut run: impl FnMut(usize, usize, usize) -> Result<(R, Ended), E>,
    ) -> Result<Stop, E> {
        loop {
            let arms = match next(self)? {
                Next::Run(arms) if !arms.is_empty() => arms,
                Next::Run(_) => return Ok(Stop::Resolved),
            };
            match design.fixed {
                Some(n) if self.blocks >= n => return Ok(Stop::Fixed),
                Some(_) => {}
                None if self.blocks >= design.max_blocks => return Ok(Stop::MaxBlocks),
                None => {
                    let block_s: f64 = arms
                        .iter()
                        .map(|&a| match self.longest.get(a) {
                            Some(&s) if s > 0.0 => s,
                            _ => guess(a).as_secs_f64(),
                        })
                        .sum();
                    let left = design
                        .until
                        .saturating_duration_since(Instant::now())
                        .as_secs_f64();
                    if left < block_s * BLOCK_MARGIN && self.blocks >= design.min_blocks {
                        return Ok(Stop::TimeLimit);
                    }
                }
            }
            if cleanup::interrupt_requested() {
                return Ok(Stop::Interrupted);
            }
            if let Some(stop) = self.block(self.blocks + 1, &arms, progress, &mut run)? {
                return Ok(stop);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn design(fixed: Option<usize>) -> Design {
        Design {
            fixed,
            max_blocks: 30,
            until: Instant::now() + Duration::from_secs(60),
            min_blocks: 0,
        }
    }

    #[test]
    fn blocks_run_each_arm_once_until_the_rule_stops() {
        let mut blocks: Blocks<u32> = Blocks::new(3);
        let progress = Progress::hidden();
        let stop = blocks
            .run::<()>(
                &design(None),
                &progress,
                |_| Duration::ZERO,
                // Arm 2 drops out after 2 blocks; all stop after 4.
                |b| {
                    Ok(match b.blocks {
                        0 | 1 => Next::Run(vec![0, 1, 2]),
                        2 | 3 => Next::Run(vec![0, 1]),
                        _ => Next::Run(Vec::new()),
                    })
                },
                |arm, block, _| Ok((arm as u32 * 100 + block as u32, Ended::Done)),
            )
            .unwrap();
        assert_eq!(stop, Stop::Resolved);
        assert_eq!(blocks.blocks, 4);
        assert_eq!(blocks.of_arm(0).count(), 4);
        assert_eq!(blocks.of_arm(2).count(), 2);
        let orders: Vec<usize> = blocks.trials.iter().map(|t| t.order).collect();
        assert_eq!(orders, (0..10).collect::<Vec<_>>());
        let fixed = Blocks::<u32>::new(1).run::<()>(
            &design(Some(2)),
            &progress,
            |_| Duration::ZERO,
            |_| Ok(Next::Run(vec![0])),
            |_, _, _| Ok((0, Ended::Done)),
        );
        assert_eq!(fixed, Ok(Stop::Fixed));
    }

    #[test]
    fn a_block_cut_short_is_dropped_whole_and_says_why() {
        let mut blocks: Blocks<usize> = Blocks::new(2);
        let progress = Progress::hidden();
        let stop = blocks
            .run::<()>(
                &design(None),
                &progress,
                |_| Duration::ZERO,
                |_| Ok(Next::Run(vec![0, 1])),
                |_, block, _| {
                    let ended = if block == 3 {
                        Ended::Stopped
                    } else {
                        Ended::Done
                    };
                    Ok((block, ended))
                },
            )
            .unwrap();
        assert_eq!(stop, Stop::TimeLimit);
        assert_eq!(blocks.blocks, 2);
        assert!(blocks.trials.iter().all(|t| t.block <= 2));
        // No time for a block of runs guessed at a minute each.
        let mut late: Blocks<usize> = Blocks::new(1);
        let stop = late.run::<()>(
            &design(None),
            &progress,
            |_| Duration::from_secs(60),
            |_| Ok(Next::Run(vec![0])),
            |_, b, _| Ok((b, Ended::Done)),
        );
        assert_eq!(stop, Ok(Stop::TimeLimit));
        assert_eq!(Stop::Resolved.worse(Stop::Interrupted), Stop::Interrupted);
        assert_eq!(Stop::TimeLimit.worse(Stop::Fixed), Stop::TimeLimit);
        assert_eq!(
            Ended::of(Termination::Signaled(libc::SIGINT), false),
            Ended::Interrupted
        );
        assert_eq!(Ended::of(Termination::Exited(3), true), Ended::Stopped);
    }
}
