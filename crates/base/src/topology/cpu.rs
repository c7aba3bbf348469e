//! CPU identity and logical layout: vendor, brand, display family/model/stepping,
//! hypervisor, vector ISA extensions, kernel release, clock source, cpufreq, the online and
//! allowed CPUs and their SMT siblings. It also owns the single CPUID entry point the other
//! topology files share (x86_64 only; elsewhere it answers None) and the parser for Linux
//! cpu-list syntax, which `--cpu` validation reuses.

use std::collections::BTreeSet;
use std::path::Path;

use super::{arm, cpuinfo_field, read_trimmed, CpuFreq};

/// Root of the per-CPU sysfs tree.
pub(crate) const CPU_SYSFS: &str = "/sys/devices/system/cpu";

/// Largest CPU number a cpu list may name. Real machines stay far below it; the limit keeps a
/// typo such as `0-4000000000` from allocating gigabytes.
const MAX_CPU_INDEX: usize = 1 << 20;

/// The four output registers of one CPUID query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuidRegs {
    pub eax: u32,
    pub ebx: u32,
    pub ecx: u32,
    pub edx: u32,
}

#[cfg(target_arch = "x86_64")]
fn cpuid_raw(leaf: u32, subleaf: u32) -> CpuidRegs {
    // SAFETY: every x86_64 CPU implements CPUID, and it only reads identification registers.
    // `unused_unsafe` because newer toolchains declare the intrinsic safe.
    #[allow(unused_unsafe)]
    let r = unsafe { core::arch::x86_64::__cpuid_count(leaf, subleaf) };
    CpuidRegs {
        eax: r.eax,
        ebx: r.ebx,
        ecx: r.ecx,
        edx: r.edx,
    }
}

/// CPUID `leaf`/`subleaf`, or None when the leaf is beyond the maximum of its range (or this
/// is not x86_64). The range check matters: Intel answers an unimplemented leaf with the
/// data of the highest basic leaf, which would otherwise be decoded as garbage.
#[cfg(target_arch = "x86_64")]
pub fn cpuid(leaf: u32, subleaf: u32) -> Option<CpuidRegs> {
    let max = if leaf >= 0x8000_0000 {
        let max = cpuid_raw(0x8000_0000, 0).eax;
        if max < 0x8000_0000 {
            return None;
        }
        max
    } else if leaf >= 0x4000_0000 {
        // The hypervisor range is only defined when leaf 1 says a hypervisor is present.
        if cpuid_raw(1, 0).ecx & (1 << 31) == 0 {
            return None;
        }
        if leaf == 0x4000_0000 {
            leaf
        } else {
            cpuid_raw(0x4000_0000, 0).eax
        }
    } else {
        cpuid_raw(0, 0).eax
    };
    (leaf <= max).then(|| cpuid_raw(leaf, subleaf))
}

/// CPUID does not exist off x86_64; callers fall back to procfs and sysfs.
#[cfg(not(target_arch = "x86_64"))]
pub fn cpuid(_leaf: u32, _subleaf: u32) -> Option<CpuidRegs> {
    None
}

/// Vendors whose CPUID follows AMD's conventions (extended leaves for caches and TLBs).
pub(crate) fn is_amd_like(vendor: &str) -> bool {
    matches!(vendor, "AuthenticAMD" | "HygonGenuine")
}

/// Who made the CPU and which one it is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuIdentity {
    pub vendor: String,
    pub model: String,
    pub family: Option<u32>,
    pub model_number: Option<u32>,
    pub stepping: Option<u32>,
}

/// Identity from CPUID where available, otherwise from `/proc/cpuinfo` (its text is passed in
/// so one read serves every caller) and, on Arm, MIDR_EL1 (`arm`).
pub fn identity(cpuinfo: &str) -> CpuIdentity {
    identity_from(cpuinfo, Path::new(CPU_SYSFS), cpuid)
}

