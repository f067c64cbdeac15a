//! SUB001-004 and ENV001-003 on their fixture repositories: each `bad/` repository gives exactly
//! the expected findings of its code, at the file, line and column of the offending text, and
//! each `good/` one (the fixed version) gives none of any SUB or ENV code.

mod common;

use common::{at, edit, fixture, fresh_copy, places, write};
use plumb_check::{CheckConfig, Finding};
use std::path::Path;

/// Builds a repository as `plumb check` does and returns the SUB and ENV findings.
fn check(root: &Path) -> Vec<Finding> {
    let config = CheckConfig::load(root).expect("the fixture's .plumb.yaml is valid");
    common::findings(root, &[], &config, |code| {
        code.starts_with("SUB") || code.starts_with("ENV")
    })
}

fn assert_good(code: &str) {
    let findings = check(&fixture(code, "good"));
    assert!(
        findings.is_empty(),
        "{code}/good must give no SUB/ENV finding: {findings:#?}"
    );
}

#[test]
fn sub001_unresolved_variable() {
    let findings = check(&fixture("SUB001", "bad"));
    assert_eq!(
        places(&findings),
        vec![
            // `${WEB_VIP}`: apps has postBuild, but cluster-vars does not define it.
            at("SUB001", "apps/web/service.yaml", 10, 19),
            // `${CLUSTER_DOMAIN}` under `infra`, which has no postBuild.
            at("SUB001", "infra/cluster-info.yaml", 7, 11),
        ]
    );
    assert!(findings[0].message.contains("`${WEB_VIP}` is not defined"));
    assert!(findings[0].message.contains("strict substitution"));
    assert!(findings[1].message.contains("literal text"));
    assert!(findings[1].message.contains("no postBuild"));
    assert_eq!(
        findings[1].chain,
        vec!["flux-system/flux-system", "flux-system/infra"]
    );
    let width = findings[1]
        .location
        .as_ref()
        .map(|l| l.end_column - l.column);
    assert_eq!(width, Some("${CLUSTER_DOMAIN}".len()));
    assert_good("SUB001");
}

#[test]
fn sub002_placeholder_value() {
    let findings = check(&fixture("SUB002", "bad"));
    assert_eq!(
        places(&findings),
        vec![
            // Written in place.
            at("SUB002", "apps/web/alerting.yaml", 7, 16),
            // Through substitution: the definition, with the use as related.
            at("SUB002", "clusters/dev/cluster-vars.yaml", 9, 12),
        ]
    );
    assert_eq!(
        findings[0].message,
        "placeholder `CHANGEME` reaches ConfigMap web/alerting"
    );
    assert!(findings[1]
        .message
        .contains("`TBD-DEV-WEB-VIP` of `WEB_VIP`"));
    let related: Vec<_> = findings[1]
        .related
        .iter()
        .map(|r| {
            (
                r.location.file.display().to_string(),
                r.location.line,
                r.location.column,
            )
        })
        .collect();
    assert_eq!(related, vec![("apps/web/service.yaml".to_string(), 10, 19)]);
    assert_good("SUB002");
}

#[test]
fn sub002_patterns_are_configurable() {
    let root = fixture("SUB002", "bad");
    let mut config = CheckConfig::load(&root).unwrap();
    config.placeholders = vec!["TBD-DEV-*".into()];
    let build = plumb_flux::build::build_repository(&root, &Default::default()).unwrap();
    let codes: Vec<_> = plumb_check::check(&root, &build, &config)
        .into_iter()
        .filter(|f| f.code == "SUB002")
        .map(|f| f.location.map(|l| l.file.display().to_string()))
        .collect();
    assert_eq!(
        codes,
        vec![Some("clusters/dev/cluster-vars.yaml".to_string())]
    );
}

