use crate::finding::{Finding, Location};
use crate::rule::{CheckContext, Rule};
use crate::suppression::IgnoreComment;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// ## What it does
/// Reports a `# plumb:ignore` comment that names no code, names a code no rule has, or gives
/// no reason. Such a comment suppresses nothing.
///
/// ## Why is this bad?
/// A suppression is a decision someone made about a real finding; without the reason next to
/// it, the next reader cannot tell whether it still holds, and a misspelt code silently
/// suppresses nothing.
///
/// ## Example
/// ```yaml
/// image: ghcr.io/acme/tool:1.4 # plumb:ignore PIN001
/// ```
///
/// Use instead:
/// ```yaml
/// image: ghcr.io/acme/tool:1.4 # plumb:ignore PIN001 the vendor publishes no digests; tag is immutable
/// ```
pub struct IgnoreWithoutReason;

impl Rule for IgnoreWithoutReason {
    fn code(&self) -> &'static str {
        "IGN001"
    }

    fn summary(&self) -> &'static str {
        "a `# plumb:ignore` comment without a code or a reason"
    }

    fn check(&self, cx: &CheckContext<'_>, out: &mut Vec<Finding>) {
        // Every file an object of the build was read from, once.
        let mut files: BTreeMap<PathBuf, Arc<plumb_yaml::SourceFile>> = BTreeMap::new();
        for entry in &cx.build.entries {
            for k in &entry.kustomizations {
                for object in &k.objects {
                    if let Some(span) = object.origin.as_deref().and_then(|o| o.span.as_ref()) {
                        let path = span.file.path();
                        let rel = path.strip_prefix(cx.root).unwrap_or(path).to_path_buf();
                        files.entry(rel).or_insert_with(|| span.file.clone());
                    }
                }
            }
        }
        let known = crate::selection::known_codes();
        for (path, file) in files {
            for (i, line) in file.text().lines().enumerate() {
                let Some(comment) = IgnoreComment::parse(line) else {
                    continue;
                };
                let problem = if comment.codes.is_empty() {
                    Some("`# plumb:ignore` names no code".to_string())
                } else if let Some(bad) = comment
                    .codes
                    .iter()
                    .find(|c| !known.iter().any(|k| k.eq_ignore_ascii_case(c)))
                {
                    let hint = plumb_kustomize::kustomization::closest(bad, &known)
                        .map(|c| format!("; did you mean `{c}`?"))
                        .unwrap_or_default();
                    Some(format!(
                        "`# plumb:ignore {bad}`: no rule has this code{hint}"
                    ))
                } else if comment.reason.is_none() {
                    Some(format!(
                        "`# plumb:ignore {}` gives no reason, so it suppresses nothing",
                        comment.codes.join(",")
                    ))
                } else {
                    None
                };
                if let Some(message) = problem {
                    let location =
                        Location::line(path.clone(), i + 1, comment.column, comment.width);
                    out.push(
                        Finding::new(
                            self.code(),
                            message,
                            "write `# plumb:ignore CODE why this finding does not apply here`",
                        )
                        .at(Some(location)),
                    );
                }
            }
        }
    }
}
