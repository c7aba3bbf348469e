//! Draws a `BarChart`: grouped bars per category with their values and error bars, the
//! reference lines, the value axis and the legend.

use super::axis::{make_ticks, Mapper};
use super::*;
use crate::view::chart::{BarChart, Scale};

/// The angle (degrees) of category labels too long to stand side by side.
const SLANT: f64 = 40.0;

/// `text` cut to `max` characters, the cut marked with an ellipsis.
fn shortened(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let kept: String = text.chars().take(max - 1).collect();
        format!("{kept}…")
    }
}

impl BarChart {
    pub fn render(&self) -> String {
        let (width, height) = (self.width, self.height);
        let values: Vec<f64> = (self.series.iter().flat_map(|s| s.1.iter().copied()))
            .chain(self.references.iter().map(|r| r.0))
            .chain(
                self.errors
                    .iter()
                    .flat_map(|e| e.1.iter().flat_map(|b| [b.0, b.1])),
            )
            .collect();
        let (y_lo, y_hi) = self.y_axis.domain(&values);
        let color = |i: usize| series_color(&self.series[i].2, i);
        // A legend only for several series.
        let several = self.series.len() > 1;
        let entries: Vec<LegendEntry> = (self.series.iter().enumerate())
            .filter(|_| several)
            .map(|(i, s)| {
                let (color, opacity) = (color(i), 1.0);
                LegendEntry::new(s.0.clone(), LegendSymbol::Swatch { color, opacity })
            })
            .collect();

        // Category labels that would not fit side by side under their groups (the plot is
        // at most the width less the margins) are turned 40° and shortened, and the
        // bottom margin grows to hold them.
        let n_groups = self.categories.len().max(1) as f64;
        let widest = (self.categories.iter())
            .map(|c| text_width(c, FONT))
            .fold(0.0, f64::max);
        let slanted = widest > (width - 100.0) / n_groups - 8.0;
        let categories: Vec<String> = if slanted {
            self.categories.iter().map(|c| shortened(c, 30)).collect()
        } else {
            self.categories.clone()
        };
        let slant_room = if slanted {
            let longest = (categories.iter())
                .map(|c| text_width(c, FONT))
                .fold(0.0, f64::max);
            longest * SLANT.to_radians().sin()
        } else {
            0.0
        };
        let top = 12.0 + TITLE_FONT + 14.0;
        let bottom = bottom_margin(&self.x_label, legend_height(&entries, width)) + slant_room;
        let plot_h = (height - top - bottom).max(40.0);
        let axis = &self.y_axis;
        let ticks = make_ticks(axis.scale, axis.format, y_lo, y_hi, plot_h, false);
        // Slanted labels reach left of their group: the first must stay on the chart.
        let first_reach = slant_room / SLANT.to_radians().tan() - (width - 100.0) / n_groups / 2.0;
        let left = left_margin(&axis.label, ticks.label_width()).max(first_reach + 4.0);
        let plot_w = (width - left - 20.0).max(40.0);
        let (px0, px1, py0, py1) = (left, left + plot_w, top, top + plot_h);
        let ym = Mapper::new(axis.scale, y_lo, y_hi, py1, py0);

        let mut svg = Svg::new(width, height, &self.title);
        svg.title(width, &self.title);
        for t in &ticks.major {
            if let Some(y) = ym.px(t.value) {
                svg.line(px0, y, px1, y, &format!("stroke=\"{GRID_COLOR}\""));
                svg.label(
                    px0 - 7.0,
                    y + FONT * 0.35,
                    &t.label,
                    "end",
                    MUTED_TEXT_COLOR,
                );
            }
        }
        let plot = Plot {
            px0,
            px1,
            py0,
            py1,
            ym,
        };
        self.draw_groups(&mut svg, &plot, &categories, slanted);
        for (value, label) in &self.references {
            let Some(y) = plot.ym.px(*value) else {
                continue;
            };
            let dashed = format!(
                "stroke=\"{REFERENCE_COLOR}\" stroke-width=\"1.2\" stroke-dasharray=\"5 4\""
            );
            svg.line(px0, y, px1, y, &dashed);
            let attrs = format!("text-anchor=\"end\" fill=\"{REFERENCE_COLOR}\" {HALO}");
            svg.text(px1 - 4.0, y - 4.0, label, &attrs);
        }
        svg.line(px0, py1, px1, py1, &format!("stroke=\"{FRAME_COLOR}\""));
        svg.line(px0, py0, px0, py1, &format!("stroke=\"{FRAME_COLOR}\""));
        svg.plot_titles((px0, px1, py0, py1), "", &axis.label);
        // The x title goes below the category labels, slanted or not.
        let x_title_y = py1 + slant_room + 6.0 + FONT + 8.0 + FONT + 2.0;
        svg.axis_title((px0 + px1) / 2.0, x_title_y, 0.0, &self.x_label);
        draw_legend(&mut svg, &entries, width, height, px0);
        svg.finish()
    }

