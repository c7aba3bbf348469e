//! The machine's figures `advise` sets a program against: the caches and TLBs as the OS
//! and CPUID describe them, and the measured latency of the last cache level and of DRAM
//! and the peak DRAM bandwidth, taken from a report's figures (the command room finds the
//! report: `--from`, else `./memscope-report.json`, else the newest saved profile of this
//! host in the history), else measured now by the co-runner's own calibration (said so).

use serde::{Deserialize, Serialize};

use crate::topology::{CacheKind, Machine};
use crate::view::figure::Figure;

/// Where the measured figures came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "detail")]
pub enum FactsSource {
    /// A report file (its path).
    Report(String),
    /// The history database: the run's date and command.
    History(String),
    /// No profile found: measured by advise's co-runner before the program ran.
    Measured,
}

impl FactsSource {
    pub fn describe(&self) -> String {
        match self {
            FactsSource::Report(path) => format!("the report {path}"),
            FactsSource::History(run) => format!("the history's newest profile ({run})"),
            FactsSource::Measured => "no machine profile was found: advise measured the \
                 latencies with its co-runner (for the full \
                 profile run `memscope run`)"
                .to_string(),
        }
    }
}

/// The machine's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineFacts {
    pub source: FactsSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l1d_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_bytes: Option<u64>,
    /// The last-level cache: its name ("L3"), size and the CPUs sharing one instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_bytes: Option<u64>,
    pub llc_cpus: Vec<usize>,
    /// Bytes the L2 TLB (else the L1 dTLB) maps with 4 KiB and with 2 MiB pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlb_reach_4k_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlb_reach_2m_bytes: Option<u64>,
    /// Measured latencies, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_ns: Option<f64>,
    /// The machine's peak DRAM read bandwidth measured (all threads), bytes/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_bytes_per_s: Option<f64>,
    /// This VM's balloon hands free memory back to the host (`topology::balloon`), so
    /// huge pages taken from memory free for a while cost a host fault each.
    #[serde(default)]
    pub free_page_reporting: bool,
}

impl MachineFacts {
    /// The LLC's bytes per CPU sharing it: what one of many programs on the machine has.
    pub(crate) fn llc_share_bytes(&self) -> Option<u64> {
        let cpus = self.llc_cpus.len().max(1) as u64;
        self.llc_bytes.map(|b| b / cpus)
    }
}

/// The caches and TLBs from the topology, nothing measured yet.
pub fn from_topology(machine: &Machine) -> MachineFacts {
    let data = |level: u32| {
        machine
            .caches
            .iter()
            .find(|c| c.level == level && c.kind != CacheKind::Instruction)
    };
    let llc = machine
        .caches
        .iter()
        .filter(|c| c.kind != CacheKind::Instruction)
        .max_by_key(|c| c.level);
    let reach = |page: u64| {
        let data_tlbs = machine
            .tlbs
            .iter()
            .filter(|t| t.page_bytes == page && t.kind != CacheKind::Instruction);
        data_tlbs
            .max_by_key(|t| t.level)
            .map(|t| u64::from(t.entries) * page)
    };
    MachineFacts {
        source: FactsSource::Measured,
        l1d_bytes: data(1).map(|c| c.size_bytes),
        l2_bytes: data(2).map(|c| c.size_bytes),
        llc_name: llc.map(|c| format!("L{}", c.level)),
        llc_bytes: llc.map(|c| c.size_bytes),
        llc_cpus: llc.map(|c| c.shared_with_cpus.clone()).unwrap_or_default(),
        tlb_reach_4k_bytes: reach(4096),
        tlb_reach_2m_bytes: reach(2 << 20),
        llc_ns: None,
        dram_ns: None,
        dram_bytes_per_s: None,
        free_page_reporting: crate::topology::balloon::free_page_reporting(),
    }
}

/// What a figure may be on any machine, for it to be taken: (key part, least, most).
const PLAUSIBLE: [(&str, f64, f64); 3] = [
    ("latency", 0.1, 100_000.0),   // ns
    ("random_ns", 0.1, 100_000.0), // ns
    ("gb_per_s", 0.001, 100_000.0),
];

