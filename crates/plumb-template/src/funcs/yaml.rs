//! `toYaml`: what flux-operator's `yaml.Marshal` (sigs.k8s.io/yaml) prints. That library
//! encodes to JSON, decodes the JSON with go-yaml v2 and encodes with go-yaml v2, so the output
//! has v2's layout: keys in v2's natural sort order, sequences not indented under their key,
//! strings quoted only when YAML 1.1 would read them as something else, long lines folded at
//! 80 columns, multi-line strings as literal blocks.

use std::cmp::Ordering;

use crate::gofmt;
use crate::value::Value;

/// go-yaml v2's preferred line width.
const BEST_WIDTH: usize = 80;

/// The YAML text of a value as sigs.k8s.io/yaml's `Marshal` (and `JSONToYAML`) prints it, or
/// the JSON encoder's error for a value JSON cannot hold (a NaN or infinite float).
///
/// ```
/// let v = plumb_template::Value::from(serde_json::json!({"b": [1, "on"], "a": {"c": ""}}));
/// assert_eq!(plumb_template::to_yaml(&v).unwrap(), "a:\n  c: \"\"\nb:\n- 1\n- \"on\"\n");
/// ```
pub fn to_yaml(v: &Value) -> Result<String, String> {
    check_json(v)?;
    let mut w = Writer { out: String::new() };
    match v {
        Value::Map(m) if !m.is_empty() => w.map(v, 0, false),
        Value::List(l) if !l.is_empty() => w.list(v, 0, false),
        scalar => {
            w.scalar(scalar, 2, 0, false);
            w.out.push('\n');
        }
    }
    Ok(w.out)
}

fn check_json(v: &Value) -> Result<(), String> {
    match v {
        Value::Float(f) if !f.is_finite() => Err(format!(
            "error marshaling into JSON: json: unsupported value: {}",
            gofmt::sprint_value(v)
        )),
        Value::List(l) => l.iter().try_for_each(check_json),
        Value::Map(m) => m.values().try_for_each(check_json),
        _ => Ok(()),
    }
}

