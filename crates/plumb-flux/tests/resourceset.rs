//! flux-operator's FluxInstance sync objects and ResourceSets, generated as the operator
//! generates them: each sync kind, `spec.kustomize.patches` reaching the build (a patch adding
//! `decryption` makes the build decrypt a SOPS Secret, one adding `postBuild` substitutes),
//! flux-operator's documented ResourceSet examples compared with the objects its
//! documentation shows, and template errors at the ResourceSet's file and line.

use plumb_flux::build::{build_repository, Options, RepositoryBuild};
use plumb_flux::model::Object;
use plumb_flux::resourceset::{expand, Expanded};
use plumb_flux::sops_status::{sops_objects, Decryption};
use plumb_flux::sync::ClusterSync;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn object(text: &str) -> Object {
    let node = plumb_yaml::parse_documents("object.yaml", text)
        .unwrap()
        .remove(0);
    Object {
        value: plumb_yaml::to_json(&node).unwrap(),
        origin: Some(Arc::new(node)),
    }
}

fn objects_of(text: &str) -> Vec<Object> {
    plumb_yaml::parse_documents("objects.yaml", text)
        .unwrap()
        .into_iter()
        .map(|node| Object {
            value: plumb_yaml::to_json(&node).unwrap(),
            origin: Some(Arc::new(node)),
        })
        .collect()
}

fn yaml_values(text: &str) -> Vec<Value> {
    plumb_yaml::parse_documents("expected.yaml", text)
        .unwrap()
        .iter()
        .map(|n| plumb_yaml::to_json(n).unwrap())
        .collect()
}

fn repo_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

// ---- FluxInstance ----

const INSTANCE_HEAD: &str = "apiVersion: fluxcd.controlplane.io/v1
kind: FluxInstance
metadata:
  name: flux
  namespace: flux-system
spec:
  distribution:
    version: \"2.x\"
";

#[test]
fn each_sync_kind_generates_the_operators_source_and_kustomization() {
    let cases = [
        (
            "  sync:\n    kind: GitRepository\n    url: https://git.example.com/fleet.git\n    ref: refs/heads/main\n    path: clusters/home\n    pullSecret: git-auth\n",
            json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
                   "spec": {"interval": "1m0s", "ref": {"name": "refs/heads/main"},
                            "secretRef": {"name": "git-auth"},
                            "url": "https://git.example.com/fleet.git"}}),
        ),
        (
            "  sync:\n    kind: OCIRepository\n    url: oci://ghcr.io/org/fleet\n    ref: latest\n    path: clusters/home\n    interval: 5m\n    provider: generic\n",
            json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
                   "spec": {"interval": "5m0s", "ref": {"tag": "latest"}, "provider": "generic",
                            "url": "oci://ghcr.io/org/fleet"}}),
        ),
        (
            "  sync:\n    kind: Bucket\n    url: minio.example.com\n    ref: fleet\n    path: ./clusters/home\n    interval: 90s\n",
            json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "Bucket",
                   "spec": {"interval": "1m30s", "bucketName": "fleet",
                            "endpoint": "minio.example.com"}}),
        ),
    ];
    for (sync, want) in cases {
        let text = format!("{INSTANCE_HEAD}{sync}");
        let sync = ClusterSync::from_flux_instance(&object(&text)).unwrap();
        let objects = plumb_flux::fluxinstance::sync_objects(&sync).unwrap();
        assert_eq!(objects.len(), 2);
        let source = &objects[0];
        assert_eq!(source["apiVersion"], want["apiVersion"]);
        assert_eq!(source["kind"], want["kind"]);
        assert_eq!(source["metadata"]["name"], "flux-system");
        assert_eq!(source["metadata"]["namespace"], "flux-system");
        assert_eq!(source["spec"], want["spec"], "{}", want["kind"]);
        assert_eq!(
            source["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "flux-operator"
        );
        let ks = &objects[1];
        assert_eq!(ks["kind"], "Kustomization");
        assert_eq!(
            ks["spec"],
            json!({"interval": "10m0s", "path": if want["kind"] == "Bucket" {"./clusters/home"} else {"clusters/home"},
                   "prune": true, "sourceRef": {"kind": want["kind"], "name": "flux-system"}})
        );
    }
}

#[test]
fn sync_name_names_both_objects() {
    let text = format!(
        "{INSTANCE_HEAD}  sync:\n    name: fleet\n    kind: GitRepository\n    url: https://x/y.git\n    ref: refs/heads/main\n    path: clusters/home\n"
    );
    let sync = ClusterSync::from_flux_instance(&object(&text)).unwrap();
    let objects = plumb_flux::fluxinstance::sync_objects(&sync).unwrap();
    assert_eq!(objects[0]["metadata"]["name"], "fleet");
    assert_eq!(objects[1]["metadata"]["name"], "fleet");
    assert_eq!(objects[1]["spec"]["sourceRef"]["name"], "fleet");
}

