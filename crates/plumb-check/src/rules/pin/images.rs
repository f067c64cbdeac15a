//! Where an object names container images: the pod specs of workloads, the container specs
//! and `image` fields of custom resources, and a HelmRelease's values. Each image is found
//! with its path in the object, so that a finding can point at the text that wrote it.

use plumb_flux::model::Object;
use plumb_yaml::Node;
use serde_json::{Map, Value};

/// One step of a path from the object's root to a value.
#[derive(Debug, Clone)]
pub(super) enum Step<'a> {
    Key(&'a str),
    Index(usize),
    /// A container in a list, found by its `name` in the origin (patches may reorder the list).
    Container(usize, &'a str),
}

/// An image without a digest, and where its text is.
#[derive(Debug, Clone)]
pub(super) struct Unpinned<'a> {
    pub reference: String,
    pub implicit_latest: bool,
    pub path: Vec<Step<'a>>,
}

const CONTAINER_LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

/// The images an object's own fields name (not a HelmRelease's values: [`value_images`]).
///
/// Kubernetes' own kinds name images only in pod specs, so only those are read; Flux's and
/// flux-operator's kinds name images that are not pulled (an ImageRepository's `spec.image` is
/// a repository to scan, a ResourceSet's template and a ResourceSetInputProvider's inputs are
/// text the objects it generates are made of, checked as those objects); any other kind is a
/// custom resource, read whole.
pub(super) fn object_images(object: &Object) -> Vec<Unpinned<'_>> {
    let mut out = Vec::new();
    let group = object.group();
    if is_kubernetes_group(group) {
        workload_images(object, &mut out);
    } else if !group.ends_with("fluxcd.io") && group != "fluxcd.controlplane.io" {
        custom_resource_images(&object.value, &mut Vec::new(), false, &mut out);
    }
    out
}

/// The core group, the unqualified built-in groups (`apps`, `batch`) and `*.k8s.io`.
fn is_kubernetes_group(group: &str) -> bool {
    !group.contains('.') || group.ends_with(".k8s.io")
}

/// Where pod specs sit in an object, for the kinds that have them there.
fn pod_spec_paths(kind: &str) -> Vec<&'static [&'static str]> {
    let mut paths: Vec<&'static [&'static str]> = vec![
        &["spec", "template", "spec"],
        &["spec", "jobTemplate", "spec", "template", "spec"],
    ];
    match kind {
        "Pod" => paths.push(&["spec"]),
        "PodTemplate" => paths.push(&["template", "spec"]),
        _ => {}
    }
    paths
}

fn workload_images<'a>(object: &'a Object, out: &mut Vec<Unpinned<'a>>) {
    for spec_path in pod_spec_paths(object.kind()) {
        let Some(spec) = spec_path.iter().try_fold(&object.value, |v, k| v.get(*k)) else {
            continue;
        };
        let mut path: Vec<Step<'a>> = spec_path.iter().map(|k| Step::Key(k)).collect();
        for list in CONTAINER_LISTS {
            if let Some(containers) = spec.get(list).and_then(Value::as_array) {
                path.push(Step::Key(list));
                container_images(containers, &path, out);
                path.pop();
            }
        }
    }
}

/// The `image` of each container of a list: any text is an image there.
fn container_images<'a>(containers: &'a [Value], path: &[Step<'a>], out: &mut Vec<Unpinned<'a>>) {
    for (i, container) in containers.iter().enumerate() {
        let Some(image) = container.get("image").and_then(Value::as_str) else {
            continue;
        };
        if !is_checkable(image) {
            continue;
        }
        let name = container.get("name").and_then(Value::as_str).unwrap_or("");
        let mut at = path.to_vec();
        at.push(Step::Container(i, name));
        at.push(Step::Key("image"));
        out.push(Unpinned {
            reference: image.to_string(),
            implicit_latest: !has_tag(image),
            path: at,
        });
    }
}

