//! `plumb build` rendering the helmfile releases applied at bootstrap with a real helm
//! (`PLUMB_HELM`, installed by scripts/ensure-helm): a chart of a `repositories:` entry served
//! by a loopback HTTP Helm repository, an `oci://` chart on a real `docker-registry`, a chart
//! directory next to the helmfile; values files and inline maps merged in order, `set:`; each
//! release's objects compared with `helm template` run directly. A release with a `.gotmpl`
//! values file is not rendered and says so; a missing values file fails at the release's
//! line. The CRD only a bootstrap chart ships is served to the Flux HelmReleases' charts
//! (`.Capabilities.APIVersions`) and counts as present before Flux in `plumb check`.

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

/// The chart `operator`: the CRD of `Gadget` in `crds/`, a Deployment with replicas and image
/// from values, a ConfigMap of `greeting` and `extra` that also says whether Gadgets are
/// served.
fn operator_chart(dir: &Path) {
    write(
        dir,
        "Chart.yaml",
        "apiVersion: v2\nname: operator\nversion: 1.0.0\n",
    );
    write(
        dir,
        "values.yaml",
        "replicas: 1\nimage: nginx:1.0\ngreeting: hello\nextra: none\n",
    );
    write(
        dir,
        "templates/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: {{ .Values.replicas }}\n  template:\n    spec:\n      containers:\n        - name: operator\n          image: {{ .Values.image }}\n",
    );
    write(
        dir,
        "templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\n  namespace: {{ .Release.Namespace }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  extra: {{ .Values.extra | quote }}\n{{- if .Capabilities.APIVersions.Has \"example.com/v1/Gadget\" }}\n  gadgets: served\n{{- end }}\n",
    );
    write(
        dir,
        "crds/gadgets.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.example.com\nspec:\n  group: example.com\n  names: {kind: Gadget, plural: gadgets}\n  scope: Namespaced\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema: {openAPIV3Schema: {type: object}}\n",
    );
}

/// A chart of one ConfigMap saying whether Gadgets are served, and `mode`.
fn probe_chart(dir: &Path, name: &str, version: &str) {
    write(
        dir,
        "Chart.yaml",
        &format!("apiVersion: v2\nname: {name}\nversion: {version}\n"),
    );
    write(dir, "values.yaml", "mode: slow\n");
    write(
        dir,
        "templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  mode: {{ .Values.mode | quote }}\n  gadgets: {{ if .Capabilities.APIVersions.Has \"example.com/v1/Gadget\" }}served{{ else }}absent{{ end }}\n",
    );
}

/// Serves `operator` 1.0.0 from a loopback HTTP Helm repository; the chart's source directory.
fn serve_operator(tmp: &Path) -> (HttpServer, PathBuf) {
    let src = tmp.join("src/operator");
    operator_chart(&src);
    let bytes = std::fs::read(package(&src, &tmp.join("pkg"))).unwrap();
    let index = format!(
        "apiVersion: v1\nentries:\n  operator:\n  - name: operator\n    version: 1.0.0\n    digest: {}\n    urls: [operator-1.0.0.tgz]\n",
        digest(&bytes)
    );
    let server = HttpServer::start_bytes(&[
        ("/index.yaml", index.as_bytes()),
        ("/operator-1.0.0.tgz", &bytes),
    ]);
    (server, src)
}

/// What helm applies of `helm template`'s output: namespaced objects that name no namespace
/// go in the release's.
fn as_applied(mut v: Value, namespace: &str) -> Value {
    if v["kind"] != "CustomResourceDefinition" {
        let meta = v["metadata"].as_object_mut().unwrap();
        if !meta.contains_key("namespace") {
            meta.insert("namespace".into(), namespace.into());
        }
    }
    v
}

fn named<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {list:#}"))
}

fn object<'a>(release: &'a Value, kind: &str) -> &'a Value {
    release["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {release:#}"))
}

