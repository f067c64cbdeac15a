//! `plumb verify` as a user runs it, against the in-process API server of plumb-live's tests
//! holding the homelab cluster in sync (plumb-live/tests/support): exit 0 with every check
//! passing, 1 with a suspended Kustomization shown with its evidence, 2 when the API cannot be
//! reached; the JSON document's shape.

#[path = "support/cli.rs"]
mod cli;
#[path = "../../plumb-live/tests/support/cluster.rs"]
mod cluster;
#[path = "../../plumb-live/tests/support/fake_api.rs"]
mod fake_api;
#[path = "support/git.rs"]
mod git;
#[path = "support/schema.rs"]
mod schema;

use assert_cmd::Command;
use cli::copy_dir;
use cluster::{homelab, in_sync, item};
use fake_api::FakeApi;
use git::git;
use serde_json::{json, Value};
use std::path::Path;

/// A copy of examples/homelab outside any git checkout (so no commit is expected of it).
fn homelab_copy(dir: &Path) -> std::path::PathBuf {
    let to = dir.join("homelab");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/homelab"),
        &to,
    );
    to
}

fn verify(repo: &Path, kubeconfig: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::cargo_bin("plumb")
        .unwrap()
        .args([
            "verify",
            "--color",
            "never",
            "--no-helm",
            "--offline",
            "--entry",
            "clusters/dev",
        ])
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(repo.join(".cache"))
        .args(extra)
        .arg(repo)
        .env("PLUMB_CONFIG", repo.join("no-user-config.yaml"))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn in_sync_passes_a_suspended_kustomization_fails_and_no_api_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let repo = homelab_copy(dir.path());
    let entry = homelab();

    let api = FakeApi::start(in_sync(&entry));
    let (code, text, stderr) = verify(&repo, &api.kubeconfig(dir.path()), &[]);
    assert_eq!(code, Some(0), "{text}\n{stderr}");
    // The summary line: checks, requests and the seconds the cluster part took.
    eprintln!("{stderr}");
    assert!(
        text.contains("✓ Kustomization flux-system/platform"),
        "{text}"
    );
    assert!(!text.contains('✗'), "{text}");
    let (code, json_text, _) = verify(&repo, &api.kubeconfig(dir.path()), &["-o", "json"]);
    assert_eq!(code, Some(0));
    let doc: Value = serde_json::from_str(&json_text).unwrap();
    assert_eq!(doc["schema"], "plumb.verify/v1");
    let errors = schema::schema_errors(
        "verify.schema.json",
        &[("verify".into(), json_text.clone())],
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(doc["summary"]["fail"], 0);
    assert!(doc["checks"].as_array().unwrap().len() > 50, "{doc}");
    // Reads only, and no kind listed twice.
    let requests = api.requests();
    assert!(
        requests.iter().all(|r| r.starts_with("GET ")),
        "{requests:?}"
    );

    let mut state = in_sync(&entry);
    item(&mut state, "Kustomization", "apps-wave-0")["spec"]["suspend"] = json!(true);
    let api = FakeApi::start(state);
    let (code, text, _) = verify(&repo, &api.kubeconfig(dir.path()), &[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("✗ Kustomization flux-system/apps-wave-0\n      spec.suspend: true"),
        "{text}"
    );

    // A refusal names the permission the credentials lack.
    let mut state = in_sync(&entry);
    state
        .forbidden
        .push("/apis/helm.toolkit.fluxcd.io/v2/helmreleases".into());
    let api = FakeApi::start(state);
    let (code, text, stderr) = verify(&repo, &api.kubeconfig(dir.path()), &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        stderr.contains(
            "the credentials need `list` on `helmreleases.helm.toolkit.fluxcd.io` at cluster scope"
        ),
        "{stderr}"
    );

    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let gone = dir.path().join("gone");
    std::fs::write(&gone, format!("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{port}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n")).unwrap();
    let (code, text, stderr) = verify(&repo, &gone, &[]);
    assert_eq!(code, Some(2));
    assert!(text.is_empty());
    assert!(
        stderr.contains(&format!(
            "cannot reach the Kubernetes API at http://127.0.0.1:{port}"
        )),
        "{stderr}"
    );
}

#[test]
fn the_git_host_is_asked_only_with_a_token_and_an_unreachable_one_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let repo = homelab_copy(dir.path());
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "homelab"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    // The cluster runs that commit.
    let mut state = in_sync(&homelab());
    for k in &mut state.kinds {
        for i in &mut k.items {
            let text = i.to_string().replace(cluster::COMMIT, &head);
            *i = serde_json::from_str(&text).unwrap();
        }
    }
    let api = FakeApi::start(state);
    let kubeconfig = api.kubeconfig(dir.path());

    let (code, text, stderr) = verify(&repo, &kubeconfig, &[]);
    assert_eq!(code, Some(0), "{text}\n{stderr}");
    assert!(
        stderr.contains("was not asked: set GITEA_TOKEN or FORGEJO_TOKEN"),
        "{stderr}"
    );

    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let out = Command::cargo_bin("plumb")
        .unwrap()
        .args([
            "verify",
            "--no-helm",
            "--offline",
            "--entry",
            "clusters/dev",
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        .arg("--cache-dir")
        .arg(repo.join(".cache"))
        .args(["--git-host", &format!("gitea+http://127.0.0.1:{port}")])
        .arg(&repo)
        .env("PLUMB_CONFIG", repo.join("no-user-config.yaml"))
        .env("GITEA_TOKEN", "secret-gitea-token")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
    assert!(!stderr.contains("secret-gitea-token"), "{stderr}");
}

#[test]
fn a_claim_is_proven_or_fails_never_assumed() {
    let dir = tempfile::tempdir().unwrap();
    let repo = homelab_copy(dir.path());
    let config = repo.join(".plumb.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("claims:\n  branchProtected: true\n  ready: [flux-system/platform, flux-system/monitoring]\n");
    std::fs::write(&config, text).unwrap();
    let api = FakeApi::start(in_sync(&homelab()));
    let (code, text, stderr) = verify(&repo, &api.kubeconfig(dir.path()), &[]);
    assert_eq!(code, Some(1), "{text}\n{stderr}");
    assert!(
        text.contains("✓ ready: Kustomization flux-system/platform"),
        "{text}"
    );
    assert!(
        text.contains("✗ ready: Kustomization flux-system/monitoring\n      not in the cluster"),
        "{text}"
    );
    // Nothing asked the Git host (no token): the claim is not proven, so it fails.
    assert!(
        text.contains("✗ branchProtected: the default branch is protected\n      not proven: "),
        "{text}"
    );
}
