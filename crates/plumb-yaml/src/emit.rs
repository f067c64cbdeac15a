//! The writer: YAML text exactly as `kustomize build` prints it.
//!
//! kustomize prints each resource by encoding it to JSON and handing the JSON to go-yaml v2's
//! encoder. So the output has keys in go-yaml v2's "natural" order, block style with
//! non-indented sequences, quotes only where YAML 1.1 would misread a string, literal blocks for
//! multi-line strings and long lines folded past column 80. This module reproduces that encoder's
//! decisions (scalar analysis, style selection, line folding) on a [`serde_json::Value`].

use crate::resolve::{plain_is_string, Schema};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
use std::cmp::Ordering;

const BEST_WIDTH: usize = 80;
const BEST_INDENT: usize = 2;

/// Writes one document (no `---` separator), ending with a line break.
pub fn write_document(value: &Value) -> String {
    let mut e = Emitter::default();
    e.document(value);
    e.out
}

/// Writes several documents separated by `---`, as `kustomize build` prints a resource list:
/// into one text, not each into its own and copied.
pub fn write_stream<'a>(values: impl IntoIterator<Item = &'a Value>) -> String {
    let mut e = Emitter::default();
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            e.out.push_str("---\n");
        }
        e.document(v);
    }
    e.out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Root,
    MappingValue,
    SequenceItem,
}

struct Emitter {
    out: String,
    column: usize,
    whitespace: bool,
    indention: bool,
    indent: usize,
}

