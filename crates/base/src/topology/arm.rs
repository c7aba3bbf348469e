//! Arm CPU identity: who made the core and which one it is, from the Main ID Register
//! (MIDR_EL1) as Linux shows it — `/sys/devices/system/cpu/cpu0/regs/identification/
//! midr_el1` when present, else the "CPU implementer", "CPU variant", "CPU part" and "CPU
//! revision" lines of `/proc/cpuinfo` (arm64 kernels print no model name) — and the names
//! of the implementer and part codes memscope knows (Neoverse N1/V1/V2…, Ampere, A64FX…).
//!
//! Everything here is a pure function of text, so the parsing is tested on any machine with
//! fixtures of real servers (Graviton2/3, Grace, Ampere Altra, AmpereOne).

/// The fields of MIDR_EL1 that identify a core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Midr {
    /// Bits 31:24, a JEDEC-style code (0x41 Arm Ltd, 0xc0 Ampere …).
    pub implementer: u8,
    /// Bits 23:20, the major revision (the `r` of r3p1).
    pub variant: u8,
    /// Bits 19:16 (0xf: "defined by CPUID scheme", every Armv8 core).
    pub architecture: u8,
    /// Bits 15:4, the implementer's part number (0xd0c Neoverse N1 …).
    pub part: u16,
    /// Bits 3:0, the minor revision (the `p` of r3p1).
    pub revision: u8,
}

impl Midr {
    pub(crate) fn from_register(value: u64) -> Midr {
        Midr {
            implementer: ((value >> 24) & 0xff) as u8,
            variant: ((value >> 20) & 0xf) as u8,
            architecture: ((value >> 16) & 0xf) as u8,
            part: ((value >> 4) & 0xfff) as u16,
            revision: (value & 0xf) as u8,
        }
    }

    pub fn register(self) -> u64 {
        (u64::from(self.implementer) << 24)
            | (u64::from(self.variant) << 20)
            | (u64::from(self.architecture) << 16)
            | (u64::from(self.part) << 4)
            | u64::from(self.revision)
    }

    /// The implementer's name, or "implementer 0x…" for a code memscope does not know.
    pub fn vendor(self) -> String {
        implementer_name(self.implementer).map_or_else(
            || format!("implementer {:#x}", self.implementer),
            str::to_string,
        )
    }

    /// The core's name, e.g. "Arm Neoverse N1"; None for a part memscope does not know.
    pub(crate) fn part_name(self) -> Option<&'static str> {
        part_name(self.implementer, self.part)
    }

    /// The model line of `info`: "Arm Neoverse N1 r3p1 (MIDR_EL1 0x413fd0c1)", or for an
    /// unknown part "Arm Ltd part 0xd99 r0p0 (MIDR_EL1 …)", so a report still says which.
    pub fn model(self) -> String {
        let name = self.part_name().map_or_else(
            || {
                let vendor = match self.implementer {
                    0x41 => "Arm Ltd".to_string(),
                    _ => self.vendor(),
                };
                format!("{vendor} part {:#05x}", self.part)
            },
            str::to_string,
        );
        format!(
            "{name} r{}p{} (MIDR_EL1 {:#010x})",
            self.variant,
            self.revision,
            self.register()
        )
    }
}

/// Names of the implementer codes of MIDR_EL1 (as `/proc/cpuinfo` prints "CPU
/// implementer"). "ARM" is kept in capitals: reports and `pages` already use that name.
pub(crate) fn implementer_name(code: u8) -> Option<&'static str> {
    Some(match code {
        0x41 => "ARM",
        0x42 => "Broadcom",
        0x43 => "Cavium",
        0x46 => "Fujitsu",
        0x48 => "HiSilicon",
        0x4e => "NVIDIA",
        0x50 => "APM",
        0x51 => "Qualcomm",
        0x53 => "Samsung",
        0x61 => "Apple",
        0x6d => "Microsoft",
        0xc0 => "Ampere",
        _ => return None,
    })
}

