//! The registry's planning, without running anything: every subcommand reaches its room,
//! `restore` plans like any command, and bad values are `UsageError`s.

use clap::{CommandFactory, Parser};

use super::*;
use crate::error::UsageError;

fn plan_of(args: &[&str]) -> anyhow::Result<Plan> {
    let cli = Cli::try_parse_from(args).expect("arguments clap accepts");
    plan(&cli, &Context::new())
}

fn is_usage_error(result: anyhow::Result<Plan>) -> bool {
    result.is_err_and(|e| e.downcast_ref::<UsageError>().is_some())
}

/// Whether a plan is the variant a command line should give.
type Expected = fn(&Plan) -> bool;

#[test]
fn every_subcommand_plans_into_its_own_variant() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().to_str().expect("a UTF-8 path");
    let cases: Vec<(Vec<&str>, Expected)> = vec![
        (
            vec!["memscope", "--quick", "--no-files", "--out", out],
            |p| matches!(p, Plan::Run(m) if m.name == "run"),
        ),
        (vec!["memscope", "info"], |p| matches!(p, Plan::Info(_))),
        (
            vec!["memscope", "latency", "--quick"],
            |p| matches!(p, Plan::Experiment(m) if m.name == "latency" && m.experiments.latency.is_some()),
        ),
        (vec!["memscope", "stat", "true"], |p| {
            matches!(p, Plan::Stat(_))
        }),
        (vec!["memscope", "pages", "record", "--", "true"], |p| {
            matches!(p, Plan::Pages(_))
        }),
        (vec!["memscope", "restore"], |p| {
            matches!(p, Plan::Restore(()))
        }),
    ];
    for (args, expected) in cases {
        let plan = plan_of(&args).unwrap_or_else(|e| panic!("{args:?}: {e:#}"));
        assert!(expected(&plan), "{args:?} planned as {plan:?}");
    }
}

#[test]
fn the_profile_keeps_its_quick_experiments() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().to_str().expect("a UTF-8 path");
    let Ok(Plan::Run(run)) = plan_of(&["memscope", "run", "--quick", "--no-files", "--out", out])
    else {
        panic!("run plans as the profile");
    };
    let e = &run.experiments;
    assert!(e.latency.is_some() && e.miss_impact.is_some() && e.bandwidth.is_some());
    assert!(e.stride.is_some() && e.mlp.is_some() && e.tlb.is_some());
    assert!(e.files.is_none(), "--no-files leaves the file reads out");
    // Counters stay off in the profile.
    assert_eq!(e.latency.as_ref().map(|c| c.counters), Some(false));
    assert!(run.outputs.json.is_some() && run.outputs.html.is_some());
}

#[test]
fn counters_reach_latency_stride_and_tlb() {
    let counters = |args: &[&str]| match plan_of(args) {
        Ok(Plan::Experiment(m)) => [
            m.experiments.latency.map(|c| c.counters),
            m.experiments.stride.map(|c| c.counters),
            m.experiments.tlb.map(|c| c.counters),
        ],
        other => panic!("{args:?}: {other:?}"),
    };
    for (i, command) in ["latency", "stride", "tlb"].into_iter().enumerate() {
        let on = counters(&["memscope", command, "--quick", "--counters"]);
        assert_eq!(on[i], Some(true), "{command}");
        assert_eq!(
            counters(&["memscope", command])[i],
            Some(false),
            "{command}"
        );
    }
    // Only the experiments that count take the flag.
    for command in ["run", "bandwidth", "mlp"] {
        assert!(Cli::try_parse_from(["memscope", command, "--counters"]).is_err());
    }
}

