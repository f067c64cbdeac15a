//! `replacements:` and `vars:` checked against kustomize: every directory under
//! `tests/fixtures/replacements/` holds an `input/` kustomization (built from `input/k` when
//! present) and what `kustomize-ref --reorder none` printed for it: `expected.yaml`, or
//! `expected_error.txt` whose last line plumb's error must contain (absolute paths removed).
//! Where plumb words an error its own way (with the file and line), `error_contains.txt` says
//! which part of kustomize's message it must keep.

use plumb_kustomize::{build_yaml, BuildOptions, Reorder};
use std::fs;
use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/replacements");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&root)
        .expect("fixture directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("input").is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn check(dir: &Path) -> Result<(), String> {
    let input = dir.join("input");
    let build_dir = if input.join("k").is_dir() {
        input.join("k")
    } else {
        input.clone()
    };
    let options = BuildOptions {
        reorder: Reorder::None,
        ..BuildOptions::default()
    };
    let result = build_yaml(&build_dir, &options).map_err(|e| e.to_string());
    let expected_error = dir.join("expected_error.txt");
    if expected_error.is_file() {
        let contains = dir.join("error_contains.txt");
        let source = if contains.is_file() {
            contains
        } else {
            expected_error
        };
        let text = fs::read_to_string(&source).map_err(|e| e.to_string())?;
        let root = input
            .canonicalize()
            .map_err(|e| e.to_string())?
            .display()
            .to_string();
        let want = text
            .trim_end()
            .lines()
            .last()
            .unwrap_or("")
            .replace(&root, "");
        return match result {
            Ok(_) => Err(format!("built, but kustomize fails with {want:?}")),
            Err(got) if got.replace(&root, "").contains(&want) => Ok(()),
            Err(got) => Err(format!("error {got:?} does not contain {want:?}")),
        };
    }
    let want = fs::read_to_string(dir.join("expected.yaml")).map_err(|e| e.to_string())?;
    match result {
        Ok(got) if got == want => Ok(()),
        Ok(got) => Err(format!(
            "output differs:\n--- kustomize\n{want}--- plumb\n{got}"
        )),
        Err(e) => Err(format!("error: {e}")),
    }
}

#[test]
fn replacements_and_vars_match_kustomize() {
    let dirs = fixtures();
    assert!(dirs.len() >= 10, "fixtures missing");
    let failures: Vec<String> = dirs
        .iter()
        .filter_map(|d| {
            check(d).err().map(|e| {
                format!(
                    "{}: {e}",
                    d.file_name().unwrap_or_default().to_string_lossy()
                )
            })
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
