//! The repository's own `.sourceignore` files, as source-controller applies them when it packs
//! the repository into the GitRepository artifact that kustomize-controller builds from: what
//! they exclude is not in the artifact, so the kustomization kustomize-controller generates for
//! a directory that has none does not list it (wrmilling/k3s-gitops syncs `./` and leaves its
//! CI workflows out with `.sourceignore`). Fetched sources need none of this: plumb-source
//! applies their rules, and `spec.ignore`, as it writes their trees.
//!
//! A `.sourceignore` holds `.gitignore` patterns and applies below its own directory, a deeper
//! one before a shallower one.

use bstr::ByteSlice;
use gix_ignore::glob::pattern::Case;
use plumb_kustomize::FileSystem;
use std::path::Path;

const FILE_NAME: &str = ".sourceignore";

/// The `.sourceignore` rules met so far on the way down a source's tree.
pub(crate) struct SourceIgnore {
    search: gix_ignore::Search,
}

impl SourceIgnore {
    /// The rules of each `.sourceignore` from the root of `fs` down to `dir`, `dir`'s own
    /// included; none when `fs` has no root or `dir` is not below it.
    pub(crate) fn down_to(fs: &FileSystem, dir: &Path) -> SourceIgnore {
        let mut rules = SourceIgnore {
            search: gix_ignore::Search::default(),
        };
        let Some(root) = fs.root() else {
            return rules;
        };
        let mut above: Vec<&Path> = dir
            .ancestors()
            .take_while(|d| d.starts_with(root))
            .collect();
        above.reverse();
        for d in above {
            rules.enter(fs, d);
        }
        rules
    }

    /// Adds the rules of `dir`'s `.sourceignore`, when it has one.
    pub(crate) fn enter(&mut self, fs: &FileSystem, dir: &Path) {
        let file = dir.join(FILE_NAME);
        let Some(root) = fs.root() else {
            return;
        };
        if !fs.is_file(&file) {
            return;
        }
        if let Ok(text) = fs.shared_text(&file) {
            let parse = gix_ignore::search::Ignore::default();
            // Reading patterns from memory has no I/O to fail.
            let _ = self
                .search
                .add_patterns_buffer(text.as_bytes(), file, Some(root), parse);
        }
    }

    /// Whether `path`, under the root, is left out of the artifact; `is_dir` says it is a
    /// directory (a pattern ending in `/` matches only those).
    pub(crate) fn excludes(&self, fs: &FileSystem, path: &Path, is_dir: bool) -> bool {
        let Some(relative) = fs.root().and_then(|root| path.strip_prefix(root).ok()) else {
            return false;
        };
        let relative = relative.to_string_lossy();
        self.search
            .pattern_matching_relative_path(
                relative.as_bytes().as_bstr(),
                Some(is_dir),
                Case::Sensitive,
            )
            .is_some_and(|m| !m.pattern.is_negative())
    }
}
