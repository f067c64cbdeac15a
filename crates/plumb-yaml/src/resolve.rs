//! What a scalar means. Two resolvers matter for Kubernetes YAML:
//!
//! - [`Schema::Kustomize`]: go-yaml v3, through which kustomize reads resources. Only
//!   `true`/`false` (three spellings) are booleans; `0644` is still octal for compatibility.
//! - [`Schema::Yaml11`]: go-yaml v2 (YAML 1.1), through which Kubernetes, Flux and kustomize's
//!   output writer read YAML: `yes`, `on`, `y` are booleans too.
//!
//! Both read integers as Go's `strconv.ParseInt(s, 0, 64)` does after dropping `_`, fall back to
//! unsigned and then float, and read timestamps only when unquoted.

use crate::node::{Scalar, ScalarStyle};
use std::borrow::Cow;
use std::fmt;

/// Which YAML reader's rules to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// go-yaml v3, as kustomize reads resources.
    Kustomize,
    /// go-yaml v2 (YAML 1.1), as Kubernetes and Flux read manifests.
    Yaml11,
}

/// A scalar's meaning.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(Cow<'a, str>),
    Timestamp(Timestamp),
}

/// A timestamp as go-yaml parses it: a civil date and time with an optional UTC offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamp {
    pub year: i32,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub nanos: u32,
    /// Offset east of UTC in seconds; 0 for UTC and for timestamps written without a zone.
    pub offset: i32,
}

impl fmt::Display for Timestamp {
    /// Go's RFC 3339 with nanoseconds, which is how a `time.Time` becomes JSON.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )?;
        if self.nanos > 0 {
            let frac = format!("{:09}", self.nanos);
            write!(f, ".{}", frac.trim_end_matches('0'))?;
        }
        if self.offset == 0 {
            f.write_str("Z")
        } else {
            let sign = if self.offset < 0 { '-' } else { '+' };
            let abs = self.offset.unsigned_abs();
            write!(f, "{sign}{:02}:{:02}", abs / 3600, (abs / 60) % 60)
        }
    }
}

/// A scalar whose tag contradicts its text (`!!int abc`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagMismatch {
    pub tag: String,
    pub value: String,
    pub resolved: &'static str,
}

impl fmt::Display for TagMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot decode {} `{}` as a {}",
            self.resolved, self.value, self.tag
        )
    }
}

/// Resolves a scalar under `schema`, honouring its tag and quote style.
pub fn resolve(scalar: &Scalar, schema: Schema) -> Result<Resolved<'_>, TagMismatch> {
    let tag = scalar.tag();
    match tag {
        Some("!!str") | Some("!!binary") => return Ok(Resolved::Str(Cow::Borrowed(&scalar.value))),
        Some(t) if !t.starts_with("!!") => return Ok(Resolved::Str(Cow::Borrowed(&scalar.value))),
        _ => {}
    }
    let implicit = if scalar.style.is_quoted() && tag.is_none() {
        Resolved::Str(Cow::Borrowed(&scalar.value))
    } else {
        resolve_plain(
            &scalar.value,
            schema,
            tag.is_none() || tag == Some("!!timestamp"),
        )
    };
    let Some(tag) = tag else {
        return Ok(implicit);
    };
    let name = kind_name(&implicit);
    let ok = match (tag, &implicit) {
        ("!!null", Resolved::Null)
        | ("!!bool", Resolved::Bool(_))
        | ("!!int", Resolved::Int(_) | Resolved::Uint(_))
        | ("!!float", Resolved::Float(_))
        | ("!!timestamp", Resolved::Timestamp(_)) => return Ok(implicit),
        ("!!float", Resolved::Int(i)) => Some(Resolved::Float(*i as f64)),
        ("!!float", Resolved::Uint(u)) => Some(Resolved::Float(*u as f64)),
        ("!!map" | "!!seq" | "!!merge", _) => Some(Resolved::Str(Cow::Borrowed(&scalar.value))),
        _ => None,
    };
    ok.ok_or_else(|| TagMismatch {
        tag: tag.to_string(),
        value: scalar.value.to_string(),
        resolved: name,
    })
}

fn kind_name(r: &Resolved<'_>) -> &'static str {
    match r {
        Resolved::Null => "!!null",
        Resolved::Bool(_) => "!!bool",
        Resolved::Int(_) | Resolved::Uint(_) => "!!int",
        Resolved::Float(_) => "!!float",
        Resolved::Str(_) => "!!str",
        Resolved::Timestamp(_) => "!!timestamp",
    }
}

/// Resolves the text of an untagged plain scalar.
pub fn resolve_plain(text: &str, schema: Schema, timestamps: bool) -> Resolved<'_> {
    let Some(&first) = text.as_bytes().first() else {
        return Resolved::Null;
    };
    let hint = match first {
        b'0'..=b'9' => b'D',
        b'+' | b'-' => b'S',
        b'.' => b'.',
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => b'M',
        _ => return Resolved::Str(Cow::Borrowed(text)),
    };
    if let Some(known) = lookup(text, schema) {
        return known;
    }
    match hint {
        b'.' => {
            if let Some(f) = go_parse_float(text) {
                return Resolved::Float(f);
            }
        }
        b'D' | b'S' => {
            if timestamps {
                if let Some(t) = parse_timestamp(text) {
                    return Resolved::Timestamp(t);
                }
            }
            if let Some(n) = resolve_number(text) {
                return n;
            }
        }
        _ => {}
    }
    Resolved::Str(Cow::Borrowed(text))
}

