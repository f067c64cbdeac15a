//! The `transformers:` and `generators:` fields: plugin configurations (files, kustomization
//! directories whose output is configurations, or inline YAML) naming kustomize's builtin
//! plugins (`apiVersion: builtin`). plumb runs the builtin plugins it implements; exec and Go
//! plugins, and builtins not implemented yet, are refused with an error naming the plugin,
//! never skipped.

use crate::build::ResourceList;
use crate::config::TransformerConfig;
use crate::context::Context;
use crate::error::KustomizeError;
use crate::fieldspec::FieldSpec;
use crate::kustomization::Kustomization;
use crate::resource::Resource;
use crate::transform::{
    images, labels, name_prefix_suffix, namespace, patches, replacements, replicas,
};
use plumb_yaml::{Node, NodeKind};

/// The builtin plugin a configuration names, or an error for anything else.
pub fn builtin_kind(config: &Resource) -> Result<&str, KustomizeError> {
    let api = config.api_version();
    let kind = config.kind();
    if api == "builtin" || api.starts_with("builtin/") {
        return Ok(kind);
    }
    Err(KustomizeError::Unsupported(format!(
        "plugin {api}/{kind} ({}): plumb runs only kustomize's builtin plugins (apiVersion: builtin); exec and Go plugins are not run",
        config.name()
    )))
}

fn field_specs(config: &Resource) -> Result<Vec<FieldSpec>, KustomizeError> {
    match config.node.get("fieldSpecs") {
        Some(n) => FieldSpec::list_from_node(n),
        None => Ok(Vec::new()),
    }
}

fn text<'a>(config: &'a Resource, key: &str) -> &'a str {
    config
        .node
        .get(key)
        .and_then(Node::scalar_value)
        .unwrap_or("")
}

/// The string pairs of a map-valued field of the configuration (`labels`, `annotations`).
fn pairs(config: &Resource, key: &str) -> Vec<(String, String)> {
    config
        .node
        .get(key)
        .and_then(Node::as_mapping)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            let value = match &v.kind {
                NodeKind::Scalar(s) => s.value.to_string(),
                _ => return None,
            };
            Some((k.scalar_value()?.to_string(), value))
        })
        .collect()
}

/// A kustomization holding one field, so that a builtin configured through `transformers:`
/// runs through the same code as the kustomization field it mirrors.
fn one_field(k: &Kustomization, field: &str, value: Node) -> Result<Kustomization, KustomizeError> {
    let mut node = Node::mapping();
    node.set(field, value);
    Kustomization::from_node(&k.path, node)
}

