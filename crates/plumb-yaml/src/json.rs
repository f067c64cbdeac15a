//! Conversions between nodes and [`serde_json::Value`].
//!
//! [`to_json`] gives the value kustomize prints: the node resolved as go-yaml v3 reads it,
//! encoded as Go's `encoding/json` would, and read back as go-yaml v2 does (so `1.0` becomes
//! `1`, a timestamp becomes its RFC 3339 string, `1e21` stays a float). kustomize reaches that
//! JSON by writing the node as YAML and reading it back, and go-yaml v3 writes folded scalars
//! (`>`) with a bug that adds line breaks, which [`to_json`] reproduces.

use crate::emit::go_json_float;
use crate::error::YamlError;
use crate::node::{Node, NodeKind, ScalarStyle};
use crate::resolve::{resolve, resolve_number, Resolved, Schema};
use serde_json::{Map, Number, Value};

/// The JSON value kustomize derives from a node.
pub fn to_json(node: &Node) -> Result<Value, YamlError> {
    convert(node, true)
}

fn fail(node: &Node, message: String) -> YamlError {
    match &node.span {
        Some(span) => YamlError::at(&span.file, span.start, message),
        None => YamlError {
            path: Default::default(),
            location: crate::source::Location { line: 0, column: 0 },
            offset: 0,
            message,
        },
    }
}

fn convert(node: &Node, top: bool) -> Result<Value, YamlError> {
    match &node.kind {
        NodeKind::Scalar(_) if empty_in_flow(node) => Ok(Value::String(String::new())),
        NodeKind::Scalar(s) => {
            let resolved = resolve(s, Schema::Kustomize).map_err(|e| fail(node, e.to_string()))?;
            match resolved {
                Resolved::Str(text) if s.style == ScalarStyle::Folded => Ok(Value::String(
                    reread_string(node, &folded_round_trip(&text))?.into_owned(),
                )),
                resolved => scalar_json(node, resolved),
            }
        }
        NodeKind::Sequence(items) => Ok(Value::Array(
            items
                .iter()
                .map(|n| convert(n, false))
                .collect::<Result<_, _>>()?,
        )),
        NodeKind::Mapping(entries) => {
            let mut map = Map::with_capacity(entries.len());
            for (i, (k, v)) in entries.iter().enumerate() {
                let key = mapping_key(k, top)?;
                // One lookup for the check and the insertion.
                match map.entry(key.into_owned()) {
                    serde_json::map::Entry::Occupied(taken) => {
                        return Err(duplicate_key(entries, i, taken.key(), top));
                    }
                    serde_json::map::Entry::Vacant(slot) => {
                        slot.insert(convert(v, false)?);
                    }
                }
            }
            Ok(Value::Object(map))
        }
    }
}

/// Whether `node` is a value left empty in a flow collection (`{a: , b: 1}`, `{a, b: 1}`,
/// `[a: ]`): null as it is read, but go-yaml v3 writes an empty plain scalar inside a flow
/// collection single-quoted (`{a: '', b: 1}`), so that kustomize, which reads what it writes
/// back, gives the empty string. An empty value in a block collection is written empty and
/// stays null. The parser leaves such a value zero-length, and `~` written out is null
/// anywhere.
fn empty_in_flow(node: &Node) -> bool {
    let (NodeKind::Scalar(s), Some(span)) = (&node.kind, &node.span) else {
        return false;
    };
    s.style == ScalarStyle::Plain
        && s.tag.is_none()
        && (s.value.is_empty() || s.value == "~")
        && span.start == span.end
        && {
            // Where the parser puts the empty value: at the `:` before it, or where the `,`
            // or `}` after a key written alone is.
            let text = span.file.text().as_bytes();
            let rest = &text[span.start.min(text.len())..];
            let rest = rest.strip_prefix(b":").unwrap_or(rest);
            rest.iter()
                .find(|b| !b.is_ascii_whitespace())
                .is_some_and(|b| matches!(b, b',' | b'}' | b']'))
        }
}

