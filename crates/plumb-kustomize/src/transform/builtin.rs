//! The `transformers:` and `generators:` fields: plugin configurations (files, kustomization
//! directories whose output is configurations, or inline YAML) naming kustomize's builtin
//! plugins (`apiVersion: builtin`). plumb runs the builtin plugins it implements; exec and Go
//! plugins, and builtins not implemented yet, are refused with an error naming the plugin,
//! never skipped.

use crate::build::ResourceList;
use crate::error::KustomizeError;
use crate::fieldspec::FieldSpec;
use crate::resource::Resource;
use crate::transform::name_prefix_suffix;
use plumb_yaml::Node;

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

/// Runs one transformer configuration over `list`. Returns `Ok(false)` when the kind is a
/// builtin this module does not run (the caller may offer it to another step).
pub fn run_transformer(config: &Resource, list: &mut ResourceList) -> Result<bool, KustomizeError> {
    let kind = builtin_kind(config)?;
    match kind {
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

/// The error for a builtin plugin plumb does not run.
pub fn not_supported(config: &Resource) -> KustomizeError {
    KustomizeError::Unsupported(format!(
        "builtin plugin {} ({}) is not supported by plumb yet",
        config.kind(),
        config.name()
    ))
}
