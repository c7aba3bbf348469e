//! Hostile input: no input may panic, and each must give a clear error. Property tests
//! (proptest) for every parser of what a user, a file or another program hands memscope:
//! sizes, CPU lists, perf event lists, the other flag lists, sweep parameters and plans,
//! JSON reports read back by `compare` (and the comparison made of whatever reads), ELF
//! and DWARF files read by `footprint`, and the history database.
//!
//! Each property has a bounded number of cases (the constants below), so that the whole
//! file stays within a few tens of seconds in release on two cores.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use memscope::binary::{self, FootprintPlan};
use memscope::compare::{self, Loaded};
use memscope::counters::{parse_event_list, Event, EventKind};
use memscope::error::UsageError;
use memscope::report::read::parse_report;
use memscope::report::Report;
use memscope::sweep::params::SweepArgs;
use memscope::sweep::template::{self, Assignment, MAX_VARIANTS};
use memscope::topology::cpu::{format_cpu_list, parse_cpu_list};
use memscope::topology::Machine;
use memscope::units::{Bytes, GIB, KIB, MIB, TIB};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{json, Value};

use crate::util::{exclusive, latency_report, memscope, read_json, temp_dir};

/// Cases per property of a cheap string parser.
const STRINGS: u32 = 512;
/// Cases per property of a whole plan (regexes compiled, PATH searched).
const PLANS: u32 = 256;
/// Cases per property of a JSON report (parsed, compared and rendered).
const REPORTS: u32 = 96;
/// Cases per property of an ELF file (ELF and DWARF read).
const ELVES: u32 = 256;
/// Cases per property that starts the binary.
const PROCESSES: u32 = 12;

fn cases(n: u32) -> ProptestConfig {
    ProptestConfig {
        cases: n,
        // Integration tests have no lib.rs beside them for proptest's regression files.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A few strings that have broken parsers before: signs, exponents, hex, NaN, infinities,
/// other scripts' digits, a NUL and a byte-order mark.
const NASTY: &[&str] = &[
    "",
    " ",
    "-",
    "+",
    "-1",
    "+1",
    "-0",
    "0x10",
    "1e3",
    "1e400",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "1.5",
    ".",
    "..",
    "٣",
    "\u{0}",
    "\u{feff}1",
    "18446744073709551616",
    "99999999999999999999999999999999",
    "9223372036854775807",
    "-9223372036854775808",
];

fn nasty() -> BoxedStrategy<String> {
    prop::sample::select(NASTY).prop_map(String::from).boxed()
}

// ---------------------------------------------------------------------------------------
// 1. Sizes: `units::Bytes::parse` ("64K", "1GiB", "1.5M", "4096").

const SIZE_UNITS: &[(&str, u64)] = &[
    ("", 1),
    ("B", 1),
    ("K", KIB),
    ("KB", KIB),
    ("KiB", KIB),
    ("M", MIB),
    ("MB", MIB),
    ("MiB", MIB),
    ("G", GIB),
    ("GB", GIB),
    ("GiB", GIB),
    ("T", TIB),
    ("TB", TIB),
    ("TiB", TIB),
];

fn size_like() -> BoxedStrategy<String> {
    prop_oneof![
        any::<String>(),
        nasty(),
        "[ 0-9.eE+_,-]{0,24}[ kKmMgGtTiIbBpPeE]{0,4}",
        "[0-9]{15,40}(\\.[0-9]{0,30})?[KMGT]?(i?B)?",
        "[0-9]{1,4}\\.[0-9]{1,8}[KMGT]",
    ]
    .boxed()
}

/// A refused size quotes the value and says what was expected (or why it cannot be).
fn check_size_error(text: &str, err: &memscope::units::SizeParseError) {
    assert_eq!(err.value, text);
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("invalid size '{text}': ")),
        "{message}"
    );
    assert!(
        ["expected", "too large", "whole number"]
            .iter()
            .any(|w| err.reason.contains(w)),
        "{message}"
    );
}

/// A printed size reads back as itself, or within the printing's rounding (two
/// significant decimals: ±0.5%); a rounded print that is not a whole number of bytes is
/// refused as such.
fn check_printed_size_reads_back(bytes: Bytes) {
    let printed = bytes.to_string();
    match Bytes::parse(&printed) {
        Ok(read) => {
            let error = (read.0 as f64 - bytes.0 as f64).abs() / (bytes.0 as f64).max(1.0);
            assert!(error <= 0.0051, "{bytes:?} printed {printed} read {read:?}");
        }
        Err(e) => {
            check_size_error(&printed, &e);
            assert!(
                e.reason.contains("whole number") || e.reason.contains("too large"),
                "{printed}: {e}"
            );
        }
    }
}

