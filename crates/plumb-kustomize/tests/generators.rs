//! Generators checked against real kustomize: every fixture under `tests/fixtures/generators/`
//! was built with `kustomize-ref DIR --reorder none` (kustomize api v0.21.3) and its output
//! committed as `expected.yaml`, or its error as `errors/<case>/expected_error.txt` (the
//! fixture directory written as `$ROOT`). The content-hash suffixes in those outputs are the
//! strongest check here: one wrong byte in the hashed encoding changes every name.

use plumb_kustomize::{build_yaml, BuildOptions, LoadRestrictor, Reorder};
use std::fs;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/generators")
}

fn options() -> BuildOptions {
    BuildOptions {
        reorder: Reorder::None,
        ..BuildOptions::default()
    }
}

/// Builds `fixtures/<dir>` and compares with `fixtures/<expected>`.
fn assert_builds_as_kustomize(dir: &str, expected: &str) {
    let root = fixtures();
    let expected = fs::read_to_string(root.join(expected)).expect("expected output");
    let actual = match build_yaml(&root.join(dir), &options()) {
        Ok(yaml) => yaml,
        Err(e) => panic!("{dir}: build failed: {e}"),
    };
    assert_eq!(actual, expected, "{dir}: output differs from kustomize's");
}

#[test]
fn literals_keep_kustomize_quote_removal_and_hash_escapes() {
    assert_builds_as_kustomize("literals", "literals/expected.yaml");
}

#[test]
fn files_default_keys_and_binary_data() {
    assert_builds_as_kustomize("files", "files/expected.yaml");
}

#[test]
fn env_files_and_the_deprecated_env_field() {
    assert_builds_as_kustomize("envs", "envs/expected.yaml");
}

#[test]
fn secrets_are_base64_wrapped_and_typed() {
    assert_builds_as_kustomize("secrets", "secrets/expected.yaml");
}

#[test]
fn generator_options_local_and_global() {
    assert_builds_as_kustomize("options", "options/expected.yaml");
}

#[test]
fn merge_and_replace_across_levels() {
    assert_builds_as_kustomize("merge/overlay", "merge/expected.yaml");
}

#[test]
fn builtin_generator_configs_in_the_generators_field() {
    assert_builds_as_kustomize("plugins", "plugins/expected.yaml");
}

/// kustomize names the generator by a Go pointer (`&{0xc000... <nil>}`) where plumb names it
/// by name; everything after that must agree.
fn without_generator_name(message: &str) -> String {
    const MARK: &str = "merging from generator ";
    match message.find(MARK) {
        Some(start) => match message[start..].find(": ") {
            Some(end) => format!("{}{}{}", &message[..start], MARK, &message[start + end..]),
            None => message.to_string(),
        },
        None => message.to_string(),
    }
}

#[test]
fn errors_carry_kustomize_messages_and_the_file() {
    let root = fixtures().join("errors");
    let root_text = root.canonicalize().expect("fixtures").display().to_string();
    let mut cases: Vec<PathBuf> = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("readable fixtures").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name() == Some("expected_error.txt".as_ref()) {
                cases.push(dir.clone());
            }
        }
    }
    cases.sort();
    assert!(cases.len() >= 15, "error fixtures missing: {cases:?}");
    for case in cases {
        let expected = fs::read_to_string(case.join("expected_error.txt")).expect("expected");
        let expected = without_generator_name(expected.trim_end());
        let err = match build_yaml(&case, &options()) {
            Ok(_) => panic!("{}: built, but kustomize fails", case.display()),
            Err(e) => e.to_string(),
        };
        let actual = without_generator_name(&err.replace(&root_text, "$ROOT"));
        assert!(
            actual.contains(&expected),
            "{}:\n  kustomize: {expected}\n  plumb:     {actual}",
            case.display()
        );
        assert!(
            actual.contains("kustomization.yaml"),
            "{}: the error does not name the file: {actual}",
            case.display()
        );
    }
}

#[test]
fn files_outside_the_root_load_without_the_restrictor() {
    let dir = fixtures().join("errors/outside-root/k");
    let options = BuildOptions {
        load_restrictor: LoadRestrictor::None,
        ..options()
    };
    let yaml = build_yaml(&dir, &options).expect("builds without the restrictor");
    // kustomize-ref errors/outside-root/k --load-restrictor none
    assert_eq!(
        yaml,
        "apiVersion: v1\ndata:\n  outside.txt: |\n    out\nkind: ConfigMap\nmetadata:\n  name: cm-dtcfbt729g\n"
    );
}
