//! Remote kustomize entries for the builds of `plumb kustomize build`, `build`, `check` and
//! `graph`: plumb-source's URL rules and fetches, offered to the kustomize engine through its
//! [`Remote`] hook, with `--offline`, `--cache-dir` and the `mirrors:` applied.

use plumb_kustomize::{Remote, RemoteKind, RemoteTree};
use plumb_source::remote::{is_http_url, RepoSpec};
use plumb_source::{Cache, FetchError, Mirrors, Mode};

/// Fetches remote bases and `http(s)` files into the cache (only from it, offline).
#[derive(Debug)]
pub struct KustomizeRemote {
    pub cache: Cache,
    pub mode: Mode,
    pub mirrors: Mirrors,
}

impl KustomizeRemote {
    /// `url` and its mirror, when a rule rewrites it.
    fn mirrored(&self, url: &str) -> (String, Option<String>) {
        match self.mirrors.rewrite(url) {
            Some(m) => (m.clone(), Some(m)),
            None => (url.to_owned(), None),
        }
    }
}

/// The error, saying which mirror was asked when one was.
fn message(e: FetchError, mirror: Option<String>) -> String {
    match mirror {
        Some(m) => format!("fetched from mirror {m}: {e}"),
        None => e.to_string(),
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

    fn directory(&self, entry: &str) -> Result<RemoteTree, String> {
        let spec = RepoSpec::parse(entry).map_err(|e| e.to_string())?;
        let (url, mirror) = self.mirrored(&spec.clone_url());
        let tree = self
            .cache
            .fetch_repo_spec_from(&spec, &url, self.mode)
            .map_err(|e| message(e, mirror))?;
        Ok(RemoteTree {
            root: tree.root,
            dir: tree.dir,
        })
    }

    fn file(&self, url: &str) -> Result<String, String> {
        let (url, mirror) = self.mirrored(url);
        self.cache
            .fetch_file(&url, self.mode)
            .map_err(|e| message(e, mirror))
    }
}
