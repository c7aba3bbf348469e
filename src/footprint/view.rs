//! `memscope footprint` in every output: the per-thread block and its total over the
//! threads, every TLS object and the largest static ones as bytes, cache lines and
//! shares of L1d and L2, what TLS pointers point to (per-thread data outside the block),
//! the struct layouts (members, holes, padding, as pahole shows them), a bar chart of the
//! objects against the caches and the CSV table.

use crate::binary::dwarf::{Layout, Pointee};
use crate::binary::{DataObject, FootprintResult, ProcessMappings};
use crate::units::Bytes;
use crate::view::chart::{Axis, BarChart, PALETTE};
use crate::view::format::{self, raw};
use crate::view::{Block, Column, DataTable, Medium, Paragraph, Section, Table};

fn share(bytes: u64, of: Option<u64>) -> String {
    match of {
        Some(size) if size > 0 => {
            format!("{}%", format::fixed(100.0 * bytes as f64 / size as f64, 1))
        }
        _ => format::DASH.to_string(),
    }
}

impl FootprintResult {
    pub fn section(&self) -> Section {
        let c = &self.caches;
        let per_thread = self.tls.map_or(0, |t| t.bytes);
        let mut section = Section::new(
            "footprint",
            "Footprint",
            format!(
                "Footprint of {}: {} of thread-local data per thread ({} lines of {} B){}",
                self.binary,
                Bytes(per_thread),
                per_thread.div_ceil(c.line_bytes.max(1)),
                c.line_bytes,
                if self.tls_pointee_bytes > 0 {
                    format!(
                        ", {} behind its TLS pointers",
                        Bytes(self.tls_pointee_bytes)
                    )
                } else {
                    String::new()
                }
            ),
        );
        let debug_file = match &self.debug_file {
            Some(f) => format!(
                ", from the separate debug file {} (found by {})",
                f.path, f.found_by
            ),
            None => String::new(),
        };
        section.push(Paragraph::note(format!(
            "Caches compared with: L1d {}, L2 {}, L3 {}, {}. Detail: {}{debug_file}.",
            c.l1d_bytes
                .map_or(format::DASH.to_string(), |b| Bytes(b).to_string()),
            c.l2_bytes
                .map_or(format::DASH.to_string(), |b| Bytes(b).to_string()),
            c.l3_bytes
                .map_or(format::DASH.to_string(), |b| Bytes(b).to_string()),
            c.source,
            self.detail
        )));
        if let Some(tls) = self.tls {
            let total = self.tls_total_bytes();
            section.push(Paragraph::callout(format!(
                "Per thread: {} (.tdata {} + .tbss {}), {} of L1d and {} of L2; × {} thread(s) \
                 = {}, {} of L3.",
                Bytes(tls.bytes),
                Bytes(tls.initialized_bytes),
                Bytes(tls.bytes - tls.initialized_bytes.min(tls.bytes)),
                share(tls.bytes, c.l1d_bytes),
                share(tls.bytes, c.l2_bytes),
                self.threads,
                Bytes(total),
                share(total, c.l3_bytes)
            )));
        }
        if self.tls_pointee_bytes > 0 {
            let pointers: Vec<String> = self
                .objects
                .iter()
                .filter_map(|o| {
                    let p = o.pointee.as_ref()?;
                    Some(format!(
                        "{} → {} {}",
                        o.name,
                        pointee_name(p),
                        Bytes(p.size)
                    ))
                })
                .collect();
            let total = self.tls_pointee_bytes * self.threads as u64;
            section.push(Paragraph::callout(format!(
                "Behind the TLS pointers: {} per thread ({}), allocated per thread, not in the \
                 TLS block: {} of L1d and {} of L2; × {} thread(s) = {}, {} of L3. An upper \
                 bound: a pointer may point to data the threads share.",
                Bytes(self.tls_pointee_bytes),
                pointers.join(", "),
                share(self.tls_pointee_bytes, c.l1d_bytes),
                share(self.tls_pointee_bytes, c.l2_bytes),
                self.threads,
                Bytes(total),
                share(total, c.l3_bytes)
            )));
        }
        section.push(objects_table(self));
        if let Some(process) = &self.process {
            section.push(process_table(process));
        }
        for note in &self.notes {
            section.push(Paragraph::muted(note.as_str()));
        }
        let mut layouts: Vec<Block> = Vec::new();
        for o in &self.objects {
            if let Some(l) = &o.layout {
                layouts.push(layout_table(&o.name, l, c.line_bytes).into());
            }
            if let Some(l) = o.pointee.as_ref().and_then(|p| p.layout.as_ref()) {
                let label = format!("*{}, per thread outside the TLS block", o.name);
                layouts.push(layout_table(&label, l, c.line_bytes).into());
            }
        }
        if !layouts.is_empty() {
            section.push(Block::Details {
                summary: "Struct layouts (members, holes, padding)".into(),
                blocks: layouts,
            });
        }
        if !self.objects.is_empty() {
            section.push(Block::Only(Medium::Html, vec![chart(self).into()]));
        }
        section.push(data(self));
        if let Some(process) = &self.process {
            section.push(mappings_data(process));
        }
        section
    }
}

