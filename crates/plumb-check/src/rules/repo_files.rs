//! The repository's own files, for rules about what is committed rather than what is built:
//! plaintext Secrets, SOPS files, CI workflows, OpenTofu roots. A file nobody builds is still in
//! Git, so these rules read the tree, and borrow the Kustomization chain from the build when a
//! build object came from the same text.

use plumb_flux::build::RepositoryBuild;
use plumb_yaml::Node;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Hidden directories that hold files Git tracks and tools read.
const HIDDEN_DIRS_READ: [&str; 3] = [".github", ".gitea", ".forgejo"];
/// Directories that are never the repository's own text.
const SKIPPED_DIRS: [&str; 3] = ["node_modules", "target", "vendor"];

/// Every file under `root`, sorted, without `.git` and other hidden or generated directories.
pub(crate) fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                let hidden = name.starts_with('.') && !HIDDEN_DIRS_READ.contains(&name.as_str());
                if !hidden && !SKIPPED_DIRS.contains(&name.as_str()) {
                    stack.push(entry.path());
                }
            } else if kind.is_file() {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    out
}

/// The `.yaml` and `.yml` files directly inside `dir`, sorted; none when it cannot be read.
pub(crate) fn yaml_files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = read
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    files
}

/// Whether a file name is YAML (or JSON, which the YAML reader reads too).
pub(crate) fn is_yaml(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
}

/// The documents of a YAML file; `None` when it cannot be read or parsed (the build reports
/// files it needs that do not parse).
pub(crate) fn documents(path: &Path) -> Option<Vec<Node>> {
    let text = std::fs::read_to_string(path).ok()?;
    plumb_yaml::parse_documents(path, &text).ok()
}

/// A YAML file of the repository that parses.
pub(crate) struct YamlFile {
    pub path: PathBuf,
    /// `path` relative to the repository root.
    pub rel: PathBuf,
    pub docs: Vec<Node>,
}

/// Every YAML file under `root` whose text has one of `needles` and that parses, in the order
/// of [`files`]: a rule reads only the files that can concern it (parsing is what costs).
pub(crate) fn yaml_files<'a>(
    root: &'a Path,
    needles: &'a [&'a str],
) -> impl Iterator<Item = YamlFile> + 'a {
    files(root)
        .into_iter()
        .filter(|file| is_yaml(file))
        .filter_map(move |path| {
            let text = std::fs::read_to_string(&path).ok()?;
            if !needles.iter().any(|n| text.contains(n)) {
                return None;
            }
            let docs = plumb_yaml::parse_documents(&path, &text).ok()?;
            let rel = relative(root, &path);
            Some(YamlFile { path, rel, docs })
        })
}

/// `path` relative to the repository root.
pub(crate) fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}

/// The Kustomization chain of each built object, by the file and byte offset its text starts
/// at, so a finding about a file can say which Kustomizations apply it.
pub(crate) struct Chains(HashMap<(PathBuf, usize), Vec<String>>);

impl Chains {
    pub(crate) fn of(build: &RepositoryBuild, root: &Path) -> Chains {
        let mut map = HashMap::new();
        for entry in &build.entries {
            for k in &entry.kustomizations {
                for object in &k.objects {
                    let Some(span) = object.origin.as_deref().and_then(|n| n.span.as_ref()) else {
                        continue;
                    };
                    let file = strip_roots(span.file.path(), root, &build.root);
                    map.entry((file, span.start))
                        .or_insert_with(|| k.chain.clone());
                }
            }
        }
        Chains(map)
    }

    /// The chain that applies the document `doc` of the file at `rel` (relative to the root);
    /// empty when no Kustomization builds it.
    pub(crate) fn get(&self, rel: &Path, doc: &Node) -> &[String] {
        doc.span
            .as_ref()
            .and_then(|s| self.0.get(&(rel.to_path_buf(), s.start)))
            .map_or(&[], Vec::as_slice)
    }
}

fn strip_roots(path: &Path, root: &Path, build_root: &Path) -> PathBuf {
    path.strip_prefix(root)
        .or_else(|_| path.strip_prefix(build_root))
        .unwrap_or(path)
        .to_path_buf()
}
