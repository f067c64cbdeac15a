//! Source files and byte spans. Every node the parser makes remembers the file and byte range it
//! came from, so that any later stage (a patch, a rule) can point a person at the exact text.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// A file's text with an index of its line starts, shared by every node parsed from it.
#[derive(Debug)]
pub struct SourceFile {
    path: PathBuf,
    text: Arc<str>,
    /// Where each line starts, made the first time a place is asked for: most files read in
    /// a build never are.
    line_starts: OnceLock<Vec<usize>>,
}

impl SourceFile {
    /// Wraps `text` read from `path` (not copied when it is already shared: a file system's
    /// cache of file texts hands its `Arc<str>`).
    pub fn new(path: impl Into<PathBuf>, text: impl Into<Arc<str>>) -> Arc<SourceFile> {
        Arc::new(SourceFile {
            path: path.into(),
            text: text.into(),
            line_starts: OnceLock::new(),
        })
    }

    fn line_starts(&self) -> &[usize] {
        self.line_starts.get_or_init(|| {
            // A byte loop: lines are short, and a search per line costs more than the scan.
            let mut starts = vec![0];
            starts.extend(
                self.text
                    .bytes()
                    .enumerate()
                    .filter(|&(_, b)| b == b'\n')
                    .map(|(i, _)| i + 1),
            );
            starts
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The 1-based line and column (in characters) of a byte offset.
    pub fn location(&self, offset: usize) -> Location {
        let offset = offset.min(self.text.len());
        let line_starts = self.line_starts();
        let line = match line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = line_starts[line];
        let column = self.text[start..floor_char_boundary(&self.text, offset)]
            .chars()
            .count();
        Location {
            line: line + 1,
            column: column + 1,
        }
    }

    /// The text of the 1-based line `line`, without its line break.
    pub fn line_text(&self, line: usize) -> &str {
        let line_starts = self.line_starts();
        let Some(&start) = line_starts.get(line.saturating_sub(1)) else {
            return "";
        };
        let end = line_starts.get(line).copied().unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

/// A byte range in a source file.
#[derive(Clone)]
pub struct Span {
    pub file: Arc<SourceFile>,
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn location(&self) -> Location {
        self.file.location(self.start)
    }

    /// The text the span covers.
    pub fn text(&self) -> &str {
        self.file.text().get(self.start..self.end).unwrap_or("")
    }
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let loc = self.location();
        write!(
            f,
            "{}:{}:{}",
            self.file.path().display(),
            loc.line,
            loc.column
        )
    }
}

impl PartialEq for Span {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.file, &other.file) && self.start == other.start && self.end == other.end
    }
}