/// Reads a number the way both go-yaml versions do: `_` dropped, Go's base-prefixed integer
/// syntax, then unsigned, then a YAML-style float.
pub fn resolve_number(text: &str) -> Option<Resolved<'static>> {
    let plain: Cow<'_, str> = if text.contains('_') {
        Cow::Owned(text.replace('_', ""))
    } else {
        Cow::Borrowed(text)
    };
    if let Some(i) = go_parse_int(&plain) {
        return Some(Resolved::Int(i));
    }
    if let Some(u) = go_parse_uint(&plain) {
        return Some(Resolved::Uint(u));
    }
    if is_yaml_style_float(&plain) {
        if let Some(f) = go_parse_float(&plain) {
            return Some(Resolved::Float(f));
        }
    }
    None
}

fn lookup(text: &str, schema: Schema) -> Option<Resolved<'static>> {
    let common = match text {
        "true" | "True" | "TRUE" => Some(Resolved::Bool(true)),
        "false" | "False" | "FALSE" => Some(Resolved::Bool(false)),
        "~" | "null" | "Null" | "NULL" => Some(Resolved::Null),
        ".nan" | ".NaN" | ".NAN" => Some(Resolved::Float(f64::NAN)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            Some(Resolved::Float(f64::INFINITY))
        }
        "-.inf" | "-.Inf" | "-.INF" => Some(Resolved::Float(f64::NEG_INFINITY)),
        _ => None,
    };
    if common.is_some() || schema == Schema::Kustomize {
        return common;
    }
    match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(Resolved::Bool(true)),
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(Resolved::Bool(false)),
        _ => None,
    }
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

fn split_base(s: &str) -> (u32, &str) {
    let lower = |p: &str| s.len() > 2 && s.as_bytes()[..2].eq_ignore_ascii_case(p.as_bytes());
    if lower("0x") {
        (16, &s[2..])
    } else if lower("0o") {
        (8, &s[2..])
    } else if lower("0b") {
        (2, &s[2..])
    } else if s.len() > 1 && s.starts_with('0') {
        (8, &s[1..])
    } else {
        (10, s)
    }
}

/// `strconv.ParseUint(s, 0, 64)`.
pub fn go_parse_uint(s: &str) -> Option<u64> {
    let (base, digits) = split_base(s);
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(base)) {
        return None;
    }
    u64::from_str_radix(digits, base).ok()
}

/// `strconv.ParseInt(s, 0, 64)`.
pub fn go_parse_int(s: &str) -> Option<i64> {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let u = go_parse_uint(rest)?;
    if neg {
        if u <= i64::MAX as u64 + 1 {
            Some((u as i128).wrapping_neg() as i64)
        } else {
            None
        }
    } else {
        i64::try_from(u).ok()
    }
}

