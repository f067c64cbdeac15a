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
    /// A submodule that cannot be had: not in `.gitmodules`, or its commit not in its
    /// repository.
    #[error("git repository {url} (ref {reference}): {message}")]
    Submodule {
        url: String,
        reference: String,
        message: String,
    },
    /// Any other failure of the git protocol or object database.
    #[error("git error for repository {url} (ref {reference}): {message}")]
    Git {
        url: String,
        reference: String,
        message: String,
    },
    /// A git command of a remote kustomize base ran longer than its `?timeout=`.
    #[error("git repository {url} (ref {reference}): gave up after {}s (the entry's timeout; kustomize's default is 27s, `?timeout=` raises it)", after.as_secs())]
    Timeout {
        url: String,
        reference: String,
        after: std::time::Duration,
    },
    /// A file fetched over HTTP (a kustomization's `resources:` URL) answered with an error status.
    #[error("GET {url}: status code {status}")]
    HttpStatus { url: String, status: u16 },
    /// A file could not be fetched over HTTP (connection, TLS, timeout, a body that is not text).
    #[error("GET {url}: {message}")]
    Http { url: String, message: String },
    /// A file fetched over HTTP is larger than plumb reads.
    #[error("GET {url}: larger than {limit} bytes, the most plumb reads from one file")]
    HttpTooLarge { url: String, limit: u64 },
    /// Offline mode was asked for and the cache holds no copy of this file.
    #[error("{url} is not in the cache at {} and offline mode forbids fetching it", cache.display())]
    FileNotCached { url: String, cache: PathBuf },
    /// The cache directory cannot be written, needed for a file fetched over HTTP.
    #[error("cache directory {} is not writable, needed for {url}: {source}", dir.display())]
    FileCacheNotWritable {
        url: String,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A failure of [`Cache::fetch_oci`](crate::Cache::fetch_oci), always naming the OCIRepository
/// URL and the ref that was asked for (`tag "latest"`, `digest sha256:…`, `semver ">=1"`).
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// `spec.url`, `spec.ref` or `spec.layerSelector` cannot be used as written.
    #[error("invalid OCIRepository {url} ({reference}): {reason}")]
    InvalidSpec {
        url: String,
        reference: String,
        reason: String,
    },
    /// The registry (or its token service) could not be reached.
    #[error("cannot reach OCI registry for {url} ({reference}): {message}")]
    Unreachable {
        url: String,
        reference: String,
        message: String,
    },
    /// The registry refused access: no credentials, or wrong ones. Never holds the secret.
    #[error("OCI registry refused access to {url} ({reference}): {message}")]
    Unauthorized {
        url: String,
        reference: String,
        message: String,
    },
    /// No such tag or digest, or no tag satisfies the semver range.
    #[error("{reference} not found in OCI repository {url}: {detail}")]
    NotFound {
        url: String,
        reference: String,
        detail: String,
    },
    /// What the registry sent does not hash to the digest that names it.
    #[error(
        "{what} of OCI repository {url} ({reference}) has digest {actual}, expected {expected}"
    )]
    DigestMismatch {
        url: String,
        reference: String,
        what: String,
        expected: String,
        actual: String,
    },
    /// The artifact's manifest has no layer with the selected media type (or no layer at all).
    #[error("no layer with media type '{media_type}' in OCI artifact {url} ({reference})")]
    NoMatchingLayer {
        url: String,
        reference: String,
        media_type: String,
    },
    /// The selected layer is not a valid tar+gzip archive.
    #[error("layer {layer} of OCI artifact {url} ({reference}) is not a valid tar.gz: {message}")]
    CorruptArchive {
        url: String,
        reference: String,
        layer: String,
        message: String,
    },
    /// The layer holds an entry that could write outside the artifact.
    #[error("OCI artifact {url} ({reference}) contains an unsafe entry {path:?}: {reason}")]
    UnsafePath {
        url: String,
        reference: String,
        path: String,
        reason: String,
    },
    /// Offline mode was asked for and the cache holds nothing for this ref.
    #[error("OCI repository {url} ({reference}) is not in the cache at {} and offline mode forbids fetching it", cache.display())]
    NotCached {
        url: String,
        reference: String,
        cache: PathBuf,
    },
    /// The cache directory cannot be created or written.
    #[error("cache directory {} is not writable, needed for OCI repository {url} ({reference}): {source}", dir.display())]
    CacheNotWritable {
        url: String,
        reference: String,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Any other failure of the registry protocol (an unexpected status, a malformed manifest).
    #[error("OCI registry error for {url} ({reference}): {message}")]
    Registry {
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
                | FetchError::Submodule { .. }
                | FetchError::HttpTooLarge { .. }
                | FetchError::HttpStatus {
                    status: 404 | 410,
                    ..
                }
        )
    }
}

impl OciError {
    /// Whether the source itself is wrong (the registry answered: no such tag or digest, a
    /// layer that is missing, corrupt, unsafe or not what its digest says, a malformed spec),
    /// as opposed to a fetch that could not be done here (unreachable, refused credentials,
    /// offline, the cache not writable).
    pub fn is_source_error(&self) -> bool {
        matches!(
            self,
            OciError::InvalidSpec { .. }
                | OciError::NotFound { .. }
                | OciError::DigestMismatch { .. }
                | OciError::NoMatchingLayer { .. }
                | OciError::CorruptArchive { .. }
                | OciError::UnsafePath { .. }
        )
    }
}
