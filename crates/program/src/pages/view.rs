//! `memscope pages` in every output: the top regions with their share of the signal, the
//! histograms of all regions (ranked and in address order) and the heat over time for
//! `record`; the three arms (a table, and in HTML charts of their time and huge-page
//! memory), the trade-off and the regions before and after for `apply`; CSV tables with
//! every region and every run.

use serde::Serialize;

use super::apply::{Arm, PagesApply};
use super::record::PagesRecord;
use super::regions::{Region, REGION_BYTES};
use super::PagesResult;
use crate::units::Bytes;
use crate::view::chart::{Axis, BarChart, Heatmap, PALETTE};
use crate::view::data_row::{Full, Raw};
use crate::view::format;
use crate::view::{Block, Column, DataTable, Medium, Paragraph, Section, Table, Text};

/// Bars in one histogram at most (the CSV has every region).
const MAX_BARS: usize = 1024;
/// Columns of the heat-over-time view at most (intervals are summed into them): 24 cells
/// wide enough for their values fit a 1,400 px window (48 were drawn 5 px small).
const MAX_TIME_COLUMNS: usize = 24;

impl PagesResult {
    /// The sections of `memscope pages`: the record; for `apply`, the record it used and
    /// the comparison.
    pub fn sections(&self) -> Vec<Section> {
        match self {
            PagesResult::Record(r) => vec![record_section(r, "pages", "Regions")],
            PagesResult::Apply(a) => vec![
                record_section(&a.record, "pages", "Regions"),
                apply_section(a),
            ],
        }
    }
}

fn kib(kb: f64) -> String {
    Bytes((kb.max(0.0) * 1024.0).round() as u64).to_string()
}

fn region_end(r: &Region) -> u64 {
    r.start + REGION_BYTES
}

fn record_section(r: &PagesRecord, id: &'static str, nav: &str) -> Section {
    let touched: Vec<&Region> = r.regions.iter().filter(|x| x.value > 0.0).collect();
    let mut section = Section::new(
        id,
        nav,
        format!(
            "Regions of {}: top {} of {} touched 2 MiB regions by {}",
            format::shell_quoted(&r.command),
            r.top.min(touched.len()),
            touched.len(),
            r.signal.name
        ),
    );
    section.push(Paragraph::note(
        Text::plain("Source: ")
            .strong(r.source.name())
            .add(format!(" — {}. ", r.source_description))
            .add(format!("Signal: {}.", r.signal.meaning)),
    ));
    if !r.sources_not_used.is_empty() {
        section.push(Paragraph::muted(format!(
            "Not used: {}.",
            r.sources_not_used.join("; ")
        )));
    }
    let several = r.processes.len() > 1;
    section.push(top_table(r, several));
    section.push(Paragraph::note(format!(
        "{:.3} s elapsed, {:.3} s user, {:.3} s system; {}; {} interval(s) of {:.0} ms; \
         {} region(s) seen in {} process(es), {} resident.",
        r.elapsed_s,
        r.user_s,
        r.system_s,
        r.termination,
        r.intervals,
        r.interval_ms,
        r.regions.len(),
        r.processes.len().max(1),
        kib(r.regions.iter().map(|x| x.resident_kb).sum())
    )));
    for note in &r.notes {
        section.push(Paragraph::warning(note.text()));
    }
    if !touched.is_empty() {
        section.push(Block::Only(Medium::Html, histograms(r, &touched)));
    }
    if let Some(heat) = timeline(r) {
        section.push(Block::Only(Medium::Html, vec![heat.into()]));
    }
    section.push(regions_data(r));
    section
}