/// Fills the measured figures from a report's (or a saved run's) figures: `Ok(false)`
/// when it has none of them; an error naming a figure no machine could have (a NaN, a
/// latency of 1.7e308 ns), and then nothing is taken.
pub fn take_figures(facts: &mut MachineFacts, figures: &[Figure]) -> Result<bool, String> {
    let value = |key: &str| figures.iter().find(|f| f.key == key).map(|f| f.value);
    let llc_key = facts
        .llc_name
        .as_ref()
        .map(|name| format!("latency.level.{name}.latency_ns"));
    let llc_ns = llc_key.as_deref().and_then(value);
    let dram_ns = value("latency.dram.random_ns");
    let dram_gbs = figures
        .iter()
        .filter(|f| f.key.starts_with("bandwidth.read.") && f.key.contains(".DRAM."))
        .map(|f| f.value)
        .reduce(|a, b| {
            if b.total_cmp(&a).is_gt() || a.is_nan() {
                b
            } else {
                a
            }
        });
    for (key, v) in [
        (llc_key.as_deref().unwrap_or("latency"), llc_ns),
        ("latency.dram.random_ns", dram_ns),
        ("bandwidth.read.…DRAM….gb_per_s", dram_gbs),
    ] {
        let Some(v) = v else { continue };
        let (_, least, most) = PLAUSIBLE
            .iter()
            .find(|(part, _, _)| key.contains(part))
            .copied()
            .unwrap_or(("", 0.0, f64::MAX));
        if !(v.is_finite() && (least..=most).contains(&v)) {
            return Err(format!(
                "its figure {key} = {v:e} is no machine's (expected {least} to {most})"
            ));
        }
    }
    facts.llc_ns = llc_ns;
    facts.dram_ns = dram_ns;
    facts.dram_bytes_per_s = dram_gbs.map(|gbs| gbs * 1e9);
    Ok(facts.llc_ns.is_some() || facts.dram_ns.is_some() || facts.dram_bytes_per_s.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::figure::Better;

    #[test]
    fn a_reports_figures_give_the_latencies_and_the_best_dram_read() {
        let machine = Machine::sample();
        let mut facts = from_topology(&machine);
        assert!(facts.llc_bytes.is_some() && !facts.llc_cpus.is_empty());
        let fig = |key: &str, section: &str, v: f64| {
            Figure::new(
                section,
                key.to_string(),
                key.to_string(),
                "",
                v,
                Better::Lower,
            )
        };
        let llc = facts.llc_name.clone().unwrap();
        let figures = vec![
            fig(&format!("level.{llc}.latency_ns"), "latency", 12.0),
            fig("level.L1d.latency_ns", "latency", 1.0),
            fig("dram.random_ns", "latency", 100.0),
            fig("read.1r0w.1t.DRAM.gb_per_s", "bandwidth", 20.0),
            fig("read.1r0w.2t.DRAM.gb_per_s", "bandwidth", 30.0),
            fig("write.0r1w.2t.DRAM.gb_per_s", "bandwidth", 90.0),
        ];
        assert_eq!(take_figures(&mut facts, &figures), Ok(true));
        assert_eq!(facts.llc_ns, Some(12.0));
        assert_eq!(facts.dram_ns, Some(100.0));
        assert_eq!(facts.dram_bytes_per_s, Some(30e9));
        assert_eq!(take_figures(&mut from_topology(&machine), &[]), Ok(false));
        // Impossible figures are refused, and nothing is taken.
        let mut fresh = from_topology(&machine);
        let bad = vec![fig("dram.random_ns", "latency", 1.7e308)];
        assert!(take_figures(&mut fresh, &bad)
            .unwrap_err()
            .contains("1.7e308"));
        assert_eq!(fresh.dram_ns, None);
        let share = facts.llc_share_bytes().unwrap();
        assert_eq!(
            share,
            facts.llc_bytes.unwrap() / facts.llc_cpus.len() as u64
        );
    }
}
