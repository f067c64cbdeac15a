//! `plumb build` on a repository whose cluster flux-operator syncs (a FluxInstance) and whose
//! Kustomization applies a ResourceSet: what the ResourceSet generates is in the output and
//! built, the summary counts it as expanded, and a template error names the ResourceSet's
//! file and line.

#[path = "support/cli.rs"]
mod cli;

use assert_cmd::Command;
use cli::write;
use std::path::Path;

fn plumb(cache: &Path) -> Command {
    let mut cmd = Command::cargo_bin("plumb").expect("the plumb binary");
    cmd.env_remove("SOPS_AGE_KEY_FILE")
        .env_remove("SOPS_AGE_KEY")
        .env("NO_COLOR", "1")
        .env("PLUMB_CONFIG", cache.join("no-user-config.yaml"))
        .env("PLUMB_CACHE_DIR", cache);
    cmd
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().expect("plumb runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const INSTANCE: &str = "apiVersion: fluxcd.controlplane.io/v1
kind: FluxInstance
metadata:
  name: flux
  namespace: flux-system
spec:
  distribution:
    version: \"2.x\"
  sync:
    kind: GitRepository
    url: https://git.example.com/home.git
    ref: refs/heads/main
    path: clusters/home
";

const TENANTS: &str = "apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: tenants
  namespace: flux-system
spec:
  inputs:
    - tenant: team-a
    - tenant: team-b
  resources:
    - apiVersion: kustomize.toolkit.fluxcd.io/v1
      kind: Kustomization
      metadata:
        name: << inputs.tenant >>
        namespace: flux-system
      spec:
        interval: 10m
        path: ./tenants/<< inputs.tenant >>
        prune: true
        sourceRef:
          kind: GitRepository
          name: flux-system
";

fn repository(root: &Path, tenants: &str) {
    write(root, "clusters/home/flux-instance.yaml", INSTANCE);
    write(root, "clusters/home/tenants.yaml", tenants);
    for team in ["team-a", "team-b"] {
        write(
            root,
            &format!("tenants/{team}/namespace.yaml"),
            &format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {team}-ns\n"),
        );
    }
}

#[test]
fn build_prints_what_a_resource_set_generates_and_builds_it() {
    let cache = tempfile::tempdir().expect("temp dir");
    let repo = tempfile::tempdir().expect("temp dir");
    repository(repo.path(), TENANTS);
    let (code, out, err) = run(plumb(cache.path()).arg("build").arg(repo.path()));
    assert_eq!(code, 0, "{err}");
    // The generated Kustomizations, then what each builds.
    for expected in [
        "name: team-a\n",
        "path: ./tenants/team-b",
        "resourceset.fluxcd.controlplane.io/name: tenants",
        "name: team-a-ns",
        "name: team-b-ns",
    ] {
        assert!(out.contains(expected), "{expected:?} missing:\n{out}");
    }
    assert!(err.contains("1 ResourceSet expanded"), "{err}");
    assert!(!err.contains("not expanded"), "{err}");
}

#[test]
fn a_template_error_names_the_file_and_line() {
    let cache = tempfile::tempdir().expect("temp dir");
    let repo = tempfile::tempdir().expect("temp dir");
    repository(
        repo.path(),
        &TENANTS.replace(
            "./tenants/<< inputs.tenant >>",
            "./tenants/<< inputs.team >>",
        ),
    );
    let (code, _out, err) = run(plumb(cache.path()).arg("build").arg(repo.path()));
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("clusters/home/tenants.yaml:18"),
        "no file:line in:\n{err}"
    );
    assert!(err.contains("map has no entry for key \"team\""), "{err}");
}
