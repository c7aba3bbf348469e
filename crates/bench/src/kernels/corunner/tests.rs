//! The co-runner's loads on a real CPU: compute and idle, the pirate's speed by set size,
//! the bandit's pacing, and the calibration's refusals.
use super::*;
use crate::platform::affinity::allowed_cpus;

/// The tests' co-runners share one CPU: one test at a time, so that none measures
/// another's load.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn runner(pirate_max_bytes: u64, bandit_buffer_bytes: u64) -> (MutexGuard<'static, ()>, CoRunner) {
    let guard = lock(&ONE_AT_A_TIME);
    let cpu = *allowed_cpus().unwrap().last().unwrap();
    let co = CoRunner::start(CoRunnerSetup {
        cpu,
        pirate_max_bytes,
        bandit_buffer_bytes,
    })
    .unwrap();
    (guard, co)
}

#[test]
fn compute_advances_and_idle_does_not() {
    let (_one, co) = runner(0, 2 * MIB);
    co.set(Load::Compute);
    std::thread::sleep(Duration::from_millis(30));
    let busy = co.take_stats();
    assert!(busy.steps > 0, "{busy:?}");
    assert_eq!((busy.ns_per_step, busy.bytes_per_s), (0.0, 0.0));
    co.set(Load::Idle);
    std::thread::sleep(Duration::from_millis(30));
    let idle = co.take_stats();
    assert_eq!(idle.steps, 0, "{idle:?}");
    assert!(idle.seconds > 0.0);
    assert_eq!(co.cpu(), *allowed_cpus().unwrap().last().unwrap());
}

#[test]
fn a_pirate_of_no_bytes_is_idle_and_take_stats_resets() {
    let (_one, co) = runner(MIB, 2 * MIB);
    co.set(Load::Pirate { bytes: 0 });
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(co.take_stats().steps, 0);
    co.set(Load::Pirate { bytes: 63 });
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(co.take_stats().steps, 0);
    co.set(Load::Pirate { bytes: 64 * 1024 });
    std::thread::sleep(Duration::from_millis(20));
    let first = co.take_stats();
    assert!(first.steps > 0 && first.ns_per_step > 0.0, "{first:?}");
    co.set(Load::Idle);
    let after = co.take_stats();
    assert!(after.steps < first.steps, "{after:?} after {first:?}");
    // Dropped while running a load: the thread stops and is joined.
    co.set(Load::Compute);
    drop(co);
}

#[test]
fn a_small_pirate_set_walks_faster_than_a_huge_one() {
    let (_one, co) = runner(64 * MIB, 2 * MIB);
    let ns = |bytes| {
        co.set(Load::Pirate { bytes });
        std::thread::sleep(Duration::from_millis(50));
        co.take_stats().ns_per_step
    };
    let small = ns(16 * 1024);
    let large = ns(64 * MIB);
    assert!(
        small > 0.0 && small < large,
        "16 KiB {small} ns, 64 MiB {large} ns"
    );
}

#[test]
fn a_paced_bandit_holds_a_quarter_of_its_flat_out_rate() {
    let (_one, co) = runner(0, 64 * MIB);
    co.set(Load::Bandit { bytes_per_s: None });
    std::thread::sleep(Duration::from_millis(100));
    let flat_out = co.take_stats().bytes_per_s;
    assert!(flat_out > 0.0);
    co.set(Load::Bandit {
        bytes_per_s: Some(flat_out / 4.0),
    });
    std::thread::sleep(Duration::from_millis(200));
    let paced = co.take_stats().bytes_per_s;
    let ratio = paced / flat_out;
    assert!((0.15..0.40).contains(&ratio), "{paced} of {flat_out}");
    co.set(Load::Bandit {
        bytes_per_s: Some(0.0),
    });
    assert_eq!(co.take_stats().steps, 0);
}

