//! `plumb build` with a GitRepository in another repository, served by a real `git daemon` on
//! loopback: fetched into the cache and built; built again `--offline` with the server stopped;
//! unavailable, naming the URL, when nothing serves it; fetched from a mirror that the
//! repository's `.plumb.yaml` or the user's configuration file names.

#[path = "support/cli.rs"]
mod cli;
#[path = "../../plumb-source/tests/support/git_http.rs"]
mod git_http;
#[path = "../../plumb-source/tests/support/git_server.rs"]
mod git_server;
#[path = "../../plumb-source/tests/support/ssh_server.rs"]
mod ssh_server;

use assert_cmd::Command;
use cli::{plumb_build, write};
use git_server::{free_port, Daemon, Repo};
use std::fs;
use std::path::Path;

/// A cluster whose `crds` Kustomization builds `./crds` of the GitRepository at `url`.
fn flux_repo(root: &Path, url: &str) {
    write(
        root,
        "clusters/dev/sources.yaml",
        &format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {{name: crds, namespace: flux-system}}\nspec:\n  url: {url}\n  ref: {{branch: main}}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: crds, namespace: flux-system}}\nspec:\n  path: ./crds\n  sourceRef: {{kind: GitRepository, name: crds}}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: apps, namespace: flux-system}}\nspec:\n  path: ./apps\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n"
        ),
    );
    write(
        root,
        "apps/ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n",
    );
}

fn build(repo: &Path, cache: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    build_with(repo, cache, extra, None)
}

fn build_with(
    repo: &Path,
    cache: &Path,
    extra: &[&str],
    user_config: Option<&Path>,
) -> (Option<i32>, String, String) {
    match user_config {
        Some(path) => plumb_build(repo, cache, extra, &[("PLUMB_CONFIG", path.as_os_str())]),
        None => plumb_build(repo, cache, extra, &[]),
    }
}