fn top_table(r: &PagesRecord, several: bool) -> Table {
    let pmu = r.regions.iter().any(|x| x.samples > 0);
    let huge = r.regions.iter().any(|x| x.huge_kb > 0.0);
    let mut columns = vec![Column::number("#"), Column::text("region")];
    if several {
        columns.push(Column::text("process"));
    }
    columns.extend([
        Column::text("mapping"),
        Column::number(r.signal.name.as_str()).titled(r.signal.meaning.as_str()),
        Column::number("share"),
        Column::number("cumulative"),
        Column::number("resident"),
    ]);
    if huge {
        columns.push(Column::number("in huge pages"));
    }
    if pmu {
        columns.extend([
            Column::number("samples"),
            Column::number("TLB-miss samples"),
            Column::quantity("mean latency", "cycles"),
        ]);
    }
    let mut table = Table::new(columns);
    for (i, x) in r
        .regions
        .iter()
        .filter(|x| x.value > 0.0)
        .take(r.top)
        .enumerate()
    {
        let mut row = vec![
            (i + 1).to_string(),
            format!("{:#x}–{:#x}", x.start, region_end(x)),
        ];
        if several {
            row.push(format!("{} {}", x.pid, x.process));
        }
        row.extend([
            x.mapping.clone(),
            format::thousands(x.value.round()),
            format!("{}%", format::fixed(x.share_pct, 1)),
            format!("{}%", format::fixed(x.cumulative_pct, 1)),
            kib(x.resident_kb),
            if x.huge_kb > 0.0 {
                kib(x.huge_kb)
            } else {
                String::new()
            },
        ]);
        if pmu {
            row.extend([
                x.samples.to_string(),
                x.tlb_miss_samples.to_string(),
                x.mean_weight
                    .map(|w| format::fixed(w, 0))
                    .unwrap_or_default(),
            ]);
        }
        table.row(row);
    }
    table.note(
        "region: the 2 MiB-aligned stretch of virtual memory (one huge page's reach); \
         mapping: what /proc/PID/maps names there (anon = anonymous mmap); share: of all \
         regions' signal; resident and in huge pages: peak over the run",
    );
    table
}

/// Two bar charts of every touched region: ranked, and in address order.
fn histograms(r: &PagesRecord, touched: &[&Region]) -> Vec<Block> {
    let axis = Axis::linear(r.signal.name.as_str());
    let ranked: Vec<&Region> = touched.iter().copied().take(MAX_BARS).collect();
    let mut by_address = ranked.clone();
    by_address.sort_by_key(|x| (x.pid, x.start));
    let top_color = PALETTE[1].to_string();
    let label_every = |n: usize| (n / 16).max(1);
    let ranked_chart = BarChart::new(format!(
        "Every touched region, ranked ({} regions{})",
        touched.len(),
        if touched.len() > MAX_BARS {
            format!(", the first {MAX_BARS} shown")
        } else {
            String::new()
        }
    ))
    .x_label("rank")
    .y_axis(axis.clone())
    .categories(
        (0..ranked.len())
            .map(|i| {
                if i % label_every(ranked.len()) == 0 {
                    (i + 1).to_string()
                } else {
                    String::new()
                }
            })
            .collect(),
    )
    .series(
        r.signal.name.as_str(),
        ranked.iter().map(|x| x.value).collect(),
        Some(top_color.clone()),
    )
    .value_labels(None);
    // In address order, the top N in a second colour.
    let top: Vec<(u32, u64)> = ranked
        .iter()
        .take(r.top)
        .map(|x| (x.pid, x.start))
        .collect();
    let is_top = |x: &&Region| top.contains(&(x.pid, x.start));
    let address_chart = BarChart::new("The same regions in address order (top regions in orange)")
        .x_label("region start (virtual address)")
        .y_axis(axis)
        .categories(
            by_address
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    if i % (by_address.len() / 5).max(1) == 0 {
                        format!("{:#x}", x.start)
                    } else {
                        String::new()
                    }
                })
                .collect(),
        )
        .series(
            format!("top {}", r.top),
            by_address
                .iter()
                .map(|x| if is_top(x) { x.value } else { f64::NAN })
                .collect(),
            Some(PALETTE[1].to_string()),
        )
        .series(
            "other regions",
            by_address
                .iter()
                .map(|x| if is_top(x) { f64::NAN } else { x.value })
                .collect(),
            Some(PALETTE[0].to_string()),
        )
        .value_labels(None);
    vec![ranked_chart.into(), address_chart.into()]
}