#[test]
fn calibration_refuses_what_it_cannot_do_and_orders_its_figures() {
    let (_one, co) = runner(4 * MIB, 64 * MIB);
    assert!(co.calibrate(&[8 * MIB], MIB, None).is_err());
    assert!(co.calibrate(&[MIB], MIB, Some(co.cpu())).is_err());
    let cpus = allowed_cpus().unwrap();
    let beside = cpus.iter().copied().find(|&c| c != co.cpu());
    let calibration = co.calibrate(&[16 * 1024], MIB, beside).unwrap();
    let (size, small) = calibration.pirate_alone_ns[0];
    assert_eq!(size, 16 * 1024);
    assert!(
        small > 0.0 && small < calibration.dram_ns,
        "{calibration:?}"
    );
    assert!(calibration.bandit_max_bytes_per_s > 0.0);
    assert_eq!(
        beside.is_some(),
        calibration.pirate_beside_bandit_ns > 0.0,
        "{calibration:?}"
    );
    assert_eq!(co.take_stats().steps, 0, "left idle");
}

#[test]
fn two_co_runners_on_one_cpu_take_turns_and_are_timed_while_they_run() {
    let (_one, first) = runner(MIB, 2 * MIB);
    let second = CoRunner::start(CoRunnerSetup {
        cpu: first.cpu(),
        pirate_max_bytes: 4 * MIB,
        bandit_buffer_bytes: 2 * MIB,
    })
    .unwrap();
    first.set(Load::Pirate { bytes: 256 * 1024 });
    second.set(Load::Compute);
    first.take_stats();
    second.take_stats();
    std::thread::sleep(Duration::from_millis(200));
    let (a, b) = (first.take_stats(), second.take_stats());
    // One CPU gives at most one second per second to the two of them together.
    assert!(a.cpu_share + b.cpu_share <= 1.05, "{a:?} {b:?}");
    assert!(a.steps > 0 && b.steps > 0, "{a:?} {b:?}");
    // The pirate is timed over its own CPU time: its ns per step is not its wall clock's.
    let wall_ns = a.seconds * 1e9 * CHAINS as f64 / a.steps as f64;
    assert!(a.ns_per_step < wall_ns, "{a:?}");
    // The check runs, clamps the sets to the buffers and leaves both idle.
    let check = first.sharing_check(&second, 8 * MIB, 64 * MIB);
    assert_eq!((check.bytes, check.other_bytes), (MIB, 4 * MIB));
    assert!(check.alone_ns > 0.0 && check.beside_ns > 0.0, "{check:?}");
    assert!(check.shared().is_some());
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(first.take_stats().steps + second.take_stats().steps, 0);
}

#[test]
fn bursts_run_a_part_of_each_period_and_the_pirate_sweeps_its_whole_set() {
    let (_one, co) = runner(MIB, 2 * MIB);
    assert_eq!(co.bursts_realtime(), None);
    co.set(Load::PirateBursts { bytes: 256 * 1024 });
    std::thread::sleep(Duration::from_millis(60));
    let pirate = co.take_stats();
    let lines = 256 * 1024 / LINE as u64;
    assert!(pirate.steps >= lines, "{pirate:?}");
    assert_eq!(pirate.steps % lines, 0, "whole sweeps only: {pirate:?}");
    assert!(pirate.ns_per_step > 0.0, "{pirate:?}");
    // Asleep between bursts: well under the whole CPU even on a busy machine.
    if pirate.cpu_share.is_finite() {
        assert!(pirate.cpu_share < 0.9, "{pirate:?}");
    }
    co.set(Load::ComputeBursts);
    std::thread::sleep(Duration::from_millis(60));
    let compute = co.take_stats();
    assert!(compute.steps > 0, "{compute:?}");
    assert_eq!(compute.ns_per_step, 0.0);
    if compute.cpu_share.is_finite() {
        assert!(compute.cpu_share < 0.9, "{compute:?}");
    }
    // No set: idle.
    co.set(Load::PirateBursts { bytes: 0 });
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(co.take_stats().steps, 0);
    // Bursts ran, at real-time priority or not: the policy they got is known.
    assert!(co.bursts_realtime().is_some());
    co.set(Load::Compute);
    drop(co);
}
