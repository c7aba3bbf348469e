//! The fleet recipe end to end: scripts/fleet-slurm starts a private Slurm, runs the
//! recipe of docs/fleet.md as a job array with one task planted as an outlier, and checks
//! that `compare` names that task and no other, and that nothing of its Slurm is left.
//! It runs only where Slurm and munge are already installed and we are root: a test never
//! installs packages.

use std::path::Path;
use std::time::Duration;

use crate::util::{exclusive, is_root, BINARY};

/// The programs the script needs that a test must not install.
const NEEDED: [&str; 8] = [
    "slurmctld",
    "slurmd",
    "sbatch",
    "squeue",
    "sinfo",
    "scontrol",
    "munged",
    "mungekey",
];

/// Where `name` is on PATH, if anywhere.
fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
}

#[test]
fn fleet_slurm_runs_the_recipe_checks_the_planted_task_and_leaves_nothing_running() {
    if !is_root() {
        eprintln!("skipped: scripts/fleet-slurm runs a private slurmd as root; not root");
        return;
    }
    let missing: Vec<&str> = NEEDED.into_iter().filter(|n| !on_path(n)).collect();
    if !missing.is_empty() || !on_path("python3") {
        eprintln!(
            "skipped: {} not installed (apt-get install slurm-wlm munge python3; \
             the test does not install packages)",
            if on_path("python3") {
                missing.join(", ")
            } else {
                "python3".into()
            }
        );
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fleet-slurm");
    // The array's tasks measure; nothing else may measure meanwhile.
    let _one_at_a_time = exclusive();
    let output = assert_cmd::Command::new("python3")
        .arg(&script)
        .args([
            "--tasks",
            "3",
            "--quick",
            "--no-install",
            "--memscope",
            BINARY,
        ])
        .env_remove("MEMSCOPE_SAVE")
        .timeout(Duration::from_secs(600))
        .output()
        .expect("python3 scripts/fleet-slurm runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let context = format!("exit {:?}\n{stdout}\n{stderr}", output.status.code());
    // What holds on any machine: the private Slurm ran the three tasks, compare and
    // history ran, and nothing of it is left. Whether the planted 4 KiB pages lie beyond
    // this machine's noise is a measurement: exit 0 (named) or 1 with the check's FAIL
    // line, never a failed step.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("reports: ") && l.ends_with("-2.json")),
        "{context}"
    );
    assert!(stdout.contains("Who compare named"), "{context}");
    assert!(
        stdout.contains("cleaned up: no daemon or job process left"),
        "{context}"
    );
    match output.status.code() {
        Some(0) => assert!(stdout.contains("PASS: compare named"), "{context}"),
        Some(1) => {
            assert!(stdout.contains("FAIL: "), "{context}");
            eprintln!("fleet-slurm ran, but the planted outlier was within this machine's noise");
        }
        _ => panic!("fleet-slurm failed: {context}"),
    }
}
