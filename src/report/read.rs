//! Reading a report back (`compare`, `history --add`): a JSON file memscope wrote, of a
//! schema this memscope reads. Anything else is refused with what it is and what was
//! expected, never a panic: a file that is not JSON, JSON that is not a memscope report, a
//! report of a schema too new or too old, a report whose fields do not fit the schema it
//! claims. The file itself is read through `platform::user_file`: a regular file only
//! (a device or FIFO is refused at once), at most `MAX_REPORT_BYTES` counted as read.
//! A directory of reports (`history --add DIR`) is its regular `*.json` files in name
//! order (`json_files`).

use std::path::{Path, PathBuf};

use super::{Report, OLDEST_READABLE_SCHEMA, SCHEMA_VERSION};

use crate::flags::MAX_REPORT_BYTES;

/// Why a file could not be read as a report.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Not a regular file, too large, or unreadable (the error names the path).
    #[error(transparent)]
    File(#[from] crate::platform::user_file::UserFileError),
    #[error("{path} is not a memscope report: {reason}")]
    NotAReport { path: PathBuf, reason: String },
    #[error(
        "{path} is a memscope report of schema {version}, which this memscope ({ours}) does \
         not read: it reads schemas {OLDEST_READABLE_SCHEMA} to {SCHEMA_VERSION}{advice}"
    )]
    Schema {
        path: PathBuf,
        version: u64,
        ours: String,
        advice: &'static str,
    },
    #[error("{path} claims memscope report schema {version} but does not fit it: {reason}")]
    Invalid {
        path: PathBuf,
        version: u64,
        reason: String,
    },
}

/// What is read of a file before the report itself: which tool wrote it, of what schema.
/// The other fields are skipped without being built.
#[derive(serde::Deserialize)]
struct Header {
    #[serde(default)]
    tool: Option<serde_json::Value>,
    #[serde(default)]
    schema_version: Option<serde_json::Value>,
}

/// Reads and checks one report file.
pub fn read_report(path: &Path) -> Result<Report, ReadError> {
    let bytes = crate::platform::user_file::read_capped(path, MAX_REPORT_BYTES)?;
    parse_report(path, &bytes)
}

/// The regular `*.json` files of `dir`, sorted by name: what `history --add DIR` reads
/// (`compare DIR` lists a directory the same way). Links and other file types are left
/// out here; each file is opened through `read_report` all the same, which refuses
/// anything but a regular file.
pub fn json_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_file() && path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Checks and parses the bytes of a report named `path`.
pub fn parse_report(path: &Path, bytes: &[u8]) -> Result<Report, ReadError> {
    let not_a_report = |reason: String| ReadError::NotAReport {
        path: path.to_path_buf(),
        reason,
    };
    // The header first (the rest skipped, nothing built), so that a file of another tool
    // or schema is named for what it is; then the report straight from the bytes, without
    // a `Value` tree in between: a fleet's thousand reports read in half the time.
    let header: Header = serde_json::from_slice(bytes).map_err(|e| {
        not_a_report(if e.is_data() {
            "its JSON is not an object with schema_version, tool and machine".into()
        } else {
            format!("it is not JSON ({e})")
        })
    })?;
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(not_a_report(
            "its JSON is not an object with schema_version, tool and machine".into(),
        ));
    }
    let tool = header
        .tool
        .as_ref()
        .and_then(|t| t.get("name"))
        .and_then(|n| n.as_str());
    if tool != Some("memscope") {
        return Err(not_a_report(match tool {
            Some(other) => format!("it was written by {other:?}, expected tool.name \"memscope\""),
            None => "it has no tool.name \"memscope\"".into(),
        }));
    }
    let version = header
        .schema_version
        .as_ref()
        .and_then(|v| v.as_u64())
        .ok_or_else(|| not_a_report("it has no whole-number schema_version".into()))?;
    if version > SCHEMA_VERSION as u64 || version < OLDEST_READABLE_SCHEMA as u64 {
        return Err(ReadError::Schema {
            path: path.to_path_buf(),
            version,
            ours: env!("CARGO_PKG_VERSION").to_string(),
            advice: if version > SCHEMA_VERSION as u64 {
                ": it was written by a newer memscope; read it with that version"
            } else {
                ""
            },
        });
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let mut report: Report = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        // The reader's position ("at line 1 column 80") is left out: the field's path
        // says where.
        let inner = e.inner();
        let message = inner.to_string();
        let suffix = format!(" at line {} column {}", inner.line(), inner.column());
        ReadError::Invalid {
            path: path.to_path_buf(),
            version,
            reason: format!(
                "at {}: {}",
                e.path(),
                message.strip_suffix(&suffix).unwrap_or(&message)
            ),
        }
    })?;
    if report.run.host.is_empty() {
        // Schema 1 recorded neither host nor time.
        report.run.host = "unknown".to_string();
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Report, ReadError> {
        parse_report(Path::new("r.json"), text.as_bytes())
    }

    fn sample() -> serde_json::Value {
        let report = Report::new(crate::topology::detect().unwrap(), Default::default());
        serde_json::to_value(&report).unwrap()
    }

    #[test]
    fn a_report_reads_back_and_other_files_are_named_for_what_they_are() {
        let text = sample().to_string();
        let report = parse(&text).unwrap();
        assert_eq!(report.schema_version, SCHEMA_VERSION);
        let message = |text: &str| parse(text).unwrap_err().to_string();
        assert!(
            message("hello").contains("not JSON"),
            "{}",
            message("hello")
        );
        assert!(message("[1,2]").contains("not an object"));
        assert!(message(r#"{"tool":{"name":"fio"}}"#).contains("\"fio\""));
        assert!(message(r#"{"tool":{"name":"memscope"}}"#).contains("schema_version"));
    }

    #[test]
    fn schemas_out_of_range_are_refused_naming_the_version_and_old_ones_read() {
        let mut value = sample();
        value["schema_version"] = 99.into();
        let e = parse(&value.to_string()).unwrap_err().to_string();
        assert!(
            e.contains("schema 99") && e.contains("newer memscope"),
            "{e}"
        );
        value["schema_version"] = 0.into();
        assert!(parse(&value.to_string())
            .unwrap_err()
            .to_string()
            .contains("schema 0"));
        // Schema 1 had no run stamp: read, with the host unknown.
        value["schema_version"] = 1.into();
        value.as_object_mut().unwrap().remove("run");
        let old = parse(&value.to_string()).unwrap();
        assert_eq!(old.run.host, "unknown");
        assert_eq!(old.run.when(), "date unknown");
    }

    #[test]
    fn a_directory_is_its_regular_json_files_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.json", "a.json", "notes.txt", "c.JSON"] {
            std::fs::write(dir.path().join(name), "{}").unwrap();
        }
        std::fs::create_dir(dir.path().join("d.json")).unwrap();
        std::os::unix::fs::symlink("a.json", dir.path().join("link.json")).unwrap();
        let names: Vec<String> = json_files(dir.path())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.json", "b.json"]);
        assert!(json_files(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn a_report_with_a_wrong_field_names_the_field() {
        let mut value = sample();
        value["machine"]["logical_cpus"] = "many".into();
        let e = parse(&value.to_string()).unwrap_err().to_string();
        assert!(
            e.contains("does not fit") && e.contains("machine.logical_cpus"),
            "{e}"
        );
    }
}
