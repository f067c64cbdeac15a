//! Errors that name the file, line and column of the text they are about.

use crate::source::{Location, SourceFile};
use std::path::PathBuf;
use std::sync::Arc;

/// Malformed YAML, or YAML whose meaning cannot be represented.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}:{}:{}: {message}", path.display(), location.line, location.column)]
pub struct YamlError {
    pub path: PathBuf,
    pub location: Location,
    /// The byte offset the error points at.
    pub offset: usize,
    pub message: String,
}

impl YamlError {
    pub fn at(file: &Arc<SourceFile>, offset: usize, message: String) -> YamlError {
        YamlError {
            path: file.path().to_path_buf(),
            location: file.location(offset),
            offset,
            message,
        }
    }
}
