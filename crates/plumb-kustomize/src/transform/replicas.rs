//! `replicas:`: the replica count of the objects an entry names (by their current name or any
//! name they had before), at the `replicas` field specs of their kind. An entry that names no
//! object of a kind the specs cover is an error, as in kustomize.

use crate::build::ResourceList;
use crate::config::TransformerConfig;
use crate::context::Context;
use crate::error::KustomizeError;
use crate::fieldspec::Create;
use crate::kustomization::Kustomization;
use crate::resource::{Gvk, Resource};
use crate::transform::values;
use plumb_yaml::Node;

const REPLICA_KEYS: &[&str] = &["name", "count"];

/// Applies the kustomization's `replicas:` entries.
pub fn run(
    k: &Kustomization,
    list: &mut ResourceList,
    _ctx: &Context,
    config: &TransformerConfig,
) -> Result<(), KustomizeError> {
    for (i, item) in values::object_list(k, "replicas", "types.Replica")?
        .into_iter()
        .enumerate()
    {
        values::known_keys(k, item, REPLICA_KEYS)?;
        let name = match item.get("name") {
            Some(n) => values::string(k, n, &format!("replicas.{i}.name"))?,
            None => String::new(),
        };
        let count = match item.get("count") {
            Some(n) => values::int64(k, n, &format!("replicas.{i}.count"))?,
            None => 0,
        };
        let mut found = false;
        for fs in &config.replicas {
            for r in list
                .resources
                .iter_mut()
                .filter(|r| is_named(r, &name, |gvk| fs.selects(gvk)))
            {
                found = true;
                let id = r.id();
                fs.apply(&mut r.node, Create::Scalar, &mut |leaf| {
                    if leaf.as_scalar().is_none() {
                        return Err(KustomizeError::Other(format!(
                            "considering field '{}' of object {id}: wrong node kind: expected ScalarNode",
                            fs.path_string()
                        )));
                    }
                    *leaf = Node::plain(count.to_string()).with_span(leaf.span.clone());
                    Ok(())
                })?;
            }
        }
        if !found {
            let gvks: Vec<String> = config
                .replicas
                .iter()
                .map(|fs| {
                    Gvk {
                        group: fs.group.as_str().into(),
                        version: fs.version.as_str().into(),
                        kind: fs.kind.as_str().into(),
                    }
                    .to_string()
                })
                .collect();
            return Err(KustomizeError::Other(format!(
                "resource with name {name} does not match a config with the following GVK [{}]",
                gvks.join(" ")
            )));
        }
    }
    Ok(())
}

/// Whether `r` is called `name` now or was before, with a kind `selects` accepts.
fn is_named(r: &Resource, name: &str, selects: impl Fn(&Gvk) -> bool) -> bool {
    std::iter::once(r.id())
        .chain(r.previous_ids.iter().cloned())
        .any(|id| id.name == name && selects(&id.gvk))
}
