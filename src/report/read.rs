//! Reading a report back (`compare`, `history --add`): a JSON file memscope wrote, of a
//! schema this memscope reads. Anything else is refused with what it is and what was
//! expected, never a panic: a file that is not JSON, JSON that is not a memscope report, a
//! report of a schema too new or too old, a report whose fields do not fit the schema it
//! claims. The file itself is read through `platform::user_file`: a regular file only
//! (a device or FIFO is refused at once), at most `MAX_REPORT_BYTES` counted as read.

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

/// Reads and checks one report file.
pub fn read_report(path: &Path) -> Result<Report, ReadError> {
    let bytes = crate::platform::user_file::read_capped(path, MAX_REPORT_BYTES)?;
    parse_report(path, &bytes)
}

/// Checks and parses the bytes of a report named `path`.
pub fn parse_report(path: &Path, bytes: &[u8]) -> Result<Report, ReadError> {
    let not_a_report = |reason: String| ReadError::NotAReport {
        path: path.to_path_buf(),
        reason,
    };
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| not_a_report(format!("it is not JSON ({e})")))?;
    let Some(object) = value.as_object() else {
        return Err(not_a_report(
            "its JSON is not an object with schema_version, tool and machine".into(),
        ));
    };
    let tool = object
        .get("tool")
        .and_then(|t| t.get("name"))
        .and_then(|n| n.as_str());
    if tool != Some("memscope") {
        return Err(not_a_report(match tool {
            Some(other) => format!("it was written by {other:?}, expected tool.name \"memscope\""),
            None => "it has no tool.name \"memscope\"".into(),
        }));
    }
    let version = object
        .get("schema_version")
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
    let mut report: Report =
        serde_path_to_error::deserialize(value).map_err(|e| ReadError::Invalid {
            path: path.to_path_buf(),
            version,
            reason: format!("at {}: {}", e.path(), e.inner()),
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