#[test]
fn sub001_dashboards_once_per_file_and_not_where_flux_substitutes_nothing() {
    let findings = check(&fixture("SUB001", "dashboards"));
    // `app` substitutes: strict mode fails on `${DS_PROMETHEUS}`, one finding for the three.
    // `exporter` substitutes nothing (no variable): Grafana's `${DS_PROMETHEUS}` is meant to
    // reach Grafana, but the cluster's own `${CLUSTER_NAME}` reaching it literally is a mistake.
    assert_eq!(
        places(&findings),
        vec![
            at("SUB001", "app/dashboard.json", 3, 51),
            at("SUB001", "exporter/dashboard.json", 7, 13),
        ]
    );
    assert!(findings[1]
        .message
        .contains("`${CLUSTER_NAME}` reaches the cluster as literal text"));
    assert!(
        findings[0]
            .message
            .contains("`${DS_PROMETHEUS}` is not defined for Kustomization flux-system/app"),
        "{}",
        findings[0].message
    );
    assert!(
        findings[0].message.ends_with("(3 references in this file)"),
        "{}",
        findings[0].message
    );
}

#[test]
fn sub001_a_variable_a_secret_generator_encodes_is_never_substituted() {
    // fluxcd/kustomize-controller#1089: a secretGenerator writes its literals and files into
    // `data` in base64, where kustomize-controller's substitution never finds `${CLUSTER_DOMAIN}`.
    // A name no Kustomization defines (`${LOG_DIR}`) may be the application's own, read from
    // its environment; `stringData` is substituted as written.
    let root = fresh_copy(&fixture("SUB001", "good"), "sub001-secret-generator");
    write(
        &root,
        "apps/web/app.yaml",
        "url: https://${CLUSTER_DOMAIN}/web\nlogs: ${LOG_DIR}\n",
    );
    write(
        &root,
        "apps/web/plain.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: plain\n  namespace: web\nstringData:\n  url: https://${CLUSTER_DOMAIN}/web\n",
    );
    edit(
        &root,
        "apps/web/kustomization.yaml",
        "  - service.yaml\n",
        "  - service.yaml\n  - plain.yaml\nsecretGenerator:\n  - name: web-config\n    namespace: web\n    files: [app.yaml]\n  - name: web-env\n    namespace: web\n    literals:\n      - NAME=${CLUSTER_NAME}\n      - LOGS=${LOG_DIR}\n",
    );
    let findings = check(&root);
    assert_eq!(
        places(&findings),
        vec![
            at("SUB001", "apps/web/kustomization.yaml", 8, 5),
            at("SUB001", "apps/web/kustomization.yaml", 11, 5),
        ],
        "{findings:#?}"
    );
    assert!(
        findings[0].message.starts_with(
            "`${CLUSTER_DOMAIN}` reaches the cluster as literal text: Secret/web/web-config-"
        ),
        "{}",
        findings[0].message
    );
    assert!(findings[0]
        .message
        .contains("base64-encoded in `data.app.yaml`"));
    assert!(findings[1].message.contains("`${CLUSTER_NAME}`"));
    assert!(findings[1].message.contains("`data.NAME`"));
}

#[test]
fn sub003_shell_syntax_in_a_generated_script() {
    let findings = check(&fixture("SUB003", "bad"));
    // The script is a configMapGenerator file: its value has no span, so the finding points
    // into backup.sh itself.
    assert_eq!(
        places(&findings),
        vec![
            at("SUB003", "apps/web/backup.sh", 5, 9),
            at("SUB003", "apps/web/backup.sh", 6, 47),
        ]
    );
    assert!(findings[0].message.contains("`${dir##*/}`"));
    assert!(findings[0].help.contains("$${dir##*/}"));
    assert!(findings[1]
        .message
        .contains("`${name}` looks like a variable of the script"));
    assert_good("SUB003");
}

#[test]
fn sub003_is_silent_on_a_variable_a_runtime_secret_may_define() {
    // `${EXTERNAL_DOMAIN/./-}` is Flux's own replacement syntax; the Secret it substitutes
    // from is created at runtime with keys the build cannot see, so nothing can be said.
    let findings = check(&fixture("SUB003", "runtime"));
    assert!(findings.is_empty(), "{findings:#?}");
}

#[test]
fn sub004_missing_substitute_source() {
    let findings = check(&fixture("SUB004", "bad"));
    // Nothing else: with a required source missing, the controller applies nothing, so
    // SUB001 does not report the references as literal text.
    assert_eq!(
        places(&findings),
        vec![at("SUB004", "clusters/dev/apps.yaml", 16, 15)]
    );
    assert!(findings[0]
        .message
        .contains("ConfigMap flux-system/cluster-settings"));
    assert_good("SUB004");
}

