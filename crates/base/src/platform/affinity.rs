//! Thread pinning: every measuring thread runs on one chosen CPU, so caches stay warm and
//! the report can say exactly which CPUs produced the numbers.

use std::io;

/// CPUs this process may run on (its affinity mask), ascending: what the OS says, so it
/// is read in `topology`.
pub use crate::topology::cpu::affinity_mask as allowed_cpus;

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "CPU {cpu} is beyond the {} CPUs a cpu_set_t holds",
                libc::CPU_SETSIZE
            ),
        ));
    }
    // SAFETY: as above; the set names one CPU.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Pins the calling thread to `cpu`, or says which CPUs could have been used.
pub fn pin_or_explain(cpu: usize, allowed: &[usize]) -> Result<(), crate::error::UsageError> {
    pin_current_thread(cpu).map_err(|e| crate::error::UsageError::NoSuchCpu {
        cpu: format!("{cpu} ({e})"),
        available: crate::topology::cpu::format_cpu_list(allowed),
    })
}

/// Restores the calling thread's affinity to a set of CPUs (after a pinned measurement).
pub fn set_current_thread_cpus(cpus: &[usize]) -> io::Result<()> {
    set_thread_cpus(0, cpus)
}

/// Sets the CPUs a thread or process (`pid`; 0: the calling thread) may run on; a child
/// paused before its exec keeps them across the exec, and its threads inherit them.
pub(crate) fn set_thread_cpus(pid: libc::pid_t, cpus: &[usize]) -> io::Result<()> {
    if cpus.is_empty() || cpus.iter().any(|&c| c >= libc::CPU_SETSIZE as usize) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU list {cpus:?} is empty or beyond what a cpu_set_t holds"),
        ));
    }
    // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET writes inside it (the CPUs
    // were checked against its size); sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        if libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPU the calling thread is running on now.
#[cfg(test)]
pub(crate) fn current_cpu() -> Option<usize> {
    // SAFETY: no arguments, no memory effects.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// The default measuring CPU: the last allowed one, because CPU 0 usually takes most
/// device interrupts and housekeeping work.
pub fn default_cpu(allowed: &[usize]) -> Option<usize> {
    allowed.last().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_moves_the_thread_to_each_allowed_cpu() {
        let allowed = allowed_cpus().unwrap();
        assert!(!allowed.is_empty());
        std::thread::spawn(move || {
            for &cpu in allowed.iter().take(2) {
                pin_current_thread(cpu).unwrap();
                assert_eq!(current_cpu(), Some(cpu));
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn pinning_to_a_cpu_that_does_not_exist_fails() {
        std::thread::spawn(|| {
            assert!(pin_current_thread(libc::CPU_SETSIZE as usize + 5).is_err());
        })
        .join()
        .unwrap();
    }
}
