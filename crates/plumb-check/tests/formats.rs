//! The machine-readable outputs against their schemas: `--format json` against the committed
//! `docs/check.schema.json`, `--format sarif` against the official SARIF 2.1.0 schema (OASIS's
//! `sarif-schema-2.1.0.json`, copied into `tests/schemas/` from the serde-sarif 0.8.0 crate, so
//! the test runs offline). Validation is Python's `jsonschema`, which the project's machines
//! have (`pip install jsonschema` otherwise); the reports come from fixtures with related
//! spans, chains, and findings without a file.

use plumb_check::render;
use plumb_check::{CheckConfig, Report, Selection};
use plumb_flux::build::{build_repository, Options};
use std::path::{Path, PathBuf};
use std::process::Command;

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn report(fixture: &str) -> Report {
    let dir = manifest().join("tests/fixtures").join(fixture);
    let config = CheckConfig::load(&dir).expect("fixture config");
    let build = build_repository(&dir, &Options::default()).expect("fixture builds");
    Report::run(&build, &config, &Selection::new(&config.rules, &[], &[]))
}

/// Every fixture's `bad` report: between them they hold every shape a finding takes.
fn reports() -> Vec<(String, Report)> {
    let mut out = Vec::new();
    let Ok(read) = std::fs::read_dir(manifest().join("tests/fixtures")) else {
        return out;
    };
    let mut codes: Vec<String> = read
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    codes.sort();
    for code in codes {
        let name = format!("{code}/bad");
        if manifest().join("tests/fixtures").join(&name).is_dir() {
            out.push((name.clone(), report(&name)));
        }
    }
    out
}

/// Validates each `(name, document)` against `schema` with Python's jsonschema; returns the
/// errors.
fn validate(schema: &Path, documents: &[(String, serde_json::Value)]) -> Vec<String> {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    let mut paths = Vec::new();
    for (i, (_, doc)) in documents.iter().enumerate() {
        let p = dir.join(format!("{i}.json"));
        std::fs::write(&p, serde_json::to_string(doc).expect("json")).expect("write");
        paths.push(p);
    }
    let script = r#"
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
v = cls(schema, format_checker=cls.FORMAT_CHECKER)
bad = 0
for p in sys.argv[2:]:
    for e in v.iter_errors(json.load(open(p))):
        bad += 1
        print(f"{p}: {'/'.join(map(str, e.absolute_path))}: {e.message}")
sys.exit(1 if bad else 0)
"#;
    // scripts/test points PLUMB_PYTHON at its virtualenv, which has jsonschema.
    let python = std::env::var("PLUMB_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(schema)
        .args(&paths)
        .output()
        .expect("python3 runs (the schema tests need python3 with jsonschema)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named 'jsonschema'"),
        "python3 lacks jsonschema: pip install jsonschema"
    );
    let mut errors: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            // Name the fixture instead of the temp file.
            let (file, rest) = l.split_once(": ").unwrap_or((l, ""));
            let index: usize = Path::new(file)
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.parse().ok())
                .unwrap_or(usize::MAX);
            let name = documents.get(index).map_or("?", |d| d.0.as_str());
            format!("{name}: {rest}")
        })
        .collect();
    if !out.status.success() && errors.is_empty() {
        errors.push(format!("jsonschema failed: {stderr}"));
    }
    errors
}

#[test]
fn json_output_matches_its_schema() {
    let docs: Vec<_> = reports()
        .iter()
        .map(|(name, r)| (name.clone(), render::json::render(r)))
        .collect();
    assert!(docs
        .iter()
        .any(|(_, d)| d["findings"].as_array().is_some_and(|f| f
            .iter()
            .any(|f| !f["related"].as_array().is_some_and(Vec::is_empty)))));
    let errors = validate(&manifest().join("../../docs/check.schema.json"), &docs);
    assert!(errors.is_empty(), "\n{}", errors.join("\n"));
}

#[test]
fn sarif_output_matches_the_sarif_2_1_0_schema() {
    let docs: Vec<_> = reports()
        .iter()
        .map(|(name, r)| (name.clone(), render::sarif::render(r)))
        .collect();
    let errors = validate(
        &manifest().join("tests/schemas/sarif-schema-2.1.0.json"),
        &docs,
    );
    assert!(errors.is_empty(), "\n{}", errors.join("\n"));
}

#[test]
fn the_validator_rejects_a_broken_document() {
    // A safety net that never fails is no net: a SARIF log without `version` must be refused.
    let mut doc = render::sarif::render(&report("IGN001/bad"));
    if let Some(map) = doc.as_object_mut() {
        map.remove("version");
    }
    let errors = validate(
        &manifest().join("tests/schemas/sarif-schema-2.1.0.json"),
        &[("IGN001/bad without version".into(), doc)],
    );
    assert!(!errors.is_empty());
}

#[test]
fn github_output_is_one_workflow_command_per_finding() {
    let r = report("IGN001/bad");
    let text = render::github::render(&r, Path::new("deploy"));
    assert_eq!(
        text,
        "::error file=deploy/apps/web/service.yaml,line=7,endLine=7,col=3,endColumn=24,title=IGN001::`# plumb:ignore PIN001` gives no reason, so it suppresses nothing%0Ahelp: write `# plumb:ignore CODE why this finding does not apply here`\n"
    );
}
