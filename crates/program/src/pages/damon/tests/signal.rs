//! The kdamond is removed when a signal stops the process: a child test process starts
//! one in a fake tree and is signalled.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::*;

const CHILD_ENV: &str = "MEMSCOPE_DAMON_SIGNAL_CHILD";
const CHILD_TEST: &str = "pages::damon::tests::signal::signal_child_starts_and_waits";
const CHILD_READY: &str = "memscope-damon-child-ready";

/// Kills and reaps the child if a test ends early.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

#[test]
fn a_signal_removes_the_kdamond_before_exit() {
    for signo in cleanup::SIGNALS {
        let fake = Fake::new(0);
        fake_kdamond(&fake.admin(), 0, "off", "-1", "", "vaddr", 0);
        let mut child = ChildGuard(
            Command::new(std::env::current_exe().unwrap())
                .args([CHILD_TEST, "--exact", "--ignored", "--nocapture"])
                .env(CHILD_ENV, fake.dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let stdout = child.0.stdout.take().unwrap();
        let (ready_tx, ready) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.starts_with(CHILD_READY) {
                    let _ = ready_tx.send(line);
                }
            }
        });
        let mut stderr = String::new();
        if ready.recv_timeout(Duration::from_secs(60)).is_err() {
            let _ = child.0.kill();
            let _ = child.0.wait();
            std::io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut stderr)
                .unwrap();
            panic!("the child did not start its kdamond: {stderr}");
        }
        assert_eq!(get(&fake.admin(), "kdamonds/nr_kdamonds"), "1");
        // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
        assert_eq!(unsafe { libc::kill(child.0.id() as libc::pid_t, signo) }, 0);
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.0.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the child ignored signal {signo}"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        std::io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.code(), Some(128 + signo), "{status:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{}: removed DAMON kdamond 0 (memscope's)",
                cleanup::signal_name(signo)
            )),
            "{stderr}"
        );
        assert_eq!(get(&fake.admin(), "kdamonds/nr_kdamonds"), "0");
        assert_eq!(get(&fake.admin(), "kdamonds/0/state"), "off");
    }
}

/// The child of `a_signal_removes_the_kdamond_before_exit`: starts a kdamond in the fake
/// tree it is given, says so, and waits for its signal.
#[test]
#[ignore = "the child process of a_signal_removes_the_kdamond_before_exit"]
fn signal_child_starts_and_waits() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let sysfs = Sysfs::new(&dir.join("admin"));
    let _monitor = DamonMonitor::start_in(
        sysfs,
        &dir.join("proc"),
        true,
        PID as libc::pid_t,
        5_000,
        100_000,
    )
    .unwrap();
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{CHILD_READY}").unwrap();
    stdout.flush().unwrap();
    drop(stdout);
    std::thread::sleep(Duration::from_secs(120));
}
