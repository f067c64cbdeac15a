//! Typed views of the Flux objects a build finds: Kustomizations, sources, HelmReleases and the
//! FluxInstance that may sync the cluster.
//!
//! Each view is read from the object's JSON value as the build produced it (after the parent's
//! patches and substitution), and keeps the object's original node, when there is one, so a
//! diagnostic can point at the text in the repository.

use crate::diagnostic::{Code, Diagnostic};
use plumb_yaml::Node;
use serde_json::Value;
use std::fmt;

/// The API group of Flux Kustomizations.
pub const KUSTOMIZE_GROUP: &str = "kustomize.toolkit.fluxcd.io";
/// The API group of Flux sources.
pub const SOURCE_GROUP: &str = "source.toolkit.fluxcd.io";
/// The API group of HelmReleases.
pub const HELM_GROUP: &str = "helm.toolkit.fluxcd.io";
/// The label or annotation that turns substitution off for one object.
pub const SUBSTITUTE_KEY: &str = "kustomize.toolkit.fluxcd.io/substitute";

/// The group of an `apiVersion`.
pub fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

/// A Kubernetes quantity as a number (`10Gi` in bytes, `500m` a half, `1e3`), when it parses:
/// binary and decimal suffixes as resource.Quantity reads them.
pub fn quantity(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let n: f64 = number.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        _ => return None,
    };
    Some(n * factor)
}

/// An object as `kind` `namespace`/`name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl ObjectRef {
    pub fn new(kind: &str, namespace: &str, name: &str) -> ObjectRef {
        ObjectRef {
            kind: kind.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

/// One object of a build: its value after every step, and the node it was read from.
#[derive(Debug, Clone)]
pub struct Object {
    pub value: Value,
    pub origin: Option<std::sync::Arc<Node>>,
}

impl Object {
    pub fn str_at(&self, path: &[&str]) -> Option<&str> {
        path.iter()
            .try_fold(&self.value, |v, k| v.get(k))
            .and_then(Value::as_str)
    }

    pub fn api_version(&self) -> &str {
        self.str_at(&["apiVersion"]).unwrap_or("")
    }

    pub fn kind(&self) -> &str {
        self.str_at(&["kind"]).unwrap_or("")
    }

    pub fn name(&self) -> &str {
        self.str_at(&["metadata", "name"]).unwrap_or("")
    }

    pub fn namespace(&self) -> &str {
        self.str_at(&["metadata", "namespace"]).unwrap_or("")
    }

    /// The namespace the object lands in: its own, or `default` as the API server does.
    pub fn namespace_or_default(&self) -> &str {
        match self.namespace() {
            "" => "default",
            ns => ns,
        }
    }

    pub fn group(&self) -> &str {
        group_of(self.api_version())
    }

    /// `kind/namespace/name` (`kind//name` for an object without a namespace).
    pub fn display_id(&self) -> String {
        format!("{}/{}/{}", self.kind(), self.namespace(), self.name())
    }

    /// The original node under `path`, for a diagnostic's position.
    pub fn node_at(&self, path: &[&str]) -> Option<&Node> {
        let origin = self.origin.as_deref()?;
        origin.get_path(path).or(Some(origin))
    }

    /// Whether the object is a `kind` of API group `group`. The kind is read first: it is one
    /// lookup, and for most objects asked about the answer.
    pub fn is(&self, group: &str, kind: &str) -> bool {
        self.kind() == kind && self.group() == group
    }
}

/// A `substituteFrom` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubstituteRef {
    /// `ConfigMap` or `Secret`.
    pub kind: String,
    pub name: String,
    pub optional: bool,
}

/// `spec.postBuild`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostBuild {
    /// Inline variables, in the order written.
    pub substitute: Vec<(String, String)>,
    pub substitute_from: Vec<SubstituteRef>,
    /// `substituteStrategy: Always`: substitute even when no variable is defined.
    pub always: bool,
}

/// A Flux Kustomization, the fields of its spec that decide what it builds.
#[derive(Debug, Clone)]
pub struct FluxKustomization {
    pub namespace: String,
    pub name: String,
    /// `spec.path` as written; `None` is the source's root.
    pub path: Option<String>,
    pub source_ref: ObjectRef,
    /// `dependsOn`, as `namespace/name` (the namespace defaults to this one's).
    pub depends_on: Vec<ObjectRef>,
    pub target_namespace: Option<String>,
    pub name_prefix: Option<String>,
    pub name_suffix: Option<String>,
    pub common_labels: Vec<(String, String)>,
    pub common_annotations: Vec<(String, String)>,
    /// `spec.patches` entries (`patch`, `target`).
    pub patches: Vec<Value>,
    /// `spec.images` entries.
    pub images: Vec<Value>,
    pub components: Vec<String>,
    pub post_build: Option<PostBuild>,
    pub suspend: bool,
    /// The object it was read from.
    pub object: Object,
    /// Spec fields with the wrong type: the API server would refuse the object.
    pub problems: Vec<Diagnostic>,
}

