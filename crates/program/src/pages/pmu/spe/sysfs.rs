//! What the kernel says about its SPE PMUs under /sys/bus/event_source/devices: each
//! `arm_spe*` device's perf type, the CPUs it serves, its minimum sampling interval, and
//! where its config fields sit (the `format/*` files, e.g. `config:33` or
//! `config2:0-11`), and the `perf_event_attr` memscope opens with them.

use std::fs;
use std::path::{Path, PathBuf};

use crate::counters::sys::{
    PerfEventAttr, FLAG_DISABLED, FLAG_ENABLE_ON_EXEC, FLAG_EXCLUDE_HV, FLAG_EXCLUDE_KERNEL,
    FLAG_INHERIT,
};
use crate::topology::cpu::parse_cpu_list;

/// The sampling interval used when neither the caller nor the PMU gives one.
const FALLBACK_INTERVAL: u64 = 4096;

/// One SPE PMU as sysfs lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpePmu {
    pub name: String,
    pub dir: PathBuf,
    /// The perf `type` to open it with.
    pub pmu_type: u32,
    /// The CPUs it serves (its `cpumask`); `None` when the file is absent: all of them.
    pub cpus: Option<Vec<usize>>,
    /// `caps/min_interval`: the smallest sampling interval, in operations.
    pub min_interval: Option<u64>,
}

impl SpePmu {
    /// Whether this PMU samples on `cpu`.
    pub(crate) fn serves(&self, cpu: usize) -> bool {
        self.cpus.as_ref().is_none_or(|cpus| cpus.contains(&cpu))
    }
}

fn read_trimmed(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// The `arm_spe*` devices under `root` (normally /sys/bus/event_source/devices) whose
/// `type` file reads, sorted by name.
pub(crate) fn find_pmus(root: &Path) -> Vec<SpePmu> {
    let Ok(entries) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut pmus: Vec<SpePmu> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with("arm_spe") {
                return None;
            }
            let dir = entry.path();
            let pmu_type = read_trimmed(&dir.join("type"))?.parse().ok()?;
            let cpus = read_trimmed(&dir.join("cpumask")).and_then(|s| parse_cpu_list(&s).ok());
            let min_interval =
                read_trimmed(&dir.join("caps/min_interval")).and_then(|s| s.parse().ok());
            Some(SpePmu {
                name,
                dir,
                pmu_type,
                cpus,
                min_interval,
            })
        })
        .collect();
    pmus.sort_by(|a, b| a.name.cmp(&b.name));
    pmus
}

/// Where a config field sits: which `config*` word and which bit ranges of it, low bits
/// of the value first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatField {
    /// 0 for `config`, 1 for `config1`, 2 for `config2`, 3 for `config3`.
    pub word: u8,
    /// Inclusive `(low, high)` bit ranges.
    pub ranges: Vec<(u32, u32)>,
}

impl FormatField {
    fn width(&self) -> u32 {
        self.ranges.iter().map(|(lo, hi)| hi - lo + 1).sum()
    }

    /// Places `value` into the field's bits of `word`.
    fn place(&self, word: u64, value: u64) -> u64 {
        let mut word = word;
        let mut value = value;
        for &(lo, hi) in &self.ranges {
            let width = hi - lo + 1;
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            word = (word & !(mask << lo)) | ((value & mask) << lo);
            value = value.checked_shr(width).unwrap_or(0);
        }
        word
    }
}

/// Parses a sysfs format file's text: `config:N`, `config1:N-M`, `config:0-7,32-35`.
pub fn parse_format(text: &str) -> Result<FormatField, String> {
    let text = text.trim();
    let bad = |why: &str| format!("unreadable PMU format '{text}': {why}");
    let (word, bits) = text
        .split_once(':')
        .ok_or_else(|| bad("no ':' between the config word and the bits"))?;
    let word = match word {
        "config" => 0,
        "config1" => 1,
        "config2" => 2,
        "config3" => 3,
        _ => return Err(bad("the word is not config, config1, config2 or config3")),
    };
    let bit = |s: &str| -> Result<u32, String> {
        s.trim()
            .parse::<u32>()
            .ok()
            .filter(|&b| b < 64)
            .ok_or_else(|| bad("a bit is not a number from 0 to 63"))
    };
    let ranges = bits
        .split(',')
        .map(|part| match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (bit(lo)?, bit(hi)?);
                if lo > hi {
                    return Err(bad("a bit range starts after its end"));
                }
                Ok((lo, hi))
            }
            None => bit(part).map(|b| (b, b)),
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(FormatField { word, ranges })
}