/// Sizes that print exactly: whole units, halves, and quarters below ten units.
fn exact_size() -> BoxedStrategy<u64> {
    prop_oneof![
        0u64..1024,
        (0usize..4, 1u64..1024, 0u64..4).prop_map(|(u, k, quarter)| {
            let unit = [KIB, MIB, GIB, TIB][u];
            let quarter = if k < 10 { quarter } else { quarter & 2 };
            k * unit + quarter * unit / 4
        }),
        (1u64..(1 << 24), any::<bool>()).prop_map(|(k, half)| k * TIB + u64::from(half) * TIB / 2),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(cases(STRINGS))]

    #[test]
    fn sizes_never_panic_and_errors_quote_the_value(text in size_like()) {
        match Bytes::parse(&text) {
            Ok(bytes) => check_printed_size_reads_back(bytes),
            Err(e) => check_size_error(&text, &e),
        }
        prop_assert_eq!(text.parse::<Bytes>().is_ok(), Bytes::parse(&text).is_ok());
    }

    #[test]
    fn sizes_in_every_spelling_read_as_their_value(
        k in prop_oneof![0u64..5000, 0u64..(1 << 53)],
        unit in 0..SIZE_UNITS.len(),
        lower in any::<bool>(),
        space in prop::sample::select(&["", " ", "  "][..]),
        pad in prop::sample::select(&["", " ", "\t"][..]),
    ) {
        let (name, multiplier) = SIZE_UNITS[unit];
        let name = if lower { name.to_ascii_lowercase() } else { name.to_string() };
        let text = format!("{pad}{k}{space}{name}{pad}");
        match (Bytes::parse(&text), k.checked_mul(multiplier)) {
            (Ok(bytes), Some(expected)) => prop_assert_eq!(bytes.0, expected),
            (Err(e), None) => {
                check_size_error(&text, &e);
                prop_assert!(e.reason.contains("too large"), "{}", e);
            }
            (got, expected) => prop_assert!(false, "{text:?}: {got:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn exact_sizes_print_and_read_back_as_themselves(bytes in exact_size()) {
        let printed = Bytes(bytes).to_string();
        prop_assert_eq!(Bytes::parse(&printed), Ok(Bytes(bytes)), "{}", printed);
    }

    #[test]
    fn every_size_prints_something_that_reads_back_close(bytes in any::<u64>()) {
        check_printed_size_reads_back(Bytes(bytes));
    }
}

// ---------------------------------------------------------------------------------------
// 2. CPU lists: `topology::cpu::parse_cpu_list` ("0-3,8,10-11").

/// The parser's largest CPU number (`topology::cpu`'s MAX_CPU_INDEX).
const MAX_CPU: usize = 1 << 20;

/// A CPU number as typed: mostly small, some at the limit, some beyond u64, some junk.
fn cpu_number() -> BoxedStrategy<String> {
    prop_oneof![
        6 => (0usize..64).prop_map(|n| n.to_string()),
        1 => (MAX_CPU - 2..MAX_CPU + 3).prop_map(|n| n.to_string()),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => "[1-9][0-9]{20,30}",
        1 => nasty().prop_filter("no separators", |s| !s.contains([',', '-'])),
        1 => "[ a-z.x]{0,3}",
    ]
    .boxed()
}

/// A range's ends: small ones (any order) or both at the limit, so that no accepted range
/// spans a million CPUs in every case (that one has its own test).
fn cpu_range() -> BoxedStrategy<(String, String)> {
    prop_oneof![
        (0usize..64, -4isize..12)
            .prop_map(|(lo, span)| { (lo.to_string(), (lo as isize + span).max(0).to_string()) }),
        (MAX_CPU - 3..MAX_CPU + 2, MAX_CPU - 3..MAX_CPU + 2)
            .prop_map(|(a, b)| (a.to_string(), b.to_string())),
        (cpu_number(), cpu_number()).prop_filter("no huge accepted spans", |(a, b)| {
            match (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
                (Ok(a), Ok(b)) => b < a || b - a < 4096 || b > MAX_CPU || a > MAX_CPU,
                _ => true,
            }
        }),
    ]
    .boxed()
}

/// One comma-separated part as typed (with spaces around it, or none).
fn cpu_part() -> BoxedStrategy<String> {
    let spaced = |s: String, (l, r): (bool, bool)| {
        format!(
            "{}{s}{}",
            if l { " " } else { "" },
            if r { " " } else { "" }
        )
    };
    prop_oneof![
        3 => (cpu_number(), any::<(bool, bool)>()).prop_map(move |(n, s)| spaced(n, s)),
        3 => (cpu_range(), any::<(bool, bool)>(), any::<bool>()).prop_map(move |((a, b), s, inner)| {
            let dash = if inner { " - " } else { "-" };
            spaced(format!("{a}{dash}{b}"), s)
        }),
        1 => Just(String::new()),
        1 => "[0-9 -]{0,6}",
    ]
    .boxed()
}

/// What a part means, independently of the parser: Err(()) when it is not a CPU number
/// or an ascending range of them.
fn cpu_part_meaning(part: &str) -> Result<std::ops::RangeInclusive<usize>, ()> {
    let number = |t: &str| -> Result<usize, ()> {
        let t = t.trim();
        let digits = t.strip_prefix('+').unwrap_or(t);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(());
        }
        let n: u128 = digits.parse().map_err(|_| ())?;
        if n > MAX_CPU as u128 {
            return Err(());
        }
        Ok(n as usize)
    };
    match part.trim().split_once('-') {
        Some((lo, hi)) => {
            let (lo, hi) = (number(lo)?, number(hi)?);
            if lo > hi {
                return Err(());
            }
            Ok(lo..=hi)
        }
        None => number(part).map(|n| n..=n),
    }
}

fn check_cpu_list_error(text: &str, message: &str) {
    assert!(
        message.starts_with(&format!("invalid CPU list '{}': ", text.trim())),
        "{message}"
    );
    assert!(
        [
            "is not a CPU number",
            "exceeds the largest",
            "start exceeds its end"
        ]
        .iter()
        .any(|w| message.contains(w)),
        "{message}"
    );
}

proptest! {
    #![proptest_config(cases(STRINGS))]

    #[test]
    fn cpu_lists_never_panic_and_errors_quote_the_list(
        text in prop_oneof![any::<String>(), "[0-9, -]{0,24}", nasty()]
    ) {
        match parse_cpu_list(&text) {
            Ok(cpus) => {
                prop_assert!(cpus.windows(2).all(|w| w[0] < w[1]));
                prop_assert_eq!(parse_cpu_list(&format_cpu_list(&cpus)), Ok(cpus));
            }
            Err(message) => check_cpu_list_error(&text, &message),
        }
    }

    #[test]
    fn cpu_lists_mean_what_their_parts_say(parts in prop::collection::vec(cpu_part(), 1..6)) {
        let text = parts.join(",");
        let expected: Result<BTreeSet<usize>, String> = if text.trim().is_empty() {
            Ok(BTreeSet::new())
        } else {
            text.trim().split(',').try_fold(BTreeSet::new(), |mut set, part| {
                let range = cpu_part_meaning(part).map_err(|_| part.trim().to_string())?;
                set.extend(range);
                Ok(set)
            })
        };
        match (parse_cpu_list(&text), expected) {
            (Ok(cpus), Ok(set)) => prop_assert_eq!(cpus, set.into_iter().collect::<Vec<_>>()),
            (Err(message), Err(bad)) => {
                check_cpu_list_error(&text, &message);
                prop_assert!(message.contains(&format!(": '{bad}' ")), "{} should quote '{}'", message, bad);
            }
            (got, expected) => prop_assert!(false, "{text:?}: {got:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn cpu_sets_format_and_parse_back(cpus in prop::collection::vec(0usize..5000, 0..64)) {
        let set: Vec<usize> = cpus.iter().copied().collect::<BTreeSet<_>>().into_iter().collect();
        prop_assert_eq!(parse_cpu_list(&format_cpu_list(&cpus)), Ok(set));
    }
}

#[test]
fn cpu_lists_reach_the_limit_and_no_further() {
    assert_eq!(
        parse_cpu_list(&format!("0-{MAX_CPU}")).map(|c| c.len()),
        Ok(MAX_CPU + 1)
    );
    for bad in [
        format!("0-{}", MAX_CPU + 1),
        format!("{}", u64::MAX),
        "0-18446744073709551616".to_string(),
        "3-1".to_string(),
        "1,,2".to_string(),
        "-".to_string(),
        "1-2-3".to_string(),
    ] {
        let message = parse_cpu_list(&bad).unwrap_err();
        check_cpu_list_error(&bad, &message);
    }
}

// ---------------------------------------------------------------------------------------
// 3. perf event lists and groups: `counters::parse_event_list`.

const EVENT_NAMES: &[&str] = &[
    "cycles",
    "cpu-cycles",
    "instructions",
    "cache-misses",
    "branch-misses",
    "ref-cycles",
    "task-clock",
    "page-faults",
    "cs",
    "major-faults",
    "L1-dcache-load-misses",
    "L1-icache-loads",
    "LLC-loads",
    "LLC-store-misses",
    "dTLB-store-misses",
    "iTLB-load-misses",
    "node-prefetches",
    "branch-loads",
];

/// A valid event as typed, with its config when the test knows it.
fn valid_event() -> BoxedStrategy<(String, Option<u64>)> {
    let pmu_terms = (
        0u64..=0xfff,
        prop::option::of(0u64..=0xff),
        prop::option::of(0u64..=0xff),
        any::<(bool, bool, bool)>(),
        prop::sample::select(&["cpu", "cpu_core", "cpu_atom"][..]),
    )
        .prop_map(|(event, umask, cmask, (inv, edge, hex), pmu)| {
            let number = |n: u64| {
                if hex {
                    format!("{n:#x}")
                } else {
                    n.to_string()
                }
            };
            let mut terms = vec![format!("event={}", number(event))];
            let mut config = (event & 0xff) | ((event >> 8) << 32);
            if let Some(u) = umask {
                terms.push(format!("umask={}", number(u)));
                config |= u << 8;
            }
            if let Some(c) = cmask {
                terms.push(format!("cmask={}", number(c)));
                config |= c << 24;
            }
            if inv {
                terms.push("inv".into());
                config |= 1 << 23;
            }
            if edge {
                terms.push("edge=1".into());
                config |= 1 << 18;
            }
            terms.reverse();
            (format!("{pmu}/{}/", terms.join(",")), Some(config))
        });
    prop_oneof![
        prop::sample::select(EVENT_NAMES).prop_map(|n| (n.to_string(), None)),
        (any::<u64>(), any::<bool>()).prop_map(|(config, upper)| {
            let hex = if upper {
                format!("r{config:X}")
            } else {
                format!("r{config:x}")
            };
            (hex, Some(config))
        }),
        pmu_terms,
        prop::sample::select(&["cpu_core/cycles/", "cpu/LLC-load-misses/"][..])
            .prop_map(|n| (n.to_string(), None)),
    ]
    .boxed()
}

/// Pieces an event list is made of, for lists that are mostly almost right.
fn event_token() -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::sample::select(
            &[
                "cycles", "instructions", "LLC-loads", "{", "}", ",", ",", "/", "cpu/",
                "cpu_core/", "amd_l3/", "event=", "umask=", "cmask=", "inv", "edge", "name=",
                "name=x", "0x", "=", "r", " ", "{}", "-misses", "L1-dcache-", "0X",
            ][..]
        )
        .prop_map(String::from),
        1 => "[0-9a-fA-F]{1,40}",
        1 => "[0-9]{1,30}",
        1 => nasty(),
        1 => any::<char>().prop_map(String::from),
    ]
    .boxed()
}

fn check_event_error(err: &memscope::counters::EventParseError) {
    let message = err.to_string();
    assert!(
        message.starts_with(&format!("invalid event '{}' (", err.value)),
        "{message}"
    );
    assert!(!err.reason.is_empty() && message.contains("expected one of cycles"));
}

proptest! {
    #![proptest_config(cases(STRINGS))]

    #[test]
    fn event_lists_never_panic(
        text in prop_oneof![
            any::<String>(),
            prop::collection::vec(event_token(), 0..14).prop_map(|t| t.concat()),
        ]
    ) {
        match parse_event_list(&text) {
            Ok(groups) => {
                prop_assert!(!groups.is_empty());
                prop_assert!(groups.iter().all(|g| !g.is_empty()));
                prop_assert!(groups.iter().flatten().all(|e| !e.name.is_empty()));
            }
            Err(e) => check_event_error(&e),
        }
        if let Err(e) = Event::parse(&text) {
            check_event_error(&e);
            prop_assert_eq!(e.value, text.trim());
        }
    }

    #[test]
    fn valid_event_lists_parse_to_their_groups(
        groups in prop::collection::vec(
            (prop::collection::vec(valid_event(), 1..4), any::<bool>()), 1..5),
        spaces in any::<bool>(),
    ) {
        let sep = if spaces { ", " } else { "," };
        let text = groups
            .iter()
            .map(|(events, braced)| {
                let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
                if names.len() > 1 || *braced {
                    format!("{{{}}}", names.join(sep))
                } else {
                    names[0].to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(sep);
        let parsed = parse_event_list(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        // Ungrouped events of a group of one: one group each, as `perf stat` does.
        prop_assert_eq!(parsed.len(), groups.len(), "{}", text);
        for (got, (want, _)) in parsed.iter().zip(&groups) {
            prop_assert_eq!(got.len(), want.len());
            for (event, (name, config)) in got.iter().zip(want) {
                prop_assert_eq!(&event.name, name);
                if let Some(config) = config {
                    prop_assert_eq!(event.config, *config, "{}", name);
                    prop_assert_eq!(event.kind, EventKind::Raw);
                }
            }
        }
    }

    #[test]
    fn damaged_event_lists_are_refused_or_read_never_panic(
        groups in prop::collection::vec(valid_event(), 1..5),
        cuts in prop::collection::vec((any::<Index>(), prop::sample::select(&["", "{", "}", ",", "/", "=", "0x"][..])), 1..4),
    ) {
        let mut text = groups.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(",");
        for (at, with) in cuts {
            let mut at = at.index(text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            if with.is_empty() && at < text.len() {
                text.remove(at);
            } else {
                text.insert_str(at, with);
            }
        }
        if let Err(e) = parse_event_list(&text) {
            check_event_error(&e);
        }
    }

    #[test]
    fn huge_raw_and_pmu_numbers_are_refused(
        digits in "[1-9a-f][0-9a-f]{16,40}",
        term in prop::sample::select(&["event", "umask", "cmask"][..]),
    ) {
        let raw = Event::parse(&format!("r{digits}")).unwrap_err();
        check_event_error(&raw);
        prop_assert!(raw.reason.contains("at most 16 hex digits"), "{}", raw);
        let text = format!("cpu/event=1,{term}=0x{digits}/");
        let pmu = parse_event_list(&text).unwrap_err();
        check_event_error(&pmu);
        prop_assert!(pmu.reason.contains("is not a number from 0 to"), "{}", pmu);
    }
}

// ---------------------------------------------------------------------------------------
// 4. Sweep parameters (`sweep::template`) and the whole sweep plan (`SweepArgs::plan`).

/// What a range `A..B:STEP` means, in exact arithmetic: None when it is refused (not
/// ascending, a step below 1, more than MAX_VARIANTS values).
fn arithmetic_range(a: i64, b: i64, step: i64) -> Option<Vec<String>> {
    if a > b || step < 1 {
        return None;
    }
    let count = (i128::from(b) - i128::from(a)) / i128::from(step) + 1;
    (count <= MAX_VARIANTS as i128).then(|| {
        (0..count)
            .map(|i| (i128::from(a) + i * i128::from(step)).to_string())
            .collect()
    })
}

/// What a geometric range `A..B:*F` means: None when refused (not ascending, a first value
/// below 1, a factor below 2).
fn geometric_range(a: i64, b: i64, factor: i64) -> Option<Vec<String>> {
    if a > b || a < 1 || factor < 2 {
        return None;
    }
    let mut values = Vec::new();
    let mut v = i128::from(a);
    while v <= i128::from(b) {
        values.push(v.to_string());
        v *= i128::from(factor);
    }
    (values.len() <= MAX_VARIANTS).then_some(values)
}

/// Range ends and steps, biased to the edges of i64.
fn range_number() -> BoxedStrategy<i64> {
    prop_oneof![
        4 => -20i64..700,
        1 => any::<i64>(),
        1 => (i64::MAX - 600)..=i64::MAX,
        1 => i64::MIN..(i64::MIN + 600),
        1 => prop::sample::select(&[0, 1, 2, -1, i64::MAX, i64::MIN, 1 << 62, 3_037_000_499][..]),
    ]
    .boxed()
}

/// A parameter spec as typed: lists, ranges and junk.
fn parameter_spec() -> BoxedStrategy<String> {
    let name = prop::sample::select(&["A", "B", "RING", "_x1", "1X", "A B", "", "é"][..]);
    let value = prop_oneof![
        "[a-zA-Z0-9_.]{1,6}",
        (0u32..40).prop_map(|n| n.to_string()),
        nasty(),
    ];
    let values = prop_oneof![
        prop::collection::vec(value, 1..6).prop_map(|v| v.join(",")),
        (
            range_number(),
            range_number(),
            prop::option::of(range_number()),
            any::<bool>()
        )
            .prop_map(|(a, b, step, geometric)| match (step, geometric) {
                (None, _) => format!("{a}..{b}"),
                (Some(s), false) => format!("{a}..{b}:{s}"),
                (Some(s), true) => format!("{a}..{b}:*{s}"),
            }),
        (
            nasty(),
            nasty(),
            nasty(),
            prop::sample::select(&["..", "...", ":", ":*", ":**", ",", "..:*"][..])
        )
            .prop_map(|(a, b, c, sep)| format!("{a}{sep}{b}:{c}")),
        any::<String>(),
    ];
    prop_oneof![
        6 => (name, values).prop_map(|(n, v)| format!("{n}={v}")),
        1 => any::<String>(),
        1 => nasty(),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(cases(STRINGS))]

    #[test]
    fn parameters_never_panic_and_say_what_was_expected(spec in parameter_spec()) {
        match template::parse_parameter(&spec) {
            Ok(p) => {
                prop_assert!(template::is_name(&p.name));
                prop_assert!(!p.values.is_empty() && p.values.len() <= MAX_VARIANTS);
                prop_assert!(p.values.iter().all(|v| !v.is_empty()));
                let distinct: BTreeSet<&String> = p.values.iter().collect();
                prop_assert_eq!(distinct.len(), p.values.len());
            }
            Err(expected) => prop_assert!(!expected.trim().is_empty()),
        }
    }

    #[test]
    fn ranges_hold_exactly_their_values_at_any_magnitude(
        a in range_number(),
        b in prop_oneof![range_number(), (0i64..40)],
        step in prop::option::of(range_number()),
        offset_b in any::<bool>(),
    ) {
        // b: anywhere, or a few steps above a.
        let b = if offset_b { a.saturating_add(b.rem_euclid(40)) } else { b };
        let (spec, expected) = match step {
            None => (format!("N={a}..{b}"), arithmetic_range(a, b, 1)),
            Some(s) => (format!("N={a}..{b}:{s}"), arithmetic_range(a, b, s)),
        };
        match (template::parse_parameter(&spec), expected) {
            (Ok(p), Some(values)) => prop_assert_eq!(p.values, values, "{}", spec),
            (Err(e), None) => prop_assert!(!e.is_empty()),
            (got, expected) => prop_assert!(false, "{spec}: {got:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn geometric_ranges_hold_exactly_their_values_at_any_magnitude(
        a in range_number(),
        b in range_number(),
        factor in prop_oneof![-3i64..12, range_number()],
    ) {
        let spec = format!("N={a}..{b}:*{factor}");
        match (template::parse_parameter(&spec), geometric_range(a, b, factor)) {
            (Ok(p), Some(values)) => prop_assert_eq!(p.values, values, "{}", spec),
            (Err(e), None) => prop_assert!(!e.is_empty()),
            (got, expected) => prop_assert!(false, "{spec}: {got:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn placeholders_are_found_and_substituted_in_any_text(
        pieces in prop::collection::vec(prop_oneof![
            "[^{}$]{0,8}".prop_map(|s| (s, None)),
            prop::sample::select(&["A", "RING", "_x"][..]).prop_map(|n| (format!("{{{n}}}"), Some(n))),
            prop::sample::select(&["${A}", "{", "}", "{}", "{ A}", "{1A}", "$", "{{A}}"][..])
                .prop_map(|s| (s.to_string(), None)),
        ], 0..10),
        junk in any::<String>(),
    ) {
        // Arbitrary text: no panic, and an empty assignment changes nothing.
        let none = Assignment(Vec::new());
        prop_assert_eq!(template::substitute(&junk, &none), junk.clone());
        prop_assert!(template::placeholders(&junk).iter().all(|n| template::is_name(n)));
        // Text made of known pieces: every placeholder of a defined name replaced.
        let text: String = pieces.iter().map(|(s, _)| s.as_str()).collect();
        let values = Assignment(vec![
            ("A".into(), "1".into()),
            ("RING".into(), "16".into()),
            ("_x".into(), "{A}".into()),
        ]);
        let expected: String = pieces
            .iter()
            .enumerate()
            .map(|(i, (s, name))| {
                // A placeholder right after a '$' is shell syntax, left alone.
                let shell = i > 0 && pieces[i - 1].0.ends_with('$');
                match name {
                    Some(n) if !shell => values.value(n).unwrap().to_string(),
                    _ => s.clone(),
                }
            })
            .collect();
        let substituted = template::substitute(&text, &values);
        // Pieces can join into new placeholders ("{" + "A}"): only check the simple texts.
        if !pieces.iter().any(|(s, n)| n.is_none() && s.contains(['{', '}', '$'])) {
            prop_assert_eq!(substituted, expected);
        }
    }
}

/// A sweep's flags read by clap as `memscope sweep` reads them (the counts and the
/// duration are refused there, by their value parsers); the other flags are strings
/// `plan` checks.
#[allow(clippy::too_many_arguments)]
fn sweep_args(
    params: Vec<String>,
    benchmarks: Vec<String>,
    env: Vec<String>,
    metric: Vec<String>,
    runs: Option<String>,
    warmup: String,
    time_limit: String,
    effect: String,
    baseline: Option<String>,
) -> Result<SweepArgs, clap::Error> {
    use clap::{Args, FromArgMatches};
    let mut argv = vec!["sweep".to_string()];
    argv.extend(params.iter().map(|p| format!("--param={p}")));
    argv.extend(env.iter().map(|e| format!("--env={e}")));
    argv.extend(metric.iter().map(|m| format!("--metric={m}")));
    argv.extend(runs.map(|r| format!("--runs={r}")));
    argv.push(format!("--warmup={warmup}"));
    argv.push(format!("--time-limit={time_limit}"));
    argv.push(format!("--effect={effect}"));
    argv.extend(baseline.map(|b| format!("--baseline={b}")));
    argv.push("--".into());
    argv.extend(benchmarks);
    let matches =
        SweepArgs::augment_args(clap::Command::new("sweep")).try_get_matches_from(argv)?;
    SweepArgs::from_arg_matches(&matches)
}

/// A flag's good value and a hostile one: the named bad values, the nasty strings, or
/// anything at all.
fn good_and_hostile(
    good: &'static [&'static str],
    bad: &'static [&'static str],
) -> BoxedStrategy<(String, String)> {
    (
        prop::sample::select(good).prop_map(String::from),
        prop_oneof![
            2 => prop::sample::select(bad).prop_map(String::from),
            1 => nasty(),
            1 => any::<String>(),
        ],
    )
        .boxed()
}

/// The flags of `sweep`, in the order the property below makes one of them hostile.
const SWEEP_FLAGS: [&str; 9] = [
    "-p/--param",
    "BENCH",
    "--env",
    "--metric",
    "--runs",
    "--warmup",
    "--time-limit",
    "--effect",
    "--baseline",
];

proptest! {
    #![proptest_config(cases(PLANS))]

    /// Good flags with one of them (or none) hostile: the plan is made when none is,
    /// and refused naming the hostile flag otherwise, or made when the value happens to
    /// be good.
    #[test]
    fn sweep_plans_refuse_a_hostile_flag_naming_it(
        hostile in 0..=SWEEP_FLAGS.len(),
        good_params in prop::sample::subsequence(
            &["A=1,2,3", "B=x,y", "C=1..64:*2", "D=0..10:5", "E=7"][..], 1..=3),
        bad_param in parameter_spec(),
        bench in good_and_hostile(&["true {ALL}", "named=true {ALL}"], &[
            "'unbalanced {ALL}", "/nonexistent/program {ALL}", "true {Q} {ALL}", "", "=",
            "true", "a=b=c",
        ]),
        env in good_and_hostile(&["X=1", "Y=two words", "Z="], &["1X=2", "=", "V", "V={Q}"]),
        metric in good_and_hostile(
            &["ops=([0-9.]+)", "t:lower=time (\\d+)", "throughput=(\\d+) MB/s", "x=(?P<value>a)(b)"],
            &["x:sideways=(1)", "x=(", "x=none", "=(1)", "x=(a)(b)", "x=[", "x=(?P<v>1)(2)"],
        ),
        runs in good_and_hostile(&["1", "10", "10000", " 5 "], &["0", "10001", "-1", "1.5"]),
        warmup in good_and_hostile(&["0", "1", "100"], &["101", "-0", "1e2"]),
        time_limit in good_and_hostile(
            &["90s", "10m", "1h", "500ms", "168h", "2.5m", "45"],
            &["8d", "0s", "1e9h", "NaNs", "-1s", "infs", "ms", "1e-300s"],
        ),
        effect in good_and_hostile(&["2", "2%", "0.5", "99.99%"], &["0", "100", "NaN%", "-2", "inf"]),
        baseline in good_and_hostile(&["1"], &["2", "A=9", "A=1,B=q", "Z=1", ",", "="]),
    ) {
        let pick = |i: usize, (good, bad): &(String, String)| if hostile == i { bad.clone() } else { good.clone() };
        let mut params: Vec<String> = good_params.iter().map(|p| p.to_string()).collect();
        if hostile == 0 {
            params.insert(0, bad_param);
        }
        // {ALL}: a placeholder for every parameter that reads, so that the plan gets as
        // far as the hostile flag.
        let all: Vec<String> = params
            .iter()
            .filter_map(|p| template::parse_parameter(p).ok())
            .map(|p| format!("{{{}}}", p.name))
            .collect();
        let bench = pick(1, &bench).replace("{ALL}", &all.join(" "));
        let runs = (hostile == 4 || runs.0 != " 5 ").then(|| pick(4, &runs));
        let baseline = (hostile == 8).then(|| pick(8, &baseline));
        let args = sweep_args(
            params,
            vec![bench],
            vec![pick(2, &env)],
            vec![pick(3, &metric)],
            runs,
            pick(5, &warmup),
            pick(6, &time_limit),
            pick(7, &effect),
            baseline,
        );
        let flag = SWEEP_FLAGS.get(hostile).copied().unwrap_or("");
        let args = match args {
            Ok(args) => args,
            Err(e) => {
                // Refused by clap: a count or the duration, named as `main` names it.
                use clap::error::{ContextKind, ErrorKind};
                let named = e.get(ContextKind::InvalidArg).map(|a| a.to_string()).unwrap_or_default();
                prop_assert_eq!(e.kind(), ErrorKind::ValueValidation, "{}", e);
                prop_assert!(named.starts_with(flag) && !flag.is_empty(), "{} should name {}", e, flag);
                return Ok(());
            }
        };
        match args.plan() {
            Ok(plan) => {
                let count: usize = plan.parameters.iter().map(|p| p.values.len()).product();
                prop_assert!(!plan.parameters.is_empty());
                prop_assert_eq!(plan.variants.len(), count);
                prop_assert!(count <= MAX_VARIANTS);
                prop_assert!(plan.baseline < plan.variants.len());
                prop_assert!(plan.effect_pct > 0.0 && plan.effect_pct < 100.0);
            }
            Err(e) => {
                let message = e.to_string();
                prop_assert!(hostile < SWEEP_FLAGS.len(), "good flags refused: {}", message);
                prop_assert!(matches!(e, UsageError::InvalidValue { .. }), "{}", message);
                // A benchmark that uses no placeholder leaves the parameters unused: that
                // is said of them.
                let named = |f: &str| message.contains(&format!(" for {f}: expected "));
                prop_assert!(
                    named(flag) || (flag == "BENCH" && named("-p/--param")),
                    "{} should name {}", message, flag
                );
            }
        }
    }

    #[test]
    fn products_of_parameters_are_capped_and_never_overflow(
        counts in prop::collection::vec(prop_oneof![1usize..5, 500usize..=MAX_VARIANTS], 1..10),
    ) {
        let names: Vec<String> = (0..counts.len()).map(|i| format!("P{i}")).collect();
        let params: Vec<String> = names
            .iter()
            .zip(&counts)
            .map(|(name, &n)| format!("{name}=1..{n}"))
            .collect();
        let bench = format!(
            "true {}",
            names.iter().map(|n| format!("{{{n}}}")).collect::<Vec<_>>().join(" ")
        );
        let product = counts.iter().try_fold(1usize, |p, &n| p.checked_mul(n));
        let args = sweep_args(
            params, vec![bench], vec![], vec![], None, "1".into(), "5m".into(), "2".into(), None,
        ).unwrap();
        match (args.plan(), product.filter(|&p| p <= MAX_VARIANTS)) {
            (Ok(plan), Some(n)) => prop_assert_eq!(plan.variants.len(), n),
            (Err(e), None) => prop_assert!(
                e.to_string().contains(&format!("at most {MAX_VARIANTS} variants")),
                "{}", e
            ),
            (got, want) => prop_assert!(false, "{counts:?}: {:?}, expected {want:?}", got.map(|p| p.variants.len())),
        }
    }
}

#[test]
fn a_sweep_without_parameters_is_refused_not_a_panic() {
    let flags = |params: Vec<String>| {
        let (once, limit, effect) = ("1".into(), "5m".into(), "2".into());
        let bench = vec!["true".into()];
        sweep_args(
            params,
            bench,
            vec![],
            vec![],
            None,
            once,
            limit,
            effect,
            Some("1".into()),
        )
    };
    // clap requires the flag; a plan made without one (from code) is refused as well.
    let refused = flags(vec![]).unwrap_err().to_string();
    assert!(refused.contains("--param"), "{refused}");
    let mut args = flags(vec!["A=1,2".into()]).unwrap();
    args.params.clear();
    let e = args.plan().unwrap_err().to_string();
    assert!(e.contains("-p/--param"), "{e}");
}

// ---------------------------------------------------------------------------------------
// The other list-valued flags: `files --sizes`, `--threads`, counts, `numa --threads`,
// `--pages`.

proptest! {
    #![proptest_config(cases(STRINGS))]

    #[test]
    fn other_flag_lists_never_panic_and_errors_quote_the_value(
        text in prop_oneof![
            any::<String>(),
            nasty(),
            "[0-9]{1,4}[KMG]?\\.\\.[0-9]{1,4}[KMG]?(:\\*[0-9]{1,25})?",
            "[0-9KMGall, ]{0,12}",
        ],
        available in 1usize..300,
    ) {
        use memscope::experiments::files::params::parse_sizes;
        use memscope::experiments::params::{parse_count, parse_thread_counts};
        let quoted = |e: &UsageError| {
            let m = e.to_string();
            assert!(m.contains("expected") || m.starts_with("invalid size '"), "{m}");
            m
        };
        match parse_sizes("--sizes", &text) {
            Ok(sizes) => {
                prop_assert!(!sizes.is_empty());
                prop_assert!(sizes.windows(2).all(|w| w[0] < w[1]));
                prop_assert!(sizes.iter().all(|s| s % (4 * KIB) == 0 && *s <= 64 * GIB));
            }
            Err(e) => { quoted(&e); }
        }
        match parse_thread_counts(&text, available) {
            Ok(counts) => prop_assert!(counts.iter().all(|c| (1..=available).contains(c))),
            Err(e) => prop_assert!(quoted(&e).contains("--threads")),
        }
        let quote = format!("'{text}'");
        match parse_count("--runs", &text, 1, 1000) {
            Ok(n) => prop_assert!((1..=1000).contains(&n)),
            Err(e) => prop_assert!(quoted(&e).contains(&quote)),
        }
        if let Err(e) = memscope::experiments::numa::NodeThreads::parse(&text) {
            prop_assert!(quoted(&e).contains(&quote));
        }
        if let Err(e) = memscope::platform::arena::PagePolicy::parse(&text) {
            prop_assert!(quoted(&e).contains(&quote));
        }
    }

    #[test]
    fn size_ranges_with_any_factor_end(
        first in 1u64..(64 << 20),
        last in 1u64..(64 << 20),
        factor in prop_oneof![0u64..5, any::<u64>(), (u64::MAX / 4096 - 4)..=u64::MAX],
    ) {
        use memscope::experiments::files::params::parse_sizes;
        let text = format!("{first}K..{last}K:*{factor}");
        let quote = format!("'{text}'");
        // Sizes are rounded up to whole 4 KiB pages.
        let (first, last) = ((first * KIB).next_multiple_of(4 * KIB), (last * KIB).next_multiple_of(4 * KIB));
        match parse_sizes("--sizes", &text) {
            Ok(sizes) => {
                prop_assert!(factor >= 2 && first <= last);
                prop_assert!(sizes.len() <= 64);
                prop_assert_eq!(sizes[0], first);
                prop_assert!(*sizes.last().unwrap() <= last);
            }
            Err(e) => {
                prop_assert!(factor < 2 || first > last, "{}: {}", text, e);
                prop_assert!(e.to_string().contains(&quote));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// What the kernel hands memscope, parsed as text or bytes: /proc/PID/smaps, /proc/meminfo,
// sysfs sizes, choices, distances and PMU formats, /proc/cpuinfo, perf sample records.

/// smaps-like text: mappings (a header line, mostly ascending, then its fields) with
/// numbers at the extremes, and lines of anything.
fn smaps_like() -> BoxedStrategy<String> {
    let header = (
        any::<u64>(),
        prop_oneof![3 => (0u64..1 << 30).prop_map(Some), 1 => Just(None)],
        any::<u64>(),
        "[-r][-w][-x][ps]",
        any::<u32>(),
        "[ a-z/\\[\\]]{0,12}",
    )
        .prop_map(|(a, len, b, perms, inode, path)| {
            let b = len.map_or(b, |len| a.saturating_add(len));
            format!("{a:x}-{b:x} {perms} 00000000 00:00 {inode} {path}")
        });
    let field = (
        prop::sample::select(
            &[
                "Rss",
                "Referenced",
                "Anonymous",
                "AnonHugePages",
                "Shared_Hugetlb",
                "Private_Hugetlb",
                "KernelPageSize",
                "Size",
                "MemTotal",
                "Node 0 MemFree",
                "HugePages_Total",
            ][..],
        ),
        prop_oneof![
            2 => any::<u64>().prop_map(|n| n.to_string()),
            1 => (u64::MAX - 2..=u64::MAX).prop_map(|n| n.to_string()),
            1 => nasty(),
        ],
        prop::sample::select(&["kB", "", "KB", "mB"][..]),
    )
        .prop_map(|(key, n, unit)| format!("{key}: {n} {unit}"));
    let block = (
        header,
        prop::collection::vec(prop_oneof![4 => field, 1 => any::<String>()], 0..8),
    )
        .prop_map(|(h, fields)| format!("{h}\n{}", fields.join("\n")));
    prop::collection::vec(block, 0..4)
        .prop_map(|b| b.join("\n"))
        .boxed()
}

proptest! {
    #![proptest_config(cases(STRINGS))]

    #[test]
    fn kernel_text_never_panics(text in prop_oneof![smaps_like(), any::<String>()], start in any::<usize>(), end in any::<usize>()) {
        use memscope::topology::{caches, cpu, memory, numa, smaps};
        for m in smaps::parse_smaps(&text) {
            prop_assert!(m.start <= m.end);
            let _ = (m.label(), m.is_anonymous());
        }
        let _ = memory::parse_smaps_anon_huge_bytes(&text, start, end);
        for field in ["MemTotal", "MemFree", "HugePages_Total", ""] {
            let _ = memory::parse_meminfo_field(&text, field);
        }
        let _ = memory::parse_bracketed_choice(&text);
        let _ = memory::parse_hugepages_dir_name(&text);
        let _ = numa::parse_distances(&text);
        let _ = caches::parse_sysfs_size(&text);
        let _ = cpu::identity(&text);
        let _ = memscope::topology::cpuinfo_field(&text, "model name");
        if let Err(why) = memscope::pages::pmu::spe::sysfs::parse_format(&text) {
            prop_assert!(why.starts_with("unreadable PMU format '"), "{}", why);
        }
    }

    #[test]
    fn perf_records_of_any_bytes_never_panic(
        sample_type in prop_oneof![any::<u64>(), 0u64..(1 << 20)],
        record in prop::collection::vec(any::<u8>(), 0..200),
        kind in prop::sample::select(&[9u32, 2, 13, 5, 6, 1, 0][..]),
    ) {
        use memscope::pages::pmu::record::parse_record;
        let mut record = record;
        if record.len() >= 4 {
            record[..4].copy_from_slice(&kind.to_le_bytes());
        }
        if let Err(why) = parse_record(sample_type, &record) {
            prop_assert!(why.len() > 10, "{}", why);
        }
    }
}

// ---------------------------------------------------------------------------------------
// 5. JSON reports read back by `compare` (`report::read::parse_report`), and the
// comparison, its sections and its renderings made of whatever reads.

/// A real report: its JSON, as it reads, and the JSON pointers of every node and of every
/// number in it (computed once: each case edits a copy).
struct RealReport {
    value: Value,
    loaded: Loaded,
    all: Vec<String>,
    numbers: Vec<String>,
}

impl RealReport {
    fn new(name: &str, value: Value) -> RealReport {
        let bytes = serde_json::to_vec(&value).unwrap();
        let report = parse_report(Path::new(name), &bytes).expect("a real report reads");
        let (mut all, mut numbers) = (Vec::new(), Vec::new());
        pointers(&value, &mut String::new(), &mut all, &mut numbers);
        RealReport {
            value,
            loaded: Loaded {
                file: name.to_string(),
                report,
            },
            all,
            numbers,
        }
    }

    /// A node's pointer: of any node, or of a number when `number`.
    fn pointer(&self, at: &Index, number: bool) -> &str {
        let pool = if number { &self.numbers } else { &self.all };
        &pool[at.index(pool.len())]
    }
}

/// This machine with no experiment (`Report::new`).
fn bare_report() -> &'static RealReport {
    static BARE: OnceLock<RealReport> = OnceLock::new();
    BARE.get_or_init(|| {
        let machine = memscope::topology::detect().expect("this machine is described");
        let value = serde_json::to_value(Report::new(machine, Default::default())).unwrap();
        RealReport::new("bare.json", value)
    })
}

/// A measured report: the shared quick latency ladder (`util::latency_report`), a stride
/// study and a `stat` run.
fn measured_report() -> &'static RealReport {
    static MEASURED: OnceLock<RealReport> = OnceLock::new();
    MEASURED.get_or_init(|| {
        let mut measured = read_json(&latency_report().json);
        let dir = temp_dir();
        let stride = dir.path().join("stride.json");
        let stat = dir.path().join("stat.json");
        {
            let _one_at_a_time = exclusive();
            memscope(&["stride", "--quick", "--max-size", "8M", "--json"])
                .arg(&stride)
                .assert()
                .success();
        }
        memscope(&["stat", "--json"])
            .arg(&stat)
            .args(["--", "true"])
            .assert()
            .success();
        measured["experiments"]["stride"] = read_json(&stride)["experiments"]["stride"].clone();
        measured["stat"] = read_json(&stat)["stat"].clone();
        RealReport::new("measured.json", measured)
    })
}

/// Every report that reads goes through what `compare` and `history` do with it: its
/// figures, the comparison with a real report (both ways, and grouped by CPU model), the
/// comparison's sections, and their terminal, CSV, JSON and HTML renderings.
fn compare_everything(name: &str, report: Report, real: &RealReport) {
    let _ = report.figures();
    let real = real.loaded.clone();
    let mine = Loaded {
        file: name.into(),
        report,
    };
    for (runs, grouped) in [
        (vec![real.clone(), mine.clone()], false),
        (vec![mine.clone(), mine, real], true),
    ] {
        let comparison = compare::compare(&runs, grouped, vec!["a note".into()]);
        let _ = comparison.counts();
        let sections = compare::view::sections(&comparison, &runs);
        let _ = compare::view::headlines(&comparison);
        let _ = compare::view::summary_line(&comparison).to_plain();
        let _ = memscope::render::terminal::render(&sections, true);
        let _ = memscope::render::csv::render(&sections);
        let _ =
            memscope::render::json::to_bytes(&compare::CompareDocument::new(comparison.clone()));
        let _ = memscope::render::html::render(&memscope::render::html::Page {
            title: "t".into(),
            generator: "g".into(),
            heading: "h".into(),
            byline: memscope::view::Text::plain("b"),
            stamp: None,
            glance: Vec::new(),
            sections: sections.iter().collect(),
            footer: "f".into(),
        });
    }
}

/// Reads `bytes` as the report `name`; a refusal must name the file and say why.
fn read_and_compare(name: &str, bytes: &[u8], real: &RealReport) -> Result<(), String> {
    match parse_report(Path::new(name), bytes) {
        Ok(report) => {
            compare_everything(name, report, real);
            Ok(())
        }
        Err(e) => {
            let message = e.to_string();
            assert!(message.contains(name), "{message}");
            assert!(message.len() > name.len() + 20, "{message}");
            Err(message)
        }
    }
}

/// A JSON value of any shape.
fn any_json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop::sample::select(&[1e308, -1e308, 5e-324, -0.0, 0.5, 1.5e19][..]).prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        nasty().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

/// Values that go where a report's numbers, strings, lists and objects go.
fn hostile_value() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => prop::sample::select(vec![
            json!(null), json!(true), json!(-1), json!(0), json!(1), json!(-1e308),
            json!(1e308), json!(5e-324), json!(-5e-324), json!(1.7976931348623157e308),
            json!(u64::MAX), json!(i64::MIN), json!(u32::MAX), json!(4294967296u64),
            json!(0.1), json!(-0.0), json!("NaN"), json!("inf"), json!("-Infinity"),
            json!("1e999"), json!(""), json!("x"), json!([]), json!({}), json!([1e308]),
            json!([null]), json!({"tool": {"name": "memscope"}}),
        ]),
        1 => any_json(),
    ]
    .boxed()
}

#[derive(Debug, Clone)]
enum Edit {
    /// Delete the field or element.
    Delete,
    /// Put this value there.
    Replace(Value),
    /// A number there times this (huge, tiny, negative, zero).
    Scale(f64),
    /// An array there: its first element repeated, or emptied.
    Repeat(usize),
}

fn edit() -> BoxedStrategy<Edit> {
    prop_oneof![
        2 => Just(Edit::Delete),
        4 => hostile_value().prop_map(Edit::Replace),
        3 => prop::sample::select(&[0.0, -1.0, 1e300, -1e300, 1e-300, 1e10, 0.5, 2.0][..]).prop_map(Edit::Scale),
        1 => prop::sample::select(&[0usize, 2, 50][..]).prop_map(Edit::Repeat),
    ]
    .boxed()
}

/// The JSON pointers of every node under `value`, and of its numbers.
fn pointers(value: &Value, prefix: &mut String, all: &mut Vec<String>, numbers: &mut Vec<String>) {
    let mut visit = |step: &str, v: &Value, prefix: &mut String| {
        let len = prefix.len();
        prefix.push('/');
        prefix.push_str(&step.replace('~', "~0").replace('/', "~1"));
        all.push(prefix.clone());
        pointers(v, prefix, all, numbers);
        prefix.truncate(len);
    };
    match value {
        Value::Object(map) => map.iter().for_each(|(k, v)| visit(k, v, prefix)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, v)| visit(&i.to_string(), v, prefix)),
        Value::Number(_) => numbers.push(prefix.clone()),
        _ => {}
    }
}

/// Applies `edit` at `pointer` under `root`; a pointer an earlier edit made stale is
/// passed over.
fn apply(root: &mut Value, pointer: &str, edit: &Edit) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    let Some(parent) = root.pointer_mut(parent) else {
        return;
    };
    if let Edit::Delete = edit {
        match parent {
            Value::Object(map) => {
                map.remove(&last);
            }
            Value::Array(items) => {
                if let Some(i) = last.parse::<usize>().ok().filter(|&i| i < items.len()) {
                    items.remove(i);
                }
            }
            _ => {}
        }
        return;
    }
    let Some(target) = (match parent {
        Value::Object(map) => map.get_mut(&last),
        Value::Array(items) => last.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
        _ => None,
    }) else {
        return;
    };
    match edit {
        Edit::Delete => {}
        Edit::Replace(v) => *target = v.clone(),
        Edit::Scale(f) => {
            if let Some(n) = target.as_f64() {
                *target = Value::from(n * f);
            }
        }
        Edit::Repeat(n) => repeat(target, *n),
    }
}

/// An array's first element repeated `n` times more, or the array emptied when `n` is 0.
fn repeat(target: &mut Value, n: usize) {
    if let Value::Array(items) = target {
        match items.first().cloned() {
            Some(first) if n > 0 => items.extend(std::iter::repeat_n(first, n)),
            _ => items.clear(),
        }
    }
}

proptest! {
    #![proptest_config(cases(STRINGS))]

    #[test]
    fn any_bytes_are_refused_naming_the_file(bytes in prop_oneof![
        any::<Vec<u8>>(),
        any::<String>().prop_map(String::into_bytes),
        (any::<Index>(), any::<Vec<u8>>()).prop_map(|(at, tail)| {
            let real = serde_json::to_vec(&bare_report().value).unwrap();
            let mut bytes = real[..at.index(real.len())].to_vec();
            bytes.extend(tail);
            bytes
        }),
    ]) {
        // A refusal names the file (checked by the helper); a tail that happens to close
        // the real report's prefix reads, and is compared like any report.
        let _ = read_and_compare("bytes.json", &bytes, bare_report());
    }
}

proptest! {
    #![proptest_config(cases(REPORTS))]

    #[test]
    fn json_of_any_shape_is_refused_or_compared(
        value in any_json(),
        dressed in any::<bool>(),
        version in prop::sample::select(vec![json!(1), json!(2), json!(3), json!(-1), json!(2.0), json!("2")]),
    ) {
        // Dressed as a report, so that the checks past the tool's name see it too.
        let value = match (dressed, value) {
            (true, Value::Object(mut map)) => {
                map.insert("tool".into(), json!({"name": "memscope", "version": "0"}));
                map.insert("schema_version".into(), version);
                Value::Object(map)
            }
            (_, value) => value,
        };
        let _ = read_and_compare("shape.json", &serde_json::to_vec(&value).unwrap(), bare_report());
    }

    #[test]
    fn real_reports_mutated_at_random_are_refused_or_compared(
        measured in any::<bool>(),
        edits in prop::collection::vec((any::<Index>(), any::<bool>(), edit()), 1..5),
        cut in prop::option::weighted(0.15, any::<Index>()),
    ) {
        let real = if measured { measured_report() } else { bare_report() };
        let mut value = real.value.clone();
        for (at, on_a_number, edit) in &edits {
            apply(&mut value, real.pointer(at, *on_a_number), edit);
        }
        let mut bytes = serde_json::to_vec(&value).unwrap();
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len()));
            let refused = read_and_compare("mutated.json", &bytes, real);
            prop_assert!(refused.is_err_and(|m| m.contains("not JSON")));
        } else {
            let _ = read_and_compare("mutated.json", &bytes, real);
        }
    }
}

/// A value of the same JSON type as the one it replaces, at an extreme: so that most
/// mutated reports still read, and the comparison and its views meet the extremes.
#[derive(Debug, Clone)]
enum Typed {
    Float(f64),
    Unsigned(u64),
    Text(String),
    /// An array: emptied (0), or its first element repeated n times.
    Repeat(usize),
    Flip,
}

fn typed() -> BoxedStrategy<Typed> {
    prop_oneof![
        4 => prop::sample::select(&[
            0.0, -0.0, -1.0, 1e308, -1e308, f64::MAX, f64::MIN_POSITIVE, 5e-324, 1e-300, 1e15,
            0.5, 3.0, 1e19, -1e19,
        ][..]).prop_map(Typed::Float),
        3 => prop::sample::select(&[
            0u64, 1, 2, 3, 7, 64, 4096, 65535, u32::MAX as u64, 1 << 40, i64::MAX as u64,
            u64::MAX,
        ][..]).prop_map(Typed::Unsigned),
        1 => prop_oneof![
            prop::sample::select(&["", "x", "\u{0}", "<script>alert(1)</script>", "é", "-", "NaN",
                "2026-11-26T13:05:00Z", "L1d", "L2", "L3", "DRAM", "read", "2m", "thp"][..])
                .prop_map(String::from),
            any::<String>(),
            Just("長".repeat(5000)),
        ].prop_map(Typed::Text),
        1 => prop::sample::select(&[0usize, 1, 3, 40][..]).prop_map(Typed::Repeat),
        1 => Just(Typed::Flip),
    ]
    .boxed()
}

/// Applies a typed edit at `pointer` when the value there is of the edit's type.
fn apply_typed(root: &mut Value, pointer: &str, edit: &Typed) {
    let Some(node) = root.pointer_mut(pointer) else {
        return;
    };
    match (edit, &mut *node) {
        (Typed::Float(f), Value::Number(n)) if n.is_f64() => *node = Value::from(*f),
        (Typed::Unsigned(u), Value::Number(n)) if !n.is_f64() => *node = Value::from(*u),
        (Typed::Text(t), Value::String(_)) => *node = Value::from(t.as_str()),
        (Typed::Repeat(n), Value::Array(_)) => repeat(node, *n),
        (Typed::Flip, Value::Bool(b)) => *b = !*b,
        _ => {}
    }
}

proptest! {
    #![proptest_config(cases(REPORTS))]

    #[test]
    fn real_reports_with_extreme_values_are_refused_or_compared(
        edits in prop::collection::vec((any::<Index>(), any::<bool>(), typed()), 1..24),
    ) {
        let real = measured_report();
        let mut value = real.value.clone();
        for (at, on_a_number, edit) in &edits {
            apply_typed(&mut value, real.pointer(at, *on_a_number), edit);
        }
        let _ = read_and_compare("extreme.json", &serde_json::to_vec(&value).unwrap(), real);
    }
}

// ---------------------------------------------------------------------------------------
// 6. ELF and DWARF files read by `footprint` (`binary::elf::read`,
// `binary::dwarf::variables`, and `binary::footprint` on files).

const C_PROGRAM: &str = r#"
#include <stddef.h>
struct tcache { char tag; long count; int flags; };
struct bits { unsigned int ready : 1; unsigned int level : 3; char c; unsigned int wide : 20; };
struct node { struct node *next; int (*fn)(int, ...); const volatile long v[3][4]; };
union u { int i; float f; };
typedef unsigned long counter_t;
enum color { RED, GREEN = 5 };
__thread struct tcache tcache;
__thread void *ring[7][16];
static struct bits table[5];
struct node head;
union u un;
counter_t hits = 3;
enum color paint;
const char *const banner = "x";
char flexible[];
size_t total;
int main(void) {
    static int calls;
    calls++;
    table[0].level = calls;
    tcache.count = (long)ring[0][0] + (long)hits + (long)total + banner[0] + un.i + paint;
    return head.next != 0;
}
"#;

/// An ELF file to damage, and the byte ranges worth damaging in it (headers, program and
/// section headers, the symbol and string tables, each .debug_* section).
struct Seed {
    name: String,
    bytes: Vec<u8>,
    regions: Vec<(String, std::ops::Range<usize>)>,
}

fn regions_of(bytes: &[u8]) -> Vec<(String, std::ops::Range<usize>)> {
    use object::read::elf::{ElfFile64, FileHeader};
    use object::{Object, ObjectSection};
    let mut regions = vec![("whole file".to_string(), 0..bytes.len())];
    let Ok(file) = ElfFile64::<object::Endianness>::parse(bytes) else {
        return regions;
    };
    let endian = file.endian();
    let header = file.elf_header();
    let range = |start: u64, len: u64| {
        let start = start as usize;
        start..(start + len as usize).min(bytes.len())
    };
    regions.push(("ELF header".into(), 0..64));
    regions.push((
        "program headers".into(),
        range(
            header.e_phoff(endian),
            u64::from(header.e_phnum(endian)) * u64::from(header.e_phentsize(endian)),
        ),
    ));
    regions.push((
        "section headers".into(),
        range(
            header.e_shoff(endian),
            u64::from(header.e_shnum(endian)) * u64::from(header.e_shentsize(endian)),
        ),
    ));
    for section in file.sections() {
        let name = section.name().unwrap_or("");
        let wanted = name.starts_with(".debug")
            || name.starts_with(".zdebug")
            || name.starts_with(".rela.debug")
            || [
                ".symtab",
                ".strtab",
                ".dynsym",
                ".dynstr",
                ".tdata",
                ".shstrtab",
            ]
            .contains(&name);
        if let (true, Some((offset, size))) = (wanted, section.file_range()) {
            if size > 0 {
                regions.push((name.to_string(), range(offset, size)));
            }
        }
    }
    regions
}

/// The C program compiled with DWARF 5, as an object file (relocations applied to its
/// DWARF), with DWARF 4 and compressed sections; and /bin/true (stripped). Missing seeds
/// (no C compiler, no -gz) are left out.
fn seeds() -> &'static [Seed] {
    static SEEDS: OnceLock<Vec<Seed>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let dir = temp_dir();
        let source = dir.path().join("prog.c");
        std::fs::write(&source, C_PROGRAM).unwrap();
        let mut files: Vec<(String, PathBuf)> = Vec::new();
        for (name, args) in [
            ("prog-dwarf5", &["-w", "-g", "-gdwarf-5", "-O0"][..]),
            ("prog.o", &["-w", "-g", "-c", "-O1"][..]),
            (
                "prog-dwarf4-gz",
                &["-w", "-g", "-gdwarf-4", "-gz=zlib", "-O0"][..],
            ),
        ] {
            let out = dir.path().join(name);
            let built = std::process::Command::new("cc")
                .args(args)
                .arg("-o")
                .arg(&out)
                .arg(&source)
                .status()
                .is_ok_and(|s| s.success());
            if built {
                files.push((name.to_string(), out));
            } else {
                eprintln!("note: cc {args:?} failed; that seed is left out");
            }
        }
        files.push(("true".to_string(), PathBuf::from("/bin/true")));
        files
            .into_iter()
            .filter_map(|(name, path)| {
                let bytes = std::fs::read(&path).ok()?;
                let regions = regions_of(&bytes);
                Some(Seed {
                    name,
                    bytes,
                    regions,
                })
            })
            .collect()
    })
}

