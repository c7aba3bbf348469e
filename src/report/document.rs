//! Which sections each output shows, in which order: the results of the experiments that
//! ran (from the registry in `experiments`) and of `memscope stat`, framed by the machine,
//! the settings and the warnings. The renderers then draw them without knowing what they
//! are.

use super::{machine, settings, Report};
use crate::render::{html, prometheus};
#[cfg(test)]
use crate::topology::Machine;
use crate::view::{glance, Paragraph, Present, Section};

/// How much of the machine the terminal shows before the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MachineView {
    /// Everything (`memscope info`).
    Full,
    /// A few lines (`memscope run`).
    Summary,
    /// Nothing (single experiments, `stat`).
    None,
}

/// The sections of the results, in reading order: built once per export and handed to
/// every output.
pub fn result_sections(report: &Report) -> Vec<Section> {
    // advise's verdict comes first: it is the answer.
    let mut sections: Vec<Section> = report.advise.iter().map(|a| a.section()).collect();
    sections.extend(report.experiments.sections(&report.machine));
    if let Some(stat) = &report.stat {
        sections.push(stat.section(&report.machine));
    }
    if let Some(pages) = &report.pages {
        sections.extend(pages.sections());
    }
    if let Some(footprint) = &report.footprint {
        sections.push(footprint.section());
    }
    if let Some(sweep) = &report.sweep {
        sections.push(sweep.section());
    }
    sections.extend(crate::experiments::drift::view::section(
        report.drift.as_ref(),
        &report.conditions,
    ));
    sections
}

/// The terminal text fitted to `width` columns: the machine as asked, the results (every
/// point with `verbose`), then the settings and the warnings. The profile (`run`, the one
/// command showing the machine's summary) writes its HTML and JSON reports every time:
/// it ends with the headline figures at a glance and the warnings one line each, which
/// those files hold in full.
pub fn terminal(
    report: &Report,
    results: &[Section],
    machine_view: MachineView,
    verbose: bool,
    width: usize,
) -> String {
    let mut sections = Vec::new();
    match machine_view {
        MachineView::Full => sections.push(machine::machine_section(&report.machine)),
        MachineView::Summary => sections.push(machine::machine_summary(&report.machine)),
        MachineView::None => {}
    }
    sections.extend(results.iter().cloned());
    // Nothing was pinned for `info` and `stat`: no measurement settings to tell.
    if !report.settings.cpus.is_empty() {
        sections.push(settings::settings_section(report));
    }
    if machine_view == MachineView::Summary {
        sections.extend(glance::section(&glance::cards(
            results,
            report.warnings.len(),
            &drift_at_a_glance(report),
        )));
        let warnings = report.warnings.iter();
        sections.push(glance::compact_warnings(
            warnings.map(|w| (w.code.as_str(), w.message.as_str())),
        ));
    } else if !report.warnings.is_empty() {
        sections.push(settings::warnings_section(report));
    }
    crate::render::terminal::render_width(&sections, verbose, width)
}

/// The drift pass's figures, for the summary to put beside the headlines.
fn drift_at_a_glance(report: &Report) -> Vec<glance::Drift> {
    report
        .drift
        .as_ref()
        .map(|d| d.glance())
        .unwrap_or_default()
}

/// The CSV document: each result's tables, or the machine's caches when nothing was
/// measured (`memscope info`).
pub fn csv(report: &Report, results: &[Section]) -> Vec<u8> {
    if results.iter().all(|s| s.data_tables().is_empty()) {
        return crate::render::csv::render(&[machine::machine_section(&report.machine)]);
    }
    crate::render::csv::render(results)
}

/// The HTML document: the headline figures and the warnings first, then the results,
/// then how they were measured and the machine they are compared with.
pub fn html(report: &Report, results: &[Section]) -> Vec<u8> {
    let warnings = settings::warnings_section(report);
    let mut settings = settings::settings_section(report);
    if results.is_empty() {
        settings.push(Paragraph::muted(
            "No experiment ran: this report holds the machine description only.",
        ));
    }
    let machine = machine::machine_section(&report.machine);
    let mut sections = vec![&warnings];
    sections.extend(results);
    sections.extend([&settings, &machine]);

    let tool = format!("{} {}", report.tool.name, report.tool.version);
    let cpu = &report.machine.cpu_model;
    let mut byline = crate::view::Text::plain("command ")
        .strong(crate::view::format::or_dash(&report.settings.command));
    if !cpu.is_empty() {
        byline = byline.add(format!(" · {cpu}"));
    }
    html::render(&html::Page {
        heading: "memscope report".to_string(),
        title: if cpu.is_empty() {
            "memscope report".to_string()
        } else {
            format!("memscope report: {cpu}")
        },
        generator: tool.clone(),
        byline,
        stamp: Some(html_stamp(&report.run, &report.tool)),
        glance: glance::cards(results, report.warnings.len(), &drift_at_a_glance(report))
            .into_iter()
            .map(|card| html::Glance {
                headline: card.headline,
                anchor: card.anchor,
                warn: card.warn,
            })
            .collect(),
        sections,
        footer: format!(
            "Generated by {tool} (report schema {}).",
            report.schema_version
        ),
    })
}