/// The heat of the top regions over time (address × time), intervals summed into at most
/// `MAX_TIME_COLUMNS` columns.
fn timeline(r: &PagesRecord) -> Option<Heatmap> {
    let t = r.timeline.as_ref()?;
    let intervals = t.values.first()?.len();
    if intervals < 2 || t.regions.is_empty() {
        return None;
    }
    let per_column = intervals.div_ceil(MAX_TIME_COLUMNS);
    let columns = intervals.div_ceil(per_column);
    let values: Vec<Vec<f64>> = t
        .values
        .iter()
        .map(|row| {
            row.chunks(per_column)
                .map(|c| c.iter().sum::<f64>() / c.len() as f64)
                .collect()
        })
        .collect();
    Some(
        Heatmap::new(format!(
            "Heat over time: the {} hottest regions in address order",
            t.regions.len()
        ))
        .x_label(format!(
            "time, s ({} ms per column)",
            format::fixed(t.interval_ms * per_column as f64, 0)
        ))
        .y_label("region")
        .columns(
            (0..columns)
                .map(|c| format::fixed(c as f64 * per_column as f64 * t.interval_ms / 1e3, 1))
                .collect(),
        )
        .rows(
            t.regions
                .iter()
                .map(|(_, start)| format!("{start:#x}"))
                .collect(),
        )
        .values(values)
        .value_label(format!("{} per interval", r.signal.name))
        .decimals(0),
    )
}

/// A row of `pages_regions`: one region, by rank, addresses in hex.
#[derive(Serialize, Default)]
struct RegionCsvRow<'a> {
    rank: usize,
    pid: u32,
    process: &'a str,
    start: String,
    end: String,
    mapping: &'a str,
    anonymous: bool,
    value: Raw,
    share_pct: Raw,
    cumulative_pct: Raw,
    samples: u64,
    tlb_miss_samples: u64,
    mean_weight_cycles: Option<Full>,
    resident_kb: Raw,
    huge_kb: Raw,
}

fn regions_data(r: &PagesRecord) -> DataTable {
    DataTable::of(
        "pages_regions",
        r.regions.iter().enumerate().map(|(i, x)| RegionCsvRow {
            rank: i + 1,
            pid: x.pid,
            process: &x.process,
            start: format!("{:#x}", x.start),
            end: format!("{:#x}", region_end(x)),
            mapping: &x.mapping,
            anonymous: x.anonymous,
            value: Raw(x.value),
            share_pct: Raw(x.share_pct),
            cumulative_pct: Raw(x.cumulative_pct),
            samples: x.samples,
            tlb_miss_samples: x.tlb_miss_samples,
            mean_weight_cycles: x.mean_weight.map(Full),
            resident_kb: Raw(x.resident_kb),
            huge_kb: Raw(x.huge_kb),
        }),
    )
}

fn apply_section(a: &PagesApply) -> Section {
    let mut section = Section::new(
        "pages-apply",
        "Huge pages",
        format!(
            "Huge pages ({}) under the top {} regions of {}: {} blocks of interleaved runs",
            a.huge,
            a.top,
            format::shell_quoted(&a.command),
            a.repeat
        ),
    );
    if let Some(line) = trade_off(a) {
        section.push(Paragraph::callout(line));
    }
    section.push(arms_table(a));
    section.push(Block::Only(Medium::Html, arms_charts(a)));
    section.push(regions_table(a));
    section.push(Paragraph::muted(format!(
        "Regions from {}; ranges handed to the preload library: {}.",
        a.regions_from,
        a.ranges
            .iter()
            .map(|(s, e)| format!("{s:#x}–{e:#x}"))
            .collect::<Vec<_>>()
            .join(", ")
    )));
    if let Some(why) = &a.dtlb_not_counted {
        section.push(Paragraph::muted(format!(
            "dTLB counters: not supported: {why}."
        )));
    }
    for note in &a.notes {
        section.push(Paragraph::warning(note.text()));
    }
    for note in crate::view::format::process_tree_notes(&a.process_tree) {
        section.push(Paragraph::warning(note));
    }
    section.push(runs_data(a));
    section
}

