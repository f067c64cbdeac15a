//! `plumb check` on a repository whose CRD comes from a chart on a real `docker-registry`
//! (through an OCIRepository), rendered by a real helm: the Kustomization that dependsOn the
//! operator's has nothing to report; its twin without the dependsOn reports exactly one ORD002.

#[path = "support/cli.rs"]
mod cli;
#[path = "support/helm.rs"]
mod helm;
#[path = "../../plumb-source/tests/support/registry.rs"]
mod registry;

use cli::write;
use helm::{cluster, helm, package, plumb, run};
use std::path::Path;

/// The chart `widgets` 1.0.0, whose `crds/` installs the Widget CRD, pushed to `registry`.
fn push_chart(tmp: &Path, registry: &registry::Registry) {
    let src = tmp.join("src/widgets");
    write(
        &src,
        "Chart.yaml",
        "apiVersion: v2\nname: widgets\nversion: 1.0.0\n",
    );
    write(
        &src,
        "crds/widgets.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n",
    );
    write(
        &src,
        "templates/sa.yaml",
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: widget-operator}\n",
    );
    let pkg = tmp.join("pkg");
    package(&src, &pkg);
    run(std::process::Command::new(helm())
        .arg("push")
        .arg(pkg.join("widgets-1.0.0.tgz"))
        .arg(format!("oci://{}/charts", registry.host()))
        .arg("--plain-http"));
}

/// `clusters/dev` with an `operators` Kustomization installing the chart, and `apps` (its
/// Widget) depending on it or not.
fn repository(root: &Path, registry: &registry::Registry, depends: bool) {
    cluster(root);
    write(
        root,
        "clusters/dev/operators.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: operators, namespace: flux-system}\nspec:\n  interval: 10m\n  path: ./operators\n  wait: true\n  sourceRef: {kind: GitRepository, name: flux-system}\n",
    );
    if depends {
        write(
            root,
            "clusters/dev/apps.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec:\n  interval: 10m\n  path: ./apps\n  dependsOn: [{name: operators}]\n  sourceRef: {kind: GitRepository, name: flux-system}\n",
        );
    }
    write(
        root,
        "operators/release.yaml",
        &format!("apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {{name: widgets, namespace: flux-system}}\nspec:\n  interval: 1h\n  url: oci://{}/charts/widgets\n  ref: {{tag: 1.0.0}}\n  layerSelector:\n    mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip\n    operation: copy\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: widgets, namespace: flux-system}}\nspec:\n  interval: 1h\n  chartRef: {{kind: OCIRepository, name: widgets}}\n", registry.host()),
    );
    write(
        root,
        "apps/widget.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\n",
    );
}

#[test]
fn a_crd_from_a_registry_chart_is_checked_as_the_cluster_will_have_it() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = registry::Registry::start();
    push_chart(tmp.path(), &registry);
    let cache = tmp.path().join("cache");

    let good = tmp.path().join("good");
    repository(&good, &registry, true);
    let (code, stdout, stderr) = plumb(&good, &cache, &["check", "--color", "never"]);
    assert_eq!(
        (code, stdout.as_str()),
        (Some(0), "No findings.\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 of 1 HelmRelease rendered and checked"),
        "{stderr}"
    );

    let bad = tmp.path().join("bad");
    repository(&bad, &registry, false);
    let (code, stdout, stderr) = plumb(&bad, &cache, &["check", "--format", "json"]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let found: Vec<(&str, &str)> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["code"].as_str().unwrap(), f["file"].as_str().unwrap()))
        .collect();
    assert_eq!(found, [("ORD002", "apps/widget.yaml")], "{stdout}");
    assert_eq!(doc["summary"]["helm_releases"]["checked"], 1);
    assert_eq!(doc["summary"]["by_code"]["ORD002"], 1);
}
