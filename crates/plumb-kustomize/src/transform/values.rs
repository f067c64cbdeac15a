//! Typed reads of the kustomization fields the builtin transformers take (maps of strings,
//! lists of small objects). kustomize decodes these through JSON into Go types, so a value of
//! the wrong type is an error worded like Go's `encoding/json` one, which this module repeats
//! with the file and line.

use crate::error::KustomizeError;
use crate::kustomization::{invalid, Kustomization};
use plumb_yaml::resolve::{resolve, Resolved, Schema};
use plumb_yaml::{Node, NodeKind};

/// What Go's JSON decoder calls a value's type in its errors.
pub(crate) fn json_type(node: &Node) -> &'static str {
    match &node.kind {
        NodeKind::Mapping(_) => "object",
        NodeKind::Sequence(_) => "array",
        // kustomization files are read as YAML 1.1 (`yes` is a bool).
        NodeKind::Scalar(s) => match resolve(s, Schema::Yaml11) {
            Ok(Resolved::Bool(_)) => "bool",
            Ok(Resolved::Int(_) | Resolved::Uint(_) | Resolved::Float(_)) => "number",
            Ok(Resolved::Null) => "null",
            _ => "string",
        },
    }
}

pub(crate) fn type_error(
    k: &Kustomization,
    node: &Node,
    field: &str,
    want: &str,
) -> KustomizeError {
    invalid(
        &k.path,
        node,
        format!(
            "json: cannot unmarshal {} into Go struct field Kustomization.{field} of type {want}",
            json_type(node)
        ),
    )
}

/// A string-typed value at `field` (a dotted path, for messages); null reads as empty.
pub fn string(k: &Kustomization, node: &Node, field: &str) -> Result<String, KustomizeError> {
    match json_type(node) {
        "string" => Ok(node.scalar_value().unwrap_or("").to_string()),
        "null" => Ok(String::new()),
        _ => Err(type_error(k, node, field, "string")),
    }
}

/// A bool-typed value; null reads as false.
pub fn boolean(k: &Kustomization, node: &Node, field: &str) -> Result<bool, KustomizeError> {
    match (json_type(node), &node.kind) {
        ("bool", NodeKind::Scalar(s)) => Ok(matches!(
            resolve(s, Schema::Yaml11),
            Ok(Resolved::Bool(true))
        )),
        ("null", _) => Ok(false),
        _ => Err(type_error(k, node, field, "bool")),
    }
}

/// An int64-typed value; null reads as 0.
pub fn int64(k: &Kustomization, node: &Node, field: &str) -> Result<i64, KustomizeError> {
    if let NodeKind::Scalar(s) = &node.kind {
        match resolve(s, Schema::Yaml11) {
            Ok(Resolved::Int(i)) => return Ok(i),
            Ok(Resolved::Null) => return Ok(0),
            _ => {}
        }
    }
    Err(type_error(k, node, field, "int64"))
}

/// A `map[string]string` at `field`: the entries in file order.
pub fn string_map(
    k: &Kustomization,
    node: &Node,
    field: &str,
) -> Result<Vec<(String, String)>, KustomizeError> {
    if node.is_null() {
        return Ok(Vec::new());
    }
    let Some(entries) = node.as_mapping() else {
        return Err(type_error(k, node, field, "map[string]string"));
    };
    entries
        .iter()
        .map(|(key, value)| {
            let key = key.scalar_value().unwrap_or("").to_string();
            let value = string(k, value, &format!("{field}.{key}"))?;
            Ok((key, value))
        })
        .collect()
}

/// The kustomization's list at `field` (empty when absent or null), each item a mapping.
pub fn object_list<'k>(
    k: &'k Kustomization,
    field: &str,
    go_type: &str,
) -> Result<Vec<&'k Node>, KustomizeError> {
    let Some(node) = k.field(field) else {
        return Ok(Vec::new());
    };
    let Some(items) = node.as_sequence() else {
        return Err(type_error(k, node, field, &format!("[]{go_type}")));
    };
    items
        .iter()
        .enumerate()
        .filter(|(_, item)| !item.is_null())
        .map(|(i, item)| {
            if item.is_mapping() {
                Ok(item)
            } else {
                Err(type_error(k, item, &format!("{field}.{i}"), go_type))
            }
        })
        .collect()
}

/// Refuses a key outside `known` in a list item, as kustomize's strict decoding does.
pub fn known_keys(k: &Kustomization, item: &Node, known: &[&str]) -> Result<(), KustomizeError> {
    for (key, _) in item.as_mapping().into_iter().flatten() {
        let name = key.scalar_value().unwrap_or("");
        if !known.contains(&name) {
            return Err(invalid(
                &k.path,
                key,
                format!("json: unknown field {name:?}"),
            ));
        }
    }
    Ok(())
}
