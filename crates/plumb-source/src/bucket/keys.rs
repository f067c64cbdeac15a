//! Which object keys make a Bucket artifact, and the revision of that set.
//!
//! source-controller matches each key, split at `/`, against the bucket's root `.sourceignore`
//! followed by `spec.ignore` with go-git's gitignore matcher: the last pattern that matches
//! decides, and a pattern matches a key when it matches the key or one of its leading
//! directories. Unlike git, a directory that is excluded does not hide a later negation of a
//! file below it, because there is no directory walk, only keys. No default exclusions apply.

use std::collections::BTreeMap;

use gix::bstr::ByteSlice;
use gix::glob::wildmatch::Mode;
use sha2::{Digest, Sha256};

/// One gitignore line as go-git parses it.
#[derive(Debug)]
struct Pattern {
    /// `!pattern`.
    include: bool,
    /// `pattern/`.
    dir_only: bool,
    /// The pattern contains a `/` (after removing a trailing one): matched from the root,
    /// segment by segment, instead of against any single component.
    anchored: bool,
    segments: Vec<String>,
}

/// The patterns of the root `.sourceignore` and `spec.ignore`, in that order.
#[derive(Debug, Default)]
pub(crate) struct KeyIgnore {
    patterns: Vec<Pattern>,
}

impl KeyIgnore {
    pub(crate) fn new(sourceignore: Option<&[u8]>, spec: Option<&str>) -> KeyIgnore {
        let mut ignore = KeyIgnore::default();
        if let Some(content) = sourceignore {
            ignore.add(&String::from_utf8_lossy(content));
        }
        if let Some(spec) = spec {
            ignore.add(spec);
        }
        ignore
    }

    fn add(&mut self, text: &str) {
        // fluxcd/pkg sourceignore.ReadPatterns: skip comments and blank lines.
        for line in text.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            self.patterns.push(Pattern::parse(line));
        }
    }

    /// Whether the object `key` is left out of the artifact.
    pub(crate) fn is_excluded(&self, key: &str) -> bool {
        let path: Vec<&str> = key.split('/').collect();
        self.patterns
            .iter()
            .rev()
            .find(|p| p.matches(&path))
            .is_some_and(|p| !p.include)
    }
}

impl Pattern {
    fn parse(line: &str) -> Pattern {
        let (include, mut text) = match line.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, line),
        };
        if !text.ends_with("\\ ") {
            text = text.trim_end_matches(' ');
        }
        let dir_only = text.ends_with('/');
        if dir_only {
            text = &text[..text.len() - 1];
        }
        Pattern {
            include,
            dir_only,
            anchored: text.contains('/'),
            segments: text.split('/').map(str::to_owned).collect(),
        }
    }

    /// `path` is a file's key split at `/`; every component but the last is a directory.
    fn matches(&self, path: &[&str]) -> bool {
        if self.anchored {
            self.matches_anchored(path)
        } else {
            self.matches_name(path)
        }
    }

    fn matches_name(&self, path: &[&str]) -> bool {
        let pattern = &self.segments[0];
        match path.iter().position(|name| glob(pattern, name)) {
            // A directory pattern does not match the file itself, and go-git stops at the first
            // component that matches the glob.
            Some(i) => !(self.dir_only && i == path.len() - 1),
            None => false,
        }
    }

    fn matches_anchored(&self, mut path: &[&str]) -> bool {
        let mut matched = false;
        let mut traverse = false;
        for (i, segment) in self.segments.iter().enumerate() {
            if segment.is_empty() {
                traverse = false;
                continue;
            }
            if segment == "**" {
                if i == self.segments.len() - 1 {
                    break;
                }
                traverse = true;
                continue;
            }
            if segment.contains("**") {
                return false;
            }
            if path.is_empty() {
                return false;
            }
            if traverse {
                traverse = false;
                matched = false;
                while let Some((first, rest)) = path.split_first() {
                    path = rest;
                    if glob(segment, first) {
                        matched = true;
                        break;
                    }
                }
            } else {
                if !glob(segment, path[0]) {
                    return false;
                }
                matched = true;
                path = &path[1..];
            }
        }
        // What is left of the path lies below a matched directory; a directory pattern that
        // consumed the whole key matched the file, which it must not.
        matched && !(self.dir_only && path.is_empty())
    }
}

