//! The SVG renderer of `view::chart`: standalone `<svg>` charts, without dependencies.
//!
//! `render` draws any `Chart`; each kind also has its own `render` method, defined in
//! `line` (`LineChart`: series over a linear/log2 x axis and a linear/log10 y axis, with an
//! optional secondary y axis, vertical markers, shaded x bands and a legend), `heatmap` (a
//! matrix of values with a colour scale) and `bar` (grouped bars per category). They share
//! the scales and tick generators of `axis` and the text helpers, the `Svg` writer and the
//! legend here. Each chart renders to a standalone `<svg>` element with `width`/`height`
//! and a `viewBox`, so it can be inlined in HTML or saved as a `.svg` file on its own.
//!
//! Nothing external is referenced: no fonts, scripts or stylesheets; text uses the reader's
//! `system-ui` font, so label widths are *estimated* from an average glyph width when margins
//! are laid out and ticks are thinned. Invalid data never panics: non-finite values are
//! skipped, and so are zero or negative values on a logarithmic axis; a chart without data
//! renders its frame and axes.

use std::fmt::Write as _;

use crate::units::Bytes;
use crate::view::chart::{Chart, LegendEntry, LegendSymbol, TickFormat, PALETTE};

mod axis;
mod bar;
mod heatmap;
mod line;

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
/// The widest a chart that grows with its data (a heatmap's columns) is drawn: in a
/// 1,400 px window the HTML page's column is 1,352 px, and a wider image is scaled down
/// to it, shrinking its 12 px text below legibility (48 columns of 44 px drew 5 px text).
const MAX_CHART_WIDTH: f64 = 1280.0;
/// The smallest readable text, after any scaling: no label is drawn smaller.
#[cfg(test)]
const MIN_READABLE_FONT: f64 = 11.0;
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

