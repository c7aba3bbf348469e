//! Terminal exporter: readable, aligned tables of the machine, the settings, each
//! experiment and the warnings.

use super::Report;
use crate::counters::{AccessCounts, MissLevel};
use crate::experiments::bandwidth::{BandwidthResult, BandwidthRow};
use crate::experiments::latency::{LatencyPoint, LatencyResult};
use crate::experiments::loaded::{Knee, LoadedResult, LoadedRow};
use crate::experiments::miss_impact::MissImpactResult;
use crate::experiments::mlp::{MlpResult, MlpRow};
use crate::experiments::numa::NumaResult;
use crate::experiments::rob::RobResult;
use crate::experiments::stride::{StrideResult, StrideRow};
use crate::experiments::tlb::TlbResult;
use crate::platform::cpu_time::{self, MIN_OVERLAP};
use crate::topology::cpu::format_cpu_list as cpu_list;
use crate::topology::Machine;
use crate::units::{format_hz, Bytes};

/// An aligned text table; numeric-looking cells are right-aligned.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    align_numbers: bool,
    /// Rows whose second cell runs across the remaining columns (a reason, not a value).
    spanning: Vec<usize>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            align_numbers: true,
            spanning: Vec::new(),
        }
    }

    /// Every cell left-aligned (for key/value tables, where values are prose).
    pub fn left_aligned(mut self) -> Table {
        self.align_numbers = false;
        self
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// A row with a first cell and a text that runs across the other columns without
    /// widening them (e.g. "not supported: <reason>" in place of the values).
    pub fn spanning_row(&mut self, first: String, text: String) {
        self.spanning.push(self.rows.len());
        self.rows.push(vec![first, text]);
    }

    pub fn render(&self) -> String {
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for (r, row) in self.rows.iter().enumerate() {
            let spans = self.spanning.contains(&r);
            for (i, cell) in row.iter().enumerate().take(columns) {
                if !(spans && i > 0) {
                    widths[i] = widths[i].max(cell.chars().count());
                }
            }
        }
        let numeric =
            |cell: &str| cell.starts_with(|c: char| c.is_ascii_digit() || "-+—".contains(c));
        let line = |cells: &[String], header: bool| -> String {
            let mut out = String::from(" ");
            for (i, cell) in cells.iter().enumerate().take(columns) {
                let pad = widths[i] - cell.chars().count();
                if !header && self.align_numbers && numeric(cell) && i > 0 {
                    out.push_str(&" ".repeat(pad));
                    out.push_str(cell);
                } else {
                    out.push_str(cell);
                    out.push_str(&" ".repeat(pad));
                }
                out.push_str("  ");
            }
            out.trim_end().to_string() + "\n"
        };
        let mut out = line(&self.header, true);
        out.push(' ');
        out.push_str(
            &widths
                .iter()
                .map(|w| "─".repeat(*w))
                .collect::<Vec<_>>()
                .join("  "),
        );
        out.push('\n');
        for (r, row) in self.rows.iter().enumerate() {
            if self.spanning.contains(&r) {
                let first = &row[0];
                let pad = widths[0] - first.chars().count();
                out.push_str(&format!(" {first}{}  {}\n", " ".repeat(pad), row[1]));
            } else {
                out.push_str(&line(row, false));
            }
        }
        out
    }
}

fn heading(title: &str) -> String {
    format!("\n{title}\n")
}

/// A few lines about the machine, for the summary of `run` (`info` has the full view).
pub fn machine_summary(m: &Machine) -> String {
    let caches: Vec<String> = m
        .data_caches()
        .iter()
        .map(|c| format!("{} {}", c.name(), Bytes(c.size_bytes)))
        .collect();
    let mut out = heading("Machine");
    out.push_str(&format!(
        " {} · {} logical CPUs on {} cores · {} NUMA node(s) · {}\n",
        m.cpu_model,
        m.logical_cpus,
        m.physical_cores,
        m.numa_nodes.len(),
        m.hypervisor
            .as_ref()
            .map_or("no hypervisor detected".to_string(), |h| format!(
                "{h} guest"
            )),
    ));
    out.push_str(&format!(
        " caches {} · THP {} · TSC {} · core clock {} (measured)\n",
        caches.join(", "),
        m.thp.enabled,
        m.tsc_hz.map_or("not used".into(), format_hz),
        m.core_hz_estimate.map_or("not estimated".into(), format_hz),
    ));
    out
}

