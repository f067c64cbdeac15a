//! Remote kustomize entries for the builds of `plumb kustomize build`, `build`, `check` and
//! `graph`: plumb-source's URL rules and fetches, offered to the kustomize engine through its
//! [`Remote`] hook, with `--offline`, `--cache-dir` and the `mirrors:` applied.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use plumb_kustomize::{Remote, RemoteFailure, RemoteKind, RemoteTree};
use plumb_source::remote::{is_http_url, RepoSpec};
use plumb_source::{Cache, FetchError, Mirrors, Mode};

/// Fetches remote bases and `http(s)` files into the cache (only from it, offline), each entry
/// once per run: every Kustomization that lists it sees the same revision, and a tag is not
/// resolved against the server again for each of them.
#[derive(Debug)]
pub struct KustomizeRemote {
    cache: Cache,
    mode: Mode,
    mirrors: Mirrors,
    trees: Once<PathBuf>,
    /// The bodies of the `http(s)` files fetched so far, whether read as text or as bytes.
    files: Once<Arc<[u8]>>,
}

/// One result per key, computed by the first caller while others wait for it.
type Once<T> = Mutex<HashMap<String, Arc<OnceLock<Result<T, RemoteFailure>>>>>;

fn once<T: Clone>(
    map: &Once<T>,
    key: &str,
    f: impl FnOnce() -> Result<T, RemoteFailure>,
) -> Result<T, RemoteFailure> {
    let cell = map
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(key.to_owned())
        .or_default()
        .clone();
    cell.get_or_init(f).clone()
}

impl KustomizeRemote {
    pub fn new(cache: Cache, mode: Mode, mirrors: Mirrors) -> KustomizeRemote {
        KustomizeRemote {
            cache,
            mode,
            mirrors,
            trees: Mutex::default(),
            files: Mutex::default(),
        }
    }

    /// `url` and its mirror, when a rule rewrites it.
    fn mirrored(&self, url: &str) -> (String, Option<String>) {
        match self.mirrors.rewrite(url) {
            Some(m) => (m.clone(), Some(m)),
            None => (url.to_owned(), None),
        }
    }
}

/// The error, saying which mirror was asked when one was, and whether the entry is wrong.
fn message(e: FetchError, mirror: Option<String>) -> RemoteFailure {
    RemoteFailure {
        broken: e.is_source_error(),
        message: super::fetch::via_mirror(mirror.as_deref(), &e),
    }
}

impl Remote for KustomizeRemote {
    fn classify(&self, entry: &str) -> RemoteKind {
        let repository = RepoSpec::parse(entry).is_ok();
        if is_http_url(entry) {
            RemoteKind::Http { repository }
        } else if repository {
            RemoteKind::Repository
        } else {
            RemoteKind::Local
        }
    }

    fn directory(&self, entry: &str) -> Result<RemoteTree, RemoteFailure> {
        let spec = RepoSpec::parse(entry).map_err(|e| RemoteFailure {
            message: e.to_string(),
            broken: true,
        })?;
        // Keyed by repository and ref: two directories of one checkout share its fetch.
        let key = format!("{}\0{}", spec.clone_url(), spec.reference);
        let root = once(&self.trees, &key, || self.fetch_repository(&spec))?;
        Ok(RemoteTree {
            dir: root.join(&spec.kust_root_path),
            root,
        })
    }

    fn file(&self, url: &str) -> Result<String, RemoteFailure> {
        plumb_source::file_text(url, self.file_bytes(url)?).map_err(|e| message(e, None))
    }

    fn file_bytes(&self, url: &str) -> Result<Vec<u8>, RemoteFailure> {
        once(&self.files, url, || self.fetch_file(url)).map(|body| body.to_vec())
    }
}

impl KustomizeRemote {
    /// The tree of the spec's repository at its ref.
    fn fetch_repository(&self, spec: &RepoSpec) -> Result<PathBuf, RemoteFailure> {
        let (url, mirror) = self.mirrored(&spec.clone_url());
        self.cache
            .fetch_repo_spec_from(spec, &url, self.mode)
            .map(|tree| tree.root)
            .map_err(|e| message(e, mirror))
    }

    fn fetch_file(&self, url: &str) -> Result<Arc<[u8]>, RemoteFailure> {
        let (url, mirror) = self.mirrored(url);
        self.cache
            .fetch_file_bytes(&url, self.mode)
            .map(Arc::from)
            .map_err(|e| message(e, mirror))
    }
}
