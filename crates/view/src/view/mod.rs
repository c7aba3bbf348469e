//! The presentation model: what a result shows, as data, for renderers that know no
//! experiment.
//!
//! Each experiment turns its typed result into one `Section`: a title, headline figures
//! for the report's summary, and blocks in reading order — prose (`Text` made of styled
//! spans), tables (`Table`: columns with alignment, cells with text and an optional
//! tooltip), charts (`chart::Chart`: line charts with axes, series, bands and markers;
//! heatmaps; bar charts), collapsible groups, and CSV tables of raw values (`DataTable`).
//! The terminal, CSV and HTML renderers in `render` walk these blocks; none of them knows
//! what a latency or a TLB is. A block meant for one output only is wrapped in
//! `Block::Only`.
//!
//! Nothing here formats a number: `format` holds the shared number formats the rooms use.
//! `figure` is a result's comparable figures, and `judge` when two of them differ beyond
//! both runs' noise (for `compare` and `history`). `glance` builds the headline cards and
//! the compact warnings; `fit` is how text and a table's columns fit a terminal's width
//! (each column declares a `Priority`, each table its `Overflow`).

pub mod chart;
pub mod data_row;
pub mod figure;
pub mod fit;
pub mod format;
pub mod glance;
#[cfg(any(test, feature = "test-support"))]
pub mod inspect;
pub mod judge;
pub mod overlay;

pub use chart::Chart;

use crate::topology::Machine;

/// `From` each listed type for a variant or tuple struct that wraps it, converting the
/// value with `into` on the way: `Table => Block::Table`, `LineChart => Block::Chart`.
macro_rules! into_variants {
    ($($from:ty => $to:ident $(::$variant:ident)?),* $(,)?) => {$(
        impl From<$from> for $to {
            fn from(value: $from) -> $to {
                $to $(::$variant)? (value.into())
            }
        }
    )*};
}

/// A result that can present itself: every experiment's result type implements it in its
/// room's `view.rs`, and the registry in `experiments` calls it.
pub trait Present {
    /// The result's section of every output; `machine` gives what the figures are compared
    /// with (cache sizes from the OS, the core clock).
    fn section(&self, machine: &Machine) -> Section;
}

/// One experiment's part of every output.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// Anchor of the HTML section: "latency", "miss-impact".
    pub id: &'static str,
    /// Short name for the HTML navigation bar: "Latency".
    pub nav: String,
    /// Heading of the section (HTML `h2`, the terminal's first line).
    pub title: String,
    /// The figures this section contributes to the report's at-a-glance summary.
    pub headlines: Vec<Headline>,
    pub blocks: Vec<Block>,
}

impl Section {
    pub fn new(id: &'static str, nav: impl Into<String>, title: impl Into<String>) -> Section {
        Section {
            id,
            nav: nav.into(),
            title: title.into(),
            ..Section::default()
        }
    }

    pub fn push(&mut self, block: impl Into<Block>) {
        self.blocks.push(block.into());
    }

    /// Every block, nested ones included (inside details, verbose and one-output groups),
    /// in reading order.
    pub fn all_blocks(&self) -> Vec<&Block> {
        fn walk<'a>(blocks: &'a [Block], out: &mut Vec<&'a Block>) {
            for b in blocks {
                out.push(b);
                match b {
                    Block::Details { blocks, .. }
                    | Block::Verbose(blocks)
                    | Block::Only(_, blocks) => walk(blocks, out),
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.blocks, &mut out);
        out
    }

    /// What `pick` takes from every block, nested ones included.
    pub(crate) fn picked<'a, T>(&'a self, pick: fn(&'a Block) -> Option<&'a T>) -> Vec<&'a T> {
        self.all_blocks().into_iter().filter_map(pick).collect()
    }

    /// Every CSV table.
    pub fn data_tables(&self) -> Vec<&DataTable> {
        self.picked(|b| match b {
            Block::Data(t) => Some(t),
            _ => None,
        })
    }
}

/// One headline figure of the summary at the top of the HTML report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Headline {
    /// What it is: "L2", "Bandwidth, 2 threads", "DRAM MLP", "L1 DTLB (4 KiB pages)".
    pub label: String,
    /// The figure with its unit: "3.85 ns".
    pub value: String,
    /// What qualifies it: "measured capacity 724.1 KiB".
    pub detail: String,
    /// The comparable figures it shows (`Figure::key`), the value's first: the summary
    /// puts the drift pass's disagreement on each beside the headline.
    pub keys: Vec<HeadlineKey>,
    /// A figure it shows kept fewer trials than planned: drawn as a warning.
    pub few_trials: bool,
}

