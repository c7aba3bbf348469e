//! The memory guard in a memory cgroup (as root): a child cgroup of this process's own
//! with a 300 MiB limit, where `latency --max-size 1G` must be refused with exit 2
//! before measuring, naming the cgroup's limit (MemAvailable of the host is far larger),
//! and `info` shows the limit. cgroup v1 first, v2 where v1 has no memory controller;
//! skipped when not root or no memory controller can be written. The cgroup is removed
//! afterwards, also when the test fails.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::util::{exclusive, is_root, BINARY};

const LIMIT: u64 = 300 << 20;

/// A child memory cgroup with a limit, removed on drop.
struct TestCgroup {
    dir: PathBuf,
    /// Its path in the hierarchy, as memscope will name it.
    name: String,
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // The processes started in it have exited; an empty cgroup is removed with rmdir.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!(
            "note: could not remove the test cgroup {}",
            self.dir.display()
        );
    }
}

/// (mount root, mount point) of the first mount whose fs type and super options pass
/// `wanted`.
fn mount(wanted: impl Fn(&str, &str) -> bool) -> Option<(String, PathBuf)> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mountinfo.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let fields: Vec<&str> = before.split(' ').collect();
        let mut after = after.split(' ');
        let fs_type = after.next()?;
        let options = after.nth(1).unwrap_or("");
        wanted(fs_type, options).then(|| (fields[3].to_string(), PathBuf::from(fields[4])))
    })
}

/// This process's cgroup directory and path for the v1 memory controller or cgroup v2.
fn own_cgroup(v2: bool) -> Option<(PathBuf, String)> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cgroups.lines().find_map(|line| {
        let mut f = line.splitn(3, ':');
        let (id, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let ours = if v2 {
            id == "0" && controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == "memory")
        };
        ours.then(|| path.to_string())
    })?;
    let (root, point) = if v2 {
        mount(|fs, _| fs == "cgroup2")?
    } else {
        mount(|fs, options| fs == "cgroup" && options.split(',').any(|o| o == "memory"))?
    };
    let relative = path
        .strip_prefix(root.trim_end_matches('/'))
        .unwrap_or("")
        .trim_start_matches('/');
    Some((point.join(relative), path))
}

/// Makes `memscope-test-PID` under this process's memory cgroup with the limit set.
fn make_cgroup() -> Result<TestCgroup, String> {
    let mut why = Vec::new();
    for v2 in [false, true] {
        let Some((parent, path)) = own_cgroup(v2) else {
            why.push(format!("v{}: no memory cgroup", if v2 { 2 } else { 1 }));
            continue;
        };
        let leaf = format!("memscope-test-{}", std::process::id());
        let dir = parent.join(&leaf);
        if let Err(e) = std::fs::create_dir(&dir) {
            why.push(format!("{}: {e}", dir.display()));
            continue;
        }
        let cgroup = TestCgroup {
            dir: dir.clone(),
            name: format!("{}/{leaf}", path.trim_end_matches('/')),
        };
        let file = if v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        match std::fs::write(dir.join(file), LIMIT.to_string()) {
            Ok(()) => return Ok(cgroup),
            Err(e) => why.push(format!("{}: {e}", dir.join(file).display())),
        }
    }
    Err(why.join("; "))
}

/// Runs memscope ARGS inside the cgroup: a shell moves itself in, then execs it.
fn run_in(cgroup: &TestCgroup, args: &str) -> std::process::Output {
    let script = format!(
        "echo $$ > '{}' && exec '{BINARY}' {args}",
        cgroup.dir.join("cgroup.procs").display(),
    );
    assert_cmd::Command::new("sh")
        .args(["-c", &script])
        .timeout(Duration::from_secs(120))
        .output()
        .expect("sh runs")
}

#[test]
fn a_size_beyond_the_cgroup_limit_is_refused_naming_the_cgroup() {
    if !is_root() {
        eprintln!("skipped: creating a memory cgroup needs root");
        return;
    }
    // A cgroup is machine-wide state, and its limit is read against the host's memory.
    let _one_at_a_time = exclusive();
    let cgroup = match make_cgroup() {
        Ok(c) => c,
        Err(why) => {
            eprintln!("skipped: no writable memory cgroup controller ({why})");
            return;
        }
    };
    let out = run_in(&cgroup, "latency --quick --max-size 1G");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for word in [
        "--max-size 1 GiB",
        "memory cgroup",
        &cgroup.name,
        "limit 300 MiB",
    ] {
        assert!(stderr.contains(word), "no {word:?} in: {stderr}");
    }
    // Refused before measuring: no result was printed.
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let info = run_in(&cgroup, "info");
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(info.status.success(), "{info:?}");
    assert!(
        text.contains("Memory limit") && text.contains("300 MiB of cgroup"),
        "{text}"
    );
    assert!(Path::new(&cgroup.dir).exists());
}
