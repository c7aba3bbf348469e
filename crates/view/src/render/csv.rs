//! CSV renderer: every `view::DataTable` of the sections, in order. One table gives a
//! plain CSV file; several follow each other, each introduced by a `# <section>.<table>`
//! comment line and separated by a blank line (read them with e.g. pandas'
//! `comment='#'` per part, or run the single command you need). Quoting is the `csv`
//! crate's (RFC 4180).

use crate::view::{DataTable, Section};

/// The CSV tables of these sections, in reading order.
pub fn tables(sections: &[Section]) -> Vec<&DataTable> {
    sections.iter().flat_map(Section::data_tables).collect()
}

/// The CSV document of these sections.
pub fn render(sections: &[Section]) -> Vec<u8> {
    let tables = tables(sections);
    let several = tables.len() > 1;
    let mut out = Vec::new();
    for (i, table) in tables.iter().enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        if several {
            out.extend_from_slice(format!("# {}\n", table.name).as_bytes());
        }
        out.extend(records(table));
    }
    out
}

/// The header and rows of one table as CSV records.
fn records(table: &DataTable) -> Vec<u8> {
    let mut writer = csv::WriterBuilder::new()
        .flexible(true)
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    let all = std::iter::once(&table.header).chain(&table.rows);
    for record in all {
        // Writing to a Vec cannot fail: the only errors are I/O errors of the sink.
        writer
            .write_record(record)
            .expect("writing CSV to memory cannot fail");
    }
    writer
        .into_inner()
        .expect("flushing CSV to memory cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(tables: Vec<DataTable>) -> Section {
        let mut s = Section::new("x", "X", "x");
        for t in tables {
            s.push(t);
        }
        s
    }

    #[test]
    fn one_table_is_plain_several_are_named_and_cells_are_quoted() {
        let mut a = DataTable::new("x.a", ["name", "value"]);
        a.row(vec!["plain".into(), "1.5".into()]);
        a.row(vec!["with, comma".into(), "say \"hi\"".into()]);
        let one = render(&[section(vec![a.clone()])]);
        assert_eq!(
            String::from_utf8(one).unwrap(),
            "name,value\nplain,1.5\n\"with, comma\",\"say \"\"hi\"\"\"\n"
        );
        let b = DataTable::new("x.b", ["n"]);
        let two = String::from_utf8(render(&[section(vec![a, b])])).unwrap();
        assert!(two.starts_with("# x.a\nname,value\n"), "{two}");
        assert!(two.ends_with("\n\n# x.b\nn\n"), "{two}");
    }
}