/// A number as a tick or value label: `decimals` digits after the point below 10 000, then
/// shortened with k/M/G so labels stay narrow.
pub(crate) fn format_number(v: f64, decimals: usize) -> String {
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

/// The complete `<svg>` element of any chart.
pub fn render(chart: &Chart) -> String {
    match chart {
        Chart::Line(c) => c.render(),
        Chart::Heatmap(c) => c.render(),
        Chart::Bar(c) => c.render(),
    }
}

// ---------------------------------------------------------------------------------------
// The SVG text builder
// ---------------------------------------------------------------------------------------

/// Accumulates SVG elements. Attribute fragments passed in are written as they are and
/// must come from this renderer; every piece of caller-supplied text goes through `escape`.
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

    /// The chart's title, centred at the top of a chart `width` wide.
    fn title(&mut self, width: f64, title: &str) {
        let attrs = format!(
            "text-anchor=\"middle\" font-size=\"{TITLE_FONT}\" font-weight=\"600\" \
             fill=\"{TEXT_COLOR}\""
        );
        self.text(width / 2.0, 12.0 + TITLE_FONT, title, &attrs);
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

    /// Text anchored at its "middle" or "end", in `color`.
    fn label(&mut self, x: f64, y: f64, text: &str, anchor: &str, color: &str) {
        let attrs = format!("text-anchor=\"{anchor}\" fill=\"{color}\"");
        self.text(x, y, text, &attrs);
    }

    /// An axis title centred on (x, y), turned by `angle` degrees; nothing when it is empty.
    fn axis_title(&mut self, x: f64, y: f64, angle: f64, text: &str) {
        let attrs = format!("text-anchor=\"middle\" fill=\"{TEXT_COLOR}\"");
        if text.is_empty() {
        } else if angle == 0.0 {
            self.text(x, y, text, &attrs);
        } else {
            self.text_rotated(x, y, angle, text, &attrs);
        }
    }

    /// The titles of the x axis (under its tick labels) and of the y axis (turned, along
    /// the left edge) of the plot `(px0, px1, py0, py1)`.
    fn plot_titles(&mut self, (px0, px1, py0, py1): (f64, f64, f64, f64), x: &str, y: &str) {
        self.axis_title(
            (px0 + px1) / 2.0,
            py1 + 6.0 + FONT + 8.0 + FONT + 2.0,
            0.0,
            x,
        );
        self.axis_title(10.0 + FONT, (py0 + py1) / 2.0, -90.0, y);
    }

    /// A tick mark right of an axis at `x`, and its label `gap` px right of the axis.
    fn right_tick(&mut self, x: f64, y: f64, label: &str, gap: f64) {
        self.line(x, y, x + 4.0, y, &format!("stroke=\"{FRAME_COLOR}\""));
        self.text(
            x + gap,
            y + FONT * 0.35,
            label,
            &format!("fill=\"{MUTED_TEXT_COLOR}\""),
        );
    }

    /// An empty element: its coordinates, then the other attributes.
    fn element(&mut self, tag: &str, coordinates: &[(&str, f64)], attrs: &str) {
        self.out.push('<');
        self.out.push_str(tag);
        for (name, v) in coordinates {
            let _ = write!(self.out, " {name}=\"{}\"", n(*v));
        }
        let _ = writeln!(self.out, " {attrs}/>");
    }

    fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, attrs: &str) {
        let coordinates = [("x1", x1), ("y1", y1), ("x2", x2), ("y2", y2)];
        self.element("line", &coordinates, attrs);
    }

    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, attrs: &str) {
        let size = [("width", w.max(0.0)), ("height", h.max(0.0))];
        self.element("rect", &[("x", x), ("y", y), size[0], size[1]], attrs);
    }

    /// A rectangle with a tooltip (its `<title>`): the value of a cell too narrow to
    /// print it.
    fn rect_with_tooltip(&mut self, x: f64, y: f64, w: f64, h: f64, attrs: &str, tip: &str) {
        let _ = writeln!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {attrs}><title>{}</title></rect>",
            n(x),
            n(y),
            n(w.max(0.0)),
            n(h.max(0.0)),
            escape(tip)
        );
    }

    fn circle(&mut self, cx: f64, cy: f64, r: f64, attrs: &str) {
        self.element("circle", &[("cx", cx), ("cy", cy), ("r", r)], attrs);
    }

    fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

/// Estimated width of the widest of these texts at the normal font size.
fn widest<S: AsRef<str>>(texts: impl IntoIterator<Item = S>) -> f64 {
    let widths = texts.into_iter().map(|t| text_width(t.as_ref(), FONT));
    widths.fold(0.0, f64::max)
}

/// `space` for an axis title, none when there is no title.
fn room(title: &str, space: f64) -> f64 {
    if title.is_empty() {
        0.0
    } else {
        space
    }
}

/// Room left of a plot for the y axis title (if any) and the widest tick label.
fn left_margin(y_title: &str, label_width: f64) -> f64 {
    10.0 + room(y_title, FONT + 12.0) + label_width + 8.0
}

/// Room under a plot for the x tick labels, the x axis title (if any) and the legend.
fn bottom_margin(x_title: &str, legend_height: f64) -> f64 {
    let legend = if legend_height > 0.0 {
        legend_height + 8.0
    } else {
        0.0
    };
    6.0 + FONT + 8.0 + room(x_title, FONT + 10.0) + legend + 6.0
}

