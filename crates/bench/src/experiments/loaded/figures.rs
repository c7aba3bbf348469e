//! The comparable figures of loaded (for compare, history and the Prometheus export): the
//! idle latency, and per mix × injector-count curve its peak bandwidth, its latency at
//! full load and its knee. A knee is one point of the curve: its figures carry the step
//! to the neighbouring points (by bandwidth), and its latency that point's spread.

use super::{LoadedCurve, LoadedResult, LoadedRow};
use crate::view::figure::{Better, Figure, Figures};
use crate::view::format::count_of;

const SECTION: &str = "loaded";

impl Figures for LoadedResult {
    fn figures(&self) -> Vec<Figure> {
        // The idle figure is the median of trials whose spread is not kept.
        let idle = Figure::new(
            SECTION,
            "idle.latency_ns",
            "Idle latency",
            "ns",
            self.idle_ns,
            Better::Lower,
        )
        .metric(
            "loaded_idle_latency_seconds",
            "DRAM latency with every injector stopped",
            &[],
            1e-9,
        );
        let mut figures = vec![idle];
        for curve in &self.curves {
            figures.extend(curve_figures(self, curve));
        }
        figures
    }
}

/// A curve's peak, latency at full load and knee.
fn curve_figures(result: &LoadedResult, curve: &LoadedCurve) -> Vec<Figure> {
    let (mix, threads) = (curve.mix, curve.threads);
    let rows = || (result.rows.iter()).filter(|r| r.mix == mix && r.threads == threads);
    let mut points: Vec<&LoadedRow> = rows().filter(|r| r.gb_per_s.is_finite()).collect();
    points.sort_by(|a, b| a.gb_per_s.total_cmp(&b.gb_per_s));
    let figure = |key: &str, label: &str, unit: &str, value: f64, better: Better| {
        Figure::new(
            SECTION,
            format!("{mix}.{threads}_injectors.{key}"),
            format!("{mix}, {}: {label}", count_of(threads, "injector")),
            unit,
            value,
            better,
        )
    };
    let labels = [("mix", mix.to_string()), ("injectors", threads.to_string())];
    // A row's spread is its latency's: the peak bandwidth has none.
    let mut figures = vec![figure(
        "peak_gb_per_s",
        "peak",
        "GB/s",
        curve.peak_gb_per_s,
        Better::Higher,
    )
    .metric(
        "loaded_peak_bandwidth_bytes_per_second",
        "Peak total bandwidth of a loaded-latency curve",
        &labels,
        1e9,
    )];
    let full_load = rows().min_by_key(|r| r.delay_cycles);
    figures.push(
        figure(
            "full_load_latency_ns",
            "latency at full load",
            "ns",
            curve.loaded_ns,
            Better::Lower,
        )
        .spread(full_load.map_or(f64::NAN, |r| r.spread_pct)),
    );
    let Some(knee) = &curve.knee else {
        return figures;
    };
    let at = points.iter().position(|r| r.delay_cycles == knee.delay);
    let step = |value: fn(&LoadedRow) -> f64| {
        at.map_or(f64::NAN, |i| neighbour_step_pct(&points, i, value))
    };
    let bandwidth_step = step(|r| r.gb_per_s);
    figures.extend([
        figure(
            "knee.gb_per_s",
            "knee bandwidth",
            "GB/s",
            knee.gb_per_s,
            Better::Higher,
        )
        .step(bandwidth_step)
        .metric(
            "loaded_knee_bandwidth_bytes_per_second",
            "Total bandwidth at the knee of a loaded-latency curve (latency still idle)",
            &labels,
            1e9,
        ),
        figure(
            "knee.latency_ns",
            "knee latency",
            "ns",
            knee.latency_ns,
            Better::Lower,
        )
        .spread(at.map_or(f64::NAN, |i| points[i].spread_pct))
        .step(step(|r| r.latency_ns))
        .metric(
            "loaded_knee_latency_seconds",
            "Latency at the knee of a loaded-latency curve",
            &labels,
            1e-9,
        ),
        figure(
            "knee.pct_of_peak",
            "knee, % of peak",
            "%",
            knee.pct_of_peak,
            Better::Higher,
        )
        .step(bandwidth_step),
    ]);
    figures
}

