//! examples/homelab and the substitution/environment mistakes of issue 5's acceptance, each
//! planted in a copy of it: the SUB and ENV findings must be exactly the expected codes at the
//! expected places (other areas' rules are tested elsewhere and are filtered out here).

mod common;

use common::{at, edit, homelab, Place};
use plumb_check::{CheckConfig, Finding};
use std::path::Path;

/// A copy of the homelab to plant a mistake in.
fn planted() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_dir(&homelab(), dir.path());
    dir
}

/// `(code, file, line, column)` of the SUB and ENV findings of `entry`.
fn check(root: &Path, entry: &str) -> (Vec<Place>, Vec<Finding>) {
    let config = CheckConfig::load(root).expect("the homelab's .plumb.yaml is valid");
    let findings = common::findings(root, &[entry], &config, |code| {
        code.starts_with("SUB") || code.starts_with("ENV")
    });
    (common::places(&findings), findings)
}

#[test]
fn the_invariant_is_in_the_homelab_configuration() {
    let config = CheckConfig::load(&homelab()).unwrap();
    assert!(config
        .invariants
        .iter()
        .any(|i| i.name == "gateway-vip-in-lb-pool" && i.expr.contains("ip(vars.GATEWAY_VIP)")));
}

#[test]
fn dev_checks_clean() {
    let (places, findings) = check(&homelab(), "clusters/dev");
    assert!(places.is_empty(), "{findings:#?}");
}

#[test]
fn prod_reports_exactly_its_placeholders() {
    let (places, findings) = check(&homelab(), "clusters/prod");
    let file = "clusters/prod/cluster-vars.yaml";
    assert_eq!(
        places,
        vec![
            at("SUB002", file, 11, 17),
            at("SUB002", file, 12, 25),
            at("SUB002", file, 13, 24),
            at("SUB002", file, 14, 16),
        ]
    );
    let tokens: Vec<_> = findings
        .iter()
        .map(|f| f.message.split('`').nth(1).unwrap_or(""))
        .collect();
    assert_eq!(
        tokens,
        vec![
            "TBD-PROD-API-HOST",
            "TBD-PROD-LB-POOL-START",
            "TBD-PROD-LB-POOL-STOP",
            "TBD-PROD-GATEWAY-VIP"
        ]
    );
    // Each names where the placeholder is substituted.
    let gateway = &findings[3];
    assert_eq!(gateway.related.len(), 1);
    assert_eq!(
        gateway.related[0].location.file.display().to_string(),
        "platform-config/gateway.yaml"
    );
    assert_eq!(
        (
            gateway.related[0].location.line,
            gateway.related[0].location.column
        ),
        (20, 14)
    );
}

#[test]
fn a_manifest_moved_under_a_kustomization_without_post_build() {
    let repo = planted();
    let root = repo.path();
    std::fs::create_dir(root.join("platform-gateway")).unwrap();
    std::fs::rename(
        root.join("platform-config/gateway.yaml"),
        root.join("platform-gateway/gateway.yaml"),
    )
    .unwrap();
    edit(
        root,
        "platform-config/kustomization.yaml",
        "  - gateway.yaml\n",
        "",
    );
    let kustomization = "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: platform-gateway\n  namespace: flux-system\nspec:\n  interval: 30m\n  path: ./platform-gateway\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  dependsOn:\n    - name: platform\n";
    let path = root.join("clusters/base/platform.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text + kustomization).unwrap();

    let (places, findings) = check(root, "clusters/dev");
    assert_eq!(
        places,
        vec![
            at("SUB001", "platform-gateway/gateway.yaml", 20, 14),
            at("SUB001", "platform-gateway/gateway.yaml", 25, 20),
        ]
    );
    assert!(findings[0]
        .message
        .starts_with("`${GATEWAY_VIP}` reaches the cluster as literal text: Kustomization flux-system/platform-gateway has no postBuild"));
    assert_eq!(
        findings[0].chain,
        vec!["entry clusters/dev", "flux-system/platform-gateway"]
    );
}

#[test]
fn gateway_vip_outside_the_pool_in_dev() {
    let repo = planted();
    let root = repo.path();
    edit(
        root,
        "clusters/dev/cluster-vars.yaml",
        "  CLUSTER_DOMAIN: dev.home.arpa\n",
        "  CLUSTER_DOMAIN: dev.home.arpa\n  GATEWAY_VIP: 192.168.20.5\n",
    );
    let (places, findings) = check(root, "clusters/dev");
    assert_eq!(
        places,
        vec![at("ENV002", "clusters/dev/cluster-vars.yaml", 9, 16)]
    );
    assert!(findings[0]
        .message
        .contains("invariant `gateway-vip-in-lb-pool` is false for cluster clusters/dev"));
    assert!(findings[0].message.contains("GATEWAY_VIP=192.168.20.5"));
    // Prod is untouched and its placeholders make the invariant unevaluable there: SUB002
    // reports them, ENV002 stays silent.
    let (prod, _) = check(root, "clusters/prod");
    assert!(prod.iter().all(|p| p.0 == "SUB002"));
}

#[test]
fn the_dev_overlay_adds_a_deployment() {
    let repo = planted();
    let root = repo.path();
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: whoami\n  namespace: default\nspec:\n  selector:\n    matchLabels:\n      app: whoami\n  template:\n    metadata:\n      labels:\n        app: whoami\n    spec:\n      containers:\n        - name: whoami\n          image: docker.io/traefik/whoami@sha256:43a68d10b9dfcfc3ffbfe4dd42100dc9aeaf29b3a5636c856337a5940f1b4f1c\n";
    std::fs::write(root.join("clusters/dev/whoami.yaml"), deployment).unwrap();
    edit(
        root,
        "clusters/dev/kustomization.yaml",
        "  - ../base\n",
        "  - ../base\n  - whoami.yaml\n",
    );
    let (places, findings) = check(root, "clusters/dev");
    assert_eq!(places, vec![at("ENV001", "clusters/dev/whoami.yaml", 1, 1)]);
    assert!(findings[0]
        .message
        .starts_with("overlay clusters/dev adds Deployment whoami"));
}
