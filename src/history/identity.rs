//! What makes two reports runs of the same thing, read off the reports themselves: the
//! series a run belongs to (`identity`: the command and the program it ran, so that
//! `stat -- true` and `stat -- sleep 0.2` are two series), the settings its figures
//! depend on (`settings`: quick mode, repetitions, largest size, pages, CPUs, trial
//! duration and the other flags of its command line), which experiments ran while the
//! machine was shared (`disturbed`), and a key that finds a report already held
//! (`content_key`). `history --check` judges a run only against earlier runs of the same
//! identity and settings; `compare` names the settings that differ.
//!
//! Everything here is derived from fields older reports also have where it can be (a
//! report without `run.argv` simply has no "command line" setting, which then matches
//! any), so a database or a report from before these fields reads as it did.

use serde::{Deserialize, Serialize};

use crate::report::Report;
use crate::units::Bytes;
use crate::view::format;

/// One setting of a run: its name ("quick", "max size" …) and value as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    pub what: String,
    pub value: String,
}

/// The name of the setting that holds the command line's other flags.
pub const COMMAND_LINE: &str = "command line";

/// Flags that choose only where and how results are written, not what is measured: a
/// run with `--json out.json` is the same measurement as one without.
const OUTPUT_FLAGS: [&str; 9] = [
    "--json",
    "--csv",
    "--html",
    "--prometheus",
    "--out",
    "--save",
    "--db",
    "--points",
    "--help",
];

/// The series a report belongs to: its command, with the program it ran for the commands
/// that run one ("stat -- sleep 0.2", "pages record -- ./app", "footprint ./libfoo.so",
/// "sweep -- ./bench {n}"), or the command alone ("latency").
pub fn identity(report: &Report) -> String {
    let command = match report.settings.command.as_str() {
        "" => "run",
        c => c,
    };
    let program: Option<(Option<&str>, Vec<String>)> = if let Some(stat) = &report.stat {
        Some((None, stat.command.clone()))
    } else if let Some(pages) = &report.pages {
        Some(match pages {
            crate::pages::PagesResult::Record(r) => (Some("record"), r.command.clone()),
            crate::pages::PagesResult::Apply(a) => (Some("apply"), a.command.clone()),
        })
    } else if let Some(sweep) = &report.sweep {
        let mut words: Vec<String> = sweep
            .parameters
            .iter()
            .map(|p| format!("-p {}", p.name))
            .collect();
        for b in &sweep.benchmarks {
            words.push("--".into());
            words.extend(b.words.iter().cloned());
        }
        Some((None, words))
    } else {
        report
            .footprint
            .as_ref()
            .map(|f| (None, vec![f.binary.clone()]))
    };
    match program {
        None => command.to_string(),
        Some((mode, words)) => {
            let mut text = command.to_string();
            if let Some(mode) = mode {
                text.push(' ');
                text.push_str(mode);
            }
            if !words.is_empty() {
                let quoted = shlex::try_join(words.iter().map(String::as_str))
                    .unwrap_or_else(|_| words.join(" "));
                text.push_str(if report.footprint.is_some() || report.sweep.is_some() {
                    " "
                } else {
                    " -- "
                });
                text.push_str(&quoted);
            }
            text
        }
    }
}

/// The settings a run's figures depend on, in a fixed order. The command line's other
/// flags (the argv without the command, the program and the output flags, in a fixed
/// order) are a setting only when the report recorded its argv.
pub fn settings(report: &Report) -> Vec<Setting> {
    let s = &report.settings;
    let mut out = vec![
        ("quick", if s.quick { "yes" } else { "no" }.to_string()),
        ("repetitions", s.repetitions.to_string()),
        (
            "max size",
            if s.max_size_bytes > 0 {
                Bytes(s.max_size_bytes).to_string()
            } else {
                format::DASH.to_string()
            },
        ),
        (
            "pages asked",
            s.pages_requested
                .map_or_else(|| format::DASH.to_string(), |p| p.to_string()),
        ),
        ("CPUs", format::cpu_list(&s.cpus)),
        (
            "trial duration",
            format!("{} ms", format::fixed(s.trial_ms, 1)),
        ),
    ];
    if let Some(flags) = setting_flags(&report.run.argv, &s.command) {
        out.push((
            COMMAND_LINE,
            if flags.is_empty() {
                "(no other flags)".to_string()
            } else {
                flags.join(" ")
            },
        ));
    }
    out.into_iter()
        .map(|(what, value)| Setting {
            what: what.to_string(),
            value,
        })
        .collect()
}

