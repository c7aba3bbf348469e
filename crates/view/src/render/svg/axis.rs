//! Axes: the drawn range of an axis, its ticks (1-2-5 steps, powers of two, decades),
//! thinned until their labels fit, and the mapping of values to pixels.

use super::{decimals_for, format_value, text_width, widest, FONT, MAX_TICKS};
use crate::view::chart::{Axis, Scale, TickFormat};

impl Scale {
    /// The value in the axis' own linear space, or None when it cannot be drawn
    /// (non-finite, or not positive on a logarithmic scale).
    pub(super) fn forward(self, v: f64) -> Option<f64> {
        if !v.is_finite() {
            return None;
        }
        match self {
            Scale::Linear => Some(v),
            Scale::Log2 => (v > 0.0).then(|| v.log2()),
            Scale::Log10 => (v > 0.0).then(|| v.log10()),
        }
    }

    /// The smallest and the largest of the values that can be drawn, if any.
    pub(super) fn extent(self, values: &[f64]) -> Option<(f64, f64)> {
        let mut drawable = values
            .iter()
            .copied()
            .filter(|&v| self.forward(v).is_some());
        let first = drawable.next()?;
        Some(drawable.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v))))
    }
}

impl Axis {
    /// The drawn range for these data values: padded to powers of two on log2, to 1-2-5
    /// values on log10, to whole tick steps on linear; never empty.
    pub(super) fn domain(&self, values: &[f64]) -> (f64, f64) {
        let scale = self.scale;
        if let Some((a, b)) = self.range {
            if scale.forward(a).is_some() && scale.forward(b).is_some() && a < b {
                return (a, b);
            }
        }
        let Some((mut lo, mut hi)) = scale.extent(values) else {
            // No drawable value: an arbitrary but valid range keeps the frame and axes.
            return match scale {
                Scale::Linear => (0.0, 1.0),
                Scale::Log2 => (1.0, 2.0),
                Scale::Log10 => (1.0, 10.0),
            };
        };
        match scale {
            Scale::Linear => {
                if self.include_zero {
                    lo = lo.min(0.0);
                    hi = hi.max(0.0);
                }
                if !(hi - lo).is_finite() {
                    return (lo.max(-1e300), hi.min(1e300));
                }
                if hi - lo <= f64::EPSILON * hi.abs().max(lo.abs()).max(1.0) {
                    let pad = (lo.abs() * 0.1).max(1.0);
                    lo -= pad;
                    hi += pad;
                }
                let step = nice_step((hi - lo) / 5.0);
                ((lo / step).floor() * step, (hi / step).ceil() * step)
            }
            Scale::Log2 => {
                let a = lo.log2().floor();
                let b = hi.log2().ceil();
                if b <= a {
                    ((a - 1.0).exp2(), (b + 1.0).exp2())
                } else {
                    (a.exp2(), b.exp2())
                }
            }
            Scale::Log10 => {
                let a = floor_125(lo * 0.95);
                let b = ceil_125(hi * 1.05);
                if b <= a {
                    (a / 2.0, b * 2.0)
                } else {
                    (a, b)
                }
            }
        }
    }
}

/// The step of 1, 2 or 5 × 10^k closest above `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw.is_finite() && raw > 0.0 {
        ceil_125(raw)
    } else {
        1.0
    }
}

/// Largest 1, 2 or 5 × 10^k not above `v` (v > 0).
fn floor_125(v: f64) -> f64 {
    let mag = 10f64.powf(v.log10().floor());
    let r = v / mag;
    let m = if r >= 5.0 - 1e-9 {
        5.0
    } else if r >= 2.0 - 1e-9 {
        2.0
    } else {
        1.0
    };
    m * mag
}

