//! JSON 6902 patches with the semantics of evanphx/json-patch v4, which kustomize uses: RFC 6901
//! pointers (`~0`, `~1`), `-` to append, negative array indices counted from the end, `replace`
//! of a missing object key adds it, `copy` of a missing key copies `null`; error messages are
//! worded as that library words them.

use crate::error::KustomizeError;
use plumb_yaml::resolve::{resolve, Resolved, Schema as YamlSchema};
use plumb_yaml::{Node, NodeKind};
use serde_json::{Map, Number, Value};
use std::ops::Range;

/// A decoded patch: a list of operations, each a JSON object (`op`, `path`, `from`, `value`).
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPatch {
    pub operations: Vec<Map<String, Value>>,
    /// Each operation's `value` node, when the patch was written as YAML: where the text of
    /// what an `add` or `replace` puts in the resource is.
    values: Vec<Option<Node>>,
}

/// Why a patch could not be decoded or applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PatchError(pub String);

impl From<PatchError> for KustomizeError {
    fn from(e: PatchError) -> KustomizeError {
        KustomizeError::Other(e.0)
    }
}

impl JsonPatch {
    /// Decodes a patch written as JSON (text starting with `[`) or as YAML, which is read as
    /// kustomize reads it: YAML 1.1 (`yes` is `true`) converted to JSON.
    pub fn parse(path: &str, text: &str) -> Result<JsonPatch, PatchError> {
        JsonPatch::parse_from(path, text, 0..text.len())
    }

    /// [`JsonPatch::parse`] of the part `within` of a text blank before it (from the start of
    /// a line), the rest of the text not read (see `plumb_yaml::parse_documents_from`).
    pub(crate) fn parse_from(
        path: &str,
        text: &str,
        within: Range<usize>,
    ) -> Result<JsonPatch, PatchError> {
        if text.is_empty() {
            return Err(PatchError("empty json patch operations".into()));
        }
        let value = if text.starts_with('[') {
            serde_json::from_str::<Value>(text).map_err(|e| PatchError(e.to_string()))?
        } else {
            let docs = plumb_yaml::parse_documents_from(path, text, within)
                .map_err(|e| PatchError(e.to_string()))?;
            match docs.into_iter().next() {
                Some(doc) => {
                    let value = yaml11_to_json(&doc)?;
                    let mut patch = JsonPatch::from_value(value)?;
                    if let Some(ops) = doc.as_sequence() {
                        patch.values = ops.iter().map(|op| op.get("value").cloned()).collect();
                    }
                    return Ok(patch);
                }
                None => Value::Null,
            }
        };
        JsonPatch::from_value(value)
    }

    /// A patch from its JSON value, which must be a list of objects.
    pub fn from_value(value: Value) -> Result<JsonPatch, PatchError> {
        match value {
            Value::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    Value::Object(op) => Ok(op),
                    other => Err(PatchError(format!(
                        "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                        go_json_type(&other)
                    ))),
                })
                .collect::<Result<_, _>>()
                .map(|operations| JsonPatch {
                    operations,
                    values: Vec::new(),
                }),
            Value::Null => Ok(JsonPatch {
                operations: Vec::new(),
                values: Vec::new(),
            }),
            other => Err(PatchError(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                go_json_type(&other)
            ))),
        }
    }

    /// Applies every operation in order to `doc`.
    pub fn apply(&self, doc: &mut Value) -> Result<(), PatchError> {
        for op in &self.operations {
            apply_operation(doc, op)?;
        }
        Ok(())
    }

    /// Applies the patch to a resource node. The patched node is made anew from JSON, as
    /// kustomize does; the parts the patch left as they were keep their source positions.
    pub fn apply_to_node(&self, node: &Node) -> Result<Node, KustomizeError> {
        let mut doc = plumb_yaml::to_json(node)?;
        self.apply(&mut doc)?;
        let mut patched = rebuilt(&doc, node, true, false);
        // The patched resource is the same object, whose text starts where it did.
        if patched.span.is_none() {
            patched.span = node.span.clone();
        }
        for (op, value) in self.operations.iter().zip(&self.values) {
            let (Some(value), Some(Value::String(path))) = (value, op.get("path")) else {
                continue;
            };
            let adds = matches!(
                op.get("op").and_then(Value::as_str),
                Some("add" | "replace")
            );
            // Only where the value still stands as written (a later operation may change it).
            if adds && doc.pointer(path) == op.get("value") {
                if let Some(target) = node_at_pointer(&mut patched, path) {
                    take_positions(target, value);
                }
            }
        }
        Ok(patched)
    }
}

