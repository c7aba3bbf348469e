//! Draws a `Heatmap`: coloured cells with their values, row and column labels, and a
//! colour bar.

use super::axis::{make_ticks, Mapper};
use super::*;
use crate::view::chart::{Heatmap, Scale};

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

/// The narrowest cell drawn, however many columns there are.
const MIN_CELL: f64 = 6.0;

/// Where a heatmap's parts go: its cells, labels and colour bar.
struct Layout {
    n_rows: usize,
    n_cols: usize,
    scale: Scale,
    lo: f64,
    hi: f64,
    top: f64,
    left: f64,
    cell_w: f64,
    cell_h: f64,
    /// The values fit in their cells (else they are the cells' tooltips).
    values_shown: bool,
    /// Column labels turned 45°, and only every `label_every`-th labelled.
    rotate_cols: bool,
    label_every: usize,
    col_label_h: f64,
    bar_h: f64,
    ticks: super::axis::Ticks,
    width: f64,
    height: f64,
}

impl Heatmap {
    pub fn render(&self) -> String {
        let layout = self.layout();
        let mut svg = Svg::new(layout.width, layout.height, &self.title);
        svg.title(layout.width, &self.title);
        if layout.n_rows == 0 || layout.n_cols == 0 {
            let (x, y) = (layout.width / 2.0, layout.top + 40.0);
            svg.label(x, y, "no data", "middle", MUTED_TEXT_COLOR);
            return svg.finish();
        }
        self.draw_cells(&mut svg, &layout);
        self.draw_labels(&mut svg, &layout);
        self.draw_colour_bar(&mut svg, &layout);
        svg.finish()
    }

    /// The value at row `r`, column `c`; NaN where there is none.
    fn value(&self, r: usize, c: usize) -> f64 {
        (self.values.get(r))
            .and_then(|row| row.get(c))
            .copied()
            .unwrap_or(f64::NAN)
    }

    /// A cell's text: empty for a missing value.
    fn cell_text(&self, v: f64) -> String {
        let text = v.is_finite().then(|| format_number(v, self.decimals));
        text.unwrap_or_default()
    }

    fn layout(&self) -> Layout {
        let n_rows = self.rows.len().max(self.values.len());
        let n_cols = (self.columns.len()).max(self.values.iter().map(Vec::len).max().unwrap_or(0));
        let scale = if self.log_color {
            Scale::Log10
        } else {
            Scale::Linear
        };
        let all: Vec<f64> = self.values.iter().flatten().copied().collect();
        let (lo, hi) = scale.extent(&all).unwrap_or((1.0, 10.0));
        let widest_col = widest(&self.columns);
        let value_w = widest(all.iter().map(|&v| self.cell_text(v)));
        let natural_w = (value_w + 14.0).clamp(44.0, 120.0);
        let cell_h = 24.0;

        let top = 12.0 + TITLE_FONT + 14.0;
        let left = left_margin(&self.y_label, widest(&self.rows));
        let grid_h = (n_rows as f64 * cell_h).max(cell_h);
        // The colour bar is as tall as the grid, but at least as tall as its rotated
        // title, which would otherwise run out of the image for a grid of a few rows.
        let bar_h = grid_h
            .max(80.0)
            .max(text_width(&self.value_label, FONT) + 8.0);
        let ticks = make_ticks(scale, TickFormat::Number, lo, hi, bar_h, false);
        let right =
            20.0 + 14.0 + 6.0 + ticks.label_width() + room(&self.value_label, FONT + 12.0) + 10.0;

        // Many columns: narrower cells rather than an image the page scales down (and
        // its text with it); values that no longer fit are left to the colour and the
        // cell's tooltip, and only every `label_every`-th column is labelled.
        let room_for_grid = (MAX_CHART_WIDTH - left - right).max(0.0);
        let narrowed = n_cols as f64 * natural_w > room_for_grid;
        let cell_w = if narrowed {
            (room_for_grid / n_cols.max(1) as f64).max(MIN_CELL)
        } else {
            natural_w
        };
        // Column labels wider than a cell are turned 45° rather than overlapping, or,
        // when the cells were narrowed, thinned out.
        let rotate_cols = !narrowed && widest_col > cell_w - 6.0;
        let label_every = if narrowed {
            ((widest_col + 10.0) / cell_w).ceil().max(1.0) as usize
        } else {
            1
        };
        let col_label_h = if rotate_cols {
            widest_col * 0.72 + FONT
        } else {
            FONT + 6.0
        };
        let grid_w = n_cols as f64 * cell_w;
        let bottom = 6.0 + col_label_h + room(&self.x_label, FONT + 12.0) + 10.0;
        Layout {
            n_rows,
            n_cols,
            scale,
            lo,
            hi,
            top,
            left,
            cell_w,
            cell_h,
            values_shown: value_w + 6.0 <= cell_w,
            rotate_cols,
            label_every,
            col_label_h,
            bar_h,
            ticks,
            width: (left + grid_w + right).max(text_width(&self.title, TITLE_FONT) + 40.0),
            height: top + bar_h + bottom,
        }
    }