#[test]
fn helmfile_releases_render_before_flux_as_helm_template_renders_them() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, operator_src) = serve_operator(tmp.path());
    let registry = registry::Registry::start();
    let agent_src = tmp.path().join("src/agent");
    probe_chart(&agent_src, "agent", "0.3.0");
    run(std::process::Command::new(helm())
        .arg("push")
        .arg(package(&agent_src, &tmp.path().join("pkg")))
        .arg(format!("oci://{}/charts", registry.host()))
        .arg("--plain-http"));

    let repo = tmp.path().join("repo");
    cluster(&repo);
    write(
        &repo,
        "bootstrap/helmfile.yaml",
        &format!(
            "repositories:\n  - name: local\n    url: http://127.0.0.1:{}\nreleases:\n  - name: operator\n    namespace: operators\n    chart: local/operator\n    version: 1.0.0\n    values:\n      - values/operator.yaml\n      - replicas: 2\n        greeting: inline\n    set:\n      - name: image\n        value: busybox:1.36\n  - name: agent\n    namespace: kube-system\n    chart: oci://{}/charts/agent\n    version: 0.3.0\n    values:\n      - mode: fast\n  - name: templated\n    namespace: operators\n    chart: local/operator\n    version: 1.0.0\n    values:\n      - values/templated.yaml.gotmpl\n",
            server.port,
            registry.host()
        ),
    );
    write(
        &repo,
        "bootstrap/values/operator.yaml",
        "replicas: 1\ngreeting: from-file\nextra: kept\n",
    );
    write(
        &repo,
        "bootstrap/values/templated.yaml.gotmpl",
        "greeting: {{ requiredEnv \"GREETING\" }}\n",
    );
    // A Flux HelmRelease whose chart asks whether Gadgets are served (only the bootstrap chart
    // ships their CRD), and a Gadget applied by Flux.
    probe_chart(&repo.join("charts/probe"), "probe", "0.1.0");
    write(
        &repo,
        "apps/release.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: probe, namespace: apps}\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: ./charts/probe\n      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n---\napiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: first, namespace: apps}\n",
    );
    let cache = tmp.path().join("cache");

    let (code, doc, stderr) = build_json(&repo, &cache, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let bootstrap = &doc["bootstrap_releases"];
    assert_eq!(bootstrap.as_array().unwrap().len(), 3, "{bootstrap:#}");

    // The repository chart: values files and inline maps merged in order, then `set:`; the
    // objects those of `helm template` with the same inputs, CRDs included, no Flux labels.
    let operator = named(bootstrap, "operator");
    assert_eq!(operator["status"], "built", "{operator:#}");
    assert_eq!(operator["kustomization"], "bootstrap/helmfile.yaml");
    assert_eq!(operator["release_namespace"], "operators");
    assert_eq!(operator["chart"]["version"], "1.0.0");
    let values = tmp.path().join("inline.yaml");
    std::fs::write(&values, "replicas: 2\ngreeting: inline\n").unwrap();
    let expected: Vec<Value> = objects_of(&run(std::process::Command::new(helm())
        .args(["template", "operator"])
        .arg(&operator_src)
        .args([
            "--namespace",
            "operators",
            "--kube-version",
            "1.34.0",
            "--include-crds",
            "--api-versions",
            "example.com/v1",
            "--api-versions",
            "example.com/v1/Gadget",
        ])
        .arg("-f")
        .arg(repo.join("bootstrap/values/operator.yaml"))
        .arg("-f")
        .arg(&values)
        .args(["--set", "image=busybox:1.36"])))
    .into_iter()
    .map(|v| as_applied(v, "operators"))
    .collect();
    let got = operator["objects"].as_array().unwrap();
    assert_eq!(got.len(), expected.len(), "{got:#?}");
    for e in &expected {
        assert!(got.contains(e), "missing {e:#}\nin {got:#?}");
    }
    let settings = object(operator, "ConfigMap");
    assert_eq!(settings["data"]["greeting"], "inline");
    assert_eq!(settings["data"]["extra"], "kept");
    assert_eq!(settings["data"]["gadgets"], "served");
    assert!(settings["metadata"]["labels"]["helm.toolkit.fluxcd.io/name"].is_null());
    assert_eq!(
        object(operator, "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"],
        "busybox:1.36"
    );

    // The OCI chart.
    let agent = named(bootstrap, "agent");
    assert_eq!(agent["status"], "built", "{agent:#}");
    assert_eq!(agent["chart"]["version"], "0.3.0");
    let cm = object(agent, "ConfigMap");
    assert_eq!(cm["data"]["mode"], "fast");
    assert_eq!(cm["metadata"]["namespace"], "kube-system");

    // Templating is not evaluated: said, never guessed.
    let templated = named(bootstrap, "templated");
    assert_eq!(templated["status"], "not-built", "{templated:#}");
    assert!(
        templated["reason"].as_str().unwrap().contains(
            "helmfile templating is not evaluated (values file values/templated.yaml.gotmpl)"
        ),
        "{templated:#}"
    );
    assert!(templated["objects"].as_array().unwrap().is_empty());
    assert!(
        stderr.contains("not rendered helmfile release operators/templated (bootstrap/helmfile.yaml): helmfile templating is not evaluated"),
        "{stderr}"
    );
    assert!(
        stderr.contains("; 3 bootstrap releases: 2 rendered, 1 not rendered"),
        "{stderr}"
    );

    // The Flux chart is rendered for a cluster that serves the bootstrap chart's CRD.
    let probe = named(&doc["helm_releases"], "probe");
    assert_eq!(probe["status"], "built", "{probe:#}");
    assert_eq!(object(probe, "ConfigMap")["data"]["gadgets"], "served");
    assert_eq!(object(probe, "ConfigMap")["data"]["mode"], "slow");

    // Unchanged, the render comes from the cache; offline with the servers gone, the charts
    // too.
    let (_, again, _) = build_json(&repo, &cache, &[]);
    let operator_again = named(&again["bootstrap_releases"], "operator");
    assert_eq!(operator_again["cached"], true, "{operator_again:#}");
    assert_eq!(operator_again["objects"], operator["objects"]);
    assert_eq!(operator["cached"], false);
    drop(server);
    let (code, offline, stderr) = {
        let (code, stdout, stderr) = plumb(&repo, &cache, &["build", "-o", "json", "--offline"]);
        (
            code,
            serde_json::from_str::<Value>(&stdout).unwrap(),
            stderr,
        )
    };
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        named(&offline["bootstrap_releases"], "operator")["objects"],
        operator["objects"]
    );

    // YAML: the bootstrap releases first, each titled with its helmfile and chart.
    let (_, yaml, stderr) = plumb(&repo, &cache, &["build"]);
    let first = yaml
        .find("# Source: helmfile release operators/operator (bootstrap/helmfile.yaml, chart operator 1.0.0)")
        .unwrap_or_else(|| panic!("{yaml}\n{stderr}"));
    let agent_at = yaml
        .find("# Source: helmfile release kube-system/agent (bootstrap/helmfile.yaml, chart agent 0.3.0)")
        .unwrap();
    let flux = yaml.find("# Source: Kustomization").unwrap();
    assert!(first < agent_at && agent_at < flux, "{yaml}");
    assert!(
        !yaml.contains("helmfile release operators/templated"),
        "{yaml}"
    );

    // plumb check: the Gadget's CRD is in the cluster before Flux applies it.
    let (_, out, stderr) = plumb(&repo, &cache, &["check"]);
    let said = format!("{out}{stderr}");
    assert!(!said.contains("ORD001"), "{said}");
    // Without helm the bootstrap chart is not seen: the Gadget's kind is not reported (it may
    // come from there) but counted as not checked.
    let (_, out, stderr) = plumb(&repo, &cache, &["check", "--no-helm"]);
    let said = format!("{out}{stderr}");
    assert!(!said.contains("ORD001"), "{said}");
    assert!(said.contains("1 kind not checked"), "{said}");
}