/// The node at an RFC 6901 pointer of plain keys and indices (not `-`, not negative).
fn node_at_pointer<'n>(node: &'n mut Node, pointer: &str) -> Option<&'n mut Node> {
    let mut node = node;
    for part in pointer.split('/').skip(1) {
        let key = decode_key(part);
        node = match &mut node.kind {
            NodeKind::Mapping(entries) => entries
                .iter_mut()
                .find(|(k, _)| k.scalar_value() == Some(key.as_str()))
                .map(|(_, v)| v)?,
            NodeKind::Sequence(items) => items.get_mut(key.parse::<usize>().ok()?)?,
            NodeKind::Scalar(_) => return None,
        };
    }
    Some(node)
}

/// Gives `node`, made from the JSON of `from`, the spans of `from`'s text.
fn take_positions(node: &mut Node, from: &Node) {
    node.span.clone_from(&from.span);
    match &mut node.kind {
        NodeKind::Mapping(entries) => {
            for (key, value) in entries.iter_mut() {
                let Some(name) = key.scalar_value() else {
                    continue;
                };
                if let (Some(k), Some(v)) = (from.get_key(name), from.get(name)) {
                    key.span.clone_from(&k.span);
                    take_positions(value, v);
                }
            }
        }
        NodeKind::Sequence(items) => {
            if let Some(from_items) = from.as_sequence() {
                for (item, f) in items.iter_mut().zip(from_items) {
                    take_positions(item, f);
                }
            }
        }
        NodeKind::Scalar(_) => {}
    }
}

/// The node [`plumb_yaml::from_json`] makes of `new`, the JSON of `old` once patched, with the
/// spans `old` has where the value is as it was, so that a diagnostic about those parts still
/// points at their text. A part the patch changed, and every collection above it, has no span:
/// no text holds what it became. List items are paired by index only when the patch kept the
/// list's length. `known_equal` says the parts are equal (their parent was): a part of an
/// equal whole is not compared again, which made the walk quadratic in the depth. `root`: `old`
/// is the document, whose keys are read as written. Made in one walk, comparing with `old`
/// itself rather than with a copy of its JSON kept from before the patch.
fn rebuilt(new: &Value, old: &Node, root: bool, known_equal: bool) -> Node {
    let equal = known_equal || plumb_yaml::json::equals_json(old, new, root);
    let mut node = match (new, &old.kind) {
        (Value::Object(map), NodeKind::Mapping(old_entries)) => {
            Node::new(NodeKind::Mapping(
                map.iter()
                    .map(|(name, value)| {
                        let mut key = Node::string(name.as_str());
                        // The entry of that key in `old`, if its JSON has the key too: that
                        // entry's own key, nearly always, or (written otherwise) another's.
                        let is_name = |k: &Node| {
                            plumb_yaml::json::json_key(k, root).is_some_and(|k| k == *name)
                        };
                        let kept = old_entries
                            .iter()
                            .find(|(k, _)| k.scalar_value() == Some(name.as_str()))
                            .filter(|(k, _)| {
                                is_name(k) || old_entries.iter().any(|(k, _)| is_name(k))
                            });
                        let value = match kept {
                            Some((old_key, old_value)) => {
                                key.span.clone_from(&old_key.span);
                                rebuilt(value, old_value, false, equal)
                            }
                            None => plumb_yaml::from_json(value),
                        };
                        (key, value)
                    })
                    .collect(),
            ))
        }
        (Value::Array(items), NodeKind::Sequence(old_items)) if items.len() == old_items.len() => {
            Node::sequence(
                items
                    .iter()
                    .zip(old_items)
                    .map(|(item, old_item)| rebuilt(item, old_item, false, equal))
                    .collect(),
            )
        }
        _ => plumb_yaml::from_json(new),
    };
    if equal {
        node.span.clone_from(&old.span);
    }
    node
}

