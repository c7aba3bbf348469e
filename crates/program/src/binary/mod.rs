//! What a built binary holds, against the caches: its per-thread (TLS) and static data,
//! each object in bytes, cache lines and shares of L1d and L2 (measured sizes from a
//! memscope report when there is one, the OS's otherwise), and the per-thread total ×
//! threads against L3; given a pid, the running process's mappings beside it. The ELF
//! gives the TLS segment and the symbols (`elf`), the DWARF, where present, the types and
//! struct layouts (`dwarf`); a TLS pointer to a struct shows the struct, which each
//! thread allocates besides its TLS block. A stripped binary's symbols and DWARF come
//! from its separate debug file when one is installed (`debuginfo`: build-id and
//! `.gnu_debuglink`). Every file is mapped read-only (`platform::user_file`) and its ELF
//! header and tables checked for plausibility before anything is reported.
//!
//! Below the rooms that use it: `memscope footprint` shows it (the `footprint` room: its
//! flags and sections), and `sweep` puts each built variant's TLS block beside its
//! figures.

pub mod debuginfo;
pub mod dwarf;
pub mod elf;

use serde::{Deserialize, Serialize};

use crate::topology::{process, Machine};
use debuginfo::DebugFile;
use dwarf::{Layout, Pointee, Variable};
use elf::{ElfFacts, TlsSegment};

/// What `memscope footprint` reads.
#[derive(Debug, Clone)]
pub struct FootprintPlan {
    pub binary: String,
    /// A running process whose mappings are shown beside the static view.
    pub pid: Option<u32>,
    pub threads: usize,
    pub top: usize,
    /// A memscope report's measured cache capacities, and where they came from.
    pub measured: Option<(String, serde_json::Value)>,
    /// Where separate debug files are looked up (`debuginfo::DEFAULT_DEBUG_ROOT`).
    pub debug_root: std::path::PathBuf,
}

/// The cache sizes objects are compared with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheSizes {
    pub line_bytes: u64,
    pub l1d_bytes: Option<u64>,
    pub l2_bytes: Option<u64>,
    pub l3_bytes: Option<u64>,
    /// "measured by memscope (REPORT)" or "as the OS reports them".
    pub source: String,
}

/// One object: a TLS variable, or a static one among the largest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataObject {
    pub name: String,
    /// ".tbss", ".data", ".bss", ".rodata" … ("tls" when only DWARF places it).
    pub section: String,
    pub tls: bool,
    pub bytes: u64,
    /// Cache lines it spans at least (bytes / line, rounded up).
    pub lines: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    #[serde(default)]
    pub dimensions: Vec<(u64, Option<String>)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
    /// A TLS pointer's pointee (DWARF): per-thread data allocated outside the TLS block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointee: Option<Pointee>,
}

/// The result of `memscope footprint`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FootprintResult {
    pub binary: String,
    pub tls: Option<TlsSegment>,
    pub threads: usize,
    pub caches: CacheSizes,
    /// Every TLS variable, then the `top` largest static objects.
    pub objects: Vec<DataObject>,
    /// Sizes of the data sections: (name, bytes).
    pub sections: Vec<(String, u64)>,
    /// "DWARF", "symbols only", "dynamic symbols only".
    pub detail: String,
    /// The separate debug file the symbols and DWARF came from, when one was used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_file: Option<DebugFile>,
    /// Bytes behind the TLS pointers (their pointees, per thread), outside the TLS block.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tls_pointee_bytes: u64,
    /// `--pid`: the running process's mappings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessMappings>,
    pub notes: Vec<String>,
}

impl FootprintResult {
    /// The per-thread block × threads.
    pub fn tls_total_bytes(&self) -> u64 {
        self.tls.map_or(0, |t| t.bytes) * self.threads as u64
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A running process's memory, per mapping (from /proc/PID/smaps).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessMappings {
    pub pid: u32,
    pub command: String,
    pub mappings: Vec<MappingUse>,
}

/// One mapping of a running process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MappingUse {
    pub start: u64,
    pub end: u64,
    pub perms: String,
    /// File name, `[heap]`, `[stack]`, `anon` …
    pub name: String,
    pub anonymous: bool,
    pub rss_kb: u64,
    pub anonymous_kb: u64,
    /// Transparent huge pages in the mapping.
    pub anon_huge_kb: u64,
}

impl MappingUse {
    /// Share of the anonymous memory in transparent huge pages, percent.
    pub(crate) fn thp_pct(&self) -> Option<f64> {
        (self.anonymous_kb > 0).then(|| 100.0 * self.anon_huge_kb as f64 / self.anonymous_kb as f64)
    }
}