#[test]
fn sub004_one_missing_source_of_several_kustomizations_is_one_finding() {
    // mthorley/k8s-gitops: 16 Kustomizations substitute from one Secret the repository does
    // not hold. Creating it fixes all of them: one finding, the others related.
    let root = fresh_copy(&fixture("SUB004", "bad"), "sub004-several");
    let apps = std::fs::read_to_string(root.join("clusters/dev/apps.yaml")).unwrap();
    write(
        &root,
        "clusters/dev/web.yaml",
        &apps
            .replace("name: apps", "name: web")
            .replace("path: ./apps", "path: ./apps/web"),
    );
    edit(
        &root,
        "clusters/dev/kustomization.yaml",
        "  - apps.yaml\n",
        "  - apps.yaml\n  - web.yaml\n",
    );
    let findings = check(&root);
    let sub004: Vec<&Finding> = findings.iter().filter(|f| f.code == "SUB004").collect();
    assert_eq!(sub004.len(), 1, "{findings:#?}");
    assert_eq!(
        sub004[0].message,
        "2 Kustomizations (flux-system/apps, flux-system/web) substitute from ConfigMap flux-system/cluster-settings, which no Kustomization of this cluster produces: each fails with \"cluster-settings not found\" until something creates it"
    );
    assert_eq!(
        places(&findings),
        vec![at("SUB004", "clusters/dev/apps.yaml", 16, 15)]
    );
    assert!(
        sub004[0].related.iter().any(|r| r.label
            == "Kustomization flux-system/web substitutes from it too"
            && r.location.file == Path::new("clusters/dev/web.yaml")
            && r.location.line == 16),
        "{:#?}",
        sub004[0].related
    );
}

#[test]
fn env001_overlay_adds_an_object() {
    let findings = check(&fixture("ENV001", "bad"));
    assert_eq!(
        places(&findings),
        vec![at("ENV001", "clusters/dev/debug-tools.yaml", 1, 1)]
    );
    assert_eq!(
        findings[0].message,
        "overlay clusters/dev adds Deployment debug-tools: an environment overlay may only change the cluster's variables (ConfigMap/cluster-vars)"
    );
    assert_good("ENV001");
}

#[test]
fn env001_one_cluster_is_no_set_of_environments() {
    // JJGadgets/Biohazard: the only cluster's kustomization lists its apps and its own Flux
    // install; with no other environment, nothing can differ from it.
    let root = fresh_copy(&fixture("ENV001", "bad"), "env001-one-cluster");
    edit(&root, ".plumb.yaml", "  - clusters/prod\n", "");
    let findings = check(&root);
    assert!(findings.iter().all(|f| f.code != "ENV001"), "{findings:#?}");
    // Named as overlays, it is one again.
    edit(
        &root,
        ".plumb.yaml",
        "clusters:\n",
        "overlays:\n  paths: [clusters/dev]\nclusters:\n",
    );
    assert_eq!(
        places(&check(&root)),
        vec![at("ENV001", "clusters/dev/debug-tools.yaml", 1, 1)]
    );
}

#[test]
fn env001_overlay_adds_a_directory_named_as_such() {
    // sulibot/home-ops: a cluster's overlay lists directories of its own beside a base. Each is
    // one finding that names the directory, not "objects it cannot name".
    let root = fresh_copy(&fixture("ENV001", "bad"), "env001-directory");
    write(
        &root,
        "clusters/dev/tools/kustomization.yaml",
        "resources: [cm.yaml]\n",
    );
    write(
        &root,
        "clusters/dev/tools/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tools\n",
    );
    edit(
        &root,
        "clusters/dev/kustomization.yaml",
        "  - debug-tools.yaml\n",
        "  - debug-tools.yaml\n  - ./tools\n",
    );
    let findings = check(&root);
    assert_eq!(
        places(&findings),
        vec![
            at("ENV001", "clusters/dev/debug-tools.yaml", 1, 1),
            at("ENV001", "clusters/dev/kustomization.yaml", 6, 5),
        ]
    );
    assert_eq!(
        findings[1].message,
        "overlay clusters/dev adds the objects of `./tools`: an environment overlay may only change the cluster's variables (ConfigMap/cluster-vars)"
    );
}

