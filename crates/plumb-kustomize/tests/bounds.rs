//! Inputs that once took the build minutes or gigabytes: an alias bomb in a resource, a
//! strategic merge patch over tens of thousands of keys, a huge regular expression in a patch
//! target. Each now either builds with the right output or fails with an error that names the
//! file and where in it.

use plumb_kustomize::{build_yaml, BuildOptions, Reorder};
use std::fs;
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) {
    fs::write(dir.join(name), text).unwrap();
}

fn build(dir: &Path) -> Result<String, String> {
    let options = BuildOptions {
        reorder: Reorder::None,
        ..BuildOptions::default()
    };
    build_yaml(dir, &options).map_err(|e| e.to_string())
}

const CONFIG_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n";

/// Eight levels of nine aliases, each level nine copies of the one before.
fn alias_bomb() -> String {
    let mut text = format!("{CONFIG_MAP}data:\n  a: &a [x,x,x,x,x,x,x,x,x]\n");
    for (prev, name) in ('a'..'h').zip('b'..='h') {
        text.push_str(&format!(
            "  {name}: &{name} [{}]\n",
            vec![format!("*{prev}"); 9].join(",")
        ));
    }
    text
}

#[test]
fn an_alias_bomb_in_a_resource_fails_naming_the_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "kustomization.yaml",
        "resources:\n- bomb.yaml\n",
    );
    write(tmp.path(), "bomb.yaml", &alias_bomb());
    let err = build(tmp.path()).unwrap_err();
    assert!(err.contains("excessive aliasing"), "{err}");
    // Keeping the fifth level, `e` on line 10, is where the copies cross the budget.
    assert!(err.contains("bomb.yaml:10:"), "{err}");
}

#[test]
fn a_strategic_merge_patch_over_many_keys_keeps_kustomize_order() {
    // Resource keys in one order, the patch changing every other one, removing one and adding
    // new ones: changed keys stay where they were, new ones follow in sorted order.
    let keys = 20_000;
    let mut resource = format!("{CONFIG_MAP}data:\n");
    for i in (0..keys).rev() {
        resource.push_str(&format!("  k{i:05}: old\n"));
    }
    let mut patch = format!("{CONFIG_MAP}data:\n  k00007: null\n");
    for i in (0..keys).step_by(2) {
        patch.push_str(&format!("  k{i:05}: new\n"));
    }
    patch.push_str("  z2: added\n  z1: added\n");
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "kustomization.yaml",
        "resources:\n- cm.yaml\npatches:\n- path: patch.yaml\n",
    );
    write(tmp.path(), "cm.yaml", &resource);
    write(tmp.path(), "patch.yaml", &patch);
    let out = build(tmp.path()).unwrap();
    let value = &plumb_yaml::parse_documents("out.yaml", &out).unwrap()[0];
    let data = value.get("data").unwrap();
    // The writer sorts keys, so the order kustomize keeps shows in the node, not the text:
    // check the values here, the order through the merge itself below.
    assert_eq!(data.as_mapping().unwrap().len(), keys + 1);
    assert_eq!(data.get("k00002").unwrap().scalar_value(), Some("new"));
    assert_eq!(data.get("k00003").unwrap().scalar_value(), Some("old"));
    assert!(data.get("k00007").is_none());
    assert_eq!(data.get("z1").unwrap().scalar_value(), Some("added"));
}

#[test]
fn strategic_merge_keeps_resource_order_and_appends_new_keys_sorted() {
    use plumb_kustomize::patch::strategic::merge;
    use plumb_kustomize::schema::Schema;
    let node = |t: &str| plumb_yaml::parse_documents("t.yaml", t).unwrap().remove(0);
    let dest = node("c: 1\na: 1\nb: {y: 1, x: 1}\nd: 1\n");
    let patch = node("z: 2\nb: {w: 2, x: 2}\na: null\ny: 2\nc: 2\n");
    let merged = merge(dest, patch, Schema::builtin()).unwrap().unwrap();
    let keys: Vec<&str> = merged.keys().collect();
    assert_eq!(keys, ["c", "b", "d", "y", "z"]);
    let b: Vec<&str> = merged.get("b").unwrap().keys().collect();
    assert_eq!(b, ["y", "x", "w"]);
    assert_eq!(merged.str_at(&["b", "x"]), Some("2"));
    assert_eq!(merged.str_at(&["c"]), Some("2"));
}

fn patch_with_target_name(name: &str) -> String {
    format!(
        "resources:\n- cm.yaml\npatches:\n- target:\n    kind: ConfigMap\n    name: {name}\n  patch: |-\n    - op: replace\n      path: /metadata/name\n      value: renamed\n"
    )
}

#[test]
fn a_huge_target_pattern_is_refused_before_it_is_compiled() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "cm.yaml", CONFIG_MAP);
    let name = "a".repeat(10 << 20);
    write(
        tmp.path(),
        "kustomization.yaml",
        &patch_with_target_name(&name),
    );
    let err = build(tmp.path()).unwrap_err();
    assert!(
        err.contains("kustomization.yaml:5:5: patch target name"),
        "{err}"
    );
    assert!(err.contains("10485760 bytes long"), "{err}");
}

#[test]
fn a_target_pattern_whose_program_is_too_big_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "cm.yaml", CONFIG_MAP);
    // Twenty bytes, a million states.
    write(
        tmp.path(),
        "kustomization.yaml",
        &patch_with_target_name("'(a{1000}){1000}'"),
    );
    let err = build(tmp.path()).unwrap_err();
    assert!(
        err.contains("kustomization.yaml:5:5: patch target name"),
        "{err}"
    );
    assert!(err.contains("exceeds size limit"), "{err}");
}

#[test]
fn an_ordinary_target_pattern_still_selects() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "cm.yaml", CONFIG_MAP);
    write(
        tmp.path(),
        "kustomization.yaml",
        &patch_with_target_name("'ap+|other'"),
    );
    let out = build(tmp.path()).unwrap();
    assert!(out.contains("  name: renamed\n"), "{out}");
}