/// What `footprint` does with a file's bytes: its ELF facts and DWARF variables. Neither
/// may panic; an error is a sentence.
fn read_elf_and_dwarf(bytes: &[u8]) {
    if let Err(why) = binary::elf::read(bytes) {
        assert!(why.len() > 10, "{why}");
    }
    if let Err(why) = binary::dwarf::variables(bytes) {
        assert!(why.len() > 10, "{why}");
    }
}

#[derive(Debug, Clone)]
enum Damage {
    Xor(u8),
    /// Little-endian `value` in `width` bytes: sizes, counts and offsets at their extremes.
    Set(u64, usize),
}

fn damage() -> BoxedStrategy<Damage> {
    prop_oneof![
        2 => (1u8..=255).prop_map(Damage::Xor),
        1 => (
            prop::sample::select(&[0u64, 1, 0x7f, 0x80, 0xff, 0xffff, 0x7fff_ffff, 0xffff_ffff, u64::MAX, 1 << 63][..]),
            prop::sample::select(&[1usize, 2, 4, 8][..]),
        )
            .prop_map(|(v, w)| Damage::Set(v, w)),
    ]
    .boxed()
}

fn damage_at(bytes: &mut [u8], at: usize, damage: &Damage) {
    match *damage {
        Damage::Xor(x) => bytes[at] ^= x,
        Damage::Set(value, width) => {
            let end = (at + width).min(bytes.len());
            bytes[at..end].copy_from_slice(&value.to_le_bytes()[..end - at]);
        }
    }
}

