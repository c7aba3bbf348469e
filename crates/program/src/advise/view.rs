//! `memscope advise` in every output: the verdict first (one row per resource: sensitive
//! or not, the measured effect with its 95% interval, the remedy, how to apply it and
//! its cost), then the program's profile against the machine, the arms of each stage
//! with the co-runner's own checks, the sensitivity curves (HTML), the method and notes,
//! and CSV tables of every arm and every run.

use serde::Serialize;

use super::arms::{ArmKind, Resource};
use super::verdict::{effect_text, Finding, Sensitivity};
use super::{AdviseResult, ArmResult};
use crate::units::Bytes;
use crate::view::chart::{Axis, BarChart, LineChart, Series, PALETTE};
use crate::view::format;
use crate::view::{Block, Column, DataTable, Headline, Paragraph, Priority, Section, Table};

impl AdviseResult {
    pub fn section(&self) -> Section {
        let mut section = Section::new(
            "advise",
            "Advise",
            format!("Advise: {}", format::shell_quoted(&self.command)),
        );
        section.headlines = self.headlines();
        section.push(Paragraph::note(self.answer()));
        if let (n, Some(first)) = self.failed_runs() {
            let all: usize = self.arms.iter().map(|a| a.runs.len()).sum();
            section.push(Paragraph::warning(format!(
                "{n} of {all} runs failed: they ended with {first} (or otherwise), not with the \
                 exit status {} of the program's first run; they are not counted, and memscope \
                 exits with their status",
                self.normal_status
            )));
        }
        section.push(self.verdict_table());
        // What to do, per finding with a remedy: in prose, so no terminal width drops it.
        for f in self
            .findings
            .iter()
            .filter(|f| f.remedy.is_some() || !f.apply.is_empty())
        {
            section.push(Block::Heading(format!("What to do: {}", f.resource.name())));
            if let Some(remedy) = &f.remedy {
                section.push(Paragraph::note(remedy.as_str()));
            }
            for line in &f.apply {
                section.push(Paragraph::note(format!("  {line}")));
            }
            if let Some(cost) = &f.cost {
                section.push(Paragraph::note(format!("Cost: {cost}.")));
            }
        }
        section.push(Block::Heading("The program against the machine".into()));
        section.push(self.profile_table());
        if let Some(why) = &self.profile.no_counters {
            section.push(Paragraph::note(why.as_str()));
        }
        section.push(Block::Heading("The arms".into()));
        section.push(self.arms_table());
        if let Some(chart) = self.arms_chart() {
            section.push(chart);
        }
        if let Some(chart) = self.huge_page_chart() {
            section.push(chart);
        }
        if let Some(chart) = self.cache_chart() {
            section.push(chart);
        }
        if let Some(chart) = self.bandwidth_chart() {
            section.push(chart);
        }
        section.push(Paragraph::note(self.method()));
        for note in &self.notes {
            section.push(Paragraph::warning(note.as_str()));
        }
        for note in format::process_tree_notes(&self.process_tree) {
            section.push(Paragraph::warning(note));
        }
        section.push(DataTable::of(
            "advise.arms",
            self.arms.iter().map(ArmRow::of),
        ));
        section.push(DataTable::of(
            "advise.runs",
            self.arms.iter().flat_map(|a| {
                a.runs.iter().map(move |r| RunRow {
                    stage: a.stage,
                    arm: a.label.clone(),
                    block: r.block,
                    order: r.order,
                    elapsed_s: r.elapsed_s,
                    user_s: r.user_s,
                    system_s: r.system_s,
                    max_rss_kib: r.max_rss_kib,
                    minor_faults: r.minor_faults,
                    status: r.termination.shell_status(),
                    huge_kib: r.huge_kib,
                    co_runner_ns_per_step: r.co_runner.map(|c| c.0),
                    co_runner_bytes_per_s: r.co_runner.map(|c| c.1),
                })
            }),
        ));
        section
    }

