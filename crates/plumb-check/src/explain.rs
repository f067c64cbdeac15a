//! Each rule's documentation, for `plumb explain`: the `///` comment of the struct that
//! implements the rule, extracted by `build.rs` at compile time, so it is written once, next to
//! the code it describes.

include!(concat!(env!("OUT_DIR"), "/rule_docs.rs"));

/// What `plumb explain` says about one rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleDoc {
    pub code: &'static str,
    /// The struct that implements it (`UnresolvedVariable`).
    pub name: &'static str,
    /// One line: what the rule finds (its `Rule::summary`).
    pub summary: &'static str,
    /// The doc comment: What it does / Why is this bad? / Example / Use instead.
    pub doc: &'static str,
}

/// Every documented rule, in code order.
pub fn rule_docs() -> Vec<RuleDoc> {
    let rules = crate::rules::all();
    RULE_DOCS
        .iter()
        .map(|&(code, name, doc)| RuleDoc {
            code,
            name,
            summary: rules
                .iter()
                .find(|r| r.code() == code)
                .map_or("", |r| r.summary()),
            doc,
        })
        .collect()
}

/// The documentation of `code` (exact, case-insensitive).
pub fn rule_doc(code: &str) -> Option<RuleDoc> {
    rule_docs()
        .into_iter()
        .find(|d| d.code.eq_ignore_ascii_case(code))
}

/// `plumb explain CODE`'s text: a title line, then the doc comment.
pub fn explain(doc: &RuleDoc) -> String {
    let mut out = format!("{} ({})", doc.code, doc.name);
    if !doc.summary.is_empty() {
        out.push_str(": ");
        out.push_str(doc.summary);
    }
    out.push_str("\n\n");
    out.push_str(doc.doc);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The convention `rules/mod.rs` documents: every registered rule has a doc comment with
    /// the four sections, and every documented rule is registered.
    #[test]
    fn every_rule_is_documented() {
        let docs = rule_docs();
        let mut problems = Vec::new();
        for rule in crate::rules::all() {
            match docs.iter().find(|d| d.code == rule.code()) {
                None => problems.push(format!(
                    "{}: no `///` doc comment found above its `pub struct` (or `fn code` does not return a literal)",
                    rule.code()
                )),
                Some(d) => {
                    for section in ["## What it does", "## Why is this bad?", "## Example"] {
                        if !d.doc.contains(section) {
                            problems.push(format!("{}: doc comment lacks `{section}`", d.code));
                        }
                    }
                }
            }
        }
        for d in &docs {
            if !crate::rules::all().iter().any(|r| r.code() == d.code) {
                problems.push(format!(
                    "{}: documented but not registered in rules::all()",
                    d.code
                ));
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn explain_prints_the_doc_comment() {
        let doc = rule_doc("bld001").expect("BLD001 is documented");
        let text = explain(&doc);
        assert!(text.starts_with("BLD001 (BuildError): "), "{text}");
        assert!(text.contains("## What it does"), "{text}");
    }
}
