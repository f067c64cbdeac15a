//! Release names, namespaces and post-renderers, reproduced from helm-controller's own tests
//! (internal/release/name_test.go, internal/postrender/kustomize_test.go,
//! common_renderer_test.go) and Helm 4.2's post-render strategies.

use plumb_helm::{parse_manifest, post_render, release_name, release_namespace, Rendered};
use serde_json::{json, Value};

fn hr(spec: Value) -> Value {
    json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "name", "namespace": "namespace"},
        "spec": spec,
    })
}

fn named(name: &str, spec: Value) -> Value {
    let mut h = hr(spec);
    h["metadata"]["name"] = json!(name);
    h
}

#[test]
fn release_names_as_helm_controller_shortens_them() {
    // helm-controller's TestShortName cases, through spec.releaseName.
    let cases = [
        ("release-name", "release-name"),
        (
            "release-name-with-very-long-name-which-is-longer-than-53-characters",
            "release-name-with-very-long-name-which-i-788ca0d0d7b0",
        ),
        (
            "another-release-name-with-very-long-name-which-is-longer-than-53-characters",
            "another-release-name-with-very-long-name-7e72150d5a36",
        ),
    ];
    for (given, expected) in cases {
        let got = release_name(&named("podinfo", json!({"releaseName": given})));
        assert_eq!(got, expected);
        assert!(got.len() <= 53);
    }
    // The default: the HelmRelease's name.
    assert_eq!(release_name(&named("podinfo", json!({}))), "podinfo");
    // targetNamespace-name.
    assert_eq!(
        release_name(&named("podinfo", json!({"targetNamespace": "apps"}))),
        "apps-podinfo"
    );
    // spec.releaseName wins over targetNamespace.
    assert_eq!(
        release_name(&named(
            "podinfo",
            json!({"targetNamespace": "apps", "releaseName": "web"})
        )),
        "web"
    );
    // Exactly 53 characters: kept as is; 54: shortened to 53.
    let name53 = format!("{}-{}", "t".repeat(20), "n".repeat(32));
    assert_eq!(name53.len(), 53);
    assert_eq!(
        release_name(&named(
            &"n".repeat(32),
            json!({"targetNamespace": "t".repeat(20)})
        )),
        name53
    );
    let name54 = format!("{}-{}", "t".repeat(21), "n".repeat(32));
    let short = release_name(&named(
        &"n".repeat(32),
        json!({"targetNamespace": "t".repeat(21)}),
    ));
    assert_eq!(short.len(), 53);
    assert_ne!(short, name54);
    assert!(short.starts_with(&name54[..40]));
    assert_eq!(&short[40..41], "-");
    assert_eq!(plumb_helm::release::shorten_name(&name54), short);
    // The same name always gives the same hash.
    assert_eq!(plumb_helm::release::shorten_name(""), "");
}

