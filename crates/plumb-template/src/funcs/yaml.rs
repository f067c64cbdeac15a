//! `toYaml`: what flux-operator's `yaml.Marshal` (sigs.k8s.io/yaml) prints. That library
//! encodes to JSON and turns the JSON into YAML with `JSONToYAML`, as kustomize does for its
//! output, so this is plumb-yaml's writer (checked against the real kustomize) over the value's
//! JSON: go-yaml v2's key order and layout, strings quoted only when YAML 1.1 would read them
//! as something else, long lines folded at 80 columns, multi-line strings as literal blocks.

use crate::gofmt;
use crate::value::Value;

/// The YAML text of a value as sigs.k8s.io/yaml's `Marshal` (and `JSONToYAML`) prints it, or
/// the JSON encoder's error for a value JSON cannot hold (a NaN or infinite float).
///
/// ```
/// let v = plumb_template::Value::from(serde_json::json!({"b": [1, "on"], "a": {"c": ""}}));
/// assert_eq!(plumb_template::to_yaml(&v).unwrap(), "a:\n  c: \"\"\nb:\n- 1\n- \"on\"\n");
/// ```
pub fn to_yaml(v: &Value) -> Result<String, String> {
    check_json(v)?;
    Ok(plumb_yaml::write_document(&v.to_json()))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// go-yaml v2 (sigs.k8s.io/yaml) puts the non-letter first at a letter/non-letter
    /// difference even after a digit: `kustomize-ref` prints `1-`, `1b`, `a-`, `ab` for these.
    #[test]
    fn keys_in_go_yaml_v2_order() {
        let v = Value::from(serde_json::json!({"1b": 1, "1-": 2, "ab": 3, "a-": 4}));
        assert_eq!(to_yaml(&v).unwrap(), "1-: 2\n1b: 1\na-: 4\nab: 3\n");
    }
}
