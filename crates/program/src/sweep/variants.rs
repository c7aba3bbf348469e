//! Building each variant once: the user's build line (values shell-quoted,
//! `template::substitute_shell`) through `sh -c` in the current directory, then every
//! `--keep` path copied into the variant's own directory under a temporary work directory,
//! so the variants can later run interleaved without rebuilding. The work directory is a
//! `platform::scratch::ScratchDir`: the copies and the build log are created relative to
//! its descriptor (`O_NOFOLLOW`, exclusively), and it is checked in place after each
//! build and before each block of runs, so a directory swapped by another user stops the
//! sweep. It is removed when the sweep ends, on an error, and on
//! SIGINT/SIGTERM/SIGHUP/SIGQUIT (through `platform::cleanup`). A build that fails stops
//! the sweep with its output and the variant that failed; the variant's binary is read by
//! `binary::footprint` so its per-thread footprint sits beside its figures, and the
//! objects whose size differs between the variants are named (`footprint`).

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::params::same_path;
use super::template::{self, Assignment};
use super::{FootprintSummary, SweepError, SweepPlan, VariantInfo};
use crate::binary::{self, FootprintPlan};
use crate::platform::child;
use crate::platform::scratch::{Dir, ScratchDir};
use crate::session::progress::Progress;
use crate::topology::Machine;

/// The variants as built: where each one's kept files are.
pub struct Built {
    /// Removed on drop; `None` when nothing is built (runtime knobs only).
    work: Option<WorkDir>,
    pub variants: Vec<BuiltVariant>,
}

impl Built {
    /// An error naming the work directory when it was renamed or replaced since it was
    /// made (the kept copies run from there by path).
    pub(crate) fn check_in_place(&self) -> Result<(), SweepError> {
        match &self.work {
            Some(work) => work.check_in_place(),
            None => Ok(()),
        }
    }
}

/// One variant's kept files.
pub struct BuiltVariant {
    pub info: VariantInfo,
    /// Its directory of kept files (none without a build).
    pub dir: Option<PathBuf>,
    /// (the path as given to --keep, substituted; its copy).
    pub kept: Vec<(String, PathBuf)>,
    /// Directories of kept shared libraries, for LD_LIBRARY_PATH.
    pub library_dirs: Vec<PathBuf>,
}

impl BuiltVariant {
    /// The copy to run for a benchmark word, if the word names a kept path.
    pub(super) fn copy_of(&self, word: &str) -> Option<&Path> {
        self.kept
            .iter()
            .find(|(given, _)| same_path(given, word))
            .map(|(_, copy)| copy.as_path())
    }
}

/// The temporary directory of the kept copies, removed on drop and on a signal.
struct WorkDir(ScratchDir);

