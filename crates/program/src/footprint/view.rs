//! `memscope footprint` in every output: the per-thread block and its total over the
//! threads, every TLS object and the largest static ones as bytes, cache lines and
//! shares of L1d and L2, what TLS pointers point to (per-thread data outside the block),
//! the struct layouts (members, holes, padding, as pahole shows them), a bar chart of the
//! objects against the caches (linear, L1d and L2 as lines, the small objects in one bar)
//! and the CSV table.

use serde::Serialize;

use crate::binary::dwarf::{Layout, Pointee};
use crate::binary::{CacheSizes, DataObject, FootprintResult, ProcessMappings};
use crate::units::Bytes;
use crate::view::chart::{Axis, BarChart, TickFormat, PALETTE};
use crate::view::data_row::Raw;
use crate::view::format;
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
        for callout in self.per_thread_callouts() {
            section.push(callout);
        }
        section.push(objects_table(self));
        if let Some(process) = &self.process {
            section.push(process_table(process));
        }
        for note in &self.notes {
            section.push(Paragraph::muted(note.as_str()));
        }
        if let Some(layouts) = self.layouts() {
            section.push(layouts);
        }
        if let Some(chart) = chart(&self.objects, &self.caches) {
            section.push(Block::Only(Medium::Html, vec![chart.into()]));
        }
        section.push(data(self));
        if let Some(process) = &self.process {
            section.push(mappings_data(process));
        }
        section
    }

    /// What each thread takes: its TLS block, and what its TLS pointers point to.
    fn per_thread_callouts(&self) -> Vec<Paragraph> {
        let c = &self.caches;
        let mut callouts = Vec::new();
        if let Some(tls) = self.tls {
            let total = self.tls_total_bytes();
            callouts.push(Paragraph::callout(format!(
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
            let pointers: Vec<String> = (self.objects.iter())
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
            callouts.push(Paragraph::callout(format!(
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
        callouts
    }

    /// The struct layouts of the objects and of what their TLS pointers point to, folded.
    fn layouts(&self) -> Option<Block> {
        let line = self.caches.line_bytes;
        let mut layouts: Vec<Block> = Vec::new();
        for o in &self.objects {
            if let Some(l) = &o.layout {
                layouts.push(layout_table(&o.name, l, line).into());
            }
            if let Some(l) = o.pointee.as_ref().and_then(|p| p.layout.as_ref()) {
                let label = format!("*{}, per thread outside the TLS block", o.name);
                layouts.push(layout_table(&label, l, line).into());
            }
        }
        (!layouts.is_empty()).then(|| Block::Details {
            summary: "Struct layouts (members, holes, padding)".into(),
            blocks: layouts,
        })
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

/// Bars drawn at most; the rest join the bar of the small objects.
const MAX_OBJECT_BARS: usize = 24;
/// Objects smaller than this share of L1d are grouped into one bar.
const SMALL_PCT_OF_L1D: f64 = 1.0;
/// L2's line is drawn when it is at most this many times the tallest bar or L1d: beyond,
/// it would squash every bar to a sliver.
const L2_IN_SCALE: f64 = 4.0;

/// A size in KiB as bytes would print it ("10 KiB", "767 B", "1.50 MiB").
fn kib_label(kib: f64) -> String {
    Bytes((kib.max(0.0) * 1024.0).round() as u64).to_string()
}

/// The objects against the caches on a linear scale: the largest as bars (sizes in
/// bytes), L1d (and L2 when it fits the scale) as dashed lines, and the objects under 1%
/// of L1d together in one bar (their total), so that none is a sliver labelled "0.0". None without
/// objects.
fn chart(objects: &[DataObject], caches: &CacheSizes) -> Option<BarChart> {
    let largest = objects.iter().map(|o| o.bytes).max()?;
    let l1d = caches.l1d_bytes.filter(|&b| b > 0);
    let small_below = l1d.unwrap_or(largest) as f64 * SMALL_PCT_OF_L1D / 100.0;
    let mut big: Vec<&DataObject> = (objects.iter())
        .filter(|o| o.bytes as f64 >= small_below)
        .collect();
    big.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    let rest = big.split_off(big.len().min(MAX_OBJECT_BARS));
    let small: Vec<&DataObject> = (objects.iter())
        .filter(|o| (o.bytes as f64) < small_below)
        .collect();
    let kib = |bytes: u64| bytes as f64 / 1024.0;
    let mut categories: Vec<String> = big.iter().map(|o| o.name.clone()).collect();
    let mut values: Vec<f64> = big.iter().map(|o| kib(o.bytes)).collect();
    let total = |list: &[&DataObject]| list.iter().map(|o| o.bytes).sum::<u64>();
    let of = if l1d.is_some() { "L1d" } else { "the largest" };
    if !rest.is_empty() {
        categories.push(format!("{} more objects", rest.len()));
        values.push(kib(total(&rest)));
    }
    if !small.is_empty() {
        categories.push(format!(
            "{} object{} < {SMALL_PCT_OF_L1D}% of {of}",
            small.len(),
            if small.len() == 1 { "" } else { "s" }
        ));
        values.push(kib(total(&small)));
    }
    let tallest = values.iter().copied().fold(0.0, f64::max);
    let mut title = "Objects against the caches".to_string();
    let mut chart = BarChart::new("")
        .x_label("object (the largest first)")
        .y_axis(Axis::linear("size").format(TickFormat::Custom(kib_label)))
        .categories(categories)
        .series("size", values, Some(PALETTE[0].to_string()))
        .value_labels(Some(0));
    if let Some(l1d) = l1d {
        chart = chart.reference(kib(l1d), format!("L1d {}", Bytes(l1d)));
        title.push_str(&format!(": L1d {}", Bytes(l1d)));
    }
    if let Some(l2) = caches.l2_bytes.filter(|&b| b > 0) {
        let scale = tallest.max(l1d.map_or(0.0, kib));
        if kib(l2) <= L2_IN_SCALE * scale {
            chart = chart.reference(kib(l2), format!("L2 {}", Bytes(l2)));
            title.push_str(&format!(", L2 {}", Bytes(l2)));
        } else {
            title.push_str(&format!(" (L2, {}, is off this scale)", Bytes(l2)));
        }
    }
    chart.title = title;
    Some(chart)
}

/// A row of `footprint_mappings`: one mapping of the process, addresses in hex.
#[derive(Serialize, Default)]
struct MappingCsvRow<'a> {
    pid: u32,
    start: String,
    end: String,
    perms: &'a str,
    name: &'a str,
    anonymous: bool,
    rss_kb: u64,
    anonymous_kb: u64,
    anon_huge_kb: u64,
}

fn mappings_data(p: &ProcessMappings) -> DataTable {
    DataTable::of(
        "footprint_mappings",
        p.mappings.iter().map(|m| MappingCsvRow {
            pid: p.pid,
            start: format!("{:#x}", m.start),
            end: format!("{:#x}", m.end),
            perms: &m.perms,
            name: &m.name,
            anonymous: m.anonymous,
            rss_kb: m.rss_kb,
            anonymous_kb: m.anonymous_kb,
            anon_huge_kb: m.anon_huge_kb,
        }),
    )
}

/// A row of `footprint_objects`: one object, its shares of L1d and L2 when they are known.
#[derive(Serialize, Default)]
struct ObjectCsvRow<'a> {
    name: &'a str,
    section: &'a str,
    tls: bool,
    #[serde(rename = "type")]
    type_name: &'a str,
    bytes: u64,
    lines: u64,
    l1d_pct: Option<Raw>,
    l2_pct: Option<Raw>,
    pointee_type: &'a str,
    pointee_bytes: Option<u64>,
}

fn data(r: &FootprintResult) -> DataTable {
    let pct = |b: u64, of: Option<u64>| of.map(|s| Raw(100.0 * b as f64 / s as f64));
    DataTable::of(
        "footprint_objects",
        r.objects.iter().map(|o| ObjectCsvRow {
            name: &o.name,
            section: &o.section,
            tls: o.tls,
            type_name: o.type_name.as_deref().unwrap_or_default(),
            bytes: o.bytes,
            lines: o.lines,
            l1d_pct: pct(o.bytes, r.caches.l1d_bytes),
            l2_pct: pct(o.bytes, r.caches.l2_bytes),
            pointee_type: o.pointee.as_ref().map_or("", |p| &p.type_name),
            pointee_bytes: o.pointee.as_ref().map(|p| p.size),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str, bytes: u64) -> DataObject {
        serde_json::from_value(serde_json::json!({
            "name": name, "section": ".data", "tls": false, "bytes": bytes,
            "lines": bytes.div_ceil(64),
        }))
        .unwrap()
    }

    fn caches() -> CacheSizes {
        CacheSizes {
            line_bytes: 64,
            l1d_bytes: Some(48 * 1024),
            l2_bytes: Some(1024 * 1024),
            l3_bytes: Some(32 << 20),
            source: "as the OS reports them".into(),
        }
    }

    #[test]
    fn the_chart_is_linear_against_l1d_with_the_small_objects_in_one_bar() {
        let objects: Vec<DataObject> = [
            ("tiny_a", 16),
            ("POWER_OF_FIVE_128", 10_416),
            ("tiny_b", 24),
            ("MAPPINGS_CACHE", 2_368),
            ("tiny_c", 64),
        ]
        .iter()
        .map(|&(n, b)| object(n, b))
        .collect();
        let chart = chart(&objects, &caches()).unwrap();
        let svg = crate::render::svg::render(&chart.into());
        // The largest first, then one bar for the three objects under 1% of L1d.
        let big = svg.find(">POWER_OF_FIVE_128<").unwrap();
        assert!(big < svg.find(">MAPPINGS_CACHE<").unwrap());
        assert!(svg.contains(">3 objects &lt; 1% of L1d<"), "{svg}");
        assert!(!svg.contains("tiny_a"));
        // Sizes, not "0.0"; L1d as a line; L2 (21× the scale) named as off it.
        assert!(
            svg.contains(">10.2 KiB<") && svg.contains(">104 B<"),
            "{svg}"
        );
        assert!(!svg.contains(">0.0<") && !svg.contains("log scale"));
        assert!(svg.contains(">L1d 48 KiB<") && svg.contains("stroke-dasharray"));
        assert!(svg.contains("L2, 1 MiB, is off this scale"));
        // A large object brings L2's line onto the scale.
        let objects = vec![object("big", 400 * 1024), object("small", 100)];
        let svg = crate::render::svg::render(&chart_of(&objects).into());
        assert!(svg.contains(">L2 1 MiB<"), "{svg}");
        assert!(svg.contains(">1 object &lt; 1% of L1d<"));
        assert!(super::chart(&[], &caches()).is_none());
    }

    fn chart_of(objects: &[DataObject]) -> BarChart {
        chart(objects, &caches()).unwrap()
    }
}
