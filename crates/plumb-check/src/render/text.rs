//! Diagnostics as rustc and miette print them:
//!
//! ```text
//! error[SUB001]: `${GATEWAY_VIP}` is not substituted
//!   --> platform-config/gateway.yaml:12:16
//!    |
//! 12 |     address: ${GATEWAY_VIP}
//!    |              ^^^^^^^^^^^^^^
//!    |
//!   ::: clusters/base/platform.yaml:8:5
//!    |
//!  8 |     substituteFrom:
//!    |     --------------- substitutes from here
//!    |
//!    = chain: flux-system/flux-system → flux-system/platform-config
//!    = help: define GATEWAY_VIP in the cluster-vars ConfigMap
//! ```
//!
//! Colours (ANSI) only when asked for: the caller decides from `--color` and whether stdout is
//! a terminal.

use crate::finding::{Finding, Location, Severity};
use crate::report::Report;
use crate::sources::SourceCache;
use std::fmt::Write as _;

/// How to print.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    pub color: bool,
}

struct Paint {
    on: bool,
}

impl Paint {
    fn paint(&self, style: &str, text: &str) -> String {
        if self.on && !text.is_empty() {
            format!("\x1b[{style}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

const BOLD: &str = "1";
const RED: &str = "1;31";
const YELLOW: &str = "1;33";
const BLUE: &str = "1;34";

fn level(severity: Severity) -> (&'static str, &'static str) {
    match severity {
        Severity::Error => ("error", RED),
        Severity::Warning => ("warning", YELLOW),
    }
}

/// The whole report, each finding followed by a blank line, then a summary line.
pub fn render(report: &mut Report, options: TextOptions) -> String {
    let paint = Paint { on: options.color };
    let mut out = String::new();
    let Report {
        findings, sources, ..
    } = report;
    for finding in findings.iter() {
        out.push_str(&render_finding(finding, sources, &paint));
        out.push('\n');
    }
    out.push_str(&summary(report, &paint));
    out
}

/// `Found 2 errors and 1 warning.` (`No findings.`), with the suppressed count.
fn summary(report: &Report, paint: &Paint) -> String {
    let (errors, warnings) = (report.errors(), report.warnings());
    let plural = |n: usize, word: &str| {
        if n == 1 {
            format!("1 {word}")
        } else {
            format!("{n} {word}s")
        }
    };
    let mut line = match (errors, warnings) {
        (0, 0) => "No findings".to_string(),
        (e, 0) => format!("Found {}", plural(e, "error")),
        (0, w) => format!("Found {}", plural(w, "warning")),
        (e, w) => format!("Found {} and {}", plural(e, "error"), plural(w, "warning")),
    };
    let codes = report.by_code();
    if codes.len() > 1 {
        let per: Vec<String> = codes.iter().map(|(c, n)| format!("{c} {n}")).collect();
        line.push_str(&format!(": {}", per.join(", ")));
    }
    if report.suppressed > 0 {
        line.push_str(&format!(" ({} suppressed)", report.suppressed));
    }
    line.push('.');
    let mut out = paint.paint(BOLD, &line) + "\n";
    if !report.unchecked_kinds.is_empty() {
        let kinds = &report.unchecked_kinds;
        let mut shown = kinds.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
        if kinds.len() > 8 {
            shown.push_str(&format!(
                ", and {} more (`--format json` lists them)",
                kinds.len() - 8
            ));
        }
        out.push_str(&format!(
            "{} not checked for apply order ({shown}): {}.\n",
            plural(kinds.len(), "kind"),
            report.unchecked_because.join("; ")
        ));
    }
    out
}

/// Codes whose source lines hold a secret value: the value is not shown.
const REDACTED_CODES: &[&str] = &["SEC001"];

/// The line with whatever follows its first `: ` or `=` replaced, so the key stays readable
/// and the value does not reach the output.
fn redact_value(line: &str) -> String {
    let cut = match (line.find(": "), line.find('=')) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    match cut {
        Some(i) => {
            let sep = if line[i..].starts_with(": ") { 2 } else { 1 };
            format!("{}<redacted>", &line[..i + sep])
        }
        None => line.to_string(),
    }
}

fn render_finding(f: &Finding, sources: &mut SourceCache, paint: &Paint) -> String {
    let (word, colour) = level(f.severity);
    let mut out = format!(
        "{}{}\n",
        paint.paint(colour, &format!("{word}[{}]", f.code)),
        paint.paint(BOLD, &format!(": {}", f.message))
    );
    let lines = std::iter::once(f.location.as_ref())
        .chain(f.related.iter().map(|r| Some(&r.location)))
        .flatten()
        .map(|l| l.line)
        .max()
        .unwrap_or(0);
    let gutter = lines.to_string().len();
    let pad = " ".repeat(gutter);
    let bar = paint.paint(BLUE, "|");
    // A finding about a plaintext secret must not print the secret into a CI log.
    let redact = REDACTED_CODES.contains(&f.code);
    if let Some(location) = &f.location {
        out.push_str(&snippet(
            location, "-->", '^', "", colour, gutter, sources, paint, redact,
        ));
    }
    for related in &f.related {
        if f.location.is_some() {
            let _ = writeln!(out, "{pad} {bar}");
        }
        out.push_str(&snippet(
            &related.location,
            ":::",
            '-',
            &related.label,
            BLUE,
            gutter,
            sources,
            paint,
            redact,
        ));
    }
    if f.location.is_some() || !f.related.is_empty() {
        let _ = writeln!(out, "{pad} {bar}");
    }
    let eq = paint.paint(BLUE, "=");
    if !f.chain.is_empty() {
        let _ = writeln!(
            out,
            "{pad} {eq} {}: {}",
            paint.paint(BOLD, "chain"),
            f.chain.join(" → ")
        );
    }
    if !f.also_in.is_empty() {
        let _ = writeln!(
            out,
            "{pad} {eq} {}: {}",
            paint.paint(BOLD, "also built by"),
            also_in(f)
        );
    }
    if !f.help.is_empty() {
        let _ = writeln!(out, "{pad} {eq} {}: {}", paint.paint(BOLD, "help"), f.help);
    }
    out
}

/// `3 more Kustomizations: a/b, c/d, e/f` (each chain's last), at most 10 named.
pub(crate) fn also_in(f: &Finding) -> String {
    let names: Vec<&str> = f
        .also_in
        .iter()
        .filter_map(|c| c.last().map(String::as_str))
        .collect();
    let n = names.len();
    let word = if n == 1 {
        "Kustomization"
    } else {
        "Kustomizations"
    };
    let shown = names
        .iter()
        .take(10)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if n > 10 {
        format!("{n} more {word}: {shown}, …")
    } else {
        format!("{n} more {word}: {shown}")
    }
}

/// ` --> file:line:col`, then the source line with the span underlined by `mark`.
#[allow(clippy::too_many_arguments)]
fn snippet(
    location: &Location,
    arrow: &str,
    mark: char,
    label: &str,
    colour: &str,
    gutter: usize,
    sources: &mut SourceCache,
    paint: &Paint,
    redact: bool,
) -> String {
    let pad = " ".repeat(gutter);
    let bar = paint.paint(BLUE, "|");
    let mut out = format!(
        "{pad}{} {}:{}:{}\n",
        paint.paint(BLUE, arrow),
        super::slash_path(&location.file),
        location.line,
        location.column
    );
    let Some(text) = sources.line(&location.file, location.line) else {
        return out;
    };
    let text = if redact {
        redact_value(text)
    } else {
        text.to_string()
    };
    // Keep tabs where the source has them, so the marks line up under the text.
    let indent: String = text
        .chars()
        .take(location.column.saturating_sub(1))
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let available = text
        .chars()
        .count()
        .saturating_sub(location.column.saturating_sub(1));
    let width = location
        .end_column
        .saturating_sub(location.column)
        .min(available)
        .max(1);
    let marks: String = std::iter::repeat_n(mark, width).collect();
    let mut underline = format!("{indent}{}", paint.paint(colour, &marks));
    if !label.is_empty() {
        underline.push(' ');
        underline.push_str(&paint.paint(colour, label));
    }
    let number = format!("{:>gutter$}", location.line);
    let _ = writeln!(out, "{pad} {bar}");
    let _ = writeln!(out, "{} {bar} {text}", paint.paint(BLUE, &number));
    let _ = writeln!(out, "{pad} {bar} {underline}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Finding, Location};
    use crate::sources::SourceCache;

    fn render_one(finding: Finding) -> String {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("a.yaml"), "key:\n\tvalue: x\n").expect("write");
        let mut report = Report {
            root: dir.path().to_path_buf(),
            findings: vec![finding],
            suppressed: 0,
            sources: SourceCache::new(dir.path()),
            build: Default::default(),
            unchecked_kinds: Vec::new(),
            unchecked_because: Vec::new(),
        };
        render(&mut report, TextOptions { color: false })
    }

    #[test]
    fn marks_line_up_under_tabs() {
        let f = Finding::new("SUB001", "msg", "fix it")
            .at(Some(Location::line("a.yaml", 2, 9, 1)))
            .with_chain(&["a/b".to_string(), "c/d".to_string()]);
        assert_eq!(
            render_one(f),
            "error[SUB001]: msg\n --> a.yaml:2:9\n  |\n2 | \tvalue: x\n  | \t       ^\n  |\n  = chain: a/b → c/d\n  = help: fix it\n\nFound 1 error.\n"
        );
    }

    #[test]
    fn positions_outside_the_file_do_not_panic() {
        for (line, column) in [(0, 0), (2, 0), (2, 99), (99, 1)] {
            let f = Finding::new("SUB001", "msg", "")
                .at(Some(Location::line("a.yaml", line, column, 3)))
                .related(Some(Location::line("missing.yaml", 1, 1, 1)), "elsewhere");
            let text = render_one(f);
            assert!(
                text.contains(&format!("--> a.yaml:{line}:{column}")),
                "{text}"
            );
            assert!(text.contains("::: missing.yaml:1:1"), "{text}");
        }
    }
}
