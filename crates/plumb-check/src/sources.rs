//! The text of the files findings point at, read once each: the renderers show the offending
//! line, and suppression comments are looked for on it and above it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Files of one repository, by the path a [`crate::Location`] names (relative to the root).
#[derive(Debug, Default)]
pub struct SourceCache {
    root: PathBuf,
    files: HashMap<PathBuf, Option<Vec<String>>>,
}

impl SourceCache {
    pub fn new(root: &Path) -> SourceCache {
        SourceCache {
            root: root.to_path_buf(),
            files: HashMap::new(),
        }
    }

    /// The 1-based line `line` of `file`, without its line break; `None` when the file cannot be
    /// read or is shorter.
    pub fn line(&mut self, file: &Path, line: usize) -> Option<&str> {
        let lines = self.lines(file)?;
        lines.get(line.checked_sub(1)?).map(String::as_str)
    }

    /// Every line of `file`.
    pub fn lines(&mut self, file: &Path) -> Option<&[String]> {
        let root = &self.root;
        self.files
            .entry(file.to_path_buf())
            .or_insert_with(|| {
                let text = std::fs::read_to_string(root.join(file)).ok()?;
                Some(
                    text.lines()
                        .map(|l| l.trim_end_matches('\r').to_string())
                        .collect(),
                )
            })
            .as_deref()
    }
}