/// Whether [`to_json`] of `node` gives `value`, told without building that value: how a
/// patch applied to the JSON of a node finds the parts it left as they were. `root`: `node` is
/// a document, whose keys are read as written. Meant for a node `to_json` accepts: a part it
/// would reject equals nothing.
pub fn equals_json(node: &Node, value: &Value, root: bool) -> bool {
    match (&node.kind, value) {
        (NodeKind::Scalar(s), _) => match resolve(s, Schema::Kustomize) {
            // Most scalars are strings, nearly all read back as they are: compared without a
            // copy.
            Ok(Resolved::Str(text)) if s.style != ScalarStyle::Folded => {
                reread_string(node, &text).is_ok_and(|t| value.as_str() == Some(&*t))
            }
            _ => convert(node, root).is_ok_and(|v| v == *value),
        },
        (NodeKind::Sequence(items), Value::Array(values)) => {
            items.len() == values.len()
                && items
                    .iter()
                    .zip(values)
                    .all(|(n, v)| equals_json(n, v, false))
        }
        (NodeKind::Mapping(entries), Value::Object(map)) => {
            entries.len() == map.len()
                && entries.iter().all(|(k, v)| {
                    mapping_key(k, root).is_ok_and(|key| {
                        map.get(key.as_ref())
                            .is_some_and(|x| equals_json(v, x, false))
                    })
                })
        }
        _ => false,
    }
}

/// The JSON key [`to_json`] makes of mapping key `key` (`root`: a key of a document's top
/// level); `None` for a key it rejects.
pub fn json_key(key: &Node, root: bool) -> Option<std::borrow::Cow<'_, str>> {
    mapping_key(key, root).ok()
}

/// Whether [`to_json`] would succeed, without building the value: the same errors, in the
/// same order (kustomize finds a duplicate key in a resource as it reads it).
pub fn check(node: &Node) -> Result<(), YamlError> {
    check_node(node, true)
}

fn check_node(node: &Node, top: bool) -> Result<(), YamlError> {
    match &node.kind {
        NodeKind::Scalar(s) => {
            let resolved = resolve(s, Schema::Kustomize).map_err(|e| fail(node, e.to_string()))?;
            match resolved {
                Resolved::Str(text) if s.style == ScalarStyle::Folded => {
                    check_string(node, &folded_round_trip(&text))
                }
                Resolved::Str(text) => check_string(node, &text),
                Resolved::Float(_) => scalar_json(node, resolved).map(drop),
                _ => Ok(()),
            }
        }
        NodeKind::Sequence(items) => items.iter().try_for_each(|n| check_node(n, false)),
        NodeKind::Mapping(entries) => {
            // On the stack for most mappings, which have a few keys.
            let mut keys: smallvec::SmallVec<[std::borrow::Cow<'_, str>; 16]> =
                smallvec::SmallVec::with_capacity(entries.len());
            for (i, (k, v)) in entries.iter().enumerate() {
                let key = mapping_key(k, top)?;
                if keys.contains(&key) {
                    return Err(duplicate_key(entries, i, &key, top));
                }
                keys.push(key);
                check_node(v, false)?;
            }
            Ok(())
        }
    }
}

/// The JSON key of a mapping key: the text of a top-level key as written (kustomize reads the
/// top level as strings), a nested key only when it resolves to a string.
fn mapping_key(k: &Node, top: bool) -> Result<std::borrow::Cow<'_, str>, YamlError> {
    match k.as_scalar() {
        Some(s) if top => Ok(std::borrow::Cow::Borrowed(s.value.as_str())),
        Some(s) => match resolve(s, Schema::Kustomize) {
            Ok(Resolved::Str(text)) => Ok(text),
            _ => Err(fail(
                k,
                format!(
                    "json: unsupported type: map[interface {{}}]interface {{}} (key {:?} is not a string)",
                    s.value
                ),
            )),
        },
        None => Err(fail(k, "mapping key is not a scalar".into())),
    }
}

/// The error for entry `i`, whose key `key` an earlier entry of `entries` already has.
fn duplicate_key(entries: &[(Node, Node)], i: usize, key: &str, top: bool) -> YamlError {
    let first = entries[..i]
        .iter()
        .find(|(k, _)| mapping_key(k, top).is_ok_and(|t| t == key))
        .and_then(|(k, _)| k.span.as_ref())
        .map_or(0, |s| s.location().line);
    fail(
        &entries[i].0,
        format!("mapping key {key:?} already defined at line {first}"),
    )
}

