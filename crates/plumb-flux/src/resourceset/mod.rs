//! flux-operator's ResourceSets (`fluxcd.controlplane.io/v1`), expanded as the operator
//! expands them (its `internal/builder/resourceset.go` and `internal/inputs`): the input sets
//! from `spec.inputs` and the `inputsFrom` providers, combined by the `Flatten` or `Permute`
//! strategy, each executed through every `spec.resources` entry and `spec.resourcesTemplate`
//! (or each step's), deduplicated, then `commonMetadata` and the operator's owner labels set.
//!
//! A ResourceSetInputProvider of type `Static` gives its `spec.defaultValues` (with the `id`
//! the operator's CLI computes from its name: in a cluster it is computed from the object's
//! UID, which no repository holds); any other type gives its `status.exportedInputs` when the
//! repository holds them, else its inputs are unknown and the ResourceSet is not expanded,
//! with a warning saying so.

use crate::diagnostic::{Code, Diagnostic};
use crate::model::Object;
use crate::sync::OPERATOR_GROUP;
use plumb_template::{Options, Template, Value as TValue};
use plumb_yaml::Node;
use serde_json::{json, Map, Value};
use std::collections::HashSet;

pub mod depends_on;

/// The annotation that excludes a generated object (`disabled`), or the whole ResourceSet.
const RECONCILE_ANNOTATION: &str = "fluxcd.controlplane.io/reconcile";
/// The operator's limit on the input sets `Permute` may produce.
const MAX_PERMUTATIONS: usize = 10_000;

/// Expands every ResourceSet among `objects` and appends what each generates; providers are
/// looked up among `objects` (the same Kustomization's output). A failure is a diagnostic at
/// the ResourceSet's file and line, and that ResourceSet generates nothing.
pub fn expand_all(objects: &mut Vec<Object>, diagnostics: &mut Vec<Diagnostic>) {
    if !objects.iter().any(|o| o.is(OPERATOR_GROUP, "ResourceSet")) {
        return;
    }
    let providers: Vec<&Object> = objects
        .iter()
        .filter(|o| o.is(OPERATOR_GROUP, "ResourceSetInputProvider"))
        .collect();
    let mut generated = Vec::new();
    for rset in objects
        .iter()
        .filter(|o| o.is(OPERATOR_GROUP, "ResourceSet"))
    {
        match expand(rset, &providers) {
            Ok(Expanded::Objects(values)) => {
                generated.extend(values.into_iter().map(|value| Object {
                    value,
                    origin: None,
                }))
            }
            Ok(Expanded::Skipped(why)) => diagnostics.push(
                Diagnostic::warning(
                    Code::ResourceSetNotExpanded,
                    format!("{}: not expanded: {why}", describe(rset)),
                )
                .at(rset.node_at(&["spec"])),
            ),
            Ok(Expanded::Disabled) => {}
            Err(d) => diagnostics.push(d),
        }
    }
    objects.extend(generated);
}

/// What expanding one ResourceSet gave.
#[derive(Debug)]
pub enum Expanded {
    /// The objects it generates, in the operator's order.
    Objects(Vec<Value>),
    /// Its inputs are not known here (why).
    Skipped(String),
    /// `fluxcd.controlplane.io/reconcile: disabled`: the operator does not reconcile it.
    Disabled,
}

