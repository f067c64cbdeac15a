//! `plumb build` with a GitRepository in another repository, served by a real `git daemon` on
//! loopback: fetched into the cache and built; built again `--offline` with the server stopped;
//! unavailable, naming the URL, when nothing serves it.

#[path = "../../plumb-source/tests/support/git_server.rs"]
mod git_server;

use assert_cmd::Command;
use git_server::{free_port, Daemon, Repo};
use std::fs;
use std::path::Path;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// A cluster whose `crds` Kustomization builds `./crds` of the GitRepository at `url`.
fn flux_repo(root: &Path, url: &str) {
    write(
        root,
        "clusters/dev/sources.yaml",
        &format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {{name: crds, namespace: flux-system}}\nspec:\n  url: {url}\n  ref: {{branch: main}}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: crds, namespace: flux-system}}\nspec:\n  path: ./crds\n  sourceRef: {{kind: GitRepository, name: crds}}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: apps, namespace: flux-system}}\nspec:\n  path: ./apps\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n"
        ),
    );
    write(
        root,
        "apps/ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n",
    );
}

fn build(repo: &Path, cache: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::cargo_bin("plumb")
        .unwrap()
        .args(["build", "-v", "-o", "names", "--cache-dir"])
        .arg(cache)
        .args(extra)
        .arg(repo)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_git_repository_elsewhere_is_fetched_cached_and_built_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let upstream = Repo::init(&served, "crds.git", "main");
    upstream.write(
        "crds/crontab.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched-from-git, namespace: default}\n",
    );
    upstream.commit("crds");
    let mut daemon = Daemon::start(&served);
    let repo = tmp.path().join("repo");
    flux_repo(&repo, &daemon.url("crds.git"));
    let cache = tmp.path().join("cache");

    let (code, out, err) = build(&repo, &cache, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ConfigMap/default/fetched-from-git"), "{out}");
    assert!(err.contains("3 built, 0 failed, 0 not built"), "{err}");

    daemon.stop();
    let (code, out, err) = build(&repo, &cache, &["--offline"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ConfigMap/default/fetched-from-git"), "{out}");
}

#[test]
fn a_git_repository_nothing_serves_is_unavailable_with_its_url() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let url = format!("git://127.0.0.1:{}/crds.git", free_port());
    flux_repo(&repo, &url);
    let (code, out, err) = build(&repo, &tmp.path().join("cache"), &[]);
    // Not an error of the repository: exit 0, and the summary counts it apart.
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Namespace//apps"), "{out}");
    assert!(err.contains(&format!("unavailable flux-system/crds (crds): source GitRepository/flux-system/crds ({url}) is unavailable")), "{err}");
    assert!(
        err.contains("1 unavailable (source could not be fetched)"),
        "{err}"
    );
    let (_, _, err) = build(&repo, &tmp.path().join("empty-cache"), &["--offline"]);
    assert!(err.contains("is unavailable"), "{err}");
}
