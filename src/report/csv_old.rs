//! CSV exporter: each experiment's main rows as a table. A report with one table gives a
//! plain CSV file; with several, the tables follow each other, each introduced by a
//! `# <experiment>.<table>` comment line and separated by a blank line (read them with
//! e.g. pandas' `comment='#'` per section, or run the single command you need).

use super::Report;
use crate::counters::{AccessCounts, MissLevel};
use crate::stat::StatResult;
use crate::stats::summary::Summary;
use crate::topology::Machine;

/// A table of text cells with a header row.
pub struct CsvTable {
    pub name: String,
    pub header: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
}

fn number(value: f64) -> String {
    if value.is_finite() {
        format!("{}", (value * 1e4).round() / 1e4)
    } else {
        String::new()
    }
}

fn optional(value: Option<u64>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

/// Columns of a row's misses per access (`--counters`): the accesses counted, then each
/// level in `MissLevel::ALL` order; a level not counted is an empty cell (the JSON report
/// says why).
const MISS_COLUMNS: [&str; 5] = [
    "counted_accesses",
    "l1_miss_per_access",
    "l2_miss_per_access",
    "llc_miss_per_access",
    "dtlb_miss_per_access",
];

/// `MISS_COLUMNS` of the random curve of the latency sweep.
const RANDOM_MISS_COLUMNS: [&str; 5] = [
    "random_counted_accesses",
    "random_l1_miss_per_access",
    "random_l2_miss_per_access",
    "random_llc_miss_per_access",
    "random_dtlb_miss_per_access",
];

/// The `MISS_COLUMNS` cells of a row: misses per access to six decimals (a rare miss is
/// still visible), empty when not counted.
fn miss_values(counts: Option<&AccessCounts>) -> Vec<String> {
    let mut cells = vec![counts.map(|c| c.accesses.to_string()).unwrap_or_default()];
    cells.extend(MissLevel::ALL.iter().map(|&level| {
        counts
            .and_then(|c| c.per_access(level))
            .filter(|v| v.is_finite())
            .map(|v| format!("{}", (v * 1e6).round() / 1e6))
            .unwrap_or_default()
    }));
    cells
}

fn quote(cell: &str) -> String {
    if cell.contains([',', '"', '\n']) {
        format!("\"{}\"", cell.replace('"', "\"\""))
    } else {
        cell.to_string()
    }
}

/// The tables of a report: the machine's caches when there is no experiment (the `info`
/// command), otherwise each experiment's rows.
pub fn tables(report: &Report) -> Vec<CsvTable> {
    let mut tables = Vec::new();
    if let Some(latency) = &report.experiments.latency {
        let random = latency.random_points.as_deref().unwrap_or(&[]);
        let mut header = vec![
            "bytes",
            "order",
            "ns",
            "cycles",
            "spread_pct",
            "trials",
            "unstable",
            "level",
        ];
        if !random.is_empty() {
            header.extend([
                "random_ns",
                "random_cycles",
                "random_spread_pct",
                "random_unstable",
            ]);
        }
        let counted = latency.points.iter().any(|p| p.counters.is_some());
        let random_counted = random.iter().any(|p| p.counters.is_some());
        if counted {
            header.extend(MISS_COLUMNS);
        }
        if random_counted {
            header.extend(RANDOM_MISS_COLUMNS);
        }
        tables.push(CsvTable {
            name: "latency.points".into(),
            header,
            rows: latency
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let level = latency
                        .levels
                        .iter()
                        .find(|l| (l.first_bytes..=l.last_bytes).contains(&p.bytes))
                        .map_or("", |l| l.name.as_str());
                    let mut row = vec![
                        p.bytes.to_string(),
                        latency.order.clone(),
                        number(p.ns),
                        number(p.cycles),
                        number(p.spread_pct),
                        p.trials.to_string(),
                        p.unstable.to_string(),
                        level.to_string(),
                    ];
                    if let Some(r) = random.get(i) {
                        row.extend([
                            number(r.ns),
                            number(r.cycles),
                            number(r.spread_pct),
                            r.unstable.to_string(),
                        ]);
                    }
                    if counted {
                        row.extend(miss_values(p.counters.as_ref()));
                    }
                    if random_counted {
                        let r = random.get(i).and_then(|r| r.counters.as_ref());
                        row.extend(miss_values(r));
                    }
                    row
                })
                .collect(),
        });
    }
    if let Some(impact) = &report.experiments.miss_impact {
        use crate::counters::MissLevel;
        tables.push(CsvTable {
            name: "miss_impact.rows".into(),
            header: vec![
                "level",
                "footprint_bytes",
                "pattern",
                "ns_per_access",
                "spread_pct",
                "run_time_ns",
                "laps",
                "accesses",
                "l1_misses_per_access",
                "l2_misses_per_access",
                "llc_miss_rate",
                "dtlb_misses_per_access",
                "multiplexed",
                "misses_not_supported",
                "page_faults",
                "task_clock_ns",
                "amat_ns",
                "measured_over_amat",
                "amat_not_computed",
            ],
            rows: impact
                .rows
                .iter()
                .map(|r| {
                    let misses = |level| r.misses.per_access(level).map(number).unwrap_or_default();
                    let mut reasons: Vec<&str> = Vec::new();
                    for why in r
                        .misses
                        .levels
                        .iter()
                        .filter_map(|l| l.not_supported.as_deref())
                    {
                        if !reasons.contains(&why) {
                            reasons.push(why);
                        }
                    }
                    vec![
                        r.level.clone(),
                        r.footprint_bytes.to_string(),
                        r.pattern.label().to_string(),
                        number(r.ns_per_access),
                        number(r.spread_pct),
                        number(r.run_time_ns),
                        r.laps.to_string(),
                        r.misses.accesses.to_string(),
                        misses(MissLevel::L1),
                        misses(MissLevel::L2),
                        misses(MissLevel::Llc),
                        misses(MissLevel::Dtlb),
                        r.misses.levels.iter().any(|l| l.multiplexed).to_string(),
                        reasons.join("; "),
                        optional(r.page_faults),
                        optional(r.task_clock_ns),
                        r.amat_ns.map(number).unwrap_or_default(),
                        r.measured_over_amat.map(number).unwrap_or_default(),
                        r.amat_not_computed.clone().unwrap_or_default(),
                    ]
                })
                .collect(),
        });
    }
    if let Some(bandwidth) = &report.experiments.bandwidth {
        let header = vec![
            "kernel",
            "read_parts",
            "write_parts",
            "nontemporal",
            "isa",
            "threads",
            "working_set_bytes",
            "bytes_per_thread",
            "level",
            "gb_per_s",
            "bytes_per_cycle",
            "spread_pct",
            "overlap",
            "concurrent",
            "attempts",
        ];
        let row = |r: &crate::experiments::bandwidth::BandwidthRow| {
            vec![
                r.kernel.clone(),
                r.read_parts.to_string(),
                r.write_parts.to_string(),
                r.nontemporal.to_string(),
                r.isa.clone(),
                r.threads.to_string(),
                r.working_set_bytes.to_string(),
                r.bytes_per_thread.to_string(),
                r.level.clone(),
                number(r.gb_per_s),
                r.bytes_per_cycle.map(number).unwrap_or_default(),
                number(r.spread_pct),
                number(r.overlap),
                r.concurrent.to_string(),
                r.attempts.to_string(),
            ]
        };
        tables.push(CsvTable {
            name: "bandwidth.rows".into(),
            header: header.clone(),
            rows: bandwidth.rows.iter().map(row).collect(),
        });
        if !bandwidth.sweep.is_empty() {
            tables.push(CsvTable {
                name: "bandwidth.sweep".into(),
                header,
                rows: bandwidth.sweep.iter().map(row).collect(),
            });
        }
    }
    if let Some(stride) = &report.experiments.stride {
        let counted = stride.rows.iter().any(|r| r.counters.is_some());
        let mut header = vec![
            "bytes",
            "stride_bytes",
            "pattern",
            "kernel",
            "gb_per_s",
            "ns_per_access",
            "spread_pct",
        ];
        if counted {
            header.extend(MISS_COLUMNS);
        }
        tables.push(CsvTable {
            name: "stride.rows".into(),
            header,
            rows: stride
                .rows
                .iter()
                .map(|r| {
                    let mut row = vec![
                        r.bytes.to_string(),
                        optional(r.stride_bytes),
                        r.pattern.clone(),
                        r.kernel.clone(),
                        number(r.gb_per_s),
                        number(r.ns_per_access),
                        number(r.spread_pct),
                    ];
                    if counted {
                        row.extend(miss_values(r.counters.as_ref()));
                    }
                    row
                })
                .collect(),
        });
    }
    if let Some(loaded) = &report.experiments.loaded {
        // The knee of each row's curve, to flag the knee row.
        let knee_delay = |mix: &str, threads: usize| {
            loaded
                .curves
                .iter()
                .find(|c| c.mix == mix && c.threads == threads)
                .and_then(|c| c.knee.as_ref())
                .map(|k| k.delay)
        };
        tables.push(CsvTable {
            name: "loaded.rows".into(),
            header: vec![
                "mix",
                "threads",
                "delay_cycles",
                "gb_per_s",
                "injector_gb_per_s",
                "latency_ns",
                "latency_cycles",
                "spread_pct",
                "concurrency",
                "injector_overlap",
                "injectors_concurrent",
                "knee",
            ],
            rows: loaded
                .rows
                .iter()
                .map(|r| {
                    vec![
                        r.mix.clone(),
                        r.threads.to_string(),
                        r.delay_cycles.to_string(),
                        number(r.gb_per_s),
                        number(r.injector_gb_per_s),
                        number(r.latency_ns),
                        number(r.latency_cycles),
                        number(r.spread_pct),
                        number(r.concurrency),
                        number(r.injector_overlap),
                        r.injectors_concurrent.to_string(),
                        (knee_delay(&r.mix, r.threads) == Some(r.delay_cycles)).to_string(),
                    ]
                })
                .collect(),
        });
    }
    if let Some(mlp) = &report.experiments.mlp {
        let header = vec![
            "level",
            "bytes",
            "chains",
            "ns_per_round",
            "ns_per_load",
            "parallelism",
            "spread_pct",
        ];
        let row = |r: &crate::experiments::mlp::MlpRow| {
            vec![
                r.level.clone().unwrap_or_default(),
                r.bytes.to_string(),
                r.chains.to_string(),
                number(r.ns_per_round),
                number(r.ns_per_load),
                number(r.parallelism),
                number(r.spread_pct),
            ]
        };
        tables.push(CsvTable {
            name: "mlp.rows".into(),
            header: header.clone(),
            rows: mlp.rows.iter().map(row).collect(),
        });
        if !mlp.grid.is_empty() {
            tables.push(CsvTable {
                name: "mlp.grid".into(),
                header,
                rows: mlp.grid.iter().map(row).collect(),
            });
        }
    }
    if let Some(rob) = &report.experiments.rob {
        tables.push(CsvTable {
            name: "rob.rows".into(),
            header: vec![
                "filler",
                "k",
                "ns_per_iter",
                "cycles_per_iter",
                "spread_pct",
            ],
            rows: rob
                .rows
                .iter()
                .map(|r| {
                    vec![
                        r.filler.clone(),
                        r.k.to_string(),
                        number(r.ns_per_iter),
                        number(r.cycles_per_iter),
                        number(r.spread_pct),
                    ]
                })
                .collect(),
        });
        if !rob.serialized.is_empty() {
            tables.push(CsvTable {
                name: "rob.serialized".into(),
                header: vec!["misses", "k", "ns", "cycles"],
                rows: rob
                    .serialized
                    .iter()
                    .map(|r| {
                        vec![
                            r.misses.to_string(),
                            r.k.to_string(),
                            number(r.ns),
                            number(r.cycles),
                        ]
                    })
                    .collect(),
            });
        }
    }
    if let Some(tlb) = &report.experiments.tlb {
        // The TLB level a point lies in: the first level of its page size whose entries
        // cover it, else the level without entries (the page walk).
        let level_of = |r: &crate::experiments::tlb::TlbRow| {
            let levels = tlb.levels.iter().filter(|l| l.page_bytes == r.page_bytes);
            levels
                .clone()
                .find(|l| l.entries.is_some_and(|e| r.pages <= e))
                .or_else(|| levels.clone().find(|l| l.entries.is_none()))
                .map_or("", |l| l.name.as_str())
        };
        let counted = tlb.rows.iter().any(|r| r.counters.is_some());
        let mut header = vec![
            "page_bytes",
            "pages",
            "ns",
            "cycles",
            "dense_ns",
            "tlb_ns",
            "spread_pct",
            "level",
        ];
        if counted {
            header.extend(MISS_COLUMNS);
        }
        tables.push(CsvTable {
            name: "tlb.rows".into(),
            header,
            rows: tlb
                .rows
                .iter()
                .map(|r| {
                    let mut row = vec![
                        r.page_bytes.to_string(),
                        r.pages.to_string(),
                        number(r.ns),
                        number(r.cycles),
                        number(r.dense_ns),
                        number(r.tlb_ns),
                        number(r.spread_pct),
                        level_of(r).to_string(),
                    ];
                    if counted {
                        row.extend(miss_values(r.counters.as_ref()));
                    }
                    row
                })
                .collect(),
        });
        if !tlb.levels.is_empty() {
            tables.push(CsvTable {
                name: "tlb.levels".into(),
                header: vec![
                    "page_bytes",
                    "name",
                    "entries",
                    "reach_bytes",
                    "miss_ns",
                    "miss_cycles",
                    "cpuid_entries",
                ],
                rows: tlb
                    .levels
                    .iter()
                    .map(|l| {
                        vec![
                            l.page_bytes.to_string(),
                            l.name.clone(),
                            optional(l.entries),
                            optional(l.reach_bytes),
                            l.miss_ns.map(number).unwrap_or_default(),
                            l.miss_cycles.map(number).unwrap_or_default(),
                            optional(l.cpuid_entries.map(u64::from)),
                        ]
                    })
                    .collect(),
            });
        }
        if !tlb.saxpy.is_empty() {
            tables.push(CsvTable {
                name: "tlb.saxpy".into(),
                header: vec![
                    "pattern",
                    "page_bytes",
                    "stride_bytes",
                    "footprint_bytes",
                    "pass_ms",
                    "ns_per_access",
                ],
                rows: tlb
                    .saxpy
                    .iter()
                    .map(|r| {
                        vec![
                            r.pattern.clone(),
                            r.page_bytes.to_string(),
                            r.stride_bytes.to_string(),
                            r.footprint_bytes.to_string(),
                            number(r.pass_ms),
                            number(r.ns_per_access),
                        ]
                    })
                    .collect(),
            });
        }
    }
    if let Some(numa) = &report.experiments.numa {
        // One row per (threads' node, memory's node); node ids label both.
        let n = numa
            .nodes
            .len()
            .max(numa.latency_ns.len())
            .max(numa.read_gb_per_s.len());
        let node = |i: usize| numa.nodes.get(i).copied().unwrap_or(i).to_string();
        let cell = |m: &[Vec<f64>], i: usize, j: usize| {
            m.get(i)
                .and_then(|r| r.get(j))
                .map(|&v| number(v))
                .unwrap_or_default()
        };
        let mut rows = Vec::new();
        for i in 0..n {
            for j in 0..n {
                rows.push(vec![
                    node(i),
                    node(j),
                    (i == j).to_string(),
                    cell(&numa.latency_ns, i, j),
                    cell(&numa.random_latency_ns, i, j),
                    cell(&numa.read_gb_per_s, i, j),
                    cell(&numa.read_overlap, i, j),
                    optional(
                        numa.distances
                            .get(i)
                            .and_then(|r| r.get(j))
                            .map(|&d| u64::from(d)),
                    ),
                    numa.placement_verified
                        .get(i)
                        .and_then(|r| r.get(j))
                        .copied()
                        .flatten()
                        .map(number)
                        .unwrap_or_default(),
                ]);
            }
        }
        tables.push(CsvTable {
            name: "numa.cells".into(),
            header: vec![
                "cpu_node",
                "memory_node",
                "local",
                "latency_ns",
                "random_latency_ns",
                "read_gb_per_s",
                "read_overlap",
                "distance",
                "placement_verified",
            ],
            rows,
        });
    }
    if let Some(stat) = &report.stat {
        tables.push(stat_table(stat));
    }
    if tables.is_empty() {
        tables.push(cache_table(&report.machine));
    }
    tables
}

