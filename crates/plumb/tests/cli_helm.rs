//! `plumb build` rendering HelmReleases with a real helm (`PLUMB_HELM`, installed by
//! scripts/ensure-helm): charts from an HTTP HelmRepository served on loopback, from a chart
//! directory of the repository itself, and from an OCIRepository on a real `docker-registry`;
//! each release's objects compared object by object with `helm template` run directly with the
//! same values and flags; bad input (no such chart, no version satisfies, a missing values
//! ConfigMap, a template error) reported at the HelmRelease's file and line while the rest
//! builds; the render cache; `--no-helm`.

#[path = "support/cli.rs"]
mod cli;
#[path = "support/helm.rs"]
mod helm;
#[path = "../../plumb-source/tests/support/http_server.rs"]
mod http_server;
#[path = "../../plumb-source/tests/support/registry.rs"]
mod registry;

use cli::write;
use helm::{build_json, cluster, digest, helm, objects_of, package, plumb, run};
use http_server::HttpServer;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Writes the chart `web` at `dir`: a Deployment with replicas and image from values and labels
/// from a library chart (`include`), a ConfigMap through `tpl`, a subchart, a CRD in `crds/`,
/// a hook Job, a template that fails with `required` when `fail` is set, and a values schema
/// whose `$ref` is a URL the chart ships (its `$id`).
fn web_chart(dir: &Path, version: &str) {
    write(
        dir,
        "Chart.yaml",
        &format!("apiVersion: v2\nname: web\nversion: {version}\ndependencies:\n  - name: lib\n    version: 0.1.0\n  - name: sub\n    version: 0.1.0\n"),
    );
    write(
        dir,
        "charts/lib/Chart.yaml",
        "apiVersion: v2\nname: lib\nversion: 0.1.0\ntype: library\n",
    );
    write(
        dir,
        "charts/lib/templates/_labels.tpl",
        "{{- define \"lib.labels\" -}}\napp.kubernetes.io/name: {{ .Release.Name }}\napp.kubernetes.io/managed-by: {{ .Release.Service }}\n{{- end -}}\n",
    );
    write(
        dir,
        "charts/sub/Chart.yaml",
        "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
    );
    write(dir, "charts/sub/values.yaml", "colour: blue\n");
    write(
        dir,
        "charts/sub/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-sub\ndata:\n  colour: {{ .Values.colour }}\n",
    );
    write(
        dir,
        "values.schema.json",
        "{\"$schema\": \"https://json-schema.org/draft-07/schema#\", \"type\": \"object\", \"properties\": {\"replicas\": {\"$ref\": \"https://example.com/schemas/replicas.json\"}}}\n",
    );
    write(
        dir,
        "schemas/replicas.json",
        "{\"$id\": \"https://example.com/schemas/replicas.json\", \"type\": \"integer\", \"minimum\": 0, \"maximum\": 100}\n",
    );
    write(
        dir,
        "values.yaml",
        "replicas: 1\nimage: nginx:1.0\ngreeting: hello\nsettings:\n  mode: '{{ .Release.Name }}-mode'\n",
    );
    write(
        dir,
        "templates/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n  labels:\n    chart: {{ .Chart.Name }}-{{ .Chart.Version }}\n    {{- include \"lib.labels\" . | nindent 4 }}\nspec:\n  replicas: {{ .Values.replicas }}\n  template:\n    spec:\n      containers:\n        - name: web\n          image: {{ .Values.image }}\n",
    );
    write(
        dir,
        "templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  mode: {{ tpl .Values.settings.mode . | quote }}\n{{- if .Capabilities.APIVersions.Has \"example.com/v1/Widget\" }}\n  widgets: served\n{{- end }}\n",
    );
    write(
        dir,
        "templates/required.yaml",
        "{{- if .Values.fail }}\n{{ required \"a value for .Values.mustSet is required\" .Values.mustSet }}\n{{- end }}\n",
    );
    write(
        dir,
        "templates/hook.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-migrate\n  annotations:\n    helm.sh/hook: pre-install\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n        - name: m\n          image: busybox\n",
    );
    write(
        dir,
        "crds/widgets.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema: {openAPIV3Schema: {type: object}}\n",
    );
}

fn release<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["helm_releases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no HelmRelease {name} in {doc:#}"))
}

