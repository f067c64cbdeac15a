//! Fetches against a real `git daemon` the test starts on loopback, and against `file://` URLs.
//!
//! Each test builds its repositories with the git binary, serves them, and checks what lands in
//! the cache: the files, the revision string, and that cached pins and offline mode need no
//! server (proved by stopping it).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use plumb_source::{Cache, FetchError, GitRef, GitSource, Mode};

#[path = "support/git_server.rs"]
mod git_server;
use git_server::{free_port, Daemon, Repo};

/// Temporary directories for served repositories and for the cache.
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

fn source(url: &str, reference: GitRef) -> GitSource {
    GitSource {
        url: url.to_owned(),
        reference,
        ignore: None,
        credentials: None,
        ssh: None,
        recurse_submodules: false,
    }
}

fn read(dir: &Path, path: &str) -> String {
    fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every tree directory the cache holds for any URL, and whether `tmp/` is empty.
fn cache_state(cache_dir: &Path) -> (Vec<String>, bool) {
    let mut trees = Vec::new();
    if let Ok(urls) = fs::read_dir(cache_dir.join("git")) {
        for url in urls {
            for entry in fs::read_dir(url.unwrap().path()).unwrap() {
                let name = entry.unwrap().file_name().into_string().unwrap();
                // `refs/` and the `source` file (the URL) are not trees.
                if name != "refs" && name != "source" {
                    trees.push(name);
                }
            }
        }
    }
    let tmp_empty = fs::read_dir(cache_dir.join("tmp"))
        .map(|mut d| d.next().is_none())
        .unwrap_or(true);
    (trees, tmp_empty)
}

#[test]
fn branch_fetch_writes_the_tree_without_git_and_excluded_files() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "main");
    repo.write("deploy/app.yaml", "kind: ConfigMap\n");
    repo.write("docs/logo.png", "not really a png");
    repo.write(".github/workflows/ci.yml", "on: push\n");
    repo.write(".sourceignore", "secret.yaml\n");
    repo.write("deploy/secret.yaml", "kind: Secret\n");
    let head = repo.commit("first");
    let daemon = Daemon::start(&setup.base);

    let artifact = setup
        .cache()
        .fetch_git(
            &source(&daemon.url("app"), GitRef::branch("main")),
            Mode::Online,
        )
        .unwrap();

    assert_eq!(artifact.revision, format!("main@sha1:{head}"));
    assert_eq!(artifact.commit, head);
    assert!(artifact.dir.starts_with(&setup.cache_dir));
    assert!(artifact.dir.ends_with(&head));
    assert_eq!(read(&artifact.dir, "deploy/app.yaml"), "kind: ConfigMap\n");
    assert!(artifact.dir.join(".sourceignore").is_file());
    for absent in [".git", "docs/logo.png", ".github", "deploy/secret.yaml"] {
        assert!(
            !artifact.dir.join(absent).exists(),
            "{absent} should be excluded"
        );
    }
    assert!(artifact.dir.join("docs").is_dir());
    let (_, tmp_empty) = cache_state(&setup.cache_dir);
    assert!(tmp_empty, "work directories are removed");
}

#[test]
fn no_ref_means_branch_master() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "master");
    repo.write("a.yaml", "on master\n");
    let head = repo.commit("first");
    let daemon = Daemon::start(&setup.base);

    let artifact = setup
        .cache()
        .fetch_git(&source(&daemon.url("app"), GitRef::default()), Mode::Online)
        .unwrap();
    assert_eq!(artifact.revision, format!("master@sha1:{head}"));
    assert_eq!(read(&artifact.dir, "a.yaml"), "on master\n");
}

#[test]
fn tag_fetch_checks_out_the_tagged_commit_for_annotated_and_lightweight_tags() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "main");
    repo.write("version.txt", "one\n");
    let first = repo.commit("first");
    repo.git(&["tag", "-a", "v1.0.0", "-m", "annotated"]);
    repo.write("version.txt", "two\n");
    let second = repo.commit("second");
    repo.git(&["tag", "light"]);
    repo.write("version.txt", "three\n");
    repo.commit("third");
    let daemon = Daemon::start(&setup.base);
    let cache = setup.cache();

    let annotated = cache
        .fetch_git(
            &source(&daemon.url("app"), GitRef::tag("v1.0.0")),
            Mode::Online,
        )
        .unwrap();
    assert_eq!(annotated.revision, format!("v1.0.0@sha1:{first}"));
    assert_eq!(read(&annotated.dir, "version.txt"), "one\n");

    let light = cache
        .fetch_git(
            &source(&daemon.url("app"), GitRef::tag("light")),
            Mode::Online,
        )
        .unwrap();
    assert_eq!(light.revision, format!("light@sha1:{second}"));
    assert_eq!(read(&light.dir, "version.txt"), "two\n");
}