fn machine() -> &'static Machine {
    static MACHINE: OnceLock<Machine> = OnceLock::new();
    MACHINE.get_or_init(|| memscope::topology::detect().unwrap())
}

/// `binary::footprint` on a file holding `bytes`: a result that renders, or an error that
/// names the file.
fn footprint_file(bytes: &[u8]) {
    let dir = temp_dir();
    let path = dir.path().join("damaged.elf");
    std::fs::write(&path, bytes).unwrap();
    let plan = FootprintPlan {
        binary: path.to_str().unwrap().to_string(),
        pid: None,
        threads: 1 << 20,
        top: 100_000,
        measured: None,
        debug_root: binary::debuginfo::DEFAULT_DEBUG_ROOT.into(),
    };
    match binary::footprint(&plan, machine()) {
        Ok(result) => {
            let _ = result.tls_total_bytes();
            let _ = memscope::render::terminal::render(&[result.section()], true);
        }
        Err(e) => {
            let message = e.to_string();
            assert!(message.contains(&plan.binary), "{message}");
        }
    }
}

proptest! {
    #![proptest_config(cases(ELVES))]

    #[test]
    fn truncated_elf_files_are_refused_or_read(which in any::<Index>(), at in any::<Index>()) {
        let seed = &seeds()[which.index(seeds().len())];
        let cut = at.index(seed.bytes.len());
        read_elf_and_dwarf(&seed.bytes[..cut]);
        if cut < 64 {
            prop_assert!(binary::elf::read(&seed.bytes[..cut]).is_err(), "{}", seed.name);
        }
    }

    #[test]
    fn damaged_elf_files_are_refused_or_read(
        which in any::<Index>(),
        hits in prop::collection::vec((any::<Index>(), any::<Index>(), damage()), 1..6),
    ) {
        let seed = &seeds()[which.index(seeds().len())];
        let mut bytes = seed.bytes.clone();
        for (region, at, damage) in &hits {
            let (_, range) = &seed.regions[region.index(seed.regions.len())];
            if range.is_empty() {
                continue;
            }
            damage_at(&mut bytes, range.start + at.index(range.len()), damage);
        }
        read_elf_and_dwarf(&bytes);
    }
}

