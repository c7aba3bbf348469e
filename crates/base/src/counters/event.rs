//! What to count: an `Event` (kind, perf `config`, name) and the parser that turns the
//! names a user types into one.
//!
//! Accepted names follow `perf list`: the generic hardware and software events
//! (`cycles`, `task-clock`, …), generic cache events `<cache>-<op>[-misses]`
//! (`L1-dcache-load-misses`, `LLC-loads`, `dTLB-store-misses`, …), raw events `rNNNN`
//! (hex config), and `cpu/event=0x..,umask=0x..[,cmask=N][,inv][,edge][,name=LABEL]/` in
//! the x86 core PMU layout. On a hybrid CPU, `cpu_core/…/` and `cpu_atom/…/` name one core
//! PMU, with either a generic hardware/cache name or the terms inside. Names are matched
//! exactly (case-sensitively), as perf does. `parse_event_list` reads a `-e` value: events
//! separated by commas (not the commas inside `/…/`), `{a,b}` marking a group.

use std::fmt;
use std::str::FromStr;

/// The perf event type an `Event` is opened with (`perf_event_attr.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// `PERF_TYPE_HARDWARE`: a generic event the kernel maps to this CPU's PMU.
    Hardware,
    /// `PERF_TYPE_HW_CACHE`: config is `cache | op << 8 | result << 16`.
    HwCache,
    /// `PERF_TYPE_SOFTWARE`: counted by the kernel, available without a PMU.
    Software,
    /// `PERF_TYPE_RAW`: a model-specific PMU encoding, passed through unchanged.
    Raw,
}

impl EventKind {
    /// The `perf_event_attr.type` value (linux/perf_event.h).
    pub(crate) fn perf_type(self) -> u32 {
        match self {
            EventKind::Hardware => 0,
            EventKind::Software => 1,
            EventKind::HwCache => 3,
            EventKind::Raw => 4,
        }
    }

    /// Whether counting this kind needs a hardware PMU.
    pub(crate) fn needs_pmu(self) -> bool {
        !matches!(self, EventKind::Software)
    }
}

/// One countable event, as it will be passed to `perf_event_open`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Event {
    pub kind: EventKind,
    pub config: u64,
    /// The name as the user wrote it, or the `name=` term (shown in reports and errors).
    pub name: String,
    /// The core PMU the event is meant for (`cpu_core`, `cpu_atom` on a hybrid CPU);
    /// `None` for the default one (`cpu`) and for software events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pmu: Option<String>,
}

impl Event {
    /// Parses an event name; see the module documentation for the accepted forms.
    pub fn parse(name: &str) -> Result<Event, EventParseError> {
        let name = name.trim();
        let err = |reason: String| EventParseError {
            value: name.to_string(),
            reason,
        };
        if name.is_empty() {
            return Err(err("the name is empty".to_string()));
        }
        let event = |kind, config| Event {
            kind,
            config,
            name: name.to_string(),
            pmu: None,
        };
        if let Some(&(_, kind, config)) = GENERIC.iter().find(|(n, _, _)| *n == name) {
            return Ok(event(kind, config));
        }
        if let Some(config) = parse_hw_cache(name) {
            return Ok(event(EventKind::HwCache, config));
        }
        if let Some(hex) = name.strip_prefix('r') {
            if !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()) {
                return match u64::from_str_radix(hex, 16) {
                    Ok(config) => Ok(event(EventKind::Raw, config)),
                    Err(_) => Err(err("a raw config has at most 16 hex digits".to_string())),
                };
            }
        }
        if let Some((pmu, inner)) = name.strip_suffix('/').and_then(|rest| rest.split_once('/')) {
            if !(pmu == "cpu" || pmu.starts_with("cpu_")) {
                return Err(err(format!(
                    "'{pmu}' is not a core PMU (cpu, or cpu_core/cpu_atom on a hybrid CPU)"
                )));
            }
            let pmu = (pmu != "cpu").then(|| pmu.to_string());
            let generic = GENERIC
                .iter()
                .find(|(n, kind, _)| *n == inner && *kind == EventKind::Hardware)
                .map(|&(_, kind, config)| (kind, config))
                .or_else(|| parse_hw_cache(inner).map(|config| (EventKind::HwCache, config)));
            if let Some((kind, config)) = generic {
                return Ok(Event {
                    pmu,
                    ..event(kind, config)
                });
            }
            let (config, label) = parse_pmu_terms(inner).map_err(err)?;
            return Ok(Event {
                name: label.unwrap_or_else(|| name.to_string()),
                pmu,
                ..event(EventKind::Raw, config)
            });
        }
        Err(err("it is not a known event name".to_string()))
    }

    /// This event, meant for the core PMU `pmu` of a hybrid CPU, labelled `pmu/name/`.
    pub fn on_pmu(&self, pmu: &str) -> Event {
        Event {
            name: format!("{pmu}/{}/", self.name),
            pmu: Some(pmu.to_string()),
            ..self.clone()
        }
    }
}

