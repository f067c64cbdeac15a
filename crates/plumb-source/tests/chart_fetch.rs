//! Charts from an HTTP HelmRepository served on loopback: the index read, the version chosen as
//! source-controller chooses it, the digest checked, the chart extracted, offline reuse.

#[path = "support/http_server.rs"]
mod http_server;

use http_server::HttpServer;
use plumb_source::{Cache, ChartError, Credentials, HelmChartSource, Mode};
use sha2::{Digest, Sha256};

/// A chart `.tgz` as `helm package` writes it: everything under `<name>/`.
fn chart_tgz(name: &str, version: &str) -> Vec<u8> {
    let files = [
        (
            "Chart.yaml",
            format!("apiVersion: v2\nname: {name}\nversion: {version}\n"),
        ),
        ("values.yaml", "replicas: 1\n".to_owned()),
        (
            "templates/deployment.yaml",
            "kind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n".to_owned(),
        ),
    ];
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    for (path, body) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(body.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, format!("{name}/{path}"), body.as_bytes())
            .unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One index entry: version, URL, digest (None: no digest field).
struct Listed<'a> {
    version: &'a str,
    url: String,
    digest: Option<String>,
}

fn index(chart: &str, listed: &[Listed]) -> String {
    let mut text = format!("apiVersion: v1\nentries:\n  {chart}:\n");
    for l in listed {
        text.push_str(&format!(
            "  - name: {chart}\n    version: {}\n    urls:\n    - {}\n",
            l.version, l.url
        ));
        if let Some(d) = &l.digest {
            text.push_str(&format!("    digest: {d}\n"));
        }
    }
    text
}

/// A repository of `podinfo` at the given versions, relative URLs, digests given.
fn repository(versions: &[&str]) -> (HttpServer, Vec<(String, Vec<u8>)>) {
    let tgzs: Vec<(String, Vec<u8>)> = versions
        .iter()
        .map(|v| (v.to_string(), chart_tgz("podinfo", v)))
        .collect();
    let listed: Vec<Listed> = tgzs
        .iter()
        .map(|(v, tgz)| Listed {
            version: v,
            url: format!("charts/podinfo-{v}.tgz"),
            digest: Some(sha256(tgz)),
        })
        .collect();
    let index = index("podinfo", &listed);
    let paths: Vec<String> = tgzs
        .iter()
        .map(|(v, _)| format!("/repo/charts/podinfo-{v}.tgz"))
        .collect();
    let mut files: Vec<(&str, &[u8])> = vec![("/repo/index.yaml", index.as_bytes())];
    for (path, (_, tgz)) in paths.iter().zip(&tgzs) {
        files.push((path, tgz));
    }
    (HttpServer::start_bytes(&files), tgzs)
}

fn source(server: &HttpServer, version: &str) -> HelmChartSource {
    HelmChartSource {
        repo_url: server.url("/repo"),
        chart: "podinfo".into(),
        version: version.into(),
        credentials: None,
    }
}

fn chart_version(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("Chart.yaml")).unwrap()
}

#[test]
fn an_exact_version_is_fetched_and_extracted() {
    let (server, tgzs) = repository(&["6.0.0", "6.1.0"]);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(cache_dir.path());
    let artifact = cache
        .fetch_chart(&source(&server, "6.0.0"), Mode::Online)
        .unwrap();
    assert_eq!(artifact.version, "6.0.0");
    assert_eq!(artifact.digest, format!("sha256:{}", sha256(&tgzs[0].1)));
    assert!(chart_version(&artifact.dir).contains("version: 6.0.0"));
    assert_eq!(
        std::fs::read_to_string(artifact.dir.join("values.yaml")).unwrap(),
        "replicas: 1\n"
    );
    assert!(artifact.dir.join("templates/deployment.yaml").is_file());
    let revision = artifact.dir.parent().unwrap();
    assert_eq!(
        revision.file_name().unwrap().to_str().unwrap(),
        format!("podinfo-6.0.0-{}", &sha256(&tgzs[0].1)[..12])
    );
    assert_eq!(
        std::fs::read_to_string(revision.parent().unwrap().join("source")).unwrap(),
        format!("{}\n", server.url("/repo"))
    );
    // `plumb cache ls` sees it.
    let entries = cache.entries().unwrap();
    assert!(entries.iter().any(|e| e.kind == "chart"
        && e.url.as_deref() == Some(server.url("/repo").as_str())
        && e.revision.starts_with("podinfo-6.0.0-")));

    // An exact version in the cache is final: no request online either.
    let before = server.requests();
    let again = cache
        .fetch_chart(&source(&server, "6.0.0"), Mode::Online)
        .unwrap();
    assert_eq!(again, artifact);
    assert_eq!(server.requests(), before);
}