/// Smallest 1, 2 or 5 × 10^k not below `v` (v > 0).
fn ceil_125(v: f64) -> f64 {
    let mag = 10f64.powf(v.log10().floor());
    let r = v / mag;
    let m = if r <= 1.0 + 1e-9 {
        1.0
    } else if r <= 2.0 + 1e-9 {
        2.0
    } else if r <= 5.0 + 1e-9 {
        5.0
    } else {
        10.0
    };
    m * mag
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Tick {
    pub(super) value: f64,
    pub(super) label: String,
}

/// Major ticks (labelled, with grid lines) and minor grid values of one axis.
#[derive(Debug, Clone, Default)]
pub(super) struct Ticks {
    pub(super) major: Vec<Tick>,
    pub(super) minor: Vec<f64>,
}

impl Tick {
    fn new(format: TickFormat, value: f64, decimals: usize) -> Tick {
        let label = format_value(format, value, decimals);
        Tick { value, label }
    }
}

impl Ticks {
    /// Width of the widest major tick label.
    pub(super) fn label_width(&self) -> f64 {
        widest(self.major.iter().map(|t| &t.label))
    }
}

/// Maps axis values to pixels.
#[derive(Debug, Clone, Copy)]
pub(super) struct Mapper {
    scale: Scale,
    t0: f64,
    t1: f64,
    pub(super) p0: f64,
    p1: f64,
}

impl Mapper {
    /// `lo`/`hi` must be valid for the scale (as `Axis::domain` returns them).
    pub(super) fn new(scale: Scale, lo: f64, hi: f64, p0: f64, p1: f64) -> Mapper {
        let t0 = scale.forward(lo).unwrap_or(0.0);
        let t1 = scale.forward(hi).unwrap_or(1.0);
        Mapper {
            scale,
            t0,
            t1,
            p0,
            p1,
        }
    }

    pub(super) fn px(&self, v: f64) -> Option<f64> {
        let t = self.scale.forward(v)?;
        let span = self.t1 - self.t0;
        let frac = if span.abs() > 0.0 && span.is_finite() {
            (t - self.t0) / span
        } else {
            0.5
        };
        let p = self.p0 + frac * (self.p1 - self.p0);
        // Far-out values (a fixed range) are clamped so the SVG stays sane; the clip path
        // hides them anyway.
        p.is_finite().then(|| p.clamp(-1e6, 1e6))
    }
}

/// Whether tick labels placed at these pixel positions keep clear of each other.
fn labels_fit(ticks: &[Tick], map: &Mapper, horizontal: bool) -> bool {
    let positions: Vec<(f64, f64)> = ticks
        .iter()
        .filter_map(|t| {
            let extent = if horizontal {
                text_width(&t.label, FONT)
            } else {
                FONT
            };
            map.px(t.value).map(|p| (p, extent))
        })
        .collect();
    let gap = if horizontal { 14.0 } else { 10.0 };
    positions
        .windows(2)
        .all(|w| (w[1].0 - w[0].0).abs() >= (w[0].1 + w[1].1) / 2.0 + gap)
}

/// Ticks for `[lo, hi]` on `scale`, as many as fit along `length` pixels.
pub(super) fn make_ticks(
    scale: Scale,
    format: TickFormat,
    lo: f64,
    hi: f64,
    length: f64,
    horizontal: bool,
) -> Ticks {
    let map = Mapper::new(scale, lo, hi, 0.0, length.max(1.0));
    match scale {
        Scale::Log2 => log2_ticks(format, lo, hi, &map, horizontal),
        Scale::Log10 => log10_ticks(format, lo, hi, &map, horizontal),
        Scale::Linear => Ticks {
            major: linear_ticks(format, lo, hi, &map, horizontal),
            ..Ticks::default()
        },
    }
}

/// Powers of two, thinned to every 2nd, 3rd … exponent (aligned on multiples of the step,
/// so a byte axis reads 4 KiB, 16 KiB, 64 KiB …) until the labels do not overlap. Every
/// power of two keeps a minor grid line.
fn log2_ticks(format: TickFormat, lo: f64, hi: f64, map: &Mapper, horizontal: bool) -> Ticks {
    let e0 = lo.log2().ceil() as i64;
    let e1 = (hi.log2().floor() as i64).min(e0.saturating_add(MAX_TICKS));
    let exps: Vec<i64> = (e0..=e1).collect();
    let label = |e: i64| {
        let v = (e as f64).exp2();
        Tick::new(format, v, decimals_for(v))
    };
    let steps = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 32, 64, 128, 256, 512];
    let every = |step: i64| {
        let multiples = exps.iter().filter(|e| e.rem_euclid(step) == 0);
        multiples.map(|&e| label(e)).collect()
    };
    let mut major = thinned(&steps, every, map, horizontal);
    if major.is_empty() {
        // Not one multiple of the step inside the range: label the first power of two.
        major = exps.first().map(|&e| vec![label(e)]).unwrap_or_default();
    }
    Ticks {
        major,
        minor: exps.iter().map(|&e| (e as f64).exp2()).collect(),
    }
}

