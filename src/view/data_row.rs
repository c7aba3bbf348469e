//! CSV tables from rows of a `Serialize` type: the header is the row type's field names
//! (serde renames applied) and each cell is its field as the `csv` crate's serde support
//! writes it, so a table's header cannot drift from its cells. `Raw` writes a figure
//! the way every CSV table writes one (`format::raw`: at most 4 decimals, empty when not
//! finite).

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

impl DataTable {
    /// The table `name` of `rows`. `Row` is a flat struct (numbers, text, booleans, unit
    /// enums, options of those); its `Default` value gives the header when there is no row.
    pub fn of<Row: Serialize + Default>(
        name: impl Into<String>,
        rows: impl IntoIterator<Item = Row>,
    ) -> DataTable {
        let mut table = DataTable::new(name, Vec::<String>::new());
        // The header is the first record written with the default row.
        let mut header = records(&[Row::default()], true);
        table.header = header.drain(..).next().unwrap_or_default();
        let rows: Vec<Row> = rows.into_iter().collect();
        table.rows = records(&rows, false);
        table
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
}
