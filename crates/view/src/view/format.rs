//! Number formats shared by every experiment's view: the digits that matter for each kind
//! of figure, a dash for a missing or invalid value, raw forms for CSV cells, and the
//! marks shared by several rooms (noisy spreads, threads that did not run together).

use super::{Cell, Paragraph, Style, Text};
use crate::platform::child::{Containment, ProcessTree};
use crate::platform::cpu_time::{self, MIN_OVERLAP};
use crate::topology::cpu::format_cpu_list;
use crate::units::Bytes;

/// What every output shows for a missing, unknown or invalid value.
pub const DASH: &str = "–";

/// Spread (robust %) above which a figure is marked noisy: its spread in red, "~" before
/// it, a hollow point on the charts.
pub const NOISY_SPREAD_PCT: f64 = 10.0;

/// Whether a spread is above `NOISY_SPREAD_PCT` (an unknown one is not).
pub fn noisy(spread_pct: f64) -> bool {
    spread_pct.is_finite() && spread_pct > NOISY_SPREAD_PCT
}

/// A spread cell: the spread with one decimal, set as a warning when noisy.
pub fn spread_cell(spread_pct: f64) -> Cell {
    let text = spread(spread_pct);
    if noisy(spread_pct) {
        Cell::styled(text, Style::Warn)
    } else {
        Cell::new(text)
    }
}

/// The text, or a dash when it is blank.
pub fn or_dash(s: &str) -> &str {
    if s.trim().is_empty() {
        DASH
    } else {
        s
    }
}

/// A run of CPU numbers as ranges (`0-7,16`), or a dash when there is none.
pub fn cpu_list(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        DASH.to_string()
    } else {
        format_cpu_list(cpus)
    }
}

/// Tooltip of the `!` mark.
pub const NOT_CONCURRENT_TITLE: &str = "the threads did not run together";

/// The `!` mark of a figure whose threads did not run together.
pub fn not_concurrent_mark() -> Text {
    Text::new().titled("!", Style::Warn, NOT_CONCURRENT_TITLE)
}

/// The legend of the `!` mark, when any of `overlaps` is below the threshold.
pub fn not_concurrent_note(what: &str, overlaps: impl Iterator<Item = f64>) -> Option<Paragraph> {
    let lowest = cpu_time::lowest_not_concurrent(overlaps)?;
    Some(Paragraph::note(not_concurrent_mark().add(format!(
        " marks {what} whose threads did not run together (or whose one thread was kept off \
         its CPU): their overlap (CPU time of the threads ÷ threads × the trial's length) \
         stayed below {:.0} % in every trial even when re-run, down to {:.0} %. Such a \
         figure is what the threads got over the whole interval, not what threads running \
         together reach.",
        MIN_OVERLAP * 100.0,
        lowest * 100.0
    ))))
}

/// `max` evenly spaced values of the sorted `ks` (the ends included) plus, for each cliff,
/// the values on either side of it (the last at or below it and the first above), so that
/// a compact table still shows every step.
pub fn k_subset<T: Copy + Ord>(ks: &[T], cliffs: &[T], max: usize) -> Vec<T> {
    if ks.len() <= max || max < 2 {
        return ks.to_vec();
    }
    let mut picked: Vec<T> = (0..max)
        .map(|i| ks[i * (ks.len() - 1) / (max - 1)])
        .collect();
    for &cliff in cliffs {
        if let Some(&below) = ks.iter().rev().find(|&&k| k <= cliff) {
            picked.push(below);
        }
        if let Some(&above) = ks.iter().find(|&&k| k > cliff) {
            picked.push(above);
        }
    }
    picked.sort_unstable();
    picked.dedup();
    picked
}