#[test]
fn semver_picks_the_highest_tag_in_range() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "main");
    let mut commits = std::collections::HashMap::new();
    for tag in ["v1.0.0", "v1.2.0", "v1.10.0-rc.1", "v2.0.0", "1.1.0"] {
        repo.write("version.txt", tag);
        commits.insert(tag, repo.commit(tag));
        repo.git(&["tag", "-a", tag, "-m", tag]);
    }
    let daemon = Daemon::start(&setup.base);
    let cache = setup.cache();

    let artifact = cache
        .fetch_git(
            &source(&daemon.url("app"), GitRef::semver(">=1.0.0 <2.0.0")),
            Mode::Online,
        )
        .unwrap();
    assert_eq!(
        artifact.revision,
        format!("v1.2.0@sha1:{}", commits["v1.2.0"])
    );
    assert_eq!(read(&artifact.dir, "version.txt"), "v1.2.0");

    let exact = cache
        .fetch_git(
            &source(&daemon.url("app"), GitRef::semver("1.1.0")),
            Mode::Online,
        )
        .unwrap();
    assert_eq!(exact.revision, format!("1.1.0@sha1:{}", commits["1.1.0"]));

    let err = cache
        .fetch_git(
            &source(&daemon.url("app"), GitRef::semver(">=3")),
            Mode::Online,
        )
        .unwrap_err();
    assert!(matches!(err, FetchError::RefNotFound { .. }), "{err}");
    assert!(err.to_string().contains(">=3"), "{err}");

    let err = cache
        .fetch_git(
            &source(&daemon.url("app"), GitRef::semver("not a range")),
            Mode::Online,
        )
        .unwrap_err();
    assert!(matches!(err, FetchError::InvalidRef { .. }), "{err}");
}

#[test]
fn commit_pin_is_fetched_once_then_served_from_the_cache_without_the_server() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "main");
    repo.write("a.yaml", "old\n");
    let first = repo.commit("first");
    repo.write("a.yaml", "new\n");
    repo.commit("second");
    let mut daemon = Daemon::start(&setup.base);
    let url = daemon.url("app");
    let cache = setup.cache();

    let pinned = cache
        .fetch_git(&source(&url, GitRef::commit(&first)), Mode::Online)
        .unwrap();
    assert_eq!(pinned.revision, format!("sha1:{first}"));
    assert_eq!(read(&pinned.dir, "a.yaml"), "old\n");

    let mut with_branch = GitRef::commit(&first);
    with_branch.branch = Some("main".into());
    let in_branch = cache
        .fetch_git(&source(&url, with_branch.clone()), Mode::Online)
        .unwrap();
    assert_eq!(in_branch.revision, format!("main@sha1:{first}"));
    assert_eq!(in_branch.dir, pinned.dir);

    daemon.stop();
    let again = cache
        .fetch_git(&source(&url, GitRef::commit(&first)), Mode::Online)
        .unwrap();
    assert_eq!(again, pinned);
    let offline = cache
        .fetch_git(&source(&url, with_branch), Mode::Offline)
        .unwrap();
    assert_eq!(offline, in_branch);
}

#[test]
fn commit_that_is_not_in_the_repository_is_not_found() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "main");
    repo.commit("first");
    let daemon = Daemon::start(&setup.base);
    let missing = "0123456789abcdef0123456789abcdef01234567";

    let err = setup
        .cache()
        .fetch_git(
            &source(&daemon.url("app"), GitRef::commit(missing)),
            Mode::Online,
        )
        .unwrap_err();
    assert!(matches!(err, FetchError::RefNotFound { .. }), "{err}");
    assert!(err.to_string().contains(missing), "{err}");
    assert!(err.to_string().contains(&daemon.url("app")), "{err}");

    let err = setup
        .cache()
        .fetch_git(
            &source(&daemon.url("app"), GitRef::commit("abc123")),
            Mode::Online,
        )
        .unwrap_err();
    assert!(matches!(err, FetchError::InvalidRef { .. }), "{err}");
}

#[test]
fn offline_uses_the_last_online_resolution_and_fails_clearly_without_one() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "main");
    repo.write("a.yaml", "main\n");
    let head = repo.commit("first");
    repo.git(&["tag", "v1.0.0"]);
    let mut daemon = Daemon::start(&setup.base);
    let url = daemon.url("app");
    let cache = setup.cache();

    let online = cache
        .fetch_git(&source(&url, GitRef::branch("main")), Mode::Online)
        .unwrap();
    daemon.stop();

    let offline = cache
        .fetch_git(&source(&url, GitRef::branch("main")), Mode::Offline)
        .unwrap();
    assert_eq!(offline, online);
    assert_eq!(offline.revision, format!("main@sha1:{head}"));

    // The same commit under a tag was never resolved: offline cannot know it.
    let err = cache
        .fetch_git(&source(&url, GitRef::tag("v1.0.0")), Mode::Offline)
        .unwrap_err();
    assert!(matches!(err, FetchError::NotCached { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&url) && text.contains("v1.0.0") && text.contains("offline"),
        "{text}"
    );

    // Online with the server gone: unreachable, naming the URL and the ref.
    let err = cache
        .fetch_git(&source(&url, GitRef::branch("main")), Mode::Online)
        .unwrap_err();
    assert!(matches!(err, FetchError::Unreachable { .. }), "{err}");
    assert!(err.to_string().contains(&url), "{err}");
    assert!(err.to_string().contains("\"main\""), "{err}");
}