/// The larger relative step (%) of `value` from point `i` to its neighbours on the curve.
fn neighbour_step_pct(points: &[&LoadedRow], i: usize, value: fn(&LoadedRow) -> f64) -> f64 {
    let step = |a: f64, b: f64| (a.max(b) / a.min(b) - 1.0) * 100.0;
    let here = value(points[i]);
    let below = i.checked_sub(1).map(|j| step(value(points[j]), here));
    let above = points.get(i + 1).map(|&p| step(here, value(p)));
    below.into_iter().chain(above).fold(f64::NAN, f64::max)
}

#[cfg(test)]
mod tests {
    use super::super::samples;
    use super::*;
    use crate::view::figure::find;
    use std::collections::HashSet;

    #[test]
    fn idle_and_every_curves_peak_full_load_and_knee() {
        let result = samples::loaded();
        let figures = result.figures();
        let keys: HashSet<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys.len(), figures.len(), "keys are unique");
        assert_eq!(figures.len(), 1 + 2 * 5);

        let idle = find(&figures, "loaded.idle.latency_ns");
        assert_eq!((idle.value, idle.spread_pct), (79.5, None));
        let metric = idle.metric.as_ref().unwrap();
        assert_eq!(
            (metric.name.as_str(), metric.scale),
            ("loaded_idle_latency_seconds", 1e-9)
        );
        assert!(metric.labels.is_empty());

        let peak = find(&figures, "loaded.read.3_injectors.peak_gb_per_s");
        assert_eq!((peak.value, peak.better), (66.0, Better::Higher));
        assert_eq!((peak.spread_pct, peak.step_pct), (None, None));
        let metric = peak.metric.as_ref().unwrap();
        assert_eq!(metric.name, "loaded_peak_bandwidth_bytes_per_second");
        let labels = [("mix", "read"), ("injectors", "3")].map(|(k, v)| (k.into(), v.into()));
        assert_eq!(metric.labels, labels);

        // Full load: delay 0, spread 14%.
        let full = find(&figures, "loaded.1:1.3_injectors.full_load_latency_ns");
        assert_eq!((full.value, full.spread_pct), (260.0, Some(14.0)));

        // The read knee at 41.7 GB/s (delay 200): neighbours 12.5 and 55 GB/s.
        let knee = find(&figures, "loaded.read.3_injectors.knee.gb_per_s");
        assert_eq!(knee.value, 41.7);
        let step = (41.7f64 / 12.5 - 1.0) * 100.0;
        assert!((knee.step_pct.unwrap() - step).abs() < 1e-9);
        assert_eq!(knee.spread_pct, None);
        assert!(knee.metric.is_some());
        let latency = find(&figures, "loaded.read.3_injectors.knee.latency_ns");
        assert_eq!((latency.value, latency.spread_pct), (81.5, Some(1.0)));
        let step = (95.0f64 / 81.5 - 1.0) * 100.0;
        assert!((latency.step_pct.unwrap() - step).abs() < 1e-9);
        assert_eq!(
            latency.metric.as_ref().unwrap().name,
            "loaded_knee_latency_seconds"
        );
        let pct = find(&figures, "loaded.read.3_injectors.knee.pct_of_peak");
        assert_eq!((pct.value, pct.step_pct), (63.2, knee.step_pct));

        // The 1:1 knee is the least loaded point: only one neighbour.
        let knee = find(&figures, "loaded.1:1.3_injectors.knee.gb_per_s");
        assert!((knee.step_pct.unwrap() - 202.0).abs() < 1e-9);
    }

    #[test]
    fn a_curve_without_a_knee_or_points_has_fewer_figures() {
        let nan = samples::nan_loaded();
        let figures = nan.figures();
        assert!(!figures
            .iter()
            .any(|f| f.key.starts_with("loaded.1:1.3_injectors.knee")));
        let full = find(&figures, "loaded.1:1.3_injectors.full_load_latency_ns");
        assert_eq!(full.spread_pct, None, "a NaN spread is none");
        let empty = samples::empty_loaded().figures();
        assert_eq!(empty.len(), 1);
    }
}
