//! ArtifactGenerator (`source.extensions.fluxcd.io/v1beta1`, fluxcd/source-watcher): an
//! ExternalArtifact per `spec.artifacts[]`, staged from the trees of its sources by the copy
//! operations, as source-watcher's builder stages them.
//!
//! The rules followed: `from` is `@alias/pattern` and `to` is `@artifact/path`. A pattern
//! without glob characters names one file or directory, copied as `cp -r` would (a directory
//! lands as `to/<its name>`, a file at `to`, or inside it when `to` ends with `/` or is a
//! directory). A glob uses Go's `fs.Glob` (so `**` is one path element, like `*`); each match is
//! copied to `to/<match>`, except that `dir/**` strips `dir/`. A glob matching nothing, or only
//! excluded files, is an error. `exclude` patterns are doublestar globs matched against the path
//! from the source root and from the pattern's literal prefix, and a pattern without `/` against
//! file names too. Strategies: `Overwrite` (the default) replaces what an earlier copy wrote;
//! `Merge` deep-merges YAML maps into an existing file (lists replaced, later wins); `Extract`
//! unpacks `.tar.gz`/`.tgz` files (matched with doublestar; other files are passed over) into
//! `to`, refusing entries that would leave it.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const GROUP: &str = "source.extensions.fluxcd.io";

/// One copy operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copy {
    pub from: String,
    pub to: String,
    pub exclude: Vec<String>,
    pub strategy: Strategy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Overwrite,
    Merge,
    Extract,
}

/// One output artifact of a generator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputArtifact {
    pub name: String,
    pub copy: Vec<Copy>,
}

/// An ArtifactGenerator object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generator {
    pub namespace: String,
    pub name: String,
    /// alias → source (`kind`, namespace, name).
    pub sources: Vec<(String, crate::model::ObjectRef)>,
    pub artifacts: Vec<OutputArtifact>,
}

impl Generator {
    /// The ExternalArtifacts it creates: one per `spec.artifacts[].name`, in its namespace.
    pub fn outputs(&self) -> Vec<crate::model::Source> {
        self.artifacts
            .iter()
            .map(|a| crate::model::Source {
                id: crate::model::ObjectRef::new("ExternalArtifact", &self.namespace, &a.name),
                url: None,
                spec: Value::Null,
            })
            .collect()
    }

