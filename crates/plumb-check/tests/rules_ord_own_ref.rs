//! The apply-order, ownership and reference rules on their fixture repositories: each `bad`
//! repository gives exactly one finding of its code, at the offending text, and its `good`
//! twin gives none of this area's findings.

mod common;

use common::{fixture, place};
use plumb_check::{CheckConfig, Finding};
use std::path::Path;

const CODES: &[&str] = &[
    "ORD001", "ORD002", "ORD003", "ORD004", "ORD005", "ORD006", "OWN001", "REF001",
];

/// This area's findings on a fixture repository.
fn findings(root: &Path) -> Vec<Finding> {
    let config = CheckConfig::load(root).unwrap();
    common::findings(root, &[], &config, |code| CODES.contains(&code))
}

/// `CODE file:line:column` of each finding (`CODE ` alone for one without a location).
fn code_places(found: &[Finding]) -> Vec<String> {
    found
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f.code,
                f.location.as_ref().map(place).unwrap_or_default()
            )
        })
        .collect()
}

/// Asserts the one finding of `bad` and none in `good`; returns the finding.
fn one(code: &str, at: &str) -> Finding {
    let found = findings(&fixture(code, "bad"));
    let places = code_places(&found);
    assert_eq!(places, [format!("{code} {at}")], "{found:#?}");
    let good = findings(&fixture(code, "good"));
    assert!(good.is_empty(), "{code}/good: {good:#?}");
    found.into_iter().next().unwrap()
}

/// The secondary span's `file:line`.
fn related(f: &Finding) -> String {
    let l = &f.related[0].location;
    format!("{}:{}", l.file.display(), l.line)
}

#[test]
fn ord001_a_kind_nothing_defines() {
    let f = one("ORD001", "issuers/cluster-issuer.yaml:2:7");
    assert!(
        f.message.contains("`ClusterIssuer` (certmanager.io/v1)"),
        "{}",
        f.message
    );
    assert_eq!(f.chain, ["flux-system/flux-system", "flux-system/issuers"]);
}

#[test]
fn ord002_a_crd_from_a_kustomization_not_depended_on() {
    let f = one("ORD002", "platform-config/kubevirt.yaml:2:7");
    assert_eq!(related(&f), "platform/kubevirt/crd.yaml:8");
    assert!(
        f.help.contains("{name: platform, namespace: flux-system}"),
        "{}",
        f.help
    );
}

#[test]
fn ord003_a_crd_from_a_helm_release_beside_it() {
    let f = one("ORD003", "platform/cluster-issuer.yaml:2:7");
    assert_eq!(related(&f), "platform/cert-manager/release.yaml:10");
}

#[test]
fn ord004_a_runtime_crd_beside_its_creator() {
    let f = one("ORD004", "platform-config/golden-images.yaml:2:7");
    assert_eq!(related(&f), "platform-config/cdi.yaml:2");
}

#[test]
fn ord005_a_dependency_that_does_not_exist() {
    let f = one("ORD005", "clusters/dev/kustomizations.yaml:29:13");
    assert!(
        f.message.contains("flux-system/infrastructure"),
        "{}",
        f.message
    );
}

#[test]
fn ord006_a_dependency_cycle() {
    let f = one("ORD006", "clusters/dev/kustomizations.yaml:31:7");
    assert!(
        f.message
            .contains("flux-system/apps → flux-system/infra → flux-system/apps"),
        "{}",
        f.message
    );
}

#[test]
fn own001_an_object_with_two_writers() {
    let f = one("OWN001", "apps/grafana-dashboards/namespace.yaml:4:9");
    assert_eq!(related(&f), "infra/namespace.yaml:4");
    assert_eq!(f.chain, ["flux-system/flux-system", "flux-system/apps"]);
}

#[test]
fn ref001_a_chart_ref_to_nothing() {
    let f = one("REF001", "apps/podinfo/release.yaml:10:11");
    assert!(
        f.message.contains("OCIRepository/podinfo/podinfo-chart"),
        "{}",
        f.message
    );
}

