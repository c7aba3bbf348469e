//! Which precise memory-access events this machine samples with, read from the PMUs the
//! kernel lists under /sys/bus/event_source/devices (a configurable root, so tests build
//! a fake tree): Intel PEBS `mem-loads` (latency threshold in config1) and `mem-stores`
//! on the `cpu` PMU or on each core PMU of a hybrid CPU, led by `mem-loads-aux` where
//! the PMU lists it (Sapphire Rapids and later); AMD IBS op on the `ibs_op` PMU. Arm SPE
//! is recognised and declined. Event encodings come from the PMU's `events/` and
//! `format/` files, as perf reads them.

use std::fs;
use std::path::Path;

use super::datasrc::Encoding;
use crate::topology::cpu::parse_cpu_list;

/// perf's default load-latency threshold: only loads slower than this many cycles.
pub(crate) const LDLAT_CYCLES: u64 = 30;
/// The auxiliary event `mem-loads` needs as its group leader on Sapphire Rapids+.
pub(crate) const MEM_LOADS_AUX_CONFIG: u64 = 0x8203;
const DEFAULT_LOAD_PERIOD: u64 = 10_007;
const DEFAULT_STORE_PERIOD: u64 = 100_003;
const DEFAULT_IBS_PERIOD: u64 = 65_536;

/// The CPU maker, which decides the precise sampling facility.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    Intel,
    /// AMD or Hygon: IBS.
    Amd,
    Arm,
    Other,
}

impl Vendor {
    /// From the CPUID vendor string or /proc/cpuinfo's vendor name.
    pub(crate) fn from_vendor_id(id: &str) -> Vendor {
        match id {
            "GenuineIntel" => Vendor::Intel,
            "AuthenticAMD" | "HygonGenuine" => Vendor::Amd,
            "ARM" | "Ampere" | "Apple" | "Fujitsu" | "HiSilicon" | "NVIDIA" | "Qualcomm" => {
                Vendor::Arm
            }
            _ => Vendor::Other,
        }
    }

    /// This machine's vendor.
    pub fn detect() -> Vendor {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        Vendor::from_vendor_id(&crate::topology::cpu::identity(&cpuinfo).vendor)
    }
}

/// Which samples of an event to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Every sample with a data address (PEBS memory events sample only accesses).
    WithAddress,
    /// IBS tags every micro-op: only those with a valid data address and a TLB field
    /// other than NA are memory accesses.
    AddressAndTlb,
    /// The group leader `mem-loads-aux`: its samples carry no access.
    None,
}

/// One event to open on each CPU of `cpus`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSpec {
    /// As perf would name it, e.g. `cpu_core/mem-loads,ldlat=30/`.
    pub name: String,
    pub pmu: String,
    pub pmu_type: u32,
    pub config: u64,
    pub config1: u64,
    pub config2: u64,
    pub precise_ip: u8,
    /// Opened in a group led by an event of this config on the same PMU.
    pub aux_leader: Option<u64>,
    pub encoding: Encoding,
    pub keep: Keep,
    /// The PMU's CPUs (its `cpus` file, on hybrid CPUs); `None`: every CPU.
    pub cpus: Option<Vec<usize>>,
    pub default_period: u64,
    /// Periods are rounded up to a multiple of this (IBS: 16).
    pub period_multiple: u64,
    /// What one period counts, in words ("ops", "loads slower than 30 cycles").
    pub unit: String,
    /// The kernel must be able to sample kernel mode too (IBS without `swfilt`).
    pub needs_kernel: bool,
    /// The event itself selects TLB misses.
    pub event_is_tlb_miss: bool,
}

impl EventSpec {
    /// The period to program for a requested one (0: this event's default).
    pub fn period(&self, requested: u64) -> u64 {
        let p = if requested == 0 {
            self.default_period
        } else {
            requested
        };
        p.max(1).next_multiple_of(self.period_multiple.max(1))
    }

    /// Whether to open this event on `cpu`.
    pub(crate) fn runs_on(&self, cpu: usize) -> bool {
        self.cpus.as_ref().is_none_or(|c| c.contains(&cpu))
    }
}

/// The reason when the machine lists no hardware PMU at all.
pub(crate) const NO_PMU: &str = "no hardware PMU: the kernel lists no cpu PMU under \
    /sys/bus/event_source/devices (e.g. a virtual machine without PMU passthrough); run on \
    bare metal or enable PMU passthrough (e.g. QEMU/KVM `-cpu host,pmu=on`) for precise \
    memory sampling";