/// A comparable figure a headline shows.
#[derive(Debug, Clone, PartialEq)]
pub struct HeadlineKey {
    /// `Figure::key`, as the drift pass names it too.
    pub key: String,
    /// The name its drift goes by beside the headline's other figures ("DRAM"); empty for
    /// the headline's value.
    pub name: String,
}

impl Headline {
    /// The headline with the figure of its value.
    pub fn key(mut self, key: impl Into<String>) -> Headline {
        self.keys.push(HeadlineKey {
            key: key.into(),
            name: String::new(),
        });
        self
    }

    /// The headline with another figure its detail names.
    pub fn also(mut self, name: impl Into<String>, key: impl Into<String>) -> Headline {
        self.keys.push(HeadlineKey {
            key: key.into(),
            name: name.into(),
        });
        self
    }
}

/// The outputs a block can be limited to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Medium {
    Terminal,
    Html,
}

/// One element of a section, in reading order.
// A section holds a few dozen blocks at most: boxing the large chart variant buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Block {
    /// A sub-heading (HTML `h3`; a blank line and the text in the terminal).
    Heading(String),
    /// A paragraph of prose.
    Paragraph(Paragraph),
    Table(Table),
    /// A chart; drawn in HTML only (the terminal shows the tables instead).
    Chart(Chart),
    /// Raw values for the CSV output only.
    Data(DataTable),
    /// A group the HTML report folds away under `summary`; the terminal shows it as is.
    Details {
        summary: String,
        blocks: Vec<Block>,
    },
    /// Blocks the terminal shows only when asked for every point (`--points`); HTML shows
    /// them always.
    Verbose(Vec<Block>),
    /// Blocks for one output only.
    Only(Medium, Vec<Block>),
}

into_variants! {
    Paragraph => Block::Paragraph,
    Table => Block::Table,
    Chart => Block::Chart,
    chart::LineChart => Block::Chart,
    chart::Heatmap => Block::Chart,
    chart::BarChart => Block::Chart,
    DataTable => Block::Data,
    chart::LineChart => Chart::Line,
    chart::Heatmap => Chart::Heatmap,
    chart::BarChart => Chart::Bar,
}

// ---------------------------------------------------------------------------------------
// Prose
// ---------------------------------------------------------------------------------------

/// How a run of text is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    /// A figure the sentence is about (HTML bold).
    Strong,
    /// A command, a path or a value to type (HTML `code`).
    Code,
    /// Secondary text (HTML grey).
    Muted,
    /// A flag such as "unstable" (HTML red).
    Warn,
}

/// A run of text with one style, and an optional tooltip (HTML `title`).
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub text: String,
    pub style: Style,
    pub title: Option<String>,
}

/// Inline content: styled spans, line breaks and colour swatches.
#[derive(Debug, Clone, PartialEq)]
pub enum Inline {
    Span(Span),
    /// A line break inside the paragraph or cell.
    Break,
    /// A small square of a series' colour (HTML only), e.g. before a level's name.
    Swatch(String),
}

/// A sequence of inline content, built with the chained methods.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Text(pub Vec<Inline>);

impl Text {
    pub fn new() -> Text {
        Text::default()
    }

    pub fn plain(text: impl Into<String>) -> Text {
        Text::new().add(text)
    }

    fn span(mut self, text: impl Into<String>, style: Style, title: Option<String>) -> Text {
        let text = text.into();
        self.0.push(Inline::Span(Span { text, style, title }));
        self
    }

    fn styled(self, text: impl Into<String>, style: Style) -> Text {
        self.span(text, style, None)
    }

    /// Appends plain text (a builder step, not arithmetic: `Text` is no number).
    #[allow(clippy::should_implement_trait)]
    pub fn add(self, text: impl Into<String>) -> Text {
        self.styled(text, Style::Plain)
    }

    pub fn strong(self, text: impl Into<String>) -> Text {
        self.styled(text, Style::Strong)
    }

    pub fn code(self, text: impl Into<String>) -> Text {
        self.styled(text, Style::Code)
    }

    pub fn muted(self, text: impl Into<String>) -> Text {
        self.styled(text, Style::Muted)
    }

