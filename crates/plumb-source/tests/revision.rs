//! `plumb_source::revision` against repositories made with the real `git` program: revision
//! specs resolve to what `git rev-parse` says, the default base is the merge base git would
//! compute, and an export holds what `git archive` holds.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use plumb_source::revision::{Checkout, RevisionError};

/// Runs git in `dir` with no user or system configuration, failing the test when git fails.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// A new repository at `dir` on branch `branch`.
fn init(dir: &Path, branch: &str) {
    fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", branch]);
}

fn write(dir: &Path, path: &str, content: &str) {
    let file = dir.join(path);
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(file, content).unwrap();
}

/// Commits everything in the work tree; returns the commit id.
fn commit(dir: &Path, message: &str) -> String {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", message]);
    git(dir, &["rev-parse", "HEAD"])
}

/// One file changed and committed.
fn change(dir: &Path, path: &str, message: &str) -> String {
    write(dir, path, message);
    commit(dir, message)
}

#[test]
fn resolves_branches_tags_short_ids_and_ancestry() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    init(&repo, "main");
    let first = change(&repo, "a.yaml", "first");
    git(&repo, &["tag", "-a", "v1", "-m", "release one"]);
    let second = change(&repo, "a.yaml", "second");
    git(&repo, &["branch", "feature"]);
    write(&repo, "a.yaml", "third");
    git(&repo, &["add", "-A"]);
    git(
        &repo,
        &["commit", "-q", "-m", "third: the summary\n\nthe body"],
    );
    let third = git(&repo, &["rev-parse", "HEAD"]);

    let checkout = Checkout::open(&repo).unwrap();
    assert_eq!(checkout.subdir(), "");

    let main = checkout.resolve("main").unwrap();
    assert_eq!(main.id, third);
    assert_eq!(main.label, "main");
    assert_eq!(main.summary, "third: the summary");
    assert_eq!(main.short, git(&repo, &["rev-parse", "--short", "HEAD"]));

    assert_eq!(checkout.resolve("feature").unwrap().id, second);
    // An annotated tag is peeled to its commit, not the tag object.
    let tag_object = git(&repo, &["rev-parse", "v1"]);
    assert_ne!(tag_object, first);
    let v1 = checkout.resolve("v1").unwrap();
    assert_eq!(v1.id, first);
    assert_eq!(v1.summary, "first");
    assert_eq!(checkout.resolve(&first[..8]).unwrap().id, first);
    assert_eq!(checkout.resolve(&second).unwrap().id, second);
    assert_eq!(checkout.resolve("HEAD").unwrap().id, third);
    assert_eq!(checkout.resolve("HEAD~1").unwrap().id, second);
    assert_eq!(checkout.resolve("HEAD^1").unwrap().id, second);
    assert_eq!(checkout.resolve("HEAD~2").unwrap().id, first);
}