fn read_trim(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn pmu_type(dir: &Path) -> Option<u32> {
    read_trim(&dir.join("type"))?.parse().ok()
}

fn parse_number(text: &str) -> Option<u64> {
    let t = text.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

/// Places `value` in `configs` ([config, config1, config2]) where the PMU's
/// `format/<term>` file says, e.g. `config:0-7`, `config1:0-15`, `config:0-7,32-35`.
pub(crate) fn apply_format(
    pmu_dir: &Path,
    term: &str,
    value: u64,
    configs: &mut [u64; 3],
) -> Result<(), String> {
    let path = pmu_dir.join("format").join(term);
    let spec =
        read_trim(&path).ok_or_else(|| format!("the PMU has no format file {}", path.display()))?;
    let bad = || format!("{} holds '{spec}', not a config bit range", path.display());
    let (field, ranges) = spec.split_once(':').ok_or_else(bad)?;
    let slot = match field {
        "config" => 0,
        "config1" => 1,
        "config2" => 2,
        _ => return Err(bad()),
    };
    let mut rest = value;
    for range in ranges.split(',') {
        let (lo, hi) = match range.split_once('-') {
            Some((lo, hi)) => (lo.parse::<u32>(), hi.parse::<u32>()),
            None => (range.parse::<u32>(), range.parse::<u32>()),
        };
        let (Ok(lo), Ok(hi)) = (lo, hi) else {
            return Err(bad());
        };
        if lo > hi || hi > 63 {
            return Err(bad());
        }
        let width = hi - lo + 1;
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        configs[slot] = (configs[slot] & !(mask << lo)) | ((rest & mask) << lo);
        rest = if width == 64 { 0 } else { rest >> width };
    }
    Ok(())
}

/// The configs of a sysfs event (`events/<name>`, e.g. `event=0xcd,umask=0x1,ldlat=3`),
/// with `overrides` replacing or adding terms.
pub(crate) fn event_configs(
    pmu_dir: &Path,
    event: &str,
    overrides: &[(&str, u64)],
) -> Result<[u64; 3], String> {
    let path = pmu_dir.join("events").join(event);
    let text = read_trim(&path).ok_or_else(|| format!("no sysfs event {}", path.display()))?;
    let mut configs = [0u64; 3];
    for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (name, value) = match term.split_once('=') {
            Some((n, v)) => {
                let v = parse_number(v).ok_or_else(|| {
                    format!("{} has a term '{term}' with no number", path.display())
                })?;
                (n.trim(), v)
            }
            None => (term, 1),
        };
        if overrides.iter().any(|(o, _)| *o == name) {
            continue;
        }
        apply_format(pmu_dir, name, value, &mut configs)?;
    }
    for &(name, value) in overrides {
        apply_format(pmu_dir, name, value, &mut configs)?;
    }
    Ok(configs)
}

fn pmu_cpus(dir: &Path) -> Option<Vec<usize>> {
    parse_cpu_list(&read_trim(&dir.join("cpus"))?).ok()
}

/// The PEBS memory events of one Intel core PMU (`cpu`, `cpu_core`, `cpu_atom`).
fn intel_events(dir: &Path, pmu: &str, hybrid: bool) -> Result<Vec<EventSpec>, String> {
    let ty = pmu_type(dir).ok_or_else(|| format!("{} has no type file", dir.display()))?;
    let cpus = if hybrid { pmu_cpus(dir) } else { None };
    let mut specs = Vec::new();
    let aux = dir.join("events/mem-loads-aux").exists().then(|| {
        event_configs(dir, "mem-loads-aux", &[])
            .map(|c| c[0])
            .unwrap_or(MEM_LOADS_AUX_CONFIG)
    });
    let base = |name: String, configs: [u64; 3], unit: String, period: u64| EventSpec {
        name,
        pmu: pmu.to_string(),
        pmu_type: ty,
        config: configs[0],
        config1: configs[1],
        config2: configs[2],
        precise_ip: 2,
        aux_leader: None,
        encoding: Encoding::IntelPebs,
        keep: Keep::WithAddress,
        cpus: cpus.clone(),
        default_period: period,
        period_multiple: 1,
        unit,
        needs_kernel: false,
        event_is_tlb_miss: false,
    };
    let configs = event_configs(dir, "mem-loads", &[("ldlat", LDLAT_CYCLES)])?;
    specs.push(EventSpec {
        aux_leader: aux,
        ..base(
            format!("{pmu}/mem-loads,ldlat={LDLAT_CYCLES}/"),
            configs,
            format!("loads slower than {LDLAT_CYCLES} cycles"),
            DEFAULT_LOAD_PERIOD,
        )
    });
    if dir.join("events/mem-stores").exists() {
        let configs = event_configs(dir, "mem-stores", &[])?;
        specs.push(base(
            format!("{pmu}/mem-stores/"),
            configs,
            "stores".to_string(),
            DEFAULT_STORE_PERIOD,
        ));
    }
    Ok(specs)
}

/// IBS op on AMD Zen: config 0 plus `cnt_ctl` (count ops, not cycles) and `swfilt`
/// (filter user/kernel in software, so user-only sampling is allowed) where the PMU's
/// format lists them.
fn amd_events(dir: &Path) -> Result<Vec<EventSpec>, String> {
    let ty = pmu_type(dir).ok_or_else(|| format!("{} has no type file", dir.display()))?;
    let mut configs = [0u64; 3];
    let ops = dir.join("format/cnt_ctl").exists();
    if ops {
        apply_format(dir, "cnt_ctl", 1, &mut configs)?;
    }
    let swfilt = dir.join("format/swfilt").exists();
    if swfilt {
        apply_format(dir, "swfilt", 1, &mut configs)?;
    }
    let mut name = "ibs_op/".to_string();
    let terms: Vec<&str> = [(ops, "cnt_ctl=1"), (swfilt, "swfilt=1")]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, t)| *t)
        .collect();
    name.push_str(&terms.join(","));
    name.push('/');
    Ok(vec![EventSpec {
        name,
        pmu: "ibs_op".to_string(),
        pmu_type: ty,
        config: configs[0],
        config1: configs[1],
        config2: configs[2],
        precise_ip: 0,
        aux_leader: None,
        encoding: Encoding::AmdIbs,
        keep: Keep::AddressAndTlb,
        cpus: None,
        default_period: DEFAULT_IBS_PERIOD,
        period_multiple: 16,
        unit: if ops { "ops" } else { "cycles" }.to_string(),
        needs_kernel: !swfilt,
        event_is_tlb_miss: false,
    }])
}