/// `strconv.ParseFloat(s, 64)` for the decimal forms YAML can reach.
pub fn go_parse_float(s: &str) -> Option<f64> {
    let lower = s.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if body.starts_with("inf") || body.starts_with("nan") {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// go-yaml's timestamp forms: `2006-1-2T15:4:5.999999999Z07:00` (or lower-case `t`),
/// `2006-1-2 15:4:5.999999999`, `2006-1-2`.
pub fn parse_timestamp(s: &str) -> Option<Timestamp> {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return None;
    }
    let mut p = Cursor { b, i: 5 };
    let year: i32 = s[..4].parse().ok()?;
    let month = p.num(1, 2)?;
    p.expect(b'-')?;
    let day = p.num(1, 2)?;
    let mut t = Timestamp {
        year,
        month,
        day,
        hour: 0,
        minute: 0,
        second: 0,
        nanos: 0,
        offset: 0,
    };
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if p.done() {
        return Some(t);
    }
    let zoned = match p.next()? {
        b'T' | b't' => true,
        b' ' => false,
        _ => return None,
    };
    t.hour = p.num(1, 2)?;
    p.expect(b':')?;
    t.minute = p.num(1, 2)?;
    p.expect(b':')?;
    t.second = p.num(1, 2)?;
    if t.hour > 23 || t.minute > 59 || t.second > 59 {
        return None;
    }
    if matches!(p.peek(), Some(b'.' | b',')) && p.peek_at(1).is_some_and(|c| c.is_ascii_digit()) {
        p.i += 1;
        let start = p.i;
        while p.peek().is_some_and(|c| c.is_ascii_digit()) {
            p.i += 1;
        }
        let digits = &s[start..p.i];
        let mut nanos: u32 = 0;
        for (k, c) in digits.bytes().take(9).enumerate() {
            nanos += u32::from(c - b'0') * 10u32.pow(8 - k as u32);
        }
        t.nanos = nanos;
    }
    if zoned {
        match p.next()? {
            b'Z' => {}
            sign @ (b'+' | b'-') => {
                let h = p.num(2, 2)?;
                p.expect(b':')?;
                let m = p.num(2, 2)?;
                if h > 24 || m > 59 {
                    return None;
                }
                let off = (h * 3600 + m * 60) as i32;
                t.offset = if sign == b'-' { -off } else { off };
            }
            _ => return None,
        }
    }
    p.done().then_some(t)
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    fn peek_at(&self, k: usize) -> Option<u8> {
        self.b.get(self.i + k).copied()
    }
    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }
    fn done(&self) -> bool {
        self.i == self.b.len()
    }
    fn expect(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }
    fn num(&mut self, min: usize, max: usize) -> Option<u32> {
        let start = self.i;
        while self.i - start < max && self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        if self.i - start < min {
            return None;
        }
        std::str::from_utf8(&self.b[start..self.i])
            .ok()?
            .parse()
            .ok()
    }
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// Whether a plain scalar with this text would be read as anything but a string under `schema`
/// (the test go-yaml's writer uses to decide whether a string needs quotes).
pub fn plain_is_string(text: &str, schema: Schema) -> bool {
    matches!(resolve_plain(text, schema, true), Resolved::Str(_))
}

impl Scalar {
    /// A plain, untagged scalar.
    pub fn plain(value: impl Into<compact_str::CompactString>) -> Scalar {
        Scalar {
            value: value.into(),
            style: ScalarStyle::Plain,
            tag: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str, schema: Schema) -> Resolved<'_> {
        resolve_plain(s, schema, true)
    }

    #[test]
    fn yaml11_booleans_only_in_v2() {
        assert_eq!(r("yes", Schema::Yaml11), Resolved::Bool(true));
        assert_eq!(r("off", Schema::Yaml11), Resolved::Bool(false));
        assert_eq!(r("yes", Schema::Kustomize), Resolved::Str("yes".into()));
        assert_eq!(r("True", Schema::Kustomize), Resolved::Bool(true));
    }

    #[test]
    fn go_integer_syntax() {
        assert_eq!(r("0644", Schema::Kustomize), Resolved::Int(420));
        assert_eq!(r("0o644", Schema::Kustomize), Resolved::Int(420));
        assert_eq!(r("0x1F", Schema::Kustomize), Resolved::Int(31));
        assert_eq!(r("0b101", Schema::Kustomize), Resolved::Int(5));
        assert_eq!(r("1_000", Schema::Kustomize), Resolved::Int(1000));
        assert_eq!(r("-0644", Schema::Kustomize), Resolved::Int(-420));
        assert_eq!(r("08", Schema::Kustomize), Resolved::Float(8.0));
        assert_eq!(
            r("-9223372036854775808", Schema::Kustomize),
            Resolved::Int(i64::MIN)
        );
        assert_eq!(
            r("18446744073709551615", Schema::Kustomize),
            Resolved::Uint(u64::MAX)
        );
        assert_eq!(r("0xZZ", Schema::Kustomize), Resolved::Str("0xZZ".into()));
    }

    #[test]
    fn floats_and_strings_that_look_numeric() {
        assert_eq!(r(".5", Schema::Kustomize), Resolved::Float(0.5));
        assert_eq!(r("1e3", Schema::Kustomize), Resolved::Float(1000.0));
        assert_eq!(r("1.2.3", Schema::Kustomize), Resolved::Str("1.2.3".into()));
        assert_eq!(r("1e", Schema::Kustomize), Resolved::Str("1e".into()));
        assert_eq!(r(".", Schema::Kustomize), Resolved::Str(".".into()));
    }

    #[test]
    fn timestamps() {
        let Resolved::Timestamp(t) = r("2001-12-14t21:59:43.10-05:00", Schema::Kustomize) else {
            panic!("not a timestamp");
        };
        assert_eq!(t.to_string(), "2001-12-14T21:59:43.1-05:00");
        let Resolved::Timestamp(t) = r("2001-1-2", Schema::Kustomize) else {
            panic!("not a timestamp");
        };
        assert_eq!(t.to_string(), "2001-01-02T00:00:00Z");
        assert!(parse_timestamp("2001-02-30").is_none());
        assert!(parse_timestamp("2001-12-14 21:59:43.10 -5").is_none());
    }
}
