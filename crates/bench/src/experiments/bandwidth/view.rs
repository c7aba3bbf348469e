//! The bandwidth section of every output: the charts against working set and threads,
//! one kernel × level table per thread count, the sweep's points, the CSV tables and the
//! peak-bandwidth headlines.

use serde::Serialize;

use super::charts;
use super::figures;
use super::tables::{level_table, sweep_table};
use super::{BandwidthResult, BandwidthRow};
use crate::experiments::shared::level::Level;
use crate::kernels::stream::Isa;
use crate::topology::cpu::format_cpu_list;
use crate::topology::Machine;
use crate::view::data_row::Raw;
use crate::view::format::{self, count_of, distinct, not_concurrent_note, NOISY_SPREAD_PCT};
use crate::view::{Block, DataTable, Headline, Medium, Paragraph, Present, Section, Text};

impl Present for BandwidthResult {
    fn section(&self, machine: &Machine) -> Section {
        let mut thread_counts = distinct(self.rows.iter().map(|r| r.threads));
        thread_counts.sort_unstable();
        let mut s = Section::new("bandwidth", "Bandwidth", "Bandwidth");
        s.headlines = headlines(self, &thread_counts);
        s.push(intro(self));
        if !self.sweep.is_empty() {
            s.push(charts::sweep_chart(self, machine));
        }
        if let Some(level) = charts::scaling_level(&self.rows) {
            if thread_counts.len() >= 2 {
                s.push(charts::threads_chart(self, level));
            } else if let Some(&threads) = thread_counts.first() {
                s.push(Block::Only(
                    Medium::Html,
                    vec![Paragraph::muted(
                        Text::plain(format!(
                            "Measured with {} only, so there is no thread-scaling chart (",
                            count_of(threads, "thread")
                        ))
                        .code("--threads 1,2,4,all")
                        .add(" draws one)."),
                    )
                    .into()],
                ));
            }
        }
        s.push(Block::Heading("Per level".to_string()));
        if self.rows.is_empty() {
            s.push(Paragraph::muted("No bandwidth was measured."));
        } else {
            s.push(level_note(self));
        }
        if let Some(note) = not_concurrent_note(
            "figures",
            self.rows.iter().chain(&self.sweep).map(|r| r.overlap),
        ) {
            s.push(note);
        }
        if let Some(note) = few_trials_note(self.rows.iter().chain(&self.sweep)) {
            s.push(note);
        }
        for &threads in &thread_counts {
            s.push(level_table(self, threads));
        }
        if !self.sweep.is_empty() {
            s.push(Block::Details {
                summary: format!(
                    "Bandwidth vs working set, {}: GB/s (bytes per cycle per thread) at all {} \
                     points of the sweep",
                    count_of(self.sweep[0].threads, "thread"),
                    self.sweep.len()
                ),
                blocks: vec![sweep_table(&self.sweep).into()],
            });
        }
        s.push(data_table("bandwidth.rows", &self.rows));
        if !self.sweep.is_empty() {
            s.push(data_table("bandwidth.sweep", &self.sweep));
        }
        s
    }
}