#[test]
fn bad_values_are_usage_errors_before_anything_runs() {
    // Counts and durations out of range are refused by clap, naming the flag.
    for args in [
        &["memscope", "stat", "-r", "0", "true"][..],
        &["memscope", "footprint", "--threads", "0", "/bin/true"],
        &["memscope", "advise", "--time-limit", "8d", "--", "true"],
    ] {
        let e = Cli::try_parse_from(args).expect_err("a value out of range");
        assert_eq!(
            e.kind(),
            clap::error::ErrorKind::ValueValidation,
            "{args:?}"
        );
    }
    let bad: [&[&str]; 6] = [
        &["memscope", "latency", "--max-size", "12Q"],
        &["memscope", "advise", "--time-limit", "5s", "--", "true"],
        &["memscope", "stat", "-e", "no-such-event", "true"],
        &[
            "memscope",
            "compare",
            "/nonexistent/a.json",
            "/nonexistent/b.json",
        ],
        &["memscope", "history", "--db", "/", "--last", "1"],
        &["memscope", "run", "--out", "/nonexistent/dir"],
    ];
    for args in bad {
        assert!(is_usage_error(plan_of(args)), "{args:?}");
    }
    // Two outputs on stdout.
    assert!(is_usage_error(plan_of(&[
        "memscope",
        "bandwidth",
        "--json",
        "-",
        "--prometheus",
        "-"
    ])));
    // The Prometheus text alone on stdout is fine: it does not count itself.
    assert!(plan_of(&["memscope", "bandwidth", "--prometheus", "-"]).is_ok());
}

#[test]
fn restore_plans_without_the_machine() {
    let context = Context::new();
    let cli = Cli::try_parse_from(["memscope", "restore"]).expect("restore parses");
    assert!(matches!(plan(&cli, &context), Ok(Plan::Restore(()))));
    assert!(context.machine.get().is_none(), "restore needs no topology");
}

#[test]
fn cli_definition_is_consistent() {
    Cli::command().debug_assert();
}

/// The output flags are declared once (`flags`) and worded per command with
/// `mut_arg`: each command's own help, and the shared one where it has none.
#[test]
fn output_flags_are_worded_per_command() {
    let cli = Cli::command();
    let help = |command: Option<&str>, flag: &str| {
        let command = command.map_or(&cli, |name| {
            cli.find_subcommand(name).expect("the subcommand exists")
        });
        let arg = command.get_arguments().find(|a| a.get_id() == flag);
        arg.and_then(|a| a.get_help()).map(|h| h.to_string())
    };
    let stdout = "to FILE ('-' for stdout)";
    let cases = [
        (
            Some("info"),
            "json",
            "Write the `machine` JSON object's report",
        ),
        (Some("info"), "csv", "Write the cache table as CSV"),
        (Some("stat"), "json", "Write the JSON report"),
        (
            Some("stat"),
            "csv",
            "Write the counts and derived figures as CSV",
        ),
        (
            Some("history"),
            "json",
            "Write the listing (or the check) as JSON",
        ),
        (Some("latency"), "csv", "Write the result rows as CSV"),
        (Some("run"), "csv", "Write the result rows as CSV"),
        (None, "csv", "Write the result rows as CSV"),
        (
            Some("footprint"),
            "csv",
            "Write the tables (every run, region or object) as CSV",
        ),
    ];
    for (command, flag, words) in cases {
        assert_eq!(
            help(command, flag).as_deref(),
            Some(format!("{words} {stdout}").as_str()),
            "{command:?} --{flag}"
        );
    }
    let run_html = "Write the HTML report here instead of DIR/memscope-report.html";
    assert_eq!(help(Some("run"), "html").as_deref(), Some(run_html));
    assert_eq!(help(None, "html").as_deref(), Some(run_html));
    let html = "Write the self-contained HTML report, with its plots, to FILE";
    assert_eq!(help(Some("sweep"), "html").as_deref(), Some(html));
    assert_eq!(help(Some("info"), "html"), None);
}

/// The dispatch reaches the room and brings its document back: `info` on a machine the
/// test describes (not the one it runs on) shows that machine, writes JSON where asked,
/// and exits 0.
#[test]
fn a_plan_runs_by_its_room_and_returns_its_document() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let json = dir.path().join("info.json");
    let json = json.to_str().expect("a UTF-8 path");
    let cli = Cli::try_parse_from(["memscope", "info", "--json", json]).expect("accepted");
    let context = Context::new();
    let _ = context.machine.set(Machine::sample());
    let plan = plan(&cli, &context).expect("info plans");
    let (document, code) = plan.run(context).expect("info runs");
    assert_eq!(code, ExitCode::SUCCESS);
    assert!(document.text.contains("Test CPU 9000"), "{}", document.text);
    assert!(document.outputs.json.is_some());
    assert!(!document.text_to_stderr);
}
