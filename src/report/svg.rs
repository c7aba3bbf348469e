//! A small, dependency-free SVG chart writer for the HTML report.
//!
//! Three chart kinds share one set of scales, tick generators and text helpers:
//! `LineChart` (series over a linear/log2 x axis and a linear/log10 y axis, with an optional
//! secondary y axis, vertical markers, shaded x bands and a legend), `Heatmap` (a matrix of
//! values with a colour scale) and `BarChart` (grouped bars per category). Each renders to a
//! standalone `<svg>` element with `width`/`height` and a `viewBox`, so it can be inlined in
//! HTML or saved as a `.svg` file on its own.
//!
//! Nothing external is referenced: no fonts, scripts or stylesheets; text uses the reader's
//! `system-ui` font, so label widths are *estimated* from an average glyph width when margins
//! are laid out and ticks are thinned. Invalid data never panics: non-finite values are
//! skipped, and so are zero or negative values on a logarithmic axis; a chart without data
//! renders its frame and axes.

use std::fmt::Write as _;

use crate::units::Bytes;

/// Default series colours (the "category10" palette: distinct, and readable when printed).
pub const PALETTE: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

const FONT_FAMILY: &str = "system-ui, sans-serif";
const FONT: f64 = 12.0;
const TITLE_FONT: f64 = 16.0;
/// Colour of unstable points (hollow markers) and of their legend entry.
const UNSTABLE_COLOR: &str = "#d62728";
/// Grey of reference markers ("what the OS reports").
const REFERENCE_COLOR: &str = "#6b7280";
const GRID_COLOR: &str = "#e5e7eb";
const MINOR_GRID_COLOR: &str = "#f3f4f6";
const FRAME_COLOR: &str = "#9ca3af";
const TEXT_COLOR: &str = "#111827";
const MUTED_TEXT_COLOR: &str = "#4b5563";
/// Data are mapped this many pixels inside the plot frame, so that markers on the first
/// and last point (which sit exactly on the domain ends of a log2 axis) are not cut in half.
const INSET: f64 = 8.0;
/// Upper bound on generated ticks and grid lines: a malformed range must not produce a
/// multi-megabyte SVG or a long loop.
const MAX_TICKS: i64 = 400;

/// Escapes text for XML/HTML content and attribute values (`& < > " '`). Control
/// characters other than tab and newline are dropped: they are not allowed in XML.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// A coordinate with at most one decimal (sub-pixel precision is invisible and bloats output).
fn n(v: f64) -> String {
    if !v.is_finite() {
        return "0".to_string();
    }
    let s = format!("{:.1}", v.clamp(-1e7, 1e7));
    let s = s.strip_suffix(".0").unwrap_or(&s);
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// Estimated rendered width of `text` at `size` px: proportional fonts average roughly
/// 0.58 em per glyph for digits and lower-case text, which errs on the wide side.
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.58
}

/// FNV-1a over the given text: gives each chart's `clipPath` an id that is stable across
/// runs yet differs between charts, since several SVGs inlined in one HTML page share one
/// id namespace.
fn short_hash(text: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in text.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

// ---------------------------------------------------------------------------------------
// Scales, axes and ticks
// ---------------------------------------------------------------------------------------

/// How values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Powers of two equally spaced (sizes, strides).
    Log2,
    /// Powers of ten equally spaced (latencies spanning 1 to 300 ns).
    Log10,
}

impl Scale {
    /// The value in the axis' own linear space, or None when it cannot be drawn
    /// (non-finite, or not positive on a logarithmic scale).
    fn forward(self, v: f64) -> Option<f64> {
        if !v.is_finite() {
            return None;
        }
        match self {
            Scale::Linear => Some(v),
            Scale::Log2 => (v > 0.0).then(|| v.log2()),
            Scale::Log10 => (v > 0.0).then(|| v.log10()),
        }
    }
}

/// How tick labels (and value labels) are printed.
#[derive(Debug, Clone, Copy)]
pub enum TickFormat {
    /// Plain numbers; 10 000 and above are shortened to `10k`, `2M`, `1G`.
    Number,
    /// Binary sizes through `units::Bytes` ("4 KiB", "1 MiB").
    Bytes,
    /// Counts (threads, nodes): linear ticks only at whole numbers, printed as numbers.
    Integer,
    /// Any other unit.
    Custom(fn(f64) -> String),
}

/// One axis of a chart: its label, scale, label format and optional fixed range.
#[derive(Debug, Clone)]
#[must_use = "charts and their parts do nothing until rendered"]
pub struct Axis {
    label: String,
    scale: Scale,
    format: TickFormat,
    range: Option<(f64, f64)>,
    include_zero: bool,
}

impl Axis {
    pub fn new(label: impl Into<String>, scale: Scale) -> Axis {
        Axis {
            label: label.into(),
            scale,
            format: TickFormat::Number,
            range: None,
            include_zero: false,
        }
    }

    pub fn linear(label: impl Into<String>) -> Axis {
        Axis::new(label, Scale::Linear)
    }

    pub fn log2(label: impl Into<String>) -> Axis {
        Axis::new(label, Scale::Log2)
    }

    pub fn log10(label: impl Into<String>) -> Axis {
        Axis::new(label, Scale::Log10)
    }

    /// Labels ticks as binary sizes ("4 KiB", "256 MiB").
    pub fn bytes(mut self) -> Axis {
        self.format = TickFormat::Bytes;
        self
    }

    pub fn format(mut self, format: TickFormat) -> Axis {
        self.format = format;
        self
    }

    /// Fixes the range instead of fitting it to the data (ignored when invalid for the scale).
    pub fn range(mut self, min: f64, max: f64) -> Axis {
        self.range = Some((min, max));
        self
    }

    /// Extends a linear axis to zero (bandwidths, counts); ignored on log scales.
    pub fn include_zero(mut self) -> Axis {
        self.include_zero = true;
        self
    }