/// What the figures count, the instruction set (and how it was chosen), the CPUs and the
/// trials.
fn intro(result: &BandwidthResult) -> Paragraph {
    let rows = || result.rows.iter().chain(&result.sweep);
    let trials = rows().map(|r| r.trials).max().unwrap_or(0);
    let choice = &result.isa_choice;
    let probe: Vec<String> = choice
        .probe
        .iter()
        .map(|p| {
            format!(
                "{} {} / {}",
                p.isa,
                format::fixed(p.cache_gb_per_s, 0),
                format::fixed(p.dram_gb_per_s, 1)
            )
        })
        .collect();
    let isa = format::or_dash(&result.isa);
    let mut text = Text::plain(
        "GB/s are decimal (10^9 bytes per second) and count the bytes each kernel reads plus \
         the bytes it writes (no read-for-ownership traffic), the same way for every kernel; \
         with several threads they are the total of all threads, each streaming over its own \
         arrays. Vector instructions: ",
    )
    .strong(isa)
    .add(format!(
        " (chosen by {}{}){}. Each figure is the median of up to {trials} timed \
         trials.",
        choice.chosen_by,
        if probe.is_empty() {
            String::new()
        } else {
            format!(
                "; read + copy GB/s in L1 / beyond the caches: {}",
                probe.join(", ")
            )
        },
        if result.cpus.is_empty() {
            String::new()
        } else {
            format!(
                ", threads placed on CPUs {} in that order",
                format_cpu_list(&result.cpus)
            )
        },
    ));
    if let Some(ladder) = &result.ladder {
        text = text.add(format!(" The {}.", ladder.describe()));
    }
    if let Some(binding) = &result.membind {
        text = text.add(format!(" Every thread's arrays: {}.", binding.describe()));
    }
    let portable = (choice.cache_isa, choice.dram_isa) == (Isa::Portable, Isa::Portable);
    if portable && rows().any(|r| r.nontemporal) {
        text = text.add(
            " The portable kernels have no streaming store: their -nt variants use normal \
             stores.",
        );
    }
    if let Some(block) = result.zero_block_bytes {
        text = text.add(format!(
            " write-zero zeroes whole {block}-byte blocks with DC ZVA (no read of the line), \
             the partial ones at its array's ends with stores."
        ));
    }
    Paragraph::note(text)
}

/// How to read the per-level tables.
fn level_note(result: &BandwidthResult) -> Paragraph {
    let bpc = result
        .rows
        .iter()
        .any(|r| r.level.is_cache() && r.bytes_per_cycle.is_some_and(|b| b.is_finite()));
    Paragraph::note(
        Text::plain(format!(
            "GB/s per kernel at a working set inside each level; the size in each level's \
             header is the working set of one thread, all of the kernel's arrays together \
             (kernels with three or four arrays round it down to whole 1 KiB granules, hence \
             the ≈).{} R:W is the number of arrays read and written per element. ",
            if bpc {
                " The figure in parentheses in cache levels is bytes per core cycle per \
                 thread, at the estimated core clock."
            } else {
                ""
            }
        ))
        .warn("~")
        .add(format!(
            " marks a spread above {NOISY_SPREAD_PCT:.0} % (each figure's spread and trials \
             are in its tooltip, and in the JSON and CSV)."
        )),
    )
}

/// One row of the CSV tables `bandwidth.rows` and `bandwidth.sweep`.
#[derive(Serialize, Default)]
struct DataRow<'a> {
    kernel: &'a str,
    read_parts: usize,
    write_parts: usize,
    nontemporal: bool,
    isa: &'a str,
    threads: usize,
    working_set_bytes: u64,
    bytes_per_thread: u64,
    level: &'a str,
    gb_per_s: Raw,
    bytes_per_cycle: Option<Raw>,
    spread_pct: Raw,
    overlap: Raw,
    concurrent: bool,
    attempts: usize,
    planned_trials: usize,
    few_trials: bool,
}

/// The CSV table of `rows`.
fn data_table(name: &str, rows: &[BandwidthRow]) -> DataTable {
    DataTable::of(
        name,
        rows.iter().map(|r| DataRow {
            kernel: r.kernel.name(),
            read_parts: r.read_parts,
            write_parts: r.write_parts,
            nontemporal: r.nontemporal,
            isa: r.isa.name(),
            threads: r.threads,
            working_set_bytes: r.working_set_bytes,
            bytes_per_thread: r.bytes_per_thread,
            level: r.level.name(),
            gb_per_s: Raw(r.gb_per_s),
            bytes_per_cycle: r.bytes_per_cycle.map(Raw),
            spread_pct: Raw(r.spread_pct),
            overlap: Raw(r.overlap),
            concurrent: r.concurrent,
            attempts: r.attempts,
            planned_trials: r.planned_trials,
            few_trials: r.few_trials,
        }),
    )
}