    /// The coloured cells, their values (or tooltips) and the row labels.
    fn draw_cells(&self, svg: &mut Svg, l: &Layout) {
        let color_map = Mapper::new(l.scale, l.lo, l.hi, 0.0, 1.0);
        for r in 0..l.n_rows {
            let y = l.top + r as f64 * l.cell_h;
            for c in 0..l.n_cols {
                let x = l.left + c as f64 * l.cell_w;
                let v = self.value(r, c);
                let (fill, white_text) = match color_map.px(v) {
                    Some(t) => heat_color(t),
                    None => ("#f3f4f6".to_string(), false),
                };
                let attrs = format!("fill=\"{fill}\" stroke=\"#ffffff\"");
                let text = self.cell_text(v);
                if l.values_shown || text.is_empty() {
                    svg.rect(x, y, l.cell_w, l.cell_h, &attrs);
                } else {
                    let tooltip = match (self.rows.get(r), self.columns.get(c)) {
                        (Some(row), Some(col)) => format!("{row}, {col}: {text}"),
                        _ => text.clone(),
                    };
                    svg.rect_with_tooltip(x, y, l.cell_w, l.cell_h, &attrs, &tooltip);
                }
                if l.values_shown && !text.is_empty() {
                    let color = if white_text { "#ffffff" } else { TEXT_COLOR };
                    let (x, y) = (x + l.cell_w / 2.0, y + l.cell_h / 2.0 + FONT * 0.35);
                    svg.label(x, y, &text, "middle", color);
                }
            }
            if let Some(label) = self.rows.get(r) {
                let y = y + l.cell_h / 2.0 + FONT * 0.35;
                svg.label(l.left - 6.0, y, label, "end", MUTED_TEXT_COLOR);
            }
        }
    }

    /// The column labels and the two axis titles.
    fn draw_labels(&self, svg: &mut Svg, l: &Layout) {
        let grid_bottom = l.top + l.n_rows as f64 * l.cell_h;
        let grid_w = l.n_cols as f64 * l.cell_w;
        let turned = format!("text-anchor=\"end\" fill=\"{MUTED_TEXT_COLOR}\"");
        for (c, label) in self.columns.iter().enumerate().take(l.n_cols) {
            if c % l.label_every != 0 {
                continue;
            }
            let x = l.left + (c as f64 + 0.5) * l.cell_w;
            if l.rotate_cols {
                let y = grid_bottom + 6.0 + FONT * 0.7;
                svg.text_rotated(x, y, -45.0, label, &turned);
            } else {
                let y = grid_bottom + 6.0 + FONT;
                svg.label(x, y, label, "middle", MUTED_TEXT_COLOR);
            }
        }
        let y = grid_bottom + 6.0 + l.col_label_h + FONT + 6.0;
        svg.axis_title(l.left + grid_w / 2.0, y, 0.0, &self.x_label);
        let y = l.top + l.n_rows as f64 * l.cell_h / 2.0;
        svg.axis_title(10.0 + FONT, y, -90.0, &self.y_label);
    }