#[test]
fn a_git_repository_elsewhere_is_fetched_cached_and_built_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let upstream = Repo::init(&served, "crds.git", "main");
    upstream.write(
        "crds/crontab.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched-from-git, namespace: default}\n",
    );
    upstream.commit("crds");
    let mut daemon = Daemon::start(&served);
    let repo = tmp.path().join("repo");
    flux_repo(&repo, &daemon.url("crds.git"));
    let cache = tmp.path().join("cache");

    let (code, out, err) = build(&repo, &cache, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ConfigMap/default/fetched-from-git"), "{out}");
    assert!(err.contains("3 built, 0 failed, 0 not built"), "{err}");
    // stderr is piped: no progress spinner in it.
    assert!(!err.contains("fetching GitRepository"), "{err}");

    daemon.stop();
    let (code, out, err) = build(&repo, &cache, &["--offline"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ConfigMap/default/fetched-from-git"), "{out}");
}

#[test]
fn a_git_repository_nothing_serves_is_unavailable_with_its_url() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let url = format!("git://127.0.0.1:{}/crds.git", free_port());
    flux_repo(&repo, &url);
    let (code, out, err) = build(&repo, &tmp.path().join("cache"), &[]);
    // The build is incomplete: exit 1, and the summary counts it apart from failures.
    assert_eq!(code, Some(1), "{err}");
    assert!(out.contains("Namespace//apps"), "{out}");
    assert!(err.contains(&format!("unavailable flux-system/crds (crds): source GitRepository/flux-system/crds ({url}) is unavailable")), "{err}");
    assert!(
        err.contains("1 unavailable (source could not be fetched)"),
        "{err}"
    );
    // With the chain of Kustomizations that leads to it.
    assert!(
        err.contains("= via: ") && err.contains("→ flux-system/crds"),
        "{err}"
    );
    let (_, _, err) = build(&repo, &tmp.path().join("empty-cache"), &["--offline"]);
    assert!(err.contains("is unavailable"), "{err}");
    // plumb check says what it could not check.
    let out = Command::cargo_bin("plumb")
        .unwrap()
        .args(["check", "--cache-dir"])
        .arg(tmp.path().join("cache"))
        .arg(&repo)
        .env("PLUMB_CONFIG", tmp.path().join("none.yaml"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not checked: 0 failed to build, 0 not built, 1 unavailable (-v lists them)"),
        "{err}"
    );
}

#[test]
fn mirrors_fetch_a_git_repository_from_a_local_server() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let upstream = Repo::init(&served.join("org"), "crds.git", "main");
    upstream.write(
        "crds/crontab.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched-from-mirror, namespace: default}\n",
    );
    upstream.commit("crds");
    let daemon = Daemon::start(&served);
    let repo = tmp.path().join("repo");
    flux_repo(&repo, "https://git.example.invalid/org/crds.git");
    let local = daemon.url("");
    let local = local.trim_end_matches('/');
    write(
        &repo,
        ".plumb.yaml",
        &format!("mirrors:\n- from: https://git.example.invalid\n  to: {local}\n"),
    );
    let cache = tmp.path().join("cache");
    let (code, out, err) = build(&repo, &cache, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("ConfigMap/default/fetched-from-mirror"),
        "{out}"
    );

    // The user's own rule wins over the repository's: here it points at nothing.
    let dead = format!("git://127.0.0.1:{}", free_port());
    let user = tmp.path().join("user.yaml");
    write(
        tmp.path(),
        "user.yaml",
        &format!(
            "mirrors:\n- from: git.example.invalid/org\n  to: {}\n",
            &dead["git://".len()..]
        ),
    );
    let (code, _, err) = build_with(&repo, &tmp.path().join("cache2"), &[], Some(&user));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "fetched from mirror https://{}/crds.git",
            &dead["git://".len()..]
        )),
        "{err}"
    );

    // A broken user configuration names its file and line.
    write(tmp.path(), "user.yaml", "mirrors:\n- from: x\n");
    let (code, _, err) = build_with(&repo, &cache, &[], Some(&user));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}:2: a mirror needs a non-empty `to`",
            user.display()
        )),
        "{err}"
    );
}

#[test]
fn a_ref_that_does_not_exist_fails_the_kustomization_at_its_source_ref() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let upstream = Repo::init(&served, "crds.git", "trunk");
    upstream.write(
        "crds/a.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    );
    upstream.commit("crds");
    let daemon = Daemon::start(&served);
    let repo = tmp.path().join("repo");
    let url = daemon.url("crds.git");
    flux_repo(&repo, &url);
    let (code, _, err) = build(&repo, &tmp.path().join("cache"), &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!("error: source GitRepository/flux-system/crds ({url}) is not ready: branch \"main\" not found in git repository {url}")),
        "{err}"
    );
    assert!(err.contains("clusters/dev/sources.yaml:"), "{err}");
    assert!(err.contains("1 failed"), "{err}");
}

