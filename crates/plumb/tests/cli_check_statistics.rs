//! `plumb check --statistics`: one line per code (count, code, summary), most frequent first,
//! as text and as a JSON array; the same findings and exit code as without the flag; nothing
//! for a clean repository; a usage error with the formats it does not print.

use assert_cmd::Command;
use serde_json::{json, Value};

fn run(repo: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::cargo_bin("plumb")
        .unwrap()
        .arg("check")
        .arg(repo)
        .args(args)
        .env_remove("SOPS_AGE_KEY_FILE")
        .env_remove("SOPS_AGE_KEY")
        .env("PLUMB_CONFIG", repo.join("no-user-config.yaml"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One cluster whose Deployment has two images without digest, and a plaintext Secret.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let w = |p: &str, text: &str| {
        let path = dir.path().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    w(".plumb.yaml", "clusters: [clusters/dev]\n");
    w(
        "clusters/dev/kustomization.yaml",
        "resources: [app.yaml, secret.yaml]\n",
    );
    w(
        "clusters/dev/app.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: default\nspec:\n  selector:\n    matchLabels: {app: app}\n  template:\n    metadata:\n      labels: {app: app}\n    spec:\n      containers:\n        - name: web\n          image: nginx:1.27\n        - name: sidecar\n          image: busybox:1.36\n",
    );
    w(
        "clusters/dev/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: default\nstringData:\n  password: hunter2\n",
    );
    dir
}

#[test]
fn statistics_count_the_findings_by_code_most_frequent_first() {
    let repo = repo();
    let (code, findings, _) = run(repo.path(), &["--format", "json"]);
    let doc: Value = serde_json::from_str(&findings).unwrap();
    let mut counted: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    counted.sort();
    assert_eq!(counted, ["PIN001", "PIN001", "SEC001"], "{doc:#}");

    let (stats_code, text, stderr) = run(repo.path(), &["--statistics"]);
    assert_eq!(stats_code, code, "{stderr}");
    assert_eq!(code, 1);
    assert_eq!(
        text,
        "    2  PIN001  a container image referenced by tag only, not by digest\n    1  SEC001  a Secret with plaintext `data`/`stringData` committed in Git\n"
    );

    let (json_code, text, _) = run(repo.path(), &["--statistics", "--format", "json"]);
    assert_eq!(json_code, 1);
    let stats: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        stats,
        json!([
            {"code": "PIN001", "count": 2, "summary": "a container image referenced by tag only, not by digest"},
            {"code": "SEC001", "count": 1, "summary": "a Secret with plaintext `data`/`stringData` committed in Git"},
        ])
    );

    // Selection applies as without the flag; --exit-zero too.
    let (code, text, _) = run(
        repo.path(),
        &["--statistics", "--select", "SEC", "--exit-zero"],
    );
    assert_eq!(code, 0);
    assert_eq!(
        text,
        "    1  SEC001  a Secret with plaintext `data`/`stringData` committed in Git\n"
    );

    // Nothing found: no line, an empty array, exit 0.
    let (code, text, _) = run(repo.path(), &["--statistics", "--select", "ORD"]);
    assert_eq!((code, text.as_str()), (0, ""));
    let (_, text, _) = run(
        repo.path(),
        &["--statistics", "--select", "ORD", "--format", "json"],
    );
    assert_eq!(text, "[]\n");

    let (code, text, stderr) = run(repo.path(), &["--statistics", "--format", "sarif"]);
    assert_eq!((code, text.as_str()), (2, ""));
    assert!(stderr.contains("--statistics"), "{stderr}");
}
