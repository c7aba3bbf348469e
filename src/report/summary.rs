//! The report's headline figures, format-neutral: each cache level's latency and measured
//! capacity, peak bandwidth with one and with all threads, DRAM memory-level parallelism,
//! each TLB level's reach and miss cost, and how many warnings qualify them. The HTML
//! report shows them at a glance above the results; each points to the section it comes
//! from.

use crate::experiments::bandwidth::BandwidthRow;
use crate::report::Report;
use crate::units::Bytes;

/// One headline figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Headline {
    /// What it is: "L2", "Bandwidth, 2 threads", "DRAM MLP", "L1 DTLB (4 KiB pages)".
    pub label: String,
    /// The figure with its unit: "3.85 ns".
    pub value: String,
    /// What qualifies it: "measured capacity 724.1 KiB".
    pub detail: String,
    /// The section it comes from (its HTML anchor).
    pub anchor: &'static str,
}

/// A figure with two decimals below 10, one below 100, none above.
fn figure(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// The headline figures of `report`, in reading order; empty when nothing was measured.
pub fn headlines(report: &Report) -> Vec<Headline> {
    let e = &report.experiments;
    let mut out = Vec::new();
    if let Some(latency) = &e.latency {
        for level in latency.levels.iter().filter(|l| l.latency_ns.is_finite()) {
            out.push(Headline {
                label: level.name.clone(),
                value: format!("{} ns", figure(level.latency_ns)),
                detail: match level.capacity_bytes {
                    Some(bytes) => format!("load-to-use; measured capacity {}", Bytes(bytes)),
                    None => "load-to-use".to_string(),
                },
                anchor: "latency",
            });
        }
    }
    if let Some(bandwidth) = &e.bandwidth {
        let mut threads: Vec<usize> = bandwidth.rows.iter().map(|r| r.threads).collect();
        threads.sort_unstable();
        threads.dedup();
        let ends = match threads[..] {
            [] => vec![],
            [one] => vec![one],
            [first, .., last] => vec![first, last],
        };
        for t in ends {
            let rows = || {
                bandwidth
                    .rows
                    .iter()
                    .filter(move |r| r.threads == t && r.gb_per_s.is_finite())
            };
            let faster = |a: &&BandwidthRow, b: &&BandwidthRow| a.gb_per_s.total_cmp(&b.gb_per_s);
            let Some(peak) = rows().max_by(faster) else {
                continue;
            };
            let dram = rows().filter(|r| r.level == "DRAM").max_by(faster);
            out.push(Headline {
                label: format!("Bandwidth, {t} thread{}", if t == 1 { "" } else { "s" }),
                value: format!("{} GB/s", figure(peak.gb_per_s)),
                detail: format!(
                    "peak ({} in {}){}{}",
                    peak.kernel,
                    peak.level,
                    dram.map_or(String::new(), |d| format!(
                        "; DRAM {} GB/s ({})",
                        figure(d.gb_per_s),
                        d.kernel
                    )),
                    if rows().any(|r| !r.concurrent) {
                        "; some rows flagged !"
                    } else {
                        ""
                    }
                ),
                anchor: "bandwidth",
            });
        }
    }
    if let Some(mlp) = &e.mlp {
        let dram = mlp.saturation.iter().find(|s| s.level == "DRAM");
        if let Some(dram) = dram.filter(|d| d.parallelism.is_finite()) {
            out.push(Headline {
                label: "DRAM MLP".to_string(),
                value: format!("{} misses", figure(dram.parallelism)),
                detail: format!("in flight per thread, reached at {} chains", dram.chains),
                anchor: "mlp",
            });
        }
    }
    if let Some(tlb) = &e.tlb {
        for level in &tlb.levels {
            let (Some(reach), Some(miss)) = (level.reach_bytes, level.miss_ns) else {
                continue;
            };
            if !miss.is_finite() {
                continue;
            }
            out.push(Headline {
                label: format!("{} ({} pages)", level.name, Bytes(level.page_bytes)),
                value: format!("{} ns", figure(miss)),
                detail: format!("per miss; reach {}", Bytes(reach)),
                anchor: "tlb",
            });
        }
    }
    if !out.is_empty() || !report.warnings.is_empty() {
        let n = report.warnings.len();
        out.push(Headline {
            label: "Warnings".to_string(),
            value: n.to_string(),
            detail: if n == 0 {
                "nothing found that distorts these figures".to_string()
            } else {
                "read them before the figures".to_string()
            },
            anchor: "warnings",
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{samples, Settings, Warning};
    use crate::topology::Machine;

    #[test]
    fn levels_mlp_tlb_and_warnings_give_headlines_pointing_to_their_sections() {
        let mut report = Report::new(Machine::default(), Settings::default());
        assert!(headlines(&report).is_empty());
        report.experiments.latency = Some(samples::latency_counted(false));
        report.experiments.mlp = Some(samples::mlp());
        report.experiments.tlb = Some(samples::tlb());
        report.warnings.push(Warning {
            code: "hypervisor".into(),
            message: "KVM".into(),
        });
        let all = headlines(&report);
        let anchors: Vec<&str> = all.iter().map(|h| h.anchor).collect();
        assert!(anchors.contains(&"latency"), "{all:?}");
        assert_eq!(anchors.last(), Some(&"warnings"));
        let warnings = all.last().unwrap();
        assert_eq!(warnings.value, "1");
        // Anchors appear in reading order.
        let order = ["latency", "bandwidth", "mlp", "tlb", "warnings"];
        let positions: Vec<usize> = anchors
            .iter()
            .map(|a| order.iter().position(|o| o == a).unwrap())
            .collect();
        assert!(positions.windows(2).all(|w| w[0] <= w[1]), "{anchors:?}");
        for h in &all {
            assert!(!h.value.is_empty() && !h.label.is_empty(), "{h:?}");
        }
    }
}
