//! The verdict: per resource, is the program sensitive to it (the strongest arm of the
//! resource against its reference, significant and at least the effect looked for), by
//! how much with its 95% interval, and for each remedy how to apply it and what it costs;
//! the cache and bandwidth curves read for the capacity (or bandwidth) below which the
//! program loses more than the effect. A program no arm moves is "not memory-bound here".

use std::ffi::OsString;

use serde::{Deserialize, Serialize};

use super::arms::{ArmKind, Direction, Resource};
use super::facts::MachineFacts;
use super::profile::ProgramProfile;
use super::{ArmResult, CoRunnerCalibration, CpuPlan, PirateSite, Stop};
use tlb::tlb_finding;

mod tlb;
use crate::stats::change::Verdict;
use crate::units::Bytes;
use crate::view::format;

/// How sensitive the program is to a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sensitivity {
    /// Significant, and at least the effect looked for.
    Sensitive,
    /// Significant but smaller than the effect.
    Slightly,
    /// Not significant, and the 95% interval rules out an effect of the size looked for.
    NotSensitive,
    /// Not significant with an interval too wide to rule it out, or too few runs.
    Unresolved,
    /// Not measured here (the finding says why).
    NotMeasured,
    /// A remedy that makes it significantly slower: its cost outweighs what it buys.
    Hurts,
}

impl Sensitivity {
    pub fn word(self) -> &'static str {
        match self {
            Sensitivity::Sensitive => "sensitive",
            Sensitivity::Slightly => "slightly sensitive",
            Sensitivity::NotSensitive => "not sensitive",
            Sensitivity::Unresolved => "unresolved",
            Sensitivity::NotMeasured => "not measured",
            Sensitivity::Hurts => "slower with it",
        }
    }
}

/// One line of the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub resource: Resource,
    pub sensitivity: Sensitivity,
    /// The arm it rests on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<String>,
    /// The program's time in that arm against its reference, percent (+: slower), with
    /// its 95% interval, and the test's p.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_pct: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    /// What was measured, in a sentence.
    pub summary: String,
    /// What to do, and exactly how (commands, environment lines, code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
    #[serde(default)]
    pub apply: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<String>,
    /// Unresolved at the end: about how many seconds more runs would take to decide it
    /// against ±effect (from the spread so far).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_s: Option<f64>,
}

impl Finding {
    pub(crate) fn not_measured(resource: Resource, why: impl Into<String>) -> Finding {
        Finding {
            resource,
            sensitivity: Sensitivity::NotMeasured,
            arm: None,
            change_pct: None,
            interval_pct: None,
            p: None,
            summary: why.into(),
            remedy: None,
            apply: Vec::new(),
            cost: None,
            more_s: None,
        }
    }

    /// The size of the effect, for ranking: the resources before the controls.
    fn weight(&self) -> f64 {
        let control = if self.resource == Resource::Control {
            -5000.0
        } else {
            0.0
        };
        let rank = match self.sensitivity {
            Sensitivity::Sensitive => 3.0,
            Sensitivity::Slightly => 2.0,
            Sensitivity::Hurts => 1.5,
            Sensitivity::NotSensitive | Sensitivity::Unresolved => 1.0,
            Sensitivity::NotMeasured => 0.0,
        };
        control + rank * 1000.0 + self.change_pct.map_or(0.0, f64::abs).min(999.0)
    }
}

/// A finding from one arm's comparison. A significant change the way the arm's kind
/// shows a sensitivity is one; a remedy that slows it hurts; an arm taking a resource
/// away that makes it faster shows nothing about that resource (unresolved).
fn measured(resource: Resource, arm: &ArmResult, effect_pct: f64) -> Finding {
    let change = arm.time.change_pct;
    let moved = match arm.time.verdict {
        Verdict::Better => Some(Direction::Faster),
        Verdict::Worse => Some(Direction::Slower),
        _ => None,
    };
    let expected = arm.kind.sensitive_when();
    let sensitivity = match (moved, expected) {
        (Some(m), Some(e)) if m != e => match e {
            Direction::Faster => Sensitivity::Hurts,
            Direction::Slower => Sensitivity::Unresolved,
        },
        (Some(_), _) => {
            if change.is_some_and(|c| c.abs() >= effect_pct) {
                Sensitivity::Sensitive
            } else {
                Sensitivity::Slightly
            }
        }
        // Not significant: "not sensitive" only when the interval rules out an effect
        // of the size looked for; else the runs could not tell.
        (None, _) if arm.time.verdict == Verdict::NoChange => match arm.ratio {
            Some(r)
                if (r.low - 1.0) * 100.0 > -effect_pct && (r.high - 1.0) * 100.0 < effect_pct =>
            {
                Sensitivity::NotSensitive
            }
            _ => Sensitivity::Unresolved,
        },
        (None, _) => Sensitivity::Unresolved,
    };
    Finding {
        resource,
        sensitivity,
        arm: Some(arm.label.clone()),
        change_pct: arm.change_pct(),
        interval_pct: arm
            .ratio
            .map(|r| ((r.low - 1.0) * 100.0, (r.high - 1.0) * 100.0)),
        p: arm.time.p,
        summary: String::new(),
        remedy: None,
        apply: Vec::new(),
        cost: None,
        more_s: (sensitivity == Sensitivity::Unresolved)
            .then_some(arm.more_s)
            .flatten(),
    }
}

