//! Helm's `--set` syntax (`helm.sh/helm/v4/pkg/strvals`), which helm-controller uses to write a
//! `valuesFrom` entry's data at its `targetPath`.
//!
//! A line `a.b[0]=x,c={1,2}` is read key by key into an existing tree of values: dots walk into
//! (or create) maps, `[n]` into lists, `{..}` is a list value, `\` escapes the next character,
//! and a value is typed as Helm types it (`true`, `null`, `0`, integers without a leading zero)
//! unless strings are forced, as `--set-string` does. Errors read as Helm's do. The writes go
//! into the maps and lists already in the tree, in place, which is what lets a `targetPath`
//! write reach a HelmRelease's own `spec.values` (see [`crate::values`]).
//!
//! ```
//! let values = plumb_helm::strvals::parse(r"nodeSelector.kubernetes\.io/role=master,n=3").unwrap();
//! assert_eq!(
//!     serde_json::Value::Object(values),
//!     serde_json::json!({"nodeSelector": {"kubernetes.io/role": "master"}, "n": 3})
//! );
//! ```

use crate::values::{GoValue, ListRef, MapRef};
use serde_json::{Map, Value};

/// The largest list index a line may set (Helm's `MaxIndex`).
pub const MAX_INDEX: i64 = 65536;

/// How deep a key may nest maps with dots (Helm's `MaxNestedNameLevel`).
pub const MAX_NESTED_NAME_LEVEL: usize = 30;

/// A line Helm's parser rejects; the message is Helm's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StrvalsError(pub String);

/// `strvals.Parse`: a line read into new values, scalars typed.
pub fn parse(line: &str) -> Result<Map<String, Value>, StrvalsError> {
    let mut dest = Map::new();
    parse_into(line, &mut dest)?;
    Ok(dest)
}

/// `strvals.ParseString`: a line read into new values, every scalar a string.
pub fn parse_string(line: &str) -> Result<Map<String, Value>, StrvalsError> {
    let mut dest = Map::new();
    parse_into_string(line, &mut dest)?;
    Ok(dest)
}

/// `strvals.ParseInto`: a line read into `dest`, overwriting what its keys name. As in Helm,
/// what was written before an error stays written.
pub fn parse_into(line: &str, dest: &mut Map<String, Value>) -> Result<(), StrvalsError> {
    parse_into_json(line, dest, false)
}

/// `strvals.ParseIntoString`: [`parse_into`] with every scalar kept a string.
pub fn parse_into_string(line: &str, dest: &mut Map<String, Value>) -> Result<(), StrvalsError> {
    parse_into_json(line, dest, true)
}

fn parse_into_json(
    line: &str,
    dest: &mut Map<String, Value>,
    strings: bool,
) -> Result<(), StrvalsError> {
    let tree = GoValue::map_from_json(dest);
    let result = parse_into_tree(line, &tree, strings);
    *dest = GoValue::map_to_json(&tree);
    result
}

/// Reads `line` into the shared tree `dest`, writing into its maps and lists in place.
pub(crate) fn parse_into_tree(
    line: &str,
    dest: &MapRef,
    strings: bool,
) -> Result<(), StrvalsError> {
    let mut parser = Parser {
        chars: line.chars().collect(),
        pos: 0,
        strings,
    };
    loop {
        match parser.key(dest, 0) {
            Ok(()) => continue,
            Err(Flow::Eof) => return Ok(()),
            Err(Flow::Fail(message)) => return Err(StrvalsError(message)),
        }
    }
}

/// Why a step stopped: the end of the line (which Helm's loop treats as success wherever it
/// surfaces, even wrapped in another error), or an error.
enum Flow {
    Eof,
    Fail(String),
}

/// What `valList` found.
enum ListValue {
    List(ListRef),
    NotList,
    Eof,
    Fail(String),
}

/// Text read up to a stop character, or up to the end of the line.
enum Until {
    Stop(String, char),
    End(String),
}