proptest! {
    #![proptest_config(cases(32))]

    #[test]
    fn footprint_names_the_file_it_cannot_read(
        which in any::<Index>(),
        at in any::<Index>(),
        hits in prop::collection::vec((any::<Index>(), any::<Index>(), damage()), 0..4),
    ) {
        let seed = &seeds()[which.index(seeds().len())];
        let mut bytes = seed.bytes.clone();
        for (region, at, damage) in &hits {
            let (_, range) = &seed.regions[region.index(seed.regions.len())];
            if !range.is_empty() {
                damage_at(&mut bytes, range.start + at.index(range.len()), damage);
            }
        }
        if hits.is_empty() {
            bytes.truncate(at.index(bytes.len()));
        }
        footprint_file(&bytes);
    }

    #[test]
    fn this_test_binary_truncated_is_refused_or_read(at in any::<Index>()) {
        let me = this_binary();
        let cut = at.index(me.len());
        if let Err(why) = binary::elf::read(&me[..cut]) {
            prop_assert!(why.len() > 10);
        }
    }
}

fn this_binary() -> &'static [u8] {
    static ME: OnceLock<Vec<u8>> = OnceLock::new();
    ME.get_or_init(|| std::fs::read(std::env::current_exe().unwrap()).unwrap())
}

#[test]
fn the_elf_seeds_read_whole() {
    let seeds = seeds();
    assert!(seeds.iter().any(|s| s.name == "true"));
    for seed in seeds {
        binary::elf::read(&seed.bytes).unwrap_or_else(|e| panic!("{}: {e}", seed.name));
        let variables =
            binary::dwarf::variables(&seed.bytes).unwrap_or_else(|e| panic!("{}: {e}", seed.name));
        if seed.name.starts_with("prog") {
            assert!(
                variables.iter().any(|v| v.name == "tcache"),
                "{}: {variables:?}",
                seed.name
            );
            assert!(
                seed.regions.iter().any(|(n, _)| n.contains("debug_info")),
                "{}",
                seed.name
            );
        }
    }
    footprint_file(b"not an ELF file at all");
    let plan = FootprintPlan {
        binary: "/nonexistent/binary".into(),
        pid: None,
        threads: 1,
        top: 1,
        measured: None,
        debug_root: binary::debuginfo::DEFAULT_DEBUG_ROOT.into(),
    };
    let e = binary::footprint(&plan, machine()).unwrap_err().to_string();
    assert!(e.contains("/nonexistent/binary"), "{e}");
}