/// A number with two decimals below 10, one below `one_decimal_below`, none above; a
/// dash when it is not finite.
pub fn rounded(v: f64, one_decimal_below: f64) -> String {
    if !v.is_finite() {
        DASH.to_string()
    } else if v < 10.0 {
        format!("{v:.2}")
    } else if v < one_decimal_below {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// Nanoseconds without the unit: more decimals for the small L1 values, none for DRAM.
pub fn ns(v: f64) -> String {
    rounded(v, 100.0)
}

/// Decimal GB/s without the unit: two decimals below 10, none from 1000 up, else one.
pub fn gbs(v: f64) -> String {
    rounded(v, 1000.0)
}

/// Core cycles without the unit; a dash when unknown (no core clock estimate gives 0 or
/// NaN).
pub fn cycles(v: f64) -> String {
    if !(v.is_finite() && v > 0.0) {
        DASH.to_string()
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// A figure with `decimals` decimals, or a dash when it is not finite.
pub fn fixed(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        DASH.to_string()
    }
}

/// An optional figure with `decimals` decimals, or a dash.
pub fn opt_fixed(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| DASH.to_string(), |v| fixed(v, decimals))
}

/// A spread in percent with one decimal, or a dash.
pub fn spread(spread_pct: f64) -> String {
    fixed(spread_pct, 1)
}

/// A fraction (0.42) as a percentage with one decimal (42.0), or a dash.
pub fn percent(fraction: Option<f64>) -> String {
    opt_fixed(fraction.map(|f| f * 100.0), 1)
}

/// An optional count, or a dash.
pub fn opt_count<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| DASH.to_string(), |v| v.to_string())
}

/// An optional size in binary units ("32 KiB"), or a dash.
pub fn opt_bytes(v: Option<u64>) -> String {
    v.map_or_else(|| DASH.to_string(), |b| Bytes(b).to_string())
}

/// `1234567` → `1,234,567`.
pub fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if value < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// A figure with `decimals` decimals and thousands separators (`5,979.16`), or a dash
/// when it is not finite.
pub fn grouped(value: f64, decimals: usize) -> String {
    if !value.is_finite() {
        return DASH.to_string();
    }
    let text = format!("{:.decimals$}", value.abs());
    let (whole, fraction) = text.split_at(text.find('.').unwrap_or(text.len()));
    let sign = if value < 0.0 && text.chars().any(|c| matches!(c, '1'..='9')) {
        "-"
    } else {
        ""
    };
    // `whole` holds digits only, so it formats as a whole number exactly.
    let whole = thousands(whole.parse::<f64>().unwrap_or(0.0));
    format!("{sign}{whole}{fraction}")
}

/// A derived figure with the digits that matter: 0.412, 3.27, 51.2, 51,744.
pub fn derived(v: f64) -> String {
    match v.abs() {
        a if !a.is_finite() => DASH.to_string(),
        a if a >= 1000.0 => thousands(v),
        a if a >= 100.0 => format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.1}"),
        a if a >= 1.0 => format!("{v:.2}"),
        _ => format!("{v:.3}"),
    }
}

/// A duration: "850 ns", "412.3 µs", "4.21 ms", "1.23 s".
pub fn duration(ns: f64) -> String {
    match ns {
        ns if !ns.is_finite() => DASH.to_string(),
        ns if ns < 1e3 => format!("{ns:.0} ns"),
        ns if ns < 1e6 => format!("{:.1} µs", ns / 1e3),
        ns if ns < 1e9 => format!("{:.2} ms", ns / 1e6),
        ns => format!("{:.2} s", ns / 1e9),
    }
}

/// "1 thread", "8 threads" (any noun with a plain plural).
pub fn count_of(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Distinct values in order of first appearance.
pub fn distinct<T: PartialEq>(values: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// A CSV number: up to four decimals, empty when not finite.
pub fn raw(value: f64) -> String {
    if value.is_finite() {
        format!("{}", (value * 1e4).round() / 1e4)
    } else {
        String::new()
    }
}

/// The command as words a shell reads back as exactly these (each quoted where it needs
/// it), to paste after `VAR=value` or `memscope … --`; a word with a NUL byte (no shell
/// can pass one) as it is.
pub fn shell_words(argv: &[String]) -> String {
    shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" "))
}

