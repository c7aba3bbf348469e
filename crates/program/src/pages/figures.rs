//! The comparable figures of memscope pages (for compare and history; they describe the
//! user's command, not the machine, so none is exported). A record gives two: the share
//! of its signal in the top regions and the regions touched, keyed by the source (their
//! signals differ). `apply` gives its record's and, per arm, the speed-up against 4 KiB
//! pages (with the spread of the per-block ratios) and the median time.

use std::collections::HashMap;

use super::apply::{Arm, ArmResult, PagesApply};
use super::record::PagesRecord;
use super::PagesResult;
use crate::stats::summary::Summary;
use crate::view::figure::{Better, Figure, Figures};

impl Figures for PagesResult {
    fn figures(&self) -> Vec<Figure> {
        let mut figures = match self {
            PagesResult::Record(r) => record_figures(r),
            PagesResult::Apply(a) => apply_figures(a),
        };
        figures.retain(|f| f.value.is_finite());
        figures
    }
}

fn record_figures(r: &PagesRecord) -> Vec<Figure> {
    let touched: Vec<_> = r.regions.iter().filter(|x| x.value > 0.0).collect();
    let Some(last_top) = touched[..r.top.min(touched.len())].last() else {
        return Vec::new();
    };
    let source = r.source.name();
    vec![
        Figure::new(
            "pages",
            format!("record.{source}.top_{}_share_pct", r.top),
            format!("share of {} in the top {} regions", r.signal.name, r.top),
            "%",
            last_top.cumulative_pct,
            Better::Neither,
        ),
        Figure::new(
            "pages",
            format!("record.{source}.regions_touched"),
            format!("2 MiB regions touched ({})", r.signal.name),
            "",
            touched.len() as f64,
            Better::Neither,
        ),
    ]
}

fn apply_figures(a: &PagesApply) -> Vec<Figure> {
    let mut figures = record_figures(&a.record);
    for arm in &a.arms {
        let id = match arm.arm {
            Arm::Baseline => "baseline".to_string(),
            Arm::Top => format!("top_{}", a.top),
            Arm::All => "all".to_string(),
        };
        if let Some(speedup) = arm.speedup.filter(|_| arm.arm != Arm::Baseline) {
            figures.push(
                Figure::new(
                    "pages-apply",
                    format!("arm.{id}.speedup"),
                    format!("speed-up of {} over 4 KiB pages", arm.label),
                    "×",
                    speedup,
                    Better::Higher,
                )
                .spread(speedup_spread_pct(a, arm)),
            );
        }
        if let Some(time) = &arm.time_s {
            let spread = if time.count < 2 {
                f64::NAN
            } else {
                time.spread_pct()
            };
            figures.push(
                Figure::new(
                    "pages-apply",
                    format!("arm.{id}.time_s"),
                    format!("{}: median time", arm.label),
                    "s",
                    time.median,
                    Better::Lower,
                )
                .spread(spread),
            );
        }
    }
    figures
}

