//! Why a Bucket fetch failed, always naming the endpoint and the bucket.

use std::path::PathBuf;

/// A failure of [`Cache::fetch_bucket`](crate::Cache::fetch_bucket). `endpoint` is the URL the
/// requests go to (`https://host:port`, `http://` with `spec.insecure`); no variant ever holds a
/// secret key.
#[derive(Debug, thiserror::Error)]
pub enum BucketError {
    /// `spec.bucketName`, `spec.endpoint`, `spec.provider` or `spec.timeout` cannot be used as
    /// written.
    #[error("invalid Bucket '{bucket}' at {endpoint}: {reason}")]
    InvalidSpec {
        endpoint: String,
        bucket: String,
        reason: String,
    },
    /// A provider plumb does not talk to (gcp, azure).
    #[error("Bucket '{bucket}' at {endpoint}: provider '{provider}' is not supported (plumb fetches the S3 API: provider generic or aws)")]
    UnsupportedProvider {
        endpoint: String,
        bucket: String,
        provider: String,
    },
    /// The endpoint could not be reached (connection refused, DNS, TLS, timeout).
    #[error("cannot reach endpoint {endpoint} for bucket '{bucket}': {message}")]
    Unreachable {
        endpoint: String,
        bucket: String,
        message: String,
    },
    /// The server answered that the bucket does not exist.
    #[error("bucket '{bucket}' not found at {endpoint}")]
    BucketNotFound { endpoint: String, bucket: String },
    /// The server refused the credentials, or anonymous access.
    #[error("access denied to bucket '{bucket}' at {endpoint}: {message}")]
    AccessDenied {
        endpoint: String,
        bucket: String,
        message: String,
    },
    /// Any other error answer of the S3 API.
    #[error("S3 error for bucket '{bucket}' at {endpoint}: {message}")]
    Storage {
        endpoint: String,
        bucket: String,
        message: String,
    },
    /// An object key that would be written outside the artifact (`..`, absolute, empty
    /// segments); nothing of the fetch is kept.
    #[error("bucket '{bucket}' at {endpoint} holds an object with an unsafe key {key:?}: refused")]
    UnsafeKey {
        endpoint: String,
        bucket: String,
        key: String,
    },
    /// One key is a file and also the directory of another (`a` and `a/b`): they cannot both
    /// be written.
    #[error("bucket '{bucket}' at {endpoint} holds both {file:?} and {below:?}: a key cannot be a file and a directory")]
    KeyConflict {
        endpoint: String,
        bucket: String,
        file: String,
        below: String,
    },
    /// Offline mode was asked for and the cache holds no listing of this bucket.
    #[error("bucket '{bucket}' at {endpoint} is not in the cache at {} and offline mode forbids fetching it", cache.display())]
    NotCached {
        endpoint: String,
        bucket: String,
        cache: PathBuf,
    },
    /// The cache directory cannot be created or written.
    #[error("cache directory {} is not writable, needed for bucket '{bucket}' at {endpoint}: {source}", dir.display())]
    CacheNotWritable {
        endpoint: String,
        bucket: String,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl BucketError {
    /// Whether the source itself is wrong (the server answered: no such bucket, an unsafe or
    /// conflicting key; or the spec is malformed), as opposed to a fetch that could not be done
    /// here (unreachable, refused credentials, offline, the cache not writable).
    pub fn is_source_error(&self) -> bool {
        matches!(
            self,
            BucketError::InvalidSpec { .. }
                | BucketError::BucketNotFound { .. }
                | BucketError::UnsafeKey { .. }
                | BucketError::KeyConflict { .. }
        )
    }
}
