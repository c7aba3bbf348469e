//! A level of the memory hierarchy as reports name it: a cache by the OS's name ("L1d",
//! "L2", "L3"), DRAM, or, for bandwidth's `--sizes`, a working set chosen by hand and not
//! placed in a level. Written as that name, so the JSON holds the same strings as before;
//! any name other than "DRAM" and "custom" reads as a cache, so no report is refused for
//! a cache name this build does not know.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a working set lives; see the module's note for the names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Level {
    /// A cache, by the OS's name.
    Cache(String),
    Dram,
    /// A working set given by hand (bandwidth's `--sizes`).
    Custom,
}

impl Level {
    /// Its name in reports, tables and figure keys.
    pub fn name(&self) -> &str {
        match self {
            Level::Cache(name) => name,
            Level::Dram => "DRAM",
            Level::Custom => "custom",
        }
    }

    pub(crate) fn is_cache(&self) -> bool {
        matches!(self, Level::Cache(_))
    }
}

impl From<String> for Level {
    fn from(name: String) -> Level {
        match name.as_str() {
            "DRAM" => Level::Dram,
            "custom" => Level::Custom,
            _ => Level::Cache(name),
        }
    }
}

impl From<Level> for String {
    fn from(level: Level) -> String {
        match level {
            Level::Cache(name) => name,
            other => other.name().to_string(),
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_read_and_write_as_their_names() {
        for name in ["L1d", "L2", "L3", "DRAM", "custom"] {
            let json = format!("\"{name}\"");
            let level: Level = serde_json::from_str(&json).unwrap();
            assert_eq!(level.name(), name);
            assert_eq!(level.to_string(), name);
            assert_eq!(serde_json::to_string(&level).unwrap(), json);
        }
        assert_eq!(Level::from("DRAM".to_string()), Level::Dram);
        assert!(Level::from("L2".to_string()).is_cache());
        assert!(serde_json::from_str::<Level>("7").is_err());
    }
}
