//! slim-sprig's hermetic functions (`HermeticTxtFuncMap`, go-task/slim-sprig v3), with sprig's
//! argument order (the piped value last) and its conversions (`toInt64`, `strval`, `empty`).

use std::collections::BTreeMap;

use base64::Engine;
use sha2::Digest;

use super::{int_arg, str_arg, Functions, Param, Signature};
use crate::gofmt;
use crate::value::Value;

use Param::{Any, Bool, Int, Map, String as Str};

type Body = fn(&[Value]) -> Result<Value, String>;

fn s(v: impl Into<String>) -> Result<Value, String> {
    Ok(Value::String(v.into()))
}

fn list(items: Vec<Value>) -> Result<Value, String> {
    Ok(Value::list(items))
}

fn strings(items: Vec<String>) -> Value {
    Value::list(items.into_iter().map(Value::String).collect())
}

/// sprig's `strval`: a string as is, anything else as `%v` prints it.
pub(crate) fn strval(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => gofmt::sprint_value(other),
    }
}

/// sprig's `toInt64` (via reflection): strings parsed base 10, floats truncated, bools 0/1.
fn to_i64(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().unwrap_or(0),
        Value::Int(i) | Value::GoInt(i) => *i,
        Value::Float(f) => {
            if f.is_nan() {
                i64::MIN
            } else {
                *f as i64
            }
        }
        Value::Bool(b) => i64::from(*b),
        _ => 0,
    }
}

fn to_f64(v: &Value) -> f64 {
    match v {
        Value::String(s) => s.parse().unwrap_or(0.0),
        Value::Int(i) | Value::GoInt(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        _ => 0.0,
    }
}

/// sprig's `empty`.
fn empty(v: &Value) -> bool {
    !v.is_true()
}

/// sprig's `strslice` (`toStrings`): a list's non-nil items as strings.
fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::List(l) => l
            .iter()
            .filter(|x| !matches!(x, Value::Null))
            .map(strval)
            .collect(),
        Value::Null => Vec::new(),
        other => vec![strval(other)],
    }
}

/// The list a sprig list function takes, or its "Cannot X on type T" panic.
fn as_list<'a>(v: &'a Value, what: &str) -> Result<&'a [Value], String> {
    match v {
        Value::List(l) => Ok(l),
        Value::Null => {
            Err("runtime error: invalid memory address or nil pointer dereference".into())
        }
        other => Err(format!("Cannot {what} type {}", other.go_kind())),
    }
}

fn map_of(v: &Value) -> BTreeMap<String, Value> {
    match v {
        Value::Map(m) => (**m).clone(),
        _ => BTreeMap::new(),
    }
}

fn go_trim_space(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace())
}

/// Go's `strings.Title`: upper-cases the first letter of each word.
fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_sep = true;
    for c in s.chars() {
        if prev_sep {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev_sep = if c.is_ascii() {
            !(c.is_ascii_alphanumeric() || c == '_')
        } else {
            c.is_whitespace()
        };
    }
    out
}

fn regex(pattern: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(pattern).map_err(|e| {
        let detail = e.to_string();
        let last = detail.lines().last().unwrap_or("").trim();
        format!("regexp: Compile(`{pattern}`): error parsing regexp: {last}")
    })
}

/// Go's `%q` of a string, which `quote` applies.
fn quote_str(v: &Value) -> String {
    gofmt::go_quote(&strval(v))
}

/// Go's `path.Clean`.
fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

fn base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return "/".into();
    }
    t.rsplit('/').next().unwrap_or(t).to_string()
}

fn dir(p: &str) -> String {
    let d = match p.rfind('/') {
        Some(i) => &p[..=i],
        None => "",
    };
    clean(d)
}

fn ext(p: &str) -> String {
    for (i, c) in p.char_indices().rev() {
        if c == '/' {
            break;
        }
        if c == '.' {
            return p[i..].to_string();
        }
    }
    String::new()
}

/// Go's `json.Marshal` of a value (sorted keys, HTML-safe escapes, Go's float format).
pub(crate) fn go_json(
    v: &Value,
    escape_html: bool,
    indent: Option<&str>,
    depth: usize,
    out: &mut String,
) {
    let newline = |out: &mut String, depth: usize| {
        if let Some(ind) = indent {
            out.push('\n');
            for _ in 0..depth {
                out.push_str(ind);
            }
        }
    };
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::GoInt(i) => out.push_str(&i.to_string()),
        Value::Float(f) => out.push_str(&json_float(*f)),
        Value::String(s) => json_string(s, escape_html, out),
        Value::List(l) => {
            if l.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in l.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                go_json(item, escape_html, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push(']');
        }
        Value::Map(m) => {
            if m.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, depth + 1);
                json_string(k, escape_html, out);
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                go_json(item, escape_html, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push('}');
        }
    }
}

