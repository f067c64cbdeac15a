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
    let matcher = NameMatcher::new(&change.name);
    let update = |leaf: &mut Node| -> Result<(), KustomizeError> {
        let NodeKind::Scalar(scalar) = &leaf.kind else {
            return Err(KustomizeError::Other(format!(
                "image of {}: wrong node kind: expected ScalarNode",
                change.name
            )));
        };
        if let Some(new) = matcher
            .matches(&scalar.value)
            .then(|| change.rewrite(&scalar.value))
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

/// Which images an entry's name selects: kustomize matches
/// `^NAME(:[a-zA-Z0-9_.{}-]*)?(@sha256:[a-zA-Z0-9_.{}-]*)?$` with NAME unescaped, so the name
/// is a regular expression. Nearly every name is plain text, where `.` is the only character
/// the expression reads apart (any character but a line break): those are matched directly,
/// as the expression would, instead of compiling one expression per image of every build.
enum NameMatcher {
    Plain(Vec<char>),
    Pattern(Option<regex::Regex>),
}

impl NameMatcher {
    fn new(name: &str) -> NameMatcher {
        const SPECIAL: &[char] = &[
            '\\', '+', '*', '?', '(', ')', '|', '[', ']', '{', '}', '^', '$', '#', '&', '~',
        ];
        if !name.is_empty() && !name.contains(SPECIAL) && !name.chars().any(char::is_whitespace) {
            return NameMatcher::Plain(name.chars().collect());
        }
        // One that does not compile matches nothing.
        NameMatcher::Pattern(
            crate::pattern::compile(&format!(
                "^{name}(:[a-zA-Z0-9_.{{}}-]*)?(@sha256:[a-zA-Z0-9_.{{}}-]*)?$"
            ))
            .ok(),
        )
    }

    fn matches(&self, image: &str) -> bool {
        match self {
            NameMatcher::Pattern(re) => re.as_ref().is_some_and(|re| re.is_match(image)),
            NameMatcher::Plain(name) => {
                let mut chars = image.chars();
                for &want in name {
                    match chars.next() {
                        Some(c) if c == want || (want == '.' && c != '\n') => {}
                        _ => return false,
                    }
                }
                let rest = chars.as_str();
                let tag_char = |c: char| c.is_ascii_alphanumeric() || "_.{}-".contains(c);
                let rest = match rest.strip_prefix(':') {
                    Some(tag) => tag.trim_start_matches(tag_char),
                    None => rest,
                };
                let rest = match rest.strip_prefix("@sha256:") {
                    Some(digest) => digest.trim_start_matches(tag_char),
                    None => rest,
                };
                rest.is_empty()
            }
        }
    }
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
    fn plain_names_match_as_kustomize_expression_does() {
        let names = [
            "nginx",
            "ghcr.io/app",
            "reg:5000/a/b",
            "a.b",
            "nginx:1",
            "x@sha256",
            "ñame",
            "a-b_c",
        ];
        let images = [
            "nginx",
            "nginx:1.0",
            "nginx@sha256:ab",
            "nginx:1@sha256:ab",
            "nginx:",
            "nginxx",
            "nginx:1:2",
            "nginx@sha256:a@b",
            "nginx:1/x",
            "ghcr.io/app:v1",
            "ghcrXio/app",
            "ghcr\nio/app",
            "ghcr.io/app@sha256:{x}",
            "reg:5000/a/b:2",
            "a.b",
            "aXb:1",
            "a\nb",
            "nginx:1:1",
            "x@sha256:1",
            "x@sha256",
            "ñame:1",
            "name",
            "a-b_c:ok",
            "",
            "nginx ",
            "nginx:1 ",
            "nginx@sha256:",
            "nginx@sha257:a",
        ];
        for name in names {
            let matcher = NameMatcher::new(name);
            assert!(matches!(matcher, NameMatcher::Plain(_)), "{name}");
            let re = crate::pattern::compile(&format!(
                "^{name}(:[a-zA-Z0-9_.{{}}-]*)?(@sha256:[a-zA-Z0-9_.{{}}-]*)?$"
            ))
            .expect("compiles");
            for image in images {
                assert_eq!(
                    matcher.matches(image),
                    re.is_match(image),
                    "{name} {image:?}"
                );
            }
        }
        // A name that is an expression is one.
        assert!(NameMatcher::new("ngin(x|y)").matches("nginy:1"));
        assert!(NameMatcher::new("a+").matches("aaa"));
        assert!(!NameMatcher::new("(").matches("("));
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
