//! Value types that validate themselves while deserializing, so a bad value in a manifest is
//! reported at its own line and column (and a bad flag, such as `--older-than`, by name):
//! durations, sizes, one-or-many lists, branch names.

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;
use std::time::Duration as StdDuration;

/// A positive duration: seconds as a number, or `"90s"`, `"10m"`, `"1h30m"`, `"500ms"`, `"2d"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Duration(pub(crate) StdDuration);

impl Duration {
    pub(crate) const fn from_secs(secs: u64) -> Self {
        Duration(StdDuration::from_secs(secs))
    }
}

const DURATION_EXPECTED: &str = "a duration like \"90s\", \"10m\" or \"1h30m\", or a number of seconds";
const SIZE_EXPECTED: &str = "bytes or a size like \"512m\" or \"4g\"";

/// Why a duration or a size could not be read, said with the text as it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ValueError {
    EmptyDuration,
    /// Not a duration (or a size) at all; `expected` says what is.
    Invalid {
        what: &'static str,
        text: String,
        expected: &'static str,
    },
    /// A unit twice, or a smaller before a larger (`30m1h`).
    UnitOrder {
        text: String,
    },
    Zero {
        text: String,
    },
    /// A number of seconds that is not a positive number eden can wait for.
    OutOfRange {
        text: String,
    },
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueError::EmptyDuration => write!(f, "empty duration, expected {DURATION_EXPECTED}"),
            ValueError::Invalid { what, text, expected } => write!(f, "invalid {what} `{text}`, expected {expected}"),
            ValueError::UnitOrder { text } => {
                write!(f, "invalid duration `{text}`: each unit may come once, largest first (like \"1h30m\")")
            }
            ValueError::Zero { text } => write!(f, "duration `{text}` is zero, expected a positive duration"),
            ValueError::OutOfRange { text } => {
                write!(f, "duration {text} is out of range, expected a positive number of seconds")
            }
        }
    }
}

impl std::error::Error for ValueError {}

/// Parse `"1h30m"`-style durations. Each part is a whole number followed by `ms`, `s`, `m`, `h`
/// or `d`; parts may be separated by spaces.
pub(crate) fn parse_duration(text: &str) -> Result<StdDuration, ValueError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(ValueError::EmptyDuration);
    }
    if let Ok(secs) = trimmed.parse::<f64>() {
        return seconds(secs);
    }
    let invalid = || ValueError::Invalid { what: "duration", text: text.to_owned(), expected: DURATION_EXPECTED };
    let mut total = StdDuration::ZERO;
    let mut rest = trimmed;
    // Each unit once, largest first: `1h1h` or `30m1h` is a typo, not a sum.
    let mut previous_unit = f64::INFINITY;
    while !rest.is_empty() {
        let number_len = rest.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.').count();
        let number: f64 = rest[..number_len].parse().map_err(|_| invalid())?;
        rest = &rest[number_len..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit_secs = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            _ => return Err(invalid()),
        };
        if unit_secs >= previous_unit {
            return Err(ValueError::UnitOrder { text: text.to_owned() });
        }
        previous_unit = unit_secs;
        let part = StdDuration::try_from_secs_f64(number * unit_secs).map_err(|_| invalid())?;
        total = total.checked_add(part).filter(|t| t.as_secs() <= 1_000_000_000).ok_or_else(invalid)?;
        rest = rest[unit_len..].trim_start();
    }
    if total.is_zero() {
        return Err(ValueError::Zero { text: text.to_owned() });
    }
    Ok(total)
}

fn seconds(secs: f64) -> Result<StdDuration, ValueError> {
    if !secs.is_finite() || secs <= 0.0 || secs > 1e9 {
        return Err(ValueError::OutOfRange { text: secs.to_string() });
    }
    Ok(StdDuration::from_secs_f64(secs))
}

/// `12,345`: a count as people read it.
/// An amount of US dollars as people read it: cents from a dollar up, four decimals below (a
/// short run costs fractions of a cent, which `$0.00` would hide), `$0` for nothing.
pub(crate) fn dollars(amount: f64) -> String {
    if amount == 0.0 {
        "$0".to_owned()
    } else if amount.abs() >= 1.0 {
        format!("${amount:.2}")
    } else {
        format!("${amount:.4}")
    }
}

pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Format a duration the way the manifest accepts it back (`1h30m`, `90s` → `1m30s`, `250ms`).
pub(crate) fn format_duration(duration: StdDuration) -> String {
    let millis = duration.as_millis();
    if millis == 0 {
        return "0s".into();
    }
    if millis % 1000 != 0 {
        if millis < 1000 {
            return format!("{millis}ms");
        }
        return format!("{:.1}s", duration.as_secs_f64());
    }
    let mut secs = duration.as_secs();
    let mut out = String::new();
    for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)] {
        if secs >= size {
            out.push_str(&format!("{}{unit}", secs / size));
            secs %= size;
        }
    }
    out
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DurationVisitor;
        impl Visitor<'_> for DurationVisitor {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(DURATION_EXPECTED)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
                parse_duration(v).map(Duration).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
                seconds(v as f64).map(Duration).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
                seconds(v as f64).map(Duration).map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
                seconds(v).map(Duration).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(DurationVisitor)
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format_duration(self.0))
    }
}

/// A duration where `0` (or `"0s"`) means "none": `[loop] usage_limit_wait = 0` waits not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MaybeZeroDuration(pub(crate) StdDuration);

impl<'de> Deserialize<'de> for MaybeZeroDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ZeroOkVisitor;
        impl Visitor<'_> for ZeroOkVisitor {
            type Value = MaybeZeroDuration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "{DURATION_EXPECTED}, or 0")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MaybeZeroDuration, E> {
                let zero = v.trim().trim_end_matches(|c: char| c.is_ascii_alphabetic());
                if !zero.is_empty() && zero.parse::<f64>() == Ok(0.0) {
                    return Ok(MaybeZeroDuration(StdDuration::ZERO));
                }
                parse_duration(v).map(MaybeZeroDuration).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<MaybeZeroDuration, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<MaybeZeroDuration, E> {
                self.visit_f64(v as f64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<MaybeZeroDuration, E> {
                if v == 0.0 {
                    return Ok(MaybeZeroDuration(StdDuration::ZERO));
                }
                seconds(v).map(MaybeZeroDuration).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(ZeroOkVisitor)
    }
}

impl Serialize for MaybeZeroDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format_duration(self.0))
    }
}

/// A memory size: bytes as a number, or `"512m"`, `"4g"`, `"1.5g"` (k, m, g, t; binary units).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Size(pub(crate) u64);

/// A size as people read it: `512 B`, `20 MiB`, `2 GiB` (whole units when exact, else one
/// decimal).
pub(crate) fn format_size(bytes: u64) -> String {
    let units = [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in units {
        if bytes >= size {
            return match bytes % size {
                0 => format!("{} {unit}", bytes / size),
                _ => format!("{:.1} {unit}", bytes as f64 / size as f64),
            };
        }
    }
    format!("{bytes} B")
}

pub(crate) fn parse_size(text: &str) -> Result<u64, ValueError> {
    let invalid = || ValueError::Invalid { what: "size", text: text.to_owned(), expected: SIZE_EXPECTED };
    let trimmed = text.trim().to_ascii_lowercase();
    let trimmed = trimmed.strip_suffix('b').unwrap_or(&trimmed);
    let split = trimmed.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: f64 = number.trim().parse().map_err(|_| invalid())?;
    let multiplier: u64 = match unit {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return Err(invalid()),
    };
    let bytes = number * multiplier as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(invalid());
    }
    Ok(bytes as u64)
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SizeVisitor;
        impl Visitor<'_> for SizeVisitor {
            type Value = Size;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size like \"512m\" or \"4g\", or a number of bytes")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Size, E> {
                parse_size(v).map(Size).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Size, E> {
                u64::try_from(v)
                    .ok()
                    .filter(|v| *v > 0)
                    .map(Size)
                    .ok_or_else(|| E::custom(format!("size {v} must be a positive number of bytes")))
            }
        }
        deserializer.deserialize_any(SizeVisitor)
    }
}

/// A list that may be written as a single string: `"x"` or `["x", "y"]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(transparent)]
pub(crate) struct StringList(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for StringList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = StringList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a list of strings")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StringList, E> {
                Ok(StringList(vec![v.to_owned()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StringList, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<String>()? {
                    items.push(item);
                }
                Ok(StringList(items))
            }
        }
        deserializer.deserialize_any(ListVisitor)
    }
}