/// The robust spread of an arm's speed-ups block by block (the 4 KiB run's time / the
/// arm's run's time in the same block), of which the speed-up is the median; NaN (none)
/// with fewer than two blocks or without block numbers.
fn speedup_spread_pct(a: &PagesApply, arm: &ArmResult) -> f64 {
    let by_block = |x: &ArmResult| -> HashMap<usize, f64> {
        (x.runs.iter())
            .filter(|r| r.block > 0 && r.termination.success())
            .map(|r| (r.block, r.elapsed_s))
            .collect()
    };
    let Some(baseline) = a.arms.iter().find(|x| x.arm == Arm::Baseline) else {
        return f64::NAN;
    };
    let base = by_block(baseline);
    let ratios: Vec<f64> = (by_block(arm).iter())
        .filter_map(|(block, t)| Some(base.get(block)? / t))
        .filter(|r| r.is_finite() && *r > 0.0)
        .collect();
    match Summary::of(&ratios) {
        Some(s) if s.count >= 2 => s.spread_pct(),
        _ => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pages::apply::{ArmRun, OkStatus};
    use crate::pages::regions::{Region, REGION_BYTES};
    use crate::pages::sources::Signal;
    use crate::pages::sources::SourceKind;
    use crate::platform::child::Termination;
    use crate::view::figure::find;
    use std::collections::HashSet;

    fn region(i: u64, value: f64, cumulative_pct: f64) -> Region {
        Region {
            pid: 42,
            process: "demo".into(),
            start: (0x7f00_0000 + i) << 21,
            mapping: "anon".into(),
            anonymous: true,
            value,
            share_pct: 0.0,
            cumulative_pct,
            samples: 0,
            tlb_miss_samples: 0,
            mean_weight: None,
            resident_kb: 2048.0,
            huge_kb: 0.0,
            hugetlb_kb: 0.0,
            huge_mean_kb: 0.0,
        }
    }

    /// Five touched regions (the top 3 hold 90% of the signal) and two untouched.
    fn record() -> PagesRecord {
        let shares = [50.0, 75.0, 90.0, 96.0, 100.0, 100.0, 100.0];
        let regions = (shares.iter().enumerate())
            .map(|(i, &c)| region(i as u64, if i < 5 { 10.0 - i as f64 } else { 0.0 }, c))
            .collect();
        PagesRecord {
            command: vec!["demo".into()],
            source: SourceKind::Refs,
            source_description: "accessed bits".into(),
            sources_not_used: vec![],
            signal: Signal {
                name: "translations touched".into(),
                meaning: String::new(),
            },
            region_bytes: REGION_BYTES,
            top: 3,
            interval_ms: 100.0,
            intervals_used_ms: vec![],
            dropped_s: 0.0,
            top_share_pct: None,
            intervals: 5,
            elapsed_s: 0.5,
            user_s: 0.4,
            system_s: 0.1,
            termination: Termination::Exited(0),
            processes: vec![(42, "demo".into())],
            regions,
            timeline: None,
            notes: vec![],
        }
    }

    /// An arm with one successful run per block (1-based) of the given times.
    fn arm(arm: Arm, times: &[f64], speedup: Option<f64>) -> ArmResult {
        let runs = (times.iter().enumerate())
            .map(|(i, &t)| ArmRun {
                order: i,
                block: i + 1,
                elapsed_s: t,
                user_s: t,
                system_s: 0.0,
                termination: Termination::Exited(0),
                huge_kb: 0.0,
                huge_in_regions_kb: 0.0,
                huge_in_regions_mean_kb: 0.0,
                dtlb: vec![],
            })
            .collect();
        ArmResult {
            arm,
            label: arm.label(3),
            runs,
            time_s: Summary::of(times),
            speedup,
            p_value: None,
            significant: false,
            user_s: 1.0,
            system_s: 0.1,
            huge_kb: 0.0,
            huge_in_regions_mean_kb: 0.0,
            failed_runs: 0,
            dtlb: vec![],
        }
    }

    fn apply(arms: Vec<ArmResult>) -> PagesApply {
        PagesApply {
            command: vec!["demo".into()],
            huge: "thp".into(),
            top: 3,
            top_share_pct: None,
            chosen_share_pct: 90.0,
            ok_status: OkStatus::Code(0),
            regions_from: "a record made just before".into(),
            record: record(),
            ranges: vec![],
            repeat: 6,
            arms,
            regions: vec![],
            record_after: None,
            share_of_speedup_pct: None,
            share_of_huge_memory_pct: None,
            dtlb_not_counted: None,
            notes: vec![],
            process_tree: Default::default(),
        }
    }

    #[test]
    fn a_record_gives_its_top_share_and_regions_touched() {
        let figures = PagesResult::Record(Box::new(record())).figures();
        assert_eq!(figures.len(), 2);
        let share = find(&figures, "pages.record.refs.top_3_share_pct");
        assert_eq!(
            (share.value, share.better, share.unit.as_str()),
            (90.0, Better::Neither, "%")
        );
        assert_eq!(
            share.label,
            "share of translations touched in the top 3 regions"
        );
        assert_eq!(
            find(&figures, "pages.record.refs.regions_touched").value,
            5.0
        );
        assert!(figures
            .iter()
            .all(|f| f.metric.is_none() && f.spread_pct.is_none()));

        let mut empty = record();
        empty.regions.clear();
        assert!(PagesResult::Record(Box::new(empty)).figures().is_empty());
    }

    #[test]
    fn apply_gives_speedups_with_block_spreads_and_times() {
        let base = [2.0, 2.2, 2.4, 2.0, 2.2, 2.4];
        let ratios = [1.2, 1.3, 1.25, 1.2, 1.3, 1.25];
        let top: Vec<f64> = base.iter().zip(ratios).map(|(t, r)| t / r).collect();
        let mut all: Vec<f64> = base.iter().map(|t| t / 1.5).collect();
        all[0] = 2.0;
        let result = apply(vec![
            arm(Arm::Baseline, &base, Some(1.0)),
            arm(Arm::Top, &top, Some(1.25)),
            arm(Arm::All, &all, Some(1.5)),
        ]);
        let figures = PagesResult::Apply(Box::new(result.clone())).figures();
        let keys: HashSet<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys.len(), figures.len(), "unique keys");
        // The record's 2, two speed-ups and three times.
        assert_eq!(figures.len(), 2 + 2 + 3, "{keys:?}");
        assert!(!keys.contains("pages-apply.arm.baseline.speedup"));
        assert!(figures.iter().all(|f| f.metric.is_none()));

        let top = find(&figures, "pages-apply.arm.top_3.speedup");
        assert_eq!((top.section.as_str(), top.value), ("pages-apply", 1.25));
        assert_eq!((top.better, top.unit.as_str()), (Better::Higher, "×"));
        // Ratios 1.25 ± 0.05: MAD 0.05.
        let want = 1.4826 * 0.05 / 1.25 * 100.0;
        assert!((top.spread_pct.unwrap() - want).abs() < 1e-6, "{top:?}");
        // One block of six at 1.0 instead of 1.5: the median absolute deviation stays 0.
        let all = find(&figures, "pages-apply.arm.all.speedup");
        assert_eq!(all.value, 1.5);
        assert!(all.spread_pct.unwrap().abs() < 1e-9);

        let time = find(&figures, "pages-apply.arm.baseline.time_s");
        let summary = result.arms[0].time_s.unwrap();
        assert_eq!((time.value, time.better), (summary.median, Better::Lower));
        assert_eq!(time.spread_pct, Some(summary.spread_pct()));
        assert_eq!(
            find(&figures, "pages.record.refs.top_3_share_pct").section,
            "pages"
        );
    }

    #[test]
    fn without_blocks_a_speedup_has_no_spread() {
        let mut result = apply(vec![
            arm(Arm::Baseline, &[2.0, 2.0], Some(1.0)),
            arm(Arm::Top, &[1.6, 1.5], Some(1.3)),
        ]);
        for run in result.arms.iter_mut().flat_map(|a| &mut a.runs) {
            run.block = 0;
        }
        let figures = PagesResult::Apply(Box::new(result)).figures();
        let top = find(&figures, "pages-apply.arm.top_3.speedup");
        assert_eq!((top.value, top.spread_pct), (1.3, None));
    }
}