/// Runs one transformer configuration over `list`. Returns `Ok(false)` when the kind is a
/// builtin this module does not run (the caller may offer it to another step).
pub fn run_transformer(
    config: &Resource,
    list: &mut ResourceList,
    k: &Kustomization,
    ctx: &Context,
) -> Result<bool, KustomizeError> {
    let kind = builtin_kind(config)?;
    match kind {
        "LabelTransformer" => {
            labels::set_map_entries(list, &pairs(config, "labels"), &field_specs(config)?)?;
            Ok(true)
        }
        "AnnotationsTransformer" => {
            labels::set_map_entries(list, &pairs(config, "annotations"), &field_specs(config)?)?;
            Ok(true)
        }
        "NamespaceTransformer" => {
            let ns = config.namespace();
            let fake = one_field(k, "namespace", Node::string(ns))?;
            let cfg = TransformerConfig {
                namespace: field_specs(config)?,
                ..TransformerConfig::default()
            };
            let options = namespace::Options {
                unset_only: config_bool(config, "unsetOnly")?,
                subjects: namespace::Subjects::parse(
                    config
                        .node
                        .get("setRoleBindingSubjects")
                        .and_then(Node::scalar_value)
                        .unwrap_or(""),
                )?,
            };
            namespace::run_with(&fake, list, ctx, &cfg, options)?;
            Ok(true)
        }
        "ImageTagTransformer" => {
            let image = config
                .node
                .get("imageTag")
                .cloned()
                .unwrap_or_else(Node::mapping);
            let fake = one_field(k, "images", Node::sequence(vec![image]))?;
            let cfg = TransformerConfig {
                images: field_specs(config)?,
                ..TransformerConfig::default()
            };
            images::run(&fake, list, ctx, &cfg)?;
            Ok(true)
        }
        "ReplicaCountTransformer" => {
            let replica = config
                .node
                .get("replica")
                .cloned()
                .unwrap_or_else(Node::mapping);
            let fake = one_field(k, "replicas", Node::sequence(vec![replica]))?;
            let cfg = TransformerConfig {
                replicas: field_specs(config)?,
                ..TransformerConfig::default()
            };
            replicas::run(&fake, list, ctx, &cfg)?;
            Ok(true)
        }
        "PatchTransformer" => {
            patches::apply_patch_entry(k, list, ctx, &config.node)?;
            Ok(true)
        }
        "PatchJson6902Transformer" => {
            patches::apply_json6902_entry(k, list, ctx, &config.node, "jsonOp")?;
            Ok(true)
        }
        "ReplacementTransformer" => {
            let entries = config
                .node
                .get("replacements")
                .cloned()
                .unwrap_or_else(|| Node::sequence(Vec::new()));
            let expanded = replacements::expand(&entries, k.dir(), ctx)?;
            replacements::apply(&expanded, list, ctx)?;
            Ok(true)
        }
        "PrefixSuffixTransformer" => {
            let specs = field_specs(config)?;
            name_prefix_suffix::apply_affixes(
                list,
                text(config, "prefix"),
                text(config, "suffix"),
                &specs,
            )?;
            Ok(true)
        }
        "PrefixTransformer" => {
            let specs = field_specs(config)?;
            name_prefix_suffix::apply_affixes(list, text(config, "prefix"), "", &specs)?;
            Ok(true)
        }
        "SuffixTransformer" => {
            let specs = field_specs(config)?;
            name_prefix_suffix::apply_affixes(list, "", text(config, "suffix"), &specs)?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Runs one generator configuration that is not a ConfigMap or Secret generator (those live in
/// [`crate::generate`]). Returns `Ok(false)` for a builtin this module does not run.
pub fn run_generator(config: &Resource, list: &mut ResourceList) -> Result<bool, KustomizeError> {
    match builtin_kind(config)? {
        "IAMPolicyGenerator" => {
            list.append(iam_service_account(config)?)?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// kustomize's IAMPolicyGenerator: a Kubernetes ServiceAccount bound to a cloud service
/// account through Workload Identity (GKE is the only cloud kustomize supports).
fn iam_service_account(config: &Resource) -> Result<Resource, KustomizeError> {
    let cloud = text(config, "cloud");
    if cloud != "gke" {
        return Err(KustomizeError::Other(format!(
            "IAMPolicyGenerator {}: cloud provider {cloud:?} is not supported (only gke)",
            config.name()
        )));
    }
    let at = |path: &[&str]| config.node.str_at(path).unwrap_or("").to_string();
    let mut metadata = Node::mapping();
    metadata.set("name", Node::string(at(&["kubernetesService", "name"])));
    let namespace = at(&["kubernetesService", "namespace"]);
    if !namespace.is_empty() {
        metadata.set("namespace", Node::string(namespace));
    }
    let mut annotations = Node::mapping();
    annotations.set(
        "iam.gke.io/gcp-service-account",
        Node::string(format!(
            "{}@{}.iam.gserviceaccount.com",
            at(&["serviceAccount", "name"]),
            at(&["serviceAccount", "projectId"])
        )),
    );
    metadata.set("annotations", annotations);
    let mut sa = Node::mapping();
    sa.set("apiVersion", Node::string("v1"));
    sa.set("kind", Node::string("ServiceAccount"));
    sa.set("metadata", metadata);
    Ok(Resource::new(sa))
}

/// The builtin plugins kustomize can load: its generator and transformer factories.
/// `SortOrderTransformer` is not one (kustomize keeps it to the top kustomization's
/// `sortOptions`).
const KUSTOMIZE_BUILTINS: &[&str] = &[
    "ConfigMapGenerator",
    "IAMPolicyGenerator",
    "SecretGenerator",
    "HelmChartInflationGenerator",
    "AnnotationsTransformer",
    "HashTransformer",
    "ImageTagTransformer",
    "LabelTransformer",
    "NamespaceTransformer",
    "PatchJson6902Transformer",
    "PatchStrategicMergeTransformer",
    "PatchTransformer",
    "PrefixSuffixTransformer",
    "PrefixTransformer",
    "SuffixTransformer",
    "ReplacementTransformer",
    "ReplicaCountTransformer",
    "ValueAddTransformer",
];

/// A builtin plugin's Gvk as kustomize names it (`NamespaceTransformer.builtin.[noGrp]`),
/// `builtin` read as a version.
fn plugin_gvk(config: &Resource) -> String {
    let (group, version) = config
        .api_version()
        .split_once('/')
        .unwrap_or(("", config.api_version()));
    let or = |s: &str, d: &'static str| if s.is_empty() { d } else { s }.to_string();
    format!(
        "{}.{}.{}",
        or(config.kind(), "[noKind]"),
        or(version, "[noVer]"),
        or(group, "[noGrp]")
    )
}

/// A boolean field of a builtin plugin's configuration, read as kustomize unmarshals it: a
/// YAML boolean (`true`, `True`), false when missing or null, and anything else (`"true"`,
/// `yes`, `1`) refused as Go's JSON decoding refuses it.
fn config_bool(config: &Resource, key: &str) -> Result<bool, KustomizeError> {
    let Some(node) = config.node.get(key) else {
        return Ok(false);
    };
    let found = match plumb_yaml::to_json(node)? {
        serde_json::Value::Bool(b) => return Ok(b),
        serde_json::Value::Null => return Ok(false),
        serde_json::Value::String(_) => "string",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    };
    let namespace = match config.namespace() {
        "" => "[noNs]",
        ns => ns,
    };
    Err(KustomizeError::Other(format!(
        "plugin {}/{}.{namespace} fails configuration: unmarshalling {} config: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {found} into Go struct field .{key} of type bool",
        plugin_gvk(config),
        config.name(),
        config.kind()
    )))
}

/// The error for a builtin plugin plumb does not run: kustomize's own when kustomize has no
/// such builtin either.
pub fn not_supported(config: &Resource) -> KustomizeError {
    if !KUSTOMIZE_BUILTINS.contains(&config.kind()) {
        return KustomizeError::Other(format!("unable to load builtin {}", plugin_gvk(config)));
    }
    KustomizeError::Unsupported(format!(
        "builtin plugin {} ({}) is not supported by plumb yet",
        config.kind(),
        config.name()
    ))
}