/// Expands one ResourceSet with the ResourceSetInputProviders given (those of other
/// namespaces are ignored, as the operator ignores them).
pub fn expand(rset: &Object, providers: &[&Object]) -> Result<Expanded, Diagnostic> {
    if !is_reconciled(rset) {
        return Ok(Expanded::Disabled);
    }
    let spec = &rset.value["spec"];
    let fail = |path: &[&str], message: String| {
        Diagnostic::error(
            Code::ResourceSetFailed,
            format!("{}: {message}", describe(rset)),
        )
        .at(rset.node_at(path))
    };
    let inputs = match combined_inputs(rset, providers) {
        Ok(Ok(inputs)) => inputs,
        Ok(Err(skipped)) => return Ok(Expanded::Skipped(skipped)),
        Err(message) => return Err(fail(&["spec", "inputsFrom"], message)),
    };
    let steps = spec.get("steps").and_then(Value::as_array);
    let has_own = spec.get("resources").is_some_and(|r| r != &json!([]))
        || spec
            .get("resourcesTemplate")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty());
    let mut objects = Vec::new();
    match steps.filter(|s| !s.is_empty()) {
        Some(_) if has_own => {
            return Err(fail(
                &["spec", "steps"],
                "spec.steps is mutually exclusive with spec.resources and spec.resourcesTemplate"
                    .into(),
            ))
        }
        Some(steps) => {
            let mut step_of: Vec<(String, String)> = Vec::new();
            for (i, step) in steps.iter().enumerate() {
                let name = step["name"].as_str().unwrap_or("").to_string();
                let node = rset
                    .node_at(&["spec", "steps"])
                    .and_then(|n| n.as_sequence())
                    .and_then(|s| s.get(i));
                let built = build(rset, step, node, &inputs)
                    .map_err(|d| d.with_help(format!("in step {name:?}")))?;
                for object in &built {
                    let key = object_key(object);
                    match step_of.iter().find(|(k, _)| *k == key) {
                        Some((_, prev)) if *prev != name => {
                            return Err(fail(
                                &["spec", "steps"],
                                format!(
                                    "duplicate resource {key} in step {name:?}, already defined in step {prev:?}"
                                ),
                            ))
                        }
                        Some(_) => {}
                        None => step_of.push((key, name.clone())),
                    }
                }
                objects.extend(built);
            }
        }
        None => objects = build(rset, spec, rset.node_at(&["spec"]), &inputs)?,
    }
    let common = |field: &str| {
        spec.pointer(&format!("/commonMetadata/{field}"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let (labels, common_annotations) = (common("labels"), common("annotations"));
    let mut owner = Map::new();
    owner.insert(depends_on::OWNER_NAME.into(), json!(rset.name()));
    owner.insert(
        depends_on::OWNER_NAMESPACE.into(),
        json!(rset.namespace_or_default()),
    );
    for object in &mut objects {
        set_metadata(object, "labels", &labels);
        set_metadata(object, "annotations", &common_annotations);
        set_metadata(object, "labels", &owner);
    }
    Ok(Expanded::Objects(objects))
}

/// Whether the operator reconciles the ResourceSet: not `fluxcd.controlplane.io/reconcile:
/// disabled` (in any case).
pub(crate) fn is_reconciled(rset: &Object) -> bool {
    !rset.value["metadata"]["annotations"][RECONCILE_ANNOTATION]
        .as_str()
        .is_some_and(|v| v.eq_ignore_ascii_case("disabled"))
}

/// `namespace/name` of a ResourceSet, as the owner labels of what it generates name it.
pub fn key(rset: &Object) -> String {
    format!("{}/{}", rset.namespace_or_default(), rset.name())
}

/// `ResourceSet namespace/name`.
fn describe(rset: &Object) -> String {
    format!("ResourceSet {}", key(rset))
}

/// Merges `values` into `metadata.<field>` (SetCommonMetadata: the given keys win).
fn set_metadata(object: &mut Value, field: &str, values: &Map<String, Value>) {
    if values.is_empty() {
        return;
    }
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let entry = meta
        .entry(field.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Some(map) = entry.as_object_mut() {
        for (k, v) in values {
            map.insert(k.clone(), v.clone());
        }
    }
}

/// The identity the operator deduplicates by: group, kind, namespace, name.
fn object_key(object: &Value) -> String {
    let api = object["apiVersion"].as_str().unwrap_or("");
    let group = api.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
    format!(
        "{group}/{}/{}/{}",
        object["kind"].as_str().unwrap_or(""),
        object["metadata"]["namespace"].as_str().unwrap_or(""),
        object["metadata"]["name"].as_str().unwrap_or("")
    )
}

fn is_disabled(object: &Value) -> bool {
    object["metadata"]["annotations"][RECONCILE_ANNOTATION].as_str() == Some("disabled")
}

/// The objects of one `resources` + `resourcesTemplate` pair (the spec's or a step's), with
/// `node` the mapping holding them for error locations.
fn build(
    rset: &Object,
    holder: &Value,
    node: Option<&Node>,
    inputs: &[Value],
) -> Result<Vec<Value>, Diagnostic> {
    let mut objects: Vec<Value> = Vec::new();
    let mut keys: HashSet<String> = HashSet::new();
    let mut add = |object: Value, dedup: bool, objects: &mut Vec<Value>| {
        let key = object_key(&object);
        if !keys.insert(key) && dedup {
            return;
        }
        objects.push(object);
    };
    let empty = [Value::Object(Map::new())];
    let sets: &[Value] = if inputs.is_empty() { &empty } else { inputs };
    let resources = holder
        .get("resources")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let resource_nodes = node
        .and_then(|n| n.get("resources"))
        .and_then(|n| n.as_sequence());
    for (i, resource) in resources.iter().enumerate() {
        let entry_node = resource_nodes.and_then(|s| s.get(i));
        let text = plumb_template::to_yaml(&TValue::from(resource))
            .map_err(|e| template_error(rset, entry_node, None, &format!("resources[{i}]: {e}")))?;
        for set in sets {
            let out = execute(&text, set).map_err(|e| {
                template_error(
                    rset,
                    entry_node,
                    Some((&text, &e)),
                    &format!("failed to build resources[{i}]: {e}"),
                )
            })?;
            let mut docs = read_objects(&out).map_err(|e| {
                template_error(
                    rset,
                    entry_node,
                    None,
                    &format!("failed to build resources[{i}]: failed to read object: {e}"),
                )
            })?;
            if docs.len() != 1 {
                return Err(template_error(
                    rset,
                    entry_node,
                    None,
                    &format!(
                        "failed to build resources[{i}]: the template gives {} objects, not one",
                        docs.len()
                    ),
                ));
            }
            let object = docs.remove(0);
            if inputs.is_empty() {
                add(object, false, &mut objects);
            } else if !is_disabled(&object) {
                add(object, true, &mut objects);
            }
        }
    }
    let template = holder
        .get("resourcesTemplate")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !template.is_empty() {
        let template_node = node.and_then(|n| n.get("resourcesTemplate"));
        let mut from_template = Vec::new();
        for set in sets {
            let out = execute(template, set).map_err(|e| {
                block_error(
                    rset,
                    template_node,
                    &e,
                    &format!("failed to build resources: {e}"),
                )
            })?;
            let docs = read_objects(&out).map_err(|e| {
                template_error(
                    rset,
                    template_node,
                    None,
                    &format!("failed to read objects from multi-doc YAML: {e}"),
                )
            })?;
            from_template.extend(docs);
        }
        for object in from_template {
            if !is_disabled(&object) {
                add(object, true, &mut objects);
            }
        }
    }
    Ok(objects)
}

/// Executes `text` with `inputs` as the operator does (`<<`/`>>`, missingkey=error,
/// slim-sprig, slugify, toYaml).
fn execute(text: &str, inputs: &Value) -> Result<String, plumb_template::Error> {
    let template = Template::parse("resourceset", text, &Options::resource_set())?;
    template.execute_with_inputs(&TValue::from(inputs))
}

/// The objects of a YAML stream: empty documents are skipped, each other one must be a
/// mapping.
fn read_objects(text: &str) -> Result<Vec<Value>, String> {
    let docs = plumb_yaml::parse_documents("resourceset", text).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for doc in docs {
        let value = plumb_yaml::to_json(&doc).map_err(|e| e.to_string())?;
        match value {
            Value::Null => {}
            Value::Object(ref m) if m.is_empty() => {}
            Value::Object(_) => out.push(value),
            other => return Err(format!("a document is not an object: {other}")),
        }
    }
    Ok(out)
}

/// A diagnostic at a `resources` entry: at the text of the failing action inside it when it
/// can be found there, else at the entry.
fn template_error(
    rset: &Object,
    node: Option<&Node>,
    failed: Option<(&str, &plumb_template::Error)>,
    message: &str,
) -> Diagnostic {
    let d = Diagnostic::error(
        Code::ResourceSetFailed,
        format!("{}: {message}", describe(rset)),
    );
    let Some(span) = node.and_then(|n| n.span.as_ref()) else {
        return d.at(node.or(rset.origin.as_deref()));
    };
    let needle = failed.and_then(|(text, e)| action_at(text, e));
    match needle.and_then(|n| span.text().find(&n)) {
        Some(at) => {
            let loc = span.file.location(span.start + at);
            d.at_line(span.file.path(), loc.line, loc.column)
        }
        None => d.at(node),
    }
}

/// The `<< ... >>` action around the error's position in the template text.
fn action_at(text: &str, e: &plumb_template::Error) -> Option<String> {
    let offset = e.offset.min(text.len());
    let start = text[..offset]
        .rfind("<<")
        .or_else(|| text[offset..].find("<<").map(|i| i + offset))?;
    let end = text[start..].find(">>")? + start + 2;
    Some(text[start..end].to_string())
}

/// A diagnostic at the error's line inside the `resourcesTemplate` block scalar.
fn block_error(
    rset: &Object,
    node: Option<&Node>,
    e: &plumb_template::Error,
    message: &str,
) -> Diagnostic {
    let d = Diagnostic::error(
        Code::ResourceSetFailed,
        format!("{}: {message}", describe(rset)),
    );
    let Some(span) = node.and_then(|n| n.span.as_ref()) else {
        return d.at(node.or(rset.origin.as_deref()));
    };
    let start = span.location();
    let text = span.text();
    // A block scalar's text begins on the line after its indicator (`|`, `|-`, `>`).
    let block = text.starts_with('|') || text.starts_with('>');
    let first = start.line + usize::from(block);
    let line = first + e.line.saturating_sub(1) as usize;
    let file_text = span.file.text();
    let indent = file_text
        .lines()
        .nth(line.saturating_sub(1))
        .map(|l| l.len() - l.trim_start().len())
        .unwrap_or(0);
    let column = if block {
        indent + e.column as usize
    } else {
        start.column + e.column as usize
    };
    d.at_line(span.file.path(), line, column)
}

/// The input sets of a ResourceSet, combined by its strategy; `Ok(Err(why))` when a
/// provider's inputs are not known here.
fn combined_inputs(
    rset: &Object,
    providers: &[&Object],
) -> Result<Result<Vec<Value>, String>, String> {
    let spec = &rset.value["spec"];
    let namespace = rset.namespace_or_default();
    let mut sources: Vec<(String, Vec<Value>)> = Vec::new();
    let own: Vec<Value> = spec
        .get("inputs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    sources.push((
        rset.name().to_string(),
        with_provider(own, "ResourceSet", rset.name(), namespace),
    ));
    let mut selected: Vec<&Object> = Vec::new();
    for from in spec
        .get("inputsFrom")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let candidates = providers
            .iter()
            .filter(|p| p.namespace_or_default() == namespace);
        if let Some(name) = from.get("name").and_then(Value::as_str) {
            match candidates.clone().find(|p| p.name() == name) {
                Some(p) => selected.push(p),
                None => {
                    return Ok(Err(format!(
                        "its input provider ResourceSetInputProvider {namespace}/{name} is not in the same build output"
                    )))
                }
            }
        } else if let Some(selector) = from.get("selector") {
            selected.extend(candidates.filter(|p| selects(selector, &p.value)));
        } else {
            return Err("input provider reference must have either name or selector set".into());
        }
    }
    selected.sort_by(|a, b| {
        (a.namespace_or_default(), a.name()).cmp(&(b.namespace_or_default(), b.name()))
    });
    selected.dedup_by(|a, b| a.name() == b.name());
    for provider in selected {
        let kind = provider.value["spec"]["type"].as_str().unwrap_or("");
        let inputs = if kind == "Static" {
            let mut values = provider.value["spec"]["defaultValues"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            values.insert("id".into(), json!(adler32_id(provider.name())));
            vec![Value::Object(values)]
        } else {
            match provider.value["status"]["exportedInputs"].as_array() {
                Some(exported) => exported.clone(),
                None => {
                    return Ok(Err(format!(
                        "its input provider ResourceSetInputProvider {namespace}/{} is of type {kind}, whose inputs come from the cluster (no status.exportedInputs in the repository)",
                        provider.name()
                    )))
                }
            }
        };
        sources.push((
            provider.name().to_string(),
            with_provider(
                inputs,
                "ResourceSetInputProvider",
                provider.name(),
                namespace,
            ),
        ));
    }
    let strategy = spec
        .pointer("/inputStrategy/name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("Flatten");
    match strategy {
        "Flatten" => Ok(Ok(sources.into_iter().flat_map(|(_, i)| i).collect())),
        "Permute" => {
            let include_empty = spec
                .pointer("/inputStrategy/includeEmptyProviders")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            permute(sources, include_empty).map(Ok)
        }
        other => Err(format!("unknown input strategy: '{other}'")),
    }
}

/// Each input set with the `provider` the operator adds.
fn with_provider(inputs: Vec<Value>, kind: &str, name: &str, namespace: &str) -> Vec<Value> {
    inputs
        .into_iter()
        .map(|mut input| {
            if let Some(map) = input.as_object_mut() {
                map.insert(
                    "provider".into(),
                    json!({
                        "apiVersion": "fluxcd.controlplane.io/v1",
                        "kind": kind,
                        "name": name,
                        "namespace": namespace,
                    }),
                );
            }
            input
        })
        .collect()
}

/// The `Permute` strategy: the Cartesian product of the providers' input sets, each set under
/// its provider's normalized name, with an `id` of the permutation.
fn permute(sources: Vec<(String, Vec<Value>)>, include_empty: bool) -> Result<Vec<Value>, String> {
    let mut scoped: Vec<(String, Vec<Value>)> = Vec::new();
    let mut expected: usize = 0;
    for (name, inputs) in sources {
        if !include_empty && inputs.is_empty() {
            continue;
        }
        expected = if scoped.is_empty() {
            inputs.len()
        } else {
            expected.saturating_mul(inputs.len())
        };
        if expected > MAX_PERMUTATIONS {
            return Err(format!(
                "adding provider '{name}' with {} inputs would exceed the maximum allowed permutations. max: {MAX_PERMUTATIONS}, got: {expected}",
                inputs.len()
            ));
        }
        let key = normalize_key(&name);
        if key.is_empty() {
            return Err(format!("normalized provider name is empty: '{name}'"));
        }
        scoped.push((key, inputs));
    }
    if scoped.is_empty() || scoped.iter().any(|(_, i)| i.is_empty()) {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut index = vec![0usize; scoped.len()];
    loop {
        let mut perm = Map::new();
        let mut id = Vec::new();
        for (p, &i) in index.iter().enumerate() {
            let (key, inputs) = &scoped[p];
            perm.insert(key.clone(), inputs[i].clone());
            id.push(format!("{key}={i}"));
        }
        perm.insert("id".into(), json!(adler32_id(&id.join("/"))));
        out.push(Value::Object(perm));
        // The last provider varies fastest, as the operator's backtracking visits them.
        let mut p = scoped.len();
        loop {
            if p == 0 {
                return Ok(out);
            }
            p -= 1;
            index[p] += 1;
            if index[p] < scoped[p].1.len() {
                break;
            }
            index[p] = 0;
        }
    }
}

/// A provider's name as a template key: lowercase, spaces and punctuation to `_`, other
/// characters dropped, empty words removed.
pub fn normalize_key(name: &str) -> String {
    let mapped: String = name
        .chars()
        .flat_map(char::to_lowercase)
        .filter_map(|c| {
            if c.is_whitespace()
                || c.is_ascii_punctuation()
                || (!c.is_alphanumeric() && is_unicode_punct(c))
            {
                Some('_')
            } else if c.is_ascii_lowercase() || c.is_ascii_digit() {
                Some(c)
            } else {
                None
            }
        })
        .collect();
    mapped
        .split('_')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

/// Punctuation outside ASCII that Go's `unicode.IsPunct` knows (the common ones).
fn is_unicode_punct(c: char) -> bool {
    matches!(c, '\u{2010}'..='\u{2027}' | '\u{3001}'..='\u{3003}' | '¡' | '§' | '«' | '¶' | '·' | '»' | '¿')
}

/// The operator's input ID: the Adler-32 checksum of `s`, in decimal.
pub fn adler32_id(s: &str) -> String {
    let (mut a, mut b) = (1u32, 0u32);
    for byte in s.bytes() {
        a = (a + u32::from(byte)) % 65521;
        b = (b + a) % 65521;
    }
    ((b << 16) | a).to_string()
}

/// Whether a label selector (`matchLabels`, `matchExpressions`) selects `object`.
fn selects(selector: &Value, object: &Value) -> bool {
    let labels = &object["metadata"]["labels"];
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    let labels_match = selector["matchLabels"]
        .as_object()
        .is_none_or(|m| m.iter().all(|(k, v)| label(k) == v.as_str()));
    let expressions_match = selector["matchExpressions"].as_array().is_none_or(|list| {
        list.iter().all(|e| {
            let key = e["key"].as_str().unwrap_or("");
            let values: Vec<&str> = e["values"]
                .as_array()
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e["operator"].as_str().unwrap_or("") {
                "In" => label(key).is_some_and(|v| values.contains(&v)),
                "NotIn" => !label(key).is_some_and(|v| values.contains(&v)),
                "Exists" => label(key).is_some(),
                "DoesNotExist" => label(key).is_none(),
                _ => false,
            }
        })
    });
    labels_match && expressions_match
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_adler32_as_the_operator_computes_them() {
        // flux-operator's internal/inputs/combine_test.go: ID("foo"), ID("bar"), ID("baz").
        assert_eq!(adler32_id("foo"), "42074437");
        assert_eq!(adler32_id("bar"), "39649590");
        assert_eq!(adler32_id("baz"), "40173886");
    }

    #[test]
    fn provider_names_normalize_to_template_keys() {
        assert_eq!(normalize_key("my-rset"), "my_rset");
        assert_eq!(normalize_key("Git Tag"), "git_tag");
        assert_eq!(normalize_key("--a..b--"), "a_b");
        assert_eq!(normalize_key("Ünïcode"), "ncode");
    }
}
