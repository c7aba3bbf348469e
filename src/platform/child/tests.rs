//! Tests of `platform::child`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use super::*;
use crate::platform::journal::start_time;

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
fn the_command_runs_under_the_interleave_policy_asked_for() {
    if !Path::new("/proc/self/numa_maps").exists() {
        eprintln!("skipped: this kernel has no numa_maps (built without NUMA)");
        return;
    }
    let even = child_policy(SpawnOptions {
        interleave_nodes: Some(vec![0]),
        ..SpawnOptions::default()
    });
    assert!(even.contains(" interleave:0 "), "{even}");
    if !Path::new("/sys/kernel/mm/mempolicy/weighted_interleave").exists() {
        eprintln!("skipped the weighted mode: this kernel has no weighted interleave (6.9+)");
        return;
    }
    let weighted = child_policy(SpawnOptions {
        interleave_nodes: Some(vec![0]),
        interleave_mode: InterleaveMode::Weighted,
        ..SpawnOptions::default()
    });
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

/// Whether process `pid`, started at `started`, still runs (a zombie does not).
fn runs(pid: u32, started: u64) -> bool {
    start_time(Path::new("/proc"), pid) == Some(started)
}

#[test]
fn the_command_dies_with_memscope() {
    // A std Command with die_with_parent dies by the death signal alone: no signal
    // thread kills it on SIGTERM.
    for (signal, how) in [
        (libc::SIGKILL, "paused"),
        (libc::SIGTERM, "paused"),
        (libc::SIGKILL, "std"),
    ] {
        // A helper process (this test binary) stands for memscope: it runs `sleep`
        // through spawn_paused (or die_with_parent), says its pid, and waits to be
        // killed.
        let mut helper = Command::new(std::env::current_exe().unwrap())
            .args([HELPER_TEST, "--exact", "--ignored", "--nocapture"])
            .env(HELPER_ENV, how)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(helper.stdout.take().unwrap());
        let line = stdout
            .lines()
            .map_while(Result::ok)
            .find(|l| l.starts_with("sleep pid "));
        let Some(pid) = line.and_then(|l| l["sleep pid ".len()..].trim().parse::<u32>().ok())
        else {
            let _ = helper.kill();
            let _ = helper.wait();
            panic!("the helper did not start its command");
        };
        let started = start_time(Path::new("/proc"), pid).expect("the command runs");
        // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
        assert_eq!(unsafe { libc::kill(helper.id() as libc::pid_t, signal) }, 0);
        let status = helper.wait().unwrap();
        let killed = Instant::now();
        while runs(pid, started) && killed.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let still = runs(pid, started);
        if still {
            // SAFETY: as above; the pid still names the command (same start time).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        assert!(
            !still,
            "signal {signal}: the command outlived memscope ({status:?})"
        );
        eprintln!(
            "signal {signal}: the command was gone {:?} after memscope ({status:?})",
            killed.elapsed()
        );
        if signal == libc::SIGTERM {
            // The signal thread killed the command, then exited as a shell reports it.
            assert_eq!(
                std::os::unix::process::ExitStatusExt::into_raw(status) >> 8,
                128 + signal
            );
        }
    }
}

/// The helper of `the_command_dies_with_memscope`.
#[test]
#[ignore = "the helper process of the_command_dies_with_memscope"]
fn death_helper_runs_a_command_and_waits() {
    let Some(how) = std::env::var_os(HELPER_ENV) else {
        return;
    };
    if how == "std" {
        let mut sleep = Command::new("sleep");
        let mut child = die_with_parent(sleep.arg("60")).spawn().unwrap();
        println!("sleep pid {}", child.id());
        let _ = child.wait();
        return;
    }
    let command = [OsString::from("sleep"), OsString::from("60")];
    let mut running = spawn_paused(&command).unwrap().release().unwrap();
    println!("sleep pid {}", running.pid());
    // Killed by the test long before the command ends; waiting keeps this thread (the
    // one that forked) alive, as memscope's main thread is.
    let _ = running.wait();
}
