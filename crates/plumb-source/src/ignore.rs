//! The files source-controller leaves out of a GitRepository artifact: its default exclusions,
//! `.sourceignore` files anywhere in the tree, and `spec.ignore`. An OCIRepository's extracted
//! layer gets only the last two (its controller loads no default patterns).
//!
//! As in source-controller, the VCS patterns always apply; `spec.ignore`, when set, replaces the
//! other defaults and comes last, so it may overrule `.sourceignore`. Patterns use the
//! `.gitignore` format, a `.sourceignore` applying below its own directory.

use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;
use gix::glob::pattern::Case;
use gix::ignore::search::Ignore as ParseOptions;

/// Always excluded (source-controller `excludeVCS`).
const VCS: &[&str] = &[".git/", ".gitignore", ".gitmodules", ".gitattributes"];

/// Excluded unless `spec.ignore` is set (`excludeExt`, `excludeCI`, `excludeExtra`).
const DEFAULTS: &[&str] = &[
    "*.jpg",
    "*.jpeg",
    "*.gif",
    "*.png",
    "*.wmv",
    "*.flv",
    "*.tar.gz",
    "*.zip",
    ".github/",
    ".circleci/",
    ".travis.yml",
    ".gitlab-ci.yml",
    "appveyor.yml",
    ".drone.yml",
    "cloudbuild.yaml",
    "codeship-services.yml",
    "codeship-steps.yml",
    "**/.goreleaser.yml",
    "**/.sops.yaml",
    "**/.flux.yaml",
];

/// An anchor for pattern bases: gix-ignore relates a pattern file to a root directory, and the
/// tree being written has no directory on disk yet.
const ROOT: &str = "/plumb-source-root";

/// The exclusion rules for one artifact, growing as `.sourceignore` files are met.
pub(crate) struct Ignore {
    search: gix::ignore::Search,
    spec: Option<gix::ignore::Search>,
}

impl Ignore {
    /// The rules before any `.sourceignore` is read; `spec` is `spec.ignore`.
    pub(crate) fn new(spec: Option<&str>) -> Self {
        let mut builtin: Vec<u8> = Vec::new();
        let defaults: &[&str] = if spec.is_some() { &[] } else { DEFAULTS };
        for pattern in VCS.iter().chain(defaults) {
            builtin.extend_from_slice(pattern.as_bytes());
            builtin.push(b'\n');
        }
        let mut ignore = Ignore::without_defaults(spec);
        ignore.push(&builtin, "");
        ignore
    }

    /// The rules of an OCIRepository artifact: `.sourceignore` files and `spec.ignore` only.
    pub(crate) fn without_defaults(spec: Option<&str>) -> Self {
        Ignore {
            search: gix::ignore::Search::default(),
            spec: spec.map(|patterns| {
                let mut search = gix::ignore::Search::default();
                add(&mut search, patterns.as_bytes(), "");
                search
            }),
        }
    }

    /// Adds the `.sourceignore` found in directory `dir` (relative, `""` for the root).
    pub(crate) fn add_sourceignore(&mut self, dir: &str, content: &[u8]) {
        self.push(content, dir);
    }

    /// Whether `path` (relative, `/`-separated) is left out of the artifact.
    pub(crate) fn is_excluded(&self, path: &str, is_dir: bool) -> bool {
        // spec.ignore comes after everything else, so its match, when it has one, decides.
        let path = path.as_bytes().as_bstr();
        let decide = |search: &gix::ignore::Search| {
            search
                .pattern_matching_relative_path(path, Some(is_dir), Case::Sensitive)
                .map(|m| !m.pattern.is_negative())
        };
        self.spec
            .as_ref()
            .and_then(decide)
            .or_else(|| decide(&self.search))
            .unwrap_or(false)
    }

    fn push(&mut self, content: &[u8], dir: &str) {
        add(&mut self.search, content, dir);
    }
}

fn add(search: &mut gix::ignore::Search, content: &[u8], dir: &str) {
    let root = Path::new(ROOT);
    let mut source = PathBuf::from(ROOT);
    if !dir.is_empty() {
        source.push(dir);
    }
    source.push(".sourceignore");
    // Parsing from a buffer cannot fail for I/O reasons.
    let _ = search.add_patterns_buffer(content, source, Some(root), ParseOptions::default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_exclude_vcs_ci_and_images() {
        let ignore = Ignore::new(None);
        assert!(ignore.is_excluded(".git", true));
        assert!(ignore.is_excluded(".github", true));
        assert!(ignore.is_excluded("docs/logo.png", false));
        assert!(ignore.is_excluded("apps/.sops.yaml", false));
        assert!(ignore.is_excluded(".gitignore", false));
        assert!(!ignore.is_excluded("apps/deploy.yaml", false));
        assert!(!ignore.is_excluded(".sourceignore", false));
    }

    #[test]
    fn sourceignore_applies_below_its_directory_and_may_negate_defaults() {
        let mut ignore = Ignore::new(None);
        ignore.add_sourceignore("", b"# comment\n*.md\n!keep.png\n");
        ignore.add_sourceignore("apps", b"secret.yaml\n");
        assert!(ignore.is_excluded("README.md", false));
        assert!(!ignore.is_excluded("keep.png", false));
        assert!(ignore.is_excluded("apps/secret.yaml", false));
        assert!(!ignore.is_excluded("secret.yaml", false));
    }

    #[test]
    fn spec_ignore_replaces_defaults_but_not_vcs() {
        let ignore = Ignore::new(Some("/*\n!/deploy\n"));
        assert!(ignore.is_excluded("README.md", false));
        assert!(!ignore.is_excluded("deploy", true));
        assert!(!ignore.is_excluded("deploy/logo.png", false));
        assert!(ignore.is_excluded(".git", true));
    }

    #[test]
    fn oci_rules_have_no_defaults() {
        let mut ignore = Ignore::without_defaults(None);
        assert!(!ignore.is_excluded(".git", true));
        assert!(!ignore.is_excluded("logo.png", false));
        ignore.add_sourceignore("", b"*.md\n");
        assert!(ignore.is_excluded("README.md", false));
        let spec = Ignore::without_defaults(Some("/*\n!/deploy\n"));
        assert!(spec.is_excluded("README.md", false));
        assert!(!spec.is_excluded("deploy/a.yaml", false));
    }
}
