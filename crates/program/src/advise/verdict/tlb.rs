//! The TLB finding: the huge-page arm that buys the most (or, failing that, costs the
//! most), where the time went (user against system time), what it costs, the exact line
//! to apply it, and, when its runs' system time falls in two groups, what it buys when
//! the memory is ready.

use super::{effect_text, measured, Finding, Sensitivity};
use crate::advise::arms::{ArmKind, Resource};
use crate::advise::facts::MachineFacts;
use crate::advise::profile::ProgramProfile;
use crate::advise::ArmResult;
use crate::stats::change::Verdict;
use crate::units::Bytes;

/// Huge pages: the largest significant speed-up of the huge-page arms.
pub(crate) fn tlb_finding(
    arms: &[ArmResult],
    profile: &ProgramProfile,
    facts: &MachineFacts,
    effect: f64,
    shell: &str,
) -> Finding {
    let candidates: Vec<&ArmResult> = arms
        .iter()
        .filter(|a| a.resource == Resource::Tlb)
        .collect();
    if candidates.is_empty() {
        return Finding::not_measured(
            Resource::Tlb,
            "transparent huge pages are unavailable here (or the preload library could not be made)",
        );
    }
    let best = best_arm(&candidates);
    let mut f = measured(Resource::Tlb, best, effect);
    f.summary = format!("{}: {}", best.label, effect_text(&f));
    let alone = arms
        .iter()
        .find(|a| a.kind == ArmKind::Alone && a.stage == best.stage);
    if let Some(text) = two_modes_text(best, facts.free_page_reporting) {
        f.summary.push_str(&text);
    }
    let sys = |a: &ArmResult| a.system_s.map_or(0.0, |s| s.median);
    let user = |a: &ArmResult| a.user_s.map_or(f64::NAN, |s| s.median);
    let extra_sys = alone.map_or(0.0, |al| sys(best) - sys(al));
    // Where the time went: fewer TLB misses show in user time, faulting huge pages in
    // (zeroing, compaction) in system time.
    let user_change = alone
        .map(|al| (user(best) / user(al) - 1.0) * 100.0)
        .filter(|c| c.is_finite());
    if let Some(u) = user_change {
        f.summary.push_str(&format!(
            "; user time {u:+.1}%, system time {extra_sys:+.2} s a run"
        ));
    }
    let user_gain_only = user_change.is_some_and(|u| u <= -effect)
        && best.time.verdict != Verdict::Better
        && extra_sys > 0.0;
    let huge = best.huge_kib.unwrap_or(0.0);
    f.cost = Some(format!(
        "{} of huge pages on average over a run{}",
        Bytes((huge * 1024.0) as u64),
        if extra_sys > 0.005 {
            format!(", +{extra_sys:.2} s of system time")
        } else {
            String::new()
        }
    ));
    if user_gain_only {
        f.remedy = Some(format!(
            "huge pages cut its user time by {:.0}% (fewer TLB misses), but faulting them in \
             costs {extra_sys:.2} s of system time a run, which this run's length does not \
             repay; a longer-running process pays it once (keep its heap between jobs, or \
             preallocate)",
            -user_change.unwrap_or(0.0)
        ));
    } else if best.time.verdict == Verdict::Worse && huge > 0.0 {
        f.remedy = Some("huge pages slow it down here: leave them off".to_string());
    } else if matches!(
        f.sensitivity,
        Sensitivity::Sensitive | Sensitivity::Slightly
    ) {
        remedy(&mut f, best.kind, &candidates, profile, shell);
    }
    f
}