impl WorkDir {
    fn create() -> Result<WorkDir, SweepError> {
        let parent = std::env::temp_dir();
        ScratchDir::create_in(&parent, "memscope-sweep-")
            .map(WorkDir)
            .map_err(|e| {
                SweepError(format!(
                    "cannot create a work directory for the variants' builds in {}: {e}",
                    parent.display()
                ))
            })
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    fn check_in_place(&self) -> Result<(), SweepError> {
        self.0
            .check_in_place()
            .map_err(|e| SweepError(e.to_string()))
    }
}

/// Builds every variant (when there is a build line) and keeps its files.
pub(super) fn build_all(plan: &SweepPlan, machine: &Machine) -> Result<Built, SweepError> {
    let Some(build) = &plan.build else {
        let variants = plan
            .variants
            .iter()
            .map(|v| BuiltVariant {
                info: VariantInfo {
                    label: v.label(),
                    values: v.clone(),
                    build_s: None,
                    footprint: None,
                },
                dir: None,
                kept: Vec::new(),
                library_dirs: Vec::new(),
            })
            .collect();
        return Ok(Built {
            work: None,
            variants,
        });
    };
    let work = WorkDir::create()?;
    let progress = Progress::for_stderr();
    progress.start("building variants", plan.variants.len() as u64);
    let mut variants = Vec::new();
    for (index, assignment) in plan.variants.iter().enumerate() {
        progress.message(&assignment.label());
        let line = template::substitute_shell(build, assignment).map_err(SweepError)?;
        let started = Instant::now();
        run_build(&line, assignment, &work)?;
        let build_s = started.elapsed().as_secs_f64();
        work.check_in_place()?;
        let dir_name = format!("variant-{}", index + 1);
        let dir = work.path().join(&dir_name);
        let variant_dir = work
            .0
            .create_dir(&dir_name)
            .map_err(|e| SweepError(format!("cannot create {}: {e}", dir.display())))?;
        let mut kept = Vec::new();
        let mut library_dirs: Vec<PathBuf> = Vec::new();
        for given in &plan.keep {
            let given = template::substitute(given, assignment);
            let name = kept_name(&given);
            let copy = dir.join(&name);
            copy_kept(Path::new(&given), &variant_dir, &name).map_err(|e| {
                SweepError(format!(
                    "the build of variant {} did not leave '{given}' to keep ({e}); build \
                     line: {line}",
                    assignment.label()
                ))
            })?;
            if is_library(&given) {
                let parent = copy.parent().unwrap_or(&dir).to_path_buf();
                if !library_dirs.contains(&parent) {
                    library_dirs.push(parent);
                }
            }
            kept.push((given, copy));
        }
        work.check_in_place()?;
        let footprint = kept
            .iter()
            .find(|(_, copy)| is_elf(copy))
            .and_then(|(given, copy)| footprint_of(given, copy, machine));
        variants.push(BuiltVariant {
            info: VariantInfo {
                label: assignment.label(),
                values: assignment.clone(),
                build_s: Some(build_s),
                footprint,
            },
            dir: Some(dir),
            kept,
            library_dirs,
        });
        progress.advance();
    }
    progress.finish();
    let mut summaries: Vec<&mut FootprintSummary> = variants
        .iter_mut()
        .filter_map(|v| v.info.footprint.as_mut())
        .collect();
    super::footprint::keep_differing(&mut summaries);
    Ok(Built {
        work: Some(work),
        variants,
    })
}

/// Runs one build line; its output goes to a file in the work directory, shown when the
/// build fails.
fn run_build(line: &str, assignment: &Assignment, work: &WorkDir) -> Result<(), SweepError> {
    const LOG: &str = "build.log";
    let log_path = work.path().join(LOG);
    let cannot =
        |e: std::io::Error| SweepError(format!("cannot write {}: {e}", log_path.display()));
    // A fresh log per build, made exclusively inside the work directory.
    match work.0.remove(LOG) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(cannot(e)),
        _ => {}
    }
    let log = work.0.create_file(LOG).map_err(cannot)?;
    let failed = |why: String| {
        // Read back through the descriptor the build wrote to, not by path.
        let output = crate::trials::capture::read_tail(&log);
        SweepError(format!(
            "the build of variant {} failed ({why}); build line: {line}{}",
            assignment.label(),
            tail("build output", &output, 40)
        ))
    };
    let null = std::fs::File::open("/dev/null").map_err(cannot)?;
    // The build line and all it starts end with it and with memscope, like the benchmarks.
    let options = child::SpawnOptions {
        stdin: Some(null.as_raw_fd()),
        stdout: Some(log.as_raw_fd()),
        stderr: Some(log.as_raw_fd()),
        ..child::SpawnOptions::default()
    };
    let command = ["sh", "-c", line].map(std::ffi::OsString::from);
    let finished = child::spawn_paused_with(&command, &options)
        .and_then(|paused| paused.run())
        .map_err(|e| failed(format!("cannot run sh: {e}")))?;
    match finished.termination {
        child::Termination::Exited(0) => Ok(()),
        other => Err(failed(other.to_string())),
    }
}

/// The last `lines` lines of `output` on a line of its own, indented under a heading.
pub fn tail(what: &str, output: &str, lines: usize) -> String {
    format!("\n  {}", crate::trials::capture::tail(what, output, lines))
}

/// Where a kept path goes inside the variant's directory: its path relative to the
/// current directory when it is under it, else its file name.
fn kept_name(given: &str) -> PathBuf {
    let path = Path::new(given);
    let relative: PathBuf = path
        .components()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .collect();
    if path.is_relative() && !given.contains("..") && !relative.as_os_str().is_empty() {
        relative
    } else {
        PathBuf::from(path.file_name().unwrap_or(path.as_os_str()))
    }
}