#[test]
fn env001_pointing_the_clusters_sync_at_its_own_directory_is_no_change() {
    // microscaler/shared-gitops-k8s-cluster: each cluster's kustomization (applied with
    // `kubectl apply -k`) patches the shared sync Kustomization's path to the cluster's own
    // directory: what makes it that cluster. A path elsewhere is a change of the platform.
    let root = fresh_copy(&fixture("ENV001", "good"), "env001-sync-path");
    write(
        &root,
        "clusters/dev/apps/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dev-apps\n  namespace: default\n",
    );
    write(
        &root,
        "clusters/dev/sync-path.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  path: ./clusters/dev/apps\n",
    );
    edit(
        &root,
        "clusters/dev/kustomization.yaml",
        "  - path: cluster-vars.yaml\n",
        "  - path: cluster-vars.yaml\n  - path: sync-path.yaml\n  - target: {kind: Kustomization, name: apps}\n    patch: |-\n      - op: replace\n        path: /spec/path\n        value: ./clusters/dev/apps\n",
    );
    let findings = check(&root);
    assert!(findings.iter().all(|f| f.code != "ENV001"), "{findings:#?}");
    edit(
        &root,
        "clusters/dev/kustomization.yaml",
        "        value: ./clusters/dev/apps\n",
        "        value: ./apps/dev-only\n",
    );
    assert_eq!(
        places(&check(&root)),
        vec![at("ENV001", "clusters/dev/kustomization.yaml", 8, 5)]
    );
}

#[test]
fn env001_the_clusters_own_bootstrap_directory_is_no_change() {
    // JiwooL0920/fleet-infra, sulibot/home-ops: `flux bootstrap` writes flux-system/ (the
    // Flux install and the Kustomization that syncs this very directory) into each cluster's
    // overlay. Every cluster has its own; listing it changes nothing of the base.
    let root = fresh_copy(&fixture("ENV001", "good"), "env001-bootstrap");
    let source = std::fs::read_to_string(root.join("clusters/base/flux-system.yaml")).unwrap();
    std::fs::remove_file(root.join("clusters/base/flux-system.yaml")).unwrap();
    edit(
        &root,
        "clusters/base/kustomization.yaml",
        "  - flux-system.yaml\n",
        "",
    );
    write(
        &root,
        "clusters/dev/flux-system/gotk-sync.yaml",
        &format!(
            "{source}---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./clusters/dev\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
        ),
    );
    write(
        &root,
        "clusters/dev/flux-system/kustomization.yaml",
        "resources: [gotk-sync.yaml]\n",
    );
    edit(
        &root,
        "clusters/dev/kustomization.yaml",
        "  - ../base\n",
        "  - flux-system\n  - ../base\n",
    );
    let findings = check(&root);
    assert!(findings.iter().all(|f| f.code != "ENV001"), "{findings:#?}");
}

#[test]
fn env002_invariant_is_false() {
    let findings = check(&fixture("ENV002", "bad"));
    // The variable the overlay sets is the primary location; the base's pool and the
    // invariant are related.
    assert_eq!(
        places(&findings),
        vec![at("ENV002", "clusters/dev/cluster-vars.yaml", 9, 12)]
    );
    assert!(findings[0]
        .message
        .contains("invariant `web-vip-in-lb-pool` is false for cluster clusters/dev"));
    let related: Vec<_> = findings[0]
        .related
        .iter()
        .map(|r| (r.location.file.display().to_string(), r.location.line))
        .collect();
    assert_eq!(
        related,
        vec![
            ("clusters/base/cluster-vars.yaml".to_string(), 10),
            ("clusters/base/cluster-vars.yaml".to_string(), 11),
            (".plumb.yaml".to_string(), 11),
        ]
    );
    assert_good("ENV002");
}

#[test]
fn env003_must_set_var_inherited() {
    let findings = check(&fixture("ENV003", "bad"));
    assert_eq!(
        places(&findings),
        vec![at("ENV003", "clusters/dev/cluster-vars.yaml", 6, 1)]
    );
    assert!(findings[0]
        .message
        .contains("`CLUSTER_DOMAIN` must be set by overlay clusters/dev"));
    assert_eq!(
        findings[0].related[0].location.file.display().to_string(),
        "clusters/base/cluster-vars.yaml"
    );
    assert_good("ENV003");
}
