//! `.plumb.yaml` at the repository root: the part `plumb build` reads (`clusters:` entry paths
//! and `sources:` that map Flux sources to local directories).
//!
//! The other top-level keys belong to `plumb check`; they are accepted here and ignored, and an
//! unknown key is an error that names the closest valid one.

use plumb_yaml::Node;
use std::path::{Path, PathBuf};

/// The file name, at the repository root.
pub const FILE_NAME: &str = ".plumb.yaml";

/// Every top-level key `.plumb.yaml` may have.
pub const KNOWN_KEYS: &[&str] = &[
    "clusters",
    "sources",
    "bootstrap",
    "kubernetesVersion",
    "distribution",
    "runtimeCRDs",
    "placeholders",
    "invariants",
    "overlays",
    "rules",
    "mirrors",
    "claims",
    "render",
];

/// A Flux source read from a local directory instead of its remote artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceMapping {
    /// `GitRepository`, `OCIRepository`, `Bucket`, `ExternalArtifact`; `None` matches any kind.
    pub kind: Option<String>,
    /// `None` matches any namespace.
    pub namespace: Option<String>,
    pub name: String,
    /// The directory holding the source's tree, relative to the repository root.
    pub path: PathBuf,
}

impl SourceMapping {
    /// Whether this mapping is for the source `kind` `namespace`/`name`.
    pub fn matches(&self, kind: &str, namespace: &str, name: &str) -> bool {
        self.name == name
            && self.kind.as_deref().is_none_or(|k| k == kind)
            && self.namespace.as_deref().is_none_or(|n| n == namespace)
    }
}

/// What `plumb build` reads from `.plumb.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// Entry paths, relative to the repository root.
    pub clusters: Vec<String>,
    pub sources: Vec<SourceMapping>,
    /// Directories applied before Flux (kustomize directories, manifests, helmfile files);
    /// empty means the common layouts (`crate::bootstrap::DEFAULT_DIRS`).
    pub bootstrap: Vec<String>,
    /// URL prefixes rewritten before fetching (`mirrors:`), in the order listed.
    pub mirrors: Vec<MirrorRule>,
    /// `kubernetesVersion:` (`"1.33"`, `"v1.33.2"`): what charts are rendered for.
    pub kubernetes_version: Option<String>,
    /// `claims:`: what the repository states about the platform, for `plumb verify` to prove.
    pub claims: Claims,
}

/// `claims:` in `.plumb.yaml`: the platform's state as the repository's documents assert it,
/// each proven by `plumb verify` against the live cluster or the Git host, or failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claims {
    /// `branchProtected: true`: the default branch is protected.
    pub branch_protected: bool,
    /// `noForcePush: true`: force pushes to the default branch are refused.
    pub no_force_push: bool,
    /// `requiredChecks:`: status checks the default branch requires.
    pub required_checks: Vec<String>,
    /// `runnerOnline:`: labels one online runner carries, all of them.
    pub runner_online: Vec<String>,
    /// `ready:`: Kustomizations (`namespace/name`) or HelmReleases (`HelmRelease
    /// namespace/name`) Ready in the cluster.
    pub ready: Vec<String>,
    /// The line of `claims:`, for messages.
    pub line: usize,
}

impl Claims {
    pub fn is_empty(&self) -> bool {
        !self.branch_protected
            && !self.no_force_push
            && self.required_checks.is_empty()
            && self.runner_online.is_empty()
            && self.ready.is_empty()
    }
}

/// The keys of `claims:`.
const CLAIM_KEYS: &[&str] = &[
    "branchProtected",
    "noForcePush",
    "requiredChecks",
    "runnerOnline",
    "ready",
];

fn claims(node: &Node) -> Result<Claims, (Option<&Node>, String)> {
    let mut out = Claims {
        line: node.span.as_ref().map_or(0, |s| s.location().line),
        ..Claims::default()
    };
    if node.is_null() {
        return Ok(out);
    }
    let map = node.as_mapping().ok_or((
        Some(node),
        "`claims` must be a mapping of claim: value".to_string(),
    ))?;
    for (k, v) in map {
        let name = k.scalar_value().unwrap_or("");
        let flag = match v.scalar_value() {
            Some("true") => Ok(true),
            Some("false") => Ok(false),
            _ => Err((Some(v), format!("`claims.{name}` must be true or false"))),
        };
        let list = v.string_list().ok_or((
            Some(v),
            format!("`claims.{name}` must be a list of strings"),
        ));
        match name {
            "branchProtected" => out.branch_protected = flag?,
            "noForcePush" => out.no_force_push = flag?,
            "requiredChecks" => out.required_checks = list?,
            "runnerOnline" => out.runner_online = list?,
            "ready" => out.ready = list?,
            other => {
                let hint = plumb_kustomize::kustomization::closest(other, CLAIM_KEYS)
                    .map(|c| format!("; did you mean `{c}`?"))
                    .unwrap_or_else(|| format!("; claims are {}", CLAIM_KEYS.join(", ")));
                return Err((Some(k), format!("unknown claim `{other}`{hint}")));
            }
        }
    }
    Ok(out)
}