/// Why `name` cannot be a git branch name, following `git check-ref-format --branch`.
pub(crate) fn branch_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("it is empty");
    }
    if name.starts_with('-') {
        return Some("it starts with `-`");
    }
    if name == "HEAD" || name == "@" {
        return Some("it is reserved by git");
    }
    if name.contains("..") {
        return Some("it contains `..`");
    }
    if name.contains("@{") {
        return Some("it contains `@{`");
    }
    if name.contains("//") || name.starts_with('/') || name.ends_with('/') {
        return Some("it has an empty path component");
    }
    if name.ends_with('.') {
        return Some("it ends with `.`");
    }
    if let Some(c) =
        name.chars().find(|c| c.is_ascii_control() || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\'))
    {
        return Some(match c {
            ' ' => "it contains a space",
            _ if c.is_ascii_control() => "it contains a control character",
            '~' => "it contains `~`",
            '^' => "it contains `^`",
            ':' => "it contains `:`",
            '?' => "it contains `?`",
            '*' => "it contains `*`",
            '[' => "it contains `[`",
            _ => "it contains `\\`",
        });
    }
    if name.split('/').any(|part| part.starts_with('.') || part.ends_with(".lock")) {
        return Some("a component starts with `.` or ends with `.lock`");
    }
    None
}

/// `a/./b/../c` as `a/c`, without touching the filesystem (for paths shown in messages and
/// paths given on the command line).
pub(crate) fn normalize_path(path: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut normal = std::path::PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir if normal.file_name().is_some() => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    normal
}

/// `bytes` random bytes from the kernel, as hex: for tokens nobody may guess (placeholders,
/// marks).
pub(crate) fn random_hex(bytes: usize) -> std::io::Result<String> {
    use std::io::Read;
    let mut buffer = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buffer)?;
    Ok(buffer.iter().map(|b| format!("{b:02x}")).collect())
}

/// An HTTP API's base URL, as eden's key-holding proxy forwards to it (`https://host[:port][/path]`, or `http://`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl {
    pub(crate) tls: bool,
    pub(crate) host: String,
    pub(crate) port: u16,
    /// The base URL's path, without a trailing `/` (empty for the root).
    pub(crate) prefix: String,
}

impl BaseUrl {
    /// `https://host[:port][/path]` or `http://…`; `None` for anything else.
    pub fn parse(url: &str) -> Option<BaseUrl> {
        let (tls, rest) = match url.split_once("://")? {
            ("https", rest) => (true, rest),
            ("http", rest) => (false, rest),
            _ => return None,
        };
        let (authority, path) = rest.find('/').map_or((rest, ""), |at| rest.split_at(at));
        if authority.is_empty() || authority.contains('@') {
            return None;
        }
        let (host, port) = match authority.strip_prefix('[') {
            Some(v6) => {
                let (host, after) = v6.split_once(']')?;
                (host.to_owned(), after.strip_prefix(':'))
            }
            None => match authority.rsplit_once(':') {
                Some((host, port)) => (host.to_owned(), Some(port)),
                None => (authority.to_owned(), None),
            },
        };
        let port = match port {
            Some(port) => port.parse().ok()?,
            None if tls => 443,
            None => 80,
        };
        let path = path.split(['?', '#']).next().unwrap_or("");
        Some(BaseUrl { tls, host, port, prefix: path.trim_end_matches('/').to_owned() })
    }

    /// `host` or `host:port` as a `Host` header says it.
    pub(crate) fn authority(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        match (self.tls, self.port) {
            (true, 443) | (false, 80) => host,
            (_, port) => format!("{host}:{port}"),
        }
    }