    pub fn warn(self, text: impl Into<String>) -> Text {
        self.styled(text, Style::Warn)
    }

    /// Appends text with a tooltip (HTML `title`; the terminal shows only the text).
    pub fn titled(self, text: impl Into<String>, style: Style, title: impl Into<String>) -> Text {
        self.span(text, style, Some(title.into()))
    }

    pub fn line_break(mut self) -> Text {
        self.0.push(Inline::Break);
        self
    }

    pub fn swatch(mut self, color: impl Into<String>) -> Text {
        self.0.push(Inline::Swatch(color.into()));
        self
    }

    /// Appends another text.
    pub fn extend(mut self, other: Text) -> Text {
        self.0.extend(other.0);
        self
    }

    /// The text without styles, tooltips or swatches; line breaks become newlines.
    pub fn to_plain(&self) -> String {
        let pieces = self.0.iter().map(|inline| match inline {
            Inline::Span(s) => s.text.as_str(),
            Inline::Break => "\n",
            Inline::Swatch(_) => "",
        });
        pieces.collect()
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|i| match i {
            Inline::Span(s) => s.text.is_empty(),
            Inline::Break => false,
            Inline::Swatch(_) => true,
        })
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::plain(s)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::plain(s)
    }
}

/// What kind of paragraph: an explanation, a muted aside, or a key result set apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// An explanation of what was measured (HTML `p.note`).
    Note,
    /// An aside, e.g. "No plateau was found" (HTML `p.muted`).
    Muted,
    /// A key result in a sentence (HTML `p.callout`).
    Callout,
    /// Something that qualifies the figures (HTML: a yellow box).
    Warning,
    /// Good news, e.g. "No warnings" (HTML: a green box).
    Fine,
}

#[derive(Debug, Clone)]
pub struct Paragraph {
    pub tone: Tone,
    pub text: Text,
}

impl Paragraph {
    fn new(tone: Tone, text: impl Into<Text>) -> Paragraph {
        let text = text.into();
        Paragraph { tone, text }
    }

    pub fn note(text: impl Into<Text>) -> Paragraph {
        Paragraph::new(Tone::Note, text)
    }

    pub fn muted(text: impl Into<Text>) -> Paragraph {
        Paragraph::new(Tone::Muted, text)
    }

    pub fn callout(text: impl Into<Text>) -> Paragraph {
        Paragraph::new(Tone::Callout, text)
    }

    pub fn warning(text: impl Into<Text>) -> Paragraph {
        Paragraph::new(Tone::Warning, text)
    }

    pub fn fine(text: impl Into<Text>) -> Paragraph {
        Paragraph::new(Tone::Fine, text)
    }
}

// ---------------------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    /// Numbers: right-aligned.
    Right,
}

/// How much a column matters when a terminal is too narrow for the whole table: the
/// lowest go first, the rightmost first among equals; the first column (the row's key)
/// always stays.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    /// Detail the figures can do without (cycles beside ns, a spread, a count of points).
    Low,
    #[default]
    Normal,
    /// The figure the table is about, or a mark the reader needs to read it.
    High,
}

/// A table column: its header (with the unit, if any, in parentheses), alignment and
/// priority.
#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub unit: Option<String>,
    pub align: Align,
    /// Explains the column (HTML tooltip on the header).
    pub title: Option<String>,
    pub priority: Priority,
}

impl Column {
    /// A text column, left-aligned.
    pub fn text(name: impl Into<String>) -> Column {
        Column {
            name: name.into(),
            unit: None,
            align: Align::Left,
            title: None,
            priority: Priority::Normal,
        }
    }

    /// A numeric column, right-aligned.
    pub fn number(name: impl Into<String>) -> Column {
        Column {
            align: Align::Right,
            ..Column::text(name)
        }
    }

    /// A numeric column with its unit: "Latency (ns)".
    pub fn quantity(name: impl Into<String>, unit: impl Into<String>) -> Column {
        Column {
            unit: Some(unit.into()),
            ..Column::number(name)
        }
    }

    pub fn titled(mut self, title: impl Into<String>) -> Column {
        self.title = Some(title.into());
        self
    }

    pub fn priority(mut self, priority: Priority) -> Column {
        self.priority = priority;
        self
    }

    /// The header as shown: "name (unit)".
    pub fn header(&self) -> String {
        match &self.unit {
            Some(unit) => format!("{} ({unit})", self.name),
            None => self.name.clone(),
        }
    }
}