/// Parses a `-e` value: events separated by commas, the commas inside `cpu/…/` not
/// counting; `{a,b,…}` puts events in one group, which the PMU schedules together.
/// Every other event is a group of its own, as in `perf stat`.
pub fn parse_event_list(list: &str) -> Result<Vec<Vec<Event>>, EventParseError> {
    let err = |reason: &str| EventParseError {
        value: list.to_string(),
        reason: reason.to_string(),
    };
    let mut groups: Vec<Vec<Event>> = Vec::new();
    let mut open_group: Option<Vec<Event>> = None;
    let mut token = String::new();
    let mut in_pmu = false;
    let finish = |token: &mut String,
                  open_group: &mut Option<Vec<Event>>,
                  groups: &mut Vec<Vec<Event>>|
     -> Result<(), EventParseError> {
        let name = std::mem::take(token);
        if name.trim().is_empty() {
            return Ok(());
        }
        let event = Event::parse(&name)?;
        match open_group {
            Some(group) => group.push(event),
            None => groups.push(vec![event]),
        }
        Ok(())
    };
    for c in list.chars() {
        match c {
            '/' => {
                // `cpu/` opens the terms and the next `/` closes them.
                in_pmu = !in_pmu;
                token.push(c);
            }
            ',' if !in_pmu => finish(&mut token, &mut open_group, &mut groups)?,
            '{' if !in_pmu => {
                if open_group.is_some() {
                    return Err(err("groups cannot be nested"));
                }
                if !token.trim().is_empty() {
                    return Err(err("'{' must start an event"));
                }
                open_group = Some(Vec::new());
            }
            '}' if !in_pmu => {
                finish(&mut token, &mut open_group, &mut groups)?;
                match open_group.take() {
                    Some(group) if !group.is_empty() => groups.push(group),
                    Some(_) => return Err(err("a group '{}' is empty")),
                    None => return Err(err("'}' without '{'")),
                }
            }
            _ => token.push(c),
        }
    }
    if open_group.is_some() {
        return Err(err("a group '{' is not closed"));
    }
    finish(&mut token, &mut open_group, &mut groups)?;
    if groups.is_empty() {
        return Err(err("no event is named"));
    }
    Ok(groups)
}

