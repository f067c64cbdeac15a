//! Chart directories of a source tree built as source-controller builds them: `.helmignore`
//! applied, missing dependencies added from the same tree (`file://`), from an HTTP Helm
//! repository on loopback and from a real registry (`oci://`), `Chart.lock` respected, the
//! source tree untouched, the result content-addressed in the cache.

use std::fs;
use std::path::{Path, PathBuf};

use plumb_source::{Cache, ChartBuildError, ChartError, Mirror, Mirrors, Mode};

#[path = "support/http_server.rs"]
mod http_server;
use http_server::HttpServer;

#[path = "support/registry.rs"]
mod registry;
use registry::Registry;

#[path = "support/helm_cli.rs"]
mod helm_cli;
use helm_cli::{write_chart, Helm};

fn read(dir: &Path, path: &str) -> String {
    fs::read_to_string(dir.join(path))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(path).display()))
}

/// Every file under `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) {
        for entry in fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            let path = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if entry.file_type().unwrap().is_dir() {
                walk(&entry.path(), &path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, "", &mut out);
    out.sort();
    out
}

/// A tree `repo/` with `charts/app` depending on `charts/common` through `file://`.
fn local_tree(root: &Path, constraint: &str) -> PathBuf {
    write_chart(&root.join("charts"), "common", "1.2.0", "");
    let app = write_chart(
        &root.join("charts"),
        "app",
        "0.1.0",
        &format!(
            "dependencies:\n- name: common\n  version: \"{constraint}\"\n  repository: file://../common\n- name: common\n  alias: shared\n  version: \"{constraint}\"\n  repository: file://../common\n"
        ),
    );
    fs::write(app.join("README.md"), "docs\n").unwrap();
    fs::write(app.join("templates/.hidden"), "x\n").unwrap();
    fs::write(app.join(".helmignore"), "*.md\n").unwrap();
    app
}

#[test]
fn file_dependencies_come_from_the_same_tree_and_the_tree_is_not_written() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    let app = local_tree(&root, "^1.0.0");
    let before = files(&root);
    let cache = Cache::new(tmp.path().join("cache"));
    let none = Mirrors::default();

    let built = cache
        .build_chart(&root, &app, &none, Mode::Offline)
        .unwrap();
    assert_eq!(
        (built.name.as_str(), built.version.as_str()),
        ("app", "0.1.0")
    );
    assert_eq!(
        files(&built.dir),
        [
            ".helmignore",
            "Chart.yaml",
            "charts/common/Chart.yaml",
            "charts/common/templates/configmap.yaml",
            "charts/common/values.yaml",
            "charts/shared/Chart.yaml",
            "charts/shared/templates/configmap.yaml",
            "charts/shared/values.yaml",
            "templates/configmap.yaml",
            "values.yaml",
        ]
    );
    assert!(read(&built.dir, "charts/common/Chart.yaml").contains("name: common"));
    // An aliased dependency is renamed, as source-controller adds it.
    assert!(read(&built.dir, "charts/shared/Chart.yaml").contains("name: shared\n"));
    // Helm renders the built chart with both copies of the dependency.
    let rendered = Helm::new().template(&built.dir);
    for name in ["app-rel", "common-rel", "shared-rel"] {
        assert!(
            rendered.contains(&format!("name: {name}\n")),
            "{name} in {rendered}"
        );
    }
    assert!(built.digest.starts_with("sha256:") && built.digest.len() == 71);
    assert_eq!(files(&root), before, "the source tree is not written");
    assert!(built.dir.starts_with(tmp.path().join("cache/chart-build")));
    let revision = built.dir.parent().unwrap().file_name().unwrap();
    assert_eq!(
        revision.to_str().unwrap(),
        format!("app-0.1.0-{}", &built.digest[7..19])
    );

    // Content-addressed: the same tree builds to the same directory, a change to another.
    let again = cache
        .build_chart(&root, &app, &none, Mode::Offline)
        .unwrap();
    assert_eq!(
        (again.dir.clone(), again.digest.clone()),
        (built.dir.clone(), built.digest.clone())
    );
    fs::write(root.join("charts/common/values.yaml"), "changed: true\n").unwrap();
    let changed = cache
        .build_chart(&root, &app, &none, Mode::Offline)
        .unwrap();
    assert_ne!(changed.digest, built.digest);
    assert_ne!(changed.dir, built.dir);
    assert_eq!(
        read(&changed.dir, "charts/common/values.yaml"),
        "changed: true\n"
    );
    assert_eq!(
        read(&built.dir, "charts/common/values.yaml"),
        "chart: common\n"
    );
    // Nothing left in staging.
    assert_eq!(
        fs::read_dir(tmp.path().join("cache/tmp")).unwrap().count(),
        0
    );
}

