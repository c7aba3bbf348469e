//! The flags of `memscope footprint` (clap) and their resolution into a plan: the binary
//! must exist, the counts be sane, and a report given with `--against` (or found in the
//! current directory) must be a memscope report; both must be regular files
//! (`platform::user_file`). `--debug-dir` names where separate debug files are looked
//! for (a directory that does not exist is no error: nothing is found there).

use clap::Args;

use crate::binary::FootprintPlan;
use crate::error::UsageError;
use crate::flags::OutputArgs;
use crate::flags::MAX_REPORT_BYTES;
use crate::platform::user_file;

#[derive(Debug, Clone, Args)]
#[command(after_help = crate::examples::FOOTPRINT)]
pub struct FootprintArgs {
    /// The ELF binary or shared library to read (default with --pid: the process's
    /// executable).
    #[arg(value_name = "BINARY", required_unless_present = "pid")]
    pub binary: Option<String>,

    /// A running process whose mappings to show beside the static view: resident memory,
    /// anonymous vs file-backed and the share in transparent huge pages, per mapping.
    #[arg(long, value_name = "PID")]
    pub pid: Option<String>,

    /// Threads that each get the per-thread (TLS) block, for the total against L3.
    #[arg(long, value_name = "N", default_value = "1", value_parser = crate::flags::count(1, 1 << 20))]
    pub threads: usize,

    /// How many of the largest static objects (.data, .bss, .rodata) to list.
    #[arg(long, value_name = "K", default_value = "10", value_parser = crate::flags::count(0, 100_000))]
    pub top: usize,

    /// A memscope report (JSON) whose measured cache capacities to compare with; default:
    /// memscope-report.json in the current directory when there is one, else the OS's
    /// cache sizes.
    #[arg(long, value_name = "REPORT.json")]
    pub against: Option<String>,

    /// Where a stripped binary's separate debug file is looked for: by build-id under
    /// DIR/.build-id/, and by .gnu_debuglink name beside the binary, in its .debug/
    /// subdirectory and under DIR + the binary's directory.
    #[arg(long, value_name = "DIR", default_value = crate::binary::debuginfo::DEFAULT_DEBUG_ROOT)]
    pub debug_dir: String,

    #[command(flatten)]
    pub outputs: OutputArgs,
}

impl FootprintArgs {
    pub fn plan(&self) -> Result<FootprintPlan, UsageError> {
        let (threads, top) = (self.threads, self.top);
        let pid = self
            .pid
            .as_deref()
            .map(|p| {
                p.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|pid| std::path::Path::new(&format!("/proc/{pid}")).is_dir())
                    .ok_or_else(|| UsageError::InvalidValue {
                        flag: "--pid",
                        value: p.to_string(),
                        expected: "the pid of a running process".to_string(),
                    })
            })
            .transpose()?;
        let binary = match (&self.binary, pid) {
            (Some(b), _) => b.clone(),
            (None, Some(pid)) => format!("/proc/{pid}/exe"),
            (None, None) => unreachable!("clap requires BINARY unless --pid is given"),
        };
        // Refused here, before anything else, when it is no regular file (a FIFO would
        // hang a plain open, a device read without end).
        if let Err(e) = user_file::open(std::path::Path::new(&binary)) {
            return Err(UsageError::InvalidValue {
                flag: "BINARY",
                value: binary,
                expected: format!("an existing ELF file, but {e}"),
            });
        }
        let measured = match &self.against {
            Some(path) => Some((path.clone(), read_report(path)?)),
            None => {
                let here = "memscope-report.json";
                read_report(here).ok().map(|r| (here.to_string(), r))
            }
        };
        Ok(FootprintPlan {
            binary,
            pid,
            threads,
            top,
            measured,
            debug_root: std::path::PathBuf::from(&self.debug_dir),
        })
    }
}

fn read_report(path: &str) -> Result<serde_json::Value, UsageError> {
    let bad = |reason: String| UsageError::InvalidValue {
        flag: "--against",
        value: path.to_string(),
        expected: format!("a memscope JSON report ({reason})"),
    };
    let bytes = user_file::read_capped(std::path::Path::new(path), MAX_REPORT_BYTES)
        .map_err(|e| bad(e.to_string()))?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
    if value.get("schema_version").is_none() || value.get("machine").is_none() {
        return Err(bad("it has no schema_version and machine".to_string()));
    }
    Ok(value)
}