/// Asserts that `got`, a release `web` in `apps` as plumb renders it, holds exactly the objects
/// `helm template` prints for `chart` with `values` and the same flags (the chart's CRD served),
/// as helm-controller applies them.
fn assert_same_objects(got: &[Value], chart: &Path, values: &Path) {
    let expected: Vec<Value> = objects_of(&run(std::process::Command::new(helm())
        .args(["template", "web"])
        .arg(chart)
        .args([
            "--namespace",
            "apps",
            "--kube-version",
            "1.34.0",
            "--include-crds",
            // helm itself would fetch the schema's $ref from the network: the reference render
            // skips validation, which does not change what a valid render prints.
            "--skip-schema-validation",
        ])
        .args([
            "--api-versions",
            "example.com/v1",
            "--api-versions",
            "example.com/v1/Widget",
        ])
        .arg("-f")
        .arg(values)))
    .into_iter()
    .map(|v| as_applied(v, "web", "apps"))
    .collect();
    assert_eq!(got.len(), expected.len(), "{got:#?}");
    for e in &expected {
        assert!(got.contains(e), "missing {e:#}\nin {got:#?}");
    }
}

/// What helm-controller adds to what `helm template` prints: its origin labels, and the
/// release namespace on namespaced objects that name none (as it applies them).
fn as_applied(mut v: Value, name: &str, namespace: &str) -> Value {
    let cluster_scoped = v["kind"] == "CustomResourceDefinition";
    let meta = v["metadata"].as_object_mut().unwrap();
    if !cluster_scoped && !meta.contains_key("namespace") {
        meta.insert("namespace".into(), namespace.into());
    }
    let labels = meta
        .entry("labels")
        .or_insert_with(|| Value::Object(Default::default()))
        .as_object_mut()
        .unwrap();
    labels.insert("helm.toolkit.fluxcd.io/name".into(), name.into());
    labels.insert("helm.toolkit.fluxcd.io/namespace".into(), namespace.into());
    v
}

/// A repository whose `apps` Kustomization holds HelmReleases of the chart `web` from the
/// HelmRepository at `repo_url`, and one of the chart directory `charts/local` of the
/// repository itself.
fn flux_repo(root: &Path, repo_url: &str) {
    cluster(root);
    write(
        root,
        "apps/sources.yaml",
        &format!("apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {{name: charts, namespace: apps}}\nspec:\n  interval: 1h\n  url: {repo_url}\n"),
    );
    write(
        root,
        "apps/values.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-values, namespace: apps}\ndata:\n  values.yaml: |\n    image: nginx:1.27\n    greeting: from-configmap\n",
    );
    let hr = |name: &str, version: &str, extra: &str| {
        format!("---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: web\n      version: \"{version}\"\n      sourceRef: {{kind: HelmRepository, name: charts}}\n{extra}")
    };
    let mut releases = String::new();
    releases.push_str(&hr(
        "web",
        ">=1.0.0 <2.0.0",
        "  valuesFrom:\n    - kind: ConfigMap\n      name: web-values\n    - kind: ConfigMap\n      name: absent-but-optional\n      optional: true\n  values:\n    replicas: 3\n",
    ));
    releases.push_str(&hr("no-version", "9.x", ""));
    releases.push_str(&hr(
        "no-values",
        "1.0.0",
        "  valuesFrom:\n    - kind: ConfigMap\n      name: not-there\n",
    ));
    releases.push_str(&hr("broken", "1.0.0", "  values:\n    fail: true\n"));
    releases.push_str(&hr("too-many", "1.0.0", "  values:\n    replicas: 500\n"));
    releases.push_str("---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: no-chart, namespace: apps}\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: nothing-of-that-name\n      sourceRef: {kind: HelmRepository, name: charts}\n");
    releases.push_str("---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: local, namespace: apps}\nspec:\n  interval: 1h\n  targetNamespace: team\n  chart:\n    spec:\n      chart: ./charts/local\n      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n      valuesFiles: [charts/local/values.yaml, charts/local/values-prod.yaml]\n");
    write(root, "apps/releases.yaml", &releases);
    write(
        root,
        "apps/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [sources.yaml, values.yaml, releases.yaml]\n",
    );
    web_chart(&root.join("charts/local"), "0.1.0");
    write(root, "charts/local/values-prod.yaml", "replicas: 2\n");
}

/// The index of an HTTP Helm repository holding `web` at each version, with relative URLs (as
/// `helm repo index` writes them).
fn index(digests: &[(&str, String)]) -> String {
    let mut text = "apiVersion: v1\nentries:\n  web:\n".to_string();
    for (version, digest) in digests {
        text.push_str(&format!(
            "  - name: web\n    version: {version}\n    digest: {digest}\n    urls: [web-{version}.tgz]\n"
        ));
    }
    text
}

/// Serves `web` 1.0.0 and 1.2.0 from a loopback HTTP Helm repository.
fn serve_web(tmp: &Path) -> (HttpServer, PathBuf) {
    let pkg = tmp.join("pkg");
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut digests = Vec::new();
    for version in ["1.0.0", "1.2.0"] {
        let src = tmp.join(format!("src/web-{version}"));
        web_chart(&src, version);
        let bytes = std::fs::read(package(&src, &pkg)).unwrap();
        digests.push((version, digest(&bytes)));
        files.push((format!("/web-{version}.tgz"), bytes));
    }
    files.push(("/index.yaml".into(), index(&digests).into_bytes()));
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    let server = HttpServer::start_bytes(&refs);
    (server, tmp.join("src/web-1.2.0"))
}

