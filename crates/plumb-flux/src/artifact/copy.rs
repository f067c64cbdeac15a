//! The copy operations of one output artifact, applied in order as source-watcher's builder
//! applies them (`applyCopyOperation`): `cp`-like for a path without glob characters, one copy
//! per match for a glob, and the strategy deciding what happens to a file already there.
//!
//! Sources are read as Go's `os.Root` reads them: a symlink is followed while it stays inside
//! the source's tree, and one that leaves it (or is absolute) is an error.

use super::extract::{extract, is_tarball};
use super::pattern::{
    doublestar_glob, doublestar_valid, excluded, fs_glob, go_clean, go_join, has_glob_chars,
    selection_root,
};
use super::{Copy, OutputArtifact, Staged, Strategy};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// Why a copy operation failed, and which one (its index in `copy[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyError {
    pub operation: usize,
    /// What about the operation is wrong: its `from`, its `to` or an `exclude` pattern.
    pub field: &'static str,
    pub message: String,
}

/// Stages `artifact` into `dir` (created) from `sources` (alias → the source's tree).
pub fn stage(
    artifact: &OutputArtifact,
    sources: &BTreeMap<String, PathBuf>,
    dir: &Path,
) -> Result<Staged, CopyError> {
    std::fs::create_dir_all(dir).map_err(|e| CopyError {
        operation: 0,
        field: "name",
        message: format!("failed to create staging dir: {e}"),
    })?;
    let mut staged = Staged {
        dir: dir.to_path_buf(),
        origins: BTreeMap::new(),
        rewritten: Default::default(),
    };
    for (i, op) in artifact.copy.iter().enumerate() {
        apply(op, sources, &mut staged).map_err(|(field, e)| CopyError {
            operation: i,
            field,
            message: format!(
                "failed to apply copy operation from '{}' to '{}': {e}",
                op.from, op.to
            ),
        })?;
    }
    Ok(staged)
}

type Failure = (&'static str, String);

fn from_err(message: impl Into<String>) -> Failure {
    ("from", message.into())
}

fn apply(
    op: &Copy,
    sources: &BTreeMap<String, PathBuf>,
    staged: &mut Staged,
) -> Result<(), Failure> {
    let (alias, pattern) = parse_source(&op.from)
        .map_err(|e| from_err(format!("invalid copy source '{}': {e}", op.from)))?;
    let Some(raw_dest) = op.to.strip_prefix("@artifact/") else {
        return Err((
            "to",
            format!(
                "invalid copy destination '{}': destination must start with '@artifact/'",
                op.to
            ),
        ));
    };
    let root = sources
        .get(alias)
        .ok_or_else(|| from_err(format!("source alias '{alias}' not found")))?;
    if let Some(bad) = op.exclude.iter().find(|p| !doublestar_valid(p)) {
        return Err(("exclude", format!("invalid exclude pattern '{bad}'")));
    }
    // source-watcher writes through an os.Root of the staging directory (and unpacks tarballs
    // beside it): a destination that leaves the artifact is refused before anything is written.
    let dest = go_clean(raw_dest);
    if dest == ".." || dest.starts_with("../") || dest.starts_with('/') {
        return Err((
            "to",
            format!(
                "invalid copy destination '{}': path escapes from parent (the artifact's root)",
                op.to
            ),
        ));
    }
    let dest = if dest == "." { String::new() } else { dest };
    let copier = Copier { op, root, staged };
    if !has_glob_chars(pattern) {
        return copier
            .single(pattern, &dest, op.to.ends_with('/'))
            .map_err(from_err);
    }
    copier.globbed(alias, pattern, &dest).map_err(from_err)
}

/// `@alias/pattern` (`parseCopySource`).
fn parse_source(from: &str) -> Result<(&str, &str), &'static str> {
    let rest = from.strip_prefix('@').ok_or("source must start with '@'")?;
    rest.split_once('/')
        .ok_or("source format must be '@alias/pattern'")
}

struct Copier<'a> {
    op: &'a Copy,
    root: &'a Path,
    staged: &'a mut Staged,
}