fn trade_off(a: &PagesApply) -> Option<String> {
    let arm = |which: Arm| a.arms.iter().find(|x| x.arm == which);
    let (top, all) = (arm(Arm::Top)?, arm(Arm::All)?);
    let speedup = |x: &super::apply::ArmResult| {
        x.speedup.map_or(format::DASH.to_string(), |s| {
            format!(
                "{}×{}",
                format::fixed(s, 2),
                if x.significant { "" } else { " (~)" }
            )
        })
    };
    let mut line = format!(
        "Top {} regions huge: {} for {} of huge pages; all huge: {} for {}.",
        a.top,
        speedup(top),
        kib(top.huge_kb),
        speedup(all),
        kib(all.huge_kb)
    );
    let all_slower = all.significant && all.speedup.is_some_and(|s| s < 1.0);
    let top_faster = top.significant && top.speedup.is_some_and(|s| s > 1.0);
    if all_slower && top_faster {
        line.push_str(&format!(
            " Huge pages everywhere cost more than they buy here; the top {} give the whole \
             gain, with {} of the huge-page memory.",
            a.top,
            a.share_of_huge_memory_pct
                .map_or(String::new(), |m| format!("{}%", format::fixed(m, 1)))
        ));
    } else if let (Some(s), Some(m), true) = (
        a.share_of_speedup_pct,
        a.share_of_huge_memory_pct,
        // A share of an all-huge gain that is not there would be noise over noise.
        all.significant,
    ) {
        line.push_str(&format!(
            " The top {} buy {}% of the all-huge speed-up for {}% of its huge-page memory.",
            a.top,
            format::fixed(s, 0),
            format::fixed(m, 1)
        ));
    }
    Some(line)
}

fn arms_table(a: &PagesApply) -> Table {
    let dtlb = a.arms.iter().any(|x| x.dtlb.iter().any(Option::is_some));
    let mut columns = vec![
        Column::text("arm"),
        Column::quantity("time", "s").titled("median wall time of the successful runs"),
        Column::number("spread"),
        Column::number("runs"),
        Column::quantity("user", "s").titled("median user CPU time"),
        Column::quantity("system", "s").titled(
            "median system CPU time: page faults, zeroing and compaction (in a VM, also the \
             host backing memory the guest had returned)",
        ),
        Column::number("speed-up")
            .titled("median over the blocks of the 4 KiB run's time / this arm's run's time"),
        Column::number("p").titled(
            "two-sided Wilcoxon signed-rank test of the blocks' time ratios; ~ = not \
             significant (p ≥ 0.05)",
        ),
        Column::number("huge pages").titled("median of the runs' peak huge-page memory (smaps)"),
        Column::number("in chosen regions").titled(
            "median of the runs' huge-page memory inside the chosen regions averaged over \
             the run's time (shared in proportion to the overlap where a mapping reaches \
             beyond them)",
        ),
    ];
    if dtlb {
        columns.push(Column::number("dTLB load misses"));
    }
    let mut table = Table::new(columns);
    for x in &a.arms {
        let Some(time) = &x.time_s else {
            table.spanning_row(
                x.label.as_str(),
                format!("every run failed ({} runs)", x.runs.len()),
            );
            continue;
        };
        let in_regions = x.huge_in_regions_mean_kb;
        let mut row = vec![
            x.label.clone(),
            format::fixed(time.median, 3),
            format!("±{}%", format::spread(time.spread_pct())),
            if x.failed_runs > 0 {
                format!("{} ({} failed)", x.runs.len(), x.failed_runs)
            } else {
                x.runs.len().to_string()
            },
            format::fixed(x.user_s, 2),
            format::fixed(x.system_s, 2),
            match (x.arm, x.speedup) {
                (Arm::Baseline, _) => "1".to_string(),
                (_, Some(s)) if x.significant => format!("{}×", format::fixed(s, 2)),
                (_, Some(s)) => format!("~ ({}×)", format::fixed(s, 2)),
                (_, None) => format::DASH.to_string(),
            },
            x.p_value.map(|p| format::fixed(p, 3)).unwrap_or_default(),
            kib(x.huge_kb),
            kib(in_regions),
        ];
        if dtlb {
            row.push(
                x.dtlb
                    .get(1)
                    .copied()
                    .flatten()
                    .map(format::thousands)
                    .unwrap_or_default(),
            );
        }
        table.row(row);
    }
    table
}