#[test]
fn cache_ls_gc_and_clear() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let upstream = Repo::init(&served, "crds.git", "main");
    upstream.write(
        "crds/a.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    );
    let commit = upstream.commit("crds");
    let daemon = Daemon::start(&served);
    let repo = tmp.path().join("repo");
    flux_repo(&repo, &daemon.url("crds.git"));
    let cache = tmp.path().join("cache");
    let (code, _, err) = build(&repo, &cache, &[]);
    assert_eq!(code, Some(0), "{err}");

    let cache_cmd = |args: &[&str]| {
        let out = Command::cargo_bin("plumb")
            .unwrap()
            .arg("cache")
            .args(args)
            .arg("--cache-dir")
            .arg(&cache)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = cache_cmd(&["ls"]);
    assert_eq!(code, Some(0), "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("git "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains(&daemon.url("crds.git")) && line.contains(&commit),
        "{line}"
    );
    assert!(out.contains("1 revisions,"), "{out}");
    let (_, json, _) = cache_cmd(&["ls", "-o", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["entries"][0]["revision"], commit.as_str());
    assert_eq!(doc["entries"][0]["kind"], "git");

    // Used a moment ago: a 30-day gc keeps it, a 0s one removes it.
    let (code, out, _) = cache_cmd(&["gc"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("removed 0 revisions"), "{out}");
    let (_, out, _) = cache_cmd(&["gc", "--older-than", "0s"]);
    assert!(
        out.contains(&format!("removed git {} {commit}", daemon.url("crds.git"))),
        "{out}"
    );
    let (code, _, err) = build(&repo, &cache, &["--offline"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("is not in the cache"), "{err}");

    let (code, _, _) = build(&repo, &cache, &[]);
    assert_eq!(code, Some(0));
    let (_, out, _) = cache_cmd(&["clear"]);
    assert!(out.contains("cleared 1 revisions"), "{out}");
    let (_, out, _) = cache_cmd(&["ls"]);
    assert!(out.contains("is empty"), "{out}");
    let (code, _, err) = cache_cmd(&["gc", "--older-than", "3w"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("the unit is d, h, m or s"), "{err}");
}

#[test]
fn the_secret_ref_of_a_git_repository_authenticates_its_fetch() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let upstream = Repo::init(&served, "private.git", "main");
    upstream.write(
        "crds/a.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: private-config, namespace: default}\n",
    );
    upstream.commit("crds");
    let server = git_http::HttpGit::start(&served, Some(("bot", "hunter2-token")));
    let url = server.url("private.git/.git");
    let repo = tmp.path().join("repo");
    flux_repo(&repo, &url);
    let cache = tmp.path().join("cache");
    let home = tmp.path().join("home");
    let run = |repo: &Path| {
        let out = Command::cargo_bin("plumb")
            .unwrap()
            .args(["build", "-v", "-o", "names", "--cache-dir"])
            .arg(&cache)
            .arg(repo)
            .env("PLUMB_CONFIG", tmp.path().join("none.yaml"))
            .env("HOME", &home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Without the Secret: refused, unavailable.
    let (code, _, err) = run(&repo);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains(&format!("({url}) is unavailable")), "{err}");

    // The GitRepository names a Secret the repository holds.
    let sources = fs::read_to_string(repo.join("clusters/dev/sources.yaml")).unwrap();
    let sources = sources.replace(
        "  ref: {branch: main}\n",
        "  ref: {branch: main}\n  secretRef: {name: git-auth}\n",
    );
    write(&repo, "clusters/dev/sources.yaml", &sources);
    write(
        &repo,
        "clusters/dev/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: git-auth, namespace: flux-system}\nstringData: {username: bot, password: wrong-token}\n",
    );
    let (code, _, err) = run(&repo);
    assert_eq!(code, Some(1), "{err}");
    assert!(!err.contains("wrong-token"), "{err}");
    write(
        &repo,
        "clusters/dev/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: git-auth, namespace: flux-system}\nstringData: {username: bot, password: hunter2-token}\n",
    );
    let (code, out, err) = run(&repo);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ConfigMap/default/private-config"), "{out}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn an_ssh_git_repository_is_fetched_with_the_key_of_its_secret() {
    assert!(
        ssh_server::available(),
        "sshd is not installed: run scripts/ensure-sshd"
    );
    let tmp = tempfile::tempdir().unwrap();
    let upstream = Repo::init(&tmp.path().join("served"), "ops.git", "main");
    upstream.write(
        "crds/a.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: over-ssh, namespace: default}\n",
    );
    upstream.commit("crds");
    let server = ssh_server::Sshd::start(&tmp.path().join("sshd"), free_port());
    let url = server.url(&upstream.dir);
    let repo = tmp.path().join("repo");
    flux_repo(&repo, &url);
    let sources = fs::read_to_string(repo.join("clusters/dev/sources.yaml")).unwrap();
    write(
        &repo,
        "clusters/dev/sources.yaml",
        &sources.replace(
            "  ref: {branch: main}\n",
            "  ref: {branch: main}\n  secretRef: {name: ssh-key}\n",
        ),
    );
    let indent = |text: &str| {
        text.lines()
            .map(|l| format!("    {l}\n"))
            .collect::<String>()
    };
    write(
        &repo,
        "clusters/dev/secret.yaml",
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: ssh-key, namespace: flux-system}}\nstringData:\n  identity: |\n{}  known_hosts: |\n{}",
            indent(&server.identity),
            indent(&server.known_hosts)
        ),
    );
    let (code, out, err) = build(&repo, &tmp.path().join("cache"), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ConfigMap/default/over-ssh"), "{out}");
    assert!(!err.contains("PRIVATE KEY"), "{err}");
}

#[test]
fn submodules_are_fetched_at_their_commit_with_recurse_submodules() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let lib = Repo::init(&served, "lib.git", "main");
    lib.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-submodule, namespace: default}\n",
    );
    lib.commit("lib");
    let daemon = Daemon::start(&served);
    let app = Repo::init(&served, "crds.git", "main");
    app.write(
        "crds/own.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: own, namespace: default}\n",
    );
    app.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        "../lib.git",
        "crds/lib",
    ]);
    app.commit("with a submodule");
    let repo = tmp.path().join("repo");
    flux_repo(&repo, &daemon.url("crds.git"));
    let (code, out, err) = build(&repo, &tmp.path().join("cache"), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        !out.contains("from-submodule"),
        "submodules only when asked: {out}"
    );

    let sources = fs::read_to_string(repo.join("clusters/dev/sources.yaml")).unwrap();
    write(
        &repo,
        "clusters/dev/sources.yaml",
        &sources.replace(
            "  ref: {branch: main}\n",
            "  ref: {branch: main}\n  recurseSubmodules: true\n",
        ),
    );
    let (code, out, err) = build(&repo, &tmp.path().join("cache"), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ConfigMap/default/own"), "{out}");
    assert!(out.contains("ConfigMap/default/from-submodule"), "{out}");
}

