//! Remote kustomize entries fetched from real servers on loopback: git's smart HTTP (`git
//! http-backend` behind the tests' bridge; kustomize accepts no `git://` URL, so `git daemon`
//! cannot serve a kustomize base) serving a repository with a base under a subdirectory and
//! two tags, and an HTTP server serving a YAML file. Each test checks what lands in the cache, that offline mode reuses it once the server
//! is stopped, and how failures are named.

use std::fs;
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use plumb_source::remote::RepoSpec;
use plumb_source::{Cache, FetchError, Mode};

#[path = "support/git_http.rs"]
mod git_http;
#[path = "support/git_server.rs"]
mod git_server;
#[path = "support/http_server.rs"]
mod http_server;
use git_http::HttpGit;
use git_server::{free_port, Repo};
use http_server::HttpServer;

struct Setup {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    cache_dir: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().join("served");
        let cache_dir = tmp.path().join("cache");
        fs::create_dir_all(&base).unwrap();
        Setup {
            base,
            cache_dir,
            _tmp: tmp,
        }
    }

    fn cache(&self) -> Cache {
        Cache::new(&self.cache_dir)
    }
}

const KUSTOMIZATION: &str = "resources:\n- configmap.yaml\n";

fn configmap(version: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  version: {version}\n")
}

/// A repository `platform` on branch `main`: `v1` and `v2` tags, then a third commit on main.
/// Returns the commits in order.
fn platform_repo(base: &std::path::Path) -> Vec<String> {
    let repo = Repo::init(base, "platform", "main");
    let mut commits = Vec::new();
    for version in ["v1", "v2", "main"] {
        repo.write("deploy/base/kustomization.yaml", KUSTOMIZATION);
        repo.write("deploy/base/configmap.yaml", &configmap(version));
        repo.write("deploy/base/logo.png", "kustomize clones images too");
        commits.push(repo.commit(version));
        if version != "main" {
            repo.git(&["tag", "-a", version, "-m", version]);
        }
    }
    commits
}

/// Drops the git server and wakes its accept loop, which then closes the port.
fn stop_git(server: HttpGit) {
    let port = server.port;
    drop(server);
    let _ = std::net::TcpStream::connect(("127.0.0.1", port));
}

