//! Transformer configuration: which fields of which kinds each builtin transformer touches
//! (kustomize's `TransformerConfig`). The defaults are kustomize's, kept as data under
//! `data/fieldspecs/`; a kustomization's `configurations:` files add to them.
//!
//! ```
//! use plumb_kustomize::config;
//! let defaults = config::defaults();
//! assert!(defaults.common_labels.iter().any(|fs| fs.path_string() == "metadata/labels"));
//! ```

use crate::context::Context;
use crate::error::KustomizeError;
use crate::fieldspec::FieldSpec;
use crate::kustomization::Kustomization;
use crate::loader;
use crate::transform::name_reference::{self, BackReference};
use plumb_yaml::Node;
use std::path::Path;
use std::sync::OnceLock;

/// Field specs per transformer, in kustomize's `TransformerConfig` YAML form.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TransformerConfig {
    /// `namePrefix:`.
    pub name_prefix: Vec<FieldSpec>,
    /// `nameSuffix:`.
    pub name_suffix: Vec<FieldSpec>,
    /// `namespace:`, besides `metadata/namespace`, which the namespace transformer sets itself.
    pub namespace: Vec<FieldSpec>,
    /// `commonLabels:`: metadata, pod templates and selectors.
    pub common_labels: Vec<FieldSpec>,
    /// `labels:`: extra fields every `labels:` entry of a kustomization sets.
    pub labels: Vec<FieldSpec>,
    /// `templateLabels:`: what a `labels:` entry with `includeTemplates` adds.
    pub template_labels: Vec<FieldSpec>,
    /// `volumeClaimTemplateLabels:`: what `includeVolumeClaimTemplates` adds.
    pub volume_claim_template_labels: Vec<FieldSpec>,
    /// `commonAnnotations:`.
    pub common_annotations: Vec<FieldSpec>,
    /// `nameReference:`: which fields name objects of which kinds.
    pub name_reference: Vec<BackReference>,
    /// `varReference:`: where `$(VAR)` may appear.
    pub var_reference: Vec<FieldSpec>,
    /// `images:`.
    pub images: Vec<FieldSpec>,
    /// `replicas:`.
    pub replicas: Vec<FieldSpec>,
}

/// The default configuration files, compiled in: (name, text). Each is a `TransformerConfig`
/// document; they are merged in this order.
const DEFAULT_FILES: &[(&str, &str)] = &[
    (
        "commonlabels.yaml",
        include_str!("../data/fieldspecs/commonlabels.yaml"),
    ),
    (
        "templatelabels.yaml",
        include_str!("../data/fieldspecs/templatelabels.yaml"),
    ),
    (
        "volumeclaimtemplatelabels.yaml",
        include_str!("../data/fieldspecs/volumeclaimtemplatelabels.yaml"),
    ),
    (
        "commonannotations.yaml",
        include_str!("../data/fieldspecs/commonannotations.yaml"),
    ),
    (
        "namespace.yaml",
        include_str!("../data/fieldspecs/namespace.yaml"),
    ),
    (
        "images.yaml",
        include_str!("../data/fieldspecs/images.yaml"),
    ),
    (
        "replicas.yaml",
        include_str!("../data/fieldspecs/replicas.yaml"),
    ),
    (
        "nameprefix.yaml",
        include_str!("../data/fieldspecs/nameprefix.yaml"),
    ),
    (
        "namesuffix.yaml",
        include_str!("../data/fieldspecs/namesuffix.yaml"),
    ),
    (
        "namereference.yaml",
        include_str!("../data/fieldspecs/namereference.yaml"),
    ),
];

/// kustomize's default configuration, parsed once.
pub fn defaults() -> &'static TransformerConfig {
    static DEFAULTS: OnceLock<TransformerConfig> = OnceLock::new();
    DEFAULTS.get_or_init(|| {
        let mut config = TransformerConfig::default();
        for (name, text) in DEFAULT_FILES {
            // The data is compiled in and covered by tests: a failure here is a bug in the data.
            let part = TransformerConfig::parse(Path::new(name), text)
                .unwrap_or_else(|e| panic!("default field specs {name}: {e}"));
            config
                .merge(part)
                .unwrap_or_else(|e| panic!("default field specs {name}: {e}"));
        }
        config
    })
}