#[test]
fn an_include_copies_another_git_repository_into_the_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let crds = Repo::init(&served, "crds.git", "main");
    crds.write(
        "crds/a.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: own, namespace: default}\n",
    );
    crds.commit("own");
    let extra = Repo::init(&served, "extra.git", "main");
    extra.write(
        "manifests/b.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: included, namespace: default}\n",
    );
    extra.write("other/c.yaml", "not: included\n");
    extra.commit("extra");
    let daemon = Daemon::start(&served);
    let repo = tmp.path().join("repo");
    flux_repo(&repo, &daemon.url("crds.git"));
    let sources = fs::read_to_string(repo.join("clusters/dev/sources.yaml")).unwrap();
    let with_include = |include: &str| {
        sources.replace(
            "  ref: {branch: main}\n",
            &format!(
                "  ref: {{branch: main}}\n  include:\n  - repository: {{name: {include}}}\n    fromPath: manifests\n    toPath: crds/extra\n"
            ),
        ) + &format!(
            "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {{name: extra, namespace: flux-system}}\nspec:\n  url: {}\n  ref: {{branch: main}}\n",
            daemon.url("extra.git")
        )
    };
    write(&repo, "clusters/dev/sources.yaml", &with_include("extra"));
    let (code, out, err) = build(&repo, &tmp.path().join("cache"), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("ConfigMap/default/own"), "{out}");
    assert!(out.contains("ConfigMap/default/included"), "{out}");

    // An include of a GitRepository nothing defines: the source is not ready.
    write(&repo, "clusters/dev/sources.yaml", &with_include("absent"));
    let (code, _, err) = build(&repo, &tmp.path().join("cache"), &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("spec.include names GitRepository/flux-system/absent"),
        "{err}"
    );
}
