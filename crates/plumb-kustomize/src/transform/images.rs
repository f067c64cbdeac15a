//! `images:` (and the older `imageTags:`): image references whose name matches an entry get a
//! new name, tag, digest or tag suffix. As in kustomize, two passes run per entry: every
//! `image` of a `containers` or `initContainers` list anywhere in an object, then the `images`
//! field specs (pod specs, OCI image volumes, and what `configurations:` add). An
//! image both passes reach is updated twice, which only shows with `tagSuffix`. CRDs are skipped.

use crate::build::ResourceList;
use crate::config::TransformerConfig;
use crate::context::Context;
use crate::error::KustomizeError;
use crate::fieldspec::Create;
use crate::kustomization::Kustomization;
use crate::transform::values;
use plumb_yaml::{Node, NodeKind};

const IMAGE_KEYS: &[&str] = &["name", "newName", "newTag", "digest", "tagSuffix"];

/// One `images:` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageChange {
    pub name: String,
    pub new_name: String,
    pub new_tag: String,
    pub digest: String,
    pub tag_suffix: String,
}

/// Applies the kustomization's `images:` and `imageTags:` entries, in that order.
pub fn run(
    k: &Kustomization,
    list: &mut ResourceList,
    _ctx: &Context,
    config: &TransformerConfig,
) -> Result<(), KustomizeError> {
    for field in ["images", "imageTags"] {
        for (i, item) in values::object_list(k, field, "types.Image")?
            .into_iter()
            .enumerate()
        {
            values::known_keys(k, item, IMAGE_KEYS)?;
            let text = |key: &str| match item.get(key) {
                Some(n) => values::string(k, n, &format!("{field}.{i}.{key}")),
                None => Ok(String::new()),
            };
            let change = ImageChange {
                name: text("name")?,
                new_name: text("newName")?,
                new_tag: text("newTag")?,
                digest: text("digest")?,
                tag_suffix: text("tagSuffix")?,
            };
            apply(list, &change, config)?;
        }
    }
    Ok(())
}

fn apply(
    list: &mut ResourceList,
    change: &ImageChange,
    config: &TransformerConfig,
) -> Result<(), KustomizeError> {
    // kustomize builds this pattern from the entry's name unescaped, so the name is a regular
    // expression; one that does not compile matches nothing.
    let pattern = crate::pattern::compile(&format!(
        "^{}(:[a-zA-Z0-9_.{{}}-]*)?(@sha256:[a-zA-Z0-9_.{{}}-]*)?$",
        change.name
    ))
    .ok();
    let update = |leaf: &mut Node| -> Result<(), KustomizeError> {
        let NodeKind::Scalar(scalar) = &leaf.kind else {
            return Err(KustomizeError::Other(format!(
                "image of {}: wrong node kind: expected ScalarNode",
                change.name
            )));
        };
        if let Some(new) = pattern
            .as_ref()
            .filter(|p| p.is_match(&scalar.value))
            .map(|_| change.rewrite(&scalar.value))
        {
            *leaf = Node::string(new).with_span(leaf.span.clone());
        }
        Ok(())
    };
    // CRDs are never touched: their schemas describe containers without being workloads.
    for r in list
        .resources
        .iter_mut()
        .filter(|r| r.kind() != "CustomResourceDefinition")
    {
        update_containers(&mut r.node, &update)?;
        let gvk = r.gvk();
        for fs in config.images.iter().filter(|fs| fs.selects(&gvk)) {
            fs.apply(&mut r.node, Create::Nothing, &mut |leaf| update(leaf))?;
        }
    }
    Ok(())
}

/// kustomize's legacy pass: the `image` of every item of a `containers` or `initContainers`
/// sequence at any depth.
fn update_containers(
    node: &mut Node,
    update: &dyn Fn(&mut Node) -> Result<(), KustomizeError>,
) -> Result<(), KustomizeError> {
    match &mut node.kind {
        NodeKind::Mapping(entries) => {
            for (key, value) in entries.iter_mut() {
                update_containers(value, update)?;
                if matches!(key.scalar_value(), Some("containers" | "initContainers")) {
                    for item in value.as_sequence_mut().into_iter().flatten() {
                        if let Some(image) = item.get_mut("image") {
                            update(image)?;
                        }
                    }
                }
            }
        }
        NodeKind::Sequence(items) => {
            for item in items {
                update_containers(item, update)?;
            }
        }
        NodeKind::Scalar(_) => {}
    }
    Ok(())
}

