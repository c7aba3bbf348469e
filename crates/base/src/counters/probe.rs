//! Why an event cannot be counted, in words a user can act on. `Probe::detect` reads
//! what the kernel exposes (`perf_event_paranoid`, the core PMUs under
//! /sys/bus/event_source/devices); `Probe::explain` maps an errno from
//! `perf_event_open` to a `Refusal` using that snapshot, so the mapping is a pure
//! function and is tested without the hardware it describes.
//!
//! Hybrid CPUs (Intel P/E cores) have one core PMU per core type, `cpu_core` and
//! `cpu_atom`, each with its own perf type number; a generic hardware or cache event is
//! sent to one of them with `hybrid_config`.

use std::fmt;
use std::fs;
use std::io;
use std::path::Path;

use super::event::{Event, EventKind};

const EVENT_SOURCES: &str = "/sys/bus/event_source/devices";
const PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";

/// A core PMU as the kernel lists it (e.g. `cpu`, or `cpu_core`/`cpu_atom` on a hybrid
/// CPU), with the perf type number in its `type` file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CorePmu {
    pub name: String,
    pub pmu_type: u32,
}

/// What the kernel says about performance counters on this machine.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Probe {
    /// /proc/sys/kernel/perf_event_paranoid, `None` when it cannot be read.
    pub paranoid: Option<i32>,
    /// Core PMUs (`cpu`, `cpu_core`, `cpu_atom`, `armv8_*` …); empty without a PMU.
    pub core_pmus: Vec<CorePmu>,
}

impl Probe {
    /// Reads the paranoid level and the core PMUs of the running system.
    pub fn detect() -> Probe {
        Probe {
            paranoid: read_paranoid(Path::new(PARANOID)),
            core_pmus: core_pmus(Path::new(EVENT_SOURCES)),
        }
    }

    /// Whether the kernel exposes a hardware (core) PMU at all. A virtual machine
    /// without PMU passthrough has only the software, tracepoint and breakpoint ones.
    pub fn has_hardware_pmu(&self) -> bool {
        !self.core_pmus.is_empty()
    }

    /// One line for `info`: which core PMUs count hardware events, or why none does.
    pub fn summary(&self) -> String {
        let paranoid = self
            .paranoid
            .map_or("perf_event_paranoid unreadable".to_string(), |p| {
                format!("perf_event_paranoid {p}")
            });
        if self.core_pmus.is_empty() {
            return format!("{}; {paranoid}", Refusal::NoHardwarePmu);
        }
        let names: Vec<&str> = self.core_pmus.iter().map(|p| p.name.as_str()).collect();
        let hybrid = if self.hybrid_pmus().len() > 1 {
            " (hybrid: each event is counted on every core PMU)"
        } else {
            ""
        };
        format!("hardware PMU {}{hybrid}; {paranoid}", names.join(", "))
    }

    /// The core PMUs of a hybrid CPU (`cpu_core`, `cpu_atom`); empty on other CPUs.
    pub(crate) fn hybrid_pmus(&self) -> Vec<&CorePmu> {
        self.core_pmus
            .iter()
            .filter(|p| p.name.starts_with("cpu_"))
            .collect()
    }

    /// Why `perf_event_open` refused `event` with `errno`.
    pub fn explain(&self, event: &Event, errno: i32) -> Refusal {
        match errno {
            libc::EACCES | libc::EPERM => Refusal::NotPermitted {
                paranoid: self.paranoid,
            },
            libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV | libc::EINVAL
                if event.kind.needs_pmu() && !self.has_hardware_pmu() =>
            {
                Refusal::NoHardwarePmu
            }
            libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV | libc::EINVAL
                if event.kind.needs_pmu() =>
            {
                Refusal::UnsupportedByCpu
            }
            libc::ENOENT | libc::EOPNOTSUPP | libc::EINVAL => Refusal::UnsupportedByKernel,
            libc::EMFILE | libc::ENFILE => Refusal::TooManyOpenFiles,
            libc::EBUSY => Refusal::PmuBusy,
            libc::ENOSYS => Refusal::NoPerfEvents,
            other => Refusal::Other {
                errno: other,
                message: io::Error::from_raw_os_error(other).to_string(),
            },
        }
    }