/// `memscope stat`: one row per event, derived figure and time, with the median over
/// the runs, its spread and the reason when not counted.
fn stat_table(stat: &StatResult) -> CsvTable {
    let summary_cells = |s: Option<&Summary>| match s {
        Some(s) => vec![
            number(s.median),
            number(s.spread_pct()),
            number(s.min),
            number(s.max),
        ],
        None => vec![String::new(); 4],
    };
    let mut rows = Vec::new();
    for e in &stat.events {
        let mut row = vec!["event".to_string(), e.event.clone(), String::new()];
        row.extend(summary_cells(e.count.as_ref()));
        row.extend([
            e.multiplexed.to_string(),
            e.running_pct.map(number).unwrap_or_default(),
            e.not_supported.clone().unwrap_or_default(),
        ]);
        rows.push(row);
    }
    for d in &stat.derived {
        let mut row = vec!["derived".to_string(), d.name.clone(), d.unit.clone()];
        row.extend(summary_cells(d.value.as_ref()));
        row.extend([
            String::new(),
            String::new(),
            d.not_supported.clone().unwrap_or_default(),
        ]);
        rows.push(row);
    }
    for (name, s) in [
        ("elapsed", &stat.elapsed_s),
        ("user", &stat.user_s),
        ("system", &stat.system_s),
    ] {
        let mut row = vec!["time".to_string(), name.to_string(), "s".to_string()];
        row.extend(summary_cells(Some(s)));
        row.extend([String::new(), String::new(), String::new()]);
        rows.push(row);
    }
    CsvTable {
        name: "stat".into(),
        header: vec![
            "kind",
            "name",
            "unit",
            "median",
            "spread_pct",
            "min",
            "max",
            "multiplexed",
            "running_pct",
            "not_supported",
        ],
        rows,
    }
}