impl Copier<'_> {
    /// A path without glob characters: what it names decides (`applySingleSourceCopy`).
    fn single(mut self, pattern: &str, dest: &str, dest_is_dir: bool) -> Result<(), String> {
        let src = go_clean(pattern);
        let real = resolve_in_root(self.root, &src)
            .map_err(|e| format!("failed to stat source '{src}': statat {src}: {e}"))?;
        let Ok(meta) = std::fs::metadata(&real) else {
            return Err(format!("source '{src}' does not exist"));
        };
        let name = base_name(&src);
        if meta.is_dir() {
            if self.op.strategy == Strategy::Extract {
                return Err(format!(
                    "extract strategy is not supported for directories, got '{src}'"
                ));
            }
            return self.copy_path(&src, &go_join(dest, name), &src);
        }
        if excluded(&src, ".", &self.op.exclude) {
            return Ok(());
        }
        if self.op.strategy == Strategy::Extract {
            if !is_tarball(&src) {
                return Err(format!(
                    "extract strategy requires tarball file (.tar.gz or .tgz), got '{src}'"
                ));
            }
            return extract(self.root, &src, dest, self.staged);
        }
        let target = if dest_is_dir || self.staged.dir.join(dest).is_dir() {
            go_join(dest, name)
        } else {
            dest.to_string()
        };
        self.copy_path(&src, &target, ".")
    }

    /// A glob: every match not excluded, each to `dest/<match>` (`dir/**` strips `dir/`).
    fn globbed(mut self, alias: &str, pattern: &str, dest: &str) -> Result<(), String> {
        let matches = if self.op.strategy == Strategy::Extract {
            if !doublestar_valid(pattern) {
                return Err(format!(
                    "invalid glob pattern '{pattern}': {}",
                    super::pattern::BAD_PATTERN
                ));
            }
            doublestar_glob(self.root, pattern)
        } else {
            fs_glob(self.root, pattern)
                .map_err(|e| format!("invalid glob pattern '{pattern}': {e}"))?
        };
        if matches.is_empty() {
            return Err(format!(
                "no files match pattern '{pattern}' in source '{alias}'"
            ));
        }
        let base = selection_root(pattern);
        let kept: Vec<String> = matches
            .into_iter()
            .filter(|m| m != "." && m != ".." && !excluded(m, &base, &self.op.exclude))
            .collect();
        if kept.is_empty() {
            return Err(format!(
                "all files matching pattern '{pattern}' in source '{alias}' were excluded"
            ));
        }
        for m in kept {
            if self.op.strategy == Strategy::Extract {
                if is_tarball(&m) {
                    extract(self.root, &m, dest, self.staged)?;
                }
                continue;
            }
            let target = glob_destination(pattern, &m, dest);
            self.copy_path(&m, &target, &base)
                .map_err(|e| format!("failed to copy file '{m}' to '{target}': {e}"))?;
        }
        Ok(())
    }

    /// `copyFileWithRoots`: a directory is copied whole (the strategy plays no part inside
    /// it), a file merged into an existing one under Merge, otherwise written over.
    fn copy_path(&mut self, src: &str, target: &str, base: &str) -> Result<(), String> {
        let real = resolve_in_root(self.root, src).map_err(|e| format!("statat {src}: {e}"))?;
        let meta = std::fs::metadata(&real).map_err(|e| format!("statat {src}: {e}"))?;
        if meta.is_dir() {
            return self.copy_dir(src, target, base);
        }
        let to = self.staged.dir.join(target);
        if self.op.strategy == Strategy::Merge && std::fs::symlink_metadata(&to).is_ok() {
            let merged = super::merge::merge_files(&to, &real)
                .map_err(|e| format!("failed to merged YAML: {e}"))?;
            std::fs::write(&to, merged).map_err(|e| format!("{target}: {e}"))?;
            self.staged.origins.insert(PathBuf::from(target), real);
            self.staged.rewritten.insert(PathBuf::from(target));
            return Ok(());
        }
        self.copy_regular(src, target)
    }

    /// `copyDirWithRoots`: a walk of `src` in name order, excluded paths (matched from the
    /// source root and from `base`) left out with everything under them.
    fn copy_dir(&mut self, src: &str, target: &str, base: &str) -> Result<(), String> {
        make_dirs(&self.staged.dir, target)?;
        let real = resolve_in_root(self.root, src).map_err(|e| format!("open {src}: {e}"))?;
        let mut names: Vec<String> = std::fs::read_dir(&real)
            .map_err(|e| format!("open {src}: {e}"))?
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let path = if src == "." {
                name.clone()
            } else {
                format!("{src}/{name}")
            };
            if excluded(&path, base, &self.op.exclude) {
                continue;
            }
            let to = go_join(target, &name);
            // The walk does not follow symlinks: a link to a directory is opened as a file.
            let is_dir = std::fs::symlink_metadata(self.root.join(&path)).is_ok_and(|m| m.is_dir());
            if is_dir {
                self.copy_dir(&path, &to, base)?;
            } else {
                self.copy_regular(&path, &to)?;
            }
        }
        Ok(())
    }

    /// `copyRegularFileWithRoots`: the file's content and mode, replacing what was there.
    fn copy_regular(&mut self, src: &str, target: &str) -> Result<(), String> {
        let from = resolve_in_root(self.root, src).map_err(|e| format!("openat {src}: {e}"))?;
        let meta = std::fs::metadata(&from).map_err(|e| format!("openat {src}: {e}"))?;
        if meta.is_dir() {
            return Err(format!("read {src}: is a directory"));
        }
        if let Some((parent, _)) = target.rsplit_once('/') {
            make_dirs(&self.staged.dir, parent)
                .map_err(|e| format!("failed to create destination directory: {e}"))?;
        }
        let to = self.staged.dir.join(target);
        std::fs::copy(&from, &to).map_err(|e| format!("openat {target}: {}", go_io_error(&e)))?;
        self.staged.origins.insert(PathBuf::from(target), from);
        self.staged.rewritten.remove(Path::new(target));
        Ok(())
    }
}