#[test]
fn a_range_picks_the_highest_version_in_it() {
    let (server, _) = repository(&["5.9.0", "6.0.0", "6.2.1", "6.10.0", "7.0.0"]);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(cache_dir.path());
    let artifact = cache
        .fetch_chart(&source(&server, ">=6.0.0 <7.0.0"), Mode::Online)
        .unwrap();
    assert_eq!(artifact.version, "6.10.0");
    assert!(chart_version(&artifact.dir).contains("version: 6.10.0"));
    let artifact = cache
        .fetch_chart(&source(&server, "6.2.x"), Mode::Online)
        .unwrap();
    assert_eq!(artifact.version, "6.2.1");
}

#[test]
fn star_and_empty_are_the_latest_stable_version() {
    let (server, _) = repository(&["1.0.0", "1.1.0", "2.0.0-rc.1"]);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(cache_dir.path());
    for version in ["*", ""] {
        let artifact = cache
            .fetch_chart(&source(&server, version), Mode::Online)
            .unwrap();
        assert_eq!(artifact.version, "1.1.0", "version {version:?}");
    }
    // A range that names a pre-release admits them; the exact text always matches.
    let artifact = cache
        .fetch_chart(&source(&server, ">=1.0.0-0"), Mode::Online)
        .unwrap();
    assert_eq!(artifact.version, "2.0.0-rc.1");
    let artifact = cache
        .fetch_chart(&source(&server, "2.0.0-rc.1"), Mode::Online)
        .unwrap();
    assert_eq!(artifact.version, "2.0.0-rc.1");
}

#[test]
fn absolute_chart_urls_are_followed_and_relative_ones_resolved() {
    // The chart lives on another server than the index.
    let tgz = chart_tgz("podinfo", "1.0.0");
    let charts = HttpServer::start_bytes(&[("/dl/podinfo-1.0.0.tgz", &tgz)]);
    let index_text = index(
        "podinfo",
        &[Listed {
            version: "1.0.0",
            url: charts.url("/dl/podinfo-1.0.0.tgz"),
            digest: Some(format!("sha256:{}", sha256(&tgz))),
        }],
    );
    let repo = HttpServer::start_bytes(&[("/index.yaml", index_text.as_bytes())]);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(cache_dir.path());
    let src = HelmChartSource {
        // A trailing slash on the repository URL changes nothing.
        repo_url: repo.url("/"),
        chart: "podinfo".into(),
        version: "1.0.0".into(),
        credentials: None,
    };
    let artifact = cache.fetch_chart(&src, Mode::Online).unwrap();
    assert_eq!(artifact.version, "1.0.0");
    assert!(chart_version(&artifact.dir).contains("name: podinfo"));

    // Relative: against the repository URL as a directory, `/repo` without its slash.
    let (server, _) = repository(&["3.0.0"]);
    let artifact = cache
        .fetch_chart(&source(&server, "3.0.0"), Mode::Online)
        .unwrap();
    assert_eq!(artifact.version, "3.0.0");
}

