//! What the CLI tests of HelmReleases and helmfile releases share: the real helm the test
//! command installs (its absence fails the test), running it, `helm package`, reading helm's
//! output, running plumb with that helm and no user configuration, and a repository synced by
//! `flux bootstrap` with an `apps` Kustomization.

#![allow(dead_code)]

use super::cli::write;
use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The helm the test command installs; its absence fails the test.
pub fn helm() -> PathBuf {
    let path = std::env::var_os("PLUMB_HELM").map(PathBuf::from).expect(
        "PLUMB_HELM is not set: run scripts/ensure-helm and export PLUMB_HELM (scripts/test does)",
    );
    assert!(
        path.is_file(),
        "PLUMB_HELM {} is not a file: run scripts/ensure-helm",
        path.display()
    );
    path
}

/// The stdout of a command that must succeed.
pub fn run(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().expect("helm runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `helm package` of the chart at `dir` into `out`; the archive's path.
pub fn package(dir: &Path, out: &Path) -> PathBuf {
    let text = run(std::process::Command::new(helm())
        .arg("package")
        .arg(dir)
        .arg("-d")
        .arg(out));
    PathBuf::from(text.trim().rsplit(": ").next().unwrap())
}

/// The sha256 of `bytes`, in hex, as a Helm repository index gives it.
pub fn digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The objects of a YAML stream (helm's output), as JSON.
pub fn objects_of(text: &str) -> Vec<Value> {
    plumb_yaml::parse_documents("helm.yaml", text)
        .unwrap()
        .iter()
        .map(|d| plumb_yaml::to_json(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

/// `plumb ARGS --cache-dir CACHE REPO` with the test helm, no user configuration and no
/// registry credentials of the user running the tests: exit code, stdout, stderr.
pub fn plumb(repo: &Path, cache: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::cargo_bin("plumb")
        .unwrap()
        .args(args)
        .arg("--cache-dir")
        .arg(cache)
        .arg(repo)
        .env("PLUMB_CONFIG", cache.join("no-user-config.yaml"))
        .env("PLUMB_HELM", helm())
        .env("DOCKER_CONFIG", repo.join(".no-docker-config"))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `plumb build -v -o json EXTRA` on `repo`: exit code, the JSON document, stderr.
pub fn build_json(repo: &Path, cache: &Path, extra: &[&str]) -> (Option<i32>, Value, String) {
    let args: Vec<&str> = ["build", "-v", "-o", "json"]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    let (code, stdout, stderr) = plumb(repo, cache, &args);
    let doc = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (code, doc, stderr)
}

/// `flux bootstrap`'s sync of `clusters/dev`, and its Kustomization of `./apps`.
pub fn cluster(root: &Path) {
    write(
        root,
        "clusters/dev/flux-system/gotk-sync.yaml",
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: flux-system, namespace: flux-system}\nspec:\n  interval: 1m\n  url: ssh://git@example.com/platform\n  ref: {branch: main}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: flux-system, namespace: flux-system}\nspec:\n  interval: 10m\n  path: ./clusters/dev\n  sourceRef: {kind: GitRepository, name: flux-system}\n",
    );
    write(
        root,
        "clusters/dev/apps.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec:\n  interval: 10m\n  path: ./apps\n  sourceRef: {kind: GitRepository, name: flux-system}\n",
    );
}