    /// The drawn range for these data values: padded to powers of two on log2, to 1-2-5
    /// values on log10, to whole tick steps on linear; never empty.
    fn domain(&self, values: &[f64]) -> (f64, f64) {
        let scale = self.scale;
        if let Some((a, b)) = self.range {
            if scale.forward(a).is_some() && scale.forward(b).is_some() && a < b {
                return (a, b);
            }
        }
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for &v in values {
            if scale.forward(v).is_some() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        if lo > hi {
            // No drawable value: an arbitrary but valid range keeps the frame and axes.
            return match scale {
                Scale::Linear => (0.0, 1.0),
                Scale::Log2 => (1.0, 2.0),
                Scale::Log10 => (1.0, 10.0),
            };
        }
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
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let r = raw / mag;
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

/// A number as a tick or value label: `decimals` digits after the point below 10 000, then
/// shortened with k/M/G so labels stay narrow.
pub fn format_number(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return "–".to_string();
    }
    let a = v.abs();
    let short = |x: f64, suffix: &str| {
        let s = format!("{x:.1}");
        format!("{}{suffix}", s.strip_suffix(".0").unwrap_or(&s))
    };
    if a >= 1e9 {
        short(v / 1e9, "G")
    } else if a >= 1e6 {
        short(v / 1e6, "M")
    } else if a >= 1e4 {
        short(v / 1e3, "k")
    } else {
        let s = format!("{v:.decimals$}");
        if s.trim_start_matches('-')
            .chars()
            .all(|c| c == '0' || c == '.')
        {
            format!("{:.decimals$}", 0.0)
        } else {
            s
        }
    }
}

/// Decimals a lone value needs to show its first significant digit (0.05 → 2, 3 → 0).
fn decimals_for(v: f64) -> usize {
    let a = v.abs();
    if a >= 1.0 || a == 0.0 || !a.is_finite() {
        0
    } else {
        ((-a.log10()).ceil().max(0.0) as usize).min(6)
    }
}

fn format_value(format: TickFormat, v: f64, decimals: usize) -> String {
    match format {
        TickFormat::Bytes if v >= 1.0 => Bytes(v.round() as u64).to_string(),
        TickFormat::Bytes | TickFormat::Number => format_number(v, decimals),
        TickFormat::Integer => format_number(v.round(), 0),
        TickFormat::Custom(f) => f(v),
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Tick {
    value: f64,
    label: String,
}

/// Major ticks (labelled, with grid lines) and minor grid values of one axis.
#[derive(Debug, Clone, Default)]
struct Ticks {
    major: Vec<Tick>,
    minor: Vec<f64>,
}

/// Maps axis values to pixels.
#[derive(Debug, Clone, Copy)]
struct Mapper {
    scale: Scale,
    t0: f64,
    t1: f64,
    p0: f64,
    p1: f64,
}

impl Mapper {
    /// `lo`/`hi` must be valid for the scale (as `Axis::domain` returns them).
    fn new(scale: Scale, lo: f64, hi: f64, p0: f64, p1: f64) -> Mapper {
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

    fn px(&self, v: f64) -> Option<f64> {
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
fn make_ticks(
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
            minor: Vec::new(),
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
        Tick {
            value: v,
            label: format_value(format, v, decimals_for(v)),
        }
    };
    let mut major = Vec::new();
    for step in [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 32, 64, 128, 256, 512] {
        let ticks: Vec<Tick> = exps
            .iter()
            .filter(|e| e.rem_euclid(step) == 0)
            .map(|&e| label(e))
            .collect();
        let done = labels_fit(&ticks, map, horizontal) || ticks.len() <= 1;
        if done || major.is_empty() {
            major = ticks;
        }
        if done {
            break;
        }
    }
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
        let mut ticks = Vec::new();
        for d in d0..=d1 {
            if d.rem_euclid(every) != 0 {
                continue;
            }
            for m in mantissas {
                // Built from the decade exponent so 0.1, 0.2 … print without float noise.
                let v = m * 10f64.powi(d as i32);
                if in_range(v) {
                    ticks.push(Tick {
                        value: v,
                        label: format_value(format, v, decimals_for(v)),
                    });
                }
            }
        }
        ticks
    };
    let dense = make(&[1.0, 2.0, 5.0], 1);
    if dense.len() < 3 {
        let linear = linear_ticks(format, lo, hi, map, horizontal);
        let linear: Vec<Tick> = linear.into_iter().filter(|t| t.value > 0.0).collect();
        if linear.len() >= dense.len() {
            return Ticks {
                major: linear,
                minor: Vec::new(),
            };
        }
    }
    if labels_fit(&dense, map, horizontal) {
        return Ticks {
            major: dense,
            minor: Vec::new(),
        };
    }
    let mut major = Vec::new();
    for every in [1, 2, 3, 5, 10, 20, 50, 100] {
        let ticks = make(&[1.0], every);
        let done = labels_fit(&ticks, map, horizontal) || ticks.len() <= 1;
        if done || major.is_empty() {
            major = ticks;
        }
        if done {
            break;
        }
    }
    Ticks {
        major,
        minor: Vec::new(),
    }
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
                Tick {
                    value: v,
                    label: format_value(format, v, decimals),
                }
            })
            .collect();
        if labels_fit(&ticks, map, horizontal) {
            return ticks;
        }
        best = ticks;
    }
    best
}

// ---------------------------------------------------------------------------------------
// The SVG text builder
// ---------------------------------------------------------------------------------------

/// Accumulates SVG elements. Attribute fragments passed in are written as they are and
/// must come from this module; every piece of caller-supplied text goes through `escape`.
struct Svg {
    out: String,
}

impl Svg {
    fn new(width: f64, height: f64, title: &str) -> Svg {
        let mut out = String::with_capacity(16 * 1024);
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" font-family=\"{FONT_FAMILY}\" font-size=\"{FONT}\" \
             role=\"img\" aria-label=\"{t}\">\n<title>{t}</title>\n\
             <rect width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>\n",
            w = n(width),
            h = n(height),
            t = escape(title),
        );
        Svg { out }
    }

    fn raw(&mut self, s: &str) {
        self.out.push_str(s);
    }

    fn text(&mut self, x: f64, y: f64, text: &str, attrs: &str) {
        let _ = writeln!(
            self.out,
            "<text x=\"{}\" y=\"{}\" {attrs}>{}</text>",
            n(x),
            n(y),
            escape(text)
        );
    }

    /// Text rotated by `angle` degrees around its anchor point.
    fn text_rotated(&mut self, x: f64, y: f64, angle: f64, text: &str, attrs: &str) {
        let _ = writeln!(
            self.out,
            "<text x=\"{x}\" y=\"{y}\" transform=\"rotate({a} {x} {y})\" {attrs}>{t}</text>",
            x = n(x),
            y = n(y),
            a = n(angle),
            t = escape(text)
        );
    }

    fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, attrs: &str) {
        let _ = writeln!(
            self.out,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" {attrs}/>",
            n(x1),
            n(y1),
            n(x2),
            n(y2)
        );
    }

    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, attrs: &str) {
        let _ = writeln!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {attrs}/>",
            n(x),
            n(y),
            n(w.max(0.0)),
            n(h.max(0.0))
        );
    }

    fn circle(&mut self, cx: f64, cy: f64, r: f64, attrs: &str) {
        let _ = writeln!(
            self.out,
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" {attrs}/>",
            n(cx),
            n(cy),
            n(r)
        );
    }

    fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

/// `fill="…"` etc. with an escaped caller-supplied colour.
fn color_attr(name: &str, color: &str) -> String {
    format!("{name}=\"{}\"", escape(color))
}

/// Text with a white outline drawn under it, legible over grid lines and curves.
const HALO: &str = "paint-order=\"stroke\" stroke=\"#ffffff\" stroke-width=\"3\" \
                    stroke-linejoin=\"round\"";

// ---------------------------------------------------------------------------------------
// Legend
// ---------------------------------------------------------------------------------------

/// The small drawing in front of a legend label.
#[derive(Debug, Clone, PartialEq)]
pub enum LegendSymbol {
    /// A line, solid or dashed.
    Line { color: String, dashed: bool },
    /// A line with a marker in the middle (a series).
    LineMarker { color: String, dashed: bool },
    /// A marker alone; hollow for unstable points.
    Marker { color: String, hollow: bool },
    /// A filled rectangle (a band or a bar).
    Swatch { color: String, opacity: f64 },
}

#[derive(Debug, Clone, PartialEq)]
pub struct LegendEntry {
    pub label: String,
    pub symbol: LegendSymbol,
}

impl LegendEntry {
    pub fn new(label: impl Into<String>, symbol: LegendSymbol) -> LegendEntry {
        LegendEntry {
            label: label.into(),
            symbol,
        }
    }
}

const LEGEND_ROW: f64 = 20.0;
const LEGEND_SYMBOL: f64 = 24.0;

fn legend_item_width(e: &LegendEntry) -> f64 {
    LEGEND_SYMBOL + 6.0 + text_width(&e.label, FONT) + 18.0
}

/// Where the legend starts: aligned with the plot's left edge when its widest row still
/// fits in the width it was flowed into (starting at `min_x`), else as far right as it can.
fn legend_x(entries: &[LegendEntry], min_x: f64, max_width: f64, plot_left: f64) -> f64 {
    let widest = legend_rows(entries, max_width)
        .iter()
        .filter_map(|row| {
            row.last()
                .map(|&(i, dx)| dx + legend_item_width(&entries[i]))
        })
        .fold(0.0, f64::max);
    plot_left.min(min_x + max_width - widest).max(min_x)
}

/// Flows legend entries into rows no wider than `max_width`: per row, (entry, x offset).
fn legend_rows(entries: &[LegendEntry], max_width: f64) -> Vec<Vec<(usize, f64)>> {
    let mut rows: Vec<Vec<(usize, f64)>> = Vec::new();
    let mut x = 0.0;
    for (i, e) in entries.iter().enumerate() {
        let w = legend_item_width(e);
        if rows.is_empty() || (x + w > max_width && x > 0.0) {
            rows.push(Vec::new());
            x = 0.0;
        }
        if let Some(row) = rows.last_mut() {
            row.push((i, x));
        }
        x += w;
    }
    rows
}