/// The `info` view: everything the OS and CPUID report.
pub fn machine(m: &Machine) -> String {
    let mut out = heading("Machine");
    let mut t = Table::new(&["item", "value"]).left_aligned();
    let mut kv = |k: &str, v: String| t.row(vec![k.to_string(), v]);
    kv("CPU", m.cpu_model.clone());
    let fms = match (m.cpu_family, m.cpu_model_number, m.cpu_stepping) {
        (Some(f), Some(mo), Some(s)) => format!(" (family {f:#x}, model {mo:#x}, stepping {s})"),
        _ => String::new(),
    };
    kv("vendor", format!("{}{fms}", m.cpu_vendor));
    kv(
        "CPUs",
        format!(
            "{} logical, {} cores, {} thread(s) per core; this process may use {}",
            m.logical_cpus,
            m.physical_cores,
            m.threads_per_core,
            cpu_list(&m.allowed_cpus)
        ),
    );
    if !m.smt_sibling_groups.is_empty() {
        kv(
            "SMT siblings",
            m.smt_sibling_groups
                .iter()
                .map(|g| cpu_list(g))
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
    kv("ISA", m.isa_extensions.join(" "));
    kv(
        "memory",
        format!(
            "{} total, {} available",
            Bytes(m.memory_total_bytes),
            Bytes(m.memory_available_bytes)
        ),
    );
    kv(
        "page sizes",
        m.page_sizes_bytes
            .iter()
            .map(|&p| Bytes(p).to_string())
            .collect::<Vec<_>>()
            .join(", "),
    );
    for pool in &m.hugepage_pools {
        kv(
            &format!("hugetlbfs {}", Bytes(pool.page_bytes)),
            format!("{} pages reserved, {} free", pool.total, pool.free),
        );
    }
    kv(
        "THP",
        format!(
            "enabled={}{}",
            m.thp.enabled,
            m.thp
                .defrag
                .as_ref()
                .map(|d| format!(", defrag={d}"))
                .unwrap_or_default()
        ),
    );
    kv(
        "hypervisor",
        m.hypervisor
            .clone()
            .unwrap_or_else(|| "none detected".into()),
    );
    kv("kernel", m.kernel.clone());
    if let Some(counters) = &m.perf_counters {
        kv("counters", counters.summary());
    }
    kv(
        "clock source",
        m.clocksource.clone().unwrap_or_else(|| "unknown".into()),
    );
    kv("TSC", m.tsc_hz.map_or("not used".into(), format_hz));
    kv(
        "core clock",
        m.core_hz_estimate.map_or("not estimated".into(), |hz| {
            format!("{} (measured: dependent adds)", format_hz(hz))
        }),
    );
    if let Some(freq) = &m.cpufreq {
        kv(
            "frequency scaling",
            format!(
                "governor {}, {}–{}{}",
                freq.governor.clone().unwrap_or_else(|| "?".into()),
                freq.min_hz.map_or("?".into(), format_hz),
                freq.max_hz.map_or("?".into(), format_hz),
                freq.boost.map_or(String::new(), |b| format!(
                    ", boost {}",
                    if b { "on" } else { "off" }
                ))
            ),
        );
    }
    out.push_str(&t.render());

    out.push_str(&heading("Caches"));
    let mut t = Table::new(&[
        "cache",
        "size",
        "line",
        "ways",
        "shared by CPUs",
        "instances",
        "CPUID size",
    ]);
    for c in &m.caches {
        t.row(vec![
            c.name(),
            Bytes(c.size_bytes).to_string(),
            format!("{} B", c.line_bytes),
            c.ways.map_or("-".into(), |w| w.to_string()),
            cpu_list(&c.shared_with_cpus),
            c.instances.to_string(),
            c.cpuid_size_bytes
                .map_or("-".into(), |s| Bytes(s).to_string()),
        ]);
    }
    out.push_str(&t.render());

    if !m.tlbs.is_empty() {
        out.push_str(&heading("TLBs (CPUID)"));
        let mut t = Table::new(&["TLB", "page", "entries", "ways", "reach", "source"]);
        for tlb in &m.tlbs {
            t.row(vec![
                format!("L{} {}", tlb.level, tlb.kind),
                Bytes(tlb.page_bytes).to_string(),
                tlb.entries.to_string(),
                tlb.ways.map_or("full".into(), |w| w.to_string()),
                Bytes(tlb.entries as u64 * tlb.page_bytes).to_string(),
                tlb.source.clone(),
            ]);
        }
        out.push_str(&t.render());
    }

    let notes = super::virtualization::notes(m);
    if !notes.is_empty() {
        out.push_str(&heading("Virtualization"));
        for note in notes {
            out.push_str(&format!(" - {note}\n"));
        }
    }

    out.push_str(&heading("NUMA"));
    let mut t = Table::new(&["node", "CPUs", "memory", "free", "distances"]);
    for node in &m.numa_nodes {
        t.row(vec![
            node.id.to_string(),
            cpu_list(&node.cpus),
            Bytes(node.memory_total_bytes).to_string(),
            Bytes(node.memory_free_bytes).to_string(),
            node.distances
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(" "),
        ]);
    }
    out.push_str(&t.render());
    out
}

fn ns_cycles(ns: f64, cycles: f64) -> (String, String) {
    let cyc = if cycles.is_finite() {
        format!("{cycles:.1}")
    } else {
        "-".into()
    };
    (format!("{ns:.2}"), cyc)
}

/// The `latency` view: levels, DRAM both ways, and the sweep.
pub fn latency(result: &LatencyResult, with_points: bool) -> String {
    let mut out = heading(&format!(
        "Load-to-use latency (dependent {} chase, {}-byte slots)",
        result.order, result.stride_bytes
    ));
    let counted = result.points.iter().any(|p| p.counters.is_some());
    let mut header = vec![
        "level",
        "latency ns",
        "cycles",
        "ends at (measured)",
        "OS size",
        "plateau",
    ];
    if counted {
        header.extend(miss_headers());
    }
    let mut t = Table::new(&header);
    let mut level_counts = Vec::new();
    for level in &result.levels {
        let (ns, cyc) = ns_cycles(level.latency_ns, level.latency_cycles);
        let mut row = vec![
            level.name.clone(),
            ns,
            cyc,
            level
                .capacity_bytes
                .map_or("-".into(), |b| Bytes(b).to_string()),
            level
                .os_size_bytes
                .map_or("-".into(), |b| Bytes(b).to_string()),
            format!(
                "{} – {} ({} points)",
                Bytes(level.first_bytes),
                Bytes(level.last_bytes),
                level.points
            ),
        ];
        if counted {
            let counts = plateau_centre(&result.points, level.first_bytes, level.last_bytes)
                .and_then(|p| p.counters.as_ref());
            row.extend(miss_cells(counts));
            level_counts.extend(counts);
        }
        t.row(row);
    }
    out.push_str(&t.render());
    if counted {
        out.push_str(
            " L1/L2/LLC/dTLB miss: misses per load at the sweep point nearest the middle of \
             each plateau (hardware counters, an untimed pass after the point's trials)\n",
        );
        out.push_str(&miss_notes(level_counts));
    }
    if let Some(dram) = &result.dram {
        out.push_str(&format!(
            "\n DRAM at {}: random {:.1} ns ({}), page-local {:.1} ns ({}); TLB misses and page walks add {:.1} ns\n",
            Bytes(dram.bytes),
            dram.random_ns,
            ns_cycles(dram.random_ns, dram.random_cycles).1 + " cyc",
            dram.page_local_ns,
            ns_cycles(dram.page_local_ns, dram.page_local_cycles).1 + " cyc",
            dram.tlb_penalty_ns,
        ));
        if let Some(tlb) = dram.tlb_measured_ns {
            out.push_str(&format!(
                " of which the TLB itself is {tlb:.1} ns (measured by 'tlb' at this page count); \
                 the other {:.1} ns is DRAM locality (open rows, fewer bank conflicts) that the \
                 page-local window enjoys\n",
                (dram.tlb_penalty_ns - tlb).max(0.0)
            ));
        }
    }
    if with_points {
        out.push_str(&heading("Sweep"));
        let random = result.random_points.as_deref().unwrap_or(&[]);
        let mut header = vec!["working set", "ns", "cycles", "spread %", "trials"];
        if !random.is_empty() {
            header = vec![
                "working set",
                "page-local ns",
                "cycles",
                "spread %",
                "random ns",
                "cycles",
                "spread %",
            ];
        }
        if counted {
            header.extend(miss_headers());
        }
        header.push("");
        let mut t = Table::new(&header);
        for (i, p) in result.points.iter().enumerate() {
            let (ns, cyc) = ns_cycles(p.ns, p.cycles);
            let mut row = vec![
                Bytes(p.bytes).to_string(),
                ns,
                cyc,
                format!("{:.1}", p.spread_pct),
            ];
            let mut unstable = p.unstable;
            match random.get(i) {
                Some(r) => {
                    let (rns, rcyc) = ns_cycles(r.ns, r.cycles);
                    row.extend([rns, rcyc, format!("{:.1}", r.spread_pct)]);
                    unstable |= r.unstable;
                }
                None => row.push(p.trials.to_string()),
            }
            if counted {
                row.extend(miss_cells(p.counters.as_ref()));
            }
            row.push(if unstable {
                "unstable".into()
            } else {
                String::new()
            });
            t.row(row);
        }
        out.push_str(&t.render());
        let random_counted = random.iter().any(|p| p.counters.is_some());
        if random_counted {
            out.push_str(&heading("Sweep, random chase: misses per load"));
            let mut header = vec!["working set"];
            header.extend(miss_headers());
            let mut t = Table::new(&header);
            for p in random {
                let mut row = vec![Bytes(p.bytes).to_string()];
                row.extend(miss_cells(p.counters.as_ref()));
                t.row(row);
            }
            out.push_str(&t.render());
        }
        if counted || random_counted {
            out.push_str(&format!(
                " L1/L2/LLC/dTLB miss: misses per load{} (hardware counters, an untimed pass \
                 after each point's trials)\n",
                if random_counted && counted {
                    ", in the order of each table"
                } else {
                    ""
                }
            ));
            let all = result.points.iter().chain(random);
            out.push_str(&miss_notes(all.filter_map(|p| p.counters.as_ref())));
        }
    }
    out
}

/// The point of a curve nearest the middle (on a log scale) of the plateau from `first`
/// to `last` bytes.
fn plateau_centre(points: &[LatencyPoint], first: u64, last: u64) -> Option<&LatencyPoint> {
    let centre = ((first.max(1) as f64).log2() + (last.max(1) as f64).log2()) / 2.0;
    points
        .iter()
        .filter(|p| (first..=last).contains(&p.bytes))
        .min_by(|a, b| {
            let distance = |p: &LatencyPoint| ((p.bytes.max(1) as f64).log2() - centre).abs();
            distance(a).total_cmp(&distance(b))
        })
}

/// Headers of the miss columns: "L1 miss", "L2 miss", "LLC miss", "dTLB miss".
fn miss_headers() -> Vec<&'static str> {
    MissLevel::ALL.iter().map(|l| l.label()).collect()
}

/// The miss cells of a row: misses per access ("*" when multiplexed), "n/s" for a level
/// not counted (the reason is in the notes under the table), "-" without counts.
fn miss_cells(counts: Option<&AccessCounts>) -> Vec<String> {
    MissLevel::ALL
        .iter()
        .map(|&level| counts.map_or("-".to_string(), |c| c.cell(level)))
        .collect()
}

/// The notes under a table with miss columns: "* multiplexed" when any count was, then
/// every distinct reason a level was not counted, once, however many rows share it.
fn miss_notes<'a>(counts: impl IntoIterator<Item = &'a AccessCounts>) -> String {
    let counts: Vec<&AccessCounts> = counts.into_iter().collect();
    multiplexed_note(&counts) + &unsupported_notes(&counts)
}

/// The "*" footnote, when any count was multiplexed.
fn multiplexed_note(counts: &[&AccessCounts]) -> String {
    let multiplexed = counts.iter().any(|c| {
        c.levels
            .iter()
            .any(|l| l.multiplexed && l.per_access.is_some())
    });
    if multiplexed {
        " * the PMU was shared with other events: the count is scaled by the time the event \
         was enabled over the time it counted (an estimate)\n"
            .to_string()
    } else {
        String::new()
    }
}

/// Every distinct reason a level was not counted, once.
fn unsupported_notes(counts: &[&AccessCounts]) -> String {
    distinct(counts.iter().flat_map(|c| c.unsupported_notes()))
        .iter()
        .map(|note| format!(" {note}\n"))
        .collect()
}

/// A duration: "850 ns", "412.3 µs", "4.21 ms", "1.23 s".
fn duration(ns: f64) -> String {
    match ns {
        ns if !ns.is_finite() => "—".into(),
        ns if ns < 1e3 => format!("{ns:.0} ns"),
        ns if ns < 1e6 => format!("{:.1} µs", ns / 1e3),
        ns if ns < 1e9 => format!("{:.2} ms", ns / 1e6),
        ns => format!("{:.2} s", ns / 1e9),
    }
}

/// The cache-miss-impact table: per footprint × pattern the time per access, the counted
/// pass's run time, misses per access at each level ("n/s" where not counted), page
/// faults and the AMAT estimate; then the formula and one note per distinct reason.
pub fn miss_impact(result: &MissImpactResult) -> String {
    let mut out = heading(&format!(
        "Cache-miss impact: one {}-byte line per access; random = dependent {} chase{}, \
         random-independent = the same lines as independent loads",
        result.line_bytes,
        result.random_order,
        result
            .window_pages
            .map_or(String::new(), |w| format!(" ({w} pages per window)"))
    ));
    let mut header = vec!["level", "footprint", "pattern", "ns/access", "run time"];
    header.extend(crate::counters::MissLevel::ALL.iter().map(|l| l.label()));
    header.extend(["page faults", "AMAT ns", "measured/AMAT"]);
    let mut t = Table::new(&header);
    for r in &result.rows {
        let mut row = vec![
            r.level.clone(),
            Bytes(r.footprint_bytes).to_string(),
            r.pattern.label().to_string(),
            figure(r.ns_per_access, 2),
            duration(r.run_time_ns),
        ];
        row.extend(
            crate::counters::MissLevel::ALL
                .iter()
                .map(|&l| r.misses.cell(l)),
        );
        row.push(r.page_faults.map_or("n/s".into(), |f| f.to_string()));
        row.push(r.amat_ns.map_or("n/c".into(), |a| figure(a, 2)));
        row.push(r.measured_over_amat.map_or("—".into(), |x| figure(x, 2)));
        t.row(row);
    }
    out.push_str(&t.render());
    let latencies: Vec<String> = result
        .level_latencies
        .iter()
        .map(|l| format!("{} {}", l.name, figure(l.ns, 2)))
        .collect();
    out.push_str(&format!(
        " AMAT = {} with m = misses per access and t = the latency ladder's levels ({} ns)\n",
        result.amat_formula(),
        latencies.join(", ")
    ));
    out.push_str(
        " measured/AMAT is about 1 for the dependent chase (one miss at a time, as AMAT \
         assumes) and far below 1 for sequential and independent loads, whose misses \
         prefetchers and memory-level parallelism overlap\n",
    );
    for note in result.notes() {
        let mark = if note.starts_with("AMAT") {
            "n/c"
        } else {
            "n/s"
        };
        out.push_str(&format!(" {mark}: {note}\n"));
    }
    out
}

