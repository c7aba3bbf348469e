//! `memscope run`, the default command: the profile, which composes the experiments'
//! quick settings (the latency ladder, miss impact, bandwidth with a read and copy sweep,
//! the stride matrix at one size per level, a loaded-latency curve, DRAM parallelism, the
//! TLB levels and the file reads) and measures them through `measuring`.

use std::process::ExitCode;

use super::measuring::{run_measuring, MeasuringPlan, Skipped};
use super::output::{Outputs, Requested};
use super::{Command, Context, Document};
use crate::cli::RunArgs;
use crate::error::UsageError;
use crate::experiments::bandwidth::params::BandwidthArgs;
use crate::experiments::bandwidth::BandwidthConfig;
use crate::experiments::files::FilesConfig;
use crate::experiments::latency::params::LatencyArgs;
use crate::experiments::latency::LatencyConfig;
use crate::experiments::loaded::params::LoadedArgs;
use crate::experiments::loaded::LoadedConfig;
use crate::experiments::miss_impact::MissImpactConfig;
use crate::experiments::mlp::params::MlpArgs;
use crate::experiments::mlp::MlpConfig;
use crate::experiments::params::{defaults, thread_cpus, MeasurePlan};
use crate::experiments::stride::params::StrideArgs;
use crate::experiments::stride::StrideConfig;
use crate::experiments::tlb::params::TlbArgs;
use crate::experiments::tlb::TlbConfig;
use crate::experiments::Configs;
use crate::kernels::injector::Mix;
use crate::kernels::stream::{self, KernelSpec, Op};
use crate::report::document::MachineView;
use crate::topology::Machine;

/// `memscope run`: the profile.
pub struct Profile;

impl Command for Profile {
    type Args = RunArgs;
    type Plan = MeasuringPlan;

    fn plan(args: &RunArgs, context: &Context) -> anyhow::Result<MeasuringPlan> {
        Ok(profile(args, context.machine()?)?)
    }

    fn run(plan: MeasuringPlan, context: Context) -> anyhow::Result<(Document, ExitCode)> {
        run_measuring(plan, context, MachineView::Summary)
    }
}

/// The kernels of the profile's bandwidth-vs-size sweep: the plain read and the plain
/// copy (cached stores), in the registry's order.
fn profile_sweep_kernels() -> Vec<&'static KernelSpec> {
    (stream::KERNELS.iter())
        .filter(|k| !k.nontemporal && matches!(k.op, Op::Read | Op::Copy))
        .collect()
}

/// Makes the missing `--out` directory, the last part of the path only (its parent must
/// exist), as mkdir does. Safe where other users can write: the parent is opened once
/// (a link in its path only by the link rule: `platform::fs`), the directory made with mkdirat relative to that
/// handle, then opened with O_NOFOLLOW and checked to be a directory of ours, so a name
/// someone planted meanwhile (a symlink to elsewhere) is refused, never written through.
fn create_out_dir(dir: &std::path::Path) -> Result<(), String> {
    use crate::fs;
    use std::ffi::CString;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;

    let name = dir
        .file_name()
        .filter(|_| !dir.ends_with(".."))
        .ok_or("the path has no last part to create")?;
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    let name_c = CString::new(name.as_bytes()).map_err(|_| "the path holds a NUL byte")?;
    let parent_fd = fs::open_dir_path(parent).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => format!(
            "its parent '{}' does not exist (only the last part is created)",
            parent.display()
        ),
        _ => format!("its parent '{}' cannot be used: {error}", parent.display()),
    })?;
    let parent_fd = parent_fd.as_raw_fd();
    // SAFETY: mkdirat reads a NUL-terminated name relative to a descriptor we own.
    if let Err(error) = fs::cvt(unsafe { libc::mkdirat(parent_fd, name_c.as_ptr(), 0o777) }) {
        return Err(match error.raw_os_error() {
            Some(libc::EEXIST) => "something that is not a directory has that name".into(),
            _ => format!("cannot create it ({error})"),
        });
    }
    let made = fs::open_dir_at(parent_fd, &name_c)
        .map_err(|error| format!("it was replaced right after it was made ({error})"))?;
    match fs::stat_fd(made.as_raw_fd()) {
        Ok(st) if st.st_uid == crate::platform::journal::effective_uid() => {}
        _ => return Err("it was replaced right after it was made by one not ours".into()),
    }
    Ok(())
}