/// `identity` with the per-CPU sysfs root and the CPUID query given, so that tests can
/// describe an Arm server on any machine.
fn identity_from(
    cpuinfo: &str,
    sys_cpu: &Path,
    cpuid: impl Fn(u32, u32) -> Option<CpuidRegs>,
) -> CpuIdentity {
    let mut id = CpuIdentity::default();
    if let Some(leaf0) = cpuid(0, 0) {
        id.vendor = regs_to_string(&[leaf0.ebx, leaf0.edx, leaf0.ecx]);
        if let Some(leaf1) = cpuid(1, 0) {
            let (family, model, stepping) = display_family_model_stepping(leaf1.eax, &id.vendor);
            id.family = Some(family);
            id.model_number = Some(model);
            id.stepping = Some(stepping);
        }
        let brand: Vec<u32> = (0x8000_0002..=0x8000_0004)
            .filter_map(|leaf| cpuid(leaf, 0))
            .flat_map(|r| [r.eax, r.ebx, r.ecx, r.edx])
            .collect();
        if brand.len() == 12 {
            id.model = regs_to_string(&brand);
        }
    }
    if id.vendor.is_empty() || id.model.is_empty() {
        // arm64 kernels print no model name: the core is named from its MIDR_EL1.
        let midr_el1 = read_trimmed(sys_cpu.join("cpu0/regs/identification/midr_el1"));
        if let Some(midr) = arm::identify(cpuinfo, midr_el1.as_deref()) {
            if id.vendor.is_empty() {
                id.vendor = midr.vendor();
            }
            if id.model.is_empty() {
                id.model = midr.model();
            }
        }
    }
    if id.vendor.is_empty() {
        id.vendor = cpuinfo_field(cpuinfo, "vendor_id").unwrap_or_else(|| "unknown".to_string());
    }
    if id.model.is_empty() {
        id.model = ["model name", "Processor", "cpu model", "cpu", "uarch"]
            .iter()
            .find_map(|key| cpuinfo_field(cpuinfo, key))
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| format!("unknown {} CPU", std::env::consts::ARCH));
    }
    // Only x86 kernels print "cpu family"; elsewhere "model" is a name, not a number.
    if id.family.is_none() {
        if let Some(family) = cpuinfo_field(cpuinfo, "cpu family").and_then(|f| f.parse().ok()) {
            id.family = Some(family);
            id.model_number = cpuinfo_field(cpuinfo, "model").and_then(|m| m.parse().ok());
            id.stepping = cpuinfo_field(cpuinfo, "stepping").and_then(|s| s.parse().ok());
        }
    }
    id
}

/// Registers read as little-endian ASCII, with the NUL padding and spaces trimmed.
fn regs_to_string(regs: &[u32]) -> String {
    let bytes: Vec<u8> = regs.iter().flat_map(|r| r.to_le_bytes()).collect();
    String::from_utf8_lossy(&bytes)
        .trim_matches(|c: char| c == '\0' || c.is_whitespace())
        .to_string()
}

/// x86 display family, model and stepping from CPUID leaf 1 EAX. The extended fields only
/// count where the vendor says so: AMD adds the extended model only for base family 0xF,
/// Intel also for family 6 (every Core-era part).
pub(crate) fn display_family_model_stepping(eax: u32, vendor: &str) -> (u32, u32, u32) {
    let stepping = eax & 0xF;
    let base_model = (eax >> 4) & 0xF;
    let base_family = (eax >> 8) & 0xF;
    let ext_model = (eax >> 16) & 0xF;
    let ext_family = (eax >> 20) & 0xFF;
    let family = if base_family == 0xF {
        base_family + ext_family
    } else {
        base_family
    };
    let uses_ext_model = if is_amd_like(vendor) {
        base_family == 0xF
    } else {
        base_family == 0x6 || base_family == 0xF
    };
    let model = if uses_ext_model {
        (ext_model << 4) + base_model
    } else {
        base_model
    };
    (family, model, stepping)
}