fn go_json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A YAML node as sigs.k8s.io/yaml's `YAMLToJSON` converts it (YAML 1.1 scalars, keys made
/// strings).
pub fn yaml11_to_json(node: &Node) -> Result<Value, PatchError> {
    Ok(match &node.kind {
        NodeKind::Scalar(s) => {
            let resolved = resolve(s, YamlSchema::Yaml11).map_err(|e| PatchError(e.to_string()))?;
            match resolved {
                Resolved::Null => Value::Null,
                Resolved::Bool(b) => Value::Bool(b),
                Resolved::Int(i) => Value::Number(i.into()),
                Resolved::Uint(u) => Value::Number(u.into()),
                Resolved::Float(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
                Resolved::Str(t) => Value::String(t.into_owned()),
                Resolved::Timestamp(_) => Value::String(s.value.to_string()),
            }
        }
        NodeKind::Sequence(items) => {
            Value::Array(items.iter().map(yaml11_to_json).collect::<Result<_, _>>()?)
        }
        NodeKind::Mapping(entries) => {
            let mut map = Map::new();
            for (k, v) in entries {
                let key = match yaml11_to_json(k)? {
                    Value::String(s) => s,
                    Value::Null => "null".into(),
                    other => other.to_string(),
                };
                map.insert(key, yaml11_to_json(v)?);
            }
            Value::Object(map)
        }
    })
}

const MISSING: &str = "missing value";
const INVALID_INDEX: &str = "invalid index referenced";

fn err(message: String) -> PatchError {
    PatchError(message)
}

fn field<'a>(op: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    op.get(name)
}

fn string_field(
    op: &Map<String, Value>,
    name: &str,
    verb: &str,
    decode: &str,
) -> Result<String, PatchError> {
    match field(op, name) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Null) | None => Err(err(format!(
            "{verb} operation failed to decode {decode}: operation missing {name} field: {MISSING}"
        ))),
        Some(other) => Err(err(format!(
            "{verb} operation failed to decode {decode}: json: cannot unmarshal {} into Go value of type string",
            go_json_type(other)
        ))),
    }
}

