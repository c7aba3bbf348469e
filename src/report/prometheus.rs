//! The Prometheus text exposition format of a report's headline figures (those with a
//! `metric`), for node_exporter's textfile collector: one gauge family per metric, each
//! sample labelled with the host and CPU model, plus when the run started and how long it
//! took. The file is written atomically by `output::Target`, so the collector never reads
//! half of it.

use std::fmt::Write as _;

use super::Report;

/// Every metric family's name starts with this.
pub const PREFIX: &str = "memscope_";

/// The exposition text of `report`.
pub fn render(report: &Report) -> Vec<u8> {
    let common = [
        ("host", report.run.host.clone()),
        ("cpu_model", report.machine.cpu_model.clone()),
    ];
    let mut families: Vec<(String, String, Vec<String>)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for figure in report.figures() {
        let Some(metric) = &figure.metric else {
            continue;
        };
        let value = figure.value * metric.scale;
        if !value.is_finite() {
            continue;
        }
        let name = format!("{PREFIX}{}", metric.name);
        let labels: Vec<(&str, &str)> = common
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .chain(metric.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .collect();
        let sample = format!("{name}{} {}", label_set(&labels), number(value));
        // One sample per series: a second figure with the same name and labels is dropped.
        if !seen.insert(sample.rsplit_once(' ').map(|(s, _)| s.to_string())) {
            continue;
        }
        match families.iter_mut().find(|(n, _, _)| *n == name) {
            Some((_, _, samples)) => samples.push(sample),
            None => families.push((name, metric.help.clone(), vec![sample])),
        }
    }
    let labels: Vec<(&str, &str)> = common
        .iter()
        .map(|(k, v)| (*k, v.as_str()))
        .chain([("command", report.settings.command.as_str())])
        .collect();
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
    for (name, help, value) in run {
        let name = format!("{PREFIX}{name}");
        let sample = format!("{name}{} {}", label_set(&labels), number(value));
        families.push((name, help.to_string(), vec![sample]));
    }
    let mut out = String::new();
    for (name, help, samples) in families {
        let _ = writeln!(out, "# HELP {name} {}", escape_help(&help));
        let _ = writeln!(out, "# TYPE {name} gauge");
        for sample in samples {
            let _ = writeln!(out, "{sample}");
        }
    }
    out.into_bytes()
}

/// `{a="x",b="y"}` with the values escaped as the format asks.
fn label_set(labels: &[(&str, &str)]) -> String {
    let inner: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value: integers without a fraction, others in Rust's shortest round-trip form.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        format!("{value:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::figure::Figure;

    #[test]
    fn figures_with_metrics_become_labelled_gauges_and_others_are_left_out() {
        let mut report = Report::new(crate::topology::Machine::default(), Default::default());
        report.run.host = "node\"7".into();
        report.machine.cpu_model = "EPYC".into();
        report.settings.command = "run".into();
        report.experiments.latency = Some(crate::experiments::latency::samples::latency());
        let text = String::from_utf8(render(&report)).unwrap();
        assert!(
            text.contains("# TYPE memscope_run_timestamp_seconds gauge"),
            "{text}"
        );
        assert!(
            text.contains(r#"host="node\"7",cpu_model="EPYC""#),
            "{text}"
        );
        let expected: Vec<Figure> = report
            .figures()
            .into_iter()
            .filter(|f| f.metric.is_some())
            .collect();
        for f in &expected {
            let name = format!("{PREFIX}{}", f.metric.as_ref().unwrap().name);
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

    #[test]
    fn values_and_labels_are_written_as_the_format_asks() {
        assert_eq!(number(42.0), "42");
        assert_eq!(number(1.5e-9), "1.5e-9");
        assert_eq!(escape_label("a\\b\n\"c\""), "a\\\\b\\n\\\"c\\\"");
        assert_eq!(label_set(&[("a", "1"), ("b", "x")]), r#"{a="1",b="x"}"#);
    }
}