/// Copies the file or directory tree `from` (in the user's directory) to `to` inside the
/// variant's directory `dir`, creating what is in between; every file and directory is
/// made relative to a descriptor, exclusively, and a file keeps its permission bits (not
/// set-id bits).
fn copy_kept(from: &Path, dir: &Dir, to: &Path) -> std::io::Result<()> {
    let name = to
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| std::io::Error::other(format!("'{}' has no file name", to.display())))?;
    let parent;
    let into = match to.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(p) => {
            parent = dir.create_dirs(p)?;
            &parent
        }
        None => dir,
    };
    copy_into(from, into, name, 0)
}

/// Copies `from` as `name` into `dir`, descending into directories (to a bounded depth).
fn copy_into(from: &Path, dir: &Dir, name: &str, depth: usize) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(from)?;
    if meta.is_dir() {
        if depth > 32 {
            return Err(std::io::Error::other(format!(
                "{} is more than 32 directories deep",
                from.display()
            )));
        }
        // An existing directory (an earlier --keep under it) is filled in, not refused.
        let sub = dir.create_dirs(Path::new(name))?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            let entry_name = entry.file_name();
            let entry_name = entry_name.to_str().ok_or_else(|| {
                std::io::Error::other(format!("{} is not UTF-8", entry.path().display()))
            })?;
            copy_into(&entry.path(), &sub, entry_name, depth + 1)?;
        }
        Ok(())
    } else {
        let mut source = std::fs::File::open(from)?;
        // A file an earlier --keep copied is replaced, as a copy by path would.
        let mut copy = match dir.create_file(name) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                dir.remove(name)?;
                dir.create_file(name)?
            }
            other => other?,
        };
        std::io::copy(&mut source, &mut copy)?;
        copy.set_permissions(std::fs::Permissions::from_mode(
            meta.permissions().mode() & 0o777,
        ))
    }
}

fn is_library(path: &str) -> bool {
    let name = Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.ends_with(".so") || name.contains(".so.")
}

fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}

/// `memscope footprint` of a variant's binary, reduced to what sits beside its figures.
fn footprint_of(given: &str, copy: &Path, machine: &Machine) -> Option<FootprintSummary> {
    let plan = FootprintPlan {
        binary: copy.to_string_lossy().into_owned(),
        pid: None,
        threads: 1,
        // Every static object: they are compared between the variants.
        top: usize::MAX,
        measured: None,
        debug_root: binary::debuginfo::DEFAULT_DEBUG_ROOT.into(),
    };
    let result = binary::footprint(&plan, machine).ok()?;
    let mut tls: Vec<(String, u64)> = result
        .objects
        .iter()
        .filter(|o| o.tls)
        .map(|o| (o.name.clone(), o.bytes))
        .collect();
    tls.sort_by_key(|o| std::cmp::Reverse(o.1));
    tls.truncate(3);
    let static_bytes = result
        .sections
        .iter()
        .filter(|(name, _)| !name.starts_with(".t"))
        .map(|(_, bytes)| bytes)
        .sum();
    Some(FootprintSummary {
        binary: given.to_string(),
        tls_bytes: result.tls.map_or(0, |t| t.bytes),
        static_bytes,
        largest_tls: tls,
        l1d_bytes: result.caches.l1d_bytes,
        l2_bytes: result.caches.l2_bytes,
        tls_pointee_bytes: result.tls_pointee_bytes,
        differing: super::footprint::objects(&result),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_paths_keep_their_place_under_the_variant_directory() {
        assert_eq!(kept_name("./build/bench"), PathBuf::from("build/bench"));
        assert_eq!(kept_name("bench"), PathBuf::from("bench"));
        assert_eq!(kept_name("/usr/lib/libx.so"), PathBuf::from("libx.so"));
        assert_eq!(kept_name("../out/bench"), PathBuf::from("bench"));
        assert!(is_library("lib/libring.so.1"));
        assert!(!is_library("bench"));
    }

    #[test]
    fn the_tail_of_an_output_is_indented_and_counted() {
        let text = tail("build output", "a\nb\nc\n", 2);
        assert_eq!(text, "\n  build output (last 2 of 3 lines):\n    b\n    c");
        assert!(tail("output", "", 5).contains("(no output)"));
    }
}