/// The process's resident mappings, largest first.
fn process_mappings(pid: u32) -> Result<ProcessMappings, String> {
    let maps = process::smaps(pid).map_err(|e| format!("cannot read /proc/{pid}/smaps: {e}"))?;
    let mut mappings: Vec<MappingUse> = maps
        .iter()
        .filter(|m| m.rss_kb > 0)
        .map(|m| MappingUse {
            start: m.start,
            end: m.end,
            perms: m.perms.clone(),
            name: m.label(),
            anonymous: m.is_anonymous(),
            rss_kb: m.rss_kb,
            anonymous_kb: m.anonymous_kb,
            anon_huge_kb: m.anon_huge_kb,
        })
        .collect();
    mappings.sort_by(|a, b| b.rss_kb.cmp(&a.rss_kb).then(a.start.cmp(&b.start)));
    Ok(ProcessMappings {
        pid,
        command: process::command_name(pid),
        mappings,
    })
}

/// Why a binary cannot be read at all (exit 2): not a regular file, unreadable, or not
/// a valid ELF file.
#[derive(Debug, thiserror::Error)]
#[error("cannot read '{path}': {reason}")]
pub struct FootprintError {
    pub path: String,
    pub reason: String,
}

/// Reads the binary and compares its data with the caches (`memscope footprint`).
pub fn footprint(
    plan: &FootprintPlan,
    machine: &Machine,
) -> Result<FootprintResult, FootprintError> {
    let fail = |reason: String| FootprintError {
        path: plan.binary.clone(),
        reason,
    };
    // Mapped, not read: a large binary (or a sparse file posing as one) costs page cache
    // for the parts the parsers touch, not a heap copy of the whole.
    let data = crate::platform::user_file::open(std::path::Path::new(&plan.binary))
        .and_then(|file| file.map())
        .map_err(|e| fail(e.to_string()))?;
    let facts = elf::read(&data).map_err(fail)?;
    let mut notes = Vec::new();
    // Without DWARF of its own, the binary's separate debug file (a distribution's -dbg
    // package, or `objcopy --only-keep-debug`) gives the DWARF, and the symbols when the
    // binary is stripped; the TLS segment and section sizes stay the binary's.
    let debug = match facts.debug_info {
        true => None,
        false => debug_file(plan, &data, &mut notes),
    };
    let dwarf_source: &[u8] = debug.as_ref().map_or(&data, |d| &d.data);
    // The debug file's symbols when the binary has no .symtab of its own.
    let facts = match debug.as_ref().map(|d| &d.facts) {
        Some(debug) if !facts.symtab && debug.symtab => ElfFacts {
            symbols: debug.symbols.clone(),
            symtab: true,
            debug_info: debug.debug_info,
            ..facts
        },
        Some(debug) => ElfFacts {
            debug_info: debug.debug_info,
            ..facts
        },
        None => facts,
    };
    let variables = dwarf::variables(dwarf_source).unwrap_or_else(|why| {
        notes.push(format!(
            "the DWARF could not be read ({why}): sizes from symbols only"
        ));
        Vec::new()
    });
    let detail = detail(&facts, !variables.is_empty(), &mut notes);
    let debug_file = debug.map(|d| d.file);
    let caches = cache_sizes(machine, plan.measured.as_ref());
    let objects = objects(&facts, &variables, plan.top, caches.line_bytes);
    let tls_pointee_bytes = objects
        .iter()
        .filter_map(|o| o.pointee.as_ref())
        .map(|p| p.size)
        .sum();
    if facts.tls.is_none() {
        notes.push("the binary has no TLS segment (PT_TLS): no per-thread data".to_string());
    }
    let process = match plan.pid {
        Some(pid) => match process_mappings(pid) {
            Ok(p) => Some(p),
            Err(why) => {
                notes.push(why);
                None
            }
        },
        None => None,
    };
    Ok(FootprintResult {
        binary: plan.binary.clone(),
        process,
        tls: facts.tls,
        threads: plan.threads,
        caches,
        objects,
        sections: facts.sections.clone(),
        detail,
        debug_file,
        tls_pointee_bytes,
        notes,
    })
}

/// The binary's separate debug file, read.
struct DebugRead {
    file: DebugFile,
    data: crate::platform::user_file::Mapped,
    facts: ElfFacts,
}

/// The separate debug file the binary links to, where one is found and reads as ELF; else
/// why not, noted.
fn debug_file(plan: &FootprintPlan, data: &[u8], notes: &mut Vec<String>) -> Option<DebugRead> {
    let (file, data) =
        match debuginfo::find(std::path::Path::new(&plan.binary), data, &plan.debug_root) {
            debuginfo::Search::NoLinks => return None,
            debuginfo::Search::Found { file, data } => (file, data),
            debuginfo::Search::NotFound(why) => {
                notes.push(why);
                return None;
            }
        };
    match elf::read(&data) {
        Ok(facts) => Some(DebugRead { file, data, facts }),
        Err(why) => {
            notes.push(format!("the debug file {} does not read: {why}", file.path));
            None
        }
    }
}