#[test]
fn release_namespaces() {
    assert_eq!(release_namespace(&hr(json!({}))), "namespace");
    assert_eq!(
        release_namespace(&hr(json!({"targetNamespace": "apps"}))),
        "apps"
    );
    let mut no_ns = hr(json!({}));
    no_ns["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("namespace");
    assert_eq!(release_namespace(&no_ns), "default");
    assert_eq!(
        plumb_helm::release::storage_namespace(&hr(json!({"targetNamespace": "apps"}))),
        "namespace"
    );
    assert_eq!(
        plumb_helm::release::storage_namespace(&hr(json!({"storageNamespace": "helm"}))),
        "helm"
    );
}

const MIXED: &str = "apiVersion: v1
kind: Pod
metadata:
  name: pod-without-labels
---
apiVersion: v1
kind: Service
metadata:
  name: service-with-labels
  labels:
    existing: label
";

fn rendered(yaml: &str) -> Vec<Rendered> {
    parse_manifest(yaml).unwrap()
}

fn values(objects: &[Rendered]) -> Vec<Value> {
    objects.iter().map(|o| o.value.clone()).collect()
}

fn yaml_values(yaml: &str) -> Vec<Value> {
    values(&rendered(yaml))
}

/// `expected` with helm-controller's origin labels for HelmRelease namespace/name added.
fn with_origin(yaml: &str) -> Vec<Value> {
    yaml_values(yaml)
        .into_iter()
        .map(|mut v| {
            let labels = v["metadata"]
                .as_object_mut()
                .unwrap()
                .entry("labels")
                .or_insert_with(|| json!({}));
            labels["helm.toolkit.fluxcd.io/name"] = json!("name");
            labels["helm.toolkit.fluxcd.io/namespace"] = json!("namespace");
            v
        })
        .collect()
}

#[test]
fn origin_labels_on_every_object() {
    let out = post_render(&hr(json!({})), rendered(MIXED)).unwrap();
    let expected = yaml_values(
        "apiVersion: v1
kind: Pod
metadata:
  labels:
    helm.toolkit.fluxcd.io/name: name
    helm.toolkit.fluxcd.io/namespace: namespace
  name: pod-without-labels
---
apiVersion: v1
kind: Service
metadata:
  labels:
    existing: label
    helm.toolkit.fluxcd.io/name: name
    helm.toolkit.fluxcd.io/namespace: namespace
  name: service-with-labels
",
    );
    assert_eq!(values(&out), expected);
}

#[test]
fn common_metadata_cases() {
    let cases = [
        (
            json!({"labels": {"foo": "bar", "baz": "qux"}, "annotations": {"annotation1": "value1", "annotation2": "value2"}}),
            "apiVersion: v1
kind: Pod
metadata:
  annotations: {annotation1: value1, annotation2: value2}
  labels: {baz: qux, foo: bar}
  name: pod-without-labels
---
apiVersion: v1
kind: Service
metadata:
  annotations: {annotation1: value1, annotation2: value2}
  labels: {baz: qux, existing: label, foo: bar}
  name: service-with-labels
",
        ),
        (
            json!({"labels": {"foo": "bar"}}),
            "apiVersion: v1
kind: Pod
metadata:
  labels: {foo: bar}
  name: pod-without-labels
---
apiVersion: v1
kind: Service
metadata:
  labels: {existing: label, foo: bar}
  name: service-with-labels
",
        ),
        (
            json!({"annotations": {"bar": "baz"}}),
            "apiVersion: v1
kind: Pod
metadata:
  annotations: {bar: baz}
  name: pod-without-labels
---
apiVersion: v1
kind: Service
metadata:
  annotations: {bar: baz}
  labels: {existing: label}
  name: service-with-labels
",
        ),
        (json!({}), MIXED),
    ];
    for (common, expected) in cases {
        let out = post_render(&hr(json!({"commonMetadata": common})), rendered(MIXED)).unwrap();
        assert_eq!(
            values(&out),
            with_origin(expected),
            "commonMetadata {common}"
        );
    }
    // A common label of the same key as an origin label loses: origin labels run last.
    let out = post_render(
        &hr(json!({"commonMetadata": {"labels": {"helm.toolkit.fluxcd.io/name": "other", "existing": "overridden"}}})),
        rendered(MIXED),
    )
    .unwrap();
    assert_eq!(
        out[1].value["metadata"]["labels"]["helm.toolkit.fluxcd.io/name"],
        "name"
    );
    assert_eq!(out[1].value["metadata"]["labels"]["existing"], "overridden");
}

const IMAGE: &str = "apiVersion: v1
kind: Pod
metadata:
  name: image
spec:
  containers:
  - image: repository/image:tag
";

const JSON6902: &str = "apiVersion: v1
kind: Pod
metadata:
  annotations:
    c: foo
  name: json6902
";

const STRATEGIC: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
spec:
  template:
    spec:
      containers:
        - name: nginx
          image: nignx:v1.0.0
";

fn kustomize(patches: Value, images: Value) -> Value {
    hr(json!({"postRenderers": [{"kustomize": {"patches": patches, "images": images}}]}))
}

#[test]
fn kustomize_post_renderer_cases() {
    let json6902_patch = "- op: test\n  path: /metadata/annotations/c\n  value: foo\n- op: remove\n  path: /metadata/annotations/c\n- op: add\n  path: /metadata/annotations/c\n  value: [ \"foo\", \"bar\" ]\n- op: replace\n  path: /metadata/annotations/c\n  value: 42\n- op: move\n  from: /metadata/annotations/c\n  path: /metadata/annotations/d\n- op: copy\n  from: /metadata/annotations/d\n  path: /metadata/annotations/e\n";
    let cases = [
        (
            "image tag",
            IMAGE,
            kustomize(json!([]), json!([{"name": "repository/image", "newTag": "0.1.0"}])),
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: image\nspec:\n  containers:\n  - image: repository/image:0.1.0\n",
        ),
        (
            "image name",
            IMAGE,
            kustomize(json!([]), json!([{"name": "repository/image", "newName": "repository/new-image"}])),
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: image\nspec:\n  containers:\n  - image: repository/new-image:tag\n",
        ),
        (
            "image digest",
            IMAGE,
            kustomize(
                json!([]),
                json!([{"name": "repository/image", "digest": "sha256:24a0c4b4a4c0eb97a1aabb8e29f18e917d05abfe1b7a7c07857230879ce7d3d3"}]),
            ),
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: image\nspec:\n  containers:\n  - image: repository/image@sha256:24a0c4b4a4c0eb97a1aabb8e29f18e917d05abfe1b7a7c07857230879ce7d3d3\n",
        ),
        (
            "targeted json 6902",
            JSON6902,
            kustomize(
                json!([{"target": {"version": "v1", "kind": "Pod", "name": "json6902"}, "patch": json6902_patch}]),
                json!([]),
            ),
            "apiVersion: v1\nkind: Pod\nmetadata:\n  annotations:\n    d: \"42\"\n    e: \"42\"\n  name: json6902\n",
        ),
        (
            "targeted strategic merge",
            STRATEGIC,
            kustomize(
                json!([{
                    "target": {"group": "apps", "version": "v1", "kind": "Deployment", "name": "nginx"},
                    "patch": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: nginx\nspec:\n  template:\n    spec:\n      containers:\n        - name: nginx\n          image: nignx:latest\n"
                }]),
                json!([]),
            ),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: nginx\nspec:\n  template:\n    spec:\n      containers:\n      - image: nignx:latest\n        name: nginx\n",
        ),
    ];
    for (name, input, release, expected) in cases {
        let out = post_render(&release, rendered(input)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(values(&out), with_origin(expected), "{name}");
    }
}

#[test]
fn post_renderers_run_in_order_and_keep_template_paths() {
    let input = "---\n# Source: app/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v1\n---\n# Source: app/templates/b.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata: {}\n";
    let release = hr(json!({
        "postRenderers": [
            {"kustomize": {"patches": [{"target": {"kind": "ConfigMap", "name": "a"}, "patch": "- op: replace\n  path: /data/k\n  value: v2\n"}]}},
            {"kustomize": {"patches": [{"target": {"kind": "ConfigMap"}, "patch": "- op: add\n  path: /data/seen\n  value: x\n"}]}}
        ],
        "commonMetadata": {"labels": {"team": "web"}}
    }));
    let out = post_render(&release, parse_manifest(input).unwrap()).unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].source.as_deref(), Some("app/templates/a.yaml"));
    assert_eq!(out[1].source.as_deref(), Some("app/templates/b.yaml"));
    assert_eq!(out[0].value["data"], json!({"k": "v2", "seen": "x"}));
    assert_eq!(out[1].value["data"], json!({"seen": "x"}));
    assert_eq!(out[0].value["metadata"]["labels"]["team"], "web");
    assert!(
        out[0].value["metadata"].get("annotations").is_none(),
        "plumb's bookkeeping annotation is gone"
    );
}