fn cache_table(machine: &Machine) -> CsvTable {
    CsvTable {
        name: "machine.caches".into(),
        header: vec![
            "level",
            "kind",
            "size_bytes",
            "line_bytes",
            "ways",
            "shared_with_cpus",
            "instances",
        ],
        rows: machine
            .caches
            .iter()
            .map(|c| {
                vec![
                    c.level.to_string(),
                    c.kind.clone(),
                    c.size_bytes.to_string(),
                    c.line_bytes.to_string(),
                    optional(c.ways.map(u64::from)),
                    c.shared_with_cpus
                        .iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(" "),
                    c.instances.to_string(),
                ]
            })
            .collect(),
    }
}

pub fn serialize(report: &Report) -> Vec<u8> {
    let tables = tables(report);
    let several = tables.len() > 1;
    let mut out = String::new();
    for (i, table) in tables.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if several {
            out.push_str(&format!("# {}\n", table.name));
        }
        out.push_str(&table.header.join(","));
        out.push('\n');
        for row in &table.rows {
            out.push_str(&row.iter().map(|c| quote(c)).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::samples;
    use crate::report::Settings;

    #[test]
    fn quoting_and_numbers() {
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(number(1.234567), "1.2346");
        assert_eq!(number(f64::NAN), "");
    }

    #[test]
    fn info_report_is_one_plain_table() {
        let text = String::from_utf8(serialize(&Report::new(
            Machine::default(),
            Settings::default(),
        )))
        .unwrap();
        assert!(text.starts_with("level,kind,size_bytes"));
        assert!(!text.contains('#'));
    }

    #[test]
    fn loaded_mlp_and_rob_tables() {
        let mut report = Report::new(Machine::default(), Settings::default());
        report.experiments.loaded = Some(samples::loaded());
        report.experiments.mlp = Some(samples::mlp());
        report.experiments.rob = Some(samples::rob());
        let names: Vec<String> = tables(&report).into_iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "loaded.rows",
                "mlp.rows",
                "mlp.grid",
                "rob.rows",
                "rob.serialized"
            ]
        );
        let text = String::from_utf8(serialize(&report)).unwrap();
        assert!(
            text.contains("read,3,200,41.7,40.9,81.5,244.5,1,53.1023,1,true,true\n"),
            "{text}"
        );
        assert_eq!(text.matches(",true\n").count(), 2, "one knee per curve");
        assert!(text.contains("\nL2,524288,8,"), "{text}");
        assert!(text.contains("\n,16384,1,"), "grid rows have no level");
        assert!(text.contains("\nnop,224,100,300,1\n"), "{text}");
        assert!(text.contains("\n4,320,380,1140\n"), "{text}");
        // Every data line has as many cells as its header.
        for section in text.split("\n\n") {
            let mut lines = section.lines().filter(|l| !l.starts_with('#'));
            let columns = lines.next().unwrap().split(',').count();
            assert!(lines.all(|l| l.split(',').count() == columns), "{section}");
        }

        // Empty results give header-only tables; NaN gives empty cells.
        report.experiments.loaded = Some(samples::empty_loaded());
        report.experiments.mlp = Some(samples::empty_mlp());
        report.experiments.rob = Some(samples::empty_rob());
        let names: Vec<String> = tables(&report).into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["loaded.rows", "mlp.rows", "rob.rows"]);
        let (l, m, r) = samples::nan_results();
        report.experiments.loaded = Some(l);
        report.experiments.mlp = Some(m);
        report.experiments.rob = Some(r);
        let text = String::from_utf8(serialize(&report)).unwrap();
        assert!(!text.contains("NaN") && !text.contains("inf"));
    }

    #[test]
    fn miss_columns_only_with_counters_and_empty_where_not_counted() {
        let mut report = Report::new(Machine::default(), Settings::default());
        report.experiments.latency = Some(samples::latency_counted(false));
        report.experiments.stride = Some(samples::stride_counted(false));
        report.experiments.tlb = Some(samples::tlb());
        let text = String::from_utf8(serialize(&report)).unwrap();
        assert!(!text.contains("miss_per_access"), "{text}");

        report.experiments.latency = Some(samples::latency_counted(true));
        report.experiments.stride = Some(samples::stride_counted(true));
        let mut tlb = samples::tlb();
        tlb.rows[0].counters = Some(samples::uncounted_access());
        report.experiments.tlb = Some(tlb);
        let tables = tables(&report);
        let table = |name: &str| tables.iter().find(|t| t.name == name).unwrap();
        let cell = |t: &CsvTable, row: usize, column: &str| {
            let at = t.header.iter().position(|h| *h == column).unwrap();
            t.rows[row][at].clone()
        };
        let latency = table("latency.points");
        assert!(latency.header.ends_with(&RANDOM_MISS_COLUMNS));
        // 16 KiB: L1 0.2, no L2 event, the LLC counted (multiplexed), the DTLB refused.
        for (column, value) in [
            ("counted_accesses", "1000"),
            ("l1_miss_per_access", "0.2"),
            ("l2_miss_per_access", ""),
            ("llc_miss_per_access", "0.01"),
            ("dtlb_miss_per_access", ""),
            ("random_counted_accesses", "1000"),
            ("random_l1_miss_per_access", ""),
        ] {
            assert_eq!(cell(latency, 2, column), value, "{column}");
        }
        let stride = table("stride.rows");
        assert!(stride.header.ends_with(&MISS_COLUMNS));
        assert_eq!(cell(stride, 1, "l1_miss_per_access"), "1");
        // Rows without counts (the TLB rows past the first) have empty cells.
        let tlb = table("tlb.rows");
        assert!(tlb.header.ends_with(&MISS_COLUMNS));
        assert_eq!(cell(tlb, 0, "counted_accesses"), "1000");
        assert_eq!(cell(tlb, 1, "counted_accesses"), "");
        for t in &tables {
            assert!(
                t.rows.iter().all(|r| r.len() == t.header.len()),
                "{}",
                t.name
            );
        }
    }

    #[test]
    fn miss_impact_table_has_a_row_per_footprint_and_pattern() {
        let mut report = Report::new(Machine::default(), Settings::default());
        report.experiments.miss_impact = Some(crate::experiments::miss_impact::tests::sample());
        let names: Vec<String> = tables(&report).into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["miss_impact.rows"]);
        let text = String::from_utf8(serialize(&report)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("level,footprint_bytes,pattern,ns_per_access"));
        // Counted: the AMAT and its ratio; not counted: empty cells and the reasons.
        assert!(
            lines[2].starts_with(
                "DRAM,134217728,random,101,1.5,4200000,3,1000,1,1,1,0,false,,0,4200000,100,1.01,"
            ),
            "{text}"
        );
        assert!(
            lines[3].starts_with("DRAM,134217728,sequential,5,1.5,4200000,3,1000,,,,0,false,not supported: no hardware PMU (a VM),0,4200000,,,"),
            "{text}"
        );
        assert!(lines[3].ends_with("not computed: L1 misses not supported: no hardware PMU (a VM)"));
    }

    #[test]
    fn tlb_and_numa_tables() {
        let mut report = Report::new(Machine::default(), Settings::default());
        report.experiments.tlb = Some(samples::tlb());
        report.experiments.numa = Some(samples::numa());
        let names: Vec<String> = tables(&report).into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["tlb.rows", "tlb.levels", "tlb.saxpy", "numa.cells"]);
        let text = String::from_utf8(serialize(&report)).unwrap();
        // Each point names the TLB level its page count falls in.
        assert!(
            text.contains("\n4096,64,1.2,3.6,1.2,0,1,L1 DTLB\n"),
            "{text}"
        );
        assert!(
            text.contains("\n4096,96,3.2,9.6,1.2,2,1,L2 DTLB\n"),
            "{text}"
        );
        assert!(
            text.contains("\n4096,3072,29,87,4,25,1,page walk\n"),
            "{text}"
        );
        assert!(text.contains("\n4096,L1 DTLB,64,262144,2,6,72\n"), "{text}");
        assert!(text.contains("\n4096,page walk,,,,,\n"), "{text}");
        assert!(
            text.contains("\n\"stride 4 KiB, huge pages\",2097152,4096,268435456,"),
            "{text}"
        );
        assert!(
            text.contains("\n0,1,false,140,171,25,0.98,21,0.998\n"),
            "{text}"
        );
        assert!(text.contains("\n1,1,true,91,106,41,0.99,10,\n"), "{text}");
        assert_eq!(
            text.matches("\n0,").count() + text.matches("\n1,").count(),
            4
        );
        for section in text.split("\n\n") {
            let mut lines = section.lines().filter(|l| !l.starts_with('#'));
            let columns = lines.next().unwrap().split(',').count();
            // The one quoted pattern holds a comma of its own.
            assert!(
                lines.all(|l| l.split(',').count() == columns || l.starts_with('"')),
                "{section}"
            );
        }

        // Empty results give header-only main tables; NaN and ragged matrices give empty
        // cells.
        report.experiments.tlb = Some(samples::empty_tlb());
        report.experiments.numa = Some(samples::empty_numa());
        let names: Vec<String> = tables(&report).into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["tlb.rows", "numa.cells"]);
        let (t, n) = samples::nan_tlb_numa();
        report.experiments.tlb = Some(t);
        report.experiments.numa = Some(n);
        let text = String::from_utf8(serialize(&report)).unwrap();
        assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
        assert!(text.contains("\n1,1,true,91,,,0.99,10,\n"), "{text}");
    }
}