fn objects_table(r: &FootprintResult) -> Table {
    let c = &r.caches;
    // The pointee column only when some TLS pointer has one (output unchanged otherwise).
    let pointees = r.objects.iter().any(|o| o.pointee.is_some());
    let mut columns = vec![
        Column::text("object"),
        Column::text("section"),
        Column::text("type"),
        Column::quantity("size", "B"),
        Column::number("lines"),
        Column::number("of L1d"),
        Column::number("of L2"),
    ];
    if pointees {
        columns.push(Column::text("points to (per thread)"));
    }
    let mut table = Table::new(columns);
    for o in &r.objects {
        let mut row = vec![
            o.name.clone(),
            o.section.clone(),
            o.type_name.clone().unwrap_or_default(),
            format::thousands(o.bytes as f64),
            o.lines.to_string(),
            share(o.bytes, c.l1d_bytes),
            share(o.bytes, c.l2_bytes),
        ];
        if pointees {
            row.push(o.pointee.as_ref().map_or(String::new(), |p| {
                format!(
                    "→ {}, {} B",
                    pointee_name(p),
                    format::thousands(p.size as f64)
                )
            }));
        }
        table.row(row);
    }
    table.note(
        "every thread-local object, then the largest static ones; lines: cache lines the \
         object spans at least",
    );
    if pointees {
        table.note(
            "points to: a TLS pointer's pointee (DWARF), allocated per thread, not in the TLS \
             block; its size is not in the object's size nor the TLS block",
        );
    }
    table
}

/// The running process's resident mappings (the 30 largest; the CSV has all).
fn process_table(p: &ProcessMappings) -> Table {
    let kib = |kb: u64| Bytes(kb * 1024).to_string();
    let mut table = Table::new(vec![
        Column::text("mapping"),
        Column::text("range"),
        Column::text("perms"),
        Column::number("resident"),
        Column::number("anonymous"),
        Column::number("in THP"),
    ])
    .titled(format!(
        "Process {} ({}): {} resident in {} mapping(s), {} anonymous, {} of it in transparent \
         huge pages",
        p.pid,
        p.command,
        kib(p.mappings.iter().map(|m| m.rss_kb).sum()),
        p.mappings.len(),
        kib(p.mappings.iter().map(|m| m.anonymous_kb).sum()),
        kib(p.mappings.iter().map(|m| m.anon_huge_kb).sum()),
    ));
    for m in p.mappings.iter().take(30) {
        table.row([
            m.name.clone(),
            format!("{:#x}–{:#x}", m.start, m.end),
            m.perms.clone(),
            kib(m.rss_kb),
            kib(m.anonymous_kb),
            m.thp_pct()
                .map_or(String::new(), |p| format!("{}%", format::fixed(p, 0))),
        ]);
    }
    table
}