const PATCH_SOURCE: &str = "  kustomize:
    patches:
      - target:
          kind: GitRepository
        patch: |
          - op: add
            path: /spec/timeout
            value: 2m
      - target:
          kind: GitRepository
          name: flux-system
        patch: |
          apiVersion: source.toolkit.fluxcd.io/v1
          kind: GitRepository
          metadata:
            name: flux-system
          spec:
            ref:
              name: refs/heads/staging
";

#[test]
fn patches_of_the_source_are_applied_by_target_kind_and_name() {
    let text = format!(
        "{INSTANCE_HEAD}  sync:\n    kind: GitRepository\n    url: https://x/y.git\n    ref: refs/heads/main\n    path: clusters/home\n{PATCH_SOURCE}"
    );
    let sync = ClusterSync::from_flux_instance(&object(&text)).unwrap();
    let objects = plumb_flux::fluxinstance::sync_objects(&sync).unwrap();
    let source = objects
        .iter()
        .find(|o| o["kind"] == "GitRepository")
        .unwrap();
    assert_eq!(source["spec"]["timeout"], "2m");
    assert_eq!(source["spec"]["ref"]["name"], "refs/heads/staging");
    // The Kustomization is not a target of either patch.
    let ks = objects
        .iter()
        .find(|o| o["kind"] == "Kustomization")
        .unwrap();
    assert!(ks["spec"].get("timeout").is_none());
}

const DECRYPTION_PATCH: &str = "  kustomize:
    patches:
      - target:
          kind: Kustomization
        patch: |
          - op: add
            path: /spec/decryption
            value:
              provider: sops
              secretRef:
                name: sops-age
";

fn sops_repository(root: &Path, instance: &str) {
    let secret = std::fs::read_to_string(
        repo_root().join("examples/homelab/apps/wave-1/backup/s3-credentials.sops.yaml"),
    )
    .unwrap();
    write(
        root,
        &[
            ("clusters/home/flux-instance.yaml", instance),
            ("clusters/home/secret.sops.yaml", &secret),
        ],
    );
}

fn homelab_keys() -> Options {
    let keys =
        plumb_flux::sops::AgeKeys::from_file(&repo_root().join("examples/homelab/age.agekey"))
            .unwrap();
    Options {
        age_keys: Some(Arc::new(keys)),
        ..Options::default()
    }
}

fn decryption_of(build: &RepositoryBuild) -> Vec<Decryption> {
    sops_objects(build)
        .into_iter()
        .map(|o| o.decryption)
        .collect()
}

#[test]
fn a_patch_adding_decryption_makes_the_build_decrypt_sops() {
    let sync = "  sync:\n    kind: GitRepository\n    url: https://git.example.com/home.git\n    ref: refs/heads/main\n    path: clusters/home\n";
    let patched = tempfile::tempdir().unwrap();
    sops_repository(
        patched.path(),
        &format!("{INSTANCE_HEAD}{sync}{DECRYPTION_PATCH}"),
    );
    let build = build_repository(patched.path(), &homelab_keys()).unwrap();
    let root = &build.entries[0].kustomizations[0];
    assert_eq!(root.kustomization.key(), "flux-system/flux-system");
    assert_eq!(
        root.kustomization.object.value["spec"]["decryption"]["provider"],
        "sops"
    );
    assert_eq!(decryption_of(&build), vec![Decryption::Decrypted]);

    // Without the patch the operator's Kustomization has no decryption.
    let plain = tempfile::tempdir().unwrap();
    sops_repository(plain.path(), &format!("{INSTANCE_HEAD}{sync}"));
    let build = build_repository(plain.path(), &homelab_keys()).unwrap();
    assert_eq!(decryption_of(&build), vec![Decryption::NotRequested]);
}

#[test]
fn a_patch_adding_post_build_substitutes_the_sync_path() {
    let dir = tempfile::tempdir().unwrap();
    let instance = format!(
        "{INSTANCE_HEAD}  sync:\n    kind: GitRepository\n    url: https://git.example.com/home.git\n    ref: refs/heads/main\n    path: clusters/home\n  kustomize:\n    patches:\n      - target:\n          kind: Kustomization\n          name: flux-system\n        patch: |\n          - op: add\n            path: /spec/postBuild\n            value:\n              substitute:\n                cluster_name: home-lab\n"
    );
    write(
        dir.path(),
        &[
            ("clusters/home/flux-instance.yaml", &instance),
            (
                "clusters/home/settings.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: flux-system\ndata:\n  cluster: ${cluster_name}\n",
            ),
        ],
    );
    let build = build_repository(dir.path(), &Options::default()).unwrap();
    let root = &build.entries[0].kustomizations[0];
    let cm = root
        .objects
        .iter()
        .find(|o| o.kind() == "ConfigMap")
        .unwrap();
    assert_eq!(cm.value["data"]["cluster"], "home-lab");
    assert!(
        build.diagnostics().all(|d| !d.is_error()),
        "{:?}",
        build.diagnostics().collect::<Vec<_>>()
    );
}