impl FluxKustomization {
    pub fn id(&self) -> ObjectRef {
        ObjectRef::new("Kustomization", &self.namespace, &self.name)
    }

    /// `namespace/name`; `entry PATH` for the stand-in of an entry directory no Kustomization
    /// syncs (it has no namespace: a real Kustomization always has one).
    pub fn key(&self) -> String {
        if self.namespace.is_empty() {
            let path = if self.name.is_empty() {
                "."
            } else {
                &self.name
            };
            return format!("entry {path}");
        }
        format!("{}/{}", self.namespace, self.name)
    }

    /// What discovery reads of a Kustomization object, as [`FluxKustomization::from_object`]
    /// reads it: `spec.path` (when a string) and the source, without the rest of the object.
    pub fn path_and_source(object: &Object) -> (Option<String>, ObjectRef) {
        let spec = object.value.get("spec");
        let path = spec
            .and_then(|s| s.get("path"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let source = spec.and_then(|s| s.get("sourceRef"));
        (path, source_ref_of(source, object.namespace_or_default()))
    }

    /// Reads a Kustomization object.
    pub fn from_object(object: Object) -> FluxKustomization {
        let namespace = object.namespace_or_default().to_string();
        let name = object.name().to_string();
        let mut problems = Vec::new();
        // Read in place: what is kept is copied field by field below.
        let null = Value::Null;
        let spec = object.value.get("spec").unwrap_or(&null);
        let mut string_field = |field: &str| -> Option<String> {
            match spec.get(field) {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => {
                    problems.push(
                        Diagnostic::error(
                            Code::InvalidSpec,
                            format!("spec.{field} must be a string, not {other}"),
                        )
                        .at(object.node_at(&["spec", field])),
                    );
                    None
                }
            }
        };
        let path = string_field("path");
        let target_namespace = string_field("targetNamespace");
        let name_prefix = string_field("namePrefix");
        let name_suffix = string_field("nameSuffix");
        if name.is_empty() {
            problems.push(
                Diagnostic::error(
                    Code::InvalidSpec,
                    "this Kustomization has no metadata.name: the API server refuses it",
                )
                .at(object.node_at(&["metadata"])),
            );
        }
        let source = spec.get("sourceRef");
        let source_ref = source_ref_of(source, &namespace);
        problems.extend(source_ref_problems(source, &source_ref, &object));
        let mut list = |k: &str| -> Vec<Value> {
            match spec.get(k) {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items.clone(),
                Some(other) => {
                    problems.push(
                        Diagnostic::error(
                            Code::InvalidSpec,
                            format!(
                                "spec.{k} must be a list, not {}: the API server refuses this Kustomization",
                                json_type(other)
                            ),
                        )
                        .at(object.node_at(&["spec", k])),
                    );
                    Vec::new()
                }
            }
        };
        let depends_on_items = list("dependsOn");
        let components_items = list("components");
        let patches = list("patches");
        let images = list("images");
        let mut depends_on = Vec::new();
        for (i, d) in depends_on_items.iter().enumerate() {
            match d.get("name").and_then(Value::as_str) {
                Some(name) if !name.is_empty() => {
                    let ns = d
                        .get("namespace")
                        .and_then(Value::as_str)
                        .unwrap_or(&namespace);
                    depends_on.push(ObjectRef::new("Kustomization", ns, name));
                }
                _ => problems.push(
                    Diagnostic::error(
                        Code::InvalidSpec,
                        format!(
                            "spec.dependsOn[{i}] must be a mapping with a `name` (and an optional `namespace`), not {}",
                            json_type(d)
                        ),
                    )
                    .at({
                        let list = object.node_at(&["spec", "dependsOn"]);
                        list.and_then(Node::as_sequence)
                            .and_then(|items| items.get(i))
                            .or(list)
                    }),
                ),
            }
        }
        let components = components_items
            .iter()
            .filter_map(|c| c.as_str().map(str::to_string))
            .collect();
        let pairs = |v: Option<&Value>| -> Vec<(String, String)> {
            v.and_then(Value::as_object)
                .map(|m| m.iter().map(|(k, v)| (k.clone(), scalar_text(v))).collect())
                .unwrap_or_default()
        };
        let common = spec.get("commonMetadata");
        let common_labels = pairs(common.and_then(|c| c.get("labels")));
        let common_annotations = pairs(common.and_then(|c| c.get("annotations")));
        let post_build = spec
            .get("postBuild")
            .filter(|p| !p.is_null())
            .map(|p| read_post_build(p, &object, &mut problems));
        let suspend = spec.get("suspend").and_then(Value::as_bool) == Some(true);
        FluxKustomization {
            namespace,
            name,
            path,
            source_ref,
            depends_on,
            target_namespace,
            name_prefix,
            name_suffix,
            common_labels,
            common_annotations,
            patches,
            images,
            components,
            post_build,
            suspend,
            object,
            problems,
        }
    }
}

fn read_post_build(p: &Value, object: &Object, problems: &mut Vec<Diagnostic>) -> PostBuild {
    let mut out = PostBuild {
        always: p.get("substituteStrategy").and_then(Value::as_str) == Some("Always"),
        ..PostBuild::default()
    };
    for (field, expected, fits) in [
        (
            "substitute",
            "a mapping of variable: value",
            Value::is_object as fn(&Value) -> bool,
        ),
        (
            "substituteFrom",
            "a list of ConfigMap and Secret references",
            Value::is_array,
        ),
    ] {
        match p.get(field) {
            None | Some(Value::Null) => {}
            Some(v) if fits(v) => {}
            Some(other) => problems.push(
                Diagnostic::error(
                    Code::InvalidSpec,
                    format!(
                        "spec.postBuild.{field} must be {expected}, not {}: the API server refuses this Kustomization",
                        json_type(other)
                    ),
                )
                .at(object.node_at(&["spec", "postBuild", field])),
            ),
        }
    }
    if let Some(map) = p.get("substitute").and_then(Value::as_object) {
        for (k, v) in map {
            match v {
                Value::String(s) => out.substitute.push((k.clone(), s.clone())),
                other => problems.push(
                    Diagnostic::error(Code::InvalidSpec, format!(
                        "spec.postBuild.substitute.{k} must be a string, not {other}: the API server refuses this Kustomization"
                    ))
                    .at(object.node_at(&["spec", "postBuild", "substitute", k]))
                    .with_help("quote the value"),
                ),
            }
        }
    }
    if let Some(items) = p.get("substituteFrom").and_then(Value::as_array) {
        for item in items {
            out.substitute_from.push(SubstituteRef {
                kind: item
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                name: item
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                optional: item.get("optional").and_then(Value::as_bool) == Some(true),
            });
        }
    }
    out
}

/// The kinds of source a Flux Kustomization's `sourceRef` may name (the CRD's enum).
pub const KUSTOMIZATION_SOURCE_KINDS: &[&str] = &[
    "GitRepository",
    "OCIRepository",
    "Bucket",
    "ExternalArtifact",
];

/// `spec.sourceRef` of a Kustomization in `namespace`: missing fields empty, the namespace the
/// Kustomization's own.
fn source_ref_of(source: Option<&Value>, namespace: &str) -> ObjectRef {
    let str_in = |k: &str| {
        source
            .and_then(|v| v.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    ObjectRef {
        kind: str_in("kind").unwrap_or_default(),
        namespace: str_in("namespace").unwrap_or_else(|| namespace.to_string()),
        name: str_in("name").unwrap_or_default(),
    }
}

/// What is wrong with a Kustomization's `spec.sourceRef`, which the API server requires, with
/// a `name` and one of [`KUSTOMIZATION_SOURCE_KINDS`].
fn source_ref_problems(
    source: Option<&Value>,
    source_ref: &ObjectRef,
    object: &Object,
) -> Vec<Diagnostic> {
    let refused = |message: String, path: &[&str]| {
        Diagnostic::error(Code::InvalidSpec, message).at(object.node_at(path))
    };
    match source {
        None | Some(Value::Null) => {
            return vec![refused(
            "this Kustomization has no spec.sourceRef: the API server refuses it".into(),
            &["spec"],
        )
        .with_help(
            "name the source it builds from: `sourceRef: {kind: GitRepository, name: flux-system}`",
        )]
        }
        Some(v) if !v.is_object() => {
            return vec![refused(
                format!(
                    "spec.sourceRef must be a mapping with `kind` and `name`, not {}",
                    json_type(v)
                ),
                &["spec", "sourceRef"],
            )]
        }
        Some(_) => {}
    }
    let mut out = Vec::new();
    if source_ref.name.is_empty() {
        out.push(refused(
            "spec.sourceRef has no `name`: the API server refuses this Kustomization".into(),
            &["spec", "sourceRef"],
        ));
    }
    if !KUSTOMIZATION_SOURCE_KINDS.contains(&source_ref.kind.as_str()) {
        let lower = source_ref.kind.to_lowercase();
        let hint =
            plumb_kustomize::kustomization::closest(&source_ref.kind, KUSTOMIZATION_SOURCE_KINDS)
                .or_else(|| {
                    KUSTOMIZATION_SOURCE_KINDS
                        .iter()
                        .copied()
                        .find(|k| !lower.is_empty() && k.to_lowercase().starts_with(&lower))
                })
                .map(|c| format!("did you mean `{c}`?"))
                .unwrap_or_else(|| {
                    format!("it is one of {}", KUSTOMIZATION_SOURCE_KINDS.join(", "))
                });
        let what = if source_ref.kind.is_empty() {
            "spec.sourceRef has no `kind`".to_string()
        } else {
            format!(
                "spec.sourceRef.kind `{}` is not a kind a Kustomization builds from",
                source_ref.kind
            )
        };
        out.push(
            refused(
                format!("{what}: the API server refuses this Kustomization"),
                &["spec", "sourceRef", "kind"],
            )
            .with_help(hint),
        );
    }
    out
}

/// `a list`, `a string`...: what a JSON value is, for messages.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// A scalar as the text a string field would hold.
pub fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A source object (`GitRepository`, `OCIRepository`, `HelmRepository`, `Bucket`, ...).
#[derive(Debug, Clone)]
pub struct Source {
    pub id: ObjectRef,
    pub url: Option<String>,
    /// The object's `spec` (`ref`, `layerSelector`, `bucketName`...), for fetching it.
    pub spec: Value,
}

impl Source {
    /// The source an object is, if it is one.
    pub fn from_object(object: &Object) -> Option<Source> {
        let (id, url) = Source::id_and_url(object)?;
        Some(Source {
            id,
            url,
            spec: object.value.get("spec").cloned().unwrap_or(Value::Null),
        })
    }

    /// [`Source::from_object`]'s identity and URL, without a copy of the spec.
    pub fn id_and_url(object: &Object) -> Option<(ObjectRef, Option<String>)> {
        if object.group() != SOURCE_GROUP {
            return None;
        }
        Some((
            ObjectRef::new(object.kind(), object.namespace_or_default(), object.name()),
            object.str_at(&["spec", "url"]).map(str::to_string),
        ))
    }
}

/// A HelmRelease: where its chart comes from and what it waits for.
#[derive(Debug, Clone)]
pub struct HelmRelease {
    pub id: ObjectRef,
    /// `spec.chart.spec.sourceRef` or `spec.chartRef`.
    pub chart_source: Option<ObjectRef>,
    pub chart: Option<String>,
    pub depends_on: Vec<ObjectRef>,
}

impl HelmRelease {
    pub fn from_object(object: &Object) -> Option<HelmRelease> {
        if !object.is(HELM_GROUP, "HelmRelease") {
            return None;
        }
        let ns = object.namespace_or_default();
        let spec = object.value.get("spec");
        let reference = |v: Option<&Value>| {
            let v = v?;
            let kind = v.get("kind")?.as_str()?;
            let name = v.get("name")?.as_str()?;
            let namespace = v.get("namespace").and_then(Value::as_str).unwrap_or(ns);
            Some(ObjectRef::new(kind, namespace, name))
        };
        let chart_spec = spec
            .and_then(|s| s.get("chart"))
            .and_then(|c| c.get("spec"));
        let chart_source = reference(chart_spec.and_then(|c| c.get("sourceRef")))
            .or_else(|| reference(spec.and_then(|s| s.get("chartRef"))));
        let depends_on = spec
            .and_then(|s| s.get("dependsOn"))
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|d| {
                        let name = d.get("name")?.as_str()?;
                        let namespace = d.get("namespace").and_then(Value::as_str).unwrap_or(ns);
                        let kind = d
                            .get("kind")
                            .and_then(Value::as_str)
                            .unwrap_or("HelmRelease");
                        Some(ObjectRef::new(kind, namespace, name))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(HelmRelease {
            id: ObjectRef::new("HelmRelease", ns, object.name()),
            chart_source,
            chart: chart_spec
                .and_then(|c| c.get("chart"))
                .and_then(Value::as_str)
                .map(str::to_string),
            depends_on,
        })
    }
}

#[cfg(test)]
mod quantity_tests {
    use super::*;

    #[test]
    fn quantities_compare_in_bytes() {
        assert!(quantity("5Gi").unwrap() < quantity("10Gi").unwrap());
        assert!(quantity("1Gi").unwrap() > quantity("1G").unwrap());
        assert_eq!(quantity("1e3"), Some(1000.0));
        assert_eq!(quantity("2x"), None);
    }
}