/// Friendly name for the 12-byte vendor signature of CPUID leaf 0x40000000. Unknown
/// signatures are returned as read, so a report still says which hypervisor it was.
pub(crate) fn hypervisor_name(signature: &[u8]) -> String {
    let text = String::from_utf8_lossy(signature);
    // Signatures pad with NULs or spaces, and Parallels' has a double space inside.
    let normalised = text
        .split(|c: char| c == '\0' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let name = match normalised.as_str() {
        "KVMKVMKVM" | "Linux KVM Hv" => "KVM",
        "Microsoft Hv" => "Hyper-V",
        "VMwareVMware" => "VMware",
        "XenVMMXenVMM" => "Xen",
        "TCGTCGTCGTCG" => "QEMU TCG",
        "lrpepyh vr" => "Parallels",
        "ACRNACRNACRN" => "ACRN",
        "bhyve bhyve" => "bhyve",
        "VBoxVBoxVBox" => "VirtualBox",
        "QNXQVMBSQG" => "QNX",
        "" => "unknown",
        other => other,
    };
    name.to_string()
}

/// The hypervisor this runs under, if any: CPUID on x86_64, otherwise what the kernel says.
pub(crate) fn detect_hypervisor(cpuinfo: &str) -> Option<String> {
    if let Some(leaf1) = cpuid(1, 0) {
        if leaf1.ecx & (1 << 31) == 0 {
            return None;
        }
        return Some(match cpuid(0x4000_0000, 0) {
            Some(r) => {
                let sig: Vec<u8> = [r.ebx, r.ecx, r.edx]
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect();
                hypervisor_name(&sig)
            }
            None => "unknown".to_string(),
        });
    }
    if let Some(kind) = read_trimmed("/sys/hypervisor/type").filter(|s| !s.is_empty()) {
        return Some(kind);
    }
    let flags = cpuinfo_field(cpuinfo, "flags").unwrap_or_default();
    flags
        .split_whitespace()
        .any(|f| f == "hypervisor")
        .then(|| "unknown".to_string())
}

/// Vector and memory-movement extensions the kernels can use, in a fixed order. On x86_64 a
/// feature is listed only when CPUID has it *and* the OS enabled its register state, which
/// `is_x86_feature_detected!` checks through XGETBV.
#[cfg(target_arch = "x86_64")]
pub fn isa_extensions(_cpuinfo: &str) -> Vec<String> {
    let (l1_ecx, l1_edx) = cpuid(1, 0).map_or((0, 0), |r| (r.ecx, r.edx));
    let (l7_ebx, l7_ecx, l7_edx) = cpuid(7, 0).map_or((0, 0, 0), |r| (r.ebx, r.ecx, r.edx));
    let has = |reg: u32, bit: u32| reg & (1 << bit) != 0;
    let features = [
        ("sse2", has(l1_edx, 26) && is_x86_feature_detected!("sse2")),
        ("avx", has(l1_ecx, 28) && is_x86_feature_detected!("avx")),
        ("avx2", has(l7_ebx, 5) && is_x86_feature_detected!("avx2")),
        (
            "avx512f",
            has(l7_ebx, 16) && is_x86_feature_detected!("avx512f"),
        ),
        (
            "avx512bw",
            has(l7_ebx, 30) && is_x86_feature_detected!("avx512bw"),
        ),
        (
            "avx512vl",
            has(l7_ebx, 31) && is_x86_feature_detected!("avx512vl"),
        ),
        ("fma", has(l1_ecx, 12) && is_x86_feature_detected!("fma")),
        // The rest add no register state, so the CPUID bit is the whole answer.
        ("erms", has(l7_ebx, 9)),
        ("fsrm", has(l7_edx, 4)),
        ("clflushopt", has(l7_ebx, 23)),
        ("clwb", has(l7_ebx, 24)),
        ("movdiri", has(l7_ecx, 27)),
    ];
    features
        .iter()
        .filter(|(_, present)| *present)
        .map(|(name, _)| name.to_string())
        .collect()
}

/// Off x86_64 the kernel's feature list in /proc/cpuinfo is the only source.
#[cfg(not(target_arch = "x86_64"))]
pub fn isa_extensions(cpuinfo: &str) -> Vec<String> {
    const INTERESTING: [&str; 7] = ["neon", "asimd", "sve", "sve2", "sme", "altivec", "vsx"];
    let flags = cpuinfo_field(cpuinfo, "Features")
        .or_else(|| cpuinfo_field(cpuinfo, "flags"))
        .unwrap_or_default();
    let present: BTreeSet<&str> = flags.split_whitespace().collect();
    INTERESTING
        .iter()
        .filter(|f| present.contains(*f))
        .map(|f| f.to_string())
        .collect()
}

/// Kernel release, e.g. "6.8.0-1012-aws".
pub fn kernel_release() -> String {
    read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".to_string())
}

/// Current clock source ("tsc", "kvm-clock", "arch_sys_counter" …).
pub fn clocksource() -> Option<String> {
    read_trimmed("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .filter(|s| !s.is_empty())
}

/// cpufreq settings of CPU 0; None when the kernel exposes no cpufreq at all (typical in VMs).
pub fn cpufreq() -> Option<CpuFreq> {
    let dir = format!("{CPU_SYSFS}/cpu0/cpufreq");
    let khz = |name: &str| {
        read_trimmed(format!("{dir}/{name}"))
            .and_then(|s| s.parse::<f64>().ok())
            .map(|k| k * 1e3)
    };
    let freq = CpuFreq {
        governor: read_trimmed(format!("{dir}/scaling_governor")),
        min_hz: khz("cpuinfo_min_freq"),
        max_hz: khz("cpuinfo_max_freq"),
        boost: read_trimmed(format!("{CPU_SYSFS}/cpufreq/boost")).map(|s| s == "1"),
    };
    let any = freq.governor.is_some()
        || freq.min_hz.is_some()
        || freq.max_hz.is_some()
        || freq.boost.is_some();
    any.then_some(freq)
}

/// Parses Linux cpu-list syntax ("0-3,8,10-11") into sorted, distinct CPU numbers.
/// Surrounding whitespace is ignored and an empty list is valid (a memory-only NUMA node
/// has one); callers that need at least one CPU check for that themselves.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let s = s.trim();
    let mut cpus = BTreeSet::new();
    if s.is_empty() {
        return Ok(Vec::new());
    }
    for part in s.split(',') {
        let part = part.trim();
        let bad = |why: &str| format!("invalid CPU list '{s}': '{part}' {why}");
        let number = |text: &str| -> Result<usize, String> {
            let n: usize = text
                .trim()
                .parse()
                .map_err(|_| bad("is not a CPU number or range such as 0-3"))?;
            if n > MAX_CPU_INDEX {
                return Err(bad(&format!(
                    "exceeds the largest CPU number {MAX_CPU_INDEX}"
                )));
            }
            Ok(n)
        };
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (number(lo)?, number(hi)?);
                if lo > hi {
                    return Err(bad("is a range whose start exceeds its end"));
                }
                cpus.extend(lo..=hi);
            }
            None => {
                cpus.insert(number(part)?);
            }
        }
    }
    Ok(cpus.into_iter().collect())
}

