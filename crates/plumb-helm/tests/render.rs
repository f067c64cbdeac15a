//! Charts rendered through plumb's `Helm::template` compared, object by object, with the same
//! `helm template` typed out by hand: the comparison is the test. A missing helm is a failure
//! (run scripts/ensure-helm), never a skip.

use plumb_helm::{
    parse_manifest, prepare_offline, CrdPolicy, Helm, RenderError, SchemaPlan, Template,
};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn helm() -> Helm {
    Helm::find().unwrap_or_else(|e| {
        panic!("these tests need Helm: run scripts/ensure-helm and set PLUMB_HELM to target/test-venv/bin/helm ({e})")
    })
}

fn chart(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/charts")
        .join(name)
}

/// `helm template` run directly: `args` are everything after the chart, values as a YAML file.
fn helm_direct(
    helm: &Helm,
    release: &str,
    chart: &Path,
    values: &str,
    args: &[&str],
) -> Result<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("values.yaml");
    std::fs::write(&file, values).unwrap();
    let out = Command::new(helm.path())
        .arg("template")
        .arg(release)
        .arg(chart)
        .arg("-f")
        .arg(&file)
        .args(args)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(String::from_utf8(out.stderr).unwrap().trim().to_string())
    }
}

fn objects(text: &str) -> Vec<(Option<String>, bool, Value)> {
    parse_manifest(text)
        .unwrap()
        .into_iter()
        .map(|r| (r.source, r.hook, r.value))
        .collect()
}

fn kinds(text: &str) -> Vec<String> {
    parse_manifest(text)
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}/{}",
                r.value["kind"].as_str().unwrap(),
                r.value["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect()
}

const APP_VALUES: &str =
    "requiredValue: set\nsub:\n  message: from-release\nglobal:\n  env: prod\nreplicas: 3\n";

fn app_values() -> Value {
    json!({"requiredValue": "set", "sub": {"message": "from-release"}, "global": {"env": "prod"}, "replicas": 3})
}

#[test]
fn install_with_crds_hooks_subchart_library_and_capabilities_matches_helm() {
    let helm = helm();
    assert_eq!(helm.version(), "v4.2.3");
    let values = app_values();
    let apis = vec![
        "monitoring.coreos.com/v1".to_string(),
        "monitoring.coreos.com/v1/ServiceMonitor".to_string(),
    ];
    let t = Template {
        chart_dir: &chart("app"),
        release_name: "web",
        namespace: "apps",
        values: &values,
        kube_version: "1.33.0",
        api_versions: &apis,
        crds: CrdPolicy::Create,
        hooks: true,
        is_upgrade: false,
        skip_schema_validation: false,
        set: &[],
    };
    let ours = helm.template(&t).unwrap();
    let direct = helm_direct(
        &helm,
        "web",
        &chart("app"),
        APP_VALUES,
        &[
            "--namespace",
            "apps",
            "--kube-version",
            "1.33.0",
            "--api-versions",
            "monitoring.coreos.com/v1",
            "--api-versions",
            "monitoring.coreos.com/v1/ServiceMonitor",
            "--include-crds",
        ],
    )
    .unwrap();
    assert_eq!(objects(&ours), objects(&direct));
    assert_eq!(
        kinds(&ours),
        [
            "CustomResourceDefinition/widgets.example.com",
            "ConfigMap/not-a-crd-in-crds",
            "CustomResourceDefinition/gadgets.example.com",
            "ConfigMap/web-sub",
            "Service/web-app",
            "Deployment/web-app",
            "ServiceMonitor/web-app",
            "Pod/web-app-test",
            "Job/web-app-migrate",
        ]
    );
    let parsed = parse_manifest(&ours).unwrap();
    let deployment = parsed
        .iter()
        .find(|r| r.value["kind"] == "Deployment")
        .unwrap();
    assert_eq!(
        deployment.source.as_deref(),
        Some("app/templates/deployment.yaml")
    );
    assert!(!deployment.hook && !deployment.crd);
    let env = &deployment.value["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(
        env[0]["value"], "hello web in apps",
        "tpl renders against the release"
    );
    assert_eq!(env[1]["value"], "set");
    assert_eq!(env[2]["value"], "false", "an install");
    assert_eq!(env[3]["value"], "v1.33.0");
    assert_eq!(deployment.value["spec"]["replicas"], 3);
    assert_eq!(
        deployment.value["metadata"]["labels"]["app.kubernetes.io/version"], "4.5.6",
        "library chart's include"
    );
    let sub = parsed
        .iter()
        .find(|r| r.value["metadata"]["name"] == "web-sub")
        .unwrap();
    assert_eq!(
        sub.value["data"],
        json!({"message": "from-release", "global": "prod"})
    );
    let crds: Vec<_> = parsed
        .iter()
        .filter(|r| r.crd)
        .map(|r| r.source.clone().unwrap())
        .collect();
    assert_eq!(
        crds,
        [
            "app/crds/widgets.yaml",
            "app/crds/widgets.yaml",
            "app/charts/sub/crds/gadgets.yaml"
        ]
    );
    assert_eq!(parsed.iter().filter(|r| r.hook).count(), 2);
}

