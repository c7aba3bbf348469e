//! The Prometheus text exposition format, for node_exporter's textfile collector: one
//! gauge family per metric of the figures given (those with a `metric`), each sample
//! labelled with the common labels (a report's host and CPU model) and the metric's own,
//! then the run's own families (when it started, how long it took). Which figures and
//! labels a report exposes is the report's (`report::document::prometheus`); the file
//! is written atomically by `output::Target`, so the collector never reads half of it.

use std::fmt::Write as _;

use crate::view::figure::Figure;

/// Every metric family's name starts with this.
pub const PREFIX: &str = "memscope_";

/// A family of its own after the figures': its name (without `PREFIX`), help and value.
pub(crate) type RunFamily<'a> = (&'a str, &'a str, f64);

/// The exposition text of `figures` labelled with `common`, then of `run`'s families
/// labelled with `run_labels`. A figure without a metric or with a value that is not
/// finite is left out, and so is a second sample of the same name and labels.
pub fn render(
    common: &[(&str, &str)],
    figures: &[Figure],
    run_labels: &[(&str, &str)],
    run: &[RunFamily],
) -> Vec<u8> {
    let mut families: Vec<(String, String, Vec<String>)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for figure in figures {
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
            .copied()
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
    for (name, help, value) in run {
        let name = format!("{PREFIX}{name}");
        let sample = format!("{name}{} {}", label_set(run_labels), number(*value));
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
    use crate::view::figure::Better;

    #[test]
    fn figures_with_metrics_become_one_family_each_and_others_are_left_out() {
        let level = |name: &str, ns: f64| {
            Figure::new("latency", name, name, "ns", ns, Better::Lower).metric(
                "level_latency_seconds",
                "Load-to-use latency.",
                &[("level", name.to_string())],
                1e-9,
            )
        };
        let figures = [
            level("L1d", 1.0),
            level("L2", 4.0),
            level("L2", 5.0),
            level("L3", f64::NAN),
            Figure::new("latency", "plain", "plain", "ns", 2.0, Better::Lower),
        ];
        let common = [("host", "node\"7")];
        let run_labels = [("host", "node\"7"), ("command", "run")];
        let run = [("run_duration_seconds", "How long.", 1.5)];
        let text = String::from_utf8(render(&common, &figures, &run_labels, &run)).unwrap();
        assert_eq!(
            text.matches("# TYPE memscope_level_latency_seconds gauge")
                .count(),
            1,
            "{text}"
        );
        assert!(
            text.contains(r#"memscope_level_latency_seconds{host="node\"7",level="L1d"} 1e-9"#),
            "{text}"
        );
        assert!(
            text.contains(r#"memscope_run_duration_seconds{host="node\"7",command="run"} 1.5"#),
            "{text}"
        );
        // Parsed by a Prometheus text parser: L1d, the first L2 and the run's duration.
        let lines = text.lines().map(|l| Ok(l.to_string()));
        let scrape = prometheus_parse::Scrape::parse(lines).unwrap();
        assert_eq!(scrape.samples.len(), 3, "{text}");
    }

    #[test]
    fn values_and_labels_are_written_as_the_format_asks() {
        assert_eq!(number(42.0), "42");
        assert_eq!(number(1.5e-9), "1.5e-9");
        assert_eq!(escape_label("a\\b\n\"c\""), "a\\\\b\\n\\\"c\\\"");
        assert_eq!(label_set(&[("a", "1"), ("b", "x")]), r#"{a="1",b="x"}"#);
    }
}
