//! The self-contained HTML report: one HTML5 document with inline CSS and inline SVG charts.
//!
//! No JavaScript, web fonts, images or other external resources are used, so the file can be
//! mailed, archived or opened offline and looks the same years later; it also prints cleanly
//! (charts and tables avoid page breaks, the collapsed point tables unfold where the browser
//! supports `::details-content`). Every piece of text taken from the report goes through
//! `svg::escape`: CPU model strings, kernel versions and warning messages come from the
//! machine and must not be able to inject markup.
//!
//! Sections: header, machine summary, settings, warnings, then one section per experiment
//! present in `report.experiments` (see `experiment_sections`, the place to add new ones).

use std::fmt::Write as _;

use crate::counters::{AccessCounts, MissLevel};
use crate::experiments::bandwidth::{BandwidthResult, BandwidthRow};
use crate::experiments::latency::{LatencyPoint, LatencyResult, UNSTABLE_SPREAD_PCT};
use crate::experiments::loaded::{Knee, LoadedResult, LoadedRow};
use crate::experiments::miss_impact::{MissImpactResult, Pattern};
use crate::experiments::mlp::{MlpResult, MlpRow, SequentialFit};
use crate::experiments::numa::NumaResult;
use crate::experiments::rob::{RobResult, RobRow, SerializedRow};
use crate::experiments::stride::{StrideResult, StrideRow};
use crate::experiments::tlb::TlbResult;
use crate::platform::cpu_time::{self, MIN_OVERLAP};
use crate::report::svg::{escape, format_number};
use crate::report::{summary, Report};
use crate::topology::Machine;
use crate::units::{format_hz, Bytes};
use crate::view::chart::{
    Axis, Band, BarChart, Heatmap, LegendEntry, LegendSymbol, LineChart, Series, TickFormat,
    VMarker,
};

/// Colours of the hierarchy levels, shared by the chart bands, the boundary markers and the
/// swatches of the levels table so that a colour means the same level everywhere.
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

/// Colour of the measured latency curve: dark, so it reads over every band colour.
const CURVE_COLOR: &str = "#1f2937";
/// Colour of the single DRAM point measured with the other chase order.
const OTHER_ORDER_COLOR: &str = "#17becf";

const CSS: &str = "\
:root { color-scheme: light; }
body { font-family: system-ui, sans-serif; color: #111827; background: #ffffff;
  max-width: 1100px; margin: 0 auto; padding: 24px; line-height: 1.45; font-size: 14px; }
