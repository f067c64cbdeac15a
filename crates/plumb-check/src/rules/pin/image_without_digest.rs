//! PIN001: container images referenced by a tag alone.

use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use plumb_flux::model::{Object, HELM_GROUP};
use plumb_yaml::Node;
use serde_json::Value;
use std::collections::HashSet;

/// ## What it does
/// Finds container images referenced by a tag without a digest: in the `containers`,
/// `initContainers` and `ephemeralContainers` of every workload (a Pod, anything with a pod
/// template such as Deployments, StatefulSets, DaemonSets, ReplicaSets and Jobs, and the job
/// template of a CronJob), and in a HelmRelease's `values` wherever a field is plainly an image:
/// `image: repository:tag`, or a `repository` next to a `tag`.
///
/// The image is judged as the cluster receives it, after the Kustomization's `images:`,
/// patches and substitution; the finding points at the image text in the repository.
///
/// ## Why is this bad?
/// A tag is a name the registry's owner can point at other content at any time. Two nodes
/// pulling `podinfo:6.8.0` a week apart may run different code, a rollback to a tag does not
/// restore what ran before, and a compromised registry account can ship into the cluster
/// without a single commit to this repository. An image without any tag is `:latest`, which
/// moves on every release. Only a digest names the bytes that were reviewed.
///
/// ## Example
/// ```yaml
/// containers:
///   - name: podinfo
///     image: ghcr.io/stefanprodan/podinfo:6.8.0
/// ```
///
/// Use instead:
/// ```yaml
/// containers:
///   - name: podinfo
///     # the tag stays for people; the digest is what the node pulls
///     image: ghcr.io/stefanprodan/podinfo:6.8.0@sha256:369679b046b90a908e16c44449046e98d4821a20fe5ca1b989b96a2a0d8d8d75
/// ```
///
/// In HelmRelease values, put the digest in the tag (`tag: 6.8.0@sha256:...`) or in the chart's
/// `digest` field when it has one.
pub struct ImageWithoutDigest;

impl Rule for ImageWithoutDigest {
    fn code(&self) -> &'static str {
        "PIN001"
    }

    fn summary(&self) -> &'static str {
        "a container image referenced by tag only, not by digest"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        let mut seen = HashSet::new();
        for entry in &cx.build.entries {
            for k in &entry.kustomizations {
                for object in &k.objects {
                    let mut found = Vec::new();
                    workload_images(object, &mut found);
                    if object.is(HELM_GROUP, "HelmRelease") {
                        if let Some(values) = object.value.pointer("/spec/values") {
                            let mut path = vec![Step::Key("spec"), Step::Key("values")];
                            value_images(values, &mut path, &mut found);
                        }
                    }
                    for image in found {
                        let location = origin_at(object, &image.path)
                            .and_then(|node| Location::of(node, cx.root));
                        if !seen.insert((location.clone(), image.reference.clone())) {
                            continue;
                        }
                        out.push(
                            finding(
                                &image.reference,
                                image.implicit_latest,
                                &object.display_id(),
                            )
                            .at(location)
                            .with_chain(&k.chain),
                        );
                    }
                }
            }
        }
    }
}

fn finding(reference: &str, implicit_latest: bool, object: &str) -> Finding {
    let message = if implicit_latest {
        format!("image `{reference}` of {object} has neither tag nor digest: it is `:latest`, whatever that is when a node pulls it")
    } else {
        format!("image `{reference}` of {object} is referenced by its tag only: the registry can move the tag to other content")
    };
    let shown = if implicit_latest {
        format!("{reference}:<version>")
    } else {
        reference.to_string()
    };
    Finding::new(
        "PIN001",
        message,
        format!("pin the digest: `{shown}@sha256:<digest>` (`crane digest {shown}` or `docker buildx imagetools inspect {shown}` prints it)"),
    )
}

/// One step of a path from the object's root to a value.
#[derive(Debug, Clone)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
    /// A container in a list, found by its `name` in the origin (patches may reorder the list).
    Container(usize, &'a str),
}

/// An image without a digest, and where its text is.
struct Unpinned<'a> {
    reference: String,
    implicit_latest: bool,
    path: Vec<Step<'a>>,
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

const CONTAINER_LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

fn workload_images<'a>(object: &'a Object, out: &mut Vec<Unpinned<'a>>) {
    for spec_path in pod_spec_paths(object.kind()) {
        let Some(spec) = spec_path.iter().try_fold(&object.value, |v, k| v.get(*k)) else {
            continue;
        };
        for list in CONTAINER_LISTS {
            let Some(containers) = spec.get(list).and_then(Value::as_array) else {
                continue;
            };
            for (i, container) in containers.iter().enumerate() {
                let Some(image) = container.get("image").and_then(Value::as_str) else {
                    continue;
                };
                if is_pinned(image) || image.contains("${") || image.trim().is_empty() {
                    continue;
                }
                let name = container.get("name").and_then(Value::as_str).unwrap_or("");
                let mut path: Vec<Step<'a>> = spec_path.iter().map(|k| Step::Key(k)).collect();
                path.push(Step::Key(list));
                path.push(Step::Container(i, name));
                path.push(Step::Key("image"));
                out.push(Unpinned {
                    reference: image.to_string(),
                    implicit_latest: !has_tag(image),
                    path,
                });
            }
        }
    }
}

/// HelmRelease values: `image: repo:tag` strings and `repository` + `tag` mappings.
fn value_images<'a>(value: &'a Value, path: &mut Vec<Step<'a>>, out: &mut Vec<Unpinned<'a>>) {
    match value {
        Value::Object(map) => {
            if let (Some(Value::String(repository)), Some(tag)) =
                (map.get("repository"), map.get("tag"))
            {
                let tag = match tag {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => String::new(),
                };
                let digest = map
                    .get("digest")
                    .and_then(Value::as_str)
                    .is_some_and(|d| !d.trim().is_empty());
                if looks_like_repository(repository)
                    && !tag.is_empty()
                    && !digest
                    && !is_pinned(&tag)
                    && !tag.contains("${")
                {
                    let mut at = path.clone();
                    at.push(Step::Key("tag"));
                    out.push(Unpinned {
                        reference: format!("{repository}:{tag}"),
                        implicit_latest: false,
                        path: at,
                    });
                }
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

/// The origin node at `path`, or the deepest one on the way there (a patch may have added
/// what the origin lacks).
fn origin_at<'n>(object: &'n Object, path: &[Step<'_>]) -> Option<&'n Node> {
    let mut node = object.origin.as_ref()?;
    for step in path {
        let next = match step {
            Step::Key(k) => node.get(k),
            Step::Index(i) => node.as_sequence().and_then(|s| s.get(*i)),
            Step::Container(i, name) => node.as_sequence().and_then(|items| {
                items
                    .iter()
                    .find(|c| !name.is_empty() && c.str_at(&["name"]) == Some(name))
                    .or_else(|| items.get(*i))
            }),
        };
        match next {
            Some(next) => node = next,
            None => break,
        }
    }
    Some(node)
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
fn has_tag(reference: &str) -> bool {
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
fn looks_like_tagged_image(text: &str) -> bool {
    let name = text.split('@').next().unwrap_or(text);
    looks_like_repository(name)
        && has_tag(name)
        && name
            .rsplit_once(':')
            .is_some_and(|(repo, tag)| !repo.is_empty() && !tag.is_empty() && !tag.contains('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
