//! `plumb check` over releases rendered by a real helm (`PLUMB_HELM`, installed by
//! scripts/ensure-helm): DET001 for a chart that renders differently each time (a HelmRelease
//! and a helmfile release, each reported once, not again as BLD002), OWN002 for a helmfile
//! release adopted by a HelmRelease of another chart version or other values (charts served by
//! a loopback HTTP Helm repository), silent when the helmfile's values are templated; the
//! `good` fixtures of plumb-check's DET001 and OWN002 through the CLI, each of their releases
//! rendered. The text output is an insta snapshot.

#[path = "support/cli.rs"]
mod cli;
#[path = "support/helm.rs"]
mod helm;
#[path = "../../plumb-source/tests/support/http_server.rs"]
mod http_server;

use cli::{copy_dir, write};
use helm::{cluster, digest, package, plumb};
use http_server::HttpServer;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// plumb-check's fixture `CODE/KIND`.
fn fixture(code: &str, kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plumb-check/tests/fixtures")
        .join(code)
        .join(kind)
}

/// `plumb check --color never` and `--format json`: exit code, text, the JSON findings,
/// stderr of the text run.
fn check(repo: &Path, cache: &Path, extra: &[&str]) -> (Option<i32>, String, Vec<Value>, String) {
    let mut args = vec!["check", "--color", "never"];
    args.extend_from_slice(extra);
    let (code, text, stderr) = plumb(repo, cache, &args);
    args.extend_from_slice(&["--format", "json"]);
    let (_, json, _) = plumb(repo, cache, &args);
    let doc: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    let findings = doc["findings"].as_array().cloned().unwrap_or_default();
    (code, text, findings, stderr)
}

fn codes(findings: &[Value]) -> Vec<&str> {
    findings
        .iter()
        .map(|f| f["code"].as_str().unwrap_or(""))
        .collect()
}

fn snapshot(name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(name, text));
}

#[test]
fn a_release_that_renders_differently_each_time_is_det001_once() {
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
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-admin\nstringData:\n  password: {{ randAlphaNum 24 | quote }}\n",
    );
    write(
        &repo,
        "charts/random/templates/configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-stamp\n  annotations:\n    rendered-at: {{ now | date \"15:04:05.000000000\" | quote }}\ndata:\n  stable: \"yes\"\n",
    );
    write(
        &repo,
        "apps/release.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: random\n  namespace: apps\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: ./charts/random\n      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n",
    );
    write(
        &repo,
        "bootstrap/helmfile.yaml",
        "releases:\n  - name: random-bootstrap\n    namespace: kube-system\n    chart: ../charts/random\n",
    );
    let cache = tmp.path().join("cache");

    let (code, text, findings, stderr) = check(&repo, &cache, &[]);
    // A warning: the exit code stays 0.
    assert_eq!(code, Some(0), "{text}\n{stderr}");
    assert_eq!(codes(&findings), ["DET001", "DET001"], "{text}");
    let release = &findings[0];
    assert_eq!(release["file"], "apps/release.yaml");
    assert_eq!(release["line"], 4, "{release:#}");
    assert_eq!(release["severity"], "warning");
    let message = release["message"].as_str().unwrap();
    assert!(
        message.starts_with("HelmRelease apps/random: chart random 0.1.0 renders differently")
            && message.contains("Secret/random-admin (stringData.password)")
            && message.contains("ConfigMap/random-stamp (metadata.annotations.rendered-at)"),
        "{message}"
    );
    let helmfile = &findings[1];
    assert_eq!(helmfile["file"], "bootstrap/helmfile.yaml");
    assert_eq!(helmfile["line"], 2, "{helmfile:#}");
    assert!(
        helmfile["message"]
            .as_str()
            .unwrap()
            .starts_with("helmfile release kube-system/random-bootstrap: chart random 0.1.0"),
        "{helmfile:#}"
    );
    snapshot("DET001_bad", &text);

    // BLD002 leaves the build's diagnostic to DET001; from the render cache, the same.
    let (_, _, bld, _) = check(&repo, &cache, &["--select", "BLD002"]);
    assert!(bld.is_empty(), "{bld:#?}");
    let (_, again, _, _) = check(&repo, &cache, &[]);
    assert_eq!(again, text);
}

/// The chart `cilium` of plumb-check's OWN002 fixture at `version`, packaged.
fn cilium_chart(tmp: &Path, version: &str) -> Vec<u8> {
    let src = tmp.join(format!("src/cilium-{version}"));
    copy_dir(&fixture("OWN002", "good").join("charts/cilium"), &src);
    write(
        &src,
        "Chart.yaml",
        &format!("apiVersion: v2\nname: cilium\nversion: {version}\n"),
    );
    std::fs::read(package(&src, &tmp.join("pkg"))).unwrap()
}

/// Serves `cilium` 1.17.4 and 1.18.0 from a loopback HTTP Helm repository.
fn serve_cilium(tmp: &Path) -> HttpServer {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut index = "apiVersion: v1\nentries:\n  cilium:\n".to_string();
    for version in ["1.17.4", "1.18.0"] {
        let bytes = cilium_chart(tmp, version);
        index.push_str(&format!(
            "  - name: cilium\n    version: {version}\n    digest: {}\n    urls: [cilium-{version}.tgz]\n",
            digest(&bytes)
        ));
        files.push((format!("/cilium-{version}.tgz"), bytes));
    }
    files.push(("/index.yaml".into(), index.into_bytes()));
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    HttpServer::start_bytes(&refs)
}