impl Until {
    fn text(&self) -> &str {
        match self {
            Until::Stop(text, _) | Until::End(text) => text,
        }
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    strings: bool,
}

fn fail<T>(message: String) -> Result<T, Flow> {
    Err(Flow::Fail(message))
}

/// The message Go's runtime gives a failed type assertion, which Helm recovers as an error.
fn conversion(found: &GoValue, wanted: &str) -> String {
    format!(
        "unable to parse key: interface conversion: interface {{}} is {}, not {wanted}",
        found.go_type()
    )
}

const MAP_TYPE: &str = "map[string]interface {}";
const LIST_TYPE: &str = "[]interface {}";

impl Parser {
    fn read(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    fn unread(&mut self) {
        self.pos -= 1;
    }

    /// Helm's `runesUntil`: a backslash takes the next character literally.
    fn until(&mut self, stop: &[char]) -> Until {
        let mut text = String::new();
        loop {
            match self.read() {
                None => return Until::End(text),
                Some(c) if stop.contains(&c) => return Until::Stop(text, c),
                Some('\\') => match self.read() {
                    None => return Until::End(text),
                    Some(next) => text.push(next),
                },
                Some(c) => text.push(c),
            }
        }
    }

    fn key(&mut self, data: &MapRef, level: usize) -> Result<(), Flow> {
        match self.until(&['=', '[', ',', '.']) {
            Until::End(k) if k.is_empty() => Err(Flow::Eof),
            Until::End(k) => fail(format!("key {} has no value", go_quote(&k))),
            Until::Stop(k, '[') => {
                let index = self.index()?;
                let existing = data.borrow().get(&k).cloned();
                let list = match existing {
                    None => ListRef::default(),
                    Some(GoValue::List(list)) => list,
                    Some(other) => return fail(conversion(&other, LIST_TYPE)),
                };
                let (list, result) = self.list_item(list, index, level);
                set(data, k, GoValue::List(list));
                result
            }
            Until::Stop(k, '=') => match self.value_list() {
                ListValue::List(list) => {
                    set(data, k, GoValue::List(list));
                    Ok(())
                }
                ListValue::Eof => {
                    set(data, k, GoValue::Str(String::new()));
                    Err(Flow::Eof)
                }
                ListValue::NotList => {
                    let text = self.value();
                    set(data, k, self.typed(text));
                    Ok(())
                }
                ListValue::Fail(message) => fail(message),
            },
            Until::Stop(k, ',') => {
                set(data, k.clone(), GoValue::Str(String::new()));
                fail(format!(
                    "key {} has no value (cannot end with ,)",
                    go_quote(&k)
                ))
            }
            Until::Stop(k, _) => {
                let level = level + 1;
                if level > MAX_NESTED_NAME_LEVEL {
                    return fail(format!(
                        "value name nested level is greater than maximum supported nested level of {MAX_NESTED_NAME_LEVEL}"
                    ));
                }
                let existing = data.borrow().get(&k).cloned();
                let inner = match existing {
                    None => MapRef::default(),
                    Some(GoValue::Map(map)) => map,
                    Some(other) => return fail(conversion(&other, MAP_TYPE)),
                };
                let result = self.key(&inner, level);
                let empty = inner.borrow().is_empty();
                if result.is_ok() && empty {
                    return fail(format!("key map {} has no value", go_quote(&k)));
                }
                if !empty {
                    set(data, k, GoValue::Map(inner));
                }
                result
            }
        }
    }

    /// The index between `[` and `]`, read as `strconv.Atoi` reads it.
    fn index(&mut self) -> Result<i64, Flow> {
        match self.until(&[']']) {
            // Helm wraps the end of the line with %w, so its loop still sees the end.
            Until::End(_) => Err(Flow::Eof),
            Until::Stop(text, _) => text.parse::<i64>().map_err(|e| {
                let reason = match e.kind() {
                    std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                        "value out of range"
                    }
                    _ => "invalid syntax",
                };
                Flow::Fail(format!(
                    "error parsing index: strconv.Atoi: parsing {}: {reason}",
                    go_quote(&text)
                ))
            }),
        }
    }

    /// Helm's `listItem`: what follows `[i]`, written at index `i` of `list`. The list given back
    /// is the one the parent must hold (a longer list is a new one), even after an error.
    fn list_item(
        &mut self,
        list: ListRef,
        index: i64,
        level: usize,
    ) -> (ListRef, Result<(), Flow>) {
        if index < 0 {
            return (list, fail(format!("negative {index} index not allowed")));
        }
        let next = self.until(&['[', '.', '=']);
        if !next.text().is_empty() {
            // Helm formats the runes themselves, so Go prints a list of quoted characters.
            let message = format!(
                "unexpected data at end of array index: {}",
                go_quote_runes(next.text())
            );
            return (list, fail(message));
        }
        match next {
            Until::End(_) => (list, Err(Flow::Eof)),
            Until::Stop(_, '=') => match self.value_list() {
                ListValue::List(value) => set_index(list, index, GoValue::List(value)),
                ListValue::Eof => set_index(list, index, GoValue::Str(String::new())),
                ListValue::NotList => {
                    let text = self.value();
                    let value = self.typed(text);
                    set_index(list, index, value)
                }
                ListValue::Fail(message) => (list, fail(message)),
            },
            Until::Stop(_, '[') => {
                let next_index = match self.index() {
                    Ok(i) => i,
                    Err(flow) => return (list, Err(flow)),
                };
                let existing = usize::try_from(index)
                    .ok()
                    .and_then(|i| list.borrow().get(i).cloned());
                let current = match existing {
                    None | Some(GoValue::Nil) => ListRef::default(),
                    Some(GoValue::List(inner)) => inner,
                    Some(other) => return (list, fail(conversion(&other, LIST_TYPE))),
                };
                let (inner, result) = self.list_item(current, next_index, level);
                if result.is_err() {
                    return (list, result);
                }
                set_index(list, index, GoValue::List(inner))
            }
            Until::Stop(..) => {
                let position = usize::try_from(index).ok();
                let existing = position.and_then(|i| list.borrow().get(i).cloned());
                let inner = match existing {
                    None => MapRef::default(),
                    Some(GoValue::Map(map)) => map,
                    // Indices set out of order: Helm puts a new map in the list's slot first.
                    Some(_) => {
                        let map = MapRef::default();
                        if let Some(i) = position {
                            list.borrow_mut()[i] = GoValue::Map(map.clone());
                        }
                        map
                    }
                };
                if let Err(flow) = self.key(&inner, level) {
                    return (list, Err(flow));
                }
                set_index(list, index, GoValue::Map(inner))
            }
        }
    }