fn scalar_json(node: &Node, resolved: Resolved<'_>) -> Result<Value, YamlError> {
    Ok(match resolved {
        Resolved::Null => Value::Null,
        Resolved::Bool(b) => Value::Bool(b),
        Resolved::Int(i) => Value::Number(i.into()),
        Resolved::Uint(u) => Value::Number(u.into()),
        Resolved::Float(f) => {
            if !f.is_finite() {
                let shown = if f.is_nan() {
                    "NaN"
                } else if f > 0.0 {
                    "+Inf"
                } else {
                    "-Inf"
                };
                return Err(fail(node, format!("json: unsupported value: {shown}")));
            }
            reread_number(&go_json_float(f))
        }
        Resolved::Str(s) => Value::String(reread_string(node, &s)?.into_owned()),
        Resolved::Timestamp(t) => Value::String(t.to_string()),
    })
}

/// A number as go-yaml v2 reads the JSON text Go wrote for it.
fn reread_number(text: &str) -> Value {
    match resolve_number(text) {
        Some(Resolved::Int(i)) => Value::Number(i.into()),
        Some(Resolved::Uint(u)) => Value::Number(u.into()),
        Some(Resolved::Float(f)) => Number::from_f64(f).map_or(Value::Null, Value::Number),
        _ => Value::Null,
    }
}

