//! GitHub Actions workflow commands, one a finding:
//! `::error file=apps/x.yaml,line=3,endLine=3,col=5,endColumn=9,title=SUB001::message`.
//! GitHub shows each as an annotation on the pull request's diff.

use crate::finding::Severity;
use crate::report::Report;
use std::fmt::Write as _;
use std::path::Path;

/// One line per finding. `prefix` is the repository's path inside the workflow's checkout
/// (`examples/homelab` when plumb checks a subdirectory), so annotations land on the right file.
pub fn render(report: &Report, prefix: &Path) -> String {
    let mut out = String::new();
    for f in &report.findings {
        let command = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut properties = Vec::new();
        if let Some(l) = &f.location {
            // `./x` and `x` are the same file to GitHub only without the `./`.
            let prefix: std::path::PathBuf = prefix
                .components()
                .filter(|c| !matches!(c, std::path::Component::CurDir))
                .collect();
            let file = super::slash_path(&prefix.join(&l.file));
            properties.push(format!("file={}", escape_property(&file)));
            properties.push(format!("line={}", l.line));
            properties.push(format!("endLine={}", l.line));
            properties.push(format!("col={}", l.column));
            properties.push(format!("endColumn={}", l.end_column));
        }
        properties.push(format!("title={}", escape_property(f.code)));
        let mut message = f.message.clone();
        if !f.chain.is_empty() {
            message.push_str(&format!("\nchain: {}", f.chain.join(" → ")));
        }
        if !f.also_in.is_empty() {
            message.push_str(&format!("\nalso built by {}", super::text::also_in(f)));
        }
        if !f.help.is_empty() {
            message.push_str(&format!("\nhelp: {}", f.help));
        }
        let _ = writeln!(
            out,
            "::{command} {}::{}",
            properties.join(","),
            escape_data(&message)
        );
    }
    out
}

/// The message part: `%`, CR and LF are encoded (the runner's `escapeData`).
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A property value: also `:` and `,` (the runner's `escapeProperty`).
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_the_runner_reads() {
        assert_eq!(escape_data("50%\nnext"), "50%25%0Anext");
        assert_eq!(escape_property("a:b,c"), "a%3Ab%2Cc");
    }

    #[test]
    fn paths_are_relative_to_the_checkout() {
        use crate::finding::{Finding, Location};
        let report = Report {
            root: ".".into(),
            findings: vec![
                Finding::new("SUB002", "m", "h").at(Some(Location::line("a/b.yaml", 3, 2, 4)))
            ],
            suppressed: 0,
            sources: crate::sources::SourceCache::new(Path::new(".")),
            build: Default::default(),
            unchecked_kinds: Vec::new(),
            unchecked_because: Vec::new(),
        };
        for prefix in [".", "./"] {
            assert!(render(&report, Path::new(prefix)).starts_with("::error file=a/b.yaml,line=3,"));
        }
        assert!(render(&report, Path::new("./repo")).starts_with("::error file=repo/a/b.yaml,"));
    }
}
