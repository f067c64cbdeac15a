//! `plumb check` and `plumb explain` on the command line: exit codes (0 clean, 1 error
//! findings, 2 usage or configuration errors), the formats, selection flags, colours.

use assert_cmd::Command;
use std::path::PathBuf;

fn homelab() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/homelab")
}

fn plumb() -> Command {
    let mut cmd = Command::cargo_bin("plumb").expect("the plumb binary");
    cmd.env_remove("SOPS_AGE_KEY_FILE")
        .env_remove("SOPS_AGE_KEY")
        .env_remove("NO_COLOR");
    cmd
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = plumb().args(args).output().expect("plumb runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A repository in a temporary directory: one cluster, `clusters/dev`, holding a ConfigMap.
fn repo(plumb_yaml: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let w = |p: &str, text: &str| {
        let path = dir.path().join(p);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    w(".plumb.yaml", plumb_yaml);
    w("clusters/dev/kustomization.yaml", "resources: [app.yaml]\n");
    w(
        "clusters/dev/app.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\n",
    );
    dir
}

#[test]
fn homelab_dev_is_clean_and_prod_reports_its_placeholders() {
    let root = homelab();
    let root = root.to_str().expect("utf-8 path");
    let (code, stdout, _) = run(&["check", root, "--entry", "clusters/dev", "--color", "never"]);
    // Its charts are not fetched here: what they would install is not checked, and said so.
    assert_eq!(
        (code, stdout.lines().next()),
        (0, Some("No findings.")),
        "{stdout}"
    );
    assert!(
        stdout.contains("not checked for apply order (cert-manager.io/Certificate, ")
            && stdout.contains(
                "their CRDs may come from what was not seen: 5 HelmReleases not rendered."
            ),
        "{stdout}"
    );
    let (code, stdout, _) = run(&[
        "check",
        root,
        "--entry",
        "clusters/prod",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1, "{stdout}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(doc["schema"], "plumb.check/v1");
    let found: Vec<(String, String)> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap_or("").to_string(),
                f["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(found.len(), 4, "{found:?}");
    for (code, message) in &found {
        assert_eq!(code, "SUB002");
        assert!(message.contains("`TBD-PROD-"), "{message}");
    }
}

#[test]
fn exit_zero_select_and_ignore() {
    let root = homelab();
    let root = root.to_str().expect("utf-8 path");
    let prod = ["check", root, "--entry", "clusters/prod"];
    assert_eq!(run(&[&prod[..], &["--exit-zero"]].concat()).0, 0);
    let (code, stdout, _) = run(&[&prod[..], &["--ignore", "SUB"]].concat());
    assert_eq!((code, stdout.lines().next()), (0, Some("No findings.")));
    let (code, stdout, _) = run(&[&prod[..], &["--select", "PIN,ORD"]].concat());
    assert_eq!((code, stdout.lines().next()), (0, Some("No findings.")));
    let (code, stdout, _) = run(&[&prod[..], &["--select", "PIN"]].concat());
    assert_eq!((code, stdout.as_str()), (0, "No findings.\n"));
    let (code, _, stderr) = run(&[&prod[..], &["--select", "SUB02"]].concat());
    assert_eq!(code, 2);
    assert!(stderr.contains("no rule has the code `SUB02`"), "{stderr}");
}

#[test]
fn colours_only_when_asked() {
    let root = homelab();
    let root = root.to_str().expect("utf-8 path");
    let (_, piped, _) = run(&["check", root, "--entry", "clusters/prod"]);
    assert!(!piped.contains('\x1b'));
    let (_, coloured, _) = run(&[
        "check",
        root,
        "--entry",
        "clusters/prod",
        "--color",
        "always",
    ]);
    assert!(
        coloured.contains("\x1b[1;31merror[SUB002]\x1b[0m"),
        "{coloured}"
    );
}

#[test]
fn a_bad_plumb_yaml_exits_2_naming_the_closest_key() {
    let dir = repo("clusters: [clusters/dev]\nrules:\n  ignroe: [PIN]\n");
    let (code, _, stderr) = run(&["check", dir.path().to_str().expect("path")]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains(".plumb.yaml:3: unknown key `ignroe` in `rules`; did you mean `ignore`?"),
        "{stderr}"
    );
    let dir = repo("clusters: [clusters/dev]\nplaceholders: {a: b}\n");
    let (code, _, stderr) = run(&["check", dir.path().to_str().expect("path")]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains(".plumb.yaml:2: `placeholders` must be a list, not a mapping"),
        "{stderr}"
    );
}

#[test]
fn build_errors_are_findings_and_exit_1() {
    let dir = repo("clusters: [clusters/dev]\n");
    std::fs::write(
        dir.path().join("clusters/dev/kustomization.yaml"),
        "resources: [app.yaml, missing.yaml]\n",
    )
    .expect("write");
    let (code, stdout, _) = run(&[
        "check",
        dir.path().to_str().expect("path"),
        "--color",
        "never",
    ]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.starts_with("error[BLD001]: kustomize build failed"),
        "{stdout}"
    );
}

#[test]
fn explain_prints_the_rule_doc_and_the_list() {
    let (code, stdout, _) = run(&["explain", "SUB002"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("SUB002 ("), "{stdout}");
    assert!(stdout.contains("## Why is this bad?"), "{stdout}");
    let (code, stdout, _) = run(&["explain", "--list"]);
    assert_eq!(code, 0);
    for code in ["API001", "BLD001", "IGN001", "ORD006", "SUB004"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(code)),
            "{code} missing:\n{stdout}"
        );
    }
    let (code, _, stderr) = run(&["explain", "SUB0001"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("did you mean `SUB001`?"), "{stderr}");
}
