//! Which part of a HelmRelease's `spec.values` wrote an image its chart rendered, so that the
//! finding points at the values the user edits rather than at the chart's templates.

use super::images::{looks_like_tagged_image, scalar_text, Step};
use serde_json::Value;

/// A place in the values that may have written a rendered image.
struct Candidate<'a> {
    /// The references it spells, whole (`repo:tag`, `registry/repo:tag`).
    references: Vec<String>,
    /// A `tag` with no `repository` beside it: the chart supplies the repository.
    tag_only: Option<String>,
    path: Vec<Step<'a>>,
}

/// The path in `values` (under `spec.values`) of the text that set the rendered image
/// `reference`: a value that spells it whole, else the one `tag` without a repository that
/// equals its tag. `None` when the values do not set it (the chart's defaults do).
pub(super) fn values_path_of<'a>(values: &'a Value, reference: &str) -> Option<Vec<Step<'a>>> {
    let mut candidates = Vec::new();
    collect(
        values,
        &mut vec![Step::Key("spec"), Step::Key("values")],
        &mut candidates,
    );
    let wanted = normalized(reference);
    if let Some(c) = candidates
        .iter()
        .find(|c| c.references.iter().any(|r| normalized(r) == wanted))
    {
        return Some(c.path.clone());
    }
    let tag = tag_of(reference)?;
    let mut by_tag = candidates
        .into_iter()
        .filter(|c| c.tag_only.as_deref() == Some(tag));
    match (by_tag.next(), by_tag.next()) {
        (Some(only), None) => Some(only.path),
        _ => None,
    }
}

fn collect<'a>(value: &'a Value, path: &mut Vec<Step<'a>>, out: &mut Vec<Candidate<'a>>) {
    match value {
        Value::Object(map) => {
            let tag = map
                .get("tag")
                .and_then(scalar_text)
                .filter(|t| !t.is_empty());
            if let Some(tag) = tag {
                let mut at = path.clone();
                at.push(Step::Key("tag"));
                match map.get("repository").and_then(Value::as_str) {
                    Some(repository) => {
                        let mut references = vec![format!("{repository}:{tag}")];
                        if let Some(registry) = map.get("registry").and_then(Value::as_str) {
                            references.push(format!(
                                "{}/{repository}:{tag}",
                                registry.trim_end_matches('/')
                            ));
                        }
                        out.push(Candidate {
                            references,
                            tag_only: None,
                            path: at,
                        });
                    }
                    None => out.push(Candidate {
                        references: Vec::new(),
                        tag_only: Some(tag),
                        path: at,
                    }),
                }
            }
            for (key, child) in map {
                path.push(Step::Key(key));
                match child {
                    Value::String(text) if looks_like_tagged_image(text) => out.push(Candidate {
                        references: vec![text.clone()],
                        tag_only: None,
                        path: path.clone(),
                    }),
                    _ => collect(child, path, out),
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                path.push(Step::Index(i));
                collect(child, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// A reference as Docker Hub resolves it: `docker.io/library/redis:7` and `redis:7` are one.
fn normalized(reference: &str) -> &str {
    let r = reference
        .strip_prefix("docker.io/")
        .or_else(|| reference.strip_prefix("index.docker.io/"))
        .unwrap_or(reference);
    r.strip_prefix("library/").unwrap_or(r)
}

/// The tag of a reference: after the last `:` of its last path segment.
fn tag_of(reference: &str) -> Option<&str> {
    let name = reference.split('@').next().unwrap_or(reference);
    let last = name.rsplit('/').next()?;
    last.rsplit_once(':').map(|(_, tag)| tag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path_of(values: &Value, reference: &str) -> Option<String> {
        values_path_of(values, reference).map(|path| {
            path.iter()
                .map(|s| match s {
                    Step::Key(k) => k.to_string(),
                    Step::Index(i) | Step::Container(i, _) => i.to_string(),
                })
                .collect::<Vec<_>>()
                .join(".")
        })
    }

    #[test]
    fn rendered_images_are_found_in_the_values_that_set_them() {
        let values = json!({
            "image": {"registry": "docker.io", "repository": "bitnami/redis", "tag": "7.4.2"},
            "exporter": {"image": "quay.io/oliver006/redis_exporter:v1.67.0"},
            "sidecar": {"image": {"tag": "1.2.3"}},
            "proxy": {"image": "nginx:1.27"},
        });
        assert_eq!(
            path_of(&values, "docker.io/bitnami/redis:7.4.2").as_deref(),
            Some("spec.values.image.tag")
        );
        assert_eq!(
            path_of(&values, "quay.io/oliver006/redis_exporter:v1.67.0").as_deref(),
            Some("spec.values.exporter.image")
        );
        assert_eq!(
            path_of(&values, "docker.io/library/nginx:1.27").as_deref(),
            Some("spec.values.proxy.image")
        );
        assert_eq!(
            path_of(&values, "ghcr.io/org/sidecar:1.2.3").as_deref(),
            Some("spec.values.sidecar.image.tag")
        );
        assert_eq!(path_of(&values, "ghcr.io/org/other:9.9.9"), None);
    }
}