/// "+24.1% (95% CI +18.0 … +30.2%, p = 0.002)".
pub(crate) fn effect_text(f: &Finding) -> String {
    let Some(change) = f.change_pct else {
        return "–".to_string();
    };
    let mut text = format!("{change:+.1}%");
    if let Some((lo, hi)) = f.interval_pct {
        text.push_str(&format!(" (95% CI {lo:+.1} … {hi:+.1}%"));
        if let Some(p) = f.p {
            text.push_str(&format!(", p = {}", p_text(p)));
        }
        text.push(')');
    }
    text
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".to_string()
    } else {
        format!("{p:.3}")
    }
}

/// The arms of a kind, stage 1's first.
fn arms_of(arms: &[ArmResult], kind: ArmKind) -> Vec<&ArmResult> {
    arms.iter().filter(|a| a.kind == kind).collect()
}

/// The findings, most important first, and whether no resource moved the program.
pub fn findings(
    arms: &[ArmResult],
    facts: &MachineFacts,
    profile: &ProgramProfile,
    cpus: &CpuPlan,
    calibration: Option<&CoRunnerCalibration>,
    effect_pct: f64,
    command: &[OsString],
) -> (Vec<Finding>, bool) {
    let shell = format::shell_words(
        &command
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect::<Vec<_>>(),
    );
    let cache = cache_finding(arms, facts, cpus, effect_pct);
    let mut out = vec![
        cache.clone(),
        bandwidth_finding(arms, cpus, calibration, effect_pct, &cache),
        tlb_finding(arms, profile, facts, effect_pct, &shell),
        placement_finding(arms, cpus, effect_pct),
    ];
    out.extend(control_findings(arms, cpus, effect_pct));
    out.sort_by(|a, b| b.weight().total_cmp(&a.weight()));
    let moved = out
        .iter()
        .any(|f| f.resource != Resource::Control && f.sensitivity == Sensitivity::Sensitive);
    // Not memory-bound: nothing moved it by the effect looked for, and every resource
    // measured rules out an effect of that size (a remedy that slows it rules out its
    // gain; a slight change counts where its whole interval stays within the effect).
    let measured: Vec<&Finding> = out
        .iter()
        .filter(|f| f.resource != Resource::Control && f.sensitivity != Sensitivity::NotMeasured)
        .collect();
    let ruled_out = !measured.is_empty()
        && measured.iter().all(|f| match f.sensitivity {
            Sensitivity::NotSensitive | Sensitivity::Hurts => true,
            Sensitivity::Slightly => f
                .interval_pct
                .is_some_and(|(low, high)| low > -effect_pct && high < effect_pct),
            _ => false,
        });
    (out, !moved && ruled_out)
}

