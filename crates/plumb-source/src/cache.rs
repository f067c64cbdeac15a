//! The content-addressed cache of fetched sources, shared by concurrent plumb runs.
//!
//! Layout under the cache directory:
//!
//! ```text
//! git/<sha256(url)>/<commit>[-<sha256(spec.ignore)>]/   the checked-out tree, without .git
//! git/<sha256(url)>/refs/<sha256(ref)>                 the last online resolution of a ref
//! tmp/                                                 work directories, renamed into place
//! ```
//!
//! A tree appears only through an atomic rename of a complete directory, so a reader never sees
//! half of one, and two processes fetching the same commit both succeed (the second rename
//! loses, its copy is dropped). Resolution records are replaced the same way.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::FetchError;
use crate::git::{RemoteError, Resolved, Session};
use crate::ignore::Ignore;
use crate::reference::{Checkout, GitRef};
use crate::semver_range::Range;
use crate::tree::{self, TreeError};

/// A GitRepository as plumb fetches it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitSource {
    /// `spec.url`: `https://`, `http://`, `git://`, `file://` or a local path.
    pub url: String,
    /// `spec.ref`.
    pub reference: GitRef,
    /// `spec.ignore`: replaces the default exclusions (not the VCS ones) when set.
    pub ignore: Option<String>,
    /// For a server that asks: from the source's `spec.secretRef`, or `GITHUB_TOKEN`.
    pub credentials: Option<Credentials>,
    /// For an ssh URL: the `identity` and `known_hosts` of the source's `spec.secretRef`;
    /// without, the user's own ssh setup.
    pub ssh: Option<SshKey>,
    /// `spec.recurseSubmodules`: each submodule fetched at its recorded commit and written at
    /// its path.
    pub recurse_submodules: bool,
}

/// A private key and the hosts to trust, as a Flux ssh Secret holds them.
#[derive(Clone, PartialEq, Eq)]
pub struct SshKey {
    /// The private key (OpenSSH or PEM), not passphrase-protected.
    pub identity: String,
    /// `known_hosts` lines; without, the user's own known hosts decide.
    pub known_hosts: Option<String>,
}

impl std::fmt::Debug for SshKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshKey")
            .field("identity", &"<redacted>")
            .field("known_hosts", &self.known_hosts)
            .finish()
    }
}

/// A user name and password (or token) for a git server over HTTP(S). The cache keeps what
/// one identity fetched apart from another's; the password is never printed nor stored.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Whether a fetch may use the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Re-resolve branches and tags against the server; commit pins found in the cache are
    /// still never fetched again.
    Online,
    /// Use only the cache: the last online resolution of the ref.
    Offline,
}

/// A fetched source: the directory holding its files and the revision source-controller would
/// report for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    pub dir: PathBuf,
    /// As in `.status.artifact.revision`: `main@sha1:<40 hex>`, `sha1:<40 hex>`, ...
    pub revision: String,
    /// The commit checked out, 40 hex digits.
    pub commit: String,
}

/// The cache directory and the fetch operations on it.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache { root: dir.into() }
    }

    /// The user's cache: `$PLUMB_CACHE_DIR`, else `$XDG_CACHE_HOME/plumb`, else
    /// `~/.cache/plumb`; `None` when none of these is set.
    pub fn from_env() -> Option<Cache> {
        Cache::from_vars(|name| std::env::var_os(name))
    }

    fn from_vars(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<Cache> {
        let var = |name: &str| var(name).filter(|v| !v.is_empty());
        if let Some(dir) = var("PLUMB_CACHE_DIR") {
            return Some(Cache::new(dir));
        }
        // The XDG spec says a relative value is invalid and is to be ignored.
        if let Some(xdg) = var("XDG_CACHE_HOME").map(PathBuf::from) {
            if xdg.is_absolute() {
                return Some(Cache::new(xdg.join("plumb")));
            }
        }
        var("HOME").map(|home| Cache::new(PathBuf::from(home).join(".cache").join("plumb")))
    }

    pub fn dir(&self) -> &Path {
        &self.root
    }

    /// Fetches `source` as source-controller would and returns its checked-out tree.
    pub fn fetch_git(&self, source: &GitSource, mode: Mode) -> Result<Artifact, FetchError> {
        let fetch = Fetch::new(self, source)?;
        if let Checkout::Commit { sha, .. } = &fetch.checkout {
            if let Some(artifact) = fetch.cached(sha, None) {
                return Ok(artifact);
            }
        }
        match mode {
            Mode::Offline => fetch.offline(),
            Mode::Online => fetch.online(),
        }
    }
}

