//! A Kustomization needing a Secret or source that only a Kustomization which was not built
//! may hold is not built either, for that reason: whether the object exists is not known.
//! tscibilia/home-ops: dragonfly-cluster substitutes from the Secret an ExternalSecret of
//! dragonfly-operator creates, and dragonfly-operator lists a remote CRD that could not be
//! fetched; dragonfly-cluster was reported failed ("no Kustomization of this cluster
//! produces it").

use plumb_flux::build::{build_repository, Options, Status};
use std::path::Path;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A repository whose `clusters/dev`, synced in the `flux bootstrap` layout, holds the Flux
/// Kustomizations `apps`.
fn repo(apps: &str) -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    write(root, "clusters/dev/apps.yaml", apps);
    write(
        root,
        "clusters/dev/flux-system/gotk-sync.yaml",
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: flux-system, namespace: flux-system}\nspec:\n  url: https://example.com/ops\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: flux-system, namespace: flux-system}\nspec:\n  path: ./clusters/dev\n  sourceRef: {kind: GitRepository, name: flux-system}\n",
    );
    repo
}

/// The status of Kustomization `database/app` when the operator's targetNamespace is `target`.
fn app_status(target: &str) -> Status {
    let repo = repo(&format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: operator, namespace: database}}\nspec:\n  path: ./operator\n  targetNamespace: {target}\n  sourceRef: {{kind: GitRepository, name: flux-system, namespace: flux-system}}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: app, namespace: database}}\nspec:\n  path: ./app\n  dependsOn: [{{name: operator}}]\n  sourceRef: {{kind: GitRepository, name: flux-system, namespace: flux-system}}\n  postBuild:\n    substituteFrom:\n      - {{kind: Secret, name: db-secret}}\n"));
    let root = repo.path();
    write(
        root,
        "operator/kustomization.yaml",
        "resources:\n  - https://example.invalid/operator/crd.yaml\n  - ./externalsecret.yaml\n",
    );
    write(
        root,
        "operator/externalsecret.yaml",
        "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata: {name: db-secret}\nspec:\n  data:\n    - {secretKey: PASSWORD, remoteRef: {key: db}}\n",
    );
    write(
        root,
        "app/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: database}\ndata:\n  password: ${PASSWORD}\n",
    );
    let build = build_repository(root, &Options::default()).expect("the repository builds");
    let entry = &build.entries[0];
    let operator = entry
        .kustomizations
        .iter()
        .find(|k| k.key() == "database/operator")
        .expect("the operator's Kustomization");
    assert!(
        matches!(operator.status, Status::NotBuilt(_)),
        "{:?}",
        operator.status
    );
    entry
        .kustomizations
        .iter()
        .find(|k| k.key() == "database/app")
        .expect("the app's Kustomization")
        .status
        .clone()
}

#[test]
fn a_secret_only_an_unbuilt_kustomization_may_hold_leaves_its_user_unbuilt() {
    match app_status("database") {
        Status::NotBuilt(why) => assert_eq!(
            why,
            "substituteFrom Secret database/db-secret may be an object of Kustomization database/operator, which was not built: what it holds is not known"
        ),
        other => panic!("{other:?}"),
    }
    // Its twin's operator puts every object in another namespace: the Secret is missing.
    assert_eq!(app_status("cache"), Status::Failed);
}

#[test]
fn a_source_only_an_unbuilt_kustomization_may_hold_leaves_its_user_unbuilt() {
    let repo = repo(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: sources, namespace: flux-system}\nspec:\n  path: ./sources\n  sourceRef: {kind: GitRepository, name: flux-system}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: app, namespace: flux-system}\nspec:\n  path: ./deploy\n  sourceRef: {kind: GitRepository, name: app-repo}\n",
    );
    let root = repo.path();
    write(
        root,
        "sources/kustomization.yaml",
        "resources:\n  - https://example.invalid/sources.yaml\n",
    );
    let build = build_repository(root, &Options::default()).expect("the repository builds");
    let app = build.entries[0]
        .kustomizations
        .iter()
        .find(|k| k.key() == "flux-system/app")
        .expect("the app's Kustomization");
    assert_eq!(
        app.status,
        Status::NotBuilt("source GitRepository/flux-system/app-repo may be an object of Kustomization flux-system/sources, which was not built: what it holds is not known".into())
    );
}