/// The largest significant speed-up; else, when no arm even estimates a speed-up, the
/// largest significant slowdown (a remedy that costs more than it buys is worth knowing);
/// else huge pages for everything. One remedy slower while another looks faster does not
/// rule huge pages out.
fn best_arm<'a>(candidates: &[&'a ArmResult]) -> &'a ArmResult {
    let speedup = |a: &&ArmResult| -a.ratio.map_or(0.0, |r| r.ratio - 1.0);
    let none_faster = candidates.iter().all(|a| speedup(a) <= 0.0);
    let significant = (candidates.iter()).filter(|a| a.time.verdict == Verdict::Better);
    let slower = (candidates.iter()).filter(|a| none_faster && a.time.verdict == Verdict::Worse);
    significant
        .max_by(|a, b| speedup(a).total_cmp(&speedup(b)))
        .or_else(|| slower.min_by(|a, b| speedup(a).total_cmp(&speedup(b))))
        .or_else(|| candidates.iter().find(|a| a.kind == ArmKind::HugeAll))
        .unwrap_or(&candidates[0])
}

/// The remedy of the arm `kind` that bought the gain, and the lines that apply it; the
/// other remedies' lines only where their own arm measured a gain.
fn remedy(
    f: &mut Finding,
    kind: ArmKind,
    candidates: &[&ArmResult],
    profile: &ProgramProfile,
    shell: &str,
) {
    let top = profile.hot_regions.len();
    match kind {
        ArmKind::MallocHugetlb => {
            f.remedy = Some("glibc's malloc can ask for transparent huge pages itself (glibc ≥ 2.35, no rebuild)".into());
            f.apply
                .push(format!("GLIBC_TUNABLES=glibc.malloc.hugetlb=1 {shell}"));
        }
        ArmKind::HugeTop => {
            f.remedy = Some(format!(
                "huge pages under its {top} hottest regions buy it: madvise them, or let \
                 memscope apply them"
            ));
            f.apply
                .push(format!("memscope pages apply --top {top} -- {shell}"));
            for r in profile.hot_regions.iter().take(3) {
                f.apply.push(format!(
                    "madvise(0x{:x} rounded to 2 MiB, its mapping's length, MADV_HUGEPAGE)  // {}",
                    r.start, r.mapping
                ));
            }
        }
        _ => {
            f.remedy = Some(
                "huge pages under its anonymous memory buy it: madvise(MADV_HUGEPAGE) its large \
                 allocations, or set THP to always"
                    .to_string(),
            );
            let gained = |kind: ArmKind| {
                (candidates.iter()).any(|a| a.kind == kind && a.time.verdict == Verdict::Better)
            };
            if gained(ArmKind::HugeTop) {
                f.apply
                    .push(format!("memscope pages apply --top {top} -- {shell}"));
            }
            if gained(ArmKind::MallocHugetlb) {
                f.apply.push(format!(
                    "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 {shell}   # malloc'd memory only"
                ));
            }
        }
    }
}

/// When the huge-page runs' system time falls in two groups (the pages ready, or paid
/// for at each run), the speed-up of the cheap runs against the program alone, said.
fn two_modes_text(arm: &ArmResult, reporting: bool) -> Option<String> {
    let groups = arm.system_groups.as_ref()?;
    let ratio = groups.cheap_ratio?;
    let cause = if reporting {
        "this VM's balloon hands memory that stays free for about 2 s back to the host \
         (virtio-balloon free page reporting), and a huge page taken from such memory costs \
         the host's fault at first touch; 2 MiB blocks freed just before the run, as by a \
         run with huge pages right before it, are still backed"
    } else {
        "on a VM, guest memory the host backs at first touch does this"
    };
    Some(format!(
        "; its system time fell in two groups: {} run(s) at most {:.2} s, where they ran \
         {:+.1}% (95% CI {:+.1} … {:+.1}%) against it alone, and {} at {:.2} s or more, where \
         faulting the huge pages in cost more ({cause}): what huge pages buy depends on \
         whether the memory is ready",
        groups.cheap_runs,
        groups.cheap_max_sys_s,
        (ratio.ratio - 1.0) * 100.0,
        (ratio.low - 1.0) * 100.0,
        (ratio.high - 1.0) * 100.0,
        groups.costly_runs,
        groups.costly_min_sys_s
    ))
}
