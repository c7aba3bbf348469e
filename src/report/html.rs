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

use crate::experiments::latency::{LatencyPoint, LatencyResult, UNSTABLE_SPREAD_PCT};
use crate::report::svg::{
    escape, Axis, Band, LegendEntry, LegendSymbol, LineChart, Series, VMarker,
};
use crate::report::Report;
use crate::topology::Machine;
use crate::units::{format_hz, Bytes};

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
.unstable { color: #b91c1c; font-weight: 600; }
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
    // Results first (the first plot is the latency ladder), then what qualifies them,
    // then the machine description they are compared with.
    for section in &experiments {
        out.push_str(&section.html);
    }
    warnings_section(&mut out, report);
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

/// Every experiment present in the report, in reading order. New experiments (bandwidth,
/// loaded latency, MLP, TLB, NUMA) add one line here and one `*_section` function.
fn experiment_sections(report: &Report) -> Vec<Section> {
    let mut sections = Vec::new();
    if let Some(latency) = &report.experiments.latency {
        sections.push(Section {
            id: "latency",
            title: "Latency",
            html: latency_section(latency, &report.machine),
        });
    }
    sections
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
    if !v.is_finite() {
        "–".to_string()
    } else if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
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
    let numeric: Vec<bool> = headers.iter().map(|h| h.starts_with('#')).collect();
    // The wrapper scrolls sideways on narrow screens instead of pushing the page wider.
    out.push_str("<div class=\"table-wrap\"><table>\n<thead><tr>");
    for (h, &num) in headers.iter().zip(&numeric) {
        let class = if num { " class=\"num\"" } else { "" };
        let _ = write!(
            out,
            "<th scope=\"col\"{class}>{}</th>",
            escape(h.trim_start_matches('#'))
        );
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
    kv_table(out, &rows);

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
            ("Sampling", or_dash(&s.sampling).to_string()),
        ],
    );
    out.push_str("</section>\n");
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
             TLB misses and page walks add <b>{} ns</b> per access.</p>",
            escape(&Bytes(d.bytes).to_string()),
            ns(d.random_ns),
            cycles(d.random_cycles),
            ns(d.page_local_ns),
            cycles(d.page_local_cycles),
            d.page_local_window_pages,
            ns(d.tlb_penalty_ns),
        );
    }

    let _ = writeln!(
        out,
        "<details>\n<summary>All {} points of the sweep</summary>",
        result.points.len()
    );
    // The random sweep, when measured, shares the sizes of the main one: matched by size.
    let random_at = |bytes: u64| random.iter().find(|r| r.bytes == bytes);
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
    table(&mut out, &headers, &rows);
    out.push_str("</details>\n</section>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::latency::{DramLatency, LatencyLevel};
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
}