/// Distinct values in order of first appearance.
fn distinct<T: PartialEq + Clone>(values: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// A bandwidth cell's marks: `!` when its threads did not run together, `~` when its
/// trials spread by more than 10 %.
fn bandwidth_flag(row: &BandwidthRow) -> String {
    format!(
        "{}{}",
        if row.concurrent { "" } else { "!" },
        if row.spread_pct > 10.0 { "~" } else { "" }
    )
}

/// The legend line of the `!` mark, when one of `overlaps` carries it.
fn not_concurrent_legend(overlaps: impl Iterator<Item = f64>, what: &str) -> String {
    match cpu_time::lowest_not_concurrent(overlaps) {
        Some(lowest) => format!(
            " ! marks {what} whose threads did not run together or were kept off their CPUs \
             (overlap below {:.0}% in every trial, down to {:.0}%): the figure is what they \
             got over the whole interval\n",
            MIN_OVERLAP * 100.0,
            lowest * 100.0
        ),
        None => String::new(),
    }
}

/// The `bandwidth` view: one kernel × level table per thread count, then the sweep.
pub fn bandwidth(result: &BandwidthResult) -> String {
    let mut out = String::new();
    for threads in distinct(result.rows.iter().map(|r| r.threads)) {
        let rows: Vec<&BandwidthRow> = result
            .rows
            .iter()
            .filter(|r| r.threads == threads)
            .collect();
        let columns = distinct(rows.iter().map(|r| (r.level.clone(), r.working_set_bytes)));
        out.push_str(&heading(&format!(
            "Bandwidth, {threads} thread(s), {}: GB/s (10^9 B/s of bytes read + written){}",
            result.isa,
            if rows.iter().any(|r| r.bytes_per_cycle.is_some()) {
                "; bytes/cycle per thread in caches"
            } else {
                ""
            }
        )));
        let mut header = vec!["kernel".to_string(), "R:W".to_string()];
        header.extend(
            columns
                .iter()
                .map(|(level, bytes)| format!("{level} ({})", Bytes(*bytes))),
        );
        let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = Table::new(&header_refs);
        for kernel in distinct(rows.iter().map(|r| r.kernel.clone())) {
            let first = rows
                .iter()
                .find(|r| r.kernel == kernel)
                .expect("kernel has rows");
            let mut cells = vec![
                kernel.clone(),
                format!(
                    "{}:{}{}",
                    first.read_parts,
                    first.write_parts,
                    if first.nontemporal { " nt" } else { "" }
                ),
            ];
            for (level, bytes) in &columns {
                let cell = rows
                    .iter()
                    .find(|r| {
                        r.kernel == kernel && &r.level == level && r.working_set_bytes == *bytes
                    })
                    .map_or("-".to_string(), |r| {
                        let flag = bandwidth_flag(r);
                        match r.bytes_per_cycle {
                            Some(bpc) if level != "DRAM" && level != "custom" => {
                                format!("{flag}{:.1} ({bpc:.1})", r.gb_per_s)
                            }
                            _ => format!("{flag}{:.1}", r.gb_per_s),
                        }
                    });
                cells.push(cell);
            }
            t.row(cells);
        }
        out.push_str(&t.render());
    }
    if !result.sweep.is_empty() {
        let kernels = distinct(result.sweep.iter().map(|r| r.kernel.clone()));
        let threads = result.sweep[0].threads;
        out.push_str(&heading(&format!(
            "Bandwidth vs working set, {threads} thread(s): GB/s"
        )));
        let mut header = vec!["working set".to_string(), "level".to_string()];
        header.extend(kernels.iter().cloned());
        let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = Table::new(&header_refs);
        let sizes = distinct(result.sweep.iter().map(|r| r.working_set_bytes));
        for bytes in sizes {
            let level = result
                .sweep
                .iter()
                .find(|r| r.working_set_bytes == bytes)
                .map_or("", |r| r.level.as_str());
            let mut cells = vec![Bytes(bytes).to_string(), level.to_string()];
            for kernel in &kernels {
                cells.push(
                    result
                        .sweep
                        .iter()
                        .find(|r| &r.kernel == kernel && r.working_set_bytes == bytes)
                        .map_or("-".into(), |r| {
                            format!("{}{:.1}", bandwidth_flag(r), r.gb_per_s)
                        }),
                );
            }
            t.row(cells);
        }
        out.push_str(&t.render());
    }
    let choice = &result.isa_choice;
    let probe: Vec<String> = choice
        .probe
        .iter()
        .map(|p| format!("{} {:.0} / {:.1}", p.isa, p.cache_gb_per_s, p.dram_gb_per_s))
        .collect();
    out.push_str(&format!(
        "\n Kernels ran with {} (chosen by {}{}).\n ~ marks a spread above 10 % (noisy: see the JSON for the spread of every point)\n",
        result.isa,
        choice.chosen_by,
        if probe.is_empty() {
            String::new()
        } else {
            format!("; read + copy GB/s in L1 / beyond the caches: {}", probe.join(", "))
        }
    ));
    out.push_str(&not_concurrent_legend(
        result.rows.iter().chain(&result.sweep).map(|r| r.overlap),
        "cells",
    ));
    out
}

/// The `stride` view: ns per access (a throughput figure: accesses are independent) for
/// each kernel, working set × stride, with the random order last. With counters, the same
/// matrix of misses per access for every level counted in some row, and a note for each
/// reason a level was not counted.
pub fn stride(result: &StrideResult) -> String {
    let mut out = String::new();
    for kernel in distinct(result.rows.iter().map(|r| r.kernel.clone())) {
        let rows: Vec<_> = result.rows.iter().filter(|r| r.kernel == kernel).collect();
        let mut strides = distinct(rows.iter().filter_map(|r| r.stride_bytes));
        strides.sort_unstable();
        let has_random = rows.iter().any(|r| r.stride_bytes.is_none());
        let matrix = |cell: &dyn Fn(&StrideRow) -> String| {
            let mut header = vec!["working set".to_string()];
            header.extend(strides.iter().map(|s| s.to_string()));
            if has_random {
                header.push("random".to_string());
            }
            let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
            let mut t = Table::new(&header_refs);
            for bytes in distinct(rows.iter().map(|r| r.bytes)) {
                let mut cells = vec![Bytes(bytes).to_string()];
                let at = |stride: Option<u64>| {
                    rows.iter()
                        .find(|r| r.bytes == bytes && r.stride_bytes == stride)
                        .map_or("-".to_string(), |r| cell(r))
                };
                cells.extend(strides.iter().map(|&s| at(Some(s))));
                if has_random {
                    cells.push(at(None));
                }
                t.row(cells);
            }
            t.render()
        };
        out.push_str(&heading(&format!(
            "Access cost, {kernel}: ns per access by stride in bytes (independent accesses: a throughput figure, not latency)"
        )));
        out.push_str(&matrix(&|r| format!("{:.2}", r.ns_per_access)));

        let counts: Vec<&AccessCounts> = rows.iter().filter_map(|r| r.counters.as_ref()).collect();
        if counts.is_empty() {
            continue;
        }
        let mut uncounted = Vec::new();
        for level in MissLevel::ALL {
            if !counts.iter().any(|c| c.per_access(level).is_some()) {
                uncounted.push(level.label());
                continue;
            }
            out.push_str(&heading(&format!(
                "{} per access, {kernel}, by stride in bytes (hardware counters)",
                level.label()
            )));
            out.push_str(&matrix(&|r| {
                r.counters
                    .as_ref()
                    .map_or("-".to_string(), |c| c.cell(level))
            }));
        }
        out.push_str(&multiplexed_note(&counts));
        if !uncounted.is_empty() {
            out.push_str(&format!(
                "\n {kernel}: {} per access not counted in any row:\n",
                uncounted.join(", ")
            ));
        }
        out.push_str(&unsupported_notes(&counts));
    }
    out
}

/// A figure with `decimals` decimals, or "—" when it is not finite (a missing value).
fn figure(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "—".into()
    }
}

/// Core cycles with one decimal, or "—" when unknown (no core clock estimate gives 0 or NaN).
fn cycles_or_dash(v: f64) -> String {
    if v.is_finite() && v > 0.0 {
        format!("{v:.1}")
    } else {
        "—".into()
    }
}

