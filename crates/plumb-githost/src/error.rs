//! Errors: a host that cannot be asked, and a workflow file that cannot be read.

use std::path::PathBuf;

/// The host could not be asked at all. Every variant names the URL that was requested; none
/// carries the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// Connection refused, DNS failure, TLS failure or timeout.
    #[error("{url}: the Git host is unreachable: {message}")]
    Unreachable { url: String, message: String },
    /// 401 or 403: the token is missing, wrong, or lacks `permission`.
    #[error("{url}: HTTP {status}: the token needs {permission}")]
    Forbidden {
        url: String,
        status: u16,
        permission: String,
    },
    /// The host answered something this crate cannot read as the API it expects.
    #[error("{url}: {message}")]
    Protocol { url: String, message: String },
}

/// A workflow file that is not YAML, or not shaped as a workflow.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}:{line}: {message}", path.display())]
pub struct WorkflowError {
    pub path: PathBuf,
    /// 1-based; 0 when the error is about the file as a whole (it could not be read).
    pub line: usize,
    pub message: String,
}
