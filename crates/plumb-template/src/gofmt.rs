//! Go's `fmt` for template values: `%v` printing, `Sprint`, `Sprintln` and `Sprintf` with the
//! verbs, flags, widths and precisions templates use, and Go's `%!verb(type=value)` notes for
//! mismatches.

use crate::value::Value;

/// `%v` of a value, as `fmt.Sprint` prints it (`<nil>`, `[a b]`, `map[k:v]`).
pub fn sprint_value(v: &Value) -> String {
    let mut out = String::new();
    write_v(v, &mut out);
    out
}

fn write_v(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::GoInt(i) => out.push_str(&i.to_string()),
        Value::Float(f) => out.push_str(&format_g(*f, None, false)),
        Value::String(s) => out.push_str(s),
        Value::List(l) => {
            out.push('[');
            for (i, item) in l.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_v(item, out);
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push_str("map[");
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_v(item, out);
            }
            out.push(']');
        }
    }
}

/// `fmt.Sprint`: operands printed with `%v`, a space between two operands when neither is a
/// string.
pub fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 && !matches!(a, Value::String(_)) && !matches!(args[i - 1], Value::String(_)) {
            out.push(' ');
        }
        write_v(a, &mut out);
    }
    out
}

/// `fmt.Sprintln`: operands separated by spaces, then a newline.
pub fn sprintln(args: &[Value]) -> String {
    let mut out = args.iter().map(sprint_value).collect::<Vec<_>>().join(" ");
    out.push('\n');
    out
}

/// The decimal digits of a float: `digits` without trailing zeros, the decimal point after
/// `point` digits.
struct Digits {
    digits: Vec<u8>,
    point: i32,
}

/// Digits from Rust's `{:e}` rendering of a finite, non-negative float.
fn digits_of(sci: &str) -> Digits {
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    while digits.len() > 1 && digits.last() == Some(&b'0') {
        digits.pop();
    }
    if digits == [b'0'] {
        return Digits {
            digits: Vec::new(),
            point: 0,
        };
    }
    Digits {
        digits,
        point: exp + 1,
    }
}

fn fmt_e(d: &Digits, prec: usize, upper: bool) -> String {
    let mut out = String::new();
    out.push(*d.digits.first().unwrap_or(&b'0') as char);
    if prec > 0 {
        out.push('.');
        for i in 1..=prec {
            out.push(*d.digits.get(i).unwrap_or(&b'0') as char);
        }
    }
    out.push(if upper { 'E' } else { 'e' });
    let exp = if d.digits.is_empty() { 0 } else { d.point - 1 };
    out.push(if exp < 0 { '-' } else { '+' });
    let exp = exp.unsigned_abs();
    if exp < 10 {
        out.push('0');
    }
    out.push_str(&exp.to_string());
    out
}

fn fmt_f(d: &Digits, prec: usize) -> String {
    let mut out = String::new();
    if d.point > 0 {
        for i in 0..d.point as usize {
            out.push(*d.digits.get(i).unwrap_or(&b'0') as char);
        }
    } else {
        out.push('0');
    }
    if prec > 0 {
        out.push('.');
        for i in 0..prec as i32 {
            let at = d.point + i;
            let c = if at < 0 {
                b'0'
            } else {
                *d.digits.get(at as usize).unwrap_or(&b'0')
            };
            out.push(c as char);
        }
    }
    out
}

fn special(f: f64) -> Option<String> {
    if f.is_nan() {
        Some("NaN".into())
    } else if f.is_infinite() {
        Some(if f > 0.0 { "+Inf" } else { "-Inf" }.into())
    } else {
        None
    }
}

