//! PIN001 on what charts render, with a real helm (`PLUMB_HELM`, installed by
//! scripts/ensure-helm): an image the HelmRelease's values set is reported at those values,
//! once; an image from the chart's defaults at the HelmRelease's chart, naming the chart.

mod common;

use plumb_check::{check, CheckConfig, Finding};
use plumb_flux::build::{build_repository, Options};
use plumb_flux::helm_release::{LazyRenderer, Renderer};
use plumb_helm::helm::Helm;
use std::path::Path;
use std::sync::Arc;

fn write(root: &Path, file: &str, text: &str) {
    let path = root.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A repository whose `apps` Kustomization holds two HelmReleases of the chart `web`, kept
/// in the repository itself: `web` overrides only the tag of the chart's main image, `pinned`
/// writes the whole main image. The chart's exporter image is its own default for both.
fn repository(root: &Path) {
    write(
        root,
        ".plumb.yaml",
        "clusters:\n  - clusters/dev\nsources:\n  - kind: GitRepository\n    namespace: flux-system\n    name: flux-system\n    path: .\n",
    );
    write(
        root,
        "clusters/dev/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - flux-system.yaml\n  - apps.yaml\n",
    );
    write(
        root,
        "clusters/dev/flux-system.yaml",
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: https://git.example.com/platform.git\n  ref:\n    branch: main\n",
    );
    write(
        root,
        "clusters/dev/apps.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 30m\n  path: ./apps\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    );
    write(
        root,
        "apps/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: web\nresources:\n  - releases.yaml\n",
    );
    let release = |name: &str, values: &str| {
        format!("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: {name}\nspec:\n  interval: 30m\n  chart:\n    spec:\n      chart: ./charts/web\n      sourceRef:\n        kind: GitRepository\n        name: flux-system\n        namespace: flux-system\n  values:\n{values}")
    };
    write(
        root,
        "apps/releases.yaml",
        &[
            release("web", "    image:\n      tag: 1.1.0\n"),
            release(
                "pinned",
                "    image:\n      repository: ghcr.io/example/web\n      tag: 2.0.0\n",
            ),
        ]
        .join("---\n"),
    );
    write(
        root,
        "charts/web/Chart.yaml",
        "apiVersion: v2\nname: web\nversion: 0.3.0\n",
    );
    write(
        root,
        "charts/web/values.yaml",
        "image:\n  repository: ghcr.io/example/web\n  tag: 1.0.0\nexporter:\n  image: quay.io/example/exporter:0.9.0\n",
    );
    write(
        root,
        "charts/web/templates/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  selector:\n    matchLabels: {app: {{ .Release.Name }}}\n  template:\n    metadata:\n      labels: {app: {{ .Release.Name }}}\n    spec:\n      containers:\n        - name: web\n          image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n        - name: exporter\n          image: {{ .Values.exporter.image | quote }}\n",
    );
}

fn findings(root: &Path) -> Vec<Finding> {
    let renderer = LazyRenderer::new(|| {
        let helm = Helm::find().map_err(|e| e.to_string())?;
        Ok(Renderer {
            helm: Arc::new(helm),
            cache: None,
        })
    });
    let options = Options {
        renderer: Some(renderer),
        ..Options::default()
    };
    let build = build_repository(root, &options).expect("the repository builds");
    let mut rendered: Vec<_> = build
        .entries
        .iter()
        .flat_map(|e| &e.releases)
        .map(|r| (r.key(), r.objects.len()))
        .collect();
    rendered.sort();
    assert_eq!(
        rendered,
        [("web/pinned".to_string(), 1), ("web/web".to_string(), 1)],
        "both releases render their Deployment (is PLUMB_HELM a helm?)"
    );
    check(&build.root, &build, &CheckConfig::default())
        .into_iter()
        .filter(|f| f.code == "PIN001")
        .collect()
}

#[test]
fn rendered_images_point_at_the_values_that_set_them_or_at_the_chart() {
    assert!(
        std::env::var_os("PLUMB_HELM").is_some(),
        "PLUMB_HELM is not set: run scripts/ensure-helm and export PLUMB_HELM (scripts/test does)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    repository(root);
    let found = findings(root);
    let shown: Vec<(String, &str)> = found
        .iter()
        .map(|f| {
            let l = f.location.as_ref().expect("a location");
            (common::place(l), f.message.as_str())
        })
        .collect();
    let at = |place: &str| -> Vec<&str> {
        shown
            .iter()
            .filter(|(p, _)| p == place)
            .map(|(_, m)| *m)
            .collect()
    };
    // `web`'s tag: the chart's repository with the values' tag, at the tag.
    let web_tag = at("apps/releases.yaml:16:12");
    assert_eq!(web_tag.len(), 1, "{shown:#?}");
    assert!(
        web_tag[0].contains("`ghcr.io/example/web:1.1.0` of HelmRelease web "),
        "{}",
        web_tag[0]
    );
    // `pinned` writes the image whole: the values' finding, not a second one from the render.
    let pinned_tag = at("apps/releases.yaml:34:12");
    assert_eq!(pinned_tag.len(), 1, "{shown:#?}");
    assert!(
        pinned_tag[0].contains("`ghcr.io/example/web:2.0.0` of HelmRelease pinned "),
        "{}",
        pinned_tag[0]
    );
    // The exporter is the chart's default: at each HelmRelease's chart, naming the chart.
    for place in ["apps/releases.yaml:9:14", "apps/releases.yaml:26:14"] {
        let chart = at(place);
        assert_eq!(chart.len(), 1, "{place}: {shown:#?}");
        assert!(
            chart[0].contains("`quay.io/example/exporter:0.9.0`, rendered by chart `web` 0.3.0")
                && chart[0].contains("comes from the chart's defaults"),
            "{}",
            chart[0]
        );
    }
    assert_eq!(found.len(), 4, "{shown:#?}");
    let help = &found
        .iter()
        .find(|f| f.message.contains("exporter"))
        .unwrap()
        .help;
    assert!(help.contains("through the HelmRelease's values"), "{help}");
}
