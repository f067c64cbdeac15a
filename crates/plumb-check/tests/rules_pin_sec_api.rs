//! The pinning, secret, API-version and lock-file rules on their fixture repositories: each
//! `bad` fixture gives exactly its one finding, at the file, line and column of the text that
//! is wrong, and each `good` fixture (the same repository, fixed) gives none of these codes.

mod common;

use common::{edit, fixture, places, Place};
use plumb_check::rules::sec::broken_sops_file::BrokenSopsFile;
use plumb_check::{check, CheckConfig, CheckContext, Finding, Severity};
use plumb_flux::build::{build_repository, Options};
use plumb_flux::sops::AgeKeys;
use std::path::{Path, PathBuf};

const CODES: &[&str] = &[
    "PIN001", "PIN002", "PIN003", "SEC001", "SEC002", "API001", "LCK001",
];

/// This area's findings on the repository at `root`, with the default configuration.
fn findings(root: &Path) -> Vec<Finding> {
    common::findings(root, &[], &CheckConfig::default(), |code| {
        CODES.contains(&code)
    })
}

fn assert_bad(code: &str, file: &str, line: usize, column: usize) -> Finding {
    let found = findings(&fixture(code, "bad"));
    assert_eq!(
        places(&found),
        vec![(code_static(code), file.to_string(), line, column)],
        "{code}/bad: {found:#?}"
    );
    found.into_iter().next().unwrap()
}

fn code_static(code: &str) -> &'static str {
    CODES.iter().copied().find(|c| *c == code).unwrap()
}

#[test]
fn every_good_fixture_is_clean() {
    for code in CODES {
        let found = findings(&fixture(code, "good"));
        assert!(found.is_empty(), "{code}/good: {:#?}", places(&found));
    }
}

