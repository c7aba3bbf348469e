//! The comparable figures of memscope sweep (for compare and history; they describe the
//! user's benchmarks, not the machine, so none is exported): per benchmark × variant ×
//! figure (wall time, each metric) the median, with the spread its 95% interval implies
//! (half the width / 1.96, relative to the median) and the figure's own direction.

use super::{Better as Direction, SweepResult};
use crate::view::figure::{Better, Figure, Figures};

impl Figures for SweepResult {
    fn figures(&self) -> Vec<Figure> {
        let id = |text: &str| text.split_whitespace().collect::<Vec<_>>().join("_");
        let mut figures = Vec::new();
        for cell in &self.cells {
            let (Some(bench), Some(variant)) = (
                self.benchmarks.get(cell.benchmark),
                self.variants.get(cell.variant),
            ) else {
                continue;
            };
            for (measure, stat) in self.measures.iter().zip(&cell.measures) {
                let Some(summary) = stat.summary else {
                    continue;
                };
                let spread = stat
                    .interval
                    .map_or(f64::NAN, |i| i.half_width_pct(summary.median) / 1.96);
                let better = match measure.better {
                    Direction::Higher => Better::Higher,
                    Direction::Lower => Better::Lower,
                };
                figures.push(
                    Figure::new(
                        "sweep",
                        format!(
                            "{}.{}.{}",
                            id(&bench.name),
                            id(&variant.label),
                            id(&measure.label)
                        ),
                        format!("{}, {}: {}", bench.name, variant.label, measure.label),
                        &measure.unit,
                        summary.median,
                        better,
                    )
                    .spread(spread),
                );
            }
        }
        figures.retain(|f| f.value.is_finite());
        figures
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::sweep::analysis::{compare, Cell};
    use crate::sweep::template::{Assignment, Parameter};
    use crate::sweep::{Benchmark, Measure, Stop, VariantInfo};
    use crate::view::figure::find;
    use std::collections::HashSet;

    const WALL: [&[f64]; 2] = [
        &[1.00, 1.02, 0.98, 1.01, 0.99, 1.00, 1.03, 0.97],
        &[0.80, 0.81, 0.79, 0.80, 0.82, 0.78, 0.80, 0.80],
    ];
    const OPS: [&[f64]; 2] = [&[100.0; 8], &[]];

    fn measure(label: &str, unit: &str, better: Direction) -> Measure {
        Measure {
            label: label.into(),
            unit: unit.into(),
            better,
            source: String::new(),
        }
    }

    /// One benchmark on two variants (RING=16, the baseline, and RING=64); wall time and
    /// an "ops per s" metric, found only in the baseline's output.
    pub(in crate::sweep) fn sweep() -> SweepResult {
        let measures = vec![
            measure("wall time", "s", Direction::Lower),
            measure("ops per s", "", Direction::Higher),
        ];
        let variant = |ring: &str| VariantInfo {
            label: format!("RING={ring}"),
            values: Assignment(vec![("RING".into(), ring.into())]),
            build_s: None,
            footprint: None,
        };
        let cells = (0..2)
            .map(|v| Cell {
                benchmark: 0,
                variant: v,
                runs: 8,
                failed: 0,
                failures: vec![],
                measures: vec![
                    compare(WALL[v], WALL[0], Direction::Lower, v == 0),
                    compare(OPS[v], OPS[0], Direction::Higher, v == 0),
                ],
                user_s: None,
                system_s: None,
                max_rss_kib: None,
                events: vec![],
                derived: vec![],
            })
            .collect();
        SweepResult {
            parameters: vec![Parameter {
                name: "RING".into(),
                values: vec!["16".into(), "64".into()],
            }],
            variants: vec![variant("16"), variant("64")],
            baseline: 0,
            benchmarks: vec![Benchmark {
                name: "ring bench".into(),
                words: vec!["./bench".into()],
            }],
            build: None,
            measures,
            events: vec![],
            warmup_blocks: 1,
            blocks: 8,
            stop: Stop::Fixed,
            effect_pct: 2.0,
            measured_s: 10.0,
            runs: vec![],
            cells,
            notes: vec![],
            process_tree: Default::default(),
        }
    }

    #[test]
    fn every_cell_and_figure_with_a_median_and_its_interval_spread() {
        let result = sweep();
        let figures = result.figures();
        let keys: HashSet<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys.len(), figures.len(), "unique keys");
        assert!(figures
            .iter()
            .all(|f| f.section == "sweep" && f.metric.is_none()));
        // Two wall times, one metric (never found for RING=64).
        assert_eq!(figures.len(), 3, "{keys:?}");

        let wall = find(&figures, "sweep.ring_bench.RING=64.wall_time");
        let stat = &result.cell(0, 1).measures[0];
        let median = stat.summary.unwrap().median;
        assert_eq!((wall.value, wall.unit.as_str()), (median, "s"));
        assert_eq!(wall.label, "ring bench, RING=64: wall time");
        assert_eq!(wall.better, Better::Lower);
        let half = stat.interval.unwrap().half_width_pct(median);
        assert!(half > 0.0);
        assert!((wall.spread_pct.unwrap() - half / 1.96).abs() < 1e-12);
        assert_eq!(wall.step_pct, None);

        let ops = find(&figures, "sweep.ring_bench.RING=16.ops_per_s");
        assert_eq!(
            (ops.value, ops.better, ops.unit.as_str()),
            (100.0, Better::Higher, "")
        );
        assert_eq!(ops.spread_pct, Some(0.0));
    }

    #[test]
    fn too_few_runs_for_an_interval_give_no_spread() {
        let mut result = sweep();
        result.cells[0].measures[0] = compare(&[1.0, 1.1, 0.9], &[], Direction::Lower, true);
        let figures = result.figures();
        let wall = find(&figures, "sweep.ring_bench.RING=16.wall_time");
        assert_eq!((wall.value, wall.spread_pct), (1.0, None));
    }
}
