//! Findings: what a rule reports, pointing at the text that is wrong.

use plumb_yaml::Node;
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

/// A place in a file: 1-based line and columns (characters), the end exclusive and on the
/// same line (the part to underline).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Location {
    /// Relative to the repository root when the file is inside it.
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub end_column: usize,
}

impl Location {
    /// Where `node`'s text is, if it came from a file.
    pub fn of(node: &Node, root: &Path) -> Option<Location> {
        let span = node.span.as_ref()?;
        let start = span.location();
        let first_line = span.text().lines().next().unwrap_or("");
        let width = first_line.chars().count().max(1);
        let file = span.file.path();
        let file = file.strip_prefix(root).unwrap_or(file).to_path_buf();
        Some(Location {
            file,
            line: start.line,
            column: start.column,
            end_column: start.column + width,
        })
    }

    /// A whole line of a file (for findings about a file rather than a node).
    pub fn line(file: impl Into<PathBuf>, line: usize, column: usize, width: usize) -> Location {
        Location {
            file: file.into(),
            line,
            column,
            end_column: column + width.max(1),
        }
    }
}

/// A second place that explains the finding (where the CRD is, where the other writer is).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Related {
    pub location: Location,
    pub label: String,
}

/// One problem a rule found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule's code (`SUB001`).
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    /// The offending text; `None` only when no file holds it.
    pub location: Option<Location>,
    pub related: Vec<Related>,
    /// The Flux Kustomizations from the entry down to the one that produced the object
    /// (`namespace/name`).
    pub chain: Vec<String>,
    /// The chains of the other Kustomizations that build the same text and so make the same
    /// finding (a component, a shared base): one mistake, reported once.
    pub also_in: Vec<Vec<String>>,
    /// How to fix it.
    pub help: String,
}

impl Finding {
    pub fn new(code: &'static str, message: impl Into<String>, help: impl Into<String>) -> Finding {
        Finding {
            code,
            severity: Severity::Error,
            message: message.into(),
            location: None,
            related: Vec::new(),
            chain: Vec::new(),
            also_in: Vec::new(),
            help: help.into(),
        }
    }

    pub fn at(mut self, location: Option<Location>) -> Finding {
        self.location = location;
        self
    }

    pub fn with_chain(mut self, chain: &[String]) -> Finding {
        self.chain = chain.to_vec();
        self
    }

    pub fn related(mut self, location: Option<Location>, label: impl Into<String>) -> Finding {
        if let Some(location) = location {
            self.related.push(Related {
                location,
                label: label.into(),
            });
        }
        self
    }

    pub fn severity(mut self, severity: Severity) -> Finding {
        self.severity = severity;
        self
    }
}

/// Sorts findings by place, code and message, and merges those that are one mistake: the
/// same code at the same place, made by several Kustomizations that build the same text (a
/// component, a base, one file of several clusters). The first is kept, the others' chains go
/// to its `also_in`.
pub fn merge(findings: &mut Vec<Finding>) {
    findings
        .sort_by(|a, b| (&a.location, a.code, &a.message).cmp(&(&b.location, b.code, &b.message)));
    findings.dedup();
    // Sorted by place and code first, the findings of one mistake are next to each other.
    let mut out: Vec<Finding> = Vec::with_capacity(findings.len());
    for f in findings.drain(..) {
        match out.last_mut() {
            Some(first)
                if f.location.is_some() && first.location == f.location && first.code == f.code =>
            {
                if first.chain != f.chain && !first.also_in.contains(&f.chain) {
                    first.also_in.push(f.chain);
                }
            }
            _ => out.push(f),
        }
    }
    *findings = out;
}