/// A custom resource: container lists at any depth (a ScaledJob's `jobTargetRef`, an Argo
/// Rollout's template), and fields named `image` or `imageName` (CloudNativePG's `Cluster`)
/// whose text is an image reference, or whose mapping is a `repository` and a `tag`.
fn custom_resource_images<'a>(
    value: &'a Value,
    path: &mut Vec<Step<'a>>,
    in_containers: bool,
    out: &mut Vec<Unpinned<'a>>,
) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                path.push(Step::Key(key));
                match (key.as_str(), child) {
                    (list, Value::Array(items)) if CONTAINER_LISTS.contains(&list) => {
                        container_images(items, path, out);
                        for (i, item) in items.iter().enumerate() {
                            path.push(Step::Index(i));
                            custom_resource_images(item, path, true, out);
                            path.pop();
                        }
                    }
                    // A container's own image was read with its list.
                    ("image", Value::String(_)) if in_containers => {}
                    ("image" | "imageName", Value::String(image)) => {
                        if looks_like_image(image) && is_checkable(image) {
                            out.push(Unpinned {
                                reference: image.clone(),
                                implicit_latest: !has_tag(image),
                                path: path.clone(),
                            });
                        }
                    }
                    ("image", Value::Object(image)) => {
                        if let Some(found) = repository_and_tag(image, path) {
                            out.push(found);
                        }
                        custom_resource_images(child, path, false, out);
                    }
                    _ => custom_resource_images(child, path, false, out),
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                path.push(Step::Index(i));
                custom_resource_images(child, path, false, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// HelmRelease values: `image: repository:tag` strings and `repository` + `tag` mappings.
pub(super) fn value_images<'a>(
    value: &'a Value,
    path: &mut Vec<Step<'a>>,
    out: &mut Vec<Unpinned<'a>>,
) {
    match value {
        Value::Object(map) => {
            if let Some(found) = repository_and_tag(map, path) {
                out.push(found);
            }
            for (key, child) in map {
                if key == "image" {
                    if let Value::String(image) = child {
                        if looks_like_tagged_image(image) && !is_pinned(image) {
                            let mut at = path.clone();
                            at.push(Step::Key(key));
                            out.push(Unpinned {
                                reference: image.clone(),
                                implicit_latest: false,
                                path: at,
                            });
                        }
                        continue;
                    }
                }
                path.push(Step::Key(key));
                value_images(child, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                path.push(Step::Index(i));
                value_images(child, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// A mapping that names an image as a `repository` (and a `registry`, when it has one) next
/// to a `tag` without a digest; the path is the tag's, the part that needs the digest.
fn repository_and_tag<'a>(map: &'a Map<String, Value>, path: &[Step<'a>]) -> Option<Unpinned<'a>> {
    let repository = map.get("repository")?.as_str()?;
    let tag = scalar_text(map.get("tag")?)?;
    let digest = map
        .get("digest")
        .and_then(Value::as_str)
        .is_some_and(|d| !d.trim().is_empty());
    if !looks_like_repository(repository)
        || tag.is_empty()
        || digest
        || is_pinned(&tag)
        || tag.contains("${")
    {
        return None;
    }
    let reference = match map.get("registry").and_then(Value::as_str) {
        Some(registry) if looks_like_repository(registry) && !repository.starts_with(registry) => {
            format!("{}/{repository}:{tag}", registry.trim_end_matches('/'))
        }
        _ => format!("{repository}:{tag}"),
    };
    let mut at = path.to_vec();
    at.push(Step::Key("tag"));
    Some(Unpinned {
        reference,
        implicit_latest: false,
        path: at,
    })
}

/// A string or a number as written (a tag `1.27` reads as a number).
pub(super) fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The origin node at `path` when it has a position (it came from a base, a patch file or a
/// component); else the object's `kind`, its `metadata.name` or the object itself, whichever
/// has one (what a JSON 6902 patch changed, or a patch written inline, has none).
pub(super) fn origin_at<'n>(object: &'n Object, path: &[Step<'_>]) -> Option<&'n Node> {
    let root = object.origin.as_deref()?;
    let mut node = Some(root);
    for step in path {
        node = node.and_then(|node| match step {
            Step::Key(k) => node.get(k),
            Step::Index(i) => node.as_sequence().and_then(|s| s.get(*i)),
            Step::Container(i, name) => node.as_sequence().and_then(|items| {
                items
                    .iter()
                    .find(|c| !name.is_empty() && c.str_at(&["name"]) == Some(name))
                    .or_else(|| items.get(*i))
            }),
        });
    }
    node.into_iter()
        .chain(root.get("kind"))
        .chain(root.get_path(&["metadata", "name"]))
        .chain([root])
        .find(|n| has_position(n))
}

/// Whether a node's span is a place in its file. A patch written inline in a
/// `kustomization.yaml` as a quoted string, or in `patchesStrategicMerge`, is parsed as a text
/// of its own that carries the kustomization's path, so its lines are not that file's lines:
/// such a span is no position.
fn has_position(node: &Node) -> bool {
    let Some(span) = &node.span else {
        return false;
    };
    std::fs::metadata(span.file.path()).is_ok_and(|m| m.len() == span.file.text().len() as u64)
}

/// A reference that can be judged: not empty, not a `${VAR}` left for substitution, no digest.
/// Whether an image can be judged: written out, not a variable or template expression a tool
/// fills in later (`${TAG}`, `<< inputs.digest >>`, `{{ .Values.tag }}`), and not pinned.
fn is_checkable(image: &str) -> bool {
    !image.trim().is_empty()
        && !["${", "<<", "{{"].iter().any(|t| image.contains(t))
        && !is_pinned(image)
}

/// Whether an image reference (or a tag) carries a digest: `@algorithm:hex`.
pub(crate) fn is_pinned(reference: &str) -> bool {
    reference.rsplit_once('@').is_some_and(|(_, digest)| {
        digest.split_once(':').is_some_and(|(algorithm, hex)| {
            !algorithm.is_empty() && hex.len() >= 32 && hex.chars().all(|c| c.is_ascii_hexdigit())
        })
    })
}

/// Whether a reference names a tag: a `:` after the last `/` (a `:` before it is a port).
pub(super) fn has_tag(reference: &str) -> bool {
    let name = reference.split('@').next().unwrap_or(reference);
    name.rsplit('/')
        .next()
        .is_some_and(|last| last.contains(':'))
}

fn looks_like_repository(text: &str) -> bool {
    !text.is_empty()
        && !text.contains("://")
        && !text.chars().any(char::is_whitespace)
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "./-_:".contains(c))
}

/// `registry/name:tag`: a repository and a tag, nothing else.
pub(super) fn looks_like_tagged_image(text: &str) -> bool {
    let name = text.split('@').next().unwrap_or(text);
    looks_like_repository(name)
        && has_tag(name)
        && name
            .rsplit_once(':')
            .is_some_and(|(repo, tag)| !repo.is_empty() && !tag.is_empty() && !tag.contains('/'))
}

/// A custom resource's `image` text that is an image reference: a registry path or a tag
/// (`/` or `:`), in the characters references are made of (no template, no glob, no URL).
fn looks_like_image(text: &str) -> bool {
    let name = text.split('@').next().unwrap_or(text);
    (name.contains('/') || name.contains(':'))
        && looks_like_repository(name)
        && !name.ends_with([':', '/'])
        && !name.starts_with([':', '/', '.', '-'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn digests_tags_and_ports() {
        assert!(is_pinned(
            "nginx:1.27@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        ));
        assert!(is_pinned(
            "6.8.0@sha256:369679b046b90a908e16c44449046e98d4821a20fe5ca1b989b96a2a0d8d8d75"
        ));
        assert!(!is_pinned("nginx:1.27"));
        assert!(!is_pinned("nginx@latest"));
        assert!(has_tag("registry:5000/app:1.0"));
        assert!(!has_tag("registry:5000/app"));
        assert!(looks_like_tagged_image("ghcr.io/org/app:v1"));
        assert!(!looks_like_tagged_image("enabled"));
        assert!(!looks_like_tagged_image("https://example.com:443/x"));
    }

    #[test]
    fn custom_resource_image_fields() {
        assert!(looks_like_image("ghcr.io/cloudnative-pg/postgresql:17.2"));
        assert!(looks_like_image("quay.io/containerdisks/fedora"));
        assert!(!looks_like_image("postgres"));
        assert!(!looks_like_image("*:latest"));
        assert!(!looks_like_image("<< inputs.image >>"));
        assert!(!looks_like_image("{{ .Values.image }}"));
        assert!(!looks_like_image("https://example.com/disk.img"));
        let object = Object {
            value: json!({
                "apiVersion": "example.com/v1",
                "kind": "Thing",
                "spec": {
                    "imageName": "ghcr.io/org/db:17",
                    "sidecars": {"image": {"registry": "docker.io", "repository": "org/cache", "tag": 7}},
                    "runner": {"template": {"containers": [{"name": "run", "image": "busybox"}]}},
                    "policy": {"image": "*"},
                    "pinned": {"image": "ghcr.io/org/app:1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
                }
            }),
            origin: None,
        };
        let found: Vec<String> = object_images(&object)
            .into_iter()
            .map(|u| u.reference)
            .collect();
        assert_eq!(
            found,
            ["ghcr.io/org/db:17", "docker.io/org/cache:7", "busybox"]
        );
        let flux = Object {
            value: json!({
                "apiVersion": "image.toolkit.fluxcd.io/v1",
                "kind": "ImageRepository",
                "spec": {"image": "ghcr.io/org/app"}
            }),
            origin: None,
        };
        assert!(object_images(&flux).is_empty());
        // pull-request-wars-fluxcd/platform: a provider's input and a ResourceSet's template.
        let operator = |kind: &str, spec: Value| Object {
            value: json!({"apiVersion": "fluxcd.controlplane.io/v1", "kind": kind, "spec": spec}),
            origin: None,
        };
        let provider = operator(
            "ResourceSetInputProvider",
            json!({"defaultValues": {"image": "ghcr.io/org/flux-appx"}}),
        );
        assert!(object_images(&provider).is_empty());
        let template = operator(
            "ResourceSet",
            json!({"resources": [{"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "redis:7"}]}}}}]}),
        );
        assert!(object_images(&template).is_empty());
    }

    #[test]
    fn workloads_skip_what_cannot_be_judged() {
        let deployment = Object {
            value: json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "spec": {"template": {"spec": {
                    "initContainers": [
                        {"name": "init", "image": "${INIT_IMAGE}"},
                        {"name": "tpl", "image": "redis:<< inputs.tag >>@<< inputs.digest >>"},
                        {"name": "helm", "image": "org/app:{{ .Values.tag }}"},
                    ],
                    "containers": [
                        {"name": "app", "image": "ghcr.io/org/app:1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
                        {"name": "sidecar", "image": "ghcr.io/org/sidecar"},
                    ],
                }}}
            }),
            origin: None,
        };
        let found: Vec<(String, bool)> = object_images(&deployment)
            .into_iter()
            .map(|u| (u.reference, u.implicit_latest))
            .collect();
        assert_eq!(found, [("ghcr.io/org/sidecar".to_string(), true)]);
    }
}