/// The profile's plan: the quick versions of the experiments, composed.
fn profile(args: &RunArgs, machine: &Machine) -> Result<MeasuringPlan, UsageError> {
    let measure = MeasurePlan::resolve(&args.measure, machine)?;
    let dir = std::path::Path::new(&args.out);
    if !dir.is_dir() {
        create_out_dir(dir).map_err(|reason| UsageError::OutputPath {
            path: args.out.clone(),
            reason: format!("--out expects a directory, or one to create: {reason}"),
        })?;
    }
    // The file given, else `name` in the output directory.
    let or_in_dir = |given: Option<&str>, name: &str| {
        given.map_or_else(
            || dir.join(name).to_string_lossy().into_owned(),
            String::from,
        )
    };
    let json = or_in_dir(args.measure.json.file(), "memscope-report.json");
    let html = or_in_dir(args.html.file(), "memscope-report.html");
    let latency = LatencyConfig::resolve(&defaults::<LatencyArgs>(), &measure, machine)?;
    // The quick versions of the other experiments: the bandwidth table with a read and
    // copy sweep, and the stride matrix at one size per level (a row of each kind of stride).
    let mut quick = measure.clone();
    quick.repetitions = quick.repetitions.min(5);
    quick.trial_ns = 1e6;
    let mut bandwidth = BandwidthConfig::resolve(&defaults::<BandwidthArgs>(), &quick, machine)?
        .with_sweep(profile_sweep_kernels(), &quick, machine);
    if measure.quick {
        // A rough answer: the STREAM-like kernels, without the read:write mixes that
        // fill in between them, three trials each.
        (bandwidth.kernels).retain(|k| !matches!(k.op, Op::Sum | Op::Increment));
        bandwidth.repetitions = bandwidth.repetitions.min(3);
    }
    let stride = StrideConfig::resolve(&defaults::<StrideArgs>(), &quick, machine)?
        .one_size_per_level(&quick, machine)
        .for_profile(measure.quick);
    // A quick loaded-latency curve (read mix, every injector), when there is a CPU
    // to inject from (`LoadedConfig::resolve` refuses a machine with one CPU: the
    // profile skips it instead).
    let loaded = (thread_cpus(machine, measure.cpu).len() > 1)
        .then(|| LoadedConfig::resolve(&defaults::<LoadedArgs>(), &quick, machine))
        .transpose()?
        .map(|loaded| LoadedConfig {
            mixes: vec![Mix::Read],
            ..loaded
        });
    let skipped = loaded.is_none().then_some(Skipped {
        experiment: "latency under load",
        reason: "it needs a second CPU for the injector thread, and this process may use \
                     only one",
    });
    let outputs = Outputs::resolve(Requested {
        json: Some(&json),
        csv: args.measure.csv.file(),
        html: Some(&html),
        save: Some(&args.measure.save),
    })?;
    let mut plan = MeasuringPlan {
        name: "run",
        outputs,
        measure,
        experiments: Configs::default(),
        skipped: Vec::new(),
        print_points: false,
    };
    plan.experiments.miss_impact = Some(MissImpactConfig::resolve(latency.order, &quick, machine));
    plan.experiments.latency = Some(latency);
    plan.experiments.bandwidth = Some(bandwidth);
    plan.experiments.stride = Some(stride);
    plan.experiments.loaded = loaded;
    plan.skipped.extend(skipped);
    // DRAM parallelism with the quick chain counts, the sequential model and Little's law.
    // No size × chains grid.
    let mut mlp = MlpConfig::resolve(&defaults::<MlpArgs>(), &quick, machine)?;
    mlp.grid_sizes.clear();
    mlp.levels.retain(|(name, _)| name == "DRAM");
    plan.experiments.mlp = Some(mlp);
    // The TLB levels with 4 KiB pages and the quick huge-page curve.
    let mut quick_tlb = quick.clone();
    quick_tlb.quick = true;
    let tlb = TlbConfig::resolve(&defaults::<TlbArgs>(), &quick_tlb, machine)?;
    plan.experiments.tlb = Some(tlb);
    // File reads in their quick form, in the current directory, unless skipped.
    if !args.no_files {
        plan.experiments.files = Some(FilesConfig::quick_profile());
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::{Cli, Subcommand};
    use clap::Parser;

    /// The experiments of the profile as they were built before the configs were typed:
    /// CLI strings written into default flags and parsed again. Kept as the reference the
    /// typed profile must equal.
    fn string_built(args: &RunArgs, machine: &Machine) -> Configs {
        let measure = MeasurePlan::resolve(&args.measure, machine).unwrap();
        let latency =
            LatencyConfig::resolve(&defaults::<LatencyArgs>(), &measure, machine).unwrap();
        let mut bandwidth_args = defaults::<BandwidthArgs>();
        bandwidth_args.sweep = true;
        bandwidth_args.sweep_kernels = "read,copy".into();
        let mut quick = measure.clone();
        quick.repetitions = quick.repetitions.min(5);
        quick.trial_ns = 1e6;
        let mut bandwidth_plan = quick.clone();
        if measure.quick {
            let names: Vec<&str> = (stream::all_kernels().map(|k| k.name))
                .filter(|name| !name.starts_with("mix"))
                .collect();
            bandwidth_args.kernels = names.join(",");
            bandwidth_plan.repetitions = bandwidth_plan.repetitions.min(3);
        }
        let bandwidth =
            BandwidthConfig::resolve(&bandwidth_args, &bandwidth_plan, machine).unwrap();
        let stride = StrideConfig::resolve(&defaults::<StrideArgs>(), &quick, machine)
            .unwrap()
            .one_size_per_level(&quick, machine)
            .for_profile(measure.quick);
        let loaded = (thread_cpus(machine, measure.cpu).len() > 1).then(|| {
            let mut loaded_args = defaults::<LoadedArgs>();
            loaded_args.mix = Some("read".into());
            LoadedConfig::resolve(&loaded_args, &quick, machine).unwrap()
        });
        let mut configs = Configs {
            miss_impact: Some(MissImpactConfig::resolve(latency.order, &quick, machine)),
            latency: Some(latency),
            bandwidth: Some(bandwidth),
            stride: Some(stride),
            loaded,
            ..Configs::default()
        };
        let mut mlp_args = defaults::<MlpArgs>();
        mlp_args.grid_max = Some("none".into());
        let mut mlp = MlpConfig::resolve(&mlp_args, &quick, machine).unwrap();
        mlp.levels.retain(|(name, _)| name == "DRAM");
        configs.mlp = Some(mlp);
        let mut quick_tlb = quick.clone();
        quick_tlb.quick = true;
        configs.tlb =
            Some(TlbConfig::resolve(&defaults::<TlbArgs>(), &quick_tlb, machine).unwrap());
        if !args.no_files {
            configs.files = Some(FilesConfig::quick_profile());
        }
        configs
    }

    #[test]
    fn the_typed_profile_equals_the_string_built_one() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let out = dir.path().to_str().expect("a UTF-8 path");
        let detected = crate::topology::detect().expect("the machine's topology");
        // This machine, and the same machine allowed one CPU (no loaded-latency curve).
        let mut one_cpu = detected.clone();
        one_cpu.allowed_cpus.truncate(1);
        let cpu = one_cpu.allowed_cpus[0].to_string();
        for machine in [&detected, &one_cpu] {
            for flags in [
                vec!["--quick"],
                vec![],
                vec![
                    "--quick",
                    "--no-files",
                    "--max-size",
                    "8M",
                    "--repetitions",
                    "3",
                ],
                vec!["--cpu", cpu.as_str(), "--pages", "4k"],
            ] {
                let argv = [&["memscope", "run", "--out", out], &flags[..]].concat();
                let cli = Cli::try_parse_from(&argv).expect("arguments clap accepts");
                let Some(Subcommand::Run(args)) = &cli.command else {
                    panic!("{argv:?} is `run`");
                };
                let typed = profile(args, machine).expect("the profile plans");
                assert_eq!(
                    format!("{:?}", typed.experiments),
                    format!("{:?}", string_built(args, machine)),
                    "{argv:?}"
                );
                assert_eq!(typed.skipped.is_empty(), typed.experiments.loaded.is_some());
            }
        }
    }
}

