//! Charts as data: line charts (axes with a linear, log2 or log10 scale and a tick format;
//! series of points with error bars and flagged points; shaded bands; vertical markers; a
//! legend), heatmaps and grouped bar charts. Experiments build them with the chained
//! methods; `render::svg` draws them (its `render` methods and `render(&Chart)`). Also the
//! colours every room shares and the factor of the secondary cycles axis.

use crate::topology::Machine;

/// One chart of a section.
#[derive(Debug, Clone)]
pub enum Chart {
    Line(LineChart),
    Heatmap(Heatmap),
    Bar(BarChart),
}

/// Colours of the hierarchy levels, shared by the chart bands, the boundary markers and
/// the swatches of level tables, so that a colour means the same level everywhere.
pub fn level_color(name: &str) -> &'static str {
    match name {
        "L1d" | "L1" => "#2ca02c",
        "L2" => "#1f77b4",
        "L3" => "#9467bd",
        "L4" => "#8c564b",
        "DRAM" => "#ff7f0e",
        _ => "#7f7f7f",
    }
}

/// Default series colours: the "category10" palette in full (distinct, and readable when
/// printed), so that up to ten kernels or fillers each get their own.
pub const PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f",
];

/// The palette colour of `name` by its position in `names` (the first colour when it is
/// not there), so that a kernel or filler keeps its colour in every chart of a section.
pub fn category_color(names: &[&str], name: &str) -> &'static str {
    let i = names.iter().position(|n| *n == name).unwrap_or(0);
    PALETTE[i % PALETTE.len()]
}

/// Colour of a measured curve or bar drawn alone: dark, so it reads over any band colour.
pub const CURVE_COLOR: &str = "#1f2937";
/// Colour of what was found in the data (knees, saturation points, a window), ringed or
/// marked.
pub const FOUND_POINT_COLOR: &str = "#111827";
/// Grey of a reference line drawn as a series or dashed in the legend (ideal, idle, the
/// OS's sizes).
pub const REFERENCE_LINE_COLOR: &str = "#6b7280";
/// Dark grey of the legend's solid line for the markers of values found.
const FOUND_LINE_COLOR: &str = "#374151";

/// Core cycles per ns for a secondary cycles axis: the measured core clock, else the
/// median of the positive finite `ratios` (cycles ÷ ns of figures given in both units);
/// None when neither is usable.
pub fn cycles_per_ns(machine: &Machine, ratios: impl IntoIterator<Item = f64>) -> Option<f64> {
    machine
        .core_hz_estimate
        .filter(|hz| hz.is_finite() && *hz > 0.0)
        .map(|hz| hz / 1e9)
        .or_else(|| median_positive(ratios))
}

/// Median of the finite positive values, if any.
fn median_positive(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut values: Vec<f64> = values
        .into_iter()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

// ---------------------------------------------------------------------------------------
// Scales and axes
// ---------------------------------------------------------------------------------------

/// How values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    #[default]
    Linear,
    /// Powers of two equally spaced (sizes, strides).
    Log2,
    /// Powers of ten equally spaced (latencies spanning 1 to 300 ns).
    Log10,
}

/// How tick labels (and value labels) are printed.
#[derive(Debug, Clone, Copy, Default)]
pub enum TickFormat {
    /// Plain numbers; 10 000 and above are shortened to `10k`, `2M`, `1G`.
    #[default]
    Number,
    /// Binary sizes through `units::Bytes` ("4 KiB", "1 MiB").
    Bytes,
    /// Counts (threads, nodes): linear ticks only at whole numbers, printed as numbers.
    Integer,
    /// Any other unit.
    Custom(fn(f64) -> String),
}

/// One axis of a chart: its label, scale, label format and optional fixed range.
#[derive(Debug, Clone, Default)]
#[must_use = "charts and their parts do nothing until rendered"]
pub struct Axis {
    pub(crate) label: String,
    pub(crate) scale: Scale,
    pub(crate) format: TickFormat,
    pub(crate) range: Option<(f64, f64)>,
    pub(crate) include_zero: bool,
}