    /// The answer in one sentence.
    pub fn answer(&self) -> String {
        // Remedies that slow it are said apart: a cost, not a bottleneck.
        let cost_text: String = (self.findings.iter())
            .filter(|f| f.sensitivity == Sensitivity::Hurts)
            .map(|f| {
                format!(
                    " Slower with {} ({}).",
                    f.arm.as_deref().unwrap_or(f.resource.name()),
                    format_change(f.change_pct)
                )
            })
            .collect();
        if self.not_memory_bound {
            return self.not_memory_bound_text(&cost_text);
        }
        let phrase = |f: &Finding| match f.resource {
            Resource::Tlb => format!(
                "the TLB: huge pages speed it up ({})",
                format_change(f.change_pct)
            ),
            Resource::Placement => format!(
                "NUMA placement: interleaved memory {}",
                format_change(f.change_pct)
            ),
            resource => format!(
                "{} ({} when it is taken away)",
                resource.name(),
                format_change(f.change_pct)
            ),
        };
        let of = |level: Sensitivity| -> Vec<String> {
            (self.findings.iter())
                .filter(|f| f.resource != Resource::Control && f.sensitivity == level)
                .map(phrase)
                .collect()
        };
        let (sensitive, slightly) = (of(Sensitivity::Sensitive), of(Sensitivity::Slightly));
        let slight_text = if slightly.is_empty() {
            String::new()
        } else {
            format!(
                " Slightly, below {:.0}%: {}.",
                self.effect_pct,
                slightly.join(", ")
            )
        };
        if !sensitive.is_empty() {
            return format!(
                "Sensitive to: {}.{slight_text}{cost_text}",
                sensitive.join(", ")
            );
        }
        if !slightly.is_empty() {
            return format!(
                "Nothing holds it back by {:.0}% or more.{slight_text}{cost_text}",
                self.effect_pct
            );
        }
        let leaning = self.leaning();
        let measured = (self.findings.iter())
            .any(|f| f.resource != Resource::Control && f.change_pct.is_some());
        if !measured {
            return format!(
                "Not measured yet: the time limit ended before the arms had runs to \
                 compare ({} block(s) completed); a longer --time-limit gives the answer.\
                 {cost_text}",
                self.blocks
            );
        }
        if leaning.is_empty() {
            return format!("Nothing taken away slowed it.{cost_text}");
        }
        format!(
            "Not decided within the time limit; the evidence leans: {}.{cost_text}",
            leaning.join("; ")
        )
    }

    /// The answer for a program that nothing taken away slowed by the effect or more.
    fn not_memory_bound_text(&self, cost_text: &str) -> String {
        let measured: Vec<String> = (self.findings.iter())
            .filter(|f| {
                f.resource != Resource::Control
                    && matches!(
                        f.sensitivity,
                        Sensitivity::NotSensitive | Sensitivity::Slightly
                    )
            })
            .map(|f| format!("{} {}", f.resource.name(), effect_text(f)))
            .collect();
        let moved = if cost_text.is_empty() {
            format!(
                "no resource taken away or remedy applied moved it by {:.0}% or more",
                self.effect_pct
            )
        } else {
            format!(
                "no resource taken away moved it by {:.0}% or more, and no remedy sped it up",
                self.effect_pct
            )
        };
        format!(
            "Not memory-bound here: {moved} ({}).{cost_text}",
            measured.join("; ")
        )
    }

    /// The decisions still open: which way each leans, and what more time would tell.
    fn leaning(&self) -> Vec<String> {
        (self.findings.iter())
            .filter(|f| f.resource != Resource::Control && f.sensitivity == Sensitivity::Unresolved)
            .filter(|f| f.change_pct.is_some() && f.p.is_none_or(|p| p >= 0.05))
            .map(|f| {
                // An estimate the other way from a sensitivity is no lean towards one.
                let against = match f.resource {
                    Resource::Cache | Resource::Bandwidth => f.change_pct.is_some_and(|c| c < 0.0),
                    Resource::Tlb => f.change_pct.is_some_and(|c| c > 0.0),
                    _ => false,
                };
                let more = if against {
                    " (no lean towards a sensitivity)".to_string()
                } else {
                    more_text(f, self.effect_pct)
                };
                format!("{} {}{more}", f.resource.name(), effect_text(f))
            })
            .collect()
    }

    fn headlines(&self) -> Vec<Headline> {
        self.findings
            .iter()
            .filter(|f| {
                f.resource != Resource::Control && f.sensitivity != Sensitivity::NotMeasured
            })
            .map(|f| Headline {
                label: f.resource.name().to_string(),
                value: f.sensitivity.word().to_string(),
                detail: effect_text(f),
                ..Headline::default()
            })
            .collect()
    }