/// A repository whose bootstrap installs cilium 1.17.4 with `tunnel: geneve` from the helmfile
/// repository at `port`, and whose HelmRelease adopts it at `version` with `tunnel`.
fn adoption(root: &Path, port: u16, version: &str, tunnel: &str) {
    cluster(root);
    write(
        root,
        "bootstrap/helmfile.yaml",
        &format!("repositories:\n  - name: cilium\n    url: http://127.0.0.1:{port}\nreleases:\n  - name: cilium\n    namespace: kube-system\n    chart: cilium/cilium\n    version: 1.17.4\n    values:\n      - values/cilium.yaml\n"),
    );
    write(root, "bootstrap/values/cilium.yaml", "tunnel: geneve\n");
    write(
        root,
        "apps/cilium.yaml",
        &format!("apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: cilium\n  namespace: kube-system\nspec:\n  interval: 1h\n  url: http://127.0.0.1:{port}\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: cilium\n  namespace: kube-system\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: cilium\n      version: {version}\n      sourceRef:\n        kind: HelmRepository\n        name: cilium\n  values:\n    tunnel: {tunnel}\n"),
    );
}

#[test]
fn a_bootstrap_release_adopted_with_another_version_or_values_is_own002() {
    let tmp = tempfile::tempdir().unwrap();
    let server = serve_cilium(tmp.path());
    let cache = tmp.path().join("cache");

    // The same chart version and values: the two renders are the same objects once Flux's
    // origin labels are left aside.
    let same = tmp.path().join("same");
    adoption(&same, server.port, "1.17.4", "geneve");
    let (code, text, findings, stderr) = check(&same, &cache, &[]);
    assert_eq!(
        (code, text.as_str()),
        (Some(0), "No findings.\n"),
        "{stderr}"
    );
    assert!(findings.is_empty());
    let (_, build, _) = helm::build_json(&same, &cache, &[]);
    assert_eq!(build["helm_releases"][0]["status"], "built", "{build:#}");
    assert_eq!(
        build["bootstrap_releases"][0]["status"], "built",
        "{build:#}"
    );

    // Another version.
    let version = tmp.path().join("version");
    adoption(&version, server.port, "1.18.0", "geneve");
    let (code, text, findings, stderr) = check(&version, &cache, &[]);
    assert_eq!(code, Some(1), "{text}\n{stderr}");
    assert_eq!(codes(&findings), ["OWN002"], "{text}");
    let f = &findings[0];
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .ends_with("but not as installed: chart version 1.17.4 at bootstrap, 1.18.0 in Flux"),
        "{f:#}"
    );
    assert_eq!(
        (&f["file"], &f["line"]),
        (&"apps/cilium.yaml".into(), &20.into()),
        "{f:#}"
    );
    assert_eq!(f["related"][0]["file"], "bootstrap/helmfile.yaml");
    assert_eq!(f["related"][0]["line"], 8, "{f:#}");
    snapshot("OWN002_bad_version", &text);

    // Other values: the objects that differ, and the field.
    let values = tmp.path().join("values");
    adoption(&values, server.port, "1.17.4", "vxlan");
    let (code, text, findings, stderr) = check(&values, &cache, &[]);
    assert_eq!(code, Some(1), "{text}\n{stderr}");
    assert_eq!(codes(&findings), ["OWN002"], "{text}");
    let f = &findings[0];
    assert!(
        f["message"].as_str().unwrap().ends_with(
            "rendered objects differ: DaemonSet kube-system/cilium (spec.template.spec.containers[0].args[0])"
        ),
        "{f:#}"
    );
    assert_eq!(f["line"], 25, "{f:#}");
    snapshot("OWN002_bad_values", &text);

    // Values computed by helmfile templating are not known: nothing is compared.
    write(
        &values,
        "bootstrap/helmfile.yaml",
        &format!("repositories:\n  - name: cilium\n    url: http://127.0.0.1:{}\nreleases:\n  - name: cilium\n    namespace: kube-system\n    chart: cilium/cilium\n    values:\n      - values/cilium.yaml.gotmpl\n", server.port),
    );
    write(
        &values,
        "bootstrap/values/cilium.yaml.gotmpl",
        "tunnel: {{ env \"TUNNEL\" | default \"geneve\" }}\n",
    );
    let (code, _, findings, stderr) = check(&values, &cache, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(findings.is_empty(), "{findings:#?}");
}

#[test]
fn the_good_fixtures_of_det001_and_own002_are_good_with_helm() {
    for code in ["DET001", "OWN002"] {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        copy_dir(&fixture(code, "good"), &repo);
        let cache = tmp.path().join("cache");
        let (status, text, _, stderr) = check(&repo, &cache, &[]);
        assert_eq!(
            (status, text.as_str()),
            (Some(0), "No findings.\n"),
            "{code}: {stderr}"
        );
        // Every release was rendered: the rules had something to compare.
        let (_, build, _) = helm::build_json(&repo, &cache, &[]);
        let releases: Vec<&Value> = build["helm_releases"]
            .as_array()
            .unwrap()
            .iter()
            .chain(build["bootstrap_releases"].as_array().unwrap())
            .collect();
        assert_eq!(releases.len(), 2, "{code}: {build:#}");
        for r in releases {
            assert_eq!(r["status"], "built", "{code}: {r:#}");
        }
    }
}
