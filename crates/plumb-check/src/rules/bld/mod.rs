//! BLD: the build's own diagnostics (kustomize errors, substitution failures, dependsOn
//! cycles) as findings, so a repository that does not build never checks clean.

mod build_error;
mod build_warning;

pub use build_error::BuildError;
pub use build_warning::BuildWarning;

use crate::finding::{Finding, Location, Severity};
use crate::rule::CheckContext;
use crate::sources::SourceCache;
use plumb_flux::diagnostic::{self, Diagnostic};

/// Every build diagnostic of `severity`, as a finding of `code`.
fn diagnostics_as_findings(
    cx: &CheckContext<'_>,
    code: &'static str,
    severity: diagnostic::Severity,
    out: &mut Vec<Finding>,
) {
    let mut sources = SourceCache::new(cx.root);
    // Diagnostics another rule reports under its own code (with a better position) are left
    // to it, so one mistake is one finding.
    for d in cx.build.diagnostics().filter(|d| {
        d.severity == severity
            && crate::rules::ord::claimed_by(d).is_none()
            && !crate::rules::ord::is_not_a_mistake(d)
    }) {
        let mut f = finding(d, code, &mut sources);
        // Messages quote absolute paths (kustomize's own); keep output independent of where
        // the repository is checked out.
        let prefix = format!("{}/", cx.root.display());
        f.message = f.message.replace(&prefix, "");
        out.push(f);
    }
}

fn finding(d: &Diagnostic, code: &'static str, sources: &mut SourceCache) -> Finding {
    let severity = match d.severity {
        diagnostic::Severity::Error => Severity::Error,
        diagnostic::Severity::Warning => Severity::Warning,
    };
    let help = d.help.clone().unwrap_or_else(|| {
        "fix the build first: `plumb build` shows the same diagnostic".to_string()
    });
    let mut message = d.message.clone();
    let location = match (&d.file, d.line) {
        (Some(file), Some(line)) => {
            let line = line as usize;
            let column = d.column.map_or(1, |c| c as usize).max(1);
            // Underline from the column to the end of the line's text.
            let width = sources.line(file, line).map_or(1, |text| {
                text.chars()
                    .skip(column.saturating_sub(1))
                    .collect::<String>()
                    .trim_end()
                    .chars()
                    .count()
            });
            Some(Location::line(file.clone(), line, column, width))
        }
        (Some(file), None) => {
            message = format!("{message} (in {})", file.display());
            None
        }
        _ => None,
    };
    Finding::new(code, message, help)
        .severity(severity)
        .at(location)
        .with_chain(&d.chain)
}
