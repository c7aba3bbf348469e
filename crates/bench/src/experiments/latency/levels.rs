//! The latency ladder's levels: plateaus of the curve named after the OS-reported caches,
//! the DRAM plateau, surplus plateaus merged, and where each level ends.

use super::*;

/// Finds plateaus in the curve and names them after the OS-reported caches.
///
/// The slowest plateau is DRAM when the sweep reaches well past the largest cache (with
/// the plateaus within `DRAM_CLASS_RATIO` of it: a VM's slice of a shared L3 can make DRAM
/// start long before the OS-reported cache size). Surplus cache plateaus merge with their
/// closest neighbour; the rest are matched in order to the caches whose sizes are nearest
/// to where they end.
///
/// A level ends at the largest working set whose latency is still below the mean of its
/// own and the next level's latency, i.e. where at least half of the loads still hit in
/// it. With physically indexed caches and randomly placed pages, conflicts start before
/// a cache is full and about half the loads miss when the working set equals the capacity
/// (pages per colour are Poisson distributed), so this crossing estimates the capacity
/// rather than the first conflict. Unstable points take part here with their medians:
/// noise only adds latency, so it cannot carry an edge past where the level ends.
pub(super) fn find_levels(
    points: &[LatencyPoint],
    machine: &Machine,
    to_cycles: impl Fn(f64) -> f64,
) -> (Vec<LatencyLevel>, Vec<WarningKind>) {
    let mut warnings = Vec::new();
    let ns: Vec<f64> = points.iter().map(|p| p.ns).collect();
    let usable: Vec<bool> = points.iter().map(|p| !p.unstable).collect();
    let mut plateaus = find_plateaus(&ns, &usable, PlateauParams::default());
    let caches: Vec<(String, u64)> = (machine.data_caches().iter())
        .map(|c| (c.name(), c.size_bytes))
        .collect();
    let llc = caches.iter().map(|c| c.1).max();
    let max_bytes = points.last().map_or(0, |p| p.bytes);

    // DRAM: the slowest plateau and those close to it, when the sweep reaches past the caches.
    let reaches_dram = llc.is_none_or(|l| max_bytes >= 2 * l);
    if !reaches_dram {
        warnings.push(WarningKind::SweepTooShort {
            max: Bytes(max_bytes).to_string(),
            needed: Bytes(4 * llc.unwrap_or(0)).to_string(),
        });
    }
    let mut dram = match reaches_dram {
        true => dram_plateaus(&mut plateaus, &ns),
        false => Vec::new(),
    };
    // More cache plateaus than caches: close neighbours are one level seen twice (e.g. L2
    // hits with and without first-level TLB misses); what cannot merge is beyond the caches.
    let wanted = if caches.is_empty() { 4 } else { caches.len() };
    merge_surplus(&mut plateaus, &mut dram, wanted, (&ns, &usable));
    let names = level_names(&plateaus, points, &caches, &mut warnings);

    // The DRAM level: its latency is the plateau at the largest working sets.
    let dram_level = match (dram.first(), dram.last()) {
        (Some(first), Some(last)) => Some(Plateau {
            first: first.first,
            last: last.last,
            value: last.value,
            points: dram.iter().map(|p| p.points).sum(),
        }),
        _ => None,
    };
    let level = |name: Level, p: &Plateau, capacity, os_size| LatencyLevel {
        name,
        latency_ns: p.value,
        latency_cycles: to_cycles(p.value),
        capacity_bytes: capacity,
        os_size_bytes: os_size,
        first_bytes: points[p.first].bytes,
        last_bytes: points[p.last].bytes,
        points: p.points,
    };
    let mut levels = Vec::new();
    for (i, (p, (name, os_size))) in plateaus.iter().zip(names).enumerate() {
        let next = plateaus.get(i + 1).or(dram_level.as_ref());
        let capacity = points[capacity_index(p, next, &ns)].bytes;
        if let Some(os) = os_size {
            warnings.extend(capacity_warning(&name, capacity, os, machine));
        }
        levels.push(level(Level::from(name), p, Some(capacity), os_size));
    }
    if let Some(d) = dram_level {
        levels.push(level(Level::Dram, &d, None, None));
    }
    (levels, warnings)
}

/// Two plateaus and what lies between them as one, its value the median of its usable
/// points.
fn merged(a: &Plateau, b: &Plateau, (ns, usable): (&[f64], &[bool])) -> Plateau {
    let members: Vec<f64> = (a.first..=b.last)
        .filter(|&i| usable[i])
        .map(|i| ns[i])
        .collect();
    Plateau {
        first: a.first,
        last: b.last,
        value: crate::stats::summary::median(&members),
        points: members.len(),
    }
}