#[test]
fn upgrade_without_crds_hooks_or_subchart_matches_helm() {
    let helm = helm();
    let values = json!({"requiredValue": "set", "sub": {"enabled": false}});
    let t = Template {
        chart_dir: &chart("app"),
        release_name: "web",
        namespace: "apps",
        values: &values,
        kube_version: "1.31.2",
        api_versions: &[],
        crds: CrdPolicy::Skip,
        hooks: false,
        is_upgrade: true,
        skip_schema_validation: false,
        set: &[],
    };
    let ours = helm.template(&t).unwrap();
    let direct = helm_direct(
        &helm,
        "web",
        &chart("app"),
        "requiredValue: set\nsub:\n  enabled: false\n",
        &[
            "--namespace",
            "apps",
            "--kube-version",
            "1.31.2",
            "--no-hooks",
            "--is-upgrade",
        ],
    )
    .unwrap();
    assert_eq!(objects(&ours), objects(&direct));
    assert_eq!(kinds(&ours), ["Service/web-app", "Deployment/web-app"]);
    let parsed = parse_manifest(&ours).unwrap();
    let env = &parsed[1].value["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(env[2]["value"], "true", "an upgrade");
    assert_eq!(env[3]["value"], "v1.31.2");
}

#[test]
fn a_failing_required_is_helms_error_verbatim() {
    let helm = helm();
    let values = json!({});
    let t = Template {
        chart_dir: &chart("app"),
        release_name: "web",
        namespace: "apps",
        values: &values,
        kube_version: "1.33.0",
        api_versions: &[],
        crds: CrdPolicy::Create,
        hooks: true,
        is_upgrade: false,
        skip_schema_validation: false,
        set: &[],
    };
    let err = helm.template(&t).unwrap_err();
    let direct = helm_direct(
        &helm,
        "web",
        &chart("app"),
        "{}\n",
        &[
            "--namespace",
            "apps",
            "--kube-version",
            "1.33.0",
            "--include-crds",
        ],
    )
    .unwrap_err();
    assert!(direct.contains("requiredValue is required"), "{direct}");
    match &err {
        RenderError::Helm {
            stderr, release, ..
        } => {
            assert_eq!(stderr, &direct);
            assert_eq!(release, "web");
        }
        other => panic!("not a helm error: {other}"),
    }
    assert!(err.to_string().contains("fixtures/charts/app"), "{err}");
}

#[test]
fn a_random_value_differs_between_renders_and_nothing_else_does() {
    let helm = helm();
    let values = json!({});
    let t = Template {
        chart_dir: &chart("random"),
        release_name: "r",
        namespace: "default",
        values: &values,
        kube_version: "1.33.0",
        api_versions: &[],
        crds: CrdPolicy::Create,
        hooks: true,
        is_upgrade: false,
        skip_schema_validation: false,
        set: &[],
    };
    let first = objects(&helm.template(&t).unwrap());
    let second = objects(&helm.template(&t).unwrap());
    let direct = objects(
        &helm_direct(
            &helm,
            "r",
            &chart("random"),
            "{}\n",
            &["--kube-version", "1.33.0"],
        )
        .unwrap(),
    );
    let token = |o: &Vec<(Option<String>, bool, Value)>| {
        o[0].2["stringData"]["token"].as_str().unwrap().to_string()
    };
    assert_ne!(
        token(&first),
        token(&second),
        "randAlphaNum is random on every render"
    );
    assert_eq!(token(&first).len(), 24);
    let masked = |mut o: Vec<(Option<String>, bool, Value)>| {
        o[0].2["stringData"]["token"] = json!("masked");
        o
    };
    assert_eq!(masked(first.clone()), masked(second));
    assert_eq!(masked(first), masked(direct));
}

fn schema_template<'a>(dir: &'a Path, values: &'a Value, skip: bool) -> Template<'a> {
    Template {
        chart_dir: dir,
        release_name: "s",
        namespace: "default",
        values,
        kube_version: "1.33.0",
        api_versions: &[],
        crds: CrdPolicy::Create,
        hooks: true,
        is_upgrade: false,
        skip_schema_validation: skip,
        set: &[],
    }
}

fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(tree(&path));
        } else {
            out.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn a_schema_ref_url_the_chart_ships_is_validated_offline() {
    let helm = helm();
    let original = chart("schema-shipped");
    let before = tree(&original);
    // Offline, helm itself fails: it fetches the URL.
    let direct_err =
        helm_direct(&helm, "s", &original, "{}\n", &["--kube-version", "1.33.0"]).unwrap_err();
    assert!(
        direct_err.contains("https://schemas.example.invalid/common/v1/defs.json"),
        "{direct_err}"
    );

    let plan = prepare_offline(&original).unwrap();
    assert!(!plan.skip_validation, "{:?}", plan.notes);
    assert_ne!(plan.chart_dir, original, "rewritten in a copy");
    assert_eq!(plan.notes.len(), 2, "{:?}", plan.notes);
    assert!(
        plan.notes
            .iter()
            .any(|n| n.contains("defs.json#/$defs/port") && n.contains("schemas/defs.json")),
        "{:?}",
        plan.notes
    );
    assert!(
        plan.notes
            .iter()
            .any(|n| n.contains("v1/port.json") && n.contains("schemas/port.json")),
        "{:?}",
        plan.notes
    );

    let values = json!({"port": 8080, "name": "web"});
    let ours = helm
        .template(&schema_template(
            &plan.chart_dir,
            &values,
            plan.skip_validation,
        ))
        .unwrap();
    let direct = helm_direct(
        &helm,
        "s",
        &original,
        "port: 8080\nname: web\n",
        &["--kube-version", "1.33.0", "--skip-schema-validation"],
    )
    .unwrap();
    let strip = |o: Vec<(Option<String>, bool, Value)>| {
        o.into_iter()
            .map(|(s, h, v)| (s.map(|s| s.replace("schema-shipped", "chart")), h, v))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(objects(&ours)), strip(objects(&direct)));
    assert_eq!(kinds(&ours), ["ConfigMap/s-web"]);

    // Validation really runs, through the shipped files: the port's range is in port.json.
    let bad = json!({"port": 70000, "name": "web"});
    let err = helm
        .template(&schema_template(
            &plan.chart_dir,
            &bad,
            plan.skip_validation,
        ))
        .unwrap_err();
    match err {
        RenderError::Helm { stderr, .. } => assert!(
            stderr.contains("/port") && stderr.contains("want 65,535"),
            "{stderr}"
        ),
        other => panic!("{other}"),
    }
    let bad_name = json!({"port": 80, "name": ""});
    assert!(
        helm.template(&schema_template(&plan.chart_dir, &bad_name, false))
            .is_err(),
        "the local #/$defs ref still validates"
    );
    assert_eq!(
        tree(&original),
        before,
        "the chart itself is never modified"
    );
}

#[test]
fn a_schema_ref_url_the_chart_does_not_ship_skips_validation_with_a_note() {
    let helm = helm();
    let original = chart("schema-remote");
    let plan = prepare_offline(&original).unwrap();
    assert!(plan.skip_validation);
    assert_eq!(plan.chart_dir, original, "nothing to rewrite");
    assert_eq!(plan.notes.len(), 1);
    assert!(
        plan.notes[0].contains("https://kubernetesjsonschema.invalid/v1.33.0/_definitions.json"),
        "{}",
        plan.notes[0]
    );
    assert!(
        plan.notes[0].contains("values.schema.json"),
        "{}",
        plan.notes[0]
    );

    let values = json!({"resources": {"limits": {"cpu": "1"}}});
    assert_renders_unvalidated_as_helm(&helm, &plan, &original, &values);
}

/// With a schema `$ref` to a URL nothing ships: validating fails offline (helm fetches it), and
/// the plan's render (validation skipped) gives what `helm template --skip-schema-validation`
/// gives.
fn assert_renders_unvalidated_as_helm(
    helm: &Helm,
    plan: &SchemaPlan,
    chart: &Path,
    values: &Value,
) {
    let without = helm
        .template(&schema_template(chart, values, false))
        .unwrap_err();
    assert!(
        without.to_string().contains("kubernetesjsonschema.invalid"),
        "{without}"
    );
    let ours = helm
        .template(&schema_template(
            &plan.chart_dir,
            values,
            plan.skip_validation,
        ))
        .unwrap();
    // JSON is YAML: the same values, as a file for helm itself.
    let direct = helm_direct(
        helm,
        "s",
        chart,
        &values.to_string(),
        &["--kube-version", "1.33.0", "--skip-schema-validation"],
    )
    .unwrap();
    assert_eq!(objects(&ours), objects(&direct));
    assert_eq!(kinds(&ours), ["ConfigMap/s-remote"]);
}

#[test]
fn a_relative_schema_ref_fails_as_it_fails_in_the_controller() {
    // Helm compiles every schema as file:///values.schema.json: `defs.json` is /defs.json for
    // helm and helm-controller alike, so plumb neither rewrites nor skips it.
    let helm = helm();
    let original = chart("schema-local");
    let plan = prepare_offline(&original).unwrap();
    assert!(!plan.skip_validation);
    assert!(plan.notes.is_empty());
    assert_eq!(plan.chart_dir, original);
    let values = json!({"x": 1});
    let err = helm
        .template(&schema_template(&plan.chart_dir, &values, false))
        .unwrap_err();
    let direct = helm_direct(
        &helm,
        "s",
        &original,
        "x: 1\n",
        &["--kube-version", "1.33.0"],
    )
    .unwrap_err();
    assert!(direct.contains("file:///defs.json"), "{direct}");
    match err {
        RenderError::Helm { stderr, .. } => assert_eq!(stderr, direct),
        other => panic!("{other}"),
    }
}

#[test]
fn helm_versions_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let fake = |name: &str, script: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::os::unix::fs::PermissionsExt::set_mode(
            &mut std::fs::metadata(&path).unwrap().permissions(),
            0o755,
        );
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).unwrap();
        path
    };
    let old = fake("old", "printf v3.16.2");
    let err = Helm::at(&old).unwrap_err().to_string();
    assert!(
        err.contains("v3.16.2") && err.contains("3.17") && err.contains("old"),
        "{err}"
    );
    let new3 = fake("new3", "printf v3.19.0");
    assert_eq!(Helm::at(&new3).unwrap().version(), "v3.19.0");
    let broken = fake("broken", "echo boom >&2; exit 1");
    let err = Helm::at(&broken).unwrap_err().to_string();
    assert!(err.contains("boom") && err.contains("broken"), "{err}");
    let missing = dir.path().join("absent");
    assert!(Helm::at(&missing)
        .unwrap_err()
        .to_string()
        .contains("absent"));
    assert_eq!(helm().version(), "v4.2.3");
}

