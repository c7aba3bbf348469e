//! The co-runners advise runs and their own checks: one on the co-runner's CPU beside the
//! program (the compute neighbour, the pirate, the bandit) and one on the program's own
//! CPU that takes turns with it (compute and pirate in turns); their calibration; and
//! where the cache pirate runs. Beside the program where that CPU really shares the
//! program's last-level cache — checked by the two walking at once, since a hypervisor
//! places vCPUs whatever the OS reports — else in turns on the program's CPU, read by the
//! program's CPU time.

use super::facts::{FactsSource, MachineFacts};
use super::results::held_levels;
use super::{CoRunnerCalibration, CpuPlan, PirateSite};
use crate::kernels::corunner::{CoRunner, CoRunnerSetup, SharingCheck, BURST_BUSY, BURST_PERIOD};
use crate::topology::memory::AvailableMemory;
use crate::topology::Machine;
use crate::units::Bytes;

/// The co-runners, their checks, and where the cache pirate runs.
pub struct Neighbours {
    /// On the co-runner's CPU.
    pub beside: Option<CoRunner>,
    /// On the program's first CPU; only kept when the pirate runs in turns.
    pub in_turns: Option<CoRunner>,
    pub calibration: Option<CoRunnerCalibration>,
    pub site: PirateSite,
    /// The pirate's sets it holds alone (bytes, share of the LLC share), smallest first.
    pub levels: Vec<(u64, f64)>,
    pub notes: Vec<String>,
}

impl Neighbours {
    /// The co-runners, for the trials.
    pub(crate) fn co_runners(&self) -> super::trial::CoRunners<'_> {
        super::trial::CoRunners {
            beside: self.beside.as_ref(),
            in_turns: self.in_turns.as_ref(),
        }
    }
}

/// What the co-runners are needed for, and the memory they may take.
#[derive(Debug, Clone)]
pub struct Wanted {
    pub cache: bool,
    pub bandwidth: bool,
    /// What may be allocated now less what the program needs beside it (a cgroup's
    /// limit counts both), and what bounds it.
    pub room: AvailableMemory,
}

/// Starts the co-runners the wanted experiments need, calibrates them and decides where
/// the pirate runs. Measured facts (no report) take the calibration's figures.
pub fn start(
    machine: &Machine,
    facts: &mut MachineFacts,
    cpus: &CpuPlan,
    pirate_sizes: &[u64],
    wanted: Wanted,
) -> Neighbours {
    let mut notes = Vec::new();
    let top = pirate_sizes.last().copied().unwrap_or(0);
    let llc = facts.llc_bytes.unwrap_or(0);
    let wanted = within_room(wanted, llc, top, &mut notes);
    // Far beyond the LLC, so the bandit (and the DRAM probe) stream from DRAM; no more
    // than half the room.
    let bandit_buffer = (4 * llc).max(256 << 20).min(wanted.room.bytes / 2);
    let wants_pirate = wanted.cache && top > 0;
    let beside = match cpus.co_runner {
        Some(cpu) if wanted.cache || wanted.bandwidth => started_beside(cpu, top, bandit_buffer)
            .map_err(|why| notes.push(why))
            .ok(),
        _ => None,
    };
    // The one in turns also walks, in the sharing check, a set no shared cache holds
    // beside the pirate's largest; alone, it is also the DRAM probe.
    let sharing_bytes = llc.max(2 * top);
    let program_cpu = cpus.program.first().copied();
    let in_turns = match program_cpu {
        Some(cpu) if wants_pirate => CoRunner::start(CoRunnerSetup {
            cpu,
            pirate_max_bytes: sharing_bytes,
            bandit_buffer_bytes: if beside.is_some() { 0 } else { bandit_buffer },
        })
        .map_err(|e| {
            notes.push(format!(
                "the pirate in turns could not start on CPU {cpu} ({e})"
            ))
        })
        .ok(),
        _ => None,
    };
    let mut calibration = calibrated(
        (beside.as_ref(), in_turns.as_ref()),
        pirate_sizes,
        program_cpu,
        &mut notes,
    );
    let levels = if wants_pirate {
        held_levels(pirate_sizes, calibration.as_ref())
    } else {
        Vec::new()
    };
    notes.extend(pirate_reach_note(
        calibration.as_ref(),
        &levels,
        pirate_sizes.len(),
        top,
    ));

    // Does the co-runner's CPU share the program's LLC now?
    let check = match (&beside, &in_turns, levels.last()) {
        (Some(b), Some(t), Some(&(largest, _))) => Some(b.sharing_check(t, largest, sharing_bytes)),
        _ => None,
    };
    if let (Some(cal), Some(c)) = (calibration.as_mut(), check) {
        cal.sharing = Some(c);
    }
    let hypervisor = machine.hypervisor.as_deref();
    let site = pirate_site(
        cpus,
        beside.is_some(),
        in_turns.is_some(),
        &levels,
        check,
        hypervisor.is_some(),
    );
    notes.extend(site_note(site, cpus, check, hypervisor));
    let in_turns = in_turns.filter(|_| site == PirateSite::InTurns);
    if let Some(cal) = &calibration {
        take_measured_facts(facts, cal);
        if beside.is_some() && !cal.bandit_huge && wanted.bandwidth {
            notes.push(
                "the bandit's buffer got no huge pages: its stream pays a TLB miss every 4 KiB \
                 and takes less bandwidth than it could"
                    .to_string(),
            );
        }
    }
    Neighbours {
        beside,
        in_turns,
        calibration,
        site,
        levels,
        notes,
    }
}

