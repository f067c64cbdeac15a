//! `labels:` and `commonLabels`: label pairs written, as strings, into every label map the field
//! specs reach. A `labels:` entry sets `metadata/labels`, its own `fields` and the
//! configuration's `labels` specs, plus selectors and templates (`includeSelectors`), or just
//! pod templates (`includeTemplates`) and volume claim templates (`includeVolumeClaimTemplates`);
//! `commonLabels` sets everything the `commonLabels` specs name, selectors included.

use crate::build::ResourceList;
use crate::config::{merge_field_specs, TransformerConfig};
use crate::context::Context;
use crate::error::KustomizeError;
use crate::fieldspec::{Create, FieldSpec};
use crate::kustomization::Kustomization;
use crate::transform::values;
use plumb_yaml::Node;

const LABEL_KEYS: &[&str] = &[
    "pairs",
    "includeSelectors",
    "includeTemplates",
    "includeVolumeClaimTemplates",
    "fields",
];

/// Applies the kustomization's `labels:` entries, then its `commonLabels`.
pub fn run(
    k: &Kustomization,
    list: &mut ResourceList,
    _ctx: &Context,
    config: &TransformerConfig,
) -> Result<(), KustomizeError> {
    for (i, entry) in values::object_list(k, "labels", "types.Label")?
        .into_iter()
        .enumerate()
    {
        values::known_keys(k, entry, LABEL_KEYS)?;
        let field = |name: &str| entry.get(name).filter(|n| !n.is_null());
        let flag = |name: &str| match field(name) {
            Some(n) => values::boolean(k, n, &format!("labels.{i}.{name}")),
            None => Ok(false),
        };
        let pairs = match field("pairs") {
            Some(n) => values::string_map(k, n, &format!("labels.{i}.pairs"))?,
            None => Vec::new(),
        };
        let mut specs = match field("fields") {
            Some(n) => FieldSpec::list_from_node(n)?,
            None => Vec::new(),
        };
        let merged = (|| -> Result<(), KustomizeError> {
            merge_field_specs(&mut specs, &config.labels)?;
            if flag("includeSelectors")? {
                merge_field_specs(&mut specs, &config.common_labels)?;
            } else {
                if flag("includeTemplates")? {
                    merge_field_specs(&mut specs, &config.template_labels)?;
                }
                if flag("includeVolumeClaimTemplates")? {
                    merge_field_specs(&mut specs, &config.volume_claim_template_labels)?;
                }
                merge_field_specs(&mut specs, &[FieldSpec::any_kind("metadata/labels", true)])?;
            }
            Ok(())
        })();
        merged.map_err(|e| match e {
            KustomizeError::Other(m) => {
                KustomizeError::Other(format!("failed to merge labels: {m}"))
            }
            other => other,
        })?;
        set_map_entries(list, &pairs, &specs)?;
    }
    if let Some(node) = k.field("commonLabels") {
        let pairs = values::string_map(k, node, "commonLabels")?;
        set_map_entries(list, &pairs, &config.common_labels)?;
    }
    Ok(())
}

/// Sets each pair as a string entry of every map the specs reach in every resource. A field the
/// specs may not create, or that is null, is left as it is; one that is not a map is an error.
pub(crate) fn set_map_entries(
    list: &mut ResourceList,
    pairs: &[(String, String)],
    specs: &[FieldSpec],
) -> Result<(), KustomizeError> {
    if pairs.is_empty() {
        return Ok(());
    }
    let mut sorted: Vec<&(String, String)> = pairs.iter().collect();
    sorted.sort();
    for r in &mut list.resources {
        let gvk = r.gvk();
        let id = r.id();
        for fs in specs.iter().filter(|fs| fs.selects(&gvk)) {
            fs.apply(&mut r.node, Create::Mapping, &mut |leaf| {
                if leaf.is_null() {
                    return Ok(());
                }
                if !leaf.is_mapping() {
                    let kind = if leaf.is_sequence() {
                        "SequenceNode"
                    } else {
                        "ScalarNode"
                    };
                    let contents = leaf.scalar_value().unwrap_or("");
                    return Err(KustomizeError::Other(format!(
                        "considering field '{}' of object {id}: wrong node kind: expected MappingNode but got {kind}: node contents:\n{contents}\n",
                        fs.path_string()
                    )));
                }
                for (key, value) in &sorted {
                    leaf.set(key, Node::string(value.as_str()));
                }
                Ok(())
            })?;
        }
    }
    Ok(())
}