#[test]
fn a_real_render_post_rendered_as_helm_controller_would() {
    let helm = helm();
    let release = json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "web", "namespace": "flux-apps"},
        "spec": {
            "targetNamespace": "apps",
            "commonMetadata": {"labels": {"team": "web"}},
            "postRenderers": [{"kustomize": {"images": [{"name": "ghcr.io/example/app", "newTag": "2.0"}]}}]
        }
    });
    let name = plumb_helm::release_name(&release);
    let namespace = plumb_helm::release_namespace(&release);
    assert_eq!((name.as_str(), namespace.as_str()), ("apps-web", "apps"));
    let values = app_values();
    let t = Template {
        chart_dir: &chart("app"),
        release_name: &name,
        namespace: &namespace,
        values: &values,
        kube_version: "1.33.0",
        api_versions: &[],
        crds: CrdPolicy::Create,
        hooks: true,
        is_upgrade: false,
        skip_schema_validation: false,
        set: &[],
    };
    let objects = parse_manifest(&helm.template(&t).unwrap()).unwrap();
    let out = plumb_helm::post_render(&release, objects).unwrap();
    let names: Vec<String> = out
        .iter()
        .map(|r| {
            format!(
                "{}/{}",
                r.value["kind"].as_str().unwrap(),
                r.value["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            "CustomResourceDefinition/widgets.example.com",
            "CustomResourceDefinition/gadgets.example.com",
            "ConfigMap/apps-web-sub",
            "Service/apps-web-app",
            "Deployment/apps-web-app",
            "Pod/apps-web-app-test",
            "Job/apps-web-app-migrate",
        ],
        "the ConfigMap in crds/ is dropped, the order is helm's"
    );
    let origin = json!({"helm.toolkit.fluxcd.io/name": "web", "helm.toolkit.fluxcd.io/namespace": "flux-apps"});
    assert_eq!(
        out[0].value["metadata"]["labels"], origin,
        "CRDs: origin labels only"
    );
    for o in &out[2..] {
        let labels = &o.value["metadata"]["labels"];
        assert_eq!(labels["team"], "web", "{}", o.value);
        assert_eq!(labels["helm.toolkit.fluxcd.io/namespace"], "flux-apps");
    }
    let image = |kind: &str| {
        let o = out.iter().find(|o| o.value["kind"] == kind).unwrap();
        o.value["spec"]["template"]["spec"]["containers"][0]["image"].clone()
    };
    assert_eq!(image("Deployment"), "ghcr.io/example/app:2.0");
    assert_eq!(
        image("Job"),
        "ghcr.io/example/app:2.0",
        "combined: hooks are post-rendered too"
    );
    assert!(out[6].hook && out[6].source.as_deref() == Some("app/templates/hooks.yaml"));
}

#[test]
fn a_packed_subchart_with_a_url_ref_skips_validation_with_a_note() {
    let helm = helm();
    let dir = tempfile::tempdir().unwrap();
    let parent = dir.path().join("parent");
    std::fs::create_dir_all(parent.join("charts")).unwrap();
    std::fs::write(
        parent.join("Chart.yaml"),
        "apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n  - name: schema-remote\n    version: 0.1.0\n",
    )
    .unwrap();
    let packed = Command::new(helm.path())
        .arg("package")
        .arg(chart("schema-remote"))
        .arg("--destination")
        .arg(parent.join("charts"))
        .output()
        .unwrap();
    assert!(
        packed.status.success(),
        "{}",
        String::from_utf8_lossy(&packed.stderr)
    );

    let plan = prepare_offline(&parent).unwrap();
    assert!(plan.skip_validation);
    assert_eq!(plan.notes.len(), 1, "{:?}", plan.notes);
    assert!(
        plan.notes[0].contains("charts/schema-remote-0.1.0.tgz")
            && plan.notes[0].contains("kubernetesjsonschema.invalid"),
        "{}",
        plan.notes[0]
    );
    assert_renders_unvalidated_as_helm(&helm, &plan, &parent, &json!({}));
}