const WITH_HOOK: &str = "---
# Source: app/templates/sa.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: app
---
# Source: app/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: app:1
---
# Source: app/templates/hook-sa.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: app
  annotations:
    helm.sh/hook: pre-install
";

#[test]
fn hooks_per_post_render_strategy() {
    let patch = json!([{"target": {"kind": "ServiceAccount"}, "patch": "- op: add\n  path: /automountServiceAccountToken\n  value: false\n"}]);
    let objects = parse_manifest(WITH_HOOK).unwrap();
    assert!(objects[2].hook && !objects[0].hook);

    // combined (the default): one stream, so the hook's ServiceAccount and the template's
    // collide in kustomize, as in Helm 4.2.
    let combined = hr(json!({"postRenderers": [{"kustomize": {"patches": patch}}]}));
    let err = post_render(&combined, objects.clone())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("namespace/name") && err.contains("postRenderers[0].kustomize"),
        "{err}"
    );
    assert!(err.contains("already registered"), "{err}");

    // separate: hooks are a stream of their own, post-rendered too.
    let separate = hr(
        json!({"postRenderStrategy": "separate", "postRenderers": [{"kustomize": {"patches": patch}}]}),
    );
    let out = post_render(&separate, objects.clone()).unwrap();
    assert_eq!(out.len(), 3);
    for o in &out {
        if o.value["kind"] == "ServiceAccount" {
            assert_eq!(
                o.value["automountServiceAccountToken"], false,
                "{}",
                o.value
            );
        }
        assert_eq!(
            o.value["metadata"]["labels"]["helm.toolkit.fluxcd.io/name"],
            "name"
        );
    }
    assert!(out[2].hook);
    assert_eq!(out[2].source.as_deref(), Some("app/templates/hook-sa.yaml"));

    // nohooks: hooks are left as the chart renders them, not even origin labels.
    let nohooks = hr(
        json!({"postRenderStrategy": "nohooks", "postRenderers": [{"kustomize": {"patches": patch}}]}),
    );
    let out = post_render(&nohooks, objects.clone()).unwrap();
    assert_eq!(out[2].value, objects[2].value);
    assert_eq!(out[0].value["automountServiceAccountToken"], false);
    assert_eq!(
        out[1].value["metadata"]["labels"]["helm.toolkit.fluxcd.io/namespace"],
        "namespace"
    );

    // combined without a colliding post-renderer: hooks get the origin labels like the rest.
    let plain = post_render(&hr(json!({})), objects).unwrap();
    assert_eq!(
        plain[2].value["metadata"]["labels"]["helm.toolkit.fluxcd.io/name"],
        "name"
    );

    let bad = post_render(
        &hr(json!({"postRenderStrategy": "sometimes"})),
        parse_manifest(WITH_HOOK).unwrap(),
    );
    assert!(bad
        .unwrap_err()
        .to_string()
        .contains("unknown post-render strategy: 'sometimes'"));
}