#[test]
fn a_flux_instance_in_a_helm_releases_values_is_patched_too() {
    let dir = tempfile::tempdir().unwrap();
    let secret = std::fs::read_to_string(
        repo_root().join("examples/homelab/apps/wave-1/backup/s3-credentials.sops.yaml"),
    )
    .unwrap();
    let release = "apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: flux-instance
  namespace: flux-system
spec:
  chart:
    spec:
      chart: flux-instance
      sourceRef:
        kind: HelmRepository
        name: controlplane
  values:
    instance:
      sync:
        kind: GitRepository
        url: https://git.example.com/home.git
        ref: refs/heads/main
        path: clusters/home
      kustomize:
        patches:
          - target:
              kind: Kustomization
            patch: |
              - op: add
                path: /spec/decryption
                value:
                  provider: sops
";
    write(
        dir.path(),
        &[
            ("bootstrap/flux-instance.yaml", release),
            ("clusters/home/secret.sops.yaml", &secret),
        ],
    );
    let build = build_repository(dir.path(), &homelab_keys()).unwrap();
    let entry = build
        .entries
        .iter()
        .find(|e| e.entry == "clusters/home")
        .expect("the sync's path is an entry");
    assert_eq!(
        entry.kustomizations[0].kustomization.object.value["spec"]["decryption"]["provider"],
        "sops"
    );
    assert_eq!(decryption_of(&build), vec![Decryption::Decrypted]);
}

#[test]
fn a_patch_kustomize_refuses_is_an_error_of_the_instance() {
    let text = format!(
        "{INSTANCE_HEAD}  sync:\n    kind: GitRepository\n    url: https://x/y.git\n    ref: refs/heads/main\n    path: clusters/home\n  kustomize:\n    patches:\n      - target:\n          kind: Kustomization\n        patch: |\n          - op: replace\n            path: /spec/missing/field\n            value: 1\n"
    );
    let sync = ClusterSync::from_flux_instance(&object(&text)).unwrap();
    let ks = sync.kustomization();
    let problem = ks.problems.first().expect("a problem");
    assert!(
        problem.message.contains("FluxInstance flux-system/flux")
            && problem.message.contains("spec.kustomize.patches"),
        "{}",
        problem.message
    );
}

// ---- ResourceSet: flux-operator's documented examples ----

fn expanded(rset: &str, providers: &str) -> Vec<Value> {
    let rset = object(rset);
    let providers = objects_of(providers);
    let refs: Vec<&Object> = providers.iter().collect();
    match expand(&rset, &refs).unwrap() {
        Expanded::Objects(objects) => objects,
        other => panic!("not expanded: {other:?}"),
    }
}