/// The legend of the `?` mark, naming the thinnest row, when any row kept fewer trials
/// than planned.
fn few_trials_note<'a>(rows: impl Iterator<Item = &'a BandwidthRow>) -> Option<Paragraph> {
    let rows: Vec<&BandwidthRow> = rows.filter(|r| r.few_trials).collect();
    let thinnest = rows.iter().min_by_key(|r| r.trials)?;
    Some(Paragraph::note(Text::new().warn("?").add(format!(
        " marks {} that kept fewer trials than planned (threads that did not run together \
         were re-run and still fell short), down to {}: the figure rests on thin evidence \
         and no spread is shown for it. Measure again on a quieter machine.",
        count_of(rows.len(), "figure"),
        thinnest.few_trials_text().unwrap_or_default()
    ))))
}

/// The peak bandwidth with the fewest and with the most of the (sorted) thread counts, each
/// with the best DRAM figure beside it.
fn headlines(result: &BandwidthResult, threads: &[usize]) -> Vec<Headline> {
    let ends = match *threads {
        [] => vec![],
        [one] => vec![one],
        [first, .., last] => vec![first, last],
    };
    let figure = |v: f64| format::rounded(v, 100.0);
    let mut out = Vec::new();
    for t in ends {
        let rows = || {
            result
                .rows
                .iter()
                .filter(move |r| r.threads == t && r.gb_per_s.is_finite())
        };
        let faster = |a: &&BandwidthRow, b: &&BandwidthRow| a.gb_per_s.total_cmp(&b.gb_per_s);
        let Some(peak) = rows().max_by(faster) else {
            continue;
        };
        let dram = rows().filter(|r| r.level == Level::Dram).max_by(faster);
        // A figure from too few trials is never a clean headline: it says so.
        let thin = |r: &BandwidthRow| {
            if r.few_trials {
                format!(" ({})", count_of(r.trials, "trial"))
            } else {
                String::new()
            }
        };
        let mut headline = Headline {
            label: format!("Bandwidth, {}", count_of(t, "thread")),
            value: format!("{} GB/s{}", figure(peak.gb_per_s), thin(peak)),
            detail: format!(
                "peak ({} in {}){}{}{}",
                peak.kernel,
                peak.level,
                peak.few_trials_text()
                    .map_or(String::new(), |few| format!(", ? {few}")),
                dram.map_or(String::new(), |d| format!(
                    "; DRAM {} GB/s{} ({})",
                    figure(d.gb_per_s),
                    thin(d),
                    d.kernel
                )),
                if rows().any(|r| !r.concurrent) {
                    "; some rows flagged !"
                } else {
                    ""
                }
            ),
            few_trials: peak.few_trials || dram.is_some_and(|d| d.few_trials),
            ..Headline::default()
        }
        .key(figures::row_figure(peak).key);
        if let Some(d) = dram.filter(|d| !std::ptr::eq(*d, peak)) {
            headline = headline.also("DRAM", figures::row_figure(d).key);
        }
        out.push(headline);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::bandwidth::samples::{self, KERNELS};
    use crate::units::{KIB, MIB};
    use crate::view::figure::Figures;
    use crate::view::format::{DASH, NOT_CONCURRENT_TITLE};
    use crate::view::Row;

    fn section(result: &BandwidthResult) -> Section {
        result.section(&Machine::sample())
    }

    fn chart_titles(s: &Section) -> Vec<String> {
        s.charts().iter().map(|c| format!("{c:?}")).collect()
    }

    /// Every span of the section's texts and table cells with its tooltip.
    fn titled_spans(s: &Section) -> Vec<(String, String)> {
        let texts = s.all_blocks().into_iter().flat_map(|b| match b {
            Block::Paragraph(p) => vec![&p.text],
            Block::Table(t) => (t.rows.iter())
                .flat_map(|row| match row {
                    Row::Cells(cells) => cells.iter().map(|c| &c.0).collect(),
                    Row::Spanning(..) => vec![],
                })
                .collect(),
            _ => vec![],
        });
        texts
            .flat_map(|t| &t.0)
            .filter_map(|i| match i {
                crate::view::Inline::Span(span) => Some((span.text.clone(), span.title.clone()?)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn figures_whose_threads_did_not_run_together_are_marked_everywhere() {
        let mut result = samples::bandwidth(&[1, 4], &KERNELS[..2], &[], 0);
        let dram_4 = |r: &&mut BandwidthRow| r.threads == 4 && r.level == Level::Dram;
        let row = result.rows.iter_mut().find(dram_4).unwrap();
        (row.concurrent, row.overlap, row.attempts) = (false, 0.52, 21);
        let s = section(&result);
        let spans = titled_spans(&s);
        let mark = |(text, title): &&(String, String)| text == "!" && title == NOT_CONCURRENT_TITLE;
        // One mark in the note and one on the flagged figure.
        assert_eq!(spans.iter().filter(mark).count(), 2, "{spans:?}");
        let text = s.plain_text();
        for words in [
            "down to 52 %",
            "! marks figures whose threads did not run together",
        ] {
            assert!(text.contains(words), "{words}: {text}");
        }
        let table = s.table("4 threads (CPUs 0-2,7)").expect("4-thread table");
        let dram = table.columns.iter().position(|c| c.name == "DRAM").unwrap();
        assert!(table.column_text(dram)[0].starts_with('!'));
        let overlapped = "threads overlapped 52 % (21 attempts)";
        assert!(spans.iter().any(|(_, title)| title.ends_with(overlapped)));
        let headline = &s.headlines[1];
        assert!(
            headline.detail.ends_with("; some rows flagged !"),
            "{headline:?}"
        );

        // Nothing is marked when every figure ran together.
        let s = section(&samples::bandwidth(&[1, 4], &KERNELS[..2], &[], 0));
        assert!(!s.plain_text().contains('!'));
    }

    #[test]
    fn charts_tables_and_notes_of_a_full_result() {
        let result = samples::bandwidth(
            &[1, 8],
            &[KERNELS[0], KERNELS[3], KERNELS[7]],
            &[KERNELS[0], KERNELS[3]],
            2,
        );
        let s = section(&result);
        assert_eq!(
            (s.id, s.nav.as_str(), s.title.as_str()),
            ("bandwidth", "Bandwidth", "Bandwidth")
        );
        // Sweep chart with the OS cache sizes, and the scaling chart.
        let charts = chart_titles(&s);
        assert_eq!(charts.len(), 2);
        for label in [
            "Bandwidth vs working set, 1 thread",
            "bytes read + written",
            "L1d 32 KiB", // the OS cache markers
        ] {
            assert!(charts[0].contains(label), "{label}");
        }
        assert!(charts[1].contains("Bandwidth vs threads in DRAM"));
        let one = s.table("1 thread (CPU 7)").expect("1-thread table");
        let eight = s.table("8 threads (CPUs 0-7)").expect("8-thread table");
        assert_eq!(one.column_text(0), ["read", "copy", "mix-3:1"]);
        assert_eq!(one.column_text(1), ["1:0", "1:1", "3:1"]);
        let names: Vec<&str> = eight.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names.join("|"), "Kernel|R:W|Stores|L1d|L2|L3|DRAM");
        assert_eq!(one.columns[3].header(), "L1d (16 KiB per thread)");
        // Copy in L3 is noisy; cache levels carry bytes per cycle, DRAM does not.
        let l3 = one.column_text(5);
        assert!(l3[1].starts_with('~') && !l3[0].starts_with('~'), "{l3:?}");
        assert!(
            one.column_text(3)[0].ends_with(" (63.3)"),
            "{:?}",
            one.column_text(3)
        );
        assert!(!one.column_text(6)[0].contains('('));
        let text = s.plain_text();
        for words in [
            "no read-for-ownership",
            "chosen by --isa",
            "threads placed on CPUs 0-7 in that order",
            "GB/s (bytes per cycle per thread) at all 66 points of the sweep",
        ] {
            assert!(text.contains(words), "{words}: {text}");
        }
        assert!(!text.contains("NaN") && !text.contains("Some("));
        // The sweep: one row per working set, one column per kernel.
        let sweep = s.tables().into_iter().find(|t| t.title.is_none());
        let sweep = sweep.expect("sweep table");
        assert_eq!(sweep.rows.len(), 33);
        assert_eq!(sweep.columns[2].header(), "read (GB/s)");
        assert_eq!(sweep.column_text(0)[0], "4 KiB");
        // Each figure with its bytes per cycle per thread, DRAM sizes too.
        let read = sweep.column_text(2);
        assert!(read.iter().all(|c| c.ends_with(')')), "{read:?}");
        // Headlines for the fewest and the most threads.
        let labels: Vec<&str> = s.headlines.iter().map(|h| h.label.as_str()).collect();
        assert_eq!(labels, ["Bandwidth, 1 thread", "Bandwidth, 8 threads"]);
        assert_eq!(s.headlines[0].value, "190 GB/s");
        assert!(s.headlines[0]
            .detail
            .starts_with("peak (read in L1d); DRAM"));
    }

    #[test]
    fn dc_zva_is_named_only_where_write_zero_used_it() {
        let plain = |s: &Section| -> String {
            (s.all_blocks().into_iter())
                .filter_map(|b| match b {
                    Block::Paragraph(p) => Some(p.text.to_plain()),
                    _ => None,
                })
                .collect()
        };
        let mut result = samples::bandwidth(&[1], &KERNELS[..1], &[], 0);
        assert!(!plain(&section(&result)).contains("DC ZVA"));
        result.zero_block_bytes = Some(64);
        let text = plain(&section(&result));
        assert!(
            text.contains("write-zero zeroes whole 64-byte blocks with DC ZVA"),
            "{text}"
        );
    }

    #[test]
    fn one_thread_count_gets_a_note_instead_of_the_scaling_chart() {
        let s = section(&samples::bandwidth(&[1], &KERNELS[..3], &[], 0));
        assert!(s.charts().is_empty());
        let html_only = s.blocks.iter().any(|b| match b {
            Block::Only(Medium::Html, blocks) => blocks.iter().any(|b| {
                matches!(b, Block::Paragraph(p)
                    if p.text.to_plain().contains("Measured with 1 thread only"))
            }),
            _ => false,
        });
        assert!(html_only);
        let table = s.table("1 thread (CPU 7)").unwrap();
        assert_eq!(table.column_text(2), [DASH, "normal", "streaming (nt)"]);
    }

    #[test]
    fn custom_sizes_share_columns_within_granule_rounding() {
        let mut result = samples::bandwidth(&[1, 2], &[KERNELS[0]], &[], 0);
        result.rows = Vec::new();
        for threads in [1, 2] {
            for bytes in [10 * KIB, 96 * MIB] {
                for k in [KERNELS[0], KERNELS[5]] {
                    result.rows.push(samples::row(k, threads, "custom", bytes));
                }
            }
        }
        let s = section(&result);
        // Two custom columns per table (10 KiB vs 9 KiB for triad share one), two tables.
        for title in ["1 thread (CPU 7)", "2 threads (CPUs 0,7)"] {
            let t = s.table(title).unwrap();
            let headers = t.headers()[3..].join(" | ");
            let custom = "custom (9 KiB – 10 KiB per thread) | custom (96 MiB per thread)";
            assert_eq!(headers, custom);
            // Bytes per cycle only for cache levels.
            assert!(t.column_text(3).iter().all(|c| !c.contains('(')));
        }
        assert!(chart_titles(&s)[0].contains("largest custom working set"));
    }

    #[test]
    fn invalid_values_and_empty_results_give_dashes_without_panicking() {
        let mut result = samples::bandwidth(&[1, 2], &KERNELS[..4], &KERNELS[..2], 1);
        let every = result.rows.iter_mut().chain(result.sweep.iter_mut());
        for (i, r) in every.enumerate() {
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
        let s = result.section(&Machine::default());
        let text = s.plain_text();
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
        assert!(s.table("1 thread (CPU 7)").unwrap().column_text(3)[0].starts_with(DASH));
        assert!(titled_spans(&s)
            .iter()
            .any(|(_, t)| t.starts_with("spread – %")));
        assert_eq!(s.data_tables()[0].rows[0][9], "");

        let s = section(&samples::empty());
        assert!(s.plain_text().contains("No bandwidth was measured."));
        assert!(s.headlines.is_empty() && s.charts().is_empty());
        let names: Vec<&str> = s.data_tables().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["bandwidth.rows"]);
    }

    #[test]
    fn csv_tables_keep_their_names_columns_and_raw_cells() {
        let mut result = samples::bandwidth(&[1], &KERNELS[..1], &KERNELS[..1], 1);
        result.rows[0].bytes_per_cycle = None;
        let s = section(&result);
        let tables = s.data_tables();
        let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["bandwidth.rows", "bandwidth.sweep"]);
        assert_eq!(
            tables[0].header.join(","),
            "kernel,read_parts,write_parts,nontemporal,isa,threads,working_set_bytes,\
             bytes_per_thread,level,gb_per_s,bytes_per_cycle,spread_pct,overlap,concurrent,\
             attempts,planned_trials,few_trials"
        );
        assert_eq!(tables[1].header, tables[0].header);
        assert_eq!(
            tables[0].rows[0].join(","),
            "read,1,0,false,avx2,1,16384,16384,L1d,190,,1.5,1,true,7,7,false"
        );
        assert_eq!(tables[1].rows.len(), result.sweep.len());
    }

    #[test]
    fn a_figure_from_too_few_trials_is_flagged_everywhere_and_shows_no_spread() {
        let mut result = samples::bandwidth(&[2], &KERNELS[..1], &[], 0);
        for r in &mut result.rows {
            (r.trials, r.attempts, r.planned_trials, r.few_trials) = (1, 27, 9, true);
            r.spread_pct = 0.0;
        }
        let s = section(&result);
        let few = "1 of 9 planned trials kept (27 attempts)";
        // The headline (and so the at-a-glance card) says so.
        let headline = &s.headlines[0];
        assert!(headline.value.ends_with("GB/s (1 trial)"), "{headline:?}");
        assert!(headline.detail.contains(few), "{headline:?}");
        assert!(headline.few_trials, "the card is drawn as a warning");
        // Its figures by the keys the drift pass measures them again under.
        let keys: Vec<String> = (result.figures().into_iter()).map(|f| f.key).collect();
        assert!(!headline.keys.is_empty());
        assert!(
            headline.keys.iter().all(|k| keys.contains(&k.key)),
            "{headline:?}"
        );
        assert!(!section(&samples::bandwidth(&[2], &KERNELS[..1], &[], 0)).headlines[0].few_trials);
        // The table marks it and the note explains the mark.
        let text = s.plain_text();
        assert!(text.contains("? marks"), "{text}");
        assert!(text.contains(few), "{text}");
        // The CSV and the JSON carry the flag.
        let csv = &s.data_tables()[0];
        assert!(csv.rows.iter().all(|r| r.last().unwrap() == "true"));
        let json = serde_json::to_value(&result.rows[0]).unwrap();
        assert_eq!(json["few_trials"], true);
        assert_eq!(json["planned_trials"], 9);
    }
}