impl ImageChange {
    /// The new reference for `image`, which matched this entry's name.
    pub fn rewrite(&self, image: &str) -> String {
        let (name, mut tag, mut digest) = split(image);
        let mut out = if self.new_name.is_empty() {
            name.to_string()
        } else {
            self.new_name.clone()
        };
        // A new tag or digest replaces both the old tag and digest.
        if !self.new_tag.is_empty() || !self.digest.is_empty() {
            tag = self.new_tag.clone();
            digest = self.digest.clone();
        } else if !self.tag_suffix.is_empty() {
            tag.push_str(&self.tag_suffix);
            digest.clear();
        }
        if !tag.is_empty() {
            out.push(':');
            out.push_str(&tag);
        }
        if !digest.is_empty() {
            out.push('@');
            out.push_str(&digest);
        }
        out
    }
}

/// Splits `[host[:port]/]path[:tag][@digest]` into name, tag and digest, as kustomize does: the
/// tag and digest are looked for after the first `/` only, so a registry port is not a tag.
pub fn split(image: &str) -> (&str, String, String) {
    let offset = match image.find('/') {
        Some(i) if i > 0 => i,
        _ => 0,
    };
    let search = &image[offset..];
    let at = search.find('@').map(|i| i + offset);
    let colon = search.find(':').map(|i| i + offset);
    match (colon, at) {
        (None, None) => (image, String::new(), String::new()),
        (None, Some(a)) => (&image[..a], String::new(), image[a + 1..].to_string()),
        (Some(c), Some(a)) if a < c => (&image[..a], String::new(), image[a + 1..].to_string()),
        (Some(c), Some(a)) => (
            &image[..c],
            image[c + 1..a].to_string(),
            image[a + 1..].to_string(),
        ),
        (Some(c), None) => (&image[..c], image[c + 1..].to_string(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_as_kustomize() {
        let s = |i| {
            let (n, t, d) = split(i);
            (n.to_string(), t, d)
        };
        let o = |n: &str, t: &str, d: &str| (n.to_string(), t.to_string(), d.to_string());
        assert_eq!(s("nginx"), o("nginx", "", ""));
        assert_eq!(s("nginx:1.0"), o("nginx", "1.0", ""));
        assert_eq!(s("nginx@sha256:ab"), o("nginx", "", "sha256:ab"));
        assert_eq!(s("nginx:1@sha256:ab"), o("nginx", "1", "sha256:ab"));
        assert_eq!(s("reg:5000/a/b"), o("reg:5000/a/b", "", ""));
        assert_eq!(s("reg:5000/a/b:2"), o("reg:5000/a/b", "2", ""));
        assert_eq!(s("reg:5000/a@sha256:x"), o("reg:5000/a", "", "sha256:x"));
    }

    #[test]
    fn rewrite_rules() {
        let c = |tag: &str, digest: &str, suffix: &str| ImageChange {
            name: "nginx".into(),
            new_tag: tag.into(),
            digest: digest.into(),
            tag_suffix: suffix.into(),
            ..ImageChange::default()
        };
        assert_eq!(c("2", "", "").rewrite("nginx:1@sha256:a"), "nginx:2");
        assert_eq!(c("", "sha256:b", "").rewrite("nginx:1"), "nginx@sha256:b");
        assert_eq!(c("2", "sha256:b", "").rewrite("nginx"), "nginx:2@sha256:b");
        assert_eq!(c("", "", "-x").rewrite("nginx@sha256:a"), "nginx:-x");
        assert_eq!(c("", "", "-x").rewrite("nginx:1"), "nginx:1-x");
    }
}
