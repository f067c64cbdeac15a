//! The content hash kustomize appends to generated names: the sha256 of the Go JSON encoding
//! (sorted keys, HTML-safe escapes) of the fields that define the object's content, the first
//! ten hex digits with five of them swapped for letters so the suffix never reads as a number
//! or a word kubectl's old hasher avoided.

use plumb_yaml::{Node, NodeKind};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// kustomize's hasher looks the name up as `metadata/name`, which its lookup reads as one
/// top-level key of that name: so the name never takes part in the hash (renaming a generated
/// object keeps its suffix). Kept as kustomize does it, to stay exact.
const NAME_LOOKUP: &[&str] = &["metadata/name"];

/// The suffix kustomize would give `node`.
pub fn content_hash(node: &Node) -> Result<String, String> {
    let encoded = match node.str_at(&["kind"]) {
        Some("ConfigMap") => {
            let mut m = Map::new();
            m.insert("kind".into(), Value::String("ConfigMap".into()));
            m.insert("name".into(), field(node, NAME_LOOKUP)?);
            m.insert("data".into(), field(node, &["data"])?);
            if let Some(binary) = map_field(node, "binaryData")? {
                m.insert("binaryData".into(), binary);
            }
            Value::Object(m)
        }
        Some("Secret") => {
            let mut m = Map::new();
            m.insert("kind".into(), Value::String("Secret".into()));
            m.insert("type".into(), field(node, &["type"])?);
            m.insert("name".into(), field(node, NAME_LOOKUP)?);
            m.insert("data".into(), field(node, &["data"])?);
            if let Some(string_data) = map_field(node, "stringData")? {
                m.insert("stringData".into(), string_data);
            }
            Value::Object(m)
        }
        _ => plumb_yaml::to_json(node).map_err(|e| e.to_string())?,
    };
    let mut json = String::new();
    go_json(&encoded, &mut json);
    Ok(suffix(&Sha256::digest(json.as_bytes())))
}

/// kustomize's encoding of a digest: its first ten hex digits, with `0 1 3 a e` read as
/// `g h k m t`.
fn suffix(digest: &[u8]) -> String {
    digest
        .iter()
        .flat_map(|b| [b >> 4, b & 0xf])
        .take(10)
        .map(|nibble| match nibble {
            0x0 => 'g',
            0x1 => 'h',
            0x3 => 'k',
            0xa => 'm',
            0xe => 't',
            n => char::from_digit(u32::from(n), 16).unwrap_or('?'),
        })
        .collect()
}

/// A field as kustomize's hasher reads it: a scalar's raw text, a mapping as its JSON value,
/// and the empty string when absent.
fn field(node: &Node, path: &[&str]) -> Result<Value, String> {
    let Some(value) = node.get_path(path) else {
        return Ok(Value::String(String::new()));
    };
    match &value.kind {
        NodeKind::Scalar(s) => Ok(Value::String(s.value.to_string())),
        NodeKind::Mapping(_) => plumb_yaml::to_json(value).map_err(|e| e.to_string()),
        // Decoding a list into a map fails silently in kustomize, leaving a nil map.
        NodeKind::Sequence(_) => Ok(Value::Null),
    }
}

/// An optional field that takes part in the hash only when it is a mapping.
fn map_field(node: &Node, key: &str) -> Result<Option<Value>, String> {
    match node.get(key) {
        Some(value) if value.is_mapping() => field(node, &[key]).map(Some),
        _ => Ok(None),
    }
}

/// Writes `value` as Go's `encoding/json` writes the `interface{}` it decodes to: map keys
/// sorted, numbers as float64, `<`, `>`, `&`, U+2028 and U+2029 escaped.
pub fn go_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&go_number(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => go_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_string(key, out);
                out.push(':');
                go_json(&map[key], out);
            }
            out.push('}');
        }
    }
}

/// A float64 as Go's JSON encoder prints it: shortest round-trip digits, exponent form outside
/// [1e-6, 1e21) with the exponent's sign always shown.
fn go_number(f: f64) -> String {
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        return format!("{f}");
    }
    let text = format!("{f:e}");
    match text.split_once('e') {
        Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
        _ => text,
    }
}

fn go_string(s: &str, out: &mut String) {
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
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(v: Value) -> String {
        let mut s = String::new();
        go_json(&v, &mut s);
        s
    }

    #[test]
    fn json_is_sorted_and_html_safe() {
        let v = serde_json::json!({"b": "<&>", "a": ["\u{2028}\u{1}\n"], "c": 1.5e21});
        assert_eq!(
            encode(v),
            r#"{"a":["\u2028\u0001\n"],"b":"\u003c\u0026\u003e","c":1.5e+21}"#
        );
    }

    #[test]
    fn suffix_maps_five_hex_digits_to_letters() {
        assert_eq!(suffix(&[0x01, 0x23, 0x45, 0x6a, 0xef, 0xff]), "gh2k456mtf");
    }
}
