//! `plumb check --format sarif`: SARIF 2.1.0 (OASIS), what GitHub code scanning and other
//! services read. One run; the driver lists every rule with its documentation; each result
//! points at its file relative to `%SRCROOT%`, the repository root; related spans become
//! `relatedLocations`, the Kustomization chain a property.

use crate::finding::{Finding, Location, Severity};
use crate::report::Report;
use serde_json::{json, Value};

/// The schema the document declares.
pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

pub fn render(report: &Report) -> Value {
    let docs = crate::explain::rule_docs();
    let rules: Vec<Value> = docs
        .iter()
        .map(|d| {
            let short = if d.summary.is_empty() {
                d.code
            } else {
                d.summary
            };
            json!({
                "id": d.code,
                "name": d.name,
                "shortDescription": {"text": short},
                "fullDescription": {"text": first_paragraph(d.doc)},
                "help": {"text": d.doc, "markdown": d.doc},
                "defaultConfiguration": {"level": "error"},
            })
        })
        .collect();
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|f| result(f, docs.iter().position(|d| d.code == f.code)))
        .collect();
    let mut run = json!({
        "tool": {"driver": {
            "name": "plumb",
            "version": env!("CARGO_PKG_VERSION"),
            "rules": rules,
        }},
        "columnKind": "unicodeCodePoints",
        "results": results,
    });
    if report.root.is_absolute() {
        if let Some(map) = run.as_object_mut() {
            map.insert(
                "originalUriBaseIds".into(),
                json!({"%SRCROOT%": {"uri": format!("file://{}/", uri_path(&super::slash_path(&report.root)).trim_end_matches('/'))}}),
            );
        }
    }
    json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [run],
    })
}

fn result(f: &Finding, rule_index: Option<usize>) -> Value {
    let mut text = f.message.clone();
    if !f.help.is_empty() {
        text.push_str(&format!("\nhelp: {}", f.help));
    }
    let mut r = json!({
        "ruleId": f.code,
        "level": match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        },
        "message": {"text": text},
        "locations": f.location.iter().map(|l| json!({"physicalLocation": physical(l)})).collect::<Vec<_>>(),
        "relatedLocations": f.related.iter().enumerate().map(|(i, rel)| json!({
            "id": i,
            "physicalLocation": physical(&rel.location),
            "message": {"text": rel.label},
        })).collect::<Vec<_>>(),
        "properties": {"chain": f.chain, "alsoIn": f.also_in},
    });
    if let (Some(i), Some(map)) = (rule_index, r.as_object_mut()) {
        map.insert("ruleIndex".into(), json!(i));
    }
    r
}

fn physical(l: &Location) -> Value {
    json!({
        "artifactLocation": {"uri": uri_path(&super::slash_path(&l.file)), "uriBaseId": "%SRCROOT%"},
        "region": {
            "startLine": l.line,
            "startColumn": l.column,
            "endLine": l.line,
            "endColumn": l.end_column,
        },
    })
}

/// A path as a URI reference: every byte outside RFC 3986's unreserved set and `/` is
/// percent-encoded.
fn uri_path(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn first_paragraph(doc: &str) -> String {
    let body = doc
        .strip_prefix("## What it does")
        .unwrap_or(doc)
        .trim_start();
    body.split("\n\n")
        .next()
        .unwrap_or("")
        .replace('\n', " ")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_encoded() {
        assert_eq!(uri_path("apps/my app/ü.yaml"), "apps/my%20app/%C3%BC.yaml");
    }
}