// ---------------------------------------------------------------------------------------
// 7. The history database: `memscope history --db FILE` with a file that is not one.

fn check_history_refusal(db: &Path, args: &[&str]) {
    let db_text = db.to_str().unwrap();
    let mut all = vec!["history", "--db", db_text];
    all.extend(args);
    let out = memscope(&all).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let code = out.status.code();
    assert!(matches!(code, Some(1 | 2)), "{code:?}: {stderr}");
    assert!(stderr.contains("memscope: error:"), "{stderr}");
    assert!(
        stderr.contains(db_text),
        "the error should name {db_text}: {stderr}"
    );
}

proptest! {
    #![proptest_config(cases(PROCESSES))]

    #[test]
    fn a_history_database_that_is_not_one_is_refused_naming_it(
        bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 1..5000),
            prop::collection::vec(any::<u8>(), 0..5000).prop_map(|tail| {
                let mut bytes = b"SQLite format 3\0".to_vec();
                bytes.extend(tail);
                bytes
            }),
        ],
        check in any::<bool>(),
    ) {
        // SQLite takes a file shorter than its header for a new database: those are not
        // hostile, only odd.
        prop_assume!(bytes.len() >= 100 || !bytes.starts_with(b"SQLite"));
        let dir = temp_dir();
        let db = dir.path().join("history.sqlite3");
        std::fs::write(&db, &bytes).unwrap();
        check_history_refusal(&db, if check { &["--check"] } else { &[] });
    }
}

