//! What a new user meets in the first hour (issue #17): `-q`/`-v`/`-vv`, the README's main
//! command and its SOPS Secrets, placeholder patterns as documented. Each test runs the binary
//! as a user would and checks the exit code and the words printed.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn homelab() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/homelab")
}

/// plumb with no age key, no user configuration and no helm from the environment.
fn plumb(cache: &Path) -> Command {
    let mut cmd = Command::cargo_bin("plumb").expect("the plumb binary");
    cmd.env_remove("SOPS_AGE_KEY_FILE")
        .env_remove("SOPS_AGE_KEY")
        .env_remove("NO_COLOR")
        .env("PLUMB_CONFIG", cache.join("no-user-config.yaml"))
        .env("PLUMB_CACHE_DIR", cache);
    cmd
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().expect("plumb runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// Whitespace runs as one space, so that wrapped text compares with unwrapped text.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn placeholder_star_matches_what_docs_and_explain_say() {
    // docs/config.md and `plumb explain SUB002` say the same thing about `*` ...
    let said = "`*` matches any run of letters, digits, `-` and `_`";
    let cache = tempfile::tempdir().expect("temp dir");
    let (code, explain, _) = run(plumb(cache.path()).args(["explain", "SUB002"]));
    assert_eq!(code, 0);
    assert!(words(&explain).contains(said), "{explain}");
    let docs = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/config.md"),
    )
    .expect("docs/config.md");
    assert!(words(&docs.replace("\n#", "\n")).contains(said));
    assert!(!docs.contains("matches any run of characters"));

    // ... and the rule does it: a word of those characters, never past a `.` or a space, and
    // never inside another word.
    let repo = tempfile::tempdir().expect("temp dir");
    write(
        repo.path(),
        ".plumb.yaml",
        "clusters: [clusters/dev]\nplaceholders: [\"TODO-*\"]\n",
    );
    write(
        repo.path(),
        "clusters/dev/kustomization.yaml",
        "resources: [app.yaml]\n",
    );
    write(
        repo.path(),
        "clusters/dev/app.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\ndata:\n  host: TODO-db.lan\n  words: TODO-a b\n  glued: xTODO-1\n  bare: TODO-\n",
    );
    let (code, stdout, _) = run(plumb(cache.path())
        .args(["check", "--color", "never"])
        .arg(repo.path()));
    assert_eq!(code, 1, "{stdout}");
    let found: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("error[SUB002]: placeholder `"))
        .filter_map(|l| l.split('`').next())
        .collect();
    assert_eq!(found, ["TODO-db", "TODO-a", "TODO-"], "{stdout}");
}
