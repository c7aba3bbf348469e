//! The `Bytes` newtype and the parsing/printing of sizes such as `64K`, `512KiB`, `1G`,
//! `1GiB`; frequencies printed as GHz.
//!
//! Sizes of buffers are binary: `K`, `KB` and `KiB` all mean 1024 bytes, as in every
//! memory tool (caches and pages are powers of two). Rates are decimal: one GB/s is
//! 10^9 bytes per second, as in STREAM and Intel MLC.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A number of bytes (a buffer, cache or page size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Bytes(pub u64);

pub const KIB: u64 = 1 << 10;
pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;
pub const TIB: u64 = 1 << 40;

/// Why a size string was rejected; the message names what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid size '{value}': {reason}")]
pub struct SizeParseError {
    pub value: String,
    pub reason: String,
}

impl Bytes {
    pub const fn kib(n: u64) -> Bytes {
        Bytes(n * KIB)
    }
    pub const fn mib(n: u64) -> Bytes {
        Bytes(n * MIB)
    }
    pub const fn gib(n: u64) -> Bytes {
        Bytes(n * GIB)
    }

    /// Parses `4096`, `64K`, `64k`, `64KB`, `64KiB`, `1.5M`, `1G`, `1GiB`, `1T` (binary units).
    pub fn parse(text: &str) -> Result<Bytes, SizeParseError> {
        let fail = |reason: &str| SizeParseError {
            value: text.to_string(),
            reason: reason.to_string(),
        };
        let s = text.trim();
        if s.is_empty() {
            return Err(fail(
                "expected a number followed by an optional unit B, K, M, G or T (e.g. 64K, 1GiB)",
            ));
        }
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let (number, unit) = s.split_at(split);
        let unit = unit.trim();
        let multiplier = match unit.to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => KIB,
            "m" | "mb" | "mib" => MIB,
            "g" | "gb" | "gib" => GIB,
            "t" | "tb" | "tib" => TIB,
            _ => {
                return Err(fail(&format!(
                    "unknown unit '{unit}', expected digits followed by B, K, M, G or T (e.g. 64K, 512KiB, 1GiB)"
                )))
            }
        };
        if number.is_empty() {
            return Err(fail(
                "expected digits followed by B, K, M, G or T (e.g. 64K, 1GiB)",
            ));
        }
        let value: f64 = number
            .parse()
            .map_err(|_| fail("expected a number such as 64 or 1.5 before the unit"))?;
        let bytes = value * multiplier as f64;
        if !bytes.is_finite() || bytes >= u64::MAX as f64 {
            return Err(fail("the size is too large"));
        }
        if bytes.fract() != 0.0 {
            return Err(fail("the size must be a whole number of bytes"));
        }
        Ok(Bytes(bytes as u64))
    }

    pub fn as_f64(self) -> f64 {
        self.0 as f64
    }

    pub fn log2(self) -> f64 {
        (self.0 as f64).log2()
    }
}

impl fmt::Display for Bytes {
    /// Prints the largest binary unit that keeps the value ≥ 1: `32 KiB`, `1.5 MiB`, `512 B`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let units = [(TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")];
        for (size, name) in units {
            if self.0 >= size {
                let value = self.0 as f64 / size as f64;
                return if self.0.is_multiple_of(size) {
                    write!(f, "{} {name}", self.0 / size)
                } else if value < 10.0 {
                    write!(f, "{value:.2} {name}")
                } else {
                    write!(f, "{value:.1} {name}")
                };
            }
        }
        write!(f, "{} B", self.0)
    }
}

impl std::str::FromStr for Bytes {
    type Err = SizeParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Bytes::parse(s)
    }
}

/// Formats a frequency in Hz as `2.60 GHz`.
pub fn format_hz(hz: f64) -> String {
    if hz >= 1e9 {
        format!("{:.2} GHz", hz / 1e9)
    } else {
        format!("{:.0} MHz", hz / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_binary_units() {
        assert_eq!(Bytes::parse("4096").unwrap(), Bytes(4096));
        assert_eq!(Bytes::parse("64K").unwrap(), Bytes(64 * KIB));
        assert_eq!(Bytes::parse("64k").unwrap(), Bytes(64 * KIB));
        assert_eq!(Bytes::parse("512KiB").unwrap(), Bytes(512 * KIB));
        assert_eq!(Bytes::parse("512KB").unwrap(), Bytes(512 * KIB));
        assert_eq!(Bytes::parse("1G").unwrap(), Bytes(GIB));
        assert_eq!(Bytes::parse("1GiB").unwrap(), Bytes(GIB));
        assert_eq!(Bytes::parse("1.5M").unwrap(), Bytes(3 * MIB / 2));
        assert_eq!(Bytes::parse(" 2 MiB ").unwrap(), Bytes(2 * MIB));
        assert_eq!(Bytes::parse("100B").unwrap(), Bytes(100));
    }

    #[test]
    fn rejects_bad_sizes_naming_the_value() {
        for bad in ["12Q", "", "K", "-1K", "1.2.3M", "0.3B", "99999999999T"] {
            let err = Bytes::parse(bad).unwrap_err();
            assert_eq!(err.value, bad);
            assert!(err.to_string().contains(&format!("'{bad}'")), "{err}");
        }
        assert!(Bytes::parse("12Q")
            .unwrap_err()
            .to_string()
            .contains("unit"));
    }

    #[test]
    fn prints_the_largest_fitting_unit() {
        assert_eq!(Bytes(512).to_string(), "512 B");
        assert_eq!(Bytes(32 * KIB).to_string(), "32 KiB");
        assert_eq!(Bytes(MIB).to_string(), "1 MiB");
        assert_eq!(Bytes(3 * MIB / 2).to_string(), "1.50 MiB");
        assert_eq!(Bytes(38 * KIB + 512).to_string(), "38.5 KiB");
        assert_eq!(Bytes(256 * MIB).to_string(), "256 MiB");
    }

    #[test]
    fn printing_and_parsing_round_trip() {
        for size in [
            Bytes(4 * KIB),
            Bytes(32 * KIB),
            Bytes(MIB),
            Bytes(GIB),
            Bytes(7),
        ] {
            assert_eq!(Bytes::parse(&size.to_string()).unwrap(), size);
        }
    }
}