/// `%g` (shortest when `prec` is None), as `strconv.FormatFloat(f, 'g', prec, 64)`.
pub fn format_g(f: f64, prec: Option<usize>, upper: bool) -> String {
    if let Some(s) = special(f) {
        return s;
    }
    let neg = f.is_sign_negative() && f != 0.0;
    let a = f.abs();
    let (d, mut p, shortest) = match prec {
        None => {
            let d = digits_of(&format!("{a:e}"));
            let n = d.digits.len().max(1);
            (d, n, true)
        }
        Some(p) => {
            let p = p.max(1);
            (digits_of(&format!("{:.*e}", p - 1, a)), p, false)
        }
    };
    let nd = d.digits.len().max(1) as i32;
    let mut eprec = p as i32;
    if eprec > nd && nd >= d.point {
        eprec = nd;
    }
    if shortest {
        eprec = 6;
    }
    let exp = if d.digits.is_empty() { 0 } else { d.point - 1 };
    let body = if exp < -4 || exp >= eprec {
        if p as i32 > nd {
            p = nd as usize;
        }
        fmt_e(&d, p - 1, upper)
    } else {
        if p as i32 > d.point {
            p = nd as usize;
        }
        fmt_f(&d, (p as i32 - d.point).max(0) as usize)
    };
    if neg {
        format!("-{body}")
    } else {
        body
    }
}

/// `%e` with a precision.
fn format_e(f: f64, prec: usize, upper: bool) -> String {
    if let Some(s) = special(f) {
        return s;
    }
    let neg = f.is_sign_negative() && f != 0.0;
    let d = digits_of(&format!("{:.*e}", prec, f.abs()));
    let body = fmt_e(&d, prec, upper);
    if neg {
        format!("-{body}")
    } else {
        body
    }
}

/// `%f` with a precision.
fn format_f(f: f64, prec: usize) -> String {
    if let Some(s) = special(f) {
        return s;
    }
    format!("{f:.prec$}")
}

/// Go's `strconv.Quote`: a double-quoted string with Go escapes; printable runes kept.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if is_printable(c) => out.push(c),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `unicode.IsPrint` for runes above ASCII: everything but the
/// C1 controls, the separators and private use is printable.
fn is_printable(c: char) -> bool {
    let u = c as u32;
    !((0x80..0xa0).contains(&u)
        || u == 0xad
        || (0x2028..=0x2029).contains(&u)
        || (0xe000..=0xf8ff).contains(&u)
        || u == 0xfeff
        || (0xfff9..=0xfffb).contains(&u))
}

/// A parsed `%` directive.
#[derive(Default)]
struct Spec {
    minus: bool,
    plus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

impl Spec {
    /// Pads `body` to the width: spaces left (or right with `-`), zeros after the sign with `0`.
    fn pad(&self, body: String, numeric: bool) -> String {
        let Some(width) = self.width else {
            return body;
        };
        let len = body.chars().count();
        if len >= width {
            return body;
        }
        let fill = width - len;
        if self.minus {
            format!("{body}{}", " ".repeat(fill))
        } else if self.zero && numeric {
            let (sign, digits) = match body.chars().next() {
                Some(c @ ('-' | '+' | ' ')) => (c.to_string(), body[1..].to_string()),
                _ => (String::new(), body),
            };
            format!("{sign}{}{digits}", "0".repeat(fill))
        } else if self.zero && !numeric {
            format!("{}{body}", "0".repeat(fill))
        } else {
            format!("{}{body}", " ".repeat(fill))
        }
    }