#[test]
fn an_unknown_revision_is_named_with_the_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    init(&repo, "main");
    change(&repo, "a.yaml", "first");
    let checkout = Checkout::open(&repo).unwrap();

    let err = checkout.resolve("no-such-branch").unwrap_err();
    assert!(
        matches!(&err, RevisionError::UnknownRevision { rev, .. } if rev == "no-such-branch"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.starts_with("unknown revision `no-such-branch` in "),
        "{text}"
    );
    assert!(
        text.contains(&checkout.root().display().to_string()),
        "{text}"
    );
    assert!(
        text.contains(": Reference \"no-such-branch\" could not be found; name a branch"),
        "{text}"
    );
    // Beyond the start of history.
    let err = checkout.resolve("HEAD~5").unwrap_err();
    assert!(
        matches!(err, RevisionError::UnknownRevision { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("out of range"), "{err}");
    let err = checkout.resolve("main..HEAD").unwrap_err();
    assert!(
        err.to_string().contains("a range names two commits"),
        "{err}"
    );
    // A tree is not a commit.
    let err = checkout.resolve("HEAD^{tree}").unwrap_err();
    assert!(err.to_string().contains("not a commit"), "{err}");
}

#[test]
fn a_plain_directory_is_not_a_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("plain");
    fs::create_dir(&dir).unwrap();
    let err = Checkout::open(&dir).err().expect("no repository");
    assert!(
        matches!(&err, RevisionError::NotARepository { path } if path == &dir),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with(&format!("{} is not inside a git repository", dir.display())),
        "{err}"
    );
}

/// A bare `origin` with branches `main` and `release`, and a clone of it at `work`.
fn origin_and_clone(tmp: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let seed = tmp.join("seed");
    init(&seed, "main");
    change(&seed, "a.yaml", "main one");
    git(&seed, &["checkout", "-q", "-b", "release"]);
    change(&seed, "r.yaml", "release one");
    git(&seed, &["checkout", "-q", "main"]);
    change(&seed, "a.yaml", "main two");
    let origin = tmp.join("origin.git");
    git(
        tmp,
        &[
            "clone",
            "-q",
            "--bare",
            seed.to_str().unwrap(),
            origin.to_str().unwrap(),
        ],
    );
    let work = tmp.join("work");
    git(
        tmp,
        &[
            "clone",
            "-q",
            origin.to_str().unwrap(),
            work.to_str().unwrap(),
        ],
    );
    (seed, origin, work)
}

#[test]
fn the_default_base_is_the_fork_point_from_the_upstream() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, origin, work) = origin_and_clone(tmp.path());
    // feature tracks origin/release, not main: the upstream comes first.
    git(
        &work,
        &[
            "checkout",
            "-q",
            "-b",
            "feature",
            "--track",
            "origin/release",
        ],
    );
    let fork = git(&work, &["rev-parse", "HEAD"]);
    change(&work, "f.yaml", "feature one");

    // The release branch advances on the server after the fork, and is fetched.
    let other = tmp.path().join("other");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "-b",
            "release",
            origin.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    change(&other, "r.yaml", "release two");
    git(&other, &["push", "-q", "origin", "release"]);
    git(&work, &["fetch", "-q", "origin"]);
    let remote_tip = git(&work, &["rev-parse", "origin/release"]);
    assert_ne!(remote_tip, fork);

    let checkout = Checkout::open(&work).unwrap();
    let base = checkout.default_base().unwrap();
    assert_eq!(base.id, fork);
    assert_eq!(
        base.id,
        git(&work, &["merge-base", "HEAD", "origin/release"])
    );
    assert_eq!(base.label, "merge base of HEAD and origin/release");
    assert_eq!(base.summary, "release one");

    // A branch with no upstream in the same clone compares with what origin/HEAD names.
    git(
        &work,
        &[
            "checkout",
            "-q",
            "--no-track",
            "-b",
            "loose",
            "origin/release",
        ],
    );
    change(&work, "l.yaml", "loose one");
    let base = Checkout::open(&work).unwrap().default_base().unwrap();
    assert_eq!(base.label, "merge base of HEAD and origin/main");
    assert_eq!(base.id, git(&work, &["merge-base", "HEAD", "origin/main"]));
}

#[test]
fn without_an_upstream_the_default_base_comes_from_main_then_master() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    init(&repo, "main");
    change(&repo, "a.yaml", "one");
    let fork = change(&repo, "a.yaml", "two");
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    change(&repo, "f.yaml", "feature");
    git(&repo, &["checkout", "-q", "main"]);
    change(&repo, "a.yaml", "three");
    git(&repo, &["checkout", "-q", "feature"]);

    let base = Checkout::open(&repo).unwrap().default_base().unwrap();
    assert_eq!(base.id, fork);
    assert_eq!(base.label, "merge base of HEAD and main");

    // A detached HEAD (as CI checks out a pull request) has no upstream either.
    git(&repo, &["checkout", "-q", "--detach"]);
    let base = Checkout::open(&repo).unwrap().default_base().unwrap();
    assert_eq!(base.id, fork);
    git(&repo, &["checkout", "-q", "feature"]);

    // A local branch as upstream (`branch.feature.remote = .`) comes before main.
    git(&repo, &["checkout", "-q", "-b", "develop", &fork]);
    git(&repo, &["reset", "-q", "--hard", "HEAD~1"]);
    let develop_tip = change(&repo, "d.yaml", "develop");
    git(&repo, &["checkout", "-q", "feature"]);
    git(&repo, &["rebase", "-q", "develop"]);
    git(&repo, &["branch", "-q", "--set-upstream-to=develop"]);
    let base = Checkout::open(&repo).unwrap().default_base().unwrap();
    assert_eq!(base.label, "merge base of HEAD and develop");
    assert_eq!(base.id, develop_tip);

    let old = tmp.path().join("old");
    init(&old, "master");
    let fork = change(&old, "a.yaml", "one");
    git(&old, &["checkout", "-q", "-b", "feature"]);
    change(&old, "f.yaml", "feature");
    let base = Checkout::open(&old).unwrap().default_base().unwrap();
    assert_eq!(base.id, fork);
    assert_eq!(base.label, "merge base of HEAD and master");
}

