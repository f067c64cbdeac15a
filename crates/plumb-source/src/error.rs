//! Why a fetch failed, always naming the repository URL and the ref that was asked for.

use std::path::PathBuf;

/// A failure of [`Cache::fetch_git`](crate::Cache::fetch_git).
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The server could not be reached or refused the conversation.
    #[error("cannot reach git repository {url} (ref {reference}): {message}")]
    Unreachable {
        url: String,
        reference: String,
        message: String,
    },
    /// The repository answered but has no such branch, tag, ref name or commit.
    #[error("{reference} not found in git repository {url}{}", detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    RefNotFound {
        url: String,
        reference: String,
        detail: Option<String>,
    },
    /// The ref itself is malformed (a semver range that does not parse, a commit that is not a full SHA-1).
    #[error("invalid ref for git repository {url}: {reference}: {reason}")]
    InvalidRef {
        url: String,
        reference: String,
        reason: String,
    },
    /// Offline mode was asked for and the cache holds nothing for this ref.
    #[error("git repository {url} (ref {reference}) is not in the cache at {} and offline mode forbids fetching it", cache.display())]
    NotCached {
        url: String,
        reference: String,
        cache: PathBuf,
    },
    /// The cache directory cannot be created or written.
    #[error("cache directory {} is not writable, needed for git repository {url} (ref {reference}): {source}", dir.display())]
    CacheNotWritable {
        url: String,
        reference: String,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The repository's content cannot be written safely (a path that would leave the artifact directory).
    #[error("git repository {url} (ref {reference}) contains an unsafe path {path:?}")]
    UnsafePath {
        url: String,
        reference: String,
        path: String,
    },
    /// Any other failure of the git protocol or object database.
    #[error("git error for repository {url} (ref {reference}): {message}")]
    Git {
        url: String,
        reference: String,
        message: String,
    },
}

impl FetchError {
    /// Whether the source itself is wrong (the server answered: no such ref, an unsafe path, a
    /// malformed ref), as opposed to a fetch that could not be done here (unreachable, offline,
    /// the cache not writable).
    pub fn is_source_error(&self) -> bool {
        matches!(
            self,
            FetchError::RefNotFound { .. }
                | FetchError::InvalidRef { .. }
                | FetchError::UnsafePath { .. }
        )
    }
}
