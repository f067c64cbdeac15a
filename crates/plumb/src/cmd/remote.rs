//! Remote kustomize entries for the builds of `plumb kustomize build`, `build`, `check` and
//! `graph`: plumb-source's URL rules and fetches, offered to the kustomize engine through its
//! [`Remote`] hook, with `--offline` and `--cache-dir` applied.

use plumb_kustomize::{Remote, RemoteKind, RemoteTree};
use plumb_source::remote::{is_http_url, RepoSpec};
use plumb_source::{Cache, Mode};

/// Fetches remote bases and `http(s)` files into the cache (only from it, offline).
#[derive(Debug)]
pub struct KustomizeRemote {
    pub cache: Cache,
    pub mode: Mode,
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
        let tree = self
            .cache
            .fetch_repo_spec(&spec, self.mode)
            .map_err(|e| e.to_string())?;
        Ok(RemoteTree {
            root: tree.root,
            dir: tree.dir,
        })
    }

    fn file(&self, url: &str) -> Result<String, String> {
        self.cache
            .fetch_file(url, self.mode)
            .map_err(|e| e.to_string())
    }
}
