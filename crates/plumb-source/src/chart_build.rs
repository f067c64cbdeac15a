//! A chart directory of a fetched tree (GitRepository, Bucket, this repository) built into a
//! chart ready for `helm template`, as source-controller's `LocalBuilder` and
//! `DependencyManager` build it: the files Helm's loader reads (`.helmignore` applied), and
//! every dependency `Chart.yaml` lists (the lock file's, when there is one) that `charts/`
//! lacks added under `charts/<alias or name>/`: `file://` ones (or no repository) from the same
//! tree, `https://` and `oci://` ones fetched with their version range.
//!
//! The source tree is never written. The result is content-addressed:
//! `chart-build/<sha256(chart directory)>/<name>-<version>-<digest12>/<name>/`, the digest a
//! sha256 over the built tree's paths and contents (source-controller's digest is of its
//! packaged `.tgz`, whose bytes depend on gzip and timestamps plumb does not reproduce).

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::cache::sha256_hex;
use crate::helm::{ChartArtifact, ChartError};
use crate::helm_oci::OciChartSource;
use crate::semver_range::Range;
use crate::{Cache, HelmChartSource, Mirrors, Mode};

/// What a build reads of a chart's `Chart.yaml` (and of a v1 chart's `requirements.yaml`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChartMetadata {
    /// `apiVersion`: `v1` or `v2`.
    pub api_version: String,
    /// `name`.
    pub name: String,
    /// `version`, as written.
    pub version: String,
    /// `dependencies` (v2) or `requirements.yaml`'s (v1).
    pub dependencies: Vec<ChartDependency>,
}

/// One entry of a chart's dependencies or of its lock file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChartDependency {
    /// The chart's name in its repository.
    pub name: String,
    /// A version or a semver range (exact in a lock file).
    pub version: String,
    /// `https://...`, `oci://...`, `file://<path>` or empty (the chart in `charts/<name>`).
    pub repository: String,
    /// The name the chart takes in the parent (`charts/<alias>`).
    pub alias: Option<String>,
}

/// Why a chart directory could not be built; each names the chart directory.
#[derive(Debug, thiserror::Error)]
pub enum ChartBuildError {
    /// `Chart.yaml` is missing or is not a chart's metadata.
    #[error("chart {}: {message}", chart.display())]
    InvalidChart {
        /// The chart directory.
        chart: PathBuf,
        message: String,
    },
    /// A `file://` dependency is missing, not a chart, or not of the version asked for.
    #[error("chart {}: failed to add local dependency {name:?} ({repository}): {message}", chart.display())]
    LocalDependency {
        chart: PathBuf,
        name: String,
        repository: String,
        message: String,
    },
    /// A dependency names a repository source-controller does not fetch from (`@name`,
    /// `alias:`, another scheme).
    #[error("chart {}: dependency {name:?}: repository {repository:?} is not an http(s):// or oci:// URL", chart.display())]
    UnsupportedRepository {
        chart: PathBuf,
        name: String,
        repository: String,
    },
    /// A remote dependency could not be fetched.
    #[error("chart {}: failed to add remote dependency {name:?}{}: {source}", chart.display(), mirror.as_ref().map(|m| format!(" (fetched from mirror {m})")).unwrap_or_default())]
    RemoteDependency {
        chart: PathBuf,
        name: String,
        /// The URL a `mirrors:` rule rewrote the repository's to.
        mirror: Option<String>,
        /// Boxed to keep every `Result` of this error small.
        #[source]
        source: Box<ChartError>,
    },
    /// The source tree cannot be read or the cache cannot be written.
    #[error("chart {}: {}: {source}", chart.display(), path.display())]
    Io {
        chart: PathBuf,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ChartBuildError {
    /// Whether the chart itself is wrong (source-controller would fail the HelmChart), as
    /// opposed to a build that could not be done here (a repository unreachable, offline, the
    /// cache not writable).
    pub fn is_source_error(&self) -> bool {
        match self {
            ChartBuildError::RemoteDependency { source, .. } => source.is_source_error(),
            ChartBuildError::Io { .. } => false,
            _ => true,
        }
    }
}

impl ChartMetadata {
    /// Reads `dir/Chart.yaml` (and, for `apiVersion: v1`, `dir/requirements.yaml`).
    pub fn read(dir: &Path) -> Result<ChartMetadata, String> {
        let chart =
            read_yaml(&dir.join("Chart.yaml"))?.ok_or_else(|| "no Chart.yaml".to_owned())?;
        let text = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            _ => String::new(),
        };
        let name = text(&chart["name"]);
        if name.is_empty() {
            return Err("Chart.yaml has no name".into());
        }
        let version = text(&chart["version"]);
        if version.is_empty() {
            return Err("Chart.yaml has no version".into());
        }
        let api_version = text(&chart["apiVersion"]);
        let mut dependencies = dependencies(&chart["dependencies"]);
        if api_version == "v1" {
            if let Some(requirements) = read_yaml(&dir.join("requirements.yaml"))? {
                dependencies = self::dependencies(&requirements["dependencies"]);
            }
        }
        Ok(ChartMetadata {
            api_version,
            name,
            version,
            dependencies,
        })
    }
}

/// A YAML file's first document as JSON; `None` when the file does not exist.
fn read_yaml(path: &Path) -> Result<Option<serde_json::Value>, String> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let name = path.display().to_string();
    let docs = plumb_yaml::parse_documents(&name, &text).map_err(|e| e.to_string())?;
    let Some(doc) = docs.first() else {
        return Ok(Some(serde_json::Value::Null));
    };
    plumb_yaml::to_json(doc)
        .map(Some)
        .map_err(|e| format!("{name}: {e}"))
}