/// What the sizes come from (DWARF, symbols, dynamic symbols), with what is missing said.
fn detail(facts: &ElfFacts, dwarf_variables: bool, notes: &mut Vec<String>) -> String {
    let (detail, note) = if dwarf_variables {
        return "DWARF (types and layouts)".to_string();
    } else if facts.debug_info {
        (
            "symbols only (DWARF without variables)",
            "the DWARF lists no variable with a location (line tables only, e.g. -g1 or \
             debug = 1): sizes come from the symbol table",
        )
    } else if facts.symtab {
        (
            "symbols only",
            "no DWARF debug information: sizes come from the symbol table, without types or \
             struct layouts (build with -g, or point at the debug file, for those)",
        )
    } else {
        (
            "dynamic symbols only",
            "stripped (no .symtab, no DWARF): only exported data objects of the dynamic symbol \
             table and the section sizes can be shown",
        )
    };
    notes.push(note.to_string());
    detail.to_string()
}

/// TLS variables (all of them), then the `top` largest static objects; DWARF's types
/// and layouts joined by name and address.
fn objects(facts: &ElfFacts, variables: &[Variable], top: usize, line: u64) -> Vec<DataObject> {
    let lines = |bytes: u64| bytes.div_ceil(line.max(1));
    let find = |name: &str, tls: bool| variables.iter().find(|v| v.name == name && v.tls == tls);
    let object = |name: &str, section: &str, tls: bool, bytes: u64| {
        let v = find(name, tls);
        DataObject {
            name: name.to_string(),
            section: section.to_string(),
            tls,
            bytes,
            lines: lines(bytes),
            type_name: v.map(|v| v.type_name.clone()),
            dimensions: v.map(|v| v.dimensions.clone()).unwrap_or_default(),
            layout: v.and_then(|v| v.layout.clone()),
            // Only a thread-local pointer's pointee is per-thread data.
            pointee: v.filter(|v| v.tls).and_then(|v| v.pointee.clone()),
        }
    };
    let mut out: Vec<DataObject> = facts
        .symbols
        .iter()
        .filter(|s| s.tls)
        .map(|s| object(&s.name, &s.section, true, s.size))
        .collect();
    // TLS variables DWARF knows and the symbol table does not (static __thread).
    for v in variables.iter().filter(|v| v.tls) {
        if !out.iter().any(|o| o.name == v.name) {
            let mut o = object(&v.name, "tls", true, v.size);
            o.bytes = v.size;
            o.lines = lines(v.size);
            out.push(o);
        }
    }
    out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
    out.extend(
        facts
            .symbols
            .iter()
            .filter(|s| !s.tls)
            .take(top)
            .map(|s| object(&s.name, &s.section, false, s.size)),
    );
    out
}

/// The caches to compare with: a report's measured capacities (latency levels) where
/// given, the OS's sizes otherwise.
fn cache_sizes(machine: &Machine, measured: Option<&(String, serde_json::Value)>) -> CacheSizes {
    let os = |level: u32| {
        machine
            .caches
            .iter()
            .find(|c| c.level == level && c.kind != crate::topology::CacheKind::Instruction)
            .map(|c| c.size_bytes)
    };
    let line_bytes = machine.line_bytes();
    let from_report = measured.and_then(|(path, report)| {
        let levels = report.pointer("/experiments/latency/levels")?.as_array()?;
        let capacity = |name: &str| {
            levels
                .iter()
                .find(|l| l["name"] == name)
                .and_then(|l| l["capacity_bytes"].as_u64())
        };
        let sizes = (capacity("L1d"), capacity("L2"), capacity("L3"));
        (sizes.0.is_some() || sizes.1.is_some()).then(|| (path.clone(), sizes))
    });
    match from_report {
        Some((path, (l1d, l2, l3))) => CacheSizes {
            line_bytes,
            l1d_bytes: l1d.or(os(1)),
            l2_bytes: l2.or(os(2)),
            l3_bytes: l3.or(os(3)),
            source: format!("measured by memscope ({path}; the OS's where a level was not found)"),
        },
        None => CacheSizes {
            line_bytes,
            l1d_bytes: os(1),
            l2_bytes: os(2),
            l3_bytes: os(3),
            source: "as the OS reports them (no memscope report: run `memscope` here or give \
                     --against REPORT.json for measured capacities)"
                .to_string(),
        },
    }
}
