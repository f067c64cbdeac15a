//! Issue 5's acceptance for the apply-order and ownership rules, on `examples/homelab`: the
//! repository as committed has none of their findings, and each planted mistake gives exactly
//! the expected finding at the expected place.

mod common;

use common::edit;
use plumb_check::{CheckConfig, Finding};
use std::path::{Path, PathBuf};

const CODES: &[&str] = &[
    "ORD001", "ORD002", "ORD003", "ORD004", "ORD005", "ORD006", "OWN001", "REF001",
];

/// A fresh copy of `examples/homelab` in a directory of its own.
fn homelab(name: &str) -> PathBuf {
    common::fresh_copy(&common::homelab(), &format!("homelab-ord-own-{name}"))
}

/// This area's findings for one entry of the repository at `root`.
fn findings(root: &Path, entry: &str) -> Vec<Finding> {
    let config = CheckConfig::load(root).unwrap();
    common::findings(root, &[entry], &config, |code| CODES.contains(&code))
}

/// `CODE file:line:column` per finding.
fn places(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .map(|f| {
            let l = f.location.as_ref().expect("a finding with a location");
            format!("{} {}", f.code, common::place(l))
        })
        .collect()
}

#[test]
fn the_committed_homelab_has_no_order_or_ownership_findings() {
    let root = common::homelab();
    for entry in ["clusters/dev", "clusters/prod"] {
        let found = findings(&root, entry);
        assert!(found.is_empty(), "{entry}: {:#?}", found);
    }
}

#[test]
fn a_runtime_crd_next_to_its_creator_is_a_deadlock() {
    let root = homelab("ord004");
    std::fs::rename(
        root.join("platform-config-cdi/golden-images.yaml"),
        root.join("platform-config/golden-images.yaml"),
    )
    .unwrap();
    edit(
        &root,
        "platform-config-cdi/kustomization.yaml",
        "  - golden-images.yaml\n",
        "",
    );
    edit(
        &root,
        "platform-config/kustomization.yaml",
        "  - cdi.yaml\n",
        "  - cdi.yaml\n  - golden-images.yaml\n",
    );
    let found = findings(&root, "clusters/dev");
    assert_eq!(
        places(&found),
        ["ORD004 platform-config/golden-images.yaml:3:7"]
    );
    let related = &found[0].related[0];
    assert_eq!(
        (related.location.file.as_path(), related.location.line),
        (Path::new("platform-config/cdi.yaml"), 4)
    );
    assert_eq!(
        found[0].chain,
        ["entry clusters/dev", "flux-system/platform-config"]
    );
}

#[test]
fn an_app_in_two_waves_has_two_writers() {
    let root = homelab("own001");
    edit(
        &root,
        "apps/wave-1/kustomization.yaml",
        "  - backup\n",
        "  - backup\n  - ../wave-0/podinfo\n",
    );
    // One mistake (the podinfo directory in two waves), one finding naming its objects.
    let found = findings(&root, "clusters/dev");
    assert_eq!(
        places(&found),
        ["OWN001 apps/wave-0/podinfo/namespace.yaml:4:9"]
    );
    let f = &found[0];
    assert!(
        f.message.starts_with("4 objects (Namespace podinfo, ")
            && f.message.contains("HelmRelease podinfo/podinfo")
            && f.message.contains("are applied by both Kustomization flux-system/apps-wave-0 (apps/wave-0) and Kustomization flux-system/apps-wave-1 (apps/wave-1)"),
        "{}",
        f.message
    );
    assert_eq!(f.chain.last().unwrap(), "flux-system/apps-wave-1");
    assert_eq!(
        f.related[0].location.file,
        Path::new("clusters/base/apps.yaml")
    );
}

#[test]
fn a_dependency_on_a_missing_wave_is_reported() {
    let root = homelab("ord005");
    edit(
        &root,
        "clusters/base/apps.yaml",
        "    - name: apps-wave-1\n",
        "    - name: apps-wave-3\n",
    );
    let found = findings(&root, "clusters/dev");
    assert_eq!(places(&found), ["ORD005 clusters/base/apps.yaml:69:13"]);
    assert!(
        found[0].help.starts_with("did you mean `apps-wave-"),
        "{}",
        found[0].help
    );
}