impl FromStr for Event {
    type Err = EventParseError;
    fn from_str(s: &str) -> Result<Event, EventParseError> {
        Event::parse(s)
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// A name that is not an event; the message quotes it and lists what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid event '{value}' ({reason}): expected {}", accepted_forms())]
pub struct EventParseError {
    pub value: String,
    pub reason: String,
}

/// The accepted forms, for error messages and `--help`.
pub fn accepted_forms() -> String {
    let generic: Vec<&str> = GENERIC.iter().map(|(n, _, _)| *n).collect();
    let caches: Vec<&str> = CACHES.iter().map(|(n, _)| *n).collect();
    format!(
        "one of {}; a cache event <cache>-<loads|stores|prefetches>[-misses] with <cache> one \
         of {} (e.g. L1-dcache-load-misses); a raw event rNNNN (hex config, e.g. r01C4); \
         cpu/event=0xNN,umask=0xNN[,cmask=N][,inv][,edge][,name=LABEL]/; or, on a hybrid \
         CPU, cpu_core/<event>/ or cpu_atom/<event>/",
        generic.join(", "),
        caches.join(", ")
    )
}

/// Generic hardware and software events (linux/perf_event.h `perf_hw_id`, `perf_sw_ids`).
const GENERIC: &[(&str, EventKind, u64)] = &[
    ("cycles", EventKind::Hardware, 0),
    ("cpu-cycles", EventKind::Hardware, 0),
    ("instructions", EventKind::Hardware, 1),
    ("cache-references", EventKind::Hardware, 2),
    ("cache-misses", EventKind::Hardware, 3),
    ("branches", EventKind::Hardware, 4),
    ("branch-instructions", EventKind::Hardware, 4),
    ("branch-misses", EventKind::Hardware, 5),
    ("bus-cycles", EventKind::Hardware, 6),
    ("stalled-cycles-frontend", EventKind::Hardware, 7),
    ("stalled-cycles-backend", EventKind::Hardware, 8),
    ("ref-cycles", EventKind::Hardware, 9),
    ("cpu-clock", EventKind::Software, 0),
    ("task-clock", EventKind::Software, 1),
    ("page-faults", EventKind::Software, 2),
    ("faults", EventKind::Software, 2),
    ("context-switches", EventKind::Software, 3),
    ("cs", EventKind::Software, 3),
    ("cpu-migrations", EventKind::Software, 4),
    ("migrations", EventKind::Software, 4),
    ("minor-faults", EventKind::Software, 5),
    ("major-faults", EventKind::Software, 6),
    ("alignment-faults", EventKind::Software, 7),
    ("emulation-faults", EventKind::Software, 8),
];

/// Which cache a `PERF_TYPE_HW_CACHE` event counts (`perf_hw_cache_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CacheId {
    L1d = 0,
    L1i = 1,
    Ll = 2,
    Dtlb = 3,
    Itlb = 4,
    Bpu = 5,
    Node = 6,
}

/// The access a cache event counts (`perf_hw_cache_op_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CacheOp {
    Read = 0,
    Write = 1,
    Prefetch = 2,
}

/// Whether a cache event counts accesses or misses (`perf_hw_cache_op_result_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CacheResult {
    Access = 0,
    Miss = 1,
}

/// The `PERF_TYPE_HW_CACHE` config: `id | op << 8 | result << 16`.
pub(crate) fn hw_cache_config(id: CacheId, op: CacheOp, result: CacheResult) -> u64 {
    (id as u64) | ((op as u64) << 8) | ((result as u64) << 16)
}

const CACHES: &[(&str, CacheId)] = &[
    ("L1-dcache", CacheId::L1d),
    ("L1-icache", CacheId::L1i),
    ("LLC", CacheId::Ll),
    ("dTLB", CacheId::Dtlb),
    ("iTLB", CacheId::Itlb),
    ("branch", CacheId::Bpu),
    ("node", CacheId::Node),
];

/// `<cache>-<op>s` or `<cache>-<op>-misses`, e.g. `LLC-loads`, `dTLB-store-misses`.
fn parse_hw_cache(name: &str) -> Option<u64> {
    let (id, rest) = CACHES.iter().find_map(|&(prefix, id)| {
        name.strip_prefix(prefix)
            .and_then(|r| r.strip_prefix('-'))
            .map(|r| (id, r))
    })?;
    let (op, result) = match rest {
        "loads" => (CacheOp::Read, CacheResult::Access),
        "load-misses" => (CacheOp::Read, CacheResult::Miss),
        "stores" => (CacheOp::Write, CacheResult::Access),
        "store-misses" => (CacheOp::Write, CacheResult::Miss),
        "prefetches" => (CacheOp::Prefetch, CacheResult::Access),
        "prefetch-misses" => (CacheOp::Prefetch, CacheResult::Miss),
        _ => return None,
    };
    Some(hw_cache_config(id, op, result))
}