/// docs/api/v1/resourceset.md, "Example": an OCIRepository and a HelmRelease per tenant.
#[test]
fn documented_multi_instance_example() {
    let got = expanded(
        r#"apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: podinfo
  namespace: default
spec:
  commonMetadata:
    labels:
      app.kubernetes.io/name: podinfo
  inputs:
    - tenant: "team1"
      app:
       version: "6.7.x"
       replicas: 2
    - tenant: "team2"
      app:
       version: "6.6.x"
       replicas: 3
  resources:
    - apiVersion: source.toolkit.fluxcd.io/v1
      kind: OCIRepository
      metadata:
        name: podinfo-<< inputs.tenant >>
        namespace: default
      spec:
        interval: 10m
        url: oci://ghcr.io/stefanprodan/charts/podinfo
        ref:
          semver: << inputs.app.version | quote >>
    - apiVersion: helm.toolkit.fluxcd.io/v2
      kind: HelmRelease
      metadata:
        name: podinfo-<< inputs.tenant >>
        namespace: default
      spec:
        interval: 1h
        releaseName: podinfo-<< inputs.tenant >>
        chartRef:
          kind: OCIRepository
          name: podinfo-<< inputs.tenant >>
        values:
          replicaCount: << inputs.app.replicas | int >>
"#,
        "",
    );
    let labels = "    app.kubernetes.io/name: podinfo
    resourceset.fluxcd.controlplane.io/name: podinfo
    resourceset.fluxcd.controlplane.io/namespace: default";
    let want = yaml_values(&[
        ("team1", "6.7.x", 2),
        ("team2", "6.6.x", 3),
    ]
    .iter()
    .map(|(t, v, r)| {
        format!(
            "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: podinfo-{t}\n  namespace: default\n  labels:\n{labels}\nspec:\n  interval: 10m\n  url: oci://ghcr.io/stefanprodan/charts/podinfo\n  ref:\n    semver: \"{v}\"\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo-{t}\n  namespace: default\n  labels:\n{labels}\nspec:\n  interval: 1h\n  releaseName: podinfo-{t}\n  chartRef:\n    kind: OCIRepository\n    name: podinfo-{t}\n  values:\n    replicaCount: {r}\n"
        )
    })
    .collect::<String>());
    // The operator builds each template for every input in turn: both OCIRepositories, then
    // both HelmReleases ("HelmRelease/default/podinfo-team1 created ..." in the docs).
    let order = |v: &[Value]| -> Vec<String> {
        v.iter()
            .map(|o| {
                format!(
                    "{}/{}",
                    o["kind"].as_str().unwrap(),
                    o["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert_eq!(
        order(&got),
        [
            "OCIRepository/podinfo-team1",
            "OCIRepository/podinfo-team2",
            "HelmRelease/podinfo-team1",
            "HelmRelease/podinfo-team2"
        ]
    );
    let mut want_sorted = want.clone();
    want_sorted.sort_by_key(|o| o["kind"].as_str().unwrap() != "OCIRepository");
    assert_eq!(got, want_sorted);
}

/// docs/api/v1/resourceset.md, "Resources configuration": Namespace, ServiceAccount and
/// RoleBinding per tenant.
#[test]
fn documented_multi_tenant_example() {
    let got = expanded(
        r#"apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: tenants
  namespace: flux-system
spec:
  inputs:
    - tenant: team1
      role: admin
    - tenant: team2
      role: cluster-admin
  resources:
    - apiVersion: v1
      kind: Namespace
      metadata:
        name: << inputs.tenant >>
    - apiVersion: v1
      kind: ServiceAccount
      metadata:
        name: flux
        namespace: << inputs.tenant >>
    - apiVersion: rbac.authorization.k8s.io/v1
      kind: RoleBinding
      metadata:
        name: flux
        namespace: << inputs.tenant >>
      subjects:
        - kind: ServiceAccount
          name: flux
          namespace: << inputs.tenant >>
      roleRef:
        kind: ClusterRole
        name: << inputs.role >>
        apiGroup: rbac.authorization.k8s.io
"#,
        "",
    );
    let names: Vec<String> = got
        .iter()
        .map(|o| {
            format!(
                "{} {}/{}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["namespace"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            "Namespace /team1",
            "Namespace /team2",
            "ServiceAccount team1/flux",
            "ServiceAccount team2/flux",
            "RoleBinding team1/flux",
            "RoleBinding team2/flux"
        ]
    );
    assert_eq!(got[5]["roleRef"]["name"], "cluster-admin");
    assert_eq!(got[4]["subjects"][0]["namespace"], "team1");
}

/// docs/api/v1/resourceset.md, "Input strategy": Permute over the ResourceSet's inputs and
/// two providers; here the providers are Static, so their inputs are their defaultValues.
#[test]
fn documented_permute_example_with_two_providers() {
    let got = expanded(
        r#"apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: my-rset
  namespace: default
spec:
  inputStrategy:
    name: Permute
  inputs:
    - id: id1
      someField: foo
    - id: id2
      someField: bar
  inputsFrom:
    - kind: ResourceSetInputProvider
      name: git-tag
    - kind: ResourceSetInputProvider
      name: oci-tag
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: my-cm-<< inputs.id >>
        namespace: default
      data:
        rsetID: << inputs.my_rset.id | quote >>
        rsipGitID: << inputs.git_tag.id | quote >>
        rsipOCIID: << inputs.oci_tag.id | quote >>
        someField: << inputs.my_rset.someField | quote >>
        sha: << inputs.git_tag.sha | quote >>
        digest: << inputs.oci_tag.digest | quote >>
"#,
        r#"apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: git-tag
  namespace: default
spec:
  type: Static
  defaultValues:
    sha: bf5d6e01cf802734853f6f3417b237e3ad0ba35d
---
apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: oci-tag
  namespace: default
spec:
  type: Static
  defaultValues:
    digest: sha256:d4ec9861522d4961b2acac5a070ef4f92d732480dff2062c2f3a1dcf9a5d1e91
"#,
    );
    assert_eq!(got.len(), 2, "{got:?}");
    // The permutation IDs: Adler-32 of "my_rset=0/git_tag=0/oci_tag=0" (and =1).
    let id =
        |i: usize| plumb_flux::resourceset::adler32_id(&format!("my_rset={i}/git_tag=0/oci_tag=0"));
    for (i, field) in ["foo", "bar"].iter().enumerate() {
        let cm = &got[i];
        assert_eq!(cm["metadata"]["name"], format!("my-cm-{}", id(i)));
        assert_eq!(cm["data"]["rsetID"], format!("id{}", i + 1));
        assert_eq!(cm["data"]["someField"], *field);
        assert_eq!(
            cm["data"]["rsipGitID"],
            plumb_flux::resourceset::adler32_id("git-tag")
        );
        assert_eq!(
            cm["data"]["rsipOCIID"],
            plumb_flux::resourceset::adler32_id("oci-tag")
        );
        assert_eq!(
            cm["data"]["sha"],
            "bf5d6e01cf802734853f6f3417b237e3ad0ba35d"
        );
        assert_eq!(
            cm["data"]["digest"],
            "sha256:d4ec9861522d4961b2acac5a070ef4f92d732480dff2062c2f3a1dcf9a5d1e91"
        );
    }
}

/// flux-operator's internal/inputs/combine_test.go: the permutation IDs it asserts.
#[test]
fn permutation_ids_match_the_operators_tests() {
    let got = expanded(
        r#"apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: rset
  namespace: default
spec:
  inputStrategy:
    name: Permute
  inputs:
    - id: "42074437"
    - id: "39649590"
  inputsFrom:
    - name: rsip
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: cm-<< inputs.id >>
        namespace: default
      data:
        rset: << inputs.rset.id | quote >>
        provider: << inputs.rsip.provider.kind >>
"#,
        r#"apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: rsip
  namespace: default
spec:
  type: GitHubTag
status:
  exportedInputs:
    - id: "40173886"
"#,
    );
    let names: Vec<&str> = got
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cm-563152006", "cm-563676295"]);
    assert_eq!(got[1]["data"]["rset"], "39649590");
    assert_eq!(got[0]["data"]["provider"], "ResourceSetInputProvider");
}

/// docs/api/v1/resourceset.md, "Resources template": two OCIRepositories and four
/// Kustomizations, decryption only for the `apps` bundle.
#[test]
fn documented_resources_template_example() {
    let got = expanded(
        r#"apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: bundles
  namespace: flux-system
spec:
  inputs:
    - bundle: addons
      decryption: false
      components:
        - ingress-nginx
        - cert-manager
    - bundle: apps
      decryption: true
      components:
        - frontend
        - backend
  resourcesTemplate: |
    ---
    apiVersion: source.toolkit.fluxcd.io/v1
    kind: OCIRepository
    metadata:
      name: << inputs.bundle >>
      namespace: flux-system
    spec:
      interval: 10m
      url: oci://registry.example.com/<< inputs.bundle >>
    <<- range $component := inputs.components >>
    ---
    apiVersion: kustomize.toolkit.fluxcd.io/v1
    kind: Kustomization
    metadata:
      name: << $component >>
      namespace: flux-system
    spec:
      interval: 1h
      prune: true
      <<- if inputs.decryption >>
      decryption:
        provider: sops
        secretRef:
          name: << inputs.bundle >>-sops
      <<- end >>
      sourceRef:
        kind: OCIRepository
        name: << inputs.bundle >>
      path: ./<< $component >>
    <<- end >>
"#,
        "",
    );
    let names: Vec<String> = got
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            "OCIRepository/addons",
            "Kustomization/ingress-nginx",
            "Kustomization/cert-manager",
            "OCIRepository/apps",
            "Kustomization/frontend",
            "Kustomization/backend"
        ]
    );
    assert!(got[1]["spec"].get("decryption").is_none());
    assert_eq!(
        got[4]["spec"]["decryption"]["secretRef"]["name"],
        "apps-sops"
    );
    assert_eq!(got[5]["spec"]["path"], "./backend");
    assert_eq!(got[3]["spec"]["url"], "oci://registry.example.com/apps");
}

#[test]
fn disabled_objects_are_left_out_and_duplicates_built_once() {
    let got = expanded(
        r#"apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: shared
  namespace: apps
spec:
  inputs:
    - tenant: team1
    - tenant: team2
  resources:
    - apiVersion: source.toolkit.fluxcd.io/v1
      kind: OCIRepository
      metadata:
        name: shared
        namespace: apps
      spec:
        url: oci://example.com/shared
    - apiVersion: v1
      kind: ServiceAccount
      metadata:
        name: << inputs.tenant >>
        namespace: apps
        annotations:
          fluxcd.controlplane.io/reconcile: << if eq inputs.tenant "team1" >>enabled<< else >>disabled<< end >>
"#,
        "",
    );
    let names: Vec<&str> = got
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["shared", "team1"]);
}

// ---- ResourceSets in a build ----

const BUILT_RSET: &str = r#"apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: apps
  namespace: flux-system
spec:
  dependsOn:
    - apiVersion: fluxcd.controlplane.io/v1
      kind: ResourceSet
      name: infra
      namespace: flux-system
  inputs:
    - app: frontend
    - app: backend
  resources:
    - apiVersion: kustomize.toolkit.fluxcd.io/v1
      kind: Kustomization
      metadata:
        name: << inputs.app >>
        namespace: flux-system
      spec:
        interval: 10m
        path: ./apps/<< inputs.app >>
        prune: true
        sourceRef:
          kind: GitRepository
          name: flux-system
"#;

#[test]
fn kustomizations_a_resource_set_generates_are_built() {
    let dir = tempfile::tempdir().unwrap();
    let instance = format!(
        "{INSTANCE_HEAD}  sync:\n    kind: GitRepository\n    url: https://git.example.com/home.git\n    ref: refs/heads/main\n    path: clusters/home\n"
    );
    write(
        dir.path(),
        &[
            ("clusters/home/flux-instance.yaml", &instance),
            ("clusters/home/apps.yaml", BUILT_RSET),
            (
                "apps/frontend/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frontend\n  namespace: default\n",
            ),
            (
                "apps/backend/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: backend\n  namespace: default\n",
            ),
        ],
    );
    let build = build_repository(dir.path(), &Options::default()).unwrap();
    let entry = &build.entries[0];
    let keys: Vec<String> = entry
        .kustomizations
        .iter()
        .map(|k| k.kustomization.key())
        .collect();
    assert_eq!(
        keys,
        [
            "flux-system/flux-system",
            "flux-system/frontend",
            "flux-system/backend"
        ]
    );
    let root = &entry.kustomizations[0];
    // The ResourceSet stays, dependsOn and all, beside what it generates.
    let rset = root
        .objects
        .iter()
        .find(|o| o.kind() == "ResourceSet")
        .unwrap();
    assert_eq!(rset.value["spec"]["dependsOn"][0]["name"], "infra");
    let generated = root
        .objects
        .iter()
        .find(|o| o.kind() == "Kustomization" && o.name() == "frontend")
        .unwrap();
    assert_eq!(
        generated.value["metadata"]["labels"]["resourceset.fluxcd.controlplane.io/name"],
        "apps"
    );
    assert_eq!(entry.kustomizations[1].objects[0].name(), "frontend");
    assert_eq!(entry.kustomizations[2].objects[0].name(), "backend");
}

#[test]
fn a_template_error_names_the_resource_sets_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let rset = "apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: broken
  namespace: flux-system
spec:
  inputs:
    - app: frontend
  resources:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: << inputs.app >>
        namespace: flux-system
      data:
        team: << inputs.team >>
";
    let template = "apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: broken-template
  namespace: flux-system
spec:
  inputs:
    - app: frontend
  resourcesTemplate: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: << inputs.app >>
      namespace: flux-system
    data:
      owner: << inputs.owner | upper >>
";
    let instance = format!(
        "{INSTANCE_HEAD}  sync:\n    kind: GitRepository\n    url: https://git.example.com/home.git\n    ref: refs/heads/main\n    path: deploy\n"
    );
    write(
        dir.path(),
        &[
            ("deploy/flux-instance.yaml", &instance),
            ("deploy/rset.yaml", rset),
            ("deploy/template.yaml", template),
        ],
    );
    let build = build_repository(dir.path(), &Options::default()).unwrap();
    let errors: Vec<_> = build.diagnostics().filter(|d| d.is_error()).collect();
    let at = |name: &str| {
        errors
            .iter()
            .find(|d| d.message.contains(name))
            .unwrap_or_else(|| panic!("no error for {name}: {errors:?}"))
    };
    let d = at("ResourceSet flux-system/broken:");
    assert_eq!(d.file.as_deref(), Some(Path::new("deploy/rset.yaml")));
    assert_eq!(d.line, Some(16), "{d:?}");
    assert!(
        d.message.contains("map has no entry for key \"team\""),
        "{}",
        d.message
    );
    let d = at("ResourceSet flux-system/broken-template:");
    assert_eq!(d.file.as_deref(), Some(Path::new("deploy/template.yaml")));
    assert_eq!(d.line, Some(16), "{d:?}");
    assert!(d.message.contains("\"owner\""), "{}", d.message);
}

#[test]
fn a_provider_whose_inputs_come_from_the_cluster_is_reported_not_guessed() {
    let rset = object(
        "apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: previews
  namespace: apps
spec:
  inputsFrom:
    - name: pull-requests
  resources:
    - apiVersion: v1
      kind: Namespace
      metadata:
        name: app-<< inputs.id >>
",
    );
    let providers = objects_of(
        "apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSetInputProvider
metadata:
  name: pull-requests
  namespace: apps
spec:
  type: GitHubPullRequest
  url: https://github.com/org/app
",
    );
    let refs: Vec<&Object> = providers.iter().collect();
    match expand(&rset, &refs).unwrap() {
        Expanded::Skipped(why) => assert!(why.contains("GitHubPullRequest"), "{why}"),
        other => panic!("{other:?}"),
    }
    // A provider the build output does not hold is reported the same way.
    match expand(&rset, &[]).unwrap() {
        Expanded::Skipped(why) => assert!(why.contains("apps/pull-requests"), "{why}"),
        other => panic!("{other:?}"),
    }
}

// ---- dependsOn ----

/// A repository whose root holds `files` (besides its FluxInstance, syncing `clusters/home`),
/// built.
fn built_home(files: &[(&str, &str)]) -> RepositoryBuild {
    let dir = tempfile::tempdir().unwrap();
    let instance = format!(
        "{INSTANCE_HEAD}  sync:\n    kind: GitRepository\n    url: https://git.example.com/home.git\n    ref: refs/heads/main\n    path: clusters/home\n"
    );
    let mut all = vec![
        ("clusters/home/flux-instance.yaml", instance.as_str()),
        (
            "apps/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: default\n",
        ),
    ];
    all.extend_from_slice(files);
    write(dir.path(), &all);
    build_repository(dir.path(), &Options::default()).unwrap()
}

/// A ResourceSet `name` generating one Kustomization per app (each building `apps`), with
/// `extra` lines in its spec.
fn generating(name: &str, apps: &[&str], extra: &str) -> String {
    let inputs: String = apps.iter().map(|a| format!("    - app: {a}\n")).collect();
    format!(
        "apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: {name}
  namespace: flux-system
spec:
{extra}  inputs:
{inputs}  resources:
    - apiVersion: kustomize.toolkit.fluxcd.io/v1
      kind: Kustomization
      metadata:
        name: << inputs.app >>
        namespace: flux-system
      spec:
        interval: 10m
        path: ./apps
        prune: true
        sourceRef:
          kind: GitRepository
          name: flux-system
"
    )
}

fn depends_on(build: &RepositoryBuild, ks: &str) -> Vec<String> {
    build.entries[0]
        .kustomizations
        .iter()
        .find(|k| k.key() == ks)
        .unwrap_or_else(|| panic!("no Kustomization {ks}"))
        .kustomization
        .depends_on
        .iter()
        .map(|d| d.key())
        .collect()
}

const PLATFORM_KS: &str = "apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: platform
  namespace: flux-system
spec:
  interval: 10m
  path: ./platform
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
";

/// The platform Kustomization's directory.
const PLATFORM_CM: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\n  namespace: default\n";

/// A ResourceSet spec's `dependsOn` on Kustomization flux-system/platform, with `how`'s lines
/// (`ready`, `readyExpr`) in the entry.
fn on_platform(how: &str) -> String {
    format!(
        "  dependsOn:
    - apiVersion: kustomize.toolkit.fluxcd.io/v1
      kind: Kustomization
      name: platform
      namespace: flux-system
{how}"
    )
}

#[test]
fn a_ready_kustomization_dependency_orders_what_the_resource_set_generates() {
    let ready = generating("apps", &["web"], &on_platform("      ready: true\n"));
    let build = built_home(&[
        ("clusters/home/apps.yaml", &ready),
        ("clusters/home/platform.yaml", PLATFORM_KS),
        ("platform/cm.yaml", PLATFORM_CM),
    ]);
    assert_eq!(
        depends_on(&build, "flux-system/web"),
        ["flux-system/platform"]
    );
    assert!(
        !build
            .diagnostics()
            .any(|d| d.message.contains("depends on")),
        "{:?}",
        build.diagnostics().collect::<Vec<_>>()
    );
}

#[test]
fn existence_only_and_expression_dependencies_order_nothing() {
    for how in [
        "",
        "      readyExpr: status.observedGeneration >= 0\n      ready: true\n",
    ] {
        let rset = generating("apps", &["web"], &on_platform(how));
        let build = built_home(&[
            ("clusters/home/apps.yaml", &rset),
            ("clusters/home/platform.yaml", PLATFORM_KS),
            ("platform/cm.yaml", PLATFORM_CM),
        ]);
        assert!(depends_on(&build, "flux-system/web").is_empty(), "{how:?}");
    }
}

#[test]
fn a_ready_resource_set_dependency_orders_after_its_kustomizations_only_when_it_waits() {
    for (wait, expected) in [
        (
            "  wait: true\n",
            vec!["flux-system/db", "flux-system/cache"],
        ),
        ("", vec![]),
    ] {
        let infra = generating("infra", &["db", "cache"], wait);
        let apps = generating(
            "apps",
            &["web"],
            "  dependsOn:
    - apiVersion: fluxcd.controlplane.io/v1
      kind: ResourceSet
      name: infra
      namespace: flux-system
      ready: true
",
        );
        let build = built_home(&[
            ("clusters/home/infra.yaml", &infra),
            ("clusters/home/apps.yaml", &apps),
        ]);
        assert_eq!(depends_on(&build, "flux-system/web"), expected, "{wait:?}");
        assert!(depends_on(&build, "flux-system/db").is_empty());
    }
}

#[test]
fn a_dependency_nothing_creates_is_reported_at_its_entry() {
    let rset = generating(
        "apps",
        &["web"],
        "  dependsOn:
    - apiVersion: apiextensions.k8s.io/v1
      kind: CustomResourceDefinition
      name: widgets.example.com
    - apiVersion: fluxcd.controlplane.io/v1
      kind: ResourceSet
      name: policies
      namespace: flux-system
      ready: true
",
    );
    let build = built_home(&[("clusters/home/apps.yaml", &rset)]);
    let missing: Vec<_> = build
        .diagnostics()
        .filter(|d| d.message.contains("which nothing of this cluster creates"))
        .collect();
    // The CRD may come from a chart or a controller: not judged. The ResourceSet is nowhere.
    assert_eq!(missing.len(), 1, "{missing:?}");
    let d = missing[0];
    assert!(
        d.message.starts_with(
            "ResourceSet flux-system/apps depends on ResourceSet flux-system/policies"
        ),
        "{}",
        d.message
    );
    assert_eq!(
        d.file.as_deref(),
        Some(Path::new("clusters/home/apps.yaml"))
    );
    assert_eq!(d.line, Some(11), "{d:?}");
    assert!(!d.is_error());
}

#[test]
fn a_cycle_through_resource_set_dependencies_is_a_cycle() {
    let apps = generating("apps", &["web"], &on_platform("      ready: true\n"));
    let platform = PLATFORM_KS.replace("spec:\n", "spec:\n  dependsOn:\n    - name: web\n");
    let build = built_home(&[
        ("clusters/home/apps.yaml", &apps),
        ("clusters/home/platform.yaml", &platform),
        ("platform/cm.yaml", PLATFORM_CM),
    ]);
    let cycles: Vec<_> = build
        .diagnostics()
        .filter(|d| d.message.starts_with("dependsOn cycle"))
        .collect();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(
        cycles[0].message.contains("flux-system/web"),
        "{}",
        cycles[0].message
    );
}

#[test]
fn a_flux_instance_a_resource_set_generates_syncs_the_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let rset = r#"apiVersion: fluxcd.controlplane.io/v1
kind: ResourceSet
metadata:
  name: flux
  namespace: flux-system
spec:
  inputs:
    - cluster: home
  resources:
    - apiVersion: fluxcd.controlplane.io/v1
      kind: FluxInstance
      metadata:
        name: flux
        namespace: flux-system
      spec:
        distribution:
          version: "2.x"
        sync:
          kind: GitRepository
          url: https://git.example.com/fleet.git
          ref: refs/heads/main
          path: clusters/<< inputs.cluster >>
        kustomize:
          patches:
            - target:
                kind: Kustomization
              patch: |
                - op: add
                  path: /spec/postBuild
                  value:
                    substitute:
                      cluster: << inputs.cluster >>
"#;
    write(
        dir.path(),
        &[
            ("bootstrap/flux.yaml", rset),
            (
                "clusters/home/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  cluster: ${cluster}\n",
            ),
        ],
    );
    let build = build_repository(dir.path(), &Options::default()).unwrap();
    let entries: Vec<&str> = build.entries.iter().map(|e| e.entry.as_str()).collect();
    assert!(entries.contains(&"clusters/home"), "{entries:?}");
    let home = build
        .entries
        .iter()
        .find(|e| e.entry == "clusters/home")
        .unwrap();
    let root = &home.kustomizations[0];
    assert_eq!(root.key(), "flux-system/flux-system");
    let cm = root
        .objects
        .iter()
        .find(|o| o.name() == "settings")
        .unwrap();
    // The instance's patch, templated by the ResourceSet, reached the build.
    assert_eq!(cm.value["data"]["cluster"], "home");
}
