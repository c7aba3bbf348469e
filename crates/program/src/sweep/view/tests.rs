//! Tests of `view.rs`: split out so the module reads as the code it is.

use crate::render::html;

#[test]
fn the_page_plots_the_metric_before_the_wall_time_and_the_terminal_keeps_its_order() {
    let section = crate::sweep::figures::tests::sweep().section();
    let page = html::render(&html::Page {
        title: String::new(),
        generator: String::new(),
        heading: String::new(),
        byline: crate::view::Text::default(),
        stamp: None,
        glance: vec![],
        sections: vec![&section],
        footer: String::new(),
    });
    let page = String::from_utf8(page).unwrap();
    let ops = page
        .find("<title>ring bench: ops per s")
        .expect("the metric's chart");
    let wall = page
        .find("<title>ring bench: wall time")
        .expect("the wall time's chart");
    assert!(ops < wall, "the metric first");
    let terminal = crate::render::terminal::render(&[section], false);
    let (wall, ops) = (terminal.find("wall time"), terminal.find("ops per s"));
    assert!(wall.is_some() && wall < ops, "{terminal}");
}

/// The sample with two runs and a counted event, to see every column.
fn with_runs() -> crate::sweep::SweepResult {
    use crate::platform::child::Termination;
    let mut r = crate::sweep::figures::tests::sweep();
    r.events = vec!["cache-misses".to_string()];
    let run = |variant, order, termination| crate::sweep::SweepRun {
        block: 1,
        order,
        benchmark: 0,
        variant,
        elapsed_s: 1.234_567,
        user_s: 1.0,
        system_s: 0.0,
        max_rss_kib: 2048,
        termination,
        metrics: vec![Some(100.5)],
        counts: vec![None],
    };
    r.runs = vec![
        run(0, 0, Termination::Exited(0)),
        run(1, 1, Termination::Exited(3)),
    ];
    r
}

#[test]
fn csv_tables_put_the_parameters_first_and_the_metrics_and_events_last() {
    let csv = crate::render::csv::render(&[with_runs().section()]);
    let expected = "\
# sweep_runs
RING,benchmark,block,order,elapsed_s,user_s,system_s,max_rss_kib,exit,ops_per_s,cache_misses
16,ring bench,1,0,1.2346,1,0,2048,0,100.5,
64,ring bench,1,1,1.2346,1,0,2048,3,100.5,

# sweep_cells
RING,benchmark,figure,better,runs,failed,median,ci_low,ci_high,ci_coverage,change_pct,u,p,verdict
16,ring bench,wall time,lower,8,0,1,0.97,1.03,0.9922,,,,baseline
16,ring bench,ops per s,higher,8,0,100,100,100,0.9922,,,,baseline
64,ring bench,wall time,lower,8,0,0.8,0.78,0.82,0.9922,-20,0,0.000852,better
64,ring bench,ops per s,higher,8,0,,,,,,,,no data
";
    assert_eq!(String::from_utf8(csv).unwrap(), expected);
}