/// The HTML header's date, host, version and command line. The report does not keep the
/// command line, and HTML is only written by the command that made the report, so this
/// process's arguments are that command line.
pub fn html_stamp(run: &super::RunStamp, tool: &super::Tool) -> html::Stamp {
    html::Stamp {
        when: run.when(),
        host: run.host.clone(),
        tool: format!("{} {}", tool.name, tool.version),
        command_line: std::env::args().collect(),
    }
}

/// The report's headline figures (those with a metric) as Prometheus text, labelled with
/// the host and CPU model, then when the run started and how long it took, labelled with
/// the command too.
pub fn prometheus(report: &Report) -> Vec<u8> {
    let common = [
        ("host", report.run.host.as_str()),
        ("cpu_model", report.machine.cpu_model.as_str()),
    ];
    let mut run_labels = common.to_vec();
    run_labels.push(("command", report.settings.command.as_str()));
    let run = [
        (
            "run_timestamp_seconds",
            "When the memscope run started, in seconds since the Unix epoch.",
            report.run.started_unix as f64,
        ),
        (
            "run_duration_seconds",
            "How long the memscope run took.",
            report.run.elapsed_s,
        ),
    ];
    prometheus::render(&common, &report.figures(), &run_labels, &run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::{
        bandwidth, latency, loaded, miss_impact, mlp, numa, rob, stride, tlb,
    };
    use crate::report::Settings;
    use crate::session::warnings::Warning;

    /// A report holding every experiment's sample result.
    fn full_report() -> Report {
        let mut report = Report::new(Machine::sample(), Settings::default());
        report.settings.command = "run".to_string();
        report.settings.cpus = vec![1];
        let e = &mut report.experiments;
        e.latency = Some(latency::samples::latency());
        e.miss_impact = Some(miss_impact::samples::sample());
        e.bandwidth = Some(bandwidth::samples::bandwidth(
            &[1, 2],
            &bandwidth::samples::KERNELS,
            &bandwidth::samples::KERNELS[..2],
            2,
        ));
        e.stride = Some(stride::samples::stride(64 << 20));
        e.loaded = Some(loaded::samples::loaded());
        e.mlp = Some(mlp::samples::mlp());
        e.rob = Some(rob::samples::rob());
        e.tlb = Some(tlb::samples::tlb());
        e.numa = Some(numa::samples::numa());
        report.warnings.push(Warning {
            code: "hypervisor".into(),
            message: "KVM <guest>".into(),
        });
        report
    }

    fn assert_balanced(html: &str) {
        for tag in [
            "section", "figure", "svg", "table", "thead", "tbody", "tr", "details", "p", "g",
        ] {
            let open = html.matches(&format!("<{tag}>")).count()
                + html.matches(&format!("<{tag} ")).count();
            let close = html.matches(&format!("</{tag}>")).count();
            assert_eq!(open, close, "<{tag}> unbalanced");
        }
    }

    #[test]
    fn the_html_has_every_section_in_order_after_the_summary_and_the_warnings() {
        let doc = String::from_utf8({
            let r = full_report();
            html(&r, &result_sections(&r))
        })
        .unwrap();
        assert_balanced(&doc);
        let ids = "summary warnings latency miss-impact bandwidth stride loaded mlp rob tlb numa \
                   settings machine";
        let positions: Vec<usize> = ids
            .split_whitespace()
            .map(|id| {
                doc.find(&format!("<section id=\"{id}\">"))
                    .unwrap_or_else(|| panic!("no section {id}"))
            })
            .collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
        assert!(doc.contains("KVM &lt;guest&gt;") && !doc.contains("<guest>"));
        assert!(doc.contains("<a href=\"#warnings\" class=\"warn\">"));
        assert!(!doc.contains("NaN"));
        assert!(doc.matches("<svg").count() >= 10);
    }

    #[test]
    fn the_terminal_shows_results_settings_and_warnings_but_no_chart() {
        let report = full_report();
        let results = result_sections(&report);
        let text = terminal(&report, &results, MachineView::None, false, 100);
        assert!(!text.contains("<svg") && !text.contains("<b>"));
        for title in ["Latency ladder", "Bandwidth", "Settings", "Warnings"] {
            assert!(text.contains(&format!("\n{title}\n")), "{title}");
        }
        assert!(text.contains("KVM <guest>"));
        assert!(!text.contains("At a glance"));
        let verbose = terminal(&report, &results, MachineView::None, true, 100);
        assert!(verbose.len() > text.len());
    }

    #[test]
    fn the_profile_fits_the_width_and_ends_with_the_glance_and_compact_warnings() {
        let mut report = full_report();
        for experiment in ["latency", "bandwidth", "tlb"] {
            report.warnings.push(Warning {
                code: "disturbed".into(),
                message: format!(
                    "{experiment} was measured while the machine was shared: {}",
                    "5.8 other runnable task(s) on average ".repeat(4)
                ),
            });
        }
        let results = result_sections(&report);
        for width in [80, 120] {
            let text = terminal(&report, &results, MachineView::Summary, false, width);
            let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
            assert!(widest <= width, "{width}: a line of {widest}");
            let glance = text.find("\nAt a glance\n").expect("at a glance");
            let warnings = text
                .rfind("\nWarnings (4: one line each")
                .expect("warnings");
            assert!(text.find("\nSettings\n") < Some(glance) && glance < warnings);
            // The same figures as the HTML's cards, in the same order.
            let cards = glance::cards(&results, report.warnings.len(), &[]);
            let mut at = glance;
            for card in &cards {
                let found = text[at..].find(&card.headline.value).map(|i| at + i);
                at = found.unwrap_or_else(|| panic!("{} after the glance", card.headline.value));
            }
            let tail = &text[warnings..];
            assert_eq!(tail.matches("! disturbed").count(), 1, "{tail}");
            assert!(tail.contains("tlb was measured while the machine was shared"));
            // One line per warning: the title, the rule, four warnings.
            assert_eq!(tail.trim().lines().count(), 2 + 4, "{tail}");
        }
    }

    #[test]
    fn csv_holds_each_results_tables() {
        let report = full_report();
        let text = String::from_utf8(csv(&report, &result_sections(&report))).unwrap();
        for name in [
            "latency.points",
            "bandwidth.rows",
            "tlb.saxpy",
            "numa.cells",
        ] {
            assert!(text.contains(&format!("# {name}\n")), "{name}");
        }
        assert!(!text.contains("machine.caches"));
    }

    #[test]
    fn a_report_without_results_is_the_machine_alone() {
        let report = Report::new(Machine::default(), Settings::default());
        let text = String::from_utf8(csv(&report, &result_sections(&report))).unwrap();
        assert!(text.starts_with("level,"), "{text}");
        let doc = String::from_utf8(html(&report, &result_sections(&report))).unwrap();
        assert_balanced(&doc);
        assert!(doc.contains("No experiment ran"));
        assert!(!doc.contains("id=\"summary\""));
    }

    #[test]
    fn the_html_header_names_the_date_host_version_and_command_line() {
        let mut report = Report::new(Machine::default(), Settings::default());
        report.run.host = "node-<7>".into();
        report.run.started = "2026-11-26T13:05:00Z".into();
        let doc = String::from_utf8(html(&report, &result_sections(&report))).unwrap();
        let header = &doc[doc.find("<header>").unwrap()..doc.find("</header>").unwrap()];
        assert!(header.contains("<b>2026-11-26 13:05 UTC</b>"), "{header}");
        assert!(header.contains("host <b>node-&lt;7&gt;</b>"), "{header}");
        let version = format!("<b>memscope {}</b>", env!("CARGO_PKG_VERSION"));
        assert!(header.contains(&version), "{header}");
        // This process's arguments: the test binary's name at least.
        assert!(header.contains("<code class=\"argv\">"), "{header}");
    }

    /// Writes the HTML of the sample report (or of a JSON report) for a look in a
    /// browser: `MEMSCOPE_HTML_SAMPLE=out.html [MEMSCOPE_HTML_FROM_JSON=report.json]
    /// cargo test write_sample_report -- --ignored`.
    #[test]
    #[ignore]
    fn write_sample_report() {
        let Ok(path) = std::env::var("MEMSCOPE_HTML_SAMPLE") else {
            return;
        };
        let report = match std::env::var("MEMSCOPE_HTML_FROM_JSON") {
            Ok(json) => serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap(),
            Err(_) => full_report(),
        };
        std::fs::write(path, html(&report, &result_sections(&report))).unwrap();
    }

    #[test]
    fn the_prometheus_text_holds_every_figure_with_a_metric_and_the_run() {
        let mut report = Report::new(Machine::default(), Default::default());
        report.run.host = "node\"7".into();
        report.machine.cpu_model = "EPYC".into();
        report.settings.command = "run".into();
        report.experiments.latency = Some(latency::samples::latency());
        let text = String::from_utf8(prometheus(&report)).unwrap();
        assert!(
            text.contains("# TYPE memscope_run_timestamp_seconds gauge"),
            "{text}"
        );
        assert!(
            text.contains(r#"host="node\"7",cpu_model="EPYC""#),
            "{text}"
        );
        assert!(
            text.contains(r#"cpu_model="EPYC",command="run"}"#),
            "{text}"
        );
        let expected: Vec<crate::view::figure::Figure> = report
            .figures()
            .into_iter()
            .filter(|f| f.metric.is_some())
            .collect();
        for f in &expected {
            let name = format!("{}{}", prometheus::PREFIX, f.metric.as_ref().unwrap().name);
            assert!(
                text.contains(&format!("# TYPE {name} gauge")),
                "{name}: {text}"
            );
        }
        // Parsed by a Prometheus text parser: every sample line is a sample.
        let lines = text.lines().map(|l| Ok(l.to_string()));
        let scrape = prometheus_parse::Scrape::parse(lines).unwrap();
        assert_eq!(scrape.samples.len(), expected.len() + 2);
    }
}
