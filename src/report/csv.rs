//! CSV exporter: each experiment's main rows as a table. A report with one table gives a
//! plain CSV file; with several, the tables follow each other, each introduced by a
//! `# <experiment>.<table>` comment line and separated by a blank line (read them with
//! e.g. pandas' `comment='#'` per section, or run the single command you need).

use super::Report;
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
                    row
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
        tables.push(CsvTable {
            name: "stride.rows".into(),
            header: vec![
                "bytes",
                "stride_bytes",
                "pattern",
                "kernel",
                "gb_per_s",
                "ns_per_access",
                "spread_pct",
            ],
            rows: stride
                .rows
                .iter()
                .map(|r| {
                    vec![
                        r.bytes.to_string(),
                        optional(r.stride_bytes),
                        r.pattern.clone(),
                        r.kernel.clone(),
                        number(r.gb_per_s),
                        number(r.ns_per_access),
                        number(r.spread_pct),
                    ]
                })
                .collect(),
        });
    }
    if tables.is_empty() {
        tables.push(cache_table(&report.machine));
    }
    tables
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
}