/// `createDirRecursive`: each missing directory of `rel` made, and anything already there
/// (even a file) taken as done, so that writing into it fails later as Go's does.
fn make_dirs(dir: &Path, rel: &str) -> Result<(), String> {
    let mut path = dir.to_path_buf();
    for part in rel.split('/').filter(|p| !p.is_empty() && *p != ".") {
        path.push(part);
        match std::fs::create_dir(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("mkdirat {rel}: {}", go_io_error(&e))),
        }
    }
    Ok(())
}

/// An I/O error as Go's `syscall.Errno` prints it.
fn go_io_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotADirectory => "not a directory".into(),
        std::io::ErrorKind::IsADirectory => "is a directory".into(),
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// `calculateGlobDestination`.
fn glob_destination(pattern: &str, matched: &str, dest: &str) -> String {
    if let Some(prefix) = pattern.strip_suffix("/**") {
        if let Some(rest) = matched.strip_prefix(&format!("{prefix}/")) {
            return go_join(dest, rest);
        }
    }
    go_join(dest, matched)
}

/// Go's `filepath.Base`.
fn base_name(p: &str) -> &str {
    match p.trim_end_matches('/') {
        "" => ".",
        t => t.rsplit('/').next().unwrap_or(t),
    }
}

/// The real path of `rel` inside `root`, following symlinks as `os.Root` does: a link may not
/// be absolute nor lead outside `root`.
fn resolve_in_root(root: &Path, rel: &str) -> Result<PathBuf, String> {
    const ESCAPES: &str = "path escapes from parent";
    let mut pending: Vec<String> = rel
        .split('/')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .rev()
        .collect();
    let mut resolved: Vec<String> = Vec::new();
    let mut links = 0;
    while let Some(part) = pending.pop() {
        match part.as_str() {
            "." => continue,
            ".." => {
                if resolved.pop().is_none() {
                    return Err(ESCAPES.into());
                }
                continue;
            }
            _ => {}
        }
        let mut candidate = root.to_path_buf();
        candidate.extend(&resolved);
        candidate.push(&part);
        match std::fs::symlink_metadata(&candidate) {
            Ok(m) if m.file_type().is_symlink() => {
                links += 1;
                if links > 40 {
                    return Err("too many levels of symbolic links".into());
                }
                let target = std::fs::read_link(&candidate).map_err(|e| e.to_string())?;
                if target.is_absolute() {
                    return Err(ESCAPES.into());
                }
                for c in target.components().rev() {
                    match c {
                        Component::Normal(p) => pending.push(p.to_string_lossy().into_owned()),
                        Component::ParentDir => pending.push("..".into()),
                        Component::CurDir => {}
                        Component::RootDir | Component::Prefix(_) => return Err(ESCAPES.into()),
                    }
                }
            }
            _ => resolved.push(part),
        }
    }
    let mut out = root.to_path_buf();
    out.extend(&resolved);
    Ok(out)
}