/// A string as go-yaml v2 reads back the JSON Go wrote: characters YAML forbids are an error,
/// and a raw NEL (which JSON does not escape) is a line break folded like any other.
fn reread_string<'s>(node: &Node, s: &'s str) -> Result<std::borrow::Cow<'s, str>, YamlError> {
    check_string(node, s)?;
    if s.is_ascii() || !s.contains('\u{85}') {
        return Ok(std::borrow::Cow::Borrowed(s));
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == ' ' || chars[i] == '\u{85}' {
            let start = i;
            let mut breaks = 0;
            while i < chars.len() && (chars[i] == ' ' || chars[i] == '\u{85}') {
                if chars[i] == '\u{85}' {
                    breaks += 1;
                }
                i += 1;
            }
            if breaks == 0 {
                out.extend(&chars[start..i]);
            } else if breaks == 1 {
                out.push(' ');
            } else {
                out.push_str(&"\n".repeat(breaks - 1));
            }
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    Ok(std::borrow::Cow::Owned(out))
}

/// The characters go-yaml v2 refuses to read back (DEL, C1 controls but NEL, U+FFFE/U+FFFF).
fn check_string(node: &Node, s: &str) -> Result<(), YamlError> {
    let refused = |c: char| {
        let v = c as u32;
        v == 0x7F || ((0x80..=0x9F).contains(&v) && v != 0x85) || v == 0xFFFE || v == 0xFFFF
    };
    // Two vectorised passes (the high bit, then a DEL) instead of a test per byte.
    let suspect = !s.is_ascii() || s.as_bytes().contains(&0x7F);
    if suspect && s.chars().any(refused) {
        return Err(fail(
            node,
            "yaml: control characters are not allowed".into(),
        ));
    }
    Ok(())
}

/// A folded scalar's text once go-yaml v3 has written it in folded style and read it back,
/// as kustomize does to every resource it prints. The writer ends each line that does not start
/// with a blank with an extra line break whenever the whole text does not start with a blank
/// (libyaml's emitter looks at the text's first character where it means the next line's), so
/// a line followed by a more-indented one, or the last line of a `>+` scalar, gains a break.
/// Text go-yaml would not write as a block scalar (trailing spaces, a space before a break,
/// characters it escapes) is written double-quoted and comes back unchanged.
fn folded_round_trip(text: &str) -> String {
    if !block_allowed(text) || text.contains(['\r', '\u{85}', '\u{2028}', '\u{2029}']) {
        return text.to_string();
    }
    let first_blank = text
        .chars()
        .find(|&c| c != '\n')
        .is_none_or(|c| c == ' ' || c == '\t');
    // The header, as go-yaml's block scalar hints write it.
    let mut doc = String::from("k: >");
    if text.starts_with([' ', '\n']) {
        doc.push('2');
    }
    let body = text.strip_suffix('\n');
    match body {
        None => doc.push('-'),
        Some(rest) if rest.is_empty() || rest.ends_with('\n') => doc.push('+'),
        Some(_) => {}
    }
    doc.push('\n');
    let mut at_line_start = true;
    let mut leading_spaces = true;
    for c in text.chars() {
        if c == '\n' {
            if !at_line_start && !leading_spaces && !first_blank {
                doc.push('\n');
            }
            doc.push('\n');
            at_line_start = true;
        } else {
            if at_line_start {
                doc.push_str("  ");
                leading_spaces = c == ' ' || c == '\t';
            }
            doc.push(c);
            at_line_start = false;
        }
    }
    if !at_line_start {
        doc.push('\n');
    }
    doc.push_str("z: 0\n");
    crate::parse::parse_documents("folded", &doc)
        .ok()
        .and_then(|docs| docs.first()?.str_at(&["k"]).map(str::to_string))
        .unwrap_or_else(|| text.to_string())
}

/// Whether go-yaml v3 may write `text` as a block scalar: not empty, no trailing space, no
/// space before a line break, and nothing it would escape (tabs are fine).
fn block_allowed(text: &str) -> bool {
    let printable = |c: char| {
        let v = c as u32;
        c == '\t'
            || v == 0x0A
            || (0x20..=0x7E).contains(&v)
            || (0xA0..=0xD7FF).contains(&v)
            || ((0xE000..=0xFFFD).contains(&v) && v != 0xFEFF)
    };
    !text.is_empty() && !text.ends_with(' ') && !text.contains(" \n") && text.chars().all(printable)
}

/// A node holding `value`: strings are tagged `!!str` so they stay strings.
pub fn from_json(value: &Value) -> Node {
    match value {
        Value::Null => Node::null(),
        Value::Bool(b) => Node::plain(if *b { "true" } else { "false" }),
        Value::Number(n) => Node::plain(n.to_string()),
        Value::String(s) => Node::string(s.as_str()),
        Value::Array(items) => Node::sequence(items.iter().map(from_json).collect()),
        Value::Object(map) => Node::new(NodeKind::Mapping(
            map.iter()
                .map(|(k, v)| (Node::string(k.as_str()), from_json(v)))
                .collect(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(yaml: &str) -> Value {
        let docs = crate::parse::parse_documents("t.yaml", yaml).unwrap();
        to_json(&docs[0]).unwrap()["k"].clone()
    }

    #[test]
    fn equals_json_agrees_with_to_json() {
        let text = "a: 1.0\nb: '1.0'\nc: >\n  x\n    y\n  z\nd: [yes, ~, 0x1F, 2020-01-02]\ne: {f: g, 'true': h}\nk: \"\\u0085x\"\n";
        let doc = crate::parse::parse_documents("t.yaml", text)
            .unwrap()
            .remove(0);
        let value = to_json(&doc).unwrap();
        assert!(equals_json(&doc, &value, true));
        // Every part equals its own JSON and no other part's.
        let entries = match &doc.kind {
            NodeKind::Mapping(entries) => entries,
            _ => unreachable!(),
        };
        for (k, v) in entries {
            let key = json_key(k, true).unwrap();
            for (other, json) in value.as_object().unwrap() {
                assert_eq!(
                    equals_json(v, json, false),
                    *other == key,
                    "{key} against {other}"
                );
            }
        }
        // A changed scalar, a key more, an item less: not equal.
        let mut changed = value.clone();
        changed["a"] = Value::from(2);
        assert!(!equals_json(&doc, &changed, true));
        let mut more = value.clone();
        more["e"]["x"] = Value::Null;
        assert!(!equals_json(&doc, &more, true));
        let mut less = value;
        less["d"].as_array_mut().unwrap().pop();
        assert!(!equals_json(&doc, &less, true));
    }

    #[test]
    fn folded_lines_before_more_indented_ones_gain_a_break() {
        // go-yaml reads "a\n  b\nc\n"; its writer puts an empty line after `a`.
        assert_eq!(value("k: >\n  a\n    b\n  c\n"), "a\n\n  b\nc\n");
        // `>+` keeps the break the writer adds after the last line.
        assert_eq!(value("k: >+\n  a\n  b\n\nz: 1\n"), "a b\n\n\n");
    }

    #[test]
    fn folded_text_the_writer_does_not_touch() {
        // Plain folding, and text starting with a blank (the writer's check looks there).
        assert_eq!(value("k: >\n  a\n  b\n"), "a b\n");
        assert_eq!(value("k: >2\n     x\n  y\n"), "   x\ny\n");
        // A trailing space forces double quotes, which round-trip exactly.
        assert_eq!(value("k: >-\n  a\n    b \n  c\n"), "a\n  b \nc");
        // Literal blocks are written as they are.
        assert_eq!(value("k: |\n  a\n    b\n"), "a\n  b\n");
    }
}
