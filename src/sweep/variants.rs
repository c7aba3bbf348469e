//! Building each variant once: the user's build line through `sh -c` in the current
//! directory, then every `--keep` path copied into the variant's own directory under a
//! temporary work directory, so the variants can later run interleaved without
//! rebuilding. The work directory is removed when the sweep ends, on an error, and on
//! SIGINT/SIGTERM/SIGHUP/SIGQUIT (through `platform::cleanup`). A build that fails stops
//! the sweep with its output and the variant that failed; the variant's binary is read by
//! `footprint` so its per-thread footprint sits beside its figures.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use super::params::same_path;
use super::template::{self, Assignment};
use super::{FootprintSummary, SweepError, SweepPlan, VariantInfo};
use crate::footprint::{self, FootprintPlan};
use crate::platform::scratch::ScratchDir;
use crate::session::progress::Progress;
use crate::topology::Machine;

/// The variants as built: where each one's kept files are.
pub struct Built {
    /// Removed on drop; `None` when nothing is built (runtime knobs only).
    _work: Option<WorkDir>,
    pub variants: Vec<BuiltVariant>,
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
    pub fn copy_of(&self, word: &str) -> Option<&Path> {
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
}

/// Builds every variant (when there is a build line) and keeps its files.
pub fn build_all(plan: &SweepPlan, machine: &Machine) -> Result<Built, SweepError> {
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
            _work: None,
            variants,
        });
    };
    let work = WorkDir::create()?;
    let progress = Progress::for_stderr();
    progress.start("building variants", plan.variants.len() as u64);
    let mut variants = Vec::new();
    for (index, assignment) in plan.variants.iter().enumerate() {
        progress.message(&assignment.label());
        let line = template::substitute(build, assignment);
        let started = Instant::now();
        run_build(&line, assignment, &work)?;
        let build_s = started.elapsed().as_secs_f64();
        let dir = work.path().join(format!("variant-{}", index + 1));
        let mut kept = Vec::new();
        let mut library_dirs: Vec<PathBuf> = Vec::new();
        for given in &plan.keep {
            let given = template::substitute(given, assignment);
            let copy = dir.join(kept_name(&given));
            copy_kept(&given, &copy).map_err(|e| {
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
    Ok(Built {
        _work: Some(work),
        variants,
    })
}

/// Runs one build line; its output goes to a file in the work directory, shown when the
/// build fails.
fn run_build(line: &str, assignment: &Assignment, work: &WorkDir) -> Result<(), SweepError> {
    let log_path = work.path().join("build.log");
    let failed = |why: String| {
        let output = std::fs::read_to_string(&log_path).unwrap_or_default();
        SweepError(format!(
            "the build of variant {} failed ({why}); build line: {line}{}",
            assignment.label(),
            tail("build output", &output, 40)
        ))
    };
    let log = std::fs::File::create(&log_path)
        .map_err(|e| SweepError(format!("cannot write {}: {e}", log_path.display())))?;
    let err = log
        .try_clone()
        .map_err(|e| SweepError(format!("cannot write {}: {e}", log_path.display())))?;
    let status = Command::new("sh")
        .arg("-c")
        .arg(line)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .status()
        .map_err(|e| failed(format!("cannot run sh: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(failed(match status.code() {
            Some(code) => format!("exit status {code}"),
            None => "killed by a signal".to_string(),
        }))
    }
}

/// The last `lines` lines of `output`, indented under a heading (empty when there is none).
pub fn tail(what: &str, output: &str, lines: usize) -> String {
    let all: Vec<&str> = output.lines().collect();
    if all.is_empty() {
        return format!("\n  (no {what})");
    }
    let start = all.len().saturating_sub(lines);
    let mut text = format!(
        "\n  {what}{}:",
        if start > 0 {
            format!(" (last {lines} of {} lines)", all.len())
        } else {
            String::new()
        }
    );
    for line in &all[start..] {
        text.push_str("\n    ");
        text.push_str(line);
    }
    text
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

/// Copies a file (permissions kept) or a directory tree.
fn copy_kept(from: &str, to: &Path) -> std::io::Result<()> {
    let from = Path::new(from);
    let meta = std::fs::metadata(from)?;
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if meta.is_dir() {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            let source = entry.path();
            copy_kept(&source.to_string_lossy(), &to.join(entry.file_name()))?;
        }
        Ok(())
    } else {
        std::fs::copy(from, to).map(|_| ())
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
        top: 0,
        measured: None,
    };
    let result = footprint::run(&plan, machine).ok()?;
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
