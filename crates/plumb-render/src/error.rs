//! What can go wrong reading a catalog or the `render:` configuration: always a file, and a line
//! where there is one.

use std::path::{Path, PathBuf};

/// A catalog, a `render:` block or a file of the rendered tree that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// Bad input at a line of a file (line 0: the file as a whole).
    #[error("{}{}: {message}", path.display(), line_suffix(*line))]
    At {
        /// The file, as the user names it (relative to the repository root).
        path: PathBuf,
        /// 1-based; 0 when no line applies.
        line: usize,
        /// What is wrong, and what would be right.
        message: String,
    },
    /// A file or directory that could not be read or written.
    #[error("{}: {message}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's reason.
        message: String,
    },
}

fn line_suffix(line: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(":{line}")
    }
}

impl RenderError {
    /// The error `message` at `line` of `path`.
    pub fn at(path: &Path, line: usize, message: impl Into<String>) -> RenderError {
        RenderError::At {
            path: path.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    /// The error `message` at the line of `node` in `path`.
    pub fn at_node(
        path: &Path,
        node: &plumb_yaml::Node,
        message: impl Into<String>,
    ) -> RenderError {
        RenderError::at(path, line_of(node), message)
    }

    /// An I/O error on `path`.
    pub fn io(path: &Path, err: &std::io::Error) -> RenderError {
        RenderError::Io {
            path: path.to_path_buf(),
            message: err.to_string(),
        }
    }
}

/// The 1-based line `node` starts on, 0 for a node made in memory.
pub(crate) fn line_of(node: &plumb_yaml::Node) -> usize {
    node.span.as_ref().map_or(0, |s| s.location().line)
}

/// "unknown key `x` in WHAT; did you mean `y`?" or the list of valid keys.
pub(crate) fn unknown_key(key: &str, what: &str, valid: &[&str]) -> String {
    match plumb_kustomize::kustomization::closest(key, valid) {
        Some(c) => format!("unknown key `{key}` in {what}; did you mean `{c}`?"),
        None => format!(
            "unknown key `{key}` in {what}; valid keys: {}",
            valid.join(", ")
        ),
    }
}