#[test]
fn a_chart_directory_renders_and_a_missing_values_file_fails_at_its_release() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    cluster(&repo);
    // The apps Kustomization substitutes from the ConfigMap a bootstrap release renders.
    write(
        &repo,
        "clusters/dev/apps.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec:\n  interval: 10m\n  path: ./apps\n  sourceRef: {kind: GitRepository, name: flux-system}\n  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: base\n",
    );
    write(
        &repo,
        "apps/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: apps}\ndata:\n  mode: ${mode}\n",
    );
    probe_chart(&repo.join("kubernetes/charts/base"), "base", "0.2.0");
    write(
        &repo,
        "bootstrap/helmfile/core.yaml",
        "releases:\n  - name: base\n    namespace: flux-system\n    chart: ../../kubernetes/charts/base\n    values:\n      - mode: quick\n  - name: broken\n    chart: ../../kubernetes/charts/base\n    values:\n      - values/absent.yaml\n",
    );
    let cache = tmp.path().join("cache");
    let (code, doc, stderr) = build_json(&repo, &cache, &[]);
    assert_eq!(code, Some(1), "a failed release fails the build: {stderr}");
    let bootstrap = &doc["bootstrap_releases"];

    let base = named(bootstrap, "base");
    assert_eq!(base["status"], "built", "{base:#}");
    assert_eq!(base["release_namespace"], "flux-system");
    let expected: Vec<Value> = objects_of(&run(std::process::Command::new(helm())
        .args(["template", "base"])
        .arg(repo.join("kubernetes/charts/base"))
        .args([
            "--namespace",
            "flux-system",
            "--kube-version",
            "1.34.0",
            "--include-crds",
            "--set",
            "mode=quick",
        ])))
    .into_iter()
    .map(|v| as_applied(v, "flux-system"))
    .collect();
    assert_eq!(base["objects"].as_array().unwrap(), &expected);
    assert_eq!(object(base, "ConfigMap")["data"]["gadgets"], "absent");

    let broken = named(bootstrap, "broken");
    assert_eq!(broken["status"], "failed", "{broken:#}");
    let e = &broken["errors"][0];
    assert_eq!(e["file"], "bootstrap/helmfile/core.yaml", "{e:#}");
    assert_eq!(e["line"], 7, "{e:#}");
    let message = e["message"].as_str().unwrap();
    assert!(
        // No namespace: helm's default.
        message.contains("helmfile release default/broken")
            && message.contains("values/absent.yaml"),
        "{message}"
    );
    assert!(
        stderr.contains("bootstrap/helmfile/core.yaml:7"),
        "{stderr}"
    );
    assert!(
        stderr.contains("; 2 bootstrap releases: 1 rendered, 1 failed"),
        "{stderr}"
    );
    // The Flux side still builds, and reads what the bootstrap release rendered.
    let apps = named(&doc["kustomizations"], "apps");
    assert_eq!(apps["status"], "built", "{apps:#}");
    assert_eq!(apps["objects"][0]["data"]["mode"], "quick", "{apps:#}");
}