/// "1 injector", "7 injectors".
fn injectors(threads: usize) -> String {
    if threads == 1 {
        "1 injector".into()
    } else {
        format!("{threads} injectors")
    }
}

fn knee_text(knee: Option<&Knee>) -> String {
    match knee {
        Some(k) => format!(
            "knee at delay {}: {} GB/s, {} ns, {} % of peak",
            k.delay,
            figure(k.gb_per_s, 1),
            figure(k.latency_ns, 1),
            figure(k.pct_of_peak, 0)
        ),
        None => "no knee (latency stayed at its idle level)".into(),
    }
}

/// The `loaded` view: idle, peak and knee, then latency against bandwidth per mix ×
/// injector count, from the idle end (largest delay) to full load.
pub fn loaded(result: &LoadedResult) -> String {
    let mut out = heading(&format!(
        "Latency under load: chase on CPU {} over {} (page-local, {} pages per window), \
         injectors on CPUs {} ({} each)",
        result.latency_cpu,
        Bytes(result.chase_bytes),
        result.chase_window_pages,
        if result.injector_cpus.is_empty() {
            "—".to_string()
        } else {
            cpu_list(&result.injector_cpus)
        },
        Bytes(result.injector_bytes),
    ));
    out.push_str(&format!(
        " idle {} ns ({} cycles) · peak {} GB/s · {}{}\n",
        figure(result.idle_ns, 1),
        cycles_or_dash(result.idle_cycles),
        figure(result.peak_gb_per_s, 1),
        knee_text(result.knee.as_ref()),
        if result.reference.is_empty() {
            String::new()
        } else {
            format!(" [{}]", result.reference)
        }
    ));
    if result.curves.len() > 1 {
        let mut t = Table::new(&[
            "mix",
            "injectors",
            "peak GB/s",
            "loaded ns",
            "knee delay",
            "knee GB/s",
            "knee ns",
            "% of peak",
        ]);
        for c in &result.curves {
            let k = c.knee.as_ref();
            t.row(vec![
                c.mix.clone(),
                c.threads.to_string(),
                figure(c.peak_gb_per_s, 1),
                figure(c.loaded_ns, 1),
                k.map_or("—".into(), |k| k.delay.to_string()),
                k.map_or("—".into(), |k| figure(k.gb_per_s, 1)),
                k.map_or("—".into(), |k| figure(k.latency_ns, 1)),
                k.map_or("—".into(), |k| figure(k.pct_of_peak, 0)),
            ]);
        }
        out.push('\n');
        out.push_str(&t.render());
    }
    let curves = distinct(result.rows.iter().map(|r| (r.mix.clone(), r.threads)));
    for (mix, threads) in &curves {
        let curve = result
            .curves
            .iter()
            .find(|c| &c.mix == mix && c.threads == *threads);
        let knee = match curve {
            Some(c) => c.knee.as_ref(),
            None if curves.len() == 1 => result.knee.as_ref(),
            None => None,
        };
        let mut rows: Vec<&LoadedRow> = result
            .rows
            .iter()
            .filter(|r| &r.mix == mix && r.threads == *threads)
            .collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.delay_cycles));
        out.push_str(&heading(&format!(
            "{mix}, {}: {}",
            injectors(*threads),
            knee_text(knee)
        )));
        let is_knee = |r: &LoadedRow| knee.is_some_and(|k| k.delay == r.delay_cycles);
        let marked = rows.iter().any(|r| is_knee(r));
        let mut header = vec!["delay", "GB/s", "latency ns", "cycles", "concurrency"];
        if marked {
            header.push("");
        }
        let mut t = Table::new(&header);
        for r in rows {
            let mut cells = vec![
                r.delay_cycles.to_string(),
                format!(
                    "{}{}",
                    if r.injectors_concurrent { "" } else { "!" },
                    figure(r.gb_per_s, 1)
                ),
                figure(r.latency_ns, 1),
                cycles_or_dash(r.latency_cycles),
                figure(r.concurrency, 1),
            ];
            if is_knee(r) {
                cells.push("◀ knee".into());
            }
            t.row(cells);
        }
        out.push_str(&t.render());
    }
    if !curves.is_empty() {
        out.push_str(&format!(
            "\n delay: core cycles between an injector's lines; GB/s: all threads, latency \
             thread included; concurrency: lines in flight by Little's law (GB/s × latency / \
             {} B)\n",
            result.line_bytes
        ));
        out.push_str(&not_concurrent_legend(
            result.rows.iter().map(|r| r.injector_overlap),
            "points",
        ));
    }
    out
}

/// The `mlp` view: per level, time and parallelism against the number of chains with the
/// saturation point; the sequential fit, Little's law, and the working-set × chains grid.
pub fn mlp(result: &MlpResult) -> String {
    let mut out = heading(&format!(
        "Memory-level parallelism: N independent pointer chains in one thread ({})",
        if result.order.is_empty() {
            "—"
        } else {
            result.order.as_str()
        }
    ));
    for (level, bytes) in distinct(result.rows.iter().map(|r| (r.level.clone(), r.bytes))) {
        let name = level.clone().unwrap_or_else(|| "custom".into());
        out.push_str(&heading(&format!(
            "{name} ({}): parallelism = N × t(1) / t(N)",
            Bytes(bytes)
        )));
        let mut rows: Vec<&MlpRow> = result
            .rows
            .iter()
            .filter(|r| r.level == level && r.bytes == bytes)
            .collect();
        rows.sort_by_key(|r| r.chains);
        let mut t = Table::new(&["chains", "ns/round", "ns/load", "parallelism"]);
        for r in rows {
            t.row(vec![
                r.chains.to_string(),
                figure(r.ns_per_round, 2),
                figure(r.ns_per_load, 2),
                figure(r.parallelism, 2),
            ]);
        }
        out.push_str(&t.render());
        match result.saturation.iter().find(|s| s.level == name) {
            Some(s) => out.push_str(&format!(
                " saturates at {} chains: parallelism {}, {} ns per load\n",
                s.chains,
                figure(s.parallelism, 1),
                figure(s.ns_per_load, 2)
            )),
            None => match result.mlp.get(&name) {
                Some(n) => out.push_str(&format!(" saturates at {n} chains\n")),
                None => out.push_str(" no saturation found within the chains measured\n"),
            },
        }
    }
    if let Some(fit) = &result.sequential_fit {
        out.push_str(&format!(
            "\n Dependent misses one run at a time ({}, {} runs): T(n) = n·M + C with M = {} ns \
             ({} cycles), C = {} ns, r² = {}\n",
            Bytes(fit.bytes),
            fit.points.len(),
            figure(fit.m_ns, 1),
            cycles_or_dash(fit.m_cycles),
            figure(fit.c_ns, 1),
            figure(fit.r2, 4)
        ));
    }
    if let Some(law) = &result.littles_law {
        out.push_str(&format!(
            " Little's law at DRAM (bandwidth × {} ns latency / 64 B): random reads at {} GB/s \
             = {} lines in flight; the chains reach parallelism {} ({} GB/s); streaming reads \
             at {} GB/s = {} (prefetchers add their own)\n",
            figure(law.latency_ns, 1),
            figure(law.random_read_gb_per_s, 2),
            figure(law.random_concurrency, 1),
            figure(law.chase_parallelism, 1),
            figure(law.chase_gb_per_s, 2),
            figure(law.stream_read_gb_per_s, 1),
            figure(law.stream_concurrency, 1)
        ));
    }
    if !result.grid.is_empty() {
        let mut chains = distinct(result.grid.iter().map(|r| r.chains));
        chains.sort_unstable();
        let mut sizes = distinct(result.grid.iter().map(|r| r.bytes));
        sizes.sort_unstable();
        out.push_str(&heading(
            "Parallelism by working set (rows) × chains N (columns)",
        ));
        let mut header = vec!["working set".to_string()];
        header.extend(chains.iter().map(|n| format!("N={n}")));
        let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = Table::new(&header_refs);
        for bytes in sizes {
            let mut cells = vec![Bytes(bytes).to_string()];
            cells.extend(chains.iter().map(|&n| {
                result
                    .grid
                    .iter()
                    .find(|r| r.bytes == bytes && r.chains == n)
                    .map_or("—".into(), |r| figure(r.parallelism, 1))
            }));
            t.row(cells);
        }
        out.push_str(&t.render());
        out.push_str(
            " In L1 the overlap is the load pipeline's (no misses); from L2 on it is misses in \
             flight; the DRAM rows are the memory-level parallelism\n",
        );
    }
    out
}

/// `max` evenly spaced values of the sorted `ks` (K values, page counts) plus, for each
/// cliff, the values on either side of it, so that a compact table still shows every step.
fn k_subset<T: Copy + Ord>(ks: &[T], cliffs: &[T], max: usize) -> Vec<T> {
    if ks.len() <= max || max < 2 {
        return ks.to_vec();
    }
    let mut picked: Vec<T> = (0..max)
        .map(|i| ks[i * (ks.len() - 1) / (max - 1)])
        .collect();
    for &cliff in cliffs {
        if let Some(&below) = ks.iter().rev().find(|&&k| k <= cliff) {
            picked.push(below);
        }
        if let Some(&above) = ks.iter().find(|&&k| k > cliff) {
            picked.push(above);
        }
    }
    picked.sort_unstable();
    picked.dedup();
    picked
}

