//! Environment rules (ENV): clusters built as one base plus a small overlay per environment,
//! where the overlay only gives the environment its own variables.
//!
//! An overlay is a directory of `overlays.paths` (default: each entry path) whose
//! `kustomization.yaml` lists at least one base: a directory outside the overlay. A directory
//! without a base is not an overlay, and these rules do not look at it.

pub mod inherited_base_default;
pub mod invariant_violated;
pub mod overlay_changes_base;

pub use inherited_base_default::InheritedBaseDefault;
pub use invariant_violated::InvariantViolated;
pub use overlay_changes_base::OverlayChangesBase;

use crate::rule::CheckContext;
use crate::rules::sub::scope::{self, Definition, Produced};
use plumb_flux::build::EntryBuild;
use plumb_yaml::Node;
use std::collections::BTreeMap;
use std::path::{Component, Path};

/// The chain of an entry's first Kustomization, for a finding about the entry as a whole.
pub(crate) fn entry_chain(entry: &EntryBuild) -> Vec<String> {
    entry
        .kustomizations
        .first()
        .map(|k| k.chain.clone())
        .unwrap_or_default()
}

/// The directories checked as overlays, relative to the repository root: `overlays.paths`
/// expanded (`*` matches one path segment), or the entries of the build.
pub(crate) fn overlay_dirs(cx: &CheckContext<'_>) -> Vec<String> {
    let mut dirs: Vec<String> = if cx.config.overlays.paths.is_empty() {
        cx.build.entries.iter().map(|e| e.entry.clone()).collect()
    } else {
        cx.config
            .overlays
            .paths
            .iter()
            .flat_map(|p| expand(&cx.build.root, p))
            .collect()
    };
    dirs.sort();
    dirs.dedup();
    dirs
}

/// The directories matching `pattern`, segment by segment.
fn expand(root: &Path, pattern: &str) -> Vec<String> {
    let mut found = vec![String::new()];
    for segment in pattern
        .trim_start_matches("./")
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
    {
        let mut next = Vec::new();
        for dir in &found {
            let base = root.join(dir);
            if !segment.contains('*') {
                if base.join(segment).is_dir() {
                    next.push(join(dir, segment));
                }
                continue;
            }
            let Ok(read) = std::fs::read_dir(&base) else {
                continue;
            };
            let mut names: Vec<String> = read
                .filter_map(Result::ok)
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.') && glob_match(segment, n))
                .collect();
            names.sort();
            next.extend(names.iter().map(|n| join(dir, n)));
        }
        found = next;
    }
    found
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// `*` matches any run of characters.
pub(crate) fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || !text[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

/// An overlay directory and its `kustomization.yaml`.
pub(crate) struct Overlay {
    /// Relative to the repository root.
    pub dir: String,
    pub doc: Node,
    /// Resources that are directories outside the overlay, relative to the repository root.
    pub bases: Vec<String>,
}

impl Overlay {
    /// Reads `dir` as an overlay; `None` when it has no kustomization file or no base.
    pub(crate) fn read(root: &Path, dir: &str) -> Option<Overlay> {
        let abs = root.join(dir);
        let file = ["kustomization.yaml", "kustomization.yml", "Kustomization"]
            .iter()
            .map(|n| abs.join(n))
            .find(|p| p.is_file())?;
        let text = std::fs::read_to_string(&file).ok()?;
        let doc = plumb_yaml::parse_documents(&file, &text)
            .ok()?
            .into_iter()
            .find(|d| !d.is_null())?;
        let bases = doc
            .get("resources")
            .and_then(Node::as_sequence)
            .into_iter()
            .flatten()
            .filter_map(Node::scalar_value)
            .filter_map(|r| resolve(dir, r))
            .filter(|r| !inside(r, dir) && root.join(r).is_dir())
            .collect::<Vec<_>>();
        if bases.is_empty() {
            return None;
        }
        Some(Overlay {
            dir: dir.to_string(),
            doc,
            bases,
        })
    }
}

/// `reference` (relative to `dir`) as a path relative to the repository root; `None` for a
/// remote reference or one that leaves the repository.
pub(crate) fn resolve(dir: &str, reference: &str) -> Option<String> {
    if reference.contains("://") || reference.starts_with("github.com/") {
        return None;
    }
    let mut parts: Vec<String> = Vec::new();
    for c in Path::new(dir).join(reference).components() {
        match c {
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

/// Whether the repository path `path` is `dir` or inside it.
pub(crate) fn inside(path: &str, dir: &str) -> bool {
    dir.is_empty() || path == dir || path.starts_with(&format!("{dir}/"))
}

/// Whether overlay `dir` takes part in cluster `entry`: one contains the other.
pub(crate) fn overlay_of(dir: &str, entry: &str) -> bool {
    inside(entry, dir) || inside(dir, entry)
}

/// The cluster's variables: the substitution variables of the entry's top Kustomizations (the
/// one that syncs the entry and its children), merged in tree order, with their definitions.
pub(crate) fn cluster_vars(entry: &EntryBuild) -> BTreeMap<String, Definition> {
    let produced = Produced::of(entry);
    let mut merged = BTreeMap::new();
    for ks in entry.kustomizations.iter().filter(|k| k.chain.len() <= 2) {
        let scope = scope::SubstitutionScope::new(ks, &produced);
        merged.extend(scope.definitions);
    }
    merged
}

/// The ConfigMaps and Secrets that Kustomizations substitute from, as `(kind, name)`: what an
/// overlay may patch when `overlays.mayPatch` is not set.
pub(crate) fn vars_objects(cx: &CheckContext<'_>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = cx
        .build
        .entries
        .iter()
        .flat_map(|e| &e.kustomizations)
        .filter_map(|k| k.kustomization.post_build.as_ref())
        .flat_map(|p| &p.substitute_from)
        .map(|r| (r.kind.clone(), r.name.clone()))
        .collect();
    out.sort();
    out.dedup();
    out
}
