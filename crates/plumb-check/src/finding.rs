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
/// component, a base, one file of several clusters), or, where no line can be given, the same
/// code and message (a kustomization that fails alike in two clusters). The first is kept, the
/// others' chains go to its `also_in`. A substitution rule's finding at the place of a build
/// error (BLD001) is that error told better (`${__field.labels.job}`, SUB003): the build
/// error goes.
pub fn merge(findings: &mut Vec<Finding>) {
    findings
        .sort_by(|a, b| (&a.location, a.code, &a.message).cmp(&(&b.location, b.code, &b.message)));
    findings.dedup();
    // Where each finding starts: the build underlines to the end of the line, a rule the
    // expression alone.
    let start = |l: &Location| (l.file.clone(), l.line, l.column);
    let substitution_places: std::collections::HashSet<_> = findings
        .iter()
        .filter(|f| f.code.starts_with("SUB"))
        .filter_map(|f| f.location.as_ref().map(start))
        .collect();
    findings.retain(|f| {
        f.code != "BLD001"
            || !f
                .location
                .as_ref()
                .is_some_and(|l| substitution_places.contains(&start(l)))
    });
    // Sorted by place and code first, the findings of one mistake are next to each other.
    let mut out: Vec<Finding> = Vec::with_capacity(findings.len());
    for f in findings.drain(..) {
        match out.last_mut() {
            Some(first)
                if first.location == f.location
                    && first.code == f.code
                    && (f.location.is_some() || first.message == f.message) =>
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

#[cfg(test)]
mod tests {
    use super::{merge, Finding, Location};

    fn at(code: &'static str, message: &str, location: Option<Location>, chain: &str) -> Finding {
        Finding::new(code, message, "help")
            .at(location)
            .with_chain(&[chain.to_string()])
    }

    #[test]
    fn one_mistake_is_one_finding() {
        let line = |width| Some(Location::line("dashboards/vm.yaml", 1408, 62, width));
        let mut findings = vec![
            // monosense-io/k8s-gitops: one kustomization fails alike in two clusters.
            at("BLD001", "kustomize build failed: x", None, "apps/ks"),
            at("BLD001", "kustomize build failed: x", None, "infra/ks"),
            at("BLD001", "kustomize build failed: y", None, "apps/other"),
            // The build's substitution failure, and SUB003 at the same place.
            at(
                "BLD001",
                "post build failed: missing closing brace",
                line(80),
                "apps/vm",
            ),
            at(
                "SUB003",
                "`${__field.labels.job}` is shell syntax",
                line(21),
                "apps/vm",
            ),
            // Another rule's finding at a build error's place is another mistake.
            at(
                "BLD001",
                "patch failed",
                Some(Location::line("a.yaml", 3, 1, 4)),
                "k",
            ),
            at(
                "PIN001",
                "tag only",
                Some(Location::line("a.yaml", 3, 1, 4)),
                "k",
            ),
        ];
        merge(&mut findings);
        let codes: Vec<(&str, &str, usize)> = findings
            .iter()
            .map(|f| (f.code, f.message.as_str(), f.also_in.len()))
            .collect();
        assert_eq!(
            codes,
            [
                ("BLD001", "kustomize build failed: x", 1),
                ("BLD001", "kustomize build failed: y", 0),
                ("BLD001", "patch failed", 0),
                ("PIN001", "tag only", 0),
                ("SUB003", "`${__field.labels.job}` is shell syntax", 0),
            ]
        );
    }
}