/// Cache capacity: the largest pirate against the compute neighbour, and the curve.
fn cache_finding(arms: &[ArmResult], facts: &MachineFacts, cpus: &CpuPlan, effect: f64) -> Finding {
    if let Some(f) = cat_finding(arms, facts, effect) {
        return f;
    }
    // Beside the program, else in turns with it on its CPU.
    let mut pirates = arms_of(arms, ArmKind::Pirate);
    let in_turns = pirates.is_empty();
    if in_turns {
        pirates = arms_of(arms, ArmKind::PirateInTurns);
    }
    // Beside: the largest set; in turns: the screening's (its reference ran beside it).
    let top = if in_turns {
        pirates.iter().find(|a| a.stage == 1)
    } else {
        pirates
            .iter()
            .max_by(|a, b| a.level.unwrap_or(0.0).total_cmp(&b.level.unwrap_or(0.0)))
    };
    let Some(top) = top else {
        let why = match cpus.pirate {
            PirateSite::Nowhere => {
                "no cache pirate ran: the LLC's size is unknown here, or the pirate holds \
                 none of its sets alone (see the notes)"
            }
            _ => "the cache pirate did not run (see the notes)",
        };
        return Finding::not_measured(Resource::Cache, why);
    };
    let mut f = measured(Resource::Cache, top, effect);
    // In turns, the control alone may cost what the pirate would show: then only a clear
    // slowdown beyond the control is a verdict, and no slowdown is none.
    let control = arms
        .iter()
        .find(|a| a.kind == ArmKind::ComputeInTurns)
        .and_then(|a| {
            a.paired
                .filter(|p| p.pairs >= 3 && p.change_pct() >= effect)
        });
    if let (true, Some(c), false) = (in_turns, control, f.sensitivity == Sensitivity::Sensitive) {
        return Finding::not_measured(
            Resource::Cache,
            format!(
                "unmeasurable here: a thread that touches no memory taking turns with it on \
                 its CPU changes its CPU time by {:+.1}% by itself, and the pirate in turns \
                 was not told apart from it ({}; on a machine where another CPU shares its \
                 last-level cache, the pirate runs beside it instead)",
                c.change_pct(),
                effect_text(&f)
            ),
        );
    }
    let llc_name = facts.llc_name.clone().unwrap_or_else(|| "LLC".into());
    let llc = facts.llc_share_bytes().unwrap_or(0);
    let left = top.co_runner.and_then(|c| c.cache_left_bytes);
    let held = top.co_runner.and_then(|c| c.held_share);
    let mut left_text = match left {
        Some(l) => format!(
            "{} of its {} {llc_name} share left",
            Bytes(l as u64),
            Bytes(llc)
        ),
        None => format!(
            "a pirate holding {}",
            Bytes(top.level.unwrap_or(0.0) as u64)
        ),
    };
    if in_turns {
        left_text.push_str(" at the start of each of its turns (a pirate in turns on its CPU)");
    }
    let timing = if in_turns { " in CPU time" } else { "" };
    f.summary = match f.sensitivity {
        Sensitivity::Sensitive | Sensitivity::Slightly => {
            format!("with {left_text} it runs {}{timing}", effect_text(&f))
        }
        _ => format!("with {left_text}: {}{timing}", effect_text(&f)),
    };
    if let Some(h) = held.filter(|h| *h < 0.5 && !in_turns) {
        f.summary.push_str(&format!(
            "; the pirate kept only {:.0}% of its set cached (the program took the rest back)",
            h * 100.0
        ));
    }
    if f.sensitivity == Sensitivity::Sensitive && in_turns {
        f.remedy = Some(in_turns_remedy(&pirates, &llc_name));
    } else if f.sensitivity == Sensitivity::Sensitive {
        let needs = needed_capacity(&pirate_curve(&pirates), llc as f64, effect);
        f.remedy = Some(beside_remedy(needs, &llc_name, &left_text, &f, effect));
    }
    f
}

/// The pirates' curve: the cache each left the program against the change it made.
fn pirate_curve(pirates: &[&ArmResult]) -> Vec<(f64, f64)> {
    (pirates.iter())
        .filter_map(|a| {
            let left = a.co_runner?.cache_left_bytes?;
            let change = a.ratio.map(|r| (r.ratio - 1.0) * 100.0)?;
            Some((left, change))
        })
        .collect()
}

/// What a cache-sensitive program measured beside a pirate is told: the capacity it needs
/// to stay within the effect, where the curve tells it.
fn beside_remedy(
    needs: Option<f64>,
    llc_name: &str,
    left_text: &str,
    f: &Finding,
    effect: f64,
) -> String {
    match needs {
        Some(n) => format!(
            "needs ≥ {} of {llc_name} to stay within {effect:.0}%: with {left_text} it \
             loses {:.0}%. Shrink the working set (blocking, smaller types), or give it \
             the cache (fewer co-tenants on its {llc_name}; with resctrl, L3 CAT ways)",
            Bytes(n as u64),
            f.change_pct.unwrap_or(0.0)
        ),
        None => format!(
            "its speed depends on the {llc_name} it keeps: shrink the working set \
             (blocking, smaller types), or give it the cache (fewer co-tenants; with \
             resctrl, L3 CAT ways)"
        ),
    }
}