header { border-bottom: 2px solid #111827; padding-bottom: 8px; margin-bottom: 8px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; border-bottom: 1px solid #e5e7eb; padding-bottom: 4px; margin: 32px 0 12px; }
h3 { font-size: 15px; margin: 20px 0 8px; }
nav a { margin-right: 14px; color: #1d4ed8; text-decoration: none; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
.table-wrap { overflow-x: auto; }
th, td { padding: 4px 10px; border-bottom: 1px solid #e5e7eb; text-align: left; vertical-align: top; }
thead th { background: #f3f4f6; font-weight: 600; border-bottom: 1px solid #d1d5db; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.kv th { background: none; font-weight: 500; color: #4b5563; white-space: nowrap; padding-right: 24px; }
.warnings { background: #fffbeb; border: 1px solid #f59e0b; border-left: 6px solid #f59e0b;
  padding: 8px 16px; border-radius: 4px; }
.warnings ul { margin: 4px 0; padding-left: 18px; }
.warnings li { margin: 6px 0; }
.code { font-family: ui-monospace, monospace; font-size: 12px; background: #fef3c7;
  padding: 1px 5px; border-radius: 3px; margin-right: 4px; }
.ok { color: #166534; background: #f0fdf4; border: 1px solid #86efac; padding: 8px 12px; border-radius: 4px; }
.note, .muted { color: #4b5563; }
figure.chart { margin: 12px 0; }
figure.chart svg { max-width: 100%; height: auto; display: block; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }
td:has(> .swatch) { white-space: nowrap; }
.unstable { color: #b91c1c; font-weight: 600; }
.noisy { color: #b91c1c; font-weight: 600; margin-right: 1px; }
.bpc { color: #6b7280; font-size: 11px; margin-left: 6px; }
th .sub { display: block; font-weight: 400; font-size: 11px; color: #6b7280; }
code { font-family: ui-monospace, monospace; font-size: 12px; }
.glance { display: grid; grid-template-columns: repeat(auto-fill, minmax(200px, 1fr)); gap: 8px; }
.glance a { display: block; border: 1px solid #e5e7eb; border-radius: 4px; padding: 8px 12px;
  color: inherit; text-decoration: none; background: #f9fafb; }
.glance a:hover { border-color: #1d4ed8; }
.glance .label { color: #4b5563; font-size: 12px; }
.glance .value { font-size: 20px; font-weight: 600; font-variant-numeric: tabular-nums; }
.glance .detail { color: #6b7280; font-size: 12px; }
.glance a.warn { background: #fffbeb; border-color: #f59e0b; }
.dram { background: #f9fafb; border: 1px solid #e5e7eb; padding: 8px 12px; border-radius: 4px; }
details summary { cursor: pointer; color: #1d4ed8; margin: 8px 0; }
footer { margin-top: 40px; color: #6b7280; font-size: 12px; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  nav { display: none; }
  h2, h3 { break-after: avoid; }
  figure.chart, tr { break-inside: avoid; }
  .table-wrap { overflow: visible; }
  details::details-content { content-visibility: visible; display: contents; }
  .warnings, .ok, .swatch, thead th { print-color-adjust: exact; -webkit-print-color-adjust: exact; }
}
";

/// The complete HTML document for `report`, UTF-8 encoded.
pub fn serialize(report: &Report) -> Vec<u8> {
    render(report).into_bytes()
}

fn render(report: &Report) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let title = if report.machine.cpu_model.is_empty() {
        "memscope report".to_string()
    } else {
        format!("memscope report: {}", report.machine.cpu_model)
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"{name} {version}\">\n\
         <title>{title}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n",
        name = escape(&report.tool.name),
        version = escape(&report.tool.version),
        title = escape(&title),
    );

    let experiments = experiment_sections(report);
    header(&mut out, report, &experiments);
    // The headline figures and the warnings that qualify them first, then the results
    // (the first plot is the latency ladder), then how they were measured and the machine
    // description they are compared with.
    summary_section(&mut out, report);
    warnings_section(&mut out, report);
    for section in &experiments {
        out.push_str(&section.html);
    }
    settings_section(&mut out, report);
    if experiments.is_empty() {
        out.push_str(
            "<p class=\"muted\">No experiment ran: this report holds the machine description only.</p>\n",
        );
    }
    machine_section(&mut out, &report.machine);
    let _ = write!(
        out,
        "<footer>Generated by {} {} (report schema {}).</footer>\n</body>\n</html>\n",
        escape(&report.tool.name),
        escape(&report.tool.version),
        report.schema_version
    );
    out
}

/// One experiment's section, with the anchor and title used by the navigation bar.
struct Section {
    id: &'static str,
    title: &'static str,
    html: String,
}

/// Every experiment present in the report, in reading order. A new experiment adds one
/// line here and one `*_section` function.
fn experiment_sections(report: &Report) -> Vec<Section> {
    let (e, m) = (&report.experiments, &report.machine);
    let candidates = [
        (
            "latency",
            "Latency",
            e.latency.as_ref().map(|r| latency_section(r, m)),
        ),
        (
            "miss-impact",
            "Miss impact",
            e.miss_impact.as_ref().map(miss_impact_section),
        ),
        (
            "bandwidth",
            "Bandwidth",
            e.bandwidth.as_ref().map(|r| bandwidth_section(r, m)),
        ),
        ("stride", "Stride", e.stride.as_ref().map(stride_section)),
        (
            "loaded",
            "Loaded latency",
            e.loaded.as_ref().map(|r| loaded_section(r, m)),
        ),
        ("mlp", "MLP", e.mlp.as_ref().map(mlp_section)),
        ("rob", "ROB", e.rob.as_ref().map(|r| rob_section(r, m))),
        ("tlb", "TLB", e.tlb.as_ref().map(|r| tlb_section(r, m))),
        ("numa", "NUMA", e.numa.as_ref().map(numa_section)),
    ];
    candidates
        .into_iter()
        .filter_map(|(id, title, html)| html.map(|html| Section { id, title, html }))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Small formatting helpers
// ---------------------------------------------------------------------------------------

/// A run of CPU numbers as ranges (`0-7,16`), or a dash when there is none.
fn cpu_list(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        "–".to_string()
    } else {
        crate::topology::cpu::format_cpu_list(cpus)
    }
}

/// Nanoseconds without the unit (table cells have it in the header): more decimals for
/// the small L1 values, none for DRAM.
fn ns(v: f64) -> String {
    rounded(v, 100.0)
}

/// A number with two decimals below 10, one below `one_decimal_below`, none above; a
/// dash when it is not finite.
fn rounded(v: f64, one_decimal_below: f64) -> String {
    if !v.is_finite() {
        "–".to_string()
    } else if v < 10.0 {
        format!("{v:.2}")
    } else if v < one_decimal_below {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// Core cycles without the unit; "–" when unknown (no core clock estimate gives 0 or NaN).
fn cycles(v: f64) -> String {
    if !(v.is_finite() && v > 0.0) {
        "–".to_string()
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

fn opt_bytes(v: Option<u64>) -> String {
    v.map_or_else(|| "–".to_string(), |b| Bytes(b).to_string())
}

fn opt_hz(v: Option<f64>) -> String {
    match v {
        Some(hz) if hz.is_finite() && hz > 0.0 => format_hz(hz),
        _ => "–".to_string(),
    }
}

fn or_dash(s: &str) -> &str {
    if s.trim().is_empty() {
        "–"
    } else {
        s
    }
}

/// A key/value table; values are plain text (escaped here).
fn kv_table(out: &mut String, rows: &[(&str, String)]) {
    out.push_str("<table class=\"kv\">\n");
    for (key, value) in rows {
        let _ = writeln!(
            out,
            "<tr><th scope=\"row\">{}</th><td>{}</td></tr>",
            escape(key),
            escape(value)
        );
    }
    out.push_str("</table>\n");
}

/// A table with a header row. Cells are HTML (callers escape text with `escape`); columns
/// whose header starts with '#' are numeric (right-aligned, the '#' is not shown).
fn table(out: &mut String, headers: &[&str], rows: &[Vec<String>]) {
    let headers: Vec<(String, bool)> = headers
        .iter()
        .map(|h| (escape(h.trim_start_matches('#')), h.starts_with('#')))
        .collect();
    table_html(out, &headers, rows);
}

/// `table` with headers given as HTML, each with its numeric flag.
fn table_html(out: &mut String, headers: &[(String, bool)], rows: &[Vec<String>]) {
    let numeric: Vec<bool> = headers.iter().map(|h| h.1).collect();
    // The wrapper scrolls sideways on narrow screens instead of pushing the page wider.
    out.push_str("<div class=\"table-wrap\"><table>\n<thead><tr>");
    for (h, num) in headers {
        let class = if *num { " class=\"num\"" } else { "" };
        let _ = write!(out, "<th scope=\"col\"{class}>{h}</th>");
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for (k, cell) in row.iter().enumerate() {
            let class = if numeric.get(k).copied().unwrap_or(false) {
                " class=\"num\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{cell}</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
}

// ---------------------------------------------------------------------------------------
// Sections
// ---------------------------------------------------------------------------------------

fn header(out: &mut String, report: &Report, experiments: &[Section]) {
    let _ = write!(
        out,
        "<header>\n<h1>memscope report</h1>\n<p class=\"muted\">{} {} · command <b>{}</b>{}</p>\n",
        escape(&report.tool.name),
        escape(&report.tool.version),
        escape(or_dash(&report.settings.command)),
        if report.machine.cpu_model.is_empty() {
            String::new()
        } else {
            format!(" · {}", escape(&report.machine.cpu_model))
        }
    );
    out.push_str("<nav>");
    for s in experiments {
        let _ = write!(out, "<a href=\"#{}\">{}</a>", s.id, escape(s.title));
    }
    let _ = write!(
        out,
        "<a href=\"#warnings\">Warnings ({})</a>",
        report.warnings.len()
    );
    out.push_str("<a href=\"#settings\">Settings</a><a href=\"#machine\">Machine</a>");
    out.push_str("</nav>\n</header>\n");
}

fn machine_section(out: &mut String, m: &Machine) {
    out.push_str("<section id=\"machine\">\n<h2>Machine</h2>\n");

    let mut identity = Vec::new();
    if let Some(family) = m.cpu_family {
        identity.push(format!("family {family} (0x{family:x})"));
    }
    if let Some(model) = m.cpu_model_number {
        identity.push(format!("model {model} (0x{model:x})"));
    }
    if let Some(stepping) = m.cpu_stepping {
        identity.push(format!("stepping {stepping}"));
    }
    let smt = if m.smt_sibling_groups.is_empty() {
        "none".to_string()
    } else {
        // A handful of groups shows the numbering scheme; all of them would be a wall of text.
        let shown: Vec<String> = m
            .smt_sibling_groups
            .iter()
            .take(4)
            .map(|g| format!("{{{}}}", cpu_list(g)))
            .collect();
        let more = m.smt_sibling_groups.len().saturating_sub(4);
        if more > 0 {
            format!("{} … and {more} more", shown.join(" "))
        } else {
            shown.join(" ")
        }
    };
    let pages = {
        let offered: Vec<String> = m
            .page_sizes_bytes
            .iter()
            .map(|&b| Bytes(b).to_string())
            .collect();
        format!(
            "base {}; offered: {}",
            opt_bytes(Some(m.base_page_bytes).filter(|&b| b > 0)),
            if offered.is_empty() {
                "–".to_string()
            } else {
                offered.join(", ")
            }
        )
    };
    let thp = {
        let mut s = or_dash(&m.thp.enabled).to_string();
        if let Some(defrag) = &m.thp.defrag {
            let _ = write!(s, ", defrag: {defrag}");
        }
        if let Some(pmd) = m.thp.pmd_bytes {
            let _ = write!(s, ", huge page size {}", Bytes(pmd));
        }
        s
    };
    let cpufreq = m.cpufreq.as_ref().map_or_else(
        || "not exposed".to_string(),
        |f| {
            let mut parts = Vec::new();
            if let Some(g) = &f.governor {
                parts.push(format!("governor {g}"));
            }
            if f.min_hz.is_some() || f.max_hz.is_some() {
                parts.push(format!("{} – {}", opt_hz(f.min_hz), opt_hz(f.max_hz)));
            }
            if let Some(boost) = f.boost {
                parts.push(format!("boost {}", if boost { "on" } else { "off" }));
            }
            if parts.is_empty() {
                "–".to_string()
            } else {
                parts.join(", ")
            }
        },
    );
    let mut rows: Vec<(&str, String)> = vec![
        ("CPU", or_dash(&m.cpu_model).to_string()),
        ("Vendor", or_dash(&m.cpu_vendor).to_string()),
        (
            "Family / model",
            if identity.is_empty() {
                "–".to_string()
            } else {
                identity.join(", ")
            },
        ),
        ("Architecture", or_dash(&m.architecture).to_string()),
        (
            "CPUs",
            format!(
                "{} logical, {} physical cores, {} thread(s) per core",
                m.logical_cpus, m.physical_cores, m.threads_per_core
            ),
        ),
        ("SMT sibling groups", smt),
        ("Allowed CPUs", cpu_list(&m.allowed_cpus)),
        (
            "Memory",
            format!(
                "{} total, {} available",
                Bytes(m.memory_total_bytes),
                Bytes(m.memory_available_bytes)
            ),
        ),
        ("NUMA nodes", m.numa_nodes.len().to_string()),
        ("Page sizes", pages),
        ("Transparent huge pages", thp),
        (
            "Hypervisor",
            m.hypervisor
                .clone()
                .unwrap_or_else(|| "none detected".to_string()),
        ),
        ("Kernel", or_dash(&m.kernel).to_string()),
        (
            "Clock source",
            m.clocksource.clone().unwrap_or_else(|| "–".to_string()),
        ),
        ("TSC", opt_hz(m.tsc_hz)),
        ("Core clock (estimated)", opt_hz(m.core_hz_estimate)),
        ("Frequency scaling", cpufreq),
    ];
    if !m.isa_extensions.is_empty() {
        rows.push(("Vector extensions", m.isa_extensions.join(", ")));
    }
    if let Some(counters) = &m.perf_counters {
        rows.push(("Performance counters", counters.summary()));
    }
    kv_table(out, &rows);

    let notes = super::virtualization::notes(m);
    if !notes.is_empty() {
        out.push_str("<h3>Virtualization</h3>\n<ul class=\"notes\">\n");
        for note in notes {
            out.push_str(&format!("<li>{}</li>\n", escape(&note)));
        }
        out.push_str("</ul>\n");
    }

    out.push_str("<h3>Caches</h3>\n");
    if m.caches.is_empty() {
        out.push_str("<p class=\"muted\">The OS reports no caches.</p>\n");
    } else {
        let rows: Vec<Vec<String>> = m
            .caches
            .iter()
            .map(|c| {
                let cpuid = match c.cpuid_size_bytes {
                    Some(b) if b != c.size_bytes => format!("{} (differs)", Bytes(b)),
                    Some(b) => Bytes(b).to_string(),
                    None => "–".to_string(),
                };
                vec![
                    escape(&c.name()),
                    escape(&c.kind),
                    escape(&Bytes(c.size_bytes).to_string()),
                    escape(&Bytes(c.line_bytes).to_string()),
                    c.ways.map_or_else(|| "–".to_string(), |w| w.to_string()),
                    c.sets.map_or_else(|| "–".to_string(), |s| s.to_string()),
                    escape(&match c.shared_with_cpus.len() {
                        0 => "–".to_string(),
                        1 => format!("{} (1 CPU)", cpu_list(&c.shared_with_cpus)),
                        count => format!("{} ({count} CPUs)", cpu_list(&c.shared_with_cpus)),
                    }),
                    c.instances.to_string(),
                    escape(&cpuid),
                ]
            })
            .collect();
        table(
            out,
            &[
                "Cache",
                "Kind",
                "#Size",
                "#Line",
                "#Ways",
                "#Sets",
                "Shared with CPUs",
                "#Instances",
                "#CPUID size",
            ],
            &rows,
        );
    }

    out.push_str("<h3>TLBs</h3>\n");
    if m.tlbs.is_empty() {
        out.push_str("<p class=\"muted\">TLB geometry not available (CPUID does not describe it on this CPU).</p>\n");
    } else {
        let rows: Vec<Vec<String>> = m
            .tlbs
            .iter()
            .map(|t| {
                vec![
                    format!("L{}", t.level),
                    escape(&t.kind),
                    escape(&Bytes(t.page_bytes).to_string()),
                    t.entries.to_string(),
                    t.ways
                        .map_or_else(|| "fully associative".to_string(), |w| w.to_string()),
                    escape(&Bytes(t.page_bytes.saturating_mul(u64::from(t.entries))).to_string()),
                    escape(&t.source),
                ]
            })
            .collect();
        table(
            out,
            &[
                "Level", "Kind", "#Page", "#Entries", "#Ways", "#Reach", "Source",
            ],
            &rows,
        );
    }

    if !m.numa_nodes.is_empty() {
        out.push_str("<h3>NUMA nodes</h3>\n");
        let rows: Vec<Vec<String>> = m
            .numa_nodes
            .iter()
            .map(|node| {
                let distances: Vec<String> = node.distances.iter().map(u32::to_string).collect();
                vec![
                    node.id.to_string(),
                    escape(&cpu_list(&node.cpus)),
                    escape(&Bytes(node.memory_total_bytes).to_string()),
                    escape(&Bytes(node.memory_free_bytes).to_string()),
                    escape(&distances.join(" ")),
                ]
            })
            .collect();
        table(
            out,
            &["#Node", "CPUs", "#Memory", "#Free", "Distances"],
            &rows,
        );
    }

    if !m.hugepage_pools.is_empty() {
        out.push_str("<h3>Huge page pools (hugetlbfs)</h3>\n");
        let rows: Vec<Vec<String>> = m
            .hugepage_pools
            .iter()
            .map(|p| {
                vec![
                    escape(&Bytes(p.page_bytes).to_string()),
                    p.total.to_string(),
                    p.free.to_string(),
                    p.reserved.to_string(),
                    p.surplus.to_string(),
                ]
            })
            .collect();
        table(
            out,
            &["#Page size", "#Total", "#Free", "#Reserved", "#Surplus"],
            &rows,
        );
    }
    out.push_str("</section>\n");
}

fn settings_section(out: &mut String, report: &Report) {
    let s = &report.settings;
    out.push_str("<section id=\"settings\">\n<h2>Settings</h2>\n");
    let obtained = s.pages_obtained.as_ref().map_or_else(
        || "–".to_string(),
        |p| {
            format!(
                "{}: {} pages, {:.0}% of the largest buffer on huge pages",
                p.policy,
                Bytes(p.page_bytes),
                if p.huge_fraction.is_finite() {
                    p.huge_fraction * 100.0
                } else {
                    0.0
                }
            )
        },
    );
    kv_table(
        out,
        &[
            ("Command", or_dash(&s.command).to_string()),
            ("Pinned to CPUs", cpu_list(&s.cpus)),
            ("Pages requested", or_dash(&s.pages_requested).to_string()),
            ("Pages obtained", obtained),
            ("Quick mode", if s.quick { "yes" } else { "no" }.to_string()),
            ("Repetitions per point", s.repetitions.to_string()),
            ("Trial duration", format!("{:.1} ms", s.trial_ms)),
            (
                "Largest working set",
                opt_bytes(Some(s.max_size_bytes).filter(|&b| b > 0)),
            ),
            ("Timer", or_dash(&s.timer).to_string()),
            (
                "Clock of multi-thread trials",
                or_dash(&s.team_clock).to_string(),
            ),
            ("Sampling", or_dash(&s.sampling).to_string()),
        ],
    );
    out.push_str("</section>\n");
}

/// The headline figures as cards, each linking to its section.
fn summary_section(out: &mut String, report: &Report) {
    let headlines = summary::headlines(report);
    if headlines.is_empty() {
        return;
    }
    out.push_str("<section id=\"summary\">\n<h2>At a glance</h2>\n<div class=\"glance\">\n");
    for h in &headlines {
        let warn = h.anchor == "warnings" && h.value != "0";
        let _ = writeln!(
            out,
            "<a href=\"#{}\"{}><div class=\"label\">{}</div><div class=\"value\">{}</div>\
             <div class=\"detail\">{}</div></a>",
            h.anchor,
            if warn { " class=\"warn\"" } else { "" },
            escape(&h.label),
            escape(&h.value),
            escape(&h.detail)
        );
    }
    out.push_str("</div>\n</section>\n");
}

fn warnings_section(out: &mut String, report: &Report) {
    out.push_str("<section id=\"warnings\">\n<h2>Warnings</h2>\n");
    if report.warnings.is_empty() {
        out.push_str("<p class=\"ok\">No warnings: nothing was found that distorts these measurements.</p>\n");
    } else {
        out.push_str("<div class=\"warnings\" role=\"note\">\n<ul>\n");
        for w in &report.warnings {
            let _ = writeln!(
                out,
                "<li><span class=\"code\">{}</span>{}</li>",
                escape(&w.code),
                escape(&w.message)
            );
        }
        out.push_str("</ul>\n</div>\n");
    }
    out.push_str("</section>\n");
}

// ---------------------------------------------------------------------------------------
// Latency
// ---------------------------------------------------------------------------------------

/// The latency ladder as an SVG chart: the measured curve (ns on a log scale, core cycles
/// on the right), the OS cache sizes as dashed references, the found level ends as solid
/// lines, and each plateau shaded and labelled with its latency.
pub fn latency_chart(result: &LatencyResult, machine: &Machine) -> String {
    let mut chart = LineChart::new("Load-to-use latency vs working set")
        .size(1000.0, 560.0)
        .x_axis(Axis::log2("Working set (log scale)").bytes())
        .y_axis(Axis::log10("Latency (ns, log scale)"))
        .series(
            latency_series(
                format!(
                    "{} chase, {} stride",
                    or_dash(&result.order),
                    Bytes(result.stride_bytes)
                ),
                &result.points,
            )
            .color(CURVE_COLOR),
        )
        .unstable_label(format!(
            "unstable (spread > {UNSTABLE_SPREAD_PCT:.0}% after re-measuring)"
        ));
    if let Some(hz) = machine.core_hz_estimate {
        chart = chart.secondary_y("Latency (core cycles)", hz / 1e9);
    }

    // The other chase order shows what TLB misses cost: the whole random curve when it was
    // measured, else the single DRAM point measured both ways.
    let random = result.random_points.as_deref().unwrap_or(&[]);
    if !random.is_empty() {
        chart = chart.series(
            latency_series(
                "random chase over the whole buffer (adds TLB misses)",
                random,
            )
            .color(OTHER_ORDER_COLOR)
            .dashed(),
        );
    } else if let Some(d) = &result.dram {
        let (name, value) = if result.order == "page-local" {
            ("random chase (DRAM, with TLB misses)", d.random_ns)
        } else {
            ("page-local chase (DRAM, no TLB misses)", d.page_local_ns)
        };
        if value.is_finite() && value > 0.0 {
            chart = chart
                .series(Series::new(name, vec![(d.bytes as f64, value)]).color(OTHER_ORDER_COLOR));
        }
    }

    let caches = machine.data_caches();
    for c in &caches {
        chart = chart.marker(VMarker::reference(
            c.size_bytes as f64,
            format!("{} {}", c.name(), Bytes(c.size_bytes)),
        ));
    }
    for level in &result.levels {
        let color = level_color(&level.name);
        if let Some(cap) = level.capacity_bytes {
            chart = chart.marker(VMarker::found(
                cap as f64,
                format!("{} ends", level.name),
                color,
            ));
        }
        chart = chart.band(
            Band::new(
                level.first_bytes as f64,
                level.last_bytes as f64,
                format!("{} {}", level.name, ns_with_unit(level.latency_ns)),
            )
            .color(color),
        );
    }

    if !result.levels.is_empty() {
        chart = chart.legend_entry(LegendEntry::new(
            "plateau (level found)",
            LegendSymbol::Swatch {
                color: "#6b7280".to_string(),
                opacity: 0.2,
            },
        ));
    }
    if result.levels.iter().any(|l| l.capacity_bytes.is_some()) {
        chart = chart.legend_entry(LegendEntry::new(
            "measured end of level",
            LegendSymbol::Line {
                color: "#374151".to_string(),
                dashed: false,
            },
        ));
    }
    if !caches.is_empty() {
        chart = chart.legend_entry(LegendEntry::new(
            "cache size reported by the OS",
            LegendSymbol::Line {
                color: "#6b7280".to_string(),
                dashed: true,
            },
        ));
    }
    chart.render()
}

fn ns_with_unit(v: f64) -> String {
    format!("{} ns", ns(v))
}

/// One sweep as a chart series: ns per working set, unstable points flagged, and error bars
/// of ± the robust spread (≈ one standard deviation), usually thinner than the marker, so
/// they stand out exactly where a point is noisy.
fn latency_series(name: impl Into<String>, points: &[LatencyPoint]) -> Series {
    let errors = points
        .iter()
        .map(|p| {
            let s = if p.spread_pct.is_finite() {
                p.spread_pct.max(0.0) / 100.0
            } else {
                0.0
            };
            (p.ns * (1.0 - s), p.ns * (1.0 + s))
        })
        .collect();
    Series::new(
        name,
        points.iter().map(|p| (p.bytes as f64, p.ns)).collect(),
    )
    .error_bars(errors)
    .unstable(points.iter().map(|p| p.unstable).collect())
}

fn latency_section(result: &LatencyResult, machine: &Machine) -> String {
    let mut out = String::new();
    out.push_str("<section id=\"latency\">\n<h2>Latency ladder</h2>\n");
    let trials = result.points.iter().map(|p| p.trials).max().unwrap_or(0);
    let order = match result.order.as_str() {
        "page-local" => "page-local order (random lines within a small window of pages at a \
                         time, so the caches are measured without TLB misses)"
            .to_string(),
        "random" => "random order over the whole buffer".to_string(),
        other => format!("{} order", or_dash(other)),
    };
    let random = result.random_points.as_deref().unwrap_or(&[]);
    let _ = writeln!(
        out,
        "<p class=\"note\">Dependent pointer chase in {} with a {} stride: every load's address \
         comes from the previous load, so each step costs the full load-to-use latency of the \
         level the working set fits in. Each point is the median of up to {trials} timed \
         trials; bars show the robust spread.{}</p>",
        escape(&order),
        escape(&Bytes(result.stride_bytes).to_string()),
        if random.is_empty() {
            ""
        } else {
            " The dashed curve repeats the sweep with a random chase over the whole buffer: \
             the gap between the two curves is what TLB misses and page walks cost at each size."
        }
    );
    let _ = writeln!(
        out,
        "<figure class=\"chart\">\n{}</figure>",
        latency_chart(result, machine)
    );

    out.push_str("<h3>Levels found</h3>\n");
    if result.levels.is_empty() {
        out.push_str("<p class=\"muted\">No plateau was found in the curve.</p>\n");
    } else {
        let rows: Vec<Vec<String>> = result
            .levels
            .iter()
            .map(|l| {
                vec![
                    format!(
                        "<span class=\"swatch\" style=\"background:{}\"></span>{}",
                        level_color(&l.name),
                        escape(&l.name)
                    ),
                    ns(l.latency_ns),
                    cycles(l.latency_cycles),
                    escape(&format!(
                        "{} – {}",
                        Bytes(l.first_bytes),
                        Bytes(l.last_bytes)
                    )),
                    escape(&opt_bytes(l.capacity_bytes)),
                    escape(&opt_bytes(l.os_size_bytes)),
                    l.points.to_string(),
                ]
            })
            .collect();
        table(
            &mut out,
            &[
                "Level",
                "#Latency (ns)",
                "#Cycles",
                "#Plateau",
                "#Measured capacity",
                "#OS size",
                "#Points",
            ],
            &rows,
        );
    }

    if let Some(d) = &result.dram {
        let _ = writeln!(
            out,
            "<p class=\"dram\"><b>DRAM</b> at {}: random chase <b>{} ns</b> ({} cycles), \
             page-local chase <b>{} ns</b> ({} cycles, {} pages per window). \
             TLB misses and page walks add <b>{} ns</b> per access{}.</p>",
            escape(&Bytes(d.bytes).to_string()),
            ns(d.random_ns),
            cycles(d.random_cycles),
            ns(d.page_local_ns),
            cycles(d.page_local_cycles),
            d.page_local_window_pages,
            ns(d.tlb_penalty_ns),
            d.tlb_measured_ns.map_or_else(String::new, |tlb| format!(
                ", together with DRAM locality: the TLB experiment puts the TLB's own share at \
                 <b>{} ns</b> here, so about {} ns come from the page-local window's open DRAM \
                 rows and fewer bank conflicts",
                ns(tlb),
                ns((d.tlb_penalty_ns - tlb).max(0.0))
            )),
        );
    }

    let _ = writeln!(
        out,
        "<details>\n<summary>All {} points of the sweep</summary>",
        result.points.len()
    );
    // The random sweep, when measured, shares the sizes of the main one: matched by size.
    let random_at = |bytes: u64| random.iter().find(|r| r.bytes == bytes);
    let counted = result.points.iter().any(|p| p.counters.is_some());
    let random_counted = random.iter().any(|p| p.counters.is_some());
    let stability = |p: &LatencyPoint| {
        if p.unstable {
            "<span class=\"unstable\">unstable</span>".to_string()
        } else {
            String::new()
        }
    };
    let spread = |p: &LatencyPoint| {
        if p.spread_pct.is_finite() {
            format!("{:.1}", p.spread_pct)
        } else {
            "–".to_string()
        }
    };
    let rows: Vec<Vec<String>> = result
        .points
        .iter()
        .map(|p| {
            let mut row = vec![
                escape(&Bytes(p.bytes).to_string()),
                p.bytes.to_string(),
                ns(p.ns),
                cycles(p.cycles),
                spread(p),
                p.trials.to_string(),
                stability(p),
            ];
            if !random.is_empty() {
                match random_at(p.bytes) {
                    Some(r) => row.extend([ns(r.ns), ns(r.ns - p.ns), spread(r), stability(r)]),
                    None => row.extend([
                        "–".to_string(),
                        "–".to_string(),
                        "–".to_string(),
                        String::new(),
                    ]),
                }
            }
            if counted {
                row.extend(miss_cells(p.counters.as_ref()));
            }
            if random_counted {
                row.extend(miss_cells(
                    random_at(p.bytes).and_then(|r| r.counters.as_ref()),
                ));
            }
            row
        })
        .collect();
    let mut headers = vec![
        "#Working set",
        "#Bytes",
        "#ns",
        "#Cycles",
        "#Spread %",
        "#Trials",
        "Stability",
    ];
    if !random.is_empty() {
        headers.extend([
            "#Random ns",
            "#TLB cost ns",
            "#Random spread %",
            "Random stability",
        ]);
    }
    let miss = miss_headers("");
    let random_miss = miss_headers("Random ");
    if counted {
        headers.extend(miss.iter().map(String::as_str));
    }
    if random_counted {
        headers.extend(random_miss.iter().map(String::as_str));
    }
    table(&mut out, &headers, &rows);
    if counted || random_counted {
        let all = result.points.iter().chain(random);
        out.push_str(&miss_notes(all.filter_map(|p| p.counters.as_ref())));
    }
    out.push_str("</details>\n</section>\n");
    out
}

/// Headers of the per-level miss columns (numeric), e.g. "Random L1 miss".
/// A table whose rows may end with the miss columns (when `counts` is given: the
/// rows' counters), followed by the reasons levels were not counted.
fn table_with_misses<'a>(
    out: &mut String,
    headers: Vec<&str>,
    rows: &[Vec<String>],
    counts: Option<impl Iterator<Item = &'a AccessCounts>>,
) {
    let miss = miss_headers("");
    let mut all: Vec<&str> = headers;
    if counts.is_some() {
        all.extend(miss.iter().map(String::as_str));
    }
    table(out, &all, rows);
    if let Some(counts) = counts {
        out.push_str(&miss_notes(counts));
    }
}

fn miss_headers(prefix: &str) -> Vec<String> {
    MissLevel::ALL
        .iter()
        .map(|l| format!("#{prefix}{}", l.label()))
        .collect()
}

/// Cells of the miss columns: misses per access ("*" when multiplexed); "n/s" with its
/// reason as a tooltip for a level not counted; "–" for a row without counts.
fn miss_cells(counts: Option<&AccessCounts>) -> Vec<String> {
    MissLevel::ALL
        .iter()
        .map(|&level| {
            let Some(counts) = counts else {
                return "–".to_string();
            };
            let why = counts
                .levels
                .iter()
                .find(|l| l.level == level && l.per_access.is_none())
                .map(|l| l.not_supported.clone().unwrap_or_default());
            match why {
                Some(why) => format!(
                    "<span class=\"muted\" title=\"{}\">n/s</span>",
                    escape(&why)
                ),
                None => escape(&counts.cell(level)),
            }
        })
        .collect()
}

/// The note under a table with miss columns: what the figures are, then every distinct
/// reason a level was not counted, once.
fn miss_notes<'a>(counts: impl IntoIterator<Item = &'a AccessCounts>) -> String {
    let counts: Vec<&AccessCounts> = counts.into_iter().collect();
    let mut notes: Vec<String> = Vec::new();
    for note in counts.iter().flat_map(|c| c.unsupported_notes()) {
        if !notes.contains(&note) {
            notes.push(note);
        }
    }
    let multiplexed = counts.iter().any(|c| {
        c.levels
            .iter()
            .any(|l| l.multiplexed && l.per_access.is_some())
    });
    let mut out = String::from(
        "<p class=\"note\">Miss columns: misses per access at each level from the hardware \
         counters, counted in an untimed pass after each row's timed trials.",
    );
    if multiplexed {
        out.push_str(
            " * the PMU was shared with other events: the count is scaled by the time the \
             event was enabled over the time it counted (an estimate).",
        );
    }
    for note in notes {
        let _ = write!(out, "<br>n/s — {}", escape(&note));
    }
    out.push_str("</p>\n");
    out
}

// ---------------------------------------------------------------------------------------
// Bandwidth
// ---------------------------------------------------------------------------------------

/// Spread above which a bandwidth or stride figure is marked noisy (the terminal's "~").
const NOISY_SPREAD_PCT: f64 = 10.0;

/// Series colours of the bandwidth charts: category10 in full, so the seven kernel families
/// of the registry (read, write, copy, triad and three mixes) each get their own.
const KERNEL_PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f",
];

fn noisy(spread_pct: f64) -> bool {
    spread_pct.is_finite() && spread_pct > NOISY_SPREAD_PCT
}

/// Distinct values in order of first appearance.
fn distinct<T: PartialEq>(values: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// A kernel without its "-nt" suffix: a kernel and its streaming-store variant share one
/// colour, the streaming one drawn dashed.
fn kernel_family(name: &str) -> &str {
    name.strip_suffix("-nt").unwrap_or(name)
}

/// Kernel families in order of first appearance (table, then sweep), which fixes their
/// colours for every chart of the section.
fn kernel_families(result: &BandwidthResult) -> Vec<&str> {
    distinct(
        result
            .rows
            .iter()
            .chain(&result.sweep)
            .map(|r| kernel_family(&r.kernel)),
    )
}

fn kernel_color(families: &[&str], kernel: &str) -> &'static str {
    let family = kernel_family(kernel);
    let i = families.iter().position(|f| *f == family).unwrap_or(0);
    KERNEL_PALETTE[i % KERNEL_PALETTE.len()]
}

/// A kernel as a chart series: coloured by family, dashed with streaming stores, noisy
/// points and points whose threads did not run together hollow.
fn kernel_series(families: &[&str], rows: &[&BandwidthRow], points: Vec<(f64, f64)>) -> Series {
    let first = rows[0];
    let series = Series::new(first.kernel.clone(), points)
        .color(kernel_color(families, &first.kernel))
        .unstable(
            rows.iter()
                .map(|r| noisy(r.spread_pct) || !r.concurrent)
                .collect(),
        );
    if first.nontemporal {
        series.dashed()
    } else {
        series
    }
}

/// What a hollow point of a bandwidth chart means: a wide spread, and (when some row has
/// it) threads that did not run together.
fn bandwidth_unstable_label<'a>(rows: impl Iterator<Item = &'a BandwidthRow>) -> String {
    let mut label = format!("spread > {NOISY_SPREAD_PCT:.0}%");
    if rows.into_iter().any(|r| !r.concurrent) {
        label.push_str(" or threads not together (!)");
    }
    label
}

/// "1 thread", "8 threads".
fn threads_label(threads: usize) -> String {
    if threads == 1 {
        "1 thread".to_string()
    } else {
        format!("{threads} threads")
    }
}

/// Decimal GB/s without the unit: two decimals below 10, none from 1000 up, else one.
fn gbs(v: f64) -> String {
    rounded(v, 1000.0)
}

fn spread_text(spread_pct: f64) -> String {
    if spread_pct.is_finite() {
        format!("{spread_pct:.1}")
    } else {
        "–".to_string()
    }
}

/// Whether a level is a cache (bytes per cycle are shown for those only, as in the terminal).
fn is_cache_level(level: &str) -> bool {
    level != "DRAM" && level != "custom"
}

/// Bandwidth against the working set per thread for the sweep's kernels (first thread
/// count), on log axes, with the OS cache sizes as dashed references and bytes per cycle
/// per thread on the right when the core clock is known.
pub fn bandwidth_sweep_chart(result: &BandwidthResult, machine: &Machine) -> String {
    let threads = result.sweep.first().map_or(1, |r| r.threads).max(1);
    let families = kernel_families(result);
    let mut chart = LineChart::new(format!(
        "Bandwidth vs working set, {} (decimal GB/s, bytes read + written)",
        threads_label(threads)
    ))
    .size(1000.0, 520.0)
    .x_axis(Axis::log2("Working set per thread, all arrays of the kernel (log scale)").bytes())
    .y_axis(Axis::log10("Bandwidth (GB/s, log scale)"))
    .unstable_label(bandwidth_unstable_label(result.sweep.iter()));
    if let Some(hz) = machine
        .core_hz_estimate
        .filter(|hz| hz.is_finite() && *hz > 0.0)
    {
        chart = chart.secondary_y("Bytes per core cycle per thread", 1e9 / hz / threads as f64);
    }
    for kernel in distinct(result.sweep.iter().map(|r| r.kernel.as_str())) {
        let mut rows: Vec<&BandwidthRow> =
            result.sweep.iter().filter(|r| r.kernel == kernel).collect();
        rows.sort_by_key(|r| r.bytes_per_thread);
        let points = rows
            .iter()
            .map(|r| (r.bytes_per_thread as f64, r.gb_per_s))
            .collect();
        chart = chart.series(kernel_series(&families, &rows, points));
    }
    let caches = machine.data_caches();
    for c in &caches {
        chart = chart.marker(VMarker::reference(
            c.size_bytes as f64,
            format!("{} {}", c.name(), Bytes(c.size_bytes)),
        ));
    }
    if !caches.is_empty() {
        chart = chart.legend_entry(LegendEntry::new(
            "cache size reported by the OS",
            LegendSymbol::Line {
                color: "#6b7280".to_string(),
                dashed: true,
            },
        ));
    }
    chart.render()
}

/// The level the thread-scaling chart shows: DRAM, else the custom sizes, else the last
/// level measured.
fn scaling_level(rows: &[BandwidthRow]) -> Option<&str> {
    if rows.iter().any(|r| r.level == "DRAM") {
        Some("DRAM")
    } else if rows.iter().any(|r| r.level == "custom") {
        Some("custom")
    } else {
        rows.last().map(|r| r.level.as_str())
    }
}

/// Bandwidth of every kernel against the thread count at `level` (the largest working set
/// of that level when there are several, as with custom sizes); linear axes from zero, so
/// that the slope reads as scaling.
pub fn bandwidth_threads_chart(result: &BandwidthResult, level: &str) -> String {
    let families = kernel_families(result);
    let rows: Vec<&BandwidthRow> = result.rows.iter().filter(|r| r.level == level).collect();
    // From the fewest threads measured to the most: starting at zero would leave the
    // left part empty (nothing runs on zero threads), half the chart with "1,all" on 2 CPUs.
    let min_threads = rows.iter().map(|r| r.threads).min().unwrap_or(1);
    let max_threads = rows.iter().map(|r| r.threads).max().unwrap_or(1);
    let where_ = if level == "custom" {
        "the largest custom working set".to_string()
    } else {
        level.to_string()
    };
    let mut chart = LineChart::new(format!(
        "Bandwidth vs threads in {where_} (decimal GB/s of all threads together)"
    ))
    .size(1000.0, 480.0)
    .x_axis(
        Axis::linear("Threads")
            .format(TickFormat::Integer)
            .range(min_threads as f64, max_threads as f64),
    )
    .y_axis(Axis::linear("Bandwidth (GB/s)").include_zero())
    .unstable_label(bandwidth_unstable_label(rows.iter().copied()));
    for kernel in distinct(rows.iter().map(|r| r.kernel.as_str())) {
        let mut points: Vec<&BandwidthRow> = Vec::new();
        for threads in distinct(rows.iter().map(|r| r.threads)) {
            let largest = rows
                .iter()
                .filter(|r| r.kernel == kernel && r.threads == threads)
                .max_by_key(|r| r.bytes_per_thread);
            if let Some(r) = largest {
                points.push(r);
            }
        }
        points.sort_by_key(|r| r.threads);
        let xy = points
            .iter()
            .map(|r| (r.threads as f64, r.gb_per_s))
            .collect();
        chart = chart.series(kernel_series(&families, &points, xy));
    }
    chart.render()
}

/// One column of a per-level table: a level, or one custom size. Kernels with three or
/// four arrays round their working set down to whole granules, so the measured sizes in a
/// column span a few %.
struct LevelColumn<'a> {
    level: &'a str,
    working_set: u64,
    min_bytes: u64,
    max_bytes: u64,
}

fn level_columns<'a>(rows: &[&'a BandwidthRow]) -> Vec<LevelColumn<'a>> {
    let mut columns: Vec<LevelColumn<'a>> = Vec::new();
    for r in rows {
        match columns.iter_mut().find(|c| c.holds(r)) {
            Some(c) => {
                c.min_bytes = c.min_bytes.min(r.bytes_per_thread);
                c.max_bytes = c.max_bytes.max(r.bytes_per_thread);
            }
            None => columns.push(LevelColumn {
                level: &r.level,
                working_set: r.working_set_bytes,
                min_bytes: r.bytes_per_thread,
                max_bytes: r.bytes_per_thread,
            }),
        }
    }
    columns
}

impl LevelColumn<'_> {
    fn holds(&self, r: &BandwidthRow) -> bool {
        r.level == self.level && r.working_set_bytes == self.working_set
    }

    fn header(&self) -> String {
        // Granule rounding moves three- and four-array kernels a few % below the others:
        // "≈" says so without a range that reads like two sizes.
        let (lo, hi) = (
            Bytes(self.min_bytes).to_string(),
            Bytes(self.max_bytes).to_string(),
        );
        let size = if lo == hi {
            hi
        } else if (self.max_bytes as f64) < 1.1 * self.min_bytes as f64 {
            format!("≈ {hi}")
        } else {
            format!("{lo} – {hi}")
        };
        let swatch = if is_cache_level(self.level) || self.level == "DRAM" {
            format!(
                "<span class=\"swatch\" style=\"background:{}\"></span>",
                level_color(self.level)
            )
        } else {
            String::new()
        };
        format!(
            "{swatch}{}<span class=\"sub\">{} per thread</span>",
            escape(self.level),
            escape(&size)
        )
    }
}

/// One cell of the per-level table: GB/s, bytes per cycle per thread in small grey for
/// cache levels, "~" when noisy; the spread and trials on hover.
fn bandwidth_cell(r: &BandwidthRow) -> String {
    let mut cell = String::new();
    let _ = write!(
        cell,
        "<span title=\"spread {} %, {} trials, {} per thread{}\">",
        spread_text(r.spread_pct),
        r.trials,
        escape(&Bytes(r.bytes_per_thread).to_string()),
        overlap_title(r.threads, r.overlap, r.attempts)
    );
    if !r.concurrent {
        cell.push_str(NOT_CONCURRENT_MARK);
    }
    if noisy(r.spread_pct) {
        cell.push_str("<span class=\"noisy\">~</span>");
    }
    cell.push_str(&gbs(r.gb_per_s));
    if let Some(bpc) = r.bytes_per_cycle.filter(|b| b.is_finite() && *b > 0.0) {
        if is_cache_level(&r.level) {
            let _ = write!(
                cell,
                "<span class=\"bpc\">{}</span>",
                if bpc < 10.0 {
                    format!("{bpc:.2}")
                } else {
                    format!("{bpc:.1}")
                }
            );
        }
    }
    cell.push_str("</span>");
    cell
}

/// The mark of a figure whose threads did not run together.
const NOT_CONCURRENT_MARK: &str =
    "<span class=\"noisy\" title=\"the threads did not run together\">!</span>";

/// `text` behind the `!` mark when its threads did not run together.
fn marked_unless(concurrent: bool, text: String) -> String {
    if concurrent {
        text
    } else {
        format!("{NOT_CONCURRENT_MARK}{text}")
    }
}

/// ", threads overlapped 97 % (7 attempts)" for a multi-thread figure's tooltip.
fn overlap_title(threads: usize, overlap: f64, attempts: usize) -> String {
    format!(
        ", {} {:.0} % ({attempts} attempts)",
        if threads == 1 {
            "on its CPU"
        } else {
            "threads overlapped"
        },
        overlap * 100.0
    )
}

/// The legend of the `!` mark, when any of `overlaps` is below the threshold.
fn not_concurrent_note(what: &str, overlaps: impl Iterator<Item = f64>) -> String {
    match cpu_time::lowest_not_concurrent(overlaps) {
        Some(lowest) => format!(
            "<p class=\"note\">{NOT_CONCURRENT_MARK} marks {what} whose threads did not run \
             together (or whose one thread was kept off its CPU): their overlap (CPU time of \
             the threads ÷ threads × the trial's length) \
             stayed below {:.0} % in every trial even when re-run, down to {:.0} %. Such a \
             figure is what the threads got over the whole interval, not what threads running \
             together reach.</p>\n",
            MIN_OVERLAP * 100.0,
            lowest * 100.0
        ),
        None => String::new(),
    }
}

fn bandwidth_table(out: &mut String, result: &BandwidthResult, threads: usize) {
    let rows: Vec<&BandwidthRow> = result
        .rows
        .iter()
        .filter(|r| r.threads == threads)
        .collect();
    let columns = level_columns(&rows);
    let cpus: Vec<usize> = result.cpus.iter().copied().take(threads).collect();
    let _ = writeln!(
        out,
        "<h3>{}{}</h3>",
        escape(&threads_label(threads)),
        if cpus.is_empty() {
            String::new()
        } else {
            format!(
                " <span class=\"muted\">(CPU{} {})</span>",
                if cpus.len() == 1 { "" } else { "s" },
                escape(&cpu_list(&cpus))
            )
        }
    );
    let mut headers: Vec<(String, bool)> = vec![
        ("Kernel".to_string(), false),
        ("R:W".to_string(), false),
        ("Stores".to_string(), false),
    ];
    headers.extend(columns.iter().map(|c| (c.header(), true)));
    let table_rows: Vec<Vec<String>> = distinct(rows.iter().map(|r| r.kernel.as_str()))
        .into_iter()
        .map(|kernel| {
            let mine: Vec<&&BandwidthRow> = rows.iter().filter(|r| r.kernel == kernel).collect();
            let first = mine[0];
            let stores = if first.write_parts == 0 {
                "–"
            } else if first.nontemporal {
                "streaming (nt)"
            } else {
                "normal"
            };
            let mut cells = vec![
                format!("<b>{}</b>", escape(kernel)),
                format!("{}:{}", first.read_parts, first.write_parts),
                stores.to_string(),
            ];
            for c in &columns {
                cells.push(
                    mine.iter()
                        .find(|r| c.holds(r))
                        .map_or_else(|| "–".to_string(), |r| bandwidth_cell(r)),
                );
            }
            cells
        })
        .collect();
    table_html(out, &headers, &table_rows);
}

fn bandwidth_section(result: &BandwidthResult, machine: &Machine) -> String {
    let mut out = String::new();
    out.push_str("<section id=\"bandwidth\">\n<h2>Bandwidth</h2>\n");
    let trials = result
        .rows
        .iter()
        .chain(&result.sweep)
        .map(|r| r.trials)
        .max()
        .unwrap_or(0);
    let portable_nt = result.isa == "portable"
        && result
            .rows
            .iter()
            .chain(&result.sweep)
            .any(|r| r.nontemporal);
    let _ = writeln!(
        out,
        "<p class=\"note\">GB/s are decimal (10<sup>9</sup> bytes per second) and count the \
         bytes each kernel reads plus the bytes it writes (no read-for-ownership traffic), the \
         same way for every kernel; with several threads they are the total of all threads, \
         each streaming over its own arrays. The kernels ran with <b>{}</b> instructions{}. \
         Each figure is the median of up to {trials} timed trials.{}</p>",
        escape(or_dash(&result.isa)),
        if result.cpus.is_empty() {
            String::new()
        } else {
            format!(
                ", threads placed on CPUs {} in that order",
                escape(&cpu_list(&result.cpus))
            )
        },
        if portable_nt {
            " The portable kernels have no streaming store: their <i>-nt</i> variants use \
             normal stores."
        } else {
            ""
        }
    );

    if !result.sweep.is_empty() {
        let _ = writeln!(
            out,
            "<figure class=\"chart\">\n{}</figure>",
            bandwidth_sweep_chart(result, machine)
        );
    }

    let thread_counts = {
        let mut t = distinct(result.rows.iter().map(|r| r.threads));
        t.sort_unstable();
        t
    };
    if let Some(level) = scaling_level(&result.rows) {
        if thread_counts.len() >= 2 {
            let _ = writeln!(
                out,
                "<figure class=\"chart\">\n{}</figure>",
                bandwidth_threads_chart(result, level)
            );
        } else if let Some(&threads) = thread_counts.first() {
            let _ = writeln!(
                out,
                "<p class=\"muted\">Measured with {} only, so there is no thread-scaling \
                 chart (<code>--threads 1,2,4,all</code> draws one).</p>",
                escape(&threads_label(threads))
            );
        }
    }

    out.push_str("<h3>Per level</h3>\n");
    if result.rows.is_empty() {
        out.push_str("<p class=\"muted\">No bandwidth was measured.</p>\n");
    } else {
        let bpc = result
            .rows
            .iter()
            .any(|r| is_cache_level(&r.level) && r.bytes_per_cycle.is_some_and(|b| b.is_finite()));
        let _ = writeln!(
            out,
            "<p class=\"note\">GB/s per kernel at a working set inside each level; the size \
             under each level is the working set of one thread, all of the kernel's arrays \
             together (kernels with three or four arrays round it down to whole 1 KiB \
             granules, hence the ≈).{} R:W is the number of arrays read and written per \
             element. <span class=\"noisy\">~</span> marks a spread above {NOISY_SPREAD_PCT:.0} \
             % (hover a figure for its spread and trials).</p>",
            if bpc {
                " The small grey figure in cache levels is bytes per core cycle per thread, at \
                 the estimated core clock."
            } else {
                ""
            }
        );
        out.push_str(&not_concurrent_note(
            "figures",
            result.rows.iter().chain(&result.sweep).map(|r| r.overlap),
        ));
        for &threads in &thread_counts {
            bandwidth_table(&mut out, result, threads);
        }
    }

    if !result.sweep.is_empty() {
        let _ = writeln!(
            out,
            "<details>\n<summary>All {} points of the working-set sweep</summary>",
            result.sweep.len()
        );
        let mut sweep: Vec<&BandwidthRow> = result.sweep.iter().collect();
        sweep.sort_by_key(|r| r.bytes_per_thread);
        let rows: Vec<Vec<String>> = sweep
            .iter()
            .map(|r| {
                vec![
                    escape(&r.kernel),
                    escape(&Bytes(r.bytes_per_thread).to_string()),
                    escape(&r.level),
                    marked_unless(r.concurrent, gbs(r.gb_per_s)),
                    r.bytes_per_cycle
                        .filter(|b| b.is_finite())
                        .map_or_else(|| "–".to_string(), |b| format!("{b:.2}")),
                    if noisy(r.spread_pct) {
                        format!("<span class=\"noisy\">{}</span>", spread_text(r.spread_pct))
                    } else {
                        spread_text(r.spread_pct)
                    },
                    r.trials.to_string(),
                ]
            })
            .collect();
        table(
            &mut out,
            &[
                "Kernel",
                "#Working set per thread",
                "Level",
                "#GB/s",
                "#Bytes/cycle per thread",
                "#Spread %",
                "#Trials",
            ],
            &rows,
        );
        out.push_str("</details>\n");
    }
    out.push_str("</section>\n");
    out
}

// ---------------------------------------------------------------------------------------
// Stride
// ---------------------------------------------------------------------------------------

/// ns per access of one kernel as a heatmap: working sets down, strides across (ascending,
/// then the random order), log colour scale.
pub fn stride_heatmap(result: &StrideResult, kernel: &str) -> String {
    let rows: Vec<&StrideRow> = result.rows.iter().filter(|r| r.kernel == kernel).collect();
    let mut sizes = distinct(rows.iter().map(|r| r.bytes));
    sizes.sort_unstable();
    let mut strides: Vec<Option<u64>> = distinct(rows.iter().filter_map(|r| r.stride_bytes))
        .into_iter()
        .map(Some)
        .collect();
    strides.sort_unstable();
    if rows.iter().any(|r| r.stride_bytes.is_none()) {
        strides.push(None);
    }
    let values: Vec<Vec<f64>> = sizes
        .iter()
        .map(|&bytes| {
            strides
                .iter()
                .map(|&stride| {
                    rows.iter()
                        .find(|r| r.bytes == bytes && r.stride_bytes == stride)
                        .map_or(f64::NAN, |r| r.ns_per_access)
                })
                .collect()
        })
        .collect();
    Heatmap::new(format!(
        "{kernel}: ns per access (independent accesses: a throughput, not a latency)"
    ))
    .x_label("Stride (bytes), then a random order of all elements")
    .y_label("Array size")
    .columns(
        strides
            .iter()
            .map(|s| s.map_or_else(|| "random".to_string(), |b| b.to_string()))
            .collect(),
    )
    .rows(sizes.iter().map(|&b| Bytes(b).to_string()).collect())
    .values(values)
    .value_label("ns (log colour scale)")
    .log_color()
    .decimals(2)
    .render()
}

fn stride_section(result: &StrideResult) -> String {
    let mut out = String::new();
    out.push_str("<section id=\"stride\">\n<h2>Access patterns: stride and random order</h2>\n");
    out.push_str(
        "<p class=\"note\">One thread walks an array of 8-byte elements with a fixed stride \
         (every pass still visits every element once), or in a random order of all elements. \
         <b>read</b> sums the elements; <b>saxpy</b> computes y = a·x + y (24 useful bytes per \
         element). Each cell is the median time per element visited. The accesses do not \
         depend on each other and overlap in the memory system, so these are throughput \
         figures (the inverse of accesses per ns), not load-to-use latencies: the latency \
         ladder measures those. Strides of a cache line or more use 8 bytes of every line \
         fetched; a stride of a page adds a TLB miss per access once the array outgrows the \
         TLB's reach.</p>\n",
    );
    let kernels = distinct(result.rows.iter().map(|r| r.kernel.as_str()));
    if kernels.is_empty() {
        out.push_str("<p class=\"muted\">No access pattern was measured.</p>\n");
    }
    for kernel in kernels {
        let _ = writeln!(
            out,
            "<figure class=\"chart\">\n{}</figure>",
            stride_heatmap(result, kernel)
        );
    }

    let _ = writeln!(
        out,
        "<details>\n<summary>All {} rows</summary>",
        result.rows.len()
    );
    let counted = result.rows.iter().any(|r| r.counters.is_some());
    let rows: Vec<Vec<String>> = result
        .rows
        .iter()
        .map(|r| {
            let mut row = vec![
                escape(&Bytes(r.bytes).to_string()),
                r.stride_bytes
                    .map_or_else(|| "–".to_string(), |s| s.to_string()),
                escape(&r.pattern),
                escape(&r.kernel),
                gbs(r.gb_per_s),
                if r.ns_per_access.is_finite() {
                    format!("{:.3}", r.ns_per_access)
                } else {
                    "–".to_string()
                },
                if noisy(r.spread_pct) {
                    format!("<span class=\"noisy\">{}</span>", spread_text(r.spread_pct))
                } else {
                    spread_text(r.spread_pct)
                },
            ];
            if counted {
                row.extend(miss_cells(r.counters.as_ref()));
            }
            row
        })
        .collect();
    let headers = vec![
        "#Array size",
        "#Stride (bytes)",
        "Pattern",
        "Kernel",
        "#GB/s (useful)",
        "#ns per access",
        "#Spread %",
    ];
    table_with_misses(
        &mut out,
        headers,
        &rows,
        counted.then(|| result.rows.iter().filter_map(|r| r.counters.as_ref())),
    );
    out.push_str("</details>\n</section>\n");
    out
}

// ---------------------------------------------------------------------------------------
// Cache-miss impact
// ---------------------------------------------------------------------------------------

/// Measured ns per access beside the AMAT estimate, one pair of bars per row (log scale:
/// L1 and DRAM differ a hundredfold).
pub fn miss_impact_chart(result: &MissImpactResult) -> String {
    let short = |p: Pattern| match p {
        Pattern::Sequential => "seq",
        Pattern::Random => "chase",
        Pattern::RandomIndependent => "indep",
    };
    let with_amat = result.rows.iter().any(|r| r.amat_ns.is_some());
    let title = if with_amat {
        "Time per access: measured and AMAT"
    } else {
        "Time per access, measured (no AMAT: the miss rates were not counted)"
    };
    let mut chart = BarChart::new(title)
        .size(1000.0, 340.0)
        .y_axis(Axis::log10("ns per access"))
        .categories(
            result
                .rows
                .iter()
                .map(|r| format!("{} {}", r.level, short(r.pattern)))
                .collect(),
        )
        .series(
            "measured",
            result.rows.iter().map(|r| r.ns_per_access).collect(),
            Some(CURVE_COLOR.to_string()),
        );
    if with_amat {
        chart = chart.series(
            "AMAT from the counted miss rates",
            result
                .rows
                .iter()
                .map(|r| r.amat_ns.unwrap_or(f64::NAN))
                .collect(),
            Some(level_color("DRAM").to_string()),
        );
    }
    chart.value_labels(Some(2)).render()
}

fn miss_impact_section(result: &MissImpactResult) -> String {
    let mut out = String::new();
    out.push_str("<section id=\"miss-impact\">\n<h2>Cache-miss impact</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">One footprint inside each cache level and one in DRAM, each walked \
         one {}-byte line per access: <b>sequential</b> (every line in address order), \
         <b>random</b> (a dependent {} pointer chase: one miss at a time) and \
         <b>random-independent</b> (the chase's lines as independent loads). Each row has the \
         median time per access over its trials, the run time of one counted pass through \
         every line (repeated to last a few trials), the misses <i>per access</i> counted at \
         each level over that pass (<b>n/s</b>: not supported here, see below; <b>*</b>: \
         multiplexed), the page faults of the pass, and <b>AMAT</b> = {} built from the \
         latency ladder's levels ({}) and the row's own miss rates. The chase takes about \
         AMAT per access, as AMAT assumes misses one at a time; sequential and independent \
         loads take far less, since prefetchers and memory-level parallelism overlap their \
         misses.</p>",
        result.line_bytes,
        escape(&result.random_order),
        escape(&result.amat_formula()),
        escape(
            &result
                .level_latencies
                .iter()
                .map(|l| format!("{} {} ns", l.name, ns(l.ns)))
                .collect::<Vec<_>>()
                .join(", ")
        )
    );
    if result.rows.is_empty() {
        out.push_str("<p class=\"muted\">No footprint was measured.</p>\n");
    } else {
        out.push_str(&figure_html(miss_impact_chart(result)));
    }
    let rows: Vec<Vec<String>> = result
        .rows
        .iter()
        .map(|r| {
            let mut row = vec![
                format!(
                    "<span class=\"swatch\" style=\"background:{}\"></span>{}",
                    level_color(&r.level),
                    escape(&r.level)
                ),
                escape(&Bytes(r.footprint_bytes).to_string()),
                escape(r.pattern.label()),
                rounded(r.ns_per_access, 100.0),
                noisy_spread(r.spread_pct),
                format!("{:.2}", r.run_time_ns / 1e6),
            ];
            row.extend(
                crate::counters::MissLevel::ALL
                    .iter()
                    .map(|&l| escape(&r.misses.cell(l))),
            );
            row.push(r.page_faults.map_or("n/s".into(), |f| f.to_string()));
            row.push(r.amat_ns.map_or("n/c".into(), |a| rounded(a, 100.0)));
            row.push(
                r.measured_over_amat
                    .map_or("–".into(), |x| format!("{x:.2}")),
            );
            row
        })
        .collect();
    table(
        &mut out,
        &[
            "Level",
            "#Footprint",
            "Pattern",
            "#ns per access",
            "#Spread %",
            "#Run time (ms)",
            "#L1 miss",
            "#L2 miss",
            "#LLC miss",
            "#dTLB miss",
            "#Page faults",
            "#AMAT (ns)",
            "#Measured / AMAT",
        ],
        &rows,
    );
    let notes = result.notes();
    if !notes.is_empty() {
        out.push_str("<ul class=\"muted\">\n");
        for note in notes {
            let _ = writeln!(out, "<li>{}</li>", escape(&note));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
    out
}

// ---------------------------------------------------------------------------------------
// Shared by the loaded-latency, MLP and ROB sections
// ---------------------------------------------------------------------------------------

/// Colour of the rings marking points found in the data (knees, saturation points).
const FOUND_POINT_COLOR: &str = "#111827";
/// Grey of the reference lines drawn as series (idle latency, ideal parallelism).
const REFERENCE_LINE_COLOR: &str = "#6b7280";

/// Core cycles per ns for a secondary axis: the measured core clock, else the ratio of a
/// figure the experiment gave in both units; None when neither is usable.
fn cycles_per_ns(machine: &Machine, ns: f64, cycles: f64) -> Option<f64> {
    machine
        .core_hz_estimate
        .filter(|hz| hz.is_finite() && *hz > 0.0)
        .map(|hz| hz / 1e9)
        .or_else(|| {
            let f = cycles / ns;
            (f.is_finite() && f > 0.0).then_some(f)
        })
}

/// The largest finite value, if any.
fn finite_max(values: impl Iterator<Item = f64>) -> Option<f64> {
    values.filter(|v| v.is_finite()).reduce(f64::max)
}

/// A count with one decimal (parallelism, lines in flight), or a dash.
fn one_decimal(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}")
    } else {
        "–".to_string()
    }
}

fn noisy_spread(spread_pct: f64) -> String {
    if noisy(spread_pct) {
        format!("<span class=\"noisy\">{}</span>", spread_text(spread_pct))
    } else {
        spread_text(spread_pct)
    }
}

fn figure_html(svg: String) -> String {
    format!("<figure class=\"chart\">\n{svg}</figure>\n")
}

// ---------------------------------------------------------------------------------------
// Latency under load
// ---------------------------------------------------------------------------------------

/// "1 injector", "7 injectors".
fn injectors_label(threads: usize) -> String {
    if threads == 1 {
        "1 injector".to_string()
    } else {
        format!("{threads} injectors")
    }
}

/// The mix × injector-count curves in order of first appearance.
fn loaded_curves(result: &LoadedResult) -> Vec<(&str, usize)> {
    distinct(result.rows.iter().map(|r| (r.mix.as_str(), r.threads)))
}

/// The knee of one curve: from its summary, or the top-level knee when there is one curve.
fn curve_knee<'a>(result: &'a LoadedResult, mix: &str, threads: usize) -> Option<&'a Knee> {
    match result
        .curves
        .iter()
        .find(|c| c.mix == mix && c.threads == threads)
    {
        Some(c) => c.knee.as_ref(),
        None if loaded_curves(result).len() == 1 => result.knee.as_ref(),
        None => None,
    }
}

/// Latency against total bandwidth, one line per mix × injector count from the idle end
/// to full load, with the idle latency as a dashed reference, every knee ringed and the
/// reference curve's knee labelled.
pub fn loaded_chart(result: &LoadedResult, machine: &Machine) -> String {
    let mut chart = LineChart::new("Latency vs bandwidth under load")
        .size(1000.0, 540.0)
        .x_axis(
            Axis::linear("Total bandwidth (decimal GB/s, latency thread included)").include_zero(),
        )
        .y_axis(Axis::linear("Load-to-use latency (ns)").include_zero())
        .unstable_label(format!("latency spread > {NOISY_SPREAD_PCT:.0}%"));
    if let Some(f) = cycles_per_ns(machine, result.idle_ns, result.idle_cycles) {
        chart = chart.secondary_y("Latency (core cycles)", f);
    }
    let mut knees = Vec::new();
    for (i, &(mix, threads)) in loaded_curves(result).iter().enumerate() {
        let mut rows: Vec<&LoadedRow> = result
            .rows
            .iter()
            .filter(|r| r.mix == mix && r.threads == threads)
            .collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.delay_cycles));
        chart = chart.series(
            Series::new(
                format!("{mix}, {}", injectors_label(threads)),
                rows.iter().map(|r| (r.gb_per_s, r.latency_ns)).collect(),
            )
            .color(KERNEL_PALETTE[i % KERNEL_PALETTE.len()])
            .unstable(rows.iter().map(|r| noisy(r.spread_pct)).collect()),
        );
        if let Some(k) = curve_knee(result, mix, threads) {
            knees.push((k.gb_per_s, k.latency_ns));
        }
    }
    if result.idle_ns.is_finite() && result.idle_ns > 0.0 {
        let right = finite_max(result.rows.iter().map(|r| r.gb_per_s))
            .or(Some(result.peak_gb_per_s).filter(|v| v.is_finite()))
            .unwrap_or(1.0)
            .max(1.0);
        chart = chart.series(
            Series::new(
                format!("idle latency {}", ns_with_unit(result.idle_ns)),
                vec![(0.0, result.idle_ns), (right, result.idle_ns)],
            )
            .color(REFERENCE_LINE_COLOR)
            .dashed()
            .without_markers(),
        );
    }
    if !knees.is_empty() {
        chart = chart.series(
            Series::new("knee: last point at the idle latency", knees)
                .color(FOUND_POINT_COLOR)
                .highlight(),
        );
    }
    if let Some(k) = &result.knee {
        chart = chart.marker(VMarker::found(
            k.gb_per_s,
            format!(
                "knee {} GB/s ({}% of peak)",
                gbs(k.gb_per_s),
                rounded(k.pct_of_peak, 1.0)
            ),
            FOUND_POINT_COLOR,
        ));
    }
    chart.render()
}

fn loaded_section(result: &LoadedResult, machine: &Machine) -> String {
    let mut out = String::new();
    out.push_str("<section id=\"loaded\">\n<h2>Latency under load</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">One thread on CPU {} chases pointers through {} in page-local order \
         ({} pages per window, so TLB misses stay out of the figure) while injector threads on \
         CPUs {} each stream a traffic mix over their own {}, waiting a delay of dependent \
         adds between lines. Lowering the delay from the idle end to zero raises the \
         bandwidth; each point is the latency the chase sees at that total bandwidth (as \
         Intel MLC's loaded latency). The <b>knee</b> is the last point still at the idle \
         latency: beyond it, requests queue in the memory system. <b>Concurrency</b> is \
         Little's law, lines in flight = bandwidth × latency / {} B.</p>",
        result.latency_cpu,
        escape(&Bytes(result.chase_bytes).to_string()),
        result.chase_window_pages,
        escape(&cpu_list(&result.injector_cpus)),
        escape(&Bytes(result.injector_bytes).to_string()),
        result.line_bytes,
    );
    let knee = match &result.knee {
        Some(k) => format!(
            "<b>knee</b> at {} GB/s ({}% of peak), {} ns, delay {} cycles",
            gbs(k.gb_per_s),
            rounded(k.pct_of_peak, 1.0),
            ns(k.latency_ns),
            k.delay
        ),
        None => "<b>no knee</b>: latency stayed at its idle level".to_string(),
    };
    let _ = writeln!(
        out,
        "<p class=\"dram\"><b>Idle latency</b> {} ns ({} cycles) · <b>peak</b> {} GB/s · {}{}</p>",
        ns(result.idle_ns),
        cycles(result.idle_cycles),
        gbs(result.peak_gb_per_s),
        knee,
        if result.reference.is_empty() {
            String::new()
        } else {
            format!(" (curve {})", escape(&result.reference))
        }
    );
    if result.rows.is_empty() {
        out.push_str("<p class=\"muted\">No loaded latency was measured.</p>\n</section>\n");
        return out;
    }
    out.push_str(&figure_html(loaded_chart(result, machine)));

    if !result.curves.is_empty() {
        out.push_str("<h3>Curves</h3>\n");
        let dash = || "–".to_string();
        let rows: Vec<Vec<String>> = result
            .curves
            .iter()
            .map(|c| {
                let k = c.knee.as_ref();
                vec![
                    escape(&c.mix),
                    c.threads.to_string(),
                    gbs(c.peak_gb_per_s),
                    ns(c.loaded_ns),
                    k.map_or_else(dash, |k| k.delay.to_string()),
                    k.map_or_else(dash, |k| gbs(k.gb_per_s)),
                    k.map_or_else(dash, |k| ns(k.latency_ns)),
                    k.map_or_else(dash, |k| rounded(k.pct_of_peak, 1.0)),
                ]
            })
            .collect();
        table(
            &mut out,
            &[
                "Mix",
                "#Injectors",
                "#Peak GB/s",
                "#Latency at full load (ns)",
                "#Knee delay (cycles)",
                "#Knee GB/s",
                "#Knee latency (ns)",
                "#Knee % of peak",
            ],
            &rows,
        );
    }

    let _ = writeln!(
        out,
        "<details>\n<summary>All {} points</summary>",
        result.rows.len()
    );
    let rows: Vec<Vec<String>> = result
        .rows
        .iter()
        .map(|r| {
            let is_knee =
                curve_knee(result, &r.mix, r.threads).is_some_and(|k| k.delay == r.delay_cycles);
            vec![
                escape(&r.mix),
                r.threads.to_string(),
                r.delay_cycles.to_string(),
                marked_unless(r.injectors_concurrent, gbs(r.gb_per_s)),
                gbs(r.injector_gb_per_s),
                rounded(r.injector_overlap * 100.0, 1.0),
                ns(r.latency_ns),
                cycles(r.latency_cycles),
                noisy_spread(r.spread_pct),
                one_decimal(r.concurrency),
                if is_knee {
                    "<b>knee</b>".to_string()
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "Mix",
            "#Injectors",
            "#Delay (cycles)",
            "#GB/s",
            "#Injectors' GB/s",
            "#Injectors ran (%)",
            "#Latency (ns)",
            "#Cycles",
            "#Spread %",
            "#Concurrency (lines)",
            "",
        ],
        &rows,
    );
    out.push_str("</details>\n");
    out.push_str(&not_concurrent_note(
        "points",
        result.rows.iter().map(|r| r.injector_overlap),
    ));
    out.push_str("</section>\n");
    out
}

// ---------------------------------------------------------------------------------------
// Memory-level parallelism
// ---------------------------------------------------------------------------------------

/// The level × working set groups of the MLP rows, in order of first appearance.
fn mlp_levels(result: &MlpResult) -> Vec<(String, u64)> {
    distinct(result.rows.iter().map(|r| {
        (
            r.level.clone().unwrap_or_else(|| "custom".to_string()),
            r.bytes,
        )
    }))
}

/// Parallelism against the number of chains, one line per level, with the ideal y = x
/// (every miss overlapped) and each level's saturation point ringed.
pub fn mlp_chart(result: &MlpResult) -> String {
    let max_chains = result
        .rows
        .iter()
        .map(|r| r.chains)
        .max()
        .unwrap_or(1)
        .max(1);
    let mut chart = LineChart::new("Parallelism vs independent chains")
        .size(1000.0, 500.0)
        .x_axis(
            Axis::linear("Independent chains N")
                .format(TickFormat::Integer)
                .range(0.0, f64::from(max_chains)),
        )
        .y_axis(Axis::linear("Parallelism: N × t(1) / t(N)").include_zero())
        .unstable_label(format!("spread > {NOISY_SPREAD_PCT:.0}%"));
    let mut saturation = Vec::new();
    for (level, bytes) in mlp_levels(result) {
        let mut rows: Vec<&MlpRow> = result
            .rows
            .iter()
            .filter(|r| r.bytes == bytes && r.level.as_deref().unwrap_or("custom") == level)
            .collect();
        rows.sort_by_key(|r| r.chains);
        chart = chart.series(
            Series::new(
                format!("{level} ({})", Bytes(bytes)),
                rows.iter()
                    .map(|r| (f64::from(r.chains), r.parallelism))
                    .collect(),
            )
            .color(level_color(&level))
            .unstable(rows.iter().map(|r| noisy(r.spread_pct)).collect()),
        );
        let chains = result
            .saturation
            .iter()
            .find(|s| s.level == level)
            .map(|s| (s.chains, s.parallelism))
            .or_else(|| result.mlp.get(&level).map(|&n| (n, f64::NAN)));
        if let Some((n, plateau)) = chains {
            let y = rows
                .iter()
                .find(|r| r.chains == n)
                .map_or(plateau, |r| r.parallelism);
            saturation.push((f64::from(n), y));
        }
    }
    chart = chart.series(
        Series::new(
            "ideal: every miss overlapped (y = N)",
            vec![(1.0, 1.0), (f64::from(max_chains), f64::from(max_chains))],
        )
        .color(REFERENCE_LINE_COLOR)
        .dashed()
        .without_markers(),
    );
    if !saturation.is_empty() {
        chart = chart.series(
            Series::new("saturation point", saturation)
                .color(FOUND_POINT_COLOR)
                .highlight(),
        );
    }
    chart.render()
}

/// Parallelism by working set (rows) × chains (columns).
pub fn mlp_grid_heatmap(result: &MlpResult) -> String {
    let mut sizes = distinct(result.grid.iter().map(|r| r.bytes));
    sizes.sort_unstable();
    let mut chains = distinct(result.grid.iter().map(|r| r.chains));
    chains.sort_unstable();
    let values = sizes
        .iter()
        .map(|&bytes| {
            chains
                .iter()
                .map(|&n| {
                    result
                        .grid
                        .iter()
                        .find(|r| r.bytes == bytes && r.chains == n)
                        .map_or(f64::NAN, |r| r.parallelism)
                })
                .collect()
        })
        .collect();
    Heatmap::new("Parallelism by working set and chains")
        .x_label("Independent chains N")
        .y_label("Working set of all chains")
        .columns(chains.iter().map(|n| n.to_string()).collect())
        .rows(sizes.iter().map(|&b| Bytes(b).to_string()).collect())
        .values(values)
        .value_label("parallelism")
        .decimals(1)
        .render()
}

/// T(n) of dependent misses, measured points and the fitted line n·M + C.
pub fn sequential_fit_chart(fit: &SequentialFit) -> String {
    let mut points: Vec<(f64, f64)> = fit
        .points
        .iter()
        .map(|p| (f64::from(p.misses), p.ns))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let max_n = points.iter().map(|p| p.0).fold(1.0, f64::max);
    let mut chart = LineChart::new(format!(
        "Dependent misses: T(n) = n·M + C, M = {}, C = {}",
        ns_with_unit(fit.m_ns),
        ns_with_unit(fit.c_ns)
    ))
    .size(1000.0, 420.0)
    .x_axis(
        Axis::linear("Dependent misses n")
            .format(TickFormat::Integer)
            .include_zero(),
    )
    .y_axis(Axis::linear("Time of the run (ns)").include_zero());
    // The fit first, so that its dashed line stays visible over the measured one.
    if fit.m_ns.is_finite() && fit.c_ns.is_finite() {
        chart = chart.series(
            Series::new(
                format!("fit, r² = {}", r2_text(fit.r2)),
                vec![(0.0, fit.c_ns), (max_n, max_n * fit.m_ns + fit.c_ns)],
            )
            .color(KERNEL_PALETTE[1])
            .dashed()
            .without_markers(),
        );
    }
    chart
        .series(Series::new("measured (median)", points).color(CURVE_COLOR))
        .render()
}

fn r2_text(r2: f64) -> String {
    if r2.is_finite() {
        format!("{r2:.4}")
    } else {
        "–".to_string()
    }
}

fn mlp_section(result: &MlpResult) -> String {
    let mut out = String::new();
    out.push_str("<section id=\"mlp\">\n<h2>Memory-level parallelism</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">One thread walks N independent pointer chains ({}), one load of \
         each per round, so up to N misses can be outstanding at once. <b>Parallelism</b> = \
         N × t(1) / t(N) counts the misses that effectively overlap: it follows the ideal \
         y = N while the core can track every miss, and flattens where a structure (miss \
         buffers, request queues) is full. The ringed point is where the curve stops \
         growing: the core's memory-level parallelism at that level.</p>",
        escape(or_dash(&result.order))
    );
    if result.rows.is_empty() {
        out.push_str("<p class=\"muted\">No chain count was measured.</p>\n");
    } else {
        out.push_str(&figure_html(mlp_chart(result)));
    }

    let mut saturation: Vec<Vec<String>> = result
        .saturation
        .iter()
        .map(|s| {
            vec![
                format!(
                    "<span class=\"swatch\" style=\"background:{}\"></span>{}",
                    level_color(&s.level),
                    escape(&s.level)
                ),
                escape(&Bytes(s.bytes).to_string()),
                s.chains.to_string(),
                one_decimal(s.parallelism),
                ns(s.ns_per_load),
            ]
        })
        .collect();
    for (level, n) in &result.mlp {
        if !result.saturation.iter().any(|s| &s.level == level) {
            saturation.push(vec![
                escape(level),
                "–".to_string(),
                n.to_string(),
                "–".to_string(),
                "–".to_string(),
            ]);
        }
    }
    if !saturation.is_empty() {
        out.push_str("<h3>Saturation per level</h3>\n");
        table(
            &mut out,
            &[
                "Level",
                "#Working set",
                "#Saturates at N",
                "#Parallelism on the plateau",
                "#ns per load on the plateau",
            ],
            &saturation,
        );
    }

    if let Some(law) = &result.littles_law {
        let _ = writeln!(
            out,
            "<p class=\"dram\"><b>Little's law at DRAM</b> (lines in flight = bandwidth × \
             latency / 64 B, latency {} ns): independent loads from random lines at {} GB/s \
             imply <b>{}</b> lines in flight, and the chains reach a parallelism of <b>{}</b> \
             ({} GB/s): both are demand misses, so they should agree. Streaming reads at {} \
             GB/s imply {}.{}</p>",
            ns(law.latency_ns),
            gbs(law.random_read_gb_per_s),
            one_decimal(law.random_concurrency),
            one_decimal(law.chase_parallelism),
            gbs(law.chase_gb_per_s),
            gbs(law.stream_read_gb_per_s),
            one_decimal(law.stream_concurrency),
            if law.stream_concurrency > 1.2 * law.chase_parallelism {
                " Streaming keeps more lines in flight than the chains: hardware prefetchers \
                 issue requests of their own, which dependent chains cannot trigger."
            } else {
                ""
            }
        );
    }

    if !result.grid.is_empty() {
        out.push_str("<h3>Working set × chains</h3>\n");
        out.push_str(
            "<p class=\"note\">Parallelism for every working set and chain count. While the \
             chains fit in L1 there are no misses: the overlap is the load pipeline's (several \
             loads start each cycle and each takes a few cycles). From L2 on it is misses in \
             flight, bounded by the miss buffers of the level above; the DRAM rows are the \
             memory-level parallelism.</p>\n",
        );
        out.push_str(&figure_html(mlp_grid_heatmap(result)));
    }

    if let Some(fit) = &result.sequential_fit {
        out.push_str("<h3>Dependent misses one run at a time</h3>\n");
        let _ = writeln!(
            out,
            "<p class=\"note\">Runs of n dependent misses over {} timed one at a time; the \
             slope M is the cost of one more miss ({} cycles) and the intercept C the fixed \
             cost of timing a run (r² = {}).</p>",
            escape(&Bytes(fit.bytes).to_string()),
            cycles(fit.m_cycles),
            r2_text(fit.r2)
        );
        out.push_str(&figure_html(sequential_fit_chart(fit)));
    }

    let _ = writeln!(
        out,
        "<details>\n<summary>All {} rows</summary>",
        result.rows.len()
    );
    let rows: Vec<Vec<String>> = result
        .rows
        .iter()
        .map(|r| {
            vec![
                escape(r.level.as_deref().unwrap_or("–")),
                escape(&Bytes(r.bytes).to_string()),
                r.chains.to_string(),
                ns(r.ns_per_round),
                ns(r.ns_per_load),
                rounded(r.parallelism, 100.0),
                noisy_spread(r.spread_pct),
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "Level",
            "#Working set",
            "#Chains",
            "#ns per round",
            "#ns per load",
            "#Parallelism",
            "#Spread %",
        ],
        &rows,
    );
    out.push_str("</details>\n</section>\n");
    out
}

// ---------------------------------------------------------------------------------------
// Out-of-order window
// ---------------------------------------------------------------------------------------

/// Fillers in order of first appearance (rows, then structures): fixes their colours.
fn rob_fillers(result: &RobResult) -> Vec<&str> {
    distinct(
        result
            .rows
            .iter()
            .map(|r| r.filler.as_str())
            .chain(result.structures.iter().map(|s| s.filler.as_str())),
    )
}

fn filler_color(fillers: &[&str], filler: &str) -> &'static str {
    let i = fillers.iter().position(|f| *f == filler).unwrap_or(0);
    KERNEL_PALETTE[i % KERNEL_PALETTE.len()]
}

/// Median of the finite positive values, if any.
fn median_positive(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite() && *v > 0.0);
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values[values.len() / 2])
}

/// ns per iteration against K, one line per filler, each cliff marked with its structure.
pub fn rob_chart(result: &RobResult, machine: &Machine) -> String {
    let fillers = rob_fillers(result);
    let max_k = result.rows.iter().map(|r| r.k).max().unwrap_or(0).max(1);
    let mut chart = LineChart::new("Time per iteration vs filler instructions between two misses")
        .size(1000.0, 520.0)
        .x_axis(
            Axis::linear("Filler instructions K between the two loads")
                .format(TickFormat::Integer)
                .range(0.0, f64::from(max_k)),
        )
        .y_axis(Axis::linear("Time per iteration (ns)").include_zero())
        .unstable_label(format!("spread > {NOISY_SPREAD_PCT:.0}%"));
    let ratio = median_positive(
        result
            .rows
            .iter()
            .map(|r| r.cycles_per_iter / r.ns_per_iter)
            .collect(),
    );
    if let Some(f) = cycles_per_ns(machine, 1.0, ratio.unwrap_or(f64::NAN)) {
        chart = chart.secondary_y("Core cycles per iteration", f);
    }
    for &filler in &fillers {
        let mut rows: Vec<&RobRow> = result.rows.iter().filter(|r| r.filler == filler).collect();
        if rows.is_empty() {
            continue;
        }
        rows.sort_by_key(|r| r.k);
        chart = chart.series(
            Series::new(
                filler,
                rows.iter()
                    .map(|r| (f64::from(r.k), r.ns_per_iter))
                    .collect(),
            )
            .color(filler_color(&fillers, filler))
            .unstable(rows.iter().map(|r| noisy(r.spread_pct)).collect()),
        );
    }
    for s in &result.structures {
        if let Some(entries) = s.entries {
            chart = chart.marker(VMarker::found(
                f64::from(entries),
                format!("{}: {} ≈ {entries}", s.filler, s.structure),
                filler_color(&fillers, &s.filler),
            ));
        }
    }
    chart.render()
}

/// The serialised blocks: time per block against K, one line per miss count, with the
/// window read from the grid marked.
pub fn rob_serialized_chart(result: &RobResult) -> String {
    let max_k = result
        .serialized
        .iter()
        .map(|r| r.k)
        .max()
        .unwrap_or(0)
        .max(1);
    let mut chart = LineChart::new("Serialised blocks: N−1 misses, K nops, one miss")
        .size(1000.0, 460.0)
        .x_axis(
            Axis::linear("Nops K before the last miss")
                .format(TickFormat::Integer)
                .range(0.0, f64::from(max_k)),
        )
        .y_axis(Axis::linear("Time per block (ns)").include_zero());
    let mut misses = distinct(result.serialized.iter().map(|r| r.misses));
    misses.sort_unstable();
    for (i, &n) in misses.iter().enumerate() {
        let mut rows: Vec<&SerializedRow> =
            result.serialized.iter().filter(|r| r.misses == n).collect();
        rows.sort_by_key(|r| r.k);
        chart = chart.series(
            Series::new(
                if n == 1 {
                    "1 miss".to_string()
                } else {
                    format!("{n} misses")
                },
                rows.iter().map(|r| (f64::from(r.k), r.ns)).collect(),
            )
            .color(KERNEL_PALETTE[i % KERNEL_PALETTE.len()]),
        );
    }
    if let Some(w) = result.serialized_window {
        chart = chart.marker(VMarker::found(
            f64::from(w),
            format!("window ≈ {w}"),
            FOUND_POINT_COLOR,
        ));
    }
    chart.render()
}

fn rob_section(result: &RobResult, machine: &Machine) -> String {
    let mut out = String::new();
    out.push_str("<section id=\"rob\">\n<h2>Out-of-order window</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">Each iteration issues two independent cache-missing loads (chases \
         over {}) separated by K filler instructions. While the out-of-order window holds \
         both loads their misses overlap and an iteration costs about one miss latency; once \
         K exceeds the entries of the structure the filler uses up first, the second load \
         cannot issue before the first completes and the time doubles. The K of that cliff \
         estimates the structure's size (Henry Wong's method): nops fill the reorder buffer, \
         adds the integer register file, loads and stores their queues.</p>",
        escape(&Bytes(result.chase_bytes).to_string())
    );
    if result.rows.is_empty() {
        out.push_str("<p class=\"muted\">No filler curve was measured.</p>\n");
    } else {
        out.push_str(&figure_html(rob_chart(result, machine)));
    }

    if !result.structures.is_empty() {
        out.push_str("<h3>Structures found</h3>\n");
        let fillers = rob_fillers(result);
        let rows: Vec<Vec<String>> = result
            .structures
            .iter()
            .map(|s| {
                let ratio = s.high_ns / s.low_ns;
                vec![
                    format!(
                        "<span class=\"swatch\" style=\"background:{}\"></span>{}",
                        filler_color(&fillers, &s.filler),
                        escape(&s.filler)
                    ),
                    escape(&s.structure),
                    s.entries.map_or_else(
                        || "<span class=\"muted\">no cliff</span>".to_string(),
                        |e| format!("<b>{e}</b>"),
                    ),
                    match (s.window_entries, s.architectural) {
                        (Some(w), a) if a > 0 => format!("{w} + {a} architectural"),
                        (Some(w), _) => w.to_string(),
                        (None, _) => "–".to_string(),
                    },
                    ns(s.low_ns),
                    ns(s.high_ns),
                    if ratio.is_finite() {
                        format!("{ratio:.2}")
                    } else {
                        "–".to_string()
                    },
                ]
            })
            .collect();
        table(
            &mut out,
            &[
                "Filler",
                "Fills first",
                "#Entries",
                "#Window at the cliff",
                "#Below the cliff (ns)",
                "#Above the cliff (ns)",
                "#Ratio",
            ],
            &rows,
        );
    }

    if !result.serialized.is_empty() || result.serialized_window.is_some() {
        out.push_str("<h3>Serialised blocks</h3>\n");
        let _ = writeln!(
            out,
            "<p class=\"note\">N−1 misses, K nops and one more miss, timed as one block: the \
             last miss overlaps the others while K fits in the window. Window read from the \
             grid: <b>{}</b>; misses in flight at K = 0: <b>{}</b>.</p>",
            result.serialized_window.map_or_else(
                || "not found".to_string(),
                |w| format!("≈ {w} instructions")
            ),
            result
                .serialized_mlp
                .map_or_else(|| "–".to_string(), one_decimal),
        );
        if !result.serialized.is_empty() {
            out.push_str(&figure_html(rob_serialized_chart(result)));
        }
    }

    let _ = writeln!(
        out,
        "<details>\n<summary>All {} rows</summary>",
        result.rows.len()
    );
    let rows: Vec<Vec<String>> = result
        .rows
        .iter()
        .map(|r| {
            vec![
                escape(&r.filler),
                r.k.to_string(),
                ns(r.ns_per_iter),
                cycles(r.cycles_per_iter),
                noisy_spread(r.spread_pct),
            ]
        })
        .collect();
    table(
        &mut out,
        &[
            "Filler",
            "#K",
            "#ns per iteration",
            "#Cycles per iteration",
            "#Spread %",
        ],
        &rows,
    );
    if !result.serialized.is_empty() {
        let rows: Vec<Vec<String>> = result
            .serialized
            .iter()
            .map(|r| {
                vec![
                    r.misses.to_string(),
                    r.k.to_string(),
                    ns(r.ns),
                    cycles(r.cycles),
                ]
            })
            .collect();
        table(
            &mut out,
            &["#Misses", "#K", "#ns per block", "#Cycles per block"],
            &rows,
        );
    }
    out.push_str("</details>\n</section>\n");
    out
}

// ---------------------------------------------------------------------------------------
// TLB
// ---------------------------------------------------------------------------------------

/// Colour of a page size, shared by the curves, the knee markers and the tables' swatches.
fn page_color(page_bytes: u64) -> &'static str {
    match page_bytes {
        4096 => KERNEL_PALETTE[0],
        0x20_0000 => KERNEL_PALETTE[1],
        0x4000_0000 => KERNEL_PALETTE[2],
        _ => KERNEL_PALETTE[5],
    }
}

/// A page size with its colour swatch.
fn page_cell(page_bytes: u64) -> String {
    format!(
        "<span class=\"swatch\" style=\"background:{}\"></span>{}",
        page_color(page_bytes),
        escape(&Bytes(page_bytes).to_string())
    )
}

/// Page sizes of the curve, smallest first.
/// A count, or a dash.
fn opt_count<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "–".to_string(), |v| v.to_string())
}

/// Page counts as whole numbers: "16384" says more here than "16.4k".
fn page_count_label(v: f64) -> String {
    if v.is_finite() && v >= 1.0 {
        format!("{}", v.round() as u64)
    } else {
        format_number(v, 2)
    }
}

/// Latency against pages touched (one line per page) on a log2 axis, one solid line per
/// page size and its TLB part (ns − dense ns) dashed in the same colour; each level's
/// entries found from the knees as solid markers, CPUID's entries as dashed references.
pub fn tlb_chart(result: &TlbResult, machine: &Machine) -> String {
    let mut chart = LineChart::new("Latency vs pages touched, one line per page")
        .size(1000.0, 540.0)
        .x_axis(
            Axis::log2("Pages touched, one cache line in each (log scale)")
                .format(TickFormat::Custom(page_count_label)),
        )
        // Log scale: an L2 TLB hit adds ~2 ns to a 1 ns load, a nested walk hundreds.
        .y_axis(Axis::log2("Load-to-use latency (ns, log scale)"))
        .unstable_label(format!("spread > {NOISY_SPREAD_PCT:.0}%"));
    let ratio = median_positive(result.rows.iter().map(|r| r.cycles / r.ns).collect());
    if let Some(f) = cycles_per_ns(machine, 1.0, ratio.unwrap_or(f64::NAN)) {
        chart = chart.secondary_y("Latency (core cycles)", f);
    }
    for page in result.page_sizes() {
        let rows = result.curve(page);
        chart = chart
            .series(
                Series::new(
                    format!("{} pages", Bytes(page)),
                    rows.iter().map(|r| (r.pages as f64, r.ns)).collect(),
                )
                .color(page_color(page))
                .unstable(rows.iter().map(|r| noisy(r.spread_pct)).collect()),
            )
            .series(
                Series::new(
                    format!("{} pages: TLB part (ns − dense ns)", Bytes(page)),
                    // The TLB part where there is one (a log axis has no zero).
                    rows.iter()
                        .filter(|r| r.tlb_ns > 0.05)
                        .map(|r| (r.pages as f64, r.tlb_ns))
                        .collect(),
                )
                .color(page_color(page))
                .dashed()
                .without_markers(),
            );
    }
    for l in &result.levels {
        let page = Bytes(l.page_bytes);
        if let Some(e) = l.entries {
            chart = chart.marker(VMarker::found(
                e as f64,
                format!("{page} {}: {e}", l.name),
                page_color(l.page_bytes),
            ));
        }
        if let Some(c) = l.cpuid_entries {
            chart = chart.marker(VMarker::reference(
                f64::from(c),
                format!("CPUID {page} {}: {c}", l.name),
            ));
        }
    }
    if result.levels.iter().any(|l| l.entries.is_some()) {
        chart = chart.legend_entry(LegendEntry::new(
            "entries found (knee)",
            LegendSymbol::Line {
                color: "#374151".to_string(),
                dashed: false,
            },
        ));
    }
    if result.levels.iter().any(|l| l.cpuid_entries.is_some()) {
        chart = chart.legend_entry(LegendEntry::new(
            "entries CPUID reports",
            LegendSymbol::Line {
                color: "#6b7280".to_string(),
                dashed: true,
            },
        ));
    }
    chart.render()
}

/// ns per element of each SAXPY pattern, one bar each.
pub fn saxpy_chart(result: &TlbResult) -> String {
    BarChart::new("SAXPY: ns per element updated")
        .size(1000.0, 320.0)
        .y_axis(Axis::linear("ns per element"))
        .categories(result.saxpy.iter().map(|r| r.pattern.clone()).collect())
        .series(
            "ns per element",
            result.saxpy.iter().map(|r| r.ns_per_access).collect(),
            Some(CURVE_COLOR.to_string()),
        )
        .value_labels(Some(2))
        .render()
}

fn tlb_section(result: &TlbResult, machine: &Machine) -> String {
    let mut out = String::new();
    out.push_str("<section id=\"tlb\">\n<h2>TLB reach and miss cost</h2>\n");
    out.push_str(
        "<p class=\"note\">A pointer chase touches one cache line in each of N pages, in \
         random order, so every load needs its own translation: the curve steps up where N \
         passes the entries of a TLB level. The same number of lines packed densely into as \
         few pages as possible is timed beside it (<b>dense</b>: the data caches' share), and \
         the <b>TLB part</b> = ns − dense ns isolates what translation adds. Past the L1 DTLB \
         a load is translated by the L2 DTLB; past the L2 DTLB it needs a page walk, whose \
         cost depends on where the page-table entries are cached. Under a hypervisor an L2 \
         DTLB miss is a nested (two-dimensional) page walk: every level of the guest's page \
         table is itself translated through the host's, so it costs more than on bare metal. \
         A 2 MiB page covers 512 × 4 KiB with one entry.</p>\n",
    );
    if result.rows.is_empty() {
        out.push_str("<p class=\"muted\">No page count was measured.</p>\n");
    } else {
        out.push_str(&figure_html(tlb_chart(result, machine)));
    }

    if !result.levels.is_empty() {
        out.push_str("<h3>Levels found</h3>\n");
        let rows: Vec<Vec<String>> = result
            .levels
            .iter()
            .map(|l| {
                vec![
                    page_cell(l.page_bytes),
                    escape(&l.name),
                    l.entries
                        .map_or_else(|| "–".to_string(), |e| format!("<b>{e}</b>")),
                    opt_count(l.cpuid_entries),
                    escape(&opt_bytes(l.reach_bytes)),
                    l.miss_ns.map_or_else(|| "–".to_string(), ns),
                    l.miss_cycles.map_or_else(|| "–".to_string(), cycles),
                ]
            })
            .collect();
        table(
            &mut out,
            &[
                "Page",
                "Level",
                "#Entries found",
                "#CPUID entries",
                "#Reach",
                "#Miss cost (ns)",
                "#Miss cost (cycles)",
            ],
            &rows,
        );
        out.push_str(
            "<p class=\"note\">Entries: pages covered before the next knee. Miss cost: the \
             step from this level's plateau to the next one.</p>\n",
        );
    }

    if !result.saxpy.is_empty() {
        out.push_str("<h3>SAXPY with and without huge pages</h3>\n");
        out.push_str(
            "<p class=\"note\">y = a·x + y over the same footprint: sequentially (one TLB miss \
             per 4 KiB of each array, shared by a whole page of elements), one element per \
             4 KiB page (every access a new page, as sparse or column-wise code does) and the \
             same with huge pages. The time per element is a throughput figure: the accesses are \
             independent.</p>\n",
        );
        out.push_str(&figure_html(saxpy_chart(result)));
        let rows: Vec<Vec<String>> = result
            .saxpy
            .iter()
            .map(|r| {
                vec![
                    escape(&r.pattern),
                    page_cell(r.page_bytes),
                    escape(&Bytes(r.stride_bytes).to_string()),
                    escape(&Bytes(r.footprint_bytes).to_string()),
                    rounded(r.pass_ms, 100.0),
                    ns(r.ns_per_access),
                ]
            })
            .collect();
        table(
            &mut out,
            &[
                "Pattern",
                "Page",
                "#Stride",
                "#Footprint (x and y)",
                "#ms per pass",
                "#ns per element",
            ],
            &rows,
        );
    }

    if !result.mlp_by_page_size.is_empty() {
        out.push_str("<h3>Memory-level parallelism by page size</h3>\n");
        out.push_str(
            "<p class=\"note\">Independent pointer chains through DRAM, as in the MLP \
             section, with 4 KiB and with huge pages. When the chains' misses also miss the \
             TLB (4 KiB pages over a DRAM-sized working set), each needs a page walk, and a \
             core has only a few page walkers: if they limit how many misses overlap, the \
             parallelism is higher with huge pages.</p>\n",
        );
        let rows: Vec<Vec<String>> = result
            .mlp_by_page_size
            .iter()
            .map(|m| {
                vec![
                    page_cell(m.page_bytes),
                    escape(&Bytes(m.bytes).to_string()),
                    m.chains.to_string(),
                    ns(m.ns_per_load),
                    one_decimal(m.parallelism),
                ]
            })
            .collect();
        table(
            &mut out,
            &[
                "Page",
                "#Working set",
                "#Chains",
                "#ns per load",
                "#Parallelism",
            ],
            &rows,
        );
    }

    if !result.reach.is_empty() {
        out.push_str("<h3>Reach: entries × page size</h3>\n");
        let rows: Vec<Vec<String>> = result
            .reach
            .iter()
            .map(|r| {
                vec![
                    escape(&r.name),
                    page_cell(r.page_bytes),
                    opt_count(r.cpuid_entries),
                    escape(&opt_bytes(r.cpuid_reach_bytes)),
                    opt_count(r.measured_entries),
                    escape(&opt_bytes(r.measured_reach_bytes)),
                ]
            })
            .collect();
        table(
            &mut out,
            &[
                "Level",
                "Page",
                "#CPUID entries",
                "#CPUID reach",
                "#Measured entries",
                "#Measured reach",
            ],
            &rows,
        );
    }

    let _ = writeln!(
        out,
        "<details>\n<summary>All {} points</summary>",
        result.rows.len()
    );
    let counted = result.rows.iter().any(|r| r.counters.is_some());
    let rows: Vec<Vec<String>> = result
        .rows
        .iter()
        .map(|r| {
            let mut row = vec![
                page_cell(r.page_bytes),
                r.pages.to_string(),
                escape(&Bytes(r.pages.saturating_mul(r.page_bytes)).to_string()),
                ns(r.ns),
                cycles(r.cycles),
                ns(r.dense_ns),
                ns(r.tlb_ns),
                noisy_spread(r.spread_pct),
            ];
            if counted {
                row.extend(miss_cells(r.counters.as_ref()));
            }
            row
        })
        .collect();
    let headers = vec![
        "Page",
        "#Pages",
        "#Memory spanned",
        "#Latency (ns)",
        "#Cycles",
        "#Dense (ns)",
        "#TLB part (ns)",
        "#Spread %",
    ];
    table_with_misses(
        &mut out,
        headers,
        &rows,
        counted.then(|| result.rows.iter().filter_map(|r| r.counters.as_ref())),
    );
    out.push_str("</details>\n</section>\n");
    out
}

// ---------------------------------------------------------------------------------------
// NUMA
// ---------------------------------------------------------------------------------------

/// The node ids labelling `n` rows or columns; an index stands in for a missing id.
fn node_labels(result: &NumaResult, n: usize) -> Vec<usize> {
    (0..n)
        .map(|i| result.nodes.get(i).copied().unwrap_or(i))
        .collect()
}

/// Nodes of the matrices: the ids, or as many as the largest matrix has rows.
fn numa_size(result: &NumaResult) -> usize {
    result
        .nodes
        .len()
        .max(result.latency_ns.len())
        .max(result.read_gb_per_s.len())
}

/// A cell of a possibly ragged matrix.
fn matrix_cell<T: Copy>(m: &[Vec<T>], i: usize, j: usize) -> Option<T> {
    m.get(i).and_then(|r| r.get(j)).copied()
}

/// A node × node matrix as a heatmap: threads' node down, memory's node across. The rows
/// carry their meaning in their labels: a rotated y label is taller than a grid of two
/// rows and would run into the title.
fn node_heatmap(title: &str, labels: &[usize], m: &[Vec<f64>], value_label: &str) -> String {
    let n = labels.len();
    Heatmap::new(title)
        .x_label("Memory on node")
        .columns(labels.iter().map(|j| j.to_string()).collect())
        .rows(
            labels
                .iter()
                .map(|i| format!("threads on node {i}"))
                .collect(),
        )
        .values(
            (0..n)
                .map(|i| {
                    (0..n)
                        .map(|j| matrix_cell(m, i, j).unwrap_or(f64::NAN))
                        .collect()
                })
                .collect(),
        )
        .value_label(value_label)
        .decimals(1)
        .render()
}

/// A node × node matrix as a table: rows "node i" under `corner`, columns "`column` j",
/// each cell formatted by `cell`.
fn node_table<T: Copy>(
    out: &mut String,
    (corner, column): (&str, &str),
    labels: &[usize],
    m: &[Vec<T>],
    cell: impl Fn(T) -> String,
) {
    let mut headers = vec![(escape(corner), false)];
    headers.extend(
        labels
            .iter()
            .map(|j| (format!("{} {j}", escape(column)), true)),
    );
    let rows: Vec<Vec<String>> = labels
        .iter()
        .enumerate()
        .map(|(i, from)| {
            let mut row = vec![format!("node {from}")];
            row.extend(
                (0..labels.len())
                    .map(|j| matrix_cell(m, i, j).map_or_else(|| "–".to_string(), &cell)),
            );
            row
        })
        .collect();
    table_html(out, &headers, &rows);
}

/// Row and column headers of the measured matrices.
const NODE_AXES: (&str, &str) = ("Threads on", "Memory on node");

/// A fraction as a percentage with one decimal, or a dash.
fn percent(v: Option<f64>) -> String {
    match v {
        Some(f) if f.is_finite() => format!("{:.1}", f * 100.0),
        _ => "–".to_string(),
    }
}

fn numa_section(result: &NumaResult) -> String {
    let mut out = String::new();
    out.push_str("<section id=\"numa\">\n<h2>NUMA: latency and bandwidth by node</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">Threads pinned to the CPUs of node i measure memory bound to node \
         j (mbind) and first touched from node j, so its page tables are there too. One \
         thread chases pointers through {}: in page-local order ({} pages per window, so \
         cache misses without TLB misses, as the latency ladder's DRAM level) and in random \
         order over the whole buffer (TLB misses and page walks included, whose page-table \
         reads also go to node j). {} thread(s) read {} each for the bandwidth. The diagonal \
         is local memory; off it every access crosses the interconnect. Where the pages really \
         are is verified afterwards (get_mempolicy). The kernel's distance table (from the \
         firmware, 10 = local) is a declared relative cost, not a measurement: it is shown \
         for comparison.</p>",
        escape(&Bytes(result.latency_bytes).to_string()),
        result.page_local_window_pages,
        result.threads_per_node,
        escape(&Bytes(result.bandwidth_bytes).to_string()),
    );
    if let Some(note) = &result.note {
        let _ = writeln!(out, "<p class=\"dram\">{}</p>", escape(note));
    }
    let n = numa_size(result);
    let labels = node_labels(result, n);
    let has_random = !result.random_latency_ns.is_empty();
    if n == 0 {
        out.push_str("<p class=\"muted\">No node was measured.</p>\n");
    } else if n >= 2 {
        out.push_str(&figure_html(node_heatmap(
            "Idle latency, page-local chase (ns)",
            &labels,
            &result.latency_ns,
            "ns",
        )));
        if has_random {
            out.push_str(&figure_html(node_heatmap(
                "Idle latency, random chase with TLB misses (ns)",
                &labels,
                &result.random_latency_ns,
                "ns",
            )));
        }
        out.push_str(&figure_html(node_heatmap(
            "Read bandwidth (GB/s)",
            &labels,
            &result.read_gb_per_s,
            "GB/s",
        )));
    } else {
        out.push_str("<h3>Idle latency, page-local chase (ns)</h3>\n");
        node_table(&mut out, NODE_AXES, &labels, &result.latency_ns, ns);
        if has_random {
            out.push_str("<h3>Idle latency, random chase (ns)</h3>\n");
            node_table(&mut out, NODE_AXES, &labels, &result.random_latency_ns, ns);
        }
        out.push_str("<h3>Read bandwidth (GB/s)</h3>\n");
        node_table(&mut out, NODE_AXES, &labels, &result.read_gb_per_s, gbs);
    }
    if result.remote_local_latency_ratio.is_some() || result.remote_local_bandwidth_ratio.is_some()
    {
        let ratio = |v: Option<f64>| match v {
            Some(r) if r.is_finite() => format!("{r:.2}"),
            _ => "–".to_string(),
        };
        let _ = writeln!(
            out,
            "<p class=\"dram\"><b>Remote / local</b> (means over the cells): latency × <b>{}</b>, \
             bandwidth × <b>{}</b></p>",
            ratio(result.remote_local_latency_ratio),
            ratio(result.remote_local_bandwidth_ratio),
        );
    }
    if n > 0 {
        let used: Vec<String> = labels
            .iter()
            .zip(&result.cpus)
            .filter(|(_, cpus)| !cpus.is_empty())
            .map(|(node, cpus)| format!("node {node}: {}", cpu_list(cpus)))
            .collect();
        let _ = writeln!(
            out,
            "<p class=\"note\">CPUs used: {} (the latency thread on the first of each). Read \
             kernel: {}. Widest spread of any cell: {} %.</p>",
            escape(&if used.is_empty() {
                "–".to_string()
            } else {
                used.join("; ")
            }),
            escape(or_dash(&result.isa)),
            noisy_spread(result.max_spread_pct),
        );
    }
    if !result.distances.is_empty() {
        out.push_str("<h3>Kernel's node distances</h3>\n");
        let labels = node_labels(result, result.distances.len());
        node_table(
            &mut out,
            ("From", "To node"),
            &labels,
            &result.distances,
            |d| d.to_string(),
        );
    }
    if n > 0 {
        let cell = |m: &[Vec<f64>], i: usize, j: usize| matrix_cell(m, i, j).unwrap_or(f64::NAN);
        let cells: Vec<Vec<String>> = (0..n)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| {
                vec![
                    format!("node {}", labels[i]),
                    format!("node {}", labels[j]),
                    ns(cell(&result.latency_ns, i, j)),
                    ns(cell(&result.random_latency_ns, i, j)),
                    gbs(cell(&result.read_gb_per_s, i, j)),
                    matrix_cell(&result.read_overlap, i, j)
                        .map_or_else(|| "–".to_string(), |o| rounded(o * 100.0, 1.0)),
                    opt_count(matrix_cell(&result.distances, i, j)),
                    percent(matrix_cell(&result.placement_verified, i, j).flatten()),
                ]
            })
            .collect();
        let summary = if cells.len() == 1 {
            "The cell in detail".to_string()
        } else {
            format!("All {} cells", cells.len())
        };
        let _ = writeln!(out, "<details>\n<summary>{summary}</summary>");
        table(
            &mut out,
            &[
                "Threads on",
                "Memory on",
                "#Page-local latency (ns)",
                "#Random latency (ns)",
                "#Read GB/s",
                "#Readers' overlap (%)",
                "#Distance",
                "#Pages on the node (%)",
            ],
            &cells,
        );
        out.push_str("</details>\n");
    }
    out.push_str("</section>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::latency::{DramLatency, LatencyLevel};
    use crate::report::samples;
    use crate::report::{Settings, Warning};
    use crate::topology::CacheInfo;
    use crate::units::{KIB, MIB};

    fn cache(level: u32, kind: &str, size: u64) -> CacheInfo {
        CacheInfo {
            level,
            kind: kind.to_string(),
            size_bytes: size,
            line_bytes: 64,
            ways: Some(8),
            sets: Some(size / 64 / 8),
            shared_with_cpus: vec![0, 1],
            instances: 4,
            cpuid_size_bytes: Some(size),
        }
    }

    fn sample_latency() -> LatencyResult {
        let points = (12..=28)
            .map(|e| {
                let bytes = 1u64 << e;
                let ns = match e {
                    ..=15 => 1.25,
                    16..=20 => 4.1,
                    21..=25 => 14.0,
                    _ => 95.0,
                };
                LatencyPoint {
                    bytes,
                    ns,
                    cycles: ns * 3.0,
                    spread_pct: 1.0,
                    trials: 7,
                    unstable: e == 21,
                    counters: None,
                }
            })
            .collect();
        let level =
            |name: &str, ns: f64, first: u64, last: u64, cap: Option<u64>, os: Option<u64>| {
                LatencyLevel {
                    name: name.to_string(),
                    latency_ns: ns,
                    latency_cycles: ns * 3.0,
                    capacity_bytes: cap,
                    os_size_bytes: os,
                    first_bytes: first,
                    last_bytes: last,
                    points: 4,
                }
            };
        LatencyResult {
            order: "random".to_string(),
            stride_bytes: 64,
            points,
            random_points: None,
            levels: vec![
                level(
                    "L1d",
                    1.25,
                    4 * KIB,
                    32 * KIB,
                    Some(32 * KIB),
                    Some(32 * KIB),
                ),
                level("L2", 4.1, 64 * KIB, MIB, Some(MIB), Some(MIB)),
                level(
                    "L3",
                    14.0,
                    2 * MIB,
                    32 * MIB,
                    Some(32 * MIB),
                    Some(32 * MIB),
                ),
                level("DRAM", 95.0, 64 * MIB, 256 * MIB, None, None),
            ],
            dram: Some(DramLatency {
                bytes: 256 * MIB,
                random_ns: 95.0,
                page_local_ns: 80.0,
                random_cycles: 285.0,
                page_local_cycles: 240.0,
                tlb_penalty_ns: 15.0,
                page_local_window_pages: 16,
                tlb_measured_ns: Some(9.5),
            }),
        }
    }

    fn sample_machine() -> Machine {
        Machine {
            cpu_model: "Test CPU 9000".to_string(),
            cpu_vendor: "AuthenticAMD".to_string(),
            logical_cpus: 8,
            physical_cores: 4,
            threads_per_core: 2,
            caches: vec![
                cache(1, "data", 32 * KIB),
                cache(1, "instruction", 32 * KIB),
                cache(2, "unified", MIB),
                cache(3, "unified", 32 * MIB),
            ],
            core_hz_estimate: Some(3.0e9),
            tsc_hz: Some(2.6e9),
            ..Machine::default()
        }
    }

    fn html(report: &Report) -> String {
        String::from_utf8(serialize(report)).unwrap()
    }

    #[test]
    fn counted_rows_get_miss_columns_with_reasons_and_one_note_per_reason() {
        let mut report = Report::new(sample_machine(), Settings::default());
        report.experiments.latency = Some(samples::latency_counted(false));
        report.experiments.stride = Some(samples::stride_counted(false));
        report.experiments.tlb = Some(samples::tlb());
        assert!(!html(&report).contains("L1 miss"));

        report.experiments.latency = Some(samples::latency_counted(true));
        report.experiments.stride = Some(samples::stride_counted(true));
        let mut tlb = samples::tlb();
        for r in &mut tlb.rows {
            r.counters = Some(samples::uncounted_access());
        }
        report.experiments.tlb = Some(tlb);
        let doc = html(&report);
        let latency = section(&doc, "latency");
        assert!(latency.contains(">Random dTLB miss</th>"), "{latency}");
        assert!(latency.contains("<td class=\"num\">0.010*</td>"));
        assert!(latency.contains("title=\"not supported: no generic L2 event\">n/s</span>"));
        assert_eq!(
            latency
                .matches("n/s — L2 miss (none): not supported: no generic L2 event")
                .count(),
            1
        );
        let stride = section(&doc, "stride");
        assert!(stride.contains("<td class=\"num\">0.125</td>"), "{stride}");
        let tlb = section(&doc, "tlb");
        assert_eq!(
            tlb.matches("not supported: no hardware PMU (test)\">n/s</span>")
                .count(),
            {
                let rows = samples::tlb().rows.len();
                4 * rows
            }
        );
        assert_eq!(tlb.matches("n/s — ").count(), 4, "one note per level");
        for id in ["latency", "stride", "tlb"] {
            assert_balanced(section(&doc, id));
        }
    }

    #[test]
    fn full_report_is_a_complete_document_with_the_chart_and_levels() {
        let mut report = Report::new(sample_machine(), Settings::default());
        report.experiments.latency = Some(sample_latency());
        report.warnings.push(Warning {
            code: "system_busy".to_string(),
            message: "the system is busy & noisy".to_string(),
        });
        let doc = html(&report);
        assert!(doc.starts_with("<!DOCTYPE html>"));
        assert!(doc.trim_end().ends_with("</html>"));
        assert_eq!(doc.matches("<svg").count(), 1);
        for name in ["L1d", "L2", "L3", "DRAM"] {
            assert!(doc.contains(&format!("{name}</td>")), "{name}");
        }
        assert!(doc.contains("L1d ends") && doc.contains("L1d 32 KiB"));
        assert!(doc.contains("Latency (core cycles)"));
        assert!(doc.contains("the system is busy &amp; noisy"));
        assert!(doc.contains("<details>"));
        assert!(doc.contains("3.00 GHz") && doc.contains("2.60 GHz"));
        assert!(!doc.contains("<script"));
        // Self-contained: nothing is loaded from anywhere.
        assert!(!doc.contains("src=") && !doc.contains("href=\"http") && !doc.contains("@import"));
    }

    #[test]
    fn machine_strings_are_escaped() {
        let mut machine = sample_machine();
        machine.cpu_model = "<script>alert(\"x\")</script>".to_string();
        machine.kernel = "6.1 & <b>".to_string();
        let mut report = Report::new(machine, Settings::default());
        report.experiments.latency = Some(sample_latency());
        let doc = html(&report);
        assert!(!doc.contains("<script"));
        assert!(doc.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"));
        assert!(doc.contains("6.1 &amp; &lt;b&gt;"));
    }

    #[test]
    fn works_without_experiments_or_machine_data() {
        let doc = html(&Report::new(Machine::default(), Settings::default()));
        assert!(doc.starts_with("<!DOCTYPE html>") && doc.trim_end().ends_with("</html>"));
        assert!(!doc.contains("<svg"));
        assert!(doc.contains("No experiment ran"));
        assert!(doc.contains("No warnings"));
    }

    #[test]
    fn latency_chart_handles_sparse_results() {
        let machine = Machine::default();
        let empty = LatencyResult {
            order: "random".to_string(),
            stride_bytes: 64,
            points: vec![],
            random_points: None,
            levels: vec![],
            dram: None,
        };
        let svg = latency_chart(&empty, &machine);
        assert!(svg.starts_with("<svg") && !svg.contains("<polyline"));
        let mut one = sample_latency();
        one.points.truncate(1);
        one.points[0].ns = f64::NAN;
        one.points[0].spread_pct = f64::NAN;
        let svg = latency_chart(&one, &machine);
        assert!(!svg.contains("NaN"));
        // No core clock: no cycles axis.
        assert!(!svg.contains("core cycles"));
    }

    #[test]
    fn random_curve_is_drawn_and_tabulated_next_to_the_page_local_one() {
        let mut result = sample_latency();
        result.order = "page-local".to_string();
        let random: Vec<LatencyPoint> = result
            .points
            .iter()
            .map(|p| LatencyPoint {
                ns: p.ns * 1.2,
                ..p.clone()
            })
            .collect();
        result.random_points = Some(random);
        let svg = latency_chart(&result, &sample_machine());
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("random chase over the whole buffer"));
        let mut report = Report::new(sample_machine(), Settings::default());
        report.experiments.latency = Some(result);
        let doc = html(&report);
        assert!(doc.contains("TLB cost ns") && doc.contains("page-local order"));
        // 95 ns page-local vs 114 ns random at the largest size: 19 ns of TLB cost.
        assert!(doc.contains("<td class=\"num\">19.0</td>"));
    }

    #[test]
    fn empty_cpu_lists_show_a_dash() {
        assert_eq!(cpu_list(&[3, 0, 1, 2, 7, 9, 10]), "0-3,7,9-10");
        assert_eq!(cpu_list(&[]), "–");
    }

    /// Kernel registry subset: (name, reads, writes, nt).
    const KERNELS: [(&str, usize, usize, bool); 13] = [
        ("read", 1, 0, false),
        ("write", 0, 1, false),
        ("write-nt", 0, 1, true),
        ("copy", 1, 1, false),
        ("copy-nt", 1, 1, true),
        ("triad", 2, 1, false),
        ("triad-nt", 2, 1, true),
        ("mix-3:1", 3, 1, false),
        ("mix-3:1-nt", 3, 1, true),
        ("mix-2:1", 2, 1, false),
        ("mix-2:1-nt", 2, 1, true),
        ("mix-1:1", 1, 1, false),
        ("mix-1:1-nt", 1, 1, true),
    ];

    /// A plausible bandwidth for a kernel at a working set per thread, on a 3 GHz core
    /// with the caches of `sample_machine`: falls from L1 to DRAM; streaming stores run at
    /// DRAM speed everywhere; DRAM saturates with threads.
    fn plausible_gbs(kernel: (&str, usize, usize, bool), bytes: u64, threads: usize) -> f64 {
        let (_, reads, writes, nt) = kernel;
        let per_thread_cache = if bytes <= 32 * KIB {
            190.0
        } else if bytes <= MIB {
            95.0
        } else if bytes <= 32 * MIB / threads as u64 {
            48.0
        } else {
            0.0
        };
        let write_share = writes as f64 / (reads + writes) as f64;
        let dram = 60.0_f64.min(24.0 * (threads as f64).sqrt()) * (1.0 - 0.3 * write_share);
        if nt {
            let nt_rate = 28.0 * (threads as f64).min(2.0);
            return if per_thread_cache > 0.0 {
                nt_rate.min(per_thread_cache * threads as f64) * (1.0 + write_share)
            } else {
                nt_rate * (1.0 + write_share)
            };
        }
        if per_thread_cache > 0.0 {
            per_thread_cache * threads as f64 * (1.0 - 0.35 * write_share)
        } else {
            dram
        }
    }

    fn bw_row(
        kernel: (&str, usize, usize, bool),
        threads: usize,
        level: &str,
        bytes: u64,
    ) -> BandwidthRow {
        let arrays = (kernel.1 + kernel.2) as u64;
        let working_set = bytes;
        // Three-array kernels round down to whole 1 KiB granules per array.
        let bytes = (bytes / arrays / KIB).max(1) * KIB * arrays;
        let gb = plausible_gbs(kernel, bytes, threads);
        BandwidthRow {
            kernel: kernel.0.to_string(),
            read_parts: kernel.1,
            write_parts: kernel.2,
            nontemporal: kernel.3,
            isa: "avx2".to_string(),
            threads,
            working_set_bytes: working_set,
            bytes_per_thread: bytes,
            level: level.to_string(),
            gb_per_s: gb,
            bytes_per_cycle: Some(gb / threads as f64 / 3.0),
            spread_pct: if kernel.0 == "copy" && level == "L3" {
                14.0
            } else {
                1.5
            },
            trials: 7,
            overlap: 1.0,
            concurrent: true,
            attempts: 7,
        }
    }

    fn sample_bandwidth(
        thread_counts: &[usize],
        kernels: &[(&str, usize, usize, bool)],
        sweep_kernels: &[(&str, usize, usize, bool)],
        sweep_per_octave: u32,
    ) -> BandwidthResult {
        let mut rows = Vec::new();
        for &threads in thread_counts {
            for (level, bytes) in [
                ("L1d", 16 * KIB),
                ("L2", 512 * KIB),
                ("L3", 16 * MIB / threads as u64),
                ("DRAM", 128 * MIB),
            ] {
                for &k in kernels {
                    rows.push(bw_row(k, threads, level, bytes));
                }
            }
        }
        let mut sweep = Vec::new();
        if sweep_per_octave > 0 {
            let steps = 16 * sweep_per_octave; // 4 KiB .. 256 MiB
            for i in 0..=steps {
                let bytes =
                    (4.0 * KIB as f64 * 2f64.powf(f64::from(i) / f64::from(sweep_per_octave)))
                        as u64;
                let bytes = bytes / KIB * KIB;
                let level = match bytes {
                    b if b <= 32 * KIB => "L1d",
                    b if b <= MIB => "L2",
                    b if b <= 32 * MIB => "L3",
                    _ => "DRAM",
                };
                for &k in sweep_kernels {
                    sweep.push(bw_row(k, thread_counts[0], level, bytes));
                }
            }
        }
        BandwidthResult {
            isa: "avx2".to_string(),
            isa_choice: crate::experiments::bandwidth::IsaChoice::fixed(
                crate::kernels::stream::Isa::Avx2,
                "--isa",
            ),
            rows,
            sweep,
            cpus: vec![7, 0, 1, 2, 3, 4, 5, 6],
        }
    }

    fn sample_stride(max_bytes: u64) -> StrideResult {
        let mut strides: Vec<u64> = (1..=31).step_by(2).map(|e| e * 8).collect();
        strides.extend([64, 256, KIB, 4 * KIB]);
        let mut rows = Vec::new();
        let mut bytes = 2 * KIB;
        while bytes <= max_bytes {
            let base = match bytes {
                b if b <= 32 * KIB => 0.08,
                b if b <= MIB => 0.25,
                b if b <= 32 * MIB => 0.6,
                _ => 2.5,
            };
            for kernel in ["read", "saxpy"] {
                let k = if kernel == "saxpy" { 1.8 } else { 1.0 };
                let mut push = |stride: Option<u64>, ns: f64| {
                    let useful = if kernel == "saxpy" { 24.0 } else { 8.0 };
                    rows.push(StrideRow {
                        bytes,
                        stride_bytes: stride,
                        pattern: if stride.is_some() {
                            "strided"
                        } else {
                            "random"
                        }
                        .to_string(),
                        kernel: kernel.to_string(),
                        gb_per_s: useful / ns,
                        ns_per_access: ns,
                        spread_pct: if stride == Some(4 * KIB) { 12.0 } else { 2.0 },
                        counters: None,
                    });
                };
                for &s in &strides {
                    // Past the caches every line holding a used element is fetched again.
                    let lines = (s as f64 / 64.0).min(1.0) * 8.0;
                    let factor = if bytes > 32 * KIB {
                        lines.max(1.0)
                    } else {
                        1.0
                    };
                    let tlb = if s >= 4 * KIB && bytes > 8 * MIB {
                        6.0
                    } else {
                        1.0
                    };
                    push(Some(s), base * k * factor.sqrt() * tlb);
                }
                push(
                    None,
                    base * k * 8.0 * if bytes > 8 * MIB { 2.5 } else { 1.0 },
                );
            }
            bytes *= 2;
        }
        StrideResult { rows }
    }

    fn bandwidth_report() -> Report {
        let mut report = Report::new(sample_machine(), Settings::default());
        report.experiments.latency = Some(sample_latency());
        report.experiments.bandwidth = Some(sample_bandwidth(
            &[1, 4],
            &KERNELS[..5],
            &[KERNELS[0], KERNELS[3], KERNELS[2]],
            1,
        ));
        report.experiments.stride = Some(sample_stride(64 * MIB));
        report
    }

    #[test]
    fn the_summary_and_the_warnings_come_before_the_results() {
        let mut report = bandwidth_report();
        report.warnings.push(Warning {
            code: "hypervisor".into(),
            message: "running under KVM".into(),
        });
        let doc = html(&report);
        let at = |id: &str| {
            doc.find(&format!("<section id=\"{id}\">"))
                .unwrap_or_else(|| panic!("no {id} section"))
        };
        assert!(at("summary") < at("warnings"));
        assert!(at("warnings") < at("latency"));
        assert!(at("latency") < at("settings"));
        let summary = section(&doc, "summary");
        assert!(summary.contains("Bandwidth, 1 thread<"), "{summary}");
        assert!(summary.contains("Bandwidth, 4 threads<"), "{summary}");
        assert!(summary.contains("href=\"#latency\""), "{summary}");
        assert!(
            summary.contains("<a href=\"#warnings\" class=\"warn\">"),
            "{summary}"
        );
        // A report without results has no summary.
        let empty = html(&Report::new(sample_machine(), Settings::default()));
        assert!(!empty.contains("<section id=\"summary\">"));
    }

    #[test]
    fn figures_whose_threads_did_not_run_together_are_marked_everywhere() {
        let mut bandwidth = sample_bandwidth(&[1, 4], &KERNELS[..2], &[], 0);
        let row = bandwidth
            .rows
            .iter_mut()
            .find(|r| r.threads == 4 && r.level == "DRAM")
            .unwrap();
        (row.concurrent, row.overlap, row.attempts) = (false, 0.52, 21);
        let mut loaded = samples::loaded();
        loaded.rows[0].injectors_concurrent = false;
        loaded.rows[0].injector_overlap = 0.4;
        let mut report = Report::new(sample_machine(), Settings::default());
        report.experiments.bandwidth = Some(bandwidth.clone());
        report.experiments.loaded = Some(loaded.clone());
        let doc = html(&report);
        // One mark in each section's note and one on each flagged figure.
        assert_eq!(doc.matches(NOT_CONCURRENT_MARK).count(), 4, "{doc}");
        assert!(doc.contains("down to 52 %"), "{doc}");
        assert!(doc.contains("down to 40 %"), "{doc}");
        assert!(
            doc.contains("threads overlapped 52 % (21 attempts)"),
            "{doc}"
        );
        let text = crate::report::terminal_old::bandwidth(&bandwidth);
        assert!(
            text.contains("! marks cells whose threads did not run together"),
            "{text}"
        );
        assert_eq!(text.matches(" !").count(), 2, "{text}");
        let text = crate::report::terminal_old::loaded(&loaded);
        assert!(text.contains("down to 40%"), "{text}");
        // Nothing is marked when every figure ran together.
        report.experiments.bandwidth = Some(sample_bandwidth(&[1, 4], &KERNELS[..2], &[], 0));
        report.experiments.loaded = Some(samples::loaded());
        assert!(!html(&report).contains(NOT_CONCURRENT_MARK));
    }

    #[test]
    fn bandwidth_and_stride_sections_render_with_charts_and_tables() {
        let mut report = Report::new(sample_machine(), Settings::default());
        report.experiments.bandwidth = Some(sample_bandwidth(
            &[1, 8],
            &[KERNELS[0], KERNELS[3], KERNELS[7]],
            &[KERNELS[0], KERNELS[3]],
            2,
        ));
        report.experiments.stride = Some(sample_stride(16 * MIB));
        let doc = html(&report);
        let bw = &doc[doc
            .find("<section id=\"bandwidth\">")
            .expect("bandwidth section")..];
        let bw = &bw[..bw.find("</section>").unwrap()];
        let st = &doc[doc.find("<section id=\"stride\">").expect("stride section")..];
        let st = &st[..st.find("</section>").unwrap()];
        assert!(doc.contains("<a href=\"#bandwidth\">Bandwidth</a>"));
        assert!(doc.contains("<a href=\"#stride\">Stride</a>"));
        // Sweep chart and scaling chart.
        assert_eq!(bw.matches("<svg").count(), 2);
        assert!(bw.contains("Bandwidth vs working set, 1 thread"));
        assert!(bw.contains("Bandwidth vs threads in DRAM"));
        assert!(bw.contains("bytes read + written"));
        assert!(bw.contains("L1d 32 KiB"), "OS cache markers");
        for kernel in ["read", "copy", "mix-3:1"] {
            assert!(bw.contains(&format!("<b>{kernel}</b>")), "{kernel}");
        }
        for level in ["L1d", "L2", "L3", "DRAM"] {
            assert!(
                bw.contains(&format!("</span>{level}<span class=\"sub\">")),
                "{level}"
            );
        }
        assert!(bw.contains("<h3>1 thread") && bw.contains("<h3>8 threads"));
        // mix-3:1 has four arrays: 16 KiB splits evenly, but 16 MiB / 8 threads does too;
        // the column shows a range only where sizes differ.
        assert!(bw.contains("3:1") && bw.contains("<b>avx2</b>"));
        assert!(bw.contains("no read-for-ownership"));
        assert!(
            bw.contains("<span class=\"noisy\">~</span>"),
            "copy in L3 is noisy"
        );
        assert!(bw.contains("class=\"bpc\""));
        // Heatmaps for both kernels, with the random column, plus the rows table.
        assert_eq!(st.matches("<svg").count(), 2);
        assert!(st.contains("read: ns per access") && st.contains("saxpy: ns per access"));
        assert!(st.contains(">random<"));
        assert!(st.contains("not a latency"));
        assert!(st.contains("<details>") && st.contains("GB/s (useful)"));
        // No NaN or raw Rust debug output anywhere.
        assert!(!doc.contains("NaN") && !doc.contains("Some("));
    }

    #[test]
    fn one_thread_count_gets_a_note_instead_of_the_scaling_chart() {
        let mut report = Report::new(sample_machine(), Settings::default());
        report.experiments.bandwidth = Some(sample_bandwidth(&[1], &KERNELS[..3], &[], 0));
        let doc = html(&report);
        assert_eq!(doc.matches("<svg").count(), 0);
        assert!(doc.contains("Measured with 1 thread only"));
        assert!(doc.contains("streaming (nt)"));
    }

    #[test]
    fn custom_sizes_share_columns_within_granule_rounding() {
        let mut result = sample_bandwidth(&[1, 2], &[KERNELS[0], KERNELS[7]], &[], 0);
        result.rows = Vec::new();
        for threads in [1, 2] {
            for bytes in [10 * KIB, 96 * MIB] {
                for k in [KERNELS[0], KERNELS[5]] {
                    result.rows.push(bw_row(k, threads, "custom", bytes));
                }
            }
        }
        let section = bandwidth_section(&result, &sample_machine());
        // Two custom columns per table (10 KiB vs 9 KiB for triad share one), two tables.
        assert_eq!(section.matches("custom<span class=\"sub\">").count(), 4);
        assert!(section.contains("9 KiB – 10 KiB per thread"));
        assert!(section.contains("largest custom working set"));
        // Bytes per cycle only for cache levels.
        assert!(!section.contains("class=\"bpc\""));
    }

    #[test]
    fn invalid_values_do_not_panic_or_leak_into_the_document() {
        let mut bw = sample_bandwidth(&[1, 2], &KERNELS[..4], &KERNELS[..2], 1);
        for (i, r) in bw.rows.iter_mut().chain(bw.sweep.iter_mut()).enumerate() {
            match i % 4 {
                0 => r.gb_per_s = f64::NAN,
                1 => r.gb_per_s = 0.0,
                2 => {
                    r.spread_pct = f64::NAN;
                    r.bytes_per_cycle = Some(f64::INFINITY);
                }
                _ => r.bytes_per_thread = 0,
            }
        }
        let mut stride = sample_stride(64 * KIB);
        for (i, r) in stride.rows.iter_mut().enumerate() {
            match i % 3 {
                0 => r.ns_per_access = f64::NAN,
                1 => r.ns_per_access = 0.0,
                _ => r.spread_pct = f64::INFINITY,
            }
        }
        let mut report = Report::new(Machine::default(), Settings::default());
        report.experiments.bandwidth = Some(bw);
        report.experiments.stride = Some(stride);
        let doc = html(&report);
        assert!(
            doc.contains("<section id=\"bandwidth\">") && doc.contains("<section id=\"stride\">")
        );
        assert!(!doc.contains("NaN") && !doc.contains(">inf") && !doc.contains("\"inf"));

        // Empty results still render their sections.
        let mut report = Report::new(Machine::default(), Settings::default());
        report.experiments.bandwidth = Some(BandwidthResult {
            isa: String::new(),
            isa_choice: crate::experiments::bandwidth::IsaChoice::fixed(
                crate::kernels::stream::Isa::Portable,
                "--isa",
            ),
            rows: vec![],
            sweep: vec![],
            cpus: vec![],
        });
        report.experiments.stride = Some(StrideResult { rows: vec![] });
        let doc = html(&report);
        assert!(doc.contains("No bandwidth was measured"));
        assert!(doc.contains("No access pattern was measured"));
        assert!(doc.trim_end().ends_with("</html>"));
    }

    #[test]
    fn latency_only_report_has_no_bandwidth_or_stride() {
        let mut report = Report::new(sample_machine(), Settings::default());
        report.experiments.latency = Some(sample_latency());
        let doc = html(&report);
        assert!(!doc.contains("id=\"bandwidth\"") && !doc.contains("id=\"stride\""));
        assert!(!doc.contains("#bandwidth") && doc.contains("<section id=\"latency\">"));
        // And with everything, latency stays first.
        let doc = html(&bandwidth_report());
        let (l, b, s) = (
            doc.find("<section id=\"latency\">").unwrap(),
            doc.find("<section id=\"bandwidth\">").unwrap(),
            doc.find("<section id=\"stride\">").unwrap(),
        );
        assert!(l < b && b < s);
    }

    /// The HTML of one section, from its opening tag to its end.
    fn section<'a>(doc: &'a str, id: &str) -> &'a str {
        let start = doc
            .find(&format!("<section id=\"{id}\">"))
            .unwrap_or_else(|| panic!("section {id}"));
        let rest = &doc[start..];
        &rest[..rest.find("</section>").unwrap() + "</section>".len()]
    }

    /// Tags that must be balanced in a section: a cheap check of well-formedness.
    fn assert_balanced(html: &str) {
        for tag in [
            "section", "figure", "svg", "table", "thead", "tbody", "tr", "details", "p", "g",
        ] {
            let open = html.matches(&format!("<{tag}>")).count()
                + html.matches(&format!("<{tag} ")).count();
            let close = html.matches(&format!("</{tag}>")).count();
            assert_eq!(open, close, "<{tag}> unbalanced");
        }
    }

    #[test]
    fn miss_impact_section_has_the_chart_the_table_and_one_note_per_reason() {
        let mut report = Report::new(sample_machine(), Settings::default());
        report.experiments.latency = Some(sample_latency());
        report.experiments.miss_impact = Some(crate::experiments::miss_impact::tests::sample());
        let doc = html(&report);
        assert!(doc.contains("<a href=\"#miss-impact\">Miss impact</a>"));
        assert!(doc.find("<section id=\"latency\">") < doc.find("<section id=\"miss-impact\">"));
        let section = section(&doc, "miss-impact");
        assert_balanced(section);
        assert_eq!(section.matches("<svg").count(), 1);
        assert!(section.contains("AMAT from the counted miss rates"));
        assert!(section.contains("DRAM chase") && section.contains("L1d seq"));
        assert!(section.contains("m_LLC·(t_DRAM − t_L3)"), "{section}");
        // One table row per footprint × pattern; n/s and n/c where nothing was counted.
        assert_eq!(section.matches("<tr>").count(), 1 + 3);
        assert!(section.contains("<td class=\"num\">n/s</td>"));
        assert!(section.contains("<td class=\"num\">n/c</td>"));
        assert!(section.contains("<td class=\"num\">1.01</td>"), "{section}");
        assert_eq!(section.matches("<li>").count(), 2, "{section}");
        assert!(section.contains("<li>AMAT: not computed: L1 misses not supported: "));
        // Nothing counted: measured bars only, and the title says why.
        let mut uncounted = crate::experiments::miss_impact::tests::sample();
        uncounted.rows.retain(|r| r.amat_ns.is_none());
        let chart = miss_impact_chart(&uncounted);
        assert!(chart.contains("no AMAT: the miss rates were not counted"));
        assert!(!chart.contains("AMAT from the counted miss rates"));
    }

    #[test]
    fn loaded_mlp_and_rob_sections_render_with_charts_and_tables() {
        let mut report = Report::new(sample_machine(), Settings::default());
        report.experiments.latency = Some(sample_latency());
        report.experiments.loaded = Some(samples::loaded());
        report.experiments.mlp = Some(samples::mlp());
        report.experiments.rob = Some(samples::rob());
        let doc = html(&report);
        for (id, title) in [("loaded", "Loaded latency"), ("mlp", "MLP"), ("rob", "ROB")] {
            assert!(
                doc.contains(&format!("<a href=\"#{id}\">{title}</a>")),
                "{id}"
            );
            assert_balanced(section(&doc, id));
        }
        assert!(doc.find("<section id=\"latency\">") < doc.find("<section id=\"loaded\">"));

        let loaded = section(&doc, "loaded");
        assert_eq!(loaded.matches("<svg").count(), 1);
        assert!(loaded.contains("Latency vs bandwidth under load"));
        assert!(loaded.contains("read, 3 injectors") && loaded.contains("1:1, 3 injectors"));
        assert!(loaded.contains("idle latency 79.5 ns"));
        assert!(
            loaded.contains("knee 41.7 GB/s (63% of peak)"),
            "knee marker"
        );
        assert!(loaded.contains("knee: last point at the idle latency"));
        assert!(loaded.contains("Latency (core cycles)"));
        assert!(loaded.contains("<b>knee</b> at 41.7 GB/s"));
        assert_eq!(
            loaded.matches("<td><b>knee</b></td>").count(),
            2,
            "one per curve"
        );
        assert!(loaded.contains("Little's law"));

        let mlp = section(&doc, "mlp");
        // Parallelism curves, the grid heatmap and the sequential fit.
        assert_eq!(mlp.matches("<svg").count(), 3);
        assert!(mlp.contains("L2 (512 KiB)") && mlp.contains("DRAM (256 MiB)"));
        assert!(mlp.contains("ideal: every miss overlapped"));
        assert!(mlp.contains("saturation point"));
        assert!(mlp.contains("<td class=\"num\">8</td><td class=\"num\">7.4</td>"));
        assert!(mlp.contains("Parallelism by working set and chains"));
        assert!(mlp.contains("M = 85.3 ns") && mlp.contains("r² = 0.9987"));
        assert!(mlp.contains("imply <b>9.1</b> lines in flight"), "{mlp}");
        assert!(mlp.contains("GB/s imply 20.0"), "{mlp}");

        let rob = section(&doc, "rob");
        assert_eq!(rob.matches("<svg").count(), 2);
        assert!(rob.contains("nop: reorder buffer ≈ 224"));
        assert!(rob.contains("load: load queue ≈ 72"));
        assert!(rob.contains("<b>224</b>") && rob.contains("<b>180</b>"));
        assert!(rob.contains("no cliff"));
        assert!(rob.contains("window ≈ 224"));
        assert!(rob.contains("Core cycles per iteration"));
        assert!(!doc.contains("NaN") && !doc.contains("Some("));
    }

    #[test]
    fn empty_and_invalid_new_results_do_not_panic_or_leak() {
        let mut report = Report::new(Machine::default(), Settings::default());
        report.experiments.loaded = Some(samples::empty_loaded());
        report.experiments.mlp = Some(samples::empty_mlp());
        report.experiments.rob = Some(samples::empty_rob());
        let doc = html(&report);
        assert!(doc.contains("No loaded latency was measured"));
        assert!(doc.contains("No chain count was measured"));
        assert!(doc.contains("No filler curve was measured"));
        assert!(doc.contains("<b>no knee</b>"));
        for id in ["loaded", "mlp", "rob"] {
            assert_balanced(section(&doc, id));
        }
        assert!(!doc.contains("NaN") && doc.trim_end().ends_with("</html>"));

        let (loaded, mlp, rob) = samples::nan_results();
        let mut report = Report::new(Machine::default(), Settings::default());
        report.experiments.loaded = Some(loaded);
        report.experiments.mlp = Some(mlp);
        report.experiments.rob = Some(rob);
        let doc = html(&report);
        for id in ["loaded", "mlp", "rob"] {
            assert_balanced(section(&doc, id));
        }
        assert!(!doc.contains("NaN") && !doc.contains(">inf") && !doc.contains("\"inf"));
        // Saturation comes from the `mlp` map when its details are missing.
        assert!(doc.contains("Saturation per level"));
    }

    #[test]
    fn tlb_and_numa_sections_render_with_charts_and_tables() {
        let mut report = Report::new(sample_machine(), Settings::default());
        report.experiments.rob = Some(samples::rob());
        report.experiments.tlb = Some(samples::tlb());
        report.experiments.numa = Some(samples::numa());
        let doc = html(&report);
        for (id, title) in [("tlb", "TLB"), ("numa", "NUMA")] {
            assert!(
                doc.contains(&format!("<a href=\"#{id}\">{title}</a>")),
                "{id}"
            );
            assert_balanced(section(&doc, id));
        }
        assert!(doc.find("<section id=\"rob\">") < doc.find("<section id=\"tlb\">"));
        assert!(doc.find("<section id=\"tlb\">") < doc.find("<section id=\"numa\">"));

        let tlb = section(&doc, "tlb");
        // The curves and the SAXPY bars.
        assert_eq!(tlb.matches("<svg").count(), 2);
        assert!(tlb.contains("4 KiB pages") && tlb.contains("2 MiB pages"));
        assert!(tlb.contains("4 KiB pages: TLB part (ns − dense ns)"));
        assert!(tlb.contains("4 KiB L1 DTLB: 64") && tlb.contains("2 MiB L2 DTLB: 1024"));
        assert!(tlb.contains("CPUID 4 KiB L2 DTLB: 3072"));
        assert!(tlb.contains("entries found (knee)") && tlb.contains("entries CPUID reports"));
        assert!(tlb.contains("Latency (core cycles)"));
        assert!(tlb.contains(">32768<"), "page counts are printed whole");
        assert!(tlb.contains("nested (two-dimensional) page walk"));
        assert!(
            tlb.contains("L1 DTLB</td><td class=\"num\"><b>64</b></td><td class=\"num\">72</td>"),
            "{tlb}"
        );
        assert!(tlb.contains("SAXPY: ns per element updated"));
        assert!(tlb.contains("stride 4 KiB, huge pages"));
        assert!(
            tlb.contains("<td class=\"num\">11.2</td>"),
            "MLP with huge pages"
        );
        assert!(tlb.contains("72 GiB") && tlb.contains("All 43 points"));

        let numa = section(&doc, "numa");
        assert_eq!(numa.matches("<svg").count(), 3, "three heatmaps");
        assert!(numa.contains("Idle latency, random chase with TLB misses (ns)"));
        assert!(
            numa.contains(">140.0<") && numa.contains(">41.0<"),
            "{numa}"
        );
        assert!(numa.contains("latency × <b>1.56</b>, bandwidth × <b>0.60</b>"));
        assert!(numa.contains("Kernel's node distances") && numa.contains(">21</td>"));
        assert!(numa.contains("All 4 cells") && numa.contains(">99.8</td>"));
        assert!(numa.contains(">173.0<") && numa.contains("<td class=\"num\">106</td>"));
        assert!(numa.contains("node 0: 0-3; node 1: 4-7") && numa.contains("kernel: avx2"));
        assert!(!doc.contains("NaN") && !doc.contains("Some("));

        // One node: tables and the note instead of heatmaps.
        report.experiments.numa = Some(samples::numa_single_node());
        let doc = html(&report);
        let numa = section(&doc, "numa");
        assert_balanced(numa);
        assert!(!numa.contains("<svg"));
        assert!(numa.contains("one NUMA node: there is no remote memory to measure"));
        assert!(numa.contains("<td class=\"num\">95.0</td>") && numa.contains("38.5"));
        assert!(numa.contains("Idle latency, random chase (ns)") && numa.contains(">112<"));
        assert!(
            numa.contains("<span class=\"noisy\">14.0</span> %"),
            "{numa}"
        );
        assert!(!numa.contains("Remote / local"));
    }

    #[test]
    fn empty_and_invalid_tlb_and_numa_do_not_panic_or_leak() {
        let mut report = Report::new(Machine::default(), Settings::default());
        report.experiments.tlb = Some(samples::empty_tlb());
        report.experiments.numa = Some(samples::empty_numa());
        let doc = html(&report);
        assert!(doc.contains("No page count was measured"));
        assert!(doc.contains("No node was measured"));
        for id in ["tlb", "numa"] {
            assert_balanced(section(&doc, id));
            assert!(!section(&doc, id).contains("<svg"));
        }
        assert!(!doc.contains("NaN") && doc.trim_end().ends_with("</html>"));

        let (tlb, numa) = samples::nan_tlb_numa();
        let mut report = Report::new(Machine::default(), Settings::default());
        report.experiments.tlb = Some(tlb);
        report.experiments.numa = Some(numa);
        let doc = html(&report);
        for id in ["tlb", "numa"] {
            assert_balanced(section(&doc, id));
        }
        assert!(!doc.contains("NaN") && !doc.contains(">inf") && !doc.contains("\"inf"));
        assert!(section(&doc, "numa").contains("latency × <b>–</b>"));
        // No cycles anywhere and no core clock: no cycles axis.
        assert!(!section(&doc, "tlb").contains("core cycles"));
    }

    /// Writes a sample report with every section to the file named by MEMSCOPE_HTML_SAMPLE
    /// (`cargo test --lib report::html -- --ignored`), to look at the layout in a browser;
    /// with MEMSCOPE_HTML_FROM_JSON, renders that JSON report instead of synthetic data.
    #[test]
    #[ignore = "writes a file; run on demand"]
    fn write_sample_report() {
        let Ok(path) = std::env::var("MEMSCOPE_HTML_SAMPLE") else {
            return;
        };
        if let Ok(json) = std::env::var("MEMSCOPE_HTML_FROM_JSON") {
            let report: Report = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
            std::fs::write(path, serialize(&report)).unwrap();
            return;
        }
        let mut report = Report::new(sample_machine(), Settings::default());
        report.settings.command = "run".to_string();
        report.experiments.latency = Some(sample_latency());
        report.experiments.bandwidth = Some(sample_bandwidth(
            &[1, 2, 4, 8],
            &KERNELS,
            &[KERNELS[0], KERNELS[3], KERNELS[2]],
            2,
        ));
        report.experiments.stride = Some(sample_stride(256 * MIB));
        report.experiments.loaded = Some(samples::loaded());
        report.experiments.mlp = Some(samples::mlp());
        report.experiments.rob = Some(samples::rob());
        report.experiments.tlb = Some(samples::tlb());
        report.experiments.numa = Some(samples::numa());
        report.experiments.miss_impact = Some(crate::experiments::miss_impact::tests::sample());
        std::fs::write(path, serialize(&report)).unwrap();
    }
}