/// One path component against one pattern segment (no `/` on either side).
fn glob(pattern: &str, name: &str) -> bool {
    gix::glob::wildmatch(
        pattern.as_bytes().as_bstr(),
        name.as_bytes().as_bstr(),
        Mode::NO_MATCH_SLASH_LITERAL,
    )
}

/// Whether writing `key` below the artifact directory stays inside it: a relative path whose
/// segments are all ordinary names.
pub(crate) fn is_safe(key: &str) -> bool {
    !key.is_empty()
        && !key.contains(['\0', '\\'])
        && key
            .split('/')
            .all(|segment| !segment.is_empty() && segment != "." && segment != "..")
}

/// The revision source-controller reports for an index of keys and ETags: `sha256:` and the
/// digest of the lines `<key> <etag>\n` in byte order of the keys.
pub(crate) fn revision(index: &BTreeMap<String, String>) -> String {
    let mut hasher = Sha256::new();
    for (key, etag) in index {
        hasher.update(key.as_bytes());
        hasher.update(b" ");
        hasher.update(etag.as_bytes());
        hasher.update(b"\n");
    }
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn excluded(patterns: &str, key: &str) -> bool {
        KeyIgnore::new(None, Some(patterns)).is_excluded(key)
    }

    #[test]
    fn a_name_pattern_matches_any_component() {
        assert!(excluded("*.md\n", "README.md"));
        assert!(excluded("*.md\n", "docs/guide.md"));
        assert!(excluded("secret\n", "apps/secret/key.yaml"));
        assert!(!excluded("*.md\n", "apps/deploy.yaml"));
    }

    #[test]
    fn a_directory_pattern_matches_what_is_below_not_a_file_of_that_name() {
        assert!(excluded("tmp/\n", "tmp/a.yaml"));
        assert!(excluded("tmp/\n", "x/tmp/a.yaml"));
        assert!(!excluded("tmp/\n", "tmp"));
        assert!(!excluded("tmp/\n", "x/tmp"));
    }

    #[test]
    fn anchored_patterns_match_from_the_root() {
        assert!(excluded("/apps\n", "apps/a.yaml"));
        assert!(!excluded("/apps\n", "x/apps/a.yaml"));
        assert!(excluded("apps/dev\n", "apps/dev/a.yaml"));
        assert!(excluded("**/dev\n", "apps/dev/a.yaml"));
        assert!(excluded("**/dev\n", "dev/a.yaml"));
        assert!(excluded("apps/**\n", "apps/dev/a.yaml"));
        assert!(!excluded("apps/**\n", "other/a.yaml"));
    }

    #[test]
    fn the_last_matching_pattern_decides_and_negation_works_below_excluded_dirs() {
        assert!(!excluded("/*\n!/deploy\n", "deploy/a.yaml"));
        assert!(excluded("/*\n!/deploy\n", "README.md"));
        // go-git: the key matches the negation, so it is kept (git itself would not).
        assert!(!excluded("dir/\n!dir/keep.yaml\n", "dir/keep.yaml"));
        assert!(excluded("dir/\n!dir/keep.yaml\n", "dir/drop.yaml"));
    }

    #[test]
    fn spec_ignore_comes_after_the_sourceignore() {
        let ignore = KeyIgnore::new(Some(b"# c\n\n*.yaml\n"), Some("!keep.yaml\n"));
        assert!(ignore.is_excluded("a.yaml"));
        assert!(!ignore.is_excluded("keep.yaml"));
        assert!(!KeyIgnore::new(None, None).is_excluded(".git/config"));
    }

    #[test]
    fn unsafe_keys() {
        assert!(is_safe("apps/a.yaml"));
        assert!(is_safe(".sourceignore"));
        for key in [
            "../escape.yaml",
            "/abs.yaml",
            "a/../../b",
            "a//b",
            "./a",
            "a\\b",
            "",
        ] {
            assert!(!is_safe(key), "{key}");
        }
    }

    #[test]
    fn revision_hashes_sorted_key_etag_lines() {
        let mut index = BTreeMap::new();
        index.insert("b.yaml".to_string(), "2".to_string());
        index.insert("a.yaml".to_string(), "1".to_string());
        let expected: String = Sha256::digest(b"a.yaml 1\nb.yaml 2\n")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(revision(&index), format!("sha256:{expected}"));
        // The empty index: sha256 of nothing.
        assert_eq!(
            revision(&BTreeMap::new()),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
