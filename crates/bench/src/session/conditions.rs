//! What else ran while each experiment measured: a sampler thread (on a CPU other than the
//! measuring one) counts the runnable tasks outside memscope every `PERIOD` and names them
//! at most once a second, and each experiment's interval gets the mean and peak of that
//! count, the share of samples that saw any, the names, and the steal time of the CPUs it
//! used. These go into the report (`conditions`) and, beyond `BUSY_TASKS`, `BUSY_SHARE_PCT`
//! or `BUSY_STEAL_PCT`, into a warning that names the tasks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::platform::load::{self, CpuTicks, Own};

/// How often the sampler counts runnable tasks.
pub(crate) const PERIOD: Duration = Duration::from_millis(50);
/// How often it may scan every task to name the runnable ones.
const NAMING_PERIOD: Duration = Duration::from_secs(1);
/// Other runnable tasks, on average over an experiment, that make it "disturbed".
pub(crate) const BUSY_TASKS: f64 = 0.5;
/// Percent of an experiment's samples with another task runnable that make it "disturbed":
/// load that came and went (a burst over part of the experiment) has a low mean but moves
/// the points it overlapped.
pub(crate) const BUSY_SHARE_PCT: f64 = 20.0;
/// Steal time, percent of an experiment's CPU time, that makes it "disturbed".
pub(crate) const BUSY_STEAL_PCT: f64 = 2.0;

/// The machine's load during one experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentConditions {
    pub experiment: String,
    pub elapsed_s: f64,
    /// Runnable tasks outside memscope (its own threads and its ancestors are not
    /// counted), mean and peak over the samples; None when nothing was sampled (a single
    /// allowed CPU leaves the sampler nowhere to run without disturbing the measurement).
    pub other_runnable_mean: Option<f64>,
    pub other_runnable_max: Option<f64>,
    /// Percent of the samples that saw at least one other runnable task.
    #[serde(default)]
    pub other_runnable_share_pct: Option<f64>,
    pub samples: usize,
    /// The tasks seen runnable, most often first.
    pub tasks: Vec<String>,
    /// Steal time of the CPUs memscope measured on, percent of their time.
    pub steal_pct: Option<f64>,
    /// Other tasks or the hypervisor took enough to matter: `BUSY_TASKS` on average,
    /// another task runnable in `BUSY_SHARE_PCT` of the samples, or `BUSY_STEAL_PCT`.
    #[serde(default)]
    pub disturbed: bool,
}

impl ExperimentConditions {
    /// The part of `disturbed` that other tasks account for.
    pub fn tasks_disturbed(&self) -> bool {
        self.other_runnable_mean.is_some_and(|m| m >= BUSY_TASKS)
            || self
                .other_runnable_share_pct
                .is_some_and(|s| s >= BUSY_SHARE_PCT)
    }

    /// The part of `disturbed` that the hypervisor accounts for.
    pub fn steal_disturbed(&self) -> bool {
        self.steal_pct.is_some_and(|s| s >= BUSY_STEAL_PCT)
    }
}

#[derive(Debug, Default)]
struct Samples {
    /// (when, other runnable tasks).
    counts: Vec<(Instant, f64)>,
    /// (when, names of the runnable tasks elsewhere).
    names: Vec<(Instant, Vec<String>)>,
}

/// The sampler and what it gathered; dropping it stops the thread.
pub struct Conditions {
    samples: Arc<Mutex<Samples>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The CPUs whose steal time counts.
    cpus: Vec<usize>,
    pub records: Vec<ExperimentConditions>,
}

/// Where an experiment started.
pub struct Mark {
    at: Instant,
    ticks: Option<CpuTicks>,
}