/// The inverse of [`parse_cpu_list`]: compact ranges, e.g. [0,1,2,3,8] → "0-3,8".
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// Online logical CPUs. Without sysfs, assume CPUs 0..n where n is what std can see.
pub fn online_cpus() -> Vec<usize> {
    read_trimmed(format!("{CPU_SYSFS}/online"))
        .and_then(|s| parse_cpu_list(&s).ok())
        .filter(|cpus| !cpus.is_empty())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n).collect()
        })
}

/// CPUs this process may run on (its affinity mask, sched_getaffinity), ascending.
pub fn affinity_mask() -> std::io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect())
    }
}

/// CPUs this process may run on (its affinity mask); the online CPUs if it cannot be read
/// (e.g. more CPUs than a `cpu_set_t` holds).
pub fn allowed_cpus() -> Vec<usize> {
    affinity_mask()
        .ok()
        .filter(|cpus| !cpus.is_empty())
        .unwrap_or_else(online_cpus)
}

/// How the online CPUs group into physical cores.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct CoreLayout {
    pub physical_cores: usize,
    pub threads_per_core: usize,
    /// Only groups of two or more siblings.
    pub smt_sibling_groups: Vec<Vec<usize>>,
}

/// Core layout from each online CPU's sibling list. A CPU whose list is missing counts as a
/// core of its own, so a container with a partial /sys never reports fewer cores than CPUs
/// it cannot see siblings for.
pub(crate) fn core_layout(online: &[usize]) -> CoreLayout {
    let groups: BTreeSet<Vec<usize>> = online
        .iter()
        .map(|&cpu| {
            let dir = format!("{CPU_SYSFS}/cpu{cpu}/topology");
            read_trimmed(format!("{dir}/core_cpus_list"))
                .or_else(|| read_trimmed(format!("{dir}/thread_siblings_list")))
                .and_then(|s| parse_cpu_list(&s).ok())
                .map(|siblings| {
                    // Offline siblings cannot be used, so they do not make a core SMT.
                    let online_siblings: Vec<usize> = siblings
                        .into_iter()
                        .filter(|c| online.contains(c))
                        .collect();
                    if online_siblings.is_empty() {
                        vec![cpu]
                    } else {
                        online_siblings
                    }
                })
                .unwrap_or_else(|| vec![cpu])
        })
        .collect();
    CoreLayout {
        physical_cores: groups.len().max(1),
        threads_per_core: groups.iter().map(Vec::len).max().unwrap_or(1),
        smt_sibling_groups: groups.into_iter().filter(|g| g.len() >= 2).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_list_parses_ranges_and_singles() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list("5\n").unwrap(), vec![5]);
        assert_eq!(parse_cpu_list(" 3 , 1-2 ,1").unwrap(), vec![1, 2, 3]);
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<usize>::new());
        assert_eq!(parse_cpu_list("7-7").unwrap(), vec![7]);
    }

    #[test]
    fn cpu_list_errors_name_the_bad_part() {
        let err = parse_cpu_list("0-3,x,5").unwrap_err();
        assert!(err.contains("'x'"), "{err}");
        let err = parse_cpu_list("4-2").unwrap_err();
        assert!(err.contains("'4-2'"), "{err}");
        let err = parse_cpu_list("1,,2").unwrap_err();
        assert!(err.contains("''"), "{err}");
        let err = parse_cpu_list("0-").unwrap_err();
        assert!(err.contains("'0-'"), "{err}");
        let err = parse_cpu_list("-1").unwrap_err();
        assert!(err.contains("'-1'"), "{err}");
        let err = parse_cpu_list("0-99999999999").unwrap_err();
        assert!(err.contains("largest"), "{err}");
    }

    #[test]
    fn cpu_list_round_trips_through_format() {
        assert_eq!(format_cpu_list(&[8, 0, 1, 2, 3, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[]), "");
        let cpus = parse_cpu_list("0-2,4,6-9").unwrap();
        assert_eq!(format_cpu_list(&cpus), "0-2,4,6-9");
    }

    #[test]
    fn family_model_decoding_follows_vendor_rules() {
        // Zen 4 (EPYC 9004): family 0xF + 0xA = 25, model 0x11.
        assert_eq!(
            display_family_model_stepping(0x00A1_0F11, "AuthenticAMD"),
            (25, 17, 1)
        );
        // Skylake-SP: family 6 takes the extended model on Intel.
        assert_eq!(
            display_family_model_stepping(0x0005_0654, "GenuineIntel"),
            (6, 0x55, 4)
        );
        // Family 6 on AMD (K7) ignores the extended model field.
        assert_eq!(
            display_family_model_stepping(0x0001_0662, "AuthenticAMD"),
            (6, 6, 2)
        );
        // Pentium 4: family 0xF with extended family 0.
        assert_eq!(
            display_family_model_stepping(0x0000_0F29, "GenuineIntel"),
            (15, 2, 9)
        );
    }

    #[test]
    fn hypervisor_signatures_map_to_names() {
        assert_eq!(hypervisor_name(b"KVMKVMKVM\0\0\0"), "KVM");
        assert_eq!(hypervisor_name(b"Microsoft Hv"), "Hyper-V");
        assert_eq!(hypervisor_name(b"VMwareVMware"), "VMware");
        assert_eq!(hypervisor_name(b"XenVMMXenVMM"), "Xen");
        assert_eq!(hypervisor_name(b"TCGTCGTCGTCG"), "QEMU TCG");
        assert_eq!(hypervisor_name(b" lrpepyh  vr"), "Parallels");
        assert_eq!(hypervisor_name(b"ACRNACRNACRN"), "ACRN");
        assert_eq!(hypervisor_name(b"bhyve bhyve "), "bhyve");
        assert_eq!(hypervisor_name(b"NewVisor\0\0\0\0"), "NewVisor");
        assert_eq!(hypervisor_name(b"\0\0\0\0\0\0\0\0\0\0\0\0"), "unknown");
    }

    #[test]
    fn cpuinfo_fields_come_from_the_first_cpu() {
        let text = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n\n\
                    processor\t: 1\nmodel name\t: other\n";
        assert_eq!(
            cpuinfo_field(text, "model name").as_deref(),
            Some("AMD EPYC")
        );
        let no_cpuid = |_: u32, _: u32| None;
        let nowhere = Path::new("/nonexistent");
        let id = identity_from(text, nowhere, no_cpuid);
        assert_eq!(
            (id.vendor.as_str(), id.model.as_str()),
            ("AuthenticAMD", "AMD EPYC")
        );
    }

    #[test]
    fn an_arm_server_is_named_from_midr_el1_or_cpuinfo() {
        use crate::platform::fake_files::put;
        let graviton2 = "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd\n\
                         CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\n\
                         CPU part\t: 0xd0c\nCPU revision\t: 1\n";
        let no_cpuid = |_: u32, _: u32| None;
        let sys = tempfile::tempdir().unwrap();
        let id = identity_from(graviton2, sys.path(), no_cpuid);
        assert_eq!(id.vendor, "ARM");
        assert_eq!(id.model, "Arm Neoverse N1 r3p1 (MIDR_EL1 0x413fd0c1)");
        assert_eq!(
            (id.family, id.model_number, id.stepping),
            (None, None, None)
        );
        // Where the kernel shows the register itself, it is what names the core.
        put(
            sys.path(),
            "cpu0/regs/identification/midr_el1",
            "0x00000000c00fac30",
        );
        let id = identity_from(graviton2, sys.path(), no_cpuid);
        assert_eq!(id.vendor, "Ampere");
        assert_eq!(id.model, "AmpereOne r0p0 (MIDR_EL1 0xc00fac30)");
        // Nothing to go by: said so, not guessed.
        let id = identity_from("processor\t: 0\n", Path::new("/nonexistent"), no_cpuid);
        assert_eq!(id.vendor, "unknown");
        assert!(id.model.starts_with("unknown "), "{}", id.model);
    }
}