    pub fn from_object(object: &crate::model::Object) -> Option<Generator> {
        if !object.is(GROUP, "ArtifactGenerator") {
            return None;
        }
        let ns = object.namespace_or_default();
        let spec = &object.value["spec"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let sources = spec["sources"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|s| {
                        let namespace = s["namespace"].as_str().unwrap_or(ns);
                        (
                            text(&s["alias"]),
                            crate::model::ObjectRef::new(
                                s["kind"].as_str().unwrap_or(""),
                                namespace,
                                s["name"].as_str().unwrap_or(""),
                            ),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let artifacts = spec["artifacts"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|a| OutputArtifact {
                        name: text(&a["name"]),
                        copy: a["copy"]
                            .as_array()
                            .map(|ops| {
                                ops.iter()
                                    .map(|op| Copy {
                                        from: text(&op["from"]),
                                        to: text(&op["to"]),
                                        exclude: op["exclude"]
                                            .as_array()
                                            .map(|e| {
                                                e.iter()
                                                    .filter_map(Value::as_str)
                                                    .map(str::to_string)
                                                    .collect()
                                            })
                                            .unwrap_or_default(),
                                        strategy: match op["strategy"].as_str() {
                                            Some("Merge") => Strategy::Merge,
                                            Some("Extract") => Strategy::Extract,
                                            _ => Strategy::Overwrite,
                                        },
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(Generator {
            namespace: ns.to_string(),
            name: object.name().to_string(),
            sources,
            artifacts,
        })
    }
}

/// A staged artifact: its directory, and for each file in it the source file it came from (the
/// last one written, for a merged file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Staged {
    pub dir: PathBuf,
    pub origins: BTreeMap<PathBuf, PathBuf>,
}

/// The ExternalArtifacts of `generator`, staged under `staging` from the trees its sources
/// resolve to in `sources` (directories of the checkout under `root`), or why each cannot be.
pub fn stage_generator(
    generator: &Generator,
    sources: &crate::source::Sources,
    root: &Path,
    staging: &Path,
) -> Vec<(crate::model::ObjectRef, crate::source::Resolution)> {
    use crate::source::Resolution;
    let who = format!(
        "ArtifactGenerator {}/{}",
        generator.namespace, generator.name
    );
    let mut trees = BTreeMap::new();
    let mut missing = None;
    for (alias, source) in &generator.sources {
        match sources.resolve(source) {
            Resolution::Dir(dir) | Resolution::Assumed(dir, _) => {
                trees.insert(alias.clone(), crate::source::join(root, &dir));
            }
            Resolution::Staged(staged) => {
                trees.insert(alias.clone(), staged.dir.clone());
            }
            Resolution::NotFound => {
                missing
                    .get_or_insert((format!("{who} reads {source}, which nothing creates"), true));
            }
            Resolution::Unmapped { .. } | Resolution::Unstaged { .. } => {
                missing
                    .get_or_insert((format!("{who} reads {source}, which is not fetched"), false));
            }
        }
    }
    generator
        .artifacts
        .iter()
        .map(|artifact| {
            let id = crate::model::ObjectRef::new(
                "ExternalArtifact",
                &generator.namespace,
                &artifact.name,
            );
            let resolution = match &missing {
                Some((reason, error)) => Resolution::Unstaged {
                    reason: reason.clone(),
                    error: *error,
                },
                None => {
                    let dir = staging.join(&generator.namespace).join(&artifact.name);
                    match stage(artifact, &trees, &dir) {
                        Ok(staged) => Resolution::Staged(std::sync::Arc::new(staged)),
                        Err(e) => Resolution::Unstaged {
                            reason: format!("{who} failed: {e}"),
                            error: true,
                        },
                    }
                }
            };
            (id, resolution)
        })
        .collect()
}

impl Staged {
    /// A build of this tree with every file position moved back to the checkout's file it was
    /// copied from, so that diagnostics and findings point at the repository.
    pub fn remap(
        &self,
        built: Result<Vec<crate::model::Object>, crate::diagnostic::Diagnostic>,
    ) -> Result<Vec<crate::model::Object>, crate::diagnostic::Diagnostic> {
        let mut files = std::collections::HashMap::new();
        match built {
            Ok(mut objects) => {
                for o in &mut objects {
                    if let Some(node) = &mut o.origin {
                        self.remap_node(node, &mut files);
                    }
                }
                Ok(objects)
            }
            Err(mut d) => {
                if let Some(origin) = d.file.as_deref().and_then(|f| self.origin_of(f)) {
                    d.file = Some(origin.to_path_buf());
                }
                d.message = d.message.replace(&format!("{}/", self.dir.display()), "");
                Err(d)
            }
        }
    }

    fn remap_node(
        &self,
        node: &mut plumb_yaml::Node,
        files: &mut std::collections::HashMap<PathBuf, std::sync::Arc<plumb_yaml::SourceFile>>,
    ) {
        if let Some(span) = &mut node.span {
            let path = span.file.path().to_path_buf();
            if let Some(origin) = self.origin_of(&path) {
                let file = files
                    .entry(path)
                    .or_insert_with(|| plumb_yaml::SourceFile::new(origin, span.file.text()));
                span.file = file.clone();
            }
        }
        match &mut node.kind {
            plumb_yaml::NodeKind::Sequence(items) => {
                items.iter_mut().for_each(|n| self.remap_node(n, files))
            }
            plumb_yaml::NodeKind::Mapping(pairs) => {
                for (k, v) in pairs {
                    self.remap_node(k, files);
                    self.remap_node(v, files);
                }
            }
            plumb_yaml::NodeKind::Scalar(_) => {}
        }
    }

    /// The file of the checkout that `path` (inside the staged tree) was copied from.
    pub fn origin_of(&self, path: &Path) -> Option<&Path> {
        let rel = path.strip_prefix(&self.dir).ok()?;
        self.origins.get(rel).map(PathBuf::as_path)
    }
}

/// Stages `artifact` into `dir` (created) from `sources` (alias → the source's tree).
pub fn stage(
    artifact: &OutputArtifact,
    sources: &BTreeMap<String, PathBuf>,
    dir: &Path,
) -> Result<Staged, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut staged = Staged {
        dir: dir.to_path_buf(),
        origins: BTreeMap::new(),
    };
    for op in &artifact.copy {
        apply(op, sources, &mut staged).map_err(|e| {
            format!(
                "artifact '{}': copy from '{}' to '{}': {e}",
                artifact.name, op.from, op.to
            )
        })?;
    }
    Ok(staged)
}

fn apply(
    op: &Copy,
    sources: &BTreeMap<String, PathBuf>,
    staged: &mut Staged,
) -> Result<(), String> {
    let (alias, pattern) = op
        .from
        .strip_prefix('@')
        .and_then(|f| f.split_once('/'))
        .ok_or("source must be '@alias/pattern'")?;
    let dest = op
        .to
        .strip_prefix("@artifact/")
        .ok_or("destination must start with '@artifact/'")?;
    if dest.split('/').any(|p| p == "..") || pattern.split('/').any(|p| p == "..") {
        return Err("paths may not contain '..'".into());
    }
    let root = sources
        .get(alias)
        .ok_or_else(|| format!("source alias '{alias}' not found"))?;
    let dest_is_dir = op.to.ends_with('/');
    let dest = dest.trim_end_matches('/');
    if !has_glob(pattern) {
        let src = clean(pattern);
        let path = root.join(&src);
        let meta = std::fs::symlink_metadata(&path)
            .map_err(|_| format!("source '{}' does not exist", src))?;
        let name = Path::new(&src)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if meta.is_dir() {
            if op.strategy == Strategy::Extract {
                return Err(format!(
                    "extract strategy is not supported for directories, got '{src}'"
                ));
            }
            let target = join(dest, &name);
            return copy_tree(op, root, &src, &src, &target, staged);
        }
        if excluded(&src, ".", &op.exclude) {
            return Ok(());
        }
        if op.strategy == Strategy::Extract {
            if !is_tarball(&src) {
                return Err(format!(
                    "extract strategy requires tarball file (.tar.gz or .tgz), got '{src}'"
                ));
            }
            return extract(root, &src, dest, staged);
        }
        let target = if dest_is_dir || staged.dir.join(dest).is_dir() {
            join(dest, &name)
        } else {
            dest.to_string()
        };
        return copy_file(op, root, &src, &target, staged);
    }
    // Extract matches with doublestar (`**` any depth), the others with Go's fs.Glob.
    let matches = if op.strategy == Strategy::Extract {
        doublestar_glob(root, pattern)
    } else {
        glob(root, pattern)?
    };
    if matches.is_empty() {
        return Err(format!(
            "no files match pattern '{pattern}' in source '{alias}'"
        ));
    }
    let base = selection_root(pattern);
    let kept: Vec<String> = matches
        .into_iter()
        .filter(|m| !excluded(m, &base, &op.exclude))
        .collect();
    if kept.is_empty() {
        return Err(format!(
            "all files matching pattern '{pattern}' in source '{alias}' were excluded"
        ));
    }
    for m in kept {
        if op.strategy == Strategy::Extract {
            if is_tarball(&m) && !root.join(&m).is_dir() {
                extract(root, &m, dest, staged)?;
            }
            continue;
        }
        let target = match pattern
            .strip_suffix("/**")
            .and_then(|p| m.strip_prefix(&format!("{p}/")))
        {
            Some(rest) => join(dest, rest),
            None => join(dest, &m),
        };
        if root.join(&m).is_dir() {
            copy_tree(op, root, &m, &base, &target, staged)?;
        } else {
            copy_file(op, root, &m, &target, staged)?;
        }
    }
    Ok(())
}

/// Copies directory `src` (relative to `root`) to `target`, skipping excluded paths.
fn copy_tree(
    op: &Copy,
    root: &Path,
    src: &str,
    base: &str,
    target: &str,
    staged: &mut Staged,
) -> Result<(), String> {
    std::fs::create_dir_all(staged.dir.join(target)).map_err(|e| e.to_string())?;
    let mut entries: Vec<_> = std::fs::read_dir(root.join(src))
        .map_err(|e| format!("{src}: {e}"))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = join(src, &name);
        if excluded(&path, base, &op.exclude) {
            continue;
        }
        let Ok(file_type) = e.file_type() else {
            continue;
        };
        let to = join(target, &name);
        if file_type.is_dir() {
            copy_tree(op, root, &path, base, &to, staged)?;
        } else if file_type.is_file() {
            copy_file(op, root, &path, &to, staged)?;
        }
        // Symlinks are not copied: the staged tree holds only what is in the source.
    }
    Ok(())
}

fn copy_file(
    op: &Copy,
    root: &Path,
    src: &str,
    target: &str,
    staged: &mut Staged,
) -> Result<(), String> {
    let from = root.join(src);
    let to = staged.dir.join(target);
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    if op.strategy == Strategy::Merge && to.is_file() {
        let merged = merge_yaml(&to, &from)?;
        std::fs::write(&to, merged).map_err(|e| format!("{target}: {e}"))?;
    } else {
        // A symlink in the source is not followed out of it: only regular files are copied.
        if !std::fs::symlink_metadata(&from).is_ok_and(|m| m.is_file()) {
            return Ok(());
        }
        std::fs::copy(&from, &to).map_err(|e| format!("{src}: {e}"))?;
    }
    staged.origins.insert(PathBuf::from(target), from);
    Ok(())
}

fn is_tarball(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".tar.gz") || lower.ends_with(".tgz")
}

/// Extracts the gzip-compressed tarball `src` into `dest`, keeping its structure. Entries that
/// would land outside `dest` (absolute or `..` paths) are an error; links and special files are
/// not extracted, so nothing staged points outside the artifact.
fn extract(root: &Path, src: &str, dest: &str, staged: &mut Staged) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("failed to extract tarball '{src}' to '{dest}': {e}");
    let file = std::fs::File::open(root.join(src)).map_err(fail)?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let base = staged.dir.join(dest);
    std::fs::create_dir_all(&base).map_err(fail)?;
    for entry in archive.entries().map_err(fail)? {
        let mut entry = entry.map_err(fail)?;
        let path = entry.path().map_err(fail)?.into_owned();
        let safe = path.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
        if !safe {
            return Err(format!(
                "failed to extract tarball '{src}': entry '{}' leaves the destination",
                path.display()
            ));
        }
        let kind = entry.header().entry_type();
        let to = base.join(&path);
        if kind.is_dir() {
            std::fs::create_dir_all(&to).map_err(fail)?;
        } else if kind.is_file() {
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(fail)?;
            }
            let mut out = std::fs::File::create(&to).map_err(fail)?;
            std::io::copy(&mut entry, &mut out).map_err(fail)?;
            let rel = PathBuf::from(dest).join(&path);
            staged.origins.insert(rel, root.join(src));
        }
    }
    Ok(())
}

/// Every path under `root` (files and directories, relative, sorted) matching a doublestar
/// pattern.
fn doublestar_glob(root: &Path, pattern: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![String::new()];
    while let Some(dir) = stack.pop() {
        let Ok(read) = std::fs::read_dir(root.join(&dir)) else {
            continue;
        };
        for e in read.filter_map(Result::ok) {
            let rel = join(&dir, &e.file_name().to_string_lossy());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(rel.clone());
            }
            if doublestar(pattern, &rel) {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// `base` merged with `overlay`, every document of each file merged into one map first, as
/// YAML with sorted keys (source-watcher marshals a Go map).
fn merge_yaml(base: &Path, overlay: &Path) -> Result<String, String> {
    let load = |p: &Path| -> Result<Value, String> {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        let docs = plumb_yaml::parse_documents(p, &text).map_err(|e| e.to_string())?;
        let mut out = Value::Object(Default::default());
        for d in docs.iter().filter(|d| !d.is_null()) {
            let v = plumb_yaml::to_json(d).map_err(|e| e.message.clone())?;
            if !v.is_object() {
                return Err(format!(
                    "{}: cannot unmarshal YAML document: not a map",
                    p.display()
                ));
            }
            merge_map(&mut out, v);
        }
        Ok(out)
    };
    let mut merged = load(base)?;
    merge_map(&mut merged, load(overlay)?);
    sort_keys(&mut merged);
    Ok(plumb_yaml::write_document(&merged))
}

/// Helm's values merge: maps merge recursively, anything else from `overlay` replaces.
fn merge_map(base: &mut Value, overlay: Value) {
    match (base, overlay) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(existing) if existing.is_object() && v.is_object() => {
                        merge_map(existing, v)
                    }
                    _ => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

fn sort_keys(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            for (k, mut v) in entries {
                sort_keys(&mut v);
                map.insert(k, v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

fn has_glob(p: &str) -> bool {
    p.contains(['*', '?', '[', ']'])
}

fn clean(p: &str) -> String {
    crate::source::clean_relative(p)
}

fn join(a: &str, b: &str) -> String {
    clean(&format!("{a}/{b}"))
}

/// The literal prefix of a pattern, before its first glob element.
fn selection_root(pattern: &str) -> String {
    let cleaned = clean(pattern);
    let prefix: Vec<&str> = cleaned.split('/').take_while(|p| !has_glob(p)).collect();
    if prefix.is_empty() {
        ".".to_string()
    } else {
        prefix.join("/")
    }
}

/// Go's `fs.Glob` over `root`: matches of `pattern` element by element, sorted.
fn glob(root: &Path, pattern: &str) -> Result<Vec<String>, String> {
    let mut current = vec![String::new()];
    for part in pattern.split('/').filter(|p| !p.is_empty()) {
        let mut next = Vec::new();
        for dir in &current {
            let path = if dir.is_empty() {
                root.to_path_buf()
            } else {
                root.join(dir)
            };
            if !has_glob(part) {
                let candidate = join(dir, part);
                if std::fs::symlink_metadata(root.join(&candidate)).is_ok() {
                    next.push(candidate);
                }
                continue;
            }
            let Ok(read) = std::fs::read_dir(&path) else {
                continue;
            };
            let mut names: Vec<String> = read
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            for name in names {
                if segment_match(part, &name)? {
                    next.push(join(dir, &name));
                }
            }
        }
        current = next;
    }
    Ok(current.into_iter().filter(|p| !p.is_empty()).collect())
}

/// Go's `path.Match` for one element: `*` any run of characters, `?` one, `[...]` a class
/// (`^` negates, `a-z` ranges), `\` escapes.
fn segment_match(pattern: &str, name: &str) -> Result<bool, String> {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    match_from(&p, &n).ok_or_else(|| format!("syntax error in pattern '{pattern}'"))
}

fn match_from(p: &[char], n: &[char]) -> Option<bool> {
    let Some((&c, rest)) = p.split_first() else {
        return Some(n.is_empty());
    };
    match c {
        '*' => {
            for skip in 0..=n.len() {
                if match_from(rest, &n[skip..])? {
                    return Some(true);
                }
            }
            Some(false)
        }
        '?' => match n.split_first() {
            Some((_, nr)) => match_from(rest, nr),
            None => Some(false),
        },
        '[' => {
            let (matched, after) = class(rest, *n.first()?)?;
            if !matched {
                return Some(false);
            }
            match_from(after, &n[1..])
        }
        '\\' => {
            let (&esc, rest) = rest.split_first()?;
            match n.split_first() {
                Some((&f, nr)) if f == esc => match_from(rest, nr),
                _ => Some(false),
            }
        }
        _ => match n.split_first() {
            Some((&f, nr)) if f == c => match_from(rest, nr),
            _ => Some(false),
        },
    }
}

/// A `[...]` class after its `[`: whether `ch` is in it, and the pattern after its `]`.
fn class(p: &[char], ch: char) -> Option<(bool, &[char])> {
    let (negated, mut p) = match p.first() {
        Some('^') => (true, &p[1..]),
        _ => (false, p),
    };
    let mut found = false;
    let mut first = true;
    loop {
        let (&c, rest) = p.split_first()?;
        if c == ']' && !first {
            return Some((found != negated, rest));
        }
        first = false;
        let (lo, rest) = if c == '\\' {
            let (&e, r) = rest.split_first()?;
            (e, r)
        } else {
            (c, rest)
        };
        if rest.first() == Some(&'-') && rest.get(1).is_some_and(|&c| c != ']') {
            let hi = rest[1];
            if lo <= ch && ch <= hi {
                found = true;
            }
            p = &rest[2..];
        } else {
            if lo == ch {
                found = true;
            }
            p = rest;
        }
    }
}

/// Whether `path` (from the source root) is excluded: matched as is, relative to `base`, and,
/// for patterns without `/`, by its file name.
fn excluded(path: &str, base: &str, patterns: &[String]) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let relative = if base == "." || base.is_empty() {
        None
    } else {
        path.strip_prefix(&format!("{base}/"))
    };
    patterns.iter().any(|pattern| {
        doublestar(pattern, path)
            || relative.is_some_and(|r| doublestar(pattern, r))
            || (!pattern.contains('/') && doublestar(pattern, name))
    })
}

/// A doublestar match: `**` as a whole element matches any number of elements, `{a,b}`
/// alternatives, the rest as `path.Match` element by element.
fn doublestar(pattern: &str, path: &str) -> bool {
    if let Some(open) = pattern.find('{') {
        if let Some(close) = pattern[open..].find('}') {
            let close = open + close;
            return pattern[open + 1..close].split(',').any(|alt| {
                doublestar(
                    &format!("{}{alt}{}", &pattern[..open], &pattern[close + 1..]),
                    path,
                )
            });
        }
    }
    let p: Vec<&str> = pattern.split('/').collect();
    let n: Vec<&str> = path.split('/').collect();
    elements(&p, &n)
}

fn elements(p: &[&str], n: &[&str]) -> bool {
    match p.split_first() {
        None => n.is_empty(),
        Some((&"**", rest)) => (0..=n.len()).any(|skip| elements(rest, &n[skip..])),
        Some((first, rest)) => match n.split_first() {
            Some((name, nr)) => segment_match(first, name).unwrap_or(false) && elements(rest, nr),
            None => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = t.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        t
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().filter_map(Result::ok) {
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                } else {
                    out.push(e.path().strip_prefix(dir).unwrap().display().to_string());
                }
            }
        }
        out.sort();
        out
    }

    fn op(from: &str, to: &str) -> Copy {
        Copy {
            from: from.into(),
            to: to.into(),
            exclude: Vec::new(),
            strategy: Strategy::Overwrite,
        }
    }

    fn run(src: &tempfile::TempDir, ops: Vec<Copy>) -> Result<(tempfile::TempDir, Staged), String> {
        let out = tempfile::tempdir().unwrap();
        let sources = BTreeMap::from([("repo".to_string(), src.path().to_path_buf())]);
        let artifact = OutputArtifact {
            name: "a".into(),
            copy: ops,
        };
        let staged = stage(&artifact, &sources, &out.path().join("a"))?;
        Ok((out, staged))
    }

    #[test]
    fn a_doublestar_glob_copies_the_contents_of_its_directory() {
        let src = tree(&[
            ("apps/base/app.yaml", "a: 1"),
            ("apps/base/sub/x.yaml", "b: 1"),
            ("apps/prod/patch.yaml", "c: 1"),
        ]);
        let (_t, staged) = run(
            &src,
            vec![
                op("@repo/apps/base/**", "@artifact/base/"),
                op("@repo/apps/prod/**", "@artifact/prod/"),
            ],
        )
        .unwrap();
        assert_eq!(
            files(&staged.dir),
            vec!["base/app.yaml", "base/sub/x.yaml", "prod/patch.yaml"]
        );
        assert_eq!(
            staged.origins[Path::new("base/sub/x.yaml")],
            src.path().join("apps/base/sub/x.yaml")
        );
    }

    #[test]
    fn literal_sources_copy_like_cp() {
        let src = tree(&[("config/app.yaml", "a: 1"), ("README.md", "x")]);
        let (_t, staged) = run(
            &src,
            vec![
                op("@repo/config", "@artifact/"),
                op("@repo/README.md", "@artifact/docs/"),
                op("@repo/README.md", "@artifact/renamed.md"),
            ],
        )
        .unwrap();
        assert_eq!(
            files(&staged.dir),
            vec!["config/app.yaml", "docs/README.md", "renamed.md"]
        );
    }

    #[test]
    fn a_glob_keeps_the_matched_path_and_excludes_filter() {
        let src = tree(&[
            ("deploy/a.yaml", "a: 1"),
            ("deploy/b.md", "x"),
            ("deploy/c.yaml", "c: 1"),
        ]);
        let mut o = op("@repo/deploy/*", "@artifact/out/");
        o.exclude = vec!["*.md".into(), "c.yaml".into()];
        let (_t, staged) = run(&src, vec![o]).unwrap();
        assert_eq!(files(&staged.dir), vec!["out/deploy/a.yaml"]);
    }

    #[test]
    fn errors_as_source_watcher_reports_them() {
        let src = tree(&[("a.yaml", "a: 1")]);
        let e = run(&src, vec![op("@repo/nothing/*.yaml", "@artifact/")]).unwrap_err();
        assert!(
            e.contains("no files match pattern 'nothing/*.yaml' in source 'repo'"),
            "{e}"
        );
        let mut o = op("@repo/*.yaml", "@artifact/");
        o.exclude = vec!["*.yaml".into()];
        let e = run(&src, vec![o]).unwrap_err();
        assert!(e.contains("were excluded"), "{e}");
        let e = run(&src, vec![op("@other/a.yaml", "@artifact/")]).unwrap_err();
        assert!(e.contains("source alias 'other' not found"), "{e}");
        let e = run(&src, vec![op("@repo/a.yaml", "out/")]).unwrap_err();
        assert!(e.contains("must start with '@artifact/'"), "{e}");
        let e = run(&src, vec![op("@repo/missing.yaml", "@artifact/")]).unwrap_err();
        assert!(e.contains("source 'missing.yaml' does not exist"), "{e}");
    }

    #[test]
    fn merge_deep_merges_yaml_maps_and_replaces_lists() {
        let src = tree(&[
            ("base/values.yaml", "a: {x: 1, items: [1, 2]}\nb: keep\n"),
            ("prod/values.yaml", "a: {items: [3], z: 2}\n---\nc: new\n"),
        ]);
        let mut merge = op("@repo/prod/values.yaml", "@artifact/values.yaml");
        merge.strategy = Strategy::Merge;
        let (_t, staged) = run(
            &src,
            vec![op("@repo/base/values.yaml", "@artifact/values.yaml"), merge],
        )
        .unwrap();
        let text = std::fs::read_to_string(staged.dir.join("values.yaml")).unwrap();
        assert_eq!(
            text,
            "a:\n  items:\n  - 3\n  x: 1\n  z: 2\nb: keep\nc: new\n"
        );
    }

    fn tarball(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::default(),
        ));
        for (path, text) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(text.len() as u64);
            header.set_mode(0o644);
            header.set_entry_type(tar::EntryType::Regular);
            // Written raw so that a test can put `..` in a name, as a hostile archive would.
            let name: &mut [u8] = &mut header.as_old_mut().name;
            name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_cksum();
            builder.append(&header, text.as_bytes()).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn extract_unpacks_tarballs_found_at_any_depth() {
        let src = tree(&[("README.md", "x")]);
        std::fs::create_dir_all(src.path().join("charts/nested")).unwrap();
        std::fs::write(
            src.path().join("charts/nested/app-1.0.0.tgz"),
            tarball(&[("app/Chart.yaml", "name: app"), ("app/values.yaml", "a: 1")]),
        )
        .unwrap();
        std::fs::write(src.path().join("charts/notes.txt"), "not a tarball").unwrap();
        let mut o = op("@repo/charts/**", "@artifact/charts/");
        o.strategy = Strategy::Extract;
        let (_t, staged) = run(&src, vec![o]).unwrap();
        assert_eq!(
            files(&staged.dir),
            vec!["charts/app/Chart.yaml", "charts/app/values.yaml"]
        );
        let mut single = op("@repo/README.md", "@artifact/");
        single.strategy = Strategy::Extract;
        let e = run(&src, vec![single]).unwrap_err();
        assert!(e.contains("requires tarball file"), "{e}");
    }

    #[test]
    fn extract_refuses_entries_that_leave_the_artifact() {
        let src = tree(&[]);
        std::fs::write(
            src.path().join("evil.tgz"),
            tarball(&[("../../escaped.yaml", "a: 1")]),
        )
        .unwrap();
        let mut o = op("@repo/evil.tgz", "@artifact/");
        o.strategy = Strategy::Extract;
        let out = tempfile::tempdir().unwrap();
        let sources = BTreeMap::from([("repo".to_string(), src.path().to_path_buf())]);
        let artifact = OutputArtifact {
            name: "a".into(),
            copy: vec![o],
        };
        let e = stage(&artifact, &sources, &out.path().join("a")).unwrap_err();
        assert!(e.contains("leaves the destination"), "{e}");
        assert!(!out.path().join("escaped.yaml").exists());
        assert!(!src.path().join("escaped.yaml").exists());
    }

    #[test]
    fn go_path_match_semantics() {
        for (p, n, want) in [
            ("*.yaml", "a.yaml", true),
            ("*.yaml", "a.yml", false),
            ("a?c", "abc", true),
            ("[a-c]x", "bx", true),
            ("[^a-c]x", "bx", false),
            ("**", "anything", true),
            ("\\*", "*", true),
        ] {
            assert_eq!(segment_match(p, n).unwrap(), want, "{p} {n}");
        }
        assert!(doublestar("**/*.md", "a/b/c.md"));
        assert!(doublestar("docs/**", "docs/a/b"));
        assert!(doublestar("*.{yaml,yml}", "a.yml"));
        assert!(!doublestar("docs/*", "docs/a/b"));
    }
}