/// What is wanted, less the pirate and the bandit where the memory left beside the program
/// cannot hold them (said in `notes`).
fn within_room(wanted: Wanted, llc: u64, top: u64, notes: &mut Vec<String>) -> Wanted {
    let needs = 2 * llc.max(16 << 20) + 3 * top;
    if !(wanted.cache || wanted.bandwidth) || needs <= wanted.room.bytes {
        return wanted;
    }
    notes.push(format!(
        "no cache pirate or bandwidth bandit: they need about {}, and the memory left \
         beside the program is {}",
        Bytes(needs),
        wanted.room
    ));
    Wanted {
        cache: false,
        bandwidth: false,
        ..wanted
    }
}

/// The co-runner on `cpu`, beside the program; else why not.
fn started_beside(cpu: usize, pirate_max: u64, bandit_buffer: u64) -> Result<CoRunner, String> {
    CoRunner::start(CoRunnerSetup {
        cpu,
        pirate_max_bytes: pirate_max,
        bandit_buffer_bytes: bandit_buffer,
    })
    .map_err(|e| {
        format!(
            "the co-runner could not start on CPU {cpu} ({e}): no bandwidth bandit runs, and \
             the cache pirate only in turns on the program's CPU"
        )
    })
}

/// The co-runners' own checks: the one beside (else the one in turns) walks the pirate's
/// sets and DRAM alone and, beside, the bandit flat out. The probe beside the bandit is the
/// smallest pirate set, which the pirate holds alone: how much slower it walks beside the
/// bandit tells how much the bandit slows what the cache holds.
fn calibrated(
    (beside, in_turns): (Option<&CoRunner>, Option<&CoRunner>),
    pirate_sizes: &[u64],
    program_cpu: Option<usize>,
    notes: &mut Vec<String>,
) -> Option<CoRunnerCalibration> {
    let smallest = pirate_sizes.first().copied().unwrap_or(0);
    let (runner, result) = match (beside, in_turns) {
        (Some(b), _) => (b, b.calibrate(pirate_sizes, smallest, program_cpu)),
        (None, Some(t)) => (t, t.calibrate(pirate_sizes, 0, None)),
        (None, None) => return None,
    };
    match result {
        Ok(cal) => Some(CoRunnerCalibration {
            pirate_alone_ns: cal.pirate_alone_ns,
            dram_ns: cal.dram_ns,
            bandit_max_bytes_per_s: cal.bandit_max_bytes_per_s,
            pirate_beside_bandit_ns: cal.pirate_beside_bandit_ns,
            bandit_huge: runner.bandit_huge(),
            sharing: None,
        }),
        Err(e) => {
            notes.push(format!("the co-runner's checks failed: {e}"));
            None
        }
    }
}

