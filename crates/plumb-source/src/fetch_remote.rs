//! Fetching what a kustomization's remote entries name: a git repository spec through the
//! GitRepository fetch (its cache, its offline mode), and an `http(s)` file into the cache.
//!
//! kustomize checks a remote base out with `git fetch --depth=1 URL REF` and `git checkout
//! FETCH_HEAD`, so its `?ref=` is anything git resolves against the remote's refs. Here it is
//! mapped onto a GitRepository ref: none is the remote's `HEAD`; 40 hex digits are a commit
//! (looked for in the branches, as source-controller does); a name starting `refs/` is that
//! ref; any other name is a tag, else a branch (git's order: `refs/tags/` before `refs/heads/`).
//! Unlike a GitRepository, no default exclusion applies (kustomize clones everything, images
//! included); `.sourceignore` files still do, and submodules are not cloned.

use std::fs;
use std::io::Read;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use crate::cache::{sha256_hex, sha256_hex_bytes};
use crate::remote::RepoSpec;
use crate::{Cache, FetchError, GitRef, GitSource, Mode};

/// The most plumb reads of one file fetched over HTTP (plumb-kustomize's cap on a local file).
pub const MAX_HTTP_FILE_SIZE: u64 = 64 << 20;

/// How long one HTTP file fetch may take, connection included.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(60);

/// A remote base checked out: the repository's tree and the kustomization directory in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteTree {
    /// The repository's tree; a build reads nothing outside it.
    pub root: PathBuf,
    /// The kustomization's directory (`root` joined with the spec's path).
    pub dir: PathBuf,
    /// As source-controller would report it: `v1@sha1:…`, `HEAD@sha1:…`, `sha1:…`.
    pub revision: String,
}

impl Cache {
    /// Fetches the repository a kustomization entry names, with the ref as kustomize resolves
    /// it (see the module documentation) and the spec's timeout on each attempt.
    pub fn fetch_repo_spec(&self, spec: &RepoSpec, mode: Mode) -> Result<RemoteTree, FetchError> {
        self.fetch_repo_spec_from(spec, &spec.clone_url(), mode)
    }

    /// [`Cache::fetch_repo_spec`] from `url` instead of the spec's clone URL (a mirror of it).
    pub fn fetch_repo_spec_from(
        &self,
        spec: &RepoSpec,
        url: &str,
        mode: Mode,
    ) -> Result<RemoteTree, FetchError> {
        let url = url.to_owned();
        let mut last = None;
        let candidates = ref_candidates(&spec.reference);
        for reference in &candidates {
            let source = GitSource {
                url: url.clone(),
                reference: reference.clone(),
                // kustomize clones everything: no default exclusions, submodules unless
                // `?submodules=false`.
                ignore: Some(String::new()),
                recurse_submodules: spec.submodules,
                ..GitSource::default()
            };
            match self.fetch_git_within(source, mode, spec.timeout) {
                Ok(artifact) => {
                    return Ok(RemoteTree {
                        dir: artifact.dir.join(&spec.kust_root_path),
                        root: artifact.dir,
                        revision: artifact.revision,
                    })
                }
                Err(e @ (FetchError::RefNotFound { .. } | FetchError::NotCached { .. })) => {
                    last = Some(e)
                }
                Err(e) => return Err(e),
            }
        }
        let name = format!("tag or branch {:?}", spec.reference);
        Err(match last {
            // One name tried as a tag and as a branch: say so once.
            Some(FetchError::RefNotFound { url, detail, .. }) if candidates.len() > 1 => {
                FetchError::RefNotFound {
                    url,
                    reference: name,
                    detail,
                }
            }
            Some(FetchError::NotCached { url, cache, .. }) if candidates.len() > 1 => {
                FetchError::NotCached {
                    url,
                    reference: name,
                    cache,
                }
            }
            Some(e) => e,
            None => FetchError::InvalidRef {
                url,
                reference: spec.reference.clone(),
                reason: "nothing to check out".into(),
            },
        })
    }

    /// [`Cache::fetch_git`], given up after `timeout` when online (the fetch goes on in the
    /// background and leaves nothing half-written: its work directory is removed when it ends).
    fn fetch_git_within(
        &self,
        source: GitSource,
        mode: Mode,
        timeout: Duration,
    ) -> Result<crate::Artifact, FetchError> {
        if mode == Mode::Offline {
            return self.fetch_git(&source, mode);
        }
        let (tx, rx) = mpsc::channel();
        let cache = self.clone();
        let url = source.url.clone();
        let reference = source.reference.to_string();
        std::thread::spawn(move || {
            let _ = tx.send(cache.fetch_git(&source, mode));
        });
        rx.recv_timeout(timeout).unwrap_or(Err(FetchError::Timeout {
            url,
            reference,
            after: timeout,
        }))
    }

    /// The text of a file a kustomization lists by `http(s)` URL: fetched online (and kept in
    /// the cache), the copy the last online fetch kept when offline.
    ///
    /// The cache entry has the shape of every other (`plumb cache ls|gc` read it):
    /// `http/<sha256(url)>/source` holds the URL, `<sha256(content)>/content` each version
    /// fetched, `refs/latest` the version the last online fetch got.
    pub fn fetch_file(&self, url: &str, mode: Mode) -> Result<String, FetchError> {
        file_text(url, self.fetch_file_bytes(url, mode)?)
    }