/// The command as a shell would need it typed: words with spaces or shell characters
/// in single quotes, the whole in double quotes when it has several words.
pub fn shell_quoted(argv: &[String]) -> String {
    let words: Vec<String> = argv
        .iter()
        .map(|word| {
            let plain = !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', r"'\''"))
            }
        })
        .collect();
    format!("\"{}\"", words.join(" "))
}

/// What a command's runs left running, in words: "still running and killed then: 2
/// descendants at the end of run 3 …"; and, where the tree was kept without a PID
/// namespace, what is not guaranteed then.
pub fn process_tree_notes(tree: &ProcessTree) -> Vec<String> {
    let mut notes = Vec::new();
    let runs: Vec<String> = tree
        .leftovers
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(i, &n)| {
            let n = count_of(n as usize, "descendant");
            format!("{n} at the end of run {}", i + 1)
        })
        .collect();
    if !runs.is_empty() {
        notes.push(format!(
            "still running and killed then: {}. A program meant to leave a daemon behind \
             must be profiled without it (start the daemon yourself, outside memscope)",
            runs.join(", ")
        ));
    }
    if tree.stopped > 0 {
        notes.push(format!(
            "{} still going at the time limit: stopped with all it started (SIGTERM, then \
             SIGKILL after {} s); not counted",
            count_of(tree.stopped as usize, "run"),
            crate::platform::child::STOP_GRACE.as_secs()
        ));
    }
    if tree.containment == Some(Containment::Subreaper) {
        notes.push(
            "not root (no PID namespace): descendants the program leaves are killed at the \
             end of each run while memscope runs, but not after a SIGKILL of memscope, and \
             not one that clears its environment"
                .to_string(),
        );
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_keep_the_digits_that_matter_and_dash_the_invalid() {
        assert_eq!(ns(1.234), "1.23");
        assert_eq!(ns(45.67), "45.7");
        assert_eq!(ns(123.4), "123");
        assert_eq!(ns(f64::NAN), DASH);
        assert_eq!(cycles(0.0), DASH);
        assert_eq!(thousands(-1234567.0), "-1,234,567");
        assert_eq!(grouped(5979.1649, 2), "5,979.16");
        assert_eq!(grouped(33.83, 2), "33.83");
        assert_eq!(grouped(-1234567.891, 1), "-1,234,567.9");
        assert_eq!(grouped(999.999, 2), "1,000.00");
        assert_eq!(grouped(-0.001, 2), "0.00");
        assert_eq!(grouped(1355.0, 0), "1,355");
        assert_eq!(grouped(f64::NAN, 2), DASH);
        assert_eq!(derived(0.4123), "0.412");
        assert_eq!(duration(4.21e6), "4.21 ms");
        assert_eq!(count_of(1, "thread"), "1 thread");
        assert_eq!(raw(f64::INFINITY), "");
        assert_eq!(raw(1.234567), "1.2346");
        assert_eq!(distinct([2, 1, 2, 3]), vec![2, 1, 3]);
        assert!(noisy(10.1) && !noisy(10.0) && !noisy(f64::NAN));
        assert_eq!((or_dash(" "), or_dash("x")), (DASH, "x"));
        assert_eq!(cpu_list(&[3, 0, 1, 2, 7, 9, 10]), "0-3,7,9-10");
        assert_eq!(cpu_list(&[]), DASH);
    }

    #[test]
    fn shell_words_paste_into_a_shell_as_the_same_words() {
        let argv: Vec<String> = ["printf", "%s|", "a b", "it's", "$HOME", "*", "x\"y"]
            .iter()
            .map(|w| w.to_string())
            .collect();
        let line = format!(
            "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 {}",
            shell_words(&argv)
        );
        let out = std::process::Command::new("sh")
            .args(["-c", &line])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "a b|it's|$HOME|*|x\"y|"
        );
    }

    #[test]
    fn k_subset_keeps_the_ends_and_both_sides_of_cliffs() {
        let ks: Vec<u32> = (0..=100).collect();
        assert_eq!(k_subset(&ks, &[37], 5), vec![0, 25, 37, 38, 50, 75, 100]);
        assert_eq!(k_subset(&[1, 2, 3], &[2], 5), vec![1, 2, 3]);
    }
}