impl TransformerConfig {
    /// Reads a configuration file's text (`path` is used in messages).
    pub fn parse(path: &Path, text: &str) -> Result<TransformerConfig, KustomizeError> {
        let docs = plumb_yaml::parse_documents(path, text)?;
        let mut config = TransformerConfig::default();
        let Some(doc) = docs.into_iter().find(|d| !d.is_null()) else {
            return Ok(config);
        };
        let Some(entries) = doc.as_mapping() else {
            return Err(config_error(
                path,
                &doc,
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal into Go value of type builtinconfig.TransformerConfig",
            ));
        };
        for (key, value) in entries {
            let name = key.scalar_value().unwrap_or("");
            let specs = |v: &Node| FieldSpec::list_from_node(v);
            match name {
                "namePrefix" => config.name_prefix = specs(value)?,
                "nameSuffix" => config.name_suffix = specs(value)?,
                "namespace" => config.namespace = specs(value)?,
                "commonLabels" => config.common_labels = specs(value)?,
                "labels" => config.labels = specs(value)?,
                "templateLabels" => config.template_labels = specs(value)?,
                "volumeClaimTemplateLabels" => config.volume_claim_template_labels = specs(value)?,
                "commonAnnotations" => config.common_annotations = specs(value)?,
                "nameReference" => config.name_reference = name_reference::parse(value)?,
                "varReference" => config.var_reference = specs(value)?,
                "images" => config.images = specs(value)?,
                "replicas" => config.replicas = specs(value)?,
                _ => {
                    return Err(config_error(
                        path,
                        key,
                        &format!(
                            "error unmarshaling JSON: while decoding JSON: json: unknown field {name:?}"
                        ),
                    ))
                }
            }
        }
        Ok(config)
    }

    /// Adds `other`'s field specs to this configuration as kustomize merges configurations: a
    /// spec already covered (same path, and an existing spec that selects its kind) is skipped,
    /// and one that differs from it only in `create` is an error.
    pub fn merge(&mut self, other: TransformerConfig) -> Result<(), KustomizeError> {
        let pairs: [(&mut Vec<FieldSpec>, Vec<FieldSpec>, &str); 11] = [
            (&mut self.name_prefix, other.name_prefix, "NamePrefix"),
            (&mut self.name_suffix, other.name_suffix, "NameSuffix"),
            (&mut self.namespace, other.namespace, "NameSpace"),
            (&mut self.common_labels, other.common_labels, "CommonLabels"),
            (&mut self.labels, other.labels, "Labels"),
            (
                &mut self.template_labels,
                other.template_labels,
                "TemplateLabels",
            ),
            (
                &mut self.volume_claim_template_labels,
                other.volume_claim_template_labels,
                "VolumeClaimTemplateLabels",
            ),
            (
                &mut self.common_annotations,
                other.common_annotations,
                "CommonAnnotations",
            ),
            (&mut self.var_reference, other.var_reference, "VarReference"),
            (&mut self.images, other.images, "Images"),
            (&mut self.replicas, other.replicas, "Replicas"),
        ];
        for (into, incoming, what) in pairs {
            merge_field_specs(into, &incoming).map_err(|e| {
                KustomizeError::Other(format!("failed to merge {what} fieldSpec: {e}"))
            })?;
        }
        name_reference::merge(&mut self.name_reference, other.name_reference);
        Ok(())
    }
}

/// Merges `incoming` into `into` as kustomize's `FsSlice.MergeAll` does. The error is
/// kustomize's bare `conflicting fieldspecs`, for the caller to put in context.
pub fn merge_field_specs(
    into: &mut Vec<FieldSpec>,
    incoming: &[FieldSpec],
) -> Result<(), KustomizeError> {
    for spec in incoming {
        let gvk = crate::resource::Gvk {
            group: spec.group.as_str().into(),
            version: spec.version.as_str().into(),
            kind: spec.kind.as_str().into(),
        };
        let covering = into
            .iter()
            .find(|existing| existing.path == spec.path && selector_covers(&gvk, existing));
        match covering {
            Some(existing) if existing.create != spec.create => {
                return Err(KustomizeError::Other("conflicting fieldspecs".into()))
            }
            Some(_) => {}
            None => into.push(spec.clone()),
        }
    }
    Ok(())
}