/// The `rob` view: the cliff of each filler (the structure it fills and its entries), the
/// curves at a subset of K, and the serialised grid.
pub fn rob(result: &RobResult) -> String {
    let mut out = heading(&format!(
        "Out-of-order window: two independent misses K filler instructions apart (chases over {})",
        Bytes(result.chase_bytes)
    ));
    if result.structures.is_empty() {
        out.push_str(" no cliff was analysed\n");
    } else {
        let mut t = Table::new(&[
            "filler",
            "fills first",
            "entries",
            "window + architectural",
            "below ns",
            "above ns",
        ]);
        for s in &result.structures {
            t.row(vec![
                s.filler.clone(),
                s.structure.clone(),
                s.entries.map_or("— (no cliff)".into(), |e| e.to_string()),
                s.window_entries
                    .map_or("—".into(), |w| format!("{w} + {}", s.architectural)),
                figure(s.low_ns, 1),
                figure(s.high_ns, 1),
            ]);
        }
        out.push_str(&t.render());
    }
    let fillers = distinct(result.rows.iter().map(|r| r.filler.clone()));
    if !fillers.is_empty() {
        // K values every filler was measured at (the coarse sweep; refinements differ).
        let mut ks: Vec<u32> = distinct(result.rows.iter().map(|r| r.k))
            .into_iter()
            .filter(|&k| {
                fillers
                    .iter()
                    .all(|f| result.rows.iter().any(|r| &r.filler == f && r.k == k))
            })
            .collect();
        ks.sort_unstable();
        let shown = k_subset(&ks, &[], 10);
        out.push_str(&heading(&format!(
            "ns per iteration by filler and K{}",
            if shown.len() < ks.len() {
                format!(
                    " ({} of {} K values; the HTML report plots all)",
                    shown.len(),
                    ks.len()
                )
            } else {
                String::new()
            }
        )));
        let mut header = vec!["filler".to_string()];
        header.extend(shown.iter().map(|k| format!("K={k}")));
        let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = Table::new(&header_refs);
        for f in &fillers {
            let mut cells = vec![f.clone()];
            cells.extend(shown.iter().map(|&k| {
                result
                    .rows
                    .iter()
                    .find(|r| &r.filler == f && r.k == k)
                    .map_or("—".into(), |r| figure(r.ns_per_iter, 1))
            }));
            t.row(cells);
        }
        out.push_str(&t.render());
    }
    if !result.serialized.is_empty() {
        out.push_str(&heading(&format!(
            "Serialised blocks (N−1 misses, K nops, one miss): window {}, {} misses in flight at K = 0",
            result
                .serialized_window
                .map_or("not found".into(), |w| format!("≈ {w} instructions")),
            result.serialized_mlp.map_or("—".into(), |m| figure(m, 1))
        )));
        let mut ks = distinct(result.serialized.iter().map(|r| r.k));
        ks.sort_unstable();
        let window: Vec<u32> = result.serialized_window.into_iter().collect();
        let shown = k_subset(&ks, &window, 10);
        let mut misses = distinct(result.serialized.iter().map(|r| r.misses));
        misses.sort_unstable();
        let mut header = vec!["misses".to_string()];
        header.extend(shown.iter().map(|k| format!("K={k}")));
        let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = Table::new(&header_refs);
        for n in misses {
            let mut cells = vec![n.to_string()];
            cells.extend(shown.iter().map(|&k| {
                result
                    .serialized
                    .iter()
                    .find(|r| r.misses == n && r.k == k)
                    .map_or("—".into(), |r| figure(r.ns, 1))
            }));
            t.row(cells);
        }
        out.push_str(&t.render());
        out.push_str(" (ns per block)\n");
    }
    out
}

/// An optional figure with `decimals` decimals, or "—" when missing or not finite.
fn opt_figure(v: Option<f64>, decimals: usize) -> String {
    v.map_or("—".into(), |v| figure(v, decimals))
}

/// An optional count, or "—".
fn opt_count<T: ToString>(v: Option<T>) -> String {
    v.map_or("—".into(), |v| v.to_string())
}

/// An optional size in binary units, or "—".
fn opt_size(v: Option<u64>) -> String {
    v.map_or("—".into(), |b| Bytes(b).to_string())
}

/// Page counts shown per page size in the compact curve table of `tlb`.
const TLB_CURVE_ROWS: usize = 12;

/// The `tlb` view: the levels found (entries, reach, miss cost) beside CPUID's entries, a
/// compact curve per page size with the last point of each level marked, SAXPY with and
/// without huge pages, DRAM parallelism by page size and the reach table.
pub fn tlb(result: &TlbResult) -> String {
    let mut out = heading(
        "TLB reach and miss cost: one line per page, chased in random order over more and more pages",
    );
    if result.levels.is_empty() {
        out.push_str(" no TLB level was found\n");
    } else {
        let mut t = Table::new(&[
            "page",
            "level",
            "entries",
            "CPUID entries",
            "reach",
            "miss ns",
            "miss cycles",
        ]);
        for l in &result.levels {
            t.row(vec![
                Bytes(l.page_bytes).to_string(),
                l.name.clone(),
                opt_count(l.entries),
                opt_count(l.cpuid_entries),
                opt_size(l.reach_bytes),
                opt_figure(l.miss_ns, 1),
                l.miss_cycles.map_or("—".into(), cycles_or_dash),
            ]);
        }
        out.push_str(&t.render());
        out.push_str(
            " entries: pages covered before the next knee; miss: the step to the next plateau \
             (past the last TLB, a page walk; nested under a hypervisor)\n",
        );
    }

    for page in result.page_sizes() {
        let rows = result.curve(page);
        let pages: Vec<u64> = rows.iter().map(|r| r.pages).collect();
        // Each level's last page count: the point before its knee.
        let knees: Vec<(u64, &str)> = result
            .levels
            .iter()
            .filter(|l| l.page_bytes == page)
            .filter_map(|l| Some((l.entries?, l.name.as_str())))
            .collect();
        let cliffs: Vec<u64> = knees.iter().map(|k| k.0).collect();
        let even = TLB_CURVE_ROWS.saturating_sub(2 * cliffs.len()).max(4);
        let shown = k_subset(&pages, &cliffs, even);
        out.push_str(&heading(&format!(
            "{} pages: ns per load by pages touched (TLB = ns − dense, the same lines packed \
             densely){}",
            Bytes(page),
            if shown.len() < pages.len() {
                format!(
                    " ({} of {} page counts; the HTML report plots all)",
                    shown.len(),
                    pages.len()
                )
            } else {
                String::new()
            }
        )));
        let counted = rows.iter().any(|r| r.counters.is_some());
        let mut header = vec![
            "pages", "spans", "ns", "cycles", "dense ns", "TLB ns", "spread %",
        ];
        if counted {
            header.extend(miss_headers());
        }
        header.push("");
        let mut t = Table::new(&header);
        for r in rows.iter().filter(|r| shown.contains(&r.pages)) {
            let last_of: Vec<String> = knees
                .iter()
                .filter(|(entries, _)| {
                    pages.iter().rev().find(|&&p| p <= *entries) == Some(&r.pages)
                })
                .map(|(entries, name)| format!("◀ last in {name} ({entries} entries)"))
                .collect();
            let mut row = vec![
                r.pages.to_string(),
                Bytes(r.pages.saturating_mul(r.page_bytes)).to_string(),
                figure(r.ns, 2),
                cycles_or_dash(r.cycles),
                figure(r.dense_ns, 2),
                figure(r.tlb_ns, 2),
                figure(r.spread_pct, 1),
            ];
            if counted {
                row.extend(miss_cells(r.counters.as_ref()));
            }
            row.push(last_of.join(", "));
            t.row(row);
        }
        out.push_str(&t.render());
        if counted {
            out.push_str(
                " L1/L2/LLC/dTLB miss: misses per load of the one-line-per-page chase \
                 (hardware counters, an untimed pass after each point's trials)\n",
            );
            out.push_str(&miss_notes(rows.iter().filter_map(|r| r.counters.as_ref())));
        }
    }
    if result.rows.is_empty() {
        out.push_str(" no page count was measured\n");
    }

    if !result.saxpy.is_empty() {
        out.push_str(&heading(
            "SAXPY (y = a·x + y) over the same footprint: what huge pages buy a real kernel",
        ));
        let mut t = Table::new(&[
            "pattern",
            "page",
            "stride",
            "footprint",
            "ms per pass",
            "ns per element",
        ]);
        for r in &result.saxpy {
            t.row(vec![
                r.pattern.clone(),
                Bytes(r.page_bytes).to_string(),
                Bytes(r.stride_bytes).to_string(),
                Bytes(r.footprint_bytes).to_string(),
                figure(r.pass_ms, 2),
                figure(r.ns_per_access, 2),
            ]);
        }
        out.push_str(&t.render());
    }

    if !result.mlp_by_page_size.is_empty() {
        out.push_str(&heading("DRAM memory-level parallelism by page size"));
        for m in &result.mlp_by_page_size {
            out.push_str(&format!(
                " {} pages: parallelism {} with {} chains over {} ({} ns per load)\n",
                Bytes(m.page_bytes),
                figure(m.parallelism, 1),
                m.chains,
                Bytes(m.bytes),
                figure(m.ns_per_load, 2)
            ));
        }
    }

    if !result.reach.is_empty() {
        out.push_str(&heading(
            "TLB reach: entries × page size, CPUID and measured",
        ));
        let mut t = Table::new(&[
            "level",
            "page",
            "CPUID entries",
            "CPUID reach",
            "measured entries",
            "measured reach",
        ]);
        for r in &result.reach {
            t.row(vec![
                r.name.clone(),
                Bytes(r.page_bytes).to_string(),
                opt_count(r.cpuid_entries),
                opt_size(r.cpuid_reach_bytes),
                opt_count(r.measured_entries),
                opt_size(r.measured_reach_bytes),
            ]);
        }
        out.push_str(&t.render());
    }
    out
}

