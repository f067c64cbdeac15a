//! JSON documents checked against a schema of docs/ with Python's jsonschema (scripts/test's
//! virtualenv, `PLUMB_PYTHON`), for the CLI tests of each `-o json` output.

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Every error of the `documents` (name, JSON text) against `docs/<schema>`, as
/// `name.json: path: message`; none when they all match.
pub fn schema_errors(schema: &str, documents: &[(String, String)]) -> Vec<String> {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(schema);
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in documents {
        std::fs::write(dir.path().join(format!("{name}.json")), text).unwrap();
    }
    let script = r#"
import json, sys, glob, os
import jsonschema
schema = json.load(open(sys.argv[1]))
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
v = cls(schema)
for p in sorted(glob.glob(sys.argv[2] + "/*.json")):
    for e in v.iter_errors(json.load(open(p))):
        print(f"{os.path.basename(p)}: {'/'.join(map(str, e.absolute_path))}: {e.message}")
"#;
    let python = std::env::var("PLUMB_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(schema)
        .arg(dir.path())
        .output()
        .expect("python3 runs (the schema check needs python3 with jsonschema)");
    assert!(
        out.status.success(),
        "jsonschema failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}