/// One fetch: the source, what it checks out and where its cache entries live.
struct Fetch<'a> {
    cache: &'a Cache,
    source: &'a GitSource,
    checkout: Checkout,
    range: Option<Range>,
    /// `git/<sha256(url)>`.
    repo_dir: PathBuf,
    /// Appended to the commit in a tree's directory name when `spec.ignore` is set.
    ignore_suffix: String,
}

impl<'a> Fetch<'a> {
    fn new(cache: &'a Cache, source: &'a GitSource) -> Result<Self, FetchError> {
        let checkout = source.reference.checkout();
        let invalid = |reason: String| FetchError::InvalidRef {
            url: source.url.clone(),
            reference: checkout.to_string(),
            reason,
        };
        let mut range = None;
        match &checkout {
            Checkout::Commit { sha, .. } => {
                let full = sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit());
                if !full {
                    return Err(invalid("a commit must be a full 40-digit SHA-1".into()));
                }
            }
            Checkout::Semver(text) => range = Some(Range::parse(text).map_err(invalid)?),
            Checkout::Name(name) if name.starts_with('/') || name.ends_with('/') => {
                return Err(invalid("a ref name cannot begin or end with '/'".into()));
            }
            _ => {}
        }
        let checkout = match checkout {
            Checkout::Commit { sha, branch, name } => Checkout::Commit {
                sha: sha.to_ascii_lowercase(),
                branch,
                name,
            },
            other => other,
        };
        let mut ignore_suffix = source
            .ignore
            .as_deref()
            .map(|i| format!("-{}", &sha256_hex(i)[..16]))
            .unwrap_or_default();
        if source.recurse_submodules {
            ignore_suffix.push_str("-submodules");
        }
        Ok(Fetch {
            cache,
            source,
            repo_dir: cache
                .root
                .join("git")
                .join(sha256_hex(&source.cache_identity())),
            checkout,
            range,
            ignore_suffix,
        })
    }

    fn tree_dir(&self, commit: &str) -> PathBuf {
        self.repo_dir
            .join(format!("{commit}{}", self.ignore_suffix))
    }

    fn record_path(&self) -> PathBuf {
        self.repo_dir
            .join("refs")
            .join(sha256_hex(&self.checkout.cache_key()))
    }

    fn cached(&self, commit: &str, tag: Option<&str>) -> Option<Artifact> {
        let dir = self.tree_dir(commit);
        if dir.is_dir() {
            crate::manage::touch(&dir);
        }
        dir.is_dir().then(|| Artifact {
            dir,
            revision: self.checkout.revision(commit, tag),
            commit: commit.to_owned(),
        })
    }

    fn offline(&self) -> Result<Artifact, FetchError> {
        let not_cached = || FetchError::NotCached {
            url: self.source.url.clone(),
            reference: self.checkout.to_string(),
            cache: self.cache.root.clone(),
        };
        let record = fs::read_to_string(self.record_path()).map_err(|_| not_cached())?;
        let mut lines = record.lines();
        let commit = lines.next().ok_or_else(not_cached)?;
        let tag = lines.next().filter(|t| !t.is_empty());
        self.cached(commit, tag).ok_or_else(not_cached)
    }

    fn online(&self) -> Result<Artifact, FetchError> {
        let tmp = self.cache.root.join("tmp");
        let work = fs::create_dir_all(&tmp)
            .and_then(|()| fs::create_dir_all(self.repo_dir.join("refs")))
            .and_then(|()| tempfile::Builder::new().prefix("git-").tempdir_in(&tmp))
            .map_err(|e| self.not_writable(e))?;
        crate::manage::record_source(&self.repo_dir, &self.source.url);
        let session = Session::init(&work.path().join("repo.git"), self.source.ssh.as_ref())
            .map_err(|e| self.remote(e))?;
        let attempt = || {
            session.resolve_and_fetch(
                &self.source.url,
                self.source.credentials.as_ref(),
                &self.checkout,
                self.range.as_ref(),
                |resolved| !self.tree_dir(&resolved.commit).is_dir(),
            )
        };
        // A connection that broke off may work a moment later; a host that does not exist or
        // refuses connections will not.
        let resolved = match attempt() {
            Err(RemoteError::Unreachable(message)) if is_transient(&message) => {
                std::thread::sleep(std::time::Duration::from_millis(500));
                attempt()
            }
            other => other,
        }
        .map_err(|e| self.remote(e))?;
        let dest = self.tree_dir(&resolved.commit);
        if !dest.is_dir() {
            self.write_tree(&session, &resolved, work.path(), &dest)?;
        }
        self.record(&resolved, &tmp)?;
        self.cached(&resolved.commit, resolved.tag.as_deref())
            .ok_or_else(|| FetchError::Git {
                url: self.source.url.clone(),
                reference: self.checkout.to_string(),
                message: format!("{} vanished from the cache", dest.display()),
            })
    }

    fn write_tree(
        &self,
        session: &Session,
        resolved: &Resolved,
        work: &Path,
        dest: &Path,
    ) -> Result<(), FetchError> {
        let repo = session.repo();
        let git = |message: String| FetchError::Git {
            url: self.source.url.clone(),
            reference: self.checkout.to_string(),
            message,
        };
        let id =
            gix::ObjectId::from_hex(resolved.commit.as_bytes()).map_err(|e| git(e.to_string()))?;
        let tree_id = repo
            .find_commit(id)
            .and_then(|c| c.tree_id())
            .map_err(|e| git(e.to_string()))?
            .detach();
        let staging = work.join("tree");
        fs::create_dir(&staging).map_err(|e| self.not_writable(e))?;
        let mut ignore = Ignore::new(self.source.ignore.as_deref());
        let links =
            tree::write_tree(repo, tree_id, &staging, &mut ignore).map_err(|e| match e {
                TreeError::Unsafe(path) => FetchError::UnsafePath {
                    url: self.source.url.clone(),
                    reference: self.checkout.to_string(),
                    path,
                },
                TreeError::Io(e) => self.not_writable(e),
                TreeError::Git(message) => git(message),
            })?;
        if self.source.recurse_submodules && !links.is_empty() {
            // `.gitmodules` is one of the VCS files the artifact leaves out: read it from git.
            let modules = repo
                .find_tree(tree_id)
                .ok()
                .and_then(|t| t.find_entry(".gitmodules").map(|e| e.oid().to_owned()))
                .and_then(|id| repo.find_object(id).ok())
                .map(|o| String::from_utf8_lossy(&o.data).into_owned())
                .unwrap_or_default();
            self.write_submodules(&staging, &modules, &links)?;
        }
        if let Err(e) = fs::rename(&staging, dest) {
            // Another process put the same commit in place first: its copy is as good as ours.
            if !dest.is_dir() {
                return Err(self.not_writable(e));
            }
        }
        Ok(())
    }

    /// Each submodule at its recorded commit, its URL from `.gitmodules` (relative ones against
    /// this repository's), fetched as a commit pin with the same credentials.
    fn write_submodules(
        &self,
        staging: &Path,
        modules: &str,
        links: &[(String, String)],
    ) -> Result<(), FetchError> {
        let urls = gitmodules(modules);
        for (path, commit) in links {
            let broken = |message: String| FetchError::Submodule {
                url: self.source.url.clone(),
                reference: self.checkout.to_string(),
                message,
            };
            let Some(url) = urls.iter().find(|(p, _)| p == path).map(|(_, u)| u) else {
                return Err(broken(format!("submodule {path} is not in .gitmodules")));
            };
            let url = submodule_url(&self.source.url, url);
            let nested = GitSource {
                url: url.clone(),
                reference: GitRef {
                    commit: Some(commit.clone()),
                    ..GitRef::default()
                },
                ignore: None,
                credentials: self.source.credentials.clone(),
                ssh: self.source.ssh.clone(),
                recurse_submodules: true,
            };
            let tree = self.cache.fetch_git(&nested, Mode::Online).map_err(|e| {
                if e.is_source_error() {
                    broken(format!("submodule {path}: {e}"))
                } else {
                    FetchError::Unreachable {
                        url: self.source.url.clone(),
                        reference: self.checkout.to_string(),
                        message: format!("submodule {path}: {e}"),
                    }
                }
            })?;
            crate::include::copy_tree(&tree.dir, &staging.join(path))
                .map_err(|e| self.not_writable(e))?;
        }
        Ok(())
    }

    fn record(&self, resolved: &Resolved, tmp: &Path) -> Result<(), FetchError> {
        let mut file = tempfile::NamedTempFile::new_in(tmp).map_err(|e| self.not_writable(e))?;
        writeln!(
            file,
            "{}\n{}",
            resolved.commit,
            resolved.tag.as_deref().unwrap_or("")
        )
        .map_err(|e| self.not_writable(e))?;
        file.persist(self.record_path())
            .map_err(|e| self.not_writable(e.error))?;
        Ok(())
    }

    fn not_writable(&self, source: std::io::Error) -> FetchError {
        FetchError::CacheNotWritable {
            url: self.source.url.clone(),
            reference: self.checkout.to_string(),
            dir: self.cache.root.clone(),
            source,
        }
    }

    fn remote(&self, e: RemoteError) -> FetchError {
        let url = self.source.url.clone();
        let reference = self.checkout.to_string();
        match e {
            RemoteError::Unreachable(mut message) => {
                // ssh says why on its own stderr; what reaches us is a closed pipe.
                let ssh =
                    self.source.ssh.is_some() || url.starts_with("ssh://") || !url.contains("://");
                if ssh && message.contains("failed to fill whole buffer") {
                    message.push_str(" (the ssh connection closed: the host key is not in known_hosts, the key was refused, or the server has no such repository)");
                }
                FetchError::Unreachable {
                    url,
                    reference,
                    message,
                }
            }
            RemoteError::RefNotFound(detail) => FetchError::RefNotFound {
                url,
                reference,
                detail,
            },
            RemoteError::Git(message) => FetchError::Git {
                url,
                reference,
                message,
            },
        }
    }
}