/// One node × node matrix: rows are labelled "node i" under `corner`, columns
/// "`column` j" (the threads' node down, the memory's node across).
fn node_matrix<T>(
    corner: &str,
    column: &str,
    labels: &[usize],
    cells: &[Vec<T>],
    cell: impl Fn(&T) -> String,
) -> String {
    let mut header = vec![corner.to_string()];
    header.extend(labels.iter().map(|j| format!("{column} {j}")));
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&header_refs);
    for (i, from) in labels.iter().enumerate() {
        let mut row = vec![format!("node {from}")];
        row.extend((0..labels.len()).map(|j| {
            cells
                .get(i)
                .and_then(|r| r.get(j))
                .map_or("—".into(), &cell)
        }));
        t.row(row);
    }
    t.render()
}

/// The `numa` view: latency (page-local and random chase) and bandwidth matrices (threads
/// on node i × memory on node j), the remote/local ratios, the kernel's distances, the CPUs
/// used and how much placement was verified.
pub fn numa(result: &NumaResult) -> String {
    // Node ids label the rows and columns; a matrix with more rows than ids (which the
    // experiment never gives) still shows every cell, labelled by index.
    let n = result
        .nodes
        .len()
        .max(result.latency_ns.len())
        .max(result.read_gb_per_s.len());
    let labels: Vec<usize> = (0..n)
        .map(|i| result.nodes.get(i).copied().unwrap_or(i))
        .collect();
    let matrix = |cells: &[Vec<f64>]| {
        node_matrix("threads on", "memory on node", &labels, cells, |v| {
            figure(*v, 1)
        })
    };
    let mut out = heading(&format!(
        "NUMA: idle latency, ns (page-local chase over {}, {} pages per window: no TLB misses)",
        Bytes(result.latency_bytes),
        result.page_local_window_pages
    ));
    if labels.is_empty() {
        out.push_str(" no node was measured\n");
    } else {
        out.push_str(&matrix(&result.latency_ns));
        if !result.random_latency_ns.is_empty() {
            out.push_str(&heading(
                "NUMA: idle latency, ns (random chase over the whole buffer: TLB misses and \
                 page walks included, the page tables on the memory's node)",
            ));
            out.push_str(&matrix(&result.random_latency_ns));
        }
        out.push_str(&heading(&format!(
            "NUMA: read bandwidth, GB/s ({} thread(s) per node, {} each, {})",
            result.threads_per_node,
            Bytes(result.bandwidth_bytes),
            if result.isa.is_empty() {
                "—"
            } else {
                result.isa.as_str()
            }
        )));
        // A cell whose reading threads did not run together is marked like bandwidth's.
        let cells: Vec<Vec<String>> = result
            .read_gb_per_s
            .iter()
            .enumerate()
            .map(|(i, row)| {
                row.iter()
                    .enumerate()
                    .map(|(j, v)| {
                        let overlap = result.read_overlap.get(i).and_then(|r| r.get(j));
                        let flag = if overlap.is_some_and(|&o| o < MIN_OVERLAP) {
                            "!"
                        } else {
                            ""
                        };
                        format!("{flag}{}", figure(*v, 1))
                    })
                    .collect()
            })
            .collect();
        out.push_str(&node_matrix(
            "threads on",
            "memory on node",
            &labels,
            &cells,
            String::clone,
        ));
    }
    if result.remote_local_latency_ratio.is_some() || result.remote_local_bandwidth_ratio.is_some()
    {
        out.push_str(&format!(
            "\n remote / local: latency × {}, bandwidth × {}\n",
            opt_figure(result.remote_local_latency_ratio, 2),
            opt_figure(result.remote_local_bandwidth_ratio, 2)
        ));
    }
    if !result.distances.is_empty() {
        let n = result.distances.len();
        let labels: Vec<usize> = (0..n)
            .map(|i| result.nodes.get(i).copied().unwrap_or(i))
            .collect();
        out.push_str(&heading(
            "Kernel's node distances (firmware's relative cost, 10 = local)",
        ));
        out.push_str(&node_matrix(
            "from",
            "to node",
            &labels,
            &result.distances,
            |d| d.to_string(),
        ));
    }
    if !labels.is_empty() {
        out.push('\n');
    }
    let used: Vec<String> = labels
        .iter()
        .zip(&result.cpus)
        .filter(|(_, cpus)| !cpus.is_empty())
        .map(|(node, cpus)| format!("node {node} on CPU {}", cpu_list(cpus)))
        .collect();
    if !used.is_empty() {
        out.push_str(&format!(
            " threads: {} (latency on the first CPU of each)\n",
            used.join(", ")
        ));
    }
    let verified: Vec<f64> = result
        .placement_verified
        .iter()
        .flatten()
        .filter_map(|v| v.filter(|v| v.is_finite()))
        .collect();
    if !labels.is_empty() {
        out.push_str(&match verified.iter().copied().reduce(f64::min) {
            Some(min) => format!(
                " pages on the intended node (get_mempolicy): at least {} % in the {} of {} \
                 cells verified\n",
                figure(min * 100.0, 1),
                verified.len(),
                labels.len() * labels.len()
            ),
            None => " placement not verified (get_mempolicy gave no answer)\n".to_string(),
        });
        out.push_str(&format!(
            " widest spread of any cell: {} %{}\n",
            figure(result.max_spread_pct, 1),
            if result.max_spread_pct.is_finite() && result.max_spread_pct > 10.0 {
                " (noisy: compare cells with care)"
            } else {
                ""
            }
        ));
    }
    if let Some(note) = &result.note {
        out.push_str(&format!(" note: {note}\n"));
    }
    out
}

/// Settings and warnings, printed after the results.
/// The tables of every experiment in the report, in the order they ran.
pub fn experiments(e: &super::Experiments, with_points: bool) -> String {
    let mut out = String::new();
    if let Some(r) = &e.latency {
        out.push_str(&latency(r, with_points));
    }
    if let Some(r) = &e.miss_impact {
        out.push_str(&miss_impact(r));
    }
    if let Some(r) = &e.bandwidth {
        out.push_str(&bandwidth(r));
    }
    if let Some(r) = &e.stride {
        out.push_str(&stride(r));
    }
    if let Some(r) = &e.loaded {
        out.push_str(&loaded(r));
    }
    if let Some(r) = &e.mlp {
        out.push_str(&mlp(r));
    }
    if let Some(r) = &e.rob {
        out.push_str(&rob(r));
    }
    if let Some(r) = &e.tlb {
        out.push_str(&tlb(r));
    }
    if let Some(r) = &e.numa {
        out.push_str(&numa(r));
    }
    out
}

/// `1234567` → `1,234,567`.
fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if value < 0.0 {
        out.insert(0, '-');
    }
    out
}

fn spread_text(summary: &crate::stats::summary::Summary) -> String {
    if summary.count < 2 {
        String::new()
    } else {
        format!("±{:.1}%", summary.spread_pct())
    }
}

/// A derived figure with the digits that matter: 0.412, 3.27, 51.2, 51,744.
fn derived_value(v: f64) -> String {
    match v.abs() {
        a if a >= 1000.0 => thousands(v),
        a if a >= 100.0 => format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.1}"),
        a if a >= 1.0 => format!("{v:.2}"),
        _ => format!("{v:.3}"),
    }
}

/// The command as a shell would need it typed: words with spaces or shell characters
/// in single quotes, the whole in double quotes when it has several words.
fn shell_quoted(argv: &[String]) -> String {
    let words: Vec<String> = argv
        .iter()
        .map(|word| {
            let plain = !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', r"'\''"))
            }
        })
        .collect();
    format!("\"{}\"", words.join(" "))
}

/// `memscope stat`: the counts, the derived figures, the times and the notes.
pub fn stat(result: &crate::stat::StatResult) -> String {
    let runs = result.runs.len();
    let mut out = heading(&format!(
        "Counters for {} ({})",
        shell_quoted(&result.command),
        if runs == 1 {
            "1 run".to_string()
        } else {
            format!("median of {runs} runs, spread = 1.4826·MAD/median")
        }
    ));
    let mut table = Table::new(&["event", "count", "unit", "spread", "counted"]);
    for e in &result.events {
        let Some(count) = &e.count else {
            let why = e.not_supported.clone().unwrap_or_default();
            table.spanning_row(e.event.clone(), why);
            continue;
        };
        let (value, unit) = match e.event.as_str() {
            "task-clock" | "cpu-clock" => (format!("{:.2}", count.median / 1e6), "ms"),
            _ => (thousands(count.median), ""),
        };
        let marks = format!(
            "{}{}",
            if e.multiplexed { "*" } else { "" },
            if e.user_only { " (u)" } else { "" }
        );
        table.row(vec![
            e.event.clone(),
            value + &marks,
            unit.to_string(),
            spread_text(count),
            e.running_pct
                .map(|p| format!("{p:.0}%"))
                .unwrap_or_default(),
        ]);
    }
    out.push_str(&table.render());
    if !result.derived.is_empty() {
        out.push('\n');
        let mut table = Table::new(&["derived", "value", "unit", "spread", "from"]);
        for d in &result.derived {
            match &d.value {
                Some(v) => table.row(vec![
                    d.name.clone(),
                    derived_value(v.median),
                    d.unit.clone(),
                    spread_text(v),
                    d.formula.clone(),
                ]),
                None => {
                    table.spanning_row(d.name.clone(), d.not_supported.clone().unwrap_or_default())
                }
            }
        }
        out.push_str(&table.render());
    }
    out.push_str(&format!(
        "\n {:.4} s elapsed{}, {:.4} s user, {:.4} s system; {}\n",
        result.elapsed_s.median,
        match spread_text(&result.elapsed_s) {
            s if s.is_empty() => String::new(),
            s => format!(" ({s})"),
        },
        result.user_s.median,
        result.system_s.median,
        result.termination
    ));
    for note in &result.notes {
        out.push_str(&format!(" - {note}\n"));
    }
    out
}

