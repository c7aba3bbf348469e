//! Charts as data: line charts (axes with a linear, log2 or log10 scale and a tick format;
//! series of points with error bars and flagged points; shaded bands; vertical markers; a
//! legend), heatmaps and grouped bar charts. Experiments build them with the chained
//! methods; `report::svg` draws them.

pub use crate::report::svg::{
    Axis, Band, BarChart, Heatmap, LegendEntry, LegendSymbol, LineChart, MarkerStyle, Scale,
    Series, TickFormat, VMarker, PALETTE,
};

/// One chart of a section.
#[derive(Debug, Clone)]
pub enum Chart {
    Line(LineChart),
    Heatmap(Heatmap),
    Bar(BarChart),
}

impl From<LineChart> for Chart {
    fn from(c: LineChart) -> Chart {
        Chart::Line(c)
    }
}

impl From<Heatmap> for Chart {
    fn from(c: Heatmap) -> Chart {
        Chart::Heatmap(c)
    }
}

impl From<BarChart> for Chart {
    fn from(c: BarChart) -> Chart {
        Chart::Bar(c)
    }
}

impl From<LineChart> for super::Block {
    fn from(c: LineChart) -> super::Block {
        super::Block::Chart(c.into())
    }
}

impl From<Heatmap> for super::Block {
    fn from(c: Heatmap) -> super::Block {
        super::Block::Chart(c.into())
    }
}

impl From<BarChart> for super::Block {
    fn from(c: BarChart) -> super::Block {
        super::Block::Chart(c.into())
    }
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
