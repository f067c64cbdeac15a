//! The last step of every build: kustomize removes its internal build annotations and, in doing
//! so, rewrites every resource's annotations as a map of strings (`port: 8080` comes out as
//! `port: "8080"`; an annotation map left empty disappears). Resources marked
//! `config.kubernetes.io/local-config: "true"` are dropped from the output.

use crate::resource::Resource;
use plumb_yaml::{Node, NodeKind};

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

/// Drops local-config resources and normalises the rest's annotations.
pub fn finalize(resources: &mut Vec<Resource>) {
    resources.retain(|r| r.node.str_at(&["metadata", "annotations", LOCAL_CONFIG]) != Some("true"));
    for r in resources.iter_mut() {
        strip(&mut r.node);
    }
}

fn strip(node: &mut Node) {
    let Some(meta) = node.get_mut("metadata") else {
        return;
    };
    let Some(entries) = meta.get("annotations").and_then(Node::as_mapping) else {
        return;
    };
    if entries.is_empty() {
        return;
    }
    let kept: Vec<(Node, Node)> = entries
        .iter()
        .filter(|(k, _)| !BUILD_ANNOTATIONS.contains(&k.scalar_value().unwrap_or("")))
        .map(|(k, v)| {
            let text = match &v.kind {
                NodeKind::Scalar(s) => s.value.clone(),
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