#[test]
fn no_default_base_names_what_was_tried() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    init(&repo, "trunk");
    change(&repo, "a.yaml", "one");
    let err = Checkout::open(&repo).unwrap().default_base().unwrap_err();
    assert!(
        matches!(&err, RevisionError::NoBase { shallow: false, .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(
            "tried the upstream of trunk (none set), origin/HEAD, main, origin/main, master, \
             origin/master; pass --base REV"
        ),
        "{text}"
    );
}

#[test]
fn a_shallow_clone_without_the_merge_base_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let (seed, origin, _) = origin_and_clone(tmp.path());
    let url = format!("file://{}", origin.display());
    let shallow = tmp.path().join("shallow");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "--depth",
            "1",
            &url,
            shallow.to_str().unwrap(),
        ],
    );
    git(&shallow, &["checkout", "-q", "-b", "feature"]);
    change(&shallow, "f.yaml", "feature");

    // main advances by two commits and the clone fetches only the new tip.
    git(&seed, &["checkout", "-q", "main"]);
    change(&seed, "a.yaml", "main three");
    change(&seed, "a.yaml", "main four");
    git(&seed, &["push", "-q", origin.to_str().unwrap(), "main"]);
    git(&shallow, &["fetch", "-q", "--depth", "1", "origin", "main"]);

    let err = Checkout::open(&shallow)
        .unwrap()
        .default_base()
        .unwrap_err();
    assert!(matches!(err, RevisionError::Shallow { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with(
            "shallow clone: the merge base of HEAD and origin/main is not in the history of "
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .ends_with("fetch more (`git fetch --unshallow`) or pass --base"),
        "{err}"
    );
}

/// Every file and directory under `root`: relative path -> (content, or None for a
/// directory; executable bit).
fn listing(root: &Path) -> BTreeMap<String, (Option<Vec<u8>>, bool)> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                found.insert(rel, (None, false));
                stack.push(path);
            } else {
                let executable = meta.permissions().mode() & 0o111 != 0;
                found.insert(rel, (Some(fs::read(&path).unwrap()), executable));
            }
        }
    }
    found
}

#[test]
fn an_export_of_a_subdirectory_holds_what_git_archive_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    init(&repo, "main");
    write(&repo, "README.md", "outside the subdirectory");
    write(
        &repo,
        "clusters/prod/kustomization.yaml",
        "resources: [app]\n",
    );
    write(&repo, "clusters/prod/app/deploy.yaml", "kind: Deployment\n");
    // What source-controller would leave out stays: this is the user's work tree.
    write(&repo, "clusters/prod/.sourceignore", "app/\n");
    write(&repo, "clusters/prod/.github/workflow.yml", "on: push\n");
    write(&repo, "clusters/prod/logo.png", "\u{89}PNG");
    write(&repo, "clusters/prod/empty.yaml", "");
    write(
        &repo,
        "clusters/prod/scripts/run.sh",
        "#!/bin/sh\necho hi\n",
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let script = repo.join("clusters/prod/scripts/run.sh");
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let first = commit(&repo, "first");
    assert!(git(&repo, &["ls-tree", "-r", &first]).contains("100755 blob"));
    // Later commits and uncommitted edits are not what the first revision holds.
    change(
        &repo,
        "clusters/prod/app/deploy.yaml",
        "kind: StatefulSet\n",
    );
    write(&repo, "clusters/prod/kustomization.yaml", "uncommitted\n");

    let checkout = Checkout::open(&repo.join("clusters/prod")).unwrap();
    assert_eq!(checkout.subdir(), "clusters/prod");
    let rev = checkout.resolve(&first).unwrap();
    let dest = tmp.path().join("export");
    fs::create_dir(&dest).unwrap();
    let exported = checkout.export(&rev, &dest).unwrap();
    assert!(exported.skipped_symlinks.is_empty());
    assert!(exported.submodules.is_empty());

    let archive = tmp.path().join("archive");
    fs::create_dir(&archive).unwrap();
    let tar = archive.join("prod.tar");
    git(
        &repo,
        &[
            "archive",
            "--format=tar",
            "-o",
            tar.to_str().unwrap(),
            &first,
            "clusters/prod",
        ],
    );
    let status = Command::new("tar")
        .current_dir(&archive)
        .args(["-xf", "prod.tar"])
        .status()
        .unwrap();
    assert!(status.success());
    let expected = listing(&archive.join("clusters/prod"));
    let actual = listing(&dest);
    assert_eq!(
        actual.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    assert_eq!(actual, expected);
    assert!(actual["scripts/run.sh"].1, "run.sh lost its executable bit");
    assert_eq!(
        actual["app/deploy.yaml"].0.as_deref(),
        Some(&b"kind: Deployment\n"[..])
    );
    assert!(actual.contains_key(".github/workflow.yml"));
}

#[test]
fn a_directory_missing_at_the_revision_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    init(&repo, "main");
    change(&repo, "clusters/old/a.yaml", "old");
    write(&repo, "clusters/new/a.yaml", "new");
    commit(&repo, "a new cluster");

    let checkout = Checkout::open(&repo.join("clusters/new")).unwrap();
    let before = checkout.resolve("HEAD~1").unwrap();
    let dest = tmp.path().join("export");
    fs::create_dir(&dest).unwrap();
    let err = checkout.export(&before, &dest).unwrap_err();
    assert!(
        matches!(&err, RevisionError::MissingPath { path, .. } if path == "clusters/new"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "`clusters/new` is not a directory at HEAD~1 ({}) in ",
            before.short
        )),
        "{text}"
    );
    assert!(text.contains("--base-path"), "{text}");

    // A file at that path is no directory either.
    let head = checkout.resolve("HEAD").unwrap();
    let err = checkout
        .export_path(&head, "clusters/old/a.yaml", &dest)
        .unwrap_err();
    assert!(matches!(err, RevisionError::MissingPath { .. }), "{err:?}");

    // At HEAD it exports.
    checkout.export(&head, &dest).unwrap();
    assert_eq!(fs::read_to_string(dest.join("a.yaml")).unwrap(), "new");
}

