//! `plumb check --format json`: the `plumb.check/v1` document, described field by field in
//! `docs/check.md` and by the JSON schema `docs/check.schema.json`. A change that removes or
//! renames a field bumps the version.

use crate::finding::{Finding, Location, Severity};
use crate::report::Report;
use serde_json::{json, Map, Value};

/// The schema identifier written into every document.
pub const SCHEMA: &str = "plumb.check/v1";

pub fn render(report: &Report) -> Value {
    json!({
        "schema": SCHEMA,
        "findings": report.findings.iter().map(finding).collect::<Vec<_>>(),
        "summary": {
            "errors": report.errors(),
            "warnings": report.warnings(),
            "suppressed": report.suppressed,
            "kustomizations": {
                "total": report.build.kustomizations,
                "checked": report.build.built,
                "failed": report.build.failed,
                "not_built": report.build.not_built,
                "unavailable": report.build.unavailable,
            },
            "helm_releases": {
                "total": report.build.releases,
                "checked": report.build.rendered,
                "failed": report.build.releases_failed,
                "unavailable": report.build.releases_unavailable,
                "not_rendered": report.build.releases_not_rendered,
            },
            "by_code": report.by_code(),
            "unchecked_kinds": report.unchecked_kinds,
            "unchecked_because": report.unchecked_because,
        },
    })
}

fn finding(f: &Finding) -> Value {
    let mut map = Map::new();
    map.insert("code".into(), json!(f.code));
    map.insert(
        "severity".into(),
        json!(match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }),
    );
    map.insert("message".into(), json!(f.message));
    if let Some(l) = &f.location {
        location(l, &mut map);
    }
    map.insert(
        "related".into(),
        Value::Array(
            f.related
                .iter()
                .map(|r| {
                    let mut m = Map::new();
                    location(&r.location, &mut m);
                    m.insert("label".into(), json!(r.label));
                    Value::Object(m)
                })
                .collect(),
        ),
    );
    map.insert("chain".into(), json!(f.chain));
    map.insert("also_in".into(), json!(f.also_in));
    map.insert("help".into(), json!(f.help));
    Value::Object(map)
}

fn location(l: &Location, map: &mut Map<String, Value>) {
    map.insert("file".into(), json!(super::slash_path(&l.file)));
    map.insert("line".into(), json!(l.line));
    map.insert("column".into(), json!(l.column));
    map.insert("end_column".into(), json!(l.end_column));
}