#[test]
fn a_file_dependency_of_the_wrong_version_or_outside_the_tree_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    let app = local_tree(&root, "^2.0.0");
    let cache = Cache::new(tmp.path().join("cache"));
    let err = cache
        .build_chart(&root, &app, &Mirrors::default(), Mode::Offline)
        .unwrap_err();
    assert!(
        matches!(err, ChartBuildError::LocalDependency { .. }),
        "{err}"
    );
    assert!(err.is_source_error());
    let text = err.to_string();
    for part in [
        app.display().to_string().as_str(),
        "common",
        "^2.0.0",
        "1.2.0",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }

    // `file://../../../outside` stays inside the tree, where there is no such chart.
    write_chart(tmp.path(), "outside", "1.0.0", "");
    let escaping = write_chart(
        &root,
        "escaping",
        "1.0.0",
        "dependencies:\n- name: outside\n  version: 1.0.0\n  repository: file://../../outside\n",
    );
    let err = cache
        .build_chart(&root, &escaping, &Mirrors::default(), Mode::Offline)
        .unwrap_err();
    assert!(
        err.to_string().contains("no chart found at 'outside'"),
        "{err}"
    );
}

#[test]
fn remote_dependencies_from_http_and_oci_repositories_with_the_lock_respected() {
    let tmp = tempfile::tempdir().unwrap();
    let helm = Helm::new();
    // An HTTP repository of redis 2.0.0 and 2.1.0, indexed by helm.
    let served = tmp.path().join("served");
    fs::create_dir_all(&served).unwrap();
    for version in ["2.0.0", "2.1.0"] {
        let tgz = helm.chart(&tmp.path().join(format!("src-{version}")), "redis", version);
        fs::copy(&tgz, served.join(tgz.file_name().unwrap())).unwrap();
    }
    let index = helm.repo_index(&served);
    let tgz0 = fs::read(served.join("redis-2.0.0.tgz")).unwrap();
    let tgz1 = fs::read(served.join("redis-2.1.0.tgz")).unwrap();
    let server = HttpServer::start_bytes(&[
        ("/repo/index.yaml", index.as_bytes()),
        ("/repo/redis-2.0.0.tgz", &tgz0),
        ("/repo/redis-2.1.0.tgz", &tgz1),
    ]);
    // A registry holding postgres 12.1.0.
    let registry = Registry::start();
    let pg = helm.chart(&tmp.path().join("src-pg"), "postgres", "12.1.0");
    helm.push(&pg, &registry.url("charts"), None);

    let root = tmp.path().join("repo");
    let deps = format!(
        "dependencies:\n- name: redis\n  version: \"~2.0 || ~2.1\"\n  repository: {}\n- name: postgres\n  version: \">=12.0.0\"\n  repository: {}\n",
        server.url("/repo/"),
        registry.url("charts")
    );
    let app = write_chart(&root, "app", "1.0.0", &deps);
    let cache = Cache::new(tmp.path().join("cache"));
    let none = Mirrors::default();
    let built = cache.build_chart(&root, &app, &none, Mode::Online).unwrap();
    assert!(read(&built.dir, "charts/redis/Chart.yaml").contains("version: 2.1.0"));
    assert!(read(&built.dir, "charts/postgres/Chart.yaml").contains("version: 12.1.0"));
    assert!(
        !root.join("app/charts").exists(),
        "the source tree is not written"
    );

    // Chart.lock takes precedence over the ranges.
    fs::write(
        app.join("Chart.lock"),
        format!(
            "dependencies:\n- name: redis\n  repository: {}\n  version: 2.0.0\n- name: postgres\n  repository: {}\n  version: 12.1.0\ndigest: sha256:0\ngenerated: \"2024-01-01T00:00:00Z\"\n",
            server.url("/repo/"),
            registry.url("charts")
        ),
    )
    .unwrap();
    let locked = cache.build_chart(&root, &app, &none, Mode::Online).unwrap();
    assert!(read(&locked.dir, "charts/redis/Chart.yaml").contains("version: 2.0.0"));
    let rendered = helm.template(&locked.dir);
    for name in ["app-rel", "redis-rel", "postgres-rel"] {
        assert!(
            rendered.contains(&format!("name: {name}\n")),
            "{name} in {rendered}"
        );
    }
    assert_ne!(locked.digest, built.digest);

    // Both servers gone: the dependencies come from the cache, offline too.
    drop(server);
    drop(registry);
    let offline = cache
        .build_chart(&root, &app, &none, Mode::Offline)
        .unwrap();
    assert_eq!(offline.digest, locked.digest);

    // A dependency already in charts/ is not fetched: a tgz named by its Chart.yaml.
    let vendored = write_chart(
        &root,
        "vendored",
        "1.0.0",
        "dependencies:\n- name: redis\n  version: 2.0.0\n  repository: https://charts.invalid/\n",
    );
    fs::create_dir_all(vendored.join("charts")).unwrap();
    fs::write(vendored.join("charts/redis-2.0.0.tgz"), &tgz0).unwrap();
    let built = cache
        .build_chart(&root, &vendored, &none, Mode::Online)
        .unwrap();
    assert!(built.dir.join("charts/redis-2.0.0.tgz").is_file());
    assert!(!built.dir.join("charts/redis").exists());
}