#[test]
fn ref001_values_from_a_secret_a_database_cluster_writes() {
    // angelnu/k8s-gitops: HelmReleases take their database settings from the `-app` Secret
    // CloudNativePG writes for a Cluster. It exists once the Cluster runs: nothing to report.
    // The same release taking keys from a Secret nothing creates is one finding, however
    // many entries name it.
    let root = common::fresh_copy(&fixture("REF001", "good"), "ref001-cnpg");
    common::write(
        &root,
        "apps/podinfo/database.yaml",
        "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: podinfo-db\n  namespace: podinfo\nspec:\n  instances: 1\n",
    );
    common::edit(
        &root,
        "apps/podinfo/kustomization.yaml",
        "  - release.yaml\n",
        "  - release.yaml\n  - database.yaml\n",
    );
    common::edit(
        &root,
        "apps/podinfo/release.yaml",
        "  values:\n",
        "  valuesFrom:\n    - {kind: Secret, name: podinfo-db-app, valuesKey: host, targetPath: db.host}\n    - {kind: Secret, name: podinfo-db-app, valuesKey: password, targetPath: db.password}\n  values:\n",
    );
    let found = findings(&root);
    assert!(code_places(&found).is_empty(), "{found:#?}");
    common::edit(
        &root,
        "apps/podinfo/release.yaml",
        "  values:\n",
        "    - {kind: Secret, name: missing, valuesKey: a, targetPath: a}\n    - {kind: Secret, name: missing, valuesKey: b, targetPath: b}\n  values:\n",
    );
    let found = findings(&root);
    assert_eq!(
        code_places(&found),
        ["REF001 apps/podinfo/release.yaml:14:28"],
        "{found:#?}"
    );
    assert!(
        found[0].message.contains("Secret podinfo/missing"),
        "{}",
        found[0].message
    );
}

/// A repository whose `apps` objects include a `Widget` no CRD defines, beside a HelmRelease
/// of a chart the build cannot render here (no helm, no fetcher) and the table does not know.
fn unseen_provider_repo(name: &str, with_release: bool) -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&root);
    let write = |rel: &str, text: &str| common::write(&root, rel, text);
    write(
        "clusters/dev/objects.yaml",
        "apiVersion: widgets.example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\n",
    );
    if with_release {
        write(
            "clusters/dev/release.yaml",
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: charts, namespace: default}\nspec:\n  url: https://charts.example.com\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: widgets, namespace: default}\nspec:\n  chart:\n    spec:\n      chart: widget-operator\n      sourceRef: {kind: HelmRepository, name: charts}\n",
        );
    }
    root
}

#[test]
fn ord001_is_silent_when_what_may_provide_the_kind_was_not_seen() {
    let root = unseen_provider_repo("ord001-unseen", true);
    let config = CheckConfig::load(&root).unwrap();
    let build = plumb_flux::build::build_repository(
        &root,
        &plumb_flux::build::Options {
            entries: vec!["clusters/dev".into()],
            ..Default::default()
        },
    )
    .unwrap();
    let report = plumb_check::Report::run(&build, &config, &plumb_check::Selection::default());
    assert!(
        report.findings.iter().all(|f| f.code != "ORD001"),
        "{:#?}",
        report.findings
    );
    assert_eq!(report.unchecked_kinds, ["widgets.example.com/Widget"]);
    let text = plumb_check::render::text::render(
        &mut { report },
        plumb_check::render::text::TextOptions { color: false },
    );
    assert!(text.contains("1 kind not checked"), "{text}");

    // Its twin, with nothing unseen: the same kind is ORD001.
    let root = unseen_provider_repo("ord001-unseen-twin", false);
    let found = common::findings(&root, &["clusters/dev"], &config, |c| c == "ORD001");
    assert_eq!(found.len(), 1, "{found:#?}");
}

#[test]
fn ord005_a_resource_set_dependency_that_does_not_exist() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ord005-resourceset");
    let _ = std::fs::remove_dir_all(&root);
    let write = |rel: &str, text: &str| common::write(&root, rel, text);
    let rset = |name: &str, depends: &str| {
        format!(
            "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata:\n  name: {name}\n  namespace: flux-system\nspec:\n  dependsOn:\n    - apiVersion: fluxcd.controlplane.io/v1\n      kind: ResourceSet\n      name: {depends}\n      namespace: flux-system\n  inputs:\n    - app: {name}\n  resources:\n    - apiVersion: v1\n      kind: ConfigMap\n      metadata:\n        name: << inputs.app >>\n        namespace: default\n"
        )
    };
    write(
        "clusters/dev/flux-instance.yaml",
        "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata:\n  name: flux\n  namespace: flux-system\nspec:\n  distribution:\n    version: \"2.x\"\n  sync:\n    kind: GitRepository\n    url: https://git.example.com/dev.git\n    ref: refs/heads/main\n    path: clusters/dev\n",
    );
    // `apps` waits for `infra`, which exists; `infra` waits for `policy`, which does not.
    write("clusters/dev/apps.yaml", &rset("apps", "infra"));
    write("clusters/dev/infra.yaml", &rset("infra", "policy"));
    let found = findings(&root);
    let places = code_places(&found);
    assert_eq!(
        places,
        ["ORD005 clusters/dev/infra.yaml:10:13"],
        "{found:#?}"
    );
    assert!(
        found[0]
            .message
            .starts_with("ResourceSet flux-system/infra dependsOn ResourceSet flux-system/policy"),
        "{}",
        found[0].message
    );
}
