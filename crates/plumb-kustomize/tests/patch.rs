//! Patching checked against kustomize: each directory under `tests/fixtures/patch/` is a
//! kustomization whose `expected.yaml` (or `expected_error.txt`) is what kustomize-ref (the real
//! kustomize, api v0.21.3) printed for it with `--reorder none`. Each test builds one fixture and
//! asserts plumb prints the same bytes, or fails with kustomize's message.

use plumb_kustomize::{build_yaml, BuildOptions, Reorder};
use std::fs;
use std::path::Path;

fn check(name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/patch")
        .join(name);
    let options = BuildOptions {
        reorder: Reorder::None,
        ..BuildOptions::default()
    };
    let result = build_yaml(&dir, &options);
    if let Ok(expected) = fs::read_to_string(dir.join("expected.yaml")) {
        match result {
            Ok(actual) => assert_eq!(actual, expected, "{name}: output differs from kustomize"),
            Err(e) => panic!("{name}: kustomize builds this, plumb fails: {e}"),
        }
    } else {
        let expected = fs::read_to_string(dir.join("expected_error.txt"))
            .unwrap_or_else(|e| panic!("{name}: no expected.yaml or expected_error.txt: {e}"));
        match result {
            Ok(out) => panic!("{name}: kustomize fails, plumb built:\n{out}"),
            Err(e) => {
                let message = e.to_string();
                assert!(
                    message.contains(expected.trim()),
                    "{name}: expected an error containing {:?}, got {message:?}",
                    expected.trim()
                );
            }
        }
    }
}

macro_rules! fixtures {
    ($($test:ident => $dir:literal: $what:literal,)*) => {
        $(
            #[doc = $what]
            #[test]
            fn $test() {
                check($dir);
            }
        )*
    };
}

fixtures! {
    smp_directives => "smp-directives":
        "`$patch: delete|replace|merge` on maps and list elements (replace on an element is \
         ignored), null deletes, `key:` in the resource dropped while `key: null` stays.",
    smp_unsupported_directives => "smp-unsupported-directives":
        "`$setElementOrder`, `$retainKeys`, `$deleteFromPrimitiveList` stay as plain fields; \
         finalizers merge as a set, patch values first.",
    smp_merge_keys => "smp-merge-keys":
        "containerPort+protocol lists: patch-only elements first, then the resource's in its \
         order; a port without protocol matches one with it only through another element.",
    smp_element_without_key => "smp-element-without-key":
        "an element without its merge key wipes the merged list, as kyaml does.",
    smp_delete_resource => "smp-delete-resource":
        "`$patch: delete` removes the resource; service ports by port+protocol; \
         externalIPs (no strategy) replaced.",
    smp_custom_resource => "smp-custom-resource":
        "lists of an unknown kind are replaced, but a nested object with apiVersion and kind \
         gets that kind's schema.",
    smp_rename => "smp-rename":
        "allowNameChange renames (and references follow), namespace and kind stay; a targeted \
         patch takes the resource's apiVersion and its labels become strings.",
    smp_no_match => "smp-no-match":
        "a strategic merge patch without target must match a resource.",
    json_operations => "json-operations":
        "add, remove, replace, move, copy, test; ~0/~1 escapes, `-`, negative indices; replace \
         of a missing key adds it; copy of a missing key copies null.",
    json_yaml_patch => "json-yaml-patch":
        "a YAML patch reads as YAML 1.1 (`yes` is true, 0755 is octal); renaming by JSON patch.",
    json_error_test_fails => "json-error-test-fails": "a failed test aborts the build.",
    json_error_move_missing => "json-error-move-missing": "move from a missing key.",
    json_error_remove_missing => "json-error-remove-missing": "remove of a missing key.",
    json_error_invalid_index => "json-error-invalid-index": "negative index beyond the start.",
    json_error_copy_missing_destination => "json-error-copy-missing-destination":
        "copy into a path whose parent is missing.",
    json_error_bad_op => "json-error-bad-op": "an unknown operation.",
    json_error_replace_out_of_range => "json-error-replace-out-of-range":
        "replace past the end of a list.",
    selectors => "selectors":
        "label and annotation selectors, anchored regexes on kind and name, namespace and group.",
}

/// What a patch written inline in a kustomization puts in a resource points at its line in
/// that kustomization (a JSON 6902 `value:`, a strategic merge patch's field), as a patch
/// file's text does.
#[test]
fn inline_patches_point_at_their_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fs::write(
        dir.join("deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          image: web:1\n        - name: sidecar\n          image: sidecar:1\n",
    )
    .unwrap();
    fs::write(
        dir.join("kustomization.yaml"),
        "resources:\n  - deployment.yaml\npatches:\n  - target:\n      kind: Deployment\n    patch: |-\n      - op: replace\n        path: /spec/template/spec/containers/1/image\n        value: sidecar:2\n  - patch: |\n      apiVersion: apps/v1\n      kind: Deployment\n      metadata:\n        name: web\n      spec:\n        template:\n          spec:\n            containers:\n              - name: web\n                image: web:2\n",
    )
    .unwrap();
    let list = plumb_kustomize::build(dir, &BuildOptions::default()).unwrap();
    let containers = list.resources[0]
        .node
        .get_path(&["spec", "template", "spec", "containers"])
        .and_then(|n| n.as_sequence())
        .unwrap();
    let at = |i: usize| {
        let image = containers[i].get("image").unwrap();
        let span = image.span.as_ref().expect("a position");
        let loc = span.location();
        (
            image.scalar_value().unwrap().to_string(),
            span.file
                .path()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned(),
            loc.line,
            loc.column,
            span.text().to_string(),
        )
    };
    let kustomization = "kustomization.yaml".to_string();
    assert_eq!(
        at(0),
        (
            "web:2".into(),
            kustomization.clone(),
            20,
            24,
            "web:2".into()
        )
    );
    assert_eq!(
        at(1),
        ("sidecar:2".into(), kustomization, 9, 16, "sidecar:2".into())
    );
    // The output is what kustomize prints, positions or not.
    let yaml = build_yaml(dir, &BuildOptions::default()).unwrap();
    assert!(
        yaml.contains("image: web:2\n") && yaml.contains("image: sidecar:2\n"),
        "{yaml}"
    );
}