#[test]
fn helm_releases_render_as_helm_template_renders_them() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, chart_1_2) = serve_web(tmp.path());
    let repo = tmp.path().join("repo");
    flux_repo(&repo, &format!("http://127.0.0.1:{}", server.port));
    let cache = tmp.path().join("cache");

    let (code, doc, stderr) = build_json(&repo, &cache, &[]);
    assert_eq!(
        code,
        Some(1),
        "failed releases make the build fail: {stderr}"
    );

    // `web`: 1.2.0 is the highest in the range; valuesFrom, then spec.values.
    let web = release(&doc, "web");
    assert_eq!(web["status"], "built", "{web:#}");
    assert_eq!(web["chart"]["version"], "1.2.0");
    assert_eq!(web["release_name"], "web");
    let values = tmp.path().join("web-values.yaml");
    std::fs::write(
        &values,
        "image: nginx:1.27\ngreeting: from-configmap\nreplicas: 3\n",
    )
    .unwrap();
    let got = web["objects"].as_array().unwrap();
    assert_same_objects(got, &chart_1_2, &values);
    // The chart's own CRD is served to the chart (Capabilities), as in the cluster.
    let cm = got
        .iter()
        .find(|o| o["metadata"]["name"] == "web-settings")
        .unwrap();
    assert_eq!(cm["data"]["widgets"], "served");
    assert_eq!(cm["data"]["mode"], "web-mode");

    // A chart directory of the repository, valuesFiles replacing values.yaml, targetNamespace.
    let local = release(&doc, "local");
    assert_eq!(local["status"], "built", "{local:#}");
    assert_eq!(local["release_name"], "team-local");
    let deployment = local["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .unwrap();
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(deployment["metadata"]["namespace"], "team");
    assert_eq!(deployment["metadata"]["name"], "team-local");

    // Bad input: each a failed release with an error at the HelmRelease's file and line.
    let at_line = |name: &str, code: &str, words: &[&str]| {
        let r = release(&doc, name);
        assert_eq!(r["status"], "failed", "{r:#}");
        let e = &r["errors"][0];
        assert_eq!(e["code"], code, "{e:#}");
        assert_eq!(e["file"], "apps/releases.yaml", "{e:#}");
        assert!(e["line"].as_u64().unwrap() > 1, "{e:#}");
        let message = e["message"].as_str().unwrap();
        for w in words {
            assert!(message.contains(w), "{message:?} lacks {w:?}");
        }
    };
    at_line("no-version", "chart-not-ready", &["web", "9.x"]);
    at_line("no-chart", "chart-not-ready", &["nothing-of-that-name"]);
    at_line("no-values", "values-not-found", &["web 1.0.0", "not-there"]);
    at_line(
        "broken",
        "render-failed",
        &["web", "a value for .Values.mustSet is required"],
    );
    assert!(stderr.contains("apps/releases.yaml:"), "{stderr}");

    // Everything else was built.
    let apps = doc["kustomizations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "apps")
        .unwrap();
    assert_eq!(apps["status"], "built");

    // Unchanged releases come from the render cache the second time, with the same objects.
    let (_, again, _) = build_json(&repo, &cache, &[]);
    let web_again = release(&again, "web");
    assert_eq!(web_again["cached"], true);
    assert_eq!(web_again["objects"], web["objects"]);
    assert_eq!(web["cached"], false);

    // Offline, from the cache, with the server gone.
    drop(server);
    let (_, offline, stderr) = build_json(&repo, &cache, &["--offline"]);
    assert_eq!(
        release(&offline, "web")["objects"],
        web["objects"],
        "{stderr}"
    );

    // --no-helm: nothing rendered, said once, the Kustomizations still built.
    let (code, none, stderr) = build_json(&repo, &cache, &["--no-helm"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(release(&none, "web")["status"], "not-built");
    assert!(
        !stderr.contains("warning: HelmReleases are not rendered"),
        "{stderr}"
    );
}

#[test]
fn a_release_that_renders_differently_each_time_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    cluster(&repo);
    write(
        &repo,
        "charts/random/Chart.yaml",
        "apiVersion: v2\nname: random\nversion: 0.1.0\n",
    );
    write(
        &repo,
        "charts/random/templates/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: generated\nstringData:\n  password: {{ randAlphaNum 24 | quote }}\n",
    );
    write(
        &repo,
        "apps/release.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: random, namespace: apps}\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: ./charts/random\n      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n",
    );
    let cache = tmp.path().join("cache");
    let (_, doc, stderr) = build_json(&repo, &cache, &[]);
    let r = release(&doc, "random");
    assert_eq!(r["status"], "built", "{r:#} {stderr}");
    let e = &r["errors"][0];
    assert_eq!(e["code"], "render-nondeterministic", "{r:#}");
    assert_eq!(e["severity"], "warning");
    assert!(
        e["message"].as_str().unwrap().contains("Secret/generated"),
        "{e:#}"
    );
    assert!(stderr.contains("--> apps/release.yaml:5"), "{stderr}");
    // A cached render keeps saying so.
    let (_, again, _) = build_json(&repo, &cache, &[]);
    assert_eq!(
        release(&again, "random")["errors"][0]["code"],
        "render-nondeterministic"
    );
}

#[test]
fn a_chart_ref_to_an_oci_repository_renders_from_the_registry() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = registry::Registry::start();
    let src = tmp.path().join("src/web");
    web_chart(&src, "2.0.0");
    let tgz = tmp.path().join("pkg");
    package(&src, &tgz);
    run(std::process::Command::new(helm())
        .arg("push")
        .arg(tgz.join("web-2.0.0.tgz"))
        .arg(format!("oci://{}/charts", registry.host()))
        .arg("--plain-http"));
    let repo = tmp.path().join("repo");
    cluster(&repo);
    write(
        &repo,
        "apps/release.yaml",
        &format!("apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {{name: web, namespace: apps}}\nspec:\n  interval: 1h\n  url: oci://{}/charts/web\n  ref: {{tag: 2.0.0}}\n  layerSelector:\n    mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip\n    operation: copy\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: web, namespace: apps}}\nspec:\n  interval: 1h\n  chartRef: {{kind: OCIRepository, name: web}}\n  values: {{replicas: 4}}\n", registry.host()),
    );
    let cache = tmp.path().join("cache");
    let (code, doc, stderr) = build_json(&repo, &cache, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let r = release(&doc, "web");
    assert_eq!(r["status"], "built", "{r:#}");
    assert_eq!(r["chart"]["version"], "2.0.0");
    assert!(
        r["chart"]["digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:"),
        "{r:#}"
    );
    let values = tmp.path().join("values.yaml");
    std::fs::write(&values, "replicas: 4\n").unwrap();
    let got = r["objects"].as_array().unwrap();
    assert_same_objects(got, &src, &values);
    let deployment = got.iter().find(|o| o["kind"] == "Deployment").unwrap();
    assert_eq!(deployment["spec"]["replicas"], 4);
    assert_eq!(
        deployment["metadata"]["labels"]["app.kubernetes.io/name"], "web",
        "the library chart's include"
    );
    assert!(
        got.iter().any(|o| o["metadata"]["name"] == "web-sub"),
        "the subchart's ConfigMap"
    );
    // The YAML output groups the release's objects after its Kustomization's.
    let (_, yaml, _) = plumb(&repo, &cache, &["build"]);
    let ks = yaml
        .find("# Source: Kustomization flux-system/apps")
        .unwrap();
    let hr = yaml
        .find("# Source: HelmRelease apps/web (chart web 2.0.0")
        .unwrap();
    assert!(ks < hr, "{yaml}");
}

#[test]
fn helm_is_looked_for_only_when_a_release_is_to_render() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    cluster(&repo);
    write(
        &repo,
        "apps/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: apps}\n",
    );
    let cache = tmp.path().join("cache");
    let no_helm = tmp.path().join("no-helm-here");
    let build = || {
        let out = assert_cmd::Command::cargo_bin("plumb")
            .unwrap()
            .args(["build", "-o", "json", "--cache-dir"])
            .arg(&cache)
            .arg(&repo)
            .env("PLUMB_CONFIG", cache.join("no-user-config.yaml"))
            .env("PLUMB_HELM", &no_helm)
            .output()
            .unwrap();
        (
            out.status.code(),
            serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Nothing to render: the unusable helm is never looked at, and nothing is said.
    let (code, _, stderr) = build();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");

    // A release to render: said once, the release not rendered with the reason, the rest built.
    write(
        &repo,
        "apps/release.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: local, namespace: apps}\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: ./charts/local\n      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n",
    );
    web_chart(&repo.join("charts/local"), "0.1.0");
    let (code, doc, stderr) = build();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stderr
            .matches("warning: HelmReleases are not rendered")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains(&no_helm.display().to_string()), "{stderr}");
    let r = release(&doc, "local");
    assert_eq!(r["status"], "not-built");
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .starts_with("HelmReleases are not rendered: "),
        "{r:#}"
    );
}