impl Axis {
    pub fn new(label: impl Into<String>, scale: Scale) -> Axis {
        Axis {
            label: label.into(),
            scale,
            ..Axis::default()
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
}

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

    /// A dashed grey line: what the `VMarker::reference` lines are.
    pub fn reference(label: impl Into<String>) -> LegendEntry {
        let (color, dashed) = (REFERENCE_LINE_COLOR.to_string(), true);
        LegendEntry::new(label, LegendSymbol::Line { color, dashed })
    }

    /// A solid dark line: what the `VMarker::found` lines are.
    pub fn found(label: impl Into<String>) -> LegendEntry {
        let (color, dashed) = (FOUND_LINE_COLOR.to_string(), false);
        LegendEntry::new(label, LegendSymbol::Line { color, dashed })
    }
}

// ---------------------------------------------------------------------------------------
// Line chart
// ---------------------------------------------------------------------------------------

/// One named line of a `LineChart`.
#[derive(Debug, Clone, Default)]
#[must_use = "charts and their parts do nothing until rendered"]
pub struct Series {
    pub(crate) name: String,
    pub(crate) points: Vec<(f64, f64)>,
    pub(crate) color: Option<String>,
    /// Per point (low, high) in y units.
    pub(crate) errors: Option<Vec<(f64, f64)>>,
    /// Per point: draw hollow and red.
    pub(crate) unstable: Vec<bool>,
    pub(crate) dashed: bool,
    pub markers: bool,
    /// Points alone, as rings (see `highlight`).
    pub(crate) highlight: bool,
}

impl Series {
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            markers: true,
            ..Series::default()
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

/// A chart's size clamped to something drawable: 960 wide and `default_height` high in
/// place of a value that is not finite.
fn drawable_size(width: f64, height: f64, default_height: f64) -> (f64, f64) {
    let clamp = |v: f64, min: f64, default: f64| {
        if v.is_finite() {
            v.clamp(min, 8000.0)
        } else {
            default
        }
    };
    (
        clamp(width, 240.0, 960.0),
        clamp(height, 180.0, default_height),
    )
}

/// A second y axis on the right: the left axis' values times `factor` (ns → cycles).
#[derive(Debug, Clone)]
pub(crate) struct SecondaryAxis {
    pub(crate) label: String,
    pub(crate) factor: f64,
}

/// Lines over a shared x axis, built step by step and rendered with `render`.
///
/// ```text
/// let svg = LineChart::new("Latency")
///     .x_axis(Axis::log2("Working set").bytes())
///     .y_axis(Axis::log10("ns"))
///     .series(Series::new("random", vec![(4096.0, 1.2), (1048576.0, 4.0)]))
///     .render();
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "charts and their parts do nothing until rendered"]
pub struct LineChart {
    pub title: String,
    pub(crate) width: f64,
    pub height: f64,
    pub(crate) x_axis: Axis,
    pub(crate) y_axis: Axis,
    pub(crate) secondary: Option<SecondaryAxis>,
    pub(crate) series: Vec<Series>,
    pub markers: Vec<VMarker>,
    pub(crate) bands: Vec<Band>,
    pub(crate) legend: Vec<LegendEntry>,
    pub(crate) unstable_label: String,
}

impl LineChart {
    pub fn new(title: impl Into<String>) -> LineChart {
        LineChart {
            title: title.into(),
            width: 960.0,
            height: 540.0,
            unstable_label: "unstable point".to_string(),
            ..LineChart::default()
        }
    }