    /// The colour bar, in discrete steps rather than a gradient (which would need another
    /// id), with its ticks and title.
    fn draw_colour_bar(&self, svg: &mut Svg, l: &Layout) {
        let (top, bar_h) = (l.top, l.bar_h);
        let colorbar_x = l.left + l.n_cols as f64 * l.cell_w + 20.0;
        let steps = 32;
        for k in 0..steps {
            let t = 1.0 - (k as f64 + 0.5) / steps as f64;
            let (y, h) = (
                top + k as f64 * bar_h / steps as f64,
                bar_h / steps as f64 + 0.5,
            );
            let fill = format!("fill=\"{}\"", heat_color(t).0);
            svg.rect(colorbar_x, y, 14.0, h, &fill);
        }
        let frame = format!("fill=\"none\" stroke=\"{FRAME_COLOR}\"");
        svg.rect(colorbar_x, top, 14.0, bar_h, &frame);
        let bar_map = Mapper::new(l.scale, l.lo, l.hi, top + bar_h, top);
        for t in &l.ticks.major {
            if let Some(y) = bar_map.px(t.value) {
                svg.right_tick(colorbar_x + 14.0, y, &t.label, 6.0);
            }
        }
        let x = colorbar_x + 20.0 + l.ticks.label_width() + 8.0 + FONT * 0.5;
        svg.axis_title(x, top + bar_h / 2.0, 90.0, &self.value_label);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heatmap_renders() {
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
        let height: f64 = crate::render::svg::tests::first_attr(&svg, "height")
            .parse()
            .unwrap();
        assert!(height > text_width(label, FONT) + 40.0, "{height}");
    }

    /// 48 time columns × 32 regions, as `pages record` draws them.
    fn wide(columns: usize) -> Heatmap {
        Heatmap::new("Heat over time")
            .rows(
                (0..32)
                    .map(|r| format!("{:#x}", 0x7fff_0000_0000u64 + r))
                    .collect(),
            )
            .columns(
                (0..columns)
                    .map(|c| format!("{:.1}", c as f64 * 0.4))
                    .collect(),
            )
            .values(vec![
                (0..columns).map(|c| (c * 37 % 513) as f64).collect();
                32
            ])
            .x_label("time, s")
            .y_label("region")
            .value_label("pages touched per interval")
            .decimals(0)
    }

    #[test]
    fn many_columns_narrow_the_cells_instead_of_shrinking_the_text() {
        let svg = wide(48).render();
        // Drawn at its own size in a 1,400 px window (a 1,352 px column), every text at
        // least 11 px.
        let width: f64 = crate::render::svg::tests::first_attr(&svg, "width")
            .parse()
            .unwrap();
        assert!(width <= MAX_CHART_WIDTH, "{width}");
        let smallest = crate::render::svg::tests::smallest_text_px(&svg, 1352.0);
        assert!(smallest >= MIN_READABLE_FONT, "{smallest}");
        // The values went into the cells' tooltips; every 48 cells of a row have one.
        assert_eq!(svg.matches("</title></rect>").count(), 48 * 32);
        assert!(svg.contains("<title>0x7fff00000000, 0.4: 37</title>"));
        // Fewer column labels, none of them turned.
        let labels = svg
            .matches("text-anchor=\"middle\" fill=\"#4b5563\"")
            .count();
        assert!(labels > 4 && labels < 48, "{labels}");
        assert!(!svg.contains("rotate(-45"));
        // A few columns keep their values in the cells.
        let svg = wide(12).render();
        assert!(svg.contains(">37</text>") && !svg.contains("</title></rect>"));
        let smallest = crate::render::svg::tests::smallest_text_px(&svg, 1352.0);
        assert!(smallest >= MIN_READABLE_FONT, "{smallest}");
    }
}