const WITH_CRDS: &str = "---
# Source: app/crds/widgets.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: not-a-crd-in-crds
---
# Source: app/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  labels: {app: cm}
";

#[test]
fn crds_get_only_origin_labels_and_non_crds_in_crds_are_dropped() {
    let objects = parse_manifest(WITH_CRDS).unwrap();
    assert_eq!(objects.len(), 3);
    assert!(objects[0].crd && objects[1].crd && !objects[2].crd);
    let release = hr(json!({
        "commonMetadata": {"labels": {"team": "web"}, "annotations": {"a": "b"}},
        "postRenderers": [{"kustomize": {"patches": [{"target": {"name": ".*"}, "patch": "- op: add\n  path: /metadata/labels/patched\n  value: \"yes\"\n"}]}}]
    }));
    let out = post_render(&release, objects).unwrap();
    assert_eq!(
        out.len(),
        2,
        "the ConfigMap in crds/ is ignored, as helm-controller ignores it"
    );
    assert_eq!(
        out[0].value["metadata"],
        json!({"name": "widgets.example.com", "labels": {"helm.toolkit.fluxcd.io/name": "name", "helm.toolkit.fluxcd.io/namespace": "namespace"}})
    );
    assert_eq!(out[1].value["metadata"]["labels"]["team"], "web");
    assert_eq!(out[1].value["metadata"]["labels"]["patched"], "yes");
    assert_eq!(out[1].value["metadata"]["annotations"]["a"], "b");
}

#[test]
fn empty_documents_are_dropped_and_order_kept() {
    let text = "---\n# Source: c/templates/empty.yaml\n# only a comment\n---\n# Source: c/templates/b.yaml\nkind: B\napiVersion: v1\nmetadata: {name: b}\n---\n---\n# Source: c/templates/a.yaml\nkind: A\napiVersion: v1\nmetadata: {name: a}\n";
    let objects = parse_manifest(text).unwrap();
    let names: Vec<_> = objects
        .iter()
        .map(|o| o.value["kind"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["B", "A"]);
    assert_eq!(objects[1].source.as_deref(), Some("c/templates/a.yaml"));
    let err = parse_manifest("---\n# Source: c/templates/x.yaml\nkind: [\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("c/templates/x.yaml"), "{err}");
}
