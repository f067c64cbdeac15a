//! One build for the directories several Kustomizations build with the same spec: a base that
//! each cluster of the repository syncs. The first build of a directory with a given spec is
//! kept, the other Kustomizations take a copy instead of building it again, the last takes the
//! build itself. Which directories are worth keeping comes from discovery, which counts the
//! Kustomizations naming each; a directory named once is built as it is, nothing kept.
//!
//! Patches each cluster writes into its own Kustomizations are the same text at another place
//! of another file: the objects a copy holds then point at that text in the Kustomization that
//! took the copy, as its own build would.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use plumb_yaml::{Node, NodeKind, SourceFile, Span};

use crate::diagnostic::Diagnostic;
use crate::model::{FluxKustomization, Object};

#[derive(Default)]
pub(crate) struct SharedBuilds {
    /// How many Kustomizations of the repository name each directory, for those named more
    /// than once.
    uses: HashMap<PathBuf, usize>,
    state: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    /// Builds of each directory started so far.
    started: HashMap<PathBuf, usize>,
    builds: HashMap<BuildKey, (Arc<Vec<Object>>, Option<WrittenAt>)>,
    copies: usize,
}

/// Everything a directory's build reads: the tree, the directory, and the Kustomization's spec
/// fields written into its kustomization, with the text of its patches as written (equal
/// values written differently point at different text).
#[derive(PartialEq, Eq, Hash)]
pub(crate) struct BuildKey {
    root: PathBuf,
    dir: PathBuf,
    spec: String,
}

/// The place of a Kustomization's `spec.patches` in its file, when its build reads them as
/// written.
#[derive(Clone)]
pub(crate) struct WrittenAt {
    file: Arc<SourceFile>,
    start: usize,
    end: usize,
}

impl BuildKey {
    /// The key of `ks`'s build of `dir`, and where its patches are written.
    pub(crate) fn of(
        root: &Path,
        dir: &Path,
        ks: &FluxKustomization,
    ) -> (BuildKey, Option<WrittenAt>) {
        let at = (!ks.patches.is_empty())
            .then(|| ks.object.node_at(&["spec", "patches"]))
            .flatten()
            .and_then(|n| n.span.as_ref())
            .map(|s| WrittenAt {
                file: s.file.clone(),
                start: s.start,
                end: s.end,
            });
        let spec = serde_json::json!([
            ks.target_namespace,
            ks.name_prefix,
            ks.name_suffix,
            ks.patches,
            ks.images,
            ks.components,
            at.as_ref().map(|a| a.file.text().get(a.start..a.end)),
        ]);
        let key = BuildKey {
            root: root.to_path_buf(),
            dir: dir.to_path_buf(),
            spec: spec.to_string(),
        };
        (key, at)
    }
}

impl SharedBuilds {
    /// Keeps the builds of the directories named more than once in `uses`.
    pub(crate) fn new(uses: HashMap<PathBuf, usize>) -> SharedBuilds {
        SharedBuilds {
            uses: uses.into_iter().filter(|(_, n)| *n > 1).collect(),
            state: Mutex::default(),
        }
    }

    /// Whether builds of `dir` are kept for others.
    pub(crate) fn keeps(&self, dir: &Path) -> bool {
        self.uses.contains_key(dir)
    }