/// Names of the parts memscope knows: the server cores and the common client cores (from
/// the kernel's arch/arm64/include/asm/cputype.h and the vendors' manuals).
pub(crate) fn part_name(implementer: u8, part: u16) -> Option<&'static str> {
    Some(match (implementer, part) {
        (0x41, 0xd03) => "Arm Cortex-A53",
        (0x41, 0xd04) => "Arm Cortex-A35",
        (0x41, 0xd05) => "Arm Cortex-A55",
        (0x41, 0xd07) => "Arm Cortex-A57",
        (0x41, 0xd08) => "Arm Cortex-A72",
        (0x41, 0xd09) => "Arm Cortex-A73",
        (0x41, 0xd0a) => "Arm Cortex-A75",
        (0x41, 0xd0b) => "Arm Cortex-A76",
        (0x41, 0xd0c) => "Arm Neoverse N1",
        (0x41, 0xd0d) => "Arm Cortex-A77",
        (0x41, 0xd40) => "Arm Neoverse V1",
        (0x41, 0xd41) => "Arm Cortex-A78",
        (0x41, 0xd44) => "Arm Cortex-X1",
        (0x41, 0xd46) => "Arm Cortex-A510",
        (0x41, 0xd47) => "Arm Cortex-A710",
        (0x41, 0xd48) => "Arm Cortex-X2",
        (0x41, 0xd49) => "Arm Neoverse N2",
        (0x41, 0xd4a) => "Arm Neoverse E1",
        (0x41, 0xd4d) => "Arm Cortex-A715",
        (0x41, 0xd4e) => "Arm Cortex-X3",
        (0x41, 0xd4f) => "Arm Neoverse V2",
        (0x41, 0xd80) => "Arm Cortex-A520",
        (0x41, 0xd81) => "Arm Cortex-A720",
        (0x41, 0xd82) => "Arm Cortex-X4",
        (0x41, 0xd84) => "Arm Neoverse V3",
        (0x41, 0xd85) => "Arm Cortex-X925",
        (0x41, 0xd87) => "Arm Cortex-A725",
        (0x41, 0xd8e) => "Arm Neoverse N3",
        (0x42, 0x516) => "Broadcom Vulcan",
        (0x43, 0x0af) => "Cavium ThunderX2",
        (0x46, 0x001) => "Fujitsu A64FX",
        (0x48, 0xd01) => "HiSilicon TSV110 (Kunpeng 920)",
        (0x4e, 0x003) => "NVIDIA Denver 2",
        (0x4e, 0x004) => "NVIDIA Carmel",
        (0x51, 0x001) => "Qualcomm Oryon",
        (0x51, 0xc00) => "Qualcomm Falkor",
        (0x61, 0x022) => "Apple M1 Icestorm",
        (0x61, 0x023) => "Apple M1 Firestorm",
        (0x61, 0x032) => "Apple M2 Blizzard",
        (0x61, 0x033) => "Apple M2 Avalanche",
        (0xc0, 0xac3) => "AmpereOne",
        (0xc0, 0xac4) => "AmpereOne-1A",
        _ => return None,
    })
}