/// The flags of a command line that can change what is measured, each with its value,
/// sorted; None when no argv was recorded. The program after `--` is the identity's, the
/// output flags (`OUTPUT_FLAGS`) are left out.
pub fn setting_flags(argv: &[String], command: &str) -> Option<Vec<String>> {
    if argv.is_empty() {
        return None;
    }
    let words: Vec<&str> = argv
        .iter()
        .map(String::as_str)
        .take_while(|w| *w != "--")
        .collect();
    let mut words = &words[..];
    if words.first() == Some(&command) {
        words = &words[1..];
    }
    let mut groups: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let word = words[i];
        i += 1;
        if !word.starts_with('-') || word == "-" {
            // A positional word (the program of `stat true`): the identity has it.
            continue;
        }
        let (name, mut group) = match word.split_once('=') {
            Some((name, _)) => (name, word.to_string()),
            None => (word, word.to_string()),
        };
        if !word.contains('=') {
            // A flag's value is the next word when that is not a flag itself (a
            // boolean flag followed by a positional word is taken as one group: both
            // runs are read the same way, which is all a comparison needs).
            if let Some(next) = words.get(i).filter(|n| !n.starts_with('-') || **n == "-") {
                group = format!("{word} {next}");
                i += 1;
            }
        }
        if !OUTPUT_FLAGS.contains(&name) {
            groups.push(group);
        }
    }
    groups.sort();
    Some(groups)
}

/// The settings that differ between two runs, by name; a setting only one of them
/// recorded (the command line of an older report) is not a difference.
pub fn differing(a: &[Setting], b: &[Setting]) -> Vec<String> {
    a.iter()
        .filter_map(|x| {
            let other = b.iter().find(|y| y.what == x.what)?;
            (other.value != x.value).then(|| x.what.clone())
        })
        .collect()
}

/// The experiments (by name, "miss_impact") that ran while other tasks or the hypervisor
/// took a share of the machine, by the report's own conditions and warnings.
pub fn disturbed(report: &Report) -> Vec<String> {
    let mut out: Vec<String> = report
        .conditions
        .iter()
        .filter(|c| c.disturbed)
        .map(|c| c.experiment.clone())
        .collect();
    out.dedup();
    out
}

/// Whether the figures of section `section` (an id: "miss-impact") were measured while
/// the machine was shared, given a run's `disturbed` experiments.
pub fn section_disturbed(disturbed: &[String], section: &str) -> bool {
    let experiment = section.replace('-', "_");
    disturbed.contains(&experiment)
}

/// Whether the run's drift pass found figures that moved beyond their noise (its `drift`
/// warning).
pub fn drifted(report: &Report) -> bool {
    report.warnings.iter().any(|w| w.code == "drift")
}

/// A key that is the same for one report however often it is read: where, when and how
/// long it ran and what, or for a report without a run stamp (schema 1) a hash of its
/// content. `history --add` skips a report whose key it holds.
pub fn content_key(report: &Report) -> String {
    let run = &report.run;
    if run.started_unix != 0 || !run.started.is_empty() {
        format!(
            "run:{}|{}|{}|{:.3}|{}",
            run.host,
            run.started_unix,
            run.started,
            run.elapsed_s,
            identity(report)
        )
    } else {
        // Through `Value`, whose maps are ordered by key: the same text for the same
        // report, whatever order its own maps keep.
        let text = serde_json::to_value(report)
            .map(|v| v.to_string())
            .unwrap_or_default();
        format!("json:{:016x}", fnv1a(text.as_bytes()))
    }
}