/// Takes the DRAM plateaus off the end of `plateaus`: the slowest (a noisy tail counts as
/// one) and those within `DRAM_CLASS_RATIO` of it; none where fewer than two plateaus.
fn dram_plateaus(plateaus: &mut Vec<Plateau>, ns: &[f64]) -> Vec<Plateau> {
    if let Some(tail) = noisy_tail(ns, plateaus.last()) {
        plateaus.push(tail);
    }
    let mut dram = Vec::new();
    if plateaus.len() < 2 {
        return dram;
    }
    let slowest = plateaus.pop().expect("non-empty");
    while (plateaus.last()).is_some_and(|p| p.value * DRAM_CLASS_RATIO >= slowest.value) {
        dram.insert(0, plateaus.pop().expect("non-empty"));
    }
    dram.push(slowest);
    dram
}

/// Merges the closest neighbours until no more than `wanted` plateaus are left; a surplus
/// that is not close to its neighbour goes to DRAM.
fn merge_surplus(
    plateaus: &mut Vec<Plateau>,
    dram: &mut Vec<Plateau>,
    wanted: usize,
    curve: (&[f64], &[bool]),
) {
    while plateaus.len() > wanted {
        let ratio = |i: usize| plateaus[i + 1].value / plateaus[i].value;
        let k = (0..plateaus.len() - 1)
            .min_by(|&a, &b| ratio(a).total_cmp(&ratio(b)))
            .expect("at least two plateaus");
        if ratio(k) < SURPLUS_MERGE_RATIO {
            let next = plateaus.remove(k + 1);
            plateaus[k] = merged(&plateaus[k], &next, curve);
        } else {
            dram.insert(0, plateaus.pop().expect("non-empty"));
        }
    }
}

/// The cache each plateau is, matched in order to the OS-reported caches nearest in size to
/// where it ends (a warning for each cache with no plateau); L1d, L2, … where the OS
/// reports none.
fn level_names(
    plateaus: &[Plateau],
    points: &[LatencyPoint],
    caches: &[(String, u64)],
    warnings: &mut Vec<WarningKind>,
) -> Vec<(String, Option<u64>)> {
    if caches.is_empty() {
        return (["L1d", "L2", "L3", "L4"].iter())
            .take(plateaus.len())
            .map(|n| (n.to_string(), None))
            .collect();
    }
    let ends: Vec<u64> = plateaus.iter().map(|p| points[p.last].bytes).collect();
    let sizes: Vec<u64> = caches.iter().map(|c| c.1).collect();
    let assignment = assign_in_order(&ends, &sizes);
    for (j, (name, size)) in caches.iter().enumerate() {
        if !assignment.contains(&j) {
            warnings.push(WarningKind::LevelMismatch(format!(
                "the OS reports {name} of {} but no latency plateau was found for it \
                 (its latency may be too close to a neighbour's, or it is shared and busy)",
                Bytes(*size)
            )));
        }
    }
    (assignment.iter())
        .map(|&j| (caches[j].0.clone(), Some(caches[j].1)))
        .collect()
}

/// The point where plateau `p` ends: the largest working set before the `next` level
/// whose latency is still below the midpoint of the two.
fn capacity_index(p: &Plateau, next: Option<&Plateau>, ns: &[f64]) -> usize {
    let Some(next) = next else {
        return p.last;
    };
    let midpoint = (p.value + next.value) / 2.0;
    (p.first..next.first.max(p.first + 1))
        .rev()
        .find(|&j| ns[j] <= midpoint)
        .unwrap_or(p.last)
}

/// A warning when a level holds clearly less (or more) than the OS says. A cache the OS
/// reports as private to one CPU that looks smaller is being shared all the same: by an
/// SMT sibling, or under a hypervisor by another guest's vCPU on the host core's sibling.
fn capacity_warning(name: &str, capacity: u64, os: u64, machine: &Machine) -> Option<WarningKind> {
    let ratio = capacity as f64 / os as f64;
    let private = machine
        .data_caches()
        .iter()
        .find(|c| c.name() == name)
        .is_some_and(|c| c.shared_with_cpus.len() <= 1);
    let why = if private && machine.hypervisor.is_some() {
        "the OS reports it private to this CPU, so another hardware thread on the host's core \
         (probably another guest's vCPU on the SMT sibling) is competing for it"
    } else if private {
        "the OS reports it private to this CPU, so another hardware thread (an SMT sibling) \
         or an interrupt-heavy workload is competing for it"
    } else {
        "it is shared with other cores or tenants, who keep part of it busy"
    };
    if ratio < 0.75 {
        Some(WarningKind::LevelMismatch(format!(
            "{name}: the latency plateau ends at {} but the OS reports {}: {why}; the latency \
             figure is sound, the capacity is what one thread gets now",
            Bytes(capacity),
            Bytes(os)
        )))
    } else if ratio > 2.0 {
        Some(WarningKind::LevelMismatch(format!(
            "{name}: the latency plateau ends at {} but the OS reports only {}: the next level \
             may be too close in latency to tell apart",
            Bytes(capacity),
            Bytes(os)
        )))
    } else {
        None
    }
}