impl Default for Emitter {
    fn default() -> Self {
        Emitter {
            out: String::new(),
            column: 0,
            whitespace: true,
            indention: true,
            indent: 0,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

impl Emitter {
    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_indent(&mut self) {
        let indent = self.indent;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn indicator(&mut self, text: &str, need_ws: bool, is_ws: bool, is_indention: bool) {
        if need_ws && !self.whitespace {
            self.put(' ');
        }
        for c in text.chars() {
            self.put(c);
        }
        self.whitespace = is_ws;
        self.indention = self.indention && is_indention;
    }

    /// One document, from a writer at the start of a line.
    fn document(&mut self, value: &Value) {
        self.column = 0;
        self.whitespace = true;
        self.indention = true;
        self.indent = 0;
        self.node(value, Ctx::Root, 0);
        self.document_end();
    }

    fn document_end(&mut self) {
        self.indent = 0;
        self.write_indent();
    }

    fn node(&mut self, value: &Value, ctx: Ctx, indent: usize) {
        match value {
            Value::Object(map) if !map.is_empty() => self.mapping(map, ctx, indent),
            Value::Array(items) if !items.is_empty() => self.sequence(items, ctx, indent),
            Value::Object(_) => self.flow_empty("{", "}"),
            Value::Array(_) => self.flow_empty("[", "]"),
            scalar => {
                let saved = self.indent;
                self.indent = if ctx == Ctx::Root {
                    0
                } else {
                    indent + BEST_INDENT
                };
                let (text, style) = scalar_text(scalar);
                self.scalar(&text, style, false);
                self.indent = saved;
            }
        }
    }

    fn flow_empty(&mut self, open: &str, close: &str) {
        self.indicator(open, true, true, false);
        self.indicator(close, false, false, false);
    }

    /// A block mapping whose parent sits at `parent` (its keys go one level deeper, except at
    /// the root).
    fn mapping(&mut self, map: &Map<String, Value>, ctx: Ctx, parent: usize) {
        let indent = match ctx {
            Ctx::Root => 0,
            _ => parent + BEST_INDENT,
        };
        // Entries, not keys, so that no key is looked up again; on the stack for most mappings,
        // which have a few keys (one allocation per mapping written was 3% of a build's).
        let mut order: smallvec::SmallVec<[(&String, &Value); 16]> = map.iter().collect();
        order.sort_by(|a, b| natural_key_order(a.0, b.0));
        for (key, value) in order {
            self.indent = indent;
            self.write_indent();
            let style = string_style(key);
            self.scalar(key, style, true);
            self.indicator(":", false, false, false);
            self.node(value, Ctx::MappingValue, indent);
        }
        self.indent = parent;
    }

    fn sequence(&mut self, items: &[Value], ctx: Ctx, parent: usize) {
        // go-yaml writes a sequence that is a mapping value at its key's indentation.
        let indent = match ctx {
            Ctx::Root => 0,
            Ctx::MappingValue => parent,
            Ctx::SequenceItem => parent + BEST_INDENT,
        };
        for item in items {
            self.indent = indent;
            self.write_indent();
            self.indicator("-", true, false, true);
            self.node(item, Ctx::SequenceItem, indent);
        }
        self.indent = parent;
    }

    fn scalar(&mut self, text: &str, requested: Style, simple_key: bool) {
        let a = analyze(text);
        let mut style = requested;
        if simple_key && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain && (!a.block_plain_allowed || (text.is_empty() && simple_key)) {
            style = Style::Single;
        }
        if style == Style::Single && !a.single_quoted_allowed {
            style = Style::Double;
        }
        if style == Style::Literal && (!a.block_allowed || simple_key) {
            style = Style::Double;
        }
        let allow_breaks = !simple_key;
        match style {
            Style::Plain => self.write_plain(text, allow_breaks),
            Style::Single => self.write_single(text, allow_breaks),
            Style::Double => self.write_double(text, allow_breaks),
            Style::Literal => self.write_literal(text),
        }
    }

    fn write_plain(&mut self, text: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        // No space where a line could break, or none past the width: the text as it is.
        if !allow_breaks || !text.contains(' ') || self.column + text.len() <= BEST_WIDTH {
            self.out.push_str(text);
            self.column += width(text);
            self.whitespace = false;
            self.indention = false;
            return;
        }
        let chars: Vec<char> = text.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_space = chars.get(i + 1) == Some(&' ');
                if allow_breaks && !spaces && self.column > BEST_WIDTH && !next_space {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                self.indention = false;
                spaces = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single(&mut self, text: &str, allow_breaks: bool) {
        self.indicator("'", true, false, false);
        let chars: Vec<char> = text.chars().collect();
        let (mut spaces, mut breaks) = (false, false);
        let n = chars.len();
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_space = chars.get(i + 1) == Some(&' ');
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < n
                    && !next_space
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double(&mut self, text: &str, allow_breaks: bool) {
        self.indicator("\"", true, false, false);
        let chars: Vec<char> = text.chars().collect();
        let n = chars.len();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || c == '\u{FEFF}' || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                match c {
                    '\0' => self.put('0'),
                    '\u{7}' => self.put('a'),
                    '\u{8}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{b}' => self.put('v'),
                    '\u{c}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1b}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{a0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    _ => {
                        let v = c as u32;
                        let escaped = if v <= 0xFF {
                            format!("x{v:02X}")
                        } else if v <= 0xFFFF {
                            format!("u{v:04X}")
                        } else {
                            format!("U{v:08X}")
                        };
                        for e in escaped.chars() {
                            self.put(e);
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && i != 0 && i != n - 1 {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, text: &str) {
        self.indicator("|", true, false, false);
        self.block_scalar_hints(text);
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        // With `\n` its only line break, the text is written a line at a time: the same as
        // character by character below, without pushing each character on its own.
        if !text.contains(['\r', '\u{85}', '\u{2028}', '\u{2029}']) {
            for (i, line) in text.split('\n').enumerate() {
                if i > 0 {
                    self.put_break();
                    self.indention = true;
                    breaks = true;
                }
                if line.is_empty() {
                    continue;
                }
                if breaks {
                    self.write_indent();
                    breaks = false;
                }
                self.out.push_str(line);
                self.column += width(line);
                self.indention = false;
            }
            return;
        }
        for c in text.chars() {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                    breaks = false;
                }
                self.put(c);
                self.indention = false;
            }
        }
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn block_scalar_hints(&mut self, text: &str) {
        let (indent, chomp) = block_hints(text);
        if indent {
            let hint = char::from(b'0' + BEST_INDENT as u8).to_string();
            self.indicator(&hint, false, false, false);
        }
        if let Some(chomp) = chomp {
            self.indicator(chomp, false, false, false);
        }
    }
}

/// A block scalar's header hints for `text`: whether it needs an indentation indicator (its
/// first line starts with a space or is empty) and its chomping indicator (`-` without a final
/// line break, `+` with more than one, none with exactly one).
fn block_hints(text: &str) -> (bool, Option<&'static str>) {
    let first = text.chars().next();
    let indent = first.is_some_and(|c| c == ' ' || is_break(c));
    let mut rev = text.chars().rev();
    let chomp = match (rev.next(), rev.next()) {
        (None, _) => Some("-"),
        (Some(last), _) if !is_break(last) => Some("-"),
        (Some(_), None) => Some("+"),
        (Some(_), Some(prev)) if is_break(prev) => Some("+"),
        _ => None,
    };
    (indent, chomp)
}

/// The header of the literal block that the string `s`, as a mapping value or a sequence item
/// (not a key), is written as (`|`, `|-`, `|2+`, ...), or `None` when it is written another
/// way. The block's lines are then `s`'s lines, each non-empty one indented.
pub fn literal_header(s: &str) -> Option<String> {
    if string_style(s) != Style::Literal || !analyze(s).block_allowed {
        return None;
    }
    let (indent, chomp) = block_hints(s);
    let mut header = String::from("|");
    if indent {
        header.push(char::from(b'0' + BEST_INDENT as u8));
    }
    header.push_str(chomp.unwrap_or(""));
    Some(header)
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// libyaml's printable set: what it may write without an escape.
fn is_printable(c: char) -> bool {
    let v = c as u32;
    v == 0x0A
        || (0x20..=0x7E).contains(&v)
        || (0xA0..=0xD7FF).contains(&v)
        || ((0xE000..=0xFFFD).contains(&v) && v != 0xFEFF)
}

struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

/// ASCII letters, digits and `-_./`, not starting with `-` or `.`: text every style carries
/// unchanged (most names, labels, images and paths), with no need to look further.
fn is_simple_word(text: &str) -> bool {
    let b = text.as_bytes();
    b.first()
        .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'/')
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'/'))
}

/// What [`analyze`] reads off the characters of a text, one character of lookahead at a time.
#[derive(Debug, Default, PartialEq)]
struct Scan {
    block_indicators: bool,
    special: bool,
    leading_space: bool,
    leading_break: bool,
    trailing_space: bool,
    trailing_break: bool,
    break_space: bool,
    space_break: bool,
    line_breaks: bool,
}

/// Whether `c`, the first character of a text, makes it start like another node would.
fn starts_indicator(c: char, followed_by_ws: bool) -> bool {
    match c {
        '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"' | '%'
        | '@' | '`' => true,
        '?' | ':' | '-' => followed_by_ws,
        _ => false,
    }
}

fn scan(mut chars: std::iter::Peekable<impl Iterator<Item = char>>) -> Scan {
    let mut out = Scan::default();
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_ws = true;
    let mut first = true;
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        let last = next.is_none();
        let followed_by_ws = matches!(next, None | Some(' ' | '\t'));
        out.block_indicators |= if first {
            starts_indicator(c, followed_by_ws)
        } else {
            (c == ':' && followed_by_ws) || (c == '#' && preceded_by_ws)
        };
        out.special |= !is_printable(c);
        if c == ' ' {
            out.leading_space |= first;
            out.trailing_space |= last;
            out.break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            out.line_breaks = true;
            out.leading_break |= first;
            out.trailing_break |= last;
            out.space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_ws = c == ' ' || c == '\t' || is_break(c) || c == '\0';
        first = false;
    }
    out
}

/// [`scan`] of a non-empty ASCII text (nearly every string written): bytes, nothing to decode.
/// The bytes [`scan_ascii`] learns nothing from: printable ASCII other than `:` and `#` (the
/// first and last bytes are read on their own, and a space after a line break is seen from
/// the break).
const QUIET: [bool; 256] = {
    let mut quiet = [false; 256];
    let mut c = 0x20;
    while c <= 0x7E {
        quiet[c] = c != b':' as usize && c != b'#' as usize;
        c += 1;
    }
    quiet
};

fn scan_ascii(b: &[u8]) -> Scan {
    let n = b.len();
    let is_break = |c: u8| c == b'\n' || c == b'\r';
    let followed_by_ws = |i: usize| i + 1 >= n || matches!(b[i + 1], b' ' | b'\t');
    let mut out = Scan {
        block_indicators: starts_indicator(char::from(b[0]), followed_by_ws(0)),
        leading_space: b[0] == b' ',
        trailing_space: b[n - 1] == b' ',
        leading_break: is_break(b[0]),
        trailing_break: is_break(b[n - 1]),
        ..Scan::default()
    };
    for (i, &c) in b.iter().enumerate() {
        // Most bytes of a long string are letters, digits and punctuation that change nothing.
        if QUIET[usize::from(c)] {
            continue;
        }
        // libyaml's printable ASCII: the line feed and a space to a tilde.
        out.special |= c != b'\n' && !(0x20..=0x7E).contains(&c);
        out.line_breaks |= is_break(c);
        out.break_space |= is_break(c) && b.get(i + 1) == Some(&b' ');
        if i == 0 {
            continue;
        }
        let before = b[i - 1];
        match c {
            b':' => out.block_indicators |= followed_by_ws(i),
            b'#' => out.block_indicators |= matches!(before, b' ' | b'\t' | 0) || is_break(before),
            b'\n' | b'\r' => out.space_break |= before == b' ',
            _ => {}
        }
    }
    out
}

/// The columns `text` takes: its characters, which for ASCII text (nearly every scalar) are its
/// bytes, told without counting them one by one.
fn width(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}

/// libyaml's scalar analysis: which styles can carry this text unchanged.
fn analyze(text: &str) -> Analysis {
    if text.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    if is_simple_word(text) {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: true,
        };
    }
    // This runs for every string written: ASCII text is read as bytes, with no UTF-8 decoding
    // and no copy.
    let scan = if text.is_ascii() {
        scan_ascii(text.as_bytes())
    } else {
        scan(text.chars().peekable())
    };
    let block_indicators =
        scan.block_indicators || text.starts_with("---") || text.starts_with("...");
    let mut a = Analysis {
        multiline: scan.line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if scan.leading_space || scan.leading_break || scan.trailing_space || scan.trailing_break {
        a.block_plain_allowed = false;
    }
    if scan.trailing_space {
        a.block_allowed = false;
    }
    if scan.break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if scan.space_break || scan.special {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if scan.line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// Whether the string `s`, as a mapping value or a sequence item (not a key), is written as a
/// plain scalar on the rest of its line, its text exactly `s`: plain in go-yaml v2's choice and
/// libyaml's analysis, and without a space where a long line could be folded.
pub fn writes_plain_unbroken(s: &str) -> bool {
    !s.contains(' ') && string_style(s) == Style::Plain && analyze(s).block_plain_allowed
}

/// Whether `text`, after `key: ` or `- ` on one line of block YAML, is read back as one plain
/// scalar whose text is exactly `text`: no indicator that starts another node, no `: ` or ` #`,
/// no line break, no leading or trailing space, nothing unprintable.
pub fn reads_as_plain(text: &str) -> bool {
    analyze(text).block_plain_allowed
}

/// The style go-yaml v2's encoder asks for a Go string: literal when it spans lines, plain
/// when YAML 1.1 would read it back as the same string, double-quoted otherwise.
fn string_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if plain_is_string(s, Schema::Yaml11) && !is_base60_float(s) {
        Style::Plain
    } else {
        Style::Double
    }
}

/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`: YAML 1.1 sexagesimal numbers, which
/// go-yaml v2 quotes on the way out.
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        let start = i;
        if b.get(i).is_some_and(|c| (b'0'..=b'5').contains(c))
            && b.get(i + 1).is_some_and(u8::is_ascii_digit)
        {
            i += 2;
        } else if b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

fn scalar_text(value: &Value) -> (Cow<'_, str>, Style) {
    match value {
        Value::Null => (Cow::Borrowed("null"), Style::Plain),
        Value::Bool(true) => (Cow::Borrowed("true"), Style::Plain),
        Value::Bool(false) => (Cow::Borrowed("false"), Style::Plain),
        Value::Number(n) => (Cow::Owned(number_text(n)), Style::Plain),
        Value::String(s) => (Cow::Borrowed(s), string_style(s)),
        _ => (Cow::Borrowed(""), Style::Plain),
    }
}

fn number_text(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        go_format_g(n.as_f64().unwrap_or(0.0))
    }
}

/// The shortest decimal digits of `f` and the position of the decimal point (Go's `decimal`).
pub(crate) fn shortest_digits(f: f64) -> (String, i32) {
    let s = format!("{:e}", f.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    (digits, exp + 1)
}

fn format_e(neg: bool, digits: &str, dp: i32) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    let exp = if digits == "0" { 0 } else { dp - 1 };
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    out.push_str(&format!("{:02}", exp.abs()));
    out
}

fn format_f(neg: bool, digits: &str, dp: i32) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    let nd = digits.len() as i32;
    if dp <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-dp) as usize));
        out.push_str(digits);
    } else if dp >= nd {
        out.push_str(digits);
        out.push_str(&"0".repeat((dp - nd) as usize));
    } else {
        out.push_str(&digits[..dp as usize]);
        out.push('.');
        out.push_str(&digits[dp as usize..]);
    }
    out
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`.
pub(crate) fn go_format_g(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let (digits, dp) = shortest_digits(f);
    let exp = dp - 1;
    if !(-4..6).contains(&exp) {
        format_e(f < 0.0, &digits, dp)
    } else {
        format_f(f < 0.0, &digits, dp)
    }
}

/// How Go's `encoding/json` writes a float64.
pub(crate) fn go_json_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let (digits, dp) = shortest_digits(f);
    let abs = f.abs();
    if !(1e-6..1e21).contains(&abs) {
        let s = format_e(f < 0.0, &digits, dp);
        // encoding/json shortens a two-digit negative exponent: e-07 becomes e-7.
        match s.rsplit_once("e-0") {
            Some((m, d)) if d.len() == 1 => format!("{m}e-{d}"),
            _ => s,
        }
    } else {
        format_f(f < 0.0, &digits, dp)
    }
}

/// The keys of `map` in the order go-yaml v2 writes them. That order is not transitive for
/// keys mixing digit runs and other characters (`2key < 10key < 1key < 2key`); kustomize's own
/// output is then not deterministic (Go iterates the map at random before sorting), so plumb's
/// stable sort is as good an answer as any of kustomize's.
pub fn sorted_keys(map: &Map<String, Value>) -> Vec<&String> {
    let mut keys: Vec<&String> = map.keys().collect();
    sort_written(&mut keys, |k| k.as_str());
    keys
}

/// Sorts `items` by the go-yaml order of the key each names. The items are word-sized (a
/// reference or an index): std's sort picks its method by element size, and with this order
/// not transitive, one size for every sort of keys makes a cycle of keys come out in one order.
pub fn sort_written<'a, T: Copy>(items: &mut [T], key: impl Fn(T) -> &'a str) {
    const { assert!(std::mem::size_of::<T>() == std::mem::size_of::<usize>()) };
    items.sort_by(|&a, &b| natural_key_order(key(a), key(b)));
}

/// go-yaml v2's map key order: runs of digits compare as numbers, and at the first difference
/// a letter sorts after any other character (`1-` before `1b`).
pub fn natural_key_order(a: &str, b: &str) -> Ordering {
    // Keys are nearly always ASCII: compared byte by byte, without collecting characters.
    if a.is_ascii() && b.is_ascii() {
        return natural_order(a.as_bytes(), b.as_bytes());
    }
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    natural_order(&ar, &br)
}

/// Whether [`natural_key_order`] is byte order between `key` and any other key this holds
/// for: ASCII with no digit (runs of digits compare as numbers) and none of the characters
/// between the upper and lower case letters or after them (at a difference a letter sorts
/// after any other character, which byte order does for the rest). Keys written in camel case,
/// with dots, dashes and slashes, are; a map of them is sorted by its keys' bytes.
pub fn key_orders_as_bytes(key: &str) -> bool {
    key.bytes()
        .all(|b| b.is_ascii() && !b.is_ascii_digit() && !matches!(b, 0x5B..=0x60 | 0x7B..=0x7F))
}

/// [`natural_key_order`] over the characters of two keys (bytes of ASCII keys are characters).
fn natural_order<T: Copy + Into<char>>(ar: &[T], br: &[T]) -> Ordering {
    let ch = |s: &[T], i: usize| -> char { s[i].into() };
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ch(ar, i) == ch(br, i) {
            i += 1;
            continue;
        }
        let al = ch(ar, i).is_alphabetic();
        let bl = ch(br, i).is_alphabetic();
        if al && bl {
            return ch(ar, i).cmp(&ch(br, i));
        }
        if al || bl {
            return if bl {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let (mut an, mut bn): (i64, i64) = (0, 0);
        if ch(ar, i) == '0' || ch(br, i) == '0' {
            let mut j = i;
            while j > 0 && ch(ar, j - 1).is_ascii_digit() {
                j -= 1;
                if ch(ar, j) != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ch(ar, ai).is_ascii_digit() {
            an = an
                .wrapping_mul(10)
                .wrapping_add(i64::from(ch(ar, ai) as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && ch(br, bi).is_ascii_digit() {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(i64::from(ch(br, bi) as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ch(ar, i).cmp(&ch(br, i));
    }
    ar.len().cmp(&br.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_ordering_as_bytes_compare_as_bytes() {
        let keys = [
            "a", "B", "b", "ab", "aB", "a.b", "a-b", "a/b", "Z", "z", "", "-", "a b", "A~", "a_b",
            "a1", "a10", "a9", "_x", "{", "é", "a01",
        ];
        for a in keys.iter().filter(|k| key_orders_as_bytes(k)) {
            for b in keys.iter().filter(|k| key_orders_as_bytes(k)) {
                assert_eq!(natural_key_order(a, b), a.cmp(b), "{a:?} {b:?}");
            }
        }
        assert!(key_orders_as_bytes("app.kubernetes.io/name"));
        for k in ["DB_HOST", "k8s", "é", "a~", "{"] {
            assert!(!key_orders_as_bytes(k), "{k}");
        }
    }

    #[test]
    fn ascii_scans_as_any_text_does() {
        // Every text of up to five characters over the ones the scan tells apart.
        let pool = [
            ' ', '\t', '\n', '\r', '#', ':', '-', '?', '[', 'a', '\0', '\u{7f}', '\'',
        ];
        let mut texts: Vec<String> = pool.iter().map(|c| c.to_string()).collect();
        let mut all = texts.clone();
        for _ in 1..5 {
            texts = texts
                .iter()
                .flat_map(|t| pool.iter().map(move |c| format!("{t}{c}")))
                .collect();
            all.extend(texts.iter().cloned());
        }
        for text in &all {
            assert_eq!(
                scan_ascii(text.as_bytes()),
                scan(text.chars().peekable()),
                "{text:?}"
            );
        }
    }

    #[test]
    fn ascii_keys_order_as_their_characters_do() {
        // Every pair of a pool of keys with digits, zeros, letters and punctuation: the byte
        // comparison of ASCII keys must equal the character comparison.
        let pool = [
            "", "a", "b", "A", "a1", "a01", "a10", "a2", "a-", "a_", "ab", "1", "01", "001", "10",
            "1-", "1b", "0", "00", "x09y", "x9y", "x10y", "key", "key1", "key01", "z.z", "Z", "-",
        ];
        for a in pool {
            for b in pool {
                let ar: Vec<char> = a.chars().collect();
                let br: Vec<char> = b.chars().collect();
                assert_eq!(
                    natural_order(a.as_bytes(), b.as_bytes()),
                    natural_order(&ar, &br),
                    "{a:?} vs {b:?}"
                );
                assert_eq!(natural_key_order(a, b), natural_order(&ar, &br));
            }
        }
        // Non-ASCII keys take the character path: other characters before letters.
        assert_eq!(natural_key_order("é", "-"), Ordering::Greater);
        assert_eq!(natural_key_order("aé", "ab"), "é".cmp("b"));
    }

    #[test]
    fn go_float_formats() {
        assert_eq!(go_format_g(1.5e-7), "1.5e-07");
        assert_eq!(go_format_g(1234567.5), "1.2345675e+06");
        assert_eq!(go_format_g(123456.5), "123456.5");
        assert_eq!(go_format_g(0.0001), "0.0001");
        assert_eq!(go_format_g(1e-5), "1e-05");
        assert_eq!(go_json_float(1.5e-7), "1.5e-7");
        assert_eq!(go_json_float(1e20), "100000000000000000000");
        assert_eq!(go_json_float(1e21), "1e+21");
    }

    #[test]
    fn natural_order_matches_go_yaml_v2() {
        let mut keys = vec!["a10", "a9", "10key", "2key", "Beta", "_under", "alpha"];
        keys.sort_by(|a, b| natural_key_order(a, b));
        assert_eq!(
            keys,
            vec!["_under", "2key", "10key", "Beta", "a9", "a10", "alpha"]
        );
        // Not transitive: only the insertion order Go's sort uses gives kustomize's answer.
        assert_eq!(natural_key_order("10key", "1key"), Ordering::Less);
        assert_eq!(natural_key_order("1key", "2key"), Ordering::Less);
    }

    /// Keys whose order is a cycle (`2key < 10key < 1key < 2key`), inserted in every order:
    /// the writer puts them in the order `sorted_keys` gives.
    #[test]
    fn the_writer_orders_keys_as_sorted_keys_does() {
        let keys = ["1key", "2key", "10key", "3x", "20x", "a"];
        let mut orders = vec![Vec::new()];
        for _ in 0..keys.len() {
            orders = orders
                .into_iter()
                .flat_map(|o: Vec<&str>| {
                    keys.iter()
                        .filter(|k| !o.contains(k))
                        .map(|k| [o.clone(), vec![*k]].concat())
                        .collect::<Vec<_>>()
                })
                .collect();
        }
        assert_eq!(orders.len(), 720);
        for order in orders {
            let map: Map<String, Value> =
                order.iter().map(|k| (k.to_string(), Value::Null)).collect();
            let written: Vec<String> = write_document(&Value::Object(map.clone()))
                .lines()
                .map(|l| l.trim_end_matches(": null").to_string())
                .collect();
            let sorted: Vec<&String> = sorted_keys(&map);
            assert_eq!(written.iter().collect::<Vec<_>>(), sorted, "{order:?}");
        }
    }

    #[test]
    fn base60() {
        assert!(is_base60_float("12:30"));
        assert!(is_base60_float("190:20:30"));
        assert!(!is_base60_float("1:2:x"));
        assert!(!is_base60_float("12"));
    }
}