fn dependencies(list: &serde_json::Value) -> Vec<ChartDependency> {
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.trim().to_owned(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => String::new(),
    };
    list.as_array()
        .map(|deps| {
            deps.iter()
                .map(|d| ChartDependency {
                    name: text(&d["name"]),
                    version: text(&d["version"]),
                    repository: text(&d["repository"]),
                    alias: Some(text(&d["alias"])).filter(|a| !a.is_empty()),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The lock file's dependencies, which take precedence over the chart's (Helm reads
/// `Chart.lock` for v2 charts, `requirements.lock` for v1).
fn locked(dir: &Path, api_version: &str) -> Result<Option<Vec<ChartDependency>>, String> {
    let file = if api_version == "v1" {
        "requirements.lock"
    } else {
        "Chart.lock"
    };
    Ok(read_yaml(&dir.join(file))?.map(|lock| dependencies(&lock["dependencies"])))
}

impl Cache {
    /// Builds the chart at `chart_dir`, a directory of the tree at `root` (the artifact's
    /// root: `file://` dependencies may not leave it), into the cache (see the module
    /// documentation). Remote dependencies are fetched through `mirrors`, in `mode`.
    pub fn build_chart(
        &self,
        root: &Path,
        chart_dir: &Path,
        mirrors: &Mirrors,
        mode: Mode,
    ) -> Result<ChartArtifact, ChartBuildError> {
        let chart = chart_dir.to_path_buf();
        let io = |path: &Path| {
            let chart = chart.clone();
            let path = path.to_path_buf();
            move |source| ChartBuildError::Io {
                chart,
                path,
                source,
            }
        };
        let invalid = |message: String| ChartBuildError::InvalidChart {
            chart: chart.clone(),
            message,
        };
        let metadata = ChartMetadata::read(chart_dir).map_err(invalid)?;
        let reqs = match locked(chart_dir, &metadata.api_version).map_err(invalid)? {
            Some(lock) => lock,
            None => metadata.dependencies.clone(),
        };
        let tmp = self.dir().join(crate::manage::TMP_DIR);
        fs::create_dir_all(&tmp).map_err(io(&tmp))?;
        let staging = tempfile::Builder::new()
            .prefix("chart-build-")
            .tempdir_in(&tmp)
            .map_err(io(&tmp))?;
        let built = staging.path().join(&metadata.name);
        copy_chart(root, chart_dir, &built).map_err(|(path, e)| ChartBuildError::Io {
            chart: chart.clone(),
            path,
            source: e,
        })?;
        let present = subchart_names(&built.join("charts"));
        for (key, dep) in missing(&present, &reqs) {
            let dest = built.join("charts").join(&key);
            if dest.exists() {
                // The copy's `charts/<key>` is no chart of that name: the dependency takes its
                // place (in the copy only).
                fs::remove_dir_all(&dest).map_err(io(&dest))?;
            }
            if is_local(&dep) {
                self.add_local(root, chart_dir, &dep, &dest)?;
            } else {
                let fetched = self.fetch_dependency(chart_dir, &dep, mirrors, mode)?;
                copy_tree(&fetched.dir, &dest).map_err(|(path, e)| ChartBuildError::Io {
                    chart: chart.clone(),
                    path,
                    source: e,
                })?;
            }
            if let Some(alias) = &dep.alias {
                rename_chart(&dest, alias).map_err(io(&dest))?;
            }
        }
        let digest = tree_digest(&built).map_err(io(&built))?;
        let canonical = fs::canonicalize(chart_dir).unwrap_or_else(|_| chart_dir.to_path_buf());
        let entry = self
            .dir()
            .join("chart-build")
            .join(sha256_hex(&canonical.display().to_string()));
        fs::create_dir_all(&entry).map_err(io(&entry))?;
        crate::manage::record_source(&entry, &canonical.display().to_string());
        let revision = entry.join(format!(
            "{}-{}-{}",
            metadata.name,
            metadata.version,
            &digest[..12]
        ));
        if !revision.is_dir() {
            let staged = staging.keep();
            // Another build may have put the same tree in place first: it is as good.
            if let Err(e) = fs::rename(&staged, &revision) {
                let _ = fs::remove_dir_all(&staged);
                if !revision.is_dir() {
                    return Err(io(&revision)(e));
                }
            }
        }
        crate::manage::touch(&revision);
        Ok(ChartArtifact {
            dir: revision.join(&metadata.name),
            name: metadata.name,
            version: metadata.version,
            digest: format!("sha256:{digest}"),
        })
    }

    /// A `file://` dependency (or one without a repository), from the same tree.
    fn add_local(
        &self,
        root: &Path,
        chart_dir: &Path,
        dep: &ChartDependency,
        dest: &Path,
    ) -> Result<(), ChartBuildError> {
        let failed = |message: String| ChartBuildError::LocalDependency {
            chart: chart_dir.to_path_buf(),
            name: dep.name.clone(),
            repository: dep.repository.clone(),
            message,
        };
        let relative = if dep.repository.is_empty() {
            PathBuf::from("charts").join(&dep.name)
        } else {
            PathBuf::from(dep.repository.trim_start_matches("file://"))
        };
        let path = confined(root, chart_dir, &relative);
        if !path.is_dir() {
            let shown = path.strip_prefix(root).unwrap_or(&path);
            return Err(failed(format!("no chart found at '{}'", shown.display())));
        }
        let version_text = if dep.version.is_empty() {
            "*"
        } else {
            &dep.version
        };
        let range = Range::parse(version_text).map_err(|e| {
            failed(format!(
                "invalid version/constraint format '{}': {e}",
                dep.version
            ))
        })?;
        let metadata = ChartMetadata::read(&path).map_err(|e| failed(e.to_string()))?;
        let version = crate::semver_range::tag_version(&metadata.version)
            .ok_or_else(|| failed(format!("invalid chart version {:?}", metadata.version)))?;
        if !range.matches(&version) {
            return Err(failed(format!(
                "can't get a valid version for constraint '{}' (the chart is {})",
                dep.version, metadata.version
            )));
        }
        copy_chart(root, &path, dest).map_err(|(path, e)| ChartBuildError::Io {
            chart: chart_dir.to_path_buf(),
            path,
            source: e,
        })
    }

    /// A dependency from an `https://` or `oci://` repository, fetched with its version range.
    fn fetch_dependency(
        &self,
        chart_dir: &Path,
        dep: &ChartDependency,
        mirrors: &Mirrors,
        mode: Mode,
    ) -> Result<ChartArtifact, ChartBuildError> {
        let url = dep.repository.trim_end_matches('/');
        let mirrored = mirrors.rewrite(url);
        let fetch_url = mirrored.as_deref().unwrap_or(url);
        let result = if fetch_url.starts_with("oci://") {
            self.fetch_oci_chart(
                &OciChartSource {
                    repo_url: fetch_url.to_owned(),
                    chart: dep.name.clone(),
                    version: dep.version.clone(),
                    ..OciChartSource::default()
                },
                mode,
            )
        } else if fetch_url.starts_with("https://") || fetch_url.starts_with("http://") {
            self.fetch_chart(
                &HelmChartSource {
                    repo_url: fetch_url.to_owned(),
                    chart: dep.name.clone(),
                    version: dep.version.clone(),
                    credentials: None,
                },
                mode,
            )
        } else {
            return Err(ChartBuildError::UnsupportedRepository {
                chart: chart_dir.to_path_buf(),
                name: dep.name.clone(),
                repository: dep.repository.clone(),
            });
        };
        result.map_err(|e| ChartBuildError::RemoteDependency {
            chart: chart_dir.to_path_buf(),
            name: dep.name.clone(),
            mirror: mirrored.clone(),
            source: Box::new(e),
        })
    }

    /// The root of the tree `dir` is in, for confining `file://` dependencies: the revision
    /// directory when `dir` is in this cache (`<kind>/<source>/<revision>/...`), else the
    /// nearest ancestor holding `.git`, else `dir` itself.
    pub fn tree_root(&self, dir: &Path) -> PathBuf {
        let dir = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let cache = fs::canonicalize(self.dir()).unwrap_or_else(|_| self.dir().to_path_buf());
        if let Ok(rest) = dir.strip_prefix(&cache) {
            let first: PathBuf = rest.components().take(3).collect();
            if first.components().count() == 3 {
                return cache.join(first);
            }
        }
        dir.ancestors()
            .find(|a| a.join(".git").exists())
            .map(Path::to_path_buf)
            .unwrap_or(dir)
    }
}

fn is_local(dep: &ChartDependency) -> bool {
    dep.repository.is_empty() || dep.repository.starts_with("file://")
}

/// `chart_dir/relative` resolved lexically inside `root`, as `securejoin` does: a `..` at the
/// root stays at the root.
fn confined(root: &Path, chart_dir: &Path, relative: &Path) -> PathBuf {
    let start = chart_dir.strip_prefix(root).unwrap_or(Path::new(""));
    let mut parts: Vec<std::ffi::OsString> = Vec::new();
    for component in start.components().chain(relative.components()) {
        match component {
            Component::Normal(p) => parts.push(p.to_owned()),
            Component::ParentDir => {
                parts.pop();
            }
            _ => {}
        }
    }
    let mut path = root.to_path_buf();
    path.extend(parts);
    path
}

/// The dependencies of `reqs` that `present` lacks, by alias or name, as source-controller's
/// `collectMissing` (which finds none when the counts are equal).
fn missing(present: &[String], reqs: &[ChartDependency]) -> BTreeMap<String, ChartDependency> {
    let mut out = BTreeMap::new();
    if present.len() == reqs.len() {
        return out;
    }
    for dep in reqs {
        let key = dep.alias.clone().unwrap_or_else(|| dep.name.clone());
        if !present.contains(&key) {
            out.insert(key, dep.clone());
        }
    }
    out
}

/// The names (from their `Chart.yaml`) of the subcharts Helm's loader finds in `charts/`:
/// directories and `.tgz` archives.
fn subchart_names(charts: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(charts) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        if path.is_dir() {
            if let Ok(m) = ChartMetadata::read(&path) {
                names.push(m.name);
            }
        } else if path.extension().is_some_and(|e| e == "tgz") {
            if let Some(name) = archive_chart_name(&path) {
                names.push(name);
            }
        }
    }
    names
}

/// The `name` of the `<dir>/Chart.yaml` in a chart archive.
fn archive_chart_name(path: &Path) -> Option<String> {
    let file = fs::File::open(path).ok()?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    for entry in archive.entries().ok()? {
        let mut entry = entry.ok()?;
        let name = entry.path().ok()?.to_string_lossy().into_owned();
        let parts: Vec<&str> = name.split('/').collect();
        if parts.len() == 2 && parts[1] == "Chart.yaml" {
            let mut text = String::new();
            entry.read_to_string(&mut text).ok()?;
            let docs = plumb_yaml::parse_documents(&name, &text).ok()?;
            let json = plumb_yaml::to_json(docs.first()?).ok()?;
            return json["name"].as_str().map(str::to_owned);
        }
    }
    None
}

/// Sets the `name:` of `dir/Chart.yaml` to `alias`, as source-controller renames an aliased
/// dependency it adds.
fn rename_chart(dir: &Path, alias: &str) -> std::io::Result<()> {
    let path = dir.join("Chart.yaml");
    let text = fs::read_to_string(&path)?;
    let mut renamed = false;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            if !renamed && line.starts_with("name:") {
                renamed = true;
                format!("name: {alias}")
            } else {
                line.to_owned()
            }
        })
        .collect();
    let mut out = lines.join("\n");
    out.push('\n');
    if !renamed {
        out.push_str(&format!("name: {alias}\n"));
    }
    fs::write(path, out)
}

type CopyError = (PathBuf, std::io::Error);

/// Copies the files Helm's loader reads of the chart at `from` to `to`: `.helmignore` and
/// Helm's default rule (`templates/.?*`) applied, symbolic links followed where they stay
/// inside `root`.
fn copy_chart(root: &Path, from: &Path, to: &Path) -> Result<(), CopyError> {
    let ignore_text = fs::read_to_string(from.join(".helmignore")).unwrap_or_default();
    let rules = HelmIgnore::parse(&ignore_text);
    let root = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    copy_dir(&root, from, to, "", &rules)
}

fn copy_dir(
    root: &Path,
    from: &Path,
    to: &Path,
    rel: &str,
    rules: &HelmIgnore,
) -> Result<(), CopyError> {
    let err = |p: &Path| {
        let p = p.to_path_buf();
        move |e| (p, e)
    };
    fs::create_dir_all(to).map_err(err(to))?;
    let mut entries: Vec<_> = fs::read_dir(from)
        .map_err(err(from))?
        .filter_map(|e| e.ok())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let rel_path = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let target = fs::canonicalize(&path).map_err(err(&path))?;
        if !target.starts_with(root) {
            return Err((
                path.clone(),
                std::io::Error::other(format!(
                    "a symbolic link to {}, outside the source tree",
                    target.display()
                )),
            ));
        }
        let meta = fs::metadata(&path).map_err(err(&path))?;
        if rules.ignored(&rel_path, meta.is_dir()) {
            continue;
        }
        if meta.is_dir() {
            let here = fs::canonicalize(from).map_err(err(from))?;
            if here.starts_with(&target) {
                return Err((
                    path.clone(),
                    std::io::Error::other("a symbolic link to a directory that contains it"),
                ));
            }
            copy_dir(root, &path, &to.join(&name), &rel_path, rules)?;
        } else if meta.is_file() {
            fs::copy(&path, to.join(&name)).map_err(err(&path))?;
        }
    }
    Ok(())
}

/// Copies a tree of regular files (an already packaged chart from the cache).
fn copy_tree(from: &Path, to: &Path) -> Result<(), CopyError> {
    copy_dir(
        &fs::canonicalize(from).unwrap_or_else(|_| from.to_path_buf()),
        from,
        to,
        "",
        &HelmIgnore::default(),
    )
}

/// sha256 (hex) over every file's path and content, in path order.
fn tree_digest(dir: &Path) -> std::io::Result<String> {
    fn walk(dir: &Path, rel: &str, hasher: &mut Sha256) -> std::io::Result<()> {
        let mut entries: Vec<_> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = format!("{rel}/{name}");
            let meta = entry.metadata()?;
            if meta.is_dir() {
                walk(&entry.path(), &rel, hasher)?;
            } else {
                let data = fs::read(entry.path())?;
                hasher.update(rel.as_bytes());
                hasher.update([0]);
                hasher.update((data.len() as u64).to_le_bytes());
                hasher.update(&data);
            }
        }
        Ok(())
    }
    let mut hasher = Sha256::new();
    walk(dir, "", &mut hasher)?;
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// `.helmignore` rules as Helm's `pkg/ignore` reads them: Go `filepath.Match` globs, against
/// the base name when the pattern has no `/`, against the path from the chart's root when it
/// has one (a leading `/` anchors it there too); a trailing `/` matches directories only; `!`
/// negates.
#[derive(Debug, Default)]
struct HelmIgnore {
    rules: Vec<Rule>,
}

#[derive(Debug)]
struct Rule {
    pattern: String,
    negate: bool,
    dir_only: bool,
    base_only: bool,
}

impl HelmIgnore {
    fn parse(text: &str) -> HelmIgnore {
        let mut rules = Vec::new();
        for line in text.lines().chain(std::iter::once("templates/.?*")) {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line == "!" || line.contains("**") {
                continue;
            }
            let (negate, rest) = match line.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, line),
            };
            let (dir_only, rest) = match rest.strip_suffix('/') {
                Some(rest) => (true, rest),
                None => (false, rest),
            };
            let base_only = !rest.contains('/');
            rules.push(Rule {
                pattern: rest.trim_start_matches('/').to_owned(),
                negate,
                dir_only,
                base_only,
            });
        }
        HelmIgnore { rules }
    }

    /// Helm's `Rules.Ignore`: the first positive rule that matches ignores; a negative rule
    /// that does not match ignores too.
    fn ignored(&self, path: &str, is_dir: bool) -> bool {
        for rule in &self.rules {
            let subject = if rule.base_only {
                path.rsplit('/').next().unwrap_or(path)
            } else {
                path
            };
            if rule.negate {
                if rule.dir_only && !is_dir {
                    return true;
                }
                if !glob_match(rule.pattern.as_bytes(), subject.as_bytes()) {
                    return true;
                }
                continue;
            }
            if rule.dir_only && !is_dir {
                continue;
            }
            if glob_match(rule.pattern.as_bytes(), subject.as_bytes()) {
                return true;
            }
        }
        false
    }
}