    fn verdict_table(&self) -> Table {
        // The remedies and costs follow as prose ("What to do").
        let mut table = Table::new(vec![
            Column::text("resource"),
            Column::text("verdict"),
            Column::text("measured"),
        ])
        .titled("Verdict, most important first (+: slower than the reference, −: faster)");
        for f in &self.findings {
            // Still open: how much longer would decide it.
            let more = match f.sensitivity {
                Sensitivity::Unresolved if f.change_pct.is_some() => more_text(f, self.effect_pct),
                _ => String::new(),
            };
            table.row([
                f.resource.name().to_string(),
                f.sensitivity.word().to_string(),
                format!("{}{more}", f.summary),
            ]);
        }
        table
    }

    fn profile_table(&self) -> Table {
        let mut table = Table::new(vec![
            Column::text("figure"),
            Column::number("program"),
            Column::text("machine"),
        ]);
        for row in self.program_rows().into_iter().chain(self.machine_rows()) {
            table.row(row);
        }
        let source = self.facts.source.describe();
        table
            .notes
            .push(format!("machine figures from {source}").into());
        table
    }

    /// The program's own figures, beside the machine's that bound them.
    fn program_rows(&self) -> Vec<[String; 3]> {
        let (p, facts) = (&self.profile, &self.facts);
        let mut table = Vec::new();
        let med = |s: &Option<crate::stats::summary::Summary>| s.map(|s| s.median);
        if let Some(w) = med(&p.wall_s) {
            table.push([
                "wall time alone".to_string(),
                format!("{} s", format::grouped(w, 3)),
                String::new(),
            ]);
        }
        if let (Some(u), Some(s)) = (med(&p.user_s), med(&p.system_s)) {
            table.push([
                "user / system time".to_string(),
                format!("{} / {} s", format::grouped(u, 3), format::grouped(s, 3)),
                String::new(),
            ]);
        }
        if let Some(rss) = med(&p.max_rss_kib) {
            table.push([
                "peak resident memory".to_string(),
                Bytes((rss * 1024.0) as u64).to_string(),
                facts
                    .tlb_reach_4k_bytes
                    .map(|r| format!("TLB reach {} (4 KiB pages)", Bytes(r)))
                    .unwrap_or_default(),
            ]);
        }
        if let Some(f) = med(&p.minor_faults) {
            table.push([
                "page faults".to_string(),
                format::grouped(f, 0),
                String::new(),
            ]);
        }
        if let Some(anon) = p.anonymous_kib {
            table.push([
                "anonymous memory (recorded run)".to_string(),
                Bytes((anon * 1024.0) as u64).to_string(),
                facts
                    .tlb_reach_2m_bytes
                    .map(|r| format!("TLB reach {} (2 MiB pages)", Bytes(r)))
                    .unwrap_or_default(),
            ]);
        }
        if let Some(share) = p.hot_share_pct {
            table.push([
                format!("top {} regions' share of accesses", p.hot_regions.len()),
                format!("{share:.0}%"),
                format!("{} 2 MiB regions accessed", p.regions_accessed),
            ]);
        }
        if let Some(fp) = &p.footprint {
            table.push([
                "per-thread data (TLS + behind its pointers)".to_string(),
                Bytes(fp.tls_bytes + fp.tls_pointee_bytes).to_string(),
                facts
                    .l1d_bytes
                    .map(|b| format!("L1d {}", Bytes(b)))
                    .unwrap_or_default(),
            ]);
            table.push([
                "static data (.data + .bss)".to_string(),
                Bytes(fp.static_bytes).to_string(),
                facts
                    .l2_bytes
                    .map(|b| format!("L2 {}", Bytes(b)))
                    .unwrap_or_default(),
            ]);
        }
        table
    }

    /// The machine's caches and DRAM, and the counters' figures.
    fn machine_rows(&self) -> Vec<[String; 3]> {
        let (p, facts) = (&self.profile, &self.facts);
        let mut table = Vec::new();
        table.push([
            "last-level cache".to_string(),
            String::new(),
            match (&facts.llc_name, facts.llc_bytes) {
                (Some(n), Some(b)) => format!(
                    "{n} {} shared by {} CPU(s){}",
                    Bytes(b),
                    facts.llc_cpus.len().max(1),
                    facts
                        .llc_ns
                        .map(|ns| format!(", {ns:.1} ns"))
                        .unwrap_or_default()
                ),
                _ => "unknown".to_string(),
            },
        ]);
        if facts.dram_ns.is_some() || facts.dram_bytes_per_s.is_some() {
            table.push([
                "DRAM".to_string(),
                String::new(),
                format!(
                    "{}{}",
                    facts
                        .dram_ns
                        .map(|ns| format!("{ns:.0} ns"))
                        .unwrap_or_default(),
                    facts
                        .dram_bytes_per_s
                        .map(|b| format!(", {:.1} GB/s read", b / 1e9))
                        .unwrap_or_default()
                ),
            ]);
        }
        for (name, unit, value) in &p.counters {
            table.push([
                name.clone(),
                format!("{} {unit}", format::grouped(*value, 3)),
                String::new(),
            ]);
        }
        if let Some(td) = &p.topdown {
            table.push(["top-down".to_string(), td.clone(), String::new()]);
        }
        table
    }