    /// The `perf_event_attr` type and config that open `event` here: an event meant for
    /// one PMU of a hybrid CPU goes to that PMU's type number (raw events) or carries it
    /// in the config's upper half (generic events).
    pub(crate) fn attr_type_and_config(&self, event: &Event) -> Result<(u32, u64), Refusal> {
        let Some(name) = &event.pmu else {
            return Ok((event.kind.perf_type(), event.config));
        };
        let Some(pmu) = self.core_pmus.iter().find(|p| &p.name == name) else {
            return Err(Refusal::NoSuchPmu {
                name: name.clone(),
                core_pmus: self.core_pmus.iter().map(|p| p.name.clone()).collect(),
            });
        };
        Ok(match event.kind {
            EventKind::Raw => (pmu.pmu_type, event.config),
            kind => (kind.perf_type(), hybrid_config(event.config, pmu.pmu_type)),
        })
    }

    /// The groups to open on this machine: on a hybrid CPU, every group with generic
    /// hardware or cache events not aimed at one PMU becomes one group per core PMU
    /// (`cpu_core/cycles/`, …), since a group cannot span two PMUs and a thread may run
    /// on either kind of core. The group's other events (software, raw, or aimed at one
    /// PMU) stay together in a group of their own, ahead of the copies. Raw events are
    /// not copied: their encoding belongs to one core type, and a raw event without a
    /// PMU goes where the kernel sends `PERF_TYPE_RAW` (the `cpu_core` PMU), counting
    /// only while the thread runs there. Elsewhere the groups are unchanged.
    pub fn expand_for_core_pmus(&self, groups: &[Vec<Event>]) -> Vec<Vec<Event>> {
        let hybrid: Vec<&str> = self.hybrid_pmus().iter().map(|p| p.name.as_str()).collect();
        let mut expanded = Vec::new();
        for group in groups {
            let spread = |e: &Event| supports_hybrid_config(e.kind) && e.pmu.is_none();
            if hybrid.len() < 2 || !group.iter().any(spread) {
                expanded.push(group.clone());
                continue;
            }
            let rest: Vec<Event> = group.iter().filter(|e| !spread(e)).cloned().collect();
            if !rest.is_empty() {
                expanded.push(rest);
            }
            for pmu in &hybrid {
                expanded.push(
                    group
                        .iter()
                        .filter(|e| spread(e))
                        .map(|e| e.on_pmu(pmu))
                        .collect(),
                );
            }
        }
        expanded
    }
}

/// Why an event could not be opened; the Display text says what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum Refusal {
    /// A hardware, cache or raw event on a machine whose kernel lists no core PMU.
    NoHardwarePmu,
    /// EACCES/EPERM: the paranoid level (or a security policy) forbids it.
    NotPermitted {
        paranoid: Option<i32>,
    },
    /// The machine has a PMU but this CPU (or its driver) does not have the event.
    UnsupportedByCpu,
    /// A software event this kernel does not know.
    UnsupportedByKernel,
    TooManyOpenFiles,
    /// Another user holds the counters exclusively (EBUSY).
    PmuBusy,
    /// The kernel was built without perf events (ENOSYS).
    NoPerfEvents,
    /// An event names a core PMU (`cpu_atom/…/`) this machine does not have.
    NoSuchPmu {
        name: String,
        core_pmus: Vec<String>,
    },
    Other {
        errno: i32,
        message: String,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NoHardwarePmu => f.write_str(
                "no hardware PMU (e.g. a virtual machine without PMU passthrough): the kernel \
                 lists no cpu PMU under /sys/bus/event_source/devices; software events such \
                 as task-clock and page-faults still work",
            ),
            Refusal::NotPermitted {
                paranoid: Some(level),
            } => write!(
                f,
                "perf_event_paranoid is {level}; run as root or `sudo sysctl \
                 kernel.perf_event_paranoid=1`"
            ),
            Refusal::NotPermitted { paranoid: None } => f.write_str(
                "not permitted, and /proc/sys/kernel/perf_event_paranoid could not be read; \
                 run as root or `sudo sysctl kernel.perf_event_paranoid=1`",
            ),
            Refusal::UnsupportedByCpu => f.write_str("event not supported by this CPU"),
            Refusal::UnsupportedByKernel => f.write_str("event not supported by this kernel"),
            Refusal::TooManyOpenFiles => {
                f.write_str("too many open files; raise the limit with `ulimit -n`")
            }
            Refusal::PmuBusy => f.write_str(
                "the PMU is in use by another program (e.g. a running perf or NMI watchdog)",
            ),
            Refusal::NoPerfEvents => {
                f.write_str("this kernel was built without perf events (CONFIG_PERF_EVENTS)")
            }
            Refusal::NoSuchPmu { name, core_pmus } if core_pmus.is_empty() => write!(
                f,
                "this machine has no core PMU named {name} (it lists no core PMU at all)"
            ),
            Refusal::NoSuchPmu { name, core_pmus } => write!(
                f,
                "this machine has no core PMU named {name} (its core PMUs: {})",
                core_pmus.join(", ")
            ),
            Refusal::Other { errno, message } => {
                write!(f, "perf_event_open failed: {message} (errno {errno})")
            }
        }
    }
}

