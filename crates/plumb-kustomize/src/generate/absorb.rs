//! How a generated resource joins the resources accumulated so far: appended when new (and
//! `create`), or taking the place of the one resource it matches when `merge` or `replace`,
//! keeping that resource's name, namespace and history, as kustomize's resource map does.

use super::args::Behavior;
use crate::build::ResourceList;
use crate::resource::{ResId, Resource};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use plumb_yaml::Node;
use std::collections::BTreeMap;

/// Adds `res` to `list` according to `behavior`; errors are kustomize's messages.
pub fn absorb(
    list: &mut ResourceList,
    mut res: Resource,
    behavior: Behavior,
) -> Result<(), String> {
    let id = res.id();
    let matches: Vec<usize> = list
        .resources
        .iter()
        .enumerate()
        .filter(|(_, r)| same_id(&r.id(), &id) || r.previous_ids.iter().any(|p| same_id(p, &id)))
        .map(|(i, _)| i)
        .collect();
    match matches.as_slice() {
        [] => match behavior {
            Behavior::Merge | Behavior::Replace => Err(format!(
                "id {} does not exist; cannot merge or replace",
                go_syntax(&id)
            )),
            Behavior::Create | Behavior::Unspecified => list.append(res).map_err(|e| e.to_string()),
        },
        [index] => {
            let old = &list.resources[*index];
            match behavior {
                Behavior::Replace => copy_metadata(&mut res, old),
                Behavior::Merge => {
                    copy_metadata(&mut res, old);
                    merge_data(&mut res, old);
                }
                Behavior::Create | Behavior::Unspecified => {
                    return Err(format!(
                    "id {} exists; can not use behavior: '{}', behavior must be merge or replace",
                    go_syntax(&id),
                    behavior.as_str()
                ))
                }
            }
            // Either side turning the hash off keeps it off.
            res.needs_hash &= old.needs_hash;
            // The resource stays the one first accumulated: what the build knows about it
            // (earlier names, prefixes, transformers) carries over. Its origin too when merged;
            // replaced, it comes from the generator that replaced it (left for the caller).
            res.previous_ids = old.previous_ids.clone();
            res.prefixes = old.prefixes.clone();
            res.suffixes = old.suffixes.clone();
            if behavior == Behavior::Merge {
                res.origin = old.origin.clone();
            }
            res.transformations = old.transformations.clone();
            list.resources[*index] = res;
            Ok(())
        }
        many => {
            let ids: Vec<String> = many
                .iter()
                .map(|i| list.resources[*i].id().to_string())
                .collect();
            Err(format!(
                "found multiple objects [{}] that could accept merge of {id}",
                ids.join(" ")
            ))
        }
    }
}

/// kustomize's identity comparison: an empty namespace is the `default` namespace.
fn same_id(a: &ResId, b: &ResId) -> bool {
    let ns = |id: &ResId| {
        if id.namespace.is_empty() {
            "default".to_string()
        } else {
            id.namespace.to_string()
        }
    };
    a.gvk == b.gvk && a.name == b.name && ns(a) == ns(b)
}

/// A resource identity as Go's `%#v` prints kustomize's `ResId`.
fn go_syntax(id: &ResId) -> String {
    format!(
        "resid.ResId{{Gvk:resid.Gvk{{Group:{:?}, Version:{:?}, Kind:{:?}, isClusterScoped:false}}, Name:{:?}, Namespace:{:?}}}",
        id.gvk.group, id.gvk.version, id.gvk.kind, id.name, id.namespace
    )
}

/// The old resource's labels and annotations under the new one's, its name and namespace, and
/// what the build remembers about it.
fn copy_metadata(res: &mut Resource, old: &Resource) {
    for field in ["labels", "annotations"] {
        let mut merged = string_map(old.node.get_path(&["metadata", field]));
        merged.extend(string_map(res.node.get_path(&["metadata", field])));
        if let Some(meta) = res.node.ensure_mapping("metadata") {
            set_map(meta, field, &merged);
        }
    }
    if let Some(meta) = res.node.ensure_mapping("metadata") {
        meta.set("name", Node::string(old.name()));
        if old.namespace().is_empty() {
            meta.remove("namespace");
        } else {
            meta.set("namespace", Node::string(old.namespace()));
        }
    }
    res.previous_ids = old.previous_ids.clone();
    res.prefixes = old.prefixes.clone();
    res.suffixes = old.suffixes.clone();
}

/// The old resource's `data` and `binaryData` under the new one's. A Secret's `stringData`
/// counts as data (encoded, winning over `data` as the API server lets it).
fn merge_data(res: &mut Resource, old: &Resource) {
    let mut data = string_map(old.node.get("data"));
    if old.kind() == "Secret" {
        for (k, v) in string_map(old.node.get("stringData")) {
            data.insert(k, STANDARD.encode(v));
        }
    }
    data.extend(string_map(res.node.get("data")));
    set_map(&mut res.node, "data", &data);
    let mut binary = string_map(old.node.get("binaryData"));
    binary.extend(string_map(res.node.get("binaryData")));
    set_map(&mut res.node, "binaryData", &binary);
}

/// A mapping's scalar entries as text (non-scalar values read as empty, as kyaml does).
fn string_map(node: Option<&Node>) -> BTreeMap<String, String> {
    node.and_then(Node::as_mapping)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            let key = k.scalar_value()?.to_string();
            Some((key, v.scalar_value().unwrap_or_default().to_string()))
        })
        .collect()
}

/// Replaces `field` with `map` (sorted, values as strings), or removes it when `map` is empty.
fn set_map(node: &mut Node, field: &str, map: &BTreeMap<String, String>) {
    node.remove(field);
    if map.is_empty() {
        return;
    }
    let mut out = Node::mapping();
    for (k, v) in map {
        out.set(k, Node::string(v.as_str()));
    }
    node.set(field, out);
}