    fn arms_table(&self) -> Table {
        // On a narrow terminal the change and its interval stay; the reference, the runs
        // and the co-runner's check go first (the method names the references).
        let mut table = Table::new(vec![
            Column::text("stage").priority(Priority::Low),
            Column::text("arm").priority(Priority::High),
            Column::number("runs").priority(Priority::Low),
            Column::number("median s"),
            Column::text("vs").priority(Priority::Low),
            Column::number("change").priority(Priority::High),
            Column::text("95% CI").priority(Priority::High),
            Column::number("p"),
            Column::text("co-runner").priority(Priority::Low),
        ]);
        for a in &self.arms {
            let ci = a
                .ratio
                .map(|r| {
                    format!(
                        "{:+.1} … {:+.1}%",
                        (r.low - 1.0) * 100.0,
                        (r.high - 1.0) * 100.0
                    )
                })
                .unwrap_or_default();
            let change = match (a.change_pct(), a.time.verdict) {
                (Some(c), crate::stats::change::Verdict::NoChange) => format!("{c:+.1}% ~"),
                (Some(c), _) => format!("{c:+.1}%"),
                (None, _) => String::new(),
            };
            table.row([
                a.stage.to_string(),
                a.label.clone(),
                format!("{}{}", a.time.summary.map_or(0, |s| s.count), failed(a)),
                a.time
                    .summary
                    .map(|s| format::grouped(s.median, 3))
                    .unwrap_or_else(|| "–".into()),
                if a.reference == a.kind {
                    String::new()
                } else {
                    label_of(a.reference)
                },
                change,
                ci,
                a.time.p.map(|p| format!("{p:.3}")).unwrap_or_default(),
                co_runner_text(a),
            ]);
        }
        table
    }

    /// Every arm's change against its reference, with its 95% interval (HTML).
    fn arms_chart(&self) -> Option<BarChart> {
        let arms: Vec<&ArmResult> = self.arms.iter().filter(|a| a.ratio.is_some()).collect();
        if arms.is_empty() {
            return None;
        }
        let pct = |r: f64| (r - 1.0) * 100.0;
        let values = arms
            .iter()
            .filter_map(|a| a.ratio)
            .map(|r| pct(r.ratio))
            .collect();
        let bounds = arms
            .iter()
            .filter_map(|a| a.ratio)
            .map(|r| (pct(r.low), pct(r.high)))
            .collect();
        Some(
            BarChart::new("Each arm against its reference (+: slower), with its 95% interval")
                .x_label("arm")
                .y_axis(Axis::linear("change %"))
                .categories(
                    arms.iter()
                        .map(|a| format!("{}: {}", a.stage, a.label))
                        .collect(),
                )
                .series("change", values, Some(PALETTE[0].to_string()))
                .error_bars(bounds)
                .value_labels(Some(1)),
        )
    }

    /// The huge-page arms: what each buys against the huge-page memory it takes (HTML).
    fn huge_page_chart(&self) -> Option<BarChart> {
        let arms: Vec<&ArmResult> = self
            .arms
            .iter()
            .filter(|a| a.resource == Resource::Tlb && a.ratio.is_some())
            .collect();
        if arms.is_empty() {
            return None;
        }
        let speedup = arms
            .iter()
            .filter_map(|a| a.ratio)
            .map(|r| (1.0 / r.ratio - 1.0) * 100.0)
            .collect();
        // Each arm's huge-page memory (time-weighted over a run) in its label.
        let labels = arms
            .iter()
            .map(|a| {
                let huge = Bytes((a.huge_kib.unwrap_or(0.0) * 1024.0) as u64);
                format!("{} ({huge} huge)", a.label)
            })
            .collect();
        Some(
            BarChart::new("Huge pages: the speed-up each arm buys, and the memory it backs")
                .x_label("arm (huge-page memory, time-weighted over a run)")
                .y_axis(Axis::linear("speed-up %"))
                .categories(labels)
                .series("speed-up", speedup, Some(PALETTE[1].to_string()))
                .value_labels(Some(1)),
        )
    }