#[test]
fn offline_reuses_the_last_resolution_after_the_server_stops() {
    let (mut server, _) = repository(&["1.0.0", "1.2.0"]);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(cache_dir.path());
    let online = cache
        .fetch_chart(&source(&server, "^1.0.0"), Mode::Online)
        .unwrap();
    assert_eq!(online.version, "1.2.0");
    let src = source(&server, "^1.0.0");
    let never_fetched = source(&server, "1.0.0");
    server.stop();
    let offline = cache.fetch_chart(&src, Mode::Offline).unwrap();
    assert_eq!(offline, online);

    // The exact version a range chose is in the cache, though never asked for by itself.
    let exact = cache
        .fetch_chart(&source_at_url(&src.repo_url, "1.2.0"), Mode::Offline)
        .unwrap();
    assert_eq!(exact, online);

    let err = cache
        .fetch_chart(&never_fetched, Mode::Offline)
        .unwrap_err();
    assert!(matches!(err, ChartError::NotCached { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains(&src.repo_url), "{message}");
    assert!(
        message.contains("podinfo") && message.contains("1.0.0"),
        "{message}"
    );

    // Online with the server gone, a range cannot be resolved: unreachable, named.
    let err = cache.fetch_chart(&src, Mode::Online).unwrap_err();
    assert!(matches!(err, ChartError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains(&src.repo_url), "{err}");
}

#[test]
fn a_digest_mismatch_is_refused_and_nothing_is_cached() {
    let tgz = chart_tgz("podinfo", "1.0.0");
    let index_text = index(
        "podinfo",
        &[Listed {
            version: "1.0.0",
            url: "podinfo-1.0.0.tgz".into(),
            digest: Some(sha256(b"something else")),
        }],
    );
    let server = HttpServer::start_bytes(&[
        ("/index.yaml", index_text.as_bytes()),
        ("/podinfo-1.0.0.tgz", &tgz),
    ]);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(cache_dir.path());
    let err = cache
        .fetch_chart(&source_at(&server, "", "podinfo", "1.0.0"), Mode::Online)
        .unwrap_err();
    let ChartError::DigestMismatch { digests, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(digests.expected, sha256(b"something else"));
    assert_eq!(digests.actual, sha256(&tgz));
    assert!(err.to_string().contains("podinfo-1.0.0.tgz"), "{err}");
    assert!(cache.entries().unwrap().is_empty());
}

#[test]
fn a_corrupt_archive_is_refused() {
    let not_gzip = b"not a tarball".to_vec();
    let index_text = index(
        "podinfo",
        &[Listed {
            version: "1.0.0",
            url: "podinfo-1.0.0.tgz".into(),
            digest: None,
        }],
    );
    let server = HttpServer::start_bytes(&[
        ("/index.yaml", index_text.as_bytes()),
        ("/podinfo-1.0.0.tgz", &not_gzip),
    ]);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(cache_dir.path());
    let err = cache
        .fetch_chart(&source_at(&server, "", "podinfo", "1.0.0"), Mode::Online)
        .unwrap_err();
    assert!(matches!(err, ChartError::CorruptArchive { .. }), "{err:?}");
    assert!(cache.entries().unwrap().is_empty());
}

fn source_at(server: &HttpServer, path: &str, chart: &str, version: &str) -> HelmChartSource {
    HelmChartSource {
        repo_url: server.url(path),
        chart: chart.into(),
        version: version.into(),
        credentials: None,
    }
}

#[test]
fn a_missing_chart_a_missing_version_and_a_missing_index_are_named() {
    let (server, _) = repository(&["1.0.0"]);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(cache_dir.path());

    let err = cache
        .fetch_chart(&source_at(&server, "/repo", "nginx", "*"), Mode::Online)
        .unwrap_err();
    assert!(matches!(err, ChartError::ChartNotInIndex { .. }), "{err:?}");
    assert!(err.to_string().contains("\"nginx\""), "{err}");
    assert!(err.to_string().contains(&server.url("/repo")), "{err}");

    let err = cache
        .fetch_chart(&source(&server, ">=2.0.0"), Mode::Online)
        .unwrap_err();
    let ChartError::NoVersion { available, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(available, &["1.0.0"]);
    assert!(err.to_string().contains(">=2.0.0"), "{err}");

    let err = cache
        .fetch_chart(
            &source_at(&server, "/elsewhere", "podinfo", "*"),
            Mode::Online,
        )
        .unwrap_err();
    let ChartError::HttpStatus { status, url, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*status, 404);
    assert_eq!(url, &server.url("/elsewhere/index.yaml"));
}

#[test]
fn an_unreachable_repository_is_named() {
    let mut server = HttpServer::start(&[]);
    let src = source_at(&server, "/repo", "podinfo", "1.0.0");
    server.stop();
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(cache_dir.path());
    let err = cache.fetch_chart(&src, Mode::Online).unwrap_err();
    let ChartError::Unreachable { url, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(url, &format!("{}/index.yaml", src.repo_url));
    let message = err.to_string();
    assert!(
        message.contains("podinfo") && message.contains("1.0.0"),
        "{message}"
    );
}

#[test]
fn credentials_go_to_the_repository_host_only() {
    let tgz = chart_tgz("podinfo", "1.0.0");
    let elsewhere = HttpServer::start_bytes(&[("/podinfo-1.0.0.tgz", &tgz)]);
    let tgz2 = chart_tgz("other", "2.0.0");
    let index_text = format!(
        "{}  other:\n  - name: other\n    version: 2.0.0\n    urls:\n    - other-2.0.0.tgz\n",
        index(
            "podinfo",
            &[Listed {
                version: "1.0.0",
                url: elsewhere.url("/podinfo-1.0.0.tgz"),
                digest: None,
            }],
        )
    );
    let repo = HttpServer::start_bytes(&[
        ("/index.yaml", index_text.as_bytes()),
        ("/other-2.0.0.tgz", &tgz2),
    ]);
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::new(cache_dir.path());
    let credentials = Some(Credentials {
        username: "flux".into(),
        password: "s3cret".into(),
    });
    for (chart, version) in [("podinfo", "1.0.0"), ("other", "2.0.0")] {
        let src = HelmChartSource {
            credentials: credentials.clone(),
            ..source_at(&repo, "", chart, version)
        };
        assert_eq!(
            cache.fetch_chart(&src, Mode::Online).unwrap().version,
            version
        );
    }
    // base64("flux:s3cret")
    let basic = Some("Basic Zmx1eDpzM2NyZXQ=".to_owned());
    assert_eq!(
        repo.authorizations(),
        [
            ("/index.yaml".to_owned(), basic.clone()),
            ("/index.yaml".to_owned(), basic.clone()),
            ("/other-2.0.0.tgz".to_owned(), basic),
        ]
    );
    assert_eq!(
        elsewhere.authorizations(),
        [("/podinfo-1.0.0.tgz".to_owned(), None)]
    );
    // The cache keeps one user's charts apart from anonymous fetches.
    let anonymous = source_at(&repo, "", "other", "2.0.0");
    let err = cache.fetch_chart(&anonymous, Mode::Offline).unwrap_err();
    assert!(matches!(err, ChartError::NotCached { .. }), "{err:?}");
}

fn source_at_url(repo_url: &str, version: &str) -> HelmChartSource {
    HelmChartSource {
        repo_url: repo_url.into(),
        chart: "podinfo".into(),
        version: version.into(),
        credentials: None,
    }
}
