//! Separate debug information, found the way gdb finds it: first by the build-id note
//! (`.note.gnu.build-id`) under `DEBUG_ROOT/.build-id/xx/yyyy….debug`, then by the
//! `.gnu_debuglink` section's file name next to the binary, in its `.debug/`
//! subdirectory and under `DEBUG_ROOT` + the binary's directory. A candidate counts only
//! when it proves to be the binary's: the same build-id, or the CRC32 the debuglink
//! carries. Candidates are opened through `platform::user_file` (regular files only,
//! mapped, never read without bound) and their ELF header checked (`elf::check_header`)
//! before anything parses them; the link's file name must be a plain name, so a hostile
//! binary cannot send the search to another directory.

use std::path::{Path, PathBuf};

use object::Object;
use serde::{Deserialize, Serialize};

use crate::platform::user_file::{self, Mapped};

/// Where distributions install debug files (the `-dbg`/`-dbgsym` packages).
pub const DEFAULT_DEBUG_ROOT: &str = "/usr/lib/debug";

/// How a separate debug file was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FoundBy {
    /// `DEBUG_ROOT/.build-id/xx/yyyy….debug`, with the same build-id.
    BuildId,
    /// The `.gnu_debuglink` name, with the CRC32 it carries.
    GnuDebuglink,
}

impl std::fmt::Display for FoundBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FoundBy::BuildId => "its build-id",
            FoundBy::GnuDebuglink => "its .gnu_debuglink (CRC32 checked)",
        })
    }
}

/// The separate debug file a footprint used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DebugFile {
    pub path: String,
    pub found_by: FoundBy,
}

/// What the binary says about its separate debug information.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Links {
    pub build_id: Option<Vec<u8>>,
    /// The file name and its CRC32.
    pub debuglink: Option<(String, u32)>,
}