fn listed(sysfs: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(sysfs)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The events to sample on this machine, from the PMUs listed under `sysfs` (normally
/// /sys/bus/event_source/devices), or why there are none.
pub(crate) fn choose_events(sysfs: &Path, vendor: Vendor) -> Result<Vec<EventSpec>, String> {
    let names = listed(sysfs);
    if let Some(spe) = names.iter().find(|n| n.starts_with("arm_spe")) {
        return Err(format!(
            "Arm SPE sampling ({spe} PMU) is not handled by this module: SPE writes packets \
             to an AUX buffer that need their own decoder; a build with SPE support would \
             enable it"
        ));
    }
    let has_ibs = names.iter().any(|n| n == "ibs_op");
    let intel_pmus: Vec<&String> = if names.iter().any(|n| n == "cpu") {
        names.iter().filter(|n| *n == "cpu").collect()
    } else {
        names
            .iter()
            .filter(|n| *n == "cpu_core" || *n == "cpu_atom")
            .collect()
    };
    let use_ibs = match vendor {
        Vendor::Amd => true,
        Vendor::Intel => false,
        Vendor::Arm | Vendor::Other => has_ibs,
    };
    if use_ibs && has_ibs {
        return amd_events(&sysfs.join("ibs_op"));
    }
    let core_listed = !intel_pmus.is_empty() || names.iter().any(|n| n.starts_with("armv"));
    if !core_listed && !has_ibs {
        return Err(NO_PMU.to_string());
    }
    if vendor == Vendor::Amd {
        return Err(
            "no precise memory event on this CPU: the kernel lists no ibs_op PMU \
             (AMD Instruction-Based Sampling); an AMD CPU with IBS on bare metal (or a \
             hypervisor that passes IBS through) would enable it"
                .to_string(),
        );
    }
    let hybrid = intel_pmus.len() > 1 || intel_pmus.iter().any(|n| n.starts_with("cpu_"));
    let mut specs = Vec::new();
    for pmu in &intel_pmus {
        let dir = sysfs.join(pmu);
        if dir.join("events/mem-loads").exists() {
            specs.extend(intel_events(&dir, pmu, hybrid)?);
        }
    }
    if specs.is_empty() {
        let pmus: Vec<&str> = intel_pmus.iter().map(|s| s.as_str()).collect();
        let which = if pmus.is_empty() {
            "no core PMU".to_string()
        } else {
            format!("the {} PMU", pmus.join(" and "))
        };
        return Err(format!(
            "no precise memory event on this CPU: {which} lists no events/mem-loads (Intel \
             PEBS load latency) and there is no ibs_op PMU (AMD IBS); an Intel CPU with \
             PEBS or an AMD CPU with IBS, on bare metal, would enable it"
        ));
    }
    Ok(specs)
}