/// `~1` is `/` and `~0` is `~`, read left to right.
fn decode_key(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    let mut chars = part.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.peek() {
                Some('1') => {
                    chars.next();
                    out.push('/');
                    continue;
                }
                Some('0') => {
                    chars.next();
                    out.push('~');
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

/// Go's `strconv.Atoi`, with its error text.
fn atoi(key: &str) -> Result<i64, String> {
    let digits = key.strip_prefix(['+', '-']).unwrap_or(key);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.Atoi: parsing {key:?}: invalid syntax"));
    }
    key.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {key:?}: value out of range"))
}

/// The container holding the last part of `path` and that part, decoded (evanphx's
/// `findObject`); `None` when the path does not lead to an object or array.
fn find_container<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let split: Vec<&str> = path.split('/').collect();
    if split.len() < 2 {
        return None;
    }
    let key = decode_key(split[split.len() - 1]);
    let mut current = doc;
    for part in &split[1..split.len() - 1] {
        let part = decode_key(part);
        let next = match current {
            Value::Object(map) => map.get_mut(&part)?,
            Value::Array(items) => {
                let i = array_index(items.len(), &part).ok()?;
                items.get_mut(i)?
            }
            _ => return None,
        };
        if !matches!(next, Value::Object(_) | Value::Array(_)) {
            return None;
        }
        current = next;
    }
    Some((current, key))
}

/// An index into an array of `len` elements, negative counting from the end.
fn array_index(len: usize, key: &str) -> Result<usize, String> {
    let idx = atoi(key)?;
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let idx = if idx < 0 {
        if idx < -len {
            return Err(format!(
                "Unable to access invalid index: {idx}: {INVALID_INDEX}"
            ));
        }
        idx + len
    } else {
        idx
    };
    if idx >= len {
        return Err(format!(
            "Unable to access invalid index: {idx}: {INVALID_INDEX}"
        ));
    }
    usize::try_from(idx)
        .map_err(|_| format!("Unable to access invalid index: {idx}: {INVALID_INDEX}"))
}

/// The value at `key` of a container; `Ok(None)` for an object without the key.
fn get(container: &Value, key: &str) -> Result<Option<Value>, String> {
    match container {
        Value::Object(map) => Ok(map.get(key).cloned()),
        Value::Array(items) => {
            let i = array_index(items.len(), key)?;
            Ok(items.get(i).cloned())
        }
        _ => Ok(None),
    }
}

fn add(container: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match container {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(items) => {
            if key == "-" {
                items.push(value);
                return Ok(());
            }
            let idx = atoi(key)
                .map_err(|e| format!("value was not a proper array index: '{key}': {e}"))?;
            let size = i64::try_from(items.len()).unwrap_or(i64::MAX) + 1;
            if idx >= size {
                return Err(format!(
                    "Unable to access invalid index: {idx}: {INVALID_INDEX}"
                ));
            }
            let idx = if idx < 0 {
                if idx < -size {
                    return Err(format!(
                        "Unable to access invalid index: {idx}: {INVALID_INDEX}"
                    ));
                }
                idx + size
            } else {
                idx
            };
            let idx = usize::try_from(idx).unwrap_or(items.len());
            items.insert(idx.min(items.len()), value);
            Ok(())
        }
        _ => Ok(()),
    }
}

fn set(container: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match container {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(items) => {
            let i = array_index(items.len(), key)?;
            items[i] = value;
            Ok(())
        }
        _ => Ok(()),
    }
}

fn remove(container: &mut Value, key: &str) -> Result<(), String> {
    match container {
        Value::Object(map) => {
            if map.shift_remove(key).is_none() {
                return Err(format!(
                    "Unable to remove nonexistent key: {key}: {MISSING}"
                ));
            }
            Ok(())
        }
        Value::Array(items) => {
            let i = array_index(items.len(), key)?;
            items.remove(i);
            Ok(())
        }
        _ => Ok(()),
    }
}

fn apply_operation(doc: &mut Value, op: &Map<String, Value>) -> Result<(), PatchError> {
    let kind = match field(op, "op") {
        Some(Value::String(s)) => s.as_str(),
        _ => "unknown",
    };
    let value = field(op, "value").cloned();
    match kind {
        "add" => {
            let path = string_field(op, "path", "add", "path")?;
            let Some((container, key)) = find_container(doc, &path) else {
                return Err(err(format!(
                    "add operation does not apply: doc is missing path: \"{path}\": {MISSING}"
                )));
            };
            add(container, &key, value.unwrap_or(Value::Null))
                .map_err(|e| err(format!("error in add for path: '{path}': {e}")))
        }
        "remove" => {
            let path = string_field(op, "path", "remove", "path")?;
            let Some((container, key)) = find_container(doc, &path) else {
                return Err(err(format!(
                    "remove operation does not apply: doc is missing path: \"{path}\": {MISSING}"
                )));
            };
            remove(container, &key)
                .map_err(|e| err(format!("error in remove for path: '{path}': {e}")))
        }
        "replace" => {
            let path = string_field(op, "path", "replace", "path")?;
            if path.is_empty() {
                // evanphx wraps a nil error here, so a scalar value is silently ignored.
                if let Some(v @ (Value::Object(_) | Value::Array(_))) = value {
                    *doc = v;
                }
                return Ok(());
            }
            let Some((container, key)) = find_container(doc, &path) else {
                return Err(err(format!(
                    "replace operation does not apply: doc is missing path: {path}: {MISSING}"
                )));
            };
            if get(container, &key).is_err() {
                return Err(err(format!(
                    "replace operation does not apply: doc is missing key: {path}: {MISSING}"
                )));
            }
            set(container, &key, value.unwrap_or(Value::Null))
                .map_err(|e| err(format!("error in remove for path: '{path}': {e}")))
        }
        "move" => {
            let from = string_field(op, "from", "move", "from")?;
            let Some((container, key)) = find_container(doc, &from) else {
                return Err(err(format!(
                    "move operation does not apply: doc is missing from path: {from}: {MISSING}"
                )));
            };
            let moved = get(container, &key)
                .map_err(|e| err(format!("error in move for path: '{key}': {e}")))?;
            remove(container, &key)
                .map_err(|e| err(format!("error in move for path: '{key}': {e}")))?;
            let path = string_field(op, "path", "move", "path")?;
            let Some((container, key)) = find_container(doc, &path) else {
                return Err(err(format!(
                    "move operation does not apply: doc is missing destination path: {path}: {MISSING}"
                )));
            };
            add(container, &key, moved.unwrap_or(Value::Null))
                .map_err(|e| err(format!("error in move for path: '{path}': {e}")))
        }
        "copy" => {
            let from = string_field(op, "from", "copy", "from")?;
            let Some((container, key)) = find_container(doc, &from) else {
                return Err(err(format!(
                    "copy operation does not apply: doc is missing from path: {from}: {MISSING}"
                )));
            };
            let copied = get(container, &key)
                .map_err(|e| err(format!("error in copy for from: '{from}': {e}")))?;
            let path = string_field(op, "path", "copy", "path")?;
            let Some((container, key)) = find_container(doc, &path) else {
                return Err(err(format!(
                    "copy operation does not apply: doc is missing destination path: {path}: {MISSING}"
                )));
            };
            add(container, &key, copied.unwrap_or(Value::Null))
                .map_err(|e| err(format!("error in copy for path: '{path}': {e}")))
        }
        "test" => {
            let path = string_field(op, "path", "test", "path")?;
            let failed = || err(format!("testing value {path} failed: test failed"));
            if path.is_empty() {
                return if value.as_ref() == Some(&*doc) {
                    Ok(())
                } else {
                    Err(failed())
                };
            }
            let Some((container, key)) = find_container(doc, &path) else {
                return Err(err(format!(
                    "test operation does not apply: is missing path: {path}: {MISSING}"
                )));
            };
            let actual = get(container, &key)
                .map_err(|e| err(format!("error in test for path: '{path}': {e}")))?;
            match (actual, value) {
                (None, None) => Ok(()),
                (Some(a), Some(v)) if a == v => Ok(()),
                _ => Err(failed()),
            }
        }
        other => Err(err(format!("Unexpected kind: {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(doc: Value, patch: &str) -> Result<Value, String> {
        let mut doc = doc;
        JsonPatch::parse("p.json", patch)
            .and_then(|p| p.apply(&mut doc))
            .map(|()| doc)
            .map_err(|e| e.0)
    }

    #[test]
    fn what_the_patch_left_keeps_its_position() {
        let text = "kind: Deployment\nspec:\n  containers:\n    - name: app\n      image: app:1\n    - name: sidecar\n      image: sidecar:1\n";
        let node = plumb_yaml::parse_documents("d.yaml", text)
            .unwrap()
            .remove(0);
        let patch = JsonPatch::parse(
            "p.yaml",
            "- op: replace\n  path: /spec/containers/1/image\n  value: sidecar:2\n",
        )
        .unwrap();
        let patched = patch.apply_to_node(&node).unwrap();
        let line = |path: &[&str]| {
            let mut n = &patched;
            for step in path {
                n = match step.parse::<usize>() {
                    Ok(i) => &n.as_sequence().unwrap()[i],
                    Err(_) => n.get(step).unwrap(),
                };
            }
            n.span.as_ref().map(|s| s.location().line)
        };
        assert_eq!(line(&["kind"]), Some(1));
        assert_eq!(line(&["spec", "containers", "0"]), Some(4));
        assert_eq!(line(&["spec", "containers", "0", "image"]), Some(5));
        assert_eq!(line(&["spec", "containers", "1", "name"]), Some(6));
        // What the patch put there is the patch's text; what holds it is written nowhere.
        let value = patched
            .get_path(&["spec", "containers"])
            .unwrap()
            .as_sequence()
            .unwrap()[1]
            .get("image")
            .and_then(|n| n.span.as_ref())
            .map(|s| (s.file.path().display().to_string(), s.location().line));
        assert_eq!(value, Some(("p.yaml".to_string(), 3)));
        assert_eq!(line(&["spec", "containers", "1"]), None);
        assert_eq!(line(&["spec"]), None);
        let containers = patched.get_path(&["spec", "containers"]).unwrap();
        assert_eq!(
            containers.as_sequence().unwrap()[1].str_at(&["image"]),
            Some("sidecar:2")
        );
    }

    #[test]
    fn pointer_escapes() {
        assert_eq!(decode_key("a~1b~0c"), "a/b~c");
        assert_eq!(decode_key("~01"), "~1");
    }

    #[test]
    fn negative_indices() {
        let doc = json!({"l": ["a", "b", "c"]});
        assert_eq!(
            run(doc.clone(), r#"[{"op":"add","path":"/l/-1","value":"x"}]"#).unwrap(),
            json!({"l": ["a", "b", "c", "x"]})
        );
        assert_eq!(
            run(doc.clone(), r#"[{"op":"add","path":"/l/-4","value":"x"}]"#).unwrap(),
            json!({"l": ["x", "a", "b", "c"]})
        );
        assert_eq!(
            run(doc.clone(), r#"[{"op":"add","path":"/l/-5","value":"x"}]"#).unwrap_err(),
            "error in add for path: '/l/-5': Unable to access invalid index: -5: invalid index referenced"
        );
        assert_eq!(
            run(doc, r#"[{"op":"remove","path":"/l/-1"}]"#).unwrap(),
            json!({"l": ["a", "b"]})
        );
    }
}