/// kustomize's `effectivelyEquals`: the existing spec's group, version and kind match every
/// part the incoming spec sets.
fn selector_covers(incoming: &crate::resource::Gvk, existing: &FieldSpec) -> bool {
    (incoming.group.is_empty() || existing.group == incoming.group)
        && (incoming.version.is_empty() || existing.version == incoming.version)
        && (incoming.kind.is_empty() || existing.kind == incoming.kind)
}

/// The configuration a kustomization's transformers use: the defaults plus its
/// `configurations:` (inline YAML entries first, then files relative to the kustomization).
pub fn load_configurations(
    k: &Kustomization,
    ctx: &Context,
) -> Result<TransformerConfig, KustomizeError> {
    let entries = k.string_list("configurations")?;
    if entries.is_empty() {
        return Ok(defaults().clone());
    }
    // The kustomization's own specs come first and kustomize's defaults are merged into them,
    // so a default that a custom spec narrows is dropped: a custom `namePrefix` for one kind
    // replaces the default for every kind (checked with kustomize-ref).
    let mut config = TransformerConfig::default();
    let mut from_files = TransformerConfig::default();
    for entry in entries {
        if entry.contains('\n') || entry.contains('\r') {
            config.merge(TransformerConfig::parse(&k.path, &entry)?)?;
            continue;
        }
        let path = loader::clean(&k.dir().join(&entry));
        loader::check_restrictor(ctx.options.load_restrictor, k.dir(), &path)?;
        let text = ctx.options.fs.read_text(&path)?;
        from_files.merge(TransformerConfig::parse(&path, &text)?)?;
    }
    config.merge(from_files)?;
    config.merge(defaults().clone())?;
    Ok(config)
}

fn config_error(path: &Path, node: &Node, message: &str) -> KustomizeError {
    let at = node
        .span
        .as_ref()
        .map(|s| {
            let l = s.location();
            format!(" at {}:{}:{}", path.display(), l.line, l.column)
        })
        .unwrap_or_else(|| format!(" in {}", path.display()));
    KustomizeError::Other(format!("{message}{at}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: &str, path: &str, create: bool) -> FieldSpec {
        FieldSpec {
            kind: kind.into(),
            ..FieldSpec::any_kind(path, create)
        }
    }

    #[test]
    fn defaults_parse_and_cover_every_category() {
        let d = defaults();
        assert_eq!(d.replicas.len(), 4);
        assert_eq!(d.images.len(), 6);
        assert!(d.template_labels.len() < d.common_labels.len());
        assert_eq!(d.volume_claim_template_labels.len(), 1);
        assert!(d
            .namespace
            .iter()
            .all(|fs| fs.path_string() != "metadata/namespace"));
    }

    #[test]
    fn merge_skips_covered_specs_and_refuses_conflicts() {
        // An existing spec covers an incoming one when it matches every kind part the incoming
        // one sets (kustomize's `effectivelyEquals`).
        let mut specs = vec![spec("Foo", "metadata/labels", true)];
        merge_field_specs(&mut specs, &[spec("", "metadata/labels", true)]).unwrap();
        assert_eq!(specs.len(), 1);
        merge_field_specs(&mut specs, &[spec("Bar", "metadata/labels", true)]).unwrap();
        assert_eq!(specs.len(), 2);
        let err = merge_field_specs(&mut specs, &[spec("", "metadata/labels", false)]);
        assert_eq!(err.unwrap_err().to_string(), "conflicting fieldspecs");
    }

    #[test]
    fn unknown_keys_are_refused_with_their_place() {
        let err = TransformerConfig::parse(Path::new("c.yaml"), "bogus:\n- path: x\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "error unmarshaling JSON: while decoding JSON: json: unknown field \"bogus\" at c.yaml:1:1"
        );
    }

    #[test]
    fn merge_names_the_category_in_errors() {
        let mut config = defaults().clone();
        let extra = TransformerConfig::parse(
            Path::new("c.yaml"),
            "commonLabels:\n- path: metadata/labels\n  create: false\n",
        )
        .unwrap();
        assert_eq!(
            config.merge(extra).unwrap_err().to_string(),
            "failed to merge CommonLabels fieldSpec: conflicting fieldspecs"
        );
    }
}
