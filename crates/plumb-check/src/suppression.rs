//! `# plumb:ignore CODE reason` comments: on the offending line, or on a comment line directly
//! above it, they silence the findings of CODE there. A reason is required: a comment without
//! one silences nothing, and IGN001 reports it.

use crate::finding::Finding;
use crate::sources::SourceCache;

/// The comment marker.
pub const MARKER: &str = "plumb:ignore";

/// One `# plumb:ignore` comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoreComment {
    /// 1-based column (in characters) of its `#`, and its width.
    pub column: usize,
    pub width: usize,
    /// The codes it names (`SUB001,SUB002` is two).
    pub codes: Vec<String>,
    /// Why; `None` when missing, which makes the comment ineffective.
    pub reason: Option<String>,
}

impl IgnoreComment {
    /// The `# plumb:ignore` comment on a line of YAML, if there is one.
    pub fn parse(line: &str) -> Option<IgnoreComment> {
        let at = line.find(MARKER)?;
        let hash = line[..at].rfind('#')?;
        // A comment starts a line or follows a space; what stands between `#` and the marker is
        // blank.
        let is_comment = (hash == 0 || line[..hash].ends_with([' ', '\t']))
            && line[hash + 1..at].trim().is_empty();
        if !is_comment {
            return None;
        }
        let rest = &line[at + MARKER.len()..];
        let rest = rest.strip_prefix(':').unwrap_or(rest).trim();
        let (codes, reason) = match rest.split_once(char::is_whitespace) {
            Some((codes, reason)) => (codes, reason.trim()),
            None => (rest, ""),
        };
        let codes = codes
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect();
        Some(IgnoreComment {
            column: line[..hash].chars().count() + 1,
            width: line[hash..].trim_end().chars().count(),
            codes,
            reason: (!reason.is_empty()).then(|| reason.to_string()),
        })
    }

    fn covers(&self, code: &str) -> bool {
        self.reason.is_some() && self.codes.iter().any(|c| c.eq_ignore_ascii_case(code))
    }
}

/// Whether a comment on the finding's line, or on the comment lines directly above it,
/// suppresses it.
pub fn is_suppressed(finding: &Finding, sources: &mut SourceCache) -> bool {
    let Some(location) = &finding.location else {
        return false;
    };
    let Some(lines) = sources.lines(&location.file) else {
        return false;
    };
    let Some(index) = location.line.checked_sub(1) else {
        return false;
    };
    let covers = |line: &str| IgnoreComment::parse(line).is_some_and(|c| c.covers(finding.code));
    if lines.get(index).is_some_and(|l| covers(l)) {
        return true;
    }
    lines[..index.min(lines.len())]
        .iter()
        .rev()
        .take_while(|l| l.trim_start().starts_with('#'))
        .any(|l| covers(l))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_codes_and_reason() {
        let c = IgnoreComment::parse(
            "  image: nginx:1.27 # plumb:ignore PIN001,PIN002 vendor has no digests",
        )
        .unwrap();
        assert_eq!(c.codes, vec!["PIN001", "PIN002"]);
        assert_eq!(c.reason.as_deref(), Some("vendor has no digests"));
        assert_eq!(c.column, 21);
        let c = IgnoreComment::parse("# plumb:ignore SUB002").unwrap();
        assert_eq!(c.reason, None);
        assert_eq!(c.column, 1);
        assert!(IgnoreComment::parse("url: http://x/#plumb:ignore").is_none());
        assert!(IgnoreComment::parse("key: value").is_none());
    }
}
