//! Differential test: for every case under `tests/differential/`, plumb-yaml's reading and
//! writing of `input.yaml` equals, byte for byte, what `kustomize build` printed for a
//! kustomization listing that file (`expected.yaml`, obtained with ../shared/tools/kustomize-ref
//! and committed; `scripts/refresh-yaml-differential` regenerates them).

use std::fs;
use std::path::Path;

fn build(input: &Path) -> Result<String, String> {
    let text = fs::read_to_string(input).map_err(|e| e.to_string())?;
    let docs = plumb_yaml::parse_documents(input, &text).map_err(|e| e.to_string())?;
    let values = docs
        .iter()
        .filter(|d| !d.is_null())
        .map(plumb_yaml::to_json)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    Ok(plumb_yaml::write_stream(&values))
}

#[test]
fn matches_kustomize_byte_for_byte() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/differential");
    let mut cases: Vec<_> = fs::read_dir(&root)
        .expect("tests/differential exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("expected.yaml").exists())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 30,
        "expected at least 30 cases, found {}",
        cases.len()
    );
    let mut failed = Vec::new();
    for case in &cases {
        let expected = fs::read_to_string(case.join("expected.yaml")).unwrap();
        match build(&case.join("input.yaml")) {
            Ok(actual) if actual == expected => {}
            Ok(actual) => {
                let name = case.file_name().unwrap().to_string_lossy().to_string();
                eprintln!("--- {name}: expected\n{expected}--- got\n{actual}");
                failed.push(name);
            }
            Err(e) => {
                let name = case.file_name().unwrap().to_string_lossy().to_string();
                eprintln!("--- {name}: error {e}");
                failed.push(name);
            }
        }
    }
    println!(
        "{} passed, {} failed",
        cases.len() - failed.len(),
        failed.len()
    );
    assert!(failed.is_empty(), "differing cases: {failed:?}");
}