/// 1-2-5 ticks per decade, else decades only, else every 2nd, 3rd … decade. A range inside
/// one or two 1-2-5 steps (say 1.1 to 1.6 ns) gets linear 1-2-5 ticks instead, which say more.
fn log10_ticks(format: TickFormat, lo: f64, hi: f64, map: &Mapper, horizontal: bool) -> Ticks {
    let d0 = lo.log10().floor() as i64;
    let d1 = (hi.log10().ceil() as i64).min(d0.saturating_add(MAX_TICKS));
    let in_range = |v: f64| v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9);
    let make = |mantissas: &[f64], every: i64| -> Vec<Tick> {
        let decades = (d0..=d1).filter(|d| d.rem_euclid(every) == 0);
        // Built from the decade exponent so 0.1, 0.2 … print without float noise.
        let values = decades.flat_map(|d| mantissas.iter().map(move |m| m * 10f64.powi(d as i32)));
        let values = values.filter(|&v| in_range(v));
        values
            .map(|v| Tick::new(format, v, decimals_for(v)))
            .collect()
    };
    let dense = make(&[1.0, 2.0, 5.0], 1);
    let major_only = |major: Vec<Tick>| Ticks {
        major,
        ..Ticks::default()
    };
    if dense.len() < 3 {
        let linear = linear_ticks(format, lo, hi, map, horizontal);
        let linear: Vec<Tick> = linear.into_iter().filter(|t| t.value > 0.0).collect();
        if linear.len() >= dense.len() {
            return major_only(linear);
        }
    }
    if labels_fit(&dense, map, horizontal) {
        return major_only(dense);
    }
    let decades = [1, 2, 3, 5, 10, 20, 50, 100];
    major_only(thinned(
        &decades,
        |every| make(&[1.0], every),
        map,
        horizontal,
    ))
}

/// The first of the tick sets `make(step)` for `steps` (denser first) whose labels fit or
/// that has one tick at most; the first non-empty one when none does.
fn thinned(
    steps: &[i64],
    make: impl Fn(i64) -> Vec<Tick>,
    map: &Mapper,
    horizontal: bool,
) -> Vec<Tick> {
    let mut major = Vec::new();
    for &step in steps {
        let ticks = make(step);
        let done = labels_fit(&ticks, map, horizontal) || ticks.len() <= 1;
        if done || major.is_empty() {
            major = ticks;
        }
        if done {
            break;
        }
    }
    major
}

