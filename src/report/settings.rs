//! The settings and warnings sections of every output: what was asked and obtained (CPUs,
//! pages, repetitions, clocks, sampling) as key/value rows, and the warnings that qualify
//! the figures, or a sentence saying there are none.

use super::Report;
use crate::units::Bytes;
use crate::view::format::{self, cpu_list, or_dash};
use crate::view::{Block, Medium, Paragraph, Section, Table, Text};

/// What was asked and what was obtained. Without pinned CPUs (`info`, `stat`: nothing was
/// measured) the table is for HTML only, as the terminal printed no settings then.
pub fn settings_section(report: &Report) -> Section {
    let s = &report.settings;
    let mut section = Section::new("settings", "Settings", "Settings");
    let obtained = s.pages_obtained.as_ref().map_or_else(
        || format::DASH.to_string(),
        |p| {
            format!(
                "{}: {} pages, {:.0}% of the largest buffer on huge pages",
                p.policy,
                Bytes(p.page_bytes),
                if p.huge_fraction.is_finite() {
                    p.huge_fraction * 100.0
                } else {
                    0.0
                }
            )
        },
    );
    let mut t = Table::key_value();
    t.pair("Command", or_dash(&s.command));
    t.pair("Pinned to CPUs", cpu_list(&s.cpus));
    let requested = s.pages_requested.map(|p| p.to_string()).unwrap_or_default();
    t.pair("Pages requested", or_dash(&requested));
    t.pair("Pages obtained", obtained);
    t.pair("Quick mode", if s.quick { "yes" } else { "no" });
    t.pair("Repetitions per point", s.repetitions.to_string());
    t.pair(
        "Trial duration",
        format!("{} ms", format::fixed(s.trial_ms, 1)),
    );
    t.pair(
        "Largest working set",
        format::opt_bytes(Some(s.max_size_bytes).filter(|&b| b > 0)),
    );
    t.pair("Timer", or_dash(&s.timer));
    t.pair("Clock of multi-thread trials", or_dash(&s.team_clock));
    t.pair("Sampling", or_dash(&s.sampling));
    if s.cpus.is_empty() {
        section.push(Block::Only(Medium::Html, vec![t.into()]));
    } else {
        section.push(t);
    }
    section
}

/// The warnings, each with its code; a callout saying there are none otherwise. The
/// headline is the number of warnings.
pub fn warnings_section(report: &Report) -> Section {
    let n = report.warnings.len();
    let mut section = Section::new("warnings", format!("Warnings ({n})"), "Warnings");
    if report.warnings.is_empty() {
        section.push(Paragraph::fine(
            "No warnings: nothing was found that distorts these measurements.",
        ));
        return section;
    }
    // One box holding every warning, a line each.
    let mut text = Text::new();
    for (i, w) in report.warnings.iter().enumerate() {
        if i > 0 {
            text = text.line_break();
        }
        text = text
            .warn("!")
            .add(" ")
            .code(&w.code)
            .add(": ")
            .add(&w.message);
    }
    section.push(Paragraph::warning(text));
    section
}

/// `Settings::pages_requested` as reports write it: the policy's name ("4k", "thp", "2m",
/// "1g"), or "" when the command measured nothing; a report with any other text is refused
/// when read, naming the value.
pub(crate) mod pages_requested {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    use crate::platform::arena::PagePolicy;

    pub fn serialize<S: Serializer>(
        pages: &Option<PagePolicy>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match pages {
            Some(policy) => serializer.collect_str(policy),
            None => serializer.serialize_str(""),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<PagePolicy>, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.is_empty() {
            return Ok(None);
        }
        // Only the names reports write: the command line's aliases ("base") never appear.
        PagePolicy::parse(&text)
            .ok()
            .filter(|policy| policy.to_string() == text)
            .map(Some)
            .ok_or_else(|| {
                D::Error::custom(format!(
                    "invalid pages_requested '{text}', expected {} or \"\"",
                    PagePolicy::NAMES
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::arena::{PagePolicy, PagesObtained};
    use crate::report::{Settings, Warning};
    use crate::topology::Machine;
    use crate::view::{Style, Tone};

    fn value(section: &Section, key: &str) -> String {
        section.tables()[0].row_of(key)[1].clone()
    }

    #[test]
    fn settings_show_what_was_asked_and_obtained() {
        let settings = Settings {
            command: "latency".into(),
            cpus: vec![2],
            pages_requested: Some(PagePolicy::Thp),
            pages_obtained: Some(PagesObtained {
                policy: PagePolicy::Thp,
                page_bytes: 4096,
                huge_fraction: 0.5,
            }),
            quick: true,
            repetitions: 5,
            trial_ms: 2.0,
            max_size_bytes: 1 << 30,
            timer: "tsc".into(),
            team_clock: "tsc (the kernel keeps time with it)".into(),
            sampling: "8 points per octave".into(),
        };
        let s = settings_section(&Report::new(Machine::default(), settings));
        assert_eq!(s.id, "settings");
        assert!(
            matches!(s.blocks[0], Block::Table(_)),
            "shown in the terminal too"
        );
        for (key, want) in [
            ("Pinned to CPUs", "2"),
            (
                "Pages obtained",
                "thp: 4 KiB pages, 50% of the largest buffer on huge pages",
            ),
            ("Quick mode", "yes"),
            ("Trial duration", "2.0 ms"),
            ("Largest working set", "1 GiB"),
            (
                "Clock of multi-thread trials",
                "tsc (the kernel keeps time with it)",
            ),
            ("Sampling", "8 points per octave"),
        ] {
            assert_eq!(value(&s, key), want, "{key}");
        }
    }

    #[test]
    fn empty_settings_give_dashes_and_stay_out_of_the_terminal() {
        let s = settings_section(&Report::new(Machine::default(), Settings::default()));
        assert!(matches!(&s.blocks[0], Block::Only(Medium::Html, _)));
        for key in [
            "Command",
            "Pinned to CPUs",
            "Pages obtained",
            "Largest working set",
        ] {
            assert_eq!(value(&s, key), format::DASH, "{key}");
        }
    }

    /// The navigation label and the one paragraph of the warnings section.
    fn warnings(report: &Report) -> (String, Paragraph) {
        let s = warnings_section(report);
        assert_eq!(s.id, "warnings");
        let [Block::Paragraph(p)] = s.blocks.as_slice() else {
            panic!("{:?}", s.blocks)
        };
        (s.nav, p.clone())
    }

    #[test]
    fn the_warnings_are_one_box_a_line_each_or_a_green_box_saying_there_are_none() {
        let mut report = Report::new(Machine::default(), Settings::default());
        let (nav, p) = warnings(&report);
        assert_eq!((nav.as_str(), p.tone), ("Warnings (0)", Tone::Fine));
        assert!(p.text.to_plain().starts_with("No warnings"));
        for (code, message) in [
            ("system_busy", "the system is busy & noisy"),
            ("hypervisor", "running under KVM"),
        ] {
            let (code, message) = (code.into(), message.into());
            report.warnings.push(Warning { code, message });
        }
        let (nav, p) = warnings(&report);
        assert_eq!((nav.as_str(), p.tone), ("Warnings (2)", Tone::Warning));
        assert_eq!(
            p.text.to_plain(),
            "! system_busy: the system is busy & noisy\n! hypervisor: running under KVM"
        );
        let code = |i: &crate::view::Inline| matches!(i, crate::view::Inline::Span(s) if s.style == Style::Code && s.text == "system_busy");
        assert!(p.text.0.iter().any(code));
    }
}