/// A hexadecimal (`0x…`) or decimal number as the kernel prints it.
fn number(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// The contents of sysfs `regs/identification/midr_el1` ("0x00000000413fd0c1").
pub(crate) fn parse_midr_el1(text: &str) -> Option<Midr> {
    // The register is 64 bits wide; the identification fields are the low 32.
    let value = number(text)?;
    (value != 0).then(|| Midr::from_register(value))
}

/// MIDR_EL1 rebuilt from the first CPU's lines of an arm64 `/proc/cpuinfo`; None when the
/// text has no "CPU implementer" and "CPU part" (x86, or a kernel too old to print them).
/// A missing variant or revision reads as 0 and the architecture as 0xf (every Armv8 core).
pub(crate) fn parse_cpuinfo(cpuinfo: &str) -> Option<Midr> {
    let first = cpuinfo
        .split("\n\n")
        .find(|block| block.contains("CPU implementer"))?;
    let field = |key: &str| super::cpuinfo_field(first, key).and_then(|v| number(&v));
    let implementer = u8::try_from(field("CPU implementer")?).ok()?;
    let part = u16::try_from(field("CPU part")?)
        .ok()
        .filter(|&p| p <= 0xfff)?;
    let variant = field("CPU variant").and_then(|v| u8::try_from(v).ok());
    let revision = field("CPU revision").and_then(|v| u8::try_from(v).ok());
    Some(Midr {
        implementer,
        variant: variant.filter(|&v| v <= 0xf).unwrap_or(0),
        architecture: 0xf,
        part,
        revision: revision.filter(|&r| r <= 0xf).unwrap_or(0),
    })
}

/// The first CPU's identity: MIDR_EL1 from sysfs (`midr_el1`, the text of
/// `cpu0/regs/identification/midr_el1` when present) is the register itself and wins;
/// otherwise /proc/cpuinfo's fields.
pub(crate) fn identify(cpuinfo: &str, midr_el1: Option<&str>) -> Option<Midr> {
    midr_el1
        .and_then(parse_midr_el1)
        .or_else(|| parse_cpuinfo(cpuinfo))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first CPU of each server's /proc/cpuinfo (later CPUs repeat it), with its
    /// sysfs midr_el1, and what `info` should call it.
    const SERVERS: [(&str, &str, &str, &str); 5] = [
        (
            "AWS Graviton2 (m6g)",
            "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd evtstrm aes pmull \
             sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs\n\
             CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\n\
             CPU part\t: 0xd0c\nCPU revision\t: 1\n\nprocessor\t: 1\nBogoMIPS\t: 243.75\n\
             CPU implementer\t: 0x41\nCPU part\t: 0xd0c\n",
            "0x00000000413fd0c1\n",
            "Arm Neoverse N1 r3p1 (MIDR_EL1 0x413fd0c1)",
        ),
        (
            "AWS Graviton3 (c7g)",
            "processor\t: 0\nBogoMIPS\t: 2100.00\nFeatures\t: fp asimd evtstrm aes pmull \
             sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop \
             sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs paca \
             pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng\nCPU implementer\t: 0x41\n\
             CPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd40\nCPU revision\t: 1\n",
            "0x00000000411fd401\n",
            "Arm Neoverse V1 r1p1 (MIDR_EL1 0x411fd401)",
        ),
        (
            "NVIDIA Grace",
            "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull \
             sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop \
             sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb \
             paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint \
             svei8mm svebf16 i8mm bf16 dgh bti\nCPU implementer\t: 0x41\n\
             CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\nCPU revision\t: 0\n",
            "0x00000000410fd4f0\n",
            "Arm Neoverse V2 r0p0 (MIDR_EL1 0x410fd4f0)",
        ),
        (
            "Ampere Altra Q80-30",
            "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull \
             sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs\n\
             CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\n\
             CPU part\t: 0xd0c\nCPU revision\t: 1\n",
            "0x00000000413fd0c1\n",
            "Arm Neoverse N1 r3p1 (MIDR_EL1 0x413fd0c1)",
        ),
        (
            "AmpereOne A192-32X",
            "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull \
             sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop \
             sha3 sm3 sm4 asimddp sha512 asimdfhm dit uscat ilrcpc flagm ssbs sb paca \
             pacg dcpodp flagm2 frint i8mm bf16 rng bti ecv\nCPU implementer\t: 0xc0\n\
             CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xac3\nCPU revision\t: 0\n",
            "0x00000000c00fac30\n",
            "AmpereOne r0p0 (MIDR_EL1 0xc00fac30)",
        ),
    ];

    #[test]
    fn servers_are_named_from_cpuinfo_and_from_midr_el1_alike() {
        for (server, cpuinfo, midr_el1, model) in SERVERS {
            let from_cpuinfo = parse_cpuinfo(cpuinfo).unwrap_or_else(|| panic!("{server}"));
            let from_sysfs = parse_midr_el1(midr_el1).unwrap_or_else(|| panic!("{server}"));
            assert_eq!(from_cpuinfo, from_sysfs, "{server}");
            assert_eq!(from_sysfs.model(), model, "{server}");
            assert_eq!(
                identify(cpuinfo, Some(midr_el1)),
                Some(from_sysfs),
                "{server}"
            );
            assert_eq!(identify(cpuinfo, None), Some(from_sysfs), "{server}");
        }
        let ampere = parse_cpuinfo(SERVERS[4].1).unwrap();
        assert_eq!(ampere.vendor(), "Ampere");
        assert_eq!(parse_cpuinfo(SERVERS[1].1).unwrap().vendor(), "ARM");
    }

    #[test]
    fn the_register_round_trips_and_sysfs_wins_over_cpuinfo() {
        let midr = Midr::from_register(0x413f_d0c1);
        assert_eq!(
            midr,
            Midr {
                implementer: 0x41,
                variant: 3,
                architecture: 0xf,
                part: 0xd0c,
                revision: 1
            }
        );
        assert_eq!(midr.register(), 0x413f_d0c1);
        // A kernel that shows both: the register is read as it is.
        let v1 = identify(SERVERS[0].1, Some("0x00000000411fd401")).unwrap();
        assert_eq!(v1.part_name(), Some("Arm Neoverse V1"));
        // An unreadable or zero register falls back to cpuinfo.
        for bad in ["", "garbage", "0x0"] {
            assert_eq!(
                identify(SERVERS[0].1, Some(bad)),
                parse_cpuinfo(SERVERS[0].1)
            );
        }
    }

    #[test]
    fn the_named_parts_of_the_brief_have_their_names() {
        for (implementer, part, name) in [
            (0x41, 0xd0c, "Arm Neoverse N1"),
            (0x41, 0xd40, "Arm Neoverse V1"),
            (0x41, 0xd49, "Arm Neoverse N2"),
            (0x41, 0xd4f, "Arm Neoverse V2"),
            (0x41, 0xd84, "Arm Neoverse V3"),
            (0x41, 0xd8e, "Arm Neoverse N3"),
            (0x41, 0xd08, "Arm Cortex-A72"),
            (0x41, 0xd0b, "Arm Cortex-A76"),
            (0xc0, 0xac3, "AmpereOne"),
            (0xc0, 0xac4, "AmpereOne-1A"),
            (0x46, 0x001, "Fujitsu A64FX"),
            (0x48, 0xd01, "HiSilicon TSV110 (Kunpeng 920)"),
        ] {
            assert_eq!(part_name(implementer, part), Some(name));
        }
        for (code, name) in [(0x4e, "NVIDIA"), (0x61, "Apple"), (0x51, "Qualcomm")] {
            assert_eq!(implementer_name(code), Some(name));
        }
    }

    #[test]
    fn unknown_codes_are_shown_as_numbers_and_x86_text_is_not_arm() {
        let unknown_part = Midr::from_register(0x410f_d990);
        assert_eq!(
            unknown_part.model(),
            "Arm Ltd part 0xd99 r0p0 (MIDR_EL1 0x410fd990)"
        );
        let unknown_vendor = Midr::from_register(0x991f_0121);
        assert_eq!(unknown_vendor.vendor(), "implementer 0x99");
        assert_eq!(
            unknown_vendor.model(),
            "implementer 0x99 part 0x012 r1p1 (MIDR_EL1 0x991f0121)"
        );
        let x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n";
        assert_eq!(parse_cpuinfo(x86), None);
        assert_eq!(identify(x86, None), None);
        // Out-of-range fields are refused, not truncated into another part.
        let bad = "CPU implementer\t: 0x141\nCPU part\t: 0xd0c\n";
        assert_eq!(parse_cpuinfo(bad), None);
        let bad = "CPU implementer\t: 0x41\nCPU part\t: 0x1d0c\n";
        assert_eq!(parse_cpuinfo(bad), None);
    }
}