/// The terms of `cpu/…/` in the x86 core PMU layout (IA32_PERFEVTSELx / AMD PERF_CTL):
/// event select in bits 0–7 (AMD's event bits 8–11 go to bits 32–35), unit mask in
/// 8–15, edge in 18, inv in 23, counter mask in 24–31.
/// Returns the config and the `name=` label, if any.
fn parse_pmu_terms(terms: &str) -> Result<(u64, Option<String>), String> {
    let mut event = None;
    let mut label = None;
    let mut config = 0u64;
    for term in terms.split(',').map(str::trim) {
        let (key, value) = match term.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (term, None),
        };
        let number = |max: u64| -> Result<u64, String> {
            let v = value.ok_or_else(|| format!("'{key}' needs a value, as in {key}=0x1"))?;
            let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => v.parse(),
            };
            match parsed {
                Ok(n) if n <= max => Ok(n),
                _ => Err(format!(
                    "'{key}={v}' is not a number from 0 to {max:#x} (decimal or 0x hex)"
                )),
            }
        };
        let flag = |bit: u32| -> Result<u64, String> {
            match value {
                None | Some("1") => Ok(1 << bit),
                Some("0") => Ok(0),
                Some(v) => Err(format!("'{key}={v}' must be 0 or 1")),
            }
        };
        match key {
            "event" => {
                let e = number(0xfff)?;
                event = Some(e);
                config |= (e & 0xff) | ((e >> 8) << 32);
            }
            "umask" => config |= number(0xff)? << 8,
            "cmask" => config |= number(0xff)? << 24,
            "edge" => config |= flag(18)?,
            "inv" => config |= flag(23)?,
            "name" => match value {
                Some(v) if !v.is_empty() => label = Some(v.to_string()),
                _ => return Err("'name' needs a label, as in name=l2-misses".to_string()),
            },
            "" => return Err("an empty term".to_string()),
            other => {
                return Err(format!(
                    "unknown term '{other}' (known: event, umask, cmask, inv, edge, name)"
                ))
            }
        }
    }
    match event {
        Some(_) => Ok((config, label)),
        None => Err("an event=0xNN term is required".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(name: &str) -> (EventKind, u64) {
        let e = Event::parse(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(e.name, name);
        (e.kind, e.config)
    }

    #[test]
    fn generic_names() {
        assert_eq!(parsed("cycles"), (EventKind::Hardware, 0));
        assert_eq!(parsed("instructions"), (EventKind::Hardware, 1));
        assert_eq!(parsed("cache-references"), (EventKind::Hardware, 2));
        assert_eq!(parsed("cache-misses"), (EventKind::Hardware, 3));
        assert_eq!(parsed("task-clock"), (EventKind::Software, 1));
        assert_eq!(parsed("page-faults"), (EventKind::Software, 2));
        assert_eq!(parsed("context-switches"), (EventKind::Software, 3));
        assert_eq!(parsed("cpu-migrations"), (EventKind::Software, 4));
    }

    #[test]
    fn hw_cache_encoding() {
        // id | op << 8 | result << 16, values from linux/perf_event.h.
        for (id, op, result, config) in [
            (CacheId::L1d, CacheOp::Read, CacheResult::Miss, 0x1_00_00),
            (CacheId::Dtlb, CacheOp::Write, CacheResult::Miss, 0x1_01_03),
            (
                CacheId::Node,
                CacheOp::Prefetch,
                CacheResult::Access,
                0x0_02_06,
            ),
        ] {
            assert_eq!(hw_cache_config(id, op, result), config);
        }
        assert_eq!(
            parsed("L1-dcache-load-misses"),
            (EventKind::HwCache, 0x10000)
        );
        assert_eq!(parsed("LLC-loads"), (EventKind::HwCache, 0x00002));
        assert_eq!(parsed("LLC-load-misses"), (EventKind::HwCache, 0x10002));
        assert_eq!(parsed("dTLB-loads"), (EventKind::HwCache, 0x00003));
        assert_eq!(parsed("dTLB-load-misses"), (EventKind::HwCache, 0x10003));
        assert_eq!(parsed("dTLB-store-misses"), (EventKind::HwCache, 0x10103));
        assert_eq!(parsed("iTLB-load-misses"), (EventKind::HwCache, 0x10004));
    }

    #[test]
    fn raw_hex() {
        assert_eq!(parsed("r01C4"), (EventKind::Raw, 0x01c4));
        assert_eq!(parsed("r1"), (EventKind::Raw, 1));
        assert_eq!(parsed("rffffffffffffffff"), (EventKind::Raw, u64::MAX));
        assert!(Event::parse("r").is_err());
        assert!(Event::parse("r01G4").is_err());
        assert!(Event::parse("r1ffffffffffffffff").is_err());
    }

    #[test]
    fn pmu_terms() {
        for (name, config) in [
            ("cpu/event=0xc4,umask=0x01/", 0x01c4),
            ("cpu/umask=1,event=196/", 0x01c4),
            ("cpu/event=0xa3,umask=0x14,cmask=0x14/", 0x1400_14a3),
            ("cpu/event=0x0e,umask=0x01,cmask=1,inv,edge/", 0x0184_010e),
            ("cpu/event=0x1c0/", 0x1_0000_00c0),
        ] {
            assert_eq!(parsed(name), (EventKind::Raw, config));
        }
        for bad in [
            "cpu/umask=0x01/",
            "cpu/event=0x100000/",
            "cpu/event=0xzz/",
            "cpu/event=1,foo=2/",
            "cpu/event/",
            "cpu/event=1,inv=2/",
            "cpu/event=1",
        ] {
            assert!(Event::parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn bad_names_quote_the_value_and_list_the_accepted_forms() {
        let err = Event::parse("cycels").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("'cycels'"), "{msg}");
        for expected in ["cycles", "task-clock", "L1-dcache", "rNNNN", "umask"] {
            assert!(msg.contains(expected), "{msg} should mention {expected}");
        }
        assert!(Event::parse("").is_err());
        assert!(Event::parse("LLC-misses").is_err());
        assert!(Event::parse("Cycles").is_err());
    }

    #[test]
    fn hybrid_pmu_names_and_labels() {
        let e = Event::parse("cpu_atom/cycles/").unwrap();
        assert_eq!(
            (e.kind, e.config, e.pmu.as_deref()),
            (EventKind::Hardware, 0, Some("cpu_atom"))
        );
        let e = Event::parse("cpu_core/LLC-load-misses/").unwrap();
        assert_eq!((e.kind, e.config), (EventKind::HwCache, 0x10002));
        let e = Event::parse("cpu_core/event=0xd1,umask=0x10/").unwrap();
        assert_eq!(
            (e.kind, e.config, e.pmu.as_deref()),
            (EventKind::Raw, 0x10d1, Some("cpu_core"))
        );
        let e = Event::parse("cpu/event=0x43,umask=0x1,name=l1-fills-from-l2/").unwrap();
        assert_eq!(
            (e.name.as_str(), e.config, e.pmu),
            ("l1-fills-from-l2", 0x0143, None)
        );
        assert_eq!(Event::parse("cpu/cycles/").unwrap().config, 0);
        assert_eq!(
            Event::parse("cycles").unwrap().on_pmu("cpu_core").name,
            "cpu_core/cycles/"
        );
        for bad in [
            "amd_l3/event=1/",
            "cpu_core/task-clock/",
            "cpu/name=x/",
            "cpu/event=1,name=/",
        ] {
            assert!(Event::parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn event_lists_split_on_commas_outside_pmu_terms_and_keep_groups() {
        let names = |list: &str| -> Vec<Vec<String>> {
            parse_event_list(list)
                .unwrap_or_else(|e| panic!("{list}: {e}"))
                .into_iter()
                .map(|g| g.into_iter().map(|e| e.name).collect())
                .collect()
        };
        assert_eq!(names("cycles,instructions"), [["cycles"], ["instructions"]]);
        assert_eq!(
            names("{cycles,instructions},cpu/event=0xc4,umask=0x01/,task-clock"),
            vec![
                vec!["cycles".to_string(), "instructions".to_string()],
                vec!["cpu/event=0xc4,umask=0x01/".to_string()],
                vec!["task-clock".to_string()],
            ]
        );
        assert_eq!(names("{cpu/event=0x43,umask=0x1/,r01C4}").len(), 1);
        for bad in [
            "",
            ",",
            "{cycles",
            "cycles}",
            "{}",
            "{{cycles}}",
            "cycles,bogus",
        ] {
            assert!(parse_event_list(bad).is_err(), "{bad:?} should be rejected");
        }
        let msg = parse_event_list("cycles,bogus").unwrap_err().to_string();
        assert!(msg.contains("'bogus'"), "{msg}");
    }

    #[test]
    fn from_str_and_display_round_trip() {
        let e: Event = "dTLB-load-misses".parse().unwrap();
        assert_eq!(e.to_string(), "dTLB-load-misses");
        assert_eq!(e.kind.perf_type(), 3);
    }
}
