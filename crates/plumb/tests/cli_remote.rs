//! Remote kustomize entries end to end: `plumb kustomize build` and `plumb build` over a
//! kustomization that lists a base in a git repository (served by git's smart HTTP on
//! loopback, a subdirectory at a tag) and a YAML file served over HTTP. The output equals the
//! build of local copies; `--offline` rebuilds it from the cache with the server stopped; a
//! remote base nothing has cached is reported, offline, naming its URL and the entry's line.

#[path = "../../plumb-source/tests/support/git_http.rs"]
mod git_http;
#[path = "../../plumb-source/tests/support/git_server.rs"]
mod git_server;
#[path = "../../plumb-source/tests/support/http_server.rs"]
mod http_server;

use assert_cmd::Command;
use git_http::HttpGit;
use git_server::Repo;
use http_server::HttpServer;
use std::fs;
use std::path::Path;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

const BASE_KUSTOMIZATION: &str = "resources:\n- configmap.yaml\nnamePrefix: base-\n";
const SERVICE: &str =
    "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n";

fn configmap(version: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  version: {version}\n")
}

/// A repository `platform` with `deploy/base` at tags `v1` and `v2`.
fn platform(served: &Path) {
    let repo = Repo::init(served, "platform", "main");
    for version in ["v1", "v2"] {
        repo.write("deploy/base/kustomization.yaml", BASE_KUSTOMIZATION);
        repo.write("deploy/base/configmap.yaml", &configmap(version));
        repo.commit(version);
        repo.git(&["tag", version]);
    }
}