    fn sign(&self, body: String, negative: bool) -> String {
        if negative {
            body
        } else if self.plus {
            format!("+{body}")
        } else if self.space {
            format!(" {body}")
        } else {
            body
        }
    }
}

/// `%!verb(type=value)`: Go's note for an operand the verb cannot print.
fn bad_verb(verb: char, v: &Value) -> String {
    match v {
        Value::Null => format!("%!{verb}(<nil>)"),
        _ => format!("%!{verb}({}={})", v.go_type(), sprint_value(v)),
    }
}

fn format_int(spec: &Spec, verb: char, i: i64) -> Option<String> {
    let neg = i < 0;
    let u = i.unsigned_abs();
    let mut digits = match verb {
        'd' | 'v' => u.to_string(),
        'x' => format!("{u:x}"),
        'X' => format!("{u:X}"),
        'o' | 'O' => format!("{u:o}"),
        'b' => format!("{u:b}"),
        'c' => {
            return Some(spec.pad(
                char::from_u32(u as u32).unwrap_or('\u{fffd}').to_string(),
                false,
            ))
        }
        'q' => {
            let c = char::from_u32(u as u32).unwrap_or('\u{fffd}');
            let quoted = go_quote(&c.to_string());
            let inner = &quoted[1..quoted.len() - 1];
            let inner = if inner == "\\\"" { "\"" } else { inner };
            let inner = if c == '\'' { "\\'" } else { inner };
            return Some(spec.pad(format!("'{inner}'"), false));
        }
        'U' => return Some(spec.pad(format!("U+{u:04X}"), false)),
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' | 's' | 't' => return None,
        _ => return None,
    };
    if let Some(p) = spec.prec {
        if digits.len() < p {
            digits = format!("{}{digits}", "0".repeat(p - digits.len()));
        } else if p == 0 && u == 0 {
            digits.clear();
        }
    }
    if spec.sharp {
        match verb {
            'x' => digits = format!("0x{digits}"),
            'X' => digits = format!("0X{digits}"),
            'o' => digits = format!("0{digits}"),
            _ => {}
        }
    }
    if verb == 'O' {
        digits = format!("0o{digits}");
    }
    let body = if neg { format!("-{digits}") } else { digits };
    let body = spec.sign(body, neg);
    if spec.prec.is_some() {
        let plain = Spec {
            zero: false,
            ..*spec
        };
        return Some(plain.pad(body, true));
    }
    Some(spec.pad(body, true))
}

fn format_float(spec: &Spec, verb: char, f: f64) -> Option<String> {
    let body = match verb {
        'v' => format_g(f, spec.prec, false),
        'g' => format_g(f, spec.prec, false),
        'G' => format_g(f, spec.prec, true),
        'e' => format_e(f, spec.prec.unwrap_or(6), false),
        'E' => format_e(f, spec.prec.unwrap_or(6), true),
        'f' | 'F' => format_f(f, spec.prec.unwrap_or(6)),
        _ => return None,
    };
    let neg = body.starts_with('-');
    let body = if spec.plus && body == "+Inf" {
        body
    } else if body == "+Inf" {
        spec.sign("Inf".into(), false)
    } else {
        spec.sign(body, neg)
    };
    Some(spec.pad(body, f.is_finite()))
}

fn format_string(spec: &Spec, verb: char, s: &str) -> Option<String> {
    let body = match verb {
        'v' | 's' => match spec.prec {
            Some(p) => s.chars().take(p).collect(),
            None => s.to_string(),
        },
        'q' => {
            let s: String = match spec.prec {
                Some(p) => s.chars().take(p).collect(),
                None => s.to_string(),
            };
            if spec.sharp && !s.contains('`') && s.chars().all(|c| c != '\n' && !c.is_control()) {
                format!("`{s}`")
            } else {
                go_quote(&s)
            }
        }
        'x' | 'X' => {
            let bytes: Vec<u8> = match spec.prec {
                Some(p) => s.bytes().take(p).collect(),
                None => s.bytes().collect(),
            };
            let mut out = String::new();
            for (i, b) in bytes.iter().enumerate() {
                if spec.space && i > 0 {
                    out.push(' ');
                }
                if spec.sharp && (spec.space || i == 0) {
                    out.push_str(if verb == 'x' { "0x" } else { "0X" });
                }
                if verb == 'x' {
                    out.push_str(&format!("{b:02x}"));
                } else {
                    out.push_str(&format!("{b:02X}"));
                }
            }
            out
        }
        _ => return None,
    };
    Some(spec.pad(body, false))
}

/// Formats one operand with one verb, or returns Go's `%!verb(...)` note.
fn format_one(spec: &Spec, verb: char, v: &Value) -> String {
    let formatted = match v {
        Value::Bool(b) => match verb {
            't' | 'v' => Some(spec.pad(b.to_string(), false)),
            _ => None,
        },
        Value::Int(i) | Value::GoInt(i) => format_int(spec, verb, *i),
        Value::Float(f) => format_float(spec, verb, *f),
        Value::String(s) => format_string(spec, verb, s),
        Value::Null => match verb {
            'v' => Some(spec.pad("<nil>".into(), false)),
            _ => None,
        },
        Value::List(items) => {
            if verb == 'v' && spec.width.is_none() && spec.prec.is_none() {
                Some(sprint_value(v))
            } else {
                // Go applies the verb to each element.
                let parts: Vec<String> = items.iter().map(|i| format_one(spec, verb, i)).collect();
                Some(format!("[{}]", parts.join(" ")))
            }
        }
        Value::Map(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, i)| {
                    format!(
                        "{}:{}",
                        format_one(spec, verb, &Value::String(k.clone())),
                        format_one(spec, verb, i)
                    )
                })
                .collect();
            Some(format!("map[{}]", parts.join(" ")))
        }
    };
    formatted.unwrap_or_else(|| bad_verb(verb, v))
}