    /// [`Cache::fetch_file`]'s bytes, whatever they are: a generator's file may be binary
    /// (kustomize puts it under `binaryData`).
    pub fn fetch_file_bytes(&self, url: &str, mode: Mode) -> Result<Vec<u8>, FetchError> {
        let entry = self.dir().join("http").join(sha256_hex(url));
        let latest = entry.join("refs").join("latest");
        if mode == Mode::Offline {
            let not_cached = || FetchError::FileNotCached {
                url: url.to_owned(),
                cache: self.dir().to_owned(),
            };
            let digest = fs::read_to_string(&latest).map_err(|_| not_cached())?;
            let version = entry.join(digest.trim());
            let body = fs::read(version.join("content")).map_err(|_| not_cached())?;
            crate::manage::touch(&version);
            return Ok(body);
        }
        let body = get(url)?;
        let not_writable = |source| FetchError::FileCacheNotWritable {
            url: url.to_owned(),
            dir: self.dir().to_owned(),
            source,
        };
        let tmp = self.dir().join("tmp");
        fs::create_dir_all(&tmp)
            .and_then(|()| fs::create_dir_all(entry.join("refs")))
            .map_err(not_writable)?;
        crate::manage::record_source(&entry, url);
        let digest = sha256_hex_bytes(&body);
        let version = entry.join(&digest);
        if !version.is_dir() {
            let staging = tempfile::Builder::new()
                .prefix("http-")
                .tempdir_in(&tmp)
                .map_err(not_writable)?;
            fs::write(staging.path().join("content"), &body).map_err(not_writable)?;
            // Another process may have put the same version in place first: it is as good.
            if let Err(e) = fs::rename(staging.path(), &version) {
                if !version.is_dir() {
                    return Err(not_writable(e));
                }
            }
        }
        crate::manage::touch(&version);
        let mut record = tempfile::NamedTempFile::new_in(&tmp).map_err(not_writable)?;
        std::io::Write::write_all(&mut record, digest.as_bytes()).map_err(not_writable)?;
        record.persist(&latest).map_err(|e| not_writable(e.error))?;
        Ok(body)
    }
}

/// The refs to try for a kustomize `?ref=`, in order.
fn ref_candidates(reference: &str) -> Vec<GitRef> {
    if reference.is_empty() {
        vec![GitRef::name("HEAD")]
    } else if reference.len() == 40 && reference.bytes().all(|b| b.is_ascii_hexdigit()) {
        vec![GitRef::commit(reference)]
    } else if reference.starts_with("refs/") {
        vec![GitRef::name(reference)]
    } else {
        vec![GitRef::tag(reference), GitRef::branch(reference)]
    }
}

/// The process's HTTP client for plain GETs (remote resources, chart repository indexes and
/// archives): built once, since building one loads and parses the system's root certificates
/// and starts a runtime thread, and reused with its connection pool.
pub(crate) fn http_client() -> Result<&'static reqwest::blocking::Client, String> {
    static CLIENT: std::sync::OnceLock<Result<reqwest::blocking::Client, String>> =
        std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            crate::tls::configure(reqwest::blocking::Client::builder())
                .timeout(HTTP_TIMEOUT)
                .build()
                .map_err(|e| error_chain(&e))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The body of the file fetched from `url` as text, refused when it is not UTF-8 (a remote
/// resource must be YAML text; a generator's file may be anything).
pub fn file_text(url: &str, body: Vec<u8>) -> Result<String, FetchError> {
    String::from_utf8(body).map_err(|_| FetchError::Http {
        url: url.to_owned(),
        message: "the body is not UTF-8 text".into(),
    })
}

/// One GET, its body read up to the size limit.
fn get(url: &str) -> Result<Vec<u8>, FetchError> {
    let failed = |message: String| FetchError::Http {
        url: url.to_owned(),
        message,
    };
    let client = http_client().map_err(failed)?;
    let response = client
        .get(url)
        .send()
        .map_err(|e| failed(error_chain(&e)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(FetchError::HttpStatus {
            url: url.to_owned(),
            status: status.as_u16(),
        });
    }
    let mut body = Vec::new();
    response
        .take(MAX_HTTP_FILE_SIZE + 1)
        .read_to_end(&mut body)
        .map_err(|e| failed(e.to_string()))?;
    if body.len() as u64 > MAX_HTTP_FILE_SIZE {
        return Err(FetchError::HttpTooLarge {
            url: url.to_owned(),
            limit: MAX_HTTP_FILE_SIZE,
        });
    }
    Ok(body)
}

/// An error with its causes, on one line.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let part = c.to_string();
        if !text.contains(&part) {
            text = format!("{text}: {part}");
        }
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_map_to_what_git_fetch_resolves() {
        assert_eq!(ref_candidates(""), vec![GitRef::name("HEAD")]);
        let sha = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(ref_candidates(sha), vec![GitRef::commit(sha)]);
        assert_eq!(
            ref_candidates("refs/pull/1/head"),
            vec![GitRef::name("refs/pull/1/head")]
        );
        assert_eq!(
            ref_candidates("v1.0.0"),
            vec![GitRef::tag("v1.0.0"), GitRef::branch("v1.0.0")]
        );
        // An abbreviated commit is a name, as for git fetch (which cannot fetch one).
        assert_eq!(ref_candidates("0123456").len(), 2);
    }
}
