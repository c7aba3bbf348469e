//! What tests read back from a section: its tables and charts in reading order, a table
//! by title, a table's column, and the words as plain text.

use super::{Block, Chart, Column, Layout, Row, Section, Table};

impl Section {
    /// Every table, nested ones included.
    pub fn tables(&self) -> Vec<&Table> {
        self.picked(|b| match b {
            Block::Table(t) => Some(t),
            _ => None,
        })
    }

    /// The table titled `title`, if any.
    pub fn table(&self, title: &str) -> Option<&Table> {
        self.tables()
            .into_iter()
            .find(|t| t.title.as_deref() == Some(title))
    }

    /// Every chart.
    pub fn charts(&self) -> Vec<&Chart> {
        self.picked(|b| match b {
            Block::Chart(c) => Some(c),
            _ => None,
        })
    }

    /// The section's words as plain text, one line per heading, paragraph, table row and
    /// note (cells separated by " | "), for tests and searches; charts are left out.
    pub fn plain_text(&self) -> String {
        let mut out = format!("{}\n", self.title);
        for b in self.all_blocks() {
            match b {
                Block::Heading(h) => out.push_str(&format!("{h}\n")),
                Block::Paragraph(p) => out.push_str(&format!("{}\n", p.text.to_plain())),
                Block::Details { summary, .. } => out.push_str(&format!("{summary}\n")),
                Block::Table(t) => out.push_str(&t.plain_text()),
                _ => {}
            }
        }
        out
    }
}

impl Table {
    /// The cells of column `k` as plain text, one per row (spanning rows give their first
    /// cell for column 0 and their text for every other).
    pub fn column_text(&self, k: usize) -> Vec<String> {
        self.rows
            .iter()
            .map(|r| match r {
                Row::Cells(cells) => cells.get(k).map(|c| c.0.to_plain()).unwrap_or_default(),
                Row::Spanning(first, _) if k == 0 => first.0.to_plain(),
                Row::Spanning(_, text) => text.to_plain(),
            })
            .collect()
    }

    /// Row `i` as plain text, one string per column.
    pub fn row_text(&self, i: usize) -> Vec<String> {
        (0..self.columns.len())
            .map(|k| self.column_text(k)[i].clone())
            .collect()
    }

    /// The row whose first cell reads `first`, as plain text.
    pub fn row_of(&self, first: &str) -> Vec<String> {
        let at = self.column_text(0).iter().position(|c| c == first);
        self.row_text(at.unwrap_or_else(|| panic!("{first}: {}", self.plain_text())))
    }

    /// The column headers.
    pub fn headers(&self) -> Vec<String> {
        self.columns.iter().map(Column::header).collect()
    }

    /// How many notes read exactly `note`.
    pub fn note_count(&self, note: &str) -> usize {
        self.notes.iter().filter(|n| n.to_plain() == note).count()
    }

    /// Title, header, rows and notes as plain text lines, cells separated by " | ".
    pub fn plain_text(&self) -> String {
        let mut out = String::new();
        if let Some(title) = &self.title {
            out.push_str(&format!("{title}\n"));
        }
        if self.layout == Layout::Grid {
            let header: Vec<String> = self.columns.iter().map(Column::header).collect();
            out.push_str(&format!("{}\n", header.join(" | ")));
        }
        for row in &self.rows {
            let cells: Vec<String> = match row {
                Row::Cells(cells) => cells.iter().map(|c| c.0.to_plain()).collect(),
                Row::Spanning(first, text) => vec![first.0.to_plain(), text.to_plain()],
            };
            out.push_str(&format!("{}\n", cells.join(" | ")));
        }
        for note in &self.notes {
            out.push_str(&format!("{}\n", note.to_plain()));
        }
        out
    }
}