/// The config of a generic hardware or cache event directed at one PMU of a hybrid CPU:
/// the PMU's type number goes in the upper 32 bits (PERF_PMU_TYPE_SHIFT, Linux 5.17+).
pub(crate) fn hybrid_config(config: u64, pmu_type: u32) -> u64 {
    (config & 0xffff_ffff) | (u64::from(pmu_type) << 32)
}

/// Whether an event can be sent to a single hybrid PMU with `hybrid_config`.
pub(crate) fn supports_hybrid_config(kind: EventKind) -> bool {
    matches!(kind, EventKind::Hardware | EventKind::HwCache)
}

fn read_paranoid(path: &Path) -> Option<i32> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Core PMUs under `dir`: `cpu`, `cpu_*` (hybrid x86) and `armv*` (Arm), each with a
/// readable `type`. Uncore, software and tracepoint PMUs are not core PMUs.
fn core_pmus(dir: &Path) -> Vec<CorePmu> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut pmus: Vec<CorePmu> = entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name().into_string().ok()?;
            if !(name == "cpu" || name.starts_with("cpu_") || name.starts_with("armv")) {
                return None;
            }
            let pmu_type = fs::read_to_string(entry.path().join("type"))
                .ok()?
                .trim()
                .parse()
                .ok()?;
            Some(CorePmu { name, pmu_type })
        })
        .collect();
    pmus.sort_by(|a, b| a.name.cmp(&b.name));
    pmus
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(paranoid: Option<i32>, pmus: &[(&str, u32)]) -> Probe {
        Probe {
            paranoid,
            core_pmus: pmus
                .iter()
                .map(|&(name, pmu_type)| CorePmu {
                    name: name.to_string(),
                    pmu_type,
                })
                .collect(),
        }
    }

    fn ev(name: &str) -> Event {
        Event::parse(name).unwrap()
    }

    #[test]
    fn hardware_event_without_pmu_is_explained() {
        let vm = probe(Some(2), &[]);
        for errno in [libc::ENOENT, libc::EOPNOTSUPP] {
            let r = vm.explain(&ev("cycles"), errno);
            assert_eq!(r, Refusal::NoHardwarePmu);
            assert!(r.to_string().contains("no hardware PMU"), "{r}");
            assert!(r.to_string().contains("virtual machine"), "{r}");
        }
        assert_eq!(
            vm.explain(&ev("r01C4"), libc::ENOENT),
            Refusal::NoHardwarePmu
        );
    }

    #[test]
    fn permission_names_the_paranoid_level() {
        let p = probe(Some(3), &[("cpu", 4)]);
        for errno in [libc::EACCES, libc::EPERM] {
            let msg = p.explain(&ev("task-clock"), errno).to_string();
            assert!(msg.contains("perf_event_paranoid is 3"), "{msg}");
            assert!(
                msg.contains("sudo sysctl kernel.perf_event_paranoid=1"),
                "{msg}"
            );
        }
        let msg = probe(None, &[])
            .explain(&ev("cycles"), libc::EACCES)
            .to_string();
        assert!(msg.contains("could not be read"), "{msg}");
    }

    #[test]
    fn unknown_event_on_a_machine_with_a_pmu() {
        let p = probe(Some(1), &[("cpu", 4)]);
        for (name, errno) in [
            ("r01C4", libc::EINVAL),
            ("LLC-loads", libc::ENOENT),
            ("cpu/event=0xff/", libc::EINVAL),
        ] {
            let r = p.explain(&ev(name), errno);
            assert_eq!(r, Refusal::UnsupportedByCpu, "{name}");
            assert_eq!(r.to_string(), "event not supported by this CPU");
        }
        assert_eq!(
            p.explain(&ev("page-faults"), libc::ENOENT),
            Refusal::UnsupportedByKernel
        );
    }

    #[test]
    fn other_errors_keep_the_errno() {
        let p = probe(Some(1), &[]);
        assert_eq!(
            p.explain(&ev("cycles"), libc::EMFILE),
            Refusal::TooManyOpenFiles
        );
        let msg = p.explain(&ev("cycles"), libc::E2BIG).to_string();
        assert!(msg.contains(&format!("errno {}", libc::E2BIG)), "{msg}");
    }

    #[test]
    fn hybrid_encoding_puts_the_pmu_type_in_the_upper_half() {
        assert_eq!(hybrid_config(0, 8), 0x8_0000_0000);
        assert_eq!(hybrid_config(1, 4), 0x4_0000_0001);
        assert_eq!(hybrid_config(0x10003, 10), 0xa_0001_0003);
        assert!(supports_hybrid_config(EventKind::HwCache));
        assert!(!supports_hybrid_config(EventKind::Software));
    }

    #[test]
    fn summary_names_the_pmus_or_why_there_is_none() {
        let vm = probe(Some(2), &[]).summary();
        assert!(vm.starts_with("no hardware PMU"), "{vm}");
        assert!(vm.ends_with("perf_event_paranoid 2"), "{vm}");
        let hybrid = probe(Some(1), &[("cpu_atom", 10), ("cpu_core", 4)]).summary();
        assert!(
            hybrid.starts_with("hardware PMU cpu_atom, cpu_core (hybrid"),
            "{hybrid}"
        );
        assert_eq!(
            probe(None, &[("cpu", 4)]).summary(),
            "hardware PMU cpu; perf_event_paranoid unreadable"
        );
    }

    #[test]
    fn hybrid_pmus_are_the_cpu_underscore_ones() {
        let p = probe(Some(2), &[("cpu_atom", 10), ("cpu_core", 4)]);
        assert!(p.has_hardware_pmu());
        let types: Vec<u32> = p.hybrid_pmus().iter().map(|p| p.pmu_type).collect();
        assert_eq!(types, [10, 4]);
        assert!(probe(Some(2), &[("cpu", 4)]).hybrid_pmus().is_empty());
    }

    #[test]
    fn hybrid_groups_are_split_per_core_pmu() {
        let hybrid = probe(Some(2), &[("cpu_atom", 10), ("cpu_core", 4)]);
        let groups = vec![
            vec![ev("cycles"), ev("instructions")],
            vec![ev("task-clock"), ev("page-faults")],
            vec![ev("cpu_core/LLC-load-misses/")],
            vec![ev("r01C4"), ev("dTLB-load-misses"), ev("task-clock")],
        ];
        let names: Vec<Vec<String>> = hybrid
            .expand_for_core_pmus(&groups)
            .iter()
            .map(|g| g.iter().map(|e| e.name.clone()).collect())
            .collect();
        assert_eq!(
            names,
            vec![
                vec!["cpu_atom/cycles/", "cpu_atom/instructions/"],
                vec!["cpu_core/cycles/", "cpu_core/instructions/"],
                vec!["task-clock", "page-faults"],
                vec!["cpu_core/LLC-load-misses/"],
                // A raw encoding belongs to one core type: not copied; it keeps the
                // group's other uncopied events.
                vec!["r01C4", "task-clock"],
                vec!["cpu_atom/dTLB-load-misses/"],
                vec!["cpu_core/dTLB-load-misses/"],
            ]
        );
        let plain = probe(Some(2), &[("cpu", 4)]);
        assert_eq!(plain.expand_for_core_pmus(&groups), groups);
        // Generic events carry the PMU type in the config; raw ones use it as the type.
        let atom_cycles = ev("cycles").on_pmu("cpu_atom");
        assert_eq!(
            hybrid.attr_type_and_config(&atom_cycles),
            Ok((0, 0xa_0000_0000))
        );
        let raw = ev("cpu_core/event=0xd1,umask=0x10/");
        assert_eq!(hybrid.attr_type_and_config(&raw), Ok((4, 0x10d1)));
        let missing = plain.attr_type_and_config(&raw).unwrap_err();
        assert!(missing
            .to_string()
            .contains("no core PMU named cpu_core (its core PMUs: cpu)"));
    }

    #[test]
    fn sysfs_listing_is_read_from_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        for (name, ty) in [
            ("cpu_core", "4\n"),
            ("cpu_atom", "10\n"),
            ("software", "1\n"),
        ] {
            fs::create_dir(dir.path().join(name)).unwrap();
            fs::write(dir.path().join(name).join("type"), ty).unwrap();
        }
        let names: Vec<(String, u32)> = core_pmus(dir.path())
            .into_iter()
            .map(|p| (p.name, p.pmu_type))
            .collect();
        assert_eq!(
            names,
            [("cpu_atom".to_string(), 10), ("cpu_core".to_string(), 4)]
        );
        assert!(core_pmus(&dir.path().join("missing")).is_empty());
        let paranoid = dir.path().join("paranoid");
        fs::write(&paranoid, "-1\n").unwrap();
        assert_eq!(read_paranoid(&paranoid), Some(-1));
    }
}
