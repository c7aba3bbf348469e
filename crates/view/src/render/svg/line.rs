//! Draws a `LineChart`: layout, grid, shaded bands, vertical markers and their labels,
//! series (lines, markers, error bars, unstable points), the axes and the legend.

use std::fmt::Write as _;

use super::axis::{make_ticks, Mapper, Ticks};
use super::*;
use crate::view::chart::{LineChart, MarkerStyle, VMarker};

impl LineChart {
    fn legend_entries(&self) -> Vec<LegendEntry> {
        let mut entries: Vec<LegendEntry> = Vec::new();
        let mut any_unstable = false;
        for (i, s) in self.series.iter().enumerate() {
            let color = series_color(&s.color, i);
            let (hollow, dashed) = (true, s.dashed);
            let symbol = if s.highlight {
                LegendSymbol::Marker { color, hollow }
            } else if s.markers {
                LegendSymbol::LineMarker { color, dashed }
            } else {
                LegendSymbol::Line { color, dashed }
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

    /// The x values and the y values the axes must hold: the points, markers and bands,
    /// and the error bars of drawable points.
    fn extent_values(&self) -> (Vec<f64>, Vec<f64>) {
        let xs: Vec<f64> = (self.series.iter())
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
        (xs, ys)
    }

    /// The complete `<svg>` element.
    pub fn render(&self) -> String {
        let (width, height) = (self.width, self.height);
        let (xs, ys) = self.extent_values();
        let (x_lo, x_hi) = self.x_axis.domain(&xs);
        let (y_lo, y_hi) = self.y_axis.domain(&ys);

        let entries = self.legend_entries();

        // Vertical layout first: it does not depend on any tick label.
        let band_rows = self.bands.len().min(2) as f64;
        let top =
            12.0 + TITLE_FONT + 12.0 + band_rows * 16.0 + if band_rows > 0.0 { 6.0 } else { 0.0 };
        let bottom = bottom_margin(&self.x_axis.label, legend_height(&entries, width));
        let plot_h = (height - top - bottom).max(40.0);

        // Then the y ticks, whose label widths decide the side margins.
        let (x_axis, y_axis) = (&self.x_axis, &self.y_axis);
        let inner_h = plot_h - 2.0 * INSET;
        let y_ticks = make_ticks(y_axis.scale, y_axis.format, y_lo, y_hi, inner_h, false);
        let left = left_margin(&y_axis.label, y_ticks.label_width());

        let secondary = self
            .secondary
            .as_ref()
            .filter(|s| s.factor.is_finite() && s.factor > 0.0)
            .map(|s| {
                let (lo, hi) = (y_lo * s.factor, y_hi * s.factor);
                let format = TickFormat::Number;
                (s, make_ticks(y_axis.scale, format, lo, hi, inner_h, false))
            });
        let right = match &secondary {
            Some((s, t)) => 8.0 + t.label_width() + room(&s.label, 12.0 + FONT) + 10.0,
            None => 24.0,
        };
        let plot_w = (width - left - right).max(40.0);
        let inner_w = plot_w - 2.0 * INSET;
        let x_ticks = make_ticks(x_axis.scale, x_axis.format, x_lo, x_hi, inner_w, true);

        let plot = (left, left + plot_w, top, top + plot_h);
        let (px0, px1, py0, py1) = plot;
        let xm = Mapper::new(x_axis.scale, x_lo, x_hi, px0 + INSET, px1 - INSET);
        let ym = Mapper::new(y_axis.scale, y_lo, y_hi, py1 - INSET, py0 + INSET);

        let mut svg = Svg::new(width, height, &self.title);
        let title = &self.title;
        let layout = format!("{title}|{width}|{height}|{left}|{top}|{plot_w}|{plot_h}");
        let clip = format!("msc{:08x}", short_hash(&layout));
        let _ = writeln!(
            svg.out,
            "<defs><clipPath id=\"{clip}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\
             </clipPath></defs>",
            n(px0),
            n(py0),
            n(plot_w),
            n(plot_h)
        );
        svg.title(width, &self.title);

        // Grid first, so everything else is drawn over it.
        draw_grid(&mut svg, (&xm, &ym), plot, (&x_ticks, &y_ticks));
        self.draw_bands(&mut svg, &xm, plot, &clip, width);
        self.draw_markers(&mut svg, &xm, (py0, py1), &clip);
        self.draw_series(&mut svg, &xm, &ym, &clip);
        self.draw_marker_labels(&mut svg, &xm, plot);

        let frame = format!("fill=\"none\" stroke=\"{FRAME_COLOR}\"");
        svg.rect(px0, py0, plot_w, plot_h, &frame);

        draw_axes(&mut svg, (&xm, &ym), plot, (&x_ticks, &y_ticks));
        svg.plot_titles(plot, &x_axis.label, &y_axis.label);
        if let Some((s, t)) = &secondary {
            let mut label_w: f64 = 0.0;
            for tick in &t.major {
                if let Some(y) = ym.px(tick.value / s.factor) {
                    svg.right_tick(px1, y, &tick.label, 7.0);
                    label_w = label_w.max(text_width(&tick.label, FONT));
                }
            }
            let x = px1 + 8.0 + label_w + 8.0 + FONT * 0.5;
            svg.axis_title(x, (py0 + py1) / 2.0, 90.0, &s.label);
        }
        draw_legend(&mut svg, &entries, width, height, px0);
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
            let (fill, stroke) = (
                color_attr("fill", &band.color),
                color_attr("stroke", &band.color),
            );
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
            let shade = format!("{fill} fill-opacity=\"0.12\" clip-path=\"url(#{clip})\"");
            svg.rect(a, py0, b - a, py1 - py0, &shade);
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
                &format!("{stroke} stroke-width=\"2\""),
            );
            let label_attrs = format!("text-anchor=\"middle\" font-weight=\"600\" {fill}");
            svg.text(cx, y_line - 4.0, &band.label, &label_attrs);
        }
    }

    fn draw_markers(&self, svg: &mut Svg, xm: &Mapper, (py0, py1): (f64, f64), clip: &str) {
        for m in &self.markers {
            let Some(x) = xm.px(m.x) else { continue };
            let style = match &m.style {
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
                &format!("{style} clip-path=\"url(#{clip})\""),
            );
        }
    }

    /// Marker labels run down their line from the top of the plot, where the curve rarely
    /// is (it is high only past the last cache, where no boundary is found). Reference labels
    /// sit left of their line and found labels right of it, so a reference and a found marker
    /// at the same x (the usual case: "L1d 32 KiB" / "L1d ends") do not collide. Any label
    /// that would still touch one placed before it (references first, then found markers,
    /// each in the order given: a found marker just left of a reference, two references at
    /// one size) starts below the lowest of those, so that they are staggered; when that
    /// would run it out of the plot, it goes to the other side of its line.
    fn draw_marker_labels(
        &self,
        svg: &mut Svg,
        xm: &Mapper,
        (px0, px1, py0, py1): (f64, f64, f64, f64),
    ) {
        let visible = |m: &VMarker| {
            xm.px(m.x)
                .filter(|&x| x >= px0 && x <= px1 && !m.label.is_empty())
        };
        let references = self
            .markers
            .iter()
            .filter(|m| m.style == MarkerStyle::Reference);
        let found = self
            .markers
            .iter()
            .filter(|m| m.style != MarkerStyle::Reference);
        // Horizontal extent of every label placed so far, and how far down from the top
        // of the plot it reaches (with a gap).
        let mut placed: Vec<(f64, f64, f64)> = Vec::new();
        let room = (py1 - py0 - 8.0).max(0.0);
        for m in references.chain(found) {
            let Some(x) = visible(m) else { continue };
            let length = text_width(&m.label, FONT) + 8.0;
            // The turned text's line box (the glyphs' height, across the line) on the
            // left or right of the line, and how far down it must start there.
            let place = |left: bool| {
                let (a, b) = if left {
                    (x - 5.0 - FONT, x - 3.0)
                } else {
                    (x + 3.0, x + 5.0 + FONT)
                };
                let start = (placed.iter())
                    .filter(|&&(ra, rb, _)| a < rb && ra < b)
                    .map(|&(_, _, reach)| reach)
                    .fold(0.0, f64::max);
                (left, a, b, start)
            };
            // Its own side, else the other one when staggering would run it out of the
            // plot there (two references at one size in a short chart), else the side
            // where it starts higher.
            let own = place(m.style == MarkerStyle::Reference);
            let other = place(m.style != MarkerStyle::Reference);
            let fits = |p: &(bool, f64, f64, f64)| p.3 + length <= room;
            let (left, a, b, start) = if fits(&own) || (!fits(&other) && own.3 <= other.3) {
                own
            } else {
                other
            };
            placed.push((a, b, start + length));
            let y = py0 + 4.0 + start;
            let x = if left { x - 4.0 } else { x + 4.0 + FONT * 0.8 };
            let attrs = match &m.style {
                MarkerStyle::Reference => {
                    format!("text-anchor=\"end\" fill=\"{REFERENCE_COLOR}\" {HALO}")
                }
                MarkerStyle::Found { color } => {
                    let fill = color_attr("fill", color);
                    format!("text-anchor=\"end\" font-weight=\"600\" {fill} {HALO}")
                }
            };
            svg.text_rotated(x, y, -90.0, &m.label, &attrs);
        }
    }

    fn draw_series(&self, svg: &mut Svg, xm: &Mapper, ym: &Mapper, clip: &str) {
        let _ = writeln!(svg.out, "<g clip-path=\"url(#{clip})\">");
        // Last added is drawn first: the first series is the main one and stays on top
        // where curves coincide.
        for (i, s) in self.series.iter().enumerate().rev() {
            let color = series_color(&s.color, i);
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
            let stroke = color_attr("stroke", &color);
            if s.highlight {
                let ring = format!("fill=\"none\" {stroke} stroke-width=\"2.5\"");
                for &(_, x, y) in &pts {
                    svg.circle(x, y, 7.0, &ring);
                }
                continue;
            }
            if let Some(errors) = &s.errors {
                let err_attrs = format!("{stroke} stroke-width=\"1\"");
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
            let points: Vec<String> = pts
                .iter()
                .map(|&(_, x, y)| format!("{},{}", n(x), n(y)))
                .collect();
            let dash = if s.dashed {
                " stroke-dasharray=\"6 4\""
            } else {
                ""
            };
            let _ = writeln!(
                svg.out,
                "<polyline points=\"{}\" fill=\"none\" {stroke} stroke-width=\"2\" \
                 stroke-linejoin=\"round\"{dash}/>",
                points.join(" "),
            );
            let unstable =
                format!("fill=\"#ffffff\" stroke=\"{UNSTABLE_COLOR}\" stroke-width=\"2\"");
            let marker = format!(
                "{} stroke=\"#ffffff\" stroke-width=\"0.8\"",
                color_attr("fill", &color)
            );
            for &(k, x, y) in &pts {
                if s.unstable.get(k).copied().unwrap_or(false) {
                    svg.circle(x, y, 4.5, &unstable);
                } else if s.markers {
                    svg.circle(x, y, 3.0, &marker);
                }
            }
        }
        svg.raw("</g>\n");
    }
}

/// The grid lines: minor and major at the x ticks, major at the y ticks.
fn draw_grid(
    svg: &mut Svg,
    (xm, ym): (&Mapper, &Mapper),
    (px0, px1, py0, py1): (f64, f64, f64, f64),
    (x_ticks, y_ticks): (&Ticks, &Ticks),
) {
    let minor = x_ticks.minor.iter().map(|&v| (v, MINOR_GRID_COLOR));
    let major = x_ticks.major.iter().map(|t| (t.value, GRID_COLOR));
    for (v, color) in minor.chain(major) {
        if let Some(x) = xm.px(v) {
            svg.line(x, py0, x, py1, &format!("stroke=\"{color}\""));
        }
    }
    for t in &y_ticks.major {
        if let Some(y) = ym.px(t.value) {
            svg.line(px0, y, px1, y, &format!("stroke=\"{GRID_COLOR}\""));
        }
    }
}

/// The tick marks and their labels on the bottom and left axes.
fn draw_axes(
    svg: &mut Svg,
    (xm, ym): (&Mapper, &Mapper),
    (px0, _, _, py1): (f64, f64, f64, f64),
    (x_ticks, y_ticks): (&Ticks, &Ticks),
) {
    let tick_attrs = format!("stroke=\"{FRAME_COLOR}\"");
    for t in &x_ticks.major {
        if let Some(x) = xm.px(t.value) {
            svg.line(x, py1, x, py1 + 4.0, &tick_attrs);
            svg.label(x, py1 + 6.0 + FONT, &t.label, "middle", MUTED_TEXT_COLOR);
        }
    }
    for t in &y_ticks.major {
        if let Some(y) = ym.px(t.value) {
            svg.line(px0 - 4.0, y, px0, y, &tick_attrs);
            let y = y + FONT * 0.35;
            svg.label(px0 - 7.0, y, &t.label, "end", MUTED_TEXT_COLOR);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::svg::tests::{first_attr, latency_like};
    use crate::units::KIB;
    use crate::view::chart::{Axis, Band, Series};

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
        let points = first_attr(&svg, "points");
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
    fn markers_bands_errors_unstable_points_and_a_polyline_per_non_empty_series_are_drawn() {
        let svg = latency_like()
            .series(Series::new("empty", vec![]))
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
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains("viewBox=\"0 0 960 540\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
    }

    /// The boxes (x0, x1, y0, y1) of the labels turned by -90° (the marker labels),
    /// from their anchor: the glyphs' height across, the estimated width downwards.
    fn turned_label_boxes(svg: &str) -> Vec<(String, [f64; 4])> {
        svg.lines()
            .filter(|l| l.starts_with("<text") && l.contains("rotate(-90 ") && l.contains("end"))
            .map(|l| {
                let attr = |name: &str| -> f64 {
                    let rest = l.split_once(&format!(" {name}=\"")).unwrap().1;
                    rest.split('"').next().unwrap().parse().unwrap()
                };
                let text = l.split('>').nth(1).unwrap().split('<').next().unwrap();
                let (x, y) = (attr("x"), attr("y"));
                let w = text_width(text, FONT);
                (
                    text.to_string(),
                    [x - 0.75 * FONT, x + 0.25 * FONT, y, y + w],
                )
            })
            .collect()
    }

    #[test]
    fn marker_labels_near_each_other_are_staggered_not_overlapping() {
        let mib = 1024.0 * KIB as f64;
        // A found end just left of its reference (the "L2 1 MiB" / "L2 ends" pair), two
        // references at one size (TLB entries of two page sizes) and a lone pair.
        for found_at in [0.75, 0.8, 0.875, 0.95, 1.0, 1.05, 1.2] {
            let svg = latency_like()
                .marker(VMarker::reference(mib, "L2 1 MiB"))
                .marker(VMarker::found(found_at * mib, "L2 ends", "#1f77b4"))
                .marker(VMarker::reference(
                    64.0 * KIB as f64,
                    "CPUID 4 KiB L1 DTLB: 96",
                ))
                .marker(VMarker::reference(
                    64.0 * KIB as f64,
                    "CPUID 2 MiB L1 DTLB: 96",
                ))
                .marker(VMarker::reference(32.0 * mib, "L3 32 MiB"))
                .marker(VMarker::found(32.0 * mib, "L3 ends", "#9467bd"))
                .render();
            let boxes = turned_label_boxes(&svg);
            assert_eq!(boxes.len(), 6, "{svg}");
            for (i, (a, p)) in boxes.iter().enumerate() {
                for (b, q) in &boxes[i + 1..] {
                    let across = p[0] < q[1] && q[0] < p[1];
                    let along = p[2] < q[3] && q[2] < p[3];
                    assert!(!(across && along), "{a} and {b} overlap at {found_at} MiB");
                }
            }
        }
        // A short chart: the second of two long labels at one size goes to the other side
        // of the line rather than down past the plot into the axis labels.
        let svg = latency_like()
            .size(960.0, 320.0)
            .marker(VMarker::reference(
                64.0 * KIB as f64,
                "CPUID 4 KiB L1 DTLB: 96",
            ))
            .marker(VMarker::reference(
                64.0 * KIB as f64,
                "CPUID 2 MiB L1 DTLB: 96",
            ))
            .render();
        let boxes = turned_label_boxes(&svg);
        let (p, q) = (boxes[0].1, boxes[1].1);
        assert!(
            !(p[0] < q[1] && q[0] < p[1] && p[2] < q[3] && q[2] < p[3]),
            "{svg}"
        );
        // Both inside the plot, above the x tick labels (at most the height less 60).
        assert!(p[3].max(q[3]) < 320.0 - 60.0, "{boxes:?}");
    }
}