/// Where the pirate cannot hold its largest sets alone: what it holds.
fn pirate_reach_note(
    calibration: Option<&CoRunnerCalibration>,
    levels: &[(u64, f64)],
    sizes: usize,
    top: u64,
) -> Option<String> {
    let (cal, &(largest, _)) = (calibration?, levels.last()?);
    (levels.len() < sizes).then(|| {
        format!(
            "the pirate cannot hold the whole LLC share alone (it walks {} at {:.0} ns, DRAM \
             takes {:.0} ns): its largest set is {}",
            Bytes(top),
            cal.pirate_alone_ns.last().map_or(f64::NAN, |p| p.1),
            cal.dram_ns,
            Bytes(largest)
        )
    })
}

/// Facts measured here (no report) take the calibration's latencies.
fn take_measured_facts(facts: &mut MachineFacts, cal: &CoRunnerCalibration) {
    if facts.source == FactsSource::Measured {
        facts.dram_ns = Some(cal.dram_ns).filter(|v| v.is_finite());
        facts.llc_ns = (cal.pirate_alone_ns.last())
            .map(|p| p.1)
            .filter(|v| v.is_finite());
    }
}

/// Beside the program where the co-runner's CPU shares its LLC (by the OS, and by the
/// check when it ran), else in turns on the program's CPU where that co-runner started,
/// else nowhere. Under a hypervisor in turns wherever it can: the host places and moves
/// vCPUs during a run, so a check that found one shared cache holds only for a while
/// (seen: the check found it shared, then the pirate held 47% of its set beside the
/// program and the cache demo's runs spread over −24 … +56%). No set the pirate holds
/// alone: nowhere.
pub(crate) fn pirate_site(
    cpus: &CpuPlan,
    beside: bool,
    in_turns: bool,
    levels: &[(u64, f64)],
    check: Option<SharingCheck>,
    hypervisor: bool,
) -> PirateSite {
    if levels.is_empty() {
        PirateSite::Nowhere
    } else if hypervisor && in_turns {
        PirateSite::InTurns
    } else if beside && cpus.shares_llc && check.and_then(|c| c.shared()) != Some(false) {
        PirateSite::Beside
    } else if in_turns {
        PirateSite::InTurns
    } else {
        PirateSite::Nowhere
    }
}

/// Why the pirate runs in turns, when it does.
fn site_note(
    site: PirateSite,
    cpus: &CpuPlan,
    check: Option<SharingCheck>,
    hypervisor: Option<&str>,
) -> Option<String> {
    if site != PirateSite::InTurns {
        return None;
    }
    let program = cpus.program.first().copied().unwrap_or_default();
    let instead = format!(
        "the cache pirate takes turns with the program on CPU {program} instead (every {} ms \
         it interrupts the program for {} ms and sweeps its set), and the cache arms are read \
         by the program's CPU time",
        BURST_PERIOD.as_millis(),
        BURST_BUSY.as_secs_f64() * 1e3
    );
    let why = match (cpus.co_runner, check) {
        (None, _) => "only one CPU is available to memscope".to_string(),
        (Some(co), c) if hypervisor.is_some() => format!(
            "under a hypervisor ({}) the host places and moves the vCPUs while the program \
             runs, so a pirate on CPU {co} shares the program's last-level cache only for a \
             while{}",
            hypervisor.unwrap_or_default(),
            match c.and_then(|c| c.shared()) {
                Some(true) => " (the sharing check found it shared now)",
                Some(false) => " (the sharing check found it not shared now)",
                None => "",
            }
        ),
        (Some(co), Some(c)) if cpus.shares_llc => format!(
            "the co-runner's CPU {co} does not share the program's last-level cache now: its \
             pirate walked {} at {:.1} ns alone and at {:.1} ns while CPU {program} walked {}, \
             which no shared cache holds beside it (a hypervisor places vCPUs whatever the OS \
             reports)",
            Bytes(c.bytes),
            c.alone_ns,
            c.beside_ns,
            Bytes(c.other_bytes)
        ),
        (Some(co), _) if !cpus.shares_llc => {
            format!("the co-runner's CPU {co} shares no last-level cache with the program's CPUs")
        }
        (Some(co), _) => format!("the cache pirate could not run on CPU {co}"),
    };
    Some(format!("{why}: {instead}"))
}