    /// Each category's bars with their whiskers and values, and its label under them.
    fn draw_groups(&self, svg: &mut Svg, plot: &Plot, categories: &[String], slanted: bool) {
        let (px0, py0, py1, ym) = (plot.px0, plot.py0, plot.py1, &plot.ym);
        let n_cat =
            (self.categories.len()).max(self.series.iter().map(|s| s.1.len()).max().unwrap_or(0));
        if n_cat == 0 {
            return;
        }
        let n_series = self.series.len().max(1);
        let group_w = (plot.px1 - px0) / n_cat as f64;
        let bar_w = (group_w * 0.8 / n_series as f64).max(1.0);
        // Bars grow from zero when it is on the axis, else from the bottom edge.
        let base = (ym.px(0.0))
            .filter(|_| self.y_axis.scale == Scale::Linear)
            .unwrap_or(py1);
        for c in 0..n_cat {
            let gx = px0 + c as f64 * group_w + group_w * 0.1;
            for (i, s) in self.series.iter().enumerate() {
                let Some(&v) = s.1.get(c) else { continue };
                let Some(y) = ym.px(v) else { continue };
                let x = gx + i as f64 * bar_w;
                self.draw_bar(svg, plot, (i, c, v), (x, y.clamp(py0, py1), bar_w, base));
            }
            if let Some(label) = categories.get(c) {
                let x = px0 + (c as f64 + 0.5) * group_w;
                if slanted {
                    let attrs = format!("text-anchor=\"end\" fill=\"{MUTED_TEXT_COLOR}\"");
                    svg.text_rotated(x, py1 + 6.0 + FONT * 0.6, -SLANT, label, &attrs);
                } else {
                    svg.label(x, py1 + 6.0 + FONT, label, "middle", MUTED_TEXT_COLOR);
                }
            }
        }
    }

    /// Series `i`'s bar of value `v` in category `c` at `x`, its top at `y`: the bar, its
    /// whisker, and the value above them.
    fn draw_bar(
        &self,
        svg: &mut Svg,
        plot: &Plot,
        (i, c, v): (usize, usize, f64),
        (x, y, bar_w, base): (f64, f64, f64, f64),
    ) {
        let (py0, py1, ym) = (plot.py0, plot.py1, &plot.ym);
        let fill = color_attr("fill", &series_color(&self.series[i].2, i));
        // A 2 px gap between bars, less when bars are thinner than 8 px.
        let gap = (bar_w * 0.25).min(2.0);
        let (top, h) = (y.min(base), (base - y).abs());
        svg.rect(x + gap / 2.0, top, bar_w - gap, h, &fill);
        let mut label_y = y.min(base);
        let bounds = (self.errors.iter())
            .find(|e| e.0 == i)
            .and_then(|e| e.1.get(c).copied())
            .and_then(|(lo, hi)| Some((ym.px(lo)?, ym.px(hi)?)));
        if let Some((lo, hi)) = bounds {
            let (lo, hi) = (lo.clamp(py0, py1), hi.clamp(py0, py1));
            let (cx, cap) = (x + bar_w / 2.0, (bar_w * 0.15).clamp(2.0, 8.0));
            let stroke = format!("stroke=\"{TEXT_COLOR}\" stroke-width=\"1.4\"");
            svg.line(cx, lo, cx, hi, &stroke);
            svg.line(cx - cap, lo, cx + cap, lo, &stroke);
            svg.line(cx - cap, hi, cx + cap, hi, &stroke);
            label_y = label_y.min(hi.min(lo));
        }
        if self.value_labels {
            let value = format_value(self.y_axis.format, v, self.value_decimals);
            let attrs = format!("text-anchor=\"middle\" font-size=\"11\" fill=\"{TEXT_COLOR}\"");
            svg.text(x + bar_w / 2.0, label_y - 4.0, &value, &attrs);
        }
    }
}

/// The plot area (pixels) and the value axis' mapping.
struct Plot {
    px0: f64,
    px1: f64,
    py0: f64,
    py1: f64,
    ym: Mapper,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_chart_renders() {
        let svg = BarChart::new("Bandwidth")
            .categories(vec!["read".into(), "write".into()])
            .series("node 0", vec![20.0, 12.5], None)
            .series("node 1", vec![f64::NAN, 9.0], None)
            .render();
        assert_eq!(svg.matches("<rect").count(), 1 + 3 + 2);
        assert!(svg.contains(">12.5<"));
        assert!(BarChart::new("").render().starts_with("<svg"));
    }

    #[test]
    fn error_bars_and_reference_lines_are_drawn_and_widen_the_axis() {
        let svg = BarChart::new("Arms")
            .categories(vec!["a".into(), "b".into()])
            .series("time", vec![2.0, 1.5], None)
            .error_bars(vec![(1.9, 2.1), (f64::NAN, 1.6)])
            .reference(10.0, "L1d <48 KiB>")
            .render();
        // One whisker (three lines) per bar with valid bounds.
        assert_eq!(svg.matches("stroke-width=\"1.4\"").count(), 3);
        assert!(svg.contains("stroke-dasharray=\"5 4\"") && svg.contains(">L1d &lt;48 KiB&gt;<"));
        // The axis reaches the reference line at 10.
        assert!(svg.contains(">10<"), "{svg}");
        assert!(!svg.contains("NaN"));
    }
}