/// `file:line:column`, the image and the last Kustomization of each PIN001 finding, once for
/// each Kustomization that makes it (a finding several build is reported once, the others'
/// chains in `also_in`).
fn pin001_occurrences(found: &[Finding]) -> Vec<(String, String, String)> {
    found
        .iter()
        .flat_map(|f| {
            let image = f.message.split('`').nth(1).unwrap_or("").to_string();
            let place = common::place(f.location.as_ref().expect("a location"));
            std::iter::once(&f.chain)
                .chain(&f.also_in)
                .map(move |c| {
                    (
                        place.clone(),
                        image.clone(),
                        c.last().cloned().unwrap_or_default(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn pin001_points_at_every_place_an_image_is_written() {
    let found = findings(&fixture("PIN001", "bad"));
    let row = |place: &str, image: &str, ks: &str| {
        (
            place.to_string(),
            image.to_string(),
            format!("flux-system/{ks}"),
        )
    };
    assert_eq!(
        pin001_occurrences(&found),
        vec![
            // The custom resources of the base both overlays build: once per Kustomization.
            row(
                "apps/base/podinfo/database.yaml:7:14",
                "ghcr.io/cloudnative-pg/postgresql:17.2",
                "apps"
            ),
            row(
                "apps/base/podinfo/database.yaml:7:14",
                "ghcr.io/cloudnative-pg/postgresql:17.2",
                "apps-staging"
            ),
            // Production patches this image; staging runs it as the base writes it.
            row(
                "apps/base/podinfo/deployment.yaml:17:18",
                "ghcr.io/stefanprodan/podinfo:6.8.0",
                "apps-staging"
            ),
            row(
                "apps/base/podinfo/worker.yaml:12:20",
                "ghcr.io/example/queue-worker:2.1.0",
                "apps"
            ),
            // The component's tag, with the base's registry and repository.
            row(
                "apps/components/redis-tag/redis-tag.yaml:8:12",
                "docker.io/bitnami/redis:7.4.3",
                "apps"
            ),
            row(
                "apps/components/redis-tag/redis-tag.yaml:8:12",
                "docker.io/bitnami/redis:7.4.3",
                "apps-staging"
            ),
            // The JSON 6902 patch file's `value:` and the strategic merge patch file's image.
            row(
                "apps/production/log-shipper-image.yaml:3:10",
                "docker.io/library/busybox:1.37",
                "apps"
            ),
            row(
                "apps/production/podinfo-image.yaml:10:18",
                "ghcr.io/stefanprodan/podinfo:6.9.0",
                "apps"
            ),
            // Patches written inline in staging's kustomization, a JSON 6902 `value:` and a
            // strategic merge patch's image: at their lines there.
            row(
                "apps/staging/kustomization.yaml:16:16",
                "docker.io/library/busybox:1.37-staging",
                "apps-staging"
            ),
            row(
                "apps/staging/kustomization.yaml:28:26",
                "ghcr.io/example/queue-worker:2.2.0-rc.1",
                "apps-staging"
            ),
        ]
    );
    // One text built by two Kustomizations is one finding, with the other's chain.
    let component: Vec<&Finding> = found
        .iter()
        .filter(|f| f.message.contains("redis:7.4.3"))
        .collect();
    assert_eq!(component.len(), 1);
    assert_eq!(component[0].also_in.len(), 1);
    assert_ne!(component[0].chain, component[0].also_in[0]);
    assert!(
        component[0].message.contains("of HelmRelease redis "),
        "{}",
        component[0].message
    );
}

#[test]
fn pin002_points_at_the_version_range() {
    let f = assert_bad("PIN002", "apps/cert-manager/release.yaml", 10, 16);
    assert!(f.message.contains("`>=1.0.0`"), "{}", f.message);
}

#[test]
fn pin003_points_at_the_action() {
    let f = assert_bad("PIN003", ".github/workflows/validate.yaml", 13, 15);
    assert!(f.message.contains("`v4`"), "{}", f.message);
}

#[test]
fn sec001_points_at_the_first_credential() {
    // Line 8 is ACCESS_KEY_ID, which names the key; line 9 is the secret key.
    let f = assert_bad("SEC001", "apps/backup/s3-credentials.sops.yaml", 9, 5);
    assert!(
        f.message.contains("stringData.SECRET_ACCESS_KEY"),
        "{}",
        f.message
    );
    assert!(
        !f.message.contains("6PdFz2qv9KkTn4Wc"),
        "a finding never prints the secret"
    );
    assert_eq!(f.chain, ["flux-system/flux-system", "flux-system/apps"]);
}

#[test]
fn sec002_points_at_the_broken_metadata() {
    let f = assert_bad("SEC002", "apps/backup/s3-credentials.sops.yaml", 10, 1);
    assert!(f.message.contains("sops.mac"), "{}", f.message);
}

#[test]
fn api001_points_at_the_api_version() {
    let f = assert_bad("API001", "apps/podinfo/disruption-budget.yaml", 1, 13);
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.message.contains("removed in Kubernetes 1.25"),
        "{}",
        f.message
    );
}

#[test]
fn lck001_points_at_the_terraform_block() {
    let f = assert_bad("LCK001", "infra/backup-bucket/main.tf", 2, 1);
    assert!(f.message.contains("`infra/backup-bucket`"), "{}", f.message);
}

#[test]
fn lck001_a_module_a_terragrunt_unit_runs_is_no_root() {
    // ionfury/homelab's layout: a stack generates each unit three levels deeper than where it
    // is written, so the unit's `../../../..` only resolves from there; after `//` is the
    // module's path inside the copied tree.
    let root = copy_of("LCK001", "good", "terragrunt");
    let write = |rel: &str, text: &str| common::write(&root, rel, text);
    write(
        "infrastructure/modules/app-secrets/providers.tf",
        "terraform {\n  required_providers {\n    aws = { source = \"hashicorp/aws\" }\n  }\n}\n",
    );
    let lck = |root: &Path| -> Vec<String> {
        findings(root)
            .into_iter()
            .filter(|f| f.code == "LCK001")
            .map(|f| f.message)
            .collect()
    };
    // Without the unit, the module's directory looks like a root.
    assert_eq!(lck(&root).len(), 1, "{:?}", lck(&root));
    write(
        "infrastructure/units/authelia-secrets/terragrunt.hcl",
        "include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\n\nterraform {\n  source = \"../../../.././/modules/app-secrets\"\n}\n",
    );
    assert_eq!(lck(&root), Vec::<String>::new());
}

/// A copy of a fixture in a directory of its own, for variants.
fn copy_of(code: &str, kind: &str, name: &str) -> PathBuf {
    common::fresh_copy(&fixture(code, kind), &format!("pin-sec-api-{name}"))
}

/// SEC002 with the homelab's age key, which the fixtures' SOPS file is encrypted for.
fn sec002_with_key(root: &Path) -> Vec<Place> {
    let key = common::homelab().join("age.agekey");
    let keys = AgeKeys::from_file(&key).unwrap();
    let build = build_repository(root, &Options::default()).unwrap();
    let config = CheckConfig::default();
    let cx = CheckContext::new(&build.root, &build, &config);
    let mut out = Vec::new();
    BrokenSopsFile.check_with_keys(&cx, Some(&keys), &mut out);
    places(&out)
}

const SOPS_FILE: &str = "apps/backup/s3-credentials.sops.yaml";

#[test]
fn sec002_verifies_the_mac_when_a_key_is_given() {
    let intact = copy_of("SEC002", "good", "sec002-intact");
    assert_eq!(sec002_with_key(&intact), vec![]);

    let altered = copy_of("SEC002", "good", "sec002-altered");
    edit(
        &altered,
        SOPS_FILE,
        "2026-11-29T20:11:01Z",
        "2026-11-30T20:11:01Z",
    );
    // Without a key the structure is intact; with it, the MAC fails at `sops.mac`.
    assert!(findings(&altered).is_empty());
    assert_eq!(
        sec002_with_key(&altered),
        vec![("SEC002", SOPS_FILE.to_string(), 22, 5)]
    );
}

#[test]
fn sec002_finds_plaintext_pasted_into_an_encrypted_file() {
    let root = copy_of("SEC002", "good", "sec002-pasted");
    let text = std::fs::read_to_string(root.join(SOPS_FILE)).unwrap();
    let start = text.find("    SECRET_ACCESS_KEY: ENC[").unwrap();
    let end = start + text[start..].find('\n').unwrap();
    let pasted = format!(
        "{}    SECRET_ACCESS_KEY: 6PdFz2qv9KkTn4Wc{}",
        &text[..start],
        &text[end..]
    );
    std::fs::write(root.join(SOPS_FILE), pasted).unwrap();
    let found = findings(&root);
    assert_eq!(
        places(&found),
        vec![("SEC002", SOPS_FILE.to_string(), 9, 24)]
    );
    assert!(
        found[0].message.contains("`stringData.SECRET_ACCESS_KEY`"),
        "{}",
        found[0].message
    );
    assert!(!found[0].message.contains("6PdFz2qv9KkTn4Wc"));
}

#[test]
fn sec002_finds_a_file_no_creation_rule_covers() {
    let root = copy_of("SEC002", "good", "sec002-uncovered");
    edit(
        &root,
        ".sops.yaml",
        "path_regex: .*\\.sops\\.yaml$",
        "path_regex: ^clusters/.*\\.sops\\.yaml$",
    );
    let found = findings(&root);
    assert_eq!(
        places(&found),
        vec![("SEC002", SOPS_FILE.to_string(), 10, 1)]
    );
    assert!(
        found[0].message.contains("no creation rule"),
        "{}",
        found[0].message
    );

    std::fs::remove_file(root.join(".sops.yaml")).unwrap();
    let found = findings(&root);
    assert_eq!(
        places(&found),
        vec![("SEC002", SOPS_FILE.to_string(), 10, 1)]
    );
    assert!(
        found[0].message.contains("no `.sops.yaml`"),
        "{}",
        found[0].message
    );
}

#[test]
fn pin001_reads_helm_values_and_every_container_list() {
    let root = copy_of("PIN001", "good", "pin001-variants");
    edit(
        &root,
        "apps/podinfo/deployment.yaml",
        "      containers:\n",
        "      initContainers:\n        - name: migrate\n          image: docker.io/library/busybox:1.37\n      containers:\n",
    );
    std::fs::write(
        root.join("apps/podinfo/release.yaml"),
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: redis\nspec:\n  interval: 30m\n  chartRef:\n    kind: OCIRepository\n    name: redis\n  values:\n    image:\n      repository: docker.io/bitnami/redis\n      tag: 7.4.2\n    metrics:\n      image: docker.io/oliver006/redis_exporter:v1.67.0\n    sentinel:\n      image:\n        repository: docker.io/bitnami/redis-sentinel\n        tag: 7.4.2@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
    )
    .unwrap();
    edit(
        &root,
        "apps/podinfo/kustomization.yaml",
        "  - deployment.yaml\n",
        "  - deployment.yaml\n  - release.yaml\n",
    );
    let found = findings(&root);
    assert_eq!(
        places(&found),
        vec![
            ("PIN001", "apps/podinfo/deployment.yaml".to_string(), 17, 18),
            ("PIN001", "apps/podinfo/release.yaml".to_string(), 13, 12),
            ("PIN001", "apps/podinfo/release.yaml".to_string(), 15, 14),
        ]
    );
}

#[test]
fn api001_follows_the_configured_kubernetes_version() {
    let build = build_repository(&fixture("API001", "bad"), &Options::default()).unwrap();
    let at = |version: &str| -> Vec<(Severity, String)> {
        let config = CheckConfig {
            kubernetes_version: Some(version.to_string()),
            ..CheckConfig::default()
        };
        check(&build.root, &build, &config)
            .into_iter()
            .filter(|f| f.code == "API001")
            .map(|f| (f.severity, f.message))
            .collect()
    };
    assert!(at("1.20").is_empty());
    let deprecated = at("v1.24.3");
    assert_eq!(deprecated.len(), 1);
    assert_eq!(deprecated[0].0, Severity::Warning);
    assert!(
        deprecated[0].1.contains("deprecated since Kubernetes 1.21"),
        "{}",
        deprecated[0].1
    );
    assert_eq!(at("1.25")[0].0, Severity::Error);
}

#[test]
fn pin002_judges_oci_repository_refs() {
    let root = copy_of("PIN002", "good", "pin002-oci");
    let source = |name: &str, reference: &str| {
        format!("---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: {name}\nspec:\n  interval: 12h\n  url: oci://ghcr.io/example/charts/{name}\n{reference}")
    };
    let text = [
        source("exact", "  ref:\n    tag: 1.4.1\n"),
        source("digest", "  ref:\n    digest: sha256:369679b046b90a908e16c44449046e98d4821a20fe5ca1b989b96a2a0d8d8d75\n"),
        source("floating", "  ref:\n    tag: latest\n"),
        source("range", "  ref:\n    semver: \">=1.0.0\"\n"),
        source("none", ""),
    ]
    .concat();
    std::fs::write(root.join("apps/cert-manager/oci.yaml"), text).unwrap();
    edit(
        &root,
        "apps/cert-manager/kustomization.yaml",
        "  - release.yaml\n",
        "  - release.yaml\n  - oci.yaml\n",
    );
    let file = "apps/cert-manager/oci.yaml".to_string();
    assert_eq!(
        places(&findings(&root)),
        vec![
            ("PIN002", file.clone(), 30, 10),
            ("PIN002", file.clone(), 40, 13),
            ("PIN002", file, 48, 8),
        ]
    );
}

#[test]
fn pin002_on_an_object_a_resource_set_generates_points_at_the_resource_set() {
    let root = copy_of("PIN002", "good", "resourceset");
    let write = |rel: &str, text: &str| common::write(&root, rel, text);
    // d2-fleet's tenants: one OCIRepository per tenant, by a floating tag.
    write(
        "clusters/dev/tenants.yaml",
        "apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: tenants
  namespace: flux-system
spec:
  inputs:
    - tenant: frontend
  resources:
    - apiVersion: v1
      kind: Namespace
      metadata:
        name: << inputs.tenant >>
    - apiVersion: source.toolkit.fluxcd.io/v1
      kind: OCIRepository
      metadata:
        name: apps
        namespace: << inputs.tenant >>
      spec:
        interval: 5m
        url: oci://ghcr.io/example/<< inputs.tenant >>
        ref:
          tag: latest
",
    );
    write(
        "clusters/dev/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - flux-system.yaml\n  - apps.yaml\n  - tenants.yaml\n",
    );
    let found: Vec<_> = findings(&root)
        .into_iter()
        .filter(|f| f.code == "PIN002")
        .collect();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].location.as_ref().map(common::place).as_deref(),
        Some("clusters/dev/tenants.yaml:23:16"),
        "{found:#?}"
    );
    assert!(
        found[0].message.starts_with("OCIRepository/frontend/apps"),
        "{}",
        found[0].message
    );
}
