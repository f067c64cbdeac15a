//! The YAML→JSON step of postBuild: kustomize-controller reads the substituted text back with
//! `sigs.k8s.io/yaml.YAMLToJSON`, which is go-yaml v2 (YAML 1.1) decoding into `interface{}`.
//!
//! That is where substitution changes types: an unquoted `${REPLICAS}` that became `3` is now a
//! number, `yes` a boolean, an empty value `null`; a mapping key `on` becomes the string
//! `"true"`. Timestamps stay strings (go-yaml v2 keeps them as text in an `interface{}`).

use plumb_yaml::resolve::{resolve, Resolved, Schema};
use plumb_yaml::{Node, NodeKind, Scalar, ScalarStyle};
use serde_json::{Map, Number, Value};

/// Why a substituted text is not valid YAML or JSON any more.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("YAMLToJSON: {0}")]
pub struct YamlToJsonError(pub String);

/// Reads one substituted document as kustomize-controller does.
pub fn yaml_to_json(text: &str) -> Result<Value, YamlToJsonError> {
    let docs = plumb_yaml::parse_documents("<substituted>", text)
        .map_err(|e| YamlToJsonError(format!("line {}: {}", e.location.line, e.message)))?;
    // YAMLToJSON reads the first document only.
    match docs.into_iter().next() {
        Some(doc) => convert(&doc),
        None => Ok(Value::Null),
    }
}

/// One parsed document as `sigs.k8s.io/yaml.Unmarshal` reads it into a Go value.
pub fn node_to_json(node: &Node) -> Result<Value, YamlToJsonError> {
    convert(node)
}

fn convert(node: &Node) -> Result<Value, YamlToJsonError> {
    match &node.kind {
        NodeKind::Scalar(s) => scalar_json(s),
        NodeKind::Sequence(items) => Ok(Value::Array(
            items.iter().map(convert).collect::<Result<_, _>>()?,
        )),
        NodeKind::Mapping(entries) => {
            let mut map = Map::with_capacity(entries.len());
            for (k, v) in entries {
                let key = key_string(k)?;
                // go-yaml v2 (not strict) lets a repeated key overwrite the earlier one.
                map.insert(key, convert(v)?);
            }
            Ok(Value::Object(map))
        }
    }
}

/// A plain scalar whose text is exactly `text` (see [`plumb_yaml::emit::reads_as_plain`]), as
/// reading `key: text` back gives its value: without parsing the line again.
pub fn plain_scalar_json(text: &str) -> Result<Value, YamlToJsonError> {
    scalar_json(&Scalar {
        value: text.into(),
        style: ScalarStyle::Plain,
        tag: None,
    })
}

fn scalar_json(s: &Scalar) -> Result<Value, YamlToJsonError> {
    let resolved = resolve(s, Schema::Yaml11).map_err(|e| YamlToJsonError(e.to_string()))?;
    Ok(match resolved {
        Resolved::Null => Value::Null,
        Resolved::Bool(b) => Value::Bool(b),
        Resolved::Int(i) => Value::Number(i.into()),
        Resolved::Uint(u) => Value::Number(u.into()),
        Resolved::Float(f) => match Number::from_f64(f) {
            Some(n) => Value::Number(n),
            None => {
                return Err(YamlToJsonError(format!(
                    "json: unsupported value: {}",
                    s.value
                )))
            }
        },
        Resolved::Str(text) => Value::String(text.into_owned()),
        // go-yaml v2 hands a timestamp to an interface{} as its text.
        Resolved::Timestamp(_) => Value::String(s.value.to_string()),
    })
}