pub fn settings_and_warnings(report: &Report) -> String {
    let s = &report.settings;
    let mut out = String::new();
    if !s.cpus.is_empty() {
        let pages = match &s.pages_obtained {
            Some(p) if p.policy == "thp" => format!(
                "thp asked, {:.0}% of the buffer on 2 MiB pages",
                p.huge_fraction * 100.0
            ),
            Some(p) => format!("{} ({} pages)", p.policy, Bytes(p.page_bytes)),
            None => s.pages_requested.clone(),
        };
        out.push_str(&format!(
            "\n Pinned to CPU {}; pages: {}; timer: {}{}; {}\n",
            cpu_list(&s.cpus),
            pages,
            s.timer,
            if s.team_clock.is_empty() {
                String::new()
            } else {
                format!("; clock of multi-thread trials: {}", s.team_clock)
            },
            s.sampling
        ));
    }
    if !report.warnings.is_empty() {
        out.push_str(&heading("Warnings"));
        for w in &report.warnings {
            out.push_str(&format!(" ! {}\n", w.message));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_shown_as_they_would_be_typed() {
        let argv = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(shell_quoted(&argv(&["true"])), "\"true\"");
        assert_eq!(
            shell_quoted(&argv(&["sh", "-c", "echo it's; exit 1"])),
            r#""sh -c 'echo it'\''s; exit 1'""#
        );
        assert_eq!(shell_quoted(&argv(&["ls", ""])), "\"ls ''\"");
    }
    use crate::report::samples;

    #[test]
    fn a_spanning_row_does_not_widen_the_columns() {
        let mut t = Table::new(&["event", "count"]);
        t.row(vec!["task-clock".into(), "0.55".into()]);
        t.spanning_row("cycles".into(), "not supported: no hardware PMU".into());
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[2], " task-clock   0.55");
        assert_eq!(lines[3], " cycles      not supported: no hardware PMU");
    }

    #[test]
    fn tables_align_columns() {
        let mut t = Table::new(&["name", "value"]);
        t.row(vec!["a".into(), "1.5".into()]);
        t.row(vec!["longer".into(), "12.25".into()]);
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[2].ends_with("  1.5"), "{text}");
        assert!(lines[3].ends_with("12.25"), "{text}");
    }

    #[test]
    fn miss_impact_view_has_a_row_per_pattern_and_one_note_per_reason() {
        let text = miss_impact(&crate::experiments::miss_impact::tests::sample());
        let row = |start: &str| {
            text.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("{start}: {text}"))
                .split_whitespace()
                .collect::<Vec<_>>()
        };
        assert_eq!(
            row(" DRAM     128 MiB  random"),
            [
                "DRAM", "128", "MiB", "random", "101.00", "4.20", "ms", "1.000", "1.000", "1.000",
                "0.000", "0", "100.00", "1.01"
            ]
        );
        assert_eq!(
            row(" DRAM     128 MiB  sequential"),
            [
                "DRAM",
                "128",
                "MiB",
                "sequential",
                "5.00",
                "4.20",
                "ms",
                "n/s",
                "n/s",
                "n/s",
                "0.000",
                "0",
                "n/c",
                "—"
            ]
        );
        assert!(
            text.contains("AMAT = t_L1d + m_L1·(t_L2 − t_L1d)"),
            "{text}"
        );
        assert!(text.contains("(L1d 1.00, L2 4.00, L3 12.00, DRAM 100.00 ns)"));
        assert_eq!(text.matches(" n/s: ").count(), 1, "{text}");
        assert!(text.contains(" n/c: AMAT: not computed: L1 misses not supported: "));
        assert_eq!(duration(850.0), "850 ns");
        assert_eq!(duration(4.2e6), "4.20 ms");
        assert_eq!(duration(1.5e9), "1.50 s");
    }

    #[test]
    fn loaded_view_has_the_headline_and_marks_each_knee() {
        let text = loaded(&samples::loaded());
        assert!(
            text.contains("idle 79.5 ns (238.5 cycles) · peak 66.0 GB/s"),
            "{text}"
        );
        assert!(
            text.contains("knee at delay 200: 41.7 GB/s, 81.5 ns, 63 % of peak"),
            "{text}"
        );
        assert_eq!(text.matches("◀ knee").count(), 2, "{text}");
        let knee_line = text.lines().find(|l| l.contains("◀ knee")).unwrap();
        assert!(
            knee_line.contains("41.7") && knee_line.contains("81.5"),
            "{text}"
        );
        // Rows from the idle end to full load.
        let read = &text[text.find("read, 3 injectors").unwrap()..];
        assert!(
            read.find(" 400 ").unwrap() < read.find(" 0 ").unwrap(),
            "{text}"
        );
        assert!(text.contains("1:1, 3 injectors"));
    }

    #[test]
    fn mlp_view_has_levels_saturation_fit_and_grid() {
        let text = mlp(&samples::mlp());
        assert!(
            text.contains("L2 (512 KiB)") && text.contains("DRAM (256 MiB)"),
            "{text}"
        );
        assert!(
            text.contains("saturates at 8 chains: parallelism 7.4"),
            "{text}"
        );
        assert!(
            text.contains("saturates at 10 chains: parallelism 9.7"),
            "{text}"
        );
        assert!(text.contains("M = 85.3 ns (255.9 cycles), C = 30.1 ns, r² = 0.9987"));
        assert!(text.contains("= 9.1 lines in flight"), "{text}");
        assert!(text.contains("= 20.0 (prefetchers"), "{text}");
        assert!(text.contains("N=16") && text.contains("10.3"), "{text}");
    }

    #[test]
    fn rob_view_has_cliffs_a_compact_curve_and_the_serialised_grid() {
        let text = rob(&samples::rob());
        let nop = text.lines().find(|l| l.contains("reorder buffer")).unwrap();
        assert!(nop.contains("224"), "{text}");
        assert!(text.contains("— (no cliff)"), "{text}");
        // 21 K values shown as an evenly spaced subset, one line per filler.
        assert!(text.contains("10 of 21 K values"), "{text}");
        let add = text.lines().find(|l| l.starts_with(" add ")).unwrap();
        assert!(add.contains("100.0") && add.contains("190.0"), "{text}");
        assert!(text.contains("window ≈ 224 instructions, 3.6 misses in flight"));
        assert!(text.contains("K=224") && text.contains("K=256"), "{text}");
    }

    #[test]
    fn empty_and_nan_results_print_dashes() {
        let text = loaded(&samples::empty_loaded());
        assert!(
            text.contains("idle — ns (— cycles)") && text.contains("no knee"),
            "{text}"
        );
        let text = mlp(&samples::empty_mlp());
        assert!(text.contains("(—)"), "{text}");
        let text = rob(&samples::empty_rob());
        assert!(text.contains("no cliff was analysed"), "{text}");
        let (l, m, r) = samples::nan_results();
        for text in [loaded(&l), mlp(&m), rob(&r)] {
            assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
            assert!(text.contains('—'), "{text}");
        }
        assert!(mlp(&m).contains("saturates at 8 chains"));
        assert!(rob(&r).contains("window not found"));
    }

    /// The table under the heading that starts with `title`: its data rows.
    fn table_rows<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
        let start = text
            .find(&format!("\n{title}"))
            .unwrap_or_else(|| panic!("{title}"));
        text[start + 1..]
            .split("\n\n")
            .next()
            .unwrap()
            .lines()
            .skip(3)
            .collect()
    }

    #[test]
    fn tlb_view_has_levels_compact_curves_saxpy_mlp_and_reach() {
        let text = tlb(&samples::tlb());
        let l1 = text
            .lines()
            .find(|l| l.starts_with(" 4 KiB  L1 DTLB"))
            .unwrap();
        for figure in ["64", "72", "256 KiB", "2.0", "6.0"] {
            assert!(l1.contains(figure), "{figure}: {text}");
        }
        let walk = text
            .lines()
            .find(|l| l.starts_with(" 4 KiB  page walk"))
            .unwrap();
        assert_eq!(walk.matches('—').count(), 5, "{text}");

        // At most about 12 page counts per page size, evenly spread, with both sides of
        // every knee and the last point of each level marked.
        assert!(text.contains("(11 of 30 page counts"), "{text}");
        let small = table_rows(&text, "4 KiB pages:");
        assert!(small.len() <= 12 && small.len() >= 8, "{text}");
        assert!(small[0].starts_with(" 1 ") && small.last().unwrap().starts_with(" 32768 "));
        let row = |p: &str| *small.iter().find(|l| l.starts_with(p)).unwrap();
        assert!(
            row(" 64 ").contains("◀ last in L1 DTLB (64 entries)"),
            "{text}"
        );
        assert!(row(" 96 ").contains("3.20") && row(" 96 ").contains("2.00"));
        assert!(row(" 2048 ").contains("◀ last in L2 DTLB (2048 entries)"));
        assert!(row(" 3072 ").contains("29.00") && row(" 3072 ").contains("25.00"));
        let huge = table_rows(&text, "2 MiB pages:");
        assert!(huge.len() <= 12, "{text}");
        assert_eq!(
            huge.iter().filter(|l| l.contains("◀ last in")).count(),
            2,
            "{text}"
        );
        assert!(huge.iter().any(|l| l.starts_with(" 64 ")), "{text}");

        let saxpy = text
            .lines()
            .find(|l| l.contains("stride 4 KiB, huge pages"))
            .unwrap();
        assert!(saxpy.contains("2 MiB") && saxpy.ends_with("3.10"), "{text}");
        assert!(text.contains(" 4 KiB pages: parallelism 8.6 with 16 chains over 256 MiB"));
        assert!(text.contains(" 2 MiB pages: parallelism 11.2"));
        let gib = text.lines().find(|l| l.contains("1 GiB")).unwrap();
        assert!(gib.contains("72 GiB") && gib.ends_with('—'), "{text}");
    }

    #[test]
    fn numa_view_has_both_matrices_ratios_distances_and_the_note() {
        let text = numa(&samples::numa());
        let latency = table_rows(&text, "NUMA: idle latency");
        assert_eq!(latency.len(), 2, "{text}");
        assert!(latency[0].contains("90.0") && latency[0].ends_with("140.0"));
        let bandwidth = table_rows(&text, "NUMA: read bandwidth");
        assert!(bandwidth[1].contains("24.0") && bandwidth[1].ends_with("41.0"));
        assert!(
            text.contains("memory on node 0  memory on node 1"),
            "{text}"
        );
        assert!(text.contains("4 thread(s) per node, 128 MiB each"));
        assert!(text.contains("remote / local: latency × 1.56, bandwidth × 0.60"));
        let distances = table_rows(&text, "Kernel's node distances");
        assert!(distances[0].ends_with("21") && distances[1].ends_with("10"));
        assert!(
            text.contains("at least 99.8 % in the 3 of 4 cells verified"),
            "{text}"
        );
        let random = table_rows(&text, "NUMA: idle latency, ns (random chase");
        assert!(
            random[1].contains("173.0") && random[1].ends_with("106.0"),
            "{text}"
        );
        assert!(text.contains("64 pages per window") && text.contains("128 MiB each, avx2"));
        assert!(
            text.contains("threads: node 0 on CPU 0-3, node 1 on CPU 4-7"),
            "{text}"
        );
        assert!(
            text.contains("widest spread of any cell: 2.5 %\n"),
            "{text}"
        );
        assert!(!text.contains("note:"));

        let one = numa(&samples::numa_single_node());
        assert!(one.contains(" note: one NUMA node"), "{one}");
        assert!(one.contains("95.0") && one.contains("38.5"));
        assert!(!one.contains("remote / local") && !one.contains("node 1"));
        assert!(one.contains("14.0 % (noisy"), "{one}");
    }

    #[test]
    fn empty_and_nan_tlb_and_numa_print_dashes() {
        let text = tlb(&samples::empty_tlb());
        assert!(text.contains("no TLB level was found") && text.contains("no page count"));
        let text = numa(&samples::empty_numa());
        assert!(text.contains("no node was measured"), "{text}");
        let (t, n) = samples::nan_tlb_numa();
        for text in [tlb(&t), numa(&n)] {
            assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
            assert!(text.contains('—'), "{text}");
        }
        let text = tlb(&t);
        assert!(text.contains("parallelism — with 16 chains"), "{text}");
        let text = numa(&n);
        assert!(text.contains("latency × —, bandwidth × —"), "{text}");
        assert!(text.contains("placement not verified"), "{text}");
        // The ragged row's missing cell is a dash, not a panic.
        let bandwidth = table_rows(&text, "NUMA: read bandwidth");
        assert!(bandwidth[1].ends_with('—'), "{text}");
    }

    #[test]
    fn latency_levels_and_points_with_counters_show_misses_and_each_note_once_per_table() {
        let plain = latency(&samples::latency_counted(false), true);
        assert!(
            !plain.contains("L1 miss") && !plain.contains("n/s"),
            "{plain}"
        );

        let result = samples::latency_counted(true);
        let text = latency(&result, false);
        let header = text.lines().find(|l| l.starts_with(" level")).unwrap();
        for label in ["L1 miss", "L2 miss", "LLC miss", "dTLB miss"] {
            assert!(header.contains(label), "{header}");
        }
        // Each level shows the point nearest its plateau's middle: 8 KiB (L1 0.1), 256 KiB
        // (0.6) and 8 MiB (1.1); L2 and the DTLB were not counted, the LLC multiplexed.
        let row = |name: &str| text.lines().find(|l| l.starts_with(name)).unwrap();
        for (name, l1) in [(" L1d", "0.100"), (" L2 ", "0.600"), (" DRAM", "1.100")] {
            let cells: Vec<&str> = row(name).split_whitespace().rev().take(4).collect();
            assert_eq!(cells, ["n/s", "0.010*", "n/s", l1], "{}", row(name));
        }
        let l2_note = " L2 miss (none): not supported: no generic L2 event\n";
        let dtlb_note = " dTLB miss (dTLB-load-misses): not supported: the CPU has no such event\n";
        assert_eq!(text.matches(l2_note).count(), 1, "{text}");
        assert_eq!(text.matches(dtlb_note).count(), 1, "{text}");
        assert_eq!(text.matches("the PMU was shared").count(), 1, "{text}");
        assert!(
            !text.contains("no hardware PMU (test)"),
            "the random curve is not shown"
        );

        // With the points: the sweep table and the random curve's table, whose notes come
        // once after both.
        let text = latency(&result, true);
        assert_eq!(text.matches(l2_note).count(), 2, "{text}");
        assert_eq!(text.matches(dtlb_note).count(), 2, "{text}");
        assert_eq!(
            text.matches(" L1 miss (L1_miss_event): not supported: no hardware PMU (test)\n")
                .count(),
            1,
            "{text}"
        );
        let sweep = table_rows(&text, "Sweep\n");
        assert_eq!(sweep.len(), result.points.len());
        let last_four = |row: &str| -> Vec<String> {
            let cells: Vec<&str> = row.split_whitespace().collect();
            cells[cells.len() - 4..]
                .iter()
                .map(|c| c.to_string())
                .collect()
        };
        assert_eq!(last_four(sweep[0]), ["0.000", "n/s", "0.010*", "n/s"]);
        let random = table_rows(&text, "Sweep, random chase: misses per load");
        assert!(random
            .iter()
            .take(result.points.len())
            .all(|r| last_four(r) == ["n/s"; 4]));
    }

    #[test]
    fn stride_with_counters_adds_a_matrix_per_counted_level_and_notes_for_the_rest() {
        let plain = stride(&samples::stride_counted(false));
        assert!(!plain.contains("miss"), "{plain}");
        let text = stride(&samples::stride_counted(true));
        let l1 = table_rows(&text, "L1 miss per access, read");
        let cells: Vec<&str> = l1[0].split_whitespace().collect();
        assert_eq!(cells, ["4", "KiB", "0.125", "1.000", "1.000"]);
        assert!(table_rows(&text, "LLC miss per access, read")[1].contains("0.010*"));
        assert!(!text.contains("\nL2 miss per access") && !text.contains("\ndTLB miss per"));
        assert!(text.contains(" read: L2 miss, dTLB miss per access not counted in any row:\n"));
        assert_eq!(
            text.matches("L2 miss (none): not supported").count(),
            1,
            "{text}"
        );
        assert_eq!(
            text.matches("dTLB miss (dTLB-load-misses)").count(),
            1,
            "{text}"
        );
    }

    #[test]
    fn tlb_curves_with_counters_have_miss_columns_and_notes_per_page_size() {
        let mut result = samples::tlb();
        assert!(!tlb(&result).contains("L1 miss"));
        for r in &mut result.rows {
            r.counters = Some(samples::uncounted_access());
        }
        let text = tlb(&result);
        assert_eq!(text.matches("  dTLB miss").count(), 2, "{text}");
        let note = " LLC miss (LLC_miss_event): not supported: no hardware PMU (test)\n";
        assert_eq!(text.matches(note).count(), 2, "one per page size: {text}");
        let curve = table_rows(&text, "4 KiB pages: ns per load");
        let rows = curve.iter().take_while(|r| !r.contains("miss"));
        assert!(rows
            .map(|r| r.split_whitespace().filter(|c| *c == "n/s").count())
            .all(|n| n == 4));
    }

    #[test]
    fn k_subset_keeps_the_ends_and_both_sides_of_cliffs() {
        let ks: Vec<u32> = (0..=100).collect();
        let shown = k_subset(&ks, &[37], 5);
        assert_eq!(shown, vec![0, 25, 37, 38, 50, 75, 100]);
        assert_eq!(k_subset(&[1, 2, 3], &[2], 5), vec![1, 2, 3]);
    }
}
