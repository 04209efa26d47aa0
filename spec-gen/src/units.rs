//! Sizes (`512MiB`) and durations (`10m`) as written in policies and
//! annotations. The annotation codec also accepts a bare integer (bytes,
//! milliseconds) so a hand-written annotation can stay numeric; a policy
//! never does (`policy::validate` refuses `memory = 512` and `"512"` with a
//! suggestion of the unit, since a bare number is too easy to misread).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a size or duration did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(pub String);

/// A byte count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

/// A wall-clock span, millisecond precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Span(pub Duration);

fn split_number(s: &str) -> Option<(u64, &str)> {
    let end = s
        .find(|c: char| !c.is_ascii_digit() && c != '_')
        .unwrap_or(s.len());
    let digits: String = s[..end].chars().filter(|c| *c != '_').collect();
    if digits.is_empty() {
        return None;
    }
    Some((digits.parse().ok()?, s[end..].trim()))
}

impl ByteSize {
    pub fn parse(s: &str) -> Result<Self, UnitError> {
        let bad = || {
            UnitError(format!(
                "invalid size {s:?}: write an integer with a unit B, KiB, MiB or GiB, e.g. \"512MiB\""
            ))
        };
        let (n, unit) = split_number(s.trim()).ok_or_else(bad)?;
        let mult: u64 = match unit {
            "" | "B" => 1,
            "KiB" => 1 << 10,
            "MiB" => 1 << 20,
            "GiB" => 1 << 30,
            _ => return Err(bad()),
        };
        n.checked_mul(mult).map(ByteSize).ok_or_else(bad)
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (unit, m) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
            if n != 0 && n.is_multiple_of(m) {
                return write!(f, "{}{unit}", n / m);
            }
        }
        write!(f, "{n}B")
    }
}

impl Span {
    pub fn parse(s: &str) -> Result<Self, UnitError> {
        let bad = || {
            UnitError(format!(
                "invalid duration {s:?}: write an integer with a unit ms, s, m or h, e.g. \"30s\""
            ))
        };
        let (n, unit) = split_number(s.trim()).ok_or_else(bad)?;
        let ms: u64 = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            _ => return Err(bad()),
        };
        n.checked_mul(ms)
            .map(|v| Span(Duration::from_millis(v)))
            .ok_or_else(bad)
    }

    pub fn as_millis(&self) -> u64 {
        self.0.as_millis() as u64
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.as_millis();
        if ms.is_multiple_of(1000) {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{ms}ms")
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Int(u64),
    Text(String),
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(ByteSize(n)),
            Raw::Text(s) => ByteSize::parse(&s).map_err(serde::de::Error::custom),
        }
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(Span(Duration::from_millis(n))),
            Raw::Text(s) => Span::parse(&s).map_err(serde::de::Error::custom),
        }
    }
}

impl Serialize for Span {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

// JSON Schema for editors: both types accept an integer (bytes,
// milliseconds) or a string with a unit, exactly like their deserializers.
impl schemars::JsonSchema for ByteSize {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ByteSize".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A size: an integer number of bytes, or a string with a unit B, KiB, MiB or GiB, e.g. \"512MiB\".",
            "oneOf": [
                { "type": "integer", "minimum": 0 },
                { "type": "string", "pattern": "^[0-9][0-9_]*\\s*(B|KiB|MiB|GiB)?$" }
            ]
        })
    }
}

impl schemars::JsonSchema for Span {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Span".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A duration: an integer number of milliseconds, or a string with a unit ms, s, m or h, e.g. \"30s\".",
            "oneOf": [
                { "type": "integer", "minimum": 0 },
                { "type": "string", "pattern": "^[0-9][0-9_]*\\s*(ms|s|m|h)$" }
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_spans() {
        assert_eq!(ByteSize::parse("512MiB").unwrap().0, 512 << 20);
        assert_eq!(ByteSize::parse("64KiB").unwrap().to_string(), "64KiB");
        assert!(ByteSize::parse("5 MB").is_err());
        assert_eq!(Span::parse("10m").unwrap().as_millis(), 600_000);
        assert_eq!(Span::parse("1500ms").unwrap().to_string(), "1500ms");
        assert!(Span::parse("10 minutes").is_err());
    }
}