/// What a cache-sensitive program measured in turns is told: the CPU time each pirate
/// set cost it, and why no capacity is read off.
fn in_turns_remedy(pirates: &[&ArmResult], llc_name: &str) -> String {
    let mut points: Vec<(f64, f64)> = pirates
        .iter()
        .filter_map(|a| Some((a.level?, (a.ratio?.ratio - 1.0) * 100.0)))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let curve = points
        .iter()
        .map(|(bytes, change)| format!("{}: {change:+.0}%", Bytes(*bytes as u64)))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "its speed depends on the data it keeps in the caches: a pirate interrupting it on \
         its CPU every {} ms to sweep a set costs it this much CPU time, by the set swept: \
         {curve}. How much {llc_name} it needs is not read off in turns (it refills its data \
         at every turn); where another CPU shares its {llc_name}, advise measures that. \
         Shrink the working set (blocking, smaller types), and keep other work off its CPU \
         and its {llc_name}",
        crate::kernels::corunner::BURST_PERIOD.as_millis()
    )
}

/// The capacity below which the curve loses more than `effect` percent: between the
/// point with the least cache still within it and the next point beyond it (linear), or
/// the whole cache when even the smallest pirate costs more. `None` when no point is
/// beyond the effect.
pub(crate) fn needed_capacity(curve: &[(f64, f64)], full: f64, effect: f64) -> Option<f64> {
    let mut points = curve.to_vec();
    points.push((full, 0.0));
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let beyond = points.iter().rposition(|p| p.1 > effect)?;
    let (x0, y0) = points[beyond];
    match points.get(beyond + 1) {
        Some(&(x1, y1)) if y0 != y1 => Some(x0 + (x1 - x0) * (y0 - effect) / (y0 - y1)),
        _ => Some(x0),
    }
}

/// DRAM bandwidth: the flat-out bandit against the compute neighbour.
fn bandwidth_finding(
    arms: &[ArmResult],
    cpus: &CpuPlan,
    calibration: Option<&CoRunnerCalibration>,
    effect: f64,
    cache: &Finding,
) -> Finding {
    if let Some(f) = mba_finding(arms, effect) {
        return f;
    }
    let bandits = arms_of(arms, ArmKind::Bandit);
    let Some(top) = bandits.iter().find(|a| a.level.is_none()) else {
        let why = if cpus.co_runner.is_none() {
            "needs a second CPU for the bandwidth bandit"
        } else {
            "the bandit could not run"
        };
        return Finding::not_measured(Resource::Bandwidth, why);
    };
    let mut f = measured(Resource::Bandwidth, top, effect);
    let took = top.co_runner.map(|c| c.bytes_per_s).unwrap_or(f64::NAN);
    let alone = calibration.map_or(f64::NAN, |c| c.bandit_max_bytes_per_s);
    // What it wrote beside the program against what it writes alone: the program's share
    // of the DRAM is what the bandit did not get.
    let took_text = match (took.is_finite(), alone.is_finite() && alone > 0.0) {
        (true, true) => format!(
            "a bandit writing {:.1} GB/s ({:.0}% of the {:.1} GB/s it writes alone)",
            took / 1e9,
            took / alone * 100.0,
            alone / 1e9
        ),
        (true, false) => format!("a bandit writing {:.1} GB/s", took / 1e9),
        _ => "a bandit".to_string(),
    };
    f.summary = format!("beside {took_text}: {}", effect_text(&f));
    let moved = matches!(
        f.sensitivity,
        Sensitivity::Sensitive | Sensitivity::Slightly
    );
    match takes_cache(calibration, cpus).filter(|_| moved) {
        // Its slowdown beside the bandit may be the cache the bandit took.
        Some(how) if cache.sensitivity == Sensitivity::Sensitive => {
            f.sensitivity = Sensitivity::Unresolved;
            f.summary.push_str(&format!(
                "; not told apart from its cache sensitivity: the bandit slows what the cache \
                 holds too here ({how})"
            ));
        }
        Some(how) => f.summary.push_str(&format!(
            "; the bandit slows what the cache holds too here ({how}), so for a program \
             that is also cache-sensitive part of this is cache"
        )),
        None => {}
    }
    if f.sensitivity == Sensitivity::Sensitive {
        f.remedy = Some(
            "it needs DRAM bandwidth: move fewer bytes (smaller types, compression, fusing \
             passes, non-temporal stores for data written once), or run it beside fewer \
             bandwidth-heavy neighbours; on a multi-socket machine, spread its memory and \
             threads over the nodes"
                .to_string(),
        );
        f.summary.push_str(
            "; without a PMU, latency and parallelism limits are not told apart: a loaded \
             DRAM is both slower and shared",
        );
    }
    f
}