/// The arms side by side: the median wall time of each with the range of its runs, and the
/// huge-page memory each obtained (the price of the time it saves).
fn arms_charts(a: &PagesApply) -> Vec<Block> {
    let label = |x: &super::apply::ArmResult| match &x.time_s {
        Some(t) => format!(
            "{} (±{}%, {} runs)",
            x.label,
            format::spread(t.spread_pct()),
            t.count
        ),
        None => format!("{} (every run failed)", x.label),
    };
    let categories: Vec<String> = a.arms.iter().map(label).collect();
    let times: Vec<f64> = (a.arms.iter())
        .map(|x| x.time_s.map_or(f64::NAN, |t| t.median))
        .collect();
    let ranges: Vec<(f64, f64)> = (a.arms.iter())
        .map(|x| x.time_s.map_or((f64::NAN, f64::NAN), |t| (t.min, t.max)))
        .collect();
    let decimals = if times.iter().any(|&t| t < 10.0) {
        2
    } else {
        1
    };
    let time = BarChart::new("Wall time per arm (median; whiskers: fastest to slowest run)")
        .size(960.0, 360.0)
        .y_axis(Axis::linear("wall time (s)"))
        .categories(categories)
        .series("wall time", times.clone(), Some(PALETTE[0].to_string()))
        .error_bars(ranges)
        .value_labels(Some(decimals));
    let huge: Vec<f64> = (a.arms.iter())
        .map(|x| (x.huge_kb.max(0.0) * 1024.0).round())
        .collect();
    let memory = BarChart::new("Huge-page memory per arm (median of the runs' peak, smaps)")
        .size(960.0, 360.0)
        .y_axis(Axis::linear("huge pages").bytes())
        .categories(a.arms.iter().map(|x| x.label.clone()).collect())
        .series("huge pages", huge.clone(), Some(PALETTE[1].to_string()));
    // A chart without a bar would be an empty frame: every run failed, or no arm got a
    // huge page (the table says so).
    let mut charts = Vec::new();
    if times.iter().any(|t| t.is_finite()) {
        charts.push(time.into());
    }
    if huge.iter().any(|&b| b > 0.0) {
        charts.push(memory.into());
    }
    charts
}

fn regions_table(a: &PagesApply) -> Table {
    let signal = &a.record.signal.name;
    let mut table = Table::new(vec![
        Column::text("region"),
        Column::text("mapping"),
        Column::number(format!("{signal}, 4 KiB")),
        Column::number(format!("{signal}, huge")),
        Column::number("huge pages obtained"),
    ]);
    for r in &a.regions {
        table.row([
            format!("{:#x}", r.start),
            r.mapping.clone(),
            format::thousands(r.before.round()),
            r.after
                .map_or(format::DASH.to_string(), |v| format::thousands(v.round())),
            format!(
                "{}% of the run (peak {})",
                format::fixed(100.0 * r.huge_mean_kb.clamp(0.0, 2048.0) / 2048.0, 0),
                kib(r.huge_kb.min(2048.0))
            ),
        ]);
    }
    table.note(
        "4 KiB: the record the regions were chosen from; huge: a recorded run with huge pages \
         under the chosen regions (– where the source cannot see: accessed bits of hugetlb \
         pages); huge pages obtained: the share of the region in huge pages that \
         /proc/PID/smaps showed (AnonHugePages, hugetlb), averaged over that run's time, \
         and its peak",
    );
    table
}

/// A row of `pages_runs`: one run of an arm, in the order they ran.
#[derive(Serialize, Default)]
struct RunCsvRow {
    order: usize,
    arm: String,
    elapsed_s: Raw,
    user_s: Raw,
    system_s: Raw,
    status: i32,
    huge_kb: Raw,
    huge_in_regions_kb: Raw,
}

fn runs_data(a: &PagesApply) -> DataTable {
    let mut runs: Vec<(Arm, &super::apply::ArmRun)> = a
        .arms
        .iter()
        .flat_map(|x| x.runs.iter().map(move |r| (x.arm, r)))
        .collect();
    runs.sort_by_key(|(_, r)| r.order);
    DataTable::of(
        "pages_runs",
        runs.into_iter().map(|(arm, r)| RunCsvRow {
            order: r.order,
            arm: format!("{arm:?}").to_lowercase(),
            elapsed_s: Raw(r.elapsed_s),
            user_s: Raw(r.user_s),
            system_s: Raw(r.system_s),
            status: r.termination.shell_status(),
            huge_kb: Raw(r.huge_kb),
            huge_in_regions_kb: Raw(r.huge_in_regions_kb),
        }),
    )
}

mod apply_notes;
mod record_notes;
#[cfg(test)]
mod tests;