    fn cache_chart(&self) -> Option<LineChart> {
        let points: Vec<(f64, f64)> = self
            .arms
            .iter()
            .filter(|a| matches!(a.kind, ArmKind::Pirate | ArmKind::PirateInTurns))
            .filter_map(|a| {
                Some((
                    a.co_runner?.cache_left_bytes?,
                    (a.ratio?.ratio - 1.0) * 100.0,
                ))
            })
            .collect();
        if points.len() < 2 {
            return None;
        }
        let mut points = points;
        // The whole share left (the compute neighbour's, by definition no slowdown).
        if let Some(share) = self.facts.llc_share_bytes() {
            points.push((share as f64, 0.0));
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (title, series) = if self.cpus.pirate == super::PirateSite::InTurns {
            (
                "Slowdown in CPU time against the cache left at each of its turns",
                "cache pirate in turns",
            )
        } else {
            ("Slowdown against the cache left to it", "cache pirate")
        };
        Some(
            LineChart::new(title)
                .x_axis(Axis::log2("its LLC share left to the program").bytes())
                .y_axis(Axis::linear("slowdown %"))
                .series(Series::new(series, points)),
        )
    }

    fn bandwidth_chart(&self) -> Option<LineChart> {
        let mut points: Vec<(f64, f64)> = self
            .arms
            .iter()
            .filter(|a| a.kind == ArmKind::Bandit)
            .filter_map(|a| {
                Some((
                    a.co_runner?.bytes_per_s / 1e9,
                    (a.ratio?.ratio - 1.0) * 100.0,
                ))
            })
            .collect();
        if points.len() < 2 {
            return None;
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        Some(
            LineChart::new("Slowdown against the bandwidth the bandit took")
                .x_axis(Axis::linear("GB/s the bandit wrote beside it"))
                .y_axis(Axis::linear("slowdown %"))
                .series(Series::new("bandwidth bandit", points)),
        )
    }

    fn method(&self) -> String {
        let stop = match self.stop {
            super::Stop::Resolved => "every arm was decided",
            super::Stop::Fixed => "the blocks asked for (--runs) ran",
            super::Stop::TimeLimit => "the time limit was reached",
            super::Stop::MaxBlocks => "the most blocks the design runs ran",
            super::Stop::Interrupted => "interrupted (Ctrl-C)",
        };
        let looks = self.looks.max(1);
        format!(
            "{} measured block(s) in {} s of a {} s limit; stopped because {stop}. Each block \
             runs the program alone and every arm still open once, in a shuffled order, the \
             program on CPU(s) {}{}; an arm leaves the blocks once its interval lies wholly \
             within or beyond ±{}%. Change: each arm's time against its reference's in the \
             same block (alone; the pirate and the bandit against the compute neighbour, so \
             a busy CPU beside it is not counted{}){}, the geometric mean of the blocks' \
             ratios; 95% CI and p: the paired t test on their logs and its \
             interval, with the 5% error spread over the {looks} looks planned \
             (each at {:.1}%, p multiplied by {looks}), so that the interval of whichever look \
             decides an arm covers 95%; ~ = not significant.",
            self.blocks,
            format::rounded(self.elapsed_s, 10.0),
            format::rounded(self.time_limit_s, 10.0),
            crate::topology::cpu::format_cpu_list(&self.cpus.program),
            self.cpus
                .co_runner
                .map(|c| format!(", the co-runner on CPU {c}"))
                .unwrap_or_default(),
            format::rounded(self.effect_pct, 10.0),
            if self.cpus.pirate == super::PirateSite::InTurns {
                "; the pirate in turns against the compute thread in turns"
            } else {
                ""
            },
            if self.cpus.cpu_bound {
                ", by the program's CPU time in every arm, as it kept its CPU busy (the \
                 time it ran, which a host's steal or a busy run queue does not stretch, \
                 and which holds its memory stalls)"
            } else if self.cpus.pirate == super::PirateSite::InTurns {
                ", the arms in turns by the program's CPU time"
            } else {
                ""
            },
            100.0 - crate::stats::paired::ALPHA * 100.0 / looks as f64
        )
    }
}

/// ", ≈ 4 more minutes would tell ±5%" for a finding still open.
fn more_text(f: &Finding, effect_pct: f64) -> String {
    match f.more_s {
        Some(s) if s < 3600.0 => format!(
            ", ≈ {} more would tell ±{}%",
            if s < 90.0 {
                format!("{} s", format::rounded(s, 10.0))
            } else {
                format!("{:.0} minutes", (s / 60.0).ceil())
            },
            format::rounded(effect_pct, 10.0)
        ),
        Some(_) => format!(
            ", more than an hour more would tell ±{}%",
            format::rounded(effect_pct, 10.0)
        ),
        None => format!(
            ", on the edge of ±{}%: no run count would tell",
            format::rounded(effect_pct, 10.0)
        ),
    }
}

fn format_change(change: Option<f64>) -> String {
    change.map_or_else(|| "–".into(), |c| format!("{c:+.1}%"))
}

fn failed(a: &ArmResult) -> String {
    if a.failed_runs > 0 {
        format!(" ({} failed)", a.failed_runs)
    } else {
        String::new()
    }
}

fn label_of(kind: ArmKind) -> String {
    super::arms::ArmSpec::new(kind).label
}

fn co_runner_text(a: &ArmResult) -> String {
    let Some(c) = a.co_runner else {
        return String::new();
    };
    match a.kind {
        ArmKind::Pirate | ArmKind::PirateInTurns => {
            // Beside: ns per step of one chain of its walk; in turns: ns per line swept.
            let unit = if a.kind == ArmKind::Pirate {
                "ns/step"
            } else {
                "ns/line swept"
            };
            let mut text = format!("{:.1} {unit}", c.ns_per_step);
            if let Some(h) = c.held_share {
                text.push_str(&format!(", held {:.0}%", h * 100.0));
            }
            if let Some(left) = c.cache_left_bytes {
                text.push_str(&format!(", {} left", Bytes(left as u64)));
            }
            text
        }
        ArmKind::Bandit => format!("{:.1} GB/s", c.bytes_per_s / 1e9),
        _ => String::new(),
    }
}

/// One arm in the CSV output.
#[derive(Debug, Default, Serialize)]
struct ArmRow {
    stage: usize,
    arm: String,
    kind: String,
    resource: String,
    level: Option<f64>,
    reference: String,
    runs: usize,
    failed_runs: usize,
    median_s: Option<f64>,
    change_pct: Option<f64>,
    ratio: Option<f64>,
    ratio_low: Option<f64>,
    ratio_high: Option<f64>,
    p: Option<f64>,
    huge_kib: Option<f64>,
    co_runner_ns_per_step: Option<f64>,
    co_runner_bytes_per_s: Option<f64>,
    cache_left_bytes: Option<f64>,
}

impl ArmRow {
    fn of(a: &ArmResult) -> ArmRow {
        ArmRow {
            stage: a.stage,
            arm: a.label.clone(),
            kind: serde_name(&a.kind),
            resource: a.resource.name().to_string(),
            level: a.level,
            reference: serde_name(&a.reference),
            runs: a.time.summary.map_or(0, |s| s.count),
            failed_runs: a.failed_runs,
            median_s: a.time.summary.map(|s| s.median),
            change_pct: a.time.change_pct,
            ratio: a.ratio.map(|r| r.ratio),
            ratio_low: a.ratio.map(|r| r.low),
            ratio_high: a.ratio.map(|r| r.high),
            p: a.time.p,
            huge_kib: a.huge_kib,
            co_runner_ns_per_step: a.co_runner.map(|c| c.ns_per_step),
            co_runner_bytes_per_s: a.co_runner.map(|c| c.bytes_per_s),
            cache_left_bytes: a.co_runner.and_then(|c| c.cache_left_bytes),
        }
    }
}

/// The name a unit enum value is written with in JSON ("huge-all").
fn serde_name<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// One run in the CSV output.
#[derive(Debug, Default, Serialize)]
struct RunRow {
    stage: usize,
    arm: String,
    block: usize,
    order: usize,
    elapsed_s: f64,
    user_s: f64,
    system_s: f64,
    max_rss_kib: u64,
    minor_faults: u64,
    status: i32,
    huge_kib: f64,
    co_runner_ns_per_step: Option<f64>,
    co_runner_bytes_per_s: Option<f64>,
}