/// 1-2-5 multiples: the most ticks (up to about one per 40 px) whose labels fit.
fn linear_ticks(format: TickFormat, lo: f64, hi: f64, map: &Mapper, horizontal: bool) -> Vec<Tick> {
    let span = hi - lo;
    if !(span.is_finite() && span > 0.0) {
        return Vec::new();
    }
    let length = (map.p1 - map.p0).abs();
    let max_target = ((length / 40.0).floor() as i64).clamp(2, 12);
    let mut best = Vec::new();
    for target in (1..=max_target).rev() {
        let step = nice_step(span / target as f64);
        let step = if matches!(format, TickFormat::Integer) {
            step.max(1.0)
        } else {
            step
        };
        let start = (lo / step - 1e-9).ceil();
        let end = (hi / step + 1e-9).floor();
        if !(start.is_finite() && end.is_finite()) || end - start > MAX_TICKS as f64 {
            continue;
        }
        let decimals = if step >= 1.0 {
            0
        } else {
            ((-step.log10()).ceil().max(0.0) as usize).min(6)
        };
        let ticks: Vec<Tick> = (start as i64..=end as i64)
            .map(|k| {
                let v = k as f64 * step;
                let v = if v.abs() < step * 1e-9 { 0.0 } else { v };
                Tick::new(format, v, decimals)
            })
            .collect();
        if labels_fit(&ticks, map, horizontal) {
            return ticks;
        }
        best = ticks;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::svg::format_number;
    use crate::render::svg::tests::latency_like;
    use crate::units::{Bytes, KIB, MIB};

    #[test]
    fn log2_byte_ticks_are_labelled_powers_of_two() {
        let (lo, hi) = Axis::log2("")
            .bytes()
            .domain(&[4.0 * KIB as f64, 256.0 * MIB as f64]);
        assert_eq!((lo, hi), (4.0 * KIB as f64, 256.0 * MIB as f64));
        let ticks = make_ticks(Scale::Log2, TickFormat::Bytes, lo, hi, 800.0, true);
        assert!(ticks.major.len() >= 4, "{:?}", ticks.major);
        for t in &ticks.major {
            let v = t.value as u64;
            assert!(v.is_power_of_two(), "{v}");
            assert_eq!(t.label, Bytes(v).to_string());
        }
        let labels: Vec<&str> = ticks.major.iter().map(|t| t.label.as_str()).collect();
        assert!(labels.contains(&"1 MiB"), "{labels:?}");
        assert!(
            labels.contains(&"256 MiB") || labels.contains(&"64 MiB"),
            "{labels:?}"
        );
        // Every power of two keeps a (minor) grid line.
        assert_eq!(ticks.minor.len(), 17);
        // Thinned on a narrow axis, still powers of two and fewer.
        let narrow = make_ticks(Scale::Log2, TickFormat::Bytes, lo, hi, 200.0, true);
        assert!(narrow.major.len() < ticks.major.len());
        assert!(narrow
            .major
            .iter()
            .all(|t| (t.value as u64).is_power_of_two()));
        let svg = latency_like().render();
        assert!(svg.contains(">4 KiB<") || svg.contains(">16 KiB<"));
        assert!(svg.contains(">1 MiB<"));
    }

    #[test]
    fn linear_and_log10_ticks_are_1_2_5() {
        let ticks = make_ticks(Scale::Linear, TickFormat::Number, 0.0, 100.0, 400.0, false);
        let values: Vec<f64> = ticks.major.iter().map(|t| t.value).collect();
        assert!(values.len() >= 3);
        let step = values[1] - values[0];
        assert!([10.0, 20.0, 25.0, 50.0].contains(&step), "{values:?}");
        let ticks = make_ticks(Scale::Log10, TickFormat::Number, 1.0, 500.0, 400.0, false);
        let labels: Vec<&str> = ticks.major.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(
            labels,
            ["1", "2", "5", "10", "20", "50", "100", "200", "500"]
        );
        let ticks = make_ticks(Scale::Log10, TickFormat::Number, 0.1, 1000.0, 60.0, false);
        assert!((2..5).contains(&ticks.major.len()), "{:?}", ticks.major);
        // Counts never get fractional ticks, however short the axis' span.
        let ticks = make_ticks(Scale::Linear, TickFormat::Integer, 1.0, 2.0, 800.0, true);
        let labels: Vec<&str> = ticks.major.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["1", "2"]);
        assert_eq!(format_number(12_500.0, 0), "12.5k");
        assert_eq!(format_number(0.2, 1), "0.2");
    }
}
