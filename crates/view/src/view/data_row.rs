//! CSV tables from rows of a `Serialize` type: the header is the row type's field names
//! (serde renames applied) and each cell is its field as the `csv` crate's serde support
//! writes it, so a table's header cannot drift from its cells; columns known only at run
//! time (a sweep's parameters, the counters that ran) go around them (`of_around`). `Raw` writes a figure
//! the way every CSV table writes one (`format::raw`: at most 4 decimals, empty when not
//! finite); `Full` writes one with every digit (`Display`).

use serde::{Serialize, Serializer};

use super::format;
use super::DataTable;

/// A figure in a CSV cell: `format::raw`'s text ("12.3457", empty for NaN or infinity).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Raw(pub f64);

impl Serialize for Raw {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format::raw(self.0))
    }
}

/// A figure in a CSV cell in full: Rust's `Display` of the `f64` (the shortest digits that
/// read back to the same value, never an exponent), for tables that keep every digit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Full(pub f64);

impl Serialize for Full {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

impl DataTable {
    /// The table `name` of `rows`. `Row` is a flat struct (numbers, text, booleans, unit
    /// enums, options of those); its `Default` value gives the header when there is no row.
    pub fn of<Row: Serialize + Default>(
        name: impl Into<String>,
        rows: impl IntoIterator<Item = Row>,
    ) -> DataTable {
        DataTable::of_around(
            name,
            Columns::default(),
            rows.into_iter().map(|row| (Vec::new(), row, Vec::new())),
        )
    }

    /// The table `name` of `rows` with columns known only at run time around the row
    /// struct's (a sweep's parameters, the counters that ran): `columns` names them, and
    /// each row brings its cells before and after the struct's.
    pub fn of_around<Row: Serialize + Default>(
        name: impl Into<String>,
        columns: Columns,
        rows: impl IntoIterator<Item = (Vec<String>, Row, Vec<String>)>,
    ) -> DataTable {
        let mut table = DataTable::new(name, Vec::<String>::new());
        table.header = [columns.before, header_of::<Row>(), columns.after].concat();
        let (before, rows, after): (Vec<_>, Vec<_>, Vec<_>) =
            rows.into_iter()
                .fold(Default::default(), |mut parts, (b, row, a)| {
                    parts.0.push(b);
                    parts.1.push(row);
                    parts.2.push(a);
                    parts
                });
        table.rows = before
            .into_iter()
            .zip(records(&rows, false))
            .zip(after)
            .map(|((b, fixed), a)| [b, fixed, a].concat())
            .collect();
        table
    }
}

/// The field names of `Row` (serde renames applied): the header of a group of columns
/// that goes around a row struct's only when present (`of_around`'s `after`), kept with
/// its cells by `cells_of` as `of` keeps a table's.
pub fn header_of<Row: Serialize + Default>() -> Vec<String> {
    records(&[Row::default()], true)
        .into_iter()
        .next()
        .unwrap_or_default()
}

/// The cells of `row` as `of` writes them, for a group of columns named by `header_of`.
pub fn cells_of<Row: Serialize>(row: &Row) -> Vec<String> {
    records(std::slice::from_ref(row), false)
        .into_iter()
        .next()
        .unwrap_or_default()
}

/// The header of the run-time columns before and after a row struct's (`of_around`).
#[derive(Debug, Clone, Default)]
pub struct Columns {
    pub before: Vec<String>,
    pub after: Vec<String>,
}

impl Columns {
    /// Run-time columns after the row struct's only (counters, optional curves).
    pub fn after(after: Vec<String>) -> Columns {
        Columns {
            before: Vec::new(),
            after,
        }
    }
}

/// `rows` as CSV records (after a header record with `header`), read back into cells.
fn records<Row: Serialize>(rows: &[Row], header: bool) -> Vec<Vec<String>> {
    let mut writer = csv::WriterBuilder::new()
        .has_headers(header)
        .from_writer(Vec::new());
    for row in rows {
        // Only a row type with a nested struct, map or sequence fails: a programming error
        // the unit tests of every table meet first, not something input can cause.
        writer
            .serialize(row)
            .expect("a CSV row is a flat struct of plain values");
    }
    let bytes = writer
        .into_inner()
        .expect("flushing CSV to memory cannot fail");
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(bytes.as_slice())
        .records()
        .map(|record| {
            record
                .expect("the CSV just written reads back")
                .iter()
                .map(String::from)
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Default)]
    struct Row {
        name: &'static str,
        #[serde(rename = "bytes")]
        size: u64,
        ns: Raw,
        spread_pct: Option<Raw>,
        unstable: bool,
    }

    #[test]
    fn full_figures_keep_every_digit_without_an_exponent() {
        #[derive(Serialize, Default)]
        struct Figures {
            a: Full,
            b: Option<Full>,
        }
        let t = DataTable::of(
            "x.full",
            [
                Figures {
                    a: Full(0.123_456_789),
                    b: Some(Full(1e21)),
                },
                Figures {
                    a: Full(1.0),
                    b: None,
                },
            ],
        );
        assert_eq!(t.rows[0], ["0.123456789", "1000000000000000000000"]);
        assert_eq!(t.rows[1], ["1", ""]);
    }

    #[test]
    fn header_is_the_field_names_and_cells_are_written_as_the_tables_write_them() {
        let t = DataTable::of(
            "x.rows",
            [
                Row {
                    name: "a, \"b\"",
                    size: 4096,
                    ns: Raw(1.234_567),
                    spread_pct: Some(Raw(f64::NAN)),
                    unstable: true,
                },
                Row {
                    name: "",
                    size: 0,
                    ns: Raw(2.0),
                    spread_pct: None,
                    unstable: false,
                },
            ],
        );
        assert_eq!(t.name, "x.rows");
        assert_eq!(t.header, ["name", "bytes", "ns", "spread_pct", "unstable"]);
        assert_eq!(t.rows[0], ["a, \"b\"", "4096", "1.2346", "", "true"]);
        assert_eq!(t.rows[1], ["", "0", "2", "", "false"]);
        let empty = DataTable::of("x.none", Vec::<Row>::new());
        assert_eq!((empty.header.len(), empty.rows.len()), (5, 0));
    }

    #[test]
    fn run_time_columns_go_around_the_row_structs() {
        let columns = Columns {
            before: vec!["opt".to_string()],
            after: vec!["cycles".to_string(), "misses".to_string()],
        };
        let row = |name, after: &[&str]| {
            (
                vec!["-O2".to_string()],
                Row {
                    name,
                    ..Row::default()
                },
                after.iter().map(|c| c.to_string()).collect(),
            )
        };
        let t = DataTable::of_around("x.rows", columns.clone(), [row("a", &["1", ""])]);
        assert_eq!(
            t.header,
            [
                "opt",
                "name",
                "bytes",
                "ns",
                "spread_pct",
                "unstable",
                "cycles",
                "misses"
            ]
        );
        assert_eq!(t.rows, [["-O2", "a", "0", "0", "", "false", "1", ""]]);
        let empty = DataTable::of_around("x.none", columns, Vec::<(_, Row, _)>::new());
        assert_eq!((empty.header.len(), empty.rows.len()), (8, 0));
    }

    #[test]
    fn a_group_of_columns_has_the_header_and_cells_of_its_struct() {
        assert_eq!(
            header_of::<Row>(),
            ["name", "bytes", "ns", "spread_pct", "unstable"]
        );
        let row = Row {
            name: "a",
            size: 1,
            ns: Raw(0.5),
            spread_pct: None,
            unstable: true,
        };
        assert_eq!(cells_of(&row), ["a", "1", "0.5", "", "true"]);
    }
}
