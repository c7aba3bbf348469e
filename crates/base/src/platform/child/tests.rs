//! Tests of `platform::child`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use super::*;

/// Set in the helper process of `the_command_dies_with_memscope`.
const HELPER_ENV: &str = "MEMSCOPE_CHILD_DEATH_HELPER";
const HELPER_TEST: &str = "platform::child::tests::death_helper_runs_a_command_and_waits";

fn run(args: &[&str]) -> Result<Finished, SpawnError> {
    let command: Vec<OsString> = args.iter().map(OsString::from).collect();
    spawn_paused(&command)?.run()
}

#[test]
fn exit_statuses_come_back() {
    assert_eq!(run(&["true"]).unwrap().termination, Termination::Exited(0));
    assert_eq!(run(&["false"]).unwrap().termination, Termination::Exited(1));
    let killed = run(&["sh", "-c", "kill -TERM $$"]).unwrap().termination;
    assert_eq!(killed, Termination::Signaled(libc::SIGTERM));
    assert_eq!(killed.shell_status(), 128 + libc::SIGTERM);
}

#[test]
fn a_missing_program_is_an_error_with_the_shells_status() {
    for missing in ["/nonexistent", "memscope-no-such-program"] {
        let err = run(&[missing]).unwrap_err();
        assert!(
            err.to_string().contains(&format!("cannot run '{missing}'")),
            "{err}"
        );
        assert!(err.to_string().contains("No such file"), "{err}");
        assert_eq!(err.exit_code(), 127);
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("not-executable");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    let err = run(&[script.to_str().unwrap()]).unwrap_err();
    assert_eq!(err.exit_code(), 126, "{err}");
    assert!(matches!(run(&[]), Err(SpawnError::Empty)));
    assert!(matches!(run(&["tr\0ue"]), Err(SpawnError::NulByte(_))));
}

#[test]
fn elapsed_and_cpu_times_are_measured() {
    let finished = run(&["sleep", "0.05"]).unwrap();
    assert!(finished.elapsed >= Duration::from_millis(50));
    assert!(finished.elapsed < Duration::from_secs(5));
    let busy = run(&[
        "sh",
        "-c",
        "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done",
    ])
    .unwrap();
    assert!(busy.user + busy.system > Duration::ZERO, "{busy:?}");
    assert!(busy.max_rss_kib > 0, "{busy:?}");
}

/// Runs `words` to success with `options`, its stdout and stderr captured; returns them.
fn captured(words: &[&str], options: SpawnOptions) -> (String, String) {
    let out = tempfile::tempfile().unwrap();
    let err = tempfile::tempfile().unwrap();
    let options = SpawnOptions {
        stdout: Some(out.as_raw_fd()),
        stderr: Some(err.as_raw_fd()),
        ..options
    };
    let command: Vec<OsString> = words.iter().map(OsString::from).collect();
    let finished = spawn_paused_with(&command, &options)
        .unwrap()
        .run()
        .unwrap();
    assert!(finished.termination.success());
    (read_back(out), read_back(err))
}

#[test]
fn output_goes_to_the_descriptors_given() {
    let (out, err) = captured(
        &["sh", "-c", "echo out; echo err >&2"],
        SpawnOptions::default(),
    );
    assert_eq!((out.as_str(), err.as_str()), ("out\n", "err\n"));
}

/// What was written to a captured output file.
fn read_back(mut f: std::fs::File) -> String {
    use std::io::{Read, Seek};
    let mut s = String::new();
    f.rewind().unwrap();
    f.read_to_string(&mut s).unwrap();
    s
}

/// What the command's own /proc/self/numa_maps says of its first mapping's policy.
fn child_policy(options: SpawnOptions) -> String {
    captured(&["head", "-n", "1", "/proc/self/numa_maps"], options).0
}

#[test]
fn the_command_runs_under_the_node_policy_asked_for() {
    if !Path::new("/proc/self/numa_maps").exists() {
        eprintln!("skipped: this kernel has no numa_maps (built without NUMA)");
        return;
    }
    let on = |policy| SpawnOptions {
        placement: Some(Placement {
            policy,
            nodes: vec![0],
        }),
        ..SpawnOptions::default()
    };
    let even = child_policy(on(NodePolicy::Interleave));
    assert!(even.contains(" interleave:0 "), "{even}");
    let bound = child_policy(on(NodePolicy::Bind));
    assert!(bound.contains(" bind:0 "), "{bound}");
    if !Path::new("/sys/kernel/mm/mempolicy/weighted_interleave").exists() {
        eprintln!("skipped the weighted mode: this kernel has no weighted interleave (6.9+)");
        return;
    }
    let weighted = child_policy(on(NodePolicy::WeightedInterleave));
    assert!(weighted.contains(" weighted interleave:0 "), "{weighted}");
}

#[test]
fn a_child_that_is_never_released_is_reaped() {
    let child = spawn_paused(&[OsString::from("true")]).unwrap();
    let pid = child.pid();
    drop(child);
    // SAFETY: probing whether the pid still names our child.
    let r = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
    assert_eq!(r, -1, "the child should already have been reaped");
}

/// The processes whose command line is exactly `words`.
fn processes_running(words: &[&str]) -> Vec<u32> {
    let wanted: Vec<u8> = words
        .iter()
        .flat_map(|w| [w.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted))
        .collect()
}

/// A shell line that leaves a detached `sleep DURATION` behind (a new session, two forks,
/// SIGTERM ignored), then sleeps `then` seconds itself.
fn leaves_a_daemon(duration: &str, then: u32) -> String {
    format!("setsid sh -c 'trap \"\" TERM; sleep {duration} & exit 0'; sleep {then}")
}

/// Waits up to 10 s for no process to run `words`; whether none does.
fn all_gone(words: &[&str]) -> bool {
    let since = Instant::now();
    while !processes_running(words).is_empty() && since.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    processes_running(words).is_empty()
}

#[test]
fn what_a_command_leaves_running_is_killed_and_counted_at_its_end() {
    let daemon = ["sleep", "59.001"];
    let command: Vec<OsString> = ["sh", "-c", &leaves_a_daemon(daemon[1], 0)]
        .iter()
        .map(OsString::from)
        .collect();
    let finished = spawn_paused(&command).unwrap().run().unwrap();
    assert!(all_gone(&daemon), "the daemon outlived its run");
    assert_eq!(finished.leftovers, 1, "{finished:?}");
    let mut tree = ProcessTree::default();
    tree.add(&finished);
    assert_eq!(tree.leftovers, vec![1]);
}

#[test]
fn a_command_still_going_at_its_deadline_is_stopped_with_its_tree() {
    let daemon = ["sleep", "59.002"];
    let line = format!("trap '' TERM; {}", leaves_a_daemon(daemon[1], 30));
    let command: Vec<OsString> = ["sh", "-c", &line].iter().map(OsString::from).collect();
    let mut running = spawn_paused(&command).unwrap().release().unwrap();
    let started = Instant::now();
    let finished = running
        .wait_until(Some(started + Duration::from_millis(300)))
        .unwrap();
    assert!(finished.stopped);
    // It ignored SIGTERM: SIGKILL after the grace period.
    assert_eq!(finished.termination, Termination::Signaled(libc::SIGKILL));
    assert!(started.elapsed() < STOP_GRACE + Duration::from_secs(5));
    assert!(all_gone(&daemon), "the daemon outlived the stop");
    // A command that ends in time is not stopped.
    let quick: Vec<OsString> = ["true"].iter().map(OsString::from).collect();
    let mut running = spawn_paused(&quick).unwrap().release().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    assert!(!running.wait_until(Some(deadline)).unwrap().stopped);
}

#[test]
fn the_command_and_what_it_started_die_with_memscope() {
    // A helper process (this test binary) stands for memscope: it runs a shell that
    // leaves a detached daemon, and waits to be killed. SIGKILL is survived only without
    // a PID namespace (what a non-root memscope says it cannot promise).
    let mut cases = vec![
        (libc::SIGTERM, false),
        (libc::SIGHUP, false),
        (libc::SIGTERM, true),
    ];
    if containment() == Containment::Namespace {
        cases.push((libc::SIGKILL, false));
    }
    for (n, (signal, subreaper)) in cases.into_iter().enumerate() {
        let daemon = format!("59.1{n}");
        let mut helper = Command::new(std::env::current_exe().unwrap());
        helper
            .args([HELPER_TEST, "--exact", "--ignored", "--nocapture"])
            .env(HELPER_ENV, &daemon)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if subreaper {
            helper.env(NO_NAMESPACE_ENV, "1");
        }
        let mut helper = helper.spawn().unwrap();
        // The pipe stays open until the helper is reaped: what it writes after "running"
        // (the harness's result, when its wait returns first) must not meet EPIPE.
        let mut stdout = BufReader::new(helper.stdout.take().unwrap()).lines();
        let ready = stdout
            .by_ref()
            .map_while(Result::ok)
            .any(|l| l == "running");
        let words = ["sleep", daemon.as_str()];
        let since = Instant::now();
        while processes_running(&words).is_empty() && since.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            ready && !processes_running(&words).is_empty(),
            "the daemon did not start"
        );
        // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
        assert_eq!(unsafe { libc::kill(helper.id() as libc::pid_t, signal) }, 0);
        let status = helper.wait().unwrap();
        drop(stdout);
        let gone = all_gone(&words);
        for pid in processes_running(&words) {
            // SAFETY: as above; a leftover of this test, named by its unique command line.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        assert!(
            gone,
            "signal {signal} (subreaper {subreaper}): the daemon outlived memscope ({status:?})"
        );
        if signal != libc::SIGKILL {
            // The signal thread killed the tree, then exited as a shell reports it.
            assert_eq!(
                std::os::unix::process::ExitStatusExt::into_raw(status) >> 8,
                128 + signal
            );
        }
    }
}

/// The helper of `the_command_and_what_it_started_die_with_memscope`.
#[test]
#[ignore = "the helper process of the_command_and_what_it_started_die_with_memscope"]
fn death_helper_runs_a_command_and_waits() {
    let Some(daemon) = std::env::var_os(HELPER_ENV) else {
        return;
    };
    let line = leaves_a_daemon(&daemon.to_string_lossy(), 60);
    let command: Vec<OsString> = ["sh", "-c", &line].iter().map(OsString::from).collect();
    let mut running = spawn_paused(&command).unwrap().release().unwrap();
    println!("running");
    // Killed by the test long before the command ends; waiting keeps this thread (the
    // one that forked) alive, as memscope's main thread is.
    let _ = running.wait();
    // The signal thread ends this process (as memscope's ends memscope); the test must
    // not end first and exit 0 while the tree is being killed.
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}