#[test]
fn a_branch_that_moves_is_refetched_online() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "main");
    repo.write("a.yaml", "one\n");
    let first = repo.commit("first");
    let daemon = Daemon::start(&setup.base);
    let url = daemon.url("app");
    let cache = setup.cache();
    let main = source(&url, GitRef::branch("main"));

    let before = cache.fetch_git(&main, Mode::Online).unwrap();
    assert_eq!(before.revision, format!("main@sha1:{first}"));

    repo.write("a.yaml", "two\n");
    let second = repo.commit("second");
    let after = cache.fetch_git(&main, Mode::Online).unwrap();
    assert_eq!(after.revision, format!("main@sha1:{second}"));
    assert_eq!(read(&after.dir, "a.yaml"), "two\n");
    assert_ne!(after.dir, before.dir);
    assert_eq!(
        read(&before.dir, "a.yaml"),
        "one\n",
        "old commit stays cached"
    );

    // Offline now answers with the latest resolution.
    let offline = cache.fetch_git(&main, Mode::Offline).unwrap();
    assert_eq!(offline, after);
}

#[test]
fn ref_name_is_resolved_and_reported_in_full() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "main");
    repo.write("a.yaml", "a\n");
    let head = repo.commit("first");
    repo.git(&["update-ref", "refs/pull/7/head", &head]);
    let daemon = Daemon::start(&setup.base);

    let artifact = setup
        .cache()
        .fetch_git(
            &source(&daemon.url("app"), GitRef::name("refs/pull/7/head")),
            Mode::Online,
        )
        .unwrap();
    assert_eq!(artifact.revision, format!("refs/pull/7/head@sha1:{head}"));
    assert_eq!(read(&artifact.dir, "a.yaml"), "a\n");
}

#[test]
fn missing_branch_and_tag_are_not_found_and_leave_nothing_behind() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "main");
    repo.commit("first");
    let daemon = Daemon::start(&setup.base);
    let url = daemon.url("app");
    let cache = setup.cache();

    for reference in [GitRef::branch("nope"), GitRef::tag("v9.9.9")] {
        let err = cache
            .fetch_git(&source(&url, reference), Mode::Online)
            .unwrap_err();
        assert!(matches!(err, FetchError::RefNotFound { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains(&url), "{text}");
        assert!(text.contains("nope") || text.contains("v9.9.9"), "{text}");
    }
    let (trees, tmp_empty) = cache_state(&setup.cache_dir);
    assert!(trees.is_empty(), "{trees:?}");
    assert!(tmp_empty);
}

#[test]
fn unreachable_port_names_url_and_ref() {
    let setup = Setup::new();
    let url = format!("git://127.0.0.1:{}/app", free_port());

    let err = setup
        .cache()
        .fetch_git(&source(&url, GitRef::branch("main")), Mode::Online)
        .unwrap_err();
    assert!(matches!(err, FetchError::Unreachable { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&url) && text.contains("branch \"main\""),
        "{text}"
    );
    let (trees, tmp_empty) = cache_state(&setup.cache_dir);
    assert!(trees.is_empty() && tmp_empty);
}

#[test]
fn symlinks_are_left_out_and_never_followed() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "main");
    repo.write("deploy/app.yaml", "kind: ConfigMap\n");
    std::os::unix::fs::symlink("/etc/passwd", repo.dir.join("passwd")).unwrap();
    std::os::unix::fs::symlink("../x", repo.dir.join("up")).unwrap();
    std::os::unix::fs::symlink("../../x", repo.dir.join("deploy/up2")).unwrap();
    std::os::unix::fs::symlink("app.yaml", repo.dir.join("deploy/inside")).unwrap();
    let head = repo.commit("links");
    assert_eq!(
        repo.git(&["ls-tree", "HEAD", "passwd"])
            .split_whitespace()
            .next(),
        Some("120000"),
        "the repository really holds a symlink"
    );
    let daemon = Daemon::start(&setup.base);

    let artifact = setup
        .cache()
        .fetch_git(
            &source(&daemon.url("app"), GitRef::branch("main")),
            Mode::Online,
        )
        .unwrap();
    assert_eq!(artifact.commit, head);
    assert_eq!(read(&artifact.dir, "deploy/app.yaml"), "kind: ConfigMap\n");
    for link in ["passwd", "up", "deploy/up2", "deploy/inside"] {
        assert!(
            fs::symlink_metadata(artifact.dir.join(link)).is_err(),
            "{link} must not be in the artifact"
        );
    }
    assert!(!setup.cache_dir.join("git").join("x").exists());
}