impl Conditions {
    /// Starts sampling on the `allowed` CPUs other than `measuring` (none left: no
    /// sampling, only steal time).
    pub fn start(measuring: usize, allowed: &[usize]) -> Conditions {
        let samples = Arc::new(Mutex::new(Samples::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let elsewhere: Vec<usize> = allowed
            .iter()
            .copied()
            .filter(|&c| c != measuring)
            .collect();
        let thread = (!elsewhere.is_empty()).then(|| {
            let (samples, stop) = (samples.clone(), stop.clone());
            std::thread::Builder::new()
                .name("memscope-load".into())
                .spawn(move || sample(&elsewhere, &samples, &stop))
                .ok()
        });
        Conditions {
            samples,
            stop,
            thread: thread.flatten(),
            cpus: vec![measuring],
            records: Vec::new(),
        }
    }

    /// Nothing sampled (tests, commands that do not measure).
    pub fn none() -> Conditions {
        Conditions {
            samples: Arc::default(),
            stop: Arc::new(AtomicBool::new(true)),
            thread: None,
            cpus: Vec::new(),
            records: Vec::new(),
        }
    }

    /// Adds CPUs whose steal time counts (an experiment's helper threads).
    pub(crate) fn use_cpus(&mut self, cpus: &[usize]) {
        for &cpu in cpus {
            if !self.cpus.contains(&cpu) {
                self.cpus.push(cpu);
            }
        }
    }

    pub fn mark(&self) -> Mark {
        Mark {
            at: Instant::now(),
            ticks: load::cpu_ticks(&self.cpus),
        }
    }

    /// Records the conditions from `mark` until now as `experiment`'s.
    pub fn record(&mut self, experiment: &str, mark: Mark) {
        let now = Instant::now();
        let samples = self.samples.lock().unwrap_or_else(PoisonError::into_inner);
        let during = |t: &Instant| *t >= mark.at && *t <= now;
        let counts: Vec<f64> = (samples.counts.iter())
            .filter(|(t, _)| during(t))
            .map(|&(_, c)| c)
            .collect();
        let mut tally: Vec<(String, usize)> = Vec::new();
        for (_, names) in samples.names.iter().filter(|(t, _)| during(t)) {
            for name in names {
                match tally.iter_mut().find(|(n, _)| n == name) {
                    Some((_, c)) => *c += 1,
                    None => tally.push((name.clone(), 1)),
                }
            }
        }
        tally.sort_by_key(|t| std::cmp::Reverse(t.1));
        let steal_pct = match (mark.ticks, load::cpu_ticks(&self.cpus)) {
            (Some(before), Some(after)) => after.steal_pct_since(&before),
            _ => None,
        };
        let sampled = !counts.is_empty();
        let n = counts.len() as f64;
        let mut record = ExperimentConditions {
            experiment: experiment.to_string(),
            elapsed_s: (now - mark.at).as_secs_f64(),
            other_runnable_mean: sampled.then(|| counts.iter().sum::<f64>() / n),
            other_runnable_max: sampled.then(|| counts.iter().copied().fold(0.0, f64::max)),
            other_runnable_share_pct: sampled
                .then(|| counts.iter().filter(|&&c| c >= 1.0).count() as f64 / n * 100.0),
            samples: counts.len(),
            tasks: tally.into_iter().take(6).map(|(n, _)| n).collect(),
            steal_pct,
            disturbed: false,
        };
        record.disturbed = record.tasks_disturbed() || record.steal_disturbed();
        self.records.push(record);
    }
}

impl Drop for Conditions {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The sampler's loop: count every period, name now and then.
fn sample(cpus: &[usize], samples: &Mutex<Samples>, stop: &AtomicBool) {
    let _ = crate::platform::affinity::set_current_thread_cpus(cpus);
    let own = Own::this_process();
    let mut last_named: Option<Instant> = None;
    while !stop.load(Ordering::Relaxed) {
        let total = load::procs_running();
        // This thread and the measuring ones are memscope's; what is left is someone else.
        let mine = load::own_running_threads();
        if let Some(total) = total {
            let others = total.saturating_sub(mine.max(1)) as f64;
            let now = Instant::now();
            let name_now =
                others > 0.0 && last_named.is_none_or(|t| now.duration_since(t) >= NAMING_PERIOD);
            let names = name_now.then(|| load::running_elsewhere(&own));
            let mut s = samples.lock().unwrap_or_else(PoisonError::into_inner);
            s.counts.push((now, others));
            if let Some(names) = names.filter(|n| !n.is_empty()) {
                s.names.push((now, names));
                last_named = Some(now);
            }
        }
        std::thread::sleep(PERIOD);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_experiment_gets_its_interval_of_samples_and_a_busy_one_names_the_task() {
        let mut c = Conditions::start(0, &[0, 1]);
        let mark = c.mark();
        // A task of someone else's: a child process spinning.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1300));
        let _ = child.kill();
        let _ = child.wait();
        c.record("spin", mark);
        let r = &c.records[0];
        assert_eq!(r.experiment, "spin");
        assert!(r.elapsed_s >= 1.2);
        if r.samples > 0 {
            assert!(r.other_runnable_max.unwrap() >= 1.0, "{r:?}");
            assert!(r.tasks.iter().any(|t| t.starts_with("sh")), "{r:?}");
        }
    }

    #[test]
    fn load_over_part_of_an_experiment_disturbs_it_though_its_mean_is_low() {
        let burst = ExperimentConditions {
            experiment: "tlb".into(),
            elapsed_s: 8.0,
            other_runnable_mean: Some(0.3),
            other_runnable_max: Some(2.0),
            other_runnable_share_pct: Some(25.0),
            samples: 160,
            tasks: vec!["stress-ng".into()],
            steal_pct: Some(0.1),
            disturbed: false,
        };
        assert!(burst.tasks_disturbed() && !burst.steal_disturbed());
        let quiet = ExperimentConditions {
            other_runnable_mean: Some(0.02),
            other_runnable_share_pct: Some(2.0),
            ..burst
        };
        assert!(!quiet.tasks_disturbed());
    }
}
