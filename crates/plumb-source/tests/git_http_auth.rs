//! Fetches over git's smart HTTP protocol from the real `git http-backend`, behind Basic
//! authentication: the source's credentials are sent, a wrong password fails without being
//! printed, and two identities do not share cache entries.

use std::fs;

use plumb_source::{Cache, Credentials, GitRef, GitSource, Mode};

#[path = "support/git_http.rs"]
mod git_http;
#[path = "support/git_server.rs"]
mod git_server;
use git_http::HttpGit;
use git_server::Repo;

fn source(url: &str, credentials: Option<(&str, &str)>) -> GitSource {
    GitSource {
        url: url.to_owned(),
        reference: GitRef {
            branch: Some("main".into()),
            ..GitRef::default()
        },
        ignore: None,
        credentials: credentials.map(|(u, p)| Credentials {
            username: u.into(),
            password: p.into(),
        }),
        ssh: None,
        recurse_submodules: false,
    }
}

#[test]
fn credentials_are_sent_and_a_wrong_password_is_never_printed() {
    // No prompt, no credential helper of the machine running the tests.
    std::env::set_var("GIT_TERMINAL_PROMPT", "0");
    std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
    let tmp = tempfile::tempdir().unwrap();
    std::env::set_var("HOME", tmp.path());
    let served = tmp.path().join("served");
    let upstream = Repo::init(&served, "private.git", "main");
    upstream.write("deploy/app.yaml", "kind: ConfigMap\n");
    let commit = upstream.commit("app");
    // http-backend serves a non-bare repository's .git directory as well.
    let server = HttpGit::start(&served, Some(("bot", "correct-horse")));
    let url = server.url("private.git/.git");
    let cache = Cache::new(tmp.path().join("cache"));

    let artifact = cache
        .fetch_git(&source(&url, Some(("bot", "correct-horse"))), Mode::Online)
        .unwrap();
    assert_eq!(artifact.revision, format!("main@sha1:{commit}"));
    assert_eq!(
        fs::read_to_string(artifact.dir.join("deploy/app.yaml")).unwrap(),
        "kind: ConfigMap\n"
    );

    let refused_before = server.refused.load(std::sync::atomic::Ordering::SeqCst);
    let err = cache
        .fetch_git(&source(&url, Some(("bot", "wrong-battery"))), Mode::Online)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&url), "{err}");
    assert!(
        !err.contains("wrong-battery") && !err.contains("correct-horse"),
        "{err}"
    );
    assert!(
        server.refused.load(std::sync::atomic::Ordering::SeqCst) > refused_before,
        "the server saw the wrong password"
    );

    let err = cache
        .fetch_git(&source(&url, None), Mode::Online)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&url), "{err}");

    // Another identity has its own entries: offline, the anonymous one finds nothing cached.
    let err = cache
        .fetch_git(&source(&url, None), Mode::Offline)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not in the cache"), "{err}");
    assert!(cache
        .fetch_git(&source(&url, Some(("bot", "correct-horse"))), Mode::Offline)
        .is_ok());
}
