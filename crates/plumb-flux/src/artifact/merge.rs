//! The Merge strategy: source-watcher's `mergeFileWithRoots`. Both files are read as a stream
//! of YAML documents through `sigs.k8s.io/yaml` (go-yaml v2, YAML 1.1, into JSON values), the
//! documents of each file merged into one map, the overlay merged into the base as Helm merges
//! values (maps recursively, anything else replaced: lists are not concatenated), and the
//! result written as `yaml.Marshal` writes a Go map (sorted keys; a whole float is an integer).

use serde_json::{Map, Value};
use std::path::Path;

/// `base` merged with `overlay`, as the text that replaces `base`.
pub fn merge_files(base: &Path, overlay: &Path) -> Result<String, String> {
    let mut merged = load(base)?;
    merge_map(&mut merged, load(overlay)?);
    let mut value = Value::Object(merged);
    normalize(&mut value);
    Ok(plumb_yaml::write_document(&value))
}

/// Every document of a file merged into one map (`loadYAML`).
fn load(path: &Path) -> Result<Map<String, Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let docs = plumb_yaml::parse_documents(path, &text)
        .map_err(|e| format!("error reading YAML document: {}", e.message))?;
    let mut out = Map::new();
    for doc in &docs {
        let value = crate::yaml_json::node_to_json(doc)
            .map_err(|e| format!("cannot unmarshal YAML document: {e}"))?;
        match value {
            Value::Object(map) => merge_map(&mut out, map),
            // An empty document leaves the map as it was.
            Value::Null => {}
            other => {
                return Err(format!(
                    "cannot unmarshal YAML document: error unmarshaling JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                    json_kind(&other)
                ))
            }
        }
    }
    Ok(out)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Null | Value::Object(_) => "object",
    }
}

/// Helm's values merge (`mergeMap`): a map in both merges recursively, anything else from
/// `overlay` replaces what `base` had, `null` included.
fn merge_map(base: &mut Map<String, Value>, overlay: Map<String, Value>) {
    for (k, v) in overlay {
        match (base.get_mut(&k), v) {
            (Some(Value::Object(existing)), Value::Object(o)) => merge_map(existing, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// What the value looks like after Go's round trip through `map[string]any`: keys sorted,
/// every number a float64 whose whole values print (and so read back) as integers.
fn normalize(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            for (k, mut v) in entries {
                normalize(&mut v);
                map.insert(k, v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        Value::Number(n) => {
            if let Some(f) = n.as_f64() {
                // encoding/json prints a float64 below 1e21 without an exponent, so a whole
                // one reads back as an integer; larger ones keep their exponent and stay floats.
                if f.fract() == 0.0 && f.abs() < 1e21 {
                    if let Ok(i) = format!("{f:.0}").parse::<i64>() {
                        *v = Value::from(i);
                    } else if let Ok(u) = format!("{f:.0}").parse::<u64>() {
                        *v = Value::from(u);
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(base: &str, overlay: &str) -> Result<String, String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), base).unwrap();
        std::fs::write(dir.path().join("b.yaml"), overlay).unwrap();
        merge_files(&dir.path().join("a.yaml"), &dir.path().join("b.yaml"))
    }

    #[test]
    fn maps_merge_lists_are_replaced_documents_fold_into_one() {
        assert_eq!(
            merged(
                "a: {x: 1, items: [1, 2]}\nb: keep\n",
                "a: {items: [3], z: 2}\n---\nc: new\n"
            )
            .unwrap(),
            "a:\n  items:\n  - 3\n  x: 1\n  z: 2\nb: keep\nc: new\n"
        );
    }

    #[test]
    fn values_are_read_as_yaml_1_1_and_whole_floats_become_integers() {
        assert_eq!(
            merged("enabled: yes\nratio: 1.0\n", "half: 0.5\nmode: on\n").unwrap(),
            "enabled: true\nhalf: 0.5\nmode: true\nratio: 1\n"
        );
    }

    #[test]
    fn a_file_that_is_not_a_map_is_an_error() {
        let e = merged("A=B\n", "a: b\n").unwrap_err();
        assert!(e.contains("cannot unmarshal YAML document"), "{e}");
        let e = merged("a: b\n", "- x\n").unwrap_err();
        assert!(e.contains("cannot unmarshal array"), "{e}");
    }
}