    /// How many builds were copies of another.
    pub(crate) fn copies(&self) -> usize {
        self.lock().copies
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `build()`'s objects, or a copy of those of an earlier build with the same key, its
    /// objects' spans in the patches moved to the patches `at`. A build that failed is not
    /// kept: its diagnostic names its own Kustomization's file.
    pub(crate) fn get_or_build(
        &self,
        key: BuildKey,
        at: Option<WrittenAt>,
        build: impl FnOnce() -> Result<Vec<Object>, Diagnostic>,
    ) -> Result<Vec<Object>, Diagnostic> {
        let Some(&uses) = self.uses.get(&key.dir) else {
            return build();
        };
        let (kept, last) = {
            let mut state = self.lock();
            let started = state.started.entry(key.dir.clone()).or_default();
            *started += 1;
            let last = *started >= uses;
            let kept = match last {
                true => state.builds.remove(&key),
                false => state.builds.get(&key).cloned(),
            };
            if kept.is_some() {
                state.copies += 1;
            }
            (kept, last)
        };
        // Copied outside the lock: the other threads may be building.
        if let Some((objects, from)) = kept {
            let mut objects = Arc::try_unwrap(objects).unwrap_or_else(|kept| (*kept).clone());
            if let (Some(from), Some(to)) = (&from, &at) {
                for object in &mut objects {
                    let moved = object.origin.as_deref().and_then(|o| moved(o, from, to));
                    if let Some(node) = moved {
                        object.origin = Some(Arc::new(node));
                    }
                }
            }
            return Ok(objects);
        }
        let built = build()?;
        if !last {
            let copy = (Arc::new(built.clone()), at);
            self.lock().builds.entry(key).or_insert(copy);
        }
        Ok(built)
    }
}

/// Whether `span` is in the text at `at` (read from that file, or from a copy of it that has
/// the same offsets, as a patch read in place is).
fn within(span: &Span, at: &WrittenAt) -> bool {
    at.start <= span.start && span.end <= at.end && same_path(span.file.path(), at.file.path())
}

/// `a == b`, answered from the bytes when both are written plainly (no empty or `.` part, no
/// slash at the end), as the files read are: for such paths equal parts are equal bytes, and
/// `Path`'s comparison part by part, taken for every node of every copied object, is slow.
fn same_path(a: &Path, b: &Path) -> bool {
    let (x, y) = (
        a.as_os_str().as_encoded_bytes(),
        b.as_os_str().as_encoded_bytes(),
    );
    if x == y {
        return true;
    }
    let plain = |p: &[u8]| {
        !p.windows(2).any(|w| w == b"//")
            && !p.windows(3).any(|w| w == b"/./")
            && !p.ends_with(b"/")
            && !p.ends_with(b"/.")
    };
    if plain(x) && plain(y) {
        return false;
    }
    a == b
}

/// `node` with its spans in the text at `from` moved to the same text at `to`; `None` when it
/// has none there.
fn moved(node: &Node, from: &WrittenAt, to: &WrittenAt) -> Option<Node> {
    if !touches(node, from) {
        return None;
    }
    let mut node = node.clone();
    move_spans(&mut node, from, to);
    Some(node)
}

fn touches(node: &Node, at: &WrittenAt) -> bool {
    node.span.as_ref().is_some_and(|s| within(s, at))
        || match &node.kind {
            NodeKind::Scalar(_) => false,
            NodeKind::Sequence(items) => items.iter().any(|n| touches(n, at)),
            NodeKind::Mapping(entries) => entries
                .iter()
                .any(|(k, v)| touches(k, at) || touches(v, at)),
        }
}

fn move_spans(node: &mut Node, from: &WrittenAt, to: &WrittenAt) {
    if let Some(span) = node.span.as_mut().filter(|s| within(s, from)) {
        *span = Span {
            file: to.file.clone(),
            start: span.start - from.start + to.start,
            end: span.end - from.start + to.start,
        };
    }
    match &mut node.kind {
        NodeKind::Scalar(_) => {}
        NodeKind::Sequence(items) => items.iter_mut().for_each(|n| move_spans(n, from, to)),
        NodeKind::Mapping(entries) => entries.iter_mut().for_each(|(k, v)| {
            move_spans(k, from, to);
            move_spans(v, from, to);
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::same_path;
    use std::path::Path;

    #[test]
    fn same_path_is_path_equality() {
        let paths = [
            "/r/a/b.yaml",
            "/r/a/b.yaml/",
            "/r/a//b.yaml",
            "/r/a/./b.yaml",
            "/r/a/b.yam",
            "r/a/b.yaml",
            "./r/a/b.yaml",
            "/r/a/b.yaml/.",
            "/r/a/c.yaml",
            "",
        ];
        for a in paths {
            for b in paths {
                assert_eq!(
                    same_path(Path::new(a), Path::new(b)),
                    Path::new(a) == Path::new(b),
                    "{a:?} {b:?}"
                );
            }
        }
    }
}