impl Links {
    /// The links of an ELF file (none when it cannot be parsed).
    pub fn of(data: &[u8]) -> Links {
        let Ok(file) = object::File::parse(data) else {
            return Links::default();
        };
        Links {
            build_id: file
                .build_id()
                .ok()
                .flatten()
                .filter(|id| id.len() >= 2)
                .map(<[u8]>::to_vec),
            debuglink: file
                .gnu_debuglink()
                .ok()
                .flatten()
                .map(|(name, crc)| (String::from_utf8_lossy(name).into_owned(), crc)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.build_id.is_none() && self.debuglink.is_none()
    }
}

/// The outcome of a search.
pub enum Search {
    /// The binary names no separate debug file.
    NoLinks,
    Found {
        file: DebugFile,
        data: Mapped,
    },
    /// Nothing matched: a sentence saying where it looked and what it refused.
    NotFound(String),
}

/// Looks for the separate debug file of `binary` (whose bytes are `data`) under `root`.
pub fn find(binary: &Path, data: &[u8], root: &Path) -> Search {
    let links = Links::of(data);
    if links.is_empty() {
        return Search::NoLinks;
    }
    let mut tried: Vec<String> = Vec::new();
    if let Some(id) = &links.build_id {
        let path = build_id_path(root, id);
        match candidate(&path, |debug| {
            let theirs = Links::of(debug).build_id;
            if theirs.as_deref() == Some(id.as_slice()) {
                Ok(())
            } else {
                Err("its build-id differs".to_string())
            }
        }) {
            Ok(Some(data)) => {
                return Search::Found {
                    file: DebugFile {
                        path: path.display().to_string(),
                        found_by: FoundBy::BuildId,
                    },
                    data,
                }
            }
            Ok(None) => tried.push(path.display().to_string()),
            Err(why) => tried.push(format!("{} ({why})", path.display())),
        }
    }
    if let Some((name, crc)) = &links.debuglink {
        if !plain_name(name) {
            tried.push(format!(
                "the .gnu_debuglink name '{name}' (refused: not a plain file name)"
            ));
        } else {
            let own = std::fs::canonicalize(binary).ok();
            for path in debuglink_paths(own.as_deref().unwrap_or(binary), name, root) {
                if own.as_deref() == Some(path.as_path()) {
                    continue;
                }
                let check = |debug: &[u8]| {
                    let theirs = crc32(debug);
                    if theirs == *crc {
                        Ok(())
                    } else {
                        Err(format!("CRC32 {theirs:08x}, the link says {crc:08x}"))
                    }
                };
                match candidate(&path, check) {
                    Ok(Some(data)) => {
                        return Search::Found {
                            file: DebugFile {
                                path: path.display().to_string(),
                                found_by: FoundBy::GnuDebuglink,
                            },
                            data,
                        }
                    }
                    Ok(None) => tried.push(path.display().to_string()),
                    Err(why) => tried.push(format!("{} ({why})", path.display())),
                }
            }
        }
    }
    Search::NotFound(format!(
        "the binary names a separate debug file ({}) but none matched: looked for {} (a \
         distribution's debug package, -dbg or -dbgsym, installs it under /usr/lib/debug; \
         --debug-dir names another place)",
        describe(&links),
        tried.join(", ")
    ))
}

/// The links as a person reads them.
fn describe(links: &Links) -> String {
    let mut parts = Vec::new();
    if let Some(id) = &links.build_id {
        parts.push(format!("build-id {}", hex(id)));
    }
    if let Some((name, _)) = &links.debuglink {
        parts.push(format!(".gnu_debuglink {name}"));
    }
    parts.join(", ")
}

/// `ROOT/.build-id/xx/yyyy….debug` for the build-id `id` (at least 2 bytes).
pub fn build_id_path(root: &Path, id: &[u8]) -> PathBuf {
    let text = hex(id);
    root.join(".build-id")
        .join(&text[..2])
        .join(format!("{}.debug", &text[2..]))
}

/// Where gdb looks for a `.gnu_debuglink` name: beside the binary, in its `.debug/`
/// subdirectory, and under the debug root + the binary's (absolute) directory.
pub(crate) fn debuglink_paths(binary: &Path, name: &str, root: &Path) -> Vec<PathBuf> {
    let dir = binary.parent().unwrap_or(Path::new("."));
    let mut out = vec![dir.join(name), dir.join(".debug").join(name)];
    if dir.is_absolute() {
        let relative: PathBuf = dir.components().skip(1).collect();
        out.push(root.join(relative).join(name));
    }
    out
}

/// A name without directories: the debuglink is a file name, not a path.
fn plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('\0')
}

/// Opens a candidate: Ok(None) when there is no such file, Err(why) when there is one
/// that is not a regular ELF file or does not pass `matches`.
fn candidate(
    path: &Path,
    matches: impl Fn(&[u8]) -> Result<(), String>,
) -> Result<Option<Mapped>, String> {
    let file = match user_file::open(path) {
        Ok(file) => file,
        Err(user_file::UserFileError::Open { reason, .. })
            if reason.kind() == std::io::ErrorKind::NotFound =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e.to_string()),
    };
    let data = file.map().map_err(|e| e.to_string())?;
    super::elf::check_header(&data).map_err(|why| format!("not a valid ELF file: {why}"))?;
    matches(&data)?;
    Ok(Some(data))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The CRC-32 of `.gnu_debuglink` (IEEE 802.3, reflected, as zlib's `crc32`).
pub(crate) fn crc32(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xedb8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    !data.iter().fold(!0u32, |c, &b| {
        TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crc_is_zlibs() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn the_places_are_gdbs() {
        let root = Path::new("/usr/lib/debug");
        assert_eq!(
            build_id_path(root, &[0x93, 0xac, 0x61]),
            PathBuf::from("/usr/lib/debug/.build-id/93/ac61.debug")
        );
        assert_eq!(
            debuglink_paths(Path::new("/opt/x/libfoo.so"), "libfoo.debug", root),
            vec![
                PathBuf::from("/opt/x/libfoo.debug"),
                PathBuf::from("/opt/x/.debug/libfoo.debug"),
                PathBuf::from("/usr/lib/debug/opt/x/libfoo.debug"),
            ]
        );
        assert!(plain_name("libc.so.6.debug"));
        for bad in ["", "..", "../../etc/shadow", "/etc/shadow", "."] {
            assert!(!plain_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_binary_without_links_has_none_and_junk_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::env::current_exe().unwrap();
        let data = std::fs::read(&me).unwrap();
        // Rust test binaries carry a build-id on most linkers; if so, an empty root has
        // no file for it and the search says where it looked.
        match find(&me, &data, dir.path()) {
            Search::NoLinks => assert!(Links::of(&data).is_empty()),
            Search::NotFound(why) => assert!(why.contains(".build-id"), "{why}"),
            Search::Found { file, .. } => panic!("found {file:?} in an empty directory"),
        }
        assert!(Links::of(b"not ELF").is_empty());
    }
}