/// Whether the bandit slows what the cache holds for the program, and how that is known:
/// the pirate's smallest set walked clearly slower (1.5×) beside it than alone (measured
/// directly: cache the bandit took, or DRAM it loaded for the lines the set misses), or
/// the OS says the two CPUs share the LLC (or the pirate ran beside), which the sharing
/// check's slow walker cannot rule out (on our guests the cache demo ran +562% beside the
/// streaming bandit of an earlier build in a run whose check found no shared cache).
fn takes_cache(calibration: Option<&CoRunnerCalibration>, cpus: &CpuPlan) -> Option<String> {
    let factor = calibration.and_then(|c| {
        let alone = c.pirate_alone_ns.first()?.1;
        Some(c.pirate_beside_bandit_ns / alone)
    });
    match factor {
        Some(f) if f.is_finite() && f > 1.5 => Some(format!(
            "it made the pirate's smallest set {f:.1}× slower to walk"
        )),
        _ if cpus.shares_llc || cpus.pirate == PirateSite::Beside => Some(
            "it writes through a last-level cache the OS says it shares with the program; \
             the sharing check's slower walk cannot rule out that it takes some"
                .into(),
        ),
        _ => None,
    }
}

/// Cache capacity from resctrl's L3 CAT arms (used instead of the pirate where they
/// ran): the fewest ways kept against the program alone, and the curve of the L3 kept.
fn cat_finding(arms: &[ArmResult], facts: &MachineFacts, effect: f64) -> Option<Finding> {
    let cats = arms_of(arms, ArmKind::CatWays);
    let top = cats
        .iter()
        .min_by(|a, b| a.level.unwrap_or(0.0).total_cmp(&b.level.unwrap_or(0.0)))?;
    let mut f = measured(Resource::Cache, top, effect);
    let llc_name = facts.llc_name.clone().unwrap_or_else(|| "L3".into());
    let llc = facts.llc_bytes.unwrap_or(0);
    let kept = top.level.unwrap_or(0.0);
    let kept_text = format!(
        "restricted by L3 CAT to {} of the {} {llc_name}",
        Bytes(kept as u64),
        Bytes(llc)
    );
    f.summary = match f.sensitivity {
        Sensitivity::Sensitive | Sensitivity::Slightly => {
            format!("{kept_text}, it runs {}", effect_text(&f))
        }
        _ => format!("{kept_text}: {}", effect_text(&f)),
    };
    if f.sensitivity == Sensitivity::Sensitive {
        let curve: Vec<(f64, f64)> = cats
            .iter()
            .filter_map(|a| Some((a.level?, a.ratio.map(|r| (r.ratio - 1.0) * 100.0)?)))
            .collect();
        f.remedy = Some(match needed_capacity(&curve, llc as f64, effect) {
            Some(n) => format!(
                "needs ≥ {} of {llc_name} to stay within {effect:.0}%: {kept_text}, it loses \
                 {:.0}%. Shrink the working set (blocking, smaller types), or give it the \
                 cache (a resctrl group with enough L3 CAT ways for it, fewer co-tenants)",
                Bytes(n as u64),
                f.change_pct.unwrap_or(0.0)
            ),
            None => format!(
                "its speed depends on the {llc_name} it keeps: shrink the working set \
                 (blocking, smaller types), or give it the cache (L3 CAT ways, fewer \
                 co-tenants)"
            ),
        });
    }
    Some(f)
}

