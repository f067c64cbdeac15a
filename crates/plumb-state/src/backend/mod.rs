//! Object backends: the few primitives the state store and the probe are built on.
//!
//! Every backend offers the same four guarantees, and the probe checks them: create-if-absent,
//! update-if-match on an ETag, delete-if-match, and read-your-writes. Keys are `/`-separated and
//! relative to the store's root (its directory, or its bucket prefix).

mod local;
mod memory;
mod s3;

pub use local::LocalBackend;
pub use memory::MemoryBackend;
pub use s3::{S3Backend, S3Location};

use std::fmt;
use std::time::Duration;

/// An opaque version tag for one stored object, compared only for equality.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ETag(pub String);

impl fmt::Display for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An object's bytes and the ETag they were read with, from one read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    pub data: Vec<u8>,
    pub etag: ETag,
}

/// When a write may happen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteCondition {
    /// Only if no object exists at the key (`If-None-Match: *`).
    Create,
    /// Only if the object exists and its ETag is this one (`If-Match`).
    Match(ETag),
}

/// Why a backend refused or failed an operation.
///
/// The first three variants are the exact refusals that the conditions promise; the probe counts
/// anything else (including success) as a condition that was not honoured.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("{key}: an object already exists there")]
    AlreadyExists { key: String },
    #[error("{key}: precondition failed (the object changed, or is absent)")]
    PreconditionFailed { key: String },
    #[error("{key}: no such object")]
    NotFound { key: String },
    #[error("{key}: {message}")]
    Io { key: String, message: String },
    #[error("{0}")]
    Config(String),
}

impl BackendError {
    pub(crate) fn io(key: &str, message: impl fmt::Display) -> Self {
        BackendError::Io {
            key: key.to_string(),
            message: message.to_string(),
        }
    }
}

/// A place that stores objects under keys with conditional writes.
///
/// Implementations are blocking and may be shared between threads: the probe races many
/// writers against one backend.
pub trait Backend: Send + Sync {
    /// A one-line description for messages (`file:///var/lib/plumb`, `s3://bucket/prefix`).
    fn describe(&self) -> String;
    /// Reads an object; `Ok(None)` when there is none.
    fn get(&self, key: &str) -> Result<Option<Object>, BackendError>;
    /// Writes an object if `condition` holds, returning its new ETag.
    fn put(&self, key: &str, data: &[u8], condition: &WriteCondition)
        -> Result<ETag, BackendError>;
    /// Deletes an object only if its ETag is `etag`: `NotFound` when absent,
    /// `PreconditionFailed` when it differs.
    fn delete_if_match(&self, key: &str, etag: &ETag) -> Result<(), BackendError>;
    /// Deletes an object whatever it holds (only the probe's clean-up uses this).
    fn delete(&self, key: &str) -> Result<(), BackendError>;
    /// Every key that starts with `prefix`, sorted.
    fn list(&self, prefix: &str) -> Result<Vec<String>, BackendError>;
    /// Removes the temporary files that interrupted writes left directly under the key prefix
    /// `dir` (`network/versions`), if nothing touched them for `min_age`; returns their names.
    /// Only the directory backend makes temporary files; other stores write atomically.
    fn remove_stale_temporaries(
        &self,
        dir: &str,
        min_age: Duration,
    ) -> Result<Vec<String>, BackendError> {
        let _ = (dir, min_age);
        Ok(Vec::new())
    }
}

/// A random 128-bit identifier in hex, for lock ids and probe runs.
pub(crate) fn hex_id() -> String {
    local::hex(&rand::random::<[u8; 16]>())
}

pub(crate) fn hex_bytes(bytes: &[u8]) -> String {
    local::hex(bytes)
}

/// Keys are built by plumb, never taken verbatim from a user, but a backend still refuses any
/// key that could leave its root.
pub(crate) fn check_key(key: &str) -> Result<(), BackendError> {
    let bad = key.is_empty()
        || key.starts_with('/')
        || key
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == ".." || part.contains('\\'));
    if bad {
        return Err(BackendError::Config(format!("invalid object key {key:?}")));
    }
    Ok(())
}