#[test]
fn symlinks_inside_the_export_are_kept_and_others_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    init(&repo, "main");
    write(&repo, "shared/base.yaml", "shared");
    write(&repo, "clusters/common/vars.yaml", "vars");
    let link = |target: &str, path: &str| {
        let file = repo.join(path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, file).unwrap();
    };
    link("../common/vars.yaml", "clusters/prod/vars.yaml");
    link("../../shared/base.yaml", "clusters/prod/base.yaml");
    link("/etc/hostname", "clusters/prod/absolute");
    link("prod", "clusters/current");
    // Each text stays inside `clusters`, but `dot/..` is the export's parent.
    link(".", "clusters/dot");
    link("dot/../secret.txt", "clusters/sneaky");
    let sub = commit(&repo, "shared");
    // A submodule (a gitlink entry) is listed, not written.
    git(
        &repo,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{sub},clusters/vendored"),
        ],
    );
    git(&repo, &["commit", "-q", "-m", "links"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);

    let checkout = Checkout::open(&repo.join("clusters")).unwrap();
    let rev = checkout.resolve(&head).unwrap();
    let out = tmp.path().join("out");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("secret.txt"), "outside the export").unwrap();
    let dest = out.join("export");
    fs::create_dir(&dest).unwrap();
    let exported = checkout.export(&rev, &dest).unwrap();

    assert_eq!(
        fs::read_link(dest.join("prod/vars.yaml")).unwrap(),
        Path::new("../common/vars.yaml")
    );
    assert_eq!(
        fs::read_to_string(dest.join("prod/vars.yaml")).unwrap(),
        "vars"
    );
    assert_eq!(
        fs::read_to_string(dest.join("current/vars.yaml")).unwrap(),
        "vars"
    );
    assert!(dest.join("dot").is_symlink());
    for skipped in ["prod/base.yaml", "prod/absolute", "sneaky"] {
        assert!(
            fs::symlink_metadata(dest.join(skipped)).is_err(),
            "{skipped} was written"
        );
    }
    assert_eq!(
        exported.skipped_symlinks,
        vec![
            ("prod/absolute".to_owned(), "/etc/hostname".to_owned()),
            (
                "prod/base.yaml".to_owned(),
                "../../shared/base.yaml".to_owned()
            ),
            ("sneaky".to_owned(), "dot/../secret.txt".to_owned()),
        ]
    );
    assert_eq!(exported.submodules, vec!["vendored".to_owned()]);
    assert!(!dest.join("vendored").exists());
}