    /// Helm's `valList`: a `{a,b}` list value, or word that the value is not one.
    fn value_list(&mut self) -> ListValue {
        match self.read() {
            None => return ListValue::Eof,
            Some('{') => {}
            Some(_) => {
                self.unread();
                return ListValue::NotList;
            }
        }
        let mut items = Vec::new();
        loop {
            match self.until(&[',', '}']) {
                Until::End(_) => return ListValue::Fail("list must terminate with '}'".into()),
                Until::Stop(text, '}') => {
                    if let Some(c) = self.read() {
                        if c != ',' {
                            self.unread();
                        }
                    }
                    items.push(self.typed(text));
                    return ListValue::List(ListRef::new(items.into()));
                }
                Until::Stop(text, _) => items.push(self.typed(text)),
            }
        }
    }

    /// A plain value: everything up to the next unescaped comma.
    fn value(&mut self) -> String {
        match self.until(&[',']) {
            Until::Stop(text, _) | Until::End(text) => text,
        }
    }

    /// Helm's `typedVal`.
    fn typed(&self, text: String) -> GoValue {
        if self.strings {
            return GoValue::Str(text);
        }
        if equal_fold(&text, "true") {
            return GoValue::Bool(true);
        }
        if equal_fold(&text, "false") {
            return GoValue::Bool(false);
        }
        if equal_fold(&text, "null") {
            return GoValue::Nil;
        }
        if text == "0" {
            return GoValue::Int(0);
        }
        if !text.is_empty() && !text.starts_with('0') {
            if let Ok(i) = text.parse::<i64>() {
                return GoValue::Int(i);
            }
        }
        GoValue::Str(text)
    }
}

/// Helm's `set`: an empty key is never set.
fn set(data: &MapRef, key: String, value: GoValue) {
    if !key.is_empty() {
        data.borrow_mut().insert(key, value);
    }
}

/// Helm's `setIndex`: an index inside the list is written in place (every holder of the list
/// sees it); one past its end makes a new, longer list padded with nulls.
fn set_index(list: ListRef, index: i64, value: GoValue) -> (ListRef, Result<(), Flow>) {
    if index < 0 {
        return (list, fail(format!("negative {index} index not allowed")));
    }
    if index > MAX_INDEX {
        return (
            list,
            fail(format!(
                "index of {index} is greater than maximum supported index of {MAX_INDEX}"
            )),
        );
    }
    let i = index as usize;
    let len = list.borrow().len();
    if i < len {
        list.borrow_mut()[i] = value;
        return (list, Ok(()));
    }
    let mut items = list.borrow().clone();
    items.resize(i + 1, GoValue::Nil);
    items[i] = value;
    (ListRef::new(items.into()), Ok(()))
}

/// Go's `strings.EqualFold` against a lower-case ASCII word (`ſ` folds to `s`).
fn equal_fold(text: &str, word: &str) -> bool {
    text.chars().count() == word.len()
        && text
            .chars()
            .zip(word.chars())
            .all(|(c, w)| c.to_ascii_lowercase() == w || (w == 's' && c == 'ſ'))
}

/// Go's `%q` of a string.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        escape_into(&mut out, c, '"');
    }
    out.push('"');
    out
}

/// Go's `%q` of a `[]rune`: `['a' 'b']`.
fn go_quote_runes(s: &str) -> String {
    let quoted: Vec<String> = s
        .chars()
        .map(|c| {
            let mut out = String::from("'");
            escape_into(&mut out, c, '\'');
            out.push('\'');
            out
        })
        .collect();
    format!("[{}]", quoted.join(" "))
}

/// One character as Go's `strconv` quoting writes it between `quote` characters.
fn escape_into(out: &mut String, c: char, quote: char) {
    match c {
        c if c == quote => {
            out.push('\\');
            out.push(c);
        }
        '\\' => out.push_str("\\\\"),
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
        c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push(c),
    }
}