/// One `mirrors:` entry: fetch what is under `from` from `to` instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorRule {
    pub from: String,
    pub to: String,
}

/// A `.plumb.yaml` that cannot be used, with where (`path:line: message`; without the line
/// when it is 0, an error of the whole file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", path.display(), if *line == 0 { String::new() } else { format!(":{line}") })]
pub struct ConfigError {
    pub path: PathBuf,
    pub line: usize,
    pub message: String,
}

impl Config {
    /// Reads `<repo>/.plumb.yaml`, inside the repository as every read of a build; no file is
    /// an empty configuration.
    /// Errors name the file as `.plumb.yaml`, relative to the repository.
    pub fn load(repo: &Path) -> Result<Config, ConfigError> {
        match read(repo)? {
            Some(text) => Config::parse(Path::new(FILE_NAME), &text),
            None => Ok(Config::default()),
        }
    }

    /// Reads the text of a `.plumb.yaml`; `path` is only used in errors. The first error.
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        Config::parse_all(path, text).map_err(|mut errors| errors.remove(0))
    }

    /// Reads the text of a `.plumb.yaml`: every error, in the order of the file, or none.
    pub fn parse_all(path: &Path, text: &str) -> Result<Config, Vec<ConfigError>> {
        let fail = |node: Option<&Node>, message: String| error_at(path, node, message);
        let mut config = Config::default();
        let mut errors = Vec::new();
        let entries = settings(path, text).map_err(|e| vec![e])?;
        for (key, value) in &entries {
            let name = key.scalar_value().unwrap_or("");
            if !KNOWN_KEYS.contains(&name) {
                let hint = plumb_kustomize::kustomization::closest(name, KNOWN_KEYS)
                    .map(|c| format!("; did you mean `{c}`?"))
                    .unwrap_or_else(|| format!("; valid keys: {}", KNOWN_KEYS.join(", ")));
                errors.push(fail(Some(key), format!("unknown key `{name}`{hint}")));
                continue;
            }
            if let Err(e) = config.read_setting(path, name, value, &mut errors) {
                errors.push(e);
            }
        }
        if errors.is_empty() {
            Ok(config)
        } else {
            errors.sort_by_key(|e| e.line);
            Err(errors)
        }
    }

    /// Reads one top-level setting into `self`: `Err` stops reading it; `more` takes the
    /// errors of a list's later items, so that each wrong item is reported.
    fn read_setting(
        &mut self,
        path: &Path,
        name: &str,
        value: &Node,
        more: &mut Vec<ConfigError>,
    ) -> Result<(), ConfigError> {
        let fail = |node: Option<&Node>, message: String| error_at(path, node, message);
        let config = self;
        match name {
            "clusters" => {
                config.clusters = value
                    .string_list()
                    .ok_or_else(|| fail(Some(value), "`clusters` must be a list of paths".into()))?
            }
            "bootstrap" => {
                config.bootstrap = value.string_list().ok_or_else(|| {
                    fail(
                        Some(value),
                        "`bootstrap` must be a list of directories".into(),
                    )
                })?
            }
            "mirrors" => config.mirrors = mirror_rules(value).map_err(|(n, m)| fail(n, m))?,
            "claims" => config.claims = claims(value).map_err(|(n, m)| fail(n, m))?,
            "kubernetesVersion" => {
                let text = value.scalar_value().unwrap_or("");
                let bare = text.trim_start_matches('v');
                let parts: Vec<&str> = bare.split('.').collect();
                let numeric = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
                if !(2..=3).contains(&parts.len()) || !parts.iter().all(numeric) {
                    return Err(fail(
                        Some(value),
                        format!(
                            "`kubernetesVersion` must be a version such as \"1.33\", not `{text}`"
                        ),
                    ));
                }
                config.kubernetes_version = Some(bare.to_string());
            }
            "sources" => {
                let items = value.as_sequence().ok_or_else(|| {
                    fail(Some(value), "`sources` must be a list of mappings".into())
                })?;
                for item in items {
                    match source_mapping(item) {
                        Ok(mapping) => config.sources.push(mapping),
                        Err(m) => more.push(fail(Some(item), m)),
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The text of `<repo>/.plumb.yaml`, read inside the repository as every read of a build;
/// `None` when there is no such file.
pub fn read(repo: &Path) -> Result<Option<String>, ConfigError> {
    let path = repo.join(FILE_NAME);
    // No repository is the command's own error to report.
    if !repo.is_dir() {
        return Ok(None);
    }
    let fail = |e: plumb_kustomize::KustomizeError| ConfigError {
        path: PathBuf::from(FILE_NAME),
        line: 0,
        message: e.to_string(),
    };
    let fs = plumb_kustomize::FileSystem::confined(repo).map_err(fail)?;
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    fs.read_text(&path).map(Some).map_err(fail)
}

/// The user's own settings: `$PLUMB_CONFIG`, else `$XDG_CONFIG_HOME/plumb/config.yaml`, else
/// `~/.config/plumb/config.yaml`. Only `mirrors:` for now; its rules take precedence over the
/// repository's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserConfig {
    pub mirrors: Vec<MirrorRule>,
}

impl UserConfig {
    /// Where the user's configuration file is, whether or not it exists.
    pub fn path_from_env() -> Option<PathBuf> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        if let Some(path) = var("PLUMB_CONFIG") {
            return Some(PathBuf::from(path));
        }
        let base = var("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".config")))?;
        Some(base.join("plumb").join("config.yaml"))
    }

    /// Reads the file at `path`; a missing file is an empty configuration.
    pub fn load(path: &Path) -> Result<UserConfig, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => UserConfig::parse(path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(UserConfig::default()),
            Err(e) => Err(ConfigError {
                path: path.to_path_buf(),
                line: 0,
                message: e.to_string(),
            }),
        }
    }

    pub fn parse(path: &Path, text: &str) -> Result<UserConfig, ConfigError> {
        let fail = |node: Option<&Node>, message: String| error_at(path, node, message);
        let mut config = UserConfig::default();
        let entries = settings(path, text)?;
        for (key, value) in &entries {
            match key.scalar_value().unwrap_or("") {
                "mirrors" => {
                    config.mirrors = mirror_rules(value).map_err(|(n, m)| fail(n, m))?;
                }
                other => {
                    return Err(fail(
                        Some(key),
                        format!("unknown key `{other}`; the user configuration has only `mirrors`"),
                    ))
                }
            }
        }
        Ok(config)
    }
}

/// The error `message` at `node`'s line of the file `path` (line 0 without a node).
fn error_at(path: &Path, node: Option<&Node>, message: String) -> ConfigError {
    ConfigError {
        path: path.to_path_buf(),
        line: node
            .and_then(|n| n.span.as_ref())
            .map_or(0, |s| s.location().line),
        message,
    }
}

/// The (key, value) settings a configuration file holds: none for an empty file, an error
/// naming the line for malformed YAML or a document that is not a mapping.
fn settings(path: &Path, text: &str) -> Result<Vec<(Node, Node)>, ConfigError> {
    let docs = plumb_yaml::parse_documents(path, text).map_err(|e| ConfigError {
        path: path.to_path_buf(),
        line: e.location.line,
        message: e.message.clone(),
    })?;
    let Some(root) = docs.into_iter().find(|d| !d.is_null()) else {
        return Ok(Vec::new());
    };
    match root.as_mapping() {
        Some(entries) => Ok(entries.clone()),
        None => Err(error_at(
            path,
            Some(&root),
            "expected a mapping of settings".into(),
        )),
    }
}

/// `mirrors:`: a list of `{from: PREFIX, to: PREFIX}`.
fn mirror_rules(node: &Node) -> Result<Vec<MirrorRule>, (Option<&Node>, String)> {
    if node.is_null() {
        return Ok(Vec::new());
    }
    let items = node.as_sequence().ok_or((
        Some(node),
        "`mirrors` must be a list of `{from: PREFIX, to: PREFIX}`".to_string(),
    ))?;
    let mut rules = Vec::new();
    for item in items {
        let bad = |m: &str| (Some(item), m.to_string());
        let entries = item
            .as_mapping()
            .ok_or_else(|| bad("a mirror is a mapping `{from: PREFIX, to: PREFIX}`"))?;
        for (key, _) in entries {
            let k = key.scalar_value().unwrap_or("");
            if k != "from" && k != "to" {
                return Err((
                    Some(key),
                    format!("unknown key `{k}` in a mirror; a mirror has `from` and `to`"),
                ));
            }
        }
        let field = |name: &str| {
            item.str_at(&[name])
                .filter(|v| !v.trim().is_empty())
                .map(str::to_string)
                .ok_or_else(|| bad(&format!("a mirror needs a non-empty `{name}`")))
        };
        rules.push(MirrorRule {
            from: field("from")?,
            to: field("to")?,
        });
    }
    Ok(rules)
}

fn source_mapping(item: &Node) -> Result<SourceMapping, String> {
    const KEYS: &[&str] = &["kind", "namespace", "name", "path"];
    let Some(entries) = item.as_mapping() else {
        return Err(
            "a source is a mapping with `name`, `path` and optional `kind`, `namespace`".into(),
        );
    };
    for (key, _) in entries {
        let k = key.scalar_value().unwrap_or("");
        if !KEYS.contains(&k) {
            let hint = plumb_kustomize::kustomization::closest(k, KEYS)
                .map(|c| format!("; did you mean `{c}`?"))
                .unwrap_or_default();
            return Err(format!("unknown key `{k}` in a source{hint}"));
        }
    }
    let name = item
        .str_at(&["name"])
        .ok_or("a source needs a `name`")?
        .to_string();
    let path = item
        .str_at(&["path"])
        .ok_or("a source needs a `path` (its directory in this repository)")?;
    Ok(SourceMapping {
        kind: item.str_at(&["kind"]).map(str::to_string),
        namespace: item.str_at(&["namespace"]).map(str::to_string),
        name,
        path: PathBuf::from(crate::source::clean_relative(path)),
    })
}

#[cfg(test)]
mod claims_tests {
    use super::*;

    #[test]
    fn claims_are_read_and_a_misspelt_one_is_named() {
        let text = "claims:\n  branchProtected: true\n  requiredChecks: [build]\n  runnerOnline: [self-hosted, linux]\n  ready: [flux-system/apps]\n";
        let c = Config::parse(Path::new(".plumb.yaml"), text)
            .unwrap()
            .claims;
        assert!(c.branch_protected && !c.no_force_push);
        assert_eq!(c.required_checks, ["build"]);
        assert_eq!(c.runner_online, ["self-hosted", "linux"]);
        assert_eq!(c.ready, ["flux-system/apps"]);
        let e = Config::parse(Path::new(".plumb.yaml"), "claims:\n  branchProtect: true\n")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            ".plumb.yaml:2: unknown claim `branchProtect`; did you mean `branchProtected`?"
        );
        let e = Config::parse(
            Path::new(".plumb.yaml"),
            "claims:\n  noForcePush: yes please\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("must be true or false"), "{e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_clusters_and_sources() {
        let c = Config::parse(
            Path::new(".plumb.yaml"),
            "clusters: [clusters/dev, clusters/prod]\nsources:\n- kind: OCIRepository\n  name: platform\n  path: ./deploy/\nrules: {}\n",
        )
        .unwrap();
        assert_eq!(c.clusters, vec!["clusters/dev", "clusters/prod"]);
        assert_eq!(c.sources[0].path, PathBuf::from("deploy"));
        assert!(c.sources[0].matches("OCIRepository", "flux-system", "platform"));
        assert!(!c.sources[0].matches("GitRepository", "flux-system", "platform"));
    }

    #[test]
    fn mirrors_are_read_in_order_with_their_lines() {
        let c = Config::parse(
            Path::new(".plumb.yaml"),
            "mirrors:\n- {from: ghcr.io/org, to: 'registry.internal:5000/org'}\n- from: https://github.com\n  to: git://127.0.0.1:9418\n",
        )
        .unwrap();
        assert_eq!(c.mirrors.len(), 2);
        assert_eq!(c.mirrors[1].to, "git://127.0.0.1:9418");
        let err =
            Config::parse(Path::new(".plumb.yaml"), "mirrors:\n- from: a\n  too: b\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            ".plumb.yaml:3: unknown key `too` in a mirror; a mirror has `from` and `to`"
        );
        let err = UserConfig::parse(Path::new("config.yaml"), "mirrors:\n- from: a\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "config.yaml:2: a mirror needs a non-empty `to`"
        );
        let err = UserConfig::parse(Path::new("config.yaml"), "clusters: []\n").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("config.yaml:1: unknown key `clusters`"),
            "{err}"
        );
    }

    #[test]
    fn unknown_key_names_the_closest() {
        let err =
            Config::parse(Path::new(".plumb.yaml"), "clusters: []\nsoruces: []\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            ".plumb.yaml:2: unknown key `soruces`; did you mean `sources`?"
        );
    }
}