/// One table cell: its content (usually one span), shown the same in every output
/// except for styles, tooltips and swatches, which only HTML draws.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cell(pub Text);

impl Cell {
    pub fn new(text: impl Into<String>) -> Cell {
        Cell(Text::plain(text))
    }

    /// "–": no value.
    pub fn dash() -> Cell {
        Cell::new(format::DASH)
    }

    pub fn styled(text: impl Into<String>, style: Style) -> Cell {
        Cell(Text::new().styled(text, style))
    }

    /// A cell after a small square of `color` (HTML), e.g. a level's name in its colour.
    pub fn swatched(color: &str, text: impl Into<String>) -> Cell {
        Cell(Text::new().swatch(color).add(text))
    }

    /// A cell with a tooltip (HTML), e.g. "n/s" with the reason it was not counted.
    pub fn titled(text: impl Into<String>, style: Style, title: impl Into<String>) -> Cell {
        Cell(Text::new().titled(text, style, title))
    }
}

into_variants! {
    String => Cell,
    &str => Cell,
    Text => Cell,
}

/// A row: one cell per column, or a first cell and a text running across the others
/// (a reason in place of values) that does not widen them.
#[derive(Debug, Clone)]
pub enum Row {
    Cells(Vec<Cell>),
    Spanning(Cell, Text),
}

/// How a table is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Columns with a header row.
    Grid,
    /// Two columns, a key and a value per row, without a header (settings, machine).
    KeyValue,
}

/// What the terminal does with a table wider than itself (HTML tables scroll instead).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Overflow {
    /// Wrap the last column's text when it is text, else hide the columns of the lowest
    /// priority and say so under the table (CSV and `--points` have them all).
    #[default]
    Drop,
    /// Cut the columns into several tables one under the other, each repeating the first
    /// column: for tables of like columns (one per stride, one per cache level), none of
    /// which matters less than another.
    Wrap,
    /// Keep each row on one line, its last cell cut short with "…" (a summary whose full
    /// text is elsewhere).
    Clip,
}

#[derive(Debug, Clone)]
pub struct Table {
    /// Shown above the table (HTML `h3`; a heading line in the terminal).
    pub title: Option<String>,
    pub layout: Layout,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
    /// Footnotes under the table, one paragraph each.
    pub notes: Vec<Text>,
    /// What a terminal too narrow for it does.
    pub overflow: Overflow,
}

impl Table {
    pub fn new(columns: Vec<Column>) -> Table {
        Table {
            title: None,
            layout: Layout::Grid,
            columns,
            rows: Vec::new(),
            notes: Vec::new(),
            overflow: Overflow::Drop,
        }
    }

    /// A key/value table.
    pub fn key_value() -> Table {
        Table {
            layout: Layout::KeyValue,
            ..Table::new(vec![Column::text("key"), Column::text("value")])
        }
    }

    pub fn titled(mut self, title: impl Into<String>) -> Table {
        self.title = Some(title.into());
        self
    }

    pub fn overflow(mut self, overflow: Overflow) -> Table {
        self.overflow = overflow;
        self
    }

    pub fn row<C: Into<Cell>>(&mut self, cells: impl IntoIterator<Item = C>) {
        self.rows
            .push(Row::Cells(cells.into_iter().map(Into::into).collect()));
    }

    pub fn spanning_row(&mut self, first: impl Into<Cell>, text: impl Into<Text>) {
        self.rows.push(Row::Spanning(first.into(), text.into()));
    }

    /// A key/value row.
    pub fn pair(&mut self, key: impl Into<String>, value: impl Into<Cell>) {
        self.rows
            .push(Row::Cells(vec![Cell::new(key.into()), value.into()]));
    }

    pub fn note(&mut self, text: impl Into<Text>) {
        self.notes.push(text.into());
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// A table of raw values for CSV: machine-readable column names (`snake_case`, unit in
/// the name: `latency_ns`) and cells as plain numbers or words, empty when unknown.
#[derive(Debug, Clone)]
pub struct DataTable {
    /// The table's full name, written as the `# latency.points` line above it when a file
    /// holds several tables: the section's name (snake_case), a dot, the table's.
    pub name: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl DataTable {
    pub fn new<S: Into<String>>(
        name: impl Into<String>,
        header: impl IntoIterator<Item = S>,
    ) -> DataTable {
        DataTable {
            name: name.into(),
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
}