/// DRAM bandwidth from resctrl's MBA arms (used instead of the bandit where they ran:
/// they take bandwidth without taking cache): the strongest throttle against the
/// program alone.
fn mba_finding(arms: &[ArmResult], effect: f64) -> Option<Finding> {
    let top = arms_of(arms, ArmKind::MbaThrottle)
        .into_iter()
        .min_by(|a, b| a.level.unwrap_or(0.0).total_cmp(&b.level.unwrap_or(0.0)))?;
    let mut f = measured(Resource::Bandwidth, top, effect);
    f.summary = format!(
        "throttled by MBA to {:.0}% of the memory bandwidth: {}",
        top.level.unwrap_or(0.0),
        effect_text(&f)
    );
    if f.sensitivity == Sensitivity::Sensitive {
        f.remedy = Some(
            "it needs DRAM bandwidth: move fewer bytes (smaller types, compression, fusing \
             passes, non-temporal stores for data written once), or run it beside fewer \
             bandwidth-heavy neighbours"
                .to_string(),
        );
    }
    Some(f)
}

/// NUMA placement: interleaved (evenly, and in the system's weights where measured)
/// against local; the arm that buys the most, else the even one.
fn placement_finding(arms: &[ArmResult], cpus: &CpuPlan, effect: f64) -> Finding {
    let spread: Vec<&ArmResult> = arms
        .iter()
        .filter(|a| matches!(a.kind, ArmKind::Interleave | ArmKind::WeightedInterleave))
        .collect();
    let speedup = |a: &&ArmResult| -a.ratio.map_or(0.0, |r| r.ratio - 1.0);
    let best = spread
        .iter()
        .filter(|a| a.time.verdict == Verdict::Better)
        .max_by(|a, b| speedup(a).total_cmp(&speedup(b)))
        .or_else(|| spread.iter().find(|a| a.kind == ArmKind::Interleave));
    let Some(arm) = best else {
        return Finding::not_measured(
            Resource::Placement,
            format!(
                "{} NUMA node(s) with memory: local against interleaved needs two or more",
                cpus.memory_nodes
            ),
        );
    };
    let mut f = measured(Resource::Placement, arm, effect);
    let how = match arm.kind {
        ArmKind::WeightedInterleave => "in the ratio of the system's weighted-interleave weights",
        _ => "evenly",
    };
    f.summary = format!(
        "memory interleaved over every node {how}: {}",
        effect_text(&f)
    );
    if arm.time.verdict == Verdict::Better {
        f.remedy = Some("interleaving its memory buys it (bandwidth of every node)".into());
        f.apply.push(match arm.kind {
            ArmKind::WeightedInterleave => "numactl --weighted-interleave=all <command>   # \
                 numactl 2.0.19+; `memscope interleave` measures the weights to set"
                .into(),
            _ => "numactl --interleave=all <command>".into(),
        });
    }
    f
}

/// What the co-runner's presence and the CPU it takes cost by themselves, when
/// significant.
fn control_findings(arms: &[ArmResult], cpus: &CpuPlan, effect: f64) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(a) = arms
        .iter()
        .find(|a| a.kind == ArmKind::Compute && a.stage == 1)
    {
        let mut f = measured(Resource::Control, a, effect);
        if matches!(
            f.sensitivity,
            Sensitivity::Sensitive | Sensitivity::Slightly
        ) {
            f.summary =
                format!(
                "a busy neighbour CPU that touches no memory changes it by {}{}: the pirate and \
                 the bandit are read against that neighbour",
                effect_text(&f),
                if cpus.smt_sibling { " (an SMT sibling)" } else { "" }
            );
            out.push(f);
        }
    }
    if let Some(a) = arms
        .iter()
        .find(|a| a.kind == ArmKind::ComputeInTurns && a.stage == 1)
    {
        let mut f = measured(Resource::Control, a, effect);
        if matches!(
            f.sensitivity,
            Sensitivity::Sensitive | Sensitivity::Slightly
        ) {
            f.summary = format!(
                "a thread that touches no memory taking turns with it on its CPU changes its \
                 CPU time by {}: the pirate in turns is read against that thread",
                effect_text(&f)
            );
            out.push(f);
        }
    }
    if let Some(a) = arms
        .iter()
        .find(|a| a.kind == ArmKind::AllCpus && a.stage == 1)
    {
        let mut f = measured(Resource::Control, a, effect);
        if matches!(
            f.sensitivity,
            Sensitivity::Sensitive | Sensitivity::Slightly
        ) {
            f.summary = format!(
                "giving the co-runner CPU {} changes the program's speed by itself: on every \
                 CPU it runs {} against its CPUs alone",
                cpus.co_runner.unwrap_or_default(),
                effect_text(&f)
            );
            out.push(f);
        }
    }
    out
}

