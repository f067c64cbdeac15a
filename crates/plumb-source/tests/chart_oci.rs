//! Charts from OCI registries, against a real `docker-registry` on loopback that a real Helm
//! pushed them to: a HelmRepository of `type: oci` (exact versions, ranges, latest, `+` in
//! versions, credentials, offline, the errors) and an OCIRepository holding a chart
//! (`spec.chartRef`).

use std::fs;
use std::path::Path;

use plumb_source::{
    Cache, ChartError, Credentials, LayerOperation, LayerSelector, Mode, OciChartSource, OciRef,
    OciSource,
};

#[path = "support/registry.rs"]
mod registry;
use registry::{sha256, Registry, FLUX_CONTENT};

#[path = "support/helm_cli.rs"]
mod helm_cli;
use helm_cli::Helm;

const USER: &str = "charts";
const PASSWORD: &str = "oci-Pa55word";

fn chart_yaml(dir: &Path) -> String {
    fs::read_to_string(dir.join("Chart.yaml")).unwrap()
}

fn source(repo_url: &str, version: &str) -> OciChartSource {
    OciChartSource {
        repo_url: repo_url.to_owned(),
        chart: "podinfo".into(),
        version: version.into(),
        ..OciChartSource::default()
    }
}

#[test]
fn versions_are_chosen_among_the_tags_as_source_controller_does() {
    let registry = Registry::start();
    let helm = Helm::new();
    let work = tempfile::tempdir().unwrap();
    let repo_url = registry.url("charts");
    let mut digests = std::collections::BTreeMap::new();
    for version in ["1.0.0", "1.1.0", "1.2.0-rc.1", "2.0.0+build.1"] {
        let tgz = helm.chart(&work.path().join(version), "podinfo", version);
        digests.insert(version, sha256(&fs::read(&tgz).unwrap()));
        helm.push(&tgz, &repo_url, None);
    }
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(cache_dir.path());

    let exact = cache
        .fetch_oci_chart(&source(&repo_url, "1.0.0"), Mode::Online)
        .unwrap();
    assert_eq!(
        (exact.name.as_str(), exact.version.as_str()),
        ("podinfo", "1.0.0")
    );
    assert_eq!(
        exact.digest, digests["1.0.0"],
        "the digest is the chart .tgz's"
    );
    assert!(chart_yaml(&exact.dir).contains("version: 1.0.0"));
    assert_eq!(
        fs::read_to_string(exact.dir.join("values.yaml")).unwrap(),
        "chart: podinfo\n"
    );
    assert!(exact.dir.join("templates/configmap.yaml").is_file());

    let range = cache
        .fetch_oci_chart(&source(&repo_url, ">=1.0.0 <2.0.0"), Mode::Online)
        .unwrap();
    assert_eq!(
        range.version, "1.1.0",
        "a pre-release is not in a plain range"
    );
    let pre = cache
        .fetch_oci_chart(&source(&repo_url, ">=1.0.0-0 <2.0.0"), Mode::Online)
        .unwrap();
    assert_eq!(pre.version, "1.2.0-rc.1");

    // Latest stable, whose tag Helm wrote as 2.0.0_build.1.
    for latest in ["", "*"] {
        let chart = cache
            .fetch_oci_chart(&source(&repo_url, latest), Mode::Online)
            .unwrap();
        assert_eq!(chart.version, "2.0.0+build.1", "{latest:?}");
        assert_eq!(chart.digest, digests["2.0.0+build.1"]);
        assert!(chart_yaml(&chart.dir).contains("version: 2.0.0+build.1"));
    }
    let plus = cache
        .fetch_oci_chart(&source(&repo_url, "2.0.0+build.1"), Mode::Online)
        .unwrap();
    assert_eq!(plus.version, "2.0.0+build.1");

    // The registry answered and nothing satisfies: the error names all three.
    let none = cache
        .fetch_oci_chart(&source(&repo_url, ">=3.0.0"), Mode::Online)
        .unwrap_err();
    assert!(matches!(none, ChartError::NoVersion { .. }), "{none}");
    assert!(none.is_source_error());
    let text = none.to_string();
    for part in [repo_url.as_str(), "podinfo", ">=3.0.0", "1.1.0"] {
        assert!(text.contains(part), "{part} in {text}");
    }

    // No such chart, by exact version and by range.
    for version in ["1.0.0", "*"] {
        let missing = OciChartSource {
            chart: "absent".into(),
            ..source(&repo_url, version)
        };
        let err = cache.fetch_oci_chart(&missing, Mode::Online).unwrap_err();
        assert!(err.is_source_error(), "{err}");
        assert!(
            err.to_string().contains(&format!("{repo_url}/absent")),
            "{err}"
        );
    }
    // No such version, exactly.
    let err = cache
        .fetch_oci_chart(&source(&repo_url, "9.9.9"), Mode::Online)
        .unwrap_err();
    assert!(err.is_source_error(), "{err}");
    assert!(err.to_string().contains("9.9.9"), "{err}");

    // Without the registry: exact versions and resolved ranges come from the cache.
    drop(registry);
    for mode in [Mode::Online, Mode::Offline] {
        let cached = cache
            .fetch_oci_chart(&source(&repo_url, "1.0.0"), mode)
            .unwrap();
        assert_eq!(cached.dir, exact.dir);
        assert_eq!(cached.digest, exact.digest);
    }
    let offline = cache
        .fetch_oci_chart(&source(&repo_url, ">=1.0.0 <2.0.0"), Mode::Offline)
        .unwrap();
    assert_eq!(offline.version, "1.1.0");
    assert_eq!(offline.dir, range.dir);
    let never = cache
        .fetch_oci_chart(&source(&repo_url, "<1.0.0"), Mode::Offline)
        .unwrap_err();
    assert!(matches!(never, ChartError::NotCached { .. }), "{never}");
    assert!(!never.is_source_error());
    let unreachable = cache
        .fetch_oci_chart(&source(&repo_url, "<1.0.0"), Mode::Online)
        .unwrap_err();
    assert!(!unreachable.is_source_error(), "{unreachable}");
    assert!(unreachable.to_string().contains(&repo_url), "{unreachable}");
}