/// The 64-bit FNV-1a hash: stable across Rust versions and machines (the key is stored).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::Settings;
    use crate::topology::Machine;

    fn argv(words: &str) -> Vec<String> {
        words.split(' ').map(String::from).collect()
    }

    fn stat_report(program: &[&str]) -> Report {
        let mut report = Report::new(Machine::default(), Settings::default());
        report.settings.command = "stat".into();
        report.stat = Some(stat_result(program, 0.5, 0.0));
        report
    }

    /// A `stat` result of `program` that ran `elapsed_s` seconds with `user_s` of CPU.
    pub fn stat_result(program: &[&str], elapsed_s: f64, user_s: f64) -> crate::stat::StatResult {
        let one = |v: f64| crate::stats::Summary::of(&[v]).unwrap();
        crate::stat::StatResult {
            command: program.iter().map(|w| w.to_string()).collect(),
            runs_requested: 1,
            runs: Vec::new(),
            events: Vec::new(),
            derived: Vec::new(),
            elapsed_s: one(elapsed_s),
            user_s: one(user_s),
            system_s: one(0.0),
            termination: crate::platform::child::Termination::Exited(0),
            line_bytes: 64,
            notes: Vec::new(),
            process_tree: Default::default(),
        }
    }

    #[test]
    fn runs_of_different_programs_are_different_series() {
        let a = stat_report(&["true"]);
        let b = stat_report(&["sleep", "0.2"]);
        assert_eq!(identity(&a), "stat -- true");
        assert_eq!(identity(&b), "stat -- sleep 0.2");
        let quoted = stat_report(&["sh", "-c", "echo it's"]);
        assert_eq!(identity(&quoted), r#"stat -- sh -c "echo it's""#);
        let mut latency = Report::new(Machine::default(), Settings::default());
        latency.settings.command = "latency".into();
        assert_eq!(identity(&latency), "latency");
    }

    #[test]
    fn output_flags_and_their_order_are_not_settings() {
        let a = setting_flags(
            &argv("latency --quick --save --json a.json --cpu 1"),
            "latency",
        );
        let b = setting_flags(&argv("latency --cpu 1 --json=b.json --quick"), "latency");
        assert_eq!(a, Some(vec!["--cpu 1".to_string(), "--quick".to_string()]));
        assert_eq!(a, b);
        let threads = setting_flags(&argv("bandwidth --threads 2 --html -"), "bandwidth");
        assert_eq!(threads, Some(vec!["--threads 2".to_string()]));
        // The program after `--` is the identity's, not a setting.
        let stat = setting_flags(&argv("stat -r 3 -- sleep 0.2"), "stat");
        assert_eq!(stat, Some(vec!["-r 3".to_string()]));
        assert_eq!(setting_flags(&[], "latency"), None);
    }

    #[test]
    fn settings_differ_by_name_and_an_unrecorded_command_line_matches_any() {
        let mut quick = Report::new(Machine::default(), Settings::default());
        quick.settings.quick = true;
        quick.settings.repetitions = 3;
        quick.run.argv = argv("latency --quick");
        let mut full = quick.clone();
        full.settings.quick = false;
        full.settings.repetitions = 7;
        full.settings.max_size_bytes = 1 << 30;
        full.run.argv = argv("latency");
        let what = differing(&settings(&quick), &settings(&full));
        assert_eq!(what, ["quick", "repetitions", "max size", COMMAND_LINE]);
        let mut old = quick.clone();
        old.run.argv.clear();
        assert!(differing(&settings(&quick), &settings(&old)).is_empty());
    }

    #[test]
    fn a_report_has_one_content_key_and_a_later_run_another() {
        let mut a = stat_report(&["true"]);
        a.run.started_unix = 100;
        let mut b = a.clone();
        assert_eq!(content_key(&a), content_key(&b));
        b.run.started_unix = 101;
        assert_ne!(content_key(&a), content_key(&b));
        // Without a stamp, the content decides.
        let mut old = stat_report(&["true"]);
        old.run = Default::default();
        let same = old.clone();
        assert_eq!(content_key(&old), content_key(&same));
        assert!(content_key(&old).starts_with("json:"));
        old.settings.repetitions = 9;
        assert_ne!(content_key(&old), content_key(&same));
    }
}