/// Whether a connection failure may pass: a reset, a timeout, a server error; not a name that
/// does not resolve or a port nothing listens on.
fn is_transient(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    let permanent = [
        "dns error",
        "name or service not known",
        "connection refused",
        "invalid url",
        "no such host",
    ];
    !permanent.iter().any(|p| m.contains(p))
}

/// `(path, url)` of every `[submodule]` section of a `.gitmodules` file.
fn gitmodules(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let (mut path, mut url) = (None, None);
    let mut flush = |path: &mut Option<String>, url: &mut Option<String>| {
        if let (Some(p), Some(u)) = (path.take(), url.take()) {
            out.push((p, u));
        }
    };
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            flush(&mut path, &mut url);
        } else if let Some((key, value)) = line.split_once('=') {
            let value = value.trim().trim_matches('"').to_string();
            match key.trim() {
                "path" => path = Some(value.trim_end_matches('/').to_string()),
                "url" => url = Some(value),
                _ => {}
            }
        }
    }
    flush(&mut path, &mut url);
    out
}

/// A submodule URL, a relative one (`../lib.git`) taken against the superproject's.
fn submodule_url(base: &str, url: &str) -> String {
    if !(url.starts_with("./") || url.starts_with("../")) {
        return url.to_string();
    }
    let mut parts: Vec<&str> = base.trim_end_matches('/').split('/').collect();
    for part in url.split('/') {
        match part {
            "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

pub(crate) fn sha256_hex(text: &str) -> String {
    sha256_hex_bytes(text.as_bytes())
}

/// [`sha256_hex`] of any bytes (a text's digest is that of its UTF-8 bytes).
pub(crate) fn sha256_hex_bytes(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache_dir(vars: &[(&str, &str)]) -> Option<PathBuf> {
        Cache::from_vars(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.into()))
            .map(|c| c.dir().to_owned())
    }

    #[test]
    fn gitmodules_paths_and_relative_urls() {
        let text = "[submodule \"lib\"]\n\tpath = crds/lib\n\turl = ../lib.git\n[submodule \"x\"]\n\turl = https://e.com/x\n\tpath = \"x/\"\n";
        assert_eq!(
            gitmodules(text),
            vec![
                ("crds/lib".to_string(), "../lib.git".to_string()),
                ("x".to_string(), "https://e.com/x".to_string())
            ]
        );
        assert_eq!(
            submodule_url("git://h:1/org/app.git", "../lib.git"),
            "git://h:1/org/lib.git"
        );
        assert_eq!(
            submodule_url("https://h/org/app", "./sub"),
            "https://h/org/app/sub"
        );
        assert_eq!(submodule_url("https://h/a", "ssh://x/y"), "ssh://x/y");
    }

    #[test]
    fn only_transient_failures_are_retried() {
        assert!(is_transient("Connection reset by peer"));
        assert!(is_transient("operation timed out"));
        assert!(!is_transient(
            "dns error: failed to lookup address information: Name or service not known"
        ));
        assert!(!is_transient("Connection refused (os error 111)"));
    }

    #[test]
    fn cache_dir_from_environment() {
        let all = [
            ("PLUMB_CACHE_DIR", "/p"),
            ("XDG_CACHE_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(cache_dir(&all), Some("/p".into()));
        assert_eq!(cache_dir(&all[1..]), Some("/x/plumb".into()));
        assert_eq!(cache_dir(&all[2..]), Some("/h/.cache/plumb".into()));
        assert_eq!(
            cache_dir(&[
                ("PLUMB_CACHE_DIR", ""),
                ("XDG_CACHE_HOME", "rel"),
                ("HOME", "/h")
            ]),
            Some("/h/.cache/plumb".into())
        );
        assert_eq!(cache_dir(&[]), None);
    }
}

impl GitSource {
    /// A GitRepository's `spec.url`, `spec.ref` and `spec.ignore`, as the object's `spec` holds
    /// them (JSON).
    pub fn from_spec(url: &str, spec: &serde_json::Value) -> GitSource {
        let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
        let r = &spec["ref"];
        GitSource {
            url: url.to_string(),
            reference: GitRef {
                branch: text(&r["branch"]),
                tag: text(&r["tag"]),
                semver: text(&r["semver"]),
                name: text(&r["name"]),
                commit: text(&r["commit"]),
            },
            ignore: text(&spec["ignore"]),
            credentials: None,
            ssh: None,
            recurse_submodules: spec["recurseSubmodules"].as_bool() == Some(true),
        }
    }

    /// What the cache keys this source's entries by: the URL and who fetches it (a user name
    /// or the hash of a public identity), never a secret.
    fn cache_identity(&self) -> String {
        let mut key = self.url.clone();
        if let Some(c) = &self.credentials {
            key.push_str(&format!("\nuser {}", c.username));
        }
        if let Some(k) = &self.ssh {
            key.push_str(&format!("\nssh {}", &sha256_hex(&k.identity)[..16]));
        }
        key
    }
}

#[cfg(test)]
mod spec_tests {
    use super::*;

    #[test]
    fn a_flux_spec_gives_the_ref_and_ignore() {
        let spec = serde_json::json!({"url": "u", "ref": {"tag": "v1.2.0", "branch": "main"}, "ignore": "/*\n!/crds\n"});
        let s = GitSource::from_spec("https://example.com/r", &spec);
        assert_eq!(s.reference.tag.as_deref(), Some("v1.2.0"));
        assert_eq!(s.reference.branch.as_deref(), Some("main"));
        assert_eq!(s.reference.commit, None);
        assert_eq!(s.ignore.as_deref(), Some("/*\n!/crds\n"));
        assert_eq!(
            GitSource::from_spec("u", &serde_json::Value::Null).reference,
            GitRef::default()
        );
    }
}