/// Sets the PMU's field `name` to `value` in `attr`. A field the PMU does not describe is
/// an error when `required`, else left alone.
pub(crate) fn set_field(
    attr: &mut PerfEventAttr,
    pmu: &SpePmu,
    name: &str,
    value: u64,
    required: bool,
) -> Result<(), String> {
    let path = pmu.dir.join("format").join(name);
    let Some(text) = read_trimmed(&path) else {
        if !required {
            return Ok(());
        }
        return Err(format!(
            "The SPE PMU {} does not describe its {name} field (no {}); this kernel's SPE \
             driver is too old or not the upstream one, and memscope needs that field to \
             sample loads and stores.",
            pmu.name,
            path.display()
        ));
    };
    let field = parse_format(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if field.width() < 64 && value >> field.width() != 0 {
        return Err(format!(
            "The value {value} does not fit the {}-bit {name} field of {}.",
            field.width(),
            pmu.name
        ));
    }
    let word = match field.word {
        0 => &mut attr.config,
        1 => &mut attr.config1,
        2 => &mut attr.config2,
        // config3 lies beyond the attr size memscope passes: the kernel reads it as 0.
        _ if value == 0 => return Ok(()),
        _ => {
            return Err(format!(
                "The {name} field of {} is in config3, which memscope's perf_event_attr \
                 (PERF_ATTR_SIZE_VER5) does not carry.",
                pmu.name
            ))
        }
    };
    *word = field.place(*word, value);
    Ok(())
}

/// The sampling interval: `period`, raised to the PMU's minimum; that minimum when
/// `period` is 0.
pub fn interval(pmu: &SpePmu, period: u64) -> u64 {
    let min = pmu.min_interval.unwrap_or(0);
    match period {
        0 if min > 0 => min,
        0 => FALLBACK_INTERVAL,
        p => p.max(min),
    }
}

/// The attribute to sample `pid`'s user-space loads and stores with: load_filter and
/// store_filter set (only loads and stores are sampled: other operations carry no data
/// address), ts_enable set (timestamps end records and place samples in time), jitter
/// set when the PMU has it (randomises the interval so loops do not alias with it),
/// pa_enable 0 (physical addresses need CAP_PERFMON and are not used), min_latency 0 (no
/// latency filter: TLB hits are needed too). Disabled until the child's exec
/// (`enable_on_exec`), inherited by its threads and children.
pub(crate) fn spe_attr(pmu: &SpePmu, period: u64) -> Result<PerfEventAttr, String> {
    let mut attr = PerfEventAttr::new(pmu.pmu_type, 0);
    set_field(&mut attr, pmu, "ts_enable", 1, true)?;
    set_field(&mut attr, pmu, "pa_enable", 0, false)?;
    set_field(&mut attr, pmu, "load_filter", 1, true)?;
    set_field(&mut attr, pmu, "store_filter", 1, true)?;
    set_field(&mut attr, pmu, "jitter", 1, false)?;
    set_field(&mut attr, pmu, "min_latency", 0, false)?;
    attr.sample_period = interval(pmu, period);
    attr.flags =
        FLAG_DISABLED | FLAG_INHERIT | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV | FLAG_ENABLE_ON_EXEC;
    Ok(attr)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake sysfs device with the format files of Linux 6.x's arm_spe_pmu driver.
    fn fake_pmu(root: &Path, name: &str, cpumask: Option<&str>) -> PathBuf {
        let dir = root.join(name);
        fs::create_dir_all(dir.join("format")).unwrap();
        fs::create_dir_all(dir.join("caps")).unwrap();
        fs::write(dir.join("type"), "9\n").unwrap();
        fs::write(dir.join("caps/min_interval"), "1024\n").unwrap();
        if let Some(mask) = cpumask {
            fs::write(dir.join("cpumask"), format!("{mask}\n")).unwrap();
        }
        for (field, format) in [
            ("ts_enable", "config:0"),
            ("pa_enable", "config:1"),
            ("pct_enable", "config:2"),
            ("jitter", "config:16"),
            ("branch_filter", "config:32"),
            ("load_filter", "config:33"),
            ("store_filter", "config:34"),
            ("event_filter", "config1:0-63"),
            ("min_latency", "config2:0-11"),
        ] {
            fs::write(dir.join("format").join(field), format!("{format}\n")).unwrap();
        }
        dir
    }

    #[test]
    fn formats_parse_single_bits_ranges_and_lists() {
        assert_eq!(
            parse_format("config:33\n").unwrap(),
            FormatField {
                word: 0,
                ranges: vec![(33, 33)]
            }
        );
        assert_eq!(parse_format("config2:0-11").unwrap().ranges, vec![(0, 11)]);
        let split = parse_format("config1:0-3,8-11").unwrap();
        assert_eq!(split.word, 1);
        assert_eq!(split.place(0, 0xab), 0xa0b);
        assert_eq!(
            parse_format("config1:0-63").unwrap().place(0, u64::MAX),
            u64::MAX
        );
        for bad in ["config", "config9:1", "config:64", "config:5-2", "config:x"] {
            assert!(parse_format(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_attr_sets_the_filter_and_timestamp_bits_the_format_files_name() {
        let tmp = tempfile::tempdir().unwrap();
        fake_pmu(tmp.path(), "arm_spe_0", None);
        fs::create_dir_all(tmp.path().join("cpu")).unwrap();
        let pmus = find_pmus(tmp.path());
        assert_eq!(pmus.len(), 1);
        let pmu = &pmus[0];
        assert_eq!((pmu.pmu_type, pmu.min_interval), (9, Some(1024)));
        let attr = spe_attr(pmu, 0).unwrap();
        assert_eq!(attr.type_, 9);
        assert_eq!(attr.config, (1 << 0) | (1 << 16) | (1 << 33) | (1 << 34));
        assert_eq!((attr.config1, attr.config2), (0, 0));
        assert_eq!(attr.sample_period, 1024);
        assert_eq!(spe_attr(pmu, 100).unwrap().sample_period, 1024);
        assert_eq!(spe_attr(pmu, 5000).unwrap().sample_period, 5000);
        assert_ne!(attr.flags & FLAG_ENABLE_ON_EXEC, 0);
        assert_ne!(attr.flags & FLAG_INHERIT, 0);
        assert_ne!(attr.flags & FLAG_DISABLED, 0);
    }

    #[test]
    fn fields_go_where_the_format_files_say_and_missing_ones_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = fake_pmu(tmp.path(), "arm_spe_1", Some("4-7"));
        // A different (hypothetical) layout: the filters elsewhere, latency in config2.
        fs::write(dir.join("format/load_filter"), "config:40").unwrap();
        fs::write(dir.join("format/store_filter"), "config1:3").unwrap();
        fs::remove_file(dir.join("format/jitter")).unwrap();
        let pmu = &find_pmus(tmp.path())[0];
        assert!(pmu.serves(5) && !pmu.serves(0));
        let attr = spe_attr(pmu, 0).unwrap();
        assert_eq!(attr.config, (1 << 0) | (1 << 40));
        assert_eq!(attr.config1, 1 << 3);
        let mut attr = PerfEventAttr::default();
        set_field(&mut attr, pmu, "min_latency", 100, true).unwrap();
        assert_eq!(attr.config2, 100);
        assert!(set_field(&mut attr, pmu, "min_latency", 5000, true).is_err());

        fs::remove_file(dir.join("format/load_filter")).unwrap();
        let err = spe_attr(pmu, 0).unwrap_err();
        assert!(err.contains("load_filter"), "{err}");
    }

    #[test]
    fn devices_other_than_arm_spe_are_ignored() {
        let tmp = tempfile::tempdir().unwrap();
        fake_pmu(tmp.path(), "armv8_pmuv3_0", None);
        assert!(find_pmus(tmp.path()).is_empty());
        assert!(find_pmus(&tmp.path().join("absent")).is_empty());
    }
}
