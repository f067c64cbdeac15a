//! The last step of every build: kustomize removes its internal build annotations and, in doing
//! so, rewrites every resource's annotations as a map of strings (`port: 8080` comes out as
//! `port: "8080"`; an annotation map that is null, empty or left empty disappears). Resources marked
//! `config.kubernetes.io/local-config: "true"` are dropped from the output.

use crate::kustomization::Kustomization;
use crate::resource::{Origin, Resource};
use plumb_yaml::{Node, NodeKind};
use std::path::{Component, Path, PathBuf};

/// Annotations kustomize uses internally while building, never printed.
pub const BUILD_ANNOTATIONS: &[&str] = &[
    "internal.config.kubernetes.io/previousNames",
    "internal.config.kubernetes.io/previousKinds",
    "internal.config.kubernetes.io/previousNamespaces",
    "internal.config.kubernetes.io/prefixes",
    "internal.config.kubernetes.io/suffixes",
    "internal.config.kubernetes.io/annotationsTransformerApplied",
    "internal.config.kubernetes.io/labelsTransformerApplied",
    "internal.config.kubernetes.io/generatorBehavior",
    "internal.config.kubernetes.io/needsHashSuffix",
    "kustomize.config.k8s.io/id",
    "config.k8s.io/id",
];

const LOCAL_CONFIG: &str = "config.kubernetes.io/local-config";
const ORIGIN: &str = "config.kubernetes.io/origin";
const TRANSFORMATIONS: &str = "alpha.config.kubernetes.io/transformations";

/// Drops local-config resources and normalises the rest's annotations.
pub fn finalize(resources: &mut Vec<Resource>, meta: &BuildMetadata) {
    resources.retain(|r| r.node.str_at(&["metadata", "annotations", LOCAL_CONFIG]) != Some("true"));
    for r in resources.iter_mut() {
        meta.annotate(r);
        strip(&mut r.node);
    }
}

/// The top kustomization's `buildMetadata` options that add annotations.
#[derive(Debug, Clone, Default)]
pub struct BuildMetadata {
    pub origin_annotations: bool,
    pub transformer_annotations: bool,
    /// Paths in the annotations are relative to this directory (the top kustomization's).
    pub top_dir: PathBuf,
}

impl BuildMetadata {
    /// Reads the options from the top kustomization.
    pub fn of(k: &Kustomization) -> BuildMetadata {
        let options: Vec<&str> = k
            .field("buildMetadata")
            .and_then(Node::as_sequence)
            .map(|v| v.iter().filter_map(Node::scalar_value).collect())
            .unwrap_or_default();
        let origin_annotations = options.contains(&"originAnnotations");
        let transformer_annotations = options.contains(&"transformerAnnotations");
        // Only the annotations use it; resolving it costs a `readlink` a component.
        let top_dir = if origin_annotations || transformer_annotations {
            crate::loader::absolute(k.dir())
        } else {
            PathBuf::new()
        };
        BuildMetadata {
            origin_annotations,
            transformer_annotations,
            top_dir,
        }
    }

    fn annotate(&self, r: &mut Resource) {
        let mut add = Vec::new();
        if self.origin_annotations {
            if let Some(origin) = &r.origin {
                add.push((ORIGIN, self.origin_text(origin, "")));
            }
        }
        if self.transformer_annotations && !r.transformations.is_empty() {
            let text: String = r
                .transformations
                .iter()
                .map(|t| {
                    let body = self.origin_text(t, "  ");
                    format!("- {}", &body[2..])
                })
                .collect();
            add.push((TRANSFORMATIONS, text));
        }
        if add.is_empty() {
            return;
        }
        let Some(meta) = r.node.ensure_mapping("metadata") else {
            return;
        };
        let Some(annotations) = meta.ensure_mapping("annotations") else {
            return;
        };
        for (key, value) in add {
            annotations.set(key, Node::string(value));
        }
    }

    /// kustomize's YAML for an origin, each line indented by `indent`.
    fn origin_text(&self, origin: &Origin, indent: &str) -> String {
        match origin {
            Origin::File(path) => format!("{indent}path: {}\n", self.relative(path)),
            Origin::Plugin {
                configured_in,
                kind,
                name,
                namespace,
            } => {
                let mut out = format!(
                    "{indent}configuredIn: {}\n{indent}configuredBy:\n{indent}  apiVersion: builtin\n{indent}  kind: {kind}\n",
                    self.relative(configured_in)
                );
                if !name.is_empty() {
                    out.push_str(&format!("{indent}  name: {name}\n"));
                }
                if !namespace.is_empty() {
                    out.push_str(&format!("{indent}  namespace: {namespace}\n"));
                }
                out
            }
        }
    }

    fn relative(&self, path: &Path) -> String {
        relative_path(&self.top_dir, &crate::loader::absolute(path))
    }
}

/// `to` relative to the directory `from`, with `..` where needed (Go's `filepath.Rel`).
pub fn relative_path(from: &Path, to: &Path) -> String {
    let a: Vec<Component> = from.components().collect();
    let b: Vec<Component> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_string(); a.len() - common];
    parts.extend(
        b[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().to_string()),
    );
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// The origin of a resource made by, or changed by, a plugin configuration: the file the
/// configuration came from (the kustomization itself for inline configurations).
pub fn plugin_origin(config: &Resource, kustomization: &Path) -> Origin {
    let configured_in = match &config.origin {
        Some(Origin::File(path)) => path.clone(),
        _ => kustomization.to_path_buf(),
    };
    Origin::Plugin {
        configured_in,
        kind: config.kind().to_string(),
        name: config.name().to_string(),
        namespace: config.namespace().to_string(),
    }
}

fn strip(node: &mut Node) {
    let Some(meta) = node.get_mut("metadata") else {
        return;
    };
    let Some(annotations) = meta.get("annotations") else {
        return;
    };
    // kustomize reads annotations as a map of strings and writes back the map it read: one
    // that is null or empty is not written at all.
    if annotations.is_null() || annotations.as_mapping().is_some_and(Vec::is_empty) {
        meta.remove("annotations");
        return;
    }
    let Some(entries) = annotations.as_mapping() else {
        return;
    };
    let kept: Vec<(Node, Node)> = entries
        .iter()
        .filter(|(k, _)| !BUILD_ANNOTATIONS.contains(&k.scalar_value().unwrap_or("")))
        .map(|(k, v)| {
            let text = match &v.kind {
                NodeKind::Scalar(s) => s.value.to_string(),
                _ => String::new(),
            };
            (k.clone(), Node::string(text).with_span(v.span.clone()))
        })
        .collect();
    if kept.is_empty() {
        meta.remove("annotations");
    } else {
        meta.set("annotations", Node::new(NodeKind::Mapping(kept)));
    }
}
