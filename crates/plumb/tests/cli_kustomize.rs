//! The binary as a user runs it: `plumb kustomize build` output, errors and exit codes.

use assert_cmd::Command;
use std::fs;
use std::path::Path;

fn plumb() -> Command {
    Command::cargo_bin("plumb").expect("binary built")
}

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

#[test]
fn builds_nested_resources_in_legacy_order() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "kustomization.yaml", "resources:\n- app\n- ns.yaml\n");
    write(
        d,
        "ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n",
    );
    write(d, "app/kustomization.yaml", "resources:\n- cm.yaml\n");
    write(
        d,
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    n: 1\ndata:\n  on: yes\n",
    );
    let out = plumb()
        .args(["kustomize", "build"])
        .arg(d)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n---\napiVersion: v1\ndata:\n  \"on\": \"yes\"\nkind: ConfigMap\nmetadata:\n  annotations:\n    \"n\": \"1\"\n  name: c\n"
    );
    let fifo = plumb()
        .args(["kustomize", "build", "--reorder", "none"])
        .arg(d)
        .output()
        .unwrap();
    let text = String::from_utf8(fifo.stdout).unwrap();
    assert!(text.starts_with("apiVersion: v1\ndata:"), "{text}");
}

#[test]
fn malformed_resource_names_file_line_and_column_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "kustomization.yaml", "resources:\n- bad.yaml\n");
    write(
        d,
        "bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"open\n",
    );
    let out = plumb()
        .args(["kustomize", "build"])
        .arg(d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing half-written on stdout");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("bad.yaml:4:9: "), "{err}");
    assert!(
        err.contains("accumulating resources from 'bad.yaml'"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn kustomize_errors_for_missing_and_ambiguous_files() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let out = plumb()
        .args(["kustomize", "build"])
        .arg(d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unable to find one of 'kustomization.yaml'")
    );

    write(d, "kustomization.yaml", "resources:\n- missing.yaml\n");
    let out = plumb()
        .args(["kustomize", "build"])
        .arg(d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        err.contains("accumulating resources from 'missing.yaml'"),
        "{err}"
    );
    assert!(err.contains("no such file or directory"), "{err}");

    write(d, "Kustomization", "resources: []\n");
    let out = plumb()
        .args(["kustomize", "build"])
        .arg(d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Found multiple kustomization files"));
}

#[test]
fn root_only_restrictor_refuses_files_outside_the_root() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(
        d,
        "outside.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    );
    write(
        d,
        "app/kustomization.yaml",
        "resources:\n- ../outside.yaml\n",
    );
    let out = plumb()
        .args(["kustomize", "build"])
        .arg(d.join("app"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not in or below"));
    let out = plumb()
        .args([
            "kustomize",
            "build",
            "--load-restrictor",
            "LoadRestrictionsNone",
        ])
        .arg(d.join("app"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("name: x"));
}

#[test]
fn unknown_kustomization_field_suggests_the_closest() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "kustomization.yaml", "resources: []\nnamePrefx: a-\n");
    let out = plumb()
        .args(["kustomize", "build"])
        .arg(d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(err.contains("unknown field \"namePrefx\""), "{err}");
    assert!(err.contains("did you mean \"namePrefix\""), "{err}");
    assert!(err.contains("kustomization.yaml:2"), "{err}");
}

#[test]
fn usage_errors_exit_2_and_help_version_completions_work() {
    let out = plumb()
        .args(["kustomize", "build", "--reorder", "sideways"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = plumb().arg("--version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("plumb "));
    let out = plumb().arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("kustomize"));
    let out = plumb().args(["completions", "bash"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("plumb"));
}

#[test]
fn chdir_flag_runs_in_that_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "kustomization.yaml", "resources:\n- cm.yaml\n");
    write(
        d,
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: here\n",
    );
    let out = plumb()
        .arg("-C")
        .arg(d)
        .args(["kustomize", "build"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("name: here"));
}

/// A named case: files to write, and what the error must contain.
type Case = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
);

/// Each malformed or unsupported kustomization fails with kustomize's meaning, the file (and
/// line where kustomize's decoder would know it) and exit status 2; nothing is printed on stdout.
#[test]
fn malformed_kustomizations_fail_with_kustomize_meaning() {
    const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n";
    let cases: &[Case] = &[
        (
            "wrong type",
            &[("kustomization.yaml", "resources: foo\n")],
            &[
                "cannot unmarshal string into Go struct field Kustomization.resources of type []string",
                "kustomization.yaml:1",
            ],
        ),
        (
            "object for a string",
            &[("kustomization.yaml", "resources: []\nnamePrefix:\n  a: b\n")],
            &["Kustomization.namePrefix of type string", "kustomization.yaml:3"],
        ),
        (
            "patch matching nothing",
            &[
                ("kustomization.yaml", "resources:\n- cm.yaml\npatches:\n- patch: |-\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: missing\n"),
                ("cm.yaml", CM),
            ],
            &["no resource matches strategic merge patch", "missing"],
        ),
        (
            "cycle",
            &[("kustomization.yaml", "resources:\n- sub\n"), ("sub/kustomization.yaml", "resources:\n- ..\n")],
            &["cycle detected"],
        ),
        (
            "helm chart",
            &[("kustomization.yaml", "resources: []\nhelmCharts:\n- name: podinfo\n  version: 6.7.1\n")],
            &["kustomization.yaml:2: helmCharts", "does not render Helm charts"],
        ),
        (
            "exec plugin",
            &[
                ("kustomization.yaml", "transformers:\n- t.yaml\n"),
                ("t.yaml", "apiVersion: example.com/v1\nkind: ChartInflator\nmetadata:\n  name: x\n"),
            ],
            &["example.com/v1/ChartInflator", "exec and Go plugins are not run"],
        ),
        (
            "remote resource",
            &[("kustomization.yaml", "resources:\n- https://github.com/org/repo//base?ref=v1\n")],
            &[
                "remote resource https://github.com/org/repo//base?ref=v1",
                "is not in the cache",
                "offline mode forbids fetching it",
            ],
        ),
    ];
    for (name, files, expected) in cases {
        let tmp = tempfile::tempdir().unwrap();
        for (path, text) in *files {
            write(tmp.path(), path, text);
        }
        // Offline on an empty cache: a remote entry is not fetched, and nothing reaches the network.
        let out = plumb()
            .args(["kustomize", "build", "--offline", "--cache-dir"])
            .arg(tmp.path().join("cache"))
            .arg(tmp.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}");
        assert!(out.stdout.is_empty(), "{name}: nothing on stdout");
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        for want in *expected {
            assert!(err.contains(want), "{name}: {err:?} lacks {want:?}");
        }
    }
}

/// Eight levels of nine aliases: about 9^8 nodes expanded, which used to run the process out of
/// memory (exit 134).
fn alias_bomb() -> String {
    let mut text = String::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  a: &a [x,x,x,x,x,x,x,x,x]\n",
    );
    for (prev, name) in ('a'..'h').zip('b'..='h') {
        let items = vec![format!("*{prev}"); 9].join(",");
        text.push_str(&format!("  {name}: &{name} [{items}]\n"));
    }
    text
}

#[test]
fn alias_bomb_is_an_error_with_file_and_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "kustomization.yaml", "resources:\n- bomb.yaml\n");
    write(d, "bomb.yaml", &alias_bomb());
    let out = plumb()
        .args(["kustomize", "build"])
        .arg(d)
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty(), "nothing half-written on stdout");
    // Line 10 holds `e`, the level whose copies cross the alias budget.
    assert!(err.contains("bomb.yaml:10:"), "{err}");
    assert!(err.contains("excessive aliasing"), "{err}");
}