/// How `YAMLToJSON` turns a decoded key into a JSON object key.
fn key_string(key: &Node) -> Result<String, YamlToJsonError> {
    let Some(s) = key.as_scalar() else {
        return Err(YamlToJsonError(
            "unsupported map key: a key must be a scalar".into(),
        ));
    };
    let resolved = resolve(s, Schema::Yaml11).map_err(|e| YamlToJsonError(e.to_string()))?;
    Ok(match resolved {
        Resolved::Str(text) => text.into_owned(),
        Resolved::Bool(b) => b.to_string(),
        Resolved::Int(i) => i.to_string(),
        Resolved::Uint(u) => u.to_string(),
        // strconv.FormatFloat(f, 'g', -1, 32), with go-yaml's spellings of the specials.
        Resolved::Float(f) if f.is_nan() => ".nan".into(),
        Resolved::Float(f) if f.is_infinite() => if f > 0.0 { ".inf" } else { "-.inf" }.into(),
        Resolved::Float(f) => format_g32(f),
        Resolved::Timestamp(_) => s.value.to_string(),
        Resolved::Null => {
            return Err(YamlToJsonError(format!(
                "unsupported map key of type: <nil>, key: {:?}",
                s.value
            )))
        }
    })
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`: the shortest digits that read back as the same
/// float32; exponent form when the exponent is below -4 or at least 6.
fn format_g32(f: f64) -> String {
    let f32v = f as f32;
    if f32v == 0.0 {
        return "0".into();
    }
    let sci = format!("{:e}", f32v.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if f32v < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let mut m = digits[..1].to_string();
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{esign}{:02}", exp.abs())
    } else if exp < 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize))
    } else if exp as usize + 1 >= digits.len() {
        format!(
            "{sign}{digits}{}",
            "0".repeat(exp as usize + 1 - digits.len())
        )
    } else {
        let (int, frac) = digits.split_at(exp as usize + 1);
        format!("{sign}{int}.{frac}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn substituted_values_change_type() {
        let v = yaml_to_json(
            "replicas: 3\nenabled: yes\nempty:\nversion: 1.10\nquoted: \"3\"\non: x\ndate: 2024-01-02\n",
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"replicas": 3, "enabled": true, "empty": null, "version": 1.1,
                   "quoted": "3", "true": "x", "date": "2024-01-02"})
        );
    }

    #[test]
    fn keys_of_other_types_become_strings() {
        let v = yaml_to_json("1: a\n0x10: b\nno: c\n1.5: d\n").unwrap();
        assert_eq!(v, json!({"1": "a", "16": "b", "false": "c", "1.5": "d"}));
        assert_eq!(format_g32(1e7), "1e+07");
        assert_eq!(format_g32(0.25), "0.25");
        assert_eq!(format_g32(120.0), "120");
        assert!(yaml_to_json("~: a\n").is_err());
        assert!(yaml_to_json("a: [b\n").is_err());
    }

    /// Every text `reads_as_plain` accepts, up to three characters from an alphabet of YAML's
    /// indicators, spaces, digits and the letters of its words, and a list of numbers, booleans
    /// and timestamps: read without parsing, as parsing `v: text` reads it (or failing where it
    /// fails).
    #[test]
    fn plain_scalars_read_as_parsing_them_does() {
        let alphabet: Vec<char> = " \t:#-?{}[],&*!|>'\"%@`~.+_0159eEnNoOxXyYtTrRuUfFlLsSa"
            .chars()
            .collect();
        let mut texts: Vec<String> = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..3 {
            let next: Vec<String> = last
                .iter()
                .flat_map(|t| alphabet.iter().map(move |c| format!("{t}{c}")))
                .collect();
            texts.extend(next.iter().cloned());
            last = next;
        }
        for t in [
            "0x1F",
            "0o17",
            "017",
            "1_000",
            "1e3",
            "-1.5e-3",
            ".inf",
            "-.Inf",
            ".nan",
            "NaN",
            "1:30",
            "190:20:30",
            "2024-01-02",
            "2024-01-02T10:00:00Z",
            "2001-12-14 21:59:43.10 -5",
            "true",
            "True",
            "TRUE",
            "yes",
            "On",
            "off",
            "null",
            "Null",
            "~",
            "y",
            "n",
            "9223372036854775807",
            "9223372036854775808",
            "18446744073709551616",
            "1e400",
            "a b",
            "a: b",
            "a #b",
            "a#b",
            "-a",
            "- a",
            "?a",
            "0.",
            "+1",
            "+.5",
            "._",
            "1__0",
        ] {
            texts.push(t.to_string());
        }
        let mut checked = 0;
        for text in texts.iter().filter(|t| plumb_yaml::emit::reads_as_plain(t)) {
            let parsed = yaml_to_json(&format!("v: {text}\n"));
            let direct = plain_scalar_json(text);
            match parsed {
                Ok(Value::Object(map)) if map.len() == 1 => {
                    assert_eq!(Ok(&map["v"]), direct.as_ref(), "{text:?}");
                }
                // A value JSON cannot hold (`.inf`): both fail, and the text decides.
                Err(_) => assert!(direct.is_err(), "{text:?}: {direct:?}"),
                other => panic!("{text:?} reads as plain, but `v: {text}` gave {other:?}"),
            }
            checked += 1;
        }
        assert!(checked > 10_000, "only {checked} texts checked");
    }
}