    /// Size in pixels (the viewBox keeps it scalable); clamped to something drawable.
    pub fn size(mut self, width: f64, height: f64) -> LineChart {
        (self.width, self.height) = drawable_size(width, height, 540.0);
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
}

// ---------------------------------------------------------------------------------------
// Heatmap
// ---------------------------------------------------------------------------------------

/// A matrix of values as coloured cells with the value printed in each (for example,
/// latency by working-set size × stride). Non-finite values are shown as empty grey cells.
#[derive(Debug, Clone, Default)]
#[must_use = "charts and their parts do nothing until rendered"]
pub struct Heatmap {
    pub title: String,
    pub(crate) x_label: String,
    pub(crate) y_label: String,
    pub(crate) columns: Vec<String>,
    pub(crate) rows: Vec<String>,
    pub(crate) values: Vec<Vec<f64>>,
    pub(crate) value_label: String,
    pub(crate) log_color: bool,
    pub(crate) decimals: usize,
}

impl Heatmap {
    pub fn new(title: impl Into<String>) -> Heatmap {
        Heatmap {
            title: title.into(),
            decimals: 1,
            ..Heatmap::default()
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
}

// ---------------------------------------------------------------------------------------
// Bar chart
// ---------------------------------------------------------------------------------------

/// Grouped bars: one group per category, one bar per series (bandwidth per kernel, per
/// NUMA node …), optionally with error bars and labelled horizontal reference lines (a
/// cache's size). The value axis is linear from zero unless a range is given, and reaches
/// every reference line.
#[derive(Debug, Clone, Default)]
#[must_use = "charts and their parts do nothing until rendered"]
pub struct BarChart {
    pub title: String,
    pub(crate) width: f64,
    pub height: f64,
    pub(crate) x_label: String,
    pub(crate) y_axis: Axis,
    pub(crate) categories: Vec<String>,
    pub(crate) series: Vec<(String, Vec<f64>, Option<String>)>,
    /// Per series (by index): (low, high) per category, drawn as a whisker on the bar.
    pub(crate) errors: Vec<(usize, Vec<(f64, f64)>)>,
    /// Dashed horizontal lines across the plot at a value, labelled at their right end.
    pub(crate) references: Vec<(f64, String)>,
    pub(crate) value_labels: bool,
    pub(crate) value_decimals: usize,
}

impl BarChart {
    pub fn new(title: impl Into<String>) -> BarChart {
        BarChart {
            title: title.into(),
            width: 960.0,
            height: 420.0,
            y_axis: Axis::linear("").include_zero(),
            value_labels: true,
            value_decimals: 1,
            ..BarChart::default()
        }
    }

    pub fn size(mut self, width: f64, height: f64) -> BarChart {
        (self.width, self.height) = drawable_size(width, height, 420.0);
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

    /// Error bars of the series added last: one (low, high) per category, in value units
    /// (missing or non-finite ones are skipped), drawn as whiskers over its bars.
    pub fn error_bars(mut self, bounds: Vec<(f64, f64)>) -> BarChart {
        if let Some(last) = self.series.len().checked_sub(1) {
            self.errors.push((last, bounds));
        }
        self
    }

    /// A dashed horizontal line at `value` (the size of a cache), labelled at its right
    /// end; the value axis reaches it.
    pub fn reference(mut self, value: f64, label: impl Into<String>) -> BarChart {
        self.references.push((value, label.into()));
        self
    }

    /// Decimals of the value printed above each bar; `None` hides the values.
    pub fn value_labels(mut self, decimals: Option<usize>) -> BarChart {
        self.value_labels = decimals.is_some();
        self.value_decimals = decimals.unwrap_or(1).min(6);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_per_ns_takes_the_clock_else_the_median_ratio() {
        let mut machine = Machine::default();
        let ratios = [f64::NAN, 3.0, 0.0, 2.0, 4.0];
        assert_eq!(cycles_per_ns(&machine, ratios), Some(3.0));
        assert_eq!(cycles_per_ns(&machine, [f64::NAN]), None);
        machine.core_hz_estimate = Some(2.5e9);
        assert_eq!(cycles_per_ns(&machine, ratios), Some(2.5));
    }

    #[test]
    fn a_chart_built_step_by_step_renders_as_svg() {
        let svg = LineChart::new("Latency")
            .x_axis(Axis::log2("Working set").bytes())
            .y_axis(Axis::log10("ns"))
            .series(Series::new("random", vec![(4096.0, 1.2), (1048576.0, 4.0)]))
            .render();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("Latency"));
    }
}