#[test]
fn a_tree_entry_named_dot_dot_is_refused_and_nothing_is_written() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "main");
    repo.write("a.yaml", "a\n");
    repo.commit("first");
    let blob = repo.git(&["rev-parse", "HEAD:a.yaml"]);
    // git mktree accepts a `..` entry that `git add` never would: a hostile repository.
    let tree = {
        let mut child = Command::new("git")
            .args(["mktree"])
            .current_dir(&repo.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        let entries = format!("100644 blob {blob}\tok.yaml\n100644 blob {blob}\t..\n");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(entries.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let evil = repo.git(&["commit-tree", &tree, "-m", "evil"]);
    repo.git(&["update-ref", "refs/heads/evil", &evil]);
    let daemon = Daemon::start(&setup.base);

    let err = setup
        .cache()
        .fetch_git(
            &source(&daemon.url("app"), GitRef::branch("evil")),
            Mode::Online,
        )
        .unwrap_err();
    assert!(matches!(err, FetchError::UnsafePath { .. }), "{err}");
    assert!(err.to_string().contains(&daemon.url("app")), "{err}");
    let (trees, tmp_empty) = cache_state(&setup.cache_dir);
    assert!(trees.is_empty(), "no tree published: {trees:?}");
    assert!(tmp_empty, "the half-written tree is removed");
}

#[test]
fn file_urls_are_fetched_too() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "main");
    repo.write("a.yaml", "local\n");
    let head = repo.commit("first");
    let url = format!("file://{}", repo.dir.display());

    let artifact = setup
        .cache()
        .fetch_git(&source(&url, GitRef::branch("main")), Mode::Online)
        .unwrap();
    assert_eq!(artifact.revision, format!("main@sha1:{head}"));
    assert_eq!(read(&artifact.dir, "a.yaml"), "local\n");
}

#[test]
fn spec_ignore_replaces_the_default_exclusions_and_gets_its_own_tree() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "main");
    repo.write("deploy/app.yaml", "a\n");
    repo.write("deploy/logo.png", "png\n");
    repo.write("README.md", "docs\n");
    repo.commit("first");
    let url = format!("file://{}", repo.dir.display());
    let cache = setup.cache();

    let default = cache
        .fetch_git(&source(&url, GitRef::branch("main")), Mode::Online)
        .unwrap();
    let mut only_deploy = source(&url, GitRef::branch("main"));
    only_deploy.ignore = Some("/*\n!/deploy\n".into());
    let custom = cache.fetch_git(&only_deploy, Mode::Online).unwrap();

    assert_ne!(default.dir, custom.dir);
    assert!(default.dir.join("README.md").is_file());
    assert!(!default.dir.join("deploy/logo.png").exists());
    assert!(!custom.dir.join("README.md").exists());
    assert!(custom.dir.join("deploy/logo.png").is_file());
    assert!(custom.dir.join("deploy/app.yaml").is_file());
}

#[test]
fn concurrent_fetches_of_one_commit_all_succeed_with_one_tree() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "main");
    repo.write("a.yaml", "a\n");
    let head = repo.commit("first");
    let daemon = Daemon::start(&setup.base);
    let url = daemon.url("app");

    let artifacts: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let cache = setup.cache();
                let src = source(&url, GitRef::branch("main"));
                scope.spawn(move || cache.fetch_git(&src, Mode::Online))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for artifact in &artifacts {
        let artifact = artifact.as_ref().unwrap();
        assert_eq!(artifact.commit, head);
        assert_eq!(read(&artifact.dir, "a.yaml"), "a\n");
    }
    let (trees, tmp_empty) = cache_state(&setup.cache_dir);
    assert_eq!(trees, vec![head]);
    assert!(tmp_empty);
}

#[test]
fn cache_that_cannot_be_created_is_reported_with_url_and_ref() {
    let setup = Setup::new();
    let repo = Repo::init(&setup.base, "app", "main");
    repo.commit("first");
    let url = format!("file://{}", repo.dir.display());
    let blocker = setup.base.join("a-file");
    fs::write(&blocker, "not a directory").unwrap();
    let cache = Cache::new(blocker.join("cache"));

    let err = cache
        .fetch_git(&source(&url, GitRef::branch("main")), Mode::Online)
        .unwrap_err();
    assert!(matches!(err, FetchError::CacheNotWritable { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&url) && text.contains("main"), "{text}");
}
