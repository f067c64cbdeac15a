//! A check run: the selected rules over a build, then the configuration's severity overrides
//! and per-path ignores, then `# plumb:ignore` comments. What is left is what the renderers
//! print and what decides the exit code.

use crate::config::CheckConfig;
use crate::finding::{Finding, Severity};
use crate::rule::CheckContext;
use crate::selection::{self, Selection};
use crate::sources::SourceCache;
use plumb_flux::build::RepositoryBuild;
use std::path::PathBuf;

/// The findings of one run.
#[derive(Debug)]
pub struct Report {
    /// The repository root the findings' paths are relative to.
    pub root: PathBuf,
    /// Sorted by file, line, code.
    pub findings: Vec<Finding>,
    /// How many findings `# plumb:ignore` comments or per-path ignores silenced.
    pub suppressed: usize,
    /// The files findings point at, for the renderers.
    pub sources: SourceCache,
    /// How much of the repository was built, and so checked.
    pub build: plumb_flux::output::Summary,
    /// Kinds (`group/Kind`) that nothing seen provides while part of the cluster was not seen
    /// (a release not rendered, a Kustomization not built): not reported by ORD001, listed here.
    pub unchecked_kinds: Vec<String>,
    /// Why they could not be checked (what was not seen, a distribution not configured).
    pub unchecked_because: Vec<String>,
}

impl Report {
    /// Runs the rules `selection` enables on `build`.
    pub fn run(build: &RepositoryBuild, config: &CheckConfig, selection: &Selection) -> Report {
        let root = build.root.as_path();
        let cx = CheckContext::new(root, build, config);
        let ordering = ["ORD001", "ORD002", "ORD003", "ORD004"];
        let (unchecked_kinds, unchecked_because) = if ordering.iter().any(|c| selection.enabled(c))
        {
            crate::rules::ord::placement::unchecked(&cx)
        } else {
            Default::default()
        };
        let mut raw = Vec::new();
        for rule in crate::rules::all() {
            if selection.enabled(rule.code()) {
                rule.check(&cx, &mut raw);
            }
        }
        let mut sources = SourceCache::new(root);
        let mut findings = Vec::new();
        let mut suppressed = 0;
        for mut finding in raw {
            if !selection.enabled(finding.code) {
                continue;
            }
            if let Some(&severity) = config.rules.severity.get(finding.code) {
                finding.severity = severity;
            }
            if is_ignored_by_path(&finding, config)
                || crate::suppression::is_suppressed(&finding, &mut sources)
            {
                suppressed += 1;
                continue;
            }
            findings.push(finding);
        }
        crate::finding::merge(&mut findings);
        Report {
            root: root.to_path_buf(),
            findings,
            suppressed,
            sources,
            build: build.summary(),
            unchecked_kinds,
            unchecked_because,
        }
    }

    /// How many findings each code has, by code.
    pub fn by_code(&self) -> std::collections::BTreeMap<&'static str, usize> {
        let mut counts = std::collections::BTreeMap::new();
        for f in &self.findings {
            *counts.entry(f.code).or_insert(0) += 1;
        }
        counts
    }

    pub fn errors(&self) -> usize {
        self.count(Severity::Error)
    }

    pub fn warnings(&self) -> usize {
        self.count(Severity::Warning)
    }

    fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }
}

fn is_ignored_by_path(finding: &Finding, config: &CheckConfig) -> bool {
    let Some(location) = &finding.location else {
        return false;
    };
    let path = location.file.to_string_lossy().replace('\\', "/");
    config
        .rules
        .per_path_ignores
        .iter()
        .filter(|(code, _)| selection::matches(code, finding.code))
        .flat_map(|(_, globs)| globs)
        .any(|g| crate::glob::matches_path(g, &path))
}