fn draw_legend(svg: &mut Svg, entries: &[LegendEntry], x0: f64, y0: f64, max_width: f64) {
    for (r, row) in legend_rows(entries, max_width).iter().enumerate() {
        let y = y0 + r as f64 * LEGEND_ROW;
        for &(i, dx) in row {
            let e = &entries[i];
            let x = x0 + dx;
            let mid = y - 4.0;
            match &e.symbol {
                LegendSymbol::Line { color, dashed }
                | LegendSymbol::LineMarker { color, dashed } => {
                    let dash = if *dashed {
                        " stroke-dasharray=\"5 3\""
                    } else {
                        ""
                    };
                    svg.line(
                        x,
                        mid,
                        x + LEGEND_SYMBOL,
                        mid,
                        &format!("{} stroke-width=\"2\"{dash}", color_attr("stroke", color)),
                    );
                    if matches!(e.symbol, LegendSymbol::LineMarker { .. }) {
                        svg.circle(
                            x + LEGEND_SYMBOL / 2.0,
                            mid,
                            3.0,
                            &format!("{} stroke=\"#ffffff\"", color_attr("fill", color)),
                        );
                    }
                }
                LegendSymbol::Marker { color, hollow } => {
                    let attrs = if *hollow {
                        format!(
                            "fill=\"#ffffff\" {} stroke-width=\"2\"",
                            color_attr("stroke", color)
                        )
                    } else {
                        color_attr("fill", color)
                    };
                    svg.circle(x + LEGEND_SYMBOL / 2.0, mid, 4.0, &attrs);
                }
                LegendSymbol::Swatch { color, opacity } => {
                    svg.rect(
                        x,
                        mid - 6.0,
                        LEGEND_SYMBOL,
                        12.0,
                        &format!(
                            "{} fill-opacity=\"{:.2}\" {} stroke-opacity=\"0.6\"",
                            color_attr("fill", color),
                            if opacity.is_finite() {
                                opacity.clamp(0.0, 1.0)
                            } else {
                                1.0
                            },
                            color_attr("stroke", color)
                        ),
                    );
                }
            }
            svg.text(
                x + LEGEND_SYMBOL + 6.0,
                y,
                &e.label,
                &format!("fill=\"{TEXT_COLOR}\""),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Line chart
// ---------------------------------------------------------------------------------------

/// One named line of a `LineChart`.
#[derive(Debug, Clone)]
#[must_use = "charts and their parts do nothing until rendered"]
pub struct Series {
    name: String,
    points: Vec<(f64, f64)>,
    color: Option<String>,
    /// Per point (low, high) in y units.
    errors: Option<Vec<(f64, f64)>>,
    /// Per point: draw hollow and red.
    unstable: Vec<bool>,
    dashed: bool,
    markers: bool,
    /// Points alone, as rings (see `highlight`).
    highlight: bool,
}

impl Series {
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            color: None,
            errors: None,
            unstable: Vec::new(),
            dashed: false,
            markers: true,
            highlight: false,
        }
    }

    /// Any CSS colour; the default is the palette entry of the series' position.
    pub fn color(mut self, color: impl Into<String>) -> Series {
        self.color = Some(color.into());
        self
    }

    /// Error bars: one (low, high) per point, in y units (missing or invalid ones are skipped).
    pub fn error_bars(mut self, bounds: Vec<(f64, f64)>) -> Series {
        self.errors = Some(bounds);
        self
    }

    /// One flag per point; flagged points are drawn hollow and red.
    pub fn unstable(mut self, flags: Vec<bool>) -> Series {
        self.unstable = flags;
        self
    }

    pub fn dashed(mut self) -> Series {
        self.dashed = true;
        self
    }

    /// Draws the line only, without a marker on each point.
    pub fn without_markers(mut self) -> Series {
        self.markers = false;
        self
    }

    /// Draws each point as a ring around it, without a connecting line: points found in
    /// the data (a knee, a saturation point) marked on the curves they belong to.
    pub fn highlight(mut self) -> Series {
        self.highlight = true;
        self
    }
}

/// How a vertical marker is drawn.
#[derive(Debug, Clone, PartialEq)]
pub enum MarkerStyle {
    /// Dashed grey, label at the top: a reference value (a size the OS reports).
    Reference,
    /// Solid, coloured, label at the bottom: something found in the data (a boundary).
    Found { color: String },
}

/// A labelled vertical line at one x value.
#[derive(Debug, Clone)]
#[must_use = "charts and their parts do nothing until rendered"]
pub struct VMarker {
    pub x: f64,
    pub label: String,
    pub style: MarkerStyle,
}

impl VMarker {
    pub fn reference(x: f64, label: impl Into<String>) -> VMarker {
        VMarker {
            x,
            label: label.into(),
            style: MarkerStyle::Reference,
        }
    }

    pub fn found(x: f64, label: impl Into<String>, color: impl Into<String>) -> VMarker {
        VMarker {
            x,
            label: label.into(),
            style: MarkerStyle::Found {
                color: color.into(),
            },
        }
    }
}

/// A shaded x range (say a detected plateau), labelled above the plot.
#[derive(Debug, Clone)]
#[must_use = "charts and their parts do nothing until rendered"]
pub struct Band {
    pub x0: f64,
    pub x1: f64,
    pub label: String,
    pub color: String,
}

impl Band {
    pub fn new(x0: f64, x1: f64, label: impl Into<String>) -> Band {
        Band {
            x0,
            x1,
            label: label.into(),
            color: PALETTE[2].to_string(),
        }
    }

    pub fn color(mut self, color: impl Into<String>) -> Band {
        self.color = color.into();
        self
    }
}

/// A second y axis on the right: the left axis' values times `factor` (ns → cycles).
#[derive(Debug, Clone)]
struct SecondaryAxis {
    label: String,
    factor: f64,
}

/// Lines over a shared x axis, built step by step and rendered with `render`.
///
/// ```
/// use memscope::report::svg::{Axis, LineChart, Series};
/// let svg = LineChart::new("Latency")
///     .x_axis(Axis::log2("Working set").bytes())
///     .y_axis(Axis::log10("ns"))
///     .series(Series::new("random", vec![(4096.0, 1.2), (1048576.0, 4.0)]))
///     .render();
/// assert!(svg.starts_with("<svg"));
/// ```
#[derive(Debug, Clone)]
#[must_use = "charts and their parts do nothing until rendered"]
pub struct LineChart {
    title: String,
    width: f64,
    height: f64,
    x_axis: Axis,
    y_axis: Axis,
    secondary: Option<SecondaryAxis>,
    series: Vec<Series>,
    markers: Vec<VMarker>,
    bands: Vec<Band>,
    legend: Vec<LegendEntry>,
    unstable_label: String,
    show_legend: bool,
}

impl LineChart {
    pub fn new(title: impl Into<String>) -> LineChart {
        LineChart {
            title: title.into(),
            width: 960.0,
            height: 540.0,
            x_axis: Axis::linear(""),
            y_axis: Axis::linear(""),
            secondary: None,
            series: Vec::new(),
            markers: Vec::new(),
            bands: Vec::new(),
            legend: Vec::new(),
            unstable_label: "unstable point".to_string(),
            show_legend: true,
        }
    }

    /// Size in pixels (the viewBox keeps it scalable); clamped to something drawable.
    pub fn size(mut self, width: f64, height: f64) -> LineChart {
        self.width = if width.is_finite() {
            width.clamp(240.0, 8000.0)
        } else {
            960.0
        };
        self.height = if height.is_finite() {
            height.clamp(180.0, 8000.0)
        } else {
            540.0
        };
        self
    }

    pub fn x_axis(mut self, axis: Axis) -> LineChart {
        self.x_axis = axis;
        self
    }

    pub fn y_axis(mut self, axis: Axis) -> LineChart {
        self.y_axis = axis;
        self
    }

    /// A right-hand axis showing left-axis values × `factor`, with its own label. Ignored
    /// when the factor is not a positive finite number.
    pub fn secondary_y(mut self, label: impl Into<String>, factor: f64) -> LineChart {
        self.secondary = Some(SecondaryAxis {
            label: label.into(),
            factor,
        });
        self
    }

    /// Adds a line; the legend lists series in this order, and the first one is drawn on
    /// top of the others.
    pub fn series(mut self, series: Series) -> LineChart {
        self.series.push(series);
        self
    }

    pub fn marker(mut self, marker: VMarker) -> LineChart {
        self.markers.push(marker);
        self
    }

    pub fn band(mut self, band: Band) -> LineChart {
        self.bands.push(band);
        self
    }

    /// An extra legend entry after the series (to explain markers and bands).
    pub fn legend_entry(mut self, entry: LegendEntry) -> LineChart {
        self.legend.push(entry);
        self
    }

    /// Legend text for the hollow red markers of unstable points.
    pub fn unstable_label(mut self, label: impl Into<String>) -> LineChart {
        self.unstable_label = label.into();
        self
    }

    pub fn hide_legend(mut self) -> LineChart {
        self.show_legend = false;
        self
    }

    fn series_color(&self, i: usize) -> String {
        self.series[i]
            .color
            .clone()
            .unwrap_or_else(|| PALETTE[i % PALETTE.len()].to_string())
    }

    fn legend_entries(&self) -> Vec<LegendEntry> {
        let mut entries: Vec<LegendEntry> = Vec::new();
        let mut any_unstable = false;
        for (i, s) in self.series.iter().enumerate() {
            let color = self.series_color(i);
            let symbol = if s.highlight {
                LegendSymbol::Marker {
                    color,
                    hollow: true,
                }
            } else if s.markers {
                LegendSymbol::LineMarker {
                    color,
                    dashed: s.dashed,
                }
            } else {
                LegendSymbol::Line {
                    color,
                    dashed: s.dashed,
                }
            };
            if !s.name.is_empty() {
                entries.push(LegendEntry::new(s.name.clone(), symbol));
            }
            any_unstable |= s.points.iter().zip(&s.unstable).any(|(&(x, y), &u)| {
                u && self.x_axis.scale.forward(x).is_some()
                    && self.y_axis.scale.forward(y).is_some()
            });
        }
        if any_unstable {
            entries.push(LegendEntry::new(
                self.unstable_label.clone(),
                LegendSymbol::Marker {
                    color: UNSTABLE_COLOR.to_string(),
                    hollow: true,
                },
            ));
        }
        entries.extend(self.legend.iter().cloned());
        entries
    }

    /// The complete `<svg>` element.
    pub fn render(&self) -> String {
        let (width, height) = (self.width, self.height);
        let xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(self.markers.iter().map(|m| m.x))
            .chain(self.bands.iter().flat_map(|b| [b.x0, b.x1]))
            .collect();
        let mut ys: Vec<f64> = Vec::new();
        for s in &self.series {
            ys.extend(s.points.iter().map(|p| p.1));
            if let Some(errors) = &s.errors {
                // Only bars of drawable points widen the range.
                for (p, e) in s.points.iter().zip(errors) {
                    if self.x_axis.scale.forward(p.0).is_some() && p.1.is_finite() {
                        ys.extend([e.0, e.1]);
                    }
                }
            }
        }
        let (x_lo, x_hi) = self.x_axis.domain(&xs);
        let (y_lo, y_hi) = self.y_axis.domain(&ys);

        let entries = if self.show_legend {
            self.legend_entries()
        } else {
            Vec::new()
        };
        let legend_width = width - 40.0;
        let legend_height = legend_rows(&entries, legend_width).len() as f64 * LEGEND_ROW;

        // Vertical layout first: it does not depend on any tick label.
        let band_rows = self.bands.len().min(2) as f64;
        let top =
            12.0 + TITLE_FONT + 12.0 + band_rows * 16.0 + if band_rows > 0.0 { 6.0 } else { 0.0 };
        let has_x_label = !self.x_axis.label.is_empty();
        let bottom = 6.0
            + FONT
            + 8.0
            + if has_x_label { FONT + 10.0 } else { 0.0 }
            + if legend_height > 0.0 {
                legend_height + 8.0
            } else {
                0.0
            }
            + 6.0;
        let plot_h = (height - top - bottom).max(40.0);

        // Then the y ticks, whose label widths decide the side margins.
        let y_ticks = make_ticks(
            self.y_axis.scale,
            self.y_axis.format,
            y_lo,
            y_hi,
            plot_h - 2.0 * INSET,
            false,
        );
        let y_label_w = y_ticks
            .major
            .iter()
            .map(|t| text_width(&t.label, FONT))
            .fold(0.0, f64::max);
        let has_y_label = !self.y_axis.label.is_empty();
        let left = 10.0 + if has_y_label { FONT + 12.0 } else { 0.0 } + y_label_w + 8.0;

        let secondary = self
            .secondary
            .as_ref()
            .filter(|s| s.factor.is_finite() && s.factor > 0.0);
        let sec_ticks = secondary.map(|s| {
            make_ticks(
                self.y_axis.scale,
                TickFormat::Number,
                y_lo * s.factor,
                y_hi * s.factor,
                plot_h - 2.0 * INSET,
                false,
            )
        });
        let right = match (&secondary, &sec_ticks) {
            (Some(s), Some(t)) => {
                let w = t
                    .major
                    .iter()
                    .map(|t| text_width(&t.label, FONT))
                    .fold(0.0, f64::max);
                8.0 + w + if s.label.is_empty() { 0.0 } else { 12.0 + FONT } + 10.0
            }
            _ => 24.0,
        };
        let plot_w = (width - left - right).max(40.0);
        let x_ticks = make_ticks(
            self.x_axis.scale,
            self.x_axis.format,
            x_lo,
            x_hi,
            plot_w - 2.0 * INSET,
            true,
        );

        let (px0, px1, py0, py1) = (left, left + plot_w, top, top + plot_h);
        let xm = Mapper::new(self.x_axis.scale, x_lo, x_hi, px0 + INSET, px1 - INSET);
        let ym = Mapper::new(self.y_axis.scale, y_lo, y_hi, py1 - INSET, py0 + INSET);

        let mut svg = Svg::new(width, height, &self.title);
        let clip = format!(
            "msc{:08x}",
            short_hash(&format!(
                "{}|{width}|{height}|{left}|{top}|{plot_w}|{plot_h}",
                self.title
            ))
        );
        let _ = writeln!(
            svg.out,
            "<defs><clipPath id=\"{clip}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\
             </clipPath></defs>",
            n(px0),
            n(py0),
            n(plot_w),
            n(plot_h)
        );
        svg.text(
            width / 2.0,
            12.0 + TITLE_FONT,
            &self.title,
            &format!(
                "text-anchor=\"middle\" font-size=\"{TITLE_FONT}\" font-weight=\"600\" \
                 fill=\"{TEXT_COLOR}\""
            ),
        );

        // Grid first, so everything else is drawn over it.
        for &v in &x_ticks.minor {
            if let Some(x) = xm.px(v) {
                svg.line(x, py0, x, py1, &format!("stroke=\"{MINOR_GRID_COLOR}\""));
            }
        }
        for t in &x_ticks.major {
            if let Some(x) = xm.px(t.value) {
                svg.line(x, py0, x, py1, &format!("stroke=\"{GRID_COLOR}\""));
            }
        }
        for t in &y_ticks.major {
            if let Some(y) = ym.px(t.value) {
                svg.line(px0, y, px1, y, &format!("stroke=\"{GRID_COLOR}\""));
            }
        }

        self.draw_bands(&mut svg, &xm, (px0, px1, py0, py1), &clip, width);
        self.draw_markers(&mut svg, &xm, (py0, py1), &clip);
        self.draw_series(&mut svg, &xm, &ym, &clip);
        self.draw_marker_labels(&mut svg, &xm, (px0, px1, py0, py1));

        svg.rect(
            px0,
            py0,
            plot_w,
            plot_h,
            &format!("fill=\"none\" stroke=\"{FRAME_COLOR}\""),
        );

        // Axes: tick marks and labels.
        let tick_attrs = format!("stroke=\"{FRAME_COLOR}\"");
        for t in &x_ticks.major {
            if let Some(x) = xm.px(t.value) {
                svg.line(x, py1, x, py1 + 4.0, &tick_attrs);
                svg.text(
                    x,
                    py1 + 6.0 + FONT,
                    &t.label,
                    &format!("text-anchor=\"middle\" fill=\"{MUTED_TEXT_COLOR}\""),
                );
            }
        }
        for t in &y_ticks.major {
            if let Some(y) = ym.px(t.value) {
                svg.line(px0 - 4.0, y, px0, y, &tick_attrs);
                svg.text(
                    px0 - 7.0,
                    y + FONT * 0.35,
                    &t.label,
                    &format!("text-anchor=\"end\" fill=\"{MUTED_TEXT_COLOR}\""),
                );
            }
        }
        if has_x_label {
            svg.text(
                (px0 + px1) / 2.0,
                py1 + 6.0 + FONT + 8.0 + FONT + 2.0,
                &self.x_axis.label,
                &format!("text-anchor=\"middle\" fill=\"{TEXT_COLOR}\""),
            );
        }
        if has_y_label {
            svg.text_rotated(
                10.0 + FONT,
                (py0 + py1) / 2.0,
                -90.0,
                &self.y_axis.label,
                &format!("text-anchor=\"middle\" fill=\"{TEXT_COLOR}\""),
            );
        }
        if let (Some(s), Some(t)) = (secondary, &sec_ticks) {
            let mut label_w: f64 = 0.0;
            for tick in &t.major {
                if let Some(y) = ym.px(tick.value / s.factor) {
                    svg.line(px1, y, px1 + 4.0, y, &tick_attrs);
                    svg.text(
                        px1 + 7.0,
                        y + FONT * 0.35,
                        &tick.label,
                        &format!("fill=\"{MUTED_TEXT_COLOR}\""),
                    );
                    label_w = label_w.max(text_width(&tick.label, FONT));
                }
            }
            if !s.label.is_empty() {
                svg.text_rotated(
                    px1 + 8.0 + label_w + 8.0 + FONT * 0.5,
                    (py0 + py1) / 2.0,
                    90.0,
                    &s.label,
                    &format!("text-anchor=\"middle\" fill=\"{TEXT_COLOR}\""),
                );
            }
        }

        if !entries.is_empty() {
            draw_legend(
                &mut svg,
                &entries,
                legend_x(&entries, 20.0, legend_width, px0),
                height - 6.0 - legend_height + LEGEND_ROW - 6.0,
                legend_width,
            );
        }
        svg.finish()
    }

    /// Shaded ranges in the plot, with labels in a strip above it. Labels are placed
    /// greedily in up to two rows so that neighbouring plateaus do not print over each other.
    fn draw_bands(
        &self,
        svg: &mut Svg,
        xm: &Mapper,
        (px0, px1, py0, py1): (f64, f64, f64, f64),
        clip: &str,
        width: f64,
    ) {
        let rows = self.bands.len().min(2);
        let mut row_end = vec![f64::NEG_INFINITY; rows];
        for band in &self.bands {
            let (Some(a), Some(b)) = (xm.px(band.x0), xm.px(band.x1)) else {
                continue;
            };
            let (mut a, mut b) = (a.min(b).max(px0), a.max(b).min(px1));
            if b < a {
                continue;
            }
            // A one-point plateau still gets a visible sliver.
            if b - a < 6.0 {
                let mid = (a + b) / 2.0;
                a = mid - 3.0;
                b = mid + 3.0;
            }
            svg.rect(
                a,
                py0,
                b - a,
                py1 - py0,
                &format!(
                    "{} fill-opacity=\"0.12\" clip-path=\"url(#{clip})\"",
                    color_attr("fill", &band.color)
                ),
            );
            if band.label.is_empty() || rows == 0 {
                continue;
            }
            let w = text_width(&band.label, FONT);
            let cx = ((a + b) / 2.0).clamp(w / 2.0 + 4.0, width - w / 2.0 - 4.0);
            // The first row (nearest the plot) that is free, else the one that ends first.
            let row = (0..rows)
                .find(|&r| row_end[r] + 8.0 <= cx - w / 2.0)
                .unwrap_or_else(|| {
                    (0..rows)
                        .min_by(|&p, &q| row_end[p].total_cmp(&row_end[q]))
                        .unwrap_or(0)
                });
            row_end[row] = cx + w / 2.0;
            let y_line = py0 - 3.0 - row as f64 * 16.0;
            svg.line(
                a,
                y_line,
                b,
                y_line,
                &format!("{} stroke-width=\"2\"", color_attr("stroke", &band.color)),
            );
            svg.text(
                cx,
                y_line - 4.0,
                &band.label,
                &format!(
                    "text-anchor=\"middle\" font-weight=\"600\" {}",
                    color_attr("fill", &band.color)
                ),
            );
        }
    }

    fn draw_markers(&self, svg: &mut Svg, xm: &Mapper, (py0, py1): (f64, f64), clip: &str) {
        for m in &self.markers {
            let Some(x) = xm.px(m.x) else { continue };
            let attrs = match &m.style {
                MarkerStyle::Reference => format!(
                    "stroke=\"{REFERENCE_COLOR}\" stroke-width=\"1.2\" stroke-dasharray=\"5 4\""
                ),
                MarkerStyle::Found { color } => {
                    format!("{} stroke-width=\"1.6\"", color_attr("stroke", color))
                }
            };
            svg.line(
                x,
                py0,
                x,
                py1,
                &format!("{attrs} clip-path=\"url(#{clip})\""),
            );
        }
    }

    /// Marker labels run down their line from the top of the plot, where the curve rarely
    /// is (it is high only past the last cache, where no boundary is found). Reference labels
    /// sit left of their line and found labels right of it, so a reference and a found marker
    /// at the same x (the usual case: "L1d 32 KiB" / "L1d ends") do not collide; a found
    /// label that would still touch a nearby reference label starts below it.
    fn draw_marker_labels(
        &self,
        svg: &mut Svg,
        xm: &Mapper,
        (px0, px1, py0, _py1): (f64, f64, f64, f64),
    ) {
        let visible = |m: &VMarker| {
            xm.px(m.x)
                .filter(|&x| x >= px0 && x <= px1 && !m.label.is_empty())
        };
        // Horizontal extent and length of every reference label.
        let references: Vec<(f64, f64, f64)> = self
            .markers
            .iter()
            .filter(|m| m.style == MarkerStyle::Reference)
            .filter_map(|m| {
                let x = visible(m)?;
                Some((x - 4.0 - FONT, x - 4.0, text_width(&m.label, FONT)))
            })
            .collect();
        for m in &self.markers {
            let Some(x) = visible(m) else { continue };
            match &m.style {
                MarkerStyle::Reference => svg.text_rotated(
                    x - 4.0,
                    py0 + 4.0,
                    -90.0,
                    &m.label,
                    &format!("text-anchor=\"end\" fill=\"{REFERENCE_COLOR}\" {HALO}"),
                ),
                MarkerStyle::Found { color } => {
                    let (a, b) = (x + 3.0, x + 4.0 + FONT);
                    let start = references
                        .iter()
                        .filter(|&&(ra, rb, _)| a < rb && ra < b)
                        .map(|&(_, _, len)| len + 8.0)
                        .fold(0.0, f64::max);
                    svg.text_rotated(
                        x + 4.0 + FONT * 0.8,
                        py0 + 4.0 + start,
                        -90.0,
                        &m.label,
                        &format!(
                            "text-anchor=\"end\" font-weight=\"600\" {} {HALO}",
                            color_attr("fill", color)
                        ),
                    );
                }
            }
        }
    }

    fn draw_series(&self, svg: &mut Svg, xm: &Mapper, ym: &Mapper, clip: &str) {
        let _ = writeln!(svg.out, "<g clip-path=\"url(#{clip})\">");
        // Last added is drawn first: the first series is the main one and stays on top
        // where curves coincide.
        for (i, s) in self.series.iter().enumerate().rev() {
            let color = self.series_color(i);
            // (index into the series, x px, y px) of every drawable point.
            let pts: Vec<(usize, f64, f64)> = s
                .points
                .iter()
                .enumerate()
                .filter_map(|(k, &(x, y))| Some((k, xm.px(x)?, ym.px(y)?)))
                .collect();
            if pts.is_empty() {
                continue;
            }
            if s.highlight {
                for &(_, x, y) in &pts {
                    svg.circle(
                        x,
                        y,
                        7.0,
                        &format!(
                            "fill=\"none\" {} stroke-width=\"2.5\"",
                            color_attr("stroke", &color)
                        ),
                    );
                }
                continue;
            }
            if let Some(errors) = &s.errors {
                let err_attrs = format!("{} stroke-width=\"1\"", color_attr("stroke", &color));
                for &(k, x, _) in &pts {
                    let Some(&(lo, hi)) = errors.get(k) else {
                        continue;
                    };
                    // A lower bound at or below zero on a log axis runs to the plot edge.
                    let (Some(y_lo), Some(y_hi)) = (ym.px(lo).or(Some(ym.p0)), ym.px(hi)) else {
                        continue;
                    };
                    if !lo.is_finite() || (y_lo - y_hi).abs() < 1.0 {
                        continue;
                    }
                    svg.line(x, y_lo, x, y_hi, &err_attrs);
                    svg.line(x - 3.0, y_lo, x + 3.0, y_lo, &err_attrs);
                    svg.line(x - 3.0, y_hi, x + 3.0, y_hi, &err_attrs);
                }
            }
            let mut points = String::new();
            for (j, &(_, x, y)) in pts.iter().enumerate() {
                if j > 0 {
                    points.push(' ');
                }
                let _ = write!(points, "{},{}", n(x), n(y));
            }
            let dash = if s.dashed {
                " stroke-dasharray=\"6 4\""
            } else {
                ""
            };
            let _ = writeln!(
                svg.out,
                "<polyline points=\"{points}\" fill=\"none\" {} stroke-width=\"2\" \
                 stroke-linejoin=\"round\"{dash}/>",
                color_attr("stroke", &color)
            );
            for &(k, x, y) in &pts {
                if s.unstable.get(k).copied().unwrap_or(false) {
                    svg.circle(
                        x,
                        y,
                        4.5,
                        &format!("fill=\"#ffffff\" stroke=\"{UNSTABLE_COLOR}\" stroke-width=\"2\""),
                    );
                } else if s.markers {
                    svg.circle(
                        x,
                        y,
                        3.0,
                        &format!(
                            "{} stroke=\"#ffffff\" stroke-width=\"0.8\"",
                            color_attr("fill", &color)
                        ),
                    );
                }
            }
        }
        svg.raw("</g>\n");
    }
}

// ---------------------------------------------------------------------------------------
// Heatmap
// ---------------------------------------------------------------------------------------

/// A matrix of values as coloured cells with the value printed in each (for example,
/// latency by working-set size × stride). Non-finite values are shown as empty grey cells.
#[derive(Debug, Clone)]
#[must_use = "charts and their parts do nothing until rendered"]
pub struct Heatmap {
    title: String,
    x_label: String,
    y_label: String,
    columns: Vec<String>,
    rows: Vec<String>,
    values: Vec<Vec<f64>>,
    value_label: String,
    log_color: bool,
    decimals: usize,
}

/// Light yellow → dark red: low values (fast) read as calm, high values (slow) as hot.
const HEAT_STOPS: [(f64, [f64; 3]); 5] = [
    (0.0, [255.0, 255.0, 204.0]),
    (0.25, [254.0, 217.0, 118.0]),
    (0.5, [253.0, 141.0, 60.0]),
    (0.75, [227.0, 26.0, 28.0]),
    (1.0, [128.0, 0.0, 38.0]),
];

/// Colour of the ramp at `t` ∈ [0, 1], and whether text over it should be white.
fn heat_color(t: f64) -> (String, bool) {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let mut rgb = HEAT_STOPS[0].1;
    for w in HEAT_STOPS.windows(2) {
        let ((t0, c0), (t1, c1)) = (w[0], w[1]);
        if t >= t0 && t <= t1 {
            let f = if t1 > t0 { (t - t0) / (t1 - t0) } else { 0.0 };
            for (k, v) in rgb.iter_mut().enumerate() {
                *v = c0[k] + f * (c1[k] - c0[k]);
            }
            break;
        }
    }
    let luminance = (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]) / 255.0;
    (
        format!(
            "#{:02x}{:02x}{:02x}",
            rgb[0].round() as u8,
            rgb[1].round() as u8,
            rgb[2].round() as u8
        ),
        luminance < 0.5,
    )
}

impl Heatmap {
    pub fn new(title: impl Into<String>) -> Heatmap {
        Heatmap {
            title: title.into(),
            x_label: String::new(),
            y_label: String::new(),
            columns: Vec::new(),
            rows: Vec::new(),
            values: Vec::new(),
            value_label: String::new(),
            log_color: false,
            decimals: 1,
        }
    }

    /// Label under the column labels.
    pub fn x_label(mut self, label: impl Into<String>) -> Heatmap {
        self.x_label = label.into();
        self
    }

    /// Label beside the row labels.
    pub fn y_label(mut self, label: impl Into<String>) -> Heatmap {
        self.y_label = label.into();
        self
    }

    pub fn columns(mut self, labels: Vec<String>) -> Heatmap {
        self.columns = labels;
        self
    }

    pub fn rows(mut self, labels: Vec<String>) -> Heatmap {
        self.rows = labels;
        self
    }

    /// Row-major values; ragged rows are padded with empty cells.
    pub fn values(mut self, values: Vec<Vec<f64>>) -> Heatmap {
        self.values = values;
        self
    }

    /// Title of the colour bar (the unit of the values).
    pub fn value_label(mut self, label: impl Into<String>) -> Heatmap {
        self.value_label = label.into();
        self
    }

    /// Colours by log10 of the value, for values spanning decades.
    pub fn log_color(mut self) -> Heatmap {
        self.log_color = true;
        self
    }

    /// Decimals of the value printed in each cell.
    pub fn decimals(mut self, decimals: usize) -> Heatmap {
        self.decimals = decimals.min(6);
        self
    }

    pub fn render(&self) -> String {
        let n_rows = self.rows.len().max(self.values.len());
        let n_cols = self
            .columns
            .len()
            .max(self.values.iter().map(Vec::len).max().unwrap_or(0));
        let value = |r: usize, c: usize| {
            self.values
                .get(r)
                .and_then(|row| row.get(c))
                .copied()
                .unwrap_or(f64::NAN)
        };
        let scale = if self.log_color {
            Scale::Log10
        } else {
            Scale::Linear
        };
        let all: Vec<f64> = self.values.iter().flatten().copied().collect();
        let (lo, hi) = {
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            for &v in &all {
                if scale.forward(v).is_some() {
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
            }
            if lo > hi {
                (1.0, 10.0)
            } else {
                (lo, hi)
            }
        };
        let color_map = Mapper::new(scale, lo, hi, 0.0, 1.0);
        let cell_text = |v: f64| {
            if v.is_finite() {
                format_number(v, self.decimals)
            } else {
                String::new()
            }
        };

        let widest_value = all
            .iter()
            .map(|&v| text_width(&cell_text(v), FONT))
            .fold(0.0, f64::max);
        let widest_col = self
            .columns
            .iter()
            .map(|l| text_width(l, FONT))
            .fold(0.0, f64::max);
        let cell_w = (widest_value + 14.0).clamp(44.0, 120.0);
        let cell_h = 24.0;
        // Column labels wider than a cell are turned 45° rather than overlapping.
        let rotate_cols = widest_col > cell_w - 6.0;
        let col_label_h = if rotate_cols {
            widest_col * 0.72 + FONT
        } else {
            FONT + 6.0
        };
        let widest_row = self
            .rows
            .iter()
            .map(|l| text_width(l, FONT))
            .fold(0.0, f64::max);

        let top = 12.0 + TITLE_FONT + 14.0;
        let left =
            10.0 + if self.y_label.is_empty() {
                0.0
            } else {
                FONT + 12.0
            } + widest_row
                + 8.0;
        let grid_w = n_cols as f64 * cell_w;
        let grid_h = (n_rows as f64 * cell_h).max(cell_h);
        let colorbar_x = left + grid_w + 20.0;
        // The colour bar is as tall as the grid, but at least as tall as its rotated
        // title, which would otherwise run out of the image for a grid of a few rows.
        let bar_h = grid_h
            .max(80.0)
            .max(text_width(&self.value_label, FONT) + 8.0);
        let ticks = make_ticks(scale, TickFormat::Number, lo, hi, bar_h, false);
        let tick_w = ticks
            .major
            .iter()
            .map(|t| text_width(&t.label, FONT))
            .fold(0.0, f64::max);
        let right = 20.0
            + 14.0
            + 6.0
            + tick_w
            + if self.value_label.is_empty() {
                0.0
            } else {
                FONT + 12.0
            }
            + 10.0;
        let bottom = 6.0
            + col_label_h
            + if self.x_label.is_empty() {
                0.0
            } else {
                FONT + 12.0
            }
            + 10.0;
        let width = (left + grid_w + right).max(text_width(&self.title, TITLE_FONT) + 40.0);
        let height = top + bar_h + bottom;

        let mut svg = Svg::new(width, height, &self.title);
        svg.text(
            width / 2.0,
            12.0 + TITLE_FONT,
            &self.title,
            &format!(
                "text-anchor=\"middle\" font-size=\"{TITLE_FONT}\" font-weight=\"600\" \
                 fill=\"{TEXT_COLOR}\""
            ),
        );
        if n_rows == 0 || n_cols == 0 {
            svg.text(
                width / 2.0,
                top + 40.0,
                "no data",
                &format!("text-anchor=\"middle\" fill=\"{MUTED_TEXT_COLOR}\""),
            );
            return svg.finish();
        }
        for r in 0..n_rows {
            let y = top + r as f64 * cell_h;
            for c in 0..n_cols {
                let x = left + c as f64 * cell_w;
                let v = value(r, c);
                let (fill, white_text) = match color_map.px(v) {
                    Some(t) => heat_color(t),
                    None => ("#f3f4f6".to_string(), false),
                };
                svg.rect(
                    x,
                    y,
                    cell_w,
                    cell_h,
                    &format!("fill=\"{fill}\" stroke=\"#ffffff\""),
                );
                let text = cell_text(v);
                if !text.is_empty() {
                    let color = if white_text { "#ffffff" } else { TEXT_COLOR };
                    svg.text(
                        x + cell_w / 2.0,
                        y + cell_h / 2.0 + FONT * 0.35,
                        &text,
                        &format!("text-anchor=\"middle\" fill=\"{color}\""),
                    );
                }
            }
            if let Some(label) = self.rows.get(r) {
                svg.text(
                    left - 6.0,
                    y + cell_h / 2.0 + FONT * 0.35,
                    label,
                    &format!("text-anchor=\"end\" fill=\"{MUTED_TEXT_COLOR}\""),
                );
            }
        }
        let grid_bottom = top + n_rows as f64 * cell_h;
        for (c, label) in self.columns.iter().enumerate().take(n_cols) {
            let x = left + (c as f64 + 0.5) * cell_w;
            if rotate_cols {
                svg.text_rotated(
                    x,
                    grid_bottom + 6.0 + FONT * 0.7,
                    -45.0,
                    label,
                    &format!("text-anchor=\"end\" fill=\"{MUTED_TEXT_COLOR}\""),
                );
            } else {
                svg.text(
                    x,
                    grid_bottom + 6.0 + FONT,
                    label,
                    &format!("text-anchor=\"middle\" fill=\"{MUTED_TEXT_COLOR}\""),
                );
            }
        }
        if !self.x_label.is_empty() {
            svg.text(
                left + grid_w / 2.0,
                grid_bottom + 6.0 + col_label_h + FONT + 6.0,
                &self.x_label,
                &format!("text-anchor=\"middle\" fill=\"{TEXT_COLOR}\""),
            );
        }
        if !self.y_label.is_empty() {
            svg.text_rotated(
                10.0 + FONT,
                top + n_rows as f64 * cell_h / 2.0,
                -90.0,
                &self.y_label,
                &format!("text-anchor=\"middle\" fill=\"{TEXT_COLOR}\""),
            );
        }

        // Colour bar: discrete steps rather than a gradient, which would need another id.
        let steps = 32;
        for k in 0..steps {
            let t = 1.0 - (k as f64 + 0.5) / steps as f64;
            let (fill, _) = heat_color(t);
            svg.rect(
                colorbar_x,
                top + k as f64 * bar_h / steps as f64,
                14.0,
                bar_h / steps as f64 + 0.5,
                &format!("fill=\"{fill}\""),
            );
        }
        svg.rect(
            colorbar_x,
            top,
            14.0,
            bar_h,
            &format!("fill=\"none\" stroke=\"{FRAME_COLOR}\""),
        );
        let bar_map = Mapper::new(scale, lo, hi, top + bar_h, top);
        for t in &ticks.major {
            if let Some(y) = bar_map.px(t.value) {
                svg.line(
                    colorbar_x + 14.0,
                    y,
                    colorbar_x + 18.0,
                    y,
                    &format!("stroke=\"{FRAME_COLOR}\""),
                );
                svg.text(
                    colorbar_x + 20.0,
                    y + FONT * 0.35,
                    &t.label,
                    &format!("fill=\"{MUTED_TEXT_COLOR}\""),
                );
            }
        }
        if !self.value_label.is_empty() {
            svg.text_rotated(
                colorbar_x + 20.0 + tick_w + 8.0 + FONT * 0.5,
                top + bar_h / 2.0,
                90.0,
                &self.value_label,
                &format!("text-anchor=\"middle\" fill=\"{TEXT_COLOR}\""),
            );
        }
        svg.finish()
    }
}

// ---------------------------------------------------------------------------------------
// Bar chart
// ---------------------------------------------------------------------------------------

/// Grouped bars: one group per category, one bar per series (bandwidth per kernel, per
/// NUMA node …). The value axis is linear from zero unless a range is given.
#[derive(Debug, Clone)]
#[must_use = "charts and their parts do nothing until rendered"]
pub struct BarChart {
    title: String,
    width: f64,
    height: f64,
    x_label: String,
    y_axis: Axis,
    categories: Vec<String>,
    series: Vec<(String, Vec<f64>, Option<String>)>,
    value_labels: bool,
    value_decimals: usize,
}

impl BarChart {
    pub fn new(title: impl Into<String>) -> BarChart {
        BarChart {
            title: title.into(),
            width: 960.0,
            height: 420.0,
            x_label: String::new(),
            y_axis: Axis::linear("").include_zero(),
            categories: Vec::new(),
            series: Vec::new(),
            value_labels: true,
            value_decimals: 1,
        }
    }

    pub fn size(mut self, width: f64, height: f64) -> BarChart {
        self.width = if width.is_finite() {
            width.clamp(240.0, 8000.0)
        } else {
            960.0
        };
        self.height = if height.is_finite() {
            height.clamp(180.0, 8000.0)
        } else {
            420.0
        };
        self
    }

    pub fn x_label(mut self, label: impl Into<String>) -> BarChart {
        self.x_label = label.into();
        self
    }

    /// The value axis; a linear one always includes zero, since bar length encodes value.
    pub fn y_axis(mut self, axis: Axis) -> BarChart {
        self.y_axis = if axis.scale == Scale::Linear {
            axis.include_zero()
        } else {
            axis
        };
        self
    }

    pub fn categories(mut self, labels: Vec<String>) -> BarChart {
        self.categories = labels;
        self
    }

    /// One value per category (missing or non-finite values leave a gap).
    pub fn series(
        mut self,
        name: impl Into<String>,
        values: Vec<f64>,
        color: Option<String>,
    ) -> BarChart {
        self.series.push((name.into(), values, color));
        self
    }

    /// Decimals of the value printed above each bar; `None` hides the values.
    pub fn value_labels(mut self, decimals: Option<usize>) -> BarChart {
        self.value_labels = decimals.is_some();
        self.value_decimals = decimals.unwrap_or(1).min(6);
        self
    }

    pub fn render(&self) -> String {
        let (width, height) = (self.width, self.height);
        let values: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.1.iter().copied())
            .collect();
        let (y_lo, y_hi) = self.y_axis.domain(&values);
        let color = |i: usize| {
            self.series[i]
                .2
                .clone()
                .unwrap_or_else(|| PALETTE[i % PALETTE.len()].to_string())
        };
        let entries: Vec<LegendEntry> = if self.series.len() > 1 {
            self.series
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    LegendEntry::new(
                        s.0.clone(),
                        LegendSymbol::Swatch {
                            color: color(i),
                            opacity: 1.0,
                        },
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        let legend_h = legend_rows(&entries, width - 40.0).len() as f64 * LEGEND_ROW;

        let top = 12.0 + TITLE_FONT + 14.0;
        let bottom = 6.0
            + FONT
            + 8.0
            + if self.x_label.is_empty() {
                0.0
            } else {
                FONT + 10.0
            }
            + if legend_h > 0.0 { legend_h + 8.0 } else { 0.0 }
            + 6.0;
        let plot_h = (height - top - bottom).max(40.0);
        let ticks = make_ticks(
            self.y_axis.scale,
            self.y_axis.format,
            y_lo,
            y_hi,
            plot_h,
            false,
        );
        let tick_w = ticks
            .major
            .iter()
            .map(|t| text_width(&t.label, FONT))
            .fold(0.0, f64::max);
        let has_y_label = !self.y_axis.label.is_empty();
        let left = 10.0 + if has_y_label { FONT + 12.0 } else { 0.0 } + tick_w + 8.0;
        let plot_w = (width - left - 20.0).max(40.0);
        let (px0, px1, py0, py1) = (left, left + plot_w, top, top + plot_h);
        let ym = Mapper::new(self.y_axis.scale, y_lo, y_hi, py1, py0);

        let mut svg = Svg::new(width, height, &self.title);
        svg.text(
            width / 2.0,
            12.0 + TITLE_FONT,
            &self.title,
            &format!(
                "text-anchor=\"middle\" font-size=\"{TITLE_FONT}\" font-weight=\"600\" \
                 fill=\"{TEXT_COLOR}\""
            ),
        );
        for t in &ticks.major {
            if let Some(y) = ym.px(t.value) {
                svg.line(px0, y, px1, y, &format!("stroke=\"{GRID_COLOR}\""));
                svg.text(
                    px0 - 7.0,
                    y + FONT * 0.35,
                    &t.label,
                    &format!("text-anchor=\"end\" fill=\"{MUTED_TEXT_COLOR}\""),
                );
            }
        }
        let n_cat = self
            .categories
            .len()
            .max(self.series.iter().map(|s| s.1.len()).max().unwrap_or(0));
        let n_series = self.series.len().max(1);
        if n_cat > 0 {
            let group_w = plot_w / n_cat as f64;
            let bar_w = (group_w * 0.8 / n_series as f64).max(1.0);
            // Bars grow from zero when it is on the axis, else from the bottom edge.
            let base = ym
                .px(0.0)
                .filter(|_| self.y_axis.scale == Scale::Linear)
                .unwrap_or(py1);
            for c in 0..n_cat {
                let gx = px0 + c as f64 * group_w + group_w * 0.1;
                for (i, s) in self.series.iter().enumerate() {
                    let Some(&v) = s.1.get(c) else { continue };
                    let Some(y) = ym.px(v) else { continue };
                    let y = y.clamp(py0, py1);
                    let x = gx + i as f64 * bar_w;
                    svg.rect(
                        x + 1.0,
                        y.min(base),
                        bar_w - 2.0,
                        (base - y).abs(),
                        &color_attr("fill", &color(i)),
                    );
                    if self.value_labels {
                        svg.text(
                            x + bar_w / 2.0,
                            y.min(base) - 4.0,
                            &format_value(self.y_axis.format, v, self.value_decimals),
                            &format!(
                                "text-anchor=\"middle\" font-size=\"11\" fill=\"{TEXT_COLOR}\""
                            ),
                        );
                    }
                }
                if let Some(label) = self.categories.get(c) {
                    svg.text(
                        px0 + (c as f64 + 0.5) * group_w,
                        py1 + 6.0 + FONT,
                        label,
                        &format!("text-anchor=\"middle\" fill=\"{MUTED_TEXT_COLOR}\""),
                    );
                }
            }
        }
        svg.line(px0, py1, px1, py1, &format!("stroke=\"{FRAME_COLOR}\""));
        svg.line(px0, py0, px0, py1, &format!("stroke=\"{FRAME_COLOR}\""));
        if !self.x_label.is_empty() {
            svg.text(
                (px0 + px1) / 2.0,
                py1 + 6.0 + FONT + 8.0 + FONT + 2.0,
                &self.x_label,
                &format!("text-anchor=\"middle\" fill=\"{TEXT_COLOR}\""),
            );
        }
        if has_y_label {
            svg.text_rotated(
                10.0 + FONT,
                (py0 + py1) / 2.0,
                -90.0,
                &self.y_axis.label,
                &format!("text-anchor=\"middle\" fill=\"{TEXT_COLOR}\""),
            );
        }
        if !entries.is_empty() {
            draw_legend(
                &mut svg,
                &entries,
                legend_x(&entries, 20.0, width - 40.0, px0),
                height - 6.0 - legend_h + LEGEND_ROW - 6.0,
                width - 40.0,
            );
        }
        svg.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{KIB, MIB};

    fn latency_like() -> LineChart {
        let points: Vec<(f64, f64)> = (12..=28)
            .map(|e| {
                let bytes = (e as f64).exp2();
                let ns = if e <= 15 {
                    1.2
                } else if e <= 20 {
                    4.0
                } else if e <= 25 {
                    14.0
                } else {
                    95.0
                };
                (bytes, ns)
            })
            .collect();
        LineChart::new("Latency")
            .x_axis(Axis::log2("Working set").bytes())
            .y_axis(Axis::log10("ns"))
            .secondary_y("cycles", 3.0)
            .series(Series::new("random", points))
    }

    #[test]
    fn renders_one_polyline_per_non_empty_series() {
        let svg = latency_like()
            .series(Series::new("empty", vec![]))
            .series(Series::new("second", vec![(8192.0, 2.0), (65536.0, 3.0)]))
            .render();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains("viewBox=\"0 0 960 540\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
    }

    #[test]
    fn escapes_text() {
        assert_eq!(
            escape("a & b < c > d \" e ' f"),
            "a &amp; b &lt; c &gt; d &quot; e &#39; f"
        );
        let svg = LineChart::new("<script>alert('x')</script> & co")
            .series(Series::new("s<1>", vec![(1.0, 1.0), (2.0, 2.0)]))
            .render();
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; co"));
        assert!(svg.contains("s&lt;1&gt;"));
    }

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
        assert!(
            ticks.major.len() >= 2 && ticks.major.len() < 5,
            "{:?}",
            ticks.major
        );
        // Counts never get fractional ticks, however short the axis' span.
        let ticks = make_ticks(Scale::Linear, TickFormat::Integer, 1.0, 2.0, 800.0, true);
        let labels: Vec<&str> = ticks.major.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["1", "2"]);
        assert_eq!(format_number(12_500.0, 0), "12.5k");
        assert_eq!(format_number(0.2, 1), "0.2");
    }

    #[test]
    fn skips_nan_infinite_and_non_positive_on_log_axes() {
        let svg = LineChart::new("t")
            .x_axis(Axis::log2("x"))
            .y_axis(Axis::log10("y"))
            .series(Series::new(
                "s",
                vec![
                    (f64::NAN, 1.0),
                    (4.0, f64::NAN),
                    (8.0, 2.0),
                    (16.0, f64::INFINITY),
                    (0.0, 3.0),
                    (32.0, -1.0),
                    (64.0, 4.0),
                ],
            ))
            .render();
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        assert_eq!(svg.matches("<polyline").count(), 1);
        let points = svg
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert_eq!(points.split(' ').count(), 2, "{points}");
        // A series of nothing but invalid values draws no line at all.
        let svg = LineChart::new("t")
            .series(Series::new("s", vec![(f64::NAN, f64::NAN)]))
            .render();
        assert_eq!(svg.matches("<polyline").count(), 0);
    }

    #[test]
    fn highlighted_points_are_rings_without_a_line() {
        let svg = LineChart::new("t")
            .series(Series::new(
                "curve",
                vec![(1.0, 1.0), (2.0, 4.0), (3.0, 5.0)],
            ))
            .series(
                Series::new("found", vec![(2.0, 4.0), (3.0, 5.0), (f64::NAN, 1.0)])
                    .color("#111827")
                    .highlight(),
            )
            .render();
        assert_eq!(svg.matches("<polyline").count(), 1, "{svg}");
        assert_eq!(svg.matches("r=\"7\" fill=\"none\"").count(), 2, "{svg}");
        assert!(svg.contains(">found</text>"), "{svg}");
    }

    #[test]
    fn degenerate_charts_render_without_panicking() {
        for chart in [
            LineChart::new(""),
            LineChart::new("one").series(Series::new("s", vec![(4096.0, 3.0)])),
            LineChart::new("flat")
                .x_axis(Axis::log2("x").bytes())
                .y_axis(Axis::log10("y"))
                .series(Series::new("s", vec![(4096.0, 3.0), (8192.0, 3.0)])),
            LineChart::new("zeros").series(Series::new("s", vec![(0.0, 0.0), (0.0, 0.0)])),
            LineChart::new("huge").series(Series::new("s", vec![(-1e308, 1e308), (1e308, -1e308)])),
            LineChart::new("bad range")
                .x_axis(Axis::log2("x").range(-1.0, 0.0))
                .secondary_y("c", f64::NAN)
                .marker(VMarker::reference(f64::NAN, "nan"))
                .band(Band::new(5.0, 1.0, "reversed"))
                .size(f64::NAN, 0.0),
        ] {
            let svg = chart.render();
            assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        }
    }

    #[test]
    fn markers_bands_errors_and_unstable_points_are_drawn() {
        let svg = latency_like()
            .series(
                Series::new("noisy", vec![(4096.0, 2.0), (8192.0, 3.0)])
                    .error_bars(vec![(1.5, 2.5), (2.0, 4.0)])
                    .unstable(vec![false, true]),
            )
            .marker(VMarker::reference(32.0 * KIB as f64, "L1d 32 KiB"))
            .marker(VMarker::found(32.0 * KIB as f64, "L1d ends", "#2ca02c"))
            .band(Band::new(4096.0, 32768.0, "L1d 1.2 ns"))
            .render();
        assert!(svg.contains("L1d 32 KiB") && svg.contains("L1d ends"));
        assert!(svg.contains("L1d 1.2 ns"));
        assert!(svg.contains("stroke-dasharray=\"5 4\""));
        assert!(svg.contains(&format!("stroke=\"{UNSTABLE_COLOR}\"")));
        assert!(svg.contains("unstable point"));
        assert!(svg.contains("cycles"));
    }

    #[test]
    fn heatmap_and_bar_chart_render() {
        let svg = Heatmap::new("Size × stride")
            .rows(vec!["4 KiB".into(), "1 MiB".into()])
            .columns(vec!["64 B".into(), "4 KiB".into(), "<x>".into()])
            .values(vec![vec![1.0, 2.0, f64::NAN], vec![10.0, 100.0]])
            .value_label("ns")
            .log_color()
            .render();
        assert!(svg.starts_with("<svg") && svg.contains("&lt;x&gt;"));
        assert!(svg.contains(">100.0<"));
        assert!(!svg.contains("NaN"));
        assert!(Heatmap::new("empty").render().contains("no data"));
        // One row: the image is still tall enough for the colour bar's rotated title.
        let label = "ns per access (log colour scale)";
        let svg = Heatmap::new("one row")
            .rows(vec!["4 KiB".into()])
            .columns(vec!["8".into()])
            .values(vec![vec![1.0]])
            .value_label(label)
            .render();
        let height: f64 = svg
            .split("height=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|h| h.parse().ok())
            .unwrap();
        assert!(height > text_width(label, FONT) + 40.0, "{height}");
        let svg = BarChart::new("Bandwidth")
            .categories(vec!["read".into(), "write".into()])
            .series("node 0", vec![20.0, 12.5], None)
            .series("node 1", vec![f64::NAN, 9.0], None)
            .render();
        assert_eq!(svg.matches("<rect").count(), 1 + 3 + 2);
        assert!(svg.contains(">12.5<"));
        assert!(BarChart::new("").render().starts_with("<svg"));
    }
}
