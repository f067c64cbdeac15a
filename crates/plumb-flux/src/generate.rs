//! The kustomization kustomize-controller builds for a Flux Kustomization (fluxcd/pkg
//! `kustomize_generator.go`): the directory's own `kustomization.yaml`, or one generated from
//! the manifests found under the directory when it has none; then the spec fields
//! `targetNamespace`, `namePrefix`, `nameSuffix`, `patches`, `images` and `components` written
//! into it as an overlay. The result is a kustomization value handed to the kustomize engine.

use crate::diagnostic::{self, Code, Diagnostic};
use crate::model::FluxKustomization;
use crate::source_ignore::SourceIgnore;
use plumb_kustomize::fs::Entry;
use plumb_kustomize::{FileSystem, Kustomization};
use plumb_yaml::Node;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The file names kustomize recognises, in its order.
pub const KUSTOMIZATION_FILES: &[&str] =
    &["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Names source-controller leaves out of every artifact (its default ignore rules), so Flux
/// never sees them when it scans a directory.
const IGNORED_NAMES: &[&str] = &[
    ".git",
    ".hg",
    ".bzr",
    ".svn",
    ".github",
    ".circleci",
    ".travis.yml",
    ".gitlab-ci.yml",
    "appveyor.yml",
    ".drone.yml",
    "cloudbuild.yaml",
    "codeship-services.yml",
    "codeship-steps.yml",
    ".goreleaser.yml",
    ".sops.yaml",
    ".flux.yaml",
];

/// The kustomization file in `dir`, if it has one; an error when one is a symlink that leaves
/// the source (the source's file system has nothing there, and Flux refuses to read it).
pub fn kustomization_file(
    fs: &FileSystem,
    dir: &Path,
) -> Result<Option<PathBuf>, plumb_kustomize::KustomizeError> {
    for name in KUSTOMIZATION_FILES {
        let path = dir.join(name);
        if fs.entry(&path)?.is_some_and(|e| e != Entry::Dir) {
            return Ok(Some(path));
        }
    }
    Ok(None)
}

/// What a source's tree on disk is to the artifact Flux builds from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tree {
    /// Written as source-controller packs the artifact (a fetched source): what it excludes
    /// is not there.
    Packed,
    /// The repository's working tree standing for its GitRepository's artifact: its
    /// `.sourceignore` files still say what the artifact leaves out.
    Repository,
}

/// The kustomization Flux builds for `dir`, read through `fs` (the source's tree, which `tree`
/// says how to read), with `ks`'s spec fields applied when given.
pub fn kustomization_for(
    fs: &FileSystem,
    tree: Tree,
    dir: &Path,
    ks: Option<&FluxKustomization>,
) -> Result<Kustomization, Diagnostic> {
    let found = kustomization_file(fs, dir).map_err(|e| diagnostic::from_kustomize(&e))?;
    let mut k = match found {
        Some(file) => Kustomization::load(fs, &file).map_err(|e| diagnostic::from_kustomize(&e))?,
        None => Kustomization {
            path: dir.join("kustomization.yaml"),
            node: generated(fs, tree, dir)?,
        },
    };
    if let Some(ks) = ks {
        apply_spec(&mut k.node, ks);
    }
    Ok(k)
}

/// A kustomization listing every manifest under `dir`: YAML files, and subdirectories that have
/// their own kustomization (which are not descended into), in path order.
fn generated(fs: &FileSystem, tree: Tree, dir: &Path) -> Result<Node, Diagnostic> {
    let mut resources = Vec::new();
    let mut ignore = (tree == Tree::Repository).then(|| SourceIgnore::down_to(fs, dir));
    scan(fs, &mut ignore, dir, dir, &mut resources)?;
    let mut node = Node::mapping();
    node.set(
        "apiVersion",
        Node::string("kustomize.config.k8s.io/v1beta1"),
    );
    node.set("kind", Node::string("Kustomization"));
    node.set(
        "resources",
        Node::sequence(resources.into_iter().map(Node::string).collect()),
    );
    Ok(node)
}

fn scan(
    fs: &FileSystem,
    ignore: &mut Option<SourceIgnore>,
    base: &Path,
    dir: &Path,
    out: &mut Vec<String>,
) -> Result<(), Diagnostic> {
    let kustomize_err = |e: plumb_kustomize::KustomizeError| diagnostic::from_kustomize(&e);
    let entries = fs.read_dir(dir).map_err(|e| {
        Diagnostic::error(Code::KustomizeError, format!("cannot read directory: {e}")).in_file(dir)
    })?;
    for path in entries {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if IGNORED_NAMES.contains(&name.as_str()) {
            continue;
        }
        let rel = || {
            format!(
                "./{}",
                path.strip_prefix(base).unwrap_or(&path).to_string_lossy()
            )
        };
        let is_dir = fs.entry(&path).map_err(kustomize_err)? == Some(Entry::Dir);
        if ignore
            .as_ref()
            .is_some_and(|rules| rules.excludes(fs, &path, is_dir))
        {
            continue;
        }
        if is_dir {
            if kustomization_file(fs, &path)
                .map_err(kustomize_err)?
                .is_some()
            {
                out.push(rel());
            } else {
                if let Some(rules) = ignore.as_mut() {
                    rules.enter(fs, &path);
                }
                scan(fs, ignore, base, &path, out)?;
            }
            continue;
        }
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext != "yaml" && ext != "yml" {
            continue;
        }
        check_manifest(fs, &path)?;
        out.push(rel());
    }
    Ok(())
}