#[test]
fn a_history_database_with_hostile_rows_is_refused_or_listed() {
    let dir = temp_dir();
    let db = dir.path().join("h.sqlite3");
    let report = dir.path().join("r.json");
    std::fs::write(
        &report,
        serde_json::to_vec(&measured_report().value).unwrap(),
    )
    .unwrap();
    let db_text = db.to_str().unwrap();
    for _ in 0..2 {
        memscope(&[
            "history",
            "--db",
            db_text,
            "--add",
            report.to_str().unwrap(),
        ])
        .assert()
        .success();
    }
    let connection = rusqlite::Connection::open(&db).unwrap();
    connection
        .execute_batch(
            "UPDATE figures SET value = 'not a number' WHERE rowid % 2 = 0;
             UPDATE figures SET better = 'sideways', spread_pct = -1e308;
             UPDATE runs SET report = '{', started_unix = -1, host = ''",
        )
        .unwrap();
    drop(connection);
    for args in [&[][..], &["--check"], &["--check", "--last", "1"]] {
        let mut all = vec!["history", "--db", db_text];
        all.extend(args);
        let out = memscope(&all).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(matches!(out.status.code(), Some(0..=2)), "{stderr}");
        if stderr.contains("memscope: error:") {
            assert!(
                stderr.contains(db_text),
                "the error should name {db_text}: {stderr}"
            );
        }
    }
    // A database of another layout (a newer memscope's, or another program's).
    let other = dir.path().join("other.sqlite3");
    let connection = rusqlite::Connection::open(&other).unwrap();
    connection
        .execute_batch("CREATE TABLE runs (x); INSERT INTO runs VALUES (1);")
        .unwrap();
    drop(connection);
    check_history_refusal(&other, &[]);
    let newer = dir.path().join("newer.sqlite3");
    let connection = rusqlite::Connection::open(&newer).unwrap();
    connection
        .execute_batch("PRAGMA user_version = 99")
        .unwrap();
    drop(connection);
    check_history_refusal(&newer, &["--check"]);
}
