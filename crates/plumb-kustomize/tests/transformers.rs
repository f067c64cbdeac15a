//! The namespace, labels, annotations, replicas and images transformers against kustomize itself:
//! every directory under `tests/fixtures/transformers/` is a kustomization whose
//! `expected.yaml` (or `expected_error.txt`) is what `kustomize-ref DIR` (kustomize api v0.21.3)
//! printed for it. Error fixtures also have `error_contains.txt`: the part of kustomize's message
//! plumb must repeat (kustomize's full text can embed Go data dumps plumb does not reproduce).

use plumb_kustomize::{build_yaml, BuildOptions};
use std::fs;
use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transformers");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&root)
        .expect("fixture directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn check(dir: &Path) -> Result<(), String> {
    let result = build_yaml(dir, &BuildOptions::default());
    let expected = dir.join("expected.yaml");
    if expected.exists() {
        let want = fs::read_to_string(&expected).map_err(|e| e.to_string())?;
        let got = result.map_err(|e| format!("build failed: {e}"))?;
        if got != want {
            return Err(format!("output differs\n--- want\n{want}--- got\n{got}"));
        }
        return Ok(());
    }
    let contains = fs::read_to_string(dir.join("error_contains.txt")).map_err(|e| e.to_string())?;
    match result {
        Ok(out) => Err(format!("built, but kustomize fails:\n{out}")),
        Err(e) => {
            let message = e.to_string();
            let want = contains.trim_end_matches('\n');
            if message.contains(want) {
                Ok(())
            } else {
                Err(format!("error {message:?} does not contain {want:?}"))
            }
        }
    }
}

#[test]
fn transformers_match_kustomize() {
    let dirs = fixtures();
    assert!(dirs.len() >= 20, "fixtures missing");
    let failures: Vec<String> = dirs
        .iter()
        .filter_map(|dir| {
            check(dir).err().map(|why| {
                let name = dir.file_name().unwrap_or_default().to_string_lossy();
                format!("{name}: {why}")
            })
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
