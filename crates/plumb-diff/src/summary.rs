//! What a reviewer reads first: the images and chart versions that change.

use crate::snapshot::{Cluster, ProducerId, ProducerKind};
use crate::{Action, ClusterDiff};
use serde_json::Value;

/// An image whose tag or digest changes, in every object that runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageChange {
    /// The repository (`ghcr.io/home-operations/plex`).
    pub repository: String,
    /// The tag or digest before and after (the whole reference when the repository changed).
    pub from: String,
    pub to: String,
    /// The first number of the version changes (`1.x` → `2.x`).
    pub major: bool,
    /// `entry: Kind ns/name` of each object, container names aside.
    pub objects: Vec<String>,
}

/// A HelmRelease's or helmfile release's chart that changes version (or chart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartChange {
    pub entry: String,
    pub release: ProducerId,
    pub chart: String,
    /// `name version` when the chart itself changed, else the version.
    pub from: String,
    pub to: String,
    pub major: bool,
}

/// Every container image of an object's pod template: (container name, image).
pub fn pod_images(object: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(spec) = pod_spec(object) {
        for list in ["initContainers", "containers", "ephemeralContainers"] {
            for c in spec
                .get(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let (Some(name), Some(image)) = (
                    c.get("name").and_then(Value::as_str),
                    c.get("image").and_then(Value::as_str),
                ) {
                    out.push((name.to_string(), image.to_string()));
                }
            }
        }
    }
    out
}

/// The pod spec of a Pod, a workload's template or a CronJob's job template.
pub fn pod_spec(object: &Value) -> Option<&Value> {
    match object.get("kind").and_then(Value::as_str)? {
        "Pod" => object.get("spec"),
        "CronJob" => object.pointer("/spec/jobTemplate/spec/template/spec"),
        _ => object.pointer("/spec/template/spec"),
    }
}

/// `(repository, tag, digest)` of an image reference (`latest` when neither is written).
fn split_image(image: &str) -> (&str, &str, Option<&str>) {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    let slash = name.rfind('/').map_or(0, |i| i + 1);
    match name[slash..].rfind(':') {
        Some(i) => (&name[..slash + i], &name[slash + i + 1..], digest),
        None if digest.is_some() => (name, "", digest),
        None => (name, "latest", None),
    }
}

/// The tag, with the digest's first hex digits when the digest is what tells two apart.
fn shown_ref(tag: &str, digest: Option<&str>, other_tag: &str) -> String {
    match digest {
        Some(d) if tag.is_empty() || tag == other_tag => {
            let short: String = d.trim_start_matches("sha256:").chars().take(12).collect();
            if tag.is_empty() {
                format!("@sha256:{short}")
            } else {
                format!("{tag}@sha256:{short}")
            }
        }
        _ => tag.to_string(),
    }
}

/// The leading number of a version (`v1.2.3` → 1), when it starts with one.
fn major_of(version: &str) -> Option<u64> {
    let v = version.strip_prefix('v').unwrap_or(version);
    let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn is_major(from: &str, to: &str) -> bool {
    matches!((major_of(from), major_of(to)), (Some(a), Some(b)) if a != b)
}

/// The images that change in a cluster's changed and moved objects.
pub fn images(cluster: &ClusterDiff) -> Vec<ImageChange> {
    let mut out = Vec::new();
    for p in &cluster.producers {
        for c in p
            .changes
            .iter()
            .filter(|c| matches!(c.action, Action::Changed | Action::Moved))
        {
            let (Some(b), Some(h)) = (&c.base, &c.head) else {
                continue;
            };
            let before = pod_images(b);
            for (name, new) in pod_images(h) {
                let Some((_, old)) = before.iter().find(|(n, _)| *n == name) else {
                    continue;
                };
                if *old == new {
                    continue;
                }
                let (old_repo, old_tag, old_digest) = split_image(old);
                let (new_repo, new_tag, new_digest) = split_image(&new);
                let (repository, from, to) = if old_repo == new_repo {
                    (
                        old_repo.to_string(),
                        shown_ref(old_tag, old_digest, new_tag),
                        shown_ref(new_tag, new_digest, old_tag),
                    )
                } else {
                    (new_repo.to_string(), old.clone(), new.clone())
                };
                out.push(ImageChange {
                    major: is_major(old_tag, new_tag),
                    repository,
                    from,
                    to,
                    objects: vec![format!("{}: {}", cluster.entry, c.object)],
                });
            }
        }
    }
    out
}

/// One line per (repository, from, to), with every object that runs it.
pub fn merge_images(images: &mut Vec<ImageChange>) {
    let mut merged: Vec<ImageChange> = Vec::new();
    for i in images.drain(..) {
        match merged
            .iter_mut()
            .find(|m| m.repository == i.repository && m.from == i.from && m.to == i.to)
        {
            Some(m) => {
                for o in i.objects {
                    if !m.objects.contains(&o) {
                        m.objects.push(o);
                    }
                }
            }
            None => merged.push(i),
        }
    }
    *images = merged;
}

/// The releases of a cluster whose chart or chart version differs.
pub fn charts(entry: &str, base: Option<&Cluster>, head: Option<&Cluster>) -> Vec<ChartChange> {
    let (Some(base), Some(head)) = (base, head) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for h in head.producers.iter().filter(|p| {
        matches!(
            p.id.kind,
            ProducerKind::HelmRelease | ProducerKind::HelmfileRelease
        )
    }) {
        let Some(b) = base.producers.iter().find(|p| p.id == h.id) else {
            continue;
        };
        let (Some(bc), Some(hc)) = (&b.chart, &h.chart) else {
            continue;
        };
        if bc == hc {
            continue;
        }
        let (from, to) = if bc.name == hc.name {
            (bc.version.clone(), hc.version.clone())
        } else {
            (
                format!("{} {}", bc.name, bc.version),
                format!("{} {}", hc.name, hc.version),
            )
        };
        out.push(ChartChange {
            entry: entry.to_string(),
            release: h.id.clone(),
            chart: hc.name.clone(),
            major: is_major(&bc.version, &hc.version),
            from,
            to,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn image_references_split_at_the_tag_or_digest() {
        assert_eq!(split_image("ghcr.io/a/b:1.2"), ("ghcr.io/a/b", "1.2", None));
        assert_eq!(
            split_image("localhost:5000/b"),
            ("localhost:5000/b", "latest", None)
        );
        assert_eq!(
            split_image("ghcr.io/a/b:1.19.5@sha256:2e49"),
            ("ghcr.io/a/b", "1.19.5", Some("sha256:2e49"))
        );
        assert_eq!(split_image("b@sha256:ab"), ("b", "", Some("sha256:ab")));
        // The digest is shown only when the tag does not tell the two apart.
        assert_eq!(
            shown_ref("1.2", Some("sha256:abcdef0123456789"), "1.3"),
            "1.2"
        );
        assert_eq!(
            shown_ref("1.2", Some("sha256:abcdef0123456789"), "1.2"),
            "1.2@sha256:abcdef012345"
        );
    }

    #[test]
    fn majors_compare_the_first_number() {
        assert!(is_major("v1.9.0", "2.0.0"));
        assert!(!is_major("1.9.0", "1.10.0"));
        assert!(!is_major("latest", "2.0"));
    }

    #[test]
    fn cronjob_images_are_found() {
        let cron = json!({"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "busybox:1"}]}}}}}});
        assert_eq!(
            pod_images(&cron),
            vec![("c".to_string(), "busybox:1".to_string())]
        );
    }
}
