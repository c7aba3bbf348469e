//! Tests of `view.rs`: split out so the module reads as the code it is.

use super::*;
use crate::pages::apply::{ArmResult, ArmRun, OkStatus, RegionOutcome};
use crate::pages::record::{RecordNote, Timeline};
use crate::pages::sources::Signal;
use crate::pages::sources::SourceKind;
use crate::platform::child::Termination;
use crate::stats::summary::Summary;

fn region(start: u64, value: f64) -> Region {
    Region {
        pid: 42,
        process: "demo".into(),
        start,
        mapping: "anon".into(),
        anonymous: true,
        value,
        share_pct: 0.0,
        cumulative_pct: 0.0,
        samples: 0,
        tlb_miss_samples: 0,
        mean_weight: None,
        resident_kb: 2048.0,
        huge_kb: 0.0,
        hugetlb_kb: 0.0,
        huge_mean_kb: 0.0,
    }
}

fn record() -> PagesRecord {
    let regions: Vec<Region> = (0..20u64)
        .map(|i| {
            region(
                (0x7f00_0000 + i) << 21,
                if i < 3 { 500.0 } else { 20.0 - i as f64 },
            )
        })
        .collect();
    PagesRecord {
        command: vec!["demo".into(), "--hot".into(), "3".into()],
        source: SourceKind::Refs,
        source_description: "accessed bits".into(),
        sources_not_used: vec!["pmu: no hardware PMU".into()],
        signal: Signal {
            name: "translations touched".into(),
            meaning: "pages touched per interval, ranked".into(),
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
        timeline: Some(Timeline {
            interval_ms: 100.0,
            regions: regions.iter().take(3).map(|r| (r.pid, r.start)).collect(),
            values: vec![vec![100.0; 5]; 3],
        }),
        regions,
        notes: vec![RecordNote::Said("a note".into())],
    }
}

#[test]
fn a_record_lists_its_top_regions_plots_every_one_and_keeps_all_in_csv() {
    let sections = PagesResult::Record(Box::new(record())).sections();
    assert_eq!(sections.len(), 1);
    let s = &sections[0];
    assert!(s
        .title
        .contains("top 3 of 20 touched 2 MiB regions by translations touched"));
    let top = s.tables()[0];
    assert_eq!(top.rows.len(), 3);
    assert_eq!(top.column_text(1)[0], "0xfe00000000000–0xfe00000200000");
    assert_eq!(top.column_text(2)[0], "anon");
    assert_eq!(top.column_text(3)[0], "500");
    // Two histograms (ranked, address order) and the heat over time.
    assert_eq!(s.charts().len(), 3);
    let data = s.data_tables();
    assert_eq!(data[0].name, "pages_regions");
    assert_eq!(data[0].rows.len(), 20);
    let text = s.plain_text();
    assert!(text.contains("Not used: pmu: no hardware PMU."), "{text}");
    assert!(text.contains("a note"));
}

fn arm(arm: Arm, times: &[f64], speedup: f64, p: Option<f64>, huge_kb: f64) -> ArmResult {
    ArmResult {
        arm,
        label: arm.label(3),
        runs: times
            .iter()
            .enumerate()
            .map(|(i, &t)| ArmRun {
                order: i,
                block: i + 1,
                elapsed_s: t,
                user_s: t,
                system_s: 0.0,
                termination: Termination::Exited(0),
                huge_kb,
                huge_in_regions_kb: huge_kb.min(6144.0),
                huge_in_regions_mean_kb: huge_kb.min(6144.0) / 2.0,
                dtlb: vec![],
            })
            .collect(),
        time_s: Summary::of(times),
        speedup: Some(speedup),
        p_value: p,
        significant: p.is_some_and(|p| p < 0.05),
        user_s: 1.0,
        system_s: 0.1,
        huge_kb,
        huge_in_regions_mean_kb: huge_kb.min(6144.0) / 2.0,
        failed_runs: 0,
        dtlb: vec![],
    }
}

#[test]
fn apply_shows_the_arms_the_trade_off_and_the_regions() {
    let record = record();
    let apply = PagesApply {
        command: record.command.clone(),
        huge: "thp".into(),
        top: 3,
        top_share_pct: None,
        chosen_share_pct: 90.0,
        ok_status: OkStatus::Code(0),
        regions_from: "a record made just before".into(),
        ranges: vec![(0x200000, 0x600000)],
        repeat: 6,
        arms: vec![
            arm(Arm::Baseline, &[2.0; 6], 1.0, None, 0.0),
            arm(Arm::Top, &[1.6; 6], 1.25, Some(0.03), 6144.0),
            arm(Arm::All, &[1.5; 6], 1.3, Some(0.2), 1048576.0),
        ],
        regions: vec![RegionOutcome {
            pid: 42,
            start: 0x200000,
            mapping: "anon".into(),
            before: 500.0,
            after: None,
            huge_kb: 2048.0,
            huge_mean_kb: 512.0,
        }],
        record,
        record_after: None,
        share_of_speedup_pct: Some(83.3),
        share_of_huge_memory_pct: Some(0.6),
        dtlb_not_counted: Some("no hardware PMU".into()),
        notes: vec![],
        process_tree: Default::default(),
    };
    let significant = {
        let mut a = apply.clone();
        a.arms[2].p_value = Some(0.01);
        a.arms[2].significant = true;
        a
    };
    let sections = PagesResult::Apply(Box::new(apply)).sections();
    assert_eq!(sections.len(), 2, "the record, then the comparison");
    let text = PagesResult::Apply(Box::new(significant)).sections()[1].plain_text();
    assert!(
        text.contains("buy 83% of the all-huge speed-up for 0.6%"),
        "{text}"
    );
    let s = &sections[1];
    let text = s.plain_text();
    assert!(
        text.contains("Top 3 regions huge: 1.25× for 6 MiB"),
        "{text}"
    );
    assert!(text.contains("all huge: 1.30× (~) for 1 GiB"), "{text}");
    // The all-huge gain is not significant (p = 0.2): no share of it.
    assert!(!text.contains("of the all-huge speed-up"), "{text}");
    let arms = s.tables()[0];
    assert_eq!(
        arms.column_text(0),
        ["4 KiB pages", "top 3 huge", "all huge"]
    );
    assert_eq!(arms.row_of("top 3 huge")[6], "1.25×");
    assert_eq!(arms.row_of("all huge")[6], "~ (1.30×)");
    let regions = s.tables()[1];
    assert_eq!(regions.row_text(0)[3], format::DASH);
    // A quarter of the run in huge pages, though the peak was the whole region.
    assert_eq!(regions.row_text(0)[4], "25% of the run (peak 2 MiB)");
    // In the chosen regions: the time-weighted mean, not the peak (6 MiB).
    assert_eq!(arms.row_of("top 3 huge")[9], "3 MiB");
    assert_eq!(s.data_tables()[0].rows.len(), 18);
    // The HTML charts of the arms: three bars each, with a whisker per time bar.
    let charts = s.charts();
    assert_eq!(charts.len(), 2);
    let time = crate::render::svg::render(charts[0]);
    assert!(time.contains("Wall time per arm"), "{time}");
    let bars = |svg: &str| {
        svg.lines()
            .filter(|l| l.starts_with("<rect") && l.contains(" fill=\"#") && !l.contains("#ffffff"))
            .filter(|l| !l.contains("fill-opacity") && !l.contains("stroke"))
            .count()
    };
    assert_eq!(bars(&time), 3, "{time}");
    assert_eq!(time.matches("stroke-width=\"1.4\"").count(), 3 * 3);
    assert!(time.contains(">4 KiB pages (±0.0%, 6 runs)<"), "{time}");
    assert!(time.contains(">2.00<") && time.contains(">1.60<"));
    let memory = crate::render::svg::render(charts[1]);
    assert!(
        memory.contains(">6 MiB<") && memory.contains(">1 GiB<"),
        "{memory}"
    );
    // Only the HTML shows them.
    let terminal = crate::render::terminal::render(&sections, false);
    assert!(!terminal.contains("Wall time per arm"));
}