/// When the program ran clearly faster on every CPU — significantly, or by the estimate
/// when it keeps more than one CPU busy (its CPU time beyond its wall time): it uses more
/// CPUs than advise leaves it, which the reader must know. A single-threaded program's
/// unresolved estimate is noise, not a reason to warn.
pub(crate) fn cpus_note(arms: &[ArmResult], effect: f64) -> Option<String> {
    let all = arms.iter().find(|a| a.kind == ArmKind::AllCpus)?;
    let change = all.time.change_pct?;
    let alone = arms.iter().find(|a| a.kind == ArmKind::Alone)?;
    let cpu = alone.user_s.as_ref()?.median + alone.system_s.as_ref()?.median;
    let parallel = alone
        .time
        .summary
        .as_ref()
        .is_some_and(|wall| cpu > 1.1 * wall.median);
    let faster = all.time.verdict == Verdict::Better || parallel;
    (change <= -effect && faster).then(|| {
        format!(
            "on every CPU (the co-runner's too) it ran {change:+.0}%: it uses more CPUs than \
             advise leaves it while a co-runner runs, so its sensitivities were measured with \
             one CPU fewer (limit its threads, e.g. OMP_NUM_THREADS, to compare like with like)"
        )
    })
}

/// Why the measuring stopped, when the reader should know.
pub(crate) fn budget_note(
    stop: Stop,
    limit: std::time::Duration,
    one_run: f64,
    arms: usize,
) -> Option<String> {
    match stop {
        Stop::TimeLimit => Some(format!(
            "the time limit ({}) ended the measuring before every arm was resolved: one run \
             takes {:.2} s and a block of the screening's {arms} arms {:.1} s; a longer \
             --time-limit narrows the intervals",
            humantime::format_duration(std::time::Duration::from_secs(limit.as_secs())),
            one_run,
            one_run * arms as f64
        )),
        Stop::Interrupted => {
            Some("interrupted (Ctrl-C): the verdict rests on the blocks completed".into())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_needed_capacity_is_read_off_the_curve() {
        // 24 MiB left: 0%; 16 MiB: 3%; 8 MiB: 30% → crosses 5% between 8 and 16 MiB.
        let mib = 1048576.0;
        let curve = [(24.0 * mib, 0.0), (16.0 * mib, 3.0), (8.0 * mib, 30.0)];
        let n = needed_capacity(&curve, 32.0 * mib, 5.0).unwrap();
        let expected = 8.0 * mib + 8.0 * mib * (30.0 - 5.0) / 27.0;
        assert!((n - expected).abs() < 1.0, "{n} vs {expected}");
        assert_eq!(needed_capacity(&[(8.0 * mib, 2.0)], 32.0 * mib, 5.0), None);
        // Beyond the effect even at the most cache measured below the whole.
        let all = needed_capacity(&[(24.0 * mib, 9.0)], 32.0 * mib, 5.0).unwrap();
        assert!(all > 24.0 * mib && all < 32.0 * mib);
    }

    #[test]
    fn the_bandit_takes_cache_when_the_pirate_walks_slower_beside_it() {
        use crate::kernels::corunner::SharingCheck;
        let with = |beside_bandit_ns| CoRunnerCalibration {
            pirate_alone_ns: vec![(4 << 20, 12.0)],
            dram_ns: 150.0,
            bandit_max_bytes_per_s: 1e10,
            pirate_beside_bandit_ns: beside_bandit_ns,
            bandit_huge: true,
            // The sharing check's slow walker found no shared cache: the calibration's
            // direct measurement still counts.
            sharing: Some(SharingCheck {
                bytes: 16 << 20,
                other_bytes: 32 << 20,
                alone_ns: 16.0,
                beside_ns: 16.5,
            }),
        };
        let apart = CpuPlan {
            program: vec![0],
            co_runner: Some(1),
            shares_llc: false,
            smt_sibling: false,
            memory_nodes: 1,
            pirate: PirateSite::InTurns,
            cpu_bound: false,
        };
        assert!(takes_cache(Some(&with(25.0)), &apart).is_some());
        assert_eq!(takes_cache(Some(&with(14.0)), &apart), None);
        // One shared cache (by the OS): the stream evicts a slower program.
        let shared = CpuPlan {
            shares_llc: true,
            ..apart
        };
        assert!(takes_cache(Some(&with(14.0)), &shared).is_some());
    }
}
