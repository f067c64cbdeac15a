//! `plumb build` with a Kustomization whose source is an OCIRepository on a real
//! `docker-registry` started on loopback: fetched into the cache and built; built again
//! `--offline` with the registry stopped; unavailable, naming the URL, when nothing serves it;
//! credentials from the `.dockerconfigjson` of the source's secretRef.

#[path = "support/cli.rs"]
mod cli;
#[path = "../../plumb-source/tests/support/registry.rs"]
mod registry;

use cli::{plumb_build, write};
use registry::{base64, free_port, Registry, TokenProxy};
use std::fs;
use std::path::Path;

/// A cluster whose `platform` Kustomization builds `./deploy` of the OCIRepository at `url`.
fn flux_repo(root: &Path, url: &str) {
    write(
        root,
        "clusters/dev/sources.yaml",
        &format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {{name: platform, namespace: flux-system}}\nspec:\n  interval: 10m\n  url: {url}\n  ref: {{tag: v1.0.0}}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: platform, namespace: flux-system}}\nspec:\n  path: ./deploy\n  sourceRef: {{kind: OCIRepository, name: platform}}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: apps, namespace: flux-system}}\nspec:\n  path: ./apps\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n"
        ),
    );
    write(
        root,
        "apps/ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n",
    );
}

fn build(repo: &Path, cache: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    // No registry credentials from the user running the tests.
    let docker = repo.join(".no-docker-config");
    plumb_build(repo, cache, extra, &[("DOCKER_CONFIG", docker.as_os_str())])
}

#[test]
fn an_oci_repository_is_fetched_cached_and_built_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let mut registry = Registry::start();
    registry.push_files(
        "platform",
        "v1.0.0",
        &[
            (
                "deploy/config.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched-from-oci, namespace: default}\n",
            ),
            ("other/ignored.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n"),
        ],
    );
    let repo = tmp.path().join("repo");
    flux_repo(&repo, &registry.url("platform"));
    let cache = tmp.path().join("cache");

    let (code, out, err) = build(&repo, &cache, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ConfigMap/default/fetched-from-oci"), "{out}");
    assert!(!out.contains("Namespace//other"), "{out}");
    assert!(err.contains("3 built, 0 failed, 0 not built"), "{err}");

    registry.stop();
    let (code, out, err) = build(&repo, &cache, &["--offline"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ConfigMap/default/fetched-from-oci"), "{out}");
    assert!(err.contains("3 built, 0 failed, 0 not built"), "{err}");
}

#[test]
fn an_oci_repository_nothing_serves_is_unavailable_with_its_url() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let url = format!("oci://127.0.0.1:{}/platform", free_port());
    flux_repo(&repo, &url);
    let (code, out, err) = build(&repo, &tmp.path().join("cache"), &[]);
    // The build is incomplete: exit 1 as for git, and the summary counts it apart from failures.
    assert_eq!(code, Some(1), "{err}");
    assert!(out.contains("Namespace//apps"), "{out}");
    assert!(
        err.contains(&format!(
            "unavailable flux-system/platform (deploy): source OCIRepository/flux-system/platform ({url}) is unavailable"
        )),
        "{err}"
    );
    assert!(
        err.contains("1 unavailable (source could not be fetched)"),
        "{err}"
    );
    let (_, _, err) = build(&repo, &tmp.path().join("empty-cache"), &["--offline"]);
    assert!(
        err.contains("is unavailable") && err.contains("offline"),
        "{err}"
    );
}

#[test]
fn the_secret_ref_dockerconfigjson_gives_the_registry_credentials() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    registry.push_files(
        "platform",
        "v1.0.0",
        &[(
            "deploy/config.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: behind-a-token, namespace: default}\n",
        )],
    );
    let proxy = TokenProxy::start(registry.port, Some("bot:t0ken-pass"), 100);
    let url = proxy.url("platform");
    let repo = tmp.path().join("repo");
    flux_repo(&repo, &url);
    let cache = tmp.path().join("cache");

    // Without the Secret: the token service refuses anonymous access, the source is unavailable.
    let (code, _, err) = build(&repo, &cache, &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("is unavailable") && err.contains(&url),
        "{err}"
    );

    let config = format!(
        r#"{{"auths":{{"127.0.0.1:{}":{{"auth":"{}"}}}}}}"#,
        proxy.port,
        base64("bot:t0ken-pass")
    );
    write(
        &repo,
        "clusters/dev/secret.yaml",
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: regcred, namespace: flux-system}}\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {}\n",
            base64(&config)
        ),
    );
    let sources = repo.join("clusters/dev/sources.yaml");
    let text = fs::read_to_string(&sources).unwrap();
    fs::write(
        &sources,
        text.replace(
            "  ref: {tag: v1.0.0}\n",
            "  ref: {tag: v1.0.0}\n  secretRef: {name: regcred}\n",
        ),
    )
    .unwrap();
    let (code, out, err) = build(&repo, &cache, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ConfigMap/default/behind-a-token"), "{out}");
    assert!(!err.contains("t0ken-pass"), "{err}");
}