#[test]
fn credentials_from_the_secret_username_password_or_dockerconfigjson() {
    let hash = bcrypt::hash(PASSWORD, 4).unwrap();
    let registry =
        Registry::start_with_htpasswd(&format!("{USER}:{hash}"), &format!("{USER}:{PASSWORD}"));
    let helm = Helm::new();
    let work = tempfile::tempdir().unwrap();
    let repo_url = registry.url("private");
    let tgz = helm.chart(work.path(), "podinfo", "3.1.0");
    helm.push(&tgz, &repo_url, Some((USER, PASSWORD)));
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(cache_dir.path());

    let anonymous = cache
        .fetch_oci_chart(&source(&repo_url, "3.x"), Mode::Online)
        .unwrap_err();
    assert!(!anonymous.is_source_error(), "{anonymous}");
    assert!(anonymous.to_string().contains(&repo_url), "{anonymous}");

    let with_password = OciChartSource {
        credentials: Some(Credentials {
            username: USER.into(),
            password: PASSWORD.into(),
        }),
        ..source(&repo_url, "3.x")
    };
    let chart = cache.fetch_oci_chart(&with_password, Mode::Online).unwrap();
    assert_eq!(chart.version, "3.1.0");
    assert!(chart_yaml(&chart.dir).contains("version: 3.1.0"));

    let wrong = OciChartSource {
        credentials: Some(Credentials {
            username: USER.into(),
            password: "wrong".into(),
        }),
        ..source(&repo_url, "3.1.0")
    };
    // A fresh cache: the cache keys charts by user name, never by password.
    let fresh = tempfile::tempdir().unwrap();
    let err = Cache::new(fresh.path())
        .fetch_oci_chart(&wrong, Mode::Online)
        .unwrap_err();
    assert!(!err.is_source_error(), "{err}");
    assert!(
        !err.to_string().contains("wrong"),
        "the password is never shown: {err}"
    );

    let auth = registry::base64(&format!("{USER}:{PASSWORD}"));
    let docker = OciChartSource {
        docker_config_json: Some(format!(
            r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#,
            registry.host()
        )),
        ..source(&repo_url, "3.1.0")
    };
    let chart = cache.fetch_oci_chart(&docker, Mode::Online).unwrap();
    assert_eq!(chart.version, "3.1.0");
}

#[test]
fn an_oci_repository_holding_a_chart_is_a_chart_ref() {
    let registry = Registry::start();
    let helm = Helm::new();
    let work = tempfile::tempdir().unwrap();
    let tgz = helm.chart(work.path(), "podinfo", "6.5.0");
    let tgz_digest = sha256(&fs::read(&tgz).unwrap());
    helm.push(&tgz, &registry.url("charts"), None);
    registry.push_files("manifests", "v1", &[("a.yaml", "kind: ConfigMap\n")]);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(cache_dir.path());
    let url = registry.url("charts/podinfo");

    let selectors = [
        LayerSelector {
            media_type: Some("application/vnd.cncf.helm.chart.content.v1.tar+gzip".into()),
            operation: LayerOperation::Copy,
        },
        LayerSelector {
            media_type: Some("application/vnd.cncf.helm.chart.content.v1.tar+gzip".into()),
            operation: LayerOperation::Extract,
        },
        LayerSelector::default(),
    ];
    for selector in selectors {
        let oci = OciSource {
            url: url.clone(),
            reference: OciRef::semver("6.x"),
            layer_selector: selector.clone(),
            ..OciSource::default()
        };
        let chart = cache.fetch_chart_ref(&oci, Mode::Online).unwrap();
        assert_eq!(
            (chart.name.as_str(), chart.version.as_str()),
            ("podinfo", "6.5.0"),
            "{selector:?}"
        );
        assert_eq!(chart.digest, tgz_digest);
        assert!(chart.dir.join("templates/configmap.yaml").is_file());
        assert!(chart_yaml(&chart.dir).contains("name: podinfo"));
    }

    // A Flux artifact is no chart, whether the selector says so or the layer does.
    let flux = OciSource {
        url: registry.url("manifests"),
        reference: OciRef::tag("v1"),
        ..OciSource::default()
    };
    let err = cache.fetch_chart_ref(&flux, Mode::Online).unwrap_err();
    assert!(matches!(err, ChartError::NotAChart { .. }), "{err}");
    assert!(err.is_source_error());
    assert!(
        err.to_string().contains(&registry.url("manifests")),
        "{err}"
    );
    let selected = OciSource {
        layer_selector: LayerSelector {
            media_type: Some(FLUX_CONTENT.into()),
            operation: LayerOperation::Copy,
        },
        ..flux
    };
    let err = cache.fetch_chart_ref(&selected, Mode::Online).unwrap_err();
    assert!(matches!(err, ChartError::NotAChart { .. }), "{err}");
}
