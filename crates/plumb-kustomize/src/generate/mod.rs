//! Generators: `configMapGenerator`, `secretGenerator` and builtin generator configs listed under
//! `generators:` make ConfigMaps and Secrets from literals, files and `.env` files. Their names
//! get a content-hash suffix once, at the end of the whole build ([`add_name_hashes`]), so the
//! hash covers what every later step did to the object.
//!
//! ```
//! use plumb_kustomize::generate::hash::content_hash;
//! let docs = plumb_yaml::parse_documents(
//!     "cm.yaml",
//!     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k1: v1\n",
//! )
//! .unwrap();
//! assert_eq!(content_hash(&docs[0]).unwrap(), "8f7tbf6t6m");
//! ```

pub mod absorb;
pub mod args;
pub mod configmap;
pub mod hash;
pub mod kv;
pub mod object;
pub mod secret;

use crate::build::ResourceList;
use crate::context::Context;
use crate::error::KustomizeError;
use crate::kustomization::Kustomization;
use crate::resource::Resource;
use crate::transform::builtin;
use args::{GeneratedKind, GeneratorArgs};
use std::path::Path;

/// Runs the `configMapGenerator` and `secretGenerator` entries of one kustomization over `list`,
/// in kustomize's order: every ConfigMap entry, then every Secret entry.
pub fn run(
    k: &Kustomization,
    list: &mut ResourceList,
    ctx: &Context,
) -> Result<(), KustomizeError> {
    let global = args::global_options(&k.path, k.field("generatorOptions"))?;
    for (field, kind) in [
        ("configMapGenerator", GeneratedKind::ConfigMap),
        ("secretGenerator", GeneratedKind::Secret),
    ] {
        if let Some(node) = k.field(field) {
            for generator in args::kustomization_entries(&k.path, field, node, kind, &global)? {
                generate_one(&generator, k.dir(), list, ctx)?;
            }
        }
    }
    Ok(())
}

/// Runs the builtin generator configurations of a kustomization's `generators:` field (loaded
/// by the build), after [`run`]. Paths in the configurations (files, `.env` files) start from
/// the kustomization's directory, wherever the configuration itself lives, as in kustomize;
/// `generatorOptions` do not apply to them.
pub fn run_configs(
    k: &Kustomization,
    configs: &[Resource],
    list: &mut ResourceList,
    ctx: &Context,
) -> Result<(), KustomizeError> {
    for config in configs {
        let kind = match builtin::builtin_kind(config)? {
            "ConfigMapGenerator" => GeneratedKind::ConfigMap,
            "SecretGenerator" => GeneratedKind::Secret,
            _ => {
                if builtin::run_generator(config, list)? {
                    continue;
                }
                return Err(builtin::not_supported(config));
            }
        };
        let file = config
            .node
            .span
            .as_ref()
            .map(|s| s.file.path().to_path_buf())
            .unwrap_or_else(|| k.path.clone());
        let generator = args::plugin_config(&file, &config.node, kind)?;
        generate_one(&generator, k.dir(), list, ctx)?;
    }
    Ok(())
}

/// Makes one generator's resource and absorbs it into `list`.
fn generate_one(
    generator: &GeneratorArgs,
    root: &Path,
    list: &mut ResourceList,
    ctx: &Context,
) -> Result<(), KustomizeError> {
    let fail = |message: String| KustomizeError::Generator {
        path: generator.declared_in.clone(),
        line: generator.line,
        message,
    };
    let sources = kv::Sources {
        literals: &generator.literals,
        files: &generator.files,
        envs: &generator.envs,
        root,
    };
    let pairs = kv::load(&sources, ctx).map_err(|e| match e {
        kv::LoadError::Invalid(message) => fail(message),
        // A file source fetched over HTTP that could not be had: like a remote resource, the
        // build is unavailable, not wrong, unless the server said the URL names nothing.
        kv::LoadError::Fetch {
            url,
            message,
            broken,
        } => KustomizeError::RemoteFetch {
            what: "generator file".into(),
            url,
            // Placed as the generator's other errors are: its file and line first.
            message: fail(message).to_string(),
            broken,
        },
    })?;
    let mut node = match generator.kind {
        GeneratedKind::ConfigMap => configmap::make(generator, pairs),
        GeneratedKind::Secret => secret::make(generator, pairs),
    }
    .map_err(fail)?;
    node.span = generator.span.clone();
    // kustomize round-trips the new object through YAML, which refuses some characters.
    plumb_yaml::to_json(&node).map_err(|e| {
        fail(format!(
            "builtin {}Generator marshal: {}",
            generator.kind.as_str(),
            e.message
        ))
    })?;
    let mut resource = Resource::new(node);
    resource.needs_hash = !generator.options.disable_name_suffix_hash;
    resource.behavior = Some(generator.behavior.as_str().to_string());
    absorb::absorb(list, resource, generator.behavior)
        .map_err(|e| fail(format!("merging from generator {:?}: {e}", generator.name)))
}

/// Appends the content hash to the name of every resource that asked for one. Runs once per
/// build, after every level's transformers and before name references are fixed, so that
/// references follow the rename.
pub fn add_name_hashes(list: &mut ResourceList) -> Result<(), KustomizeError> {
    for resource in list.resources.iter_mut().filter(|r| r.needs_hash) {
        let hash = hash::content_hash(&resource.node)
            .map_err(|e| KustomizeError::Other(format!("hashing {}: {e}", resource.id())))?;
        let name = format!("{}-{hash}", resource.name());
        resource.set_name(&name);
        resource.needs_hash = false;
    }
    Ok(())
}