#[test]
fn remote_dependency_errors_name_the_repository_chart_version_and_mirror() {
    let tmp = tempfile::tempdir().unwrap();
    let server = HttpServer::start(&[(
        "/repo/index.yaml",
        "apiVersion: v1\nentries:\n  redis:\n  - name: redis\n    version: 1.0.0\n    urls: [redis-1.0.0.tgz]\n",
    )]);
    let root = tmp.path().join("repo");
    let app = write_chart(
        &root,
        "app",
        "1.0.0",
        "dependencies:\n- name: redis\n  version: \">=5\"\n  repository: https://charts.example.com/repo\n",
    );
    let cache = Cache::new(tmp.path().join("cache"));
    let mirrors = Mirrors::new(vec![Mirror {
        from: "https://charts.example.com".into(),
        to: server.url(""),
    }]);
    let err = cache
        .build_chart(&root, &app, &mirrors, Mode::Online)
        .unwrap_err();
    assert!(err.is_source_error(), "{err}");
    let ChartBuildError::RemoteDependency { source, .. } = &err else {
        panic!("{err}");
    };
    assert!(matches!(**source, ChartError::NoVersion { .. }), "{err}");
    let text = err.to_string();
    for part in ["redis", ">=5", "fetched from mirror", &server.url("/repo")] {
        assert!(text.contains(part), "{part} in {text}");
    }

    // Offline and never fetched: unavailable, not wrong.
    let err = cache
        .build_chart(&root, &app, &mirrors, Mode::Offline)
        .unwrap_err();
    assert!(!err.is_source_error(), "{err}");

    // A repository named by alias, as `helm repo add` users write it, is not fetched.
    let named = write_chart(
        &root,
        "named",
        "1.0.0",
        "dependencies:\n- name: redis\n  version: 1.0.0\n  repository: \"@bitnami\"\n",
    );
    let err = cache
        .build_chart(&root, &named, &mirrors, Mode::Online)
        .unwrap_err();
    assert!(
        matches!(err, ChartBuildError::UnsupportedRepository { .. }),
        "{err}"
    );
}

#[test]
fn the_tree_root_is_the_cached_revision_or_the_checkout() {
    let tmp = tempfile::tempdir().unwrap();
    let cache_dir = tmp.path().join("cache");
    let chart = cache_dir.join("git/0123/abcd/charts/app");
    fs::create_dir_all(&chart).unwrap();
    let cache = Cache::new(&cache_dir);
    let canonical = |p: &Path| fs::canonicalize(p).unwrap();
    assert_eq!(
        cache.tree_root(&chart),
        canonical(&cache_dir.join("git/0123/abcd"))
    );
    let checkout = tmp.path().join("checkout");
    fs::create_dir_all(checkout.join(".git")).unwrap();
    fs::create_dir_all(checkout.join("charts/app")).unwrap();
    assert_eq!(
        cache.tree_root(&checkout.join("charts/app")),
        canonical(&checkout)
    );
}

#[test]
fn symbolic_links_must_stay_in_the_tree_and_not_loop() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    let cache = Cache::new(tmp.path().join("cache"));
    let none = Mirrors::default();
    let app = write_chart(&root, "app", "1.0.0", "");
    fs::write(root.join("shared.yaml"), "shared: true\n").unwrap();
    std::os::unix::fs::symlink("../shared.yaml", app.join("shared.yaml")).unwrap();
    let built = cache
        .build_chart(&root, &app, &none, Mode::Offline)
        .unwrap();
    assert_eq!(read(&built.dir, "shared.yaml"), "shared: true\n");
    assert!(!fs::symlink_metadata(built.dir.join("shared.yaml"))
        .unwrap()
        .file_type()
        .is_symlink());

    fs::write(tmp.path().join("secret"), "outside\n").unwrap();
    std::os::unix::fs::symlink("../../secret", app.join("secret")).unwrap();
    let err = cache
        .build_chart(&root, &app, &none, Mode::Offline)
        .unwrap_err();
    assert!(err.to_string().contains("outside the source tree"), "{err}");
    fs::remove_file(app.join("secret")).unwrap();

    std::os::unix::fs::symlink("..", app.join("templates/loop")).unwrap();
    let err = cache
        .build_chart(&root, &app, &none, Mode::Offline)
        .unwrap_err();
    assert!(err.to_string().contains("contains it"), "{err}");
}
