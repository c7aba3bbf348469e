//! What the kernel says about competition for the CPUs: the runnable tasks outside
//! memscope (its own threads, its ancestors — a `cargo run` or a shell waiting for it — and
//! its children are not load), by name, and the steal time the hypervisor took from each
//! CPU (/proc/stat). Read, never changed.

use std::collections::HashSet;
use std::fs;

/// The processes that are memscope or stand behind it: this process and its ancestors.
#[derive(Debug, Clone)]
pub struct Own {
    pids: HashSet<u32>,
}

impl Own {
    /// This process and every ancestor up to init.
    pub fn this_process() -> Own {
        let mut pids = HashSet::new();
        let mut pid = std::process::id();
        while pid > 1 && pids.insert(pid) {
            match parent_of(pid) {
                Some(parent) => pid = parent,
                None => break,
            }
        }
        Own { pids }
    }

    pub fn contains(&self, pid: u32) -> bool {
        self.pids.contains(&pid)
    }
}

/// The fields of /proc/PID/stat after the command name: (state, ppid).
fn stat_after_comm(text: &str) -> Option<(char, u32)> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// The command name in /proc/PID/stat (between the first '(' and the last ')').
fn comm_of(text: &str) -> Option<&str> {
    Some(&text[text.find('(')? + 1..text.rfind(')')?])
}

fn parent_of(pid: u32) -> Option<u32> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat_after_comm(&text).map(|(_, ppid)| ppid)
}

/// Threads of this process in state R (running or runnable) right now.
pub fn own_running_threads() -> usize {
    let Ok(tasks) = fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| fs::read_to_string(t.path().join("stat")).ok())
        .filter(|text| stat_after_comm(text).is_some_and(|(state, _)| state == 'R'))
        .count()
}

/// Runnable tasks on the whole machine (`procs_running` of /proc/stat), memscope's own
/// included.
pub fn procs_running() -> Option<usize> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("procs_running "))?
        .trim()
        .parse()
        .ok()
}

/// The names of the threads in state R outside `own` (the scan of every task: costs a
/// few milliseconds on a busy server, so callers rate-limit it). Threads of one process
/// are named once, with their count when several run: "stress-ng ×2".
pub fn running_elsewhere(own: &Own) -> Vec<String> {
    let Ok(processes) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut names: Vec<(String, usize)> = Vec::new();
    for entry in processes.filter_map(Result::ok) {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if own.contains(pid) {
            continue;
        }
        let Ok(tasks) = fs::read_dir(entry.path().join("task")) else {
            continue;
        };
        for task in tasks.filter_map(Result::ok) {
            let Ok(text) = fs::read_to_string(task.path().join("stat")) else {
                continue;
            };
            if stat_after_comm(&text).is_some_and(|(state, _)| state == 'R') {
                let name = comm_of(&text).unwrap_or("?").to_string();
                match names.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, count)) => *count += 1,
                    None => names.push((name, 1)),
                }
            }
        }
    }
    names
        .into_iter()
        .map(|(name, n)| if n > 1 { format!("{name} ×{n}") } else { name })
        .collect()
}

/// Steal and total ticks of the given CPUs (/proc/stat `cpuN` lines), summed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTicks {
    pub steal: u64,
    pub total: u64,
}

impl CpuTicks {
    /// The share of the interval since `earlier` the hypervisor stole, percent.
    pub fn steal_pct_since(&self, earlier: &CpuTicks) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total)?;
        let steal = self.steal.checked_sub(earlier.steal)?;
        (total > 0).then(|| steal as f64 / total as f64 * 100.0)
    }
}

/// The ticks of `cpus` now; None when /proc/stat cannot be read.
pub fn cpu_ticks(cpus: &[usize]) -> Option<CpuTicks> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    Some(parse_cpu_ticks(&stat, cpus))
}

fn parse_cpu_ticks(stat: &str, cpus: &[usize]) -> CpuTicks {
    // A set: /proc/stat of a 384-CPU server has 384 lines to match against 384 CPUs.
    let cpus: HashSet<usize> = cpus.iter().copied().collect();
    let mut ticks = CpuTicks::default();
    for line in stat.lines() {
        let Some(rest) = line.strip_prefix("cpu") else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let Some(cpu) = fields.next().and_then(|c| c.parse::<usize>().ok()) else {
            continue;
        };
        if !cpus.contains(&cpu) {
            continue;
        }
        // user nice system idle iowait irq softirq steal (guest time is within user).
        let values: Vec<u64> = fields.take(8).filter_map(|v| v.parse().ok()).collect();
        ticks.total += values.iter().sum::<u64>();
        ticks.steal += values.get(7).copied().unwrap_or(0);
    }
    ticks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_state_parent_and_name_even_with_spaces_and_parentheses() {
        let text = "1234 (my (odd) name) R 77 1234 1234 0 -1 4194560";
        assert_eq!(stat_after_comm(text), Some(('R', 77)));
        assert_eq!(comm_of(text), Some("my (odd) name"));
    }

    #[test]
    fn this_process_and_its_parent_are_own_and_no_own_thread_is_listed_elsewhere() {
        let own = Own::this_process();
        assert!(own.contains(std::process::id()));
        let parent = parent_of(std::process::id()).unwrap();
        assert!(parent <= 1 || own.contains(parent));
        // This test's own busy thread is runnable, but never reported as someone else.
        let me = fs::read_to_string("/proc/self/stat").unwrap();
        let name = comm_of(&me).unwrap().to_string();
        let listed = running_elsewhere(&own);
        assert!(!listed.iter().any(|n| n.starts_with(&name)), "{listed:?}");
        assert!(own_running_threads() >= 1);
    }

    #[test]
    fn steal_is_summed_over_the_chosen_cpus() {
        let stat = "cpu  10 0 10 100 0 0 0 6 0 0\n\
                    cpu0 5 0 5 50 0 0 0 2 0 0\n\
                    cpu1 5 0 5 50 0 0 0 4 0 0\n\
                    procs_running 3\n";
        let both = parse_cpu_ticks(stat, &[0, 1]);
        assert_eq!(
            both,
            CpuTicks {
                steal: 6,
                total: 126
            }
        );
        let one = parse_cpu_ticks(stat, &[1]);
        assert_eq!(one.steal, 4);
        let later = CpuTicks {
            steal: 16,
            total: 226,
        };
        assert_eq!(later.steal_pct_since(&both), Some(10.0));
    }
}