fn plumb(args: &[&str], dir: &Path) -> (Option<i32>, String, String) {
    let out = Command::cargo_bin("plumb")
        .unwrap()
        .args(args)
        .arg(dir)
        .env_remove("PLUMB_CACHE_DIR")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn kustomize_build_of_remote_entries_equals_the_local_build_and_works_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    platform(&served);
    let git = HttpGit::start(&served, None);
    let mut server = HttpServer::start(&[("/service.yaml", SERVICE)]);
    let cache = tmp.path().join("cache");
    let cache_arg = cache.to_str().unwrap();

    let overlay = tmp.path().join("remote");
    let base_url = format!("{}//deploy/base?ref=v1", git.url("platform"));
    let file_url = server.url("/service.yaml");
    write(
        &overlay,
        "kustomization.yaml",
        &format!("resources:\n- {base_url}\n- {file_url}\nnamespace: prod\n"),
    );
    let (code, remote_out, err) =
        plumb(&["kustomize", "build", "--cache-dir", cache_arg], &overlay);
    assert_eq!(code, Some(0), "{err}");

    // The same base and file, local.
    let local = tmp.path().join("local");
    write(&local, "base/kustomization.yaml", BASE_KUSTOMIZATION);
    write(&local, "base/configmap.yaml", &configmap("v1"));
    write(&local, "service.yaml", SERVICE);
    write(
        &local,
        "overlay/kustomization.yaml",
        "resources:\n- ../base\n- ../service.yaml\nnamespace: prod\n",
    );
    let (code, local_out, err) = plumb(
        &[
            "kustomize",
            "build",
            "--load-restrictor",
            "LoadRestrictionsNone",
        ],
        &local.join("overlay"),
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(remote_out, local_out);
    assert!(remote_out.contains("name: base-settings"), "{remote_out}");
    assert!(remote_out.contains("version: v1"), "{remote_out}");
    assert!(remote_out.contains("kind: Service"), "{remote_out}");

    // The other tag, with go-getter's `git::` prefix kustomize accepts.
    let v2 = tmp.path().join("v2");
    write(
        &v2,
        "kustomization.yaml",
        &format!(
            "resources:\n- git::{}//deploy/base?ref=v2\n",
            git.url("platform")
        ),
    );
    let (code, out, err) = plumb(&["kustomize", "build", "--cache-dir", cache_arg], &v2);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("version: v2"), "{out}");

    server.stop();
    let git_port = git.port;
    drop(git);
    // Wake the git server's accept loop, which then closes the port.
    let _ = std::net::TcpStream::connect(("127.0.0.1", git_port));
    let (code, offline_out, err) = plumb(
        &["kustomize", "build", "--offline", "--cache-dir", cache_arg],
        &overlay,
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(offline_out, remote_out);
}

#[test]
fn plumb_build_fetches_a_flux_kustomizations_remote_base() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    platform(&served);
    let git = HttpGit::start(&served, None);
    let server = HttpServer::start(&[("/service.yaml", SERVICE)]);
    let repo = tmp.path().join("repo");
    write(
        &repo,
        "clusters/dev/apps.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec:\n  path: ./apps\n  sourceRef: {kind: GitRepository, name: flux-system}\n",
    );
    write(
        &repo,
        "apps/kustomization.yaml",
        &format!(
            "resources:\n- {}//deploy/base?ref=v2\n- {}\n",
            git.url("platform"),
            server.url("/service.yaml")
        ),
    );
    let cache = tmp.path().join("cache");
    let (code, out, err) = plumb(
        &[
            "build",
            "-o",
            "names",
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
        &repo,
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ConfigMap//base-settings"), "{out}");
    assert!(out.contains("Service//web"), "{out}");

    // A ref the repository does not have, and a file the server does not have: the entries
    // name nothing, so the Kustomization fails (kustomize-controller's would), at the line.
    write(
        &repo,
        "apps/kustomization.yaml",
        &format!(
            "resources:\n- {}//deploy/base?ref=v9\n",
            git.url("platform"),
        ),
    );
    let (code, _, err) = plumb(
        &["build", "-v", "--cache-dir", cache.to_str().unwrap()],
        &repo,
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("error: remote resource"), "{err}");
    assert!(err.contains("\"v9\" not found"), "{err}");
    assert!(err.contains("apps/kustomization.yaml:2"), "{err}");
    assert!(err.contains("1 failed"), "{err}");
    write(
        &repo,
        "apps/kustomization.yaml",
        &format!("resources:\n- {}\n", server.url("/missing.yaml")),
    );
    let (code, _, err) = plumb(
        &["build", "-v", "--cache-dir", cache.to_str().unwrap()],
        &repo,
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("404"), "{err}");
    assert!(err.contains("1 failed"), "{err}");
}

#[test]
fn an_uncached_github_base_offline_is_reported_with_its_url() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("overlay");
    write(
        &dir,
        "kustomization.yaml",
        "namespace: prod\nresources:\n- github.com/example-org/platform//deploy/base?ref=v1\n",
    );
    let cache = tmp.path().join("empty-cache");
    let (code, out, err) = plumb(
        &[
            "kustomize",
            "build",
            "--offline",
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
        &dir,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("git repository https://github.com/example-org/platform (ref tag or branch \"v1\") is not in the cache"),
        "{err}"
    );
    assert!(err.contains("offline mode forbids fetching it"), "{err}");
    assert!(err.contains("kustomization.yaml:3"), "{err}");

    // In a Flux repository, what uses it is not built, and says why.
    let repo = tmp.path().join("repo");
    write(
        &repo,
        "clusters/dev/apps.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec:\n  path: ./apps\n  sourceRef: {kind: GitRepository, name: flux-system}\n",
    );
    write(
        &repo,
        "apps/kustomization.yaml",
        "resources:\n- github.com/example-org/platform//deploy/base?ref=v1\n",
    );
    let (code, _, err) = plumb(
        &[
            "build",
            "-v",
            "--offline",
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
        &repo,
    );
    assert!(!err.contains("panicked"), "{err}");
    // Not fetched here, not wrong: unavailable, and the build is incomplete.
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("unavailable flux-system/apps (apps): remote resource github.com/example-org/platform//deploy/base?ref=v1"), "{err}");
    assert!(
        err.contains("https://github.com/example-org/platform"),
        "{err}"
    );
    assert!(err.contains("not in the cache"), "{err}");
    // Named as the repository names it, not by an absolute path.
    assert!(
        err.contains("(listed at apps/kustomization.yaml:2)"),
        "{err}"
    );
}

#[test]
fn a_file_two_kustomizations_list_is_fetched_once_per_run() {
    let tmp = tempfile::tempdir().unwrap();
    let server = HttpServer::start(&[("/service.yaml", SERVICE)]);
    let repo = tmp.path().join("repo");
    let mut sync = String::new();
    for name in ["a", "b"] {
        sync.push_str(&format!("---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  path: ./{name}\n  targetNamespace: {name}\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n"));
        write(
            &repo,
            &format!("{name}/kustomization.yaml"),
            &format!("resources:\n- {}\n", server.url("/service.yaml")),
        );
    }
    write(&repo, "clusters/dev/apps.yaml", &sync);
    let cache = tmp.path().join("cache");
    let (code, out, err) = plumb(
        &[
            "build",
            "-o",
            "names",
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
        &repo,
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Service/a/web"), "{out}");
    assert!(out.contains("Service/b/web"), "{out}");
    assert_eq!(server.requests(), 1, "one GET for both Kustomizations");
}

#[test]
fn a_generator_file_source_by_url_is_fetched_and_reused_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = HttpServer::start(&[
        ("/dashboards/cluster.json", "{\"title\": \"cluster\"}\n"),
        ("/vars.env", "REGION=eu\n"),
    ]);
    let cache = tmp.path().join("cache");
    let cache_arg = cache.to_str().unwrap();
    let dir = tmp.path().join("dashboards");
    write(
        &dir,
        "kustomization.yaml",
        &format!(
            "configMapGenerator:\n- name: dashboards\n  files:\n  - {}\n  envs:\n  - {}\n",
            server.url("/dashboards/cluster.json"),
            server.url("/vars.env")
        ),
    );
    let (code, online, err) = plumb(&["kustomize", "build", "--cache-dir", cache_arg], &dir);
    assert_eq!(code, Some(0), "{err}");
    assert!(online.contains("  REGION: eu\n"), "{online}");
    assert!(
        online.contains("  cluster.json: |\n    {\"title\": \"cluster\"}\n"),
        "{online}"
    );
    assert_eq!(server.requests(), 2);

    server.stop();
    let (code, offline, err) = plumb(
        &["kustomize", "build", "--offline", "--cache-dir", cache_arg],
        &dir,
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(offline, online);
}

/// An entry directory built as it stands (no Flux Kustomization syncs it) that lists what
/// cannot be fetched is left unbuilt as a Kustomization is: unavailable, with the reason, the
/// build incomplete (exit 1); not a build error that `plumb check` reports as a finding.
#[test]
fn an_entry_directory_that_lists_what_cannot_be_fetched_is_unavailable_not_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    write(
        &repo,
        "clusters/dev/kustomization.yaml",
        "resources:\n- github.com/example-org/platform//deploy/base?ref=v1\n",
    );
    let cache = tmp.path().join("empty-cache");
    let args = |command: &'static str| {
        vec![
            command,
            "--offline",
            "--cache-dir",
            cache.to_str().unwrap(),
            "--entry",
            "clusters/dev",
        ]
    };
    let (code, _, err) = plumb(&args("build"), &repo);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(code, Some(1), "{err}");
    assert!(!err.contains("error"), "{err}");
    assert!(
        err.contains("clusters/dev: entry directory unavailable: remote resource github.com/example-org/platform//deploy/base?ref=v1"),
        "{err}"
    );
    assert!(err.contains("not in the cache"), "{err}");
    assert!(err.contains("1 entry directory unavailable"), "{err}");
    assert!(!err.contains("failed to build"), "{err}");

    let (code, out, err) = plumb(&args("check"), &repo);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        !out.contains("BLD001") && !err.contains("BLD001"),
        "{out}\n{err}"
    );
    assert!(
        err.contains(
            "not checked: 1 entry directory unavailable (a resource could not be fetched)"
        ),
        "{err}"
    );
    assert_eq!(code, Some(0), "{out}\n{err}");
}

/// A generator's file fetched by URL that is not UTF-8 text is kept as bytes, under
/// `binaryData`, as the same file in the directory is: the two builds print the same.
#[test]
fn a_binary_generator_file_by_url_builds_as_the_same_local_file() {
    let tmp = tempfile::tempdir().unwrap();
    let blob: &[u8] = &[0xff, 0xfe, 0x00, 0x01, b'p', b'n', b'g', 0x80, b'\n'];
    let server = HttpServer::start_bytes(&[("/files/logo.png", blob)]);
    let cache = tmp.path().join("cache");
    let remote = tmp.path().join("remote");
    write(
        &remote,
        "kustomization.yaml",
        &format!(
            "configMapGenerator:\n- name: assets\n  files:\n  - {}\n",
            server.url("/files/logo.png")
        ),
    );
    let local = tmp.path().join("local");
    write(
        &local,
        "kustomization.yaml",
        "configMapGenerator:\n- name: assets\n  files:\n  - logo.png\n",
    );
    fs::write(local.join("logo.png"), blob).unwrap();
    let args = ["kustomize", "build", "--cache-dir", cache.to_str().unwrap()];
    let (code, fetched, err) = plumb(&args, &remote);
    assert_eq!(code, Some(0), "{err}");
    let (code, read, err) = plumb(&args, &local);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        fetched.contains("binaryData:\n  logo.png: //4AAXBuZ4AK\n"),
        "{fetched}"
    );
    assert_eq!(fetched, read);
}