/// go-yaml v2's map key order: character by character, runs of digits compared as numbers,
/// and at a letter/non-letter difference the non-letter first (unless a digit run precedes).
fn key_order(a: &str, b: &str) -> Ordering {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let mut digits = false;
    let n = ar.len().min(br.len());
    for i in 0..n {
        if ar[i] == br[i] {
            digits = ar[i].is_ascii_digit();
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            let a_first = if digits { al } else { bl };
            return if a_first {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let mut an: i64 = 0;
        let mut bn: i64 = 0;
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an.wrapping_mul(10).wrapping_add(ar[ai] as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn.wrapping_mul(10).wrapping_add(br[bi] as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

/// Whether go-yaml v2 would read the plain scalar as something other than a string.
fn resolves_to_non_string(s: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
        "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
        ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
        ".NaN", ".NAN", "<<",
    ];
    if SPECIAL.contains(&s) {
        return true;
    }
    let first = s.as_bytes()[0];
    if !(first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.')) {
        return false;
    }
    let plain = s.replace('_', "");
    let (neg, body) = match plain.strip_prefix(['-', '+']) {
        Some(b) => (true, b),
        None => (false, plain.as_str()),
    };
    let _ = neg;
    let is_int = if let Some(h) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
        !h.is_empty() && h.bytes().all(|c| c.is_ascii_hexdigit())
    } else if let Some(b) = body.strip_prefix("0b").or(body.strip_prefix("0B")) {
        !b.is_empty() && b.bytes().all(|c| c == b'0' || c == b'1')
    } else if let Some(o) = body.strip_prefix("0o").or(body.strip_prefix("0O")) {
        !o.is_empty() && o.bytes().all(|c| (b'0'..=b'7').contains(&c))
    } else if body.len() > 1 && body.starts_with('0') {
        body.bytes().all(|c| (b'0'..=b'7').contains(&c))
    } else {
        !body.is_empty() && body.bytes().all(|c| c.is_ascii_digit())
    };
    if is_int {
        return true;
    }
    let float = regex::Regex::new(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
        .map(|r| r.is_match(&plain))
        .unwrap_or(false);
    if float {
        return true;
    }
    let base60 = regex::Regex::new(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
        .map(|r| r.is_match(s))
        .unwrap_or(false);
    if base60 {
        return true;
    }
    regex::Regex::new(
        r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?$",
    )
    .map(|r| r.is_match(s))
    .unwrap_or(false)
}

/// libyaml's printable set (with unicode output enabled, as go-yaml v2 sets it).
fn printable(c: char) -> bool {
    let u = c as u32;
    u == 0x0a
        || (0x20..=0x7e).contains(&u)
        || u == 0x85
        || ((0xa0..=0xd7ff).contains(&u))
        || ((0xe000..=0xfffd).contains(&u) && u != 0xfeff)
        || (0x10000..=0x10ffff).contains(&u)
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// The style go-yaml v2's encoder and libyaml's emitter choose for a string.
fn string_style(s: &str, simple_key: bool) -> Style {
    if s.contains('\n') {
        let analysis = analyze(s);
        if analysis.block_allowed && !simple_key {
            return Style::Literal;
        }
        return Style::Double;
    }
    if resolves_to_non_string(s) {
        return Style::Double;
    }
    let a = analyze(s);
    if a.block_plain_allowed {
        Style::Plain
    } else if a.single_allowed {
        Style::Single
    } else {
        Style::Double
    }
}

struct Analysis {
    block_plain_allowed: bool,
    single_allowed: bool,
    block_allowed: bool,
}

/// libyaml's `yaml_emitter_analyze_scalar`, for block context.
fn analyze(s: &str) -> Analysis {
    let chars: Vec<char> = s.chars().collect();
    let mut block_indicators = false;
    let mut special = false;
    let mut line_breaks = false;
    let (mut space_break, mut break_space) = (false, false);
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut prev_space, mut prev_break) = (false, false);
    if s.starts_with("---") || s.starts_with("...") {
        block_indicators = true;
    }
    let blank = |i: usize| -> bool {
        chars
            .get(i)
            .is_none_or(|c| matches!(c, ' ' | '\t' | '\n' | '\r'))
    };
    let mut preceded_by_whitespace = true;
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = blank(i + 1);
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !printable(c) || c == '\u{feff}' {
            special = true;
        }
        if c == '\n' || c == '\r' {
            line_breaks = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i + 1 == chars.len() {
                trailing_space = true;
            }
            if prev_break {
                break_space = true;
            }
            prev_space = true;
            prev_break = false;
        } else if c == '\n' || c == '\r' {
            if i == 0 {
                leading_break = true;
            }
            if i + 1 == chars.len() {
                trailing_break = true;
            }
            if prev_space {
                space_break = true;
            }
            prev_space = false;
            prev_break = true;
        } else {
            prev_space = false;
            prev_break = false;
        }
        preceded_by_whitespace = matches!(c, ' ' | '\t' | '\n' | '\r');
    }
    let mut block_plain = true;
    let mut single = true;
    let mut block = true;
    if leading_space || leading_break || trailing_space || trailing_break {
        block_plain = false;
    }
    if trailing_space {
        block = false;
    }
    if break_space {
        block_plain = false;
        single = false;
    }
    if space_break || special {
        block_plain = false;
        single = false;
        block = false;
    }
    if line_breaks {
        block_plain = false;
    }
    if block_indicators {
        block_plain = false;
    }
    Analysis {
        block_plain_allowed: block_plain,
        single_allowed: single,
        block_allowed: block,
    }
}

struct Writer {
    out: String,
}

impl Writer {
    fn column(&self) -> usize {
        match self.out.rfind('\n') {
            Some(i) => self.out[i + 1..].chars().count(),
            None => self.out.chars().count(),
        }
    }

    fn indent(&mut self, n: usize) {
        self.out.push('\n');
        for _ in 0..n {
            self.out.push(' ');
        }
    }

    /// A block mapping at `indent`; `inline` when its first key follows a `- `.
    fn map(&mut self, v: &Value, indent: usize, inline: bool) {
        let Value::Map(m) = v else { return };
        let mut keys: Vec<&String> = m.keys().collect();
        keys.sort_by(|a, b| key_order(a, b));
        for (i, k) in keys.into_iter().enumerate() {
            if i > 0 || !inline {
                if !self.out.is_empty() && !self.out.ends_with('\n') {
                    self.out.push('\n');
                }
                self.out.push_str(&" ".repeat(indent));
            }
            self.string(k, indent + 2, true);
            self.out.push(':');
            let item = &m[k];
            match item {
                Value::Map(inner) if !inner.is_empty() => {
                    self.out.push('\n');
                    self.map(item, indent + 2, false);
                }
                Value::List(inner) if !inner.is_empty() => {
                    self.out.push('\n');
                    self.list(item, indent, false);
                }
                scalar => {
                    self.out.push(' ');
                    self.scalar(scalar, indent + 2, indent, false);
                    self.out.push('\n');
                }
            }
        }
    }

    /// A block sequence at `indent`.
    fn list(&mut self, v: &Value, indent: usize, inline: bool) {
        let Value::List(l) = v else { return };
        for (i, item) in l.iter().enumerate() {
            if i > 0 || !inline {
                if !self.out.is_empty() && !self.out.ends_with('\n') {
                    self.out.push('\n');
                }
                self.out.push_str(&" ".repeat(indent));
            }
            self.out.push_str("- ");
            match item {
                Value::Map(inner) if !inner.is_empty() => self.map(item, indent + 2, true),
                Value::List(inner) if !inner.is_empty() => self.list(item, indent + 2, true),
                scalar => {
                    self.scalar(scalar, indent + 2, indent, false);
                    self.out.push('\n');
                }
            }
        }
    }

    fn scalar(&mut self, v: &Value, indent: usize, _parent: usize, simple_key: bool) {
        match v {
            Value::Null => self.out.push_str("null"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) | Value::GoInt(i) => self.out.push_str(&i.to_string()),
            Value::Float(f) => {
                // The JSON round trip turns an integral float into an integer.
                if f.fract() == 0.0 && f.abs() < 1e21 && f.abs() < 9.2e18 {
                    self.out.push_str(&(*f as i64).to_string());
                } else {
                    self.out.push_str(&gofmt::format_g(*f, None, false));
                }
            }
            Value::String(s) => self.string(s, indent, simple_key),
            Value::Map(_) => self.out.push_str("{}"),
            Value::List(_) => self.out.push_str("[]"),
        }
    }

    fn string(&mut self, s: &str, indent: usize, simple_key: bool) {
        match string_style(s, simple_key) {
            Style::Plain => self.folded(s, indent, !simple_key, None),
            Style::Single => {
                self.out.push('\'');
                let escaped = s.replace('\'', "''");
                self.folded(&escaped, indent, !simple_key, Some('\''));
                self.out.push('\'');
            }
            Style::Double => self.double(s, indent, !simple_key),
            Style::Literal => self.literal(s, indent),
        }
    }

    /// Plain or single-quoted text, a space turned into a line break past the width.
    fn folded(&mut self, s: &str, indent: usize, allow_breaks: bool, quote: Option<char>) {
        let chars: Vec<char> = s.chars().collect();
        let mut column = self.column();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_space = chars.get(i + 1) == Some(&' ');
                let inner = quote.is_none() || (i != 0 && i + 1 != chars.len());
                if allow_breaks && !spaces && column > BEST_WIDTH && !next_space && inner {
                    self.indent(indent);
                    column = indent;
                } else {
                    self.out.push(c);
                    column += 1;
                }
                spaces = true;
            } else {
                self.out.push(c);
                column += 1;
                spaces = false;
            }
        }
    }

    fn double(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        self.out.push('"');
        let chars: Vec<char> = s.chars().collect();
        let mut column = self.column();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            let escaped: Option<String> = match c {
                '\0' => Some("\\0".into()),
                '\u{7}' => Some("\\a".into()),
                '\u{8}' => Some("\\b".into()),
                '\t' => Some("\\t".into()),
                '\n' => Some("\\n".into()),
                '\u{b}' => Some("\\v".into()),
                '\u{c}' => Some("\\f".into()),
                '\r' => Some("\\r".into()),
                '\u{1b}' => Some("\\e".into()),
                '"' => Some("\\\"".into()),
                '\\' => Some("\\\\".into()),
                '\u{85}' => Some("\\N".into()),
                '\u{a0}' => Some("\\_".into()),
                '\u{2028}' => Some("\\L".into()),
                '\u{2029}' => Some("\\P".into()),
                c if !printable(c) || c == '\u{feff}' => {
                    let u = c as u32;
                    Some(if u <= 0xff {
                        format!("\\x{u:02X}")
                    } else if u <= 0xffff {
                        format!("\\u{u:04X}")
                    } else {
                        format!("\\U{u:08X}")
                    })
                }
                _ => None,
            };
            if let Some(e) = escaped {
                column += e.chars().count();
                self.out.push_str(&e);
                spaces = false;
                continue;
            }
            if c == ' ' {
                if allow_breaks && !spaces && column > BEST_WIDTH && i != 0 && i + 1 != chars.len()
                {
                    self.indent(indent);
                    column = indent;
                    if chars.get(i + 1) == Some(&' ') {
                        self.out.push('\\');
                        column += 1;
                    }
                } else {
                    self.out.push(' ');
                    column += 1;
                }
                spaces = true;
                continue;
            }
            self.out.push(c);
            column += 1;
            spaces = false;
        }
        self.out.push('"');
    }

    fn literal(&mut self, s: &str, indent: usize) {
        self.out.push('|');
        if s.starts_with(' ') || s.starts_with('\n') {
            self.out.push('2');
        }
        let chomp = if !s.ends_with('\n') {
            "-"
        } else if s == "\n" || s.ends_with("\n\n") {
            "+"
        } else {
            ""
        };
        self.out.push_str(chomp);
        let body = s.strip_suffix('\n').unwrap_or(s);
        for line in body.split('\n') {
            self.out.push('\n');
            if !line.is_empty() {
                self.out.push_str(&" ".repeat(indent));
                self.out.push_str(line);
            }
        }
    }
}