/// The colour given, else the palette's for the `i`-th series.
fn series_color(color: &Option<String>, i: usize) -> String {
    color
        .clone()
        .unwrap_or_else(|| PALETTE[i % PALETTE.len()].to_string())
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

const LEGEND_ROW: f64 = 20.0;
const LEGEND_SYMBOL: f64 = 24.0;

/// Height of the legend under a chart `width` wide.
fn legend_height(entries: &[LegendEntry], width: f64) -> f64 {
    legend_rows(entries, width - 40.0).len() as f64 * LEGEND_ROW
}

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

/// The legend along the bottom of a chart `width` × `height` whose plot starts at
/// `plot_left`.
fn draw_legend(svg: &mut Svg, entries: &[LegendEntry], width: f64, height: f64, plot_left: f64) {
    let max_width = width - 40.0;
    let x0 = legend_x(entries, 20.0, max_width, plot_left);
    let y0 = height - 6.0 - legend_height(entries, width) + LEGEND_ROW - 6.0;
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
                    let stroke =
                        format!("{} stroke-width=\"2\"{dash}", color_attr("stroke", color));
                    svg.line(x, mid, x + LEGEND_SYMBOL, mid, &stroke);
                    if matches!(e.symbol, LegendSymbol::LineMarker { .. }) {
                        let fill = format!("{} stroke=\"#ffffff\"", color_attr("fill", color));
                        svg.circle(x + LEGEND_SYMBOL / 2.0, mid, 3.0, &fill);
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
                    let opacity = if opacity.is_finite() {
                        opacity.clamp(0.0, 1.0)
                    } else {
                        1.0
                    };
                    let (fill, stroke) = (color_attr("fill", color), color_attr("stroke", color));
                    let attrs = format!(
                        "{fill} fill-opacity=\"{opacity:.2}\" {stroke} stroke-opacity=\"0.6\""
                    );
                    svg.rect(x, mid - 6.0, LEGEND_SYMBOL, 12.0, &attrs);
                }
            }
            let label_attrs = format!("fill=\"{TEXT_COLOR}\"");
            svg.text(x + LEGEND_SYMBOL + 6.0, y, &e.label, &label_attrs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::chart::{Axis, Band, BarChart, Heatmap, LineChart, Series, VMarker};

    /// A latency curve over 4 KiB … 256 MiB with a cycles axis, shared by the tests of
    /// the axes and of the line chart.
    pub(super) fn latency_like() -> LineChart {
        let points: Vec<(f64, f64)> = (12..=28)
            .map(|e| {
                let ns = match e {
                    ..=15 => 1.2,
                    16..=20 => 4.0,
                    21..=25 => 14.0,
                    _ => 95.0,
                };
                ((e as f64).exp2(), ns)
            })
            .collect();
        LineChart::new("Latency")
            .x_axis(Axis::log2("Working set").bytes())
            .y_axis(Axis::log10("ns"))
            .secondary_y("cycles", 3.0)
            .series(Series::new("random", points))
    }

    /// The value of the first `name="…"` attribute in `svg`.
    pub(super) fn first_attr<'a>(svg: &'a str, name: &str) -> &'a str {
        let rest = svg.split_once(&format!(" {name}=\"")).expect(name).1;
        rest.split('"').next().unwrap()
    }

    /// The smallest text of `svg` as a reader sees it when the page shows it at most
    /// `column_px` wide (a wider image is scaled down, its text with it).
    pub(crate) fn smallest_text_px(svg: &str, column_px: f64) -> f64 {
        let width: f64 = first_attr(svg, "width").parse().unwrap();
        let scale = (column_px / width).min(1.0);
        let sizes = svg
            .split(" font-size=\"")
            .skip(1)
            .map(|rest| rest.split('"').next().unwrap().parse::<f64>().unwrap());
        sizes.fold(f64::INFINITY, f64::min) * scale
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
    fn render_draws_each_kind_of_chart_like_its_own_render() {
        let line = latency_like()
            .marker(VMarker::reference(32768.0, "L1d 32 KiB"))
            .band(Band::new(4096.0, 32768.0, "L1d"));
        assert_eq!(render(&Chart::Line(line.clone())), line.render());
        let heatmap = Heatmap::new("h")
            .rows(vec!["a".into()])
            .columns(vec!["b".into()])
            .values(vec![vec![1.0]]);
        assert_eq!(render(&Chart::from(heatmap.clone())), heatmap.render());
        let bar = BarChart::new("b").series("s", vec![1.0, 2.0], None);
        assert_eq!(render(&Chart::from(bar.clone())), bar.render());
    }
}
