//! What the integration tests share: where the fixtures and `examples/homelab` are, copies of
//! them to plant mistakes in, and checking a repository as `plumb check` does.

// Each test file uses only some of these.
#![allow(dead_code)]

use plumb_check::{check, CheckConfig, Finding, Location};
use plumb_flux::build::{build_repository, Options};
use std::path::{Path, PathBuf};

/// A finding's code, file, line and column.
pub type Place = (&'static str, String, usize, usize);

/// `examples/homelab`, as committed.
pub fn homelab() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/homelab")
}

/// The `kind` (`bad` or `good`) repository of `code` under tests/fixtures.
pub fn fixture(code: &str, kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(code)
        .join(kind)
}

/// A fresh copy of `from` in the directory `name` of the tests' temporary directory.
pub fn fresh_copy(from: &Path, name: &str) -> PathBuf {
    let to = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&to);
    copy_dir(from, &to);
    to
}

/// Copies the directory `from`, with everything under it, to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Replaces `old` (which must be there) with `new` in one file of the repository.
pub fn edit(root: &Path, file: &str, old: &str, new: &str) {
    let path = root.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(old), "{file} has no {old:?}");
    std::fs::write(&path, text.replacen(old, new, 1)).unwrap();
}

/// Builds `entries` of the repository at `root` (every entry when there are none) as
/// `plumb check` does, checks it with `config`, and keeps the findings whose code `keep`
/// accepts.
pub fn findings(
    root: &Path,
    entries: &[&str],
    config: &CheckConfig,
    keep: impl Fn(&str) -> bool,
) -> Vec<Finding> {
    let build = build_repository(root, &options(entries)).expect("the repository builds");
    check(&build.root, &build, config)
        .into_iter()
        .filter(|f| keep(f.code))
        .collect()
}

/// The build options of `plumb check` for `entries`: HelmReleases rendered by a real helm
/// (`PLUMB_HELM`, as scripts/test sets it, or helm on PATH), so that what their charts install
/// is measured; no cache.
pub fn options(entries: &[&str]) -> Options {
    let renderer = plumb_flux::helm_release::LazyRenderer::new(|| {
        let helm = plumb_helm::Helm::find().map_err(|e| e.to_string())?;
        Ok(plumb_flux::helm_release::Renderer {
            helm: std::sync::Arc::new(helm),
            cache: None,
        })
    });
    Options {
        entries: entries.iter().map(|e| e.to_string()).collect(),
        renderer: Some(renderer),
        ..Options::default()
    }
}

/// `(code, file, line, column)` of each finding; every finding must have a location.
pub fn places(findings: &[Finding]) -> Vec<Place> {
    findings
        .iter()
        .map(|f| {
            let l = f.location.as_ref().expect("every finding points at text");
            (f.code, l.file.display().to_string(), l.line, l.column)
        })
        .collect()
}

/// A [`Place`].
pub fn at(code: &'static str, file: &str, line: usize, column: usize) -> Place {
    (code, file.to_string(), line, column)
}

/// Writes `text` to `rel` under `root`, making its directories.
pub fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("a file in a directory")).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `file:line:column` of a location.
pub fn place(l: &Location) -> String {
    format!("{}:{}:{}", l.file.display(), l.line, l.column)
}