/// Flux refuses to generate a kustomization over a YAML file that is not Kubernetes objects.
fn check_manifest(fs: &FileSystem, path: &Path) -> Result<(), Diagnostic> {
    let fail = |message: String| {
        Diagnostic::error(
            Code::InvalidManifest,
            format!(
                "failed to decode Kubernetes YAML from {}: {message}",
                path.file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default()
            ),
        )
    };
    let text = fs
        .read_text(path)
        .map_err(|e| fail(e.to_string()).in_file(path))?;
    let docs = plumb_yaml::parse_documents(path, &text).map_err(|e| {
        fail(e.message.clone()).at_line(&e.path, e.location.line, e.location.column)
    })?;
    for doc in &docs {
        if doc.is_null() || doc.as_mapping().is_some_and(Vec::is_empty) {
            continue;
        }
        if !doc.is_mapping() {
            return Err(fail("a document is not a mapping".into()).at(Some(doc)));
        }
        if doc.str_at(&["kind"]).is_none_or(str::is_empty) {
            return Err(fail("missing kind".into()).at(Some(doc)));
        }
    }
    Ok(())
}

/// Writes `ks`'s spec fields into the kustomization, as Flux does before building.
pub fn apply_spec(node: &mut Node, ks: &FluxKustomization) {
    match ks.target_namespace.as_deref() {
        Some("") => {
            node.remove("namespace");
        }
        Some(ns) => node.set("namespace", Node::string(ns)),
        None => {}
    }
    if let Some(prefix) = &ks.name_prefix {
        node.set("namePrefix", Node::string(prefix.as_str()));
    }
    if let Some(suffix) = &ks.name_suffix {
        node.set("nameSuffix", Node::string(suffix.as_str()));
    }
    if !ks.patches.is_empty() {
        let mut patches = existing_list(node, "patches");
        // The patches as written, when they are (their text keeps its place in the file, so
        // what they bring points there).
        let written = ks
            .object
            .origin
            .as_ref()
            .and_then(|o| o.get_path(&["spec", "patches"]))
            .and_then(Node::as_sequence)
            .filter(|items| items.len() == ks.patches.len());
        for (i, p) in ks.patches.iter().enumerate() {
            // Only as written when nothing (a parent's postBuild) changed them since.
            let same = |key: &str, item: &Node| {
                let value = p.get(key).filter(|v| !v.is_null());
                let text = item.get(key).filter(|v| !v.is_null());
                match (value, text) {
                    (Some(v), Some(t)) => plumb_yaml::to_json(t).ok().as_ref() == Some(v),
                    (None, None) => true,
                    _ => false,
                }
            };
            if let Some(item) = written
                .and_then(|items| items.get(i))
                .filter(|item| same("patch", item) && same("target", item))
            {
                let mut entry = Node::mapping();
                for key in ["patch", "target"] {
                    if let Some(v) = item.get(key).filter(|v| !v.is_null()) {
                        entry.set(key, v.clone());
                    }
                }
                patches.push(entry);
                continue;
            }
            let mut patch = serde_json::Map::new();
            if let Some(text) = p.get("patch") {
                patch.insert("patch".into(), text.clone());
            }
            if let Some(target) = p.get("target").filter(|t| !t.is_null()) {
                patch.insert("target".into(), target.clone());
            }
            patches.push(plumb_yaml::from_json(&Value::Object(patch)));
        }
        node.set("patches", Node::sequence(patches));
    }
    if !ks.images.is_empty() {
        let mut images = existing_list(node, "images");
        for image in &ks.images {
            let mut entry = serde_json::Map::new();
            for key in ["name", "newName", "newTag", "digest"] {
                if let Some(v) = image
                    .get(key)
                    .filter(|v| !v.is_null() && v != &&Value::from(""))
                {
                    entry.insert(key.into(), v.clone());
                }
            }
            let name = image.get("name").and_then(Value::as_str);
            let new = plumb_yaml::from_json(&Value::Object(entry));
            match images
                .iter_mut()
                .find(|i| name.is_some() && i.str_at(&["name"]) == name)
            {
                Some(slot) => *slot = new,
                None => images.push(new),
            }
        }
        node.set("images", Node::sequence(images));
    }
    if !ks.components.is_empty() {
        let mut components = existing_list(node, "components");
        components.extend(ks.components.iter().map(|c| Node::string(c.as_str())));
        node.set("components", Node::sequence(components));
    }
}

fn existing_list(node: &Node, key: &str) -> Vec<Node> {
    node.get(key)
        .and_then(Node::as_sequence)
        .cloned()
        .unwrap_or_default()
}