    /// `scheme://authority/prefix`, for people.
    pub(crate) fn url(&self) -> String {
        format!("{}://{}{}", if self.tls { "https" } else { "http" }, self.authority(), self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let d = |s: &str| parse_duration(s).unwrap();
        assert_eq!(d("90s"), StdDuration::from_secs(90));
        assert_eq!(d("10m"), StdDuration::from_secs(600));
        assert_eq!(d("1h30m"), StdDuration::from_secs(5400));
        assert_eq!(d("1h 30m"), StdDuration::from_secs(5400));
        assert_eq!(d("250ms"), StdDuration::from_millis(250));
        assert_eq!(d("45"), StdDuration::from_secs(45));
        assert_eq!(d("0.5"), StdDuration::from_millis(500));
        assert_eq!(d("0.6s"), StdDuration::from_millis(600));
        assert_eq!(d("1.5h"), StdDuration::from_secs(5400));
        for bad in
            ["", "10x", "m", "10 minutes", "-5", "0s", "1h30", "99999999999h", "1..5s", ".s", "1h1h1h", "30m1h", "1s1s"]
        {
            assert!(parse_duration(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn durations_format_back() {
        for text in ["90s", "10m", "1h30m", "250ms", "2d"] {
            let parsed = parse_duration(text).unwrap();
            assert_eq!(parse_duration(&format_duration(parsed)).unwrap(), parsed);
        }
        assert_eq!(format_duration(StdDuration::from_secs(5400)), "1h30m");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4g").unwrap(), 4 << 30);
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("1.5g").unwrap(), 3 << 29);
        assert_eq!(parse_size("100").unwrap(), 100);
        for bad in ["", "g", "4x", "-1g", "0"] {
            assert!(parse_size(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn branch_names() {
        for good in ["eden/fix-login", "feature/a.b", "x"] {
            assert_eq!(branch_name_problem(good), None, "{good}");
        }
        for bad in ["", "-x", "a..b", "a b", "a~1", "a:b", "a/", "/a", "a//b", "a.lock", ".a", "a.", "HEAD", "a@{1"] {
            assert!(branch_name_problem(bad).is_some(), "{bad} should be rejected");
        }
    }

    #[test]
    fn base_urls_parse() {
        let up = BaseUrl::parse("https://api.anthropic.com").unwrap();
        assert_eq!((up.tls, up.host.as_str(), up.port, up.prefix.as_str()), (true, "api.anthropic.com", 443, ""));
        assert_eq!(up.authority(), "api.anthropic.com");
        let up = BaseUrl::parse("http://127.0.0.1:8080/v1/").unwrap();
        assert_eq!(
            (up.tls, up.port, up.prefix.as_str(), up.authority()),
            (false, 8080, "/v1", "127.0.0.1:8080".into())
        );
        let up = BaseUrl::parse("https://[::1]:9443/api?x=1").unwrap();
        assert_eq!((up.host.as_str(), up.port, up.prefix.as_str()), ("::1", 9443, "/api"));
        assert_eq!(up.url(), "https://[::1]:9443/api");
        for bad in ["ftp://x", "api.anthropic.com", "https://", "https://user@host", "https://h:port"] {
            assert!(BaseUrl::parse(bad).is_none(), "{bad}");
        }
    }
}

/// The manifest's JSON Schema (`eden schema`) says of each value type what eden reads: an
/// editor's check then agrees with eden's own (the order of a duration's units aside, which eden
/// says with the line and column).
mod json_schemas {
    use super::{Duration, MaybeZeroDuration, Size, StringList};
    use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
    use std::borrow::Cow;

    const DURATION_PATTERN: &str = r"^\s*(([0-9]*\.?[0-9]+(ms|s|m|h|d))+|[0-9]*\.?[0-9]+)\s*$";

    impl JsonSchema for Duration {
        fn schema_name() -> Cow<'static, str> {
            "Duration".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({
                "description": "A duration: \"90s\", \"10m\", \"1h30m\", \"1.5h\", \"250ms\", \"2d\" (each unit once, largest first), or a number of seconds.",
                "anyOf": [
                    { "type": "string", "pattern": DURATION_PATTERN },
                    { "type": "number", "exclusiveMinimum": 0 }
                ]
            })
        }
    }

    impl JsonSchema for MaybeZeroDuration {
        fn schema_name() -> Cow<'static, str> {
            "DurationOrZero".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({
                "description": "A duration (\"90s\", \"10m\", \"6h\", or seconds), or 0.",
                "anyOf": [
                    { "type": "string", "pattern": DURATION_PATTERN },
                    { "type": "number", "minimum": 0 }
                ]
            })
        }
    }

    impl JsonSchema for Size {
        fn schema_name() -> Cow<'static, str> {
            "Size".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({
                "description": "A size: a number of bytes, or \"512m\", \"4g\" (k, m, g, t: powers of 1024; a trailing b is allowed).",
                "anyOf": [
                    { "type": "string", "pattern": r"^\s*[0-9]*\.?[0-9]+\s*[kKmMgGtT]?[bB]?\s*$" },
                    { "type": "integer", "minimum": 1 }
                ]
            })
        }
    }

    impl JsonSchema for StringList {
        fn schema_name() -> Cow<'static, str> {
            "StringList".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({
                "description": "A string, or a list of strings.",
                "anyOf": [
                    { "type": "string" },
                    { "type": "array", "items": { "type": "string" } }
                ]
            })
        }
    }
}