/// The pointee's type, with the struct behind a typedef: "mi_heap_t (struct mi_heap_s)".
fn pointee_name(p: &Pointee) -> String {
    match &p.layout {
        Some(l) if l.name != p.type_name => format!("{} ({})", p.type_name, l.name),
        _ => p.type_name.clone(),
    }
}

/// A struct's members as pahole lists them, with its holes and tail padding.
fn layout_table(label: &str, l: &Layout, line: u64) -> Table {
    let mut table = Table::new(vec![
        Column::text("member"),
        Column::text("type"),
        Column::number("offset"),
        Column::number("size"),
        Column::text("hole after"),
    ])
    .titled(format!(
        "{} ({}): {} B, {} cache line(s), {} member(s), {} hole(s) of {} B, {} B padding",
        label,
        l.name,
        l.size,
        l.size.div_ceil(line.max(1)),
        l.members.len(),
        l.holes.len(),
        l.holes.iter().map(|h| h.1).sum::<u64>(),
        l.padding
    ));
    for m in &l.members {
        let hole = l
            .holes
            .iter()
            .find(|h| h.0 == m.offset + m.size)
            .map(|h| format!("{} B", h.1))
            .unwrap_or_default();
        let size = match m.bits {
            Some((bits, _)) => format!("{bits} bits"),
            None => m.size.to_string(),
        };
        table.row([
            m.name.clone(),
            m.type_name.clone(),
            m.offset.to_string(),
            size,
            hole,
        ]);
    }
    table
}

fn chart(r: &FootprintResult) -> BarChart {
    let shown: Vec<&DataObject> = r.objects.iter().take(40).collect();
    let pct = |b: u64, of: Option<u64>| of.map_or(f64::NAN, |s| 100.0 * b as f64 / s as f64);
    BarChart::new("Each object as a share of L1d and of L2 (100% = the whole cache)")
        .x_label("object")
        .y_axis(Axis::log10("% of the cache (log scale)"))
        .categories(shown.iter().map(|o| o.name.clone()).collect())
        .series(
            "of L1d",
            shown
                .iter()
                .map(|o| pct(o.bytes, r.caches.l1d_bytes))
                .collect(),
            Some(PALETTE[0].to_string()),
        )
        .series(
            "of L2",
            shown
                .iter()
                .map(|o| pct(o.bytes, r.caches.l2_bytes))
                .collect(),
            Some(PALETTE[1].to_string()),
        )
        .value_labels(Some(1))
}

fn mappings_data(p: &ProcessMappings) -> DataTable {
    let mut t = DataTable::new(
        "footprint_mappings",
        "pid start end perms name anonymous rss_kb anonymous_kb anon_huge_kb".split_whitespace(),
    );
    for m in &p.mappings {
        t.row(vec![
            p.pid.to_string(),
            format!("{:#x}", m.start),
            format!("{:#x}", m.end),
            m.perms.clone(),
            m.name.clone(),
            m.anonymous.to_string(),
            m.rss_kb.to_string(),
            m.anonymous_kb.to_string(),
            m.anon_huge_kb.to_string(),
        ]);
    }
    t
}

fn data(r: &FootprintResult) -> DataTable {
    let mut t = DataTable::new(
        "footprint_objects",
        "name section tls type bytes lines l1d_pct l2_pct pointee_type pointee_bytes"
            .split_whitespace(),
    );
    let pct =
        |b: u64, of: Option<u64>| of.map_or(String::new(), |s| raw(100.0 * b as f64 / s as f64));
    for o in &r.objects {
        t.row(vec![
            o.name.clone(),
            o.section.clone(),
            o.tls.to_string(),
            o.type_name.clone().unwrap_or_default(),
            o.bytes.to_string(),
            o.lines.to_string(),
            pct(o.bytes, r.caches.l1d_bytes),
            pct(o.bytes, r.caches.l2_bytes),
            o.pointee
                .as_ref()
                .map_or(String::new(), |p| p.type_name.clone()),
            o.pointee
                .as_ref()
                .map_or(String::new(), |p| p.size.to_string()),
        ]);
    }
    t
}