/// The largest width or precision Go's `fmt` accepts.
const MAX_WIDTH: usize = 1_000_000;

/// `fmt.Sprintf` over template values.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut next_arg = 0;
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&f) = chars.peek() {
            match f {
                '-' => spec.minus = true,
                '+' => spec.plus = true,
                '#' => spec.sharp = true,
                ' ' => spec.space = true,
                '0' => spec.zero = true,
                _ => break,
            }
            chars.next();
        }
        let number = |chars: &mut std::iter::Peekable<std::str::Chars>, next_arg: &mut usize| {
            if chars.peek() == Some(&'*') {
                chars.next();
                let n = match args.get(*next_arg) {
                    Some(Value::Int(i) | Value::GoInt(i)) => Some((*i).max(0) as usize),
                    _ => None,
                };
                *next_arg += 1;
                return n;
            }
            let mut n: Option<usize> = None;
            while let Some(&d) = chars.peek() {
                if let Some(v) = d.to_digit(10) {
                    n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(v as usize));
                    chars.next();
                } else {
                    break;
                }
            }
            n
        };
        spec.width = number(&mut chars, &mut next_arg);
        if chars.peek() == Some(&'.') {
            chars.next();
            spec.prec = Some(number(&mut chars, &mut next_arg).unwrap_or(0));
        }
        // Go refuses widths and precisions above 1e6.
        if spec.width.is_some_and(|w| w > MAX_WIDTH) {
            out.push_str("%!(BADWIDTH)");
            spec.width = None;
        }
        if spec.prec.is_some_and(|p| p > MAX_WIDTH) {
            out.push_str("%!(BADPREC)");
            spec.prec = None;
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        if spec.minus {
            spec.zero = false;
        }
        let Some(arg) = args.get(next_arg) else {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        };
        next_arg += 1;
        if !"vTtbcdoOqxXUeEfFgGs".contains(verb) {
            out.push_str(&bad_verb(verb, arg));
            continue;
        }
        if verb == 'T' {
            out.push_str(&spec.pad(arg.go_type().to_string(), false));
            continue;
        }
        out.push_str(&format_one(&spec, verb, arg));
    }
    if next_arg < args.len() {
        out.push_str("%!(EXTRA ");
        let extra: Vec<String> = args[next_arg..]
            .iter()
            .map(|a| match a {
                Value::Null => "<nil>".to_string(),
                _ => format!("{}={}", a.go_type(), sprint_value(a)),
            })
            .collect();
        out.push_str(&extra.join(", "));
        out.push(')');
    }
    out
}