fn spec(text: &str) -> RepoSpec {
    RepoSpec::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn read(path: PathBuf) -> String {
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_base_at_a_tag_is_fetched_cached_and_reused_offline() {
    let setup = Setup::new();
    let commits = platform_repo(&setup.base);
    let server = HttpGit::start(&setup.base, None);
    let url = server.url("platform");

    let v1 = setup
        .cache()
        .fetch_repo_spec(&spec(&format!("{url}//deploy/base?ref=v1")), Mode::Online)
        .unwrap();
    assert_eq!(v1.dir, v1.root.join("deploy/base"));
    assert!(v1.root.starts_with(&setup.cache_dir));
    assert_eq!(read(v1.dir.join("configmap.yaml")), configmap("v1"));
    assert_eq!(v1.revision, format!("v1@sha1:{}", commits[0]));
    assert!(
        v1.dir.join("logo.png").is_file(),
        "no default exclusions for a kustomize base"
    );

    let v2 = setup
        .cache()
        .fetch_repo_spec(
            &spec(&format!("git::{url}//deploy/base?version=v2")),
            Mode::Online,
        )
        .unwrap();
    assert_eq!(read(v2.dir.join("configmap.yaml")), configmap("v2"));
    assert_ne!(v1.root, v2.root);

    stop_git(server);
    let offline = setup
        .cache()
        .fetch_repo_spec(&spec(&format!("{url}//deploy/base?ref=v1")), Mode::Offline)
        .unwrap();
    assert_eq!(offline, v1);
    let tmp_empty = fs::read_dir(setup.cache_dir.join("tmp"))
        .map(|mut d| d.next().is_none())
        .unwrap_or(true);
    assert!(tmp_empty, "work directories are removed");
}

#[test]
fn no_ref_is_head_a_name_may_be_a_branch_and_a_commit_is_pinned() {
    let setup = Setup::new();
    let commits = platform_repo(&setup.base);
    let server = HttpGit::start(&setup.base, None);
    let url = server.url("platform");
    let cache = setup.cache();

    let head = cache
        .fetch_repo_spec(&spec(&format!("{url}//deploy/base")), Mode::Online)
        .unwrap();
    assert_eq!(read(head.dir.join("configmap.yaml")), configmap("main"));
    assert_eq!(head.revision, format!("HEAD@sha1:{}", commits[2]));

    let branch = cache
        .fetch_repo_spec(&spec(&format!("{url}//deploy/base?ref=main")), Mode::Online)
        .unwrap();
    assert_eq!(branch.revision, format!("main@sha1:{}", commits[2]));

    let pinned = cache
        .fetch_repo_spec(
            &spec(&format!("{url}//deploy/base?ref={}", commits[1])),
            Mode::Online,
        )
        .unwrap();
    assert_eq!(read(pinned.dir.join("configmap.yaml")), configmap("v2"));
    assert_eq!(pinned.revision, format!("sha1:{}", commits[1]));
}

#[test]
fn a_missing_ref_names_the_url_and_the_ref() {
    let setup = Setup::new();
    platform_repo(&setup.base);
    let server = HttpGit::start(&setup.base, None);
    let url = server.url("platform");

    let err = setup
        .cache()
        .fetch_repo_spec(&spec(&format!("{url}//deploy/base?ref=v9")), Mode::Online)
        .unwrap_err();
    assert!(matches!(err, FetchError::RefNotFound { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(&url), "{text}");
    assert!(text.contains("tag or branch \"v9\" not found"), "{text}");

    // Offline, with nothing cached for it, the same entry is not cached.
    let err = setup
        .cache()
        .fetch_repo_spec(&spec(&format!("{url}//deploy/base?ref=v1")), Mode::Offline)
        .unwrap_err();
    assert!(matches!(err, FetchError::NotCached { .. }), "{err:?}");
    assert!(err.to_string().contains(&url), "{err}");
}

#[test]
fn an_unreachable_host_is_reported_with_its_url() {
    let setup = Setup::new();
    let url = format!("http://127.0.0.1:{}/platform", free_port());
    let err = setup
        .cache()
        .fetch_repo_spec(&spec(&format!("{url}//deploy/base?ref=v1")), Mode::Online)
        .unwrap_err();
    assert!(matches!(err, FetchError::Unreachable { .. }), "{err:?}");
    assert!(err.to_string().contains(&url), "{err}");
}

#[test]
fn a_server_that_never_answers_hits_the_timeout() {
    let setup = Setup::new();
    // Accepts connections (the kernel's backlog does) and never says a word.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let started = Instant::now();
    let err = setup
        .cache()
        .fetch_repo_spec(
            &spec(&format!(
                "http://127.0.0.1:{port}/platform//base?ref=v1&timeout=1"
            )),
            Mode::Online,
        )
        .unwrap_err();
    assert!(matches!(err, FetchError::Timeout { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(err.to_string().contains("gave up after 1s"), "{err}");
}

#[test]
fn an_http_file_is_fetched_cached_and_reused_offline() {
    let setup = Setup::new();
    let body = configmap("served");
    let mut server = HttpServer::start(&[("/file.yaml", &body)]);
    let url = server.url("/file.yaml");

    assert_eq!(setup.cache().fetch_file(&url, Mode::Online).unwrap(), body);
    assert_eq!(server.requests(), 1);
    // One entry, in the shape `plumb cache ls` lists: its URL and one version.
    let entries = setup.cache().entries().unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].kind, "http");
    assert_eq!(entries[0].url.as_deref(), Some(url.as_str()));
    assert_eq!(read(entries[0].dir.join("content")), body);
    // Fetched again, unchanged: still one version.
    assert_eq!(setup.cache().fetch_file(&url, Mode::Online).unwrap(), body);
    assert_eq!(setup.cache().entries().unwrap().len(), 1);

    server.stop();
    assert_eq!(setup.cache().fetch_file(&url, Mode::Offline).unwrap(), body);
    let err = setup.cache().fetch_file(&url, Mode::Online).unwrap_err();
    assert!(matches!(err, FetchError::Http { .. }), "{err:?}");
    assert!(err.to_string().contains(&url), "{err}");

    let other = format!("{url}?other");
    let err = setup.cache().fetch_file(&other, Mode::Offline).unwrap_err();
    assert!(matches!(err, FetchError::FileNotCached { .. }), "{err:?}");
    assert!(err.to_string().contains(&other), "{err}");
}

#[test]
fn a_missing_http_file_is_its_status() {
    let setup = Setup::new();
    let server = HttpServer::start(&[("/file.yaml", "a: 1\n")]);
    let url = server.url("/missing.yaml");
    let err = setup.cache().fetch_file(&url, Mode::Online).unwrap_err();
    assert!(
        matches!(err, FetchError::HttpStatus { status: 404, .. }),
        "{err:?}"
    );
    assert_eq!(err.to_string(), format!("GET {url}: status code 404"));
    assert!(
        !setup.cache_dir.join("http").exists()
            || fs::read_dir(setup.cache_dir.join("http"))
                .unwrap()
                .next()
                .is_none(),
        "nothing cached for a failed fetch"
    );
}

#[test]
fn a_file_url_is_a_local_repository() {
    let setup = Setup::new();
    let commits = platform_repo(&setup.base);
    let url = format!("file://{}", setup.base.join("platform").display());
    let tree = setup
        .cache()
        .fetch_repo_spec(&spec(&format!("{url}//deploy/base?ref=v2")), Mode::Online)
        .unwrap();
    assert_eq!(read(tree.dir.join("configmap.yaml")), configmap("v2"));
    assert_eq!(tree.revision, format!("v2@sha1:{}", commits[1]));
}

/// kustomize reads no `git://` URL as a repository (its schemes are ssh, https, http and
/// file): such an entry is a local path to it.
#[test]
fn git_protocol_urls_are_not_repositories_for_kustomize() {
    let err = RepoSpec::parse("git://127.0.0.1:9418/platform//deploy/base?ref=v1").unwrap_err();
    assert_eq!(err.to_string(), "failed to parse scheme");
}