/// Go's `filepath.Match` on `/`-separated paths: `*` and `?` never match `/`; `[...]`
/// classes (`^` negates) and `\` escapes.
fn glob_match(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.first() {
        None => name.is_empty(),
        Some(b'*') => {
            let rest = &pattern[1..];
            (0..=name.len())
                .take_while(|&i| i == 0 || name[i - 1] != b'/')
                .any(|i| glob_match(rest, &name[i..]))
        }
        Some(b'?') => !name.is_empty() && name[0] != b'/' && glob_match(&pattern[1..], &name[1..]),
        Some(b'[') => {
            let Some((&c, rest_name)) = name.split_first() else {
                return false;
            };
            let mut i = 1;
            let negated = pattern.get(1) == Some(&b'^');
            if negated {
                i += 1;
            }
            let mut matched = false;
            let mut first = true;
            while i < pattern.len() && (first || pattern[i] != b']') {
                first = false;
                let mut lo = pattern[i];
                if lo == b'\\' && i + 1 < pattern.len() {
                    i += 1;
                    lo = pattern[i];
                }
                let mut hi = lo;
                if pattern.get(i + 1) == Some(&b'-')
                    && pattern.get(i + 2).is_some_and(|&b| b != b']')
                {
                    hi = pattern[i + 2];
                    i += 2;
                }
                if lo <= c && c <= hi {
                    matched = true;
                }
                i += 1;
            }
            if i >= pattern.len() {
                return false;
            }
            matched != negated && c != b'/' && glob_match(&pattern[i + 1..], rest_name)
        }
        Some(b'\\') if pattern.len() > 1 => {
            name.first() == Some(&pattern[1]) && glob_match(&pattern[2..], &name[1..])
        }
        Some(&p) => name.first() == Some(&p) && glob_match(&pattern[1..], &name[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_filepath_match() {
        assert!(glob_match(b"*.swp", b"a.swp"));
        assert!(!glob_match(b"*.swp", b"dir/a.swp"));
        assert!(glob_match(b"templates/.?*", b"templates/.hidden"));
        assert!(!glob_match(b"templates/.?*", b"templates/."));
        assert!(glob_match(b"[a-c]x", b"bx"));
        assert!(!glob_match(b"[^a-c]x", b"bx"));
        assert!(glob_match(b"\\*", b"*"));
    }

    #[test]
    fn helmignore_rules() {
        let rules = HelmIgnore::parse("# comment\n*.md\n/ci/\ntests/*.yaml\n");
        assert!(rules.ignored("README.md", false));
        assert!(rules.ignored("docs/README.md", false));
        assert!(rules.ignored("ci", true));
        assert!(!rules.ignored("ci", false));
        assert!(rules.ignored("tests/a.yaml", false));
        assert!(!rules.ignored("templates/a.yaml", false));
        assert!(rules.ignored("templates/.keep", false));
    }

    #[test]
    fn missing_dependencies_by_alias_or_name() {
        let dep = |name: &str, alias: Option<&str>| ChartDependency {
            name: name.into(),
            alias: alias.map(str::to_owned),
            ..ChartDependency::default()
        };
        let reqs = [dep("a", None), dep("b", Some("c")), dep("d", None)];
        let present = ["a".to_owned(), "b".to_owned()];
        let found: Vec<String> = missing(&present, &reqs).into_keys().collect();
        assert_eq!(found, ["c", "d"]);
        // Equal counts: nothing missing, as source-controller decides.
        assert!(missing(&present, &reqs[..2]).is_empty());
    }

    #[test]
    fn local_paths_stay_in_the_tree() {
        let root = Path::new("/t");
        assert_eq!(
            confined(root, Path::new("/t/charts/app"), Path::new("../common")),
            Path::new("/t/charts/common")
        );
        assert_eq!(
            confined(root, Path::new("/t/app"), Path::new("../../../etc")),
            Path::new("/t/etc")
        );
    }
}