/// encoding/json's float format: `%f` style between 1e-6 and 1e21, else `%e` with a short
/// exponent.
pub(crate) fn json_float(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    let a = f.abs();
    if a != 0.0 && !(1e-6..1e21).contains(&a) {
        let g = format!("{f:e}");
        let (m, e) = g.split_once('e').unwrap_or((&g, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        let sign = if e < 0 { '-' } else { '+' };
        let e = e.unsigned_abs();
        if e < 10 {
            return format!("{m}e{sign}0{e}")
                .replace("e+0", "e+")
                .replace("e-0", "e-");
        }
        return format!("{m}e{sign}{e}");
    }
    let s = format!("{f}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

fn json_string(s: &str, escape_html: bool, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' if escape_html => out.push_str(&format!("\\u{:04x}", c as u32)),
            '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn to_json(v: &Value, escape_html: bool, indent: Option<&str>) -> String {
    let mut out = String::new();
    go_json(v, escape_html, indent, 0, &mut out);
    out
}

fn from_json(text: &str) -> Result<Value, String> {
    serde_json::from_str::<serde_json::Value>(text)
        .map(|j| Value::from_json_floats(&j))
        .map_err(|e| e.to_string())
}

/// The most items or bytes one function call may produce: a bound Go does not have (it runs
/// out of memory instead), so that a template cannot exhaust plumb's.
const MAX_SIZE: u64 = 1 << 28;

fn check_size(n: u64) -> Result<(), String> {
    if n > MAX_SIZE {
        return Err(format!(
            "result of {n} items or bytes is too large (plumb's limit is {MAX_SIZE})"
        ));
    }
    Ok(())
}

/// sprig's `untilStep`.
fn until_step(start: i64, stop: i64, step: i64) -> Vec<i64> {
    let mut v = Vec::new();
    if stop < start {
        if step >= 0 {
            return v;
        }
        let mut i = start;
        while i > stop {
            v.push(i);
            match i.checked_add(step) {
                Some(n) => i = n,
                None => break,
            }
        }
        return v;
    }
    if step <= 0 {
        return v;
    }
    let mut i = start;
    while i < stop {
        v.push(i);
        match i.checked_add(step) {
            Some(n) => i = n,
            None => break,
        }
    }
    v
}

fn ints(v: Vec<i64>) -> Value {
    Value::list(v.into_iter().map(Value::GoInt).collect())
}

fn seq(params: &[i64]) -> String {
    let join = |v: Vec<i64>| v.iter().map(i64::to_string).collect::<Vec<_>>().join(" ");
    match params {
        [] => String::new(),
        [end] => {
            let inc = if *end < 1 { -1 } else { 1 };
            join(until_step(1, end.saturating_add(inc), inc))
        }
        [start, end] => {
            let step = if end < start { -1 } else { 1 };
            join(until_step(*start, end.saturating_add(step), step))
        }
        [start, step, end] => {
            let mut inc = 1;
            if end < start {
                inc = -1;
                if *step > 0 {
                    return String::new();
                }
            }
            join(until_step(*start, end.saturating_add(inc), *step))
        }
        _ => String::new(),
    }
}

fn sha1_hex(data: &[u8]) -> String {
    let mut h: [u32; 5] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0];
    let mut msg = data.to_vec();
    let bit_len = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bit_len.to_be_bytes());
    for chunk in msg.chunks(64) {
        let mut w = [0u32; 80];
        for (i, word) in chunk.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A827999),
                20..=39 => (b ^ c ^ d, 0x6ED9EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1BBCDC),
                _ => (b ^ c ^ d, 0xCA62C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
            *x = x.wrapping_add(y);
        }
    }
    h.iter().map(|x| format!("{x:08x}")).collect()
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + byte as u32) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

const B32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

fn b32enc(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let bits = u64::from_be_bytes([0, 0, 0, buf[0], buf[1], buf[2], buf[3], buf[4]]);
        let chars = match chunk.len() {
            1 => 2,
            2 => 4,
            3 => 5,
            4 => 7,
            _ => 8,
        };
        for i in 0..8 {
            if i < chars {
                out.push(B32[((bits >> (35 - i * 5)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn b32dec(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(8) {
        return Err(format!(
            "illegal base32 data at input byte {}",
            bytes.len() / 8 * 8
        ));
    }
    let mut out = Vec::new();
    for (ci, chunk) in bytes.chunks(8).enumerate() {
        let mut bits: u64 = 0;
        let mut n = 0;
        for (i, &c) in chunk.iter().enumerate() {
            if c == b'=' {
                break;
            }
            let Some(v) = B32.iter().position(|&b| b == c) else {
                return Err(format!("illegal base32 data at input byte {}", ci * 8 + i));
            };
            bits |= (v as u64) << (35 - i * 5);
            n = i + 1;
        }
        let nbytes = match n {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            2 => 1,
            _ => return Err(format!("illegal base32 data at input byte {}", ci * 8 + n)),
        };
        let be = bits.to_be_bytes();
        out.extend_from_slice(&be[3..3 + nbytes]);
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `time.Duration.String` of whole seconds.
fn duration(secs: i64) -> String {
    if secs == 0 {
        return "0s".into();
    }
    let neg = secs < 0;
    let mut u = secs.unsigned_abs();
    let h = u / 3600;
    u %= 3600;
    let m = u / 60;
    let sec = u % 60;
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&format!("{sec}s"));
    out
}

fn substr(start: i64, end: i64, text: &str) -> Result<String, String> {
    let len = text.len() as i64;
    let bytes = text.as_bytes();
    let cut = |a: i64, b: i64| -> Result<String, String> {
        if a < 0 || b > len || a > b {
            return Err(if b > len {
                format!("runtime error: slice bounds out of range [:{b}] with length {len}")
            } else {
                format!("runtime error: slice bounds out of range [{a}:{b}]")
            });
        }
        Ok(String::from_utf8_lossy(&bytes[a as usize..b as usize]).into_owned())
    };
    if start < 0 {
        return cut(0, end);
    }
    if end < 0 || end > len {
        return cut(start, len);
    }
    cut(start, end)
}

fn trunc(c: i64, text: &str) -> String {
    let len = text.len() as i64;
    let bytes = text.as_bytes();
    if c < 0 && len + c > 0 {
        return String::from_utf8_lossy(&bytes[(len + c) as usize..]).into_owned();
    }
    if c >= 0 && len > c {
        return String::from_utf8_lossy(&bytes[..c as usize]).into_owned();
    }
    text.to_string()
}

fn split_map(parts: Vec<&str>) -> Value {
    Value::map(
        parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| (format!("_{i}"), Value::String(p.to_string())))
            .collect(),
    )
}

fn go_splitn<'a>(text: &'a str, sep: &str, n: i64) -> Vec<&'a str> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let mut parts: Vec<&str> = Vec::new();
        let mut idx: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        idx.push(text.len());
        for w in idx.windows(2) {
            if n > 0 && parts.len() as i64 == n - 1 {
                parts.push(&text[w[0]..]);
                return parts;
            }
            parts.push(&text[w[0]..w[1]]);
        }
        return parts;
    }
    if n < 0 {
        text.split(sep).collect()
    } else {
        text.splitn(n as usize, sep).collect()
    }
}

fn dig(args: &[Value]) -> Result<Value, String> {
    if args.len() < 3 {
        return Err("dig needs at least three arguments".into());
    }
    let dict = &args[args.len() - 1];
    let default = &args[args.len() - 2];
    let mut cur = dict.clone();
    for k in &args[..args.len() - 2] {
        let Value::String(k) = k else {
            return Err(format!(
                "interface conversion: interface {{}} is {}, not string",
                k.go_type()
            ));
        };
        let Value::Map(m) = &cur else {
            return Err(format!(
                "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                cur.go_type()
            ));
        };
        match m.get(k) {
            Some(v) => cur = v.clone(),
            None => return Ok(default.clone()),
        }
    }
    Ok(cur)
}

fn url_parse(text: &str) -> Result<Value, String> {
    let mut rest = text;
    let mut m = BTreeMap::new();
    let mut put = |k: &str, v: &str| {
        m.insert(k.to_string(), Value::String(v.to_string()));
    };
    let (before_frag, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    rest = before_frag;
    let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
    rest = before_query;
    let mut scheme = "";
    if let Some(i) = rest.find(':') {
        let cand = &rest[..i];
        if !cand.is_empty()
            && cand.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && cand
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            scheme = cand;
            rest = &rest[i + 1..];
        }
    }
    let (mut host, mut userinfo, mut opaque, mut path) = ("", "", "", rest);
    if let Some(after) = rest.strip_prefix("//") {
        let end = after.find('/').unwrap_or(after.len());
        let authority = &after[..end];
        path = &after[end..];
        match authority.rsplit_once('@') {
            Some((u, h)) => {
                userinfo = u;
                host = h;
            }
            None => host = authority,
        }
    } else if !scheme.is_empty() && !rest.starts_with('/') {
        opaque = rest;
        path = "";
    }
    let hostname = if host.starts_with('[') {
        host.split(']').next().unwrap_or("").trim_start_matches('[')
    } else {
        host.split(':').next().unwrap_or("")
    };
    put("scheme", scheme);
    put("host", host);
    put("hostname", hostname);
    put("path", path);
    put("query", query);
    put("opaque", opaque);
    put("fragment", fragment);
    put("userinfo", userinfo);
    Ok(Value::map(m))
}

fn url_join(args: &[Value]) -> Result<Value, String> {
    let m = map_of(&args[0]);
    let get = |k: &str| m.get(k).map(strval).unwrap_or_default();
    let mut out = String::new();
    let scheme = get("scheme");
    if !scheme.is_empty() {
        out.push_str(&scheme);
        out.push(':');
    }
    let opaque = get("opaque");
    if !opaque.is_empty() {
        out.push_str(&opaque);
    } else {
        let host = get("host");
        let userinfo = get("userinfo");
        if !host.is_empty() || !userinfo.is_empty() || !scheme.is_empty() {
            out.push_str("//");
            if !userinfo.is_empty() {
                out.push_str(&userinfo);
                out.push('@');
            }
            out.push_str(&host);
        }
        let path = get("path");
        if !path.is_empty() && !path.starts_with('/') && !host.is_empty() {
            out.push('/');
        }
        out.push_str(&path);
    }
    let query = get("query");
    if !query.is_empty() {
        out.push('?');
        out.push_str(&query);
    }
    let fragment = get("fragment");
    if !fragment.is_empty() {
        out.push('#');
        out.push_str(&fragment);
    }
    s(out)
}

fn round(args: &[Value]) -> Result<Value, String> {
    let round_on = args.get(2).map(to_f64).unwrap_or(0.5);
    let val = to_f64(&args[0]);
    let pow = 10f64.powf(int_arg(args, 1) as f64);
    let digit = pow * val;
    let frac = digit.fract();
    let r = if frac >= round_on {
        digit.ceil()
    } else {
        digit.floor()
    };
    Ok(Value::Float(r / pow))
}

fn unsupported(name: &'static str) -> impl Fn(&[Value]) -> Result<Value, String> {
    move |_| {
        Err(format!(
            "plumb does not implement the sprig function {name}"
        ))
    }
}

/// Registers slim-sprig's hermetic functions.
pub(crate) fn register(f: &mut Functions) {
    let fixed = |f: &mut Functions, name: &str, params: &[Param], body: Body| {
        f.insert(name, Signature::fixed(params), body);
    };
    let variadic = |f: &mut Functions, name: &str, params: &[Param], rest: Param, body: Body| {
        f.insert(name, Signature::variadic(params, rest), body);
    };

    fixed(f, "hello", &[], |_| s("Hello!"));

    // Strings.
    fixed(f, "trunc", &[Int, Str], |a| {
        s(trunc(int_arg(a, 0), str_arg(a, 1)))
    });
    fixed(f, "trim", &[Str], |a| s(go_trim_space(str_arg(a, 0))));
    fixed(f, "upper", &[Str], |a| s(str_arg(a, 0).to_uppercase()));
    fixed(f, "lower", &[Str], |a| s(str_arg(a, 0).to_lowercase()));
    fixed(f, "title", &[Str], |a| s(title(str_arg(a, 0))));
    fixed(f, "substr", &[Int, Int, Str], |a| {
        substr(int_arg(a, 0), int_arg(a, 1), str_arg(a, 2)).map(Value::String)
    });
    fixed(f, "repeat", &[Int, Str], |a| {
        let n = int_arg(a, 0);
        if n < 0 {
            return Err("strings: negative Repeat count".into());
        }
        check_size((n as u64).saturating_mul(str_arg(a, 1).len() as u64))?;
        s(str_arg(a, 1).repeat(n as usize))
    });
    for name in ["trimall", "trimAll"] {
        fixed(f, name, &[Str, Str], |a| {
            let cut: Vec<char> = str_arg(a, 0).chars().collect();
            s(str_arg(a, 1).trim_matches(cut.as_slice()))
        });
    }
    fixed(f, "trimSuffix", &[Str, Str], |a| {
        s(str_arg(a, 1)
            .strip_suffix(str_arg(a, 0))
            .unwrap_or(str_arg(a, 1)))
    });
    fixed(f, "trimPrefix", &[Str, Str], |a| {
        s(str_arg(a, 1)
            .strip_prefix(str_arg(a, 0))
            .unwrap_or(str_arg(a, 1)))
    });
    fixed(f, "contains", &[Str, Str], |a| {
        Ok(Value::Bool(str_arg(a, 1).contains(str_arg(a, 0))))
    });
    fixed(f, "hasPrefix", &[Str, Str], |a| {
        Ok(Value::Bool(str_arg(a, 1).starts_with(str_arg(a, 0))))
    });
    fixed(f, "hasSuffix", &[Str, Str], |a| {
        Ok(Value::Bool(str_arg(a, 1).ends_with(str_arg(a, 0))))
    });
    variadic(f, "quote", &[], Any, |a| {
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !matches!(v, Value::Null))
            .map(quote_str)
            .collect();
        s(parts.join(" "))
    });
    variadic(f, "squote", &[], Any, |a| {
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !matches!(v, Value::Null))
            .map(|v| format!("'{}'", gofmt::sprint_value(v)))
            .collect();
        s(parts.join(" "))
    });
    variadic(f, "cat", &[], Any, |a| {
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !matches!(v, Value::Null))
            .map(gofmt::sprint_value)
            .collect();
        s(parts.join(" "))
    });
    fixed(f, "indent", &[Int, Str], |a| {
        check_size(int_arg(a, 0).max(0) as u64)?;
        let pad = " ".repeat(int_arg(a, 0).max(0) as usize);
        s(format!(
            "{pad}{}",
            str_arg(a, 1).replace('\n', &format!("\n{pad}"))
        ))
    });
    fixed(f, "nindent", &[Int, Str], |a| {
        check_size(int_arg(a, 0).max(0) as u64)?;
        let pad = " ".repeat(int_arg(a, 0).max(0) as usize);
        s(format!(
            "\n{pad}{}",
            str_arg(a, 1).replace('\n', &format!("\n{pad}"))
        ))
    });
    fixed(f, "replace", &[Str, Str, Str], |a| {
        s(str_arg(a, 2).replace(str_arg(a, 0), str_arg(a, 1)))
    });
    fixed(f, "plural", &[Str, Str, Int], |a| {
        s(if int_arg(a, 2) == 1 {
            str_arg(a, 0)
        } else {
            str_arg(a, 1)
        })
    });
    fixed(f, "sha1sum", &[Str], |a| {
        s(sha1_hex(str_arg(a, 0).as_bytes()))
    });
    fixed(f, "sha256sum", &[Str], |a| {
        s(sha2::Sha256::digest(str_arg(a, 0).as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>())
    });
    fixed(f, "adler32sum", &[Str], |a| {
        s(adler32(str_arg(a, 0).as_bytes()).to_string())
    });
    fixed(f, "toString", &[Any], |a| s(strval(&a[0])));

    // Numbers.
    fixed(f, "atoi", &[Str], |a| {
        Ok(Value::GoInt(str_arg(a, 0).parse().unwrap_or(0)))
    });
    fixed(f, "int64", &[Any], |a| Ok(Value::Int(to_i64(&a[0]))));
    fixed(f, "int", &[Any], |a| Ok(Value::GoInt(to_i64(&a[0]))));
    fixed(f, "float64", &[Any], |a| Ok(Value::Float(to_f64(&a[0]))));
    variadic(f, "seq", &[], Int, |a| {
        let p: Vec<i64> = a.iter().map(to_i64).collect();
        let span = match p.as_slice() {
            [end] => end.unsigned_abs(),
            [start, end] | [start, _, end] => end.abs_diff(*start),
            _ => 0,
        };
        check_size(span)?;
        s(seq(&p))
    });
    fixed(f, "toDecimal", &[Any], |a| {
        Ok(Value::Int(
            i64::from_str_radix(&strval(&a[0]), 8).unwrap_or(0),
        ))
    });
    fixed(f, "split", &[Str, Str], |a| {
        Ok(split_map(go_splitn(str_arg(a, 1), str_arg(a, 0), -1)))
    });
    fixed(f, "splitList", &[Str, Str], |a| {
        Ok(strings(
            go_splitn(str_arg(a, 1), str_arg(a, 0), -1)
                .into_iter()
                .map(str::to_string)
                .collect(),
        ))
    });
    fixed(f, "splitn", &[Str, Int, Str], |a| {
        Ok(split_map(go_splitn(
            str_arg(a, 2),
            str_arg(a, 0),
            int_arg(a, 1),
        )))
    });
    fixed(f, "toStrings", &[Any], |a| Ok(strings(strslice(&a[0]))));
    fixed(f, "until", &[Int], |a| {
        let n = int_arg(a, 0);
        check_size(n.unsigned_abs())?;
        Ok(ints(until_step(0, n, if n < 0 { -1 } else { 1 })))
    });
    fixed(f, "untilStep", &[Int, Int, Int], |a| {
        let (start, stop, step) = (int_arg(a, 0), int_arg(a, 1), int_arg(a, 2));
        if step != 0 {
            check_size(stop.abs_diff(start) / step.unsigned_abs())?;
        }
        Ok(ints(until_step(start, stop, step)))
    });
    fixed(f, "add1", &[Any], |a| {
        Ok(Value::Int(to_i64(&a[0]).wrapping_add(1)))
    });
    variadic(f, "add", &[], Any, |a| {
        Ok(Value::Int(
            a.iter().map(to_i64).fold(0i64, i64::wrapping_add),
        ))
    });
    fixed(f, "sub", &[Any, Any], |a| {
        Ok(Value::Int(to_i64(&a[0]).wrapping_sub(to_i64(&a[1]))))
    });
    fixed(f, "div", &[Any, Any], |a| {
        let d = to_i64(&a[1]);
        if d == 0 {
            return Err("runtime error: integer divide by zero".into());
        }
        Ok(Value::Int(to_i64(&a[0]).wrapping_div(d)))
    });
    fixed(f, "mod", &[Any, Any], |a| {
        let d = to_i64(&a[1]);
        if d == 0 {
            return Err("runtime error: integer divide by zero".into());
        }
        Ok(Value::Int(to_i64(&a[0]).wrapping_rem(d)))
    });
    variadic(f, "mul", &[Any], Any, |a| {
        Ok(Value::Int(
            a[1..]
                .iter()
                .map(to_i64)
                .fold(to_i64(&a[0]), i64::wrapping_mul),
        ))
    });
    for name in ["biggest", "max"] {
        variadic(f, name, &[Any], Any, |a| {
            Ok(Value::Int(a.iter().map(to_i64).max().unwrap_or(0)))
        });
    }
    variadic(f, "min", &[Any], Any, |a| {
        Ok(Value::Int(a.iter().map(to_i64).min().unwrap_or(0)))
    });
    variadic(f, "maxf", &[Any], Any, |a| {
        Ok(Value::Float(
            a[1..].iter().map(to_f64).fold(to_f64(&a[0]), f64::max),
        ))
    });
    variadic(f, "minf", &[Any], Any, |a| {
        Ok(Value::Float(
            a[1..].iter().map(to_f64).fold(to_f64(&a[0]), f64::min),
        ))
    });
    fixed(f, "ceil", &[Any], |a| {
        Ok(Value::Float(to_f64(&a[0]).ceil()))
    });
    fixed(f, "floor", &[Any], |a| {
        Ok(Value::Float(to_f64(&a[0]).floor()))
    });
    variadic(f, "round", &[Any, Int], Any, round);

    fixed(f, "join", &[Str, Any], |a| {
        s(strslice(&a[1]).join(str_arg(a, 0)))
    });
    fixed(f, "sortAlpha", &[Any], |a| {
        let mut v = match &a[0] {
            Value::List(_) => strslice(&a[0]),
            other => vec![strval(other)],
        };
        v.sort();
        Ok(strings(v))
    });

    // Defaults.
    variadic(f, "default", &[Any], Any, |a| {
        let given = a.get(1);
        Ok(match given {
            Some(g) if !empty(g) => g.clone(),
            _ => a[0].clone(),
        })
    });
    fixed(f, "empty", &[Any], |a| Ok(Value::Bool(empty(&a[0]))));
    variadic(f, "coalesce", &[], Any, |a| {
        Ok(a.iter().find(|v| !empty(v)).cloned().unwrap_or(Value::Null))
    });
    variadic(f, "all", &[], Any, |a| {
        Ok(Value::Bool(a.iter().all(|v| !empty(v))))
    });
    variadic(f, "any", &[], Any, |a| {
        Ok(Value::Bool(a.iter().any(|v| !empty(v))))
    });
    for name in ["compact", "mustCompact"] {
        fixed(f, name, &[Any], |a| {
            list(
                as_list(&a[0], "compact on")?
                    .iter()
                    .filter(|v| !empty(v))
                    .cloned()
                    .collect(),
            )
        });
    }
    fixed(f, "fromJson", &[Str], |a| {
        Ok(from_json(str_arg(a, 0)).unwrap_or(Value::Null))
    });
    fixed(f, "mustFromJson", &[Str], |a| from_json(str_arg(a, 0)));
    for name in ["toJson", "mustToJson"] {
        fixed(f, name, &[Any], |a| s(to_json(&a[0], true, None)));
    }
    for name in ["toPrettyJson", "mustToPrettyJson"] {
        fixed(f, name, &[Any], |a| s(to_json(&a[0], true, Some("  "))));
    }
    for name in ["toRawJson", "mustToRawJson"] {
        fixed(f, name, &[Any], |a| s(to_json(&a[0], false, None)));
    }
    fixed(f, "ternary", &[Any, Any, Bool], |a| {
        Ok(if matches!(a[2], Value::Bool(true)) {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });

    // Reflection.
    fixed(f, "typeOf", &[Any], |a| s(a[0].go_type()));
    fixed(f, "typeIs", &[Str, Any], |a| {
        Ok(Value::Bool(str_arg(a, 0) == a[1].go_type()))
    });
    fixed(f, "typeIsLike", &[Str, Any], |a| {
        let t = a[1].go_type();
        Ok(Value::Bool(
            str_arg(a, 0) == t || format!("*{}", str_arg(a, 0)) == t,
        ))
    });
    fixed(f, "kindOf", &[Any], |a| s(a[0].go_kind()));
    fixed(f, "kindIs", &[Str, Any], |a| {
        Ok(Value::Bool(str_arg(a, 0) == a[1].go_kind()))
    });
    fixed(f, "deepEqual", &[Any, Any], |a| {
        Ok(Value::Bool(a[0] == a[1]))
    });

    // Paths (Linux: os paths are the same).
    for name in ["base", "osBase"] {
        fixed(f, name, &[Str], |a| s(base(str_arg(a, 0))));
    }
    for name in ["dir", "osDir"] {
        fixed(f, name, &[Str], |a| s(dir(str_arg(a, 0))));
    }
    for name in ["clean", "osClean"] {
        fixed(f, name, &[Str], |a| s(clean(str_arg(a, 0))));
    }
    for name in ["ext", "osExt"] {
        fixed(f, name, &[Str], |a| s(ext(str_arg(a, 0))));
    }
    for name in ["isAbs", "osIsAbs"] {
        fixed(f, name, &[Str], |a| {
            Ok(Value::Bool(str_arg(a, 0).starts_with('/')))
        });
    }

    // Encoding.
    fixed(f, "b64enc", &[Str], |a| {
        s(base64::engine::general_purpose::STANDARD.encode(str_arg(a, 0)))
    });
    fixed(f, "b64dec", &[Str], |a| {
        s(
            match base64::engine::general_purpose::STANDARD.decode(str_arg(a, 0)) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(base64::DecodeError::InvalidByte(at, _))
                | Err(base64::DecodeError::InvalidLastSymbol(at, _)) => {
                    format!("illegal base64 data at input byte {at}")
                }
                Err(_) => format!(
                    "illegal base64 data at input byte {}",
                    str_arg(a, 0).len() / 4 * 4
                ),
            },
        )
    });
    fixed(f, "b32enc", &[Str], |a| s(b32enc(str_arg(a, 0).as_bytes())));
    fixed(f, "b32dec", &[Str], |a| {
        s(b32dec(str_arg(a, 0)).unwrap_or_else(|e| e))
    });

    // Dictionaries and lists.
    for name in ["list", "tuple"] {
        variadic(f, name, &[], Any, |a| list(a.to_vec()));
    }
    variadic(f, "dict", &[], Any, |a| {
        let mut m = BTreeMap::new();
        for pair in a.chunks(2) {
            m.insert(
                strval(&pair[0]),
                pair.get(1).cloned().unwrap_or_else(|| Value::string("")),
            );
        }
        Ok(Value::map(m))
    });
    fixed(f, "get", &[Map, Str], |a| {
        Ok(map_of(&a[0])
            .remove(str_arg(a, 1))
            .unwrap_or_else(|| Value::string("")))
    });
    fixed(f, "set", &[Map, Str, Any], |a| {
        let mut m = map_of(&a[0]);
        m.insert(str_arg(a, 1).to_string(), a[2].clone());
        Ok(Value::map(m))
    });
    fixed(f, "unset", &[Map, Str], |a| {
        let mut m = map_of(&a[0]);
        m.remove(str_arg(a, 1));
        Ok(Value::map(m))
    });
    fixed(f, "hasKey", &[Map, Str], |a| {
        Ok(Value::Bool(map_of(&a[0]).contains_key(str_arg(a, 1))))
    });
    variadic(f, "pluck", &[Str], Map, |a| {
        let key = str_arg(a, 0);
        list(
            a[1..]
                .iter()
                .filter_map(|d| map_of(d).remove(key))
                .collect(),
        )
    });
    variadic(f, "keys", &[], Map, |a| {
        Ok(strings(
            a.iter().flat_map(|d| map_of(d).into_keys()).collect(),
        ))
    });
    variadic(f, "pick", &[Map], Str, |a| {
        let m = map_of(&a[0]);
        let picked = a[1..]
            .iter()
            .filter_map(|k| {
                let k = k.as_str()?;
                m.get(k).map(|v| (k.to_string(), v.clone()))
            })
            .collect();
        Ok(Value::map(picked))
    });
    variadic(f, "omit", &[Map], Str, |a| {
        let mut m = map_of(&a[0]);
        for k in &a[1..] {
            if let Some(k) = k.as_str() {
                m.remove(k);
            }
        }
        Ok(Value::map(m))
    });
    fixed(f, "values", &[Map], |a| {
        list(map_of(&a[0]).into_values().collect())
    });
    for name in ["append", "push", "mustAppend", "mustPush"] {
        fixed(f, name, &[Any, Any], |a| {
            let mut l = as_list(&a[0], "push on")?.to_vec();
            l.push(a[1].clone());
            list(l)
        });
    }
    for name in ["prepend", "mustPrepend"] {
        fixed(f, name, &[Any, Any], |a| {
            let mut l = vec![a[1].clone()];
            l.extend(as_list(&a[0], "prepend on")?.iter().cloned());
            list(l)
        });
    }
    for name in ["first", "mustFirst"] {
        fixed(f, name, &[Any], |a| {
            Ok(as_list(&a[0], "find first on")?
                .first()
                .cloned()
                .unwrap_or(Value::Null))
        });
    }
    for name in ["last", "mustLast"] {
        fixed(f, name, &[Any], |a| {
            Ok(as_list(&a[0], "find last on")?
                .last()
                .cloned()
                .unwrap_or(Value::Null))
        });
    }
    for name in ["rest", "mustRest"] {
        fixed(f, name, &[Any], |a| {
            let l = as_list(&a[0], "find rest on")?;
            if l.is_empty() {
                return Ok(Value::Null);
            }
            list(l[1..].to_vec())
        });
    }
    for name in ["initial", "mustInitial"] {
        fixed(f, name, &[Any], |a| {
            let l = as_list(&a[0], "find initial on")?;
            if l.is_empty() {
                return Ok(Value::Null);
            }
            list(l[..l.len() - 1].to_vec())
        });
    }
    for name in ["reverse", "mustReverse"] {
        fixed(f, name, &[Any], |a| {
            list(
                as_list(&a[0], "find reverse on")?
                    .iter()
                    .rev()
                    .cloned()
                    .collect(),
            )
        });
    }
    for name in ["uniq", "mustUniq"] {
        fixed(f, name, &[Any], |a| {
            let mut out: Vec<Value> = Vec::new();
            for v in as_list(&a[0], "find uniq on")? {
                if !out.contains(v) {
                    out.push(v.clone());
                }
            }
            list(out)
        });
    }
    for name in ["without", "mustWithout"] {
        variadic(f, name, &[Any], Any, |a| {
            let omit = &a[1..];
            list(
                as_list(&a[0], "find without on")?
                    .iter()
                    .filter(|v| !omit.contains(v))
                    .cloned()
                    .collect(),
            )
        });
    }
    for name in ["has", "mustHas"] {
        fixed(f, name, &[Any, Any], |a| {
            if matches!(a[1], Value::Null) {
                return Ok(Value::Bool(false));
            }
            Ok(Value::Bool(as_list(&a[1], "find has on")?.contains(&a[0])))
        });
    }
    for name in ["slice", "mustSlice"] {
        variadic(f, name, &[Any], Any, |a| {
            let l = match &a[0] {
                Value::List(l) => l,
                other => {
                    return Err(format!(
                        "list should be type of slice or array but {}",
                        other.go_kind()
                    ))
                }
            };
            if l.is_empty() {
                return Ok(Value::Null);
            }
            let start = a.get(1).map(to_i64).unwrap_or(0);
            let end = a.get(2).map(to_i64).unwrap_or(l.len() as i64);
            if start < 0 || end < start || end as usize > l.len() {
                return Err("reflect: slice index out of range".into());
            }
            list(l[start as usize..end as usize].to_vec())
        });
    }
    variadic(f, "concat", &[], Any, |a| {
        let mut out = Vec::new();
        for l in a {
            match l {
                Value::List(items) => out.extend(items.iter().cloned()),
                other => return Err(format!("Cannot concat type {} as list", other.go_kind())),
            }
        }
        list(out)
    });
    variadic(f, "dig", &[], Any, dig);
    for name in ["chunk", "mustChunk"] {
        fixed(f, name, &[Int, Any], |a| {
            let size = int_arg(a, 0);
            let l = as_list(&a[1], "chunk")?;
            if size <= 0 {
                return Err("runtime error: integer divide by zero".into());
            }
            list(
                l.chunks(size as usize)
                    .map(|c| Value::list(c.to_vec()))
                    .collect(),
            )
        });
    }

    fixed(f, "fail", &[Str], |a| Err(str_arg(a, 0).to_string()));

    // Regular expressions (Go's RE2 syntax, which the regex crate shares).
    fixed(f, "regexMatch", &[Str, Str], |a| {
        Ok(Value::Bool(
            regex(str_arg(a, 0)).is_ok_and(|r| r.is_match(str_arg(a, 1))),
        ))
    });
    fixed(f, "mustRegexMatch", &[Str, Str], |a| {
        Ok(Value::Bool(regex(str_arg(a, 0))?.is_match(str_arg(a, 1))))
    });
    for name in ["regexFindAll", "mustRegexFindAll"] {
        fixed(f, name, &[Str, Str, Int], |a| {
            let r = regex(str_arg(a, 0))?;
            let n = int_arg(a, 2);
            let found = r.find_iter(str_arg(a, 1)).map(|m| m.as_str().to_string());
            Ok(strings(if n < 0 {
                found.collect()
            } else {
                found.take(n as usize).collect()
            }))
        });
    }
    for name in ["regexFind", "mustRegexFind"] {
        fixed(f, name, &[Str, Str], |a| {
            let r = regex(str_arg(a, 0))?;
            s(r.find(str_arg(a, 1)).map(|m| m.as_str()).unwrap_or(""))
        });
    }
    for name in ["regexReplaceAll", "mustRegexReplaceAll"] {
        fixed(f, name, &[Str, Str, Str], |a| {
            let r = regex(str_arg(a, 0))?;
            s(r.replace_all(str_arg(a, 1), str_arg(a, 2)).into_owned())
        });
    }
    for name in ["regexReplaceAllLiteral", "mustRegexReplaceAllLiteral"] {
        fixed(f, name, &[Str, Str, Str], |a| {
            let r = regex(str_arg(a, 0))?;
            s(r.replace_all(str_arg(a, 1), regex::NoExpand(str_arg(a, 2)))
                .into_owned())
        });
    }
    for name in ["regexSplit", "mustRegexSplit"] {
        fixed(f, name, &[Str, Str, Int], |a| {
            let r = regex(str_arg(a, 0))?;
            let n = int_arg(a, 2);
            let text = str_arg(a, 1);
            if n == 0 {
                return Ok(strings(Vec::new()));
            }
            let parts: Vec<String> = if n < 0 {
                r.split(text).map(str::to_string).collect()
            } else {
                r.splitn(text, n as usize).map(str::to_string).collect()
            };
            Ok(strings(parts))
        });
    }
    fixed(f, "regexQuoteMeta", &[Str], |a| {
        s(regex::escape(str_arg(a, 0)))
    });

    fixed(f, "urlParse", &[Str], |a| url_parse(str_arg(a, 0)));
    fixed(f, "urlJoin", &[Map], url_join);

    // date.go's duration takes an int64 or a string; anything else (an int) is 0s.
    fixed(f, "duration", &[Any], |a| {
        s(duration(match &a[0] {
            Value::Int(i) => *i,
            Value::String(text) => text.parse().unwrap_or(0),
            _ => 0,
        }))
    });

    // Date functions that slim-sprig keeps in its hermetic map; plumb does not have them.
    for name in [
        "ago",
        "durationRound",
        "toDate",
        "mustToDate",
        "unixEpoch",
        "must_date_modify",
        "mustDateModify",
    ] {
        f.insert(name, Signature::variadic(&[], Any), unsupported(name));
    }
}
